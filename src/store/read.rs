//! Read queries over the log and its projections. They take a plain `&Connection` (a pooled
//! read-only one in the server), so the CLI and tests can run them too.

use crate::event::StoredEvent;
use rusqlite::{Connection, OptionalExtension};

pub use crate::event::row::{EVENT_COLUMNS, head, stored_event};

/// A session's last `session_sequence` (0 for a new session). Pruning never lowers it: a
/// pruned session's last number is kept in `pruned_sessions`.
pub fn session_head(conn: &Connection, session: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "SELECT MAX(COALESCE((SELECT MAX(session_sequence) FROM events WHERE session_id = ?1), 0),
                    COALESCE((SELECT last_session_sequence FROM pruned_sessions
                              WHERE session_id = ?1), 0))",
    )?
    .query_row([session], |r| r.get(0))
}

pub fn event_by_id(conn: &Connection, event_id: &str) -> rusqlite::Result<Option<StoredEvent>> {
    conn.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE event_id = ?1"
    ))?
    .query_row([event_id], stored_event)
    .optional()
}

/// The origin each of `ids` is stored with, for those stored (one indexed lookup each).
pub fn stored_origins(
    conn: &Connection,
    ids: &[String],
) -> rusqlite::Result<std::collections::HashMap<String, String>> {
    let mut statement = conn.prepare_cached("SELECT origin FROM events WHERE event_id = ?1")?;
    let mut stored = std::collections::HashMap::new();
    for id in ids {
        if let Some(origin) = statement.query_row([id], |r| r.get(0)).optional()? {
            stored.insert(id.clone(), origin);
        }
    }
    Ok(stored)
}

pub fn event_at(conn: &Connection, sequence: i64) -> rusqlite::Result<Option<StoredEvent>> {
    conn.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE sequence = ?1"
    ))?
    .query_row([sequence], stored_event)
    .optional()
}

/// A position recorded with a JetStream stream (0: none yet).
pub fn position(
    conn: &Connection,
    kind: super::writer::Position,
    stream: &str,
) -> rusqlite::Result<i64> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT sequence FROM {} WHERE stream = ?1",
            kind.table()
        ))?
        .query_row([stream], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// A value from the `meta` table.
pub fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .optional()
}

/// Unacknowledged alerts, counted by kind (`GET /metrics`). Kinds are the projections' own
/// names, never a client's string, so the list stays short.
pub fn open_alerts_by_kind(conn: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    conn.prepare_cached(
        "SELECT kind, COUNT(*) FROM alerts WHERE acknowledged_at IS NULL GROUP BY kind ORDER BY kind",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}
