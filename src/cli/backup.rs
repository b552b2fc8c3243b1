//! `hooklog backup FILE`: a consistent copy of the database (`VACUUM INTO`), taken from a
//! read-only connection, so the server keeps running and writing while it is made; and of its
//! retention snapshot, if it has one, to `FILE.snapshot` (`store::snapshot::copy`).
//!
//! The copy gets a stream generation id of its own. Restoring it means putting an older log
//! in place of a newer one: positions a client already saw (sequence 40, session position 12)
//! would name other events, or none. A new generation makes every client's cursor from the
//! original invalid (streams, probes and the factory identity headers all carry it), however
//! many events are appended after the restore. The original's id is kept in the copy's `meta`
//! as `backup_of_generation`.

use anyhow::{Context, bail};
use clap::Args;
use rusqlite::Connection;
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
        let snapshot = crate::store::snapshot::path_of(&self.file);
        for path in [&self.file, &snapshot] {
            if path.exists() {
                bail!("{} already exists; choose a new file", path.display());
            }
        }
        crate::store::snapshot::copy(&self.db, &self.file)
            .with_context(|| format!("copying {} to {}", self.db.display(), self.file.display()))?;
        let copy = Connection::open(&self.file)
            .with_context(|| format!("opening {}", self.file.display()))?;
        let generation = crate::event::id::new_random_id();
        copy.execute_batch("BEGIN IMMEDIATE")?;
        copy.execute(
            "INSERT OR REPLACE INTO meta (key, value)
             SELECT 'backup_of_generation', value FROM meta WHERE key = 'stream_generation_id'",
            [],
        )?;
        copy.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'stream_generation_id'",
            [&generation],
        )?;
        copy.execute_batch("COMMIT")?;
        crate::store::snapshot::adopt(&copy)?;
        let (events, head): (i64, i64) = copy.query_row(
            "SELECT COUNT(*), COALESCE(MAX(sequence), 0) FROM events",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        println!(
            "backed up {} to {}: {events} events, head {head}, stream generation {generation}",
            self.db.display(),
            self.file.display()
        );
        Ok(())
    }
}
