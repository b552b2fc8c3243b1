//! Projections: tables derived from the log, updated by the writer in the same transaction as
//! the event that changes them. Each is a pure function of the events: no wall clock, no random
//! numbers, times and ids taken from the event, so a rebuild from the log reproduces them.

pub mod alerts;

use crate::event::StoredEvent;
use rusqlite::Connection;

/// Applies one freshly appended event to every projection.
pub fn apply(conn: &Connection, event: &StoredEvent) -> rusqlite::Result<()> {
    alerts::apply(conn, event)
}
