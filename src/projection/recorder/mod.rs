//! The [`Recorder`]: the [`Tables`](super::tables::Tables) the hook projection works on,
//! wrapped so that what an event changes is recorded. It keeps each hero, mission and tool use
//! as the event first read it; when the event saves one, its delta against that is written
//! (the fields that differ, or every field of a new row: a [`Delta`](super::changes::Delta)'s
//! `set`), and [`Recorder::finish`] puts the event's deltas together in one `agent_changes` row.

use super::Effects;
use super::changes::{ChangeRow, Entity, Op};
use super::diff::Diff;
use super::heroes::Hero;
use super::missions::Mission;
use super::tool_uses::ToolUse;
use std::cell::RefCell;

mod tables;

/// A row as the event first read it.
enum Before {
    Hero(Hero),
    Mission(Mission),
    Tool(ToolUse),
}

/// A saved row's delta, rendered: what `finish` writes for it.
struct Saved {
    op: Op,
    /// The `set` object's members (`"name":value,...`), without the braces.
    set: Vec<u8>,
    hero_id: Option<String>,
    mission_id: Option<String>,
}

/// One row the event touched.
struct Entry {
    entity: Entity,
    id: String,
    before: Option<Before>,
    saved: Option<Saved>,
}

/// What one event read and saved.
#[derive(Default)]
struct Recording {
    entries: Vec<Entry>,
    /// Indexes into `entries`, in the order each row was first saved.
    order: Vec<usize>,
    /// The hero as the event saved it: its id and mission in progress.
    hero: Option<(String, Option<String>)>,
}

impl Recording {
    fn find(&self, entity: Entity, id: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.entity == entity && e.id == id)
    }

    /// A row as the event first read it (a later read changes nothing).
    fn read(&mut self, entity: Entity, id: &str, before: impl FnOnce() -> Before) {
        if self.find(entity, id).is_none() {
            self.entries.push(Entry {
                entity,
                id: id.to_string(),
                before: Some(before()),
                saved: None,
            });
        }
    }

    /// A row as the event saved it: its delta against the row the event first read. Whether
    /// the table must be written: not when the row is the one the event read and did not save
    /// before (a hook event that changes nothing in its hero leaves the hero's page alone).
    #[must_use]
    fn save<R: Diff>(
        &mut self,
        entity: Entity,
        id: &str,
        row: &R,
        parents: (Option<String>, Option<String>),
        before_of: impl Fn(&Before) -> Option<&R>,
    ) -> bool {
        let index = self.find(entity, id).unwrap_or_else(|| {
            self.entries.push(Entry {
                entity,
                id: id.to_string(),
                before: None,
                saved: None,
            });
            self.entries.len() - 1
        });
        let entry = &mut self.entries[index];
        let saved_before = entry.saved.is_some();
        let mut set = Vec::new();
        let op = match entry.before.as_ref().and_then(&before_of) {
            Some(before) => {
                row.write_changed(before, &mut set);
                Op::Updated
            }
            None => {
                row.write_all(&mut set);
                // The members only: the braces are written with the delta.
                set.pop();
                set.remove(0);
                Op::Created
            }
        };
        let write = saved_before || op == Op::Created || !set.is_empty();
        entry.saved = Some(Saved {
            op,
            set,
            hero_id: parents.0,
            mission_id: parents.1,
        });
        if !self.order.contains(&index) {
            self.order.push(index);
        }
        write
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

    /// Makes the event's change row that of `hero` (as saving it would), for an event that
    /// changed other rows of the hero's session but not the hero itself.
    pub fn of_hero(&self, hero: &super::heroes::Hero) {
        let mut recording = self.recording.borrow_mut();
        if recording.hero.is_none() {
            recording.hero = Some((hero.id.clone(), hero.active_mission_id.clone()));
        }
    }

    /// The `agent_changes` row of event `sequence`: its deltas, in the order the rows were
    /// first saved but a new hero first (the rows made with it name it); `None` when the event
    /// has no hero.
    pub fn finish(self, sequence: i64, effects: &Effects) -> Option<ChangeRow> {
        let recording = self.recording.into_inner();
        let (hero_id, active_mission) = recording.hero.clone()?;
        let mut order = recording.order.clone();
        if let Some(spawn) = order.iter().position(|&i| {
            let e = &recording.entries[i];
            e.entity == Entity::Hero && e.saved.as_ref().is_some_and(|s| s.op == Op::Created)
        }) {
            let hero = order.remove(spawn);
            order.insert(0, hero);
        }
        let mut out = Vec::with_capacity(256);
        out.push(b'[');
        for entry in order.iter().map(|&i| &recording.entries[i]) {
            let Some(saved) = entry.saved.as_ref().filter(|s| !s.set.is_empty()) else {
                continue;
            };
            if out.len() > 1 {
                out.push(b',');
            }
            write_delta(&mut out, entry, saved);
        }
        out.push(b']');
        // A hook event that changed no row still has its change (`[]`): the change streams
        // carry one per hook event of a hero, and seed 000's socket forwards it as an opaque
        // `mission_event`.
        Some(ChangeRow {
            sequence,
            hero_id,
            answered: effects.mission_id.is_some(),
            mission_id: effects.mission_id.clone().or(active_mission),
            changes: String::from_utf8(out).expect("serde_json writes UTF-8"),
        })
    }
}

/// `{"entity":..,"op":..,"id":..,"heroId"?:..,"missionId"?:..,"set":{..}}`: a `Delta` as
/// serde would write it.
fn write_delta(out: &mut Vec<u8>, entry: &Entry, saved: &Saved) {
    let text = |out: &mut Vec<u8>, value: &str| {
        serde_json::to_writer(&mut *out, value).expect("a string serializes");
    };
    out.extend_from_slice(b"{\"entity\":");
    serde_json::to_writer(&mut *out, &entry.entity).expect("an entity serializes");
    out.extend_from_slice(b",\"op\":");
    serde_json::to_writer(&mut *out, &saved.op).expect("an op serializes");
    out.extend_from_slice(b",\"id\":");
    text(out, &entry.id);
    if let Some(hero) = &saved.hero_id {
        out.extend_from_slice(b",\"heroId\":");
        text(out, hero);
    }
    if let Some(mission) = &saved.mission_id {
        out.extend_from_slice(b",\"missionId\":");
        text(out, mission);
    }
    out.extend_from_slice(b",\"set\":{");
    out.extend_from_slice(&saved.set);
    out.extend_from_slice(b"}}");
}
