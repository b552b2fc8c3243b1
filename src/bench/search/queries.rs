//! The queries `hooklog bench search` times through `GET /search`: the words and phrases, the
//! kinds of query, and one query asked until a page of hits or the end of the log.

use super::SearchBenchArgs;
use crate::bench::quantile;
use anyhow::bail;
use std::time::{Duration, Instant};

/// One-word queries: common words of the sessions (a hook session repeats its turn, so most
/// match a large share of the log), words only the Codex sessions have, and one no event has.
const WORDS: &[&str] = &[
    "checkout",
    "cargo",
    "rounding",
    "totals",
    "permission",
    "explore",
    "eacces",
    "commit",
    "router",
    "healthz",
    "reviewer",
    "zanzibar",
];

/// Phrases that match.
const PHRASES: &[&str] = &[
    "\"cargo test\"",
    "\"round half to even\"",
    "\"permission denied\"",
    "\"checkout tests\"",
    "totals.rs",
    "\"health check endpoint\"",
];

/// Phrases whose words are each in a third of the log or more but never next to each other:
/// FTS5 reads every event that has all the words, and finds none. The slow case.
const UNMATCHED_PHRASES: &[&str] = &[
    "\"checkout totals\"",
    "\"test the rounding\"",
    "\"tests checkout\"",
];

/// What a kind of query sends (`q` and the other parameters), and whether it has a target.
struct Kind {
    name: &'static str,
    target_ms: Option<f64>,
    queries: Vec<Vec<(&'static str, String)>>,
}

impl SearchBenchArgs {
    pub(super) async fn queries(&self, url: &str, session: &str) -> anyhow::Result<()> {
        let one = |q: &str| vec![("q", q.to_string())];
        let kinds = [
            Kind {
                name: "one word",
                target_ms: Some(20.0),
                queries: WORDS.iter().map(|w| one(w)).collect(),
            },
            Kind {
                name: "phrase",
                target_ms: Some(50.0),
                queries: PHRASES.iter().map(|p| one(p)).collect(),
            },
            Kind {
                name: "phrase, never adjacent",
                target_ms: Some(50.0),
                queries: UNMATCHED_PHRASES.iter().map(|p| one(p)).collect(),
            },
            Kind {
                name: "one word, by rank",
                target_ms: None,
                queries: WORDS
                    .iter()
                    .map(|w| vec![("q", w.to_string()), ("order", "rank".into())])
                    .collect(),
            },
            Kind {
                name: "one word, one session",
                target_ms: None,
                queries: WORDS
                    .iter()
                    .map(|w| vec![("q", w.to_string()), ("session", session.to_string())])
                    .collect(),
            },
            Kind {
                name: "fts: cargo NOT checkout",
                target_ms: None,
                queries: vec![vec![
                    ("q", "cargo NOT checkout".into()),
                    ("mode", "fts".into()),
                ]],
            },
        ];
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()?;
        println!(
            "\nqueries through GET /search, 20 hits each (newest first unless said), one at a time, after a warm-up pass;\n\
             following each page's cursor until 20 hits or the end of the log:"
        );
        for kind in &kinds {
            let mut hits = Vec::new();
            for query in &kind.queries {
                hits.push(ask(&client, url, query).await?.hits);
            }
            // The kinds without a target are slow by design (rank scores every match): fewer.
            let runs = match kind.target_ms {
                Some(_) => self.queries,
                None => (self.queries / 5).max(kind.queries.len()),
            };
            let (mut first, mut whole, mut requests) = (Vec::new(), Vec::new(), 0);
            for i in 0..runs {
                let asked = ask(&client, url, &kind.queries[i % kind.queries.len()]).await?;
                first.push(asked.first);
                whole.push(asked.whole);
                requests += asked.requests;
            }
            first.sort();
            whole.sort();
            let ms = |sorted: &[Duration], p: f64| {
                quantile(sorted, p).unwrap_or_default().as_secs_f64() * 1000.0
            };
            let verdict = |sorted: &[Duration]| match kind.target_ms {
                Some(target) if ms(sorted, 0.99) < target => {
                    format!(" (target p99 < {target:.0} ms: met)")
                }
                Some(target) => format!(" (target p99 < {target:.0} ms: NOT met)"),
                None => String::new(),
            };
            println!(
                "  {:<24} {runs} queries, {:.2} requests each\n    first request:     p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms{}\n    20 hits or the end: p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms{}\n    hits: {:?}",
                kind.name,
                requests as f64 / runs.max(1) as f64,
                ms(&first, 0.5),
                ms(&first, 0.99),
                ms(&first, 1.0),
                verdict(&first),
                ms(&whole, 0.5),
                ms(&whole, 0.99),
                ms(&whole, 1.0),
                verdict(&whole),
                hits
            );
        }
        Ok(())
    }
}

/// What one query took: its first request, and the requests until a page of 20 hits or the
/// end of the log.
struct Asked {
    first: Duration,
    whole: Duration,
    hits: usize,
    requests: usize,
}

async fn ask(
    client: &reqwest::Client,
    url: &str,
    query: &[(&str, String)],
) -> anyhow::Result<Asked> {
    let started = Instant::now();
    let mut asked = Asked {
        first: Duration::ZERO,
        whole: Duration::ZERO,
        hits: 0,
        requests: 0,
    };
    let mut cursor: Option<String> = None;
    loop {
        let mut params = query.to_vec();
        params.push(("limit", (PAGE - asked.hits).to_string()));
        if let Some(c) = &cursor {
            params.push(("cursor", c.clone()));
        }
        let response = client
            .get(format!("{url}/search"))
            .query(&params)
            .send()
            .await?;
        let status = response.status();
        let body: serde_json::Value = response.json().await?;
        if !status.is_success() {
            bail!("GET /search {query:?} answered {status}: {body}");
        }
        asked.requests += 1;
        if asked.requests == 1 {
            asked.first = started.elapsed();
        }
        asked.hits += body["hits"].as_array().map_or(0, Vec::len);
        cursor = body["nextCursor"].as_str().map(str::to_string);
        if cursor.is_none() || asked.hits >= PAGE {
            asked.whole = started.elapsed();
            return Ok(asked);
        }
    }
}

/// Hits a query asks for.
const PAGE: usize = 20;
