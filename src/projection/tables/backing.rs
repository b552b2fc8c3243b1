//! [`Backing`]: where a replay reads the rows it does not hold, and raises its alerts.

use super::Result;
use crate::event::StoredEvent;
use crate::projection::alerts;
use rusqlite::Connection;
use serde_json::Value;

/// Where the rows a replay does not hold in memory are read from, and where the alerts it
/// raises go.
pub trait Backing {
    /// Runs `read` on the SQL tables as every earlier write of the replay left them.
    fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T>;
    /// As [`Tables::raise`](super::Tables::raise).
    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()>;
}

/// The connection itself: reads and alerts at once.
impl Backing for &Connection {
    fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        read(self)
    }

    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()> {
        alerts::raise(self, kind, event, message, details)
    }
}
