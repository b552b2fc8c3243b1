//! The projection-change stream: what each committed hook event changed in the heroes,
//! missions and tool uses (`agent_changes`), in sequence order, history then live, numbered by
//! the log's own sequence so it resumes with the same cursor as the global event stream.
//!
//! It follows the hub the way event streams do (subscribe first, then read the database, then
//! live, skipping what was already sent), but reads the changes themselves from the database:
//! a published group only says which sequences are committed. A group without an event that
//! may have a change ([`may_change`]) costs no read; consecutive groups waiting together cost
//! one. Each read is at most [`PAGE`] changes, so a slow client holds at most that many.

use super::Hub;
use super::hub::{Published, Subscription};
use crate::projection::changes::{self, Change};
use crate::store::{Store, StoreError};
use std::sync::Arc;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio_stream::Stream;

/// Changes per database read.
pub const PAGE: u32 = 256;
/// Most published groups gathered before their changes are read.
const GATHER: usize = 64;

/// The changes of the events after sequence `after`, in pages: history, then live, until the
/// hub closes.
pub fn follow(
    store: Arc<Store>,
    hub: Hub,
    after: i64,
) -> impl Stream<Item = Result<Vec<Change>, StoreError>> {
    async_stream::try_stream! {
        // Every sequence up to `last` has been looked at: its changes, if any, were sent.
        let mut last = after;
        let mut live = hub.subscribe();
        loop {
            // History: everything committed before (or while) reading, up to the head.
            loop {
                let page = read(&store, last, i64::MAX).await?;
                let full = page.len() == PAGE as usize;
                if let Some(newest) = page.last() {
                    last = newest.sequence;
                    yield page;
                }
                if !full {
                    break;
                }
            }
            // Live: each gathered run of groups, read as one range.
            loop {
                let first = live.recv().await;
                let (top, hooked, then) = gather(first, &mut live, last);
                if hooked {
                    loop {
                        let page = read(&store, last, top).await?;
                        let full = page.len() == PAGE as usize;
                        if let Some(newest) = page.last() {
                            last = newest.sequence;
                            yield page;
                        }
                        if !full {
                            break;
                        }
                    }
                }
                last = last.max(top);
                match then {
                    Then::Listen => {}
                    Then::CatchUp => {
                        live = hub.subscribe();
                        break;
                    }
                    Then::Stop => return,
                }
            }
        }
    }
}

async fn read(store: &Store, after: i64, through: i64) -> Result<Vec<Change>, StoreError> {
    store
        .read_now(move |conn| changes::page(conn, after, through, PAGE))
        .await
}

enum Then {
    Listen,
    /// Fell behind the hub: back to the database.
    CatchUp,
    /// The hub is gone (shutting down).
    Stop,
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

/// Takes the group received and those already waiting: the highest sequence they hold, and
/// whether any event after `last` among them may have a change row ([`may_change`]).
fn gather(
    first: Result<Arc<Published>, RecvError>,
    live: &mut Subscription,
    last: i64,
) -> (i64, bool, Then) {
    let (mut top, mut hooked) = (last, false);
    let mut next = first;
    for gathered in 1.. {
        match next {
            Ok(group) => {
                for committed in &group.events {
                    let event = &committed.event;
                    top = top.max(event.sequence);
                    hooked |= event.sequence > last && may_change(event);
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(
                    missed,
                    "change stream fell behind the hub; reading the database"
                );
                return (top, hooked, Then::CatchUp);
            }
            Err(RecvError::Closed) => return (top, hooked, Then::Stop),
        }
        if gathered == GATHER {
            break;
        }
        next = match live.try_recv() {
            Ok(group) => Ok(group),
            Err(TryRecvError::Empty) => break,
            Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
        };
    }
    (top, hooked, Then::Listen)
}
