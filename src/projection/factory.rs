//! Factory sessions (seed 003): the session lifecycle on its `sessions` row, work items in
//! `factory_work`, dispatches in `factory_dispatches`. Everything is read from the stored
//! factory form (`{"context": {...}, "payload": {...}}`), times from `context.eventTime` (the
//! event's `event_time`).

use super::sessions::{FactoryChange, Lifecycle, SessionState};
use crate::event::StoredEvent;
use rusqlite::{Connection, Row, params};
use serde::Serialize;
use serde_json::{Map, Value};

/// A factory event's stored context and payload.
pub struct Parts {
    pub context: Map<String, Value>,
    pub payload: Map<String, Value>,
}

impl Parts {
    pub fn parse(stored: &str) -> Parts {
        let mut value: Value = serde_json::from_str(stored).unwrap_or(Value::Null);
        let mut take = |key: &str| match value.get_mut(key).map(Value::take) {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        Parts {
            context: take("context"),
            payload: take("payload"),
        }
    }

    fn text(&self, field: &str) -> Option<&str> {
        self.payload.get(field).and_then(Value::as_str)
    }

    fn context_text(&self, field: &str) -> Option<&str> {
        self.context.get(field).and_then(Value::as_str)
    }
}

/// The session state a factory lifecycle status means, for the shared `sessions.state`. The
/// statuses are seed 003's, an open vocabulary kept as the factory sends it.
pub fn session_state(status: &str) -> Option<SessionState> {
    match status {
        "RUNNING" | "RESUMING" | "CANCELING" => Some(SessionState::Active),
        "QUEUED" | "AWAITING_APPROVAL" | "PAUSED" => Some(SessionState::Idle),
        "SUCCEEDED" | "FAILED" | "CANCELED" | "TIMED_OUT" | "INTERRUPTED" | "TERMINATED" => {
            Some(SessionState::Ended)
        }
        _ => None,
    }
}

/// The lifecycle status an event reports, if it reports one.
pub fn status_of(event_type: &str, parts: &Parts) -> Option<String> {
    let field = match event_type {
        "SESSION_STARTED" => return Some("RUNNING".into()),
        "SESSION_LIFECYCLE_CONTROL" => "newStatus",
        "SESSION_PAUSED" | "SESSION_RESUMED" => "status",
        "SESSION_COMPLETED" => "finalStatus",
        _ => return None,
    };
    parts.text(field).map(str::to_string)
}

/// What a factory event changes on its session's row: a lifecycle time, the factory status,
/// the result status.
pub fn session_change(event: &StoredEvent, parts: &Parts) -> FactoryChange {
    let at = &event.event_time;
    // Payload times are kept in the log's format; one that does not parse gives way to the
    // event's time.
    let payload_time = |field: &str| {
        parts
            .text(field)
            .and_then(crate::event::time::normalize)
            .unwrap_or_else(|| at.clone())
    };
    let time = match event.event_type.as_str() {
        "RUN_REQUEST" => Some(Lifecycle::RunRequested(payload_time("recordedAt"))),
        "SESSION_STARTED" => Some(Lifecycle::Started(payload_time("startedAt"))),
        "SESSION_PAUSED" => Some(Lifecycle::Paused(payload_time("pausedAt"))),
        "SESSION_RESUMED" => Some(Lifecycle::Resumed(payload_time("resumedAt"))),
        "SESSION_COMPLETED" => Some(Lifecycle::Completed(payload_time("completedAt"))),
        "RUN_RESPONSE" => Some(Lifecycle::RunResponded(at.clone())),
        _ => None,
    };
    let result = matches!(
        event.event_type.as_str(),
        "SESSION_RESULT_UPDATED" | "SESSION_COMPLETED"
    )
    .then(|| parts.text("resultStatus").map(str::to_string))
    .flatten();
    FactoryChange {
        time,
        status: status_of(&event.event_type, parts),
        result,
    }
}

/// Work items and dispatches (the session's row changes through [`session_change`]).
pub fn apply(conn: &Connection, event: &StoredEvent, parts: &Parts) -> rusqlite::Result<()> {
    let Some(session) = &event.session_id else {
        return Ok(());
    };
    match event.event_type.as_str() {
        "WORK_REQUEST" => work_requested(conn, event, session, parts)?,
        "WORK_STATE_CHANGE" => work_moved(conn, event, session, parts)?,
        _ => {}
    }
    if let Some(dispatch) = parts.context_text("dispatchId") {
        dispatch_event(conn, event, session, dispatch, parts)?;
    }
    Ok(())
}

/// `WORK_REQUEST`: each work item of the batch (`works`, with `workId`s, else the context's
/// `workIds`) enters the session; one already known keeps its row.
fn work_requested(
    conn: &Connection,
    event: &StoredEvent,
    session: &str,
    parts: &Parts,
) -> rusqlite::Result<()> {
    let works: Vec<Value> = parts
        .payload
        .get("works")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let context_ids: Vec<&str> = parts
        .context
        .get("workIds")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let count = works.len().max(context_ids.len());
    for i in 0..count {
        let work = works.get(i);
        let field = |key: &str| work.and_then(|w| w.get(key)).and_then(Value::as_str);
        let Some(work_id) = field("workId").or(context_ids.get(i).copied()) else {
            continue;
        };
        let state = work
            .and_then(|w| w.get("state"))
            .and_then(|s| s.as_str().or_else(|| s.get("name").and_then(Value::as_str)));
        conn.prepare_cached(
            "INSERT OR IGNORE INTO factory_work (session_id, work_id, name, work_type, state,
                 place_id, request_id, moves, created_at, updated_at, created_event_id)
             VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, 0, ?7, ?7, ?8)",
        )?
        .execute(params![
            session,
            work_id,
            field("name"),
            field("workTypeName"),
            state,
            field("requestId").or(parts.context_text("requestId")),
            event.event_time,
            event.event_id,
        ])?;
    }
    Ok(())
}

/// `WORK_STATE_CHANGE`: the work item moves (made here if its request was never seen).
fn work_moved(
    conn: &Connection,
    event: &StoredEvent,
    session: &str,
    parts: &Parts,
) -> rusqlite::Result<()> {
    let Some(work_id) = parts.text("workId") else {
        return Ok(());
    };
    conn.prepare_cached(
        "INSERT INTO factory_work (session_id, work_id, name, work_type, state, place_id,
             request_id, moves, created_at, updated_at, created_event_id)
         VALUES (?1, ?2, NULL, ?3, ?4, ?5, ?6, 1, ?7, ?7, ?8)
         ON CONFLICT (session_id, work_id) DO UPDATE SET
             work_type = COALESCE(?3, work_type), state = ?4, place_id = ?5,
             moves = moves + 1, updated_at = ?7",
    )?
    .execute(params![
        session,
        work_id,
        parts.text("workTypeName"),
        parts.text("toState"),
        parts.text("toPlaceId"),
        parts.context_text("requestId"),
        event.event_time,
        event.event_id,
    ])?;
    Ok(())
}

/// Any event naming a dispatch counts on it; the dispatch events move its state.
fn dispatch_event(
    conn: &Connection,
    event: &StoredEvent,
    session: &str,
    dispatch: &str,
    parts: &Parts,
) -> rusqlite::Result<()> {
    let at = &event.event_time;
    conn.prepare_cached(
        "INSERT INTO factory_dispatches (session_id, dispatch_id, state, events, updated_at)
         VALUES (?1, ?2, 'REQUESTED', 1, ?3)
         ON CONFLICT (session_id, dispatch_id) DO UPDATE SET events = events + 1, updated_at = ?3",
    )?
    .execute(params![session, dispatch, at])?;
    let work_ids = parts.context.get("workIds").map(Value::to_string);
    let (sql, values): (&str, Vec<Option<String>>) = match event.event_type.as_str() {
        "DISPATCH_REQUEST" => (
            "transition_id = ?3, work_ids = COALESCE(?4, work_ids), requested_at = ?5, state = 'REQUESTED'",
            vec![
                parts.text("transitionId").map(Into::into),
                work_ids,
                Some(at.clone()),
            ],
        ),
        "DISPATCH_QUEUED" => (
            "kind = ?3, label = COALESCE(?4, label), model = COALESCE(?5, model), state = 'QUEUED'",
            vec![
                parts.text("dispatchKind").map(Into::into),
                parts.text("label").map(Into::into),
                parts.text("model").map(Into::into),
            ],
        ),
        "DISPATCH_WORKER_SESSION_ASSOCIATION" => (
            "worker_session_id = ?3, state = 'RUNNING'",
            vec![parts.text("workerSessionId").map(Into::into)],
        ),
        "DISPATCH_INTERRUPTED" => (
            "reason = ?3, state = 'INTERRUPTED'",
            vec![parts.text("reason").map(Into::into)],
        ),
        "DISPATCH_RECONCILED" => (
            "state = COALESCE(?3, state)",
            vec![parts.text("reconciledStatus").map(Into::into)],
        ),
        "DISPATCH_RESPONSE" => (
            "outcome = ?3, transition_id = COALESCE(?4, transition_id), completed_at = ?5,
             duration_ms = ?6, state = CASE WHEN ?3 = 'FAILED' THEN 'FAILED' ELSE 'COMPLETED' END",
            vec![
                parts.text("outcome").map(Into::into),
                parts.text("transitionId").map(Into::into),
                Some(at.clone()),
                parts
                    .payload
                    .get("durationMillis")
                    .and_then(Value::as_i64)
                    .map(|d| d.to_string()),
            ],
        ),
        _ => return Ok(()),
    };
    let mut bound: Vec<Option<String>> =
        vec![Some(session.to_string()), Some(dispatch.to_string())];
    bound.extend(values);
    conn.prepare_cached(&format!(
        "UPDATE factory_dispatches SET {sql} WHERE session_id = ?1 AND dispatch_id = ?2"
    ))?
    .execute(rusqlite::params_from_iter(bound))?;
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Work {
    pub work_id: String,
    pub name: Option<String>,
    pub work_type: Option<String>,
    pub state: Option<String>,
    pub place_id: Option<String>,
    pub request_id: Option<String>,
    pub moves: i64,
    pub created_at: String,
    pub updated_at: String,
}

pub fn work(conn: &Connection, session: &str, limit: u32) -> rusqlite::Result<Vec<Work>> {
    conn.prepare_cached("SELECT work_id, name, work_type, state, place_id, request_id, moves, created_at, updated_at
         FROM factory_work WHERE session_id = ?1 ORDER BY created_at, work_id LIMIT ?2",
    )?
    .query_map(params![session, limit], |r: &Row<'_>| {
        Ok(Work {
            work_id: r.get(0)?,
            name: r.get(1)?,
            work_type: r.get(2)?,
            state: r.get(3)?,
            place_id: r.get(4)?,
            request_id: r.get(5)?,
            moves: r.get(6)?,
            created_at: r.get(7)?,
            updated_at: r.get(8)?,
        })
    })?
    .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dispatch {
    pub dispatch_id: String,
    pub transition_id: Option<String>,
    pub kind: Option<String>,
    pub label: Option<String>,
    pub model: Option<String>,
    pub state: String,
    pub worker_session_id: Option<String>,
    pub outcome: Option<String>,
    pub reason: Option<String>,
    pub work_ids: Option<Value>,
    pub duration_ms: Option<i64>,
    pub events: i64,
    pub requested_at: Option<String>,
    pub updated_at: String,
    pub completed_at: Option<String>,
}

pub fn dispatches(conn: &Connection, session: &str, limit: u32) -> rusqlite::Result<Vec<Dispatch>> {
    conn.prepare_cached(
        "SELECT dispatch_id, transition_id, kind, label, model, state, worker_session_id, outcome,
                reason, work_ids, duration_ms, events, requested_at, updated_at, completed_at
         FROM factory_dispatches WHERE session_id = ?1
         ORDER BY COALESCE(requested_at, updated_at), dispatch_id LIMIT ?2",
    )?
    .query_map(params![session, limit], |r: &Row<'_>| {
        let work_ids: Option<String> = r.get(9)?;
        Ok(Dispatch {
            dispatch_id: r.get(0)?,
            transition_id: r.get(1)?,
            kind: r.get(2)?,
            label: r.get(3)?,
            model: r.get(4)?,
            state: r.get(5)?,
            worker_session_id: r.get(6)?,
            outcome: r.get(7)?,
            reason: r.get(8)?,
            work_ids: work_ids.and_then(|w| serde_json::from_str(&w).ok()),
            duration_ms: r.get(10)?,
            events: r.get(11)?,
            requested_at: r.get(12)?,
            updated_at: r.get(13)?,
            completed_at: r.get(14)?,
        })
    })?
    .collect()
}

/// Counts by state, for `GET /factory-sessions/{id}`.
pub fn counts(
    conn: &Connection,
    table: &str,
    session: &str,
) -> rusqlite::Result<Map<String, Value>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT COALESCE(state, 'UNKNOWN'), COUNT(*) FROM {table} WHERE session_id = ?1
         GROUP BY 1 ORDER BY 1"
    ))?;
    let rows = statement.query_map([session], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })?;
    let mut counts = Map::new();
    for row in rows {
        let (state, n) = row?;
        counts.insert(state, n.into());
    }
    Ok(counts)
}
