//! The SQLite store: opening the file (pragmas, migrations), the single writer thread, and the
//! read-only connection pool that queries run on, off the async runtime.

pub mod metrics;
pub mod migrate;
pub mod open;
pub mod read;
pub mod rebuild;
pub mod retention;
pub mod scratch;
pub mod snapshot;
pub mod stages;
pub mod stats;
pub mod writer;

use crate::config::Config;
use crate::states::states;
use open::ReadPool;
use rusqlite::Connection;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
pub use writer::{AppendError, Appended, Decided, Position, Publish, Writer};

states! {
    /// Whether the writer can store events.
    pub enum WriterState {
        Ok = "ok",
        /// The database refused the last batch.
        Failing = "failing",
        /// Its thread has ended: nothing can be stored.
        Stopped = "stopped",
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("connection pool: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("the database was not initialised: {0} is missing from meta")]
    MissingMeta(&'static str),
    #[error(
        "{0} is in use by another hooklog (its lock file is held); run one server per database"
    )]
    InUse(String),
    #[error("lock file {0}: {1}")]
    LockFile(String, std::io::Error),
    #[error("the events after position {after} were pruned while the stream was reading them")]
    HistoryPruned { after: i64 },
    /// A read given a budget ([`Store::read_within`]) ran past it and was stopped.
    #[error("the read ran past its budget of {budget:?} and was stopped")]
    OverBudget { budget: std::time::Duration },
}

/// How many SQLite virtual-machine steps a budgeted read runs between two looks at its budget
/// ([`Store::read_within`]): about a tenth of a millisecond here.
pub const PROGRESS_STEPS: std::os::raw::c_int = 10_000;

/// The open database: the writer handle, the reader pool, and the database's identity.
pub struct Store {
    pub writer: Writer,
    pub readers: ReadPool,
    /// Made once when the database was created; cursors are meaningful only within it.
    pub generation_id: String,
    /// The writer connection's `PRAGMA synchronous`, read back after opening: `full` or
    /// `normal` (`serve --durability`).
    pub synchronous: &'static str,
    /// Where it publishes committed response events (seed 003's ephemeral stream).
    pub responses: crate::response::hub::ResponseHub,
    /// This hooklog's name on the events it stores (`serve --origin`).
    pub origin: String,
    writer_thread: Mutex<Option<JoinHandle<()>>>,
    /// Held for the store's life: a second server on the same file would append behind this
    /// one's writer, so its events would never reach this one's streams.
    _lock: std::fs::File,
}

impl Store {
    /// Opens the database at `config.db_path` (creating and migrating it) and starts the writer,
    /// which hands each commit's events to `publish`. Blocking: call it before serving, or from
    /// `spawn_blocking`.
    pub fn open(config: &Config, publish: impl Publish) -> Result<Store, StoreError> {
        let lock = lock(&config.db_path)?;
        let mut conn = open::open_writer(&config.db_path, config.durability)?;
        migrate::backfill_origin(&mut conn, &config.origin)?;
        let generation_id = read::meta(&conn, "stream_generation_id")?
            .ok_or(StoreError::MissingMeta("stream_generation_id"))?;
        let synchronous = match conn.query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0))? {
            0 => "off",
            1 => "normal",
            2 => "full",
            _ => "extra",
        };
        let readers = open::open_readers(&config.db_path, config.reader_pool_size)?;
        let responses = crate::response::hub::ResponseHub::default();
        let (writer, thread) = Writer::start(conn, (Box::new(publish), responses.clone()), config)?;
        Ok(Store {
            writer,
            origin: config.origin.clone(),
            readers,
            generation_id,
            synchronous,
            responses,
            writer_thread: Mutex::new(Some(thread)),
            _lock: lock,
        })
    }

    /// The writer's state.
    pub fn writer_state(&self) -> WriterState {
        let running = self
            .writer_thread
            .lock()
            .expect("writer thread lock")
            .as_ref()
            .is_some_and(|t| !t.is_finished());
        match (running, self.writer.is_healthy()) {
            (false, _) => WriterState::Stopped,
            (true, false) => WriterState::Failing,
            (true, true) => WriterState::Ok,
        }
    }

    /// Runs a read on a pooled read-only connection, on the blocking thread pool. A panic inside
    /// `f` is resumed in the caller rather than swallowed.
    pub async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.read_now(f).await
    }

    /// Like [`Store::read`], but the read starts now, on the blocking pool, rather than when the
    /// returned future is first polled: a stream reads its next page while it sends this one.
    /// Dropping the future lets the read finish and discards its result.
    pub fn read_now<T, F>(&self, f: F) -> impl Future<Output = Result<T, StoreError>> + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let pool = self.readers.clone();
        let task = tokio::task::spawn_blocking(move || -> Result<T, StoreError> {
            let conn = pool.get()?;
            Ok(f(&conn)?)
        });
        async move {
            match task.await {
                Ok(result) => result,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
    }

    /// Like [`Store::read`], for a read that can run long (a search): SQLite stops it once it
    /// has run for `budget`, or as soon as the returned future is dropped (the client went
    /// away), and it then answers [`StoreError::OverBudget`]. SQLite checks every
    /// [`PROGRESS_STEPS`] virtual-machine steps; the connection goes back to the pool with no
    /// check left on it.
    pub fn read_within<T, F>(
        &self,
        budget: std::time::Duration,
        f: F,
    ) -> impl Future<Output = Result<T, StoreError>> + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        use std::sync::atomic::{AtomicBool, Ordering};
        let gone = Arc::new(AtomicBool::new(false));
        let stop = gone.clone();
        let deadline = std::time::Instant::now() + budget;
        let read = self.read_now(move |conn| {
            conn.progress_handler(
                PROGRESS_STEPS,
                Some(move || stop.load(Ordering::Relaxed) || std::time::Instant::now() >= deadline),
            )?;
            /// Takes the check off the pooled connection however the read ends (a panic too).
            struct Unchecked<'c>(&'c Connection);
            impl Drop for Unchecked<'_> {
                fn drop(&mut self) {
                    if let Err(e) = self.0.progress_handler(0, None::<fn() -> bool>) {
                        tracing::error!(error = %e, "a reader's budget check could not be removed");
                    }
                }
            }
            let _unchecked = Unchecked(conn);
            f(conn)
        });
        /// Tells the read to stop when the caller lets go of it (before its first poll too).
        struct Gone(Arc<AtomicBool>);
        impl Drop for Gone {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let gone = Gone(gone);
        async move {
            let _gone = gone;
            match read.await {
                Err(StoreError::Sqlite(e))
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) =>
                {
                    Err(StoreError::OverBudget { budget })
                }
                other => other,
            }
        }
    }

    /// Lets the writer finish everything queued so far, then waits for its thread to end.
    pub async fn close(&self) {
        self.writer.stop().await;
        let thread = self
            .writer_thread
            .lock()
            .expect("writer thread lock")
            .take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// Takes `<db>.lock` exclusively (released by the OS when the process ends, however it ends).
pub fn lock(db_path: &std::path::Path) -> Result<std::fs::File, StoreError> {
    let path = format!("{}.lock", db_path.display());
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError::LockFile(path.clone(), e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(StoreError::InUse(db_path.display().to_string()))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::LockFile(path, e)),
    }
}
