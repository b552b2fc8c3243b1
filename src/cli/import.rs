//! `hooklog import FILE`: appends a recording (NDJSON of envelopes, as `hooklog export` or
//! `GET /sessions/{id}/export` write it, or seed 003 `FactoryEvent` envelopes) to a database, keeping every event's id, event time,
//! received time and source; only the positions are new. Idempotent: an event already stored
//! is counted as a duplicate. Each line is its own request, so one bad line is reported and
//! the rest still go in; the writer still commits them in large groups. A line is held to what
//! `POST /events` would take (`--body-limit`, `--max-json-depth`, `cli::lines`): a longer or
//! deeper one is refused by its number, never read whole; the file must be a regular one.
//!
//! `hooklog import --claude-projects [DIR]` / `--codex-sessions [DIR]` read transcripts instead
//! (`cli::transcripts`): each record becomes an event with an id derived from the record, so a
//! second import, or one of a file that grew, appends only what is new.

use super::lines::{self, Limits, Lines};
use super::transcripts::{self, Layout};
use crate::App;
use crate::config::{Config, DEFAULT_BODY_LIMIT, DEFAULT_MAX_JSON_DEPTH};
use crate::event::NewEvent;
use crate::ingest::recording;
use crate::ingest::transcript::Keep;
use crate::store::AppendError;
use anyhow::{Context, bail};
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Lines in flight to the writer at once (it groups them into transactions).
const IN_FLIGHT: usize = 2048;
/// Rejected lines reported one by one; beyond this, only counted.
const REPORTED: usize = 20;

#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("input").required(true).multiple(false))]
pub struct ImportArgs {
    /// The recording (NDJSON).
    #[arg(group = "input")]
    pub file: Option<PathBuf>,
    /// Read Claude Code transcripts instead, subagents included (default ~/.claude/projects).
    #[arg(long, group = "input", value_name = "DIR", num_args = 0..=1)]
    pub claude_projects: Option<Option<PathBuf>>,
    /// Read Codex CLI rollouts instead (default ~/.codex/sessions).
    #[arg(long, group = "input", value_name = "DIR", num_args = 0..=1)]
    pub codex_sessions: Option<Option<PathBuf>>,
    /// What a transcript record keeps: its metadata and bounded text, or the full conversation.
    #[arg(long, value_enum, default_value = "metadata")]
    pub transcripts: Keep,
    /// SQLite database file (created if missing). The server must not be running on it.
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
    /// The longest line a recording may have, in bytes (as `serve --body-limit`); a transcript's
    /// line may be as long as the follower reads (8 MiB).
    #[arg(long, env = "HOOKLOG_BODY_LIMIT", default_value_t = DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// The deepest a line may nest JSON (as `serve --max-json-depth`).
    #[arg(long, env = "HOOKLOG_MAX_JSON_DEPTH", default_value_t = DEFAULT_MAX_JSON_DEPTH)]
    pub max_json_depth: usize,
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub imported: u64,
    pub duplicates: u64,
    pub rejected: Vec<(usize, String)>,
}

impl ImportArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let (dir, layout) = match (&self.claude_projects, &self.codex_sessions) {
            (Some(dir), _) => (dir.clone(), Layout::ClaudeProjects),
            (_, Some(dir)) => (dir.clone(), Layout::CodexSessions),
            (None, None) => return self.run_recording(),
        };
        let dir = dir.unwrap_or_else(|| match layout {
            Layout::ClaudeProjects => transcripts::home(".claude/projects"),
            Layout::CodexSessions => transcripts::home(".codex/sessions"),
        });
        let mut read = transcripts::read(&dir, layout, self.transcripts, self.max_json_depth)
            .with_context(|| format!("reading {}", dir.display()))?;
        let runtime = tokio::runtime::Runtime::new()?;
        let events = std::mem::take(&mut read.events);
        let report = runtime.block_on(append_transcripts(Config::for_path(&self.db), events))?;
        println!(
            "files {}, records {}, new events {}, already stored {}",
            read.files, read.records, report.imported, report.duplicates
        );
        for (skip, n) in &read.skipped {
            println!("  skipped {n}: {}", skip.reason());
        }
        for (file, why) in read.refused.iter().take(REPORTED) {
            println!("  {}: not read: {why}", file.display());
        }
        for (file, line, why) in read.damaged.iter().take(REPORTED) {
            println!("  {}:{line}: {why}", file.display());
        }
        for (line, reason) in report.rejected.iter().take(REPORTED) {
            println!("  event {line} not stored: {reason}");
        }
        Ok(())
    }

    fn run_recording(self) -> anyhow::Result<()> {
        let path = self.file.expect("clap requires one input");
        let file =
            lines::open_regular(&path).with_context(|| format!("reading {}", path.display()))?;
        let limits = Limits {
            bytes: self.body_limit,
            depth: self.max_json_depth,
        };
        let runtime = tokio::runtime::Runtime::new()?;
        let report =
            runtime.block_on(import(Config::for_path(&self.db), Lines::new(file, limits)))?;
        println!(
            "imported {}, duplicates {}, rejected {}",
            report.imported,
            report.duplicates,
            report.rejected.len()
        );
        for (line, reason) in report.rejected.iter().take(REPORTED) {
            println!("  line {line}: {reason}");
        }
        if report.rejected.len() > REPORTED {
            println!("  ... and {} more", report.rejected.len() - REPORTED);
        }
        if !report.rejected.is_empty() {
            bail!("{} lines were not imported", report.rejected.len());
        }
        Ok(())
    }
}

/// Imports every line of `recording` into the database of `config`, in file order. Lines are
/// queued one after the other from this one task (so the log keeps the file's order) with up
/// to 2,048 answers outstanding, which lets the writer group them into large transactions.
pub async fn import<R: std::io::BufRead>(
    config: Config,
    mut recording: Lines<R>,
) -> anyhow::Result<Report> {
    let app = App::build(config).await.context("opening the database")?;
    let writer = app.store().writer.clone();
    let mut report = Report::default();
    let mut pending = std::collections::VecDeque::new();
    while let Some((number, line)) = recording.next_line()? {
        let line = match line {
            Ok(line) => line,
            Err(refused) => {
                report.rejected.push((number, refused.to_string()));
                continue;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match recording::parse_line(&line) {
            Ok(events) => pending.push_back((number, writer.enqueue(events).await?)),
            Err(e) => report.rejected.push((number, e.message)),
        }
        if pending.len() >= IN_FLIGHT {
            let (line, answer) = pending.pop_front().expect("not empty");
            report.count(line, answer.await);
        }
    }
    for (line, answer) in pending {
        report.count(line, answer.await);
    }
    report.rejected.sort();
    app.store().close().await;
    Ok(report)
}

/// Appends transcript events, in their order, one request each, with up to 2,048 answers
/// outstanding (as [`import`] does). An event already stored is counted as such; one stored
/// with other content (a record read before with `--transcripts full`, say) too, with its
/// reason. On a terminal, a progress line counts the answers.
pub async fn append_transcripts(config: Config, events: Vec<NewEvent>) -> anyhow::Result<Report> {
    let app = App::build(config).await.context("opening the database")?;
    let writer = app.store().writer.clone();
    let mut progress = Progress::new(events.len());
    let mut report = Report::default();
    let mut pending = std::collections::VecDeque::new();
    for (i, event) in events.into_iter().enumerate() {
        pending.push_back((i + 1, writer.enqueue(vec![event]).await?));
        if pending.len() >= IN_FLIGHT {
            let (i, answer) = pending.pop_front().expect("not empty");
            report.count(i, answer.await);
            progress.tick();
        }
    }
    for (i, answer) in pending {
        report.count(i, answer.await);
        progress.tick();
    }
    progress.done();
    app.store().close().await;
    Ok(report)
}

/// `done/total events` on stderr, redrawn every 1,000 answers, when stderr is a terminal and
/// the import is large enough to wait for.
struct Progress {
    total: usize,
    done: usize,
    shown: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        Progress {
            total,
            done: 0,
            shown: total >= 10_000 && std::io::stderr().is_terminal(),
        }
    }

    fn tick(&mut self) {
        self.done += 1;
        if self.shown && (self.done.is_multiple_of(1_000) || self.done == self.total) {
            let width = 30 * self.done / self.total.max(1);
            eprint!(
                "\r[{}{}] {}/{} events",
                "#".repeat(width),
                " ".repeat(30 - width),
                self.done,
                self.total
            );
            let _ = std::io::stderr().flush();
        }
    }

    fn done(&self) {
        if self.shown {
            eprintln!();
        }
    }
}

impl Report {
    fn count(
        &mut self,
        line: usize,
        answer: Result<
            Result<Vec<crate::store::Appended>, AppendError>,
            tokio::sync::oneshot::error::RecvError,
        >,
    ) {
        match answer.unwrap_or(Err(AppendError::Stopped)) {
            Ok(appended) => {
                for a in appended {
                    if a.duplicate {
                        self.duplicates += 1;
                    } else {
                        self.imported += 1;
                    }
                }
            }
            Err(e) => self.rejected.push((line, e.to_string())),
        }
    }
}
