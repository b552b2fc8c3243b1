//! `hooklog backup FILE`: a consistent copy of the database (`VACUUM INTO`), taken from a
//! read-only connection, so the server keeps running and writing while it is made.

use anyhow::{Context, bail};
use clap::Args;
use rusqlite::{Connection, OpenFlags};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BackupArgs {
    /// Where to write the copy (must not exist).
    pub file: PathBuf,
    /// SQLite database file.
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
}

impl BackupArgs {
    pub fn run(self) -> anyhow::Result<()> {
        if !self.db.exists() {
            bail!("{} does not exist", self.db.display());
        }
        if self.file.exists() {
            bail!("{} already exists; choose a new file", self.file.display());
        }
        let conn = Connection::open_with_flags(&self.db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening {}", self.db.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute("VACUUM INTO ?1", [self.file.to_string_lossy()])
            .with_context(|| format!("writing {}", self.file.display()))?;
        let (events, head): (i64, i64) =
            Connection::open_with_flags(&self.file, OpenFlags::SQLITE_OPEN_READ_ONLY)?.query_row(
                "SELECT COUNT(*), COALESCE(MAX(sequence), 0) FROM events",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
        println!(
            "backed up {} to {}: {events} events, head {head}",
            self.db.display(),
            self.file.display()
        );
        Ok(())
    }
}
