//! `hooklog bench`: load generators that measure a real server. By default each starts a fresh
//! `hooklog serve` on a temporary database as a child process, so the memory it reports is the
//! server's alone; `--url` points it at a running one instead.

pub mod agents;
pub mod calibrate;
pub mod floor;
pub mod forwarder;
pub mod ingest;
pub mod nats;
pub mod rebuild;
pub mod scale;
pub mod search;
pub mod sessions;
pub mod stages;
pub mod stream;

use crate::config::Durability;
use anyhow::Context;
use clap::Subcommand;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Post events over HTTP and report events/s, latency, commit batch sizes and RSS.
    Ingest(ingest::IngestArgs),
    /// Replay and fan-out of event streams: catch-up speed, delivery lag, memory.
    Stream(stream::StreamArgs),
    /// What a run of `hooklog hook` costs, start-up included, and how fast a spool drains.
    Hook(forwarder::HookBenchArgs),
    /// Many machines end to end: a publisher, NATS JetStream and an aggregator; events/s and
    /// the time from the publisher's commit to the aggregator's (needs `nats-server`).
    Nats(nats::NatsArgs),
    /// How fast `hooklog rebuild` re-derives the projections of a mixed workload.
    Rebuild(rebuild::RebuildArgs),
    /// A log grown in steps (1,000,000 and 5,000,000 hook events by default): at each, every
    /// list route's first page on a restarted server (its first call, then warm), backup speed, `rebuild --check`'s time and peak
    /// memory, and the bytes on disk per event.
    Scale(scale::ScaleArgs),
    /// Full-text search: query latency on a large log of hook sessions through `GET /search`,
    /// hook ingest with and without the index, and the index's share of the database.
    Search(search::SearchBenchArgs),
    /// This machine's own speed right now (raw SQLite appends, JSON parsing, fsync, an HTTP
    /// server that does nothing), against the reference numbers the issues were written with.
    Calibrate(calibrate::CalibrateArgs),
    /// The do-nothing HTTP server `calibrate` loads (not a hooklog: it stores nothing).
    #[command(hide = true)]
    NullServer(floor::NullServerArgs),
}

impl BenchCommand {
    pub fn run(self) -> anyhow::Result<()> {
        match self {
            BenchCommand::Ingest(args) => args.run(),
            BenchCommand::Stream(args) => args.run(),
            BenchCommand::Rebuild(args) => args.run(),
            BenchCommand::Nats(args) => args.run(),
            BenchCommand::Search(args) => args.run(),
            BenchCommand::Scale(args) => args.run(),
            BenchCommand::Hook(args) => args.run(),
            BenchCommand::Calibrate(args) => args.run(),
            BenchCommand::NullServer(args) => args.run(),
        }
    }
}

/// The value at quantile `p` (0.5 for the median) of ascending `sorted`: the one at index
/// `len * p`, the last for `p` near 1; `None` when there is none.
pub(super) fn quantile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    let i = ((sorted.len() as f64 * p) as usize).min(sorted.len().checked_sub(1)?);
    Some(sorted[i])
}

/// The database a server started here writes, in its temporary directory.
const DB_FILE: &str = "bench.db";

pub enum Server {
    External(String),
    Child {
        child: Child,
        url: String,
        dir: PathBuf,
    },
}

impl Server {
    /// The server at `url`, or a fresh one started here when there is none.
    pub fn external_or_start(url: Option<&str>, durability: Durability) -> anyhow::Result<Server> {
        match url {
            Some(url) => Ok(Server::External(url.trim_end_matches('/').to_string())),
            None => Server::start(durability),
        }
    }

    pub fn start(durability: Durability) -> anyhow::Result<Server> {
        Server::start_with(durability, &[])
    }

    /// [`Server::start`], with more `serve` flags.
    pub fn start_with(durability: Durability, flags: &[&str]) -> anyhow::Result<Server> {
        // Numbered: two servers of one bench may run at once (`hooks`' alternating rounds).
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "hooklog-bench-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let command = serve_command(&dir, durability, flags)?;
        Server::spawn(command, dir)
    }

    /// Stops a server started here and starts it again on the same database with `flags`.
    pub fn restart_with(&mut self, durability: Durability, flags: &[&str]) -> anyhow::Result<()> {
        let Server::Child { child, dir, .. } = self else {
            anyhow::bail!("only a server started here can be restarted");
        };
        let _ = child.kill();
        let _ = child.wait();
        let dir = std::mem::take(dir);
        let command = serve_command(&dir, durability, flags)?;
        *self = Server::spawn(command, dir)?;
        Ok(())
    }

    /// The database file of a server started here.
    pub fn db_path(&self) -> Option<PathBuf> {
        match self {
            Server::External(_) => None,
            Server::Child { dir, .. } => Some(dir.join(DB_FILE)),
        }
    }

    /// Runs `command` (this binary, as a server on port 0) until it says its address; `dir`
    /// is removed when it stops.
    fn spawn(mut command: Command, dir: PathBuf) -> anyhow::Result<Server> {
        let (child, url) = spawn_server(&mut command)?;
        Ok(Server::Child { child, url, dir })
    }

    pub fn url(&self) -> String {
        match self {
            Server::External(url) | Server::Child { url, .. } => url.clone(),
        }
    }

    /// The server's resident and peak memory, when it is our child.
    pub fn rss(&self) -> Option<String> {
        let Server::Child { child, .. } = self else {
            return None;
        };
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .map(|l| l[name.len()..].trim().to_string())
        };
        Some(format!(
            "RSS {}, peak {}",
            field("VmRSS:")?,
            field("VmHWM:")?
        ))
    }

    /// Bytes the server has caused to be written to storage so far (`write_bytes` of
    /// `/proc/PID/io`), when it is our child.
    pub fn written_bytes(&self) -> Option<u64> {
        let Server::Child { child, .. } = self else {
            return None;
        };
        let io = std::fs::read_to_string(format!("/proc/{}/io", child.id())).ok()?;
        io.lines()
            .find_map(|l| l.strip_prefix("write_bytes:"))?
            .trim()
            .parse()
            .ok()
    }

    /// CPU seconds used so far by the server's threads named `name`, when it is our child.
    pub fn thread_cpu_seconds(&self, name: &str) -> Option<f64> {
        let Server::Child { child, .. } = self else {
            return None;
        };
        let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id())).ok()?;
        let mut total = None;
        for task in tasks.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() == name {
                let stat = task.path().join("stat");
                *total.get_or_insert(0.0) += cpu_seconds(stat.to_str()?)?;
            }
        }
        total
    }

    /// CPU time (user + system) the server has used so far, when it is our child.
    pub fn cpu_seconds(&self) -> Option<f64> {
        let Server::Child { child, .. } = self else {
            return None;
        };
        cpu_seconds(&format!("/proc/{}/stat", child.id()))
    }

    pub fn stop(&mut self) {
        if let Server::Child { child, dir, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Drop for Server {
    /// A bench that stops on an error does not leave its server running.
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `command` (this binary, as a server on port 0) and waits for the address it prints on
/// its first line of stdout: the child and its URL.
fn spawn_server(command: &mut Command) -> anyhow::Result<(Child, String)> {
    let mut child = command
        .env("HOOKLOG_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the server")?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line)?;
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .context("the server did not print its address")?
        .to_string();
    Ok((child, url))
}

/// User + system CPU seconds of a process, from its `/proc/<pid>/stat` (Linux only).
pub fn cpu_seconds(stat_path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    // Fields after the command name (which may hold spaces) start at field 3; utime and stime
    // are fields 14 and 15, in clock ticks (100 per second on Linux).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// `hooklog serve` on a free port, on `dir`'s database, with `durability` and `flags`.
fn serve_command(dir: &Path, durability: Durability, flags: &[&str]) -> anyhow::Result<Command> {
    let mut command = Command::new(std::env::current_exe().context("finding the hooklog binary")?);
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--durability"])
        .arg(durability.pragma().to_lowercase())
        .arg("--db")
        .arg(dir.join(DB_FILE))
        .args(flags);
    Ok(command)
}

#[cfg(test)]
mod tests {
    #[test]
    fn quantiles_pick_the_index_len_times_p() {
        let sorted = [10, 20, 30, 40];
        assert_eq!(super::quantile(&sorted, 0.5), Some(30));
        assert_eq!(super::quantile(&sorted, 0.9), Some(40));
        assert_eq!(super::quantile(&sorted, 0.0), Some(10));
        assert_eq!(super::quantile::<u32>(&[], 0.5), None);
    }
}
