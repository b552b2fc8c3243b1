//! `hooklog usage`: token usage and cost of a running hooklog (`GET /usage`), by day, session,
//! model, project, turn or origin, as a table (or the answer's JSON with `--json`).

use crate::projection::usage::By;
use clap::Args;
use serde_json::Value;
use std::fmt::Write as _;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Args, Debug)]
pub struct UsageArgs {
    /// What to sum by.
    #[arg(long, value_enum, default_value = "day")]
    pub by: By,
    /// Only calls at or after this time: RFC 3339, or an age (`7d`, `12h`).
    #[arg(long)]
    pub since: Option<String>,
    /// Only this session's calls.
    #[arg(long)]
    pub session: Option<String>,
    /// The UTC offset days are counted in: `+02:00`, `-0530`, `Z`, or `local` (this machine's
    /// offset now). UTC by default.
    #[arg(long)]
    pub tz: Option<String>,
    /// Print the server's answer as JSON.
    #[arg(long)]
    pub json: bool,
    /// The hooklog to ask.
    #[arg(long, env = "HOOKLOG_URL", default_value = "http://127.0.0.1:2468")]
    pub url: String,
    /// Sent as `Authorization: Bearer` when set.
    #[arg(long, env = "HOOKLOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl UsageArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let report = runtime.block_on(self.fetch())?;
        match self.json {
            true => println!("{report}"),
            false => print!("{}", table(&report)),
        }
        Ok(())
    }

    async fn fetch(&self) -> anyhow::Result<Value> {
        let client = reqwest::Client::builder().timeout(TIMEOUT).build()?;
        let url = format!("{}/usage", self.url.trim_end_matches('/'));
        let by = serde_json::to_value(self.by)?;
        let mut query = vec![("by", by.as_str().unwrap_or("day").to_string())];
        let tz = self.tz.as_deref().map(|tz| match tz {
            "local" => chrono::Local::now().format("%:z").to_string(),
            other => other.to_string(),
        });
        for (name, value) in [
            ("since", &self.since),
            ("session", &self.session),
            ("tz", &tz),
        ] {
            if let Some(value) = value {
                query.push((name, value.clone()));
            }
        }
        super::get_json(
            &client,
            &url,
            &query,
            self.token.as_deref(),
            "the usage report",
        )
        .await
    }
}

/// The report as aligned columns: one line per group, then the total, then the models with
/// no price and the price table's date.
pub fn table(report: &Value) -> String {
    const COUNTS: [(&str, &str); 6] = [
        ("calls", "calls"),
        ("input", "inputTokens"),
        ("output", "outputTokens"),
        ("cache w 5m", "cacheWrite5mTokens"),
        ("cache w 1h", "cacheWrite1hTokens"),
        ("cache read", "cacheReadTokens"),
    ];
    let mut groups: Vec<&Value> = report["groups"].as_array().into_iter().flatten().collect();
    groups.push(&report["total"]);
    let width = groups
        .iter()
        .map(|g| g["key"].as_str().unwrap_or("").chars().count())
        .chain([report["by"].as_str().unwrap_or("key").len()])
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let _ = write!(out, "{:<width$}", report["by"].as_str().unwrap_or("key"));
    for (title, _) in COUNTS {
        let _ = write!(out, " {title:>12}");
    }
    let _ = writeln!(out, " {:>12}", "cost USD");
    for group in groups {
        let key = match group["key"].as_str() {
            Some("") => "(none)",
            Some(key) => key,
            None => "",
        };
        let _ = write!(out, "{key:<width$}");
        for (_, field) in COUNTS {
            let _ = write!(out, " {:>12}", group[field].as_u64().unwrap_or(0));
        }
        let cost = group["costUsd"].as_f64().unwrap_or(0.0);
        let unpriced = !group["unpricedModels"]
            .as_array()
            .is_none_or(|models| models.is_empty());
        let _ = writeln!(out, " {:>11.4}{}", cost, if unpriced { "*" } else { " " });
    }
    if let Some(models) = report["total"]["unpricedModels"].as_array()
        && !models.is_empty()
    {
        // Said here from the names, not taken from the answer's `costNote`, so that an older
        // server's answer reads the same.
        let names: Vec<String> = models
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        if let Some(note) = crate::projection::cost::unpriced_note(&names) {
            let _ = writeln!(out, "* {note}");
        }
    }
    let _ = writeln!(
        out,
        "prices as of {}",
        report["pricesAsOf"].as_str().unwrap_or("?")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unpriced_model_is_named_with_how_to_price_it() {
        let group = |key: &str, unpriced: Value| {
            json!({"key": key, "calls": 1, "inputTokens": 5, "outputTokens": 1,
                   "cacheWrite5mTokens": 0, "cacheWrite1hTokens": 0, "cacheReadTokens": 0,
                   "costUsd": 0.0, "unpricedModels": unpriced})
        };
        let report = json!({"by": "model", "pricesAsOf": "2026-12-03",
            "groups": [group("claude-opus-4-8", json!(["claude-opus-4-8"]))],
            "total": group("total", json!(["claude-opus-4-8"]))});
        let text = table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].ends_with("0.0000*"), "{text}");
        assert!(
            text.contains(
                "* cost leaves out claude-opus-4-8 (no published price known to hooklog; its tokens are counted); add it with `hooklog serve --prices FILE`, see docs/usage.md#cost"
            ),
            "{text}"
        );
        let priced = json!({"by": "model", "pricesAsOf": "2026-12-03", "groups": [],
            "total": group("total", json!([]))});
        assert!(!table(&priced).contains("leaves out"));
    }
}
