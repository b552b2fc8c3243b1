//! The `missions` projection: the work of one prompt (kind `prompt`, opened by
//! `UserPromptSubmit` / `mission_start` / `hero_active`, closed by `Stop` / `hero_idle`) and
//! of each subagent it spawns (kind `subagent`, a child of the prompt mission). A mission's id
//! is `mission-` and the id of the event that opened it.

use super::filter::Where;
use super::of_session::{Order, Scope, Table};
use crate::states::states;
use rusqlite::types::Value;
use rusqlite::{CachedStatement, Connection, OptionalExtension, Row, params, params_from_iter};
use serde::Serialize;
use std::sync::LazyLock;

states! {
    /// A mission's `state`.
    pub enum MissionState {
        Active = "active",
        Completed = "completed",
        Failed = "failed",
        Interrupted = "interrupted",
    }
}

// The queries of active missions write `state = 'active'` in the statement, not bound: only
// then can SQLite use `missions_active`, a partial index on this very condition.

/// The mission id an opening event gives.
pub fn mission_id(event_id: &str) -> String {
    format!("mission-{event_id}")
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mission {
    pub id: String,
    pub hero_id: String,
    pub session_id: String,
    pub kind: String,
    pub state: MissionState,
    pub prompt: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub parent_mission_id: Option<String>,
    pub subagent_id: Option<String>,
    pub subagent_type: Option<String>,
    pub degraded_reason: Option<String>,
    pub opened_event_id: String,
    pub closed_event_id: Option<String>,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub opened_sequence: i64,
}

/// The stored columns. A mission's hero is its session's (`heroes::hero_id`), not stored
/// (migration 0030).
const COLUMNS: &str = "id, session_id, kind, state, prompt, title, summary,
     parent_mission_id, subagent_id, subagent_type, degraded_reason, opened_event_id,
     closed_event_id, started_at, completed_at, opened_sequence";

/// How a session's missions are read ([`super::of_session`]).
pub(super) static TABLE: Table = Table {
    name: "missions",
    columns: COLUMNS,
    computed: "",
    key: "opened_sequence",
    by_order: None,
    pruned: "missions_pruned",
};

fn row(r: &Row<'_>) -> rusqlite::Result<Mission> {
    let session_id: String = r.get(1)?;
    Ok(Mission {
        id: r.get(0)?,
        hero_id: super::heroes::hero_id(&session_id),
        session_id,
        kind: r.get(2)?,
        state: r.get(3)?,
        prompt: r.get(4)?,
        title: r.get(5)?,
        summary: r.get(6)?,
        parent_mission_id: r.get(7)?,
        subagent_id: r.get(8)?,
        subagent_type: r.get(9)?,
        degraded_reason: r.get(10)?,
        opened_event_id: r.get(11)?,
        closed_event_id: r.get(12)?,
        started_at: r.get(13)?,
        completed_at: r.get(14)?,
        opened_sequence: r.get(15)?,
    })
}

/// One mission by its id (`mission-` and its opening event's id): keyed by its opening
/// event's sequence, it is found through the events' index of ids, or through
/// `missions_pruned_ids` once retention has pruned that event (migration 0038).
pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<Mission>> {
    let Some(event) = id.strip_prefix("mission-") else {
        return Ok(None);
    };
    conn.prepare_cached(&GET)?
        .query_row([id, event], row)
        .optional()
}

static GET: LazyLock<String> = LazyLock::new(|| format!("{} LIMIT 1", by_id(COLUMNS)));

/// The statement that reads `columns` of the mission whose id is `?1` (`?2`: the id of its
/// opening event, the id without `mission-`).
fn by_id(columns: &str) -> String {
    format!(
        "SELECT {columns} FROM missions
         WHERE opened_sequence = (SELECT sequence FROM events WHERE event_id = ?2) AND id = ?1
         UNION ALL
         SELECT {columns} FROM missions INDEXED BY missions_pruned_ids
         WHERE opening_pruned = 1 AND id = ?1"
    )
}

/// The session and the key (opening sequence) of the mission whose id is `id`, if it has a
/// row.
pub fn key_of(conn: &Connection, id: &str) -> rusqlite::Result<Option<(String, i64)>> {
    let Some(event) = id.strip_prefix("mission-") else {
        return Ok(None);
    };
    conn.prepare_cached(&KEY_OF)?
        .query_row([id, event], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

static KEY_OF: LazyLock<String> =
    LazyLock::new(|| format!("{} LIMIT 1", by_id("session_id, opened_sequence")));

/// The latest active subagent mission of a session for a subagent id: through the partial
/// index of active subagents by id, named, so the cost does not grow with the subagents the
/// session left running (`missions_active` would read each of them; migration 0023).
pub fn active_subagent(
    conn: &Connection,
    session_id: &str,
    subagent_id: &str,
) -> rusqlite::Result<Option<Mission>> {
    conn.prepare_cached(&ACTIVE_SUBAGENT)?
        .query_row([session_id, subagent_id], row)
        .optional()
}

static ACTIVE_SUBAGENT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS} FROM missions INDEXED BY missions_active_subagents
         WHERE session_id = ?1 AND state = 'active' AND subagent_id = ?2
         ORDER BY opened_sequence DESC LIMIT 1"
    )
});

/// Every active mission of a session.
pub fn active_of(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<Mission>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM missions
         WHERE session_id = ?1 AND state = 'active' ORDER BY opened_sequence"
    ))?
    .query_map([session_id], row)?
    .collect()
}

/// The still-active children of a mission of the session, in the order they opened.
pub fn active_children(
    conn: &Connection,
    session_id: &str,
    parent_id: &str,
) -> rusqlite::Result<Vec<Mission>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM missions
         WHERE session_id = ?1 AND state = 'active' AND parent_mission_id = ?2
         ORDER BY opened_sequence, id"
    ))?
    .query_map([session_id, parent_id], row)?
    .collect()
}

/// A mission's latest tool uses, in the order they started: at most `active_tools` while it
/// is active, `tools` once it has ended.
pub fn latest_tool_uses(
    conn: &Connection,
    mission: &Mission,
    tools: u32,
    active_tools: u32,
) -> rusqlite::Result<Vec<super::tool_uses::ToolUse>> {
    let limit = match mission.state {
        MissionState::Active => active_tools,
        _ => tools,
    };
    super::tool_uses::latest_of_mission(conn, mission, limit)
}

/// The filters of `GET /missions`.
#[derive(Debug, Default, Clone)]
pub struct MissionFilter {
    pub state: Option<MissionState>,
    pub hero_id: Option<String>,
    pub session_id: Option<String>,
    pub parent_mission_id: Option<String>,
}

/// Missions, most recently opened first.
pub fn list(
    conn: &Connection,
    filter: &MissionFilter,
    limit: u32,
) -> rusqlite::Result<Vec<Mission>> {
    if filter.parent_mission_id.is_none()
        && (filter.session_id.is_some() || filter.hero_id.is_some())
    {
        return list_of_session(conn, filter, limit);
    }
    let index = list_index(filter);
    let filter = list_filter(filter);
    conn.prepare_cached(&list_sql(index, &filter))?
        .query_map(params_from_iter(filter.values(limit)), row)?
        .collect()
}

/// A session's missions (a hero's are its session's), most recently opened first, through the
/// session's events ([`super::of_session`], migration 0032). A state filter is applied to
/// them as they are read: a page reads at most the session's events.
fn list_of_session(
    conn: &Connection,
    filter: &MissionFilter,
    limit: u32,
) -> rusqlite::Result<Vec<Mission>> {
    let session = match (filter.session_id.as_deref(), filter.hero_id.as_deref()) {
        (session, Some(hero)) => {
            let of: Option<String> = conn
                .prepare_cached("SELECT session_id FROM heroes WHERE id = ?1")?
                .query_row([hero], |r| r.get(0))
                .optional()?;
            match of {
                Some(of) if session.is_none_or(|s| s == of) => of,
                _ => return Ok(Vec::new()),
            }
        }
        (Some(session), None) => session.to_string(),
        (None, None) => return Ok(Vec::new()),
    };
    let scope =
        Scope::of(&TABLE, &session).eq("state", ":state", filter.state.map(MissionState::as_str));
    scope.query(
        conn,
        &scope.sql(Order::Newest, ":limit"),
        &[(":limit", Value::Integer(limit.into()))],
        row,
    )
}

/// The index a filtered list walks, named because without statistics SQLite's planner may
/// walk the table in its key's order (the `ORDER BY`) and read every mission to find a few:
/// the most selective filter's own index (a parent's children, then a state's); none for no
/// filter (the table itself is in opening order). A session's or a hero's are read through the
/// session's events ([`list_of_session`]) but a parent's children.
fn list_index(filter: &MissionFilter) -> Option<&'static str> {
    if filter.parent_mission_id.is_some() {
        Some("missions_by_parent")
    } else if filter.state.is_some() {
        Some("missions_by_state")
    } else {
        None
    }
}

fn list_filter(filter: &MissionFilter) -> Where {
    let mut terms = Where::default().eq("state", filter.state.map(MissionState::as_str));
    if let Some(hero) = filter.hero_id.as_deref() {
        // A hero is its session's (not stored since migration 0030): its missions are its
        // session's.
        terms = terms.bind(
            "session_id = (SELECT session_id FROM heroes WHERE id = ?)",
            hero,
        );
    }
    terms
        .eq("session_id", filter.session_id.as_deref())
        .eq("parent_mission_id", filter.parent_mission_id.as_deref())
}

fn list_sql(index: Option<&str>, filter: &Where) -> String {
    let from = match index {
        Some(index) => format!("missions INDEXED BY {index}"),
        None => "missions".to_string(),
    };
    filter.sql(
        &format!("SELECT {COLUMNS} FROM {from}"),
        "ORDER BY opened_sequence DESC",
    )
}

/// The statement [`save`] runs, prepared once by [`saving`] to write many rows. A stored row
/// is changed in place: `id`, `session_id`, `parent_mission_id` and `opened_sequence` (the
/// key, and indexed) never change once a mission is opened, so they are not set again, and
/// the indexes on them keep their entries. A new row's `opening_pruned` says whether its opening event is missing
/// from the log (in the retention snapshot's file, which has no events).
static SAVE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO missions ({COLUMNS}, opening_pruned)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 CASE WHEN EXISTS (SELECT 1 FROM events WHERE sequence = ?16) THEN NULL
                      ELSE 1 END)
         ON CONFLICT (opened_sequence) DO UPDATE SET kind = ?3, state = ?4, prompt = ?5,
             title = ?6, summary = ?7, subagent_id = ?9, subagent_type = ?10,
             degraded_reason = ?11, opened_event_id = ?12, closed_event_id = ?13,
             started_at = ?14, completed_at = ?15"
    )
});

/// The prepared statement [`save_with`] runs.
pub fn saving(conn: &Connection) -> rusqlite::Result<CachedStatement<'_>> {
    conn.prepare_cached(&SAVE)
}

pub fn save(conn: &Connection, m: &Mission) -> rusqlite::Result<()> {
    save_with(&mut saving(conn)?, m)
}

/// [`save`] with a statement from [`saving`].
pub fn save_with(statement: &mut CachedStatement<'_>, m: &Mission) -> rusqlite::Result<()> {
    statement.execute(params![
        m.id,
        m.session_id,
        m.kind,
        m.state,
        m.prompt,
        m.title,
        m.summary,
        m.parent_mission_id,
        m.subagent_id,
        m.subagent_type,
        m.degraded_reason,
        m.opened_event_id,
        m.closed_event_id,
        m.started_at,
        m.completed_at,
        m.opened_sequence,
    ])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer's lookup of a subagent's active mission searches by the subagent's id, not
    /// among all the session's active missions.
    #[test]
    fn an_active_subagent_is_found_by_its_id() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let plan = super::super::filter::plan_of(&conn, &ACTIVE_SUBAGENT, ["s", "a"]);
        assert!(
            plan.contains("missions_active_subagents (session_id=? AND subagent_id=?)"),
            "{plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        assert_eq!(active_subagent(&conn, "s", "a").unwrap(), None);
    }

    /// Each filter of `GET /missions` is served by its index, a hero's too (the planner alone
    /// walked every mission in opening order for it).
    #[test]
    fn the_list_filters_search_an_index() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let text = |s: &str| Some(s.to_string());
        for (filter, expected) in [
            (
                MissionFilter {
                    parent_mission_id: text("m"),
                    ..Default::default()
                },
                "missions_by_parent",
            ),
            (
                MissionFilter {
                    state: Some(MissionState::Failed),
                    ..Default::default()
                },
                "missions_by_state",
            ),
            (MissionFilter::default(), "SCAN missions"),
        ] {
            let chosen = list_index(&filter);
            let plan =
                super::super::filter::plan(&conn, list_filter(&filter), |w| list_sql(chosen, w));
            assert!(plan.contains(expected), "{filter:?}: {plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{filter:?}: {plan}");
        }
    }

    /// A session's missions, in a state or not, are read through its events and the
    /// missions' key, and through the pruned ones' own index: no table is scanned.
    #[test]
    fn a_sessions_missions_are_read_through_its_events() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        for state in [None, Some("failed")] {
            let scope = Scope::of(&TABLE, "s").eq("state", ":state", state);
            let sql = scope.sql(Order::Newest, ":limit");
            let plan = super::super::of_session::plan_read_in_order(&conn, &sql, &scope);
            for step in [
                "SEARCH e USING COVERING INDEX sqlite_autoindex_events_2 (session_id=?)",
                "SEARCH t USING INTEGER PRIMARY KEY (rowid=?)",
                "SEARCH t USING INDEX missions_pruned (session_id=?)",
            ] {
                assert!(plan.contains(step), "{plan}");
            }
        }
    }
}
