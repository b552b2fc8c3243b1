//! The debugger's view of the projections: events applied one at a time to a scratch database,
//! and what its projection tables hold after each. `hooklog replay` (a file or `--session`,
//! step by step or `--until`) and `GET /sessions/{id}/projections?until=` (the web view's
//! replay scrubber) both go through here, so the page shows what the command prints.

use super::writer::{AppendError, Local};
use super::{open, read};
use crate::config::Durability;
use crate::event::{NewEvent, StoredEvent};
use crate::projection;
use rusqlite::Connection;
use std::collections::BTreeMap;

/// Bookkeeping tables the debugger view leaves out.
const HIDDEN: &[&str] = &["claim_actions", "agent_changes"];
/// Columns that change with every event of a session, or say again what another table's
/// change line says (a session's `hero_*` columns are its hero's progress, shown with the
/// hero); left out of the change lines.
const NOISY: &[&str] = &[
    "event_count",
    "last_sequence",
    "last_event_time",
    "updated_at",
    "hero_state",
    "hero_mission",
    "hero_mission_count",
];
/// A hero's row with its progress (kept in its session's row), as one row of `heroes`.
const HEROES: &str = "SELECT h.id, h.session_id, h.cli, h.cwd, h.tty, h.model, h.faction,
     s.hero_state AS state,
     (SELECT id FROM missions WHERE opened_sequence = s.hero_mission) AS active_mission_id,
     s.hero_mission_count AS mission_count, h.spawned_event_id, h.spawned_at
     FROM heroes h JOIN sessions s ON s.id = h.session_id";
/// The longest value shown, in characters.
const CLIP: usize = 60;

/// Every projection row, keyed by table and its first two columns, with its columns as text.
pub type Rows = BTreeMap<(String, String), Vec<(String, String)>>;

#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error("scratch directory: {0}")]
    Dir(#[from] std::io::Error),
    #[error("scratch database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("scratch database: {0}")]
    Append(#[from] AppendError),
}

/// A fresh database in a temporary directory (removed when this is dropped) that events are
/// appended to in order, through the writer's own code ([`Local`]), so it numbers, stores and
/// projects them as the server does.
pub struct Scratch {
    writer: Local,
    _dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Result<Scratch, ScratchError> {
        let dir = tempfile::tempdir()?;
        let conn = open::open_writer(&dir.path().join("replay.db"), Durability::Normal)?;
        Ok(Scratch {
            writer: Local::new(conn)?,
            _dir: dir,
        })
    }

    /// Appends `event` (a scratch log has no origin of its own: an event keeps the one it
    /// brings) and so applies it to every projection. An id already appended is a duplicate,
    /// as on the server: stored once.
    pub fn apply(&mut self, event: &NewEvent) -> Result<(), ScratchError> {
        self.writer.append(vec![event.clone()])?;
        Ok(())
    }

    /// Every projection row now (the bookkeeping tables left out).
    pub fn rows(&self) -> rusqlite::Result<Rows> {
        let mut out = BTreeMap::new();
        for table in projection::TABLES.iter().filter(|t| !HIDDEN.contains(t)) {
            let sql = match *table {
                "heroes" => HEROES.to_string(),
                _ => format!("SELECT * FROM {table}"),
            };
            let mut statement = self.writer.conn().prepare_cached(&sql)?;
            let names: Vec<String> = statement
                .column_names()
                .iter()
                .map(|c| c.to_string())
                .collect();
            let mut query = statement.query([])?;
            while let Some(row) = query.next()? {
                let values: Vec<String> = (0..names.len())
                    .map(|i| row.get::<_, rusqlite::types::Value>(i).map(|v| show(&v)))
                    .collect::<rusqlite::Result<_>>()?;
                let key = format!(
                    "{} {}",
                    values[0],
                    values.get(1).cloned().unwrap_or_default()
                );
                out.insert(
                    (table.to_string(), key),
                    names.iter().cloned().zip(values).collect(),
                );
            }
        }
        Ok(out)
    }
}

/// The projections as they stood after one event.
pub struct Until {
    /// The event's position (its sequence in the log, or its line in a recording).
    pub position: i64,
    pub event_type: String,
    /// Events applied up to and including it.
    pub applied: usize,
    pub rows: Rows,
}

impl Until {
    /// What `hooklog replay --until` prints: a heading, then one `+` line per row.
    pub fn lines(&self) -> Vec<String> {
        let heading = format!(
            "after #{} {} ({} events applied):",
            self.position, self.event_type, self.applied
        );
        std::iter::once(heading)
            .chain(changes(&Rows::new(), &self.rows))
            .collect()
    }
}

/// Applies `events` (each with its position) up to the first at or after `until`, and answers
/// the projections then; `None` if no event is at or after `until`.
pub fn until(events: &[(i64, NewEvent)], until: i64) -> Result<Option<Until>, ScratchError> {
    let mut scratch = Scratch::new()?;
    for (n, (position, event)) in events.iter().enumerate() {
        scratch.apply(event)?;
        if *position >= until {
            return Ok(Some(Until {
                position: *position,
                event_type: event.event_type.clone(),
                applied: n + 1,
                rows: scratch.rows()?,
            }));
        }
    }
    Ok(None)
}

/// A session's events as they were stored, each with its sequence, ready to apply again.
pub fn session_events(conn: &Connection, session: &str) -> rusqlite::Result<Vec<(i64, NewEvent)>> {
    let query = format!(
        "SELECT {} FROM events WHERE session_id = ?1 ORDER BY session_sequence",
        read::EVENT_COLUMNS
    );
    let stored: Vec<StoredEvent> = conn
        .prepare_cached(&query)?
        .query_map([session], read::stored_event)?
        .collect::<rusqlite::Result<_>>()?;
    Ok(stored
        .into_iter()
        .map(|e| {
            let position = e.sequence;
            let event = NewEvent {
                event_id: e.event_id,
                generated_id: false,
                session_id: e.session_id,
                event_type: e.event_type,
                source: e.source,
                event_time: Some(e.event_time),
                received_at: Some(e.received_at),
                origin: Some(e.origin),
                payload: e.payload,
            };
            (position, event)
        })
        .collect())
}

fn show(value: &rusqlite::types::Value) -> String {
    use rusqlite::types::Value as V;
    match value {
        V::Null => "NULL".into(),
        V::Integer(i) => i.to_string(),
        V::Real(f) => f.to_string(),
        V::Text(t) => {
            let one_line: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
            crate::ingest::bounds::clip(&one_line, CLIP)
        }
        V::Blob(b) => format!("<{} bytes>", b.len()),
    }
}

/// The lines saying how `after` differs from `before`: `+` a new row with its set columns,
/// `~` a changed row with the columns that changed, `-` a row gone.
pub fn changes(before: &Rows, after: &Rows) -> Vec<String> {
    let mut lines = Vec::new();
    for ((table, key), columns) in after {
        match before.get(&(table.clone(), key.clone())) {
            None => {
                let set: Vec<String> = columns
                    .iter()
                    .filter(|(_, v)| v != "NULL")
                    .map(|(c, v)| format!("{c}={v}"))
                    .collect();
                lines.push(format!("  + {table} {}", set.join(" ")));
            }
            Some(old) if old != columns => {
                let changed: Vec<String> = old
                    .iter()
                    .zip(columns)
                    .filter(|((c, a), (_, b))| a != b && !NOISY.contains(&c.as_str()))
                    .map(|((c, a), (_, b))| format!("{c}: {a} -> {b}"))
                    .collect();
                if !changed.is_empty() {
                    lines.push(format!("  ~ {table} {key}: {}", changed.join(", ")));
                }
            }
            Some(_) => {}
        }
    }
    for (table, key) in before.keys() {
        if !after.contains_key(&(table.clone(), key.clone())) {
            lines.push(format!("  - {table} {key}"));
        }
    }
    lines
}
