//! `hooklog import FILE`: appends a recording (NDJSON of envelopes, as `hooklog export` or
//! `GET /sessions/{id}/export` write it, or seed 003 `FactoryEvent` envelopes) to a database, keeping every event's id, event time,
//! received time and source; only the positions are new. Idempotent: an event already stored
//! is counted as a duplicate. Each line is its own request, so one bad line is reported and
//! the rest still go in; the writer still commits them in large groups.

use crate::App;
use crate::config::Config;
use crate::ingest::recording;
use crate::store::AppendError;
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;

/// Lines in flight to the writer at once (it groups them into transactions).
const IN_FLIGHT: usize = 2048;
/// Rejected lines reported one by one; beyond this, only counted.
const REPORTED: usize = 20;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The recording (NDJSON).
    pub file: PathBuf,
    /// SQLite database file (created if missing). The server must not be running on it.
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
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
        let bytes = std::fs::read(&self.file)
            .with_context(|| format!("reading {}", self.file.display()))?;
        let runtime = tokio::runtime::Runtime::new()?;
        let report = runtime.block_on(import(Config::for_path(&self.db), &bytes))?;
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
pub async fn import(config: Config, recording: &[u8]) -> anyhow::Result<Report> {
    let app = App::build(config).await.context("opening the database")?;
    let writer = app.store().writer.clone();
    let mut report = Report::default();
    let mut pending = std::collections::VecDeque::new();
    for (i, line) in recording.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match recording::parse_line(line) {
            Ok(events) => pending.push_back((i + 1, writer.enqueue(events).await?)),
            Err(e) => report.rejected.push((i + 1, e.message)),
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
