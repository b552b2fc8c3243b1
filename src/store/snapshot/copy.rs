//! A consistent copy of a log and its snapshot (`hooklog backup`, `hooklog rebuild --check`),
//! taken while a server may be writing both.

use super::{OWNER_KEY, belongs_to, boundary, file, pruned_through};
use crate::store::read;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// Times the snapshot is copied again when it moved past the log's copy.
const ATTEMPTS: usize = 5;

/// Copies the database at `db` to `to` (`VACUUM INTO`, from a read-only connection), and its
/// snapshot file, if it has one and it is the log's (by its stream generation), to the
/// snapshot path of `to`. Another log's file left beside it is not copied: the copy gets a
/// generation of its own ([`adopt`]), under which that file would pass for its snapshot.
///
/// The log is copied first. A prune step commits the snapshot before it deletes from the log,
/// so a snapshot copied later stands at or past the copy's pruned boundary, which is a state a
/// crash between the two commits also leaves and a rebuild handles. It may also have moved
/// past the copy's head (events appended and pruned in between): then it is copied again.
pub fn copy(db: &Path, to: &Path) -> rusqlite::Result<()> {
    let source = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    source.busy_timeout(std::time::Duration::from_secs(5))?;
    source.execute("VACUUM INTO ?1", [to.to_string_lossy()])?;
    drop(source);
    let from = file::path_of(db);
    if !from.exists() {
        return Ok(());
    }
    let log = file::open_read_only(to)?;
    let reach = read::head(&log)?.max(pruned_through(&log)?);
    let dest = file::path_of(to);
    for _ in 0..ATTEMPTS {
        file::remove(&dest)?;
        let snapshot = file::open_read_only(&from)?;
        snapshot.execute("VACUUM INTO ?1", [dest.to_string_lossy()])?;
        drop(snapshot);
        let copied = file::open_read_only(&dest)?;
        if !belongs_to(&log, &copied)? {
            drop(copied);
            return file::remove(&dest);
        }
        if boundary(&copied)?.is_none_or(|through| through <= reach) {
            return Ok(());
        }
    }
    Err(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
        Some(format!(
            "the retention snapshot {} kept moving past the copy of the log; try again",
            from.display()
        )),
    ))
}

/// Names the snapshot file beside `log` after `log`'s stream generation, as a backup's copy
/// gets a generation of its own.
pub fn adopt(log: &Connection) -> rusqlite::Result<()> {
    let Some(path) = file::path_beside(log).filter(|p| p.exists()) else {
        return Ok(());
    };
    let snapshot = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    snapshot.execute(
        "UPDATE meta SET value = ?2 WHERE key = ?1",
        rusqlite::params![OWNER_KEY, read::meta(log, OWNER_KEY)?],
    )?;
    Ok(())
}
