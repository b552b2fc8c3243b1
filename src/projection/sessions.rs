//! The `sessions` projection: every session id seen in the log, from any source, with what the
//! events said about it (where it runs, its transcript, its model), its state, and its extent
//! in the log. Every event of a session updates its row in one upsert.

use crate::event::StoredEvent;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

/// What one event says about its session. `None` leaves a field as it was.
#[derive(Debug, Default)]
pub struct Facts<'a> {
    /// The cli this event names (or reveals); `cli_default` is used when a new row has none.
    pub cli: Option<&'a str>,
    pub cli_default: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub pane_id: Option<&'a str>,
    pub tty: Option<&'a str>,
    pub transcript_path: Option<&'a str>,
    pub model: Option<&'a str>,
    pub permission_mode: Option<&'a str>,
    /// The state the event puts the session in; `None` keeps it (a new session starts `active`).
    pub state: Option<&'a str>,
    /// `(reason, message)` when `state` is `stuck`.
    pub stuck: Option<(&'a str, &'a str)>,
}

pub fn apply(conn: &Connection, event: &StoredEvent, facts: &Facts) -> rusqlite::Result<()> {
    let Some(session) = &event.session_id else {
        return Ok(());
    };
    let (stuck_reason, stuck_message) = facts.stuck.unzip();
    // ?11 is the new state or NULL. Leaving `stuck` clears the stuck fields; staying stuck keeps
    // when it began. `ended_at` is set on `ended` and cleared when a session comes back.
    conn.prepare_cached(
        "INSERT INTO sessions (id, source, cli, cwd, pane_id, tty, transcript_path, model,
                               permission_mode, state, stuck_reason, stuck_message, stuck_since,
                               first_sequence, last_sequence, event_count, first_event_time,
                               last_event_time, ended_at)
         VALUES (?1, ?2, COALESCE(?3, ?4), ?5, ?6, ?7, ?8, ?9, ?10, COALESCE(?11, 'active'),
                 ?12, ?13, CASE WHEN ?11 = 'stuck' THEN ?15 END,
                 ?14, ?14, 1, ?15, ?15, CASE WHEN ?11 = 'ended' THEN ?15 END)
         ON CONFLICT (id) DO UPDATE SET
             cli = COALESCE(?3, cli, ?4),
             cwd = COALESCE(?5, cwd),
             pane_id = COALESCE(?6, pane_id),
             tty = COALESCE(?7, tty),
             transcript_path = COALESCE(?8, transcript_path),
             model = COALESCE(?9, model),
             permission_mode = COALESCE(?10, permission_mode),
             stuck_reason = CASE WHEN ?11 IS NULL THEN stuck_reason
                                 WHEN ?11 = 'stuck' THEN ?12 END,
             stuck_message = CASE WHEN ?11 IS NULL THEN stuck_message
                                  WHEN ?11 = 'stuck' THEN ?13 END,
             stuck_since = CASE WHEN ?11 IS NULL THEN stuck_since
                                WHEN ?11 = 'stuck' THEN COALESCE(
                                    CASE WHEN state = 'stuck' THEN stuck_since END, ?15) END,
             ended_at = CASE WHEN ?11 IS NULL THEN ended_at
                             WHEN ?11 = 'ended' THEN COALESCE(ended_at, ?15) END,
             state = COALESCE(?11, state),
             last_sequence = ?14,
             event_count = event_count + 1,
             last_event_time = ?15",
    )?
    .execute(params![
        session,
        event.source,
        facts.cli,
        facts.cli_default,
        facts.cwd,
        facts.pane_id,
        facts.tty,
        facts.transcript_path,
        facts.model,
        facts.permission_mode,
        facts.state,
        stuck_reason,
        stuck_message,
        event.sequence,
        event.event_time,
    ])?;
    Ok(())
}

/// One row of `sessions`, as the REST routes return it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub source: String,
    pub cli: Option<String>,
    pub cwd: Option<String>,
    pub pane_id: Option<String>,
    pub tty: Option<String>,
    pub transcript_path: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub state: String,
    pub stuck_reason: Option<String>,
    pub stuck_message: Option<String>,
    pub stuck_since: Option<String>,
    pub first_sequence: i64,
    pub last_sequence: i64,
    pub event_count: i64,
    pub first_event_time: String,
    pub last_event_time: String,
    pub ended_at: Option<String>,
    /// The session's hero, when hook events made one.
    pub hero_id: Option<String>,
}

const COLUMNS: &str = "s.id, s.source, s.cli, s.cwd, s.pane_id, s.tty, s.transcript_path, s.model,
     s.permission_mode, s.state, s.stuck_reason, s.stuck_message, s.stuck_since,
     s.first_sequence, s.last_sequence, s.event_count, s.first_event_time, s.last_event_time,
     s.ended_at, h.id";

fn row(r: &Row<'_>) -> rusqlite::Result<Session> {
    Ok(Session {
        id: r.get(0)?,
        source: r.get(1)?,
        cli: r.get(2)?,
        cwd: r.get(3)?,
        pane_id: r.get(4)?,
        tty: r.get(5)?,
        transcript_path: r.get(6)?,
        model: r.get(7)?,
        permission_mode: r.get(8)?,
        state: r.get(9)?,
        stuck_reason: r.get(10)?,
        stuck_message: r.get(11)?,
        stuck_since: r.get(12)?,
        first_sequence: r.get(13)?,
        last_sequence: r.get(14)?,
        event_count: r.get(15)?,
        first_event_time: r.get(16)?,
        last_event_time: r.get(17)?,
        ended_at: r.get(18)?,
        hero_id: r.get(19)?,
    })
}

pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<Session>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM sessions s LEFT JOIN heroes h ON h.session_id = s.id
         WHERE s.id = ?1"
    ))?
    .query_row([id], row)
    .optional()
}

/// Sessions by most recent activity, optionally in one state and from one source.
pub fn list(
    conn: &Connection,
    state: Option<&str>,
    source: Option<&str>,
    limit: u32,
) -> rusqlite::Result<Vec<Session>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM sessions s LEFT JOIN heroes h ON h.session_id = s.id
         WHERE (?1 IS NULL OR s.state = ?1) AND (?2 IS NULL OR s.source = ?2)
         ORDER BY s.last_sequence DESC LIMIT ?3"
    ))?
    .query_map(params![state, source, limit], row)?
    .collect()
}
