//! The writer: one thread owns the only write connection. It drains queued appends into a batch
//! and commits the batch in one `BEGIN IMMEDIATE ... COMMIT` (one fsync for all of it: group
//! commit). Each request runs under its own savepoint, so a request that fails (a conflicting
//! id) is undone alone and the rest of the batch still commits. The `sessions` rows a batch
//! changes are held in memory and written once, before `COMMIT`; if writing them fails, the
//! batch is rolled back and run again with each event's row written at once, so that still
//! only the request at fault is refused. Callers are answered only after the commit, and the
//! committed events are then published to the hub in sequence order.
//!
//! The handle ([`Writer`]) and what it sends and answers are here; the thread is in parts:
//!
//! - `thread`: the writer thread and its run loop, which drains the queue into batches;
//! - `batch`: the log as batches write it ([`batch::Appender`]): a batch's runs, its
//!   transaction, its requests' savepoints; one request's events (`batch::append`) and a
//!   coordination command (`batch::decide`);
//! - `derive`: the search rows of acknowledged events, written after their commit;
//! - `cache`: the sessions' counters, rows, calls and heroes (and change rows' keys) held
//!   between events and batches;
//! - `maintenance`: pruning, positions with JetStream streams, the WAL at shutdown;
//! - `local`: the same batches on the caller's thread, for a scratch database.

mod batch;
mod cache;
mod derive;
mod local;
mod maintenance;
mod prepared;
#[cfg(test)]
mod tests;
mod thread;

use self::batch::Pending;
pub use self::derive::{SearchLag, SearchProgress};
pub use self::local::Local;
use self::prepared::Prepared;
use self::thread::WriterThread;
use super::stages::{Arrival, Stages};
use super::stats::WriterStats;
use crate::config::Config;
use crate::coordination::{self, Verdict};
use crate::event::NewEvent;
use crate::projection::Effects;
use crate::response::{self, hub::ResponseHub};
use crate::states::states;
use rusqlite::Connection;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::error::SendTimeoutError;
use tokio::sync::{mpsc, oneshot};

/// Most events one transaction takes before it commits (bounds latency under a flood).
const MAX_BATCH_EVENTS: usize = 2048;

/// How long a request from a client (`append`, `decide`, `respond`) waits for a place in a
/// full queue before it is refused as [`AppendError::Overloaded`] (a `503` with
/// `Retry-After`). The queue (`Config::writer_queue`, 8,192 requests) is full only when the
/// writer is seconds of commits behind, so waiting longer would only hold the client's
/// connection.
/// Importers and followers (`enqueue`) wait for as long as it takes: they are the backlog.
pub const QUEUE_WAIT: Duration = Duration::from_secs(1);
/// How long the shutdown checkpoint waits for readers before leaving the WAL in place.
const SHUTDOWN_CHECKPOINT_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Where an event landed in the log.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Appended {
    pub id: String,
    pub sequence: i64,
    pub session_sequence: Option<i64>,
    /// True when the id was already stored with the same content: nothing was appended.
    pub duplicate: bool,
    /// What the projections did with it (the hero and mission it touched), for routes that
    /// answer with them.
    #[serde(skip)]
    pub effects: Effects,
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
    /// The writer's queue stayed full for [`QUEUE_WAIT`]: nothing was queued, so nothing from
    /// the request is stored.
    #[error("the writer's queue stayed full for {QUEUE_WAIT:?}")]
    Overloaded,
}

/// A coordination command's outcome: its verdict and the events it appended.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    pub verdict: Verdict,
    pub appended: Vec<Appended>,
}

enum Command {
    /// A request to take into the next batch.
    Request(Pending),
    /// Periodic housekeeping (age-based pruning while no events arrive).
    Maintain,
    /// A position with a JetStream stream (see [`Position`]), recorded after the batch it
    /// arrives with (only the last of each kind queued together).
    Position {
        kind: Position,
        stream: String,
        sequence: i64,
    },
    Stop,
}

/// How often the writer is nudged to prune when retention is configured.
const MAINTAIN_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A handle to the writer thread. Cheap to clone.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::Sender<Command>,
    head: Arc<AtomicI64>,
    stats: Arc<WriterStats>,
    /// False after a batch the database refused, true again after the next one it takes.
    healthy: Arc<AtomicBool>,
    pruning: Arc<Mutex<Pruning>>,
    search: Arc<SearchProgress>,
}

/// A position this log keeps with a JetStream stream (`crate::jetstream`), one row per stream
/// in the table of its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// `published`: every event of this log at or below it is in the stream.
    Published,
    /// `consumed`: every message of the stream at or below this stream sequence is in this log.
    Consumed,
}

impl Position {
    pub fn table(self) -> &'static str {
        match self {
            Position::Published => "published",
            Position::Consumed => "consumed",
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

states! {
    /// Whether pruning works.
    #[derive(Default)]
    pub enum PruningState {
        /// No retention policy.
        #[default]
        Off = "off",
        Ok = "ok",
        /// The last prune step failed.
        Failing = "failing",
    }
}

/// How pruning is going (for `/health` and `/stats`): a prune step that keeps failing leaves
/// the log growing past its limit while ingest goes on, so it must be visible, not only logged.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pruning {
    pub state: PruningState,
    /// Events pruned since the server started.
    pub pruned: u64,
    /// Prune steps that failed in a row (0 once one succeeds).
    pub consecutive_failures: u64,
    /// The last failure's error, while failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// With `serve --publish`: events the policy no longer keeps, kept (as of the last prune
    /// step) because JetStream does not have them yet. Pruned once they are published.
    #[serde(skip_serializing_if = "is_zero")]
    pub unpublished: u64,
    /// When the current run of failures began, while failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
}

/// Where the writer hands the events it committed, in sequence order, right after each commit
/// (the server's live hub, `stream::Hub`). It must not block: the writer waits for it.
pub trait Publish: Send + 'static {
    fn publish(&self, committed: Vec<crate::event::StoredEvent>);

    /// The stage histograms the writer times its events into, shared with the streams that
    /// time their first delivery (a writer no stream reads keeps its own).
    fn stages(&self) -> Stages {
        Stages::default()
    }
}

/// Publishes nowhere: for a writer no stream reads (tests, one-shot tools).
impl Publish for () {
    fn publish(&self, _committed: Vec<crate::event::StoredEvent>) {}
}

impl Writer {
    /// Starts the writer thread on an open, migrated connection, with `config`'s retention,
    /// clock, coordination rules, origin, search index and publishing stream.
    pub fn start(
        conn: Connection,
        hubs: (Box<dyn Publish>, ResponseHub),
        config: &Config,
    ) -> rusqlite::Result<(Writer, std::thread::JoinHandle<()>)> {
        let (retention, response_retention) = (config.retention, config.response_retention);
        let settings = thread::Settings {
            origin: config.origin.clone(),
            rules: coordination::Rules {
                owner_hung_after: config.owner_hung_after,
            },
            search_index: config.search_index,
        };
        let keep = thread::Keep {
            retention,
            response_retention,
            publish_stream: config.publish.as_ref().map(|t| t.stream.clone()),
        };
        let mut thread = WriterThread::new(conn, hubs, config.clock.clone(), settings, keep)?;
        let (queue, commands) = mpsc::channel(config.writer_queue.max(1));
        let writer = thread.handle(queue);
        let handle = std::thread::Builder::new()
            .name("hooklog-writer".into())
            .spawn(move || thread.run(commands))
            .expect("spawning the writer thread");
        if retention.is_set() || response_retention.is_set() {
            let queue = writer.queue.clone();
            std::thread::Builder::new()
                .name("hooklog-maintain".into())
                .spawn(move || {
                    // Ends when the writer has stopped (its queue is closed).
                    loop {
                        std::thread::sleep(MAINTAIN_EVERY);
                        if let Err(mpsc::error::TrySendError::Closed(_)) =
                            queue.try_send(Command::Maintain)
                        {
                            return;
                        }
                    }
                })
                .expect("spawning the maintenance thread");
        }
        Ok((writer, handle))
    }

    /// How pruning is going.
    pub fn pruning(&self) -> Pruning {
        self.pruning
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the last batch the writer tried was committed.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    /// Appends one request's events atomically; answers once they are durable.
    pub async fn append(&self, events: Vec<NewEvent>) -> Result<Vec<Appended>, AppendError> {
        self.append_arrived(events, None).await
    }

    /// [`Writer::append`] for a request that `arrived` over HTTP then (its `receive` stage).
    pub async fn append_arrived(
        &self,
        events: Vec<NewEvent>,
        arrived: Option<Instant>,
    ) -> Result<Vec<Appended>, AppendError> {
        let (reply, answer) = oneshot::channel();
        let arrival = Arrival::now(arrived);
        // Made here, on the caller's thread, not on the writer's.
        let events = Prepared::all(events);
        self.submit(Pending::Append {
            events,
            reply,
            arrival,
        })
        .await?;
        answer.await.unwrap_or(Err(AppendError::Stopped))
    }

    /// Queues a client's request, waiting at most [`QUEUE_WAIT`] for a place in the queue.
    async fn submit(&self, request: Pending) -> Result<(), AppendError> {
        self.queue
            .send_timeout(Command::Request(request), QUEUE_WAIT)
            .await
            .map_err(|e| match e {
                SendTimeoutError::Timeout(_) => AppendError::Overloaded,
                SendTimeoutError::Closed(_) => AppendError::Stopped,
            })
    }

    /// Queues one request and returns where its answer will arrive, without waiting for it:
    /// requests queued one after the other from one task are appended in that order (an
    /// importer keeps many in flight this way without reordering them).
    pub async fn enqueue(
        &self,
        events: Vec<NewEvent>,
    ) -> Result<oneshot::Receiver<Result<Vec<Appended>, AppendError>>, AppendError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Command::Request(Pending::Append {
                events: Prepared::all(events),
                reply,
                arrival: Arrival::now(None),
            }))
            .await
            .map_err(|_| AppendError::Stopped)?;
        Ok(answer)
    }

    /// Decides a coordination command in the writer's transaction; answers after the commit.
    pub async fn decide(&self, command: coordination::Command) -> Result<Decided, AppendError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Pending::Decide { command, reply }).await?;
        answer.await.unwrap_or(Err(AppendError::Stopped))
    }

    /// Stores one request's response events for a factory session atomically (outside the
    /// log: no projection sees them); answers once they are durable.
    pub async fn respond(
        &self,
        session: String,
        records: Vec<response::Envelope>,
    ) -> Result<Vec<response::Recorded>, AppendError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Pending::Respond {
            session,
            records,
            reply,
        })
        .await?;
        answer.await.unwrap_or(Err(AppendError::Stopped))
    }

    /// Records a position with a JetStream stream (`crate::jetstream`). Not waited for:
    /// losing the last one to a crash only means publishing or consuming a few events again,
    /// which the stream and this log drop as duplicates (by id).
    pub async fn record_position(
        &self,
        kind: Position,
        stream: &str,
        sequence: i64,
    ) -> Result<(), AppendError> {
        self.queue
            .send(Command::Position {
                kind,
                stream: stream.to_string(),
                sequence,
            })
            .await
            .map_err(|_| AppendError::Stopped)
    }

    /// Asks the writer to finish what is queued before this call and stop.
    pub async fn stop(&self) {
        let _ = self.queue.send(Command::Stop).await;
    }

    /// How far the search rows have got behind the acknowledged events.
    pub fn search(&self) -> &SearchProgress {
        &self.search
    }

    /// The last committed sequence (0 for an empty log).
    pub fn head(&self) -> i64 {
        self.head.load(Ordering::Acquire)
    }

    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }

    /// Requests waiting for the writer to take them.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }
}
