//! The hub: a tokio broadcast of committed events, in sequence order. Subscribers that fall
//! behind get `Lagged` and must go back to the database; the writer never waits for them.
//!
//! A commit is published as groups of at most [`GROUP`] events, so a live stream takes a
//! commit in a few receives rather than one per event, and streams of the same kind share the
//! frames of a group: the first to send it renders them, the others send the same bytes.
//!
//! What the hub keeps for subscribers that are behind is bounded in bytes, not only in groups:
//! the broadcast carries weak references, and the hub holds the newest groups up to its byte
//! budget. A subscriber whose next group has already been let go of is behind, exactly as if
//! the broadcast had overwritten it, and catches up from the database.

use super::metrics::StreamMetrics;
use super::scope::Scope;
use crate::event::StoredEvent;
use crate::store::stages::{Stage, Stages};
use axum::body::Bytes;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

/// Most events in one published group. With the hub's capacity in groups, this bounds the
/// events the hub holds to `capacity * GROUP`.
pub const GROUP: usize = 16;

/// A committed event as streams share it: its envelope JSON is rendered once, by the first
/// stream that sends it, however many streams send it after.
pub struct Committed {
    pub event: StoredEvent,
    envelope: OnceLock<String>,
}

impl Committed {
    pub fn new(event: StoredEvent) -> Committed {
        Committed {
            event,
            envelope: OnceLock::new(),
        }
    }

    /// The envelope, rendered once and kept for every later caller (an event many streams send).
    pub fn envelope_json(&self) -> &str {
        self.envelope.get_or_init(|| self.event.envelope_json())
    }

    /// Appends the envelope to `out`, rendering it in place unless it is already kept (an
    /// event only one stream sends, such as a page of history).
    pub fn write_envelope(&self, out: &mut String) {
        match self.envelope.get() {
            Some(rendered) => out.push_str(rendered),
            None => self.event.write_envelope(out),
        }
    }
}

/// What makes two streams' frames for the same events identical: what they select and number
/// (the scope) and the SSE event name they give every frame, if any.
#[derive(Clone, PartialEq)]
pub struct FrameKind {
    pub scope: Scope,
    pub frame_event: Option<&'static str>,
}

/// Consecutive events of one commit, in sequence order, with the frames rendered for them so
/// far: one chunk per kind of stream that took all of its events in this group.
pub struct Published {
    pub events: Vec<Arc<Committed>>,
    rendered: Mutex<Vec<(FrameKind, Rendered)>>,
    /// When the writer handed it over, right after its commit: its events' `deliver` stage
    /// runs from there to the first stream that takes them.
    committed_at: Instant,
    taken: AtomicBool,
    stages: Stages,
}

/// The frames of a group for one kind of stream, and the positions they cover.
#[derive(Clone)]
pub struct Rendered {
    /// Ordering numbers of the first and last event framed.
    pub first: i64,
    pub last: i64,
    /// How many events are framed.
    pub count: usize,
    pub frames: Bytes,
}

impl Published {
    /// A stream takes events of this group to send: the first to do so times their `deliver`
    /// stage (counted for every event of the group).
    pub fn taken(&self) {
        if !self.taken.swap(true, Ordering::Relaxed) {
            let took = self.committed_at.elapsed();
            self.stages.observe(Stage::Deliver, took, self.events.len());
        }
    }

    /// The frames already rendered for streams of `kind`, if a stream of that kind took this
    /// group whole.
    pub fn rendered(&self, kind: &FrameKind) -> Option<Rendered> {
        let rendered = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
        rendered
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, r)| r.clone())
    }

    /// Keeps `rendered` as the frames of this group for streams of `kind` and returns its bytes
    /// (another stream's, if one of the same kind kept them first: they are the same frames).
    pub fn share(&self, kind: &FrameKind, rendered: Rendered) -> Bytes {
        let mut kept = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, r)) = kept.iter().find(|(k, _)| k == kind) {
            return r.frames.clone();
        }
        let frames = rendered.frames.clone();
        kept.push((kind.clone(), rendered));
        frames
    }
}

#[derive(Clone)]
pub struct Hub {
    sender: broadcast::Sender<Weak<Published>>,
    kept: Arc<Mutex<Kept>>,
    /// What the streams following this hub did (`GET /metrics`).
    pub metrics: StreamMetrics,
    /// Every event's stages, timed by the writer and, for `deliver`, by the streams.
    pub stages: Stages,
}

/// The newest published groups, kept alive while their payloads fit the byte budget (always
/// at least the newest group).
struct Kept {
    groups: VecDeque<(Arc<Published>, usize)>,
    bytes: usize,
    budget: usize,
    capacity: usize,
}

impl Hub {
    /// A hub that keeps the last `capacity` groups (each of at most [`GROUP`] events), and no
    /// more of them than hold `bytes` of payload, for subscribers that are behind.
    pub fn new(capacity: usize, bytes: usize) -> Hub {
        let capacity = capacity.max(1);
        let (sender, _) = broadcast::channel(capacity);
        let kept = Kept {
            groups: VecDeque::new(),
            bytes: 0,
            budget: bytes,
            capacity,
        };
        Hub {
            sender,
            kept: Arc::new(Mutex::new(kept)),
            metrics: StreamMetrics::default(),
            stages: Stages::default(),
        }
    }

    /// Publishes committed events, in the order given (the writer gives sequence order).
    pub fn publish(&self, events: Vec<StoredEvent>) {
        let committed_at = Instant::now();
        let mut events = events.into_iter().peekable();
        while events.peek().is_some() {
            let group = Arc::new(Published {
                events: events
                    .by_ref()
                    .take(GROUP)
                    .map(|e| Arc::new(Committed::new(e)))
                    .collect(),
                rendered: Mutex::new(Vec::new()),
                committed_at,
                taken: AtomicBool::new(false),
                stages: self.stages.clone(),
            });
            let weak = Arc::downgrade(&group);
            self.keep(group);
            // No subscriber is not an error: the log is the source of truth.
            let _ = self.sender.send(weak);
        }
    }

    fn keep(&self, group: Arc<Published>) {
        let bytes: usize = group.events.iter().map(|e| e.event.payload.len()).sum();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.groups.push_back((group, bytes));
        kept.bytes += bytes;
        // Past the byte budget, or past what the broadcast still holds (it forgets what it
        // overwrote), the oldest group is let go of.
        while (kept.bytes > kept.budget && kept.groups.len() > 1)
            || kept.groups.len() > kept.capacity
        {
            if let Some((_, freed)) = kept.groups.pop_front() {
                kept.bytes -= freed;
            }
        }
    }

    pub fn subscribe(&self) -> Subscription {
        Subscription {
            receiver: self.sender.subscribe(),
        }
    }
}

/// The writer publishes each commit here.
impl crate::store::Publish for Hub {
    fn publish(&self, committed: Vec<StoredEvent>) {
        Hub::publish(self, committed);
    }

    fn stages(&self) -> Stages {
        self.stages.clone()
    }
}

/// A subscriber's place in the hub.
pub struct Subscription {
    receiver: broadcast::Receiver<Weak<Published>>,
}

impl Subscription {
    /// The next group; `Lagged` when the subscriber is behind what the hub keeps.
    pub async fn recv(&mut self) -> Result<Arc<Published>, RecvError> {
        let weak = self.receiver.recv().await?;
        weak.upgrade().ok_or(RecvError::Lagged(1))
    }

    /// The next group if one is waiting.
    pub fn try_recv(&mut self) -> Result<Arc<Published>, TryRecvError> {
        let weak = self.receiver.try_recv()?;
        weak.upgrade().ok_or(TryRecvError::Lagged(1))
    }
}

impl super::follower::Live for Subscription {
    type Group = Arc<Published>;

    async fn recv(&mut self) -> Result<Arc<Published>, RecvError> {
        Subscription::recv(self).await
    }

    fn try_recv(&mut self) -> Result<Arc<Published>, TryRecvError> {
        Subscription::try_recv(self)
    }
}
