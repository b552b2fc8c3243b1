//! Projections: tables derived from the log, updated by the writer in the same transaction as
//! the event that changes them. Each is a pure function of the events: no wall clock, no random
//! numbers, times and ids taken from the event, so a rebuild from the log reproduces them.
//!
//! What an event does depends on the contract it came through (its `source`): hook events
//! (`hook`) drive heroes, missions and tool uses; normalized events (`normalized`) drive
//! session state; every event with a session id counts in `sessions`.

pub mod accounts;
pub mod agent;
pub mod alerts;
pub mod changes;
pub mod claims;
pub mod cost;
pub mod diff;
pub mod factory;
pub mod filter;
pub mod gaps;
pub mod heroes;
pub mod missions;
mod of_session;
pub mod owners;
pub mod permissions;
pub mod prices;
pub mod recorder;
pub mod search;
pub mod sessions;
pub mod tables;
pub mod tool_uses;
pub mod transcript_files;
pub mod usage;
pub mod view;

use crate::event::{Source, StoredEvent, catalogue};
use crate::ingest::transcript;
use rusqlite::{Connection, OptionalExtension};
use sessions::SessionState;
use tables::{Live, Tables};
use view::View;

/// Every projection table, cleared by a rebuild.
pub const TABLES: &[&str] = &[
    "sessions",
    "session_details",
    "heroes",
    "missions",
    "tool_uses",
    "watcher_owners",
    "claims",
    "claim_actions",
    "gaps",
    "factory_work",
    "factory_dispatches",
    "alerts",
    "agent_changes",
    "accounts",
    "usage",
    "transcript_files",
    "permission_requests",
];

/// What applying an event did that its producer is told (`POST /event` answers with them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    pub hero_id: Option<String>,
    pub mission_id: Option<String>,
}

/// The tables whose rows outlive the events that opened them, found by session through those
/// events ([`of_session`]): each one's name and the column holding its opening event's
/// sequence, by which a prune step marks the rows whose event it deletes.
pub fn opened_by_events() -> [(&'static str, &'static str); 3] {
    [&tool_uses::TABLE, &missions::TABLE, &permissions::TABLE].map(|t| (t.name, t.key))
}

/// Applies one freshly appended event to every projection.
pub fn apply(conn: &Connection, event: &StoredEvent) -> rusqlite::Result<Effects> {
    apply_to(&Live::new(conn), conn, event)
}

/// An event's payload, parsed for the projections its source feeds. Parsing is pure, so a
/// rebuild does it on another thread than the one applying events.
pub enum Parsed {
    Hook(View),
    Normalized(View),
    Coordination(View),
    Factory(factory::Parts),
    Transcript(View),
    Replication(View),
    Other,
}

impl Parsed {
    pub fn of(event: &StoredEvent) -> Parsed {
        Parsed::of_payload(&event.source, &event.payload)
    }

    /// [`Parsed::of`] an event from `source` with `payload`, before it is stored.
    pub fn of_payload(source: &str, payload: &str) -> Parsed {
        match Source::parse(source) {
            Some(Source::Hook) => Parsed::Hook(View::parse(payload)),
            Some(Source::Normalized) => Parsed::Normalized(View::parse(payload)),
            Some(Source::Coordination) => Parsed::Coordination(View::parse(payload)),
            Some(Source::Factory) => Parsed::Factory(factory::Parts::parse(payload)),
            Some(Source::Transcript) => Parsed::Transcript(View::parse(payload)),
            Some(Source::Replication) => Parsed::Replication(View::parse(payload)),
            Some(Source::Api) | None => Parsed::Other,
        }
    }
}

/// Applies an event to every projection, keeping the agent rows in `tables` (which write
/// through `conn`).
pub fn apply_to(
    tables: &impl Tables,
    conn: &Connection,
    event: &StoredEvent,
) -> rusqlite::Result<Effects> {
    apply_parsed(tables, conn, event, &Parsed::of(event))
}

/// [`apply_to`] with the payload already parsed (`parsed` must be `Parsed::of(event)`).
pub fn apply_parsed(
    tables: &impl Tables,
    conn: &Connection,
    event: &StoredEvent,
    parsed: &Parsed,
) -> rusqlite::Result<Effects> {
    let effects = apply_agents(tables, event, parsed)?;
    apply_rest(conn, event, parsed)?;
    Ok(effects)
}

/// The agent projections of an event: its session row, for a transcript record its hero's
/// model and the tool calls its results settle ([`agent::apply_transcript`]), and for a hook
/// event its hero,
/// missions, tool uses and `agent_changes` row. They raise their alerts through `tables`, so
/// they come before [`apply_rest`]'s.
pub fn apply_agents(
    tables: &impl Tables,
    event: &StoredEvent,
    parsed: &Parsed,
) -> rusqlite::Result<Effects> {
    let mut effects = Effects::default();
    match parsed {
        Parsed::Hook(view) => {
            let action = agent::action(&event.event_type, view.hook_type());
            let facts = sessions::Facts {
                cli: agent::cli_of(view),
                cli_default: Some("claude-code"),
                cwd: agent::cwd_of(view),
                tty: view.text("tty"),
                transcript_path: view.text("transcriptPath"),
                model: view.text("modelId").or_else(|| view.text("model")),
                permission_mode: view.text("permissionMode"),
                state: agent::state_after(action, view).map(Into::into),
                source_app: view.text("sourceApp"),
                compaction: match event.event_type.as_str() {
                    "PreCompact" => Some(sessions::Compaction::Began),
                    "PostCompact" => Some(sessions::Compaction::Ended),
                    _ => None,
                },
                ..Default::default()
            };
            tables.session(event, &facts)?;
            let recorder = recorder::Recorder::new(tables);
            effects = agent::apply(&recorder, event, view)?;
            let mut row = recorder.finish(event.sequence, &effects);
            // A re-post is answered from the change row (`recall`): an event that answered with
            // a mission has one, as it has a hero (`agent::apply` saves it).
            debug_assert!(row.is_some() || effects.mission_id.is_none());
            if let Some(request) = permissions::opened(event, view) {
                let row = row.get_or_insert_with(|| {
                    changes::ChangeRow::new(event.sequence, request.hero_id.clone(), None)
                });
                row.push(&permissions::delta_opened(&request));
            }
            if let Some(row) = row {
                tables.changes(event, row)?;
            }
        }
        Parsed::Normalized(view) => {
            // The event types of seed 001 (not states, though two share a word with one).
            let state = match event.event_type.as_str() {
                "registered" | "unstuck" => Some(SessionState::Active),
                "stuck" => Some(SessionState::Stuck),
                "ended" => Some(SessionState::Ended),
                _ => None,
            };
            let facts = sessions::Facts {
                cwd: view.text("cwd"),
                pane_id: view.text("paneId"),
                transcript_path: view.text("transcriptPath"),
                stuck: (state == Some(SessionState::Stuck)).then(|| {
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
        Parsed::Factory(parts) => {
            let change = factory::session_change(event, parts);
            let facts = sessions::Facts {
                state: change.status.as_deref().and_then(factory::session_state),
                factory: Some(change),
                ..Default::default()
            };
            tables.session(event, &facts)?;
        }
        Parsed::Transcript(view) => {
            // The session's model is its main thread's: a subagent on another model (or a
            // notice Claude Code wrote itself) does not change it.
            let model = agent::main_thread_model(view);
            let facts = sessions::Facts {
                cli: view.text("cli"),
                cwd: view.text("cwd"),
                model,
                state_if_new: Some(SessionState::Ended),
                ..Default::default()
            };
            tables.session(event, &facts)?;
            agent::apply_transcript(tables, event, view, model)?;
        }
        // Outcome events carry no session (a claim names its session in the payload), but for
        // a permission decision or expiry, which is in the session that asked (and is a change
        // of its request).
        Parsed::Coordination(view) => {
            tables.session(event, &sessions::Facts::default())?;
            if let Some(row) = permissions::settled_change(event, view) {
                tables.changes(event, row)?;
            }
        }
        Parsed::Replication(_) | Parsed::Other => {
            tables.session(event, &sessions::Facts::default())?
        }
    }
    Ok(effects)
}

/// The projections an event changes in SQL at once, whatever holds the agent rows:
/// coordination (owners, claims, gaps, acknowledgements, permission decisions), permission
/// requests, factory work and dispatches, the
/// accounts other events name, and the `unknownEventType` alert. They read and write no agent table.
pub fn apply_rest(conn: &Connection, event: &StoredEvent, parsed: &Parsed) -> rusqlite::Result<()> {
    match parsed {
        Parsed::Coordination(view) => {
            let kind = event.event_type.as_str();
            if kind.starts_with("owner_") {
                owners::apply(conn, event, view)?;
            } else if kind.starts_with("claim_") {
                claims::apply(conn, event, view)?;
            } else if kind.starts_with("gap_") {
                gaps::apply(conn, event, view)?;
            } else if kind.starts_with("permission_") {
                permissions::apply_outcome(conn, event, view)?;
            } else if kind == "alert_acknowledged"
                && let Some(id) = view.int("alertId")
            {
                alerts::acknowledge(conn, event, id)?;
            }
        }
        Parsed::Factory(parts) => factory::apply(conn, event, parts)?,
        Parsed::Transcript(view) => match event.event_type.as_str() {
            transcript::READ => transcript_files::apply(conn, event, view)?,
            transcript::REFUSED => alerts::transcript_refused(conn, event, view)?,
            _ => usage::apply(conn, event, view)?,
        },
        Parsed::Replication(view) => {
            if event.event_type == catalogue::STREAM_MESSAGE_FLAGGED {
                alerts::stream_message_flagged(conn, event, view)?;
            }
        }
        Parsed::Other => accounts::apply(conn, event)?,
        Parsed::Hook(view) => permissions::apply_hook(conn, event, view)?,
        Parsed::Normalized(_) => {}
    }
    alerts::apply(conn, event)
}

/// What an already stored event did, for answering a re-post of it exactly as the first post
/// was answered: the hero and mission its projection recorded.
pub fn recall(conn: &Connection, event: &StoredEvent) -> rusqlite::Result<Effects> {
    if event.source != Source::Hook.as_str() {
        return Ok(Effects::default());
    }
    // A hook event with a session has its session's hero (`agent::apply`); one without has none.
    let Some(session) = event.session_id.as_deref() else {
        return Ok(Effects::default());
    };
    let mission_id = conn
        .prepare_cached(
            "SELECT m.id FROM agent_changes c JOIN missions m ON m.opened_sequence = c.mission
             WHERE c.sequence = ?1 AND c.answered",
        )?
        .query_row([event.sequence], |r| r.get(0))
        .optional()?;
    Ok(Effects {
        hero_id: Some(heroes::hero_id(session)),
        mission_id,
    })
}

/// Every projection table's rows as text (`table: v1 | v2 | ...`), in primary-key order, and
/// the search index's text rows: two databases whose projections are equal give equal
/// dumps.
pub fn dump(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut out = Vec::new();
    search::dump(conn, &mut out)?;
    for table in TABLES {
        let query = match *table {
            // A shaped change row's shape by its text: its id is the order shapes were first
            // written in, which an upgrade of a pruned log makes again in another order.
            "agent_changes" => "SELECT c.sequence, c.changes, c.answered, s.shape, c.mission
                                FROM agent_changes c LEFT JOIN change_shapes s ON s.id = c.shape
                                ORDER BY 1, 2"
                .to_string(),
            _ => format!("SELECT * FROM {table} ORDER BY 1, 2"),
        };
        let mut statement = conn.prepare_cached(&query)?;
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
pub fn show(value: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) => format!("'{}'", String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => format!("x'{}'", crate::event::id::hex(b)),
    }
}

/// Empties every projection table (a rebuild's first step).
pub fn clear(conn: &Connection) -> rusqlite::Result<()> {
    for table in TABLES {
        conn.prepare_cached(&format!("DELETE FROM {table}"))?
            .execute([])?;
    }
    Ok(())
}

/// How a rebuild runs. Tests vary both: small steps let go of rows and read them back often.
#[derive(Debug, Clone, Copy)]
pub struct Replay {
    /// Events between two writes of the rows held in memory.
    pub events_per_flush: u64,
    /// Read the log and apply the agent projections on a second thread and connection, the
    /// SQL on this one (when the database is a file and that connection sees the same log).
    pub read_beside: bool,
}

impl Default for Replay {
    fn default() -> Replay {
        Replay {
            events_per_flush: tables::FLUSH_EVERY,
            read_beside: true,
        }
    }
}

/// Replays the log's events after `after` into the projections, which hold what the events
/// through `after` built (nothing when `after` is 0), in sequence order, then indexes the
/// retained log for search ([`search::reindex`]). Returns the number of events replayed. Runs
/// inside the caller's transaction; `store::rebuild` is the whole rebuild.
///
/// The agent rows (sessions, heroes, missions, tool uses) are kept in memory for the replay
/// and written in bulk ([`tables::Cached`]); every other projection is written as the events
/// come.
pub fn replay_after(conn: &Connection, after: i64, how: Replay) -> rusqlite::Result<u64> {
    let every = how.events_per_flush.max(1);
    // With nothing restored the agent tables are empty, so a row not in memory is not looked
    // for in SQL.
    let fresh = after == 0;
    let reader = match how.read_beside {
        true => reader_for(conn, after)?,
        false => None,
    };
    let replayed = match reader {
        Some(reader) => replay::beside(conn, reader, after, fresh, every),
        None => replay::inline(conn, after, fresh, every),
    }?;
    search::reindex(conn)?;
    Ok(replayed)
}

/// A second, read-only connection to the database, when it is a file and sees the same log
/// as `conn` (the caller's transaction has not appended or pruned events): the replay then
/// runs on two threads.
fn reader_for(conn: &Connection, after: i64) -> rusqlite::Result<Option<Connection>> {
    let Some(path) = conn.path().filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let Ok(reader) = Connection::open_with_flags(path, flags) else {
        return Ok(None);
    };
    // The log changes only by appends at the head and pruning at the tail, so two views of it
    // with the same first and last sequence hold the same events. (Counting them too cost a
    // scan of the whole table on each connection: 5% of a rebuild.)
    let extent = |c: &Connection| -> rusqlite::Result<(i64, i64)> {
        c.query_row(
            "SELECT COALESCE((SELECT MIN(sequence) FROM events WHERE sequence > ?1), 0),
                    COALESCE((SELECT MAX(sequence) FROM events WHERE sequence > ?1), 0)",
            [after],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    };
    let reader_extent = reader.execute_batch("BEGIN").and_then(|_| extent(&reader));
    Ok(match reader_extent {
        Ok(seen) if seen == extent(conn)? => Some(reader),
        _ => None,
    })
}

mod replay;
