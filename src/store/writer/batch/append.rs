//! Appending: one request's events (each numbered, stored and projected at once, or found
//! already stored), and one request's response events for a factory session.

use super::super::prepared::Prepared;
use super::super::{AppendError, Appended};
use super::{Appender, Run, control};
use crate::event::{NewEvent, StoredEvent};
use crate::projection::{self, tables::Live};
use crate::response;
use crate::store::read;
use rusqlite::{OptionalExtension, params};

/// Why one request's events were refused: an id already stored with other content, or the
/// database's error.
pub(super) enum RequestError {
    Conflict {
        index: usize,
        id: String,
        sequence: i64,
    },
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for RequestError {
    fn from(e: rusqlite::Error) -> Self {
        RequestError::Sqlite(e)
    }
}

impl Appender {
    /// Runs one request under a savepoint. An `Err` here means the savepoint machinery itself
    /// failed and the whole batch must be abandoned; a request's own failure is an `Ok(Err)`.
    pub(super) fn apply_request(
        &mut self,
        events: &[Prepared],
        received_at: &str,
        committed: &mut Vec<StoredEvent>,
    ) -> rusqlite::Result<Result<Vec<Appended>, AppendError>> {
        if self.run == Run::Shared {
            let mut stored = Vec::new();
            let result: Result<Vec<Appended>, RequestError> = events
                .iter()
                .enumerate()
                .map(|(index, event)| self.append_event(index, event, received_at, &mut stored))
                .collect();
            return match result {
                Ok(appended) => {
                    committed.append(&mut stored);
                    Ok(Ok(appended))
                }
                // The disk (full, failing) refuses the batch as a whole, as it would refuse it
                // run again.
                Err(RequestError::Sqlite(e)) if is_storage_failure(&e) => Err(e),
                // Nothing can undo this request alone: the batch runs again, isolated.
                Err(_) => {
                    self.refused_shared = true;
                    Err(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                        Some("a request was refused in a shared run".into()),
                    ))
                }
            };
        }
        let head_before = self.open_request()?;
        let mut stored = Vec::new();
        let result: Result<Vec<Appended>, RequestError> = events
            .iter()
            .enumerate()
            .map(|(index, event)| self.append_event(index, event, received_at, &mut stored))
            .collect();
        match result {
            Ok(appended) => {
                self.keep_request()?;
                committed.append(&mut stored);
                Ok(Ok(appended))
            }
            Err(error) => {
                self.undo_request(head_before)?;
                Ok(Err(match error {
                    // The stored twin was appended by this request and has just been undone.
                    RequestError::Conflict {
                        index,
                        id,
                        sequence,
                    } if sequence > head_before => {
                        let first = events
                            .iter()
                            .position(|e| e.event.event_id == id)
                            .unwrap_or(index);
                        AppendError::ConflictWithinRequest { first, index, id }
                    }
                    RequestError::Conflict {
                        index,
                        id,
                        sequence,
                    } => AppendError::Conflict {
                        index,
                        id,
                        sequence,
                    },
                    RequestError::Sqlite(e) => {
                        tracing::error!(error = %e, "request failed; its events were not stored");
                        AppendError::Storage(e.to_string())
                    }
                }))
            }
        }
    }

    /// Stores one request's response events under a savepoint; an `Err` abandons the batch,
    /// a refusal of the request alone is an `Ok(Err)`. The records are published after COMMIT.
    pub(super) fn apply_responses(
        &mut self,
        session: &str,
        records: &[response::Envelope],
        received_at: &str,
    ) -> rusqlite::Result<Result<Vec<response::Recorded>, AppendError>> {
        use response::store::Refused;
        control(&self.conn, "SAVEPOINT responses")?;
        let mut stored = Vec::new();
        match response::store::append(&self.conn, session, records, received_at, &mut stored) {
            Ok(recorded) => {
                control(&self.conn, "RELEASE responses")?;
                self.responses.push(stored);
                Ok(Ok(recorded))
            }
            Err(refused) => {
                self.conn
                    .execute_batch("ROLLBACK TO responses; RELEASE responses")?;
                Ok(Err(match refused {
                    Refused::Conflict {
                        index,
                        event_id,
                        sequence,
                    } => AppendError::Conflict {
                        index,
                        id: event_id,
                        sequence,
                    },
                    Refused::Sqlite(e) => {
                        tracing::error!(error = %e, "response events were not stored");
                        AppendError::Storage(e.to_string())
                    }
                }))
            }
        }
    }

    pub(super) fn append_event(
        &mut self,
        index: usize,
        prepared: &Prepared,
        received_at: &str,
        stored: &mut Vec<StoredEvent>,
    ) -> Result<Appended, RequestError> {
        let event = &prepared.event;
        #[cfg(test)]
        super::super::tests::panic_if_asked(&event.event_id);
        let existing = match event.generated_id {
            true => None,
            false => self.find(&event.event_id)?,
        };
        if let Some(existing) = existing {
            if !same_content(&existing, event) {
                return Err(RequestError::Conflict {
                    index,
                    id: event.event_id.clone(),
                    sequence: existing.sequence,
                });
            }
            let effects = projection::recall(&self.conn, &existing)?;
            return Ok(Appended {
                id: existing.event_id,
                sequence: existing.sequence,
                session_sequence: existing.session_sequence,
                duplicate: true,
                effects,
            });
        }
        let session_sequence = match &event.session_id {
            None => None,
            Some(session) => Some(self.sessions.next_session_sequence(&self.conn, session)?),
        };
        let row = event.stored(
            self.head + 1,
            session_sequence,
            received_at,
            &self.settings.origin,
        );
        // The fields the event shares with its session are stored once (`event::shared`).
        let split = row.session_id.as_deref().zip(prepared.split.as_ref());
        let (payload, shared_id) = match split {
            Some((session, split)) => (
                split.rest.as_str(),
                Some(
                    self.sessions
                        .shared_id(&self.conn, session, &split.shared)?,
                ),
            ),
            None => (row.payload.as_str(), None),
        };
        self.conn
            .prepare_cached(
                "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source,
                                     event_time, received_at, payload, origin, shared)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?
            .execute(params![
                row.sequence,
                row.event_id,
                row.session_id,
                row.session_sequence,
                row.event_type,
                row.source,
                row.event_time,
                row.received_at,
                payload,
                row.origin,
                shared_id,
            ])?;
        self.head = row.sequence;
        let tables = match self.run {
            Run::Shared | Run::Isolated => self.sessions.tables(&self.conn),
            Run::RowByRow => Live::new(&self.conn),
        };
        let parsed = &prepared.parsed;
        let effects = projection::apply_parsed(&tables, &self.conn, &row, parsed)?;
        if self.settings.search_index
            && let Some(text) = &prepared.text
        {
            self.texts.push((row.sequence, text.clone()));
        }
        let appended = Appended {
            id: row.event_id.clone(),
            sequence: row.sequence,
            session_sequence: row.session_sequence,
            duplicate: false,
            effects,
        };
        stored.push(row);
        Ok(appended)
    }

    fn find(&self, event_id: &str) -> rusqlite::Result<Option<StoredEvent>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {} FROM events WHERE event_id = ?1",
                read::EVENT_COLUMNS
            ))?
            .query_row([event_id], read::stored_event)
            .optional()
    }
}

/// Whether an error is the storage's (a full disk, an I/O error) rather than one request's.
fn is_storage_failure(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{CannotOpen, DiskFull, SystemIoFailure};
    matches!(
        e.sqlite_error_code(),
        Some(DiskFull | SystemIoFailure | CannotOpen)
    )
}

/// Whether a re-posted event is the one already stored. Times count only when the producer gave
/// them: an event posted twice without `eventTime` is the same event, not a conflict.
fn same_content(stored: &StoredEvent, new: &NewEvent) -> bool {
    stored.event_type == new.event_type
        && stored.session_id == new.session_id
        && stored.source == new.source
        && stored.payload == new.payload
        && new
            .event_time
            .as_ref()
            .is_none_or(|t| *t == stored.event_time)
        && new
            .received_at
            .as_ref()
            .is_none_or(|t| *t == stored.received_at)
        && new.origin.as_ref().is_none_or(|o| *o == stored.origin)
}
