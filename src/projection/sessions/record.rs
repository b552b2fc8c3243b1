//! A session's row ([`Record`]): made by its first event, updated by each later one, loaded
//! and stored in one upsert.

use super::{Compaction, FactoryColumns, Facts, SessionState};
use crate::event::StoredEvent;
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
}

/// The columns of a [`Record`], of `sessions s`.
pub(super) const RECORD_COLUMNS: &str =
    "s.id, s.source, s.cli, s.cwd, s.pane_id, s.tty, s.transcript_path,
     s.model, s.permission_mode, s.state, s.stuck_reason, s.stuck_message, s.stuck_since,
     s.first_sequence, s.last_sequence, s.event_count, s.first_event_time, s.last_event_time,
     s.ended_at, s.factory_status, s.result_status, s.run_requested_at, s.started_at,
     s.paused_at, s.resumed_at, s.completed_at, s.run_responded_at, s.source_app, s.compactions,
     s.last_compact_at, s.origin";

/// Columns read after [`RECORD_COLUMNS`] start here.
pub(super) const AFTER_RECORD: usize = 31;

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
        };
        if let Some(change) = &facts.factory {
            record.factory.apply(change);
        }
        record.compact(at, facts.compaction);
        record
    }

    /// What a later event of the session changes. Leaving `stuck` clears the stuck fields;
    /// staying stuck keeps when it began. `ended_at` is set on `ended` and cleared when the
    /// session comes back.
    pub fn update(&mut self, event: &StoredEvent, facts: &Facts) {
        let at = &event.event_time;
        let keep = |given: Option<&str>, field: &mut Option<String>| {
            if let Some(given) = given {
                *field = Some(given.to_string());
            }
        };
        if let Some(cli) = facts.cli {
            self.cli = Some(cli.to_string());
        } else if self.cli.is_none() {
            self.cli = owned(facts.cli_default);
        }
        keep(facts.cwd, &mut self.cwd);
        keep(facts.pane_id, &mut self.pane_id);
        keep(facts.tty, &mut self.tty);
        keep(facts.transcript_path, &mut self.transcript_path);
        keep(facts.model, &mut self.model);
        keep(facts.permission_mode, &mut self.permission_mode);
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
            "SELECT {RECORD_COLUMNS} FROM sessions s WHERE s.id = ?1"
        ))?
        .query_row([id], record)
        .optional()
    }

    /// Writes the row: a new one (`stored` false) is inserted; a stored one has its columns
    /// set.
    pub fn store(&self, conn: &Connection, stored: bool) -> rusqlite::Result<()> {
        let sql = if stored {
            "UPDATE sessions SET cli = ?3, cwd = ?4, pane_id = ?5, tty = ?6,
                 transcript_path = ?7, model = ?8, permission_mode = ?9, state = ?10,
                 stuck_reason = ?11, stuck_message = ?12, stuck_since = ?13,
                 last_sequence = ?15, event_count = ?16, last_event_time = ?18, ended_at = ?19,
                 factory_status = ?20, result_status = ?21, run_requested_at = ?22,
                 started_at = ?23, paused_at = ?24, resumed_at = ?25, completed_at = ?26,
                 run_responded_at = ?27, source_app = ?28, compactions = ?29,
                 last_compact_at = ?30
             WHERE id = ?1 AND source = ?2 AND first_sequence = ?14 AND first_event_time = ?17
               AND origin = ?31"
        } else {
            "INSERT INTO sessions (id, source, cli, cwd, pane_id, tty, transcript_path, model,
                 permission_mode, state, stuck_reason, stuck_message, stuck_since,
                 first_sequence, last_sequence, event_count, first_event_time, last_event_time,
                 ended_at, factory_status, result_status, run_requested_at, started_at,
                 paused_at, resumed_at, completed_at, run_responded_at, source_app, compactions,
                 last_compact_at, origin)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)"
        };
        let changed = conn.prepare_cached(sql)?.execute(params![
            self.id,
            self.source,
            self.cli,
            self.cwd,
            self.pane_id,
            self.tty,
            self.transcript_path,
            self.model,
            self.permission_mode,
            self.state,
            self.stuck_reason,
            self.stuck_message,
            self.stuck_since,
            self.first_sequence,
            self.last_sequence,
            self.event_count,
            self.first_event_time,
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
        ])?;
        if changed != 1 {
            // The stored row is not the one this record was read from: a bug, never data.
            return Err(rusqlite::Error::StatementChangedRows(changed));
        }
        Ok(())
    }
}

/// The session's row after this event (`None` when the event names no session).
pub fn next(current: Option<Record>, event: &StoredEvent, facts: &Facts) -> Option<Record> {
    let session = event.session_id.as_deref()?;
    Some(match current {
        Some(mut row) => {
            row.update(event, facts);
            row
        }
        None => Record::new(session, event, facts),
    })
}

pub fn apply(conn: &Connection, event: &StoredEvent, facts: &Facts) -> rusqlite::Result<()> {
    let Some(session) = &event.session_id else {
        return Ok(());
    };
    let stored = Record::load(conn, session)?;
    let known = stored.is_some();
    if let Some(record) = next(stored, event, facts) {
        record.store(conn, known)?;
    }
    Ok(())
}
