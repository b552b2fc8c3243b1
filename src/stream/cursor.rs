//! Where a stream starts. Precedence, highest first: the `Last-Event-ID` header (a browser's
//! EventSource resends the original URL with the newest id it saw), `after_event_id`,
//! `after_sequence`, `from=now`; with none, the start of the retained history. A cursor the
//! stream cannot honour is stale: the caller is told, never silently moved. Every stream
//! resolves its cursor here, whatever it holds (the log, a session, response events).

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

/// What a stream that opens past pruned history says first: positions `after + 1` to
/// `first - 1` are gone, and `first` is the oldest retained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pruned {
    pub after: i64,
    pub first: i64,
}

impl Pruned {
    /// The range as the `STREAM_GAP` records give it.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "fromSequence": self.after + 1,
            "toSequence": self.first - 1,
            "firstAvailableSequence": self.first,
        })
    }
}

impl Resolution {
    /// Where a stream opens: after which position, and whether it says first what was pruned
    /// (when `reports_gaps`; otherwise a cursor behind the history is stale). `Err` carries
    /// the bounds for the stale answer.
    pub fn opening(self, reports_gaps: bool) -> Result<(i64, Option<Pruned>), Bounds> {
        match self {
            Resolution::Ready { after, .. } => Ok((after, None)),
            Resolution::Behind { after, bounds } if reports_gaps => {
                let first = bounds.first_available_sequence;
                Ok((first - 1, Some(Pruned { after, first })))
            }
            Resolution::Stale { bounds } | Resolution::Behind { bounds, .. } => Err(bounds),
        }
    }

    pub fn bounds(&self) -> Bounds {
        match *self {
            Resolution::Ready { bounds, .. }
            | Resolution::Stale { bounds }
            | Resolution::Behind { bounds, .. } => bounds,
        }
    }
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
        let bounds = scope.bounds(&tx)?;
        let resolution = self.resolve_with(bounds, |id| scope.position_of(&tx, id));
        tx.finish()?;
        resolution
    }

    /// Resolves the cursor against a stream's `bounds`, with `position_of` giving the position
    /// of an event id in that stream (read from the same snapshot as the bounds).
    pub fn resolve_with(
        &self,
        bounds: Bounds,
        position_of: impl FnOnce(&str) -> rusqlite::Result<Option<i64>>,
    ) -> rusqlite::Result<Resolution> {
        let named = match (
            &self.last_event_id,
            &self.after_event_id,
            self.after_sequence,
        ) {
            (Some(last), _, _) => match last.trim().parse::<i64>() {
                Ok(n) => Some(Some(n)),
                Err(_) => Some(position_of(last)?),
            },
            (None, Some(id), _) => Some(position_of(id)?),
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
        if after > bounds.head_sequence || after < 0 {
            return Ok(Resolution::Stale { bounds });
        }
        if after < oldest {
            return Ok(Resolution::Behind { after, bounds });
        }
        Ok(Resolution::Ready { after, bounds })
    }
}
