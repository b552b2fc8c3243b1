//! A session's row ([`Record`]): made by its first event, updated by each later one, loaded
//! and stored in one upsert.

use super::{Compaction, FactoryColumns, Facts, SessionState};
use crate::event::StoredEvent;
use crate::projection::heroes::Progress;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

/// A `sessions` row, as events change it through [`Facts`] (and, with its hero, as the REST
/// routes return it: [`Session`](super::Session)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub id: String,
    pub source: String,
    pub cli: Option<String>,
    pub cwd: Option<String>,
    pub pane_id: Option<String>,
    pub tty: Option<String>,
    pub transcript_path: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub state: SessionState,
    pub stuck_reason: Option<String>,
    pub stuck_message: Option<String>,
    pub stuck_since: Option<String>,
    pub first_sequence: i64,
    pub last_sequence: i64,
    pub event_count: i64,
    pub first_event_time: String,
    pub last_event_time: String,
    pub ended_at: Option<String>,
    pub source_app: Option<String>,
    /// How many compactions began (`PreCompact` events).
    pub compactions: i64,
    /// When the last compaction began or ended.
    pub last_compact_at: Option<String>,
    /// The hooklog that stored its first event (the event's `origin`).
    pub origin: String,
    /// Shown by `GET /factory-sessions/{id}`, not by `GET /sessions`.
    #[serde(skip)]
    pub factory: FactoryColumns,
    /// Its hero's progress (`None` without a hero), set by the hero projection: shown with
    /// the hero (`GET /heroes`), not by `GET /sessions`.
    #[serde(skip)]
    pub hero: Option<Progress>,
}

/// The columns of a [`Record`], of `sessions s` and `session_details d` ([`RECORD_FROM`]).
pub(super) const RECORD_COLUMNS: &str =
    "s.id, s.source, d.cli, d.cwd, d.pane_id, d.tty, d.transcript_path,
     d.model, d.permission_mode, s.state, s.stuck_reason, s.stuck_message, s.stuck_since,
     s.first_sequence, s.last_sequence, s.event_count, d.first_event_time, s.last_event_time,
     s.ended_at, s.factory_status, s.result_status, s.run_requested_at, s.started_at,
     s.paused_at, s.resumed_at, s.completed_at, s.run_responded_at, s.source_app, s.compactions,
     s.last_compact_at, s.origin, s.hero_state, s.hero_mission,
     (SELECT id FROM missions WHERE opened_sequence = s.hero_mission), s.hero_mission_count";

/// The tables [`RECORD_COLUMNS`] are read from: a session's row and its details, one each.
pub(super) const RECORD_FROM: &str = "sessions s JOIN session_details d ON d.session_id = s.id";

/// Columns read after [`RECORD_COLUMNS`] start here.
pub(super) const AFTER_RECORD: usize = 35;

pub(super) fn record(r: &Row<'_>) -> rusqlite::Result<Record> {
    Ok(Record {
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
        factory: FactoryColumns {
            factory_status: r.get(19)?,
            result_status: r.get(20)?,
            run_requested_at: r.get(21)?,
            started_at: r.get(22)?,
            paused_at: r.get(23)?,
            resumed_at: r.get(24)?,
            completed_at: r.get(25)?,
            run_responded_at: r.get(26)?,
        },
        source_app: r.get(27)?,
        compactions: r.get(28)?,
        last_compact_at: r.get(29)?,
        origin: r.get(30)?,
        hero: match r.get(31)? {
            Some(state) => Some(Progress {
                state,
                active_mission_sequence: r.get(32)?,
                active_mission_id: r.get(33)?,
                mission_count: r.get(34)?,
            }),
            None => None,
        },
    })
}

fn owned(text: Option<&str>) -> Option<String> {
    text.map(str::to_string)
}

impl Record {
    /// The row a session's first event makes (a new session is `active` unless it says more).
    pub fn new(session: &str, event: &StoredEvent, facts: &Facts) -> Record {
        let at = &event.event_time;
        let state = facts
            .state
            .or(facts.state_if_new)
            .unwrap_or(SessionState::Active);
        let mut record = Record {
            id: session.to_string(),
            source: event.source.clone(),
            cli: owned(facts.cli.or(facts.cli_default)),
            cwd: owned(facts.cwd),
            pane_id: owned(facts.pane_id),
            tty: owned(facts.tty),
            transcript_path: owned(facts.transcript_path),
            model: owned(facts.model),
            permission_mode: owned(facts.permission_mode),
            state,
            stuck_reason: owned(facts.stuck.map(|s| s.0)),
            stuck_message: owned(facts.stuck.map(|s| s.1)),
            stuck_since: (state == SessionState::Stuck).then(|| at.clone()),
            first_sequence: event.sequence,
            last_sequence: event.sequence,
            event_count: 1,
            first_event_time: at.clone(),
            last_event_time: at.clone(),
            ended_at: (state == SessionState::Ended).then(|| at.clone()),
            source_app: owned(facts.source_app),
            compactions: 0,
            last_compact_at: None,
            origin: event.origin.clone(),
            factory: FactoryColumns::default(),
            hero: None,
        };
        if let Some(change) = &facts.factory {
            record.factory.apply(change);
        }
        record.compact(at, facts.compaction);
        record
    }

    /// What a later event of the session changes, and whether that includes its details
    /// (the columns of `session_details`). Leaving `stuck` clears the stuck fields; staying
    /// stuck keeps when it began. `ended_at` is set on `ended` and cleared when the session
    /// comes back.
    pub fn update(&mut self, event: &StoredEvent, facts: &Facts) -> bool {
        let at = &event.event_time;
        // Whether the field took a new value.
        let keep = |given: Option<&str>, field: &mut Option<String>| match given {
            Some(given) if field.as_deref() != Some(given) => {
                *field = Some(given.to_string());
                true
            }
            _ => false,
        };
        let cli = match facts.cli {
            Some(_) => keep(facts.cli, &mut self.cli),
            None if self.cli.is_none() => keep(facts.cli_default, &mut self.cli),
            None => false,
        };
        let details = [
            cli,
            keep(facts.cwd, &mut self.cwd),
            keep(facts.pane_id, &mut self.pane_id),
            keep(facts.tty, &mut self.tty),
            keep(facts.transcript_path, &mut self.transcript_path),
            keep(facts.model, &mut self.model),
            keep(facts.permission_mode, &mut self.permission_mode),
        ]
        .contains(&true);
        keep(facts.source_app, &mut self.source_app);
        self.compact(at, facts.compaction);
        if let Some(state) = facts.state {
            let stuck = state == SessionState::Stuck;
            self.stuck_reason = owned(facts.stuck.map(|s| s.0).filter(|_| stuck));
            self.stuck_message = owned(facts.stuck.map(|s| s.1).filter(|_| stuck));
            self.stuck_since = match (stuck, self.state == SessionState::Stuck) {
                (false, _) => None,
                (true, true) => self.stuck_since.take().or_else(|| Some(at.clone())),
                (true, false) => Some(at.clone()),
            };
            self.ended_at = match state {
                SessionState::Ended => self.ended_at.take().or_else(|| Some(at.clone())),
                _ => None,
            };
            self.state = state;
        }
        self.last_sequence = event.sequence;
        self.event_count += 1;
        self.last_event_time = at.clone();
        if let Some(change) = &facts.factory {
            self.factory.apply(change);
        }
        details
    }

    fn compact(&mut self, at: &str, compaction: Option<Compaction>) {
        if let Some(moment) = compaction {
            if moment == Compaction::Began {
                self.compactions += 1;
            }
            self.last_compact_at = Some(at.to_string());
        }
    }

    pub fn load(conn: &Connection, id: &str) -> rusqlite::Result<Option<Record>> {
        conn.prepare_cached(&format!(
            "SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE s.id = ?1"
        ))?
        .query_row([id], record)
        .optional()
    }

    /// Writes the row: a new one (`stored` false) is inserted; a stored one has its columns
    /// set. Its details (`session_details`) are written with a new row, and with a stored one
    /// when `details` says they may have changed since (then only if one did: the events that
    /// change none of them leave that page alone).
    pub fn store(&self, conn: &Connection, stored: bool, details: bool) -> rusqlite::Result<()> {
        let sql = if stored {
            "UPDATE sessions SET state = ?3, stuck_reason = ?4, stuck_message = ?5,
                 stuck_since = ?6, last_sequence = ?8, event_count = ?9, last_event_time = ?10,
                 ended_at = ?11, factory_status = ?12, result_status = ?13,
                 run_requested_at = ?14, started_at = ?15, paused_at = ?16, resumed_at = ?17,
                 completed_at = ?18, run_responded_at = ?19, source_app = ?20,
                 compactions = ?21, last_compact_at = ?22, hero_state = ?24,
                 hero_mission = ?25, hero_mission_count = ?26
             WHERE id = ?1 AND source = ?2 AND first_sequence = ?7 AND origin = ?23"
        } else {
            "INSERT INTO sessions (id, source, state, stuck_reason, stuck_message, stuck_since,
                 first_sequence, last_sequence, event_count, last_event_time, ended_at,
                 factory_status, result_status, run_requested_at, started_at, paused_at,
                 resumed_at, completed_at, run_responded_at, source_app, compactions,
                 last_compact_at, origin, hero_state, hero_mission, hero_mission_count)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)"
        };
        let changed = conn.prepare_cached(sql)?.execute(params![
            self.id,
            self.source,
            self.state,
            self.stuck_reason,
            self.stuck_message,
            self.stuck_since,
            self.first_sequence,
            self.last_sequence,
            self.event_count,
            self.last_event_time,
            self.ended_at,
            self.factory.factory_status,
            self.factory.result_status,
            self.factory.run_requested_at,
            self.factory.started_at,
            self.factory.paused_at,
            self.factory.resumed_at,
            self.factory.completed_at,
            self.factory.run_responded_at,
            self.source_app,
            self.compactions,
            self.last_compact_at,
            self.origin,
            self.hero.as_ref().map(|h| h.state),
            self.hero.as_ref().and_then(|h| h.active_mission_sequence),
            self.hero.as_ref().map(|h| h.mission_count),
        ])?;
        if changed != 1 {
            // The stored row is not the one this record was read from: a bug, never data.
            return Err(rusqlite::Error::StatementChangedRows(changed));
        }
        if stored && !details {
            return Ok(());
        }
        conn.prepare_cached(
            "INSERT INTO session_details (session_id, first_event_time, cli, cwd, pane_id, tty,
                 transcript_path, model, permission_mode)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (session_id) DO UPDATE SET cli = ?3, cwd = ?4, pane_id = ?5,
                 tty = ?6, transcript_path = ?7, model = ?8, permission_mode = ?9
             WHERE cli IS NOT ?3 OR cwd IS NOT ?4 OR pane_id IS NOT ?5 OR tty IS NOT ?6
                OR transcript_path IS NOT ?7 OR model IS NOT ?8 OR permission_mode IS NOT ?9",
        )?
        .execute(params![
            self.id,
            self.first_event_time,
            self.cli,
            self.cwd,
            self.pane_id,
            self.tty,
            self.transcript_path,
            self.model,
            self.permission_mode,
        ])?;
        Ok(())
    }
}

/// The session's row after this event (`None` when the event names no session), and whether
/// its details changed (always, for a new row).
pub fn next(current: Option<Record>, event: &StoredEvent, facts: &Facts) -> Option<(Record, bool)> {
    let session = event.session_id.as_deref()?;
    Some(match current {
        Some(mut row) => {
            let details = row.update(event, facts);
            (row, details)
        }
        None => (Record::new(session, event, facts), true),
    })
}

pub fn apply(conn: &Connection, event: &StoredEvent, facts: &Facts) -> rusqlite::Result<()> {
    let Some(session) = &event.session_id else {
        return Ok(());
    };
    let stored = Record::load(conn, session)?;
    let known = stored.is_some();
    if let Some((record, details)) = next(stored, event, facts) {
        record.store(conn, known, details)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(sequence: i64) -> StoredEvent {
        StoredEvent {
            sequence,
            event_id: format!("e{sequence}"),
            session_id: Some("s".into()),
            session_sequence: Some(sequence),
            event_type: "PreToolUse".into(),
            source: "hook".into(),
            event_time: format!("2026-12-07T15:00:0{sequence}Z"),
            received_at: "2026-12-07T15:00:00Z".into(),
            origin: "here".into(),
            payload: "{}".into(),
        }
    }

    /// A stored session's details are written only when one of them changes: an event that
    /// only counts leaves `session_details` alone (no row changed), one with a new `cwd`
    /// rewrites it, and the session reads back whole either way.
    #[test]
    fn details_are_written_only_when_they_change() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let facts = Facts {
            cli: Some("claude-code"),
            cwd: Some("/w"),
            transcript_path: Some("/w/s.jsonl"),
            ..Facts::default()
        };
        let mut record = Record::new("s", &event(1), &facts);
        record.store(&conn, false, true).unwrap();
        let rows = |conn: &Connection| conn.total_changes();
        let before = rows(&conn);
        let details = record.update(&event(2), &facts);
        assert!(!details, "the same details again");
        record.store(&conn, true, details).unwrap();
        assert_eq!(rows(&conn) - before, 1, "the session's row alone");
        // Told they may have changed, it looks, and writes nothing when none did.
        let before = rows(&conn);
        record.store(&conn, true, true).unwrap();
        assert_eq!(rows(&conn) - before, 1, "the session's row alone");
        let moved = Facts {
            cwd: Some("/elsewhere"),
            ..Facts::default()
        };
        let before = rows(&conn);
        let details = record.update(&event(3), &moved);
        assert!(details, "a new cwd");
        record.store(&conn, true, details).unwrap();
        assert_eq!(rows(&conn) - before, 2, "the row and its details");
        let loaded = Record::load(&conn, "s").unwrap().unwrap();
        assert_eq!(loaded, record);
        assert_eq!(loaded.cwd.as_deref(), Some("/elsewhere"));
        assert_eq!(loaded.transcript_path.as_deref(), Some("/w/s.jsonl"));
        assert_eq!(loaded.first_event_time, "2026-12-07T15:00:01Z");
        assert_eq!(loaded.event_count, 3);
    }
}
