//! `hooklog search "cargo test"`: full-text search of a running hooklog (`GET /search`), one
//! line per hit in `tail`'s format, its snippet where `tail` has its summary (the matched
//! terms in bold on a terminal); or each hit as JSON with `--json`.

use super::tail;
use clap::Args;
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Hits asked for in one request, at most.
const PAGE: usize = 100;
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// What to look for: words (all required), "a phrase" in double quotes, prefix*. With
    /// --fts, an FTS5 query expression.
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
    /// Only this session's events.
    #[arg(long)]
    pub session: Option<String>,
    /// Only events of this type.
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// Only events of this source (`hook`, `coordination`, ...).
    #[arg(long)]
    pub source: Option<String>,
    /// Only events first stored by this hooklog instance (its `--origin` name).
    #[arg(long)]
    pub origin: Option<String>,
    /// Only events at or after this time: RFC 3339, or an age (`7d`, `12h`).
    #[arg(long)]
    pub since: Option<String>,
    /// Only events before this time (same forms).
    #[arg(long)]
    pub until: Option<String>,
    /// The query is an FTS5 expression (AND, OR, NOT, NEAR, column-free).
    #[arg(long)]
    pub fts: bool,
    /// Best matches first, instead of newest first.
    #[arg(long)]
    pub rank: bool,
    /// Print at most this many hits.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Print each hit as one JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// The hooklog to ask.
    #[arg(long, env = "HOOKLOG_URL", default_value = "http://127.0.0.1:2468")]
    pub url: String,
    /// Sent as `Authorization: Bearer` when set.
    #[arg(long, env = "HOOKLOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl SearchArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(self.search())
    }

    async fn search(self) -> anyhow::Result<()> {
        let client = reqwest::Client::builder().timeout(TIMEOUT).build()?;
        let url = format!("{}/search", self.url.trim_end_matches('/'));
        let bold = !self.json && std::io::stdout().is_terminal();
        let mut printed = 0;
        let mut cursor: Option<String> = None;
        while printed < self.limit {
            let mut query = vec![
                ("q", self.query.join(" ")),
                ("limit", (self.limit - printed).min(PAGE).to_string()),
            ];
            let optional = [
                ("session", &self.session),
                ("type", &self.event_type),
                ("source", &self.source),
                ("origin", &self.origin),
                ("since", &self.since),
                ("until", &self.until),
                ("cursor", &cursor),
            ];
            query.extend(
                optional
                    .into_iter()
                    .filter_map(|(name, value)| Some((name, value.clone()?))),
            );
            if self.fts {
                query.push(("mode", "fts".into()));
            }
            if self.rank {
                query.push(("order", "rank".into()));
            }
            let body =
                super::get_json(&client, &url, &query, self.token.as_deref(), "the search").await?;
            let hits = body["hits"].as_array().cloned().unwrap_or_default();
            let mut out = std::io::stdout().lock();
            for hit in &hits {
                match self.json {
                    true => writeln!(out, "{hit}")?,
                    false => writeln!(out, "{}", line(hit, bold))?,
                }
            }
            out.flush()?;
            printed += hits.len();
            // The cursor says where the next page goes on; none after the last.
            cursor = body["nextCursor"].as_str().map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        if printed == 0 {
            eprintln!("hooklog search: no hits");
        }
        Ok(())
    }
}

/// `12:34:56.789  s1  #7  PreToolUse  Bash cargo test -p checkout …`: `tail`'s line, with the
/// hit's snippet on one line where `tail` has its summary; the matched terms in bold.
pub fn line(hit: &Value, bold: bool) -> String {
    let time = hit["eventTime"].as_str().unwrap_or("");
    let time = time.get(11..23).unwrap_or(time);
    let position = hit["sessionSequence"]
        .as_i64()
        .or(hit["sequence"].as_i64())
        .unwrap_or(0);
    let mut snippet = String::new();
    for part in hit["snippet"].as_array().into_iter().flatten() {
        let text = part["text"].as_str().unwrap_or("");
        // One line: runs of whitespace (the text's line breaks too) become one space, kept at
        // the edges so the pieces stay apart.
        let mut flat = String::with_capacity(text.len());
        let mut space = false;
        for c in text.chars() {
            if c.is_whitespace() {
                space = true;
                continue;
            }
            if space {
                flat.push(' ');
                space = false;
            }
            flat.push(c);
        }
        if space {
            flat.push(' ');
        }
        match bold && part["match"].as_bool() == Some(true) {
            true => snippet.push_str(&format!("\u{1b}[1m{flat}\u{1b}[0m")),
            false => snippet.push_str(&flat),
        }
    }
    tail::format_line(
        time,
        hit["sessionId"].as_str().unwrap_or("-"),
        position,
        hit["type"].as_str().unwrap_or("?"),
        snippet.trim(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hit_prints_as_a_tail_line_with_its_snippet() {
        let hit = json!({"sequence": 40, "sessionId": "s1", "sessionSequence": 7, "type": "PreToolUse",
            "eventTime": "2026-11-30T12:34:56.789Z",
            "snippet": [{"text": "Bash\n"}, {"text": "cargo", "match": true}, {"text": " test\n -p x…"}]});
        assert_eq!(
            line(&hit, false),
            "12:34:56.789  s1  #7  PreToolUse  Bash cargo test -p x…"
        );
        assert_eq!(
            line(&hit, true),
            "12:34:56.789  s1  #7  PreToolUse  Bash \u{1b}[1mcargo\u{1b}[0m test -p x…"
        );
        let global = json!({"sequence": 9, "type": "claim_granted", "eventTime": "2026-11-30T00:00:00.000Z",
            "snippet": [{"text": "dm:alice", "match": true}]});
        assert_eq!(
            line(&global, false),
            "00:00:00.000  -  #9  claim_granted  dm:alice"
        );
    }
}
