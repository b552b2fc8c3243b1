//! The writer thread: what it owns, and its run loop, which drains the queue into batches
//! and, between them, writes the derived rows, prunes and records positions.

use super::batch::{Pending, Run};
use super::cache::SessionCache;
use super::derive::{Derived, SearchProgress};
use super::{Command, MAX_BATCH_EVENTS, Position, Pruning};
use crate::coordination;
use crate::event::time;
use crate::projection::search;
use crate::response::{self, hub::ResponseHub};
use crate::store::read;
use crate::store::retention::{self, Retention};
use crate::store::snapshot::Snapshot;
use crate::store::stages::Stages;
use crate::store::stats::WriterStats;
use rusqlite::Connection;
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;

/// The writer thread's state: the only write connection, the head, and what it holds between
/// batches.
pub(super) struct WriterThread {
    pub(super) conn: Connection,
    /// Where committed events go (the live hub).
    pub(super) hub: Box<dyn super::Publish>,
    /// The last sequence assigned, including uncommitted ones in the open transaction. Read
    /// from the file at the start of every batch, so it can never drift from what is stored.
    pub(super) head: i64,
    /// The sessions' counters, rows and calls held between events and batches.
    pub(super) sessions: SessionCache,
    /// How this run of the batch goes (see [`Run`]).
    pub(super) run: Run,
    /// Whether writing the held session rows failed in this run of the batch.
    pub(super) rows_failed: bool,
    /// Whether a request was refused in this run of the batch while it shared the batch's
    /// transaction with the others (`Run::Shared`).
    pub(super) refused_shared: bool,
    pub(super) retention: Retention,
    /// The retention snapshot's file, opened by the first prune step that needs it.
    pub(super) snapshot: Snapshot,
    /// The JetStream stream this log is published to (`serve --publish`): retention keeps
    /// every event until it is published.
    pub(super) publish_stream: Option<String>,
    /// The response events' own retention, and where their commits are published.
    pub(super) response_retention: response::Retention,
    pub(super) response_hub: ResponseHub,
    /// The response events of the batch being run, one group per request, for the hub.
    pub(super) responses_committed: Vec<Vec<response::Stored>>,
    pub(super) clock: time::Clock,
    /// Where each event's stages are timed (shared with the streams' hub).
    pub(super) stages: Stages,
    /// The search texts of this run of the batch's events, for [`Derived`] once it commits.
    pub(super) texts: Vec<(i64, String)>,
    /// What has been acknowledged and not yet derived (search rows).
    pub(super) derived: Derived,
    /// How far the search rows have got, shared with readers.
    pub(super) progress: Arc<SearchProgress>,
    /// The connection's `PRAGMA synchronous` (2: FULL), which a derive pass relaxes.
    pub(super) synchronous: i64,
    /// This hooklog's name, recorded on the events it stores that bring none (`--origin`).
    pub(super) origin: String,
    pub(super) rules: coordination::Rules,
    /// Whether each event appended is indexed for search (always, but in `bench search`'s
    /// measurement without the index).
    pub(super) search_index: bool,
    pub(super) healthy: Arc<AtomicBool>,
    pub(super) pruning: Arc<Mutex<Pruning>>,
    pub(super) shared_head: Arc<AtomicI64>,
    pub(super) stats: Arc<WriterStats>,
}

impl WriterThread {
    pub(super) fn new(
        conn: Connection,
        hub: Box<dyn super::Publish>,
        clock: time::Clock,
        rules: coordination::Rules,
    ) -> rusqlite::Result<WriterThread> {
        let head = read::head(&conn)?;
        let snapshot = Snapshot::of(&conn)?;
        let through = search::through(&conn)?;
        let synchronous = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
        Ok(WriterThread {
            conn,
            snapshot,
            hub,
            head,
            sessions: SessionCache::default(),
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
            pruning: Arc::new(Mutex::new(Pruning::default())),
            shared_head: Arc::new(AtomicI64::new(head)),
            stats: Arc::new(WriterStats::default()),
            stages: Stages::default(),
            texts: Vec::new(),
            derived: Derived::starting(through, head),
            progress: Arc::new(SearchProgress::new(through)),
            synchronous,
        })
    }

    pub(super) fn run(&mut self, mut commands: mpsc::Receiver<Command>) {
        let mut stopping = false;
        while !stopping {
            // With nothing queued, the derived rows catch up before the writer waits.
            let first = match commands.try_recv() {
                Ok(command) => command,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    if self.derived.ready() && self.derive() {
                        continue;
                    }
                    let Some(command) = commands.blocking_recv() else {
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
        while self.derived.ready() && self.derive() {}
        self.fold_wal();
        tracing::debug!(head = self.head, "writer stopped");
    }
}
