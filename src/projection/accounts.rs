//! The `accounts` projection: the platform accounts the log has events of (seed 002's inbox
//! events: what a watcher pushes, what a catch-up appends). An event counts when its source is
//! none of the four contracts (`hook`, `normalized`, `coordination`, `factory`) and its payload
//! names `platform` and `account`; its optional `position` is the platform's own (a sequence
//! id, a message id, a Slack ts). A first owner on an account listed here opens a catch-up gap
//! from its newest event (`coordination::owners`).

use super::view::View;
use crate::event::StoredEvent;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

/// An account's newest event.
#[derive(Debug, Clone, PartialEq)]
pub struct Newest {
    pub event_id: String,
    pub sequence: i64,
    pub position: Option<String>,
}

/// A platform position as text: a string as it is, a number as written.
pub fn position_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Counts the event for its account, if it names one. Most payloads do not: they are not parsed.
pub fn apply(conn: &Connection, event: &StoredEvent) -> rusqlite::Result<()> {
    if memchr::memmem::find(event.payload.as_bytes(), b"\"account\"").is_none() {
        return Ok(());
    }
    let view = View::parse(&event.payload);
    let (Some(platform), Some(account)) = (view.text("platform"), view.text("account")) else {
        return Ok(());
    };
    conn.prepare_cached(
        "INSERT INTO accounts (platform, account, event_count, first_sequence, last_sequence,
                               last_event_id, last_event_time, last_position)
         VALUES (?1, ?2, 1, ?3, ?3, ?4, ?5, ?6)
         ON CONFLICT (platform, account) DO UPDATE SET event_count = event_count + 1,
             last_sequence = ?3, last_event_id = ?4, last_event_time = ?5, last_position = ?6",
    )?
    .execute(params![
        platform,
        account,
        event.sequence,
        event.event_id,
        event.event_time,
        position_text(view.get("position")),
    ])?;
    Ok(())
}

/// The account's newest event, if it has any.
pub fn newest(
    conn: &Connection,
    platform: &str,
    account: &str,
) -> rusqlite::Result<Option<Newest>> {
    conn.prepare_cached(
        "SELECT last_event_id, last_sequence, last_position FROM accounts
         WHERE platform = ?1 AND account = ?2",
    )?
    .query_row([platform, account], |r| {
        Ok(Newest {
            event_id: r.get(0)?,
            sequence: r.get(1)?,
            position: r.get(2)?,
        })
    })
    .optional()
}
