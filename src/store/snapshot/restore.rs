//! Loading the snapshot into the log's projection tables, at the start of a rebuild.
//!
//! A rebuild runs inside the caller's transaction, where SQLite refuses `ATTACH`, so the rows
//! are read on a second connection to the snapshot file and inserted through the caller's,
//! each statement naming its schema and columns.

use super::{file, usable};
use crate::projection;
use rusqlite::Connection;
use rusqlite::types::ToSqlOutput;

/// Copies the snapshot of the database `log` has open into its (emptied) projection tables and
/// returns its boundary: the events after it are the ones a rebuild replays. 0 when there is
/// no usable snapshot to start from (nothing pruned, or see [`super::through`]).
pub fn restore(log: &Connection) -> rusqlite::Result<i64> {
    let Some(path) = file::path_beside(log).filter(|p| p.exists()) else {
        return Ok(0);
    };
    let snapshot = file::open_read_only(&path)?;
    // One read transaction: the rows and the boundary from the same commit.
    snapshot.execute_batch("BEGIN")?;
    let restored = match usable(log, &snapshot)?.filter(|t| *t > 0) {
        Some(through) => {
            for table in projection::TABLES {
                copy_rows(&snapshot, table, log, table)?;
            }
            through
        }
        None => 0,
    };
    snapshot.execute_batch("COMMIT")?;
    Ok(restored)
}

/// Inserts every row of `from.main.<from_table>` into `to.main.<to_table>`, by the columns of
/// the destination (both were made by the same migrations).
pub(super) fn copy_rows(
    from: &Connection,
    from_table: &str,
    to: &Connection,
    to_table: &str,
) -> rusqlite::Result<u64> {
    let names: Vec<String> = to
        .prepare(&format!("PRAGMA main.table_info({to_table})"))?
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<_>>()?;
    let columns = names.join(", ");
    let slots = (1..=names.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut select = from.prepare(&format!("SELECT {columns} FROM main.{from_table}"))?;
    let mut insert = to.prepare(&format!(
        "INSERT INTO main.{to_table} ({columns}) VALUES ({slots})"
    ))?;
    let mut rows = select.query([])?;
    let mut copied = 0;
    while let Some(row) = rows.next()? {
        let values = (0..names.len())
            .map(|i| row.get_ref(i).map(ToSqlOutput::Borrowed))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        insert.execute(rusqlite::params_from_iter(values))?;
        copied += 1;
    }
    Ok(copied)
}
