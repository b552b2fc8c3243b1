//! A session's response-event stream: the history after a cursor from the table, then live
//! records from the hub, without a gap or a duplicate. The stream subscribes before it reads,
//! so whatever commits after the read is in the hub; sequences are contiguous per session, so
//! a live record that is not the next one sends the stream back to the table. A page of
//! history holds at most `page_bytes` of envelopes and that share of the budget all streams
//! share (`permits`, one per KiB) until the client has taken it, as the log's streams do.

use crate::response::hub::ResponseHub;
use crate::response::{Stored, store};
use crate::store::{Store, StoreError};
use axum::body::Bytes;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::sync::broadcast::error::RecvError;
use tokio_stream::Stream;

/// Records per history read.
const PAGE: u32 = 500;

/// The SSE event name of every frame.
pub const FRAME_EVENT: &str = "FactoryResponseEvent";

/// The frames of `session`'s response events after `after`: history, then live, forever.
pub fn follow(
    store: Arc<Store>,
    hub: ResponseHub,
    session: String,
    after: i64,
    budget: (Arc<Semaphore>, usize),
) -> impl Stream<Item = Result<Bytes, StoreError>> {
    let (permits, page_bytes) = budget;
    let kib = u32::try_from(page_bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
    async_stream::try_stream! {
        let mut last = after;
        let mut live = hub.subscribe();
        loop {
            loop {
                let permit = permits
                    .clone()
                    .acquire_many_owned(kib)
                    .await
                    .expect("the history budget is never closed");
                let page_session = session.clone();
                let (page, full) = store
                    .read_now(move |conn| store::page(conn, &page_session, last, PAGE, page_bytes))
                    .await?;
                // Pruned while it was being read: end rather than skip (reconnecting with the
                // same cursor gets the STREAM_GAP record).
                if page.first().is_some_and(|r| r.sequence != last + 1) {
                    Err(StoreError::HistoryPruned { after: last })?;
                }
                if let Some(newest) = page.last() {
                    last = newest.sequence;
                    yield frames(&page);
                }
                // Polled again: the client's connection has taken the page.
                drop(permit);
                if !full {
                    break;
                }
            }
            loop {
                match live.recv().await {
                    Ok(group) => {
                        let mine: Vec<&Stored> = group
                            .iter()
                            .filter(|r| r.session_id == session && r.sequence > last)
                            .collect();
                        if mine.first().is_some_and(|r| r.sequence != last + 1) {
                            break;
                        }
                        if let Some(newest) = mine.last() {
                            last = newest.sequence;
                            yield frames(mine.into_iter().cloned().collect::<Vec<_>>().as_slice());
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        live = hub.subscribe();
                        break;
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        }
    }
}

/// `id:` / `event:` / `data:` frames, one per record. Envelopes are stored as one line.
pub fn frames(records: &[Stored]) -> Bytes {
    let mut out = String::new();
    for r in records {
        out.push_str(&format!(
            "id: {}\nevent: {FRAME_EVENT}\ndata: {}\n\n",
            r.sequence, r.envelope
        ));
    }
    Bytes::from(out)
}
