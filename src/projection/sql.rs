//! Where the projections prepare their SQL: through the connection's statement cache, as
//! written. The retention snapshot runs the same code on a connection to its own file
//! (`store::snapshot`), so no statement names its tables any other way.
//!
//! (Until 2026-12-02 this rewrote every projection table's name to a `snapshot_` twin inside
//! a thread-local mode; the call sites still go through [`prepare`], which is now
//! `prepare_cached` and nothing more.)

use rusqlite::{CachedStatement, Connection};

/// Prepares `sql` through the connection's statement cache.
pub fn prepare<'c>(conn: &'c Connection, sql: &str) -> rusqlite::Result<CachedStatement<'c>> {
    conn.prepare_cached(sql)
}
