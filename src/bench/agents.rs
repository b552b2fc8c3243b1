//! `bench ingest --scenario hooks`: the workload agents send. Realistic Claude Code and Codex
//! sessions ([`super::sessions`]) post their raw hook bodies to `POST /event`, each session one
//! event at a time in its own order (an agent waits on its hook), `sessions` sessions open at
//! once over `connections` connections; a session that ends is replaced by a new one. The same
//! sessions' events as `/events` envelopes with source `bench` (which only the log and the
//! `sessions` row read) are the log-only path: the floor the hook path is compared with.

use super::Server;
use super::ingest::{IngestArgs, Report, stats};
use super::sessions::Session;
use super::stages::Scrape;
use crate::store::stats::StatsSnapshot;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Which route the sessions' events take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Path {
    /// Raw hook bodies on `POST /event`: every projection.
    Hooks,
    /// The same events as `/events` envelopes with source `bench`: the log alone.
    LogOnly,
    /// Only the sessions' `PreToolUse` bodies on `POST /event`: tool uses opened and never
    /// closed, so what is left open grows with the run (its cost per event must not).
    PreToolUseOnly,
    /// Every body on `POST /event` but `SubagentStop`, `Stop` and `SessionEnd`: subagents
    /// started and never stopped (nor interrupted by their turn's end), so the running
    /// subagents of a session grow with the run (its cost per event must not).
    SubagentsLeftOpen,
}

impl Path {
    /// Whether this path posts a session's event of type `event_type` (else it is skipped).
    fn posts(self, event_type: &str) -> bool {
        match self {
            Path::Hooks | Path::LogOnly => true,
            Path::PreToolUseOnly => event_type == "PreToolUse",
            Path::SubagentsLeftOpen => {
                !matches!(event_type, "SubagentStop" | "Stop" | "SessionEnd")
            }
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Path::Hooks => "hooks: raw hook bodies on POST /event",
            Path::LogOnly => "log-only floor: the same events on POST /events, source bench",
            Path::PreToolUseOnly => {
                "PreToolUse only: the sessions' PreToolUse bodies on POST /event, none closed"
            }
            Path::SubagentsLeftOpen => {
                "subagents left open: every body on POST /event but SubagentStop, Stop and SessionEnd"
            }
        }
    }
}

pub(super) struct HookLoad {
    pub url: String,
    pub path: Path,
    pub events: usize,
    pub connections: usize,
    pub sessions: usize,
    /// Turns per session (a Claude Code turn is 18 events, a Codex one 7).
    pub turns: usize,
    /// Keeps the session ids of this load apart from another's on the same database.
    pub run: String,
    /// Report the rate over each `window` events (0: not).
    pub window: usize,
    /// Events per second at most (0: as fast as the server answers).
    pub rate: u32,
}

/// The sessions waiting for their next event, shared by the connections.
struct Board {
    ready: tokio::sync::Mutex<mpsc::UnboundedReceiver<Session>>,
    give_back: mpsc::UnboundedSender<Session>,
    /// Events handed out so far; none past `limit`.
    taken: AtomicUsize,
    /// Events the step running may hand out, counted from the first step's first.
    limit: AtomicUsize,
    /// Sessions made so far (the next one's number).
    made: AtomicUsize,
    done: AtomicUsize,
    /// The load's running time before the step running began, and when it began.
    clock: Mutex<(Duration, Instant)>,
    /// The load's running time when each `window`th event was answered.
    marks: Mutex<Vec<Duration>>,
}

impl Board {
    /// How long the load has been running: its steps' times, not the pauses between them.
    fn running(&self) -> Duration {
        let (before, began) = *self.clock.lock().expect("clock");
        before + began.elapsed()
    }
}

impl HookLoad {
    pub async fn run(self) -> anyhow::Result<Report> {
        let events = self.events;
        let mut load = Paced::new(self)?;
        load.run_to(events).await?;
        Ok(load.report())
    }
}

/// A [`HookLoad`] run in steps: between two, its sessions wait where they are (each mid-turn,
/// as an agent's would), and its time does not count. Two paths run in alternating steps see
/// the same moments of a machine whose speed drifts within seconds.
pub(super) struct Paced {
    load: Arc<HookLoad>,
    board: Arc<Board>,
    elapsed: Duration,
    latencies: Vec<Duration>,
    /// Steps run so far.
    steps: usize,
}

impl Paced {
    fn new(load: HookLoad) -> anyhow::Result<Paced> {
        let (give_back, ready) = mpsc::unbounded_channel();
        for number in 0..load.sessions.max(1) {
            give_back.send(Session::new(&load.run, number, load.turns))?;
        }
        let board = Arc::new(Board {
            ready: tokio::sync::Mutex::new(ready),
            give_back,
            taken: AtomicUsize::new(0),
            limit: AtomicUsize::new(0),
            made: AtomicUsize::new(load.sessions.max(1)),
            done: AtomicUsize::new(0),
            clock: Mutex::new((Duration::ZERO, Instant::now())),
            marks: Mutex::new(Vec::new()),
        });
        Ok(Paced {
            load: Arc::new(load),
            board,
            elapsed: Duration::ZERO,
            latencies: Vec::new(),
            steps: 0,
        })
    }

    /// Posts the load's events until `events` of them (at most all) have been answered.
    async fn run_to(&mut self, events: usize) -> anyhow::Result<()> {
        let board = &self.board;
        board
            .limit
            .store(events.min(self.load.events), Ordering::Relaxed);
        *board.clock.lock().expect("clock") = (self.elapsed, Instant::now());
        let workers: Vec<_> = (0..self.load.connections)
            .map(|_| {
                let (this, board) = (self.load.clone(), board.clone());
                tokio::spawn(async move { this.worker(&board).await })
            })
            .collect();
        for worker in workers {
            self.latencies.extend(worker.await??);
        }
        self.elapsed = board.running();
        self.steps += 1;
        Ok(())
    }

    fn report(self) -> Report {
        let marks = std::mem::take(&mut *self.board.marks.lock().expect("marks"));
        let mut windows = Vec::new();
        let mut from = Duration::ZERO;
        for mark in marks {
            windows.push(mark - from);
            from = mark;
        }
        Report {
            events: self.load.events,
            elapsed: self.elapsed,
            latencies: self.latencies,
            window: self.load.window,
            windows,
        }
    }
}

impl HookLoad {
    /// One keep-alive connection: take a ready session, post its next event, wait for the
    /// answer, give the session back (or a new one in its place when it has ended).
    async fn worker(&self, board: &Board) -> anyhow::Result<Vec<Duration>> {
        let authority = self.url.trim_start_matches("http://").to_string();
        let mut sender = super::ingest::connect(&authority).await?;
        let mut latencies = Vec::new();
        loop {
            let limit = board.limit.load(Ordering::Relaxed);
            let taken = board
                .taken
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |taken| {
                    (taken < limit).then_some(taken + 1)
                });
            let Ok(number) = taken else {
                return Ok(latencies);
            };
            if self.rate > 0 {
                let due = Duration::from_secs_f64(number as f64 / f64::from(self.rate));
                tokio::time::sleep(due.saturating_sub(board.running())).await;
            }
            // Every sender is a worker's board handle, so this waits until a session is free.
            let Some(mut session) = board.ready.lock().await.recv().await else {
                return Ok(latencies);
            };
            let event = loop {
                let event = match session.next_event() {
                    Some(event) => event,
                    None => {
                        let number = board.made.fetch_add(1, Ordering::Relaxed);
                        session = Session::new(&self.run, number, self.turns);
                        session.next_event().expect("a new session has events")
                    }
                };
                if self.path.posts(event.event_type) {
                    break event;
                }
            };
            let (uri, body) = match self.path {
                Path::Hooks | Path::PreToolUseOnly | Path::SubagentsLeftOpen => {
                    ("/event", event.body)
                }
                Path::LogOnly => ("/events", event.envelope()),
            };
            let sent = Instant::now();
            let answered = async {
                let request = hyper::Request::post(uri)
                    .header("host", &authority)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body)))?;
                let response = sender.send_request(request).await?;
                let status = response.status();
                response.into_body().collect().await?;
                anyhow::Ok(status)
            }
            .await;
            latencies.push(sent.elapsed());
            // Given back even on an error, so no other connection waits for it forever.
            board.give_back.send(session)?;
            let status = answered?;
            if !status.is_success() {
                anyhow::bail!("the server answered {status} to a {}", event.event_type);
            }
            let done = board.done.fetch_add(1, Ordering::Relaxed) + 1;
            if self.window > 0 && done.is_multiple_of(self.window) {
                board.marks.lock().expect("marks").push(board.running());
            }
        }
    }
}

/// What one path's run measured, on a server of its own.
struct Measured {
    report: Report,
    events_per_commit: f64,
    /// Bytes the server wrote to storage per event (`write_bytes` of `/proc/PID/io`).
    written: Option<f64>,
    /// CPU the writer thread, and the whole server, used per event, in µs.
    writer_cpu: Option<f64>,
    server_cpu: Option<f64>,
    rss: Option<String>,
}

/// The `hooks` scenario: each path on a fresh server (or both on `--url`'s), the serial hook
/// run, and the ratios of hooks to the floor.
pub(super) async fn scenario(args: &IngestArgs) -> anyhow::Result<()> {
    println!(
        "hooklog bench ingest --scenario hooks: {} events per path, {} connections, {} sessions open, {} turns each",
        args.events, args.connections, args.sessions, args.turns
    );
    // On `--url`'s server the paths share its counters, so they run one after the other.
    let (floor, hooks) = match (args.no_floor, args.url.is_some() || args.rounds <= 1) {
        (true, _) => (None, measure(args, Path::Hooks, "hooks").await?),
        (false, true) => (
            Some(measure(args, Path::LogOnly, "floor").await?),
            measure(args, Path::Hooks, "hooks").await?,
        ),
        (false, false) => {
            let (floor, hooks) = alternate(args, args.rounds).await?;
            (Some(floor), hooks)
        }
    };
    let open = match args.no_pre_only {
        true => None,
        false => Some(measure(args, Path::PreToolUseOnly, "pre").await?),
    };
    let subagents = match args.no_open_subagents {
        true => None,
        false => Some(measure(args, Path::SubagentsLeftOpen, "subagents").await?),
    };
    if let Some(floor) = &floor {
        let ratio = |h: f64, f: f64| format!("{:.2}x", h / f);
        let both = |h: Option<f64>, f: Option<f64>| match (h, f) {
            (Some(h), Some(f)) => ratio(h, f),
            _ => "unknown".to_string(),
        };
        let ms = |r: &Report| r.latency(0.99).as_secs_f64() * 1000.0;
        println!(
            "\nhooks / log-only floor, same run ({}):\n  events/s: {:.0} / {:.0} = {}\n  p99 ms: {:.2} / {:.2}\n  bytes written per event: {} / {} = {}\n  writer CPU per event: {} / {} = {}\n  server CPU per event: {} / {} = {}",
            match args.url.is_some() || args.rounds <= 1 {
                true => "one after the other".to_string(),
                false => format!("{} alternating rounds", args.rounds),
            },
            hooks.report.rate(),
            floor.report.rate(),
            ratio(hooks.report.rate(), floor.report.rate()),
            ms(&hooks.report),
            ms(&floor.report),
            show(hooks.written, ""),
            show(floor.written, ""),
            both(hooks.written, floor.written),
            show(hooks.writer_cpu, " µs"),
            show(floor.writer_cpu, " µs"),
            both(hooks.writer_cpu, floor.writer_cpu),
            show(hooks.server_cpu, " µs"),
            show(floor.server_cpu, " µs"),
            both(hooks.server_cpu, floor.server_cpu),
        );
    }
    if let Some(open) = open {
        println!(
            "\nPreToolUse only ({} tool uses left open): bytes written per event {}, writer CPU per event {}\n  (run with --events 300000 to compare: issue 41 asks it to stay within 10%)",
            args.events,
            show(open.written, ""),
            show(open.writer_cpu, " µs"),
        );
    }
    if let Some(subagents) = subagents {
        println!(
            "\nSubagents left open ({} sessions, {} turns each at most): bytes written per event {}, writer CPU per event {}\n  (run with more --events and long sessions, e.g. --sessions 10 --turns 2000, to compare: issue 41 asks the cost not to grow with what is left open)",
            args.sessions,
            args.turns,
            show(subagents.written, ""),
            show(subagents.writer_cpu, " µs"),
        );
    }
    Ok(())
}

fn show(value: Option<f64>, unit: &str) -> String {
    value.map_or("unknown".to_string(), |v| format!("{v:.0}{unit}"))
}

/// One path on its own server, from the counters read before its first step.
struct Measuring {
    path: Path,
    server: Server,
    url: String,
    client: reqwest::Client,
    before: StatsSnapshot,
    stages_before: Scrape,
    io_before: Option<u64>,
    cpu_before: (Option<f64>, Option<f64>),
    load: Paced,
}

impl Measuring {
    async fn start(args: &IngestArgs, path: Path, run: &str) -> anyhow::Result<Measuring> {
        let server = Server::external_or_start(args.url.as_deref(), args.durability)?;
        let url = server.url();
        let client = reqwest::Client::new();
        let before = stats(&client, &url).await?;
        let stages_before = Scrape::take(&client, &url).await?;
        let io_before = server.written_bytes();
        let cpu_before = (server.thread_cpu_seconds(WRITER), server.cpu_seconds());
        let load = Paced::new(HookLoad {
            url: url.clone(),
            path,
            events: args.events,
            connections: args.connections,
            sessions: args.sessions,
            turns: args.turns,
            run: format!("{run}-{:06x}", std::process::id()),
            window: args.window,
            rate: args.rate,
        })?;
        Ok(Measuring {
            path,
            server,
            url,
            client,
            before,
            stages_before,
            io_before,
            cpu_before,
            load,
        })
    }

    /// Runs the path until `events` of its events have been answered.
    async fn step(&mut self, events: usize) -> anyhow::Result<()> {
        self.load.run_to(events).await
    }

    /// Waits until the server's search rows have caught up with its events (at most 30 s),
    /// so that the work its last step left does not run during the other path's step.
    async fn settle(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let body: serde_json::Value = self
                .client
                .get(format!("{}/stats", self.url))
                .send()
                .await?
                .json()
                .await?;
            if body["search"]["lagEvents"].as_i64() == Some(0) || Instant::now() > deadline {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Reads the counters again and prints what the path measured; the hooks path also runs
    /// its serial pass there.
    async fn finish(self, args: &IngestArgs) -> anyhow::Result<Measured> {
        let Measuring {
            path,
            mut server,
            url,
            client,
            before,
            stages_before,
            io_before,
            cpu_before,
            load,
        } = self;
        let steps = load.steps;
        let report = load.report();
        let after = stats(&client, &url).await?;
        let stages = Scrape::take(&client, &url).await?.since(&stages_before);
        let per_event = |after: Option<f64>, before: Option<f64>, scale: f64| {
            Some((after? - before?) * scale / args.events.max(1) as f64)
        };
        let measured = Measured {
            events_per_commit: (after.events - before.events) as f64
                / (after.commits - before.commits).max(1) as f64,
            written: per_event(
                server.written_bytes().map(|b| b as f64),
                io_before.map(|b| b as f64),
                1.0,
            ),
            writer_cpu: per_event(server.thread_cpu_seconds(WRITER), cpu_before.0, 1e6),
            server_cpu: per_event(server.cpu_seconds(), cpu_before.1, 1e6),
            rss: server.rss(),
            report,
        };
        println!(
            "\n{}: {} events in {} step{}, {} connections, {} sessions open",
            path.label(),
            args.events,
            steps,
            if steps == 1 { "" } else { "s" },
            args.connections,
            args.sessions
        );
        measured.report.print(&before, &after);
        println!(
            "  {:.1} events per commit; bytes written per event: {}; CPU per event: writer {}, server {}\n  server memory: {}",
            measured.events_per_commit,
            show(measured.written, ""),
            show(measured.writer_cpu, " µs"),
            show(measured.server_cpu, " µs"),
            measured.rss.as_deref().unwrap_or("unknown"),
        );
        println!("  each event's stages (hooklog_event_stage_seconds):");
        for line in stages {
            println!("    {line}");
        }
        if path == Path::Hooks && args.serial_events > 0 {
            let serial = HookLoad {
                url: url.clone(),
                path,
                events: args.serial_events,
                connections: 1,
                sessions: args.sessions,
                turns: args.turns,
                run: format!("serial-{:06x}", std::process::id()),
                window: 0,
                rate: 0,
            }
            .run()
            .await?;
            let ms = |p: f64| serial.latency(p).as_secs_f64() * 1000.0;
            println!(
                "\nhooks, serial: {} events on one connection, one at a time\n  {:.0} events/s; latency ms p50 {:.2}  p99 {:.2}  max {:.2}",
                args.serial_events,
                serial.rate(),
                ms(0.5),
                ms(0.99),
                ms(1.0),
            );
        }
        server.stop();
        Ok(measured)
    }
}

/// Runs one path on its own server and prints what it measured.
async fn measure(args: &IngestArgs, path: Path, run: &str) -> anyhow::Result<Measured> {
    let mut measuring = Measuring::start(args, path, run).await?;
    measuring.step(args.events).await?;
    measuring.finish(args).await
}

/// The floor and the hook path on servers of their own, run in `rounds` alternating steps.
async fn alternate(args: &IngestArgs, rounds: usize) -> anyhow::Result<(Measured, Measured)> {
    let mut floor = Measuring::start(args, Path::LogOnly, "floor").await?;
    let mut hooks = Measuring::start(args, Path::Hooks, "hooks").await?;
    for round in 1..=rounds {
        let to = args.events * round / rounds;
        hooks.settle().await?;
        floor.step(to).await?;
        floor.settle().await?;
        hooks.step(to).await?;
    }
    Ok((floor.finish(args).await?, hooks.finish(args).await?))
}

/// The writer thread's name (`store::writer`).
const WRITER: &str = "hooklog-writer";

#[cfg(test)]
mod tests {
    use super::Path;

    #[test]
    fn the_left_open_paths_skip_what_would_close_it() {
        for closing in ["SubagentStop", "Stop", "SessionEnd"] {
            assert!(!Path::SubagentsLeftOpen.posts(closing), "{closing}");
            assert!(Path::Hooks.posts(closing), "{closing}");
        }
        for kept in [
            "SubagentStart",
            "PreToolUse",
            "PostToolUse",
            "UserPromptSubmit",
        ] {
            assert!(Path::SubagentsLeftOpen.posts(kept), "{kept}");
        }
        assert!(Path::PreToolUseOnly.posts("PreToolUse"));
        assert!(!Path::PreToolUseOnly.posts("PostToolUse"));
    }
}
