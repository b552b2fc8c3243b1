//! Replaying the log into the projections for a rebuild, on one thread or on two.
//!
//! On two ([`beside`]), a second thread reads the log on its own connection, parses each
//! payload and applies the agent projections (sessions, heroes, missions, tool uses) to rows
//! it holds in memory. This thread, which owns the rebuild's connection, runs everything that
//! touches SQL, in log order: the alerts the agent projections raised, the projections that
//! write SQL as they go ([`apply_rest`]), the changed agent rows the other thread hands over
//! every `every` events, and the reads of rows the other thread does not hold.
//!
//! The other thread lets go of closed rows when it hands them over. Before it reads a row it
//! does not hold, it waits until this thread has confirmed writing every row handed over;
//! the read is then answered ahead of the queued work (which changes no agent row).

use super::tables::{Backing, Cached, Changes};
use super::{Parsed, alerts, apply_agents, apply_parsed, apply_rest};
use crate::event::StoredEvent;
use crate::event::row::{EVENT_COLUMNS, stored_event};
use rusqlite::{Connection, Result};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::sync::mpsc;

/// Events handed from the other thread to this one at a time.
const STEPS: usize = 256;
/// Handovers queued before the other thread waits for this one.
const QUEUE: usize = 64;

fn query(conn: &Connection) -> Result<rusqlite::CachedStatement<'_>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM events WHERE sequence > ?1 ORDER BY sequence",
        EVENT_COLUMNS
    ))
}

/// Replays the events after `after` on this thread alone, writing the rows held in memory
/// every `every` events. Returns the number replayed.
pub fn inline(conn: &Connection, after: i64, fresh: bool, every: u64) -> Result<u64> {
    let tables = Cached::new(conn, fresh);
    let mut statement = query(conn)?;
    let mut rows = statement.query([after])?;
    let mut replayed = 0;
    while let Some(row) = rows.next()? {
        let event = stored_event(row)?;
        apply_parsed(&tables, conn, &event, &Parsed::of(&event))?;
        replayed += 1;
        if replayed % every == 0 {
            tables.flush()?;
        }
    }
    tables.flush()?;
    Ok(replayed)
}

/// A read of SQL asked for by the other thread; it sends the answer itself, and returns the
/// error if the read failed (this thread then stops: SQLite may have rolled the transaction
/// back, and the queued work must not run outside it).
type Read = Box<dyn FnOnce(&Connection) -> Result<()> + Send>;

/// An alert the agent projections raised, recorded with its event.
struct Raised {
    kind: String,
    message: String,
    details: Value,
}

/// One event, with what this thread still has to do for it.
struct Step {
    event: StoredEvent,
    parsed: Parsed,
    raised: Vec<Raised>,
}

enum Job {
    Steps(Vec<Step>),
    /// Changed agent rows; this thread confirms each write on the acknowledgement channel.
    Write(Changes),
    Failed(rusqlite::Error),
    /// Nothing to do but answer the reads waiting.
    Wake,
}

/// The backing of the other thread's rows: reads go to this thread, alerts wait in `raised`
/// until their event is handed over.
struct Remote {
    reads: mpsc::Sender<Read>,
    jobs: mpsc::SyncSender<Job>,
    raised: RefCell<Vec<Raised>>,
    /// This thread's confirmations of [`Job::Write`]s, and how many are outstanding.
    acks: mpsc::Receiver<()>,
    unacked: Cell<u64>,
    /// Steps this thread is done with, to be dropped by the thread that made them (a tenth
    /// of this thread's time when it dropped them itself).
    done: mpsc::Receiver<Vec<Step>>,
}

impl Remote {
    fn send(&self, job: Job) -> Result<()> {
        self.jobs.send(job).map_err(|_| stopped())
    }

    fn write(&self, changes: Changes) -> Result<()> {
        self.send(Job::Write(changes))?;
        self.unacked.set(self.unacked.get() + 1);
        Ok(())
    }
}

fn stopped() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some("the rebuild's other thread stopped".into()),
    )
}

impl Backing for Remote {
    fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        // Every row handed over is written first.
        while self.unacked.get() > 0 {
            self.acks.recv().map_err(|_| stopped())?;
            self.unacked.set(self.unacked.get() - 1);
        }
        let (answer, answered) = mpsc::sync_channel(1);
        let ask: Read = Box::new(move |conn: &Connection| match read(conn) {
            Ok(answered) => {
                let _ = answer.send(Ok(answered));
                Ok(())
            }
            Err(e) => {
                let _ = answer.send(Err(stopped()));
                Err(e)
            }
        });
        self.reads.send(ask).map_err(|_| stopped())?;
        // Wakes this thread if it waits for work. When the queue is full it is busy, and
        // answers before its next piece of work.
        let _ = self.jobs.try_send(Job::Wake);
        answered.recv().map_err(|_| stopped())?
    }

    fn raise(&self, kind: &str, _: &StoredEvent, message: &str, details: &Value) -> Result<()> {
        self.raised.borrow_mut().push(Raised {
            kind: kind.to_string(),
            message: message.to_string(),
            details: details.clone(),
        });
        Ok(())
    }
}

/// Replays the events after `after` with `reader` (a read transaction on the same log) on a
/// second thread, as the module says. Returns the number replayed.
pub fn beside(
    conn: &Connection,
    reader: Connection,
    after: i64,
    fresh: bool,
    every: u64,
) -> Result<u64> {
    let (jobs_in, jobs) = mpsc::sync_channel(QUEUE);
    let (reads_in, reads) = mpsc::channel();
    let (acks_in, acks) = mpsc::channel();
    let (done_in, done) = mpsc::channel();
    std::thread::scope(|scope| {
        let other = scope.spawn(move || {
            let remote = Remote {
                reads: reads_in,
                jobs: jobs_in.clone(),
                raised: RefCell::default(),
                acks,
                unacked: Cell::new(0),
                done,
            };
            let tables = Cached::over(remote, fresh);
            match agents(&reader, after, every, &tables) {
                Ok(replayed) => Some(replayed),
                Err(e) => {
                    let _ = jobs_in.send(Job::Failed(e));
                    None
                }
            }
        });
        // Owns the receivers, so when it returns (an error included) the other thread's
        // next send or wait fails and it stops.
        let answered = answer(conn, jobs, reads, acks_in, done_in);
        let replayed = match other.join() {
            Ok(replayed) => replayed,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        answered?;
        replayed.ok_or_else(stopped)
    })
}

/// The other thread: reads, parses and applies the agent projections, handing each event
/// over, and the changed rows every `every` events.
fn agents(reader: &Connection, after: i64, every: u64, tables: &Cached<Remote>) -> Result<u64> {
    let remote = tables.backing();
    let mut statement = query(reader)?;
    let mut rows = statement.query([after])?;
    let mut steps = Vec::with_capacity(STEPS);
    let mut replayed = 0;
    while let Some(row) = rows.next()? {
        let event = stored_event(row)?;
        let parsed = Parsed::of(&event);
        apply_agents(tables, &event, &parsed)?;
        let raised = std::mem::take(&mut *remote.raised.borrow_mut());
        steps.push(Step {
            event,
            parsed,
            raised,
        });
        replayed += 1;
        let write = replayed % every == 0;
        if steps.len() == STEPS || write {
            let full = std::mem::replace(&mut steps, Vec::with_capacity(STEPS));
            remote.send(Job::Steps(full))?;
            remote.done.try_iter().for_each(drop);
        }
        if write {
            remote.write(tables.take_changes())?;
        }
    }
    if !steps.is_empty() {
        remote.send(Job::Steps(steps))?;
    }
    remote.write(tables.take_changes())?;
    Ok(replayed)
}

/// This thread: does the queued work in order, answering the other thread's reads before
/// each piece, until the other thread is done.
fn answer(
    conn: &Connection,
    jobs: mpsc::Receiver<Job>,
    reads: mpsc::Receiver<Read>,
    acks: mpsc::Sender<()>,
    done: mpsc::Sender<Vec<Step>>,
) -> Result<()> {
    let serve = || -> Result<()> {
        while let Ok(read) = reads.try_recv() {
            read(conn)?;
        }
        Ok(())
    };
    loop {
        serve()?;
        let Ok(job) = jobs.recv() else {
            return Ok(()); // the other thread is done
        };
        match job {
            Job::Steps(steps) => {
                for step in &steps {
                    serve()?;
                    for alert in &step.raised {
                        alerts::raise(
                            conn,
                            &alert.kind,
                            &step.event,
                            &alert.message,
                            &alert.details,
                        )?;
                    }
                    apply_rest(conn, &step.event, &step.parsed)?;
                }
                let _ = done.send(steps);
            }
            Job::Write(changes) => {
                // No read waits meanwhile: the other thread asks only once every write is
                // confirmed.
                changes.write(conn)?;
                let _ = acks.send(());
            }
            Job::Failed(e) => return Err(e),
            Job::Wake => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read the other thread asked for fails: this thread stops at once, with that error,
    /// and runs none of the work queued behind it (SQLite may have rolled the transaction
    /// back, and that work would then be committed statement by statement).
    #[test]
    fn a_failed_read_stops_the_connections_thread_before_the_queued_work() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let (jobs_in, jobs) = mpsc::sync_channel(QUEUE);
        let (reads_in, reads) = mpsc::channel::<Read>();
        let (acks_in, _acks) = mpsc::channel();
        let (done_in, _done) = mpsc::channel();
        let (answer_in, answered) = mpsc::channel();
        reads_in
            .send(Box::new(move |c: &Connection| {
                let read = c.prepare_cached("SELECT nothing FROM nowhere").map(|_| ());
                let failed = read.is_err();
                answer_in.send(failed).unwrap();
                read
            }))
            .unwrap();
        // An event of a type outside the catalogue: applying it raises an alert.
        let event = StoredEvent {
            sequence: 1,
            event_id: "e1".into(),
            session_id: None,
            session_sequence: None,
            event_type: "no.such.type".into(),
            source: "api".into(),
            event_time: "2026-12-01T00:00:00.000Z".into(),
            received_at: "2026-12-01T00:00:00.000Z".into(),
            origin: "here".into(),
            payload: "{}".into(),
        };
        let step = Step {
            event,
            parsed: Parsed::Other,
            raised: Vec::new(),
        };
        jobs_in.send(Job::Steps(vec![step])).unwrap();
        drop(jobs_in);

        let result = answer(&conn, jobs, reads, acks_in, done_in);
        assert!(answered.recv().unwrap(), "the read ran and failed");
        let error = result.expect_err("the failed read stops it").to_string();
        assert!(error.contains("nowhere"), "{error}");
        let alerts: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM alerts")
            .unwrap()
            .query_row([], |r| r.get(0))
            .unwrap();
        assert_eq!(alerts, 0, "the queued event was not applied");
    }
}
