//! The log's streams (`/events`, a session's events): a [`Source`] over the hub and the
//! `events` table. Per-event work is what limits replay speed and fan-out, so a live group's
//! frames are rendered once for every stream of the same kind, and the streams after the first
//! send the same bytes without looking at the events.

use super::follower::{Read, Source, Taken};
use super::frame;
use super::hub::{Committed, FrameKind, Published, Rendered, Subscription};
use super::scope::Budget;
use crate::stream::Hub;
use axum::body::Bytes;
use std::sync::Arc;

/// Most events per history read.
const PAGE: u32 = 500;

/// One delivered event with its ordering number in this stream.
pub struct Delivery {
    pub position: i64,
    pub event: Arc<Committed>,
    /// From the hub (shared by every live stream), not from this stream's own history read.
    pub live: bool,
}

/// The events of `kind.scope`, framed as `kind` says.
pub struct Events {
    pub hub: Hub,
    pub kind: FrameKind,
}

impl Source for Events {
    type Out = Bytes;
    type Page = Vec<Delivery>;
    type Live = Subscription;

    fn subscribe(&self) -> Subscription {
        self.hub.subscribe()
    }

    fn contiguous(&self) -> bool {
        self.kind.scope.is_contiguous()
    }

    fn read(
        &self,
        conn: &rusqlite::Connection,
        after: i64,
        bytes: usize,
    ) -> rusqlite::Result<Read<Vec<Delivery>>> {
        let scope = &self.kind.scope;
        let budget = Budget {
            events: PAGE,
            bytes,
        };
        let page = scope.page(conn, after, budget)?;
        let batch: Vec<Delivery> = page
            .events
            .into_iter()
            .filter_map(|event| {
                let position = scope.position(&event)?;
                let event = Arc::new(Committed::new(event));
                Some(Delivery {
                    position,
                    event,
                    live: false,
                })
            })
            .collect();
        self.hub.metrics.catchup_rows.inc_by(batch.len() as u64);
        Ok(Read {
            first: batch.first().map(|d| d.position),
            last: batch.last().map_or(after, |d| d.position),
            more: page.more,
            page: (!batch.is_empty()).then_some(batch),
        })
    }

    fn render(&self, batch: Vec<Delivery>) -> Bytes {
        frame::events(&batch, self.kind.frame_event)
    }

    fn take(&self, last: &mut i64, group: &Arc<Published>) -> Taken<Bytes> {
        take(&self.kind, last, group)
    }

    fn fell_behind(&self) {
        self.hub.metrics.fell_behind.inc();
    }
}

/// The frames of the group's events that are this stream's and after `last`, moving `last` on.
/// When every one of the stream's events in the group is after `last` (the usual case), the
/// group's frames for this kind of stream are rendered once and shared.
fn take(kind: &FrameKind, last: &mut i64, group: &Published) -> Taken<Bytes> {
    let scope = &kind.scope;
    if let Some(shared) = group.rendered(kind)
        && shared.first > *last
        && (!scope.is_contiguous() || shared.first == *last + 1)
    {
        *last = shared.last;
        group.taken();
        let size = shared.frames.len();
        return Taken::Out(shared.frames, shared.count, size);
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
            let partial =
                (!deliveries.is_empty()).then(|| frame::events(&deliveries, kind.frame_event));
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
    let render = || frame::events(&deliveries, kind.frame_event);
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
    let size = chunk.len();
    Taken::Out(chunk, deliveries.len(), size)
}
