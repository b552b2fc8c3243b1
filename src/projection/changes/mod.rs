//! The `agent_changes` projection: what each hook event changed in the heroes, missions and
//! tool uses (and each transcript event that changed its hero's model), as typed deltas, one
//! row per event keyed by its sequence. It is what the change
//! streams (`GET /changes`, the seed 000 WebSocket at `/`) deliver, so a client can follow the
//! projections live without re-deriving them from raw events.
//!
//! A [`Recorder`](super::recorder::Recorder) wraps the tables the hook projection works on and
//! turns the rows an event read and saved into deltas. Like every projection it is a pure function of the log, so a
//! rebuild makes the same rows. Unlike the others, a row belongs to its event: pruning an event
//! prunes its changes too (`store::retention`).

use crate::event::StoredEvent;
use foldhash::HashMap;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub mod shape;
mod stored;
pub use stored::{CODES, KEYS, Said, compact, expand};

/// Which projection a delta changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Entity {
    Hero,
    Mission,
    ToolUse,
    /// A permission request: opened by a `PermissionRequest` hook event, settled by a decision
    /// or an expiry (`projection::permissions`). A request the session's own events close
    /// (answered in the terminal) has no delta: its state is in `GET /permission-requests`.
    Permission,
}

/// Whether the row is new or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Op {
    Created,
    Updated,
}

/// One row's change: its id, the rows it hangs from, and the fields that changed with their
/// new values (every field, for a new row). Folding a stream's deltas in order gives the rows
/// of `GET /heroes`, `/missions` and `/tool-uses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delta {
    pub entity: Entity,
    pub op: Op,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hero_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mission_id: Option<String>,
    pub set: Map<String, Value>,
}

/// An `agent_changes` row: the event's hero (its session's, so not stored), the mission it
/// belongs to (the one it opened, closed or worked in, else its hero's mission in progress),
/// whether that mission is the one the hook event answered with (the first case), and its
/// deltas as a JSON array (stored without what the event says: [`ChangeRow::compacted`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRow {
    pub sequence: i64,
    pub hero_id: String,
    pub mission_id: Option<String>,
    pub answered: bool,
    pub changes: String,
}

impl ChangeRow {
    /// A row of `hero_id`'s with no deltas yet, answered with no mission.
    pub fn new(sequence: i64, hero_id: String, mission_id: Option<String>) -> ChangeRow {
        ChangeRow {
            sequence,
            hero_id,
            mission_id,
            answered: false,
            changes: "[]".into(),
        }
    }

    /// Adds a delta after the ones it has.
    pub fn push(&mut self, delta: &Delta) {
        let rendered = serde_json::to_string(delta).expect("a delta serializes");
        self.changes.pop(); // the closing `]`
        if self.changes.len() > 1 {
            self.changes.push(',');
        }
        self.changes.push_str(&rendered);
        self.changes.push(']');
    }

    /// The row as it is stored: its deltas without the values its event and row say
    /// ([`stored`]), which [`page`] puts back.
    pub fn compacted(mut self, event: &StoredEvent) -> ChangeRow {
        debug_assert_eq!(self.hero_id, hero_of(event.session_id.as_deref()));
        let said = Said::of(event, &self.hero_id, self.mission_id.as_deref());
        self.changes = compact(&self.changes, &said);
        self
    }
}

const INSERT: &str = "INSERT INTO agent_changes (sequence, mission, answered, changes, shape)
                      VALUES (?1, ?2, ?3, ?4, ?5)";

/// Saves `row`, which must be its event's session's hero's (every hero is: `heroes::hero_id`),
/// split into its shape and values ([`shape`]) where it can be, and naming its mission, which
/// must be saved, by the sequence that opened it.
pub fn save(conn: &Connection, row: &ChangeRow) -> rusqlite::Result<()> {
    save_with(conn, row, &mut Keys::default())
}

/// [`save`], looking up the row's shape id and its mission's sequence in `keys` first.
pub fn save_with(conn: &Connection, row: &ChangeRow, keys: &mut Keys) -> rusqlite::Result<()> {
    let (changes, shape) = match shape::split(&row.changes) {
        Some((shape, values)) => (values, Some(keys.shape_id(conn, shape)?)),
        None => (row.changes.clone(), None),
    };
    let mission = match &row.mission_id {
        Some(id) => Some(keys.opened_sequence(conn, id)?),
        None => None,
    };
    conn.prepare_cached(INSERT)?.execute(params![
        row.sequence,
        mission,
        row.answered,
        changes,
        shape
    ])?;
    Ok(())
}

/// The keys a change row is saved with, remembered as SQL has them: each shape's id in
/// `change_shapes` and each mission's opened sequence. Nearly every hook event's row has a
/// shape seen before and the mission of the event before it. Holding them is only right while
/// the rows they came from are in the file: whoever holds them lets go of them when a
/// transaction that may have written those rows is rolled back, or another connection writes.
#[derive(Default)]
pub struct Keys {
    shapes: HashMap<String, i64>,
    missions: HashMap<String, i64>,
}

/// Shapes, and missions, held at most; past it the map is let go of and read again as needed.
const MAX_KEYS: usize = 4_096;

impl Keys {
    /// The id of `shape`'s row in `change_shapes`, written the first time it is seen.
    fn shape_id(&mut self, conn: &Connection, shape: String) -> rusqlite::Result<i64> {
        if let Some(id) = self.shapes.get(&shape) {
            return Ok(*id);
        }
        let id = shape_id(conn, &shape)?;
        hold(&mut self.shapes, shape, id);
        Ok(id)
    }

    /// The sequence of the event that opened mission `id` ([`opened_sequence`]).
    fn opened_sequence(&mut self, conn: &Connection, id: &str) -> rusqlite::Result<i64> {
        if let Some(sequence) = self.missions.get(id) {
            return Ok(*sequence);
        }
        let sequence = opened_sequence(conn, id)?;
        hold(&mut self.missions, id.to_string(), sequence);
        Ok(sequence)
    }

    pub fn clear(&mut self) {
        self.shapes.clear();
        self.missions.clear();
    }

    /// The shapes held, with their ids.
    #[cfg(test)]
    pub fn held_shapes(&self) -> Vec<(String, i64)> {
        self.shapes.iter().map(|(s, id)| (s.clone(), *id)).collect()
    }
}

fn hold(map: &mut HashMap<String, i64>, key: String, value: i64) {
    if map.len() >= MAX_KEYS {
        map.clear();
    }
    map.insert(key, value);
}

/// The sequence of the event that opened mission `id`, by which a change row names it. A
/// mission without its row (none is known: missions are saved before their change rows and
/// never pruned) is an error that names it, not a change row that loses its mission.
fn opened_sequence(conn: &Connection, id: &str) -> rusqlite::Result<i64> {
    super::missions::key_of(conn, id)?
        .map(|(_, opened)| opened)
        .ok_or_else(|| {
            rusqlite::Error::ToSqlConversionFailure(
                format!("a change row names mission {id}, which has no row in missions").into(),
            )
        })
}

/// The id of `shape`'s row in `change_shapes`, written the first time it is seen.
fn shape_id(conn: &Connection, shape: &str) -> rusqlite::Result<i64> {
    let found = conn
        .prepare_cached("SELECT id FROM change_shapes WHERE shape = ?1")?
        .query_row([shape], |r| r.get(0))
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    conn.prepare_cached("INSERT INTO change_shapes (shape) VALUES (?1)")?
        .execute([shape])?;
    Ok(conn.last_insert_rowid())
}

/// Rewrites the rows stored in an older form (in full before schema 19, with their keys before
/// schema 22, whole before schema 27) as [`ChangeRow::compacted`] and [`save`] would store
/// them, a chunk at a time; returns how many changed.
pub fn compact_stored(conn: &Connection) -> rusqlite::Result<u64> {
    const CHUNK: i64 = 10_000;
    let mut read = conn.prepare(
        "SELECT c.sequence, e.event_id, e.event_time, e.session_id, m.id, c.changes
         FROM agent_changes c JOIN events e ON e.sequence = c.sequence
         LEFT JOIN missions m ON m.opened_sequence = c.mission
         WHERE c.sequence > ?1 AND c.shape IS NULL ORDER BY c.sequence LIMIT ?2",
    )?;
    let mut write =
        conn.prepare("UPDATE agent_changes SET changes = ?2, shape = ?3 WHERE sequence = ?1")?;
    let (mut after, mut rewritten) = (0i64, 0u64);
    loop {
        let rows = read
            .query_map(params![after, CHUNK], |r| {
                let sequence: i64 = r.get(0)?;
                let (event_id, event_time, session_id): (String, String, Option<String>) =
                    (r.get(1)?, r.get(2)?, r.get(3)?);
                let hero_id = hero_of(session_id.as_deref());
                let mission_id: Option<String> = r.get(4)?;
                let changes: String = r.get(5)?;
                let said = Said {
                    event_id: &event_id,
                    event_time: &event_time,
                    session_id: session_id.as_deref(),
                    sequence,
                    hero_id: &hero_id,
                    mission_id: mission_id.as_deref(),
                };
                let compacted = compact(&changes, &said);
                let changed = compacted != changes;
                Ok((sequence, compacted, changed))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let Some(&(last, ..)) = rows.last() else {
            return Ok(rewritten);
        };
        for (sequence, compacted, changed) in rows {
            match shape::split(&compacted) {
                Some((shape, values)) => {
                    write.execute(params![sequence, values, shape_id(conn, &shape)?])?
                }
                None if changed => write.execute(params![sequence, compacted, None::<i64>])?,
                None => continue,
            };
            rewritten += 1;
        }
        after = last;
    }
}

/// A row of `agent_changes` with its event's id, type and time, as the change streams send it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub sequence: i64,
    pub event_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub event_time: String,
    pub session_id: String,
    pub hero_id: String,
    pub mission_id: Option<String>,
    /// The deltas, as stored.
    pub changes: Box<RawValue>,
}

impl Change {
    pub fn deltas(&self) -> Vec<Delta> {
        serde_json::from_str(self.changes.get()).unwrap_or_default()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a change serializes")
    }
}

/// The hero of a change row of an event of `session` (every change row has one).
fn hero_of(session: Option<&str>) -> String {
    super::heroes::hero_id(session.unwrap_or_default())
}

fn change(r: &Row<'_>) -> rusqlite::Result<Change> {
    let (sequence, event_id, event_time, session_id, mission_id): (
        i64,
        String,
        String,
        String,
        Option<String>,
    ) = (r.get(0)?, r.get(1)?, r.get(3)?, r.get(4)?, r.get(5)?);
    let hero_id = hero_of(Some(&session_id));
    let said = Said {
        event_id: &event_id,
        event_time: &event_time,
        session_id: Some(&session_id),
        sequence,
        hero_id: &hero_id,
        mission_id: mission_id.as_deref(),
    };
    let stored = r.get_ref(6)?.as_str()?;
    let changes = match r.get::<_, Option<i64>>(7)? {
        None => expand(stored, &said),
        Some(_) => {
            let filled = r
                .get_ref(8)?
                .as_str_or_null()?
                .and_then(|shape| shape::fill(shape, stored))
                .ok_or_else(|| {
                    rusqlite::Error::FromSqlConversionFailure(
                        7,
                        rusqlite::types::Type::Integer,
                        "a change row whose shape is missing or does not fit its values".into(),
                    )
                })?;
            expand(&filled, &said)
        }
    };
    Ok(Change {
        sequence,
        event_type: r.get(2)?,
        changes: RawValue::from_string(changes)
            .unwrap_or_else(|_| RawValue::from_string("[]".into()).expect("valid JSON")),
        event_id,
        event_time,
        session_id,
        hero_id,
        mission_id,
    })
}

/// Up to `limit` changes of the events after sequence `after` up to `through`, in order, and no
/// more once their deltas reach `max_bytes` (at least one change, whatever its size); and
/// whether the read stopped at one of those limits, so more may follow.
pub fn page(
    conn: &Connection,
    after: i64,
    through: i64,
    limit: u32,
    max_bytes: usize,
) -> rusqlite::Result<(Vec<Change>, bool)> {
    let mut statement = conn.prepare_cached(
        "SELECT c.sequence, e.event_id, e.type, e.event_time, e.session_id, m.id,
                c.changes, c.shape, s.shape
         FROM agent_changes c JOIN events e ON e.sequence = c.sequence
         LEFT JOIN change_shapes s ON s.id = c.shape
         LEFT JOIN missions m ON m.opened_sequence = c.mission
         WHERE c.sequence > ?1 AND c.sequence <= ?2 ORDER BY c.sequence LIMIT ?3",
    )?;
    let mut changes = Vec::new();
    let mut bytes = 0usize;
    for row in statement.query_map(params![after, through, limit], change)? {
        let change = row?;
        bytes = bytes.saturating_add(change.changes.get().len());
        changes.push(change);
        if bytes >= max_bytes {
            return Ok((changes, true));
        }
    }
    let more = changes.len() == limit as usize;
    Ok((changes, more))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_row_naming_a_mission_without_its_row_is_refused_by_name() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let row = ChangeRow::new(7, "hero-1".into(), Some("mission-gone".into()));
        let refused = save(&conn, &row).unwrap_err();
        assert!(refused.to_string().contains("mission-gone"), "{refused}");
        let stored: i64 = conn
            .query_row("SELECT COUNT(*) FROM agent_changes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, 0);
        // Without a mission, or with its row (found through its opening event), the row is
        // saved naming it by its sequence.
        save(&conn, &ChangeRow::new(8, "hero-1".into(), None)).unwrap();
        conn.execute_batch(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source,
                                 event_time, received_at, payload)
             VALUES (5, 'e5', 's', 1, 'UserPromptSubmit', 'hook', 't', 't', '{}');
             INSERT INTO missions (id, session_id, kind, state, opened_event_id, started_at,
                                   opened_sequence)
             VALUES ('mission-e5', 's', 'prompt', 'active', 'e5', 't', 5)",
        )
        .unwrap();
        save(
            &conn,
            &ChangeRow::new(9, "hero-1".into(), Some("mission-e5".into())),
        )
        .unwrap();
        let missions: Vec<Option<i64>> = conn
            .prepare("SELECT mission FROM agent_changes ORDER BY sequence")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(missions, [None, Some(5)]);
    }
}
