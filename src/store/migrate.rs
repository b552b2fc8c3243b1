//! Numbered, embedded `migrations/*.sql`, applied in order at start. `PRAGMA user_version` holds
//! the number of the last one applied, so `sqlite3 hooklog.db 'PRAGMA user_version'` tells it.
//! A migration that adds a projection asks for a rebuild, so the events already in the log are
//! reflected in it (the projection code is the current one, so the rebuild runs once, after the
//! last pending migration, in the same transaction: a crash leaves the old version whole).

use crate::projection;
use rusqlite::{Connection, TransactionBehavior};

/// Every migration, in order, and whether it adds a projection that the events already stored
/// must be replayed into. A landed migration is never edited: add a new file instead.
pub const MIGRATIONS: &[(&str, &str, bool)] = &[
    (
        "0001_events.sql",
        include_str!("../../migrations/0001_events.sql"),
        false,
    ),
    (
        "0002_retention.sql",
        include_str!("../../migrations/0002_retention.sql"),
        false,
    ),
    (
        "0003_agents.sql",
        include_str!("../../migrations/0003_agents.sql"),
        true,
    ),
    (
        "0004_coordination.sql",
        include_str!("../../migrations/0004_coordination.sql"),
        true,
    ),
];

/// Applies the migrations this database has not seen yet, all in one transaction.
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
    if current == MIGRATIONS.len() {
        return Ok(0);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut rebuild = false;
    for (_name, sql, adds_projection) in &MIGRATIONS[current..] {
        tx.execute_batch(sql)?;
        rebuild |= adds_projection;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    if rebuild {
        let replayed = projection::rebuild(&tx)?;
        if replayed > 0 {
            tracing::info!(
                replayed,
                "replayed the stored events into the new projections"
            );
        }
    }
    tx.commit()?;
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
            for (number, (_, sql, _)) in MIGRATIONS.iter().enumerate().take(start) {
                conn.execute_batch(sql).unwrap();
                conn.pragma_update(None, "user_version", (number + 1) as i64)
                    .unwrap();
            }
            assert_eq!(migrate(&mut conn).unwrap(), MIGRATIONS.len() - start);
        }
    }

    #[test]
    fn upgrading_replays_the_stored_events_into_the_new_projections() {
        let mut conn = Connection::open_in_memory().unwrap();
        for (number, (_, sql, _)) in MIGRATIONS.iter().enumerate().take(2) {
            conn.execute_batch(sql).unwrap();
            conn.pragma_update(None, "user_version", (number + 1) as i64)
                .unwrap();
        }
        conn.execute_batch(
            r#"INSERT INTO events VALUES
               (1, 'e1', 's1', 1, 'SessionStart', 'hook', 't1', 't1', '{"cwd":"/w"}'),
               (2, 'e2', 's1', 2, 'UserPromptSubmit', 'hook', 't2', 't2', '{"prompt":"go"}'),
               (3, 'e3', 'n1', 1, 'stuck', 'normalized', 't3', 't3',
                '{"paneId":"%1","reason":"stopped","message":"m"}');"#,
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM sessions"), 2);
        assert_eq!(count("SELECT COUNT(*) FROM heroes WHERE cwd = '/w'"), 1);
        assert_eq!(
            count("SELECT COUNT(*) FROM missions WHERE id = 'mission-e2' AND state = 'active'"),
            1
        );
        assert_eq!(
            count("SELECT COUNT(*) FROM sessions WHERE id = 'n1' AND state = 'stuck'"),
            1
        );
    }

    #[test]
    fn refuses_a_database_from_a_newer_hooklog() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", MIGRATIONS.len() as i64 + 1)
            .unwrap();
        assert!(migrate(&mut conn).is_err());
    }
}
