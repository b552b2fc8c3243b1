//! One session's agent rows held in memory by a replay ([`Shard`]), each in a [`Slot`] that
//! says whether SQL has it as it is, and how they are taken out to be written.

use super::Changes;
use super::Result;
use crate::projection::heroes::{self, Hero};
use crate::projection::missions::{self, Mission, MissionState};
use crate::projection::tool_uses::{self, ToolStatus, ToolUse};
use foldhash::{HashMap, HashSet};
use rusqlite::Connection;
use std::collections::hash_map::Entry;

/// A row held in memory, and whether SQL has it as it is.
pub(super) struct Slot<T> {
    pub(super) row: T,
    pub(super) dirty: bool,
}

impl<T> Slot<T> {
    pub(super) fn clean(row: T) -> Slot<T> {
        Slot { row, dirty: false }
    }
}

/// One session's agent rows in memory. Every active mission and running tool use of the
/// session is here, so the set questions (children, running tools, active subagents) are
/// answered from memory alone, and so is every call id the replay has seen. A row looked up by
/// id that is not here is read from SQL when SQL can have it: when the session had rows before
/// the replay (`backed`, a retention snapshot), or missions were let go of (`evicted`).
#[derive(Default)]
pub(super) struct Shard {
    pub(super) hero: Option<Slot<Hero>>,
    pub(super) missions: HashMap<String, Slot<Mission>>,
    pub(super) active: HashSet<String>,
    /// The active subagent missions by subagent id (those of `active` with one), so a
    /// subagent's mission is found without reading every active mission of the session.
    pub(super) active_subagents: HashMap<String, HashSet<String>>,
    pub(super) tools: HashMap<String, Slot<ToolUse>>,
    /// Tool use id of a call -> its row id (permission requests excluded), kept across
    /// evictions.
    pub(super) calls: HashMap<String, String>,
    pub(super) running: HashSet<String>,
    /// The running calls that spawn subagents (those of `running` of kind `subagent`).
    pub(super) running_spawners: HashSet<String>,
    /// Ids of the missions and tool uses put in memory or changed since the last take (a
    /// take looks at these only, not at every open row).
    pub(super) touched_missions: Vec<String>,
    pub(super) touched_tools: Vec<String>,
    /// Whether the shard is in [`Memory::touched`](super::cached::Memory).
    pub(super) listed: bool,
    pub(super) backed: bool,
    pub(super) evicted: bool,
}

impl Shard {
    pub(super) fn load(conn: &Connection, session: &str) -> Result<Shard> {
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

    pub(super) fn keep_mission(&mut self, mission: Mission, dirty: bool) {
        let id = mission.id.clone();
        let active = mission.state == MissionState::Active;
        list(&mut self.active, &id, active);
        if let Some(subagent) = &mission.subagent_id {
            list_by(&mut self.active_subagents, subagent, &id, active);
        }
        self.touched_missions.push(id.clone());
        keep(&mut self.missions, id, mission, dirty);
    }

    pub(super) fn keep_tool(&mut self, tool: ToolUse, dirty: bool) {
        let id = tool.id.clone();
        if tool.kind != "permission"
            && let Some(call) = &tool.tool_use_id
        {
            self.calls.insert(call.clone(), id.clone());
        }
        let running = tool.status == ToolStatus::Running;
        list(&mut self.running, &id, running);
        list(
            &mut self.running_spawners,
            &id,
            running && tool.kind == "subagent",
        );
        self.touched_tools.push(id.clone());
        keep(&mut self.tools, id, tool, dirty);
    }

    /// The latest (highest `opened_sequence`) of some listed rows that pass a test.
    pub(super) fn latest<'a, T>(
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
    pub(super) fn take(&mut self, changes: &mut Changes) {
        if let Some(hero) = self.hero.as_mut().filter(|h| h.dirty) {
            hero.dirty = false;
            changes.heroes.push(hero.row.clone());
        }
        let missions = self.missions.len();
        for id in self.touched_missions.drain(..) {
            take(
                &mut self.missions,
                &id,
                |m| m.state == MissionState::Active,
                &mut changes.missions,
            );
        }
        for id in self.touched_tools.drain(..) {
            take(
                &mut self.tools,
                &id,
                |t| t.status == ToolStatus::Running,
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

/// Lists an id among the open rows with `key`, or takes it off (and the key with its last).
fn list_by(open: &mut HashMap<String, HashSet<String>>, key: &str, id: &str, is_open: bool) {
    if is_open {
        open.entry(key.to_string())
            .or_default()
            .insert(id.to_string());
    } else if let Some(ids) = open.get_mut(key) {
        ids.remove(id);
        if ids.is_empty() {
            open.remove(key);
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
