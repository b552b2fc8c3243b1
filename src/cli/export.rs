//! `hooklog export`: a recording of a session (or the whole log) as NDJSON, one
//! `hooklog.event.v1` envelope per line with its stable id and original times. It reads the
//! database file directly (read-only, so the server may be running) in short transactions.

use crate::stream::scope::{Budget, Filter, Scope};
use anyhow::{Context, bail};
use clap::Args;
use rusqlite::{Connection, OpenFlags};
use std::io::Write;
use std::path::PathBuf;

/// Events read per query (a page).
const PAGE: u32 = 1000;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The session to export.
    #[arg(long, conflicts_with = "all", required_unless_present = "all")]
    pub session: Option<String>,
    /// Export every event.
    #[arg(long)]
    pub all: bool,
    /// Only events after this position (the session's sequence with --session, the global
    /// sequence with --all).
    #[arg(long, default_value_t = 0)]
    pub after_sequence: i64,
    /// SQLite database file.
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
    /// Write here instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

impl ExportArgs {
    pub fn run(self) -> anyhow::Result<()> {
        if !self.db.exists() {
            bail!("{} does not exist", self.db.display());
        }
        let conn = Connection::open_with_flags(&self.db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening {}", self.db.display()))?;
        crate::store::migrate::check_current(&conn)
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.db.display()))?;
        let scope = match self.session {
            Some(session) => Scope::Session(session),
            None => Scope::Global(Filter::default()),
        };
        let mut out: Box<dyn Write> = match &self.output {
            Some(path) => Box::new(
                std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))?,
            ),
            None => Box::new(std::io::stdout().lock()),
        };
        let mut out = std::io::BufWriter::new(&mut out);
        let written = write_recording(&conn, &scope, self.after_sequence, &mut out)?;
        out.flush()?;
        eprintln!("exported {written} events");
        Ok(())
    }
}

/// Writes every event of `scope` after `after`, one recording line each; returns how many.
pub fn write_recording(
    conn: &Connection,
    scope: &Scope,
    mut after: i64,
    out: &mut impl Write,
) -> anyhow::Result<u64> {
    let mut written = 0;
    loop {
        let page = scope.page(conn, after, Budget::events(PAGE))?.events;
        let Some(last) = page.last() else {
            return Ok(written);
        };
        after = match scope {
            Scope::Session(_) => last.session_sequence.unwrap_or(after + 1),
            Scope::Global(_) => last.sequence,
        };
        let mut chunk = String::new();
        for event in &page {
            event.write_record(&mut chunk);
            chunk.push('\n');
        }
        out.write_all(chunk.as_bytes())?;
        written += page.len() as u64;
    }
}
