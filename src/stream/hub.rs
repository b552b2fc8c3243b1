//! The hub: a tokio broadcast of committed events, in sequence order. Subscribers that fall
//! behind get `Lagged` and must go back to the database; the writer never waits for them.

use crate::event::StoredEvent;
use std::sync::Arc;
use tokio::sync::broadcast;

#[derive(Clone)]
pub struct Hub {
    sender: broadcast::Sender<Arc<StoredEvent>>,
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
            let _ = self.sender.send(Arc::new(event));
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoredEvent>> {
        self.sender.subscribe()
    }
}
