//! The writer's code on the caller's thread and connection, without a queue or a thread: a
//! scratch database (`hooklog replay`, the scrubber of `GET /sessions/{id}/projections`)
//! appends through it, so an event is numbered, checked, stored and projected there exactly as
//! the server does it, not by a second insert path.

use super::batch::Pending;
use super::prepared::Prepared;
use super::thread::WriterThread;
use super::{AppendError, Appended};
use crate::event::NewEvent;
use crate::store::stages::Arrival;
use rusqlite::Connection;
use tokio::sync::oneshot;

pub struct Local(WriterThread);

impl Local {
    /// The writer on `conn` (open and migrated). It does not index for search: nothing
    /// searches a scratch database.
    pub fn new(conn: Connection) -> rusqlite::Result<Local> {
        Ok(Local(WriterThread::scratch(conn, false)?))
    }

    /// Appends one request's events in a transaction of their own and commits it; answers as
    /// `Writer::append` answers.
    pub fn append(&mut self, events: Vec<NewEvent>) -> Result<Vec<Appended>, AppendError> {
        let (reply, mut answer) = oneshot::channel();
        self.0.commit_batch_or_survive(vec![Pending::Append {
            events: Prepared::all(events),
            reply,
            arrival: Arrival::now(None),
        }]);
        // The batch answers before it returns.
        answer.try_recv().unwrap_or(Err(AppendError::Stopped))
    }

    pub fn conn(&self) -> &Connection {
        self.0.conn()
    }
}
