//! The `alerts` projection. `unknownEventType` is raised here, for an event whose type the
//! catalogue does not know (it is stored all the same), once per type and source until that
//! alert is acknowledged: a new event name from a future agent version is one alert, not one
//! per event. Other projections raise their own kinds through [`raise`] (`missing_hero`,
//! `lineage_degraded`); `transcript_refused` is raised here too, once per path and reason
//! until acknowledged, and `stream_message_flagged` once per subject and reason.

use crate::event::{StoredEvent, catalogue};
use rusqlite::{Connection, params};
use serde_json::json;

pub const UNKNOWN_EVENT_TYPE: &str = "unknownEventType";

pub fn apply(conn: &Connection, event: &StoredEvent) -> rusqlite::Result<()> {
    let raised = || {
        standing(
            conn,
            UNKNOWN_EVENT_TYPE,
            ("type", Some(&event.event_type)),
            ("source", Some(&event.source)),
        )
    };
    if catalogue::is_known(&event.event_type) || raised()? {
        return Ok(());
    }
    let message = format!(
        "event type {:?} (source {:?}) is not in the catalogue; its events are stored, and this alert stands for all of them until it is acknowledged",
        event.event_type, event.source
    );
    let details = json!({ "type": event.event_type, "source": event.source });
    raise(conn, UNKNOWN_EVENT_TYPE, event, &message, &details)
}

/// Whether an unacknowledged alert of `kind` already stands whose `details` have these two
/// values at these two keys (`unknownEventType`: its type and source; `transcript_refused`:
/// its path and reason). Alerts of those kinds are few: one per pair at a time.
fn standing(
    conn: &Connection,
    kind: &str,
    (first, first_value): (&str, Option<&str>),
    (second, second_value): (&str, Option<&str>),
) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM alerts
         WHERE kind = ?1 AND acknowledged_at IS NULL
           AND json_extract(details, ?2) IS ?3 AND json_extract(details, ?4) IS ?5)",
    )?
    .query_row(
        params![
            kind,
            format!("$.{first}"),
            first_value,
            format!("$.{second}"),
            second_value
        ],
        |r| r.get(0),
    )
}

pub const TRANSCRIPT_REFUSED: &str = "transcript_refused";

/// `TranscriptRefused`: a hook named a transcript hooklog does not read (outside the
/// transcript roots, not a regular file, another user's). One alert per path and reason
/// until it is acknowledged, however many sessions name it.
pub fn transcript_refused(
    conn: &Connection,
    event: &StoredEvent,
    view: &crate::projection::view::View,
) -> rusqlite::Result<()> {
    let (path, reason) = (view.text("path"), view.text("reason"));
    if standing(conn, TRANSCRIPT_REFUSED, ("path", path), ("reason", reason))? {
        return Ok(());
    }
    let message = format!(
        "a hook named the transcript {:?}, which hooklog does not read ({}): only regular files of hooklog's user under the transcript roots are (serve --transcript-root)",
        path.unwrap_or(""),
        reason.unwrap_or("refused")
    );
    let details = json!({ "path": path, "reason": reason });
    raise(conn, TRANSCRIPT_REFUSED, event, &message, &details)
}

pub const STREAM_MESSAGE_FLAGGED: &str = "stream_message_flagged";

/// `StreamMessageFlagged`: the aggregator refused a message of the stream (its origin is not
/// its subject's, it is not an event, ...) or stored an event under its origin's name for its
/// id (another origin holds the id). One alert per subject and reason until it is acknowledged.
pub fn stream_message_flagged(
    conn: &Connection,
    event: &StoredEvent,
    view: &crate::projection::view::View,
) -> rusqlite::Result<()> {
    let (subject, reason) = (view.text("subject"), view.text("reason"));
    if standing(
        conn,
        STREAM_MESSAGE_FLAGGED,
        ("subject", subject),
        ("reason", reason),
    )? {
        return Ok(());
    }
    let message = format!(
        "a message on {} (stream {}, sequence {}): {}",
        subject.unwrap_or(""),
        view.text("stream").unwrap_or(""),
        view.int("streamSequence").unwrap_or_default(),
        view.text("message").unwrap_or(reason.unwrap_or("flagged"))
    );
    let details = json!({
        "subject": subject,
        "reason": reason,
        "eventId": view.text("eventId"),
        "origin": view.text("origin"),
        "storedAs": view.text("storedAs"),
    });
    raise(conn, STREAM_MESSAGE_FLAGGED, event, &message, &details)
}

/// `alert_acknowledged`: marks the alert it names acknowledged, at the event's time. An alert
/// already acknowledged keeps its first acknowledgement.
pub fn acknowledge(conn: &Connection, event: &StoredEvent, alert_id: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE alerts SET acknowledged_at = ?2 WHERE id = ?1 AND acknowledged_at IS NULL",
    )?
    .execute(params![alert_id, event.received_at])?;
    Ok(())
}

/// One alert by id.
pub fn get(conn: &Connection, id: i64) -> rusqlite::Result<Option<Alert>> {
    use rusqlite::OptionalExtension;
    conn.prepare_cached(&format!("SELECT {ALERT_COLUMNS} FROM alerts WHERE id = ?1"))?
        .query_row([id], alert_row)
        .optional()
}

/// Records an alert raised by `event`. Its time is the event's `received_at`.
pub fn raise(
    conn: &Connection,
    kind: &str,
    event: &StoredEvent,
    message: &str,
    details: &serde_json::Value,
) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO alerts (kind, event_sequence, event_id, session_id, message, details, raised_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        kind,
        event.sequence,
        event.event_id,
        event.session_id,
        message,
        details.to_string(),
        event.received_at,
    ])?;
    Ok(())
}

/// One row of `alerts`, as `GET /alerts` returns it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    pub id: i64,
    pub kind: String,
    pub event_sequence: i64,
    pub event_id: String,
    pub session_id: Option<String>,
    pub message: String,
    pub details: Option<serde_json::Value>,
    pub raised_at: String,
    pub acknowledged_at: Option<String>,
}

const ALERT_COLUMNS: &str = "id, kind, event_sequence, event_id, session_id, message, details,
     raised_at, acknowledged_at";

fn alert_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Alert> {
    let details: Option<String> = row.get(6)?;
    Ok(Alert {
        id: row.get(0)?,
        kind: row.get(1)?,
        event_sequence: row.get(2)?,
        event_id: row.get(3)?,
        session_id: row.get(4)?,
        message: row.get(5)?,
        details: details.and_then(|d| serde_json::from_str(&d).ok()),
        raised_at: row.get(7)?,
        acknowledged_at: row.get(8)?,
    })
}

/// Alerts in the order they were raised, optionally of one kind, only unacknowledged ones,
/// after an alert id.
pub fn list(
    conn: &Connection,
    kind: Option<&str>,
    unacknowledged: bool,
    after_id: i64,
    limit: u32,
) -> rusqlite::Result<Vec<Alert>> {
    conn.prepare_cached(&list_sql(kind.is_some()))?
        .query_map(params![kind, unacknowledged, after_id, limit], alert_row)?
        .collect()
}

/// The statement [`list`] runs. One kind's alerts are read through `alerts_by_kind`:
/// `(?1 IS NULL OR kind = ?1)` would hide the column from the planner, which would walk every
/// alert for a rare kind.
fn list_sql(one_kind: bool) -> String {
    let kind = match one_kind {
        true => "kind = ?1",
        false => "?1 IS NULL",
    };
    format!(
        "SELECT {ALERT_COLUMNS} FROM alerts
         WHERE {kind} AND (NOT ?2 OR acknowledged_at IS NULL) AND id > ?3
         ORDER BY id LIMIT ?4"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_kinds_alerts_are_read_through_its_index() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let plan = crate::projection::filter::plan_of(
            &conn,
            &list_sql(true),
            params!["stuck", false, 0, 10],
        );
        assert!(plan.contains("alerts_by_kind"), "{plan}");
        let all = list(&conn, None, false, 0, 10).unwrap();
        assert!(all.is_empty());
    }
}
