//! The stage breakdown `bench ingest` prints: `hooklog_event_stage_seconds` read from the
//! server's `GET /metrics` before and after a run, and each stage's mean and p99 over the run's
//! events (the p99 is the upper bound of the bucket it falls in).

use crate::store::stages::Stage;
use std::collections::BTreeMap;

const METRIC: &str = "hooklog_event_stage_seconds";

/// One scrape's stage samples: `(stage, series)` to value, where the series is `sum`, `count`
/// or a bucket's `le`.
#[derive(Default)]
pub struct Scrape(BTreeMap<(String, String), f64>);

impl Scrape {
    pub async fn take(client: &reqwest::Client, url: &str) -> anyhow::Result<Scrape> {
        let text = client
            .get(format!("{url}/metrics"))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        Ok(Scrape::parse(&text))
    }

    fn parse(text: &str) -> Scrape {
        let mut samples = BTreeMap::new();
        for line in text.lines().filter(|l| l.starts_with(METRIC)) {
            let Some((key, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, labels) = key.split_once('{').unwrap_or((key, ""));
            let label = |name: &str| {
                labels
                    .split(',')
                    .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                    .map(|v| v.trim_end_matches(['"', '}']).to_string())
            };
            let Some(stage) = label("stage") else {
                continue;
            };
            let series = match name.strip_prefix(METRIC) {
                Some("_sum") => "sum".to_string(),
                Some("_count") => "count".to_string(),
                Some("_bucket") => match label("le") {
                    Some(le) => le,
                    None => continue,
                },
                _ => continue,
            };
            samples.insert((stage, series), value);
        }
        Scrape(samples)
    }

    fn get(&self, stage: &str, series: &str) -> f64 {
        self.0
            .get(&(stage.to_string(), series.to_string()))
            .copied()
            .unwrap_or(0.0)
    }

    /// Each stage's events, mean and p99 in ms between `before` and this scrape, as lines.
    pub fn since(&self, before: &Scrape) -> Vec<String> {
        let mut lines = Vec::new();
        for stage in Stage::ALL.map(Stage::as_str) {
            let count = self.get(stage, "count") - before.get(stage, "count");
            if count < 1.0 {
                continue;
            }
            let mean = (self.get(stage, "sum") - before.get(stage, "sum")) / count;
            let mut buckets: Vec<(f64, f64)> = self
                .0
                .iter()
                .filter(|((s, series), _)| s == stage && series != "sum" && series != "count")
                .filter_map(|((_, le), value)| {
                    let bound = if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().ok()?
                    };
                    Some((bound, value - before.get(stage, le)))
                })
                .collect();
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            let p99 = buckets
                .iter()
                .find(|(_, below)| *below >= count * 0.99)
                .map_or(f64::INFINITY, |(bound, _)| *bound);
            lines.push(format!(
                "{stage:>8}: {count:>8.0} events, mean {:>8.3} ms, p99 <= {:>7.3} ms",
                mean * 1000.0,
                p99 * 1000.0
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breakdown_is_the_difference_of_two_scrapes() {
        let before = Scrape::parse(
            "hooklog_event_stage_seconds_bucket{stage=\"commit\",le=\"0.001\"} 10\n\
             hooklog_event_stage_seconds_bucket{stage=\"commit\",le=\"0.01\"} 10\n\
             hooklog_event_stage_seconds_bucket{stage=\"commit\",le=\"+Inf\"} 10\n\
             hooklog_event_stage_seconds_sum{stage=\"commit\"} 0.005\n\
             hooklog_event_stage_seconds_count{stage=\"commit\"} 10\n",
        );
        let after = Scrape::parse(
            "# HELP hooklog_event_stage_seconds ...\n\
             hooklog_event_stage_seconds_bucket{stage=\"commit\",le=\"0.001\"} 108\n\
             hooklog_event_stage_seconds_bucket{stage=\"commit\",le=\"0.01\"} 110\n\
             hooklog_event_stage_seconds_bucket{stage=\"commit\",le=\"+Inf\"} 110\n\
             hooklog_event_stage_seconds_sum{stage=\"commit\"} 0.105\n\
             hooklog_event_stage_seconds_count{stage=\"commit\"} 110\n",
        );
        let lines = after.since(&before);
        assert_eq!(lines.len(), 1, "{lines:?}");
        // 100 events, 0.1 s in all: 1 ms each; 98 of them under 1 ms, so the p99 is under 10.
        assert!(lines[0].contains("100 events"), "{lines:?}");
        assert!(lines[0].contains("mean    1.000 ms"), "{lines:?}");
        assert!(lines[0].contains("p99 <=  10.000 ms"), "{lines:?}");
    }
}
