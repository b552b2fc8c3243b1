//! History then live, without a gap or a duplicate, for every stream hooklog serves. The
//! follower subscribes to the live side *first*, then pages history from the database in short
//! reads, then takes the live groups, skipping what it already sent. Anything committed after
//! the subscription is in the live side; anything committed before it is in the database; the
//! ordering number de-duplicates the overlap. A follower that falls behind the live side
//! (`Lagged`, or a jump in a contiguous stream) subscribes again and goes back to the
//! database the same way.
//!
//! A stream supplies its [`Source`]: how to read a page of history after a position, how to
//! subscribe, and what it takes from a live group (its frames). The follower owns the rest:
//! the order of those steps, the pruning check, and the history byte budget all streams share.

use crate::store::{Store, StoreError};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::Stream;

/// Most live items gathered before they are handed on.
const LIVE_BATCH: usize = 1000;
/// Most live groups gathered before they are handed on.
const LIVE_GROUPS: usize = 64;

/// What history a stream may hold while its client takes it: a read takes at most
/// `page_bytes` (one item, whatever its size, at the least), and holds that many bytes of the
/// budget all streams share (`permits`, one per KiB) until the client has taken the page. A
/// stream holds at most two pages: the one being sent and the next one, read ahead only when
/// the shared budget has room at once.
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

    /// Room for one page, waiting for it if other streams hold the budget.
    pub async fn acquire(&self) -> OwnedSemaphorePermit {
        self.permits
            .clone()
            .acquire_many_owned(self.kib())
            .await
            .expect("the history budget is never closed")
    }

    fn try_acquire(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_many_owned(self.kib()).ok()
    }
}

/// One read of history.
pub struct Read<P> {
    /// What was read (`None`: nothing after the position), rendered by [`Source::render`] once
    /// the next read has started.
    pub page: Option<P>,
    /// The position of the first item read, for the pruning check of a contiguous stream.
    pub first: Option<i64>,
    /// Everything up to here has been looked at: the newest item read, or further (a read
    /// that saw the head of a sparse stream).
    pub last: i64,
    /// Whether the read stopped at its budget, so more may follow.
    pub more: bool,
}

/// What a stream takes from one live group.
pub enum Taken<O> {
    /// Its items in the group, how many, and how many bytes they are.
    Out(O, usize, usize),
    /// None of the group is for it (or all of it was already sent).
    Nothing,
    /// Its items jump past `last + 1`: what came before the jump, then the stream subscribes
    /// again and catches up from the database.
    Jump(Option<O>),
    /// The group says only that something of the stream's was committed: read it from the
    /// database (the subscription is kept).
    Read,
}

/// A subscription to what is committed from now on.
pub trait Live: Send + 'static {
    type Group: Send + Sync + 'static;
    /// The next group; `Lagged` when the subscriber is behind what the live side keeps.
    fn recv(&mut self) -> impl Future<Output = Result<Self::Group, RecvError>> + Send;
    /// The next group if one is waiting.
    fn try_recv(&mut self) -> Result<Self::Group, TryRecvError>;
}

impl<T: Clone + Send + Sync + 'static> Live for tokio::sync::broadcast::Receiver<T> {
    type Group = T;

    fn recv(&mut self) -> impl Future<Output = Result<T, RecvError>> + Send {
        tokio::sync::broadcast::Receiver::recv(self)
    }

    fn try_recv(&mut self) -> Result<T, TryRecvError> {
        tokio::sync::broadcast::Receiver::try_recv(self)
    }
}

/// What a stream follows and how it frames it.
pub trait Source: Send + Sync + 'static {
    /// What the stream sends: a chunk of SSE frames, or the items themselves.
    type Out: Send + 'static;
    /// What one read of history holds, before it is rendered.
    type Page: Send + 'static;
    type Live: Live;
    fn subscribe(&self) -> Self::Live;
    /// Whether consecutive items have consecutive positions (so a jump is a gap).
    fn contiguous(&self) -> bool;
    /// One read of history after `after`, stopping once `bytes` are read (at least one item).
    fn read(
        &self,
        conn: &rusqlite::Connection,
        after: i64,
        bytes: usize,
    ) -> rusqlite::Result<Read<Self::Page>>;
    /// What a page of history is sent as (done on the stream's task, while the next page is
    /// read).
    fn render(&self, page: Self::Page) -> Self::Out;
    /// What the stream takes from a live group after `last`, moving `last` past what it took.
    fn take(&self, last: &mut i64, group: &<Self::Live as Live>::Group) -> Taken<Self::Out>;
    /// Called when the stream fell behind the live side.
    fn fell_behind(&self) {}
}

/// What to do after delivering live chunks.
enum Then {
    /// Keep listening.
    Listen,
    /// Read from the database, keeping the subscription.
    Read,
    /// Fell behind, or saw a jump: subscribe again and go back to the database.
    CatchUp,
    /// The live side is gone (shutting down).
    Stop,
}

/// What `source` holds after position `after`: history, then live, until the live side closes.
pub fn follow<S: Source>(
    source: Arc<S>,
    store: Arc<Store>,
    after: i64,
    history: History,
) -> impl Stream<Item = Result<S::Out, StoreError>> {
    async_stream::try_stream! {
        let mut last = after;
        let mut live = source.subscribe();
        let read_page = |from: i64, permit: OwnedSemaphorePermit| {
            let (source, bytes) = (source.clone(), history.page_bytes);
            let read = store.read_now(move |conn| source.read(conn, from, bytes));
            async move { read.await.map(|page| (page, permit)) }
        };
        loop {
            // Catch up from the database, a page at a time; a page that may not be the last
            // starts the read of the next one before it is delivered (when the shared budget
            // has room), so reading overlaps sending.
            let mut next = Some(read_page(last, history.acquire().await));
            while let Some(reading) = next.take() {
                let (page, permit) = reading.await?;
                // Pruning can overtake a stream reading old history: end it rather than skip
                // (the client reconnects with its cursor and is told what is gone).
                if source.contiguous() && page.first.is_some_and(|first| first != last + 1) {
                    Err(StoreError::HistoryPruned { after: last })?;
                }
                last = last.max(page.last);
                // The next read starts before this page is sent.
                let ahead = if page.more { history.try_acquire() } else { None };
                let following = ahead.map(|permit| read_page(last, permit));
                if let Some(read) = page.page {
                    yield source.render(read);
                }
                // Polled again: the client's connection has taken the page.
                drop(permit);
                next = match (page.more, following) {
                    (false, _) => None,
                    (true, Some(following)) => Some(following),
                    (true, None) => Some(read_page(last, history.acquire().await)),
                };
            }
            // Then live, until the live side says to read again.
            loop {
                let first = live.recv().await;
                let (outs, then) = gather(&*source, &mut last, first, &mut live, history.page_bytes);
                for out in outs {
                    yield out;
                }
                match then {
                    Then::Listen => {}
                    Then::Read => break,
                    Then::CatchUp => {
                        source.fell_behind();
                        live = source.subscribe();
                        break;
                    }
                    Then::Stop => return,
                }
            }
        }
    }
}

/// Takes the group just received and every one already waiting behind it, in order (up to
/// [`LIVE_BATCH`] items, [`LIVE_GROUPS`] groups or `max_bytes`), and says what to do next.
fn gather<S: Source>(
    source: &S,
    last: &mut i64,
    first: Result<<S::Live as Live>::Group, RecvError>,
    live: &mut S::Live,
    max_bytes: usize,
) -> (Vec<S::Out>, Then) {
    let mut outs = Vec::new();
    let (mut items, mut bytes) = (0, 0);
    let mut next = first;
    for groups in 1.. {
        match next {
            Ok(group) => match source.take(last, &group) {
                Taken::Out(out, count, size) => {
                    items += count;
                    bytes += size;
                    outs.push(out);
                }
                Taken::Nothing => {}
                Taken::Jump(partial) => {
                    outs.extend(partial);
                    return (outs, Then::CatchUp);
                }
                Taken::Read => return (outs, Then::Read),
            },
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "stream fell behind; catching up from the database");
                return (outs, Then::CatchUp);
            }
            Err(RecvError::Closed) => return (outs, Then::Stop),
        }
        if items >= LIVE_BATCH || bytes >= max_bytes || groups >= LIVE_GROUPS {
            break;
        }
        next = match live.try_recv() {
            Ok(group) => Ok(group),
            Err(TryRecvError::Empty) => break,
            Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
        };
    }
    (outs, Then::Listen)
}
