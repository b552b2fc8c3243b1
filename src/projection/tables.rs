//! Where the session, hero, mission and tool-use projections keep their rows while events are
//! applied. The projection logic (`sessions`, `hook`) is written once, against [`Tables`]:
//!
//! - [`Live`] reads and writes the SQL tables at once: the writer uses it, so every event's
//!   changes are in its own transaction.
//! - [`Cached`] keeps the rows a replay is working on in memory and writes them at the end
//!   (and every [`FLUSH_EVERY`] events): `hooklog rebuild` uses it, because one SQL
//!   write costs 4-8 µs and a hook event makes three to six of them. What it does not hold
//!   it reads through a [`Backing`]: the connection itself, or (for a rebuild that keeps the
//!   rows on one thread and the connection on another) a request to the connection's thread.
//!
//! Both answer every question exactly as the SQL tables would at that point of the log; the
//! live-equals-rebuild tests compare the two on every fixture and on a large mixed log.

use super::Effects;
use super::alerts;
use super::changes::{self, ChangeRow};
use super::heroes::{self, Hero};
use super::missions::{self, Mission};
use super::sessions::{self, Facts, Record};
use super::sql;
use super::tool_uses::{self, ToolUse};
use crate::event::StoredEvent;
use foldhash::{HashMap, HashSet};
use rusqlite::{Connection, params};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::hash_map::Entry;

pub type Result<T> = rusqlite::Result<T>;

/// The rows the agent projections read and write. Every lookup is within one session.
pub trait Tables {
    /// Records an alert this event raised, after every alert of the events before it.
    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()>;
    /// Updates (or makes) the event's session row with what the event says.
    fn session(&self, event: &StoredEvent, facts: &Facts) -> Result<()>;
    fn hero(&self, session: &str) -> Result<Option<Hero>>;
    fn save_hero(&self, hero: Hero) -> Result<()>;
    /// A mission of this session by id (`None` for another session's).
    fn mission(&self, session: &str, id: &str) -> Result<Option<Mission>>;
    fn save_mission(&self, mission: Mission) -> Result<()>;
    /// The latest active subagent mission of the session for a subagent id.
    fn active_subagent(&self, session: &str, subagent: &str) -> Result<Option<Mission>>;
    /// The still-active children of a mission of the session, in the order they opened.
    fn active_children(&self, session: &str, parent: &str) -> Result<Vec<Mission>>;
    /// The session's tool call (not permission request) with this tool use id.
    fn tool_by_call(&self, session: &str, call: &str) -> Result<Option<ToolUse>>;
    /// The latest running subagent-spawning call of the session.
    fn running_spawner(&self, session: &str) -> Result<Option<ToolUse>>;
    /// Every running tool use of the session, in the order they started.
    fn running_tools(&self, session: &str) -> Result<Vec<ToolUse>>;
    fn save_tool(&self, tool: ToolUse) -> Result<()>;
    /// Records the mission a hook event answered with (`hook_effects`, by its sequence).
    fn effects(&self, sequence: i64, effects: &Effects) -> Result<()>;
    /// Records what a hook event changed in the agent rows (`agent_changes`).
    fn changes(&self, row: ChangeRow) -> Result<()>;
}

/// The SQL tables themselves; with [`Live::holding`], all but the session rows, and with the
/// sessions' calls held in memory.
pub struct Live<'c> {
    conn: &'c Connection,
    sessions: Option<&'c RefCell<SessionRows>>,
    calls: Option<&'c RefCell<Calls>>,
}

impl<'c> Live<'c> {
    pub fn new(conn: &'c Connection) -> Live<'c> {
        Live {
            conn,
            sessions: None,
            calls: None,
        }
    }

    /// The SQL tables, but the session rows are changed in `sessions` (the writer's), which
    /// the caller writes with [`SessionRows::flush`] before anything reads `sessions` through
    /// SQL; and calls are found through `calls` (the writer's).
    pub fn holding(
        conn: &'c Connection,
        sessions: &'c RefCell<SessionRows>,
        calls: &'c RefCell<Calls>,
    ) -> Live<'c> {
        Live {
            conn,
            sessions: Some(sessions),
            calls: Some(calls),
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

    fn hero(&self, session: &str) -> Result<Option<Hero>> {
        heroes::by_session(self.conn, session)
    }

    fn save_hero(&self, hero: Hero) -> Result<()> {
        heroes::save(self.conn, &hero)
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
            Some(id) => tool_uses::get(self.conn, &id),
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

    fn effects(&self, sequence: i64, effects: &Effects) -> Result<()> {
        match &effects.mission_id {
            Some(mission) => save_effects(self.conn, sequence, mission),
            None => Ok(()),
        }
    }

    fn changes(&self, row: ChangeRow) -> Result<()> {
        changes::save(self.conn, &row)
    }
}

const SAVE_EFFECTS: &str =
    "INSERT OR REPLACE INTO hook_effects (sequence, mission_id) VALUES (?1, ?2)";

fn save_effects(conn: &Connection, sequence: i64, mission: &str) -> Result<()> {
    sql::prepare(conn, SAVE_EFFECTS)?.execute(params![sequence, mission])?;
    Ok(())
}

/// Session rows held in memory while events change them, and written by
/// [`SessionRows::flush`]. The writer holds the rows its batches change here, written once
/// per batch (a batch of 2,000 events over 50 sessions would otherwise read and rewrite each
/// row 40 times) and kept between batches while no other connection commits; it can undo one
/// request's changes when that request's savepoint is rolled back. A rebuild holds them
/// between its flushes.
#[derive(Default)]
pub struct SessionRows {
    rows: HashMap<String, SessionRow>,
    /// The sessions whose row became changed since the last write (a write looks at these
    /// only; a rebuild holds every session's row).
    changed: Vec<String>,
    /// While a request is open: each row it changed, as it was before (`None`: not held).
    undo: Option<Vec<(String, Option<SessionRow>)>>,
    /// The open (or last) request, counted from 1.
    request: u64,
}

#[derive(Clone)]
struct SessionRow {
    record: Record,
    /// Whether SQL has a row for this session (then a flush updates it, else inserts it).
    stored: bool,
    /// Whether SQL's row differs from `record`.
    dirty: bool,
    /// The last request that saved this row's earlier state in `undo`.
    saved_for: u64,
}

impl SessionRows {
    /// Updates (or makes) the event's session row with what the event says; `load` reads a
    /// row that is not held from SQL.
    pub fn apply(
        &mut self,
        load: impl FnOnce(&str) -> Result<Option<Record>>,
        event: &StoredEvent,
        facts: &Facts,
    ) -> Result<()> {
        let Some(session) = event.session_id.as_deref() else {
            return Ok(());
        };
        if let Some(row) = self.rows.get_mut(session) {
            if let Some(undo) = &mut self.undo
                && row.saved_for != self.request
            {
                undo.push((session.to_string(), Some(row.clone())));
                row.saved_for = self.request;
            }
            row.record.update(event, facts);
            if !row.dirty {
                row.dirty = true;
                self.changed.push(session.to_string());
            }
            return Ok(());
        }
        let stored = load(session)?;
        let known = stored.is_some();
        let record = sessions::next(stored, event, facts).expect("the event has a session");
        if let Some(undo) = &mut self.undo {
            undo.push((session.to_string(), None));
        }
        let row = SessionRow {
            record,
            stored: known,
            dirty: true,
            saved_for: self.request,
        };
        self.rows.insert(session.to_string(), row);
        self.changed.push(session.to_string());
        Ok(())
    }

    /// A request starts: what it changes can be undone until [`SessionRows::keep_request`].
    pub fn begin_request(&mut self) {
        self.request += 1;
        self.undo = Some(Vec::new());
    }

    /// The open request's changes stay.
    pub fn keep_request(&mut self) {
        self.undo = None;
    }

    /// The open request's changes are undone (its savepoint was rolled back).
    pub fn undo_request(&mut self) {
        for (session, before) in self.undo.take().into_iter().flatten().rev() {
            match before {
                Some(row) => self.rows.insert(session, row),
                None => self.rows.remove(&session),
            };
        }
    }

    /// Writes every changed row to SQL; the rows stay held. After a failure some rows are
    /// marked written and some not, so the caller must abandon the transaction and
    /// [`SessionRows::clear`] them (the writer then runs the batch again without holding rows).
    pub fn flush(&mut self, conn: &Connection) -> Result<()> {
        self.take_changed(|row| row.record.store(conn, row.stored))
    }

    /// The changed rows, each with whether SQL has a row for its session, marked written.
    fn changed(&mut self) -> Vec<(Record, bool)> {
        let mut rows = Vec::with_capacity(self.changed.len());
        self.take_changed(|row| {
            rows.push((row.record.clone(), row.stored));
            Ok(())
        })
        .expect("collecting cannot fail");
        rows
    }

    /// Hands each changed row to `write`, then marks it written.
    fn take_changed(&mut self, mut write: impl FnMut(&SessionRow) -> Result<()>) -> Result<()> {
        for session in std::mem::take(&mut self.changed) {
            // A row undone since it changed may be gone, or as SQL has it.
            if let Some(row) = self.rows.get_mut(&session).filter(|row| row.dirty) {
                write(row)?;
                row.stored = true;
                row.dirty = false;
            }
        }
        Ok(())
    }

    /// How many rows are held.
    pub fn held(&self) -> usize {
        self.rows.len()
    }

    /// Lets go of every row (after a flush, or when the transaction that changed them is
    /// gone).
    pub fn clear(&mut self) {
        self.rows.clear();
        self.changed.clear();
        self.undo = None;
    }
}

/// The writer's index of tool calls, in place of one in SQL: for each session it has read, the
/// row id of the latest call (not permission request) with each tool use id. A session is
/// read from SQL the first time it is asked about (through `tool_uses_by_session`), and kept
/// while the writer's view of the file holds (the writer lets go of every session when a
/// request is undone, a batch fails, or another connection commits). An index in SQL keyed by
/// session and call id dirtied a page of its own for nearly every `PreToolUse` when many
/// sessions write at once.
#[derive(Default)]
pub struct Calls {
    sessions: HashMap<String, HashMap<String, String>>,
}

impl Calls {
    /// The row id of the session's latest call with this tool use id.
    fn find(&mut self, conn: &Connection, session: &str, call: &str) -> Result<Option<String>> {
        let calls = match self.sessions.entry(session.to_string()) {
            Entry::Occupied(held) => held.into_mut(),
            Entry::Vacant(slot) => slot.insert(tool_uses::calls_of(conn, session)?),
        };
        Ok(calls.get(call).cloned())
    }

    /// A tool use was saved: a call of a session held becomes its id's latest.
    fn saved(&mut self, tool: &ToolUse) {
        if tool.kind == "permission" {
            return;
        }
        if let (Some(call), Some(calls)) =
            (&tool.tool_use_id, self.sessions.get_mut(&tool.session_id))
        {
            calls.insert(call.clone(), tool.id.clone());
        }
    }

    /// The calls held for a session, `None` when it is not held.
    pub fn of(&self, session: &str) -> Option<&HashMap<String, String>> {
        self.sessions.get(session)
    }

    /// How many sessions are held.
    pub fn held(&self) -> usize {
        self.sessions.len()
    }

    pub fn clear(&mut self) {
        self.sessions.clear();
    }
}

/// A row held in memory, and whether SQL has it as it is.
struct Slot<T> {
    row: T,
    dirty: bool,
}

impl<T> Slot<T> {
    fn clean(row: T) -> Slot<T> {
        Slot { row, dirty: false }
    }
}

/// One session's agent rows in memory. Every active mission and running tool use of the
/// session is here, so the set questions (children, running tools, active subagents) are
/// answered from memory alone, and so is every call id the replay has seen. A row looked up by
/// id that is not here is read from SQL when SQL can have it: when the session had rows before
/// the replay (`backed`, a retention snapshot), or missions were let go of (`evicted`).
#[derive(Default)]
struct Shard {
    hero: Option<Slot<Hero>>,
    missions: HashMap<String, Slot<Mission>>,
    active: HashSet<String>,
    tools: HashMap<String, Slot<ToolUse>>,
    /// Tool use id of a call -> its row id (permission requests excluded), kept across
    /// evictions.
    calls: HashMap<String, String>,
    running: HashSet<String>,
    /// Ids of the missions and tool uses put in memory or changed since the last take (a
    /// take looks at these only, not at every open row).
    touched_missions: Vec<String>,
    touched_tools: Vec<String>,
    /// Whether the shard is in [`Memory::touched`].
    listed: bool,
    backed: bool,
    evicted: bool,
}

impl Shard {
    fn load(conn: &Connection, session: &str) -> Result<Shard> {
        let mut shard = Shard {
            hero: heroes::by_session(conn, session)?.map(Slot::clean),
            ..Shard::default()
        };
        // Missions and tool uses are only made with a hero: without one SQL has none.
        shard.backed = shard.hero.is_some();
        if shard.backed {
            for mission in missions::active_of(conn, session)? {
                shard.keep_mission(mission, false);
            }
            for tool in tool_uses::running_of(conn, session)? {
                shard.keep_tool(tool, false);
            }
        }
        Ok(shard)
    }

    fn keep_mission(&mut self, mission: Mission, dirty: bool) {
        let id = mission.id.clone();
        list(&mut self.active, &id, mission.state == "active");
        self.touched_missions.push(id.clone());
        keep(&mut self.missions, id, mission, dirty);
    }

    fn keep_tool(&mut self, tool: ToolUse, dirty: bool) {
        let id = tool.id.clone();
        if tool.kind != "permission"
            && let Some(call) = &tool.tool_use_id
        {
            self.calls.insert(call.clone(), id.clone());
        }
        list(&mut self.running, &id, tool.status == "running");
        self.touched_tools.push(id.clone());
        keep(&mut self.tools, id, tool, dirty);
    }

    /// The latest (highest `opened_sequence`) of some listed rows that pass a test.
    fn latest<'a, T>(
        ids: &HashSet<String>,
        rows: &'a HashMap<String, Slot<T>>,
        test: impl Fn(&T) -> bool,
        order: impl Fn(&T) -> i64,
    ) -> Option<&'a T> {
        ids.iter()
            .filter_map(|id| rows.get(id).map(|s| &s.row))
            .filter(|row| test(row))
            .max_by_key(|row| order(row))
    }

    /// Takes the changed rows out for writing: closed missions and finished tool uses leave
    /// memory (changed or not: they are read back from SQL if asked for), open ones are copied
    /// and stay.
    fn take(&mut self, changes: &mut Changes) {
        if let Some(hero) = self.hero.as_mut().filter(|h| h.dirty) {
            hero.dirty = false;
            changes.heroes.push(hero.row.clone());
        }
        let missions = self.missions.len();
        for id in self.touched_missions.drain(..) {
            take(
                &mut self.missions,
                &id,
                |m| m.state == "active",
                &mut changes.missions,
            );
        }
        for id in self.touched_tools.drain(..) {
            take(
                &mut self.tools,
                &id,
                |t| t.status == "running",
                &mut changes.tools,
            );
        }
        // A tool row let go of is still found through `calls`; a mission only through SQL.
        self.evicted |= self.missions.len() < missions;
        self.listed = false;
    }
}

/// Takes a row out for writing: a closed one leaves memory (into `out` when changed), a
/// changed open one is copied into `out` and marked as SQL's.
fn take<T: Clone>(
    rows: &mut HashMap<String, Slot<T>>,
    id: &str,
    open: impl Fn(&T) -> bool,
    out: &mut Vec<T>,
) {
    let Some(slot) = rows.get_mut(id) else {
        return; // taken already (an id touched twice)
    };
    if !open(&slot.row) {
        let slot = rows.remove(id).expect("found above");
        if slot.dirty {
            out.push(slot.row);
        }
    } else if slot.dirty {
        slot.dirty = false;
        out.push(slot.row.clone());
    }
}

/// Puts a row in memory under its id (changed since SQL saw it if `dirty`, or if it already
/// was).
fn keep<T>(rows: &mut HashMap<String, Slot<T>>, id: String, row: T, dirty: bool) {
    match rows.entry(id) {
        Entry::Occupied(mut slot) => {
            let slot = slot.get_mut();
            slot.row = row;
            slot.dirty |= dirty;
        }
        Entry::Vacant(place) => {
            place.insert(Slot { row, dirty });
        }
    }
}

/// Lists an id among the open rows, or takes it off.
fn list(open: &mut HashSet<String>, id: &str, is_open: bool) {
    if is_open {
        open.insert(id.to_string());
    } else {
        open.remove(id);
    }
}

#[derive(Default)]
struct Memory {
    sessions: SessionRows,
    shards: HashMap<String, Shard>,
    /// The sessions whose shard was used since the last take.
    touched: Vec<String>,
    /// `hook_effects` rows: an event's sequence and the mission it answered with.
    effects: Vec<(i64, String)>,
    changes: Vec<ChangeRow>,
}

/// Where the rows a replay does not hold in memory are read from, and where the alerts it
/// raises go.
pub trait Backing {
    /// Runs `read` on the SQL tables as every earlier write of the replay left them.
    fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T>;
    /// As [`Tables::raise`].
    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()>;
}

/// The connection itself: reads and alerts at once.
impl Backing for &Connection {
    fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        read(self)
    }

    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()> {
        alerts::raise(self, kind, event, message, details)
    }
}

/// Events between two writes of a replay's rows. It bounds the closed rows a replay holds;
/// what stays across writes grows with the log: each touched session's row, hero, open
/// missions and running tools, and every call id seen (about 150 bytes a call).
pub const FLUSH_EVERY: u64 = 5_000;

/// Agent rows a replay changed, taken out of memory to be written ([`Cached::take_changes`]).
#[derive(Default)]
pub struct Changes {
    /// Each with whether SQL has a row for its session.
    sessions: Vec<(Record, bool)>,
    heroes: Vec<Hero>,
    missions: Vec<Mission>,
    tools: Vec<ToolUse>,
    /// `hook_effects` rows: an event's sequence and the mission it answered with.
    effects: Vec<(i64, String)>,
    changes: Vec<ChangeRow>,
}

impl Changes {
    /// Writes every row.
    pub fn write(&self, conn: &Connection) -> Result<()> {
        for (record, stored) in &self.sessions {
            record.store(conn, *stored)?;
        }
        let mut save = heroes::saving(conn)?;
        for hero in &self.heroes {
            heroes::save_with(&mut save, hero)?;
        }
        let mut save = missions::saving(conn)?;
        for mission in &self.missions {
            missions::save_with(&mut save, mission)?;
        }
        let mut save = tool_uses::saving(conn)?;
        for tool in &self.tools {
            tool_uses::save_with(&mut save, tool)?;
        }
        let mut save = sql::prepare(conn, SAVE_EFFECTS)?;
        for (sequence, mission) in &self.effects {
            save.execute(params![sequence, mission])?;
        }
        for row in &self.changes {
            changes::save(conn, row)?;
        }
        Ok(())
    }
}

/// The agent rows of a replay, in memory, taken out to be written by [`Cached::take_changes`].
/// Only for tables nothing else writes while it is in use.
pub struct Cached<B> {
    backing: B,
    memory: RefCell<Memory>,
    /// Whether SQL had no agent rows when the replay began: then a row that is not in memory
    /// and was never let go of does not exist, and is not looked for. This holds because
    /// session rows and shards are never let go of (only closed missions, marked `evicted`,
    /// and finished tool uses, found through `calls`): letting go of either would need the
    /// same kind of mark.
    fresh: bool,
}

impl<'c> Cached<&'c Connection> {
    /// Rows read from and written to `conn`, which had agent rows when the replay began
    /// unless `fresh`.
    pub fn new(conn: &'c Connection, fresh: bool) -> Cached<&'c Connection> {
        Cached::over(conn, fresh)
    }

    /// Writes every changed row to SQL and lets go of the rows no open work needs.
    pub fn flush(&self) -> Result<()> {
        self.take_changes().write(self.backing)
    }
}

impl<B: Backing> Cached<B> {
    /// Rows read through `backing`; see [`Cached::new`] for `fresh`.
    pub fn over(backing: B, fresh: bool) -> Cached<B> {
        Cached {
            backing,
            memory: RefCell::new(Memory::default()),
            fresh,
        }
    }

    pub fn backing(&self) -> &B {
        &self.backing
    }

    /// Takes out the rows changed since the last call, for the caller to write before
    /// anything reads them back, and lets go of the rows no open work needs.
    pub fn take_changes(&self) -> Changes {
        let mut memory = self.memory.borrow_mut();
        let memory = &mut *memory;
        let mut changes = Changes {
            sessions: memory.sessions.changed(),
            effects: std::mem::take(&mut memory.effects),
            changes: std::mem::take(&mut memory.changes),
            ..Changes::default()
        };
        // Room for every touched row at once: growing the vectors a row at a time copied
        // these large rows again and again (half of the time taking them).
        let (mut missions, mut tools) = (0, 0);
        for shard in memory.touched.iter().filter_map(|s| memory.shards.get(s)) {
            missions += shard.touched_missions.len();
            tools += shard.touched_tools.len();
        }
        changes.heroes.reserve(memory.touched.len());
        changes.missions.reserve(missions);
        changes.tools.reserve(tools);
        for session in memory.touched.drain(..) {
            if let Some(shard) = memory.shards.get_mut(&session) {
                shard.take(&mut changes);
            }
        }
        // In primary-key order, so the rows are written in the same order every time
        // (measured, the order made no clear difference to the speed).
        changes.heroes.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        changes.missions.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        changes.tools.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        changes
    }

    fn with_shard<T>(&self, session: &str, f: impl FnOnce(&mut Shard) -> Result<T>) -> Result<T> {
        let mut memory = self.memory.borrow_mut();
        let memory = &mut *memory;
        if !memory.shards.contains_key(session) {
            let shard = match self.fresh {
                true => Shard::default(),
                false => {
                    let session = session.to_string();
                    self.backing.read(move |c| Shard::load(c, &session))?
                }
            };
            memory.shards.insert(session.to_string(), shard);
        }
        let shard = memory.shards.get_mut(session).expect("loaded above");
        if !shard.listed {
            shard.listed = true;
            memory.touched.push(session.to_string());
        }
        f(shard)
    }
}

impl<B: Backing> Tables for Cached<B> {
    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()> {
        self.backing.raise(kind, event, message, details)
    }

    fn session(&self, event: &StoredEvent, facts: &Facts) -> Result<()> {
        let load = |id: &str| match self.fresh {
            true => Ok(None),
            false => {
                let id = id.to_string();
                self.backing.read(move |c| Record::load(c, &id))
            }
        };
        self.memory.borrow_mut().sessions.apply(load, event, facts)
    }

    fn hero(&self, session: &str) -> Result<Option<Hero>> {
        self.with_shard(session, |shard| {
            Ok(shard.hero.as_ref().map(|h| h.row.clone()))
        })
    }

    fn save_hero(&self, hero: Hero) -> Result<()> {
        self.with_shard(&hero.session_id.clone(), |shard| {
            shard.hero = Some(Slot {
                row: hero,
                dirty: true,
            });
            Ok(())
        })
    }

    fn mission(&self, session: &str, id: &str) -> Result<Option<Mission>> {
        self.with_shard(session, |shard| {
            if let Some(slot) = shard.missions.get(id) {
                return Ok(Some(slot.row.clone()));
            }
            if !shard.backed && !shard.evicted {
                return Ok(None);
            }
            let owned = id.to_string();
            let found = self
                .backing
                .read(move |c| missions::get(c, &owned))?
                .filter(|m| m.session_id == session);
            if let Some(mission) = &found {
                shard.keep_mission(mission.clone(), false);
            }
            Ok(found)
        })
    }

    fn save_mission(&self, mission: Mission) -> Result<()> {
        self.with_shard(&mission.session_id.clone(), |shard| {
            shard.keep_mission(mission, true);
            Ok(())
        })
    }

    fn active_subagent(&self, session: &str, subagent: &str) -> Result<Option<Mission>> {
        self.with_shard(session, |shard| {
            Ok(Shard::latest(
                &shard.active,
                &shard.missions,
                |m| m.subagent_id.as_deref() == Some(subagent),
                |m| m.opened_sequence,
            )
            .cloned())
        })
    }

    fn active_children(&self, session: &str, parent: &str) -> Result<Vec<Mission>> {
        self.with_shard(session, |shard| {
            let mut children: Vec<Mission> = shard
                .active
                .iter()
                .filter_map(|id| shard.missions.get(id))
                .filter(|s| s.row.parent_mission_id.as_deref() == Some(parent))
                .map(|s| s.row.clone())
                .collect();
            children.sort_by(|a, b| (a.opened_sequence, &a.id).cmp(&(b.opened_sequence, &b.id)));
            Ok(children)
        })
    }

    fn tool_by_call(&self, session: &str, call: &str) -> Result<Option<ToolUse>> {
        self.with_shard(session, |shard| {
            let found = match shard.calls.get(call) {
                Some(id) => match shard.tools.get(id) {
                    Some(slot) => return Ok(Some(slot.row.clone())),
                    None => {
                        let id = id.clone();
                        self.backing.read(move |c| tool_uses::get(c, &id))?
                    }
                },
                None if shard.backed => {
                    let (session, call) = (session.to_string(), call.to_string());
                    self.backing
                        .read(move |c| tool_uses::by_call(c, &session, &call))?
                }
                None => None,
            };
            if let Some(tool) = &found {
                shard.keep_tool(tool.clone(), false);
            }
            Ok(found)
        })
    }

    fn running_spawner(&self, session: &str) -> Result<Option<ToolUse>> {
        self.with_shard(session, |shard| {
            Ok(Shard::latest(
                &shard.running,
                &shard.tools,
                |t| t.kind == "subagent",
                |t| t.opened_sequence,
            )
            .cloned())
        })
    }

    fn running_tools(&self, session: &str) -> Result<Vec<ToolUse>> {
        self.with_shard(session, |shard| {
            let mut running: Vec<ToolUse> = shard
                .running
                .iter()
                .filter_map(|id| shard.tools.get(id))
                .map(|s| s.row.clone())
                .collect();
            running.sort_by(|a, b| (a.opened_sequence, &a.id).cmp(&(b.opened_sequence, &b.id)));
            Ok(running)
        })
    }

    fn save_tool(&self, tool: ToolUse) -> Result<()> {
        self.with_shard(&tool.session_id.clone(), |shard| {
            shard.keep_tool(tool, true);
            Ok(())
        })
    }

    fn effects(&self, sequence: i64, effects: &Effects) -> Result<()> {
        if let Some(mission) = &effects.mission_id {
            self.memory
                .borrow_mut()
                .effects
                .push((sequence, mission.clone()));
        }
        Ok(())
    }

    fn changes(&self, row: ChangeRow) -> Result<()> {
        self.memory.borrow_mut().changes.push(row);
        Ok(())
    }
}
