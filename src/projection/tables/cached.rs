//! [`Cached`]: the [`Tables`] of a replay, its agent rows in memory (a [`Shard`] per session)
//! and taken out to be written every [`FLUSH_EVERY`] events.

use super::shard::{Shard, Slot};
use super::{Backing, Changes, Result, SessionRows, Tables};
use crate::event::StoredEvent;
use crate::projection::changes::ChangeRow;
use crate::projection::heroes::Hero;
use crate::projection::missions::{self, Mission};
use crate::projection::sessions::{Facts, Record};
use crate::projection::tool_uses::{self, ToolUse};
use foldhash::{HashMap, HashSet};
use rusqlite::Connection;
use serde_json::Value;
use std::cell::RefCell;

#[derive(Default)]
struct Memory {
    sessions: SessionRows,
    shards: HashMap<String, Shard>,
    /// The sessions whose shard was used since the last take.
    touched: Vec<String>,
    changes: Vec<ChangeRow>,
    /// Sessions whose rows were let go of (idle for a whole write): SQL has them now, so they
    /// are read back from it even in a fresh replay.
    let_go: HashSet<String>,
}

/// Events between two writes of a replay's rows. It bounds the rows a replay holds: closed
/// missions and finished tool uses leave memory at each write, and so does every row of a
/// session no event touched since the write before (its id stays, about 70 bytes a session).
pub const FLUSH_EVERY: u64 = 5_000;

/// The agent rows of a replay, in memory, taken out to be written by [`Cached::take_changes`].
/// Only for tables nothing else writes while it is in use.
pub struct Cached<B> {
    backing: B,
    memory: RefCell<Memory>,
    /// Whether SQL had no agent rows when the replay began: then a row that is not in memory
    /// and was never let go of does not exist, and is not looked for. What is let go of is
    /// marked: a whole session in `Memory::let_go`, closed missions by `Shard::evicted`,
    /// finished tool uses through `Shard::calls`.
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
        // A session no event touched since the last take has every row written: let go of
        // it (a later event reads it back).
        let let_go = &mut memory.let_go;
        memory.sessions.let_go_of_unchanged(|s| {
            let_go.insert(s.to_string());
        });
        memory.shards.retain(|session, shard| {
            if !shard.listed {
                let_go.insert(session.clone());
            }
            shard.listed
        });
        let mut changes = Changes {
            sessions: memory.sessions.changed(),
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
        // In each table's key order, so the rows are written in the same order every time
        // and appended in order (missions and tool uses are keyed by their opening sequence).
        changes.heroes.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        changes.missions.sort_unstable_by_key(|m| m.opened_sequence);
        changes.tools.sort_unstable_by_key(|t| t.opened_sequence);
        changes
    }

    fn with_shard<T>(&self, session: &str, f: impl FnOnce(&mut Shard) -> Result<T>) -> Result<T> {
        let mut memory = self.memory.borrow_mut();
        let memory = &mut *memory;
        if !memory.shards.contains_key(session) {
            let shard = match self.fresh && !memory.let_go.contains(session) {
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
        let mut memory = self.memory.borrow_mut();
        let fresh = self.fresh
            && !event
                .session_id
                .as_deref()
                .is_some_and(|s| memory.let_go.contains(s));
        let load = |id: &str| match fresh {
            true => Ok(None),
            false => {
                let id = id.to_string();
                self.backing.read(move |c| Record::load(c, &id))
            }
        };
        memory.sessions.apply(load, event, facts)
    }

    fn session_model(&self, session: &str) -> Result<Option<String>> {
        let memory = self.memory.borrow();
        if let Some(record) = memory.sessions.get(session) {
            return Ok(record.model.clone());
        }
        if self.fresh && !memory.let_go.contains(session) {
            return Ok(None);
        }
        drop(memory);
        let id = session.to_string();
        let record = self.backing.read(move |c| Record::load(c, &id))?;
        Ok(record.and_then(|r| r.model))
    }

    fn hero(&self, session: &str) -> Result<Option<Hero>> {
        self.with_shard(session, |shard| {
            Ok(shard.hero.as_ref().map(|h| h.row.clone()))
        })
    }

    fn save_hero(&self, hero: Hero) -> Result<()> {
        let session = hero.session_id.clone();
        // Its progress with its session's row (held: the event's session came first).
        let load = |id: &str| {
            let id = id.to_string();
            self.backing.read(move |c| Record::load(c, &id))
        };
        self.memory
            .borrow_mut()
            .sessions
            .set_hero(load, &session, hero.progress())?;
        self.with_shard(&session, |shard| {
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
            let Some(ids) = shard.active_subagents.get(subagent) else {
                return Ok(None);
            };
            Ok(Shard::latest(
                ids,
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
                &shard.running_spawners,
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

    fn changes(&self, event: &StoredEvent, row: ChangeRow) -> Result<()> {
        self.memory.borrow_mut().changes.push(row.compacted(event));
        Ok(())
    }
}
