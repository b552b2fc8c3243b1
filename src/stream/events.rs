//! History then live, without a gap or a duplicate. The stream subscribes to the hub *first*,
//! then pages history from the database in short reads, then drains the hub, skipping what it
//! already sent. Any event committed after the subscription is in the hub; any committed before
//! it is in the database; the ordering number de-duplicates the overlap. A subscriber that falls
//! behind the hub (`Lagged`) resubscribes and goes back to the database the same way.
//!
//! A stream yields chunks of SSE frames: a page of history, or a published group of live
//! events. Per-event work is what limits replay speed and fan-out, so a live group's frames are
//! rendered once for every stream of the same kind, and the streams after the first send the
//! same bytes without looking at the events.

use super::frame::frames;
use super::hub::{Committed, FrameKind, Published, Rendered, Subscription};
use super::scope::Budget;
use crate::store::{Store, StoreError};
use crate::stream::Hub;
use axum::body::Bytes;
use std::sync::Arc;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::Stream;

/// Most events per history read.
const PAGE: u32 = 500;
/// Most live events gathered before they are handed on.
const LIVE_BATCH: usize = 1000;

/// What history a stream may hold while its client takes it: a read takes at most
/// `page_bytes` of payload (one event, whatever its size, at the least), and holds that many
/// bytes of the budget all streams share (`permits`, one per KiB) until the client has taken
/// the page. A stream holds at most two pages: the one being sent and the next one, read ahead
/// only when the shared budget has room at once.
#[derive(Clone)]
pub struct History {
    pub permits: Arc<Semaphore>,
    pub page_bytes: usize,
}

impl History {
    fn kib(&self) -> u32 {
        let kib = self.page_bytes.div_ceil(1024).max(1);
        u32::try_from(kib).unwrap_or(u32::MAX)
    }

    async fn acquire(&self) -> OwnedSemaphorePermit {
        self.permits
            .clone()
            .acquire_many_owned(self.kib())
            .await
            .expect("the history budget is never closed")
    }

    fn try_acquire(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_many_owned(self.kib()).ok()
    }

    fn budget(&self) -> Budget {
        Budget {
            events: PAGE,
            bytes: self.page_bytes,
        }
    }
}

/// One delivered event with its ordering number in this stream.
pub struct Delivery {
    pub position: i64,
    pub event: Arc<Committed>,
    /// From the hub (shared by every live stream), not from this stream's own history read.
    pub live: bool,
}

/// What to do after delivering live chunks.
enum Then {
    /// Keep listening to the hub.
    Listen,
    /// Fell behind the hub, or saw a jump: go back to the database.
    CatchUp,
    /// The hub is gone (shutting down).
    Stop,
}

/// The frames of the events of `kind.scope` after ordering number `after`: history, then live,
/// forever.
pub fn follow(
    store: Arc<Store>,
    hub: Hub,
    kind: FrameKind,
    after: i64,
    history: History,
) -> impl Stream<Item = Result<Vec<Bytes>, StoreError>> {
    async_stream::try_stream! {
        let scope = &kind.scope;
        let mut last = after;
        let mut live = hub.subscribe();
        let budget = history.budget();
        let read_page = |from: i64, permit: OwnedSemaphorePermit| {
            let page_scope = scope.clone();
            let read = store.read_now(move |conn| page_scope.page(conn, from, budget));
            async move { read.await.map(|page| (page, permit)) }
        };
        loop {
            // Catch up from the database, a page at a time; a page that may not be the last
            // starts the read of the next one before it is delivered (when the shared budget
            // has room), so reading overlaps sending.
            let mut next = Some(read_page(last, history.acquire().await));
            while let Some(reading) = next.take() {
                let (page, permit) = reading.await?;
                let full = page.more;
                let page = page.events;
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
                hub.metrics.catchup_rows.inc_by(batch.len() as u64);
                // The next read starts before this page is rendered and sent.
                let ahead = if full { history.try_acquire() } else { None };
                let following = ahead.map(|permit| read_page(last, permit));
                if !batch.is_empty() {
                    yield vec![frames(&batch, kind.frame_event)];
                }
                // Polled again: the client's connection has taken the page.
                drop(permit);
                next = match (full, following) {
                    (false, _) => None,
                    (true, Some(following)) => Some(following),
                    (true, None) => Some(read_page(last, history.acquire().await)),
                };
            }
            // Then live, until the hub says we fell behind (or a gap shows we did).
            loop {
                let first = live.recv().await;
                let (chunks, then) = gather(&kind, &mut last, first, &mut live, history.page_bytes);
                if !chunks.is_empty() {
                    yield chunks;
                }
                match then {
                    Then::Listen => {}
                    Then::CatchUp => {
                        hub.metrics.fell_behind.inc();
                        live = hub.subscribe();
                        break;
                    }
                    Then::Stop => return,
                }
            }
        }
    }
}

/// Takes the group just received and every one already waiting behind it, in order (up to
/// [`LIVE_BATCH`] events or `max_bytes` of frames), and makes the frames of the events of this
/// stream that come after `last`; and says what to do next.
fn gather(
    kind: &FrameKind,
    last: &mut i64,
    first: Result<Arc<Published>, RecvError>,
    live: &mut Subscription,
    max_bytes: usize,
) -> (Vec<Bytes>, Then) {
    let mut chunks = Vec::new();
    let mut gathered = 0;
    let mut bytes = 0;
    let mut next = first;
    loop {
        match next {
            Ok(group) => match take(kind, last, &group) {
                Taken::Chunk(chunk, count) => {
                    gathered += count;
                    bytes += chunk.len();
                    chunks.push(chunk);
                }
                Taken::Nothing => {}
                Taken::Jump(partial) => {
                    chunks.extend(partial);
                    return (chunks, Then::CatchUp);
                }
            },
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(
                    missed,
                    "stream fell behind the hub; catching up from the database"
                );
                return (chunks, Then::CatchUp);
            }
            Err(RecvError::Closed) => return (chunks, Then::Stop),
        }
        if gathered >= LIVE_BATCH || bytes >= max_bytes {
            return (chunks, Then::Listen);
        }
        next = match live.try_recv() {
            Ok(group) => Ok(group),
            Err(TryRecvError::Empty) => return (chunks, Then::Listen),
            Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
        };
    }
}

/// What a stream takes from one published group.
enum Taken {
    /// The frames of its events in the group, and how many there are.
    Chunk(Bytes, usize),
    /// None of the group's events is for it (or all were already sent).
    Nothing,
    /// Its events jump past `last + 1`: the frames of those before the jump, then the stream
    /// must catch up from the database.
    Jump(Option<Bytes>),
}

/// The frames of the group's events that are this stream's and after `last`, moving `last` on.
/// When every one of the stream's events in the group is after `last` (the usual case), the
/// group's frames for this kind of stream are rendered once and shared.
fn take(kind: &FrameKind, last: &mut i64, group: &Published) -> Taken {
    let scope = &kind.scope;
    if let Some(shared) = group.rendered(kind)
        && shared.first > *last
        && (!scope.is_contiguous() || shared.first == *last + 1)
    {
        *last = shared.last;
        group.taken();
        return Taken::Chunk(shared.frames, shared.count);
    }
    let mut deliveries = Vec::new();
    // Whether every event of this stream in the group is delivered here, so the frames are
    // the ones every stream of this kind that is not behind sends.
    let mut whole = true;
    for event in &group.events {
        let Some(position) = scope.position(&event.event) else {
            continue;
        };
        if position <= *last {
            whole = false;
            continue;
        }
        if scope.is_contiguous() && position != *last + 1 {
            let partial = (!deliveries.is_empty()).then(|| frames(&deliveries, kind.frame_event));
            return Taken::Jump(partial);
        }
        *last = position;
        deliveries.push(Delivery {
            position,
            event: event.clone(),
            live: true,
        });
    }
    let (Some(first), Some(newest)) = (deliveries.first(), deliveries.last()) else {
        return Taken::Nothing;
    };
    group.taken();
    let render = || frames(&deliveries, kind.frame_event);
    let chunk = if whole {
        let rendered = Rendered {
            first: first.position,
            last: newest.position,
            count: deliveries.len(),
            frames: render(),
        };
        group.share(kind, rendered)
    } else {
        render()
    };
    Taken::Chunk(chunk, deliveries.len())
}
