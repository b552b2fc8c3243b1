//! The stored event as a row of the `events` table: the columns every reader selects and how
//! a row becomes a [`StoredEvent`].

use super::StoredEvent;
use rusqlite::{Connection, Row};

/// The column list [`stored_event`] reads, in order.
pub const EVENT_COLUMNS: &str = "sequence, event_id, session_id, session_sequence, type, source, event_time, received_at, payload, origin";

pub fn stored_event(row: &Row<'_>) -> rusqlite::Result<StoredEvent> {
    Ok(StoredEvent {
        sequence: row.get(0)?,
        event_id: row.get(1)?,
        session_id: row.get(2)?,
        session_sequence: row.get(3)?,
        event_type: row.get(4)?,
        source: row.get(5)?,
        event_time: row.get(6)?,
        received_at: row.get(7)?,
        payload: row.get(8)?,
        origin: row.get(9)?,
    })
}

/// The highest committed sequence (0 for an empty log).
/// Pruning never lowers it: the highest sequence pruned is kept in `meta`.
pub fn head(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "SELECT MAX(COALESCE((SELECT MAX(sequence) FROM events), 0),
                    COALESCE((SELECT CAST(value AS INTEGER) FROM meta
                              WHERE key = 'pruned_through_sequence'), 0))",
    )?
    .query_row([], |r| r.get(0))
}
