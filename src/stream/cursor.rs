//! Where a stream starts. Precedence, highest first: the `Last-Event-ID` header (a browser's
//! EventSource resends the original URL with the newest id it saw), `after_event_id`,
//! `after_sequence`, `from=now`; with none, the start of the retained history. A cursor the
//! stream cannot honour is stale: the caller is told, never silently moved.

use super::scope::{Bounds, Scope};
use rusqlite::Connection;

#[derive(Debug, Clone, Default)]
pub struct Cursor {
    pub last_event_id: Option<String>,
    pub after_event_id: Option<String>,
    pub after_sequence: Option<i64>,
    pub from_now: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolution {
    /// Deliver events with ordering numbers above `after`.
    Ready { after: i64, bounds: Bounds },
    /// The cursor names an event this stream does not hold, or a position beyond its head.
    Stale { bounds: Bounds },
    /// The cursor is before the retained history: events after it were pruned.
    Behind { after: i64, bounds: Bounds },
}

impl Cursor {
    pub fn is_set(&self) -> bool {
        self.last_event_id.is_some()
            || self.after_event_id.is_some()
            || self.after_sequence.is_some()
    }

    /// Resolves the cursor against the stream's current history, in one short read
    /// transaction: the bounds and the event a cursor names come from the same snapshot.
    pub fn resolve(&self, conn: &Connection, scope: &Scope) -> rusqlite::Result<Resolution> {
        let tx = conn.unchecked_transaction()?;
        let resolution = self.resolve_in(&tx, scope);
        tx.finish()?;
        resolution
    }

    fn resolve_in(&self, conn: &Connection, scope: &Scope) -> rusqlite::Result<Resolution> {
        let bounds = scope.bounds(conn)?;
        let named = match (
            &self.last_event_id,
            &self.after_event_id,
            self.after_sequence,
        ) {
            (Some(last), _, _) => match last.trim().parse::<i64>() {
                Ok(n) => Some(Some(n)),
                Err(_) => Some(scope.position_of(conn, last)?),
            },
            (None, Some(id), _) => Some(scope.position_of(conn, id)?),
            (None, None, Some(n)) => Some(Some(n)),
            (None, None, None) => None,
        };
        let after = match named {
            Some(None) => return Ok(Resolution::Stale { bounds }),
            Some(Some(n)) => n,
            None if self.from_now => bounds.head_sequence,
            None => (bounds.first_available_sequence - 1).max(0),
        };
        // Valid: from just before the oldest retained event up to the head.
        let oldest = (bounds.first_available_sequence - 1).max(0);
        if after > bounds.head_sequence {
            return Ok(Resolution::Stale { bounds });
        }
        if after < oldest {
            return Ok(Resolution::Behind { after, bounds });
        }
        Ok(Resolution::Ready { after, bounds })
    }
}
