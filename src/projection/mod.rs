//! Projections: tables derived from the log, updated by the writer in the same transaction as
//! the event that changes them. Each is a pure function of the events: no wall clock, no random
//! numbers, times and ids taken from the event, so a rebuild from the log reproduces them.
//!
//! What an event does depends on the contract it came through (its `source`): hook events
//! (`hook`) drive heroes, missions and tool uses; normalized events (`normalized`) drive
//! session state; every event with a session id counts in `sessions`.

pub mod alerts;
pub mod claims;
pub mod factory;
pub mod gaps;
pub mod heroes;
pub mod hook;
pub mod missions;
pub mod owners;
pub mod sessions;
pub mod tables;
pub mod tool_uses;
pub mod view;

use crate::coordination;
use crate::event::StoredEvent;
use crate::ingest::{factory as factory_ingest, hook as hook_ingest, normalized};
use crate::store::read;
use rusqlite::{Connection, OptionalExtension};
use tables::{Cached, Live, Tables};
use view::View;

/// Every projection table, cleared by a rebuild.
pub const TABLES: &[&str] = &[
    "sessions",
    "heroes",
    "missions",
    "tool_uses",
    "hook_effects",
    "watcher_owners",
    "claims",
    "claim_actions",
    "gaps",
    "factory_work",
    "factory_dispatches",
    "alerts",
];

/// What applying an event did that its producer is told (`POST /event` answers with them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    pub hero_id: Option<String>,
    pub mission_id: Option<String>,
}

/// Applies one freshly appended event to every projection.
pub fn apply(conn: &Connection, event: &StoredEvent) -> rusqlite::Result<Effects> {
    apply_to(&Live(conn), event)
}

/// Applies an event to every projection, keeping the agent rows in `tables`.
pub fn apply_to(tables: &impl Tables, event: &StoredEvent) -> rusqlite::Result<Effects> {
    let conn = tables.conn();
    let mut effects = Effects::default();
    match event.source.as_str() {
        hook_ingest::SOURCE => {
            let view = View::parse(&event.payload);
            let action = hook::action(&event.event_type, view.hook_type());
            let facts = sessions::Facts {
                cli: hook::cli_of(&view),
                cli_default: Some("claude-code"),
                cwd: view.text("cwd"),
                tty: view.text("tty"),
                transcript_path: view.text("transcriptPath"),
                model: view.text("modelId").or_else(|| view.text("model")),
                permission_mode: view.text("permissionMode"),
                state: hook::state_after(action, &view),
                ..Default::default()
            };
            tables.session(event, &facts)?;
            effects = hook::apply(tables, event, &view)?;
            tables.effects(&event.event_id, &effects)?;
        }
        normalized::SOURCE => {
            let view = View::parse(&event.payload);
            let state = match event.event_type.as_str() {
                "registered" | "unstuck" => Some("active"),
                "stuck" => Some("stuck"),
                "ended" => Some("ended"),
                _ => None,
            };
            let facts = sessions::Facts {
                cwd: view.text("cwd"),
                pane_id: view.text("paneId"),
                transcript_path: view.text("transcriptPath"),
                stuck: (state == Some("stuck")).then(|| {
                    (
                        view.text("reason").unwrap_or(""),
                        view.text("message").unwrap_or(""),
                    )
                }),
                state,
                ..Default::default()
            };
            tables.session(event, &facts)?;
        }
        coordination::SOURCE => {
            // Outcome events carry no session (a claim names its session in the payload).
            tables.session(event, &sessions::Facts::default())?;
            let view = View::parse(&event.payload);
            let kind = event.event_type.as_str();
            if kind.starts_with("owner_") {
                owners::apply(conn, event, &view)?;
            } else if kind.starts_with("claim_") {
                claims::apply(conn, event, &view)?;
            } else if kind.starts_with("gap_") {
                gaps::apply(conn, event, &view)?;
            } else if kind == "alert_acknowledged"
                && let Some(id) = view.int("alertId")
            {
                alerts::acknowledge(conn, event, id)?;
            }
        }
        factory_ingest::SOURCE => {
            let parts = factory::Parts::parse(&event.payload);
            let status = factory::status_of(&event.event_type, &parts);
            let facts = sessions::Facts {
                state: status.as_deref().and_then(factory::session_state),
                factory: Some(factory::session_change(event, &parts)),
                ..Default::default()
            };
            tables.session(event, &facts)?;
            factory::apply(conn, event, &parts)?;
        }
        _ => tables.session(event, &sessions::Facts::default())?,
    }
    alerts::apply(conn, event)?;
    Ok(effects)
}

/// What an already stored event did, for answering a re-post of it exactly as the first post
/// was answered: the hero and mission its projection recorded.
pub fn recall(conn: &Connection, event: &StoredEvent) -> rusqlite::Result<Effects> {
    if event.source != hook_ingest::SOURCE {
        return Ok(Effects::default());
    }
    Ok(conn
        .prepare_cached("SELECT hero_id, mission_id FROM hook_effects WHERE event_id = ?1")?
        .query_row([&event.event_id], |r| {
            Ok(Effects {
                hero_id: r.get(0)?,
                mission_id: r.get(1)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

/// Every projection table's rows as text (`table: v1 | v2 | ...`), in primary-key order: two
/// databases whose projections are equal give equal snapshots.
pub fn snapshot(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut out = Vec::new();
    for table in TABLES {
        let mut statement = conn.prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))?;
        let columns = statement.column_count();
        let rows = statement.query_map([], |r| {
            let values = (0..columns)
                .map(|i| r.get_ref(i).map(show))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(format!("{table}: {}", values.join(" | ")))
        })?;
        for row in rows {
            out.push(row?);
        }
    }
    Ok(out)
}

/// A value as sqlite3 would show it in a row (`NULL`, `42`, `'text'`).
fn show(value: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) => format!("'{}'", String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => format!(
            "x'{}'",
            b.iter().map(|x| format!("{x:02x}")).collect::<String>()
        ),
    }
}

/// Clears every projection, loads the retention snapshot (the state after the last pruned
/// event, empty when nothing was pruned) and replays the retained log into them, in sequence
/// order. Returns the number of events replayed. Runs inside the caller's transaction.
///
/// The agent rows (sessions, heroes, missions, tool uses) are kept in memory for the replay
/// and written in bulk ([`Cached`]); every other projection is written as the events come.
pub fn rebuild(conn: &Connection) -> rusqlite::Result<u64> {
    rebuild_in_steps(conn, Cached::FLUSH_EVERY)
}

/// [`rebuild`], writing the rows held in memory every `events_per_flush` events (tests use
/// small steps, so rows are let go of and read back from SQL often).
pub fn rebuild_in_steps(conn: &Connection, events_per_flush: u64) -> rusqlite::Result<u64> {
    for table in TABLES {
        conn.execute(&format!("DELETE FROM {table}"), [])?;
    }
    let after = crate::store::snapshot::restore(conn)?;
    let mut statement = conn.prepare(&format!(
        "SELECT {} FROM events WHERE sequence > ?1 ORDER BY sequence",
        read::EVENT_COLUMNS
    ))?;
    let mut rows = statement.query([after])?;
    let tables = Cached::new(conn);
    let mut replayed = 0;
    while let Some(row) = rows.next()? {
        apply_to(&tables, &read::stored_event(row)?)?;
        replayed += 1;
        if replayed % events_per_flush.max(1) == 0 {
            tables.flush()?;
        }
    }
    tables.flush()?;
    Ok(replayed)
}
