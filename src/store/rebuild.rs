//! Rebuilding the projections from the log: empty them, load the retention snapshot (what the
//! pruned events built; nothing when none were pruned), and replay the retained events after
//! it. `hooklog rebuild`, a migration that adds a projection and the tests all go through here.

use super::snapshot;
use crate::projection::{self, Replay};
use rusqlite::Connection;

/// Rebuilds every projection inside the caller's transaction; returns the events replayed.
pub fn rebuild(conn: &Connection) -> rusqlite::Result<u64> {
    rebuild_with(conn, Replay::default())
}

/// [`rebuild`], with the replay run as `how` says.
pub fn rebuild_with(conn: &Connection, how: Replay) -> rusqlite::Result<u64> {
    projection::clear(conn)?;
    let after = snapshot::restore(conn)?;
    projection::replay_after(conn, after, how)
}
