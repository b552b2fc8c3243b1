//! `hooklog import FILE`: appends a recording (NDJSON of envelopes, as `hooklog export` or
//! `GET /sessions/{id}/export` write it) to a database, keeping every event's id, event time,
//! received time and source; only the positions are new. Idempotent: an event already stored
//! is counted as a duplicate. Each line is its own request, so one bad line is reported and
//! the rest still go in; the writer still commits them in large groups.

use crate::App;
use crate::config::Config;
use crate::ingest::canonical;
use anyhow::{Context, bail};
use clap::Args;
use futures_util::StreamExt;
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
        let text = std::fs::read_to_string(&self.file)
            .with_context(|| format!("reading {}", self.file.display()))?;
        let runtime = tokio::runtime::Runtime::new()?;
        let report = runtime.block_on(import(Config::for_path(&self.db), &text))?;
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

/// Imports every line of `text` into the database of `config`, in file order.
pub async fn import(config: Config, text: &str) -> anyhow::Result<Report> {
    let app = App::build(config).await.context("opening the database")?;
    let writer = app.store().writer.clone();
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| (i + 1, canonical::parse(line.as_bytes(), false)));
    // Sent in file order (each future's first poll queues it), answered in file order.
    let mut outcomes = futures_util::stream::iter(lines)
        .map(|(line, parsed)| {
            let writer = writer.clone();
            async move {
                match parsed {
                    Ok(events) => (line, writer.append(events).await.map_err(|e| e.to_string())),
                    Err(e) => (line, Err(e.message)),
                }
            }
        })
        .buffered(IN_FLIGHT);
    let mut report = Report::default();
    while let Some((line, outcome)) = outcomes.next().await {
        match outcome {
            Ok(appended) => {
                for a in appended {
                    if a.duplicate {
                        report.duplicates += 1;
                    } else {
                        report.imported += 1;
                    }
                }
            }
            Err(reason) => report.rejected.push((line, reason)),
        }
    }
    drop(outcomes);
    app.store().close().await;
    Ok(report)
}
