//! [`Live`]: the [`Tables`] as the SQL tables themselves, read and written at once (the
//! writer's), optionally with its session rows and call index held in memory.

use super::{Calls, Known, Result, SessionRows, Tables};
use crate::event::StoredEvent;
use crate::projection::alerts;
use crate::projection::changes::{self, ChangeRow};
use crate::projection::heroes::{self, Hero};
use crate::projection::missions::{self, Mission};
use crate::projection::sessions::{self, Facts, Record};
use crate::projection::tool_uses::{self, ToolUse};
use rusqlite::Connection;
use serde_json::Value;
use std::cell::RefCell;

/// The SQL tables themselves; with [`Live::holding`], all but the session rows, and with the
/// sessions' calls, heroes and change rows' keys held in memory.
pub struct Live<'c> {
    conn: &'c Connection,
    sessions: Option<&'c RefCell<SessionRows>>,
    calls: Option<&'c RefCell<Calls>>,
    known: Option<&'c RefCell<Known>>,
}

impl<'c> Live<'c> {
    pub fn new(conn: &'c Connection) -> Live<'c> {
        Live {
            conn,
            sessions: None,
            calls: None,
            known: None,
        }
    }

    /// The SQL tables, but the session rows are changed in `sessions` (the writer's), which
    /// the caller writes with [`SessionRows::flush`] before anything reads `sessions` through
    /// SQL; calls are found through `calls`, and heroes and change rows' keys through `known`
    /// (the writer's).
    pub fn holding(
        conn: &'c Connection,
        sessions: &'c RefCell<SessionRows>,
        calls: &'c RefCell<Calls>,
        known: &'c RefCell<Known>,
    ) -> Live<'c> {
        Live {
            conn,
            sessions: Some(sessions),
            calls: Some(calls),
            known: Some(known),
        }
    }
}

impl Tables for Live<'_> {
    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()> {
        alerts::raise(self.conn, kind, event, message, details)
    }

    fn session(&self, event: &StoredEvent, facts: &Facts) -> Result<()> {
        match self.sessions {
            Some(rows) => rows
                .borrow_mut()
                .apply(|id| Record::load(self.conn, id), event, facts),
            None => sessions::apply(self.conn, event, facts),
        }
    }

    fn session_model(&self, session: &str) -> Result<Option<String>> {
        if let Some(rows) = self.sessions
            && let Some(record) = rows.borrow().get(session)
        {
            return Ok(record.model.clone());
        }
        Ok(Record::load(self.conn, session)?.and_then(|r| r.model))
    }

    fn hero(&self, session: &str) -> Result<Option<Hero>> {
        let (Some(known), Some(rows)) = (self.known, self.sessions) else {
            return heroes::by_session(self.conn, session);
        };
        // Its progress is its session row's, held (the event's session row is) and maybe
        // changed since SQL had it; a row without one has no hero.
        let rows = rows.borrow();
        let Some(record) = rows.get(session) else {
            return heroes::by_session(self.conn, session);
        };
        match &record.hero {
            Some(progress) => known.borrow_mut().hero(self.conn, session, progress),
            None => Ok(None),
        }
    }

    fn save_hero(&self, hero: Hero) -> Result<()> {
        let (Some(known), Some(rows)) = (self.known, self.sessions) else {
            return heroes::save(self.conn, &hero);
        };
        // Its row only when what it says changed (SQL has what `known` holds); its progress
        // with its session's row.
        let mut known = known.borrow_mut();
        if !known.holds_said(&hero) {
            heroes::save_said_with(&mut heroes::saving(self.conn)?, &hero)?;
        }
        let load = |id: &str| Record::load(self.conn, id);
        rows.borrow_mut()
            .set_hero(load, &hero.session_id, hero.progress())?;
        known.saved_hero(hero);
        Ok(())
    }

    fn mission(&self, session: &str, id: &str) -> Result<Option<Mission>> {
        Ok(missions::get(self.conn, id)?.filter(|m| m.session_id == session))
    }

    fn save_mission(&self, mission: Mission) -> Result<()> {
        missions::save(self.conn, &mission)
    }

    fn active_subagent(&self, session: &str, subagent: &str) -> Result<Option<Mission>> {
        missions::active_subagent(self.conn, session, subagent)
    }

    fn active_children(&self, session: &str, parent: &str) -> Result<Vec<Mission>> {
        missions::active_children(self.conn, session, parent)
    }

    fn tool_by_call(&self, session: &str, call: &str) -> Result<Option<ToolUse>> {
        let Some(calls) = self.calls else {
            return tool_uses::by_call(self.conn, session, call);
        };
        match calls.borrow_mut().find(self.conn, session, call)? {
            Some(opened) => tool_uses::at(self.conn, opened),
            None => Ok(None),
        }
    }

    fn running_spawner(&self, session: &str) -> Result<Option<ToolUse>> {
        tool_uses::running_spawner(self.conn, session)
    }

    fn running_tools(&self, session: &str) -> Result<Vec<ToolUse>> {
        tool_uses::running_of(self.conn, session)
    }

    fn save_tool(&self, tool: ToolUse) -> Result<()> {
        tool_uses::save(self.conn, &tool)?;
        if let Some(calls) = self.calls {
            calls.borrow_mut().saved(&tool);
        }
        Ok(())
    }

    fn changes(&self, event: &StoredEvent, row: ChangeRow) -> Result<()> {
        let row = row.compacted(event);
        match self.known {
            Some(known) => changes::save_with(self.conn, &row, known.borrow_mut().keys()),
            None => changes::save(self.conn, &row),
        }
    }
}
