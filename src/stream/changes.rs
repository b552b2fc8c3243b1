//! The projection-change stream: what each committed hook event changed in the heroes,
//! missions and tool uses (`agent_changes`), in sequence order, history then live, numbered by
//! the log's own sequence so it resumes with the same cursor as the global event stream.
//!
//! A [`Source`] over the hub and `agent_changes`: a published group only says which sequences
//! are committed, so the changes themselves are read from the database. A group without an
//! event that may have a change ([`may_change`]) costs no read; one with such an event sends
//! the follower to the database, which reads every change up to the head in pages of at most
//! [`PAGE`] changes and the history budget's page of bytes.

use super::Hub;
use super::follower::{Read, Source, Taken};
use super::hub::{Published, Subscription};
use crate::projection::changes::{self, Change};
use std::sync::Arc;

/// Changes per database read.
pub const PAGE: u32 = 256;

/// The change rows of the log.
pub struct Changes {
    pub hub: Hub,
}

impl Source for Changes {
    type Out = Vec<Change>;
    type Page = Vec<Change>;
    type Live = Subscription;

    fn subscribe(&self) -> Subscription {
        self.hub.subscribe()
    }

    fn contiguous(&self) -> bool {
        false
    }

    fn read(
        &self,
        conn: &rusqlite::Connection,
        after: i64,
        bytes: usize,
    ) -> rusqlite::Result<Read<Vec<Change>>> {
        let tx = conn.unchecked_transaction()?;
        let head: i64 = tx
            .prepare_cached("SELECT COALESCE(MAX(sequence), 0) FROM events")?
            .query_row([], |r| r.get(0))?;
        let (page, more) = changes::page(&tx, after, head, PAGE, bytes)?;
        tx.finish()?;
        // A page that is not the last saw up to its last change; the last, up to the head.
        let last = match (more, page.last()) {
            (true, Some(newest)) => newest.sequence,
            _ => head.max(after),
        };
        Ok(Read {
            first: page.first().map(|c| c.sequence),
            last,
            page: (!page.is_empty()).then_some(page),
            more,
        })
    }

    fn render(&self, page: Vec<Change>) -> Vec<Change> {
        page
    }

    fn take(&self, last: &mut i64, group: &Arc<Published>) -> Taken<Vec<Change>> {
        let mut top = *last;
        for committed in &group.events {
            let event = &committed.event;
            if event.sequence > *last && may_change(event) {
                return Taken::Read;
            }
            top = top.max(event.sequence);
        }
        *last = top;
        Taken::Nothing
    }
}

/// Whether an event may have a change row: a session's hook event, transcript record (its
/// hero's model) or coordination outcome (a permission decision).
fn may_change(event: &crate::event::StoredEvent) -> bool {
    use crate::event::Source;
    event.session_id.is_some()
        && matches!(
            Source::parse(&event.source),
            Some(Source::Hook | Source::Transcript | Source::Coordination)
        )
}
