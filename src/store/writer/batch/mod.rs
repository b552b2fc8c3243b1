//! A batch: the requests taken from the queue together, run in one transaction and committed
//! at once. A batch is first run with its requests sharing the transaction; when one is
//! refused, it is run again with a savepoint per request (see [`Run`]). Callers are answered,
//! and the hubs told, only after the commit.

use super::thread::WriterThread;
use super::{AppendError, Appended, Decided};
use crate::coordination;
use crate::event::{NewEvent, StoredEvent, time};
use crate::response;
use crate::store::read;
use crate::store::stages::{self, Arrival};
use rusqlite::Connection;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tokio::sync::oneshot;

type Reply = oneshot::Sender<Result<Vec<Appended>, AppendError>>;
type DecideReply = oneshot::Sender<Result<Decided, AppendError>>;
type RespondReply = oneshot::Sender<Result<Vec<response::Recorded>, AppendError>>;

/// How a batch is run. Each request is undone alone when it is refused (a conflicting id, a row
/// the database refuses), so that it never fails the others. A savepoint per request does that,
/// but it copies every page the request changes first (a hook event changes eight tables: a
/// fifth of the writer's time went there). So a batch is first run without them, and only
/// when a request is refused is it rolled back and run again with them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Run {
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
pub(super) enum Pending {
    /// Events to append as one request.
    Append {
        events: Vec<NewEvent>,
        reply: Reply,
        arrival: Arrival,
    },
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

/// A request's answer, made in the order of the batch and sent after the commit.
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

impl WriterThread {
    /// Commits a batch; a bug that panics inside it must not take the only writer down with
    /// it (every later write would fail). The panic is logged, the transaction rolled back,
    /// the batch's callers get an error (their replies are dropped), and the next batch starts
    /// from the file as always.
    pub(super) fn commit_batch_or_survive(&mut self, batch: Vec<Pending>) {
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
            self.sessions.forget();
            // Events it committed before panicking are indexed from the log.
            self.derived.resync(self.head);
        }
    }

    pub(super) fn commit_batch(&mut self, batch: Vec<Pending>) {
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
        let committed_at = Instant::now();
        // What the batch's events need derived, before anything else can fail.
        self.derived_committed(committed.len(), committed_at);
        self.shared_head.store(self.head, Ordering::Release);
        self.healthy.store(true, Ordering::Release);
        let (apply, commit) = (applied - started, committed_at - applied);
        self.stats.record_commit(committed.len(), apply, commit);
        self.stats.metrics.record_appended(&committed);
        for outcome in &outcomes {
            if let Outcome::Append(answer) = outcome {
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
        for records in std::mem::take(&mut self.responses_committed) {
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
        self.texts.clear();
        let result = control(&self.conn, "BEGIN IMMEDIATE").and_then(|()| {
            // The head comes from the file. The session counters and rows this thread holds
            // are the file's too, unless another connection (a sqlite3 session, an import)
            // has committed since this thread's last batch: then they are read again.
            self.head = read::head(&self.conn)?;
            // Events another connection committed have no texts here: read from the log.
            self.derived.resync(self.head);
            self.sessions.begin_batch(&self.conn)?;
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
                self.sessions.forget();
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

    /// Writes the session rows held in memory, noting a failure as theirs.
    pub(super) fn write_held_rows(&mut self) -> rusqlite::Result<()> {
        let written = self.sessions.flush(&self.conn);
        self.rows_failed |= written.is_err();
        written
    }

    /// Opens a request's savepoint, and the record of the held session rows it changes; returns
    /// the head to go back to if the request is undone.
    pub(super) fn open_request(&mut self) -> rusqlite::Result<i64> {
        control(&self.conn, "SAVEPOINT request")?;
        self.sessions.begin_request();
        Ok(self.head)
    }

    /// Keeps what the request did, in the file and in the held session rows.
    pub(super) fn keep_request(&mut self) -> rusqlite::Result<()> {
        control(&self.conn, "RELEASE request")?;
        self.sessions.keep_request();
        Ok(())
    }

    /// Undoes the request: its rows, its changes to the held session rows, and the head.
    pub(super) fn undo_request(&mut self, head_before: i64) -> rusqlite::Result<()> {
        self.conn
            .execute_batch("ROLLBACK TO request; RELEASE request")?;
        self.sessions.undo_request();
        self.texts.retain(|(sequence, _)| *sequence <= head_before);
        self.head = head_before;
        Ok(())
    }
}

/// Runs a transaction-control statement, prepared once: the writer runs two per batch and two
/// per request, and parsing them anew each time showed in its profile.
pub(super) fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}
