//! A batch: the requests taken from the queue together, run in one transaction and committed
//! at once. A batch is first run with its requests sharing the transaction; when one is
//! refused, it is run again with a savepoint per request (see [`Run`]). The thread answers the
//! callers, and tells the hubs, only after the commit.
//!
//! [`Appender`] is the log as batches write it: the only write connection, the head, the
//! session rows held between batches, and how the current run goes. Only this module and its
//! parts change them:
//!
//! - `append`: one request's events (or response events), numbered, stored and projected;
//! - `decide`: a coordination command, decided inside the batch's transaction.

mod append;
mod decide;

use super::cache::SessionCache;
use super::prepared::Prepared;
use super::{AppendError, Appended, Decided};
use crate::coordination;
use crate::event::StoredEvent;
use crate::response;
use crate::store::read;
use crate::store::stages::Arrival;
use crate::store::stats::WriterStats;
use rusqlite::Connection;
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
        events: Vec<Prepared>,
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
pub(super) enum Outcome {
    Append(Result<Vec<Appended>, AppendError>),
    Decide(Result<Decided, AppendError>),
    Respond(Result<Vec<response::Recorded>, AppendError>),
}

impl Pending {
    pub(super) fn fail(self, error: AppendError) {
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

    pub(super) fn answer(self, outcome: Outcome) {
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

/// What an appended event brings besides its rows: where it is recorded from, and whether its
/// text is kept for the search rows.
pub(super) struct Settings {
    /// This hooklog's name, recorded on the events it stores that bring none (`--origin`).
    pub(super) origin: String,
    pub(super) rules: coordination::Rules,
    /// Whether each event appended is indexed for search (always, but on a scratch database
    /// and in `bench search`'s measurement without the index).
    pub(super) search_index: bool,
}

/// The log as batches write it. Invariants: `head` is the last sequence in the file, counting
/// the open transaction's; the held session rows are the file's, or forgotten; `texts` and
/// `responses` hold only what the open transaction (or the last committed one) stored.
pub(super) struct Appender {
    conn: Connection,
    /// The last sequence assigned, including uncommitted ones in the open transaction. Read
    /// from the file at the start of every batch, so it can never drift from what is stored.
    head: i64,
    /// The sessions' counters, rows and calls held between events and batches.
    sessions: SessionCache,
    /// How this run of the batch goes (see [`Run`]).
    run: Run,
    /// Whether writing the held session rows failed in this run of the batch.
    rows_failed: bool,
    /// Whether a request was refused in this run of the batch while it shared the batch's
    /// transaction with the others (`Run::Shared`).
    refused_shared: bool,
    /// The search texts of this run of the batch's events, for the derived rows once it commits.
    texts: Vec<(i64, String)>,
    /// The response events of the batch being run, one group per request, for the hub.
    responses: Vec<Vec<response::Stored>>,
    settings: Settings,
}

/// A committed batch: each request's outcome, in order, and what the thread passes on.
pub(super) struct Committed {
    pub(super) outcomes: Vec<Outcome>,
    /// The events stored, in sequence order.
    pub(super) events: Vec<StoredEvent>,
    /// When the last request was applied (`COMMIT` began).
    pub(super) applied: Instant,
    /// The head the file had when the committed run began (other connections may move it).
    pub(super) began_at: i64,
    /// The search texts of the events stored.
    pub(super) texts: Vec<(i64, String)>,
    /// The response events stored, one group per request.
    pub(super) responses: Vec<Vec<response::Stored>>,
}

impl Appender {
    /// The log on `conn` (open and migrated), from the head the file has.
    pub(super) fn new(conn: Connection, settings: Settings) -> rusqlite::Result<Appender> {
        Ok(Appender {
            head: read::head(&conn)?,
            conn,
            sessions: SessionCache::default(),
            run: Run::Shared,
            rows_failed: false,
            refused_shared: false,
            texts: Vec::new(),
            responses: Vec::new(),
            settings,
        })
    }

    pub(super) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The last sequence stored.
    pub(super) fn head(&self) -> i64 {
        self.head
    }

    #[cfg(test)]
    pub(super) fn sessions(&mut self) -> &mut SessionCache {
        &mut self.sessions
    }

    /// Forgets the held session rows (something else changed the file: a prune step).
    pub(super) fn forget_sessions(&mut self) {
        self.sessions.forget();
    }

    /// After a batch panicked: its transaction rolled back, the head read again from the file,
    /// the held rows forgotten. Returns the head.
    pub(super) fn recover(&mut self) -> i64 {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        self.head = read::head(&self.conn).unwrap_or(self.head);
        self.sessions.forget();
        self.head
    }

    /// Runs the batch and commits it: first with its requests sharing the transaction, then,
    /// when one is refused, with a savepoint each, then, when the held session rows cannot be
    /// written, writing each event's row at once. An error means nothing in it was stored.
    pub(super) fn commit(
        &mut self,
        batch: &[Pending],
        received_at: &str,
        stats: &WriterStats,
    ) -> rusqlite::Result<Committed> {
        let mut attempt = self.run_batch(batch, received_at, Run::Shared);
        if let Err(Failed::Refused) = &attempt {
            stats.record_isolated();
            attempt = self.run_batch(batch, received_at, Run::Isolated);
        }
        if let Err(Failed::HeldRows(e)) = &attempt {
            // The rows are written outside any request's savepoint, so one request's bad row
            // would fail the whole batch: run it again writing each event's row at once, so
            // only the request at fault is refused.
            tracing::warn!(
                error = %e,
                "writing the batch's session rows failed; running it again row by row"
            );
            stats.record_rerun();
            attempt = self.run_batch(batch, received_at, Run::RowByRow);
        }
        match attempt {
            Ok(committed) => Ok(committed),
            Err(Failed::Refused) => unreachable!("an isolated run refuses requests one by one"),
            Err(Failed::HeldRows(e) | Failed::Batch(e)) => Err(e),
        }
    }

    /// Runs the batch in one transaction and commits it. Unless `run` is `RowByRow`, the
    /// session rows the batch changes are held in memory and written once, before `COMMIT`
    /// (and before a coordination command). On failure everything is rolled back.
    fn run_batch(
        &mut self,
        batch: &[Pending],
        received_at: &str,
        run: Run,
    ) -> Result<Committed, Failed> {
        let head_before = self.head;
        self.run = run;
        self.rows_failed = false;
        self.refused_shared = false;
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut committed: Vec<StoredEvent> = Vec::new();
        let mut applied = Instant::now();
        let mut began_at = head_before;
        self.responses.clear();
        self.texts.clear();
        let result = control(&self.conn, "BEGIN IMMEDIATE").and_then(|()| {
            // The head comes from the file. The session counters and rows this thread holds
            // are the file's too, unless another connection (a sqlite3 session, an import)
            // has committed since this thread's last batch: then they are read again.
            self.head = read::head(&self.conn)?;
            began_at = self.head;
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
        if run == Run::RowByRow {
            // That run wrote through the SQL tables alone, past the calls and heroes held:
            // what it held (new sessions' empty call lists among them) is let go of.
            self.sessions.forget();
        }
        match result {
            Ok(()) => Ok(Committed {
                outcomes,
                events: committed,
                applied,
                began_at,
                texts: std::mem::take(&mut self.texts),
                responses: std::mem::take(&mut self.responses),
            }),
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
    fn write_held_rows(&mut self) -> rusqlite::Result<()> {
        let written = self.sessions.flush(&self.conn);
        self.rows_failed |= written.is_err();
        written
    }

    /// Opens a request's savepoint, and the record of the held session rows it changes; returns
    /// the head to go back to if the request is undone.
    fn open_request(&mut self) -> rusqlite::Result<i64> {
        control(&self.conn, "SAVEPOINT request")?;
        self.sessions.begin_request();
        Ok(self.head)
    }

    /// Keeps what the request did, in the file and in the held session rows.
    fn keep_request(&mut self) -> rusqlite::Result<()> {
        control(&self.conn, "RELEASE request")?;
        self.sessions.keep_request();
        Ok(())
    }

    /// Undoes the request: its rows, its changes to the held session rows, and the head.
    fn undo_request(&mut self, head_before: i64) -> rusqlite::Result<()> {
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
