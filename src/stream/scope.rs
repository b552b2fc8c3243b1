//! What a stream delivers and how it is ordered. A session stream is ordered by
//! `session_sequence`, the global stream by `sequence`; frame ids and cursors use that number.

use crate::event::StoredEvent;
use crate::store::read::{EVENT_COLUMNS, stored_event};
use rusqlite::{Connection, OptionalExtension, params};

#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    /// Every event, optionally narrowed; ordered by `sequence`.
    Global(Filter),
    /// One session's events; ordered by `session_sequence`.
    Session(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub session: Option<String>,
    pub event_type: Option<String>,
    pub source: Option<String>,
    /// The hooklog that first stored the event (`origin`).
    pub origin: Option<String>,
}

pub use crate::config::PAGE_BYTES;

/// How much one read of history may take: at most `events` events, and no more once their
/// payloads reach `bytes` (always at least one event, whatever its size).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub events: u32,
    pub bytes: usize,
}

impl Budget {
    /// Only a count: the budget of a read whose rows are small or few.
    pub fn events(events: u32) -> Budget {
        Budget {
            events,
            bytes: usize::MAX,
        }
    }

    /// Collects rows until the budget is spent.
    fn take(
        self,
        rows: impl Iterator<Item = rusqlite::Result<StoredEvent>>,
    ) -> rusqlite::Result<Page> {
        let mut events = Vec::new();
        let mut bytes = 0usize;
        for row in rows {
            let event = row?;
            bytes = bytes.saturating_add(event.payload.len());
            events.push(event);
            if bytes >= self.bytes {
                return Ok(Page { events, more: true });
            }
        }
        let more = events.len() == self.events as usize;
        Ok(Page { events, more })
    }
}

/// One read of history.
#[derive(Debug, Default)]
pub struct Page {
    pub events: Vec<StoredEvent>,
    /// Whether the read stopped at its budget, so more may follow.
    pub more: bool,
}

/// The ordering numbers a stream can currently serve: `first` is the oldest retained (0 when the
/// stream is empty), `head` the newest (0 when empty).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bounds {
    pub first_available_sequence: i64,
    pub head_sequence: i64,
}

impl Scope {
    /// The event's ordering number in this stream, or `None` if the event is not part of it.
    pub fn position(&self, event: &StoredEvent) -> Option<i64> {
        match self {
            Scope::Session(id) => match &event.session_id {
                Some(s) if s == id => event.session_sequence,
                _ => None,
            },
            Scope::Global(filter) => {
                let wanted = |want: &Option<String>, have: Option<&str>| {
                    want.as_deref().is_none_or(|w| Some(w) == have)
                };
                (wanted(&filter.session, event.session_id.as_deref())
                    && wanted(&filter.event_type, Some(&event.event_type))
                    && wanted(&filter.source, Some(&event.source))
                    && wanted(&filter.origin, Some(&event.origin)))
                .then_some(event.sequence)
            }
        }
    }

    /// Whether consecutive events of this stream have consecutive numbers (so a jump is a gap).
    pub fn is_contiguous(&self) -> bool {
        match self {
            Scope::Session(_) => true,
            Scope::Global(filter) => *filter == Filter::default(),
        }
    }

    /// The events after ordering number `after`, in order, up to `budget`. One short read.
    pub fn page(&self, conn: &Connection, after: i64, budget: Budget) -> rusqlite::Result<Page> {
        self.page_through(conn, after, i64::MAX, budget)
    }

    /// [`Scope::page`] of the events up to sequence `through` only: a read of a global filter
    /// no index serves (`type`, `source`, `origin`) that looks at no more than the events
    /// between `after` and `through`, however few of them match.
    pub fn page_through(
        &self,
        conn: &Connection,
        after: i64,
        through: i64,
        budget: Budget,
    ) -> rusqlite::Result<Page> {
        let limit = budget.events;
        match self {
            Scope::Session(id) => budget.take(
                conn.prepare_cached(&format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ?1 AND session_sequence > ?2
                       AND sequence <= ?4
                     ORDER BY session_sequence LIMIT ?3"
                ))?
                .query_map(params![id, after, limit, through], stored_event)?,
            ),
            // Narrowed to a session: walk that session's index entries, not the whole log
            // (within a session, session_sequence and sequence rise together).
            Scope::Global(f) if f.session.is_some() => budget.take(
                conn.prepare_cached(&format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ?1 AND sequence > ?2
                       AND (?3 IS NULL OR type = ?3) AND (?4 IS NULL OR source = ?4)
                       AND (?6 IS NULL OR origin = ?6) AND sequence <= ?7
                     ORDER BY session_sequence LIMIT ?5"
                ))?
                .query_map(params![f.session, after, f.event_type, f.source, limit, f.origin, through], stored_event)?,
            ),
            Scope::Global(f) => budget.take(
                conn.prepare_cached(&format!(
                    "SELECT {EVENT_COLUMNS} FROM events WHERE sequence > ?1 AND sequence <= ?7
                       AND (?2 IS NULL OR session_id = ?2) AND (?3 IS NULL OR type = ?3)
                       AND (?4 IS NULL OR source = ?4) AND (?6 IS NULL OR origin = ?6)
                     ORDER BY sequence LIMIT ?5"
                ))?
                .query_map(params![after, f.session, f.event_type, f.source, limit, f.origin, through], stored_event)?,
            ),
        }
    }

    /// What the stream holds now. The head counts pruned events too (positions never restart);
    /// with everything pruned, the first available position is the one after the head.
    ///
    /// The oldest and the head are read in one statement, so from one snapshot: read apart, a
    /// commit in between could show no events yet a head above zero, which looks exactly like
    /// "everything was pruned" and would start a new stream after events it never sent.
    pub fn bounds(&self, conn: &Connection) -> rusqlite::Result<Bounds> {
        let (first, head): (Option<i64>, i64) = match self {
            Scope::Session(id) => conn
                .prepare_cached(
                    "SELECT (SELECT MIN(session_sequence) FROM events WHERE session_id = ?1),
                            MAX(COALESCE((SELECT MAX(session_sequence) FROM events
                                          WHERE session_id = ?1), 0),
                                COALESCE((SELECT last_session_sequence FROM pruned_sessions
                                          WHERE session_id = ?1), 0))",
                )?
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))?,
            Scope::Global(_) => conn
                .prepare_cached(
                    "SELECT (SELECT MIN(sequence) FROM events),
                            MAX(COALESCE((SELECT MAX(sequence) FROM events), 0),
                                COALESCE((SELECT CAST(value AS INTEGER) FROM meta
                                          WHERE key = 'pruned_through_sequence'), 0))",
                )?
                .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?,
        };
        let first = first.unwrap_or(if head > 0 { head + 1 } else { 0 });
        Ok(Bounds {
            first_available_sequence: first,
            head_sequence: head,
        })
    }

    /// The ordering number of the event with this id, if it is part of this stream.
    pub fn position_of(&self, conn: &Connection, event_id: &str) -> rusqlite::Result<Option<i64>> {
        let event = conn
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE event_id = ?1"
            ))?
            .query_row([event_id], stored_event)
            .optional()?;
        Ok(event.and_then(|e| match self {
            // A global cursor is a point in the log, whether or not the filter selects it.
            Scope::Global(_) => Some(e.sequence),
            Scope::Session(_) => self.position(&e),
        }))
    }
}
