//! Opening the database: the write connection (pragmas, then migrations) and the read-only pool.

use super::migrate::migrate;
use crate::config::Durability;
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

pub type ReadPool = r2d2::Pool<SqliteConnectionManager>;

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound on the WAL file left on disk after a checkpoint (64 MiB).
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;
/// The writer's page cache, in KiB (negative = KiB for `cache_size`): a large batch must fit,
/// or SQLite spills dirty pages to the WAL in the middle of the transaction (SQLite's default
/// 2 MiB did, for NDJSON batches of 2,000 events). No larger: when a b-tree page split
/// reorders its new pages, SQLite renumbers one through the page number of the 1 GiB lock byte,
/// and the commit that follows then walks every page the cache holds to drop it; while the
/// file is under 1 GiB that walk costs in proportion to the cache (64 MiB spent 5% of the
/// writer's CPU on hook events in it; docs/performance.md, "The writer's page cache and
/// checkpoints").
const WRITER_CACHE_KIB: i64 = 8 * 1024;
/// WAL written between two automatic checkpoints (SQLite's default is 1,000 pages, 4 MiB at
/// 4 KiB). A checkpoint copies each page the WAL holds once, however many commits rewrote it,
/// and a hook event rewrites the same few pages commit after commit (its session's row and
/// index entries): 16 MiB between checkpoints wrote 10% fewer bytes a hook event than 4 MiB,
/// and the serial p99 fell, for 1-3 ms more p99 under 64 connections (docs/performance.md,
/// "The writer's page cache and checkpoints").
const CHECKPOINT_EVERY_BYTES: i64 = 16 * 1024 * 1024;
/// The page size a new database is made with (an existing one keeps its own): SQLite's
/// 4 KiB. A hook event changes rows on pages of their own (its session's entry in the events'
/// index, its session, hero, tool use and mission rows), and each page it dirties is written
/// whole to the WAL: 4 KiB pages write 29% fewer bytes a hook event than 8 KiB ones at the
/// same rate; 8 KiB is 5-9% faster only under NDJSON batch load (docs/performance.md, "Fewer
/// pages a hook event").
pub const PAGE_SIZE: i64 = 4096;
/// Prepared statements kept per connection. The writer alone runs more than rusqlite's
/// default 16 distinct statements for hook events, and one evicted is parsed again next time.
const STATEMENT_CACHE: usize = 128;

/// Opens (creating if needed) the database for writing and brings its schema up to date (and
/// its retention snapshot's), then finishes a prune step a crash interrupted.
pub fn open_writer(path: &Path, durability: Durability) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open(path)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Before WAL: once the journal is a WAL the page size can no longer change.
    conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!(
                "could not switch the database to WAL (journal_mode is {mode})"
            )),
        ));
    }
    conn.pragma_update(None, "synchronous", durability.pragma())?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)?;
    conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    conn.pragma_update(
        None,
        "wal_autocheckpoint",
        CHECKPOINT_EVERY_BYTES / page_size,
    )?;
    // Savepoints journal the pages they change; keep that journal in memory, not a temp file.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    migrate(&mut conn)?;
    let finished = super::retention::finish_interrupted(&conn)?;
    if finished > 0 {
        tracing::info!(
            finished,
            "finished a prune step the retention snapshot had already taken"
        );
    }
    Ok(conn)
}

/// How long a read waits for a free reader connection before it is refused as overload
/// (`503 overloaded`).
pub const READ_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A pool of read-only connections (`query_only`, opened read-only). Readers never block the
/// writer under WAL, and cannot write even by mistake.
pub fn open_readers(path: &Path, size: u32) -> Result<ReadPool, r2d2::Error> {
    let manager = SqliteConnectionManager::file(path)
        .with_flags(OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .with_init(|c| {
            c.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
            c.busy_timeout(BUSY_TIMEOUT)?;
            c.pragma_update(None, "query_only", true)?;
            crate::projection::search::register(c)
        });
    r2d2::Pool::builder()
        .max_size(size)
        .min_idle(Some(1))
        .connection_timeout(READ_WAIT)
        .build(manager)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_connection_has_the_documented_pragmas() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.db");
        for (durability, level) in [(Durability::Full, 2), (Durability::Normal, 1)] {
            let conn = open_writer(&path, durability).unwrap();
            let get = |name: &str| {
                conn.query_row(&format!("PRAGMA {name}"), [], |r| {
                    r.get::<_, rusqlite::types::Value>(0)
                })
                .unwrap()
            };
            assert_eq!(get("synchronous"), rusqlite::types::Value::Integer(level));
            assert_eq!(
                get("journal_mode"),
                rusqlite::types::Value::Text("wal".into())
            );
            assert_eq!(get("temp_store"), rusqlite::types::Value::Integer(2));
            assert_eq!(get("page_size"), rusqlite::types::Value::Integer(PAGE_SIZE));
            assert_eq!(
                get("journal_size_limit"),
                rusqlite::types::Value::Integer(JOURNAL_SIZE_LIMIT)
            );
            assert_eq!(
                get("busy_timeout"),
                rusqlite::types::Value::Integer(BUSY_TIMEOUT.as_millis() as i64)
            );
            assert_eq!(
                get("cache_size"),
                rusqlite::types::Value::Integer(-WRITER_CACHE_KIB)
            );
            assert_eq!(
                get("wal_autocheckpoint"),
                rusqlite::types::Value::Integer(CHECKPOINT_EVERY_BYTES / PAGE_SIZE)
            );
        }
        let reader = open_readers(&path, 1).unwrap().get().unwrap();
        let reader_timeout: i64 = reader
            .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
            .unwrap();
        assert_eq!(reader_timeout, BUSY_TIMEOUT.as_millis() as i64);
        assert!(
            reader.execute("DELETE FROM events", []).is_err(),
            "readers cannot write"
        );
    }

    #[test]
    fn a_database_made_with_other_pages_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch("PRAGMA page_size = 8192; PRAGMA journal_mode = WAL;")
            .unwrap();
        old.execute_batch("CREATE TABLE t (x)").unwrap();
        drop(old);
        let conn = open_writer(&path, Durability::Full).unwrap();
        let size: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(size, 8192);
        let checkpoint: i64 = conn
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            checkpoint,
            CHECKPOINT_EVERY_BYTES / 8192,
            "the same bytes of WAL"
        );
        let events: i64 = conn
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(events, 0, "migrated all the same");
    }

    #[test]
    fn sqlite_is_built_with_the_options_in_cargo_config() {
        // .cargo/config.toml passes them to libsqlite3-sys (docs/architecture.md).
        let conn = Connection::open_in_memory().unwrap();
        let options: Vec<String> = conn
            .prepare("PRAGMA compile_options")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "{options:?}"
        );
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "{options:?}"
        );
    }
}
