//! History then live, without a gap or a duplicate. The stream subscribes to the hub *first*,
//! then pages history from the database in short reads, then drains the hub, skipping what it
//! already sent. Any event committed after the subscription is in the hub; any committed before
//! it is in the database; the ordering number de-duplicates the overlap. A subscriber that falls
//! behind the hub (`Lagged`) resubscribes and goes back to the database the same way.
//!
//! Deliveries come in batches (a page of history, or every live event already waiting), so
//! the HTTP layer can write each batch as one chunk: per-event overhead is what limits replay
//! speed and fan-out.

use super::hub::Committed;
use super::scope::Scope;
use crate::store::{Store, StoreError};
use crate::stream::Hub;
use std::sync::Arc;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio_stream::Stream;

/// Events per history read: bounds the memory a stream holds while its client is slow.
const PAGE: u32 = 500;
/// Most live events gathered into one batch.
const LIVE_BATCH: usize = 1000;

/// One delivered event with its ordering number in this stream.
pub struct Delivery {
    pub position: i64,
    pub event: Arc<Committed>,
    /// From the hub (shared by every live stream), not from this stream's own history read.
    pub live: bool,
}

/// What to do after delivering a live batch.
enum Then {
    /// Keep listening to the hub.
    Listen,
    /// Fell behind the hub, or saw a jump: go back to the database.
    CatchUp,
    /// The hub is gone (shutting down).
    Stop,
}

/// The events of `scope` after ordering number `after`: history, then live, forever.
pub fn follow(
    store: Arc<Store>,
    hub: Hub,
    scope: Scope,
    after: i64,
) -> impl Stream<Item = Result<Vec<Delivery>, StoreError>> {
    async_stream::try_stream! {
        let mut last = after;
        let mut live = hub.subscribe();
        let read_page = |from: i64| {
            let page_scope = scope.clone();
            store.read_now(move |conn| page_scope.page(conn, from, PAGE))
        };
        loop {
            // Catch up from the database, a page at a time; each full page starts the read of
            // the next one before it is delivered, so reading overlaps sending.
            let mut next = read_page(last);
            loop {
                let page = next.await?;
                let full = page.len() == PAGE as usize;
                // Pruning can overtake a stream reading old history: end it rather than skip
                // (the client reconnects with its cursor and is told what is gone).
                if let Some(position) = page.first().and_then(|e| scope.position(e))
                    && scope.is_contiguous()
                    && position != last + 1
                {
                    Err(StoreError::HistoryPruned { after: last })?;
                }
                let batch: Vec<Delivery> = page
                    .into_iter()
                    .filter_map(|event| {
                        let position = scope.position(&event)?;
                        Some(Delivery { position, event: Arc::new(Committed::new(event)), live: false })
                    })
                    .collect();
                if let Some(newest) = batch.last() {
                    last = newest.position;
                }
                if !full {
                    if !batch.is_empty() {
                        yield batch;
                    }
                    break;
                }
                next = read_page(last);
                if !batch.is_empty() {
                    yield batch;
                }
            }
            // Then live, until the hub says we fell behind (or a gap shows we did).
            loop {
                let first = live.recv().await;
                let (batch, then) = gather(&scope, &mut last, first, &mut live);
                if !batch.is_empty() {
                    yield batch;
                }
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

/// Takes the event just received and every one already waiting behind it, in order, keeping
/// those of this stream that come after `last`; and says what to do next.
fn gather(
    scope: &Scope,
    last: &mut i64,
    first: Result<Arc<Committed>, RecvError>,
    live: &mut tokio::sync::broadcast::Receiver<Arc<Committed>>,
) -> (Vec<Delivery>, Then) {
    let mut batch = Vec::new();
    let mut next = first;
    loop {
        match next {
            Ok(event) => {
                if let Some(position) = scope.position(&event.event)
                    && position > *last
                {
                    if scope.is_contiguous() && position != *last + 1 {
                        // Deliver what is in order so far; the database fills the jump.
                        return (batch, Then::CatchUp);
                    }
                    *last = position;
                    batch.push(Delivery {
                        position,
                        event,
                        live: true,
                    });
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(
                    missed,
                    "stream fell behind the hub; catching up from the database"
                );
                return (batch, Then::CatchUp);
            }
            Err(RecvError::Closed) => return (batch, Then::Stop),
        }
        if batch.len() >= LIVE_BATCH {
            return (batch, Then::Listen);
        }
        next = match live.try_recv() {
            Ok(event) => Ok(event),
            Err(TryRecvError::Empty) => return (batch, Then::Listen),
            Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
        };
    }
}
