//! The `permission_requests` projection (issue 40): what an agent asked to be allowed to do,
//! and how it was answered. A `PermissionRequest` hook event (Claude Code, Codex; or seed
//! 000's `permission_request` type) opens a request, keyed by its event: the request id is the
//! event's id. It is settled by the first of:
//! - a decision (`permission_response`, decided in the writer: `coordination::permissions`),
//!   which leaves it `allowed` or `denied`;
//! - its expiry (`permission_expired`: the waiting hook's time ran out), `expired`;
//! - the session's own later hook events, which leave it `answered_elsewhere` (the user
//!   answered in the agent's terminal, or the agent moved on): the same call's `PreToolUse`,
//!   `PostToolUse`, `PostToolUseFailure` or `PermissionDenied` (same tool, same input), or any
//!   `UserPromptSubmit`, `Stop`, `StopFailure` or `SessionEnd`.
//!
//! Only a `pending` request changes: a decision for a settled one is refused by the writer,
//! and a closing event for it does nothing.

use super::changes::{ChangeRow, Delta, Entity, Op};
use super::of_session::{Order, Scope, Table};
use super::view::View;
use crate::event::StoredEvent;
use crate::ingest::bounds::clip;
use crate::states::states;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

states! {
    /// A request's `state`.
    pub enum RequestState {
        Pending = "pending",
        Allowed = "allowed",
        Denied = "denied",
        Expired = "expired",
        AnsweredElsewhere = "answered_elsewhere",
    }
}

states! {
    /// What a request asks: to run a tool, or (Claude Code's `ExitPlanMode`) to approve a plan
    /// (seed 000's `POST /plan/approve`).
    pub enum RequestKind {
        Permission = "permission",
        Plan = "plan",
    }
}

/// The tool whose request is a plan's approval.
pub const PLAN_TOOL: &str = "ExitPlanMode";
/// A request's preview of its input is at most this long.
pub const PREVIEW_CHARS: usize = 500;
/// A decision's message is at most this long.
pub const MESSAGE_CHARS: usize = 2000;

/// The payload field in which a waiting hook says how long it waits, in seconds: the
/// forwarder (`hook --approvals`) adds it to the body it delivers, `POST /event?wait=` to the
/// one it stores.
pub const WAIT_FIELD: &str = "hooklogWaitSeconds";
/// The longest a hook may wait (Claude Code's and Codex's own hook timeout is 600 s).
pub const MAX_WAIT_SECONDS: u64 = 600;

/// The decision event, seed 000's name.
pub const RESPONSE: &str = "permission_response";
/// The expiry event.
pub const EXPIRED: &str = "permission_expired";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    /// The id of the event that opened it.
    pub request_id: String,
    /// The sequence of the event that opened it.
    pub sequence: i64,
    pub session_id: String,
    pub hero_id: String,
    #[schema(value_type = String)]
    pub kind: RequestKind,
    pub tool: String,
    /// One line saying what the tool would do (at most 500 characters).
    pub preview: Option<String>,
    pub opened_at: String,
    /// When the hook waiting for a decision gives up (`hooks install --approvals`, the HTTP
    /// hook's `?wait=`); `null` when no hook waits: the request is a record only, and cannot
    /// be decided.
    pub waits_until: Option<String>,
    #[schema(value_type = String)]
    pub state: RequestState,
    pub closed_at: Option<String>,
    /// The sequence of the event that settled it.
    pub closed_by: Option<i64>,
    /// Who decided: `web` (the board), `api` (a token), `websocket`.
    pub decided_by: Option<String>,
    /// A deny's message, as the agent is given it.
    pub message: Option<String>,
    /// The hooklog that stored the request (`serve --origin`): only it can give the waiting
    /// hook a decision; an aggregator's copy is for reading (`null` once pruned).
    pub origin: Option<String>,
}

impl PermissionRequest {
    /// The decision the agent is given, in the shape Claude Code and Codex read from a
    /// `PermissionRequest` hook's output; `None` when there is none to give (pending, expired,
    /// answered elsewhere).
    pub fn hook_output(&self) -> Option<serde_json::Value> {
        let decision = match self.state {
            RequestState::Allowed => serde_json::json!({"behavior": "allow"}),
            RequestState::Denied => match &self.message {
                Some(message) => serde_json::json!({"behavior": "deny", "message": message}),
                None => serde_json::json!({"behavior": "deny"}),
            },
            _ => return None,
        };
        Some(serde_json::json!({
            "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}
        }))
    }
}

/// Whether a hook event opens a request, and of which kind.
pub fn opens(event_type: &str, view: &View) -> Option<RequestKind> {
    let asks = event_type == "PermissionRequest" || view.hook_type() == Some("permission_request");
    asks.then(|| match view.tool() {
        Some(PLAN_TOOL) => RequestKind::Plan,
        _ => RequestKind::Permission,
    })
}

/// How a hook event closes its session's pending requests.
enum Closes {
    /// Every one (the turn or the session ended, a new prompt came).
    All,
    /// The one for the same call: same tool, same input.
    Call,
    Nothing,
}

fn closes(event_type: &str) -> Closes {
    match event_type {
        "UserPromptSubmit" | "Stop" | "StopFailure" | "SessionEnd" => Closes::All,
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure" | "PermissionDenied" => Closes::Call,
        _ => Closes::Nothing,
    }
}

/// The tool input's JSON text, to tell one call from another of the same tool.
fn input_key(view: &View) -> Option<String> {
    view.get("toolInput").map(|input| input.to_string())
}

/// The request a hook event opens, if it opens one.
pub fn opened(event: &StoredEvent, view: &View) -> Option<PermissionRequest> {
    let session = event.session_id.as_deref()?;
    let kind = opens(&event.event_type, view)?;
    let tool = view.tool().unwrap_or("unknown");
    let preview = super::agent::preview::preview(view, tool)
        .or_else(|| input_key(view))
        .map(|p| clip(&p, PREVIEW_CHARS));
    let waits_until = view
        .get(WAIT_FIELD)
        .and_then(serde_json::Value::as_u64)
        .filter(|s| (1..=MAX_WAIT_SECONDS).contains(s))
        .and_then(|s| {
            let opened = crate::event::time::parse(&event.event_time)?;
            Some(crate::event::time::format(
                opened + chrono::Duration::seconds(s as i64),
            ))
        });
    Some(PermissionRequest {
        request_id: event.event_id.clone(),
        sequence: event.sequence,
        session_id: session.to_string(),
        hero_id: super::heroes::hero_id(session),
        kind,
        tool: tool.to_string(),
        preview,
        opened_at: event.event_time.clone(),
        waits_until,
        state: RequestState::Pending,
        closed_at: None,
        closed_by: None,
        decided_by: None,
        message: None,
        origin: Some(event.origin.clone()),
    })
}

/// The state a decision or an expiry event leaves its request in, who decided, and the
/// message the agent is given.
fn settlement<'v>(
    event_type: &str,
    view: &'v View,
) -> Option<(RequestState, Option<&'v str>, Option<&'v str>)> {
    match event_type {
        RESPONSE => Some(match view.bool("approved") {
            Some(true) => (RequestState::Allowed, view.text("by"), None),
            _ => (RequestState::Denied, view.text("by"), view.text("message")),
        }),
        EXPIRED => Some((RequestState::Expired, None, None)),
        _ => None,
    }
}

/// The change a new request makes: every field of its row.
pub fn delta_opened(request: &PermissionRequest) -> Delta {
    let set = match serde_json::to_value(request) {
        Ok(serde_json::Value::Object(set)) => set,
        _ => serde_json::Map::new(),
    };
    Delta {
        entity: Entity::Permission,
        op: Op::Created,
        id: request.request_id.clone(),
        hero_id: Some(request.hero_id.clone()),
        mission_id: None,
        set,
    }
}

/// The change row of a decision or an expiry event: what it sets on its request (the
/// writer appends one only for a pending request).
pub fn settled_change(event: &StoredEvent, view: &View) -> Option<ChangeRow> {
    let session = event.session_id.as_deref()?;
    let request = view.text("requestId")?;
    let (state, by, message) = settlement(&event.event_type, view)?;
    let mut set = serde_json::Map::new();
    set.insert("state".into(), state.as_str().into());
    set.insert("closedAt".into(), event.event_time.clone().into());
    set.insert("closedBy".into(), event.sequence.into());
    set.insert("decidedBy".into(), by.into());
    set.insert("message".into(), message.into());
    if let Some(kind) = view.text("kind") {
        set.insert("kind".into(), kind.into());
    }
    let hero = super::heroes::hero_id(session);
    let mut row = ChangeRow::new(event.sequence, hero.clone(), None);
    row.push(&Delta {
        entity: Entity::Permission,
        op: Op::Updated,
        id: request.to_string(),
        hero_id: Some(hero),
        mission_id: None,
        set,
    });
    Some(row)
}

/// Applies a hook event: opens a request, or closes the session's pending ones it answers.
pub fn apply_hook(conn: &Connection, event: &StoredEvent, view: &View) -> rusqlite::Result<()> {
    let Some(session) = event.session_id.as_deref() else {
        return Ok(());
    };
    if let Some(request) = opened(event, view) {
        conn.prepare_cached(
            // `opening_pruned`: whether the opening event is missing from the log (in the
            // retention snapshot's file, which has no events: `of_session`).
            "INSERT OR IGNORE INTO permission_requests (sequence, request_id, session_id, kind,
                 tool, input_key, preview, opened_at, state, waits_until, opening_pruned)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
                     CASE WHEN EXISTS (SELECT 1 FROM events WHERE sequence = ?1) THEN NULL
                          ELSE 1 END)",
        )?
        .execute(params![
            request.sequence,
            request.request_id,
            session,
            request.kind,
            request.tool,
            input_key(view),
            request.preview,
            request.opened_at,
            request.state,
            request.waits_until,
        ])?;
        return Ok(());
    }
    let settle = |conn: &Connection, sequence: i64| -> rusqlite::Result<()> {
        conn.prepare_cached(
            "UPDATE permission_requests SET state = ?2, closed_at = ?3, closed_by = ?4
             WHERE sequence = ?1",
        )?
        .execute(params![
            sequence,
            RequestState::AnsweredElsewhere,
            event.event_time,
            event.sequence
        ])?;
        Ok(())
    };
    let call = match closes(&event.event_type) {
        Closes::Nothing => return Ok(()),
        Closes::All => None,
        Closes::Call => Some(view.tool().unwrap_or("unknown")),
    };
    let pending = pending_in(conn, session)?;
    if pending.is_empty() {
        return Ok(());
    }
    // The call's input as text, only when a request is pending (most events find none).
    let input = call.and_then(|_| input_key(view));
    for (sequence, tool, key) in pending {
        let answered = match call {
            None => true,
            // An event without the input (an older or thinner client) matches by tool alone.
            Some(t) => t == tool && (input.is_none() || key.is_none() || input == key),
        };
        if answered {
            settle(conn, sequence)?;
        }
    }
    Ok(())
}

/// The session's pending requests: sequence, tool, input key. Read through the partial index
/// of pending requests, named: left to itself the planner took the session's index and read
/// every request the session ever made, on each of its hook events (a long session's events
/// then cost more and more: `bench ingest --scenario hooks --sessions 10 --turns 2000`).
fn pending_in(
    conn: &Connection,
    session: &str,
) -> rusqlite::Result<Vec<(i64, String, Option<String>)>> {
    conn.prepare_cached(PENDING_IN)?
        .query_map([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
}

const PENDING_IN: &str = "SELECT sequence, tool, input_key
     FROM permission_requests INDEXED BY permission_requests_pending
     WHERE session_id = ?1 AND state = 'pending'";

/// Applies a decision or an expiry (the writer appends them only for a pending request).
pub fn apply_outcome(conn: &Connection, event: &StoredEvent, view: &View) -> rusqlite::Result<()> {
    let (Some(request), Some((state, by, message))) =
        (view.text("requestId"), settlement(&event.event_type, view))
    else {
        return Ok(());
    };
    conn.prepare_cached(&format!(
        "UPDATE permission_requests SET state = ?2, closed_at = ?3, closed_by = ?4,
             decided_by = ?5, message = ?6
         WHERE sequence = {KEY_OF_ID} AND request_id = ?1 AND state = 'pending'"
    ))?
    .execute(params![
        request,
        state,
        event.event_time,
        event.sequence,
        by,
        message
    ])?;
    Ok(())
}

/// The row, and the origin of the event that opened it (one probe of the log's primary key).
const COLUMNS: &str = "sequence, request_id, session_id, kind, tool, preview, opened_at, state,
     closed_at, closed_by, decided_by, message, waits_until,
     (SELECT origin FROM events WHERE events.sequence = permission_requests.sequence)";

/// How a session's requests are read ([`super::of_session`], migration 0035): [`COLUMNS`].
pub(super) static TABLE: Table = Table {
    name: "permission_requests",
    columns: "sequence, request_id, session_id, kind, tool, preview, opened_at, state,
     closed_at, closed_by, decided_by, message, waits_until",
    computed: ", (SELECT origin FROM events WHERE events.sequence = t.sequence)",
    key: "sequence",
    by_order: None,
    pruned: "permission_requests_pruned",
};

fn row(r: &Row<'_>) -> rusqlite::Result<PermissionRequest> {
    let session_id: String = r.get(2)?;
    Ok(PermissionRequest {
        sequence: r.get(0)?,
        request_id: r.get(1)?,
        hero_id: super::heroes::hero_id(&session_id),
        session_id,
        kind: r.get(3)?,
        tool: r.get(4)?,
        preview: r.get(5)?,
        opened_at: r.get(6)?,
        state: r.get(7)?,
        closed_at: r.get(8)?,
        closed_by: r.get(9)?,
        decided_by: r.get(10)?,
        message: r.get(11)?,
        waits_until: r.get(12)?,
        origin: r.get(13)?,
    })
}

/// The key of the request with id `?1` (the id of the event that opened it, whose sequence is
/// the key): through the events' index of ids, or through `permission_requests_pruned_ids` once
/// retention has pruned that event (migration 0035). `NULL` when there is none.
const KEY_OF_ID: &str = "COALESCE(
         (SELECT sequence FROM events WHERE event_id = ?1),
         (SELECT sequence FROM permission_requests INDEXED BY permission_requests_pruned_ids
          WHERE opening_pruned = 1 AND request_id = ?1))";

/// One request by its id ([`KEY_OF_ID`]).
pub fn get(conn: &Connection, request_id: &str) -> rusqlite::Result<Option<PermissionRequest>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM permission_requests
         WHERE sequence = {KEY_OF_ID} AND request_id = ?1"
    ))?
    .query_row([request_id], row)
    .optional()
}

/// Which requests a list shows.
#[derive(Debug, Clone, Default)]
pub struct Select {
    pub state: Option<RequestState>,
    pub session: Option<String>,
    /// Only those opened before this sequence (the next page of a list).
    pub before: Option<i64>,
}

/// A page of [`list`].
#[derive(Debug)]
pub struct Requests {
    pub permission_requests: Vec<PermissionRequest>,
    /// The sequence to ask for requests before; `None` when no older one can match.
    pub next_before: Option<i64>,
}

/// The most requests a page of a state no index serves (anything but `pending`, without a
/// session) reads, newest first.
pub const SCAN_WINDOW: u32 = 5_000;

/// Requests opened before `select.before`, newest first, at most `limit`. Pending ones are read
/// through their partial index and one session's through its own; a list of another state
/// reads at most [`SCAN_WINDOW`] requests, and a page that window ended before it was full
/// says where to go on (`next_before`), so no page reads every request ever made.
pub fn list(conn: &Connection, select: &Select, limit: u32) -> rusqlite::Result<Requests> {
    if let Some(scope) = session_scope(select) {
        let permission_requests = scope.query(
            conn,
            &scope.sql(Order::Newest, ":limit"),
            &[(":limit", Value::Integer(limit.into()))],
            row,
        )?;
        let next_before = match permission_requests.len() == limit as usize {
            true => permission_requests.last().map(|r| r.sequence),
            false => None,
        };
        return Ok(Requests {
            permission_requests,
            next_before,
        });
    }
    let windowed =
        select.state.is_some_and(|s| s != RequestState::Pending) && select.session.is_none();
    let before = select.before.unwrap_or(i64::MAX);
    // A window's page and its extent are read from one snapshot. (The pending list, which
    // the board's hydration reads inside its own transaction, needs none.)
    let snapshot = windowed.then(|| conn.unchecked_transaction()).transpose()?;
    let read: &Connection = snapshot.as_deref().unwrap_or(conn);
    let permission_requests: Vec<PermissionRequest> = read
        .prepare_cached(&list_sql(select, windowed))?
        .query_map(params![select.state, select.session, before, limit], row)?
        .collect::<rusqlite::Result<_>>()?;
    let next_before = match permission_requests.len() == limit as usize {
        true => permission_requests.last().map(|r| r.sequence),
        // Fewer than asked for: the window held every older request (the end), or it stopped
        // at its size (go on below its oldest).
        false if windowed => super::filter::past_window(
            read,
            "SELECT sequence AS key FROM permission_requests
             WHERE sequence < ?1 ORDER BY sequence DESC LIMIT ?2",
            params![before, SCAN_WINDOW],
            SCAN_WINDOW,
        )?,
        false => None,
    };
    if let Some(tx) = snapshot {
        tx.finish()?;
    }
    Ok(Requests {
        permission_requests,
        next_before,
    })
}

/// How [`list`] reads one session's requests in any state but `pending` (whose own partial
/// index serves it): through the session's events, each opening event's request by its key,
/// then those whose opening event retention pruned ([`super::of_session`]); `None` for
/// another list.
fn session_scope(select: &Select) -> Option<Scope> {
    let session = select.session.as_deref()?;
    if select.state == Some(RequestState::Pending) {
        return None;
    }
    let mut scope =
        Scope::of(&TABLE, session).eq("state", ":state", select.state.map(RequestState::as_str));
    scope.before = select.before;
    Some(scope)
}

/// The statement [`list`] runs for `select`, but a session's list ([`session_scope`]).
fn list_sql(select: &Select, windowed: bool) -> String {
    if windowed {
        return format!(
            "SELECT {COLUMNS} FROM (SELECT * FROM permission_requests
                 WHERE sequence < ?3 ORDER BY sequence DESC LIMIT {SCAN_WINDOW}) permission_requests
             WHERE state = ?1 AND ?2 IS NULL ORDER BY sequence DESC LIMIT ?4"
        );
    }
    // Each indexed column is written `column = ?n`, which the planner can search by; in
    // `(?n IS NULL OR column = ?n)` it could only scan.
    let session = match select.session {
        Some(_) => "session_id = ?2",
        None => "?2 IS NULL",
    };
    let (from, state) = match (select.state, &select.session) {
        // The partial indexes' own condition, written as it is, so the planner can take them:
        // every session's pending requests newest first, however many agents were killed
        // waiting at a prompt (theirs stay pending for good: migration 0025); or a session's.
        (Some(RequestState::Pending), None) => (
            "permission_requests INDEXED BY permission_requests_pending_by_order",
            "state = 'pending'",
        ),
        (Some(RequestState::Pending), Some(_)) => (
            "permission_requests INDEXED BY permission_requests_pending",
            "state = 'pending'",
        ),
        (_, _) => ("permission_requests", "(?1 IS NULL OR state = ?1)"),
    };
    format!(
        "SELECT {COLUMNS} FROM {from}
         WHERE {state} AND {session} AND sequence < ?3
         ORDER BY sequence DESC LIMIT ?4"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pending list and a session's list read their indexes, not every request.
    #[test]
    fn the_list_reads_the_pending_and_session_indexes() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let plan = |select: &Select| -> String {
            let params = params![select.state, select.session, i64::MAX, 10];
            super::super::filter::plan_of(&conn, &list_sql(select, false), params)
        };
        let pending = Select {
            state: Some(RequestState::Pending),
            session: None,
            before: None,
        };
        assert!(
            plan(&pending).contains("permission_requests_pending_by_order (sequence<?)"),
            "{}",
            plan(&pending)
        );
        assert!(
            !plan(&pending).contains("TEMP B-TREE"),
            "{}",
            plan(&pending)
        );
        let pending_of = Select {
            session: Some("s".into()),
            ..pending.clone()
        };
        assert!(
            plan(&pending_of).contains("permission_requests_pending (session_id=? AND"),
            "{}",
            plan(&pending_of)
        );
        // A session's, in a state or not, from a cursor or not: through its events, then the
        // pruned ones' own index.
        for (state, before) in [(Some(RequestState::Denied), None), (None, Some(9))] {
            let select = Select {
                state,
                session: Some("s".into()),
                before,
            };
            let scope = session_scope(&select).expect("a session's list");
            let sql = scope.sql(Order::Newest, ":limit");
            let plan = super::super::of_session::plan_read_in_order(&conn, &sql, &scope);
            for step in [
                "SEARCH e USING COVERING INDEX sqlite_autoindex_events_2 (session_id=?",
                "SEARCH t USING INTEGER PRIMARY KEY (rowid=?)",
                "SEARCH t USING INDEX permission_requests_pruned (session_id=?",
            ] {
                assert!(plan.contains(step), "{plan}");
            }
        }
        assert!(session_scope(&pending_of).is_none());
        let all = Select::default();
        assert!(plan(&all).contains("INTEGER PRIMARY KEY"));
        let denied = Select {
            state: Some(RequestState::Denied),
            ..Select::default()
        };
        let page = list(&conn, &denied, 10).unwrap();
        assert!(page.permission_requests.is_empty() && page.next_before.is_none());
    }

    /// A session's list holds the requests its events in the log opened and those whose
    /// opening event retention pruned (marked), newest first, filtered and paged, and no other
    /// session's.
    #[test]
    fn a_sessions_requests_are_read_through_its_events_and_once_pruned_their_own_index() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        conn.execute_batch(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source,
                                 event_time, received_at, payload, origin)
             VALUES (7, 'e7', 's', 1, 'PermissionRequest', 'hook', 't', 't', '{}', 'here'),
                    (8, 'e8', 's', 2, 'Stop', 'hook', 't', 't', '{}', 'here'),
                    (9, 'e9', 'o', 1, 'PermissionRequest', 'hook', 't', 't', '{}', 'here');
             INSERT INTO permission_requests (sequence, request_id, session_id, kind, tool,
                                              opened_at, state, opening_pruned)
             VALUES (3, 'r3', 's', 'permission', 'Bash', 't', 'allowed', 1),
                    (7, 'r7', 's', 'permission', 'Bash', 't', 'denied', NULL),
                    (9, 'r9', 'o', 'permission', 'Bash', 't', 'denied', NULL);",
        )
        .unwrap();
        let page = |state: Option<RequestState>, before: Option<i64>, limit: u32| {
            let select = Select {
                state,
                session: Some("s".into()),
                before,
            };
            let page = list(&conn, &select, limit).unwrap();
            let keys: Vec<i64> = page
                .permission_requests
                .iter()
                .map(|r| r.sequence)
                .collect();
            (keys, page.next_before)
        };
        assert_eq!(page(None, None, 10), (vec![7, 3], None));
        assert_eq!(page(Some(RequestState::Allowed), None, 10), (vec![3], None));
        assert_eq!(page(Some(RequestState::Denied), None, 10), (vec![7], None));
        assert_eq!(page(None, None, 1), (vec![7], Some(7)));
        // By id: through the events' index, or once pruned the pruned ones' own index; only
        // by its own id.
        let found = |id: &str| get(&conn, id).unwrap().map(|r| r.sequence);
        assert_eq!(found("r7"), None, "its id is its event's");
        conn.execute_batch("UPDATE permission_requests SET request_id = 'e7' WHERE sequence = 7")
            .unwrap();
        assert_eq!(found("e7"), Some(7));
        assert_eq!(found("r3"), Some(3), "its event pruned");
        assert_eq!(found("e8"), None, "an event that opened no request");
        assert_eq!(found("e9"), None, "r9 is not e9's id");
        let plan = super::super::filter::plan_of(
            &conn,
            &format!(
                "SELECT {COLUMNS} FROM permission_requests
                 WHERE sequence = {KEY_OF_ID} AND request_id = ?1"
            ),
            ["e7"],
        );
        assert!(
            plan.contains("sqlite_autoindex_events_1 (event_id=?)"),
            "{plan}"
        );
        assert!(
            plan.contains("permission_requests_pruned_ids (request_id=?)"),
            "{plan}"
        );
        assert!(!plan.contains("SCAN"), "{plan}");
        assert_eq!(page(None, Some(7), 10), (vec![3], None));
        let first = list(
            &conn,
            &Select {
                session: Some("s".into()),
                ..Select::default()
            },
            1,
        )
        .unwrap();
        assert_eq!(first.permission_requests[0].origin.as_deref(), Some("here"));
    }

    /// A hook event looks for its session's pending requests through the partial index only,
    /// never through every request the session made.
    #[test]
    fn a_sessions_pending_requests_are_read_through_the_partial_index() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {PENDING_IN}"))
            .unwrap()
            .query_map(["s"], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            plan,
            ["SEARCH permission_requests USING INDEX permission_requests_pending (session_id=?)"]
        );
    }
}
