//! Checkpoints off the writer's thread.
//!
//! In WAL mode every commit appends pages to the `-wal` file, and a checkpoint copies them into
//! the database file (and fsyncs it) so the WAL can start over from its beginning. SQLite's
//! automatic checkpoint does that inside the `COMMIT` that takes the WAL past 1,000 pages: on
//! the writer's thread, while every caller in that batch waits for its answer. Under batched
//! ingest it was a quarter of the writer's time.
//!
//! So the writer's connection only reports the WAL's size after each commit (a WAL hook, which
//! replaces the automatic checkpoint), and from [`START_PAGES`] on it wakes a checkpointer
//! thread. That thread checkpoints on a connection of its own in `PASSIVE` mode, which never
//! waits for the writer or a reader: the writer goes on committing meanwhile, and the fsync of
//! the database file is no longer on its path. Once a checkpoint has copied every frame, SQLite
//! starts the WAL over at the writer's next transaction, as before. If the WAL still reaches
//! [`WRITER_PAGES`] (the thread fell behind, or died), the writer checkpoints itself, after
//! answering its batch, so the WAL stays bounded either way.

use super::stats::WriterStats;
use rusqlite::Connection;
use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// WAL size (pages) from which the checkpointer is woken: SQLite's own automatic threshold.
pub const START_PAGES: i32 = 1000;
/// WAL size (pages) from which the writer checkpoints itself (16 MiB of 4 KiB pages).
pub const WRITER_PAGES: i32 = 4 * START_PAGES;
/// Checkpoints the thread runs in a row while the writer keeps committing during them: each
/// copies only what was committed during the one before.
const CATCH_UP_ROUNDS: usize = 3;
/// A round that copied no more than this many frames is the last: the writer copies what was
/// committed during it.
const HAND_OVER_FRAMES: i64 = 256;

thread_local! {
    /// The WAL's size in pages after the last commit on this thread's connection (see
    /// [`watch_wal`]). A WAL hook is a plain function, so it reports through the thread: the
    /// writer's connection is only ever used on the writer's thread.
    static WAL_PAGES: Cell<i32> = const { Cell::new(0) };
}

fn note_wal_pages(_: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_PAGES.with(|p| p.set(pages));
    Ok(())
}

/// Turns off SQLite's automatic checkpoint on `conn` and has each commit note the WAL's size
/// instead, for [`wal_pages`] to read on the same thread.
pub fn watch_wal(conn: &Connection) {
    conn.wal_hook(Some(note_wal_pages));
}

/// The WAL's size in pages after the last commit made on this thread by a watched connection.
pub fn wal_pages() -> i32 {
    WAL_PAGES.with(Cell::get)
}

/// Nothing to do, or waiting for the WAL to reach [`START_PAGES`].
const IDLE: u8 = 0;
/// The thread is checkpointing.
const RUNNING: u8 = 1;
/// The thread copied most of the WAL while the writer went on committing: the writer copies
/// the rest itself after its next commit, when nothing can be committed during the checkpoint.
const FINISH: u8 = 2;

/// The checkpoint thread, and the writer's side of it. Dropping this handle stops the thread
/// and waits for it.
///
/// SQLite starts the WAL over only at a write transaction that finds every frame already
/// copied, and a checkpoint beside a busy writer almost never ends in that state: the writer
/// has committed more frames meanwhile. So the work is split. The thread copies the bulk
/// (and makes the fsync of the database file); the writer, after its next commit, copies the
/// few frames committed during that, which ends with every frame copied.
pub struct Checkpointer {
    state: Arc<AtomicU8>,
    wake: Option<mpsc::SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<WriterStats>,
}

impl Checkpointer {
    /// Opens a connection of its own on the database at `path` (same `synchronous` level as
    /// the writer's: it decides the fsyncs a checkpoint makes) and starts the thread. Both
    /// sides count their checkpoints in `stats`.
    pub fn start(
        path: &Path,
        synchronous: i64,
        stats: Arc<WriterStats>,
    ) -> rusqlite::Result<Checkpointer> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "synchronous", synchronous)?;
        let state = Arc::new(AtomicU8::new(IDLE));
        let (wake, woken) = mpsc::sync_channel(1);
        let thread = {
            let (state, stats) = (state.clone(), stats.clone());
            std::thread::Builder::new()
                .name("hooklog-checkpoint".into())
                .spawn(move || run(conn, woken, state, stats))
                .expect("spawning the checkpoint thread")
        };
        Ok(Checkpointer {
            state,
            wake: Some(wake),
            thread: Some(thread),
            stats,
        })
    }

    /// The writer's side, after each of its commits on `conn` (watched by [`watch_wal`]):
    /// finishes what the thread left, wakes the thread once the WAL is long enough, or, if
    /// the WAL reached [`WRITER_PAGES`] all the same, checkpoints at once.
    pub fn after_commit(&self, conn: &Connection) {
        let pages = wal_pages();
        match self.state.load(Ordering::Acquire) {
            FINISH => {
                self.checkpoint_here(conn);
                self.state.store(IDLE, Ordering::Release);
            }
            IDLE if pages >= START_PAGES => {
                self.state.store(RUNNING, Ordering::Release);
                if let Some(wake) = &self.wake {
                    // The thread takes each wake-up before it goes back to IDLE: never full.
                    let _ = wake.try_send(());
                }
            }
            // Ahead of the thread (or it is gone): one of the two checkpoints finds the other
            // running and returns at once; the next commit tries again.
            _ if pages >= WRITER_PAGES => self.checkpoint_here(conn),
            _ => {}
        }
    }

    fn checkpoint_here(&self, conn: &Connection) {
        match checkpoint(conn) {
            Ok(_) => self.stats.record_checkpoint(true),
            Err(e) => tracing::warn!(error = %e, "checkpoint failed; the next commit retries it"),
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.wake.take();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the checkpoint thread panicked");
        }
    }
}

fn run(conn: Connection, woken: mpsc::Receiver<()>, state: Arc<AtomicU8>, stats: Arc<WriterStats>) {
    while woken.recv().is_ok() {
        let mut next = IDLE;
        let mut copied = 0;
        for _ in 0..CATCH_UP_ROUNDS {
            match checkpoint(&conn) {
                // The writer is checkpointing itself (the WAL reached WRITER_PAGES).
                Ok(progress) if progress.busy => break,
                Ok(progress) => {
                    stats.record_checkpoint(false);
                    // `frames` is the WAL as this checkpoint found it: the writer has most
                    // likely committed more since, so the writer always finishes.
                    next = FINISH;
                    let this_round = progress.copied - copied;
                    copied = progress.copied;
                    if this_round <= HAND_OVER_FRAMES {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "checkpoint failed; it is tried again later");
                    break;
                }
            }
        }
        state.store(next, Ordering::Release);
    }
}

/// What `PRAGMA wal_checkpoint` reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Another checkpoint was running (this one did nothing).
    pub busy: bool,
    /// Frames in the WAL.
    pub frames: i64,
    /// Frames copied into the database file so far.
    pub copied: i64,
}

/// One `PASSIVE` checkpoint on `conn`: copies what it can without waiting for anyone.
pub fn checkpoint(conn: &Connection) -> rusqlite::Result<Progress> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok(Progress {
            busy: r.get::<_, i64>(0)? != 0,
            frames: r.get(1)?,
            copied: r.get(2)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Durability;
    use crate::store::open::open_writer;
    use std::time::{Duration, Instant};

    impl Checkpointer {
        fn is_running(&self) -> bool {
            self.state.load(Ordering::Acquire) == RUNNING
        }

        /// Stops the thread as if it had died: the writer's side stays.
        fn lose_thread(&mut self) {
            self.wake.take();
            self.thread.take().unwrap().join().unwrap();
        }
    }

    /// A writer-like connection (watched) on a fresh file, and a checkpointer beside it.
    fn setup(dir: &tempfile::TempDir) -> (Connection, Checkpointer, Arc<WriterStats>) {
        let path = dir.path().join("c.db");
        let conn = open_writer(&path, Durability::Full).unwrap();
        conn.execute_batch("CREATE TABLE filler (x BLOB)").unwrap();
        watch_wal(&conn);
        let stats = Arc::new(WriterStats::default());
        let checkpointer = Checkpointer::start(&path, 2, stats.clone()).unwrap();
        (conn, checkpointer, stats)
    }

    /// Commits ~100 pages.
    fn fill(conn: &Connection) {
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
             INSERT INTO filler SELECT randomblob(4000) FROM n",
            [],
        )
        .unwrap();
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_thread_copies_the_bulk_and_the_writer_the_rest_so_the_wal_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let (conn, checkpointer, stats) = setup(&dir);
        while wal_pages() < START_PAGES {
            fill(&conn);
            checkpointer.after_commit(&conn);
        }
        let before = wal_pages();
        // The writer's next transaction begins while the thread is checkpointing: it reads the
        // WAL as it is, so it cannot start the WAL over, and appends after it.
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        assert!(checkpointer.is_running(), "the thread was woken");
        wait_until("the thread's checkpoint", || !checkpointer.is_running());
        let thread_checkpoints = stats.snapshot().checkpoints;
        assert!(thread_checkpoints >= 1);
        fill(&conn);
        conn.execute_batch("COMMIT").unwrap();
        assert!(wal_pages() > before, "appended after the copied frames");
        // After that commit, the writer copies what the thread could not.
        checkpointer.after_commit(&conn);
        assert_eq!(stats.snapshot().writer_checkpoints, 1);
        assert!(
            !checkpointer.is_running(),
            "the thread is not woken again yet"
        );
        // Every frame is copied, so the next transaction writes from the WAL's start.
        fill(&conn);
        assert!(
            wal_pages() < 200,
            "the WAL started over: {} pages",
            wal_pages()
        );
        checkpointer.after_commit(&conn);
        assert_eq!(stats.snapshot().checkpoints, thread_checkpoints);
        assert_eq!(stats.snapshot().writer_checkpoints, 1);
    }

    #[test]
    fn without_the_thread_the_writer_bounds_the_wal_itself() {
        let dir = tempfile::tempdir().unwrap();
        let (conn, mut checkpointer, stats) = setup(&dir);
        checkpointer.lose_thread();
        let mut most = 0;
        for _ in 0..2 * WRITER_PAGES / 100 {
            fill(&conn);
            most = most.max(wal_pages());
            checkpointer.after_commit(&conn);
        }
        assert!(stats.snapshot().writer_checkpoints >= 1);
        assert_eq!(stats.snapshot().checkpoints, 0);
        assert!(
            most < WRITER_PAGES + 200,
            "the WAL reached {most} pages, bound {WRITER_PAGES}"
        );
    }
}
