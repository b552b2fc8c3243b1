//! `hooklog bench ingest`: a load generator posting hook-sized (~700 byte) events over loopback
//! HTTP, reporting throughput, request latency, the writer's commit batch sizes (group commit at
//! work) and the server's memory.

use super::Server;
use crate::config::Durability;
use crate::store::stats::StatsSnapshot;
use anyhow::bail;
use clap::{Args, ValueEnum};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
pub enum Scenario {
    /// The workload agents send: realistic Claude Code and Codex sessions as raw hook bodies on
    /// `POST /event`, each on a fresh server beside the log-only floor (the same events on
    /// `/events` with source `bench`), then one hook event at a time on one connection.
    Hooks,
    /// One event per POST over many connections.
    Single,
    /// NDJSON batches over many connections.
    Batch,
    /// One connection, one event at a time (latency of a lone hook).
    Serial,
    /// `hooks`, then the other three in order against one server.
    All,
}

#[derive(Args)]
pub struct IngestArgs {
    /// A running hooklog to load. Default: start a fresh one on a temporary database.
    #[arg(long)]
    pub url: Option<String>,
    #[arg(long, value_enum, default_value_t = Scenario::All)]
    pub scenario: Scenario,
    /// Events posted by the `single` and `batch` scenarios, and by each path of `hooks`.
    #[arg(long, default_value_t = 100_000)]
    pub events: usize,
    /// Events posted by the `serial` scenario, and by `hooks` one at a time.
    #[arg(long, default_value_t = 5_000)]
    pub serial_events: usize,
    /// Concurrent connections for `hooks`, `single` and `batch`.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Events per NDJSON request in `batch`.
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
    /// Sessions open at once (in `hooks`, each posts one event at a time, so at most this many
    /// requests are in flight); for the other scenarios, the sessions events are spread over.
    #[arg(long, default_value_t = 100)]
    pub sessions: usize,
    /// Turns per session in `hooks` (18 events a Claude Code turn, 7 a Codex one).
    #[arg(long, default_value_t = 8)]
    pub turns: usize,
    /// In `hooks`, also report the rate over each this many events (0: not), to show whether
    /// ingest slows as the log grows.
    #[arg(long, default_value_t = 100_000)]
    pub window: usize,
    /// In `hooks`, the log-only floor and the hook path, each on a server of its own, post
    /// their events in this many alternating rounds (a tenth of a run's time each at 30,000
    /// events): this machine's speed drifts within seconds, and alternating puts both paths in
    /// the same moments. 1: the floor's whole run, then the hooks' (as with `--url`).
    #[arg(long, default_value_t = 10)]
    pub rounds: usize,
    /// Skip the log-only floor in `hooks` (its ratios are then not printed).
    #[arg(long)]
    pub no_floor: bool,
    /// Skip the PreToolUse-only path in `hooks`.
    #[arg(long)]
    pub no_pre_only: bool,
    /// Skip the subagents-left-open path in `hooks` (every body but `SubagentStop`, `Stop` and
    /// `SessionEnd`).
    #[arg(long)]
    pub no_open_subagents: bool,
    /// In `hooks`, post at most this many events per second on each path (0: as fast as the
    /// server answers): the search lag (`derive` stage) is measured below saturation this way.
    #[arg(long, default_value_t = 0)]
    pub rate: u32,
    /// Durability of the server this command starts.
    #[arg(long, value_enum, default_value_t = Durability::Full)]
    pub durability: Durability,
}

impl IngestArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Runtime::new()?;
        if matches!(self.scenario, Scenario::Hooks | Scenario::All) {
            runtime.block_on(super::agents::scenario(&self))?;
            if self.scenario == Scenario::Hooks {
                return Ok(());
            }
        }
        let mut server = Server::external_or_start(self.url.as_deref(), self.durability)?;
        let result = runtime.block_on(self.run_scenarios(&server));
        if let Some(rss) = server.rss() {
            println!("server memory after the run: {rss}");
        }
        server.stop();
        result
    }

    async fn run_scenarios(&self, server: &Server) -> anyhow::Result<()> {
        let url = server.url();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(self.connections)
            .build()?;
        let plan: Vec<(Scenario, usize, usize, usize)> = [
            (Scenario::Single, self.events, self.connections, 1),
            (Scenario::Batch, self.events, self.connections, self.batch),
            (Scenario::Serial, self.serial_events, 1, 1),
        ]
        .into_iter()
        .filter(|(s, ..)| self.scenario == Scenario::All || self.scenario == *s)
        .collect();
        println!(
            "hooklog bench ingest: {url}, payload ~{} bytes",
            payload(0, 0).len()
        );
        for (scenario, events, connections, batch) in plan {
            let before = stats(&client, &url).await?;
            let cpu_before = Cpu::now(server);
            let load = Load {
                url: url.clone(),
                events,
                connections,
                batch,
                sessions: self.sessions,
            };
            let report = load.run().await?;
            let cpu = Cpu::now(server).since(&cpu_before, events);
            let after = stats(&client, &url).await?;
            println!(
                "\n{scenario:?}: {events} events, {connections} connection(s), {batch} event(s)/request"
            );
            report.print(&before, &after);
            println!("  CPU per event: {cpu}");
        }
        Ok(())
    }
}

/// CPU seconds used so far by the server (when it is this command's child) and by this
/// process, the load generator: they share the machine's cores.
struct Cpu {
    server: Option<f64>,
    generator: Option<f64>,
}

impl Cpu {
    fn now(server: &Server) -> Cpu {
        Cpu {
            server: server.cpu_seconds(),
            generator: super::cpu_seconds("/proc/self/stat"),
        }
    }

    /// Microseconds per event each used since `before`, as a line of the report.
    fn since(&self, before: &Cpu, events: usize) -> String {
        let per_event = |after: Option<f64>, before: Option<f64>| match (after, before) {
            (Some(a), Some(b)) => format!("{:.1} µs", (a - b) * 1e6 / events.max(1) as f64),
            _ => "unknown".to_string(),
        };
        format!(
            "server {}, load generator {}",
            per_event(self.server, before.server),
            per_event(self.generator, before.generator)
        )
    }
}

/// Posts `events` events over `connections` keep-alive connections, `batch` per request.
pub(super) struct Load {
    pub url: String,
    pub events: usize,
    pub connections: usize,
    pub batch: usize,
    pub sessions: usize,
}

pub(super) struct Report {
    pub events: usize,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
    /// The events of each window of the run, when asked for (0: not).
    pub window: usize,
    /// How long each whole window of `window` events took, in order.
    pub windows: Vec<Duration>,
}

impl Load {
    pub async fn run(self) -> anyhow::Result<Report> {
        let next = Arc::new(AtomicUsize::new(0));
        let this = Arc::new(self);
        let started = Instant::now();
        let workers: Vec<_> = (0..this.connections)
            .map(|_| {
                let (this, next) = (this.clone(), next.clone());
                tokio::spawn(async move { this.worker(&next).await })
            })
            .collect();
        let mut latencies = Vec::new();
        for worker in workers {
            latencies.extend(worker.await??);
        }
        Ok(Report {
            events: this.events,
            elapsed: started.elapsed(),
            latencies,
            window: 0,
            windows: Vec::new(),
        })
    }

    /// One keep-alive HTTP/1.1 connection posting requests one after another. A bare hyper
    /// connection rather than a pooled client: the generator shares the machine's cores with the
    /// server, so every microsecond it spends is one the server does not get.
    async fn worker(&self, next: &AtomicUsize) -> anyhow::Result<Vec<Duration>> {
        let authority = self.url.trim_start_matches("http://").to_string();
        let mut sender = connect(&authority).await?;
        let content_type = if self.batch == 1 {
            "application/json"
        } else {
            "application/x-ndjson"
        };
        let mut latencies = Vec::new();
        loop {
            let first = next.fetch_add(self.batch, Ordering::Relaxed);
            if first >= self.events {
                return Ok(latencies);
            }
            let last = (first + self.batch).min(self.events);
            let lines: Vec<String> = (first..last).map(|i| payload(i, self.sessions)).collect();
            let request = hyper::Request::post("/events")
                .header("host", &authority)
                .header("content-type", content_type)
                .body(Full::new(Bytes::from(lines.join("\n"))))?;
            let sent = Instant::now();
            let response = sender.send_request(request).await?;
            let status = response.status();
            response.into_body().collect().await?;
            latencies.push(sent.elapsed());
            if !status.is_success() {
                bail!("the server answered {status}");
            }
        }
    }
}

/// One keep-alive HTTP/1.1 connection to `authority`, without Nagle's delay.
pub(super) async fn connect(
    authority: &str,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(authority).await?;
    stream.set_nodelay(true)?;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    tokio::spawn(connection);
    Ok(sender)
}

impl Report {
    pub fn rate(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64()
    }

    /// The latency at quantile `p`.
    pub fn latency(&self, p: f64) -> Duration {
        let mut latencies = self.latencies.clone();
        latencies.sort();
        super::quantile(&latencies, p).unwrap_or_default()
    }

    pub(super) fn print(&self, before: &StatsSnapshot, after: &StatsSnapshot) {
        let mut latencies = self.latencies.clone();
        latencies.sort();
        let pct = |p: f64| super::quantile(&latencies, p).expect("a latency per request");
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "  {:.0} events/s over {:.2} s\n  request latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
            self.rate(),
            self.elapsed.as_secs_f64(),
            ms(pct(0.50)),
            ms(pct(0.90)),
            ms(pct(0.99)),
            ms(*latencies.last().unwrap_or(&Duration::ZERO)),
        );
        let commits = after.commits - before.commits;
        let events = after.events - before.events;
        println!(
            "  commits: {commits} for {events} events stored, {:.1} events per commit on average; writer busy {:.2} s inserting, {:.2} s committing",
            events as f64 / commits.max(1) as f64,
            (after.apply_micros - before.apply_micros) as f64 / 1e6,
            (after.commit_micros - before.commit_micros) as f64 / 1e6,
        );
        let earlier: BTreeMap<&str, u64> = before
            .batch_sizes
            .iter()
            .map(|b| (b.events.as_str(), b.commits))
            .collect();
        for bucket in &after.batch_sizes {
            let n = bucket.commits - earlier.get(bucket.events.as_str()).copied().unwrap_or(0);
            if n > 0 {
                println!("    {:>9} events/commit: {n} commits", bucket.events);
            }
        }
        if self.windows.len() > 1 {
            let rates: Vec<f64> = self
                .windows
                .iter()
                .map(|w| self.window as f64 / w.as_secs_f64())
                .collect();
            let shown: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
            println!(
                "  events/s per {} events: {}\n  last window / first: {:.2}",
                self.window,
                shown.join(" "),
                rates[rates.len() - 1] / rates[0]
            );
        }
    }
}

/// A raw Claude Code `PreToolUse` hook payload of about 700 bytes, in a canonical event.
///
/// Written from a template rather than built as a JSON tree: the generator shares the cores
/// with the server, and building the tree took a fifth of its CPU (3.5 µs a request). The
/// bytes are those of the same event built as a JSON tree and serialised (a test holds them
/// equal).
pub(super) fn payload(i: usize, sessions: usize) -> String {
    let session = i % sessions.max(1);
    format!(
        concat!(
            r#"{{"payload":{{"cwd":"/home/dev/src/app","hook_event_name":"PreToolUse","note":"{note}","#,
            r#""permission_mode":"default","session_id":"bench-session-{session}","#,
            r#""tool_input":{{"command":"cargo test --release -p app-core -- integration::case_{i} --nocapture","#,
            r#""description":"Run the integration test for this case and show its output in full","#,
            r#""timeout":120000}},"tool_name":"Bash","tool_use_id":"toolu_01{i:022}","#,
            r#""transcript_path":"/home/dev/.claude/projects/-home-dev-src-app/bench-session-{session}.jsonl"}},"#,
            r#""sessionId":"bench-session-{session}","source":"bench","type":"PreToolUse"}}"#
        ),
        note = NOTE,
        session = session,
        i = i,
    )
}

/// Padding that brings the hook payload to about 700 bytes.
const NOTE: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

/// The same payload as a hook gives it on stdin.
pub(super) fn hook_payload(i: usize, sessions: usize) -> String {
    raw_hook(i, &format!("bench-session-{}", i % sessions.max(1))).to_string()
}

fn raw_hook(i: usize, session: &str) -> serde_json::Value {
    json!({
            "session_id": session,
            "transcript_path": format!("/home/dev/.claude/projects/-home-dev-src-app/{session}.jsonl"),
            "cwd": "/home/dev/src/app",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {
                "command": format!("cargo test --release -p app-core -- integration::case_{i} --nocapture"),
                "description": "Run the integration test for this case and show its output in full",
                "timeout": 120000
            },
            "tool_use_id": format!("toolu_01{i:022}"),
            "note": NOTE
    })
}

pub(super) async fn stats(client: &reqwest::Client, url: &str) -> anyhow::Result<StatsSnapshot> {
    let body: serde_json::Value = client
        .get(format!("{url}/stats"))
        .send()
        .await?
        .json()
        .await?;
    Ok(serde_json::from_value(body["writer"].clone())?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The event `payload` writes, as a JSON tree.
    fn canonical_tree(i: usize, sessions: usize) -> serde_json::Value {
        let session = format!("bench-session-{}", i % sessions.max(1));
        json!({
            "type": "PreToolUse",
            "sessionId": session,
            "source": "bench",
            "payload": super::raw_hook(i, &session),
        })
    }

    #[test]
    fn the_payload_template_writes_the_tree() {
        for (i, sessions) in [(0, 50), (7, 50), (123_456, 50), (99_999, 1), (3, 0)] {
            assert_eq!(
                super::payload(i, sessions),
                canonical_tree(i, sessions).to_string()
            );
        }
        assert!((650..800).contains(&super::payload(0, 50).len()));
    }
}
