//! Deciding a coordination command inside the batch's transaction: it reads the projections
//! (including this batch's session rows) and appends its outcome events through
//! [`DecisionLog`], the writer as `coordination` sees it.

use super::super::prepared::Prepared;
use super::super::{AppendError, Appended, Decided};
use super::Appender;
use super::append::RequestError;
use crate::coordination::{self, DecideError};
use crate::event::{NewEvent, StoredEvent, id::new_event_id, time};
use rusqlite::Connection;

impl Appender {
    /// Runs one coordination command under a savepoint: it reads the projections, appends its
    /// outcome events (each projected at once), and reads the result back. An `Err` here means
    /// the whole batch must be abandoned; a failure of the command alone is an `Ok(Err)`.
    pub(super) fn apply_decision(
        &mut self,
        command: &coordination::Command,
        received_at: &str,
        committed: &mut Vec<StoredEvent>,
    ) -> rusqlite::Result<Result<Decided, AppendError>> {
        let Some(now) = time::parse(received_at) else {
            let error = format!("the batch's time {received_at:?} does not parse");
            return Ok(Err(AppendError::Storage(error)));
        };
        // A command reads `sessions` through SQL: it must see this batch's changes. Written
        // before the savepoint, so undoing the command does not undo them.
        self.write_held_rows()?;
        let head_before = self.open_request()?;
        let rules = self.settings.rules;
        let mut log = DecisionLog {
            now,
            appender: self,
            received_at,
            stored: Vec::new(),
            appended: Vec::new(),
        };
        let verdict = coordination::execute(&mut log, &rules, command);
        let DecisionLog {
            mut stored,
            appended,
            ..
        } = log;
        match verdict {
            Ok(verdict) => {
                self.keep_request()?;
                committed.append(&mut stored);
                Ok(Ok(Decided { verdict, appended }))
            }
            Err(e) => {
                self.undo_request(head_before)?;
                tracing::error!(error = %e, "a coordination command failed; nothing was stored");
                Ok(Err(AppendError::Storage(e.to_string())))
            }
        }
    }
}

/// The writer as a coordination command sees it: the open transaction, the batch's time, and
/// appending events (with fresh UUIDv7 ids, so they can never be duplicates or conflicts).
struct DecisionLog<'a> {
    appender: &'a mut Appender,
    received_at: &'a str,
    now: chrono::DateTime<chrono::Utc>,
    stored: Vec<StoredEvent>,
    appended: Vec<Appended>,
}

impl coordination::Log for DecisionLog<'_> {
    fn conn(&self) -> &Connection {
        &self.appender.conn
    }

    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.now
    }

    fn origin(&self) -> &str {
        &self.appender.settings.origin
    }

    fn append_to(
        &mut self,
        session: Option<&str>,
        event_type: &str,
        payload: serde_json::Value,
    ) -> Result<StoredEvent, DecideError> {
        let event = Prepared::of(NewEvent {
            event_id: new_event_id(),
            generated_id: true,
            session_id: session.map(str::to_string),
            event_type: event_type.to_string(),
            source: coordination::SOURCE.to_string(),
            event_time: None,
            received_at: None,
            origin: None,
            payload: payload.to_string(),
        });
        let index = self.appended.len();
        match self
            .appender
            .append_event(index, &event, self.received_at, &mut self.stored)
        {
            Ok(appended) => self.appended.push(appended),
            Err(RequestError::Sqlite(e)) => return Err(e.into()),
            Err(RequestError::Conflict { .. }) => {
                return Err(DecideError::Invariant(
                    "a fresh UUIDv7 id is already stored",
                ));
            }
        }
        coordination::written(self.stored.last().cloned(), "the event just appended")
    }
}
