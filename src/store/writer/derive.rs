//! Derived rows: the search rows of the events the writer has acknowledged, written by the
//! same thread after the commit that acknowledged them, in transactions of their own (issue
//! 41). What a reader must see at once (the log, sessions, heroes, missions, tool uses,
//! coordination, alerts, the change rows) stays in the acknowledging transaction; search may
//! lag by a bounded moment.
//!
//! The texts of a committed batch are kept in memory and written when the writer has nothing
//! queued, or once [`DERIVE_EVERY`] events or [`DERIVE_AFTER`] have gone by, so one
//! transaction (and one FTS5 segment) takes many batches' rows. Those commits need no fsync of
//! their own (they are made again from the log if lost, and the next acknowledging commit's
//! fsync covers them). `search_through` in `meta` is how far the rows have got; after a crash,
//! or a pass that failed, the events above it are read again from the log
//! ([`search::catch_up`]).

use super::batch::control;
use super::thread::WriterThread;
use crate::projection::search;
use crate::store::stages::Stage;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Waiting events that make a pass due even while requests are queued.
pub(super) const DERIVE_EVERY: usize = 1_000;
/// Age of the oldest waiting batch that makes a pass due even while requests are queued.
pub(super) const DERIVE_AFTER: Duration = Duration::from_millis(50);
/// Most events one pass reads back from the log (at start, or after a failed pass).
const CATCH_UP_STEP: i64 = 2_000;
/// How long after a failed pass the next one may run.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// What the writer has acknowledged but not yet derived.
#[derive(Default)]
pub(super) struct Derived {
    /// Every event at or below this sequence has its search rows (as committed).
    through: i64,
    /// The last sequence acknowledged (events without text included).
    last: i64,
    /// The texts of the events after `through`, in order, when `complete`.
    texts: Vec<(i64, String)>,
    /// Whether `texts` holds every text after `through`; when not (at start, after a failed
    /// pass), the next passes read the events from the log.
    complete: bool,
    /// Each acknowledged batch not yet derived: its last sequence, when it committed, and how
    /// many events it stored (for the `derive` stage and the lag).
    batches: Vec<(i64, Instant, usize)>,
    /// After a failed pass: not before then.
    retry_at: Option<Instant>,
}

impl Derived {
    /// Starting from the file: indexed through `through`, acknowledged through `head`.
    pub(super) fn starting(through: i64, head: i64) -> Derived {
        Derived {
            through,
            last: head,
            complete: through >= head,
            ..Derived::default()
        }
    }

    pub(super) fn through(&self) -> i64 {
        self.through
    }

    /// When the oldest batch not yet derived was committed.
    pub(super) fn oldest(&self) -> Option<Instant> {
        self.batches.first().map(|b| b.1)
    }

    /// A committed batch: its events' texts, its last sequence, its events and when it committed.
    fn committed(&mut self, texts: &mut Vec<(i64, String)>, last: i64, events: usize, at: Instant) {
        if events == 0 {
            return;
        }
        match self.complete {
            true => self.texts.append(texts),
            false => texts.clear(),
        }
        self.last = last;
        self.batches.push((last, at, events));
    }

    /// The head as the file has it: when it is not the last sequence this writer acknowledged
    /// (another connection committed, or a batch panicked after its commit), the events above
    /// `through` are read from the log.
    pub(super) fn resync(&mut self, head: i64) {
        if head != self.last {
            self.last = self.last.max(head);
            self.texts.clear();
            self.complete = false;
        }
    }

    /// Whether a pass may run now: something is not derived, and the last failed pass (if
    /// any) was [`RETRY_AFTER`] ago.
    pub(super) fn ready(&self) -> bool {
        self.last > self.through && self.retry_at.is_none_or(|t| Instant::now() >= t)
    }

    /// Whether a pass is due while requests are waiting.
    pub(super) fn due(&self) -> bool {
        self.ready()
            && (!self.complete
                || self.last - self.through >= DERIVE_EVERY as i64
                || self.oldest().is_some_and(|t| t.elapsed() >= DERIVE_AFTER))
    }
}

impl WriterThread {
    /// One pass: the waiting texts (or, when they are not all in memory, up to
    /// `CATCH_UP_STEP` events read from the log) written in a transaction of their own. A
    /// failure is logged; the next pass reads the events from the log again. Returns whether
    /// it moved `search_through`.
    pub(super) fn derive(&mut self) -> bool {
        if !self.search_index || !self.derived.ready() {
            return false;
        }
        let relax = self.synchronous >= 2;
        let pass = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if relax {
                control(&self.conn, "PRAGMA synchronous = NORMAL")?;
            }
            let written = self.derive_pass();
            if relax {
                // Back to the acknowledging commits' durability, whatever the pass did.
                self.restore_synchronous()?;
            }
            written
        }));
        let failed = match pass {
            Ok(Ok(through)) => {
                let moved = through > self.derived.through;
                self.derived_done(through);
                return moved;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => "a derive pass panicked (a bug)".to_string(),
        };
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        if relax {
            let _ = self.restore_synchronous();
        }
        self.derived.texts.clear();
        self.derived.complete = false;
        self.derived.retry_at = Some(Instant::now() + RETRY_AFTER);
        tracing::warn!(error = %failed, through = self.derived.through, "writing search rows failed; they are read from the log again at the next pass");
        false
    }

    fn restore_synchronous(&self) -> rusqlite::Result<()> {
        control(
            &self.conn,
            &format!("PRAGMA synchronous = {}", self.synchronous),
        )
    }

    /// After a batch's commit: its events' texts wait for the next pass, or, on a server that
    /// indexes nothing (`serve --no-search-index`, a scratch database), nothing waits.
    pub(super) fn derived_committed(&mut self, events: usize, at: Instant) {
        if !self.search_index {
            self.derived.last = self.head;
            self.derived.through = self.head;
            self.progress.moved(self.head, None);
            return;
        }
        self.derived
            .committed(&mut self.texts, self.head, events, at);
        if events > 0 {
            self.progress.waiting_since(at);
        }
    }

    fn derive_pass(&mut self) -> rusqlite::Result<i64> {
        control(&self.conn, "BEGIN IMMEDIATE")?;
        let through = match self.derived.complete {
            true => {
                let last = self.derived.last;
                search::write(&self.conn, &self.derived.texts, last)?;
                last
            }
            false => search::catch_up(&self.conn, CATCH_UP_STEP)?,
        };
        control(&self.conn, "COMMIT")?;
        Ok(through)
    }

    /// After a pass committed through `through`: the batches it covered are timed, and readers
    /// told.
    fn derived_done(&mut self, through: i64) {
        let now = Instant::now();
        let derived = &mut self.derived;
        derived.through = through;
        derived.retry_at = None;
        if derived.complete {
            derived.texts.clear();
        } else if through >= derived.last {
            // Caught up from the log: the next batches' texts are kept in memory again.
            derived.complete = true;
        }
        let covered = derived.batches.partition_point(|b| b.0 <= through);
        for (_, committed, events) in derived.batches.drain(..covered) {
            self.stages.observe(Stage::Derive, now - committed, events);
        }
        self.progress.moved(through, self.derived.oldest());
    }
}

/// How far the search rows have got, for readers: `/search` waits on it, `/stats`, `/health`
/// and `/metrics` show it.
pub struct SearchProgress {
    through: watch::Sender<i64>,
    /// When the oldest acknowledged batch not yet derived was committed.
    oldest: Mutex<Option<Instant>>,
}

impl SearchProgress {
    pub(super) fn new(through: i64) -> SearchProgress {
        SearchProgress {
            through: watch::Sender::new(through),
            oldest: Mutex::new(None),
        }
    }

    pub(super) fn moved(&self, through: i64, oldest: Option<Instant>) {
        *self.oldest.lock().unwrap_or_else(|e| e.into_inner()) = oldest;
        self.through.send_replace(through);
    }

    pub(super) fn waiting_since(&self, oldest: Instant) {
        let mut held = self.oldest.lock().unwrap_or_else(|e| e.into_inner());
        held.get_or_insert(oldest);
    }

    /// Every event at or below this sequence is searchable.
    pub fn through(&self) -> i64 {
        *self.through.borrow()
    }

    /// How long the oldest acknowledged event not yet searchable has waited.
    pub fn waited(&self) -> Duration {
        self.oldest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// How far behind the acknowledged `head` the search rows are.
    pub fn lag(&self, head: i64) -> SearchLag {
        let through = self.through();
        SearchLag {
            indexed_through: through,
            lag_events: (head - through).max(0),
            lag_seconds: match head > through {
                true => self.waited().as_secs_f64(),
                false => 0.0,
            },
        }
    }

    /// Waits until every event at or below `sequence` is searchable, or `wait` has passed;
    /// returns whether they are.
    pub async fn reached(&self, sequence: i64, wait: Duration) -> bool {
        let mut through = self.through.subscribe();
        tokio::time::timeout(wait, through.wait_for(|t| *t >= sequence))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// How far the search rows are behind the acknowledged events (`/health`, `/stats`).
#[derive(Debug, Clone, Copy, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchLag {
    /// Every event at or below this sequence is searchable.
    pub indexed_through: i64,
    /// Events acknowledged and not yet searchable.
    pub lag_events: i64,
    /// How long the oldest of them has waited since its commit.
    pub lag_seconds: f64,
}
