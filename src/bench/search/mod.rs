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

mod log;
mod queries;

use super::Server;
use super::agents::{HookLoad, Path};
use super::ingest::Report;
use crate::config::Durability;
use clap::Args;
use std::time::Instant;

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
            log::sizes(&db)?;
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
            rate: 0,
        }
        .run()
        .await
    }
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
