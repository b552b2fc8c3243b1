//! The retention snapshot: every projection table as it stood after the last pruned event, so
//! that a rebuild after pruning starts from there and replays only the retained events.
//!
//! It is a database file of its own beside the log (`<db>.snapshot`, [`path_of`]), made by the
//! same migrations, so its projection tables come from the same DDL as the live ones: each
//! table is defined once. Only its projection tables and two `meta` keys mean anything there:
//! `snapshot_through_sequence` (where it stands) and `stream_generation_id` (the log it belongs
//! to; a file whose id differs is not this log's snapshot and is never used).
//!
//! Advancing it ([`Snapshot::advance`]) runs the unchanged projection code on a connection to
//! that file, so the statements name their tables as always and find the snapshot's. SQLite
//! does not make a transaction across two WAL files atomic, so the prune step commits in
//! order: the snapshot first (its rows and its boundary together), then the log's delete. A
//! crash between the two leaves the snapshot ahead of the pruned boundary, which is harmless:
//! a rebuild starts from the snapshot and replays only the events after it, and the next prune
//! step (or the next open of the log) deletes the events the snapshot already covers without
//! applying them again ([`crate::store::retention::finish_interrupted`]).

mod copy;
mod file;
mod restore;
#[cfg(test)]
mod tests;
mod upgrade;

pub use copy::{adopt, copy};
pub use file::path_of;
pub use restore::restore;
pub(crate) use upgrade::move_twins_out;

use crate::projection;
use crate::projection::tables::Cached;
use crate::store::read;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use std::path::PathBuf;

/// The meta key holding the snapshot's boundary, in the snapshot's file.
pub const THROUGH_KEY: &str = "snapshot_through_sequence";

/// The meta key naming the log a snapshot file belongs to (the log's own stream generation).
const OWNER_KEY: &str = "stream_generation_id";

/// Where the snapshot of the database `log` has open stands: `Some(0)` for a log that never
/// pruned and has no snapshot file yet; `None` when events were pruned and there is no
/// snapshot of what they built (pruned before hooklog kept one, or its file is missing, behind
/// the log, or another log's).
pub fn through(log: &Connection) -> rusqlite::Result<Option<i64>> {
    let Some(path) = file::path_beside(log) else {
        return Ok(None);
    };
    let pruned = pruned_through(log)?;
    if !path.exists() {
        return Ok((pruned == 0).then_some(0));
    }
    let snapshot = file::open_read_only(&path)?;
    usable(log, &snapshot)
}

/// The snapshot's boundary if the file belongs to `log` and stands where a snapshot of it can:
/// at or after the pruned boundary, and not past the log's head (a copy of the log restored
/// beside a newer snapshot would otherwise lose events).
fn usable(log: &Connection, snapshot: &Connection) -> rusqlite::Result<Option<i64>> {
    if !belongs_to(log, snapshot)? {
        return Ok(None);
    }
    let Some(through) = boundary(snapshot)? else {
        return Ok(None);
    };
    let pruned = pruned_through(log)?;
    let head = read::head(log)?;
    Ok((through >= pruned && through <= head.max(pruned)).then_some(through))
}

/// Whether the snapshot file is `log`'s: it names the log's stream generation.
fn belongs_to(log: &Connection, snapshot: &Connection) -> rusqlite::Result<bool> {
    Ok(read::meta(snapshot, OWNER_KEY)? == read::meta(log, OWNER_KEY)?)
}

/// The boundary a snapshot file records.
fn boundary(snapshot: &Connection) -> rusqlite::Result<Option<i64>> {
    snapshot
        .prepare_cached("SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1")?
        .query_row([THROUGH_KEY], |r| r.get(0))
        .optional()
}

/// The highest sequence the log has pruned (0 if none).
fn pruned_through(log: &Connection) -> rusqlite::Result<i64> {
    log.prepare_cached(
        "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta
                          WHERE key = 'pruned_through_sequence'), 0)",
    )?
    .query_row([], |r| r.get(0))
}

/// Brings the schema of the snapshot file beside `log`, if there is one, to this hooklog's
/// (the log's migrations change its projection tables; they run on the file here).
pub(crate) fn update_schema(log: &Connection) -> rusqlite::Result<()> {
    match file::path_beside(log).filter(|p| p.exists()) {
        Some(path) => {
            let synchronous = log.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
            file::open(&path, synchronous)
                .map(drop)
                .map_err(|e| file::named(&path, e))
        }
        None => Ok(()),
    }
}

/// Names the snapshot's sessions stored before origins were recorded after this hooklog, as
/// [`crate::store::migrate::backfill_origin`] names the log's (it runs this first; both are
/// idempotent).
pub(crate) fn backfill_origin(log: &Connection, origin: &str) -> rusqlite::Result<()> {
    let Some(path) = file::path_beside(log).filter(|p| p.exists()) else {
        return Ok(());
    };
    let synchronous = log.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    let snapshot = file::open(&path, synchronous).map_err(|e| file::named(&path, e))?;
    snapshot.execute(
        "UPDATE sessions SET origin = ?1 WHERE origin = ''",
        [origin],
    )?;
    Ok(())
}

/// The writer's handle on the snapshot of its log: the file is opened the first time a prune
/// step needs it (and made then, if the log has pruned nothing yet), and kept open with its
/// page cache between steps.
pub struct Snapshot {
    /// The file; `None` for an in-memory log, which keeps no snapshot.
    path: Option<PathBuf>,
    /// The log's `PRAGMA synchronous`, which the snapshot's commits use too.
    synchronous: i64,
    conn: Option<Connection>,
}

impl Snapshot {
    /// The snapshot of the database `log` has open (nothing is opened yet).
    pub fn of(log: &Connection) -> rusqlite::Result<Snapshot> {
        Ok(Snapshot {
            path: file::path_beside(log),
            synchronous: log.query_row("PRAGMA synchronous", [], |r| r.get(0))?,
            conn: None,
        })
    }

    /// Where the snapshot stands, if it is a usable snapshot of `log` ([`through`]); `None`
    /// also when there is no file (nothing is made here).
    pub fn stands_at(&mut self, log: &Connection) -> rusqlite::Result<Option<i64>> {
        match self.open_existing()? {
            Some(snapshot) => usable(log, snapshot),
            None => Ok(None),
        }
    }

    /// The open connection, if the file exists.
    fn open_existing(&mut self) -> rusqlite::Result<Option<&Connection>> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        if self.conn.is_none() {
            if !path.exists() {
                return Ok(None);
            }
            self.conn = Some(file::open(path, self.synchronous).map_err(|e| file::named(path, e))?);
        }
        Ok(self.conn.as_ref())
    }

    /// Moves the snapshot forward to `through` by applying the events after its boundary up to
    /// `through` to it, and commits it. Call before the log deletes those events, in the
    /// prune step's transaction on `log` (which reads them). Does nothing when the log keeps
    /// no usable snapshot (it pruned before one was kept, or the file is gone): a rebuild then
    /// refuses rather than lose what the pruned events built.
    pub fn advance(&mut self, log: &Connection, through: i64) -> rusqlite::Result<()> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        let from = match self.stands_at(log)? {
            Some(from) => from,
            // Nothing pruned yet: an empty snapshot at 0 is exact (a file left by another log,
            // or by an earlier copy of this one, is replaced).
            None if pruned_through(log)? == 0 => {
                self.conn = None;
                file::remove(&path).map_err(|e| file::named(&path, e))?;
                let made = file::create(&path, log, self.synchronous, None)
                    .map_err(|e| file::named(&path, e))?;
                self.conn = Some(made);
                0
            }
            None => {
                // Said at every step: the file went missing (or was replaced) after pruning,
                // and what these events built is now only in the live projections.
                tracing::warn!(
                    path = %path.display(),
                    through,
                    "pruning with no usable retention snapshot: `hooklog rebuild` will refuse for this database"
                );
                return Ok(());
            }
        };
        if through <= from {
            return Ok(());
        }
        let events = log
            .prepare_cached(&format!(
                "SELECT {} FROM events WHERE sequence > ?1 AND sequence <= ?2 ORDER BY sequence",
                read::EVENT_COLUMNS
            ))?
            .query_map([from, through], read::stored_event)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let snapshot = self
            .open_existing()?
            .expect("the snapshot file exists once it is usable");
        apply(snapshot, &events, through).map_err(|e| file::named(&path, e))
    }
}

/// Applies `events` to the snapshot's projection tables as a rebuild replays them (the agent
/// rows in memory, written once at the end) and records the new boundary, in one transaction.
fn apply(
    snapshot: &Connection,
    events: &[crate::event::StoredEvent],
    through: i64,
) -> rusqlite::Result<()> {
    let tx = rusqlite::Transaction::new_unchecked(snapshot, TransactionBehavior::Immediate)?;
    {
        let tables = Cached::new(&tx, false);
        for event in events {
            projection::apply_to(&tables, &tx, event)?;
        }
        tables.flush()?;
    }
    // What an event changed, and the mission it answered with, belong to its history: they go
    // with the event (the prune step deletes the live rows).
    tx.execute("DELETE FROM agent_changes", [])?;
    tx.execute(
        "UPDATE meta SET value = CAST(?2 AS TEXT) WHERE key = ?1",
        rusqlite::params![THROUGH_KEY, through],
    )?;
    tx.commit()
}
