//! The retention snapshot: every projection table as it stood after the last pruned event, in
//! `snapshot_<table>` twins (migration 0006), with the boundary in meta
//! `snapshot_through_sequence`. Pruning advances it in the same transaction that deletes the
//! events it covers, so the two never disagree; a rebuild loads it and replays only the
//! retained events after it.
//!
//! Advancing runs the unchanged projection code on the snapshot: inside
//! [`projection::sql::on_snapshot`] every statement the projections prepare names the
//! `snapshot_` twins instead of the live tables, and the pruned events are applied as a
//! rebuild applies them (the agent rows held in memory and written at the end of the step).

use crate::projection;
use crate::projection::tables::Cached;
use crate::store::read;
use rusqlite::{Connection, OptionalExtension};

/// The meta key holding the snapshot's boundary.
pub const THROUGH_KEY: &str = "snapshot_through_sequence";

/// The sequence the snapshot stands at: `Some(0)` for the empty snapshot of a log that never
/// pruned, `None` when events were pruned before hooklog kept a snapshot (what they built is
/// only in the live tables).
pub fn through(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1")?
        .query_row([THROUGH_KEY], |r| r.get(0))
        .optional()
}

fn twin(table: &str) -> String {
    format!("snapshot_{table}")
}

fn exists(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [table],
        |r| r.get(0),
    )
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<String> {
    let names: Vec<String> = conn
        .prepare(&format!("PRAGMA main.table_info({table})"))?
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(names.join(", "))
}

/// Copies the snapshot into the (emptied) projection tables and returns its boundary: the
/// events after it are the ones a rebuild replays. 0 when there is no snapshot to start from.
pub fn restore(conn: &Connection) -> rusqlite::Result<i64> {
    let Some(through) = through(conn)?.filter(|t| *t > 0) else {
        return Ok(0);
    };
    for table in projection::TABLES {
        let snapshot = twin(table);
        // A projection added after the snapshot existed starts empty.
        if !exists(conn, &snapshot)? {
            continue;
        }
        let columns = columns(conn, table)?;
        conn.execute(
            &format!("INSERT INTO main.{table} ({columns}) SELECT {columns} FROM main.{snapshot}"),
            [],
        )?;
    }
    Ok(through)
}

/// Moves the snapshot forward to `through` by applying the events after its boundary up to
/// `through` to it. Call inside the transaction that prunes those events, before deleting
/// them. Does nothing for a database that has no snapshot (pruned before it kept one).
pub fn advance(conn: &Connection, through: i64) -> rusqlite::Result<()> {
    let Some(from) = self::through(conn)? else {
        return Ok(());
    };
    if through <= from {
        return Ok(());
    }
    let events = conn
        .prepare_cached(&format!(
            "SELECT {} FROM events WHERE sequence > ?1 AND sequence <= ?2 ORDER BY sequence",
            read::EVENT_COLUMNS
        ))?
        .query_map([from, through], read::stored_event)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    // As a rebuild replays: the agent rows in memory, written once at the end of the step.
    projection::sql::on_snapshot(|| {
        let tables = Cached::new(conn, false);
        for event in &events {
            projection::apply_to(&tables, conn, event)?;
        }
        tables.flush()
    })?;
    conn.execute(
        "UPDATE meta SET value = CAST(?2 AS TEXT) WHERE key = ?1",
        rusqlite::params![THROUGH_KEY, through],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::migrate;

    /// Every projection has a twin with the same columns, so a projection added or changed
    /// without its snapshot twin is caught here.
    #[test]
    fn every_projection_has_a_snapshot_twin_with_the_same_columns() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate::migrate(&mut conn).unwrap();
        for table in projection::TABLES {
            assert_eq!(
                columns(&conn, table).unwrap(),
                columns(&conn, &twin(table)).unwrap(),
                "{table}"
            );
        }
        assert_eq!(through(&conn).unwrap(), Some(0));
    }

    /// A database pruned by an older hooklog gets a snapshot only when no event is left (its
    /// live tables are then exactly the state at the boundary); otherwise none.
    #[test]
    fn upgrading_a_pruned_database_takes_the_live_tables_only_when_no_event_is_left() {
        for events_left in [false, true] {
            let mut conn = Connection::open_in_memory().unwrap();
            for (number, (_, sql, _)) in migrate::MIGRATIONS.iter().enumerate().take(5) {
                conn.execute_batch(sql).unwrap();
                conn.pragma_update(None, "user_version", (number + 1) as i64)
                    .unwrap();
            }
            conn.execute_batch(
                "UPDATE meta SET value = '10' WHERE key = 'pruned_through_sequence';
                 INSERT INTO claims VALUES ('c', 1, 's', 'held', 30, 't', NULL, 't', NULL, NULL, 'e');",
            )
            .unwrap();
            if events_left {
                conn.execute(
                    "INSERT INTO events VALUES (11, 'e11', NULL, NULL, 'x', 'api', 't', 't', '{}')",
                    [],
                )
                .unwrap();
            }
            migrate::migrate(&mut conn).unwrap();
            let kept: i64 = conn
                .query_row("SELECT COUNT(*) FROM snapshot_claims", [], |r| r.get(0))
                .unwrap();
            if events_left {
                assert_eq!((through(&conn).unwrap(), kept), (None, 0));
            } else {
                assert_eq!((through(&conn).unwrap(), kept), (Some(10), 1));
            }
        }
    }
}
