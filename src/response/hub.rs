//! The broadcast of committed response events, in commit order, one group per request. A
//! stream that falls behind gets `Lagged` and reads the table again, as the log's streams do.

use super::Stored;
use std::sync::Arc;
use tokio::sync::broadcast;

/// Groups kept for subscribers that are behind.
const CAPACITY: usize = 512;

#[derive(Clone)]
pub struct ResponseHub {
    sender: broadcast::Sender<Arc<Vec<Stored>>>,
}

impl Default for ResponseHub {
    fn default() -> Self {
        ResponseHub {
            sender: broadcast::channel(CAPACITY).0,
        }
    }
}

impl ResponseHub {
    /// Publishes one request's committed response events (the writer calls it after COMMIT).
    pub fn publish(&self, records: Vec<Stored>) {
        if !records.is_empty() {
            // No subscriber is not an error: the table is the source of truth.
            let _ = self.sender.send(Arc::new(records));
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Vec<Stored>>> {
        self.sender.subscribe()
    }
}
