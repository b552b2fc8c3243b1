//! The factory session stream's history in ascending tick order (seed 003: "the server sends
//! retained history first in ascending tick order, then continues on the same connection with
//! live FactoryEvent records"). Ties, and events without a tick, keep the log's order: an
//! event without `context.tick` (one posted through `POST /events`) takes the tick of the
//! event before it, so it stays beside its neighbours.
//!
//! Cursors still name positions in the log (`sessionSequence`), so a frame's `id` is not the
//! event's own position but the *watermark*: the highest position up to which every event has
//! been sent. Reconnecting with any `id` received therefore never skips an event; if the
//! connection broke while history was out of order, events above the watermark that were
//! already sent come again (a client drops them by `context.sessionSequence`, which the seed
//! says is for "replay deduplication"). In log order the watermark is the event's position.
//!
//! The history is the session's events up to its head when the stream opens: their positions,
//! ticks and sizes are read first (one short read), sorted, then fetched in pages of at most
//! 500 events and the [`History`] budget's `page_bytes`, each page holding its share of the
//! budget all streams share until the client has taken it. Then the stream goes on as the
//! [follower](super::follower) of the session's [`Events`] from that head, which sends anything
//! committed meanwhile.

use super::FrameKind;
use super::events::{Delivery, Events};
use super::follower::{History, follow};
use super::frame;
use super::hub::Committed;
use crate::store::read::{EVENT_COLUMNS, stored_event};
use crate::store::{Store, StoreError};
use crate::stream::Hub;
use crate::stream::scope::Scope;
use axum::body::Bytes;
use rusqlite::params;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tokio_stream::Stream;

/// Events fetched per history read.
const PAGE: usize = 500;

/// The stream of a session (`kind.scope` must be `Scope::Session`) after position `after`:
/// history in tick order, then live.
pub fn follow_ticks(
    store: Arc<Store>,
    hub: Hub,
    kind: FrameKind,
    after: i64,
    history: History,
) -> impl Stream<Item = Result<Bytes, StoreError>> {
    async_stream::try_stream! {
        let Scope::Session(session) = kind.scope.clone() else {
            unreachable!("tick order is for session streams")
        };
        let keys_session = session.clone();
        let keys = store
            .read_now(move |conn| tick_order(conn, &keys_session, after))
            .await?;
        let head = keys.iter().map(|k| k.position).max().unwrap_or(after);
        let mut watermark = Watermark::new(after);
        for chunk in pages(&keys, history.page_bytes) {
            let permit = history.acquire().await;
            let positions: Vec<i64> = chunk.iter().map(|k| k.position).collect();
            let wanted = positions.clone();
            let page_session = session.clone();
            let mut rows = store.read_now(move |conn| fetch(conn, &page_session, &wanted)).await?;
            let mut batch = Vec::with_capacity(positions.len());
            for position in positions {
                // Pruned since the keys were read: end rather than skip (as `follow` does).
                let event = rows.remove(&position).ok_or(StoreError::HistoryPruned { after })?;
                batch.push(Delivery {
                    position: watermark.sent(position),
                    event: Arc::new(Committed::new(event)),
                    live: false,
                });
            }
            hub.metrics.catchup_rows.inc_by(batch.len() as u64);
            yield frame::events(&batch, kind.frame_event);
            // Polled again: the client's connection has taken the page.
            drop(permit);
        }
        let rest = follow(Arc::new(Events { hub, kind }), store, head, history);
        for await chunk in rest {
            yield chunk?;
        }
    }
}

/// One event of the history: where it goes in tick order, and its payload's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    tick: i64,
    position: i64,
    bytes: usize,
}

/// The session's events after `after`, in (tick, position) order.
fn tick_order(
    conn: &rusqlite::Connection,
    session: &str,
    after: i64,
) -> rusqlite::Result<Vec<Key>> {
    let mut statement = conn.prepare_cached(
        "SELECT session_sequence, json_extract(payload, '$.context.tick'), length(payload)
         FROM events WHERE session_id = ?1 AND session_sequence > ?2 ORDER BY session_sequence",
    )?;
    let rows = statement.query_map(params![session, after], |r| {
        let tick = r.get::<_, Option<i64>>(1).ok().flatten();
        let bytes = usize::try_from(r.get::<_, i64>(2)?).unwrap_or(0);
        Ok((r.get::<_, i64>(0)?, tick, bytes))
    })?;
    let mut tick = 0;
    let mut keys = Vec::new();
    for row in rows {
        let (position, own, bytes) = row?;
        tick = own.unwrap_or(tick);
        keys.push(Key {
            tick,
            position,
            bytes,
        });
    }
    keys.sort_unstable();
    Ok(keys)
}

/// The keys cut into pages of at most [`PAGE`] events and `page_bytes` of payload (one event,
/// whatever its size, at the least).
fn pages(keys: &[Key], page_bytes: usize) -> Vec<&[Key]> {
    let mut pages = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, key) in keys.iter().enumerate() {
        let full = i - start == PAGE || (i > start && bytes + key.bytes > page_bytes);
        if full {
            pages.push(&keys[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += key.bytes;
    }
    if start < keys.len() {
        pages.push(&keys[start..]);
    }
    pages
}

/// The rows at these positions of the session, by position.
fn fetch(
    conn: &rusqlite::Connection,
    session: &str,
    positions: &[i64],
) -> rusqlite::Result<HashMap<i64, crate::event::StoredEvent>> {
    let list = serde_json::to_string(positions).expect("numbers serialise");
    conn.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ?1
           AND session_sequence IN (SELECT value FROM json_each(?2))"
    ))?
    .query_map(params![session, list], stored_event)?
    .map(|row| row.map(|e| (e.session_sequence.unwrap_or_default(), e)))
    .collect()
}

/// The highest position up to which every position has been sent.
struct Watermark {
    mark: i64,
    above: BTreeSet<i64>,
}

impl Watermark {
    fn new(after: i64) -> Watermark {
        Watermark {
            mark: after,
            above: BTreeSet::new(),
        }
    }

    /// Notes `position` as sent; returns the watermark after it.
    fn sent(&mut self, position: i64) -> i64 {
        self.above.insert(position);
        while self.above.remove(&(self.mark + 1)) {
            self.mark += 1;
        }
        self.mark
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_hold_at_most_500_events_and_the_byte_budget_but_one_event_at_least() {
        let key = |position, bytes| Key {
            tick: 0,
            position,
            bytes,
        };
        let keys: Vec<Key> = (1..=1200).map(|p| key(p, 10)).collect();
        let sizes: Vec<usize> = pages(&keys, 1 << 20).iter().map(|p| p.len()).collect();
        assert_eq!(sizes, [500, 500, 200]);
        let keys = [key(1, 600), key(2, 600), key(3, 5000), key(4, 100)];
        let sizes: Vec<usize> = pages(&keys, 1000).iter().map(|p| p.len()).collect();
        assert_eq!(sizes, [1, 1, 1, 1]);
    }

    #[test]
    fn the_watermark_rises_only_over_positions_all_sent() {
        let mut w = Watermark::new(0);
        // Ticks 5, 2, 3 at positions 1, 2, 3 are sent as 2, 3, 1.
        assert_eq!([w.sent(2), w.sent(3), w.sent(1)], [0, 0, 3]);
        let mut w = Watermark::new(10);
        assert_eq!(
            [w.sent(11), w.sent(13), w.sent(12), w.sent(14)],
            [11, 11, 13, 14]
        );
    }
}
