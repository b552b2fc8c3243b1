//! `hooklog bench search`: what full-text search costs and how fast it answers.
//!
//! 1. Ingest with and without the index, in one run: the hook workload of `bench ingest
//!    --scenario hooks` (realistic sessions' raw hook bodies on `POST /event`, one event at a
//!    time per session) against fresh servers, alternately started with `--no-search-index`
//!    and without it, `--rounds` times each.
//! 2. A large log: `--events` events of the same sessions, each session's in its order, as
//!    `source: "hook"` envelopes in NDJSON batches on `POST /events` (every hook projection and
//!    the index, as on `/event`, but many events per request, so a million take minutes, not an
//!    hour), on a fresh server with the index.
//! 3. Queries through the real route (`GET /search`), one at a time on one connection: one
//!    word, a phrase, and (reported beside them) rank order, a session filter and an FTS5
//!    expression; latency percentiles per kind after one warm-up pass.
//! 4. The index's share of the database file (`dbstat`), and the ingest comparison again on
//!    the large log (its server restarted on it with and without the index, alternately).

use super::Server;
use super::hooks::{HookLoad, Path};
use super::ingest::{self, Report};
use super::sessions::Session;
use crate::config::Durability;
use anyhow::{Context, bail};
use clap::Args;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct SearchBenchArgs {
    /// Events in the log the queries run on.
    #[arg(long, default_value_t = 1_000_000)]
    pub events: usize,
    /// Hook events each ingest run posts (0: no ingest runs).
    #[arg(long, default_value_t = 20_000)]
    pub ingest_events: usize,
    /// Ingest runs with the index, and as many without it, alternated.
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
    /// Queries of each kind.
    #[arg(long, default_value_t = 300)]
    pub queries: usize,
    /// Connections of the ingest runs.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Sessions open at once (each posts one event at a time in the ingest runs).
    #[arg(long, default_value_t = 100)]
    pub sessions: usize,
    /// Turns per session (18 events a Claude Code turn, 7 a Codex one).
    #[arg(long, default_value_t = 8)]
    pub turns: usize,
    /// Events per NDJSON request while building the large log.
    #[arg(long, default_value_t = 1_000)]
    pub batch: usize,
    /// Durability of the servers this command starts.
    #[arg(long, value_enum, default_value_t = Durability::Full)]
    pub durability: Durability,
}

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
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Runtime::new()?;
        runtime.block_on(self.bench())
    }

    async fn bench(&self) -> anyhow::Result<()> {
        println!(
            "hooklog bench search: {} events in the large log, ingest runs of {} hook events x {} each way, {} queries per kind",
            self.events, self.ingest_events, self.rounds, self.queries
        );
        let fresh = match self.ingest_events > 0 && self.rounds > 0 {
            true => Some(self.ingest_comparison().await?),
            false => None,
        };

        let mut server = Server::start(self.durability)?;
        let url = server.url();
        let built = Instant::now();
        let session_ids = self.build(&url).await?;
        let seconds = built.elapsed().as_secs_f64();
        println!(
            "\nlarge log: {} events in {:.0} s ({:.0} events/s in NDJSON batches of {}, every projection and the index)",
            self.events,
            seconds,
            self.events as f64 / seconds,
            self.batch
        );
        if let Some(db) = server.db_path() {
            sizes(&db)?;
        }
        let middle = session_ids
            .get(session_ids.len() / 2)
            .cloned()
            .unwrap_or_default();
        self.queries(&url, &middle).await?;
        if self.ingest_events > 0 && self.rounds > 0 {
            // The same comparison on the large log: the server restarted on its database
            // with and without the index, alternately (each run adds its events to it).
            println!(
                "\ningest on the large log: {} hook events per run, the server restarted on it each run",
                self.ingest_events
            );
            let mut rates = (Vec::new(), Vec::new());
            for round in 0..self.rounds {
                for indexed in alternate(round) {
                    server.restart_with(self.durability, flags(indexed))?;
                    let report = self.ingest(&server.url(), &format!("large{round}")).await?;
                    println!(
                        "  {:<13} {:>6.0} events/s, p99 {:>6.1} ms",
                        label(indexed),
                        report.rate(),
                        report.latency(0.99).as_secs_f64() * 1000.0
                    );
                    match indexed {
                        true => rates.1.push(report.rate()),
                        false => rates.0.push(report.rate()),
                    }
                }
            }
            let (without, with) = (median(&mut rates.0), median(&mut rates.1));
            println!(
                "  median: {without:.0} events/s without the index, {with:.0} with it: {:.1}% lower{}",
                (1.0 - with / without) * 100.0,
                match fresh {
                    Some((_, fresh_with)) => format!(
                        "; with it, {:.2}x the rate on a fresh log",
                        with / fresh_with
                    ),
                    None => String::new(),
                }
            );
        }
        server.stop();
        Ok(())
    }

    /// Hook ingest on fresh servers without and with the index, alternated; prints each run
    /// and returns the median rates (without, with).
    async fn ingest_comparison(&self) -> anyhow::Result<(f64, f64)> {
        println!(
            "\ningest: {} hook events per run on POST /event, {} connections, {} sessions open, fresh server each run",
            self.ingest_events, self.connections, self.sessions
        );
        let mut without = Vec::new();
        let mut with = Vec::new();
        for round in 0..self.rounds {
            for indexed in alternate(round) {
                let mut server = Server::start_with(self.durability, flags(indexed))?;
                let io_before = server.written_bytes();
                let cpu_before = server.thread_cpu_seconds("hooklog-writer");
                let report = self.ingest(&server.url(), "ingest").await?;
                let per_event = |after: Option<f64>, before: Option<f64>, scale: f64| {
                    Some((after? - before?) * scale / self.ingest_events as f64)
                };
                let written = per_event(
                    server.written_bytes().map(|b| b as f64),
                    io_before.map(|b| b as f64),
                    1.0,
                );
                let writer_cpu =
                    per_event(server.thread_cpu_seconds("hooklog-writer"), cpu_before, 1e6);
                server.stop();
                println!(
                    "  {:<13} {:>6.0} events/s, p99 {:>6.1} ms, {} bytes written per event, writer CPU {} per event",
                    label(indexed),
                    report.rate(),
                    report.latency(0.99).as_secs_f64() * 1000.0,
                    written.map_or("?".into(), |b| format!("{b:.0}")),
                    writer_cpu.map_or("?".into(), |c| format!("{c:.0} µs")),
                );
                match indexed {
                    true => with.push(report.rate()),
                    false => without.push(report.rate()),
                }
            }
        }
        let (without, with) = (median(&mut without), median(&mut with));
        println!(
            "  median: {without:.0} events/s without the index, {with:.0} with it: {:.1}% lower",
            (1.0 - with / without) * 100.0
        );
        Ok((without, with))
    }

    /// The hook workload on `POST /event` at `url`.
    async fn ingest(&self, url: &str, run: &str) -> anyhow::Result<Report> {
        HookLoad {
            url: url.to_string(),
            path: Path::Hooks,
            events: self.ingest_events,
            connections: self.connections,
            sessions: self.sessions,
            turns: self.turns,
            run: format!("{run}-{:06x}", std::process::id()),
            window: 0,
        }
        .run()
        .await
    }

    /// Posts the large log: `sessions` sessions open at once, split between two connections
    /// (so each session's events go in order), their events interleaved as agents' are.
    /// Returns the ids of the sessions played.
    async fn build(&self, url: &str) -> anyhow::Result<Vec<String>> {
        const WORKERS: usize = 2;
        let per_worker = self.events.div_ceil(WORKERS);
        let mut workers = Vec::new();
        for w in 0..WORKERS {
            let events = per_worker.min(self.events - (w * per_worker).min(self.events));
            let (url, batch, turns) = (url.to_string(), self.batch.max(1), self.turns);
            let open = (self.sessions / WORKERS).max(1);
            workers.push(tokio::spawn(async move {
                build_part(&url, &format!("log{w}"), events, open, batch, turns).await
            }));
        }
        let mut ids = Vec::new();
        for worker in workers {
            ids.extend(worker.await??);
        }
        Ok(ids)
    }

    async fn queries(&self, url: &str, session: &str) -> anyhow::Result<()> {
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
                super::quantile(sorted, p).unwrap_or_default().as_secs_f64() * 1000.0
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

/// One connection's share of the large log: `open` sessions at a time, one event of each in
/// turn, `batch` events a request.
async fn build_part(
    url: &str,
    run: &str,
    events: usize,
    open: usize,
    batch: usize,
    turns: usize,
) -> anyhow::Result<Vec<String>> {
    let authority = url.trim_start_matches("http://").to_string();
    let mut sender = ingest::connect(&authority).await?;
    let mut sessions: Vec<Session> = (0..open).map(|n| Session::new(run, n, turns)).collect();
    let mut ids: Vec<String> = sessions.iter().map(|s| s.id().to_string()).collect();
    let mut made = open;
    let mut posted = 0;
    let mut turn = 0;
    while posted < events {
        let mut lines = Vec::with_capacity(batch);
        while lines.len() < batch && posted + lines.len() < events {
            let slot = turn % open;
            turn += 1;
            let event = match sessions[slot].next_event() {
                Some(event) => event,
                None => {
                    sessions[slot] = Session::new(run, made, turns);
                    made += 1;
                    ids.push(sessions[slot].id().to_string());
                    sessions[slot]
                        .next_event()
                        .expect("a new session has events")
                }
            };
            lines.push(event.envelope_from("hook"));
        }
        posted += lines.len();
        let request = hyper::Request::post("/events")
            .header("host", &authority)
            .header("content-type", "application/x-ndjson")
            .body(Full::new(Bytes::from(lines.join("\n"))))?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!(
                "building the log: the server answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
    }
    Ok(ids)
}

/// The database file's size and the search index's share of it, by `dbstat`.
fn sizes(db: &std::path::Path) -> anyhow::Result<()> {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", db.display()))?;
    let tables: Vec<(String, i64)> = conn
        .prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let total: i64 = tables.iter().map(|(_, size)| size).sum();
    let of = |pick: &dyn Fn(&str) -> bool| -> i64 {
        tables
            .iter()
            .filter(|(name, _)| pick(name))
            .map(|(_, size)| size)
            .sum()
    };
    let text = of(&|name| name == "search_text");
    let index = of(&|name| name.starts_with("search_") && name != "search_text");
    let events = of(&|name| name == "events" || name.starts_with("sqlite_autoindex_events"));
    let mb = |bytes: i64| bytes as f64 / 1e6;
    let share = |bytes: i64| bytes as f64 * 100.0 / total.max(1) as f64;
    println!(
        "database: {:.0} MB; the events table and its indexes {:.0} MB ({:.1}%); search: {:.0} MB ({:.1}%): text {:.0} MB ({:.1}%), FTS5 index {:.0} MB ({:.1}%)",
        mb(total),
        mb(events),
        share(events),
        mb(text + index),
        share(text + index),
        mb(text),
        share(text),
        mb(index),
        share(index),
    );
    let largest: Vec<String> = tables
        .iter()
        .take(8)
        .map(|(name, size)| format!("{name} {:.0} MB", mb(*size)))
        .collect();
    println!("  largest: {}", largest.join(", "));
    Ok(())
}

/// The order of a round's two runs: which goes first alternates, so a drift of the machine's
/// speed weighs on both.
fn alternate(round: usize) -> [bool; 2] {
    match round % 2 {
        0 => [false, true],
        _ => [true, false],
    }
}

/// The `serve` flags of a run with or without the index.
fn flags(indexed: bool) -> &'static [&'static str] {
    match indexed {
        true => &[],
        false => &["--no-search-index"],
    }
}

fn label(indexed: bool) -> &'static str {
    match indexed {
        true => "with index",
        false => "without index",
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
