//! The hub: a tokio broadcast of committed events, in sequence order. Subscribers that fall
//! behind get `Lagged` and must go back to the database; the writer never waits for them.

use crate::event::StoredEvent;
use std::sync::{Arc, OnceLock};
use tokio::sync::broadcast;

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

#[derive(Clone)]
pub struct Hub {
    sender: broadcast::Sender<Arc<Committed>>,
}

impl Hub {
    pub fn new(capacity: usize) -> Hub {
        let (sender, _) = broadcast::channel(capacity.max(1));
        Hub { sender }
    }

    /// Publishes committed events, in the order given (the writer gives sequence order).
    pub fn publish(&self, events: Vec<StoredEvent>) {
        for event in events {
            // No subscriber is not an error: the log is the source of truth.
            let _ = self.sender.send(Arc::new(Committed::new(event)));
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Committed>> {
        self.sender.subscribe()
    }
}
