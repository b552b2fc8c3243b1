//! History then live, without a gap or a duplicate. The stream subscribes to the hub *first*,
//! then pages history from the database in short reads, then drains the hub, skipping what it
//! already sent. Any event committed after the subscription is in the hub; any committed before
//! it is in the database; the ordering number de-duplicates the overlap. A subscriber that falls
//! behind the hub (`Lagged`) resubscribes and goes back to the database the same way.

use super::scope::Scope;
use crate::event::StoredEvent;
use crate::store::{Store, StoreError};
use crate::stream::Hub;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use tokio_stream::Stream;

/// Events per history read: bounds the memory a stream holds while its client is slow.
const PAGE: u32 = 500;

/// One delivered event with its ordering number in this stream.
pub struct Delivery {
    pub position: i64,
    pub event: Arc<StoredEvent>,
}

/// The events of `scope` after ordering number `after`: history, then live, forever.
pub fn follow(
    store: Arc<Store>,
    hub: Hub,
    scope: Scope,
    after: i64,
) -> impl Stream<Item = Result<Delivery, StoreError>> {
    async_stream::try_stream! {
        let mut last = after;
        let mut live = hub.subscribe();
        loop {
            // Catch up from the database, a page at a time.
            loop {
                let (page_scope, from) = (scope.clone(), last);
                let page = store.read(move |conn| page_scope.page(conn, from, PAGE)).await?;
                let full = page.len() == PAGE as usize;
                for event in page {
                    let Some(position) = scope.position(&event) else { continue };
                    last = position;
                    yield Delivery { position, event: Arc::new(event) };
                }
                if !full {
                    break;
                }
            }
            // Then live, until the hub says we fell behind (or a gap shows we did).
            loop {
                match live.recv().await {
                    Ok(event) => {
                        let Some(position) = scope.position(&event) else { continue };
                        if position <= last {
                            continue;
                        }
                        if scope.is_contiguous() && position != last + 1 {
                            break;
                        }
                        last = position;
                        yield Delivery { position, event };
                    }
                    Err(RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "stream fell behind the hub; catching up from the database");
                        live = hub.subscribe();
                        break;
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        }
    }
}
