//! `hooklog bench scale`: a log grown in steps (by default to 1,000,000 and then 5,000,000 hook
//! events, through `POST /event` as agents send them) and, at each step, what a user of a
//! year-old log waits for: every list route's first page (its default order and each
//! documented filter) on the first call after a restart and warm, `hooklog backup`'s speed,
//! `hooklog rebuild --check`'s time and peak memory, and the bytes on disk per event.
//!
//! The server, `backup` and `rebuild` are this binary run as child processes on the same
//! file, so each is measured as a user runs it. The server is started afresh for each step's
//! routes, and "first" is each route's first call on it (after the routes listed before it,
//! which warm what they share, such as the events' pages); the file stays in the OS page
//! cache, so it is a cold server, not a cold disk.

use super::agents::{HookLoad, Path};
use anyhow::{Context, bail};
use clap::Args;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::path::{Path as FsPath, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct ScaleArgs {
    /// The sizes to grow the log to, in events, in increasing order.
    #[arg(long, value_delimiter = ',', default_value = "1000000,5000000")]
    pub steps: Vec<usize>,
    /// The database to grow and keep (a step it already holds is measured without growing).
    /// Default: a temporary one, removed at the end.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Warm calls of each route after the first; their median is printed.
    #[arg(long, default_value_t = 15)]
    pub warm: usize,
    /// Skip `rebuild --check` (about 40 s a million events on a 2-core machine).
    #[arg(long)]
    pub no_check: bool,
}

impl ScaleArgs {
    pub fn run(self) -> anyhow::Result<()> {
        if self.steps.is_empty() || !self.steps.is_sorted() {
            bail!("--steps must be sizes in increasing order");
        }
        let temporary = std::env::temp_dir().join(format!("hooklog-scale-{}", std::process::id()));
        let db = match &self.db {
            Some(db) => db.clone(),
            None => {
                std::fs::create_dir_all(&temporary)?;
                temporary.join("scale.db")
            }
        };
        let result = self.steps(&db);
        if self.db.is_none() {
            let _ = std::fs::remove_dir_all(&temporary);
        }
        result
    }

    fn steps(&self, db: &FsPath) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Runtime::new()?;
        println!(
            "hooklog bench scale: {}, steps {:?}",
            db.display(),
            self.steps
        );
        for &step in &self.steps {
            let head = head(db)?;
            if head < step as i64 {
                let server = Serve::start(db)?;
                let load = HookLoad {
                    url: server.url.clone(),
                    path: Path::Hooks,
                    events: step - head as usize,
                    connections: 64,
                    sessions: 100,
                    turns: 8,
                    run: format!("scale{step}-{:06x}", std::process::id()),
                    window: 0,
                    rate: 0,
                };
                let events = load.events;
                let report = runtime.block_on(load.run())?;
                println!(
                    "\ngrew the log by {events} hook events: {:.0} events/s",
                    events as f64 / report.elapsed.as_secs_f64()
                );
            }
            self.measure(db, &runtime)?;
        }
        Ok(())
    }

    /// Everything printed at one step, the server stopped before and after.
    fn measure(&self, db: &FsPath, runtime: &tokio::runtime::Runtime) -> anyhow::Result<()> {
        let events = head(db)?;
        let bytes = file_bytes(db);
        println!(
            "\nat {events} events: {:.0} MB on disk, {:.0} bytes an event",
            bytes as f64 / 1e6,
            bytes as f64 / events as f64
        );
        let ids = Ids::of(db)?;
        let server = Serve::start(db)?;
        println!(
            "{:>9} {:>9} {:>5}  route (its first page)",
            "first ms", "warm ms", "rows"
        );
        let client = reqwest::Client::new();
        for route in routes(&ids) {
            let timed = runtime.block_on(time_route(&client, &server.url, &route, self.warm))?;
            println!(
                "{:>9.1} {:>9.1} {:>5}  {route}",
                ms(timed.first),
                ms(timed.warm),
                timed.rows
            );
        }
        drop(server);

        let copy = db.with_extension("scale-backup");
        let started = Instant::now();
        let backup = run_child(
            Command::new(std::env::current_exe()?)
                .arg("backup")
                .arg(&copy)
                .arg("--db")
                .arg(db),
        )?;
        let took = started.elapsed();
        println!(
            "backup: {:.1} s, {:.0} MB/s of the file, peak memory {} MB",
            took.as_secs_f64(),
            bytes as f64 / 1e6 / took.as_secs_f64(),
            backup.peak_kb / 1024
        );
        let _ = std::fs::remove_file(&copy);
        let _ = std::fs::remove_file(crate::store::snapshot::path_of(&copy));

        if !self.no_check {
            let started = Instant::now();
            let check = run_child(
                Command::new(std::env::current_exe()?)
                    .args(["rebuild", "--check", "--db"])
                    .arg(db),
            )?;
            println!(
                "rebuild --check: {:.1} s, peak memory {} MB",
                started.elapsed().as_secs_f64(),
                check.peak_kb / 1024
            );
        }
        Ok(())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The highest sequence in the log at `db` (0 when there is no file yet).
fn head(db: &FsPath) -> anyhow::Result<i64> {
    if !db.exists() {
        return Ok(0);
    }
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    Ok(
        conn.query_row("SELECT COALESCE(MAX(sequence), 0) FROM events", [], |r| {
            r.get(0)
        })?,
    )
}

/// The database file and its WAL, in bytes.
fn file_bytes(db: &FsPath) -> u64 {
    let size = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    size(db.to_path_buf()) + size(PathBuf::from(format!("{}-wal", db.display())))
}

/// Rows the filtered routes name: a session, a hero and a parent mission from the log.
struct Ids {
    session: String,
    hero: String,
    parent: String,
}

impl Ids {
    fn of(db: &FsPath) -> anyhow::Result<Ids> {
        let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let one = |sql: &str| -> anyhow::Result<String> {
            let found: Option<String> = conn.query_row(sql, [], |r| r.get(0)).optional()?;
            Ok(found.unwrap_or_default())
        };
        Ok(Ids {
            // Halfway through the log, so neither the newest nor the oldest.
            session: one("SELECT id FROM sessions INDEXED BY sessions_by_activity
                 ORDER BY last_sequence DESC LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM sessions)")?,
            hero: crate::projection::heroes::hero_id(&one("SELECT session_id FROM missions
                 ORDER BY opened_sequence LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM missions)")?),
            parent: one("SELECT parent_mission_id FROM missions
                 WHERE parent_mission_id IS NOT NULL ORDER BY opened_sequence DESC LIMIT 1")?,
        })
    }
}

/// Every list route's first page: its default order, and each documented filter, with one
/// value that most rows match and one that none does where the route filters by a word.
fn routes(ids: &Ids) -> Vec<String> {
    let (s, h, p) = (&ids.session, &ids.hero, &ids.parent);
    [
        "/events?limit=100".to_string(),
        "/events?type=PreToolUse&limit=100".into(),
        "/events?type=Rare&limit=100".into(),
        "/events?source=api&limit=100".into(),
        "/events?origin=elsewhere&limit=100".into(),
        format!("/events?session={s}&limit=100"),
        "/tool-uses?limit=100".into(),
        "/tool-uses?status=running&limit=100".into(),
        "/tool-uses?status=completed&limit=100".into(),
        "/tool-uses?status=failed&limit=100".into(),
        "/tool-uses?status=interrupted&limit=100".into(),
        "/tool-uses?kind=bash&limit=100".into(),
        "/tool-uses?tool=Bash&limit=100".into(),
        "/tool-uses?tool=WebFetch&limit=100".into(),
        format!("/tool-uses?session={s}&limit=100"),
        "/sessions?limit=100".into(),
        "/sessions?state=active&limit=100".into(),
        "/sessions?state=stuck&limit=100".into(),
        "/sessions?state=ended&limit=100".into(),
        "/sessions?source=hook&limit=100".into(),
        "/sessions?source_app=nothing&limit=100".into(),
        "/sessions?origin=elsewhere&limit=100".into(),
        "/heroes?limit=100".into(),
        "/heroes?state=active&limit=100".into(),
        "/heroes?state=ended&limit=100".into(),
        "/missions?limit=100".into(),
        "/missions?state=active&limit=100".into(),
        "/missions?state=completed&limit=100".into(),
        format!("/missions?heroId={h}&limit=100"),
        format!("/missions?parentMissionId={p}&limit=100"),
        format!("/missions?session={s}&limit=100"),
        "/permission-requests?limit=100".into(),
        "/permission-requests?state=pending&limit=100".into(),
        "/permission-requests?state=denied&limit=100".into(),
        format!("/permission-requests?session={s}&limit=100"),
        "/alerts?limit=100".into(),
        "/alerts?unacknowledged=true&limit=100".into(),
        "/claims?all=true".into(),
        "/gaps?limit=100".into(),
        "/changes?limit=100".into(),
        "/search?q=cargo&limit=20".into(),
        "/search?q=cargo&order=rank&limit=20".into(),
        "/search?q=totals&order=rank&limit=20".into(),
        "/search?q=nothingmatchesthis&limit=20".into(),
    ]
    .into()
}

struct Timed {
    first: Duration,
    warm: Duration,
    rows: usize,
}

/// The first call's time, the median of `warm` more, and the rows of the page (the length of
/// the answer's first array).
async fn time_route(
    client: &reqwest::Client,
    url: &str,
    route: &str,
    warm: usize,
) -> anyhow::Result<Timed> {
    let mut times = Vec::with_capacity(warm + 1);
    let mut rows = 0;
    for _ in 0..=warm {
        let started = Instant::now();
        let response = client.get(format!("{url}{route}")).send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        times.push(started.elapsed());
        if !status.is_success() {
            bail!(
                "{route} answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        let value: serde_json::Value = serde_json::from_slice(&body)?;
        rows = match &value {
            serde_json::Value::Object(map) => map
                .values()
                .find_map(|v| v.as_array().map(Vec::len))
                .unwrap_or(0),
            serde_json::Value::Array(list) => list.len(),
            _ => 0,
        };
    }
    let first = times[0];
    let mut rest = times[1..].to_vec();
    rest.sort_unstable();
    let warm = super::quantile(&rest, 0.5).unwrap_or(first);
    Ok(Timed { first, warm, rows })
}

/// A `hooklog serve` of this binary on `db` and a free port, stopped when dropped.
struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    fn start(db: &FsPath) -> anyhow::Result<Serve> {
        let (child, url) = super::spawn_server(
            Command::new(std::env::current_exe()?)
                .args(["serve", "--bind", "127.0.0.1:0", "--db"])
                .arg(db),
        )?;
        Ok(Serve { child, url })
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // SIGTERM, so it checkpoints and closes as a user's stop would.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// What a finished child process used.
struct Used {
    /// Its peak resident memory (`ru_maxrss`), in KiB.
    peak_kb: i64,
}

/// Runs `command` to its end (its output dropped) and reads its peak memory from `wait4`.
fn run_child(command: &mut Command) -> anyhow::Result<Used> {
    let child = command
        .stdout(Stdio::null())
        .env("HOOKLOG_LOG", "warn")
        .spawn()
        .context("starting a child")?;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } != pid {
        bail!(
            "waiting for {command:?}: {}",
            std::io::Error::last_os_error()
        );
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!("{command:?} failed ({status})");
    }
    Ok(Used {
        peak_kb: usage.ru_maxrss,
    })
}
