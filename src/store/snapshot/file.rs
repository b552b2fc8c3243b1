//! The snapshot's file: where it is, making it (the log's migrations, the log's permissions,
//! the log's identity) and opening it.

use super::OWNER_KEY;
use crate::store::{migrate, open, read};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

/// The snapshot file of the database at `db`: `<db>.snapshot` (its own WAL is
/// `<db>.snapshot-wal`, so no name collides with the log's `-wal`, `-shm` or `-journal`).
pub fn path_of(db: &Path) -> PathBuf {
    let mut path = db.as_os_str().to_owned();
    path.push(".snapshot");
    PathBuf::from(path)
}

/// The snapshot file of the database `log` has open; `None` for an in-memory database.
pub(super) fn path_beside(log: &Connection) -> Option<PathBuf> {
    log.path()
        .filter(|p| !p.is_empty())
        .map(|p| path_of(Path::new(p)))
}

/// Opens an existing snapshot file for writing and brings its schema up to date (a file from
/// an older hooklog has the projection tables of that version).
pub(super) fn open(path: &Path, synchronous: i64) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    configure(&conn, synchronous)?;
    migrate::schema_only(&mut conn, migrate::MIGRATIONS.len())?;
    Ok(conn)
}

/// Opens a snapshot file to read it (a rebuild's restore, `hooklog stats`).
pub(super) fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// Makes the snapshot file of `log` at `path` (which must not exist): the log's migrations up
/// to `version` (all of them by default), the empty snapshot at 0, named after `log`'s stream
/// generation, with the log file's permissions.
pub(super) fn create(
    path: &Path,
    log: &Connection,
    synchronous: i64,
    version: Option<usize>,
) -> rusqlite::Result<Connection> {
    if let Some(db) = log.path().filter(|p| !p.is_empty()) {
        create_like(path, Path::new(db)).map_err(|e| io_error(path, e))?;
    }
    let mut conn = Connection::open(path)?;
    // Before WAL: once the journal is a WAL the page size can no longer change.
    conn.pragma_update(None, "page_size", open::PAGE_SIZE)?;
    configure(&conn, synchronous)?;
    migrate::schema_only(&mut conn, version.unwrap_or(migrate::MIGRATIONS.len()))?;
    let owner = read::meta(log, OWNER_KEY)?;
    conn.execute(
        "UPDATE meta SET value = ?2 WHERE key = ?1",
        rusqlite::params![OWNER_KEY, owner],
    )?;
    Ok(conn)
}

/// The pragmas of a snapshot connection: WAL like the log (readers never wait for it), and the
/// log's durability for its commits.
fn configure(conn: &Connection, synchronous: i64) -> rusqlite::Result<()> {
    conn.set_prepared_statement_cache_capacity(128);
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("could not switch the snapshot to WAL ({mode})")),
        ));
    }
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "temp_store", "MEMORY")
}

/// Creates the empty file `path` with the permissions of `db` (a database someone made
/// private keeps a private snapshot); SQLite gives its WAL the same.
fn create_like(path: &Path, db: &Path) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    if let Ok(metadata) = std::fs::metadata(db) {
        file.set_permissions(metadata.permissions())?;
    }
    Ok(())
}

/// Removes a snapshot file and what SQLite keeps beside it, if they exist.
pub(super) fn remove(path: &Path) -> rusqlite::Result<()> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(&name) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_error(Path::new(&name), e));
            }
            _ => {}
        }
    }
    Ok(())
}

fn io_error(path: &Path, error: std::io::Error) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
        Some(format!("{}: {error}", path.display())),
    )
}

/// `error`, saying it happened in the snapshot file (the log's own errors read the same).
pub(super) fn named(path: &Path, error: rusqlite::Error) -> rusqlite::Error {
    match error {
        rusqlite::Error::SqliteFailure(code, message) => rusqlite::Error::SqliteFailure(
            code,
            Some(format!(
                "retention snapshot {}: {}",
                path.display(),
                message.unwrap_or_else(|| code.to_string())
            )),
        ),
        other => other,
    }
}
