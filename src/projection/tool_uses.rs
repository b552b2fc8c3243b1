//! The `tool_uses` projection: one row per tool call, opened by `PreToolUse` and closed by
//! `PostToolUse` / `PostToolUseFailure` with the same `toolUseId`, and one row per permission
//! request (kind `permission`, status `requested`). A row's id is `tool-` and the id of the
//! event that made it.

use super::filter::Where;
use super::missions::Mission;
use crate::states::states;
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

/// One tool use by its row id.
pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<ToolUse>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tool_uses WHERE id = ?1"))?
        .query_row([id], row)
        .optional()
}

/// The latest tool call of a session with an agent's tool use id (permission requests, which
/// may carry the same id, are not calls). It walks the session's tool uses newest first
/// (`tool_uses_by_session`): the writer asks [`calls_of`] once per session instead.
pub fn by_call(
    conn: &Connection,
    session_id: &str,
    tool_use_id: &str,
) -> rusqlite::Result<Option<ToolUse>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tool_uses
         WHERE session_id = ?1 AND tool_use_id = ?2 AND kind <> 'permission'
         ORDER BY opened_sequence DESC LIMIT 1"
    ))?
    .query_row([session_id, tool_use_id], row)
    .optional()
}

/// Every tool use id of a session's calls (not permission requests) with the row id of the
/// latest call that has it.
pub fn calls_of(
    conn: &Connection,
    session_id: &str,
) -> rusqlite::Result<foldhash::HashMap<String, String>> {
    let mut calls = foldhash::HashMap::default();
    let mut statement = conn.prepare_cached(
        "SELECT tool_use_id, id FROM tool_uses
         WHERE session_id = ?1 AND tool_use_id IS NOT NULL AND kind <> 'permission'
         ORDER BY opened_sequence",
    )?;
    let mut rows = statement.query([session_id])?;
    while let Some(r) = rows.next()? {
        calls.insert(r.get(0)?, r.get(1)?);
    }
    Ok(calls)
}

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
/// uses are in its session, from its opening on: they are found through
/// `tool_uses_by_session`.
pub fn latest_of_mission(
    conn: &Connection,
    mission: &Mission,
    limit: u32,
) -> rusqlite::Result<Vec<ToolUse>> {
    let mut latest: Vec<ToolUse> = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tool_uses
         WHERE session_id = ?1 AND opened_sequence >= ?2 AND mission_id = ?3
         ORDER BY opened_sequence DESC LIMIT ?4"
        ))?
        .query_map(
            params![
                mission.session_id,
                mission.opened_sequence,
                mission.id,
                limit
            ],
            row,
        )?
        .collect::<rusqlite::Result<_>>()?;
    latest.reverse();
    Ok(latest)
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
    let mut scope = scope_filter(filter);
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

/// The terms an index serves: the session, the mission, `status = running`.
fn scope_filter(filter: &ToolUseFilter) -> Where {
    let mut terms = Where::default();
    if let Some(mission) = filter.mission_id.as_deref() {
        // A mission's tool uses are its session's from its opening on: found through
        // `tool_uses_by_session`, as `latest_of_mission` finds them.
        terms = terms
            .bind(
                "session_id = (SELECT session_id FROM missions WHERE id = ?)",
                mission,
            )
            .bind(
                "opened_sequence >= (SELECT opened_sequence FROM missions WHERE id = ?)",
                mission,
            )
            .eq("mission_id", Some(mission));
    }
    terms = terms.eq("session_id", filter.session_id.as_deref());
    match filter.status {
        Some(ToolStatus::Running) => terms.term("status = 'running'"),
        _ => terms,
    }
}

/// Tool uses in the order they started (a mission's, which `GET /missions/{id}` embeds).
pub fn list(
    conn: &Connection,
    filter: &ToolUseFilter,
    limit: u32,
) -> rusqlite::Result<Vec<ToolUse>> {
    let filter = list_filter(filter);
    conn.prepare_cached(&list_sql(&filter))?
        .query_map(params_from_iter(filter.values(limit)), row)?
        .collect()
}

fn list_filter(filter: &ToolUseFilter) -> Where {
    let terms = scope_filter(filter)
        .eq("kind", filter.kind.as_deref())
        .eq("tool", filter.tool.as_deref());
    match filter.status {
        // In the scope already: `tool_uses_running` is a partial index on that condition.
        Some(ToolStatus::Running) => terms,
        status => terms.eq("status", status.map(ToolStatus::as_str)),
    }
}

fn list_sql(filter: &Where) -> String {
    filter.sql(
        &format!("SELECT {COLUMNS} FROM tool_uses"),
        "ORDER BY opened_sequence",
    )
}

/// The statement [`save`] runs, prepared once by [`saving`] to write many rows. A stored row
/// is changed in place: `session_id` and `opened_sequence` (the indexed columns) never change
/// once a tool use is opened, so they are not set again, and the indexes keep their entries.
static SAVE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO tool_uses ({COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
         ON CONFLICT (id) DO UPDATE SET mission_id = ?3, tool_use_id = ?4,
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

    /// Each filter of `GET /tool-uses` but a status other than `running` is served by an
    /// index: none scans the table (a scan reads every tool use of the log).
    #[test]
    fn the_list_filters_search_an_index() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let text = |s: &str| Some(s.to_string());
        for filter in [
            ToolUseFilter {
                status: Some(ToolStatus::Running),
                ..Default::default()
            },
            ToolUseFilter {
                session_id: text("s"),
                ..Default::default()
            },
            ToolUseFilter {
                session_id: text("s"),
                status: Some(ToolStatus::Running),
                ..Default::default()
            },
            ToolUseFilter {
                mission_id: text("m"),
                status: Some(ToolStatus::Completed),
                ..Default::default()
            },
        ] {
            let plan = super::super::filter::plan(&conn, list_filter(&filter), list_sql);
            assert!(!plan.contains("SCAN tool_uses\n"), "{filter:?}: {plan}");
            assert!(
                plan.contains("USING INDEX tool_uses_"),
                "{filter:?}: {plan}"
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
            let scope = scope_filter(&filter).bind_integer("opened_sequence < ?", 10);
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
            super::super::filter::plan(&conn, scope_filter(&ToolUseFilter::default()), |w| {
                w.sql(
                    &format!("SELECT {COLUMNS} FROM tool_uses"),
                    "ORDER BY opened_sequence DESC",
                )
            });
        assert!(plan.contains("tool_uses_by_order"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }
}
