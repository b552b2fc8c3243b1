//! Numbered, embedded `migrations/*.sql`, applied in order at start. `PRAGMA user_version` holds
//! the number of the last one applied, so `sqlite3 hooklog.db 'PRAGMA user_version'` tells it.
//! A migration that adds a projection asks for the log to be replayed into it, so the events
//! already stored are reflected there. The replay runs once, after the last pending migration,
//! in the same transaction (a crash leaves the old version whole), and fills only the tables
//! those migrations created: projection tables that existed before (alerts, or anything built
//! from events since pruned) are kept exactly as they were, row ids included.
//!
//! The retention snapshot's file (`store::snapshot`) is made by the same migrations, their SQL
//! only ([`schema_only`]), and brought up to date here, before the log's transaction commits
//! and before a replay reads it.

use crate::projection;
use crate::store::snapshot;
use rusqlite::{Connection, TransactionBehavior};

pub use crate::migrations::MIGRATIONS;

/// The migration that adds the search index ([`projection::search`]): the events already
/// stored are indexed right after it (a rebuild of the projections indexes them too).
const SEARCH_MIGRATION: usize = 13;

/// The migration that drops the retention snapshot's `snapshot_<table>` twins: their rows move
/// to the snapshot file first ([`snapshot::move_twins_out`]).
const SNAPSHOT_FILE_MIGRATION: usize = 14;

/// The last migration that changed how a change row is stored (0019: without what its event
/// says; 0022: keys coded; 0027: shapes stored once): the rows of a database from before it
/// are rewritten in the current form once, after the migrations
/// ([`projection::changes::compact_stored`]).
const CHANGE_FORM_MIGRATION: usize = 26;

/// Whether this hooklog can read a database as it is, without migrating it (the commands that
/// open it read-only: `export`, `replay --db`); the error says why not, and what to do.
pub fn check_current(conn: &Connection) -> Result<(), String> {
    let current = version(conn).map_err(|e| e.to_string())?;
    let ours = MIGRATIONS.len();
    match current.cmp(&ours) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Less => Err(format!(
            "the database is at schema {current} and this hooklog reads schema {ours}: \
             start `hooklog serve` on it once to upgrade it"
        )),
        std::cmp::Ordering::Greater => Err(newer(current)),
    }
}

/// The number of migrations the database has seen (`PRAGMA user_version`).
fn version(conn: &Connection) -> rusqlite::Result<usize> {
    conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .map(|v| v as usize)
}

/// What a database made by a newer hooklog is told.
fn newer(current: usize) -> String {
    format!(
        "database schema version {current} is newer than this hooklog ({})",
        MIGRATIONS.len()
    )
}

/// Applies the migrations this database has not seen yet, all in one transaction.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<usize> {
    let current = version(conn)?;
    if current > MIGRATIONS.len() {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
            Some(newer(current)),
        ));
    }
    if current == MIGRATIONS.len() {
        snapshot::update_schema(conn)?;
        return Ok(0);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let existing = existing_projections(&tx)?;
    let mut rebuild = false;
    for (number, (_name, sql, adds_projection)) in MIGRATIONS.iter().enumerate().skip(current) {
        if number == SNAPSHOT_FILE_MIGRATION {
            snapshot::move_twins_out(&tx, number)?;
        }
        tx.execute_batch(sql)?;
        rebuild |= adds_projection;
    }
    if current <= CHANGE_FORM_MIGRATION {
        let rewritten = projection::changes::compact_stored(&tx)?;
        if rewritten > 0 {
            tracing::info!(rewritten, "stored the change rows in their current form");
        }
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    // The snapshot file's projection tables change with the log's, before a replay reads them.
    snapshot::update_schema(&tx)?;
    if rebuild {
        let replayed = replay_into_new_tables(&tx, &existing)?;
        if replayed > 0 {
            tracing::info!(
                replayed,
                "replayed the stored events into the new projections"
            );
        }
    } else if current < SEARCH_MIGRATION {
        let indexed = projection::search::reindex(&tx)?;
        if indexed > 0 {
            tracing::info!(indexed, "indexed the stored events for search");
        }
    }
    tx.commit()?;
    Ok(MIGRATIONS.len() - current)
}

/// Names the events stored before origins were recorded (migration 0012) after this hooklog,
/// which stored them, and their sessions too (in the retention snapshot as well, first): once,
/// in one transaction, the first time a server opens the database after that migration.
pub fn backfill_origin(conn: &mut Connection, origin: &str) -> rusqlite::Result<()> {
    let pending: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'origin_backfill')",
        [],
        |r| r.get(0),
    )?;
    if !pending {
        return Ok(());
    }
    snapshot::backfill_origin(conn, origin)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for table in ["events", "sessions"] {
        tx.execute(
            &format!("UPDATE {table} SET origin = ?1 WHERE origin = ''"),
            [origin],
        )?;
    }
    tx.execute("DELETE FROM meta WHERE key = 'origin_backfill'", [])?;
    tx.commit()
}

/// Applies the migrations' SQL up to `upto` (a count) and nothing more: no replay, no index.
/// The retention snapshot's file gets its schema this way: the log's own, with no events.
pub fn schema_only(conn: &mut Connection, upto: usize) -> rusqlite::Result<()> {
    let current = version(conn)?;
    if current > MIGRATIONS.len() {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
            Some(format!(
                "schema version {current} is newer than this hooklog ({})",
                MIGRATIONS.len()
            )),
        ));
    }
    if current >= upto {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for (_name, sql, _) in &MIGRATIONS[current..upto] {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", upto as i64)?;
    tx.commit()
}

/// The projection tables this database already has.
fn existing_projections(conn: &Connection) -> rusqlite::Result<Vec<&'static str>> {
    let mut existing = Vec::new();
    for table in projection::TABLES {
        let found: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [table],
            |r| r.get(0),
        )?;
        if found {
            existing.push(*table);
        }
    }
    Ok(existing)
}

/// Replays the log into every projection, then puts back the tables in `keep` as they were.
fn replay_into_new_tables(conn: &Connection, keep: &[&str]) -> rusqlite::Result<u64> {
    for table in keep {
        conn.execute_batch(&format!(
            "CREATE TEMP TABLE kept_{table} AS SELECT * FROM main.{table}"
        ))?;
    }
    // Read through this connection: a second one would see the schema as it was before the
    // migrations in this (uncommitted) transaction, e.g. `events` without its `origin` column.
    let inline = projection::Replay {
        read_beside: false,
        ..projection::Replay::default()
    };
    let replayed = super::rebuild::rebuild_with(conn, inline)?;
    for table in keep {
        let columns: Vec<String> = conn
            .prepare(&format!("PRAGMA temp.table_info(kept_{table})"))?
            .query_map([], |r| r.get::<_, String>(1))?
            .collect::<rusqlite::Result<_>>()?;
        let columns = columns.join(", ");
        conn.execute_batch(&format!(
            "DELETE FROM main.{table};
             INSERT INTO main.{table} ({columns}) SELECT {columns} FROM temp.kept_{table};
             DROP TABLE temp.kept_{table};"
        ))?;
    }
    Ok(replayed)
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
        migrate_to(&mut conn, 2);
        // Event 2 arrives for a session whose start was pruned away; alert 7 survives from
        // an event that was pruned too.
        conn.execute_batch(
            r#"INSERT INTO events VALUES
               (2, 'e2', 's1', 2, 'UserPromptSubmit', 'hook', 't2', 't2', '{"prompt":"go","cwd":"/w"}'),
               (3, 'e3', 'n1', 1, 'stuck', 'normalized', 't3', 't3',
                '{"paneId":"%1","reason":"stopped","message":"m"}');
               INSERT INTO alerts (id, kind, event_sequence, event_id, message, raised_at)
               VALUES (7, 'unknownEventType', 1, 'e1', 'pruned', 't1');"#,
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let alerts: Vec<(i64, String)> = conn
            .prepare("SELECT id, message FROM alerts")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            alerts,
            [(7, "pruned".to_string())],
            "existing alerts are kept, none are raised for old events"
        );
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

    /// Migration 0011 keys `hook_effects` by sequence (keeping the rows with a mission, of
    /// events still stored) and leaves `heroes` without the columns its session holds, and 0024
    /// moves those rows into `agent_changes` (an empty change row for an event that had none);
    /// a re-post of an event stored before them is still answered as the first post was.
    #[test]
    fn hook_effects_move_to_the_sequence_and_heroes_lose_their_session_columns() {
        let quiet = MIGRATIONS
            .iter()
            .position(|(name, _, _)| *name == "0011_quiet_rows.sql")
            .unwrap();
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, quiet);
        let hero = projection::heroes::hero_id("s1");
        conn.execute_batch(&format!(
            r#"INSERT INTO events VALUES
               (4, 'e4', 's1', 1, 'UserPromptSubmit', 'hook', 't4', 't4', '{{"prompt":"go"}}'),
               (5, 'e5', 's1', 2, 'Notification', 'hook', 't5', 't5', '{{}}');
               INSERT INTO hook_effects VALUES ('e4', '{hero}', 'mission-e4'),
                   ('e5', '{hero}', NULL), ('e1', '{hero}', 'mission-e1');
               INSERT INTO heroes VALUES ('{hero}', 's1', 'claude-code', '/', NULL, NULL, NULL,
                   'active', 'mission-e4', 1, 'e4', 't4', 't5', 5);
               INSERT INTO missions (id, hero_id, session_id, kind, state, opened_event_id,
                                     started_at, opened_sequence)
                   VALUES ('mission-e4', '{hero}', 's1', 'prompt', 'active', 'e4', 't4', 4);"#
        ))
        .unwrap();
        migrate(&mut conn).unwrap();
        let effects: Vec<(i64, String)> = conn
            .prepare(
                "SELECT c.sequence, m.id FROM agent_changes c
                 JOIN missions m ON m.opened_sequence = c.mission WHERE c.answered",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(effects, [(4, "mission-e4".to_string())]);
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('heroes')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(
            !columns
                .iter()
                .any(|c| c == "updated_at" || c == "last_sequence")
        );
        for (event, mission) in [("e4", Some("mission-e4")), ("e5", None)] {
            let stored = crate::store::read::event_by_id(&conn, event)
                .unwrap()
                .unwrap();
            let effects = projection::recall(&conn, &stored).unwrap();
            assert_eq!(effects.hero_id.as_deref(), Some(hero.as_str()), "{event}");
            assert_eq!(effects.mission_id.as_deref(), mission, "{event}");
        }
    }

    /// Migration 0036 writes every CHECK of more than two values as comparisons: a database at
    /// 35 has none left after it (the texts it replaces matched), no statement that writes a
    /// hook event's rows builds a temporary b-tree for a check, the checks still refuse what
    /// they refused, and a connection opened before the migration reads the new schema.
    #[test]
    fn checks_of_many_values_become_comparisons_and_still_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.db");
        let checks = MIGRATIONS
            .iter()
            .position(|(name, _, _)| *name == "0036_checks_without_lists.sql")
            .unwrap();
        let mut conn = Connection::open(&path).unwrap();
        migrate_to(&mut conn, checks);
        let other = Connection::open(&path).unwrap();
        let refusal = |conn: &Connection| {
            conn.execute(
                "INSERT INTO sessions (id, source, state, first_sequence, last_sequence,
                                       event_count, last_event_time)
                 VALUES ('s', 'hook', 'asleep', 1, 1, 1, 't')",
                [],
            )
            .unwrap_err()
            .to_string()
        };
        assert!(
            refusal(&other).contains("state IN ("),
            "{}",
            refusal(&other)
        );
        migrate(&mut conn).unwrap();

        // A list of three or more values: `IN (` then two commas before its `)`.
        let lists: Vec<String> = conn
            .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table'")
            .unwrap()
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .filter(|(_, sql)| {
                sql.split("IN (")
                    .skip(1)
                    .any(|rest| rest.split(')').next().unwrap().matches(',').count() >= 2)
            })
            .map(|(name, _)| name)
            .collect();
        assert_eq!(lists, Vec::<String>::new());
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        // As the writer saves rows: an insert that updates the row it meets (both sides check).
        // (The hero's state had one too, until 0037 moved it to its session's row.)
        for (table, checked, columns, values, bad) in [
            (
                "tool_uses",
                "status",
                "id, session_id, tool, kind, status, opened_sequence",
                "'t', 's', 'Bash', 'bash', ?1, 1",
                "done",
            ),
            (
                "missions",
                "state",
                "id, session_id, kind, state, opened_event_id, started_at, opened_sequence",
                "'m', 's', 'prompt', ?1, 'e', 't', 1",
                "paused",
            ),
            (
                "sessions",
                "state",
                "id, source, state, first_sequence, last_sequence, event_count, last_event_time",
                "'s', 'hook', ?1, 1, 1, 1, 't'",
                "asleep",
            ),
            (
                "gaps",
                "status",
                "id, platform, account, status, reason, opened_at, opened_event_id, opened_sequence",
                "'g', 'slack', 'a', ?1, 'r', 't', 'e', 1",
                "ajar",
            ),
        ] {
            let insert = format!(
                "INSERT INTO {table} ({columns}) VALUES ({values})
                 ON CONFLICT DO UPDATE SET {checked} = ?1"
            );
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN {insert}"))
                .unwrap()
                .query_map([bad], |r| r.get(1))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert!(
                !plan.iter().any(|op| op == "OpenEphemeral"),
                "{table}: {plan:?}"
            );
            let refused = conn.execute(&insert, [bad]).unwrap_err().to_string();
            assert!(
                refused.contains("CHECK constraint failed"),
                "{table}: {refused}"
            );
        }
        assert!(
            refusal(&other).contains("state = 'active' OR"),
            "{}",
            refusal(&other)
        );
    }

    /// Migration 0037 moves a hero's state, mission in progress and mission count into its
    /// session's row: every hero reads back as it was, a session without a hero has none,
    /// `agents_now` reads them there, and the triggers that kept `hero_state` a copy are gone.
    #[test]
    fn a_heros_progress_moves_to_its_sessions_row() {
        let progress = MIGRATIONS
            .iter()
            .position(|(name, _, _)| *name == "0037_heroes_progress_in_sessions.sql")
            .unwrap();
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, progress);
        conn.execute_batch(&format!(
            "INSERT INTO sessions (id, source, state, first_sequence, last_sequence,
                                   event_count, last_event_time)
             VALUES ('s1', 'hook', 'active', 1, 4, 4, 't4'), ('s2', 'hook', 'idle', 2, 3, 2, 't3'),
                    ('s3', 'api', 'active', 5, 5, 1, 't5');
             INSERT INTO heroes (id, session_id, cli, cwd, state, active_mission_id,
                                 mission_count, spawned_event_id, spawned_at)
             VALUES ('{}', 's1', 'claude-code', '/w', 'active', 'mission-e3', 2, 'e1', 't1'),
                    ('{}', 's2', 'codex-cli', '/', 'ended', NULL, 0, 'e2', 't2');
             INSERT INTO missions (id, session_id, kind, state, title, opened_event_id,
                                   started_at, opened_sequence)
             VALUES ('mission-e3', 's1', 'prompt', 'active', 'fix it', 'e3', 't3', 3);",
            projection::heroes::hero_id("s1"),
            projection::heroes::hero_id("s2"),
        ))
        .unwrap();
        let before: Vec<Option<String>> = ["s1", "s2", "s3"]
            .iter()
            .map(|s| {
                conn.query_row("SELECT hero_state FROM sessions WHERE id = ?1", [s], |r| {
                    r.get(0)
                })
                .unwrap()
            })
            .collect();
        migrate(&mut conn).unwrap();
        let progress = |session: &str| -> (Option<String>, Option<i64>, Option<i64>) {
            conn.query_row(
                "SELECT hero_state, hero_mission, hero_mission_count FROM sessions
                 WHERE id = ?1",
                [session],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
        };
        // The mission in progress by its key, the sequence that opened it.
        assert_eq!(progress("s1"), (Some("active".into()), Some(3), Some(2)));
        assert_eq!(progress("s2"), (Some("ended".into()), None, Some(0)));
        assert_eq!(progress("s3"), (None, None, None));
        // The states the triggers copied before are the ones moved.
        assert_eq!(
            before,
            [Some("active".to_string()), Some("ended".to_string()), None]
        );
        let hero = projection::heroes::by_session(&conn, "s1")
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                hero.state,
                hero.active_mission_id.as_deref(),
                hero.mission_count
            ),
            (projection::heroes::HeroState::Active, Some("mission-e3"), 2)
        );
        assert_eq!(
            (hero.cli.as_str(), hero.cwd.as_str()),
            ("claude-code", "/w")
        );
        let now: Vec<(String, String, Option<String>)> = conn
            .prepare("SELECT session_id, state, mission FROM agents_now")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            now,
            [(
                "s1".to_string(),
                "active".to_string(),
                Some("fix it".to_string())
            )]
        );
        let triggers: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'trigger'
                 AND sql LIKE '%hero_state%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(triggers, 0);
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }

    /// Migration 0038 keys `missions` by the sequence that opened each: every mission is
    /// found by its id as before (through the events' ids, or `missions_pruned_ids` once its
    /// event was pruned), no index on the id or the order is left, and `recent_failures` still
    /// names a failed tool use's mission.
    #[test]
    fn missions_are_keyed_by_their_opening_and_still_found_by_id() {
        let keyed = MIGRATIONS
            .iter()
            .position(|(name, _, _)| *name == "0038_missions_by_sequence.sql")
            .unwrap();
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, keyed);
        conn.execute_batch(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source,
                                 event_time, received_at, payload)
             VALUES (7, 'e7', 's', 2, 'UserPromptSubmit', 'hook', 't', 't', '{}');
             INSERT INTO missions (id, session_id, kind, state, title, opened_event_id,
                                   started_at, opened_sequence, opening_pruned)
             VALUES ('mission-e7', 's', 'prompt', 'active', 'live one', 'e7', 't', 7, NULL),
                    ('mission-e3', 's', 'prompt', 'failed', 'pruned one', 'e3', 't', 3, 1);
             INSERT INTO tool_uses (id, session_id, mission_id, tool, kind, status,
                                    opened_sequence)
             VALUES ('tool-a', 's', 'mission-e7', 'Bash', 'bash', 'failed', 8),
                    ('tool-b', 's', 'mission-e3', 'Edit', 'file', 'failed', 4);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        for (id, title, opened) in [
            ("mission-e7", "live one", 7),
            ("mission-e3", "pruned one", 3),
        ] {
            let mission = projection::missions::get(&conn, id).unwrap().unwrap();
            assert_eq!(
                (mission.title.as_deref(), mission.opened_sequence),
                (Some(title), opened)
            );
            assert_eq!(
                projection::missions::key_of(&conn, id).unwrap(),
                Some(("s".to_string(), opened))
            );
        }
        assert_eq!(
            projection::missions::get(&conn, "mission-e9").unwrap(),
            None
        );
        assert_eq!(projection::missions::get(&conn, "e7").unwrap(), None);
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM pragma_index_list('missions') ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(
            !indexes
                .iter()
                .any(|i| i == "missions_by_order" || i.starts_with("sqlite_autoindex")),
            "{indexes:?}"
        );
        let failures: Vec<(String, Option<String>)> = conn
            .prepare("SELECT tool, mission FROM recent_failures")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            failures,
            [
                ("Bash".to_string(), Some("live one".to_string())),
                ("Edit".to_string(), Some("pruned one".to_string()))
            ]
        );
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }

    /// Applies the first `count` migrations, as a hooklog of that version left the file.
    fn migrate_to(conn: &mut Connection, count: usize) {
        for (number, (_, sql, _)) in MIGRATIONS.iter().enumerate().take(count) {
            conn.execute_batch(sql).unwrap();
            conn.pragma_update(None, "user_version", (number + 1) as i64)
                .unwrap();
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
