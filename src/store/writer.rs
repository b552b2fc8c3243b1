//! The writer: one thread owns the only write connection. It drains queued appends into a batch
//! and commits the batch in one `BEGIN IMMEDIATE ... COMMIT` (one fsync for all of it: group
//! commit). Each request runs under its own savepoint, so a request that fails (a conflicting
//! id) is undone alone and the rest of the batch still commits. Callers are answered only after
//! the commit, and the committed events are then published to the hub in sequence order.

use super::stats::WriterStats;
use crate::event::{NewEvent, StoredEvent, time};
use crate::projection;
use crate::stream::Hub;
use rusqlite::{Connection, OptionalExtension, params};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// Most events one transaction takes before it commits (bounds latency under a flood).
const MAX_BATCH_EVENTS: usize = 2048;
/// Queued requests before producers wait (backpressure instead of unbounded memory).
const QUEUE_CAPACITY: usize = 8192;

/// Where an event landed in the log.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Appended {
    pub id: String,
    pub sequence: i64,
    pub session_sequence: Option<i64>,
    /// True when the id was already stored with the same content: nothing was appended.
    pub duplicate: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AppendError {
    #[error(
        "event {id} (index {index}) is already stored at sequence {sequence} with different content"
    )]
    Conflict {
        index: usize,
        id: String,
        sequence: i64,
    },
    #[error(
        "event {id} appears twice in this request (indexes {first} and {index}) with different content"
    )]
    ConflictWithinRequest {
        first: usize,
        index: usize,
        id: String,
    },
    #[error("the database refused the write: {0}")]
    Storage(String),
    #[error("the writer has stopped")]
    Stopped,
}

type Reply = oneshot::Sender<Result<Vec<Appended>, AppendError>>;

enum Command {
    Append { events: Vec<NewEvent>, reply: Reply },
    Stop,
}

/// A handle to the writer thread. Cheap to clone.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::Sender<Command>,
    head: Arc<AtomicI64>,
    stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer thread on an open, migrated connection.
    pub fn start(
        conn: Connection,
        hub: Hub,
    ) -> rusqlite::Result<(Writer, std::thread::JoinHandle<()>)> {
        let head: i64 =
            conn.query_row("SELECT COALESCE(MAX(sequence), 0) FROM events", [], |r| {
                r.get(0)
            })?;
        let (queue, commands) = mpsc::channel(QUEUE_CAPACITY);
        let shared_head = Arc::new(AtomicI64::new(head));
        let stats = Arc::new(WriterStats::default());
        let mut thread = WriterThread {
            conn,
            hub,
            head,
            shared_head: shared_head.clone(),
            stats: stats.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("hooklog-writer".into())
            .spawn(move || thread.run(commands))
            .expect("spawning the writer thread");
        Ok((
            Writer {
                queue,
                head: shared_head,
                stats,
            },
            handle,
        ))
    }

    /// Appends one request's events atomically; answers once they are durable.
    pub async fn append(&self, events: Vec<NewEvent>) -> Result<Vec<Appended>, AppendError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Command::Append { events, reply })
            .await
            .map_err(|_| AppendError::Stopped)?;
        answer.await.unwrap_or(Err(AppendError::Stopped))
    }

    /// Asks the writer to finish what is queued before this call and stop.
    pub async fn stop(&self) {
        let _ = self.queue.send(Command::Stop).await;
    }

    /// The last committed sequence (0 for an empty log).
    pub fn head(&self) -> i64 {
        self.head.load(Ordering::Acquire)
    }

    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }
}

struct WriterThread {
    conn: Connection,
    hub: Hub,
    /// The last sequence assigned, including uncommitted ones in the open transaction.
    head: i64,
    shared_head: Arc<AtomicI64>,
    stats: Arc<WriterStats>,
}

struct Pending {
    events: Vec<NewEvent>,
    reply: Reply,
}

enum RequestError {
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

impl WriterThread {
    fn run(&mut self, mut commands: mpsc::Receiver<Command>) {
        let mut stopping = false;
        while !stopping {
            let Some(first) = commands.blocking_recv() else {
                break;
            };
            let mut batch = Vec::new();
            let mut size = 0;
            let mut next = Some(first);
            while let Some(command) = next.take() {
                match command {
                    Command::Append { events, reply } => {
                        size += events.len();
                        batch.push(Pending { events, reply });
                    }
                    Command::Stop => {
                        stopping = true;
                        break;
                    }
                }
                if size < MAX_BATCH_EVENTS {
                    next = commands.try_recv().ok();
                }
            }
            if !batch.is_empty() {
                self.commit_batch(batch);
            }
        }
        // Fold the WAL into the main file so a stopped hooklog leaves one self-contained file.
        if let Err(e) = self.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
            tracing::warn!(error = %e, "checkpoint at shutdown failed; the WAL is kept and replayed on next open");
        }
        tracing::debug!(head = self.head, "writer stopped");
    }

    fn commit_batch(&mut self, batch: Vec<Pending>) {
        let head_before = self.head;
        let received_at = time::now();
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut committed: Vec<StoredEvent> = Vec::new();
        let started = Instant::now();
        let mut applied = started;
        let result = self.conn.execute_batch("BEGIN IMMEDIATE").and_then(|()| {
            for pending in &batch {
                outcomes.push(self.apply_request(&pending.events, &received_at, &mut committed)?);
            }
            applied = Instant::now();
            self.conn.execute_batch("COMMIT")
        });
        if let Err(e) = result {
            tracing::error!(error = %e, "batch failed; nothing in it was stored");
            let _ = self.conn.execute_batch("ROLLBACK");
            self.head = head_before;
            let error = AppendError::Storage(e.to_string());
            for pending in batch {
                let _ = pending.reply.send(Err(error.clone()));
            }
            return;
        }
        self.shared_head.store(self.head, Ordering::Release);
        self.stats
            .record_commit(committed.len(), applied - started, applied.elapsed());
        self.hub.publish(committed);
        for (pending, outcome) in batch.into_iter().zip(outcomes) {
            let _ = pending.reply.send(outcome);
        }
    }

    /// Runs one request under a savepoint. An `Err` here means the savepoint machinery itself
    /// failed and the whole batch must be abandoned; a request's own failure is an `Ok(Err)`.
    fn apply_request(
        &mut self,
        events: &[NewEvent],
        received_at: &str,
        committed: &mut Vec<StoredEvent>,
    ) -> rusqlite::Result<Result<Vec<Appended>, AppendError>> {
        self.conn.execute_batch("SAVEPOINT request")?;
        let head_before = self.head;
        let mut stored = Vec::new();
        let result: Result<Vec<Appended>, RequestError> = events
            .iter()
            .enumerate()
            .map(|(index, event)| self.append_event(index, event, received_at, &mut stored))
            .collect();
        match result {
            Ok(appended) => {
                self.conn.execute_batch("RELEASE request")?;
                committed.append(&mut stored);
                Ok(Ok(appended))
            }
            Err(error) => {
                self.conn
                    .execute_batch("ROLLBACK TO request; RELEASE request")?;
                self.head = head_before;
                Ok(Err(match error {
                    // The stored twin was appended by this request and has just been undone.
                    RequestError::Conflict {
                        index,
                        id,
                        sequence,
                    } if sequence > head_before => {
                        let first = events
                            .iter()
                            .position(|e| e.event_id == id)
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

    fn append_event(
        &mut self,
        index: usize,
        event: &NewEvent,
        received_at: &str,
        stored: &mut Vec<StoredEvent>,
    ) -> Result<Appended, RequestError> {
        if let Some(existing) = self.find(&event.event_id)? {
            if !same_content(&existing, event) {
                return Err(RequestError::Conflict {
                    index,
                    id: event.event_id.clone(),
                    sequence: existing.sequence,
                });
            }
            return Ok(Appended {
                id: existing.event_id,
                sequence: existing.sequence,
                session_sequence: existing.session_sequence,
                duplicate: true,
            });
        }
        let session_sequence = match &event.session_id {
            None => None,
            Some(session) => Some(
                self.conn
                    .prepare_cached(
                        "SELECT COALESCE(MAX(session_sequence), 0) + 1 FROM events WHERE session_id = ?1",
                    )?
                    .query_row([session], |r| r.get::<_, i64>(0))?,
            ),
        };
        let received_at = event.received_at.as_deref().unwrap_or(received_at);
        let row = StoredEvent {
            sequence: self.head + 1,
            event_id: event.event_id.clone(),
            session_id: event.session_id.clone(),
            session_sequence,
            event_type: event.event_type.clone(),
            source: event.source.clone(),
            event_time: event
                .event_time
                .as_deref()
                .unwrap_or(received_at)
                .to_string(),
            received_at: received_at.to_string(),
            payload: event.payload.clone(),
        };
        self.conn
            .prepare_cached(
                "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source,
                                     event_time, received_at, payload)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
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
                row.payload,
            ])?;
        self.head = row.sequence;
        projection::apply(&self.conn, &row)?;
        let appended = Appended {
            id: row.event_id.clone(),
            sequence: row.sequence,
            session_sequence: row.session_sequence,
            duplicate: false,
        };
        stored.push(row);
        Ok(appended)
    }

    fn find(&self, event_id: &str) -> rusqlite::Result<Option<StoredEvent>> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {} FROM events WHERE event_id = ?1",
                super::read::EVENT_COLUMNS
            ))?
            .query_row([event_id], super::read::stored_event)
            .optional()
    }
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
}
