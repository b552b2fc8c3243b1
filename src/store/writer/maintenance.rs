//! The writer's work between batches: pruning the log and the response events to their
//! retention, recording positions with JetStream streams, and folding the WAL at shutdown.

use super::{Position, Pruning, PruningState, SHUTDOWN_CHECKPOINT_WAIT};
use crate::event::time;
use crate::response;
use crate::store::retention::{self, Retention};
use crate::store::snapshot::Snapshot;
use rusqlite::{Connection, params};
use std::sync::{Arc, Mutex};

/// What the log and the response events are kept for, and how pruning them goes.
pub(super) struct Upkeep {
    retention: Retention,
    /// The retention snapshot's file, opened by the first prune step that needs it.
    snapshot: Snapshot,
    /// The JetStream stream this log is published to (`serve --publish`): retention keeps
    /// every event until it is published.
    publish_stream: Option<String>,
    /// The response events' own retention.
    response_retention: response::Retention,
    /// How pruning goes, shared with readers (`/health`, `/stats`).
    pruning: Arc<Mutex<Pruning>>,
}

impl Upkeep {
    pub(super) fn new(
        conn: &Connection,
        retention: Retention,
        response_retention: response::Retention,
        publish_stream: Option<String>,
    ) -> rusqlite::Result<Upkeep> {
        let mut pruning = Pruning::default();
        if retention.is_set() {
            pruning.state = PruningState::Ok;
        }
        Ok(Upkeep {
            retention,
            snapshot: Snapshot::of(conn)?,
            publish_stream,
            response_retention,
            pruning: Arc::new(Mutex::new(pruning)),
        })
    }

    /// How pruning goes, for readers.
    pub(super) fn pruning(&self) -> Arc<Mutex<Pruning>> {
        self.pruning.clone()
    }

    /// One bounded prune step of at least `min_step` events, when retention is configured;
    /// the search rows are written through `indexed_through`. Returns whether it pruned. A
    /// failure is logged and retried at the next step; it never affects ingest.
    pub(super) fn prune(&mut self, conn: &Connection, min_step: i64, indexed_through: i64) -> bool {
        if !self.retention.is_set() {
            return false;
        }
        let now = chrono::Utc::now();
        // A prune step runs projection code (it advances the retention snapshot), so a panic
        // there is caught like a batch's: the step is rolled back and the writer lives on.
        let publish_stream = self.publish_stream.as_deref();
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            retention::prune_step_min(
                conn,
                &mut self.snapshot,
                &self.retention,
                now,
                min_step,
                publish_stream,
                Some(indexed_through),
            )
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
                return false;
            }
            Ok(Ok(retention::Step {
                pruned,
                unpublished,
            })) => {
                tracing::debug!(pruned, "pruned the oldest events");
                let recovered = {
                    let mut pruning = self.pruning.lock().unwrap_or_else(|e| e.into_inner());
                    let failures = pruning.consecutive_failures;
                    *pruning = Pruning {
                        state: PruningState::Ok,
                        pruned: pruning.pruned + pruned as u64,
                        unpublished: unpublished as u64,
                        ..Pruning::default()
                    };
                    failures
                };
                if recovered > 0 {
                    tracing::info!(failures = recovered, "pruning works again");
                }
                return true;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => "a prune step panicked (a bug); it was rolled back".to_string(),
        };
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        let failures = {
            let mut pruning = self.pruning.lock().unwrap_or_else(|e| e.into_inner());
            pruning.consecutive_failures += 1;
            if pruning.consecutive_failures == 1 {
                pruning.failing_since = Some(time::format(now));
            }
            pruning.state = PruningState::Failing;
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
        false
    }

    /// One prune step of the response events (their own retention, on the periodic tick). A
    /// failure is logged and retried at the next tick.
    pub(super) fn prune_responses(&self, conn: &Connection) {
        match response::store::prune(conn, &self.response_retention, chrono::Utc::now()) {
            Ok(0) => {}
            Ok(pruned) => tracing::debug!(pruned, "pruned the oldest response events"),
            Err(e) => {
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                tracing::warn!(error = %e, "pruning response events failed; retried in a second");
            }
        }
    }
}

/// Moves a position forward (never back). A failure is logged: the position stays where it
/// was, so those events are published or consumed again after a restart (as duplicates).
pub(super) fn record_position(conn: &Connection, kind: Position, stream: &str, sequence: i64) {
    let table = kind.table();
    let recorded = conn
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

/// Folds the WAL into the main file so a stopped hooklog leaves one self-contained file.
/// An open reader (someone's sqlite3) can hold it up: wait a moment, then leave the WAL
/// in place, which is safe (the next open replays it).
pub(super) fn fold_wal(conn: &Connection) {
    let _ = conn.busy_timeout(SHUTDOWN_CHECKPOINT_WAIT);
    let result = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
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
