//! The [`Recorder`]: the [`Tables`] the hook projection works on, wrapped so that what an event
//! changes is recorded. It keeps each hero, mission and tool use as the event first read it,
//! and as the event last saved it, and [`Recorder::finish`] turns each pair into a
//! [`Delta`]: the fields that differ, or every field of a new row.

use super::Effects;
use super::changes::{ChangeRow, Delta, Entity, Op};
use super::heroes::Hero;
use super::missions::Mission;
use super::sessions::Facts;
use super::tables::{Result, Tables};
use super::tool_uses::ToolUse;
use crate::event::StoredEvent;
use serde::Serialize;
use serde_json::{Map, Value};
use std::cell::RefCell;

/// A row as it was before the event and as the event left it.
pub(super) enum Pair {
    Hero(Option<Hero>, Option<Hero>),
    Mission(Option<Mission>, Option<Mission>),
    Tool(Option<ToolUse>, Option<ToolUse>),
}

impl Pair {
    fn key(&self) -> (Entity, &str) {
        fn id<'a, T>(before: &'a Option<T>, after: &'a Option<T>, of: fn(&T) -> &str) -> &'a str {
            before
                .as_ref()
                .or(after.as_ref())
                .map(of)
                .unwrap_or_default()
        }
        match self {
            Pair::Hero(b, a) => (Entity::Hero, id(b, a, |r| &r.id)),
            Pair::Mission(b, a) => (Entity::Mission, id(b, a, |r| &r.id)),
            Pair::Tool(b, a) => (Entity::ToolUse, id(b, a, |r| &r.id)),
        }
    }

    fn delta(&self) -> Option<Delta> {
        fn fields<T: Serialize>(row: &T) -> Map<String, Value> {
            match serde_json::to_value(row) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            }
        }
        fn diff<T: Serialize>(before: &Option<T>, after: &T) -> (Op, Map<String, Value>) {
            let mut set = fields(after);
            match before {
                None => (Op::Created, set),
                Some(before) => {
                    let before = fields(before);
                    set.retain(|k, v| before.get(k) != Some(v));
                    (Op::Updated, set)
                }
            }
        }
        let (entity, id) = self.key();
        let (op, set, hero_id, mission_id) = match self {
            Pair::Hero(before, Some(after)) => {
                let (op, set) = diff(before, after);
                (op, set, None, None)
            }
            Pair::Mission(before, Some(after)) => {
                let (op, set) = diff(before, after);
                (op, set, Some(after.hero_id.clone()), None)
            }
            Pair::Tool(before, Some(after)) => {
                let (op, set) = diff(before, after);
                (op, set, after.hero_id.clone(), after.mission_id.clone())
            }
            _ => return None,
        };
        (!set.is_empty()).then(|| Delta {
            entity,
            op,
            id: id.to_string(),
            hero_id,
            mission_id,
            set,
        })
    }
}

/// What one event read and saved, in the order of their first save.
#[derive(Default)]
struct Recording {
    pairs: Vec<Pair>,
    /// Indexes into `pairs`, in the order each row was first saved.
    saved: Vec<usize>,
}

impl Recording {
    fn find(&self, entity: Entity, id: &str) -> Option<usize> {
        self.pairs.iter().position(|p| p.key() == (entity, id))
    }

    /// A row as the event first read it (a later read of it changes nothing).
    fn read(&mut self, pair: Pair) {
        let (entity, id) = pair.key();
        if self.find(entity, id).is_none() {
            self.pairs.push(pair);
        }
    }

    /// A row as the event saved it.
    fn save(&mut self, pair: Pair) {
        let (entity, id) = pair.key();
        let index = match self.find(entity, id) {
            Some(i) => i,
            None => {
                self.pairs.push(match pair {
                    Pair::Hero(..) => Pair::Hero(None, None),
                    Pair::Mission(..) => Pair::Mission(None, None),
                    Pair::Tool(..) => Pair::Tool(None, None),
                });
                self.pairs.len() - 1
            }
        };
        match (&mut self.pairs[index], pair) {
            (Pair::Hero(_, a), Pair::Hero(_, new)) => *a = new,
            (Pair::Mission(_, a), Pair::Mission(_, new)) => *a = new,
            (Pair::Tool(_, a), Pair::Tool(_, new)) => *a = new,
            _ => unreachable!("found by entity"),
        }
        if !self.saved.contains(&index) {
            self.saved.push(index);
        }
    }
}

/// Collects what an event changes while the hook projection runs on `tables`.
pub struct Recorder<'t, T> {
    tables: &'t T,
    recording: RefCell<Recording>,
}

impl<'t, T> Recorder<'t, T> {
    pub fn new(tables: &'t T) -> Recorder<'t, T> {
        Recorder {
            tables,
            recording: RefCell::new(Recording::default()),
        }
    }

    fn read(&self, pair: Pair) {
        self.recording.borrow_mut().read(pair);
    }

    fn saved(&self, pair: Pair) {
        self.recording.borrow_mut().save(pair);
    }

    /// The `agent_changes` row of event `sequence`: its deltas, in the order the rows were
    /// first saved but a new hero first (the rows made with it name it); `None` when nothing
    /// changed or the event has no hero.
    pub fn finish(self, sequence: i64, effects: &Effects) -> Option<ChangeRow> {
        let recording = self.recording.into_inner();
        let mut deltas: Vec<Delta> = recording
            .saved
            .iter()
            .filter_map(|&i| recording.pairs[i].delta())
            .collect();
        if let Some(spawn) = deltas
            .iter()
            .position(|d| d.entity == Entity::Hero && d.op == Op::Created)
        {
            let hero = deltas.remove(spawn);
            deltas.insert(0, hero);
        }
        let hero = recording.pairs.iter().find_map(|p| match p {
            Pair::Hero(_, Some(hero)) => Some(hero),
            _ => None,
        })?;
        if deltas.is_empty() {
            return None;
        }
        Some(ChangeRow {
            sequence,
            hero_id: hero.id.clone(),
            mission_id: effects
                .mission_id
                .clone()
                .or_else(|| hero.active_mission_id.clone()),
            changes: serde_json::to_string(&deltas).expect("deltas serialize"),
        })
    }
}

impl<T: Tables> Tables for Recorder<'_, T> {
    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()> {
        self.tables.raise(kind, event, message, details)
    }

    fn session(&self, event: &StoredEvent, facts: &Facts) -> Result<()> {
        self.tables.session(event, facts)
    }

    fn hero(&self, session: &str) -> Result<Option<Hero>> {
        let hero = self.tables.hero(session)?;
        if let Some(hero) = &hero {
            self.read(Pair::Hero(Some(hero.clone()), None));
        }
        Ok(hero)
    }

    fn save_hero(&self, hero: Hero) -> Result<()> {
        self.saved(Pair::Hero(None, Some(hero.clone())));
        self.tables.save_hero(hero)
    }

    fn mission(&self, session: &str, id: &str) -> Result<Option<Mission>> {
        Ok(self.read_mission(self.tables.mission(session, id)?))
    }

    fn save_mission(&self, mission: Mission) -> Result<()> {
        self.saved(Pair::Mission(None, Some(mission.clone())));
        self.tables.save_mission(mission)
    }

    fn active_subagent(&self, session: &str, subagent: &str) -> Result<Option<Mission>> {
        Ok(self.read_mission(self.tables.active_subagent(session, subagent)?))
    }

    fn active_children(&self, session: &str, parent: &str) -> Result<Vec<Mission>> {
        let children = self.tables.active_children(session, parent)?;
        for child in &children {
            self.read(Pair::Mission(Some(child.clone()), None));
        }
        Ok(children)
    }

    fn tool_by_call(&self, session: &str, call: &str) -> Result<Option<ToolUse>> {
        Ok(self.read_tool(self.tables.tool_by_call(session, call)?))
    }

    fn running_spawner(&self, session: &str) -> Result<Option<ToolUse>> {
        Ok(self.read_tool(self.tables.running_spawner(session)?))
    }

    fn running_tools(&self, session: &str) -> Result<Vec<ToolUse>> {
        let running = self.tables.running_tools(session)?;
        for tool in &running {
            self.read(Pair::Tool(Some(tool.clone()), None));
        }
        Ok(running)
    }

    fn save_tool(&self, tool: ToolUse) -> Result<()> {
        self.saved(Pair::Tool(None, Some(tool.clone())));
        self.tables.save_tool(tool)
    }

    fn effects(&self, event_id: &str, effects: &Effects) -> Result<()> {
        self.tables.effects(event_id, effects)
    }

    fn changes(&self, row: ChangeRow) -> Result<()> {
        self.tables.changes(row)
    }
}

impl<T> Recorder<'_, T> {
    fn read_mission(&self, mission: Option<Mission>) -> Option<Mission> {
        if let Some(m) = &mission {
            self.read(Pair::Mission(Some(m.clone()), None));
        }
        mission
    }

    fn read_tool(&self, tool: Option<ToolUse>) -> Option<ToolUse> {
        if let Some(t) = &tool {
            self.read(Pair::Tool(Some(t.clone()), None));
        }
        tool
    }
}
