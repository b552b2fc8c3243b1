//! The stored event as a row of the `events` table: the columns every reader selects and how
//! a row becomes a [`StoredEvent`].

use super::StoredEvent;
use rusqlite::{Connection, Row};

/// The column list [`stored_event`] reads, in order, from `events` (named so, not aliased):
/// the last is the payload fields the event shares with its session, stored once
/// (`event::shared`).
///
/// A `shared` id without its row reads as `''`, which [`stored_event`] refuses: a payload is
/// never handed out short of its fields.
pub const EVENT_COLUMNS: &str = "sequence, event_id, session_id, session_sequence, type, source, event_time, received_at, payload, origin,
     IIF(events.shared IS NULL, NULL,
         COALESCE((SELECT payload_shared.fields FROM payload_shared
                   WHERE payload_shared.id = events.shared), ''))";

/// A row of [`EVENT_COLUMNS`] as the event it stores, its payload whole.
pub fn stored_event(row: &Row<'_>) -> rusqlite::Result<StoredEvent> {
    let mut payload: String = row.get(8)?;
    let event_type: String = row.get(4)?;
    if let Some(shared) = row.get::<_, Option<String>>(10)? {
        payload = super::shared::join(&payload, &shared, &event_type).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                8,
                rusqlite::types::Type::Text,
                "a payload whose shared fields are missing or not a JSON object".into(),
            )
        })?;
    }
    Ok(StoredEvent {
        sequence: row.get(0)?,
        event_id: row.get(1)?,
        session_id: row.get(2)?,
        session_sequence: row.get(3)?,
        event_type,
        source: row.get(5)?,
        event_time: row.get(6)?,
        received_at: row.get(7)?,
        payload,
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
