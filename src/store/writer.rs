//! The writer: one thread owns the only write connection. It drains queued appends into a batch
//! and commits the batch in one `BEGIN IMMEDIATE ... COMMIT` (one fsync for all of it: group
//! commit). Each request runs under its own savepoint, so a request that fails (a conflicting
//! id) is undone alone and the rest of the batch still commits. The `sessions` rows a batch
//! changes are held in memory and written once, before `COMMIT`; if writing them fails, the
//! batch is rolled back and run again with each event's row written at once, so that still
//! only the request at fault is refused. Callers are answered only after the commit, and the
//! committed events are then published to the hub in sequence order.

use super::read;
use super::retention::{self, Retention};
use super::stats::WriterStats;
use crate::config::Config;
use crate::coordination::{self, Verdict};
use crate::event::{NewEvent, StoredEvent, id::new_event_id, time};
use crate::projection::tables::{Calls, Live, SessionRows};
use crate::projection::{self, Effects};
use crate::response::{self, hub::ResponseHub};
use crate::stream::Hub;
use rusqlite::{Connection, OptionalExtension, params};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// Most events one transaction takes before it commits (bounds latency under a flood).
const MAX_BATCH_EVENTS: usize = 2048;
/// Queued requests before producers wait (backpressure instead of unbounded memory).
const QUEUE_CAPACITY: usize = 8192;
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
}

type Reply = oneshot::Sender<Result<Vec<Appended>, AppendError>>;
type DecideReply = oneshot::Sender<Result<Decided, AppendError>>;
type RespondReply = oneshot::Sender<Result<Vec<response::Recorded>, AppendError>>;

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

/// How pruning is going (for `/health` and `/stats`): a prune step that keeps failing leaves
/// the log growing past its limit while ingest goes on, so it must be visible, not only logged.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pruning {
    /// `off` (no retention policy), `ok`, or `failing` (the last prune step failed).
    pub state: &'static str,
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

impl Writer {
    /// Starts the writer thread on an open, migrated connection, with `config`'s retention,
    /// clock, coordination rules, origin, search index and publishing stream.
    pub fn start(
        conn: Connection,
        hubs: (Hub, ResponseHub),
        config: &Config,
    ) -> rusqlite::Result<(Writer, std::thread::JoinHandle<()>)> {
        let (hub, response_hub) = hubs;
        let (retention, response_retention) = (config.retention, config.response_retention);
        let rules = coordination::Rules {
            owner_hung_after: config.owner_hung_after,
        };
        let mut thread = WriterThread::new(conn, hub, config.clock.clone(), rules)?;
        thread.origin = config.origin.clone();
        thread.search_index = config.search_index;
        thread.retention = retention;
        thread.publish_stream = config.publish.as_ref().map(|t| t.stream.clone());
        thread.response_retention = response_retention;
        thread.response_hub = response_hub;
        if retention.is_set() {
            thread
                .pruning
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .state = "ok";
        }
        let (queue, commands) = mpsc::channel(QUEUE_CAPACITY);
        let writer = Writer {
            queue,
            head: thread.shared_head.clone(),
            stats: thread.stats.clone(),
            healthy: thread.healthy.clone(),
            pruning: thread.pruning.clone(),
        };
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
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Command::Request(Pending::Append { events, reply }))
            .await
            .map_err(|_| AppendError::Stopped)?;
        answer.await.unwrap_or(Err(AppendError::Stopped))
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
            .send(Command::Request(Pending::Append { events, reply }))
            .await
            .map_err(|_| AppendError::Stopped)?;
        Ok(answer)
    }

    /// Decides a coordination command in the writer's transaction; answers after the commit.
    pub async fn decide(&self, command: coordination::Command) -> Result<Decided, AppendError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Command::Request(Pending::Decide { command, reply }))
            .await
            .map_err(|_| AppendError::Stopped)?;
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
        self.queue
            .send(Command::Request(Pending::Respond {
                session,
                records,
                reply,
            }))
            .await
            .map_err(|_| AppendError::Stopped)?;
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

struct WriterThread {
    conn: Connection,
    hub: Hub,
    /// The last sequence assigned, including uncommitted ones in the open transaction. Read
    /// from the file at the start of every batch, so it can never drift from what is stored.
    head: i64,
    /// Last `session_sequence` given per session. Kept from one batch to the next while no
    /// other connection has committed (see `data_version`); read from the file otherwise.
    session_heads: HashMap<String, i64>,
    /// The `sessions` rows the batches changed, held in memory: written just before each
    /// `COMMIT` (and before a coordination command, which reads them through SQL), and kept
    /// for the next batch on the same terms as `session_heads`.
    session_rows: RefCell<SessionRows>,
    /// The tool calls of the sessions the batches touched (`projection::tables::Calls`), kept
    /// on the same terms as `session_heads` and let go of when a request is undone.
    calls: RefCell<Calls>,
    /// `PRAGMA data_version` when the last batch began, if it committed: the value changes
    /// (at least) whenever another connection commits, which would make the two caches above
    /// stale. This connection's own work outside a batch must not change `sessions` or the
    /// events' session numbering without calling `forget_sessions` (a prune step calls it).
    data_version: Option<i64>,
    /// How this run of the batch goes (see [`Run`]).
    run: Run,
    /// Whether writing the held session rows failed in this run of the batch.
    rows_failed: bool,
    /// Whether a request was refused in this run of the batch while it shared the batch's
    /// transaction with the others (`Run::Shared`).
    refused_shared: bool,
    retention: Retention,
    /// The JetStream stream this log is published to (`serve --publish`): retention keeps
    /// every event until it is published.
    publish_stream: Option<String>,
    /// The response events' own retention, and where their commits are published.
    response_retention: response::Retention,
    response_hub: ResponseHub,
    /// The response events of the batch being run, one group per request, for the hub.
    responses_committed: Vec<Vec<response::Stored>>,
    clock: time::Clock,
    /// This hooklog's name, recorded on the events it stores that bring none (`--origin`).
    origin: String,
    rules: coordination::Rules,
    /// Whether each event appended is indexed for search (always, but in `bench search`'s
    /// measurement without the index).
    search_index: bool,
    healthy: Arc<AtomicBool>,
    pruning: Arc<Mutex<Pruning>>,
    shared_head: Arc<AtomicI64>,
    stats: Arc<WriterStats>,
}

/// How a batch is run. Each request is undone alone when it is refused (a conflicting id, a row
/// the database refuses), so that it never fails the others. A savepoint per request does that,
/// but it copies every page the request changes first (a hook event changes eight tables: a
/// fifth of the writer's time went there). So a batch is first run without them, and only
/// when a request is refused is it rolled back and run again with them.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Run {
    /// The events' requests share the transaction: a refusal sends the batch to `Isolated`.
    Shared,
    /// Each request under its own savepoint; session rows held in memory, written once.
    Isolated,
    /// As `Isolated`, but each event writes its session row at once (writing the held rows
    /// failed, and so only the request at fault is refused).
    RowByRow,
}

/// Why a run of a batch failed.
enum Failed {
    /// A request was refused while sharing the transaction (`Run::Shared`).
    Refused,
    /// Writing the session rows held in memory failed.
    HeldRows(rusqlite::Error),
    /// Anything else (the disk, the savepoint machinery).
    Batch(rusqlite::Error),
}

/// A request waiting for its batch.
enum Pending {
    /// Events to append as one request.
    Append { events: Vec<NewEvent>, reply: Reply },
    /// A coordination command, decided against the projections inside the transaction.
    Decide {
        command: coordination::Command,
        reply: DecideReply,
    },
    /// Response events for one factory session (their own table, not the log).
    Respond {
        session: String,
        records: Vec<response::Envelope>,
        reply: RespondReply,
    },
}

enum Outcome {
    Append(Result<Vec<Appended>, AppendError>),
    Decide(Result<Decided, AppendError>),
    Respond(Result<Vec<response::Recorded>, AppendError>),
}

impl Pending {
    fn fail(self, error: AppendError) {
        match self {
            Pending::Append { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Pending::Decide { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Pending::Respond { reply, .. } => {
                let _ = reply.send(Err(error));
            }
        }
    }

    fn answer(self, outcome: Outcome) {
        match (self, outcome) {
            (Pending::Append { reply, .. }, Outcome::Append(o)) => {
                let _ = reply.send(o);
            }
            (Pending::Decide { reply, .. }, Outcome::Decide(o)) => {
                let _ = reply.send(o);
            }
            (Pending::Respond { reply, .. }, Outcome::Respond(o)) => {
                let _ = reply.send(o);
            }
            _ => unreachable!("outcomes are made in the order of the batch"),
        }
    }
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
    fn new(
        conn: Connection,
        hub: Hub,
        clock: time::Clock,
        rules: coordination::Rules,
    ) -> rusqlite::Result<WriterThread> {
        let head = read::head(&conn)?;
        Ok(WriterThread {
            conn,
            hub,
            head,
            session_heads: HashMap::new(),
            data_version: None,
            session_rows: RefCell::default(),
            calls: RefCell::default(),
            run: Run::Shared,
            rows_failed: false,
            refused_shared: false,
            retention: Retention::default(),
            publish_stream: None,
            response_retention: response::Retention::default(),
            response_hub: ResponseHub::default(),
            responses_committed: Vec::new(),
            clock,
            origin: String::new(),
            rules,
            search_index: true,
            healthy: Arc::new(AtomicBool::new(true)),
            pruning: Arc::new(Mutex::new(Pruning {
                state: "off",
                ..Pruning::default()
            })),
            shared_head: Arc::new(AtomicI64::new(head)),
            stats: Arc::new(WriterStats::default()),
        })
    }

    fn run(&mut self, mut commands: mpsc::Receiver<Command>) {
        let mut stopping = false;
        while !stopping {
            let Some(first) = commands.blocking_recv() else {
                break;
            };
            let mut batch = Vec::new();
            let mut size = 0;
            let mut maintain = false;
            let mut tick = false;
            let mut positions: Vec<(Position, String, i64)> = Vec::new();
            let mut next = Some(first);
            while let Some(command) = next.take() {
                match command {
                    Command::Request(pending) => {
                        size += match &pending {
                            Pending::Append { events, .. } => events.len(),
                            // A decision appends a few events at most.
                            Pending::Decide { .. } => 1,
                            Pending::Respond { records, .. } => records.len(),
                        };
                        batch.push(pending);
                    }
                    Command::Maintain => {
                        maintain = true;
                        tick = true;
                    }
                    Command::Position {
                        kind,
                        stream,
                        sequence,
                    } => {
                        positions.retain(|(k, s, _)| (*k, s) != (kind, &stream));
                        positions.push((kind, stream, sequence));
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
            // After a batch, prune only a worthwhile amount (each step also advances the
            // retention snapshot, which has a fixed cost); the periodic tick prunes whatever
            // is due, so the log exceeds its limit by at most a second's or a step's events.
            let min_step = if maintain {
                1
            } else {
                retention::PRUNE_MIN_STEP
            };
            if !batch.is_empty() {
                self.commit_batch_or_survive(batch);
                maintain = true;
            }
            if maintain {
                self.prune(min_step);
            }
            if tick {
                self.prune_responses();
            }
            for (kind, stream, sequence) in positions {
                self.record_position(kind, &stream, sequence);
            }
        }
        self.fold_wal();
        tracing::debug!(head = self.head, "writer stopped");
    }

    /// Moves a position forward (never back). A failure is logged: the position stays where it
    /// was, so those events are published or consumed again after a restart (as duplicates).
    fn record_position(&mut self, kind: Position, stream: &str, sequence: i64) {
        let table = kind.table();
        let recorded = self
            .conn
            .prepare_cached(&format!(
                "INSERT INTO {table} (stream, sequence, recorded_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (stream) DO UPDATE SET sequence = excluded.sequence,
                     recorded_at = excluded.recorded_at
                 WHERE excluded.sequence > {table}.sequence"
            ))
            .and_then(|mut s| s.execute(params![stream, sequence, time::now()]));
        if let Err(error) = recorded {
            tracing::warn!(%error, stream, sequence, table, "could not record a position");
        }
    }

    /// One bounded prune step, when retention is configured. A failure is logged and retried at
    /// the next step; it never affects ingest.
    fn prune(&mut self, min_step: i64) {
        if !self.retention.is_set() {
            return;
        }
        let now = chrono::Utc::now();
        // A prune step runs projection code (it advances the retention snapshot), so a panic
        // there is caught like a batch's: the step is rolled back and the writer lives on.
        let publish_stream = self.publish_stream.as_deref();
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            retention::prune_step_min(&self.conn, &self.retention, now, min_step, publish_stream)
        }));
        let error = match step {
            // Nothing pruned proves nothing: a step returns 0 before it touches anything when
            // fewer events are due than it waits for, so only a step that pruned clears a
            // failure (otherwise the state would flip back to `ok` after every batch).
            Ok(Ok(retention::Step {
                pruned: 0,
                unpublished,
            })) => {
                let mut pruning = self.pruning.lock().unwrap_or_else(|e| e.into_inner());
                pruning.unpublished = unpublished as u64;
                return;
            }
            Ok(Ok(retention::Step {
                pruned,
                unpublished,
            })) => {
                // A prune step leaves the live `sessions` rows and every session's numbering
                // as they were; forgetting them anyway (at most once per 1,000 pruned events or
                // per second) keeps the caches from depending on that.
                self.forget_sessions();
                tracing::debug!(pruned, "pruned the oldest events");
                let recovered = {
                    let mut pruning = self.pruning.lock().unwrap_or_else(|e| e.into_inner());
                    let failures = pruning.consecutive_failures;
                    *pruning = Pruning {
                        state: "ok",
                        pruned: pruning.pruned + pruned as u64,
                        unpublished: unpublished as u64,
                        ..Pruning::default()
                    };
                    failures
                };
                if recovered > 0 {
                    tracing::info!(failures = recovered, "pruning works again");
                }
                return;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => "a prune step panicked (a bug); it was rolled back".to_string(),
        };
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        let failures = {
            let mut pruning = self.pruning.lock().unwrap_or_else(|e| e.into_inner());
            pruning.consecutive_failures += 1;
            if pruning.consecutive_failures == 1 {
                pruning.failing_since = Some(time::format(now));
            }
            pruning.state = "failing";
            pruning.last_error = Some(error.clone());
            pruning.consecutive_failures
        };
        // The tick retries every second: say it at the first failure, then now and then.
        if failures == 1 || failures.is_multiple_of(60) {
            tracing::error!(
                %error,
                failures,
                "pruning failed; events are kept past the retention limit until it works again (retried every second)"
            );
        }
    }

    /// One prune step of the response events (their own retention, on the periodic tick). A
    /// failure is logged and retried at the next tick.
    fn prune_responses(&mut self) {
        match response::store::prune(&self.conn, &self.response_retention, chrono::Utc::now()) {
            Ok(0) => {}
            Ok(pruned) => tracing::debug!(pruned, "pruned the oldest response events"),
            Err(e) => {
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                tracing::warn!(error = %e, "pruning response events failed; retried in a second");
            }
        }
    }

    /// Folds the WAL into the main file so a stopped hooklog leaves one self-contained file.
    /// An open reader (someone's sqlite3) can hold it up: wait a moment, then leave the WAL
    /// in place, which is safe (the next open replays it).
    fn fold_wal(&self) {
        let _ = self.conn.busy_timeout(SHUTDOWN_CHECKPOINT_WAIT);
        let result = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            });
        match result {
            Ok((0, _, _)) => {}
            Ok((_, log, checkpointed)) => tracing::warn!(
                log,
                checkpointed,
                "a reader kept the WAL busy at shutdown; it stays beside the database and is replayed on next open"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "checkpoint at shutdown failed; the WAL is kept and replayed on next open")
            }
        }
    }

    /// Commits a batch; a bug that panics inside it must not take the only writer down with
    /// it (every later write would fail). The panic is logged, the transaction rolled back,
    /// the batch's callers get an error (their replies are dropped), and the next batch starts
    /// from the file as always.
    fn commit_batch_or_survive(&mut self, batch: Vec<Pending>) {
        let head_before = self.head;
        let committed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.commit_batch(batch);
        }));
        if committed.is_err() {
            tracing::error!("a batch panicked; it was rolled back and its requests refused");
            if !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            self.head = read::head(&self.conn).unwrap_or(head_before);
            self.forget_sessions();
        }
    }

    fn commit_batch(&mut self, batch: Vec<Pending>) {
        let received_at = time::format(self.clock.now());
        let started = Instant::now();
        let mut attempt = self.run_batch(&batch, &received_at, Run::Shared);
        if let Err(Failed::Refused) = &attempt {
            self.stats.record_isolated();
            attempt = self.run_batch(&batch, &received_at, Run::Isolated);
        }
        if let Err(Failed::HeldRows(e)) = &attempt {
            // The rows are written outside any request's savepoint, so one request's bad row
            // would fail the whole batch: run it again writing each event's row at once, so
            // only the request at fault is refused.
            tracing::warn!(
                error = %e,
                "writing the batch's session rows failed; running it again row by row"
            );
            self.stats.record_rerun();
            attempt = self.run_batch(&batch, &received_at, Run::RowByRow);
        }
        let (outcomes, committed, applied) = match attempt {
            Ok(ran) => ran,
            Err(Failed::Refused) => unreachable!("an isolated run refuses requests one by one"),
            Err(Failed::HeldRows(e) | Failed::Batch(e)) => {
                tracing::error!(error = %e, "batch failed; nothing in it was stored");
                self.healthy.store(false, Ordering::Release);
                let error = AppendError::Storage(e.to_string());
                for pending in batch {
                    pending.fail(error.clone());
                }
                return;
            }
        };
        self.shared_head.store(self.head, Ordering::Release);
        self.healthy.store(true, Ordering::Release);
        self.stats
            .record_commit(committed.len(), applied - started, applied.elapsed());
        self.stats.metrics.record_appended(&committed);
        for outcome in &outcomes {
            if let Outcome::Append(answer) = outcome {
                self.stats.metrics.record_answer(answer);
            }
        }
        self.hub.publish(committed);
        for records in std::mem::take(&mut self.responses_committed) {
            self.response_hub.publish(records);
        }
        for (pending, outcome) in batch.into_iter().zip(outcomes) {
            pending.answer(outcome);
        }
    }

    /// Runs the batch in one transaction and commits it: each request's outcome, the events
    /// stored, and when `COMMIT` began. Unless `run` is `RowByRow`, the session rows the batch
    /// changes are held in memory and written once, before `COMMIT` (and before a coordination
    /// command). On failure everything is rolled back.
    fn run_batch(
        &mut self,
        batch: &[Pending],
        received_at: &str,
        run: Run,
    ) -> Result<(Vec<Outcome>, Vec<StoredEvent>, Instant), Failed> {
        let head_before = self.head;
        self.run = run;
        self.rows_failed = false;
        self.refused_shared = false;
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut committed: Vec<StoredEvent> = Vec::new();
        let mut applied = Instant::now();
        self.responses_committed.clear();
        let result = control(&self.conn, "BEGIN IMMEDIATE").and_then(|()| {
            // The head comes from the file. The session counters and rows this thread holds
            // are the file's too, unless another connection (a sqlite3 session, an import)
            // has committed since this thread's last batch: then they are read again.
            self.head = read::head(&self.conn)?;
            let version = data_version(&self.conn)?;
            if self.data_version != Some(version)
                || self.session_heads.len() > MAX_HELD_SESSIONS
                || self.session_rows.get_mut().held() > MAX_HELD_SESSIONS
                || self.calls.get_mut().held() > MAX_HELD_SESSIONS
            {
                self.forget_sessions();
            }
            self.data_version = Some(version);
            for pending in batch {
                outcomes.push(match pending {
                    Pending::Append { events, .. } => {
                        Outcome::Append(self.apply_request(events, received_at, &mut committed)?)
                    }
                    Pending::Decide { command, .. } => Outcome::Decide(self.apply_decision(
                        command,
                        received_at,
                        &mut committed,
                    )?),
                    Pending::Respond {
                        session, records, ..
                    } => Outcome::Respond(self.apply_responses(session, records, received_at)?),
                });
            }
            self.write_held_rows()?;
            applied = Instant::now();
            control(&self.conn, "COMMIT")
        });
        self.run = Run::Shared;
        match result {
            Ok(()) => Ok((outcomes, committed, applied)),
            Err(e) => {
                if !self.conn.is_autocommit()
                    && let Err(e) = self.conn.execute_batch("ROLLBACK")
                {
                    tracing::error!(error = %e, "rollback failed");
                }
                self.head = head_before;
                self.forget_sessions();
                Err(
                    match (
                        std::mem::take(&mut self.refused_shared),
                        std::mem::take(&mut self.rows_failed),
                    ) {
                        (true, _) => Failed::Refused,
                        (false, true) => Failed::HeldRows(e),
                        (false, false) => Failed::Batch(e),
                    },
                )
            }
        }
    }

    /// Lets go of the session counters and rows held (a batch was rolled back): the next batch
    /// reads them from the file.
    fn forget_sessions(&mut self) {
        self.session_heads.clear();
        self.session_rows.get_mut().clear();
        self.calls.get_mut().clear();
        self.data_version = None;
    }

    /// Writes the session rows held in memory, noting a failure as theirs.
    fn write_held_rows(&mut self) -> rusqlite::Result<()> {
        let written = self.session_rows.get_mut().flush(&self.conn);
        self.rows_failed |= written.is_err();
        written
    }

    /// Opens a request's savepoint, and the record of the held session rows it changes; returns
    /// the head to go back to if the request is undone.
    fn open_request(&mut self) -> rusqlite::Result<i64> {
        control(&self.conn, "SAVEPOINT request")?;
        self.session_rows.get_mut().begin_request();
        Ok(self.head)
    }

    /// Keeps what the request did, in the file and in the held session rows.
    fn keep_request(&mut self) -> rusqlite::Result<()> {
        control(&self.conn, "RELEASE request")?;
        self.session_rows.get_mut().keep_request();
        Ok(())
    }

    /// Undoes the request: its rows, its changes to the held session rows, and the head.
    fn undo_request(&mut self, head_before: i64) -> rusqlite::Result<()> {
        self.conn
            .execute_batch("ROLLBACK TO request; RELEASE request")?;
        self.session_rows.get_mut().undo_request();
        self.head = head_before;
        // Some counts and calls were for rows just undone; the next event asks the file again.
        self.session_heads.clear();
        self.calls.get_mut().clear();
        Ok(())
    }

    /// Runs one request under a savepoint. An `Err` here means the savepoint machinery itself
    /// failed and the whole batch must be abandoned; a request's own failure is an `Ok(Err)`.
    fn apply_request(
        &mut self,
        events: &[NewEvent],
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

    /// Stores one request's response events under a savepoint; an `Err` abandons the batch,
    /// a refusal of the request alone is an `Ok(Err)`. The records are published after COMMIT.
    fn apply_responses(
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
                self.responses_committed.push(stored);
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

    /// Runs one coordination command under a savepoint: it reads the projections, appends its
    /// outcome events (each projected at once), and reads the result back. An `Err` here means
    /// the whole batch must be abandoned; a failure of the command alone is an `Ok(Err)`.
    fn apply_decision(
        &mut self,
        command: &coordination::Command,
        received_at: &str,
        committed: &mut Vec<StoredEvent>,
    ) -> rusqlite::Result<Result<Decided, AppendError>> {
        // A command reads `sessions` through SQL: it must see this batch's changes. Written
        // before the savepoint, so undoing the command does not undo them.
        self.write_held_rows()?;
        let head_before = self.open_request()?;
        let rules = self.rules;
        let mut log = DecisionLog {
            now: time::parse(received_at).expect("the writer formats its own times"),
            thread: self,
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

    fn append_event(
        &mut self,
        index: usize,
        event: &NewEvent,
        received_at: &str,
        stored: &mut Vec<StoredEvent>,
    ) -> Result<Appended, RequestError> {
        #[cfg(test)]
        tests::panic_if_asked(&event.event_id);
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
            Some(session) => Some(self.next_session_sequence(session)?),
        };
        let row = event.stored(self.head + 1, session_sequence, received_at, &self.origin);
        self.conn
            .prepare_cached(
                "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source,
                                     event_time, received_at, payload, origin)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
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
                row.origin,
            ])?;
        self.head = row.sequence;
        let tables = match self.run {
            Run::Shared | Run::Isolated => {
                Live::holding(&self.conn, &self.session_rows, &self.calls)
            }
            Run::RowByRow => Live::new(&self.conn),
        };
        let parsed = projection::Parsed::of(&row);
        let effects = projection::apply_parsed(&tables, &self.conn, &row, &parsed)?;
        if self.search_index {
            projection::search::index(&self.conn, &row, &parsed)?;
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

    /// The next `session_sequence` of a session: from the file the first time (and again after
    /// another connection commits), then counted here (a batch of 2,000 events over 50
    /// sessions asks the index 50 times, not 2,000).
    fn next_session_sequence(&mut self, session: &str) -> rusqlite::Result<i64> {
        if let Some(last) = self.session_heads.get_mut(session) {
            *last += 1;
            return Ok(*last);
        }
        let next = read::session_head(&self.conn, session)? + 1;
        self.session_heads.insert(session.to_string(), next);
        Ok(next)
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

/// Sessions whose counters and rows the writer keeps between batches, at most (about 600
/// bytes each); past it, they are let go of and read again as needed.
const MAX_HELD_SESSIONS: usize = 4_096;

/// `PRAGMA data_version`: it changes (at least) whenever another connection commits to the
/// database; never for this connection's own commits.
/// Whether an error is the storage's (a full disk, an I/O error) rather than one request's.
fn is_storage_failure(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{CannotOpen, DiskFull, SystemIoFailure};
    matches!(
        e.sqlite_error_code(),
        Some(DiskFull | SystemIoFailure | CannotOpen)
    )
}

fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))
}

/// Runs a transaction-control statement, prepared once: the writer runs two per batch and two
/// per request, and parsing them anew each time showed in its profile.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
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

/// The writer as a coordination command sees it: the open transaction, the batch's time, and
/// appending events (with fresh UUIDv7 ids, so they can never be duplicates or conflicts).
struct DecisionLog<'a> {
    thread: &'a mut WriterThread,
    received_at: &'a str,
    now: chrono::DateTime<chrono::Utc>,
    stored: Vec<StoredEvent>,
    appended: Vec<Appended>,
}

impl coordination::Log for DecisionLog<'_> {
    fn conn(&self) -> &Connection {
        &self.thread.conn
    }

    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.now
    }

    fn append(
        &mut self,
        event_type: &str,
        payload: serde_json::Value,
    ) -> rusqlite::Result<StoredEvent> {
        let event = NewEvent {
            event_id: new_event_id(),
            generated_id: true,
            session_id: None,
            event_type: event_type.to_string(),
            source: coordination::SOURCE.to_string(),
            event_time: None,
            received_at: None,
            origin: None,
            payload: payload.to_string(),
        };
        let index = self.appended.len();
        match self
            .thread
            .append_event(index, &event, self.received_at, &mut self.stored)
        {
            Ok(appended) => self.appended.push(appended),
            Err(RequestError::Sqlite(e)) => return Err(e),
            Err(RequestError::Conflict { .. }) => {
                unreachable!("a fresh UUIDv7 id is never already stored")
            }
        }
        Ok(self.stored.last().cloned().expect("just stored"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Durability;
    use crate::store::open::open_writer;

    fn event(id: &str, session: &str, payload: &str) -> NewEvent {
        NewEvent {
            event_id: id.into(),
            generated_id: false,
            session_id: Some(session.into()),
            event_type: "Stop".into(),
            source: "test".into(),
            event_time: None,
            received_at: None,
            origin: None,
            payload: payload.into(),
        }
    }

    fn writer(dir: &tempfile::TempDir) -> WriterThread {
        let conn = open_writer(&dir.path().join("w.db"), Durability::Full).unwrap();
        let rules = coordination::Rules {
            owner_hung_after: std::time::Duration::from_secs(60),
        };
        WriterThread::new(conn, Hub::new(16, 1 << 20), time::Clock::default(), rules).unwrap()
    }

    type Answer = oneshot::Receiver<Result<Vec<Appended>, AppendError>>;

    type DecideAnswer = oneshot::Receiver<Result<Decided, AppendError>>;

    /// A claim of chat `chat` by `session`, as a queued command.
    fn claim(chat: &str, session: &str) -> (Pending, DecideAnswer) {
        let (reply, answer) = oneshot::channel();
        let claim = coordination::claims::Claim {
            chat: chat.into(),
            session_id: session.into(),
            ttl_seconds: 60,
        };
        let command = coordination::Command::Claim(claim);
        (Pending::Decide { command, reply }, answer)
    }

    /// A normalized `ended` event: it ends its session.
    fn ended(id: &str, session: &str) -> NewEvent {
        NewEvent {
            event_type: "ended".into(),
            source: crate::ingest::normalized::SOURCE.into(),
            ..event(id, session, "{}")
        }
    }

    fn pending(events: Vec<NewEvent>) -> (Pending, Answer) {
        let (reply, answer) = oneshot::channel();
        (Pending::Append { events, reply }, answer)
    }

    fn commit(
        writer: &mut WriterThread,
        requests: Vec<Vec<NewEvent>>,
    ) -> Vec<Result<Vec<Appended>, AppendError>> {
        let (batch, answers): (Vec<_>, Vec<_>) = requests.into_iter().map(pending).unzip();
        writer.commit_batch(batch);
        answers
            .into_iter()
            .map(|mut a| a.try_recv().unwrap())
            .collect()
    }

    fn positions(result: &Result<Vec<Appended>, AppendError>) -> Vec<(i64, Option<i64>)> {
        result
            .as_ref()
            .unwrap()
            .iter()
            .map(|a| (a.sequence, a.session_sequence))
            .collect()
    }

    #[test]
    fn a_refused_request_is_undone_alone_inside_a_shared_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        let outcomes = commit(
            &mut writer,
            vec![
                vec![event("a1", "s", "{}"), event("a2", "s", "{}")],
                vec![
                    event("b1", "s", "{}"),
                    event("b2", "t", "{}"),
                    event("a1", "s", r#"{"changed":true}"#),
                ],
                vec![event("c1", "s", "{}")],
                vec![event("d1", "t", "{}")],
            ],
        );
        assert_eq!(positions(&outcomes[0]), [(1, Some(1)), (2, Some(2))]);
        assert_eq!(
            outcomes[1],
            Err(AppendError::Conflict {
                index: 2,
                id: "a1".into(),
                sequence: 1
            })
        );
        assert_eq!(
            positions(&outcomes[2]),
            [(3, Some(3))],
            "b1's position is reused: no gap"
        );
        let stored: Vec<String> = writer
            .conn
            .prepare("SELECT event_id FROM events ORDER BY sequence")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(stored, ["a1", "a2", "c1", "d1"]);
        assert_eq!(
            writer.stats.snapshot().commits,
            1,
            "one transaction for the four requests"
        );
        // The session rows, held in memory during the batch, lost the refused request's
        // changes too: `s` counts a1, a2, c1; `t` was made by d1, not by the undone b2.
        let sessions: Vec<(String, i64, i64, i64)> = writer
            .conn
            .prepare(
                "SELECT id, first_sequence, last_sequence, event_count FROM sessions ORDER BY id",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(sessions, [("s".into(), 1, 3, 3), ("t".into(), 4, 4, 1)]);
    }

    /// A raw hook event (source `hook`) of session `s`.
    fn hook(id: &str, name: &str, call: Option<&str>) -> NewEvent {
        let mut payload = serde_json::json!({"session_id": "s", "hook_event_name": name});
        if let Some(call) = call {
            payload["tool_name"] = "Bash".into();
            payload["tool_use_id"] = call.into();
        }
        NewEvent {
            event_type: name.into(),
            source: crate::ingest::hook::SOURCE.into(),
            ..event(id, "s", &payload.to_string())
        }
    }

    /// Tool use ids with their row ids, in order.
    type CallRows = Vec<(String, String)>;

    /// The calls the writer holds for session `s`, and those a fresh read of the file gives.
    fn held_and_read(writer: &WriterThread) -> (Option<CallRows>, CallRows) {
        let sorted = |calls: &foldhash::HashMap<String, String>| {
            let mut calls: Vec<_> = calls.clone().into_iter().collect();
            calls.sort();
            calls
        };
        let held = writer.calls.borrow().of("s").map(sorted);
        let read = sorted(&projection::tool_uses::calls_of(&writer.conn, "s").unwrap());
        (held, read)
    }

    #[test]
    fn the_calls_held_in_memory_equal_the_file_after_a_refused_request_and_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        commit(
            &mut writer,
            vec![vec![
                hook("e1", "SessionStart", None),
                hook("e2", "PreToolUse", Some("call-a")),
                hook("e3", "PostToolUse", Some("call-a")),
                hook("e4", "PreToolUse", Some("call-b")),
            ]],
        );
        let (held, read) = held_and_read(&writer);
        assert_eq!(read.len(), 2, "{read:?}");
        assert_eq!(held.as_ref(), Some(&read));

        // A batch where one request is refused (a1's id again, other content) after opening a
        // call: the batch runs again isolated, and the refused call is in neither.
        let outcomes = commit(
            &mut writer,
            vec![
                vec![hook("e5", "PreToolUse", Some("call-c"))],
                vec![
                    hook("e6", "PreToolUse", Some("call-refused")),
                    hook("e2", "PreToolUse", Some("call-other")),
                ],
                vec![hook("e7", "PostToolUse", Some("call-b"))],
            ],
        );
        assert!(outcomes[0].is_ok() && outcomes[2].is_ok());
        assert!(matches!(outcomes[1], Err(AppendError::Conflict { .. })));
        let (held, read) = held_and_read(&writer);
        assert_eq!(read.len(), 3, "{read:?}");
        assert!(!read.iter().any(|(call, _)| call == "call-refused"));
        // Let go of when the request was undone, then read again at e7.
        assert_eq!(held.as_ref(), Some(&read));
        let b: String = writer
            .conn
            .query_row(
                "SELECT status FROM tool_uses WHERE tool_use_id = 'call-b'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(b, "completed", "e7 found call-b through the held calls");

        // A restart holds nothing, then reads the session again on its next event.
        drop(writer);
        let mut writer = super::tests::writer(&dir);
        assert_eq!(held_and_read(&writer).0, None);
        commit(
            &mut writer,
            vec![vec![hook("e8", "PostToolUse", Some("call-c"))]],
        );
        let (held, read) = held_and_read(&writer);
        assert_eq!(held.as_ref(), Some(&read));
        let open: i64 = writer
            .conn
            .query_row(
                "SELECT COUNT(*) FROM tool_uses WHERE status = 'running'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(open, 0, "e8 closed call-c, opened before the restart");
        let rows: i64 = writer
            .conn
            .query_row("SELECT COUNT(*) FROM tool_uses", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 3, "no call was made twice");
    }

    #[test]
    fn a_command_sees_the_session_rows_changed_earlier_in_its_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        let (append, _appended) = pending(vec![ended("e1", "s")]);
        let (decide, mut decided) = claim("c", "s");
        writer.commit_batch(vec![append, decide]);
        let decided = decided.try_recv().unwrap().unwrap();
        assert!(
            matches!(
                decided.verdict,
                Verdict::Refused {
                    code: "sessionEnded",
                    ..
                }
            ),
            "the claim is refused: its session ended in the same batch, {:?}",
            decided.verdict
        );
    }

    #[test]
    fn a_session_row_the_database_refuses_fails_only_its_own_request() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        // Something (a constraint one day, a trigger here) refuses one session's row. The rows
        // are written together before `COMMIT`, outside the requests' savepoints.
        writer
            .conn
            .execute_batch(
                "CREATE TRIGGER no_bad BEFORE INSERT ON sessions WHEN NEW.id = 'bad'
                 BEGIN SELECT RAISE(ABORT, 'no bad sessions'); END",
            )
            .unwrap();
        let outcomes = commit(
            &mut writer,
            vec![
                vec![event("ok1", "s", "{}")],
                vec![event("b1", "bad", "{}")],
                vec![event("ok2", "u", "{}")],
            ],
        );
        assert_eq!(positions(&outcomes[0]), [(1, Some(1))]);
        assert!(
            matches!(&outcomes[1], Err(AppendError::Storage(m)) if m.contains("no bad sessions")),
            "{:?}",
            outcomes[1]
        );
        assert_eq!(positions(&outcomes[2]), [(2, Some(1))]);
        assert_eq!(writer.stats.snapshot().reruns, 1);
        let sessions: Vec<String> = writer
            .conn
            .prepare("SELECT id FROM sessions ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(sessions, ["s", "u"]);
        assert!(writer.healthy.load(Ordering::Acquire));
        // The next batch holds its rows again.
        commit(&mut writer, vec![vec![event("ok3", "s", "{}")]]);
        assert_eq!(writer.stats.snapshot().reruns, 1);
    }

    #[test]
    fn rows_written_for_a_command_are_updated_after_it_in_the_same_batch() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        let (first, _a) = pending(vec![event("e1", "s", "{}")]);
        let (decide, _decided) = claim("c", "s");
        let (second, _b) = pending(vec![event("e2", "s", "{}")]);
        writer.commit_batch(vec![first, decide, second]);
        // `s` was inserted before the command and must be updated (not inserted again) after.
        assert_eq!(
            writer.stats.snapshot().reruns,
            0,
            "no second run was needed"
        );
        let (count, last): (i64, i64) = writer
            .conn
            .query_row(
                "SELECT event_count, last_sequence FROM sessions WHERE id = 's'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let e2: i64 = writer
            .conn
            .query_row(
                "SELECT sequence FROM events WHERE event_id = 'e2'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!((count, last), (2, e2));
    }

    #[test]
    fn mixed_batches_leave_the_projections_a_rebuild_gives() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        let hook = |id: &str, session: &str, kind: &str, payload: serde_json::Value| NewEvent {
            source: crate::ingest::hook::SOURCE.into(),
            event_type: kind.into(),
            ..event(id, session, &payload.to_string())
        };
        let tool = |call: &str| {
            serde_json::json!({"tool_name": "Bash", "tool_use_id": call,
            "tool_input": {"command": format!("make {call}")}})
        };
        let (c1, _c1) = claim("chat-s1", "s1");
        let (c2, _c2) = claim("chat-s2", "s2");
        let batch = vec![
            pending(vec![
                hook(
                    "p1",
                    "s1",
                    "UserPromptSubmit",
                    serde_json::json!({"prompt": "go"}),
                ),
                hook("t1", "s1", "PreToolUse", tool("call1")),
            ])
            .0,
            pending(vec![hook("t2", "s2", "PreToolUse", tool("call2"))]).0,
            // Refused: a1 twice with different content; its s1 and s3 changes are undone.
            pending(vec![
                hook("a1", "s1", "PreToolUse", tool("call3")),
                hook(
                    "a3",
                    "s3",
                    "UserPromptSubmit",
                    serde_json::json!({"prompt": "x"}),
                ),
                hook("a1", "s1", "PreToolUse", tool("call4")),
            ])
            .0,
            c1,
            pending(vec![
                hook("r1", "s1", "PostToolUse", tool("call1")),
                ended("n1", "s2"),
            ])
            .0,
            c2,
            pending(vec![hook("t3", "s2", "PreToolUse", tool("call5"))]).0,
        ];
        writer.commit_batch(batch);
        commit(
            &mut writer,
            vec![
                vec![hook("st1", "s1", "Stop", serde_json::json!({}))],
                vec![
                    hook(
                        "x1",
                        "s1",
                        "UserPromptSubmit",
                        serde_json::json!({"prompt": "y"}),
                    ),
                    event("p1", "s1", "{}"),
                ],
                vec![hook("t4", "s3", "PreToolUse", tool("call6"))],
            ],
        );
        assert_eq!(writer.stats.snapshot().reruns, 0);
        let live = projection::snapshot(&writer.conn).unwrap();
        let sessions = live.iter().filter(|r| r.starts_with("sessions:")).count();
        assert_eq!(
            sessions, 3,
            "s1, s2 and s3 (made by t4, not by the refused a3)"
        );
        writer.conn.execute_batch("BEGIN").unwrap();
        projection::rebuild(&writer.conn).unwrap();
        let rebuilt = projection::snapshot(&writer.conn).unwrap();
        writer.conn.execute_batch("ROLLBACK").unwrap();
        assert_eq!(live, rebuilt);
    }

    #[test]
    fn a_batch_the_disk_refuses_stores_nothing_and_the_next_continues_gapless() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        commit(&mut writer, vec![vec![event("first", "s", "{}")]]);
        let pages: i64 = writer
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        writer
            .conn
            .pragma_update(None, "max_page_count", pages + 2)
            .unwrap();
        // Larger than the free pages the migrations left (tables made again) and the two new
        // ones allowed together.
        let free: i64 = writer
            .conn
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))
            .unwrap();
        let blob = (free as usize + 8) * crate::store::open::PAGE_SIZE as usize;
        let big = format!(r#"{{"blob":"{}"}}"#, "x".repeat(blob));
        let outcomes = commit(
            &mut writer,
            vec![
                vec![event("small", "s", "{}")],
                vec![event("big", "s", &big)],
            ],
        );
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, Err(AppendError::Storage(_)))),
            "{outcomes:?}"
        );
        assert!(!writer.healthy.load(Ordering::Acquire));
        assert_eq!(writer.shared_head.load(Ordering::Acquire), 1);

        writer
            .conn
            .pragma_update(None, "max_page_count", 1_000_000)
            .unwrap();
        let outcomes = commit(&mut writer, vec![vec![event("small", "s", "{}")]]);
        assert_eq!(positions(&outcomes[0]), [(2, Some(2))]);
        assert!(writer.healthy.load(Ordering::Acquire));
    }

    #[test]
    fn another_connections_commit_makes_the_writer_read_the_file_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        commit(&mut writer, vec![vec![event("mine", "s", "{}")]]);
        // Someone else appends (another process, a sqlite3 session).
        let other = Connection::open(dir.path().join("w.db")).unwrap();
        other
            .execute(
                "INSERT INTO events VALUES (2, 'theirs', 's', 2, 'Stop', 'x', 't', 't', '{}', 'there')",
                [],
            )
            .unwrap();
        // ... and edits a projection row by hand.
        other
            .execute("UPDATE sessions SET cwd = '/theirs' WHERE id = 's'", [])
            .unwrap();
        let outcomes = commit(&mut writer, vec![vec![event("next", "s", "{}")]]);
        assert_eq!(positions(&outcomes[0]), [(3, Some(3))]);
        // The writer's session counter and row were read again, not kept from its last batch.
        let (cwd, count): (Option<String>, i64) = writer
            .conn
            .query_row(
                "SELECT cwd, event_count FROM sessions WHERE id = 's'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((cwd.as_deref(), count), (Some("/theirs"), 2));
        // With nobody else committing, the next batch keeps them (and still counts right).
        assert_eq!(writer.session_heads.get("s"), Some(&3));
        assert_eq!(writer.session_rows.get_mut().held(), 1);
        let outcomes = commit(&mut writer, vec![vec![event("last", "s", "{}")]]);
        assert_eq!(positions(&outcomes[0]), [(4, Some(4))]);
        assert_eq!(writer.session_heads.get("s"), Some(&4));
    }

    thread_local! {
        /// An event id whose append panics, as a bug would (this thread's writer only).
        static PANIC_ON: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    pub(super) fn panic_if_asked(event_id: &str) {
        if PANIC_ON.with_borrow(|id| id.as_deref() == Some(event_id)) {
            panic!("injected panic at {event_id}");
        }
    }

    #[test]
    fn a_batch_that_panics_is_refused_whole_and_the_next_numbers_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        commit(&mut writer, vec![vec![event("first", "s", "{}")]]);
        PANIC_ON.set(Some("boom".into()));
        let (batch, answers): (Vec<_>, Vec<_>) =
            [vec![event("a", "s", "{}")], vec![event("boom", "t", "{}")]]
                .into_iter()
                .map(pending)
                .unzip();
        writer.commit_batch_or_survive(batch);
        PANIC_ON.set(None);
        for mut answer in answers {
            // Dropped unanswered: its HTTP handler answers 503.
            assert_eq!(
                answer.try_recv().err(),
                Some(oneshot::error::TryRecvError::Closed)
            );
        }
        assert_eq!(writer.head, 1);
        // The session counter and row the panicked batch changed in memory are not kept.
        let outcomes = commit(&mut writer, vec![vec![event("again", "s", "{}")]]);
        assert_eq!(positions(&outcomes[0]), [(2, Some(2))]);
        let (events, count): (i64, i64) = writer
            .conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM events), event_count FROM sessions WHERE id = 's'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((events, count), (2, 2));
    }

    #[test]
    fn past_the_cap_the_session_caches_are_read_from_the_file_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = writer(&dir);
        let many = (0..=MAX_HELD_SESSIONS)
            .map(|i| event(&format!("e{i}"), &format!("s{i}"), "{}"))
            .collect();
        commit(&mut writer, vec![many]);
        assert_eq!(writer.session_heads.len(), MAX_HELD_SESSIONS + 1);
        let outcomes = commit(&mut writer, vec![vec![event("next", "s0", "{}")]]);
        let head = MAX_HELD_SESSIONS as i64 + 2;
        assert_eq!(positions(&outcomes[0]), [(head, Some(2))]);
        // The next batch began by letting go of them: only what it touched is held now.
        assert_eq!(writer.session_heads.len(), 1);
        assert_eq!(writer.session_rows.get_mut().held(), 1);

        // The rows alone past the cap: a refused request lets go of the counters but keeps
        // the rows the requests before it changed.
        let many = (0..=MAX_HELD_SESSIONS)
            .map(|i| event(&format!("f{i}"), &format!("s{i}"), "{}"))
            .collect();
        let conflict = vec![event("next", "s0", r#"{"other":true}"#)];
        let outcomes = commit(&mut writer, vec![many, conflict]);
        assert!(matches!(outcomes[1], Err(AppendError::Conflict { .. })));
        assert!(writer.session_heads.is_empty());
        assert_eq!(writer.session_rows.get_mut().held(), MAX_HELD_SESSIONS + 1);
        let outcomes = commit(&mut writer, vec![vec![event("last", "s1", "{}")]]);
        assert_eq!(positions(&outcomes[0]), [(2 * head, Some(3))]);
        assert_eq!(writer.session_rows.get_mut().held(), 1);
    }
}
