//! The `tool_uses` projection: one row per tool call, opened by `PreToolUse` and closed by
//! `PostToolUse` / `PostToolUseFailure` with the same `toolUseId`, and one row per permission
//! request (kind `permission`, status `requested`). A row's id is `tool-` and the id of the
//! event that made it.

use super::filter::Where;
use super::missions::Mission;
use super::of_session::{Order, Scope, Table, bound};
use crate::states::states;
use rusqlite::types::Value;
use rusqlite::{CachedStatement, Connection, OptionalExtension, Row, params, params_from_iter};
use serde::Serialize;
use std::sync::LazyLock;

states! {
    /// A tool use's `status`.
    pub enum ToolStatus {
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        Interrupted = "interrupted",
        /// A permission request.
        Requested = "requested",
        /// A call announced without the agent's id: its end cannot be matched.
        Reported = "reported",
        Denied = "denied",
        /// A task not completed yet.
        Open = "open",
    }
}

impl ToolStatus {
    /// Whether the call has ended (and has a result).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            ToolStatus::Completed
                | ToolStatus::Failed
                | ToolStatus::Interrupted
                | ToolStatus::Denied
        )
    }
}

// The queries of running tool uses write `status = 'running'` in the statement, not bound:
// only then can SQLite use `tool_uses_running`, a partial index on this very condition.

/// The tool use id an event gives.
pub fn tool_row_id(event_id: &str) -> String {
    format!("tool-{event_id}")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUse {
    pub id: String,
    pub session_id: String,
    pub hero_id: Option<String>,
    pub mission_id: Option<String>,
    pub tool_use_id: Option<String>,
    pub request_id: Option<String>,
    pub tool: String,
    pub kind: String,
    pub preview: Option<String>,
    pub status: ToolStatus,
    pub error: Option<String>,
    pub opened_event_id: Option<String>,
    pub closed_event_id: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub duration_ms: Option<i64>,
    pub opened_sequence: i64,
}

/// The stored columns. A tool use's hero is its session's (`heroes::hero_id`), not stored
/// (migration 0030).
const COLUMNS: &str = "id, session_id, mission_id, tool_use_id, request_id, tool, kind,
     preview, status, error, opened_event_id, closed_event_id, started_at, finished_at,
     duration_ms, opened_sequence";

/// How a session's tool uses are read ([`super::of_session`]).
pub(super) static TABLE: Table = Table {
    name: "tool_uses",
    columns: COLUMNS,
    computed: "",
    key: "opened_sequence",
    by_order: None,
    pruned: "tool_uses_pruned",
};

fn row(r: &Row<'_>) -> rusqlite::Result<ToolUse> {
    let session_id: String = r.get(1)?;
    Ok(ToolUse {
        id: r.get(0)?,
        hero_id: Some(super::heroes::hero_id(&session_id)),
        session_id,
        mission_id: r.get(2)?,
        tool_use_id: r.get(3)?,
        request_id: r.get(4)?,
        tool: r.get(5)?,
        kind: r.get(6)?,
        preview: r.get(7)?,
        status: r.get(8)?,
        error: r.get(9)?,
        opened_event_id: r.get(10)?,
        closed_event_id: r.get(11)?,
        started_at: r.get(12)?,
        finished_at: r.get(13)?,
        duration_ms: r.get(14)?,
        opened_sequence: r.get(15)?,
    })
}

/// One tool use by its row id (`tool-` and its opening event's id): keyed by its opening
/// event's sequence, it is found through the events' index of ids, or through
/// `tool_uses_pruned_ids` once retention has pruned that event (migration 0033).
pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<ToolUse>> {
    let Some(event) = id.strip_prefix("tool-") else {
        return Ok(None);
    };
    conn.prepare_cached(&GET)?
        .query_row([id, event], row)
        .optional()
}

/// One tool use by its key, the sequence of the event that opened it.
pub fn at(conn: &Connection, opened_sequence: i64) -> rusqlite::Result<Option<ToolUse>> {
    conn.prepare_cached(&AT)?
        .query_row([opened_sequence], row)
        .optional()
}

static AT: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM tool_uses WHERE opened_sequence = ?1"));

static GET: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM tool_uses
         WHERE opened_sequence = (SELECT sequence FROM events WHERE event_id = ?2) AND id = ?1
         UNION ALL
         SELECT {COLUMNS} FROM tool_uses INDEXED BY tool_uses_pruned_ids
         WHERE opening_pruned = 1 AND id = ?1
         LIMIT 1"
    )
});

/// The latest tool call of a session with an agent's tool use id (permission requests, which
/// may carry the same id, are not calls). It walks the session's tool uses newest first: the
/// writer asks [`calls_of`] once per session instead.
pub fn by_call(
    conn: &Connection,
    session_id: &str,
    tool_use_id: &str,
) -> rusqlite::Result<Option<ToolUse>> {
    let scope = calls(session_id).eq("tool_use_id", ":call", Some(tool_use_id));
    let mut latest = scope.query(conn, &BY_CALL, &[(":limit", Value::Integer(1))], row)?;
    Ok(latest.pop())
}

static BY_CALL: LazyLock<String> = LazyLock::new(|| {
    calls("")
        .eq("tool_use_id", ":call", Some(""))
        .sql(Order::Newest, ":limit")
});

/// A session's calls: its tool uses but permission requests.
fn calls(session_id: &str) -> Scope {
    Scope::of(&TABLE, session_id).term("t.kind <> 'permission'")
}

/// Every tool use id of a session's calls (not permission requests) with the key
/// (`opened_sequence`) of the latest call that has it.
pub fn calls_of(
    conn: &Connection,
    session_id: &str,
) -> rusqlite::Result<foldhash::HashMap<String, i64>> {
    let scope = calls(session_id).term("t.tool_use_id IS NOT NULL");
    let mut calls = foldhash::HashMap::default();
    for tool in scope.query(conn, &CALLS_OF, &[(":limit", Value::Integer(-1))], row)? {
        if let Some(call) = tool.tool_use_id {
            calls.insert(call, tool.opened_sequence);
        }
    }
    Ok(calls)
}

static CALLS_OF: LazyLock<String> = LazyLock::new(|| {
    calls("")
        .term("t.tool_use_id IS NOT NULL")
        .sql(Order::Oldest, ":limit")
});

/// The latest running subagent-spawning call (`Task` / `Agent`) of a session: through the
/// partial index of running spawners, named, so the cost does not grow with the other tools
/// the session left running (`tool_uses_running` would read each of them; migration 0023).
pub fn running_spawner(conn: &Connection, session_id: &str) -> rusqlite::Result<Option<ToolUse>> {
    conn.prepare_cached(&RUNNING_SPAWNER)?
        .query_row([session_id], row)
        .optional()
}

static RUNNING_SPAWNER: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM tool_uses INDEXED BY tool_uses_running_spawners
         WHERE session_id = ?1 AND kind = 'subagent' AND status = 'running'
         ORDER BY opened_sequence DESC LIMIT 1"
    )
});

/// Every running tool use of a session.
pub fn running_of(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<ToolUse>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tool_uses WHERE session_id = ?1 AND status = 'running'
         ORDER BY opened_sequence, id"
    ))?
    .query_map([session_id], row)?
    .collect()
}

/// The latest `limit` tool uses of a mission, in the order they started. A mission's tool
/// uses are in its session, from its opening on.
pub fn latest_of_mission(
    conn: &Connection,
    mission: &Mission,
    limit: u32,
) -> rusqlite::Result<Vec<ToolUse>> {
    let scope = of_mission(&mission.session_id, &mission.id, mission.opened_sequence);
    let mut latest = scope.query(
        conn,
        &scope.sql(Order::Newest, ":limit"),
        &[(":limit", Value::Integer(limit.into()))],
        row,
    )?;
    latest.reverse();
    Ok(latest)
}

/// A mission's tool uses: its session's, from its opening on, that name it.
fn of_mission(session_id: &str, mission_id: &str, opened_sequence: i64) -> Scope {
    let mut scope = Scope::of(&TABLE, session_id).eq("mission_id", ":mission", Some(mission_id));
    scope.from = Some(opened_sequence);
    scope
}

/// The session (or mission) `filter` names, as a [`Scope`] (a mission's: its session's tool
/// uses from its opening on that name it), or `None` when it names none or a mission that does
/// not exist or is not in the session it also names. The filters on the tool uses themselves
/// (status, kind, tool) are [`rest_of`]'s.
fn session_scope(conn: &Connection, filter: &ToolUseFilter) -> rusqlite::Result<Option<Scope>> {
    let scope = match (filter.mission_id.as_deref(), filter.session_id.as_deref()) {
        (Some(mission), session) => match super::missions::key_of(conn, mission)? {
            Some((of, opened)) if session.is_none_or(|s| s == of) => {
                of_mission(&of, mission, opened)
            }
            _ => return Ok(None),
        },
        (None, Some(session)) => Scope::of(&TABLE, session),
        (None, None) => return Ok(None),
    };
    Ok(Some(scope))
}

/// The terms on a tool use's own columns (unqualified) that `filter` gives besides its
/// scope, with their values.
fn rest_of(filter: &ToolUseFilter) -> (Vec<&'static str>, Vec<(&'static str, Value)>) {
    let mut terms = Vec::new();
    let mut values = Vec::new();
    let text = |v: &str| Value::Text(v.to_string());
    if let Some(status) = filter.status {
        terms.push("status = :status");
        values.push((":status", text(status.as_str())));
    }
    if let Some(kind) = &filter.kind {
        terms.push("kind = :kind");
        values.push((":kind", text(kind)));
    }
    if let Some(tool) = &filter.tool {
        terms.push("tool = :tool");
        values.push((":tool", text(tool)));
    }
    (terms, values)
}

/// The filters of `GET /tool-uses`.
#[derive(Debug, Default, Clone)]
pub struct ToolUseFilter {
    pub mission_id: Option<String>,
    pub session_id: Option<String>,
    pub status: Option<ToolStatus>,
    pub kind: Option<String>,
    pub tool: Option<String>,
}

/// The most tool uses a page of [`newest`] reads, newest first, to find its rows when a filter
/// no index serves (a status other than `running`, a kind, a tool) is given.
pub const SCAN_WINDOW: u32 = 5_000;

/// A page of `GET /tool-uses`: newest first, and where the next page starts (`None`: no
/// older tool use matches).
#[derive(Debug)]
pub struct Newest {
    pub tool_uses: Vec<ToolUse>,
    /// The `opened_sequence` to ask for tool uses before.
    pub next_before: Option<i64>,
}

/// Up to `limit` tool uses that pass `filter` and opened before `before`, newest first. The
/// session, the mission and `status = running` are found through their indexes, the rest by
/// reading at most [`SCAN_WINDOW`] tool uses of that scope newest first: a page whose window
/// ends before `limit` rows matched says where to go on (`next_before`), so no request reads
/// the whole log, whatever the filter.
pub fn newest(
    conn: &Connection,
    filter: &ToolUseFilter,
    before: Option<i64>,
    limit: u32,
) -> rusqlite::Result<Newest> {
    let running = filter.status == Some(ToolStatus::Running);
    if (filter.session_id.is_some() || filter.mission_id.is_some()) && !running {
        return newest_of_session(conn, filter, before, limit);
    }
    // A mission's session and opening, found by its id first (the key of `missions` is its
    // opening, so SQL has no index to find it by id inside a term).
    let mission = match filter.mission_id.as_deref() {
        Some(id) => match super::missions::key_of(conn, id)? {
            Some(key) => Some(key),
            None => {
                return Ok(Newest {
                    tool_uses: Vec::new(),
                    next_before: None,
                });
            }
        },
        None => None,
    };
    let mut scope = scope_filter(filter, mission.as_ref());
    if let Some(before) = before {
        scope = scope.bind_integer("opened_sequence < ?", before);
    }
    let from = newest_from(filter);
    let mut rest: Vec<(&str, String)> = Vec::new();
    if let Some(status) = filter.status.filter(|_| !running) {
        rest.push(("status", status.as_str().to_string()));
    }
    if let Some(kind) = &filter.kind {
        rest.push(("kind", kind.clone()));
    }
    if let Some(tool) = &filter.tool {
        rest.push(("tool", tool.clone()));
    }
    let select = format!("SELECT {COLUMNS} FROM {from}");
    let order = "ORDER BY opened_sequence DESC";
    if rest.is_empty() {
        let tool_uses: Vec<ToolUse> = conn
            .prepare_cached(&scope.sql(&select, order))?
            .query_map(params_from_iter(scope.values(limit)), row)?
            .collect::<rusqlite::Result<_>>()?;
        let next_before = match tool_uses.len() == limit as usize {
            true => tool_uses.last().map(|t| t.opened_sequence),
            false => None,
        };
        return Ok(Newest {
            tool_uses,
            next_before,
        });
    }
    let window = scope.sql(&select, order);
    let keys = scope.sql(&format!("SELECT opened_sequence AS key FROM {from}"), order);
    let mut values = scope.values(SCAN_WINDOW);
    let scope_values = values.clone();
    let mut terms = Vec::new();
    for (column, value) in rest {
        values.push(rusqlite::types::Value::Text(value));
        terms.push(format!("{column} = ?{}", values.len()));
    }
    values.push(rusqlite::types::Value::Integer(limit.into()));
    let sql = format!(
        "SELECT {COLUMNS} FROM ({window}) WHERE {} {order} LIMIT ?{}",
        terms.join(" AND "),
        values.len()
    );
    // The page and the window's extent from one snapshot: a commit between them would move
    // the window under the page.
    let tx = conn.unchecked_transaction()?;
    let tool_uses: Vec<ToolUse> = tx
        .prepare_cached(&sql)?
        .query_map(params_from_iter(values), row)?
        .collect::<rusqlite::Result<_>>()?;
    if tool_uses.len() == limit as usize {
        let next_before = tool_uses.last().map(|t| t.opened_sequence);
        return Ok(Newest {
            tool_uses,
            next_before,
        });
    }
    // Fewer matched than asked for: the window either held every older tool use of the
    // scope (the end) or stopped at its size (go on below its oldest).
    let next_before =
        super::filter::past_window(&tx, &keys, params_from_iter(scope_values), SCAN_WINDOW)?;
    Ok(Newest {
        tool_uses,
        next_before,
    })
}

/// [`newest`] for one session's (or mission's) tool uses but the running ones: through the
/// session's events ([`super::of_session`]), in a window of at most [`SCAN_WINDOW`] when a filter
/// besides the scope is given, as for every session's.
fn newest_of_session(
    conn: &Connection,
    filter: &ToolUseFilter,
    before: Option<i64>,
    limit: u32,
) -> rusqlite::Result<Newest> {
    // The page and the window's extent from one snapshot.
    let tx = conn.unchecked_transaction()?;
    let Some(mut scope) = session_scope(&tx, filter)? else {
        return Ok(Newest {
            tool_uses: Vec::new(),
            next_before: None,
        });
    };
    scope.before = before;
    let page_limit = (":limit", Value::Integer(limit.into()));
    let (rest, mut values) = rest_of(filter);
    let (tool_uses, window) = match rest.is_empty() {
        true => {
            let sql = scope.sql(Order::Newest, ":limit");
            (scope.query(&tx, &sql, &[page_limit], row)?, None)
        }
        false => {
            let window = scope.sql(Order::Newest, ":window");
            let sql = format!(
                "SELECT {COLUMNS} FROM ({window}) WHERE {} LIMIT :limit",
                rest.join(" AND ")
            );
            values.push((":window", Value::Integer(SCAN_WINDOW.into())));
            values.push(page_limit);
            (scope.query(&tx, &sql, &values, row)?, Some(window))
        }
    };
    let next_before = match (tool_uses.len() == limit as usize, window) {
        (true, _) => tool_uses.last().map(|t| t.opened_sequence),
        (false, None) => None,
        (false, Some(window)) => {
            let keys = format!("SELECT opened_sequence AS key FROM ({window})");
            let params = scope.params(&[(":window", Value::Integer(SCAN_WINDOW.into()))]);
            super::filter::past_window(&tx, &keys, bound(&params).as_slice(), SCAN_WINDOW)?
        }
    };
    Ok(Newest {
        tool_uses,
        next_before,
    })
}

/// What a page of [`newest`] reads its rows from. The running ones come from their partial
/// indexes, newest first, never found by reading the newest of every tool use: a session's (a
/// mission's is in its session), or every session's in the order they started, which agents
/// killed mid-call (their calls stay running) do not make longer to read (migration 0025).
fn newest_from(filter: &ToolUseFilter) -> &'static str {
    let of_session = filter.session_id.is_some() || filter.mission_id.is_some();
    match (filter.status == Some(ToolStatus::Running), of_session) {
        (true, true) => "tool_uses INDEXED BY tool_uses_running",
        (true, false) => "tool_uses INDEXED BY tool_uses_running_by_order",
        (false, _) => "tool_uses",
    }
}

/// The terms an index serves: the session, the mission (`mission`: the session and opening
/// sequence of the one `filter` names), `status = running`.
fn scope_filter(filter: &ToolUseFilter, mission: Option<&(String, i64)>) -> Where {
    let mut terms = Where::default();
    if let (Some(id), Some((session, opened))) = (filter.mission_id.as_deref(), mission) {
        // A mission's running tool uses are its session's from its opening on: found through
        // `tool_uses_running` (the others are read through the session's events).
        terms = terms
            .bind("session_id = ?", session)
            .bind_integer("opened_sequence >= ?", *opened)
            .eq("mission_id", Some(id));
    }
    terms = terms.eq("session_id", filter.session_id.as_deref());
    match filter.status {
        Some(ToolStatus::Running) => terms.term("status = 'running'"),
        _ => terms,
    }
}

/// The first `limit` tool uses of a mission, in the order they started (`GET /missions/{id}`
/// embeds them).
pub fn first_of_mission(
    conn: &Connection,
    mission: &Mission,
    limit: u32,
) -> rusqlite::Result<Vec<ToolUse>> {
    let scope = of_mission(&mission.session_id, &mission.id, mission.opened_sequence);
    scope.query(
        conn,
        &scope.sql(Order::Oldest, ":limit"),
        &[(":limit", Value::Integer(limit.into()))],
        row,
    )
}

/// The statement [`save`] runs, prepared once by [`saving`] to write many rows. A stored row
/// is changed in place: `session_id` and `opened_sequence` (its key and the indexed columns)
/// never change once a tool use is opened, so they are not set again, and the indexes keep
/// their entries.
/// A new row's `opening_pruned` says whether its opening event is missing from the log (in
/// the retention snapshot's file, which has no events: [`super::of_session`]).
static SAVE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tool_uses ({COLUMNS}, opening_pruned)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 CASE WHEN EXISTS (SELECT 1 FROM events WHERE sequence = ?16) THEN NULL
                      ELSE 1 END)
         ON CONFLICT (opened_sequence) DO UPDATE SET mission_id = ?3, tool_use_id = ?4,
             request_id = ?5, tool = ?6, kind = ?7, preview = ?8, status = ?9, error = ?10,
             opened_event_id = ?11, closed_event_id = ?12, started_at = ?13,
             finished_at = ?14, duration_ms = ?15"
    )
});

/// The prepared statement [`save_with`] runs.
pub fn saving(conn: &Connection) -> rusqlite::Result<CachedStatement<'_>> {
    conn.prepare_cached(&SAVE)
}

pub fn save(conn: &Connection, t: &ToolUse) -> rusqlite::Result<()> {
    save_with(&mut saving(conn)?, t)
}

/// [`save`] with a statement from [`saving`].
pub fn save_with(statement: &mut CachedStatement<'_>, t: &ToolUse) -> rusqlite::Result<()> {
    statement.execute(params![
        t.id,
        t.session_id,
        t.mission_id,
        t.tool_use_id,
        t.request_id,
        t.tool,
        t.kind,
        t.preview,
        t.status,
        t.error,
        t.opened_event_id,
        t.closed_event_id,
        t.started_at,
        t.finished_at,
        t.duration_ms,
        t.opened_sequence,
    ])?;
    Ok(())
}

/// What kind of tool a name is, for grouping (`bash`, `file`, ...).
pub fn kind_of(tool: &str) -> &'static str {
    match tool {
        "Bash" | "BashOutput" | "KillShell" | "shell" | "exec_command" | "local_shell"
        | "unified_exec" => "bash",
        "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "NotebookRead"
        | "apply_patch" => "file",
        "Grep" | "Glob" | "LS" => "search",
        "WebFetch" | "WebSearch" | "web_search" => "web",
        "Task" | "Agent" => "subagent",
        "AskUserQuestion" => "input",
        t if t.starts_with("mcp__") => "mcp",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_group_the_tools_agents_use() {
        assert_eq!(kind_of("Bash"), "bash");
        assert_eq!(kind_of("apply_patch"), "file");
        assert_eq!(kind_of("mcp__github__create_issue"), "mcp");
        assert_eq!(kind_of("Task"), "subagent");
        assert_eq!(kind_of("TodoWrite"), "other");
    }

    /// A tool use is found by its id whether its opening event is in the log or was pruned,
    /// and only by its own id.
    #[test]
    fn a_tool_use_is_found_by_id_through_its_event_or_once_pruned_its_own_index() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        conn.execute_batch(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source,
                                 event_time, received_at, payload, origin)
             VALUES (7, 'e7', 's', 1, 'PreToolUse', 'hook', 't', 't', '{}', 'here'),
                    (8, 'e8', 's', 2, 'Stop', 'hook', 't', 't', '{}', 'here');
             INSERT INTO tool_uses (id, session_id, tool, kind, status, opened_sequence,
                                    opening_pruned)
             VALUES ('tool-e7', 's', 'Bash', 'bash', 'running', 7, NULL),
                    ('tool-e3', 's', 'Read', 'file', 'completed', 3, 1);",
        )
        .unwrap();
        let found = |id: &str| get(&conn, id).unwrap().map(|t| t.opened_sequence);
        assert_eq!(found("tool-e7"), Some(7));
        assert_eq!(found("tool-e3"), Some(3), "its event pruned");
        assert_eq!(found("tool-e8"), None, "an event that opened no tool use");
        assert_eq!(found("e7"), None);
        assert_eq!(found("tool-nothing"), None);
        let plan = super::super::filter::plan_of(&conn, &GET, ["tool-e7", "e7"]);
        assert!(
            plan.contains("sqlite_autoindex_events_1 (event_id=?)"),
            "{plan}"
        );
        assert!(plan.contains("tool_uses_pruned_ids (id=?)"), "{plan}");
        assert!(!plan.contains("SCAN"), "{plan}");
    }

    /// The writer's lookup of the call that spawned a subagent reads the running spawners
    /// only, not every running tool of the session.
    #[test]
    fn a_running_spawner_is_found_among_the_spawners() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let plan = super::super::filter::plan_of(&conn, &RUNNING_SPAWNER, ["s"]);
        assert!(
            plan.contains("tool_uses_running_spawners (session_id=?)"),
            "{plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        assert!(running_spawner(&conn, "s").unwrap().is_none());
    }

    /// A session's (or a mission's) tool uses are read through the session's events and the
    /// tool uses' order index, and through the pruned ones' own index: no statement scans a
    /// table or sorts a session's every event.
    #[test]
    fn a_sessions_tool_uses_are_read_through_its_events() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let mut cursor = of_mission("s", "m", 5).eq("kind", ":kind", Some("bash"));
        cursor.before = Some(9);
        let statements = [
            (
                Scope::of(&TABLE, "s").sql(Order::Newest, ":limit"),
                Scope::of(&TABLE, "s"),
            ),
            (
                BY_CALL.clone(),
                calls("s").eq("tool_use_id", ":call", Some("c")),
            ),
            (
                CALLS_OF.clone(),
                calls("s").term("t.tool_use_id IS NOT NULL"),
            ),
            (cursor.sql(Order::Oldest, ":limit"), cursor),
        ];
        for (sql, scope) in statements {
            let plan = super::super::of_session::plan_read_in_order(&conn, &sql, &scope);
            assert!(
                plan.contains("SEARCH t USING INTEGER PRIMARY KEY (rowid=?)"),
                "{sql}: {plan}"
            );
            assert!(
                plan.contains("SEARCH t USING INDEX tool_uses_pruned (session_id=?"),
                "{sql}: {plan}"
            );
        }
    }

    /// A page of running tool uses reads as many as it shows, newest first from the index
    /// in that order, not every running tool (of every session, or of one) sorted.
    #[test]
    fn a_running_page_reads_its_rows_in_order() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        for (session, index) in [
            (None, "tool_uses_running_by_order (opened_sequence<?)"),
            (
                Some("s".to_string()),
                "tool_uses_running (session_id=? AND opened_sequence<?)",
            ),
        ] {
            let filter = ToolUseFilter {
                status: Some(ToolStatus::Running),
                session_id: session,
                ..Default::default()
            };
            let scope = scope_filter(&filter, None).bind_integer("opened_sequence < ?", 10);
            let from = newest_from(&filter);
            let plan = super::super::filter::plan(&conn, scope, |w| {
                w.sql(
                    &format!("SELECT {COLUMNS} FROM {from}"),
                    "ORDER BY opened_sequence DESC",
                )
            });
            assert!(plan.contains(index), "{filter:?}: {plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{filter:?}: {plan}");
        }
    }

    /// `newest`: a filter no index serves reads at most `SCAN_WINDOW` tool uses a page and
    /// says where to go on; the running ones are found whatever their age; the unfiltered
    /// list reads its order's index rather than sorting every tool use.
    #[test]
    fn the_newest_page_reads_a_bounded_window_and_says_where_to_go_on() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let rows = 2 * SCAN_WINDOW as i64 + 500;
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
             INSERT INTO tool_uses (id, session_id, tool, kind, status, opened_sequence)
             SELECT 'tool-' || i, 's' || (i % 7), 'Bash', 'bash',
                    CASE WHEN i IN (3, 4) THEN 'failed' WHEN i = 2 THEN 'running'
                         ELSE 'completed' END, i
             FROM n",
            [rows],
        )
        .unwrap();
        let page = |filter: &ToolUseFilter, before| newest(&conn, filter, before, 10).unwrap();
        let all = page(&ToolUseFilter::default(), None);
        assert_eq!(all.tool_uses[0].opened_sequence, rows);
        assert_eq!(all.next_before, Some(rows - 9));

        // Two failures, both older than two windows: two empty pages that go on, then both.
        let failed = ToolUseFilter {
            status: Some(ToolStatus::Failed),
            ..Default::default()
        };
        let mut before = None;
        let mut pages = Vec::new();
        loop {
            let got = page(&failed, before);
            pages.push(
                got.tool_uses
                    .iter()
                    .map(|t| t.opened_sequence)
                    .collect::<Vec<_>>(),
            );
            match got.next_before {
                Some(next) => before = Some(next),
                None => break,
            }
        }
        assert_eq!(pages, [vec![], vec![], vec![4, 3]]);
        // The one running tool, the second oldest, on the first page.
        let running = ToolUseFilter {
            status: Some(ToolStatus::Running),
            ..Default::default()
        };
        let got = page(&running, None);
        assert_eq!(got.tool_uses.len(), 1);
        assert_eq!(
            (got.tool_uses[0].opened_sequence, got.next_before),
            (2, None)
        );

        let plan =
            super::super::filter::plan(&conn, scope_filter(&ToolUseFilter::default(), None), |w| {
                w.sql(
                    &format!("SELECT {COLUMNS} FROM tool_uses"),
                    "ORDER BY opened_sequence DESC",
                )
            });
        assert!(plan.contains("SCAN tool_uses"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }
}
