//! Numbered, embedded `migrations/*.sql`, applied in order at start. `PRAGMA user_version` holds
//! the number of the last one applied, so `sqlite3 hooklog.db 'PRAGMA user_version'` tells it.

use rusqlite::{Connection, TransactionBehavior};

/// Every migration, in order. A landed migration is never edited: add a new file instead.
pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_events.sql",
        include_str!("../../migrations/0001_events.sql"),
    ),
    (
        "0002_retention.sql",
        include_str!("../../migrations/0002_retention.sql"),
    ),
];

/// Applies the migrations this database has not seen yet. Each runs in its own transaction.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<usize> {
    let current = conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize;
    if current > MIGRATIONS.len() {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
            Some(format!(
                "database schema version {current} is newer than this hooklog ({})",
                MIGRATIONS.len()
            )),
        ));
    }
    for (number, (_name, sql)) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (number + 1) as i64)?;
        tx.commit()?;
    }
    Ok(MIGRATIONS.len() - current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_to_an_empty_database_once() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), MIGRATIONS.len());
        assert_eq!(migrate(&mut conn).unwrap(), 0);
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, MIGRATIONS.len());
        let generation: String = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'stream_generation_id'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(generation.len(), 32);
    }

    #[test]
    fn applies_the_rest_to_a_database_at_every_previous_version() {
        for start in 0..MIGRATIONS.len() {
            let mut conn = Connection::open_in_memory().unwrap();
            for (number, (_, sql)) in MIGRATIONS.iter().enumerate().take(start) {
                conn.execute_batch(sql).unwrap();
                conn.pragma_update(None, "user_version", (number + 1) as i64)
                    .unwrap();
            }
            assert_eq!(migrate(&mut conn).unwrap(), MIGRATIONS.len() - start);
        }
    }

    #[test]
    fn refuses_a_database_from_a_newer_hooklog() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", MIGRATIONS.len() as i64 + 1)
            .unwrap();
        assert!(migrate(&mut conn).is_err());
    }
}
