//! Upgrading a log that kept its snapshot in `snapshot_<table>` twins (migrations 0006 to
//! 0014): before migration 0015 drops the twins, their rows and the boundary move into the
//! snapshot file.
//!
//! It runs inside the migrating transaction, reading the twins through the migrating
//! connection (they may have been made by a migration of the same transaction), and commits
//! the file before that transaction commits. A crash in between leaves the log at its old
//! version with its twins, and the next upgrade makes the file again from them: the file is
//! removed and made anew each time, so the move is idempotent.

use super::{THROUGH_KEY, file, restore::copy_rows};
use crate::projection;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

/// Moves the twins' rows and `snapshot_through_sequence` out of the log `log` (at schema
/// `version`, inside its migrating transaction) into its snapshot file, made at the same
/// schema version. A snapshot at 0 holds nothing and needs no file; a log without the key
/// (pruned before 0006 kept a snapshot) has none to move.
pub(crate) fn move_twins_out(log: &Connection, version: usize) -> rusqlite::Result<()> {
    let through: Option<i64> = log
        .query_row(
            "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1",
            [THROUGH_KEY],
            |r| r.get(0),
        )
        .optional()?;
    log.execute("DELETE FROM meta WHERE key = ?1", [THROUGH_KEY])?;
    let Some(path) = file::path_beside(log) else {
        // An in-memory log has no file beside it: it can only let a non-empty snapshot go.
        return match through {
            Some(through) if through > 0 => Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISUSE),
                Some("an in-memory database cannot keep its retention snapshot in a file".into()),
            )),
            _ => Ok(()),
        };
    };
    // Whatever an interrupted upgrade left is made again from the twins.
    file::remove(&path)?;
    let Some(through) = through.filter(|t| *t > 0) else {
        return Ok(());
    };
    let synchronous: i64 = log.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    let mut snapshot =
        file::create(&path, log, synchronous, Some(version)).map_err(|e| file::named(&path, e))?;
    let tx = snapshot.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for table in projection::TABLES {
        let twin = format!("snapshot_{table}");
        let exists: bool = log.query_row(
            "SELECT EXISTS (SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?1)",
            [&twin],
            |r| r.get(0),
        )?;
        if exists {
            copy_rows(log, &twin, &tx, table)?;
        }
    }
    tx.execute(
        "UPDATE meta SET value = CAST(?2 AS TEXT) WHERE key = ?1",
        rusqlite::params![THROUGH_KEY, through],
    )?;
    tx.commit()
}
