//! The writer thread: what it owns, and its run loop, which drains the queue into batches
//! and, between them, writes the derived rows, prunes and records positions.

use super::batch::{Appender, Committed, Pending};
use super::derive::Derived;
use super::maintenance::{self, Upkeep};
use super::{AppendError, Command, MAX_BATCH_EVENTS, Position, Writer};
use crate::coordination;
use crate::event::time;
use crate::response::{self, hub::ResponseHub};
use crate::store::retention::{self, Retention};
use crate::store::stages::{self, Arrival, Stages};
use crate::store::stats::WriterStats;
use rusqlite::Connection;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Instant;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;

pub(super) use super::batch::Settings;

/// The writer thread's state, in the parts that keep their own invariants: the log as batches
/// write it ([`Appender`]), the derived rows ([`Derived`]), pruning ([`Upkeep`]), and where a
/// committed batch is announced. Only this file puts them together.
pub(super) struct WriterThread {
    appender: Appender,
    derived: Derived,
    upkeep: Upkeep,
    /// Where committed events go (the live hub).
    hub: Box<dyn super::Publish>,
    /// Where committed response events go.
    response_hub: ResponseHub,
    /// Where each event's stages are timed (shared with the streams' hub).
    stages: Stages,
    clock: time::Clock,
    /// The committed head, for readers.
    shared_head: Arc<AtomicI64>,
    /// Whether the last batch committed (`/health`).
    healthy: Arc<AtomicBool>,
    stats: Arc<WriterStats>,
}

/// What the writer keeps to besides its connection and hubs.
pub(super) struct Keep {
    pub(super) retention: Retention,
    pub(super) response_retention: response::Retention,
    /// The JetStream stream this log is published to (`serve --publish`).
    pub(super) publish_stream: Option<String>,
}

impl WriterThread {
    pub(super) fn new(
        conn: Connection,
        hubs: (Box<dyn super::Publish>, ResponseHub),
        clock: time::Clock,
        settings: Settings,
        keep: Keep,
    ) -> rusqlite::Result<WriterThread> {
        let (hub, response_hub) = hubs;
        let stages = hub.stages();
        let search_index = settings.search_index;
        let upkeep = Upkeep::new(
            &conn,
            keep.retention,
            keep.response_retention,
            keep.publish_stream,
        )?;
        let appender = Appender::new(conn, settings)?;
        let head = appender.head();
        let derived = Derived::starting(appender.conn(), head, search_index, stages.clone())?;
        Ok(WriterThread {
            appender,
            derived,
            upkeep,
            hub,
            response_hub,
            stages,
            clock,
            shared_head: Arc::new(AtomicI64::new(head)),
            healthy: Arc::new(AtomicBool::new(true)),
            stats: Arc::new(WriterStats::default()),
        })
    }

    /// A writer for tests and scratch databases: no hubs, no retention.
    pub(super) fn scratch(conn: Connection, search_index: bool) -> rusqlite::Result<WriterThread> {
        // Only coordination commands read the rules.
        let rules = coordination::Rules {
            owner_hung_after: std::time::Duration::from_secs(60),
        };
        let settings = Settings {
            origin: String::new(),
            rules,
            search_index,
        };
        let keep = Keep {
            retention: Retention::default(),
            response_retention: response::Retention::default(),
            publish_stream: None,
        };
        let hubs: (Box<dyn super::Publish>, _) = (Box::new(()), ResponseHub::default());
        WriterThread::new(conn, hubs, time::Clock::default(), settings, keep)
    }

    /// The handle callers send requests through, on `queue`, with the shared views of this
    /// thread's state.
    pub(super) fn handle(&self, queue: mpsc::Sender<Command>) -> Writer {
        Writer {
            queue,
            head: self.shared_head.clone(),
            stats: self.stats.clone(),
            healthy: self.healthy.clone(),
            pruning: self.upkeep.pruning(),
            search: self.derived.progress(),
        }
    }

    pub(super) fn conn(&self) -> &Connection {
        self.appender.conn()
    }

    pub(super) fn run(&mut self, mut commands: mpsc::Receiver<Command>) {
        // Only to wait for the next command with a deadline (its timer).
        let waiting = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime for the writer's timed waits");
        let mut stopping = false;
        while !stopping {
            // With nothing queued, the derived rows catch up once a pass is due; until then
            // the writer waits for the next command, or until the oldest batch waiting has
            // waited long enough, so one pass takes many batches' rows (a pass for each idle
            // moment wrote FTS5 segments and pages a few batches at a time).
            let first = match commands.try_recv() {
                Ok(command) => command,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    if self.derived.due() && self.derive() {
                        continue;
                    }
                    let next = match self.derived.due_in() {
                        // (The timer is made inside the runtime, whose clock it needs.)
                        Some(wait) => match waiting
                            .block_on(async { tokio::time::timeout(wait, commands.recv()).await })
                        {
                            Ok(next) => next,
                            // A pass is due now.
                            Err(_) => continue,
                        },
                        None => commands.blocking_recv(),
                    };
                    let Some(command) = next else {
                        break;
                    };
                    command
                }
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
            if self.derived.due() {
                self.derive();
            }
            let conn = self.appender.conn();
            if maintain && self.upkeep.prune(conn, min_step, self.derived.through()) {
                // A prune step leaves the live `sessions` rows and every session's numbering
                // as they were, but deletes the `payload_shared` rows of the sessions it pruned
                // whole: the ids held for them must go (a session may speak again). Forgetting
                // everything (at most once per 1,000 pruned events or per second) is simplest.
                self.appender.forget_sessions();
            }
            let conn = self.appender.conn();
            if tick {
                self.upkeep.prune_responses(conn);
            }
            for (kind, stream, sequence) in positions {
                maintenance::record_position(conn, kind, &stream, sequence);
            }
        }
        while self.derive() {}
        maintenance::fold_wal(self.appender.conn());
        tracing::debug!(head = self.appender.head(), "writer stopped");
    }

    /// One pass of the derived rows, when one may run; returns whether it moved them.
    pub(super) fn derive(&mut self) -> bool {
        self.derived.derive(self.appender.conn())
    }

    /// Commits a batch; a bug that panics inside it must not take the only writer down with
    /// it (every later write would fail). The panic is logged, the transaction rolled back,
    /// the batch's callers get an error (their replies are dropped), and the next batch starts
    /// from the file as always.
    pub(super) fn commit_batch_or_survive(&mut self, batch: Vec<Pending>) {
        let committed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.commit_batch(batch);
        }));
        if committed.is_err() {
            tracing::error!("a batch panicked; it was rolled back and its requests refused");
            let head = self.appender.recover();
            // Events it committed before panicking are indexed from the log.
            self.derived.resync(head);
        }
    }

    /// Commits a batch, then tells everyone: the derived rows, the shared head, the stats, the
    /// hubs, the callers, the stages.
    pub(super) fn commit_batch(&mut self, batch: Vec<Pending>) {
        let received_at = time::format(self.clock.now());
        let started = Instant::now();
        let Committed {
            outcomes,
            events: committed,
            applied,
            began_at,
            texts,
            responses,
        } = match self.appender.commit(&batch, &received_at, &self.stats) {
            Ok(committed) => committed,
            Err(e) => {
                tracing::error!(error = %e, "batch failed; nothing in it was stored");
                self.healthy.store(false, Ordering::Release);
                let error = AppendError::Storage(e.to_string());
                for pending in batch {
                    pending.fail(error.clone());
                }
                return;
            }
        };
        let committed_at = Instant::now();
        let head = self.appender.head();
        // What the batch's events need derived, before anything else can fail. Events another
        // connection committed before this batch have no texts here: they are read from the log.
        self.derived.resync(began_at);
        self.derived
            .committed(texts, head, committed.len(), committed_at);
        self.shared_head.store(head, Ordering::Release);
        self.healthy.store(true, Ordering::Release);
        let (apply, commit) = (applied - started, committed_at - applied);
        self.stats.record_commit(committed.len(), apply, commit);
        self.stats.metrics.record_appended(&committed);
        for outcome in &outcomes {
            if let super::batch::Outcome::Append(answer) = outcome {
                self.stats.metrics.record_answer(answer);
            }
        }
        let stored = committed.len();
        let traced = tracing::enabled!(target: stages::LOG, tracing::Level::DEBUG);
        let positions: Vec<(i64, String)> = match traced {
            true => committed
                .iter()
                .map(|e| (e.sequence, e.event_id.clone()))
                .collect(),
            false => Vec::new(),
        };
        self.hub.publish(committed);
        for records in responses {
            self.response_hub.publish(records);
        }
        let arrivals: Vec<(Arrival, usize)> = batch
            .iter()
            .filter_map(|p| match p {
                Pending::Append {
                    arrival, events, ..
                } => Some((*arrival, events.len())),
                _ => None,
            })
            .collect();
        for (pending, outcome) in batch.into_iter().zip(outcomes) {
            pending.answer(outcome);
        }
        let timed = stages::Batch {
            started,
            arrivals: &arrivals,
            stored,
            apply,
            commit,
            publish: committed_at.elapsed(),
        };
        if traced {
            stages::log_batch(&timed, &positions);
        }
        self.stages.observe_batch(&timed);
    }
}

/// What tests look at inside the thread.
#[cfg(test)]
impl WriterThread {
    pub(super) fn head(&self) -> i64 {
        self.appender.head()
    }

    pub(super) fn stats(&self) -> &WriterStats {
        &self.stats
    }

    pub(super) fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    pub(super) fn shared_head(&self) -> i64 {
        self.shared_head.load(Ordering::Acquire)
    }

    pub(super) fn sessions(&mut self) -> &mut super::cache::SessionCache {
        self.appender.sessions()
    }
}
