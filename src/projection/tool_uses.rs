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

const COLUMNS: &str = "id, session_id, hero_id, mission_id, tool_use_id, request_id, tool, kind,
     preview, status, error, opened_event_id, closed_event_id, started_at, finished_at,
     duration_ms, opened_sequence";

fn row(r: &Row<'_>) -> rusqlite::Result<ToolUse> {
    Ok(ToolUse {
        id: r.get(0)?,
        session_id: r.get(1)?,
        hero_id: r.get(2)?,
        mission_id: r.get(3)?,
        tool_use_id: r.get(4)?,
        request_id: r.get(5)?,
        tool: r.get(6)?,
        kind: r.get(7)?,
        preview: r.get(8)?,
        status: r.get(9)?,
        error: r.get(10)?,
        opened_event_id: r.get(11)?,
        closed_event_id: r.get(12)?,
        started_at: r.get(13)?,
        finished_at: r.get(14)?,
        duration_ms: r.get(15)?,
        opened_sequence: r.get(16)?,
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

/// The latest running subagent-spawning call (`Task` / `Agent`) of a session.
pub fn running_spawner(conn: &Connection, session_id: &str) -> rusqlite::Result<Option<ToolUse>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tool_uses
         WHERE session_id = ?1 AND kind = 'subagent' AND status = 'running'
         ORDER BY opened_sequence DESC LIMIT 1"
    ))?
    .query_row([session_id], row)
    .optional()
}

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
}

/// Tool uses in the order they started.
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
        // What runs now is in `tool_uses_running`, a partial index on this very condition.
        Some(ToolStatus::Running) => terms.term("status = 'running'"),
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
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
         ON CONFLICT (id) DO UPDATE SET hero_id = ?3, mission_id = ?4, tool_use_id = ?5,
             request_id = ?6, tool = ?7, kind = ?8, preview = ?9, status = ?10, error = ?11,
             opened_event_id = ?12, closed_event_id = ?13, started_at = ?14,
             finished_at = ?15, duration_ms = ?16"
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
        t.hero_id,
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
}
