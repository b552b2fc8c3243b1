//! A session's response-event stream: a [`Source`] over the response hub and the
//! `response_events` table. Sequences are contiguous per session, so a live record that is not
//! the next one sends the follower back to the table.

use super::cursor::{Cursor, Resolution};
use super::follower::{Read, Source, Taken};
use super::frame;
use super::scope::Bounds;
use crate::response::hub::ResponseHub;
use crate::response::{Stored, store};
use axum::body::Bytes;
use std::sync::Arc;
use tokio::sync::broadcast;

/// Records per history read.
const PAGE: u32 = 500;

/// The SSE event name of every frame.
pub const FRAME_EVENT: &str = "FactoryResponseEvent";

/// One session's response events.
pub struct Responses {
    pub hub: ResponseHub,
    pub session: String,
}

impl Source for Responses {
    type Out = Bytes;
    type Page = Vec<Stored>;
    type Live = broadcast::Receiver<Arc<Vec<Stored>>>;

    fn subscribe(&self) -> Self::Live {
        self.hub.subscribe()
    }

    fn contiguous(&self) -> bool {
        true
    }

    fn read(
        &self,
        conn: &rusqlite::Connection,
        after: i64,
        bytes: usize,
    ) -> rusqlite::Result<Read<Vec<Stored>>> {
        let (page, more) = store::page(conn, &self.session, after, PAGE, bytes)?;
        Ok(Read {
            first: page.first().map(|r| r.sequence),
            last: page.last().map_or(after, |r| r.sequence),
            page: (!page.is_empty()).then_some(page),
            more,
        })
    }

    fn render(&self, page: Vec<Stored>) -> Bytes {
        frames(page.iter())
    }

    fn take(&self, last: &mut i64, group: &Arc<Vec<Stored>>) -> Taken<Bytes> {
        let mine: Vec<&Stored> = group
            .iter()
            .filter(|r| r.session_id == self.session && r.sequence > *last)
            .collect();
        match (mine.first(), mine.last()) {
            (Some(first), _) if first.sequence != *last + 1 => Taken::Jump(None),
            (Some(_), Some(newest)) => {
                *last = newest.sequence;
                let out = frames(mine.iter().copied());
                let size = out.len();
                Taken::Out(out, mine.len(), size)
            }
            _ => Taken::Nothing,
        }
    }
}

/// One frame per record. Envelopes are stored as one line.
fn frames<'a>(records: impl Iterator<Item = &'a Stored>) -> Bytes {
    let mut out = String::new();
    for r in records {
        frame::push(&mut out, r.sequence, FRAME_EVENT, &r.envelope);
    }
    Bytes::from(out)
}

/// The session's response-event cursor resolved in one read transaction; and whether the
/// session has events in the log or response events at all.
pub fn resolve(
    conn: &rusqlite::Connection,
    session: &str,
    cursor: &Cursor,
) -> rusqlite::Result<(Resolution, bool)> {
    let tx = conn.unchecked_transaction()?;
    let held = store::bounds(&tx, session)?;
    let bounds = Bounds {
        first_available_sequence: held.first_available_sequence,
        head_sequence: held.head_sequence,
    };
    let resolution = cursor.resolve_with(bounds, |id| store::sequence_of(&tx, session, id))?;
    let known = store::session_known(&tx, session)?;
    tx.finish()?;
    Ok((resolution, known))
}
