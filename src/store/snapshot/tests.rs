use super::*;
use crate::config::Durability;
use crate::store::{migrate, open::open_writer, retention};

/// A log file with `events` plain events (each its own session), opened for writing.
fn log_with_events(dir: &std::path::Path, events: i64) -> Connection {
    let conn = open_writer(&dir.join("s.db"), Durability::Normal).unwrap();
    for sequence in 1..=events {
        conn.execute(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source, event_time, received_at, payload, origin) VALUES (?1, ?2, ?3, 1, 'note', 'api',
                 '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '{}', 'here')",
            rusqlite::params![sequence, format!("e{sequence}"), format!("s{sequence}")],
        )
        .unwrap();
        crate::projection::apply(
            &conn,
            &crate::store::read::event_by_id(&conn, &format!("e{sequence}"))
                .unwrap()
                .unwrap(),
        )
        .unwrap();
    }
    conn
}

fn prune_to(conn: &Connection, keep: u64) -> i64 {
    let policy = retention::Retention {
        max_events: Some(keep),
        max_age: None,
    };
    retention::prune_step(conn, &policy, chrono::Utc::now()).unwrap()
}

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    conn.prepare(&format!("PRAGMA main.table_info({table})"))
        .unwrap()
        .query_map([], |r| r.get(1))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn twins(conn: &Connection) -> i64 {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'snapshot\\_%' ESCAPE '\\'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// The snapshot's tables come from the log's own migrations: the same columns, and no
/// table is defined twice in either file.
#[test]
fn the_snapshot_file_has_the_logs_projection_tables_and_no_twins() {
    let dir = tempfile::tempdir().unwrap();
    let conn = log_with_events(dir.path(), 3);
    let path = path_of(&dir.path().join("s.db"));
    assert_eq!(through(&conn).unwrap(), Some(0), "nothing pruned, no file");
    assert!(!path.exists());
    assert_eq!(prune_to(&conn, 1), 2);
    assert_eq!(through(&conn).unwrap(), Some(2));
    let snapshot = file::open_read_only(&path).unwrap();
    for table in projection::TABLES {
        assert_eq!(columns(&conn, table), columns(&snapshot, table), "{table}");
    }
    assert_eq!((twins(&conn), twins(&snapshot)), (0, 0));
    let sessions: i64 = snapshot
        .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sessions, 2, "what the pruned events built");
}

/// A database pruned by a hooklog older than the snapshot (schema 5) gets one only when no
/// event is left (its live tables are then exactly the state at the boundary); otherwise
/// none, and the rows move to the file on the way to schema 15.
#[test]
fn upgrading_a_pruned_database_takes_the_live_tables_only_when_no_event_is_left() {
    for events_left in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let mut conn = Connection::open(&path).unwrap();
        migrate::schema_only(&mut conn, 5).unwrap();
        conn.execute_batch(
            "UPDATE meta SET value = '10' WHERE key = 'pruned_through_sequence';
             INSERT INTO claims VALUES ('c', 1, 's', 'held', 30, 't', NULL, 't', NULL, NULL, 'e');",
        )
        .unwrap();
        if events_left {
            conn.execute(
                "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source, event_time, received_at, payload) VALUES (11, 'e11', NULL, NULL, 'x', 'api', 't', 't', '{}')",
                [],
            )
            .unwrap();
        }
        migrate::migrate(&mut conn).unwrap();
        assert_eq!(twins(&conn), 0);
        if events_left {
            assert_eq!(through(&conn).unwrap(), None);
            assert!(!path_of(&path).exists());
        } else {
            assert_eq!(through(&conn).unwrap(), Some(10));
            let snapshot = file::open_read_only(&path_of(&path)).unwrap();
            let kept: i64 = snapshot
                .query_row("SELECT COUNT(*) FROM claims", [], |r| r.get(0))
                .unwrap();
            assert_eq!(kept, 1);
        }
    }
}

/// The move out of the twins can be interrupted after the file is committed and before the
/// log's migration is: the next start makes the file again from the twins, once.
#[test]
fn an_upgrade_interrupted_after_the_file_was_written_makes_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let mut conn = Connection::open(&path).unwrap();
    migrate::schema_only(&mut conn, 14).unwrap();
    conn.execute_batch(
        "UPDATE meta SET value = '10' WHERE key IN ('pruned_through_sequence', 'snapshot_through_sequence');
         INSERT INTO snapshot_claims VALUES ('c', 1, 's', 'held', 30, 't', NULL, 't', NULL, NULL, 'e');",
    )
    .unwrap();
    // The first attempt: the file written and committed, the log's transaction never.
    let tx = conn.transaction().unwrap();
    move_twins_out(&tx, 14).unwrap();
    drop(tx);
    assert!(path_of(&path).exists());
    migrate::migrate(&mut conn).unwrap();
    assert_eq!(through(&conn).unwrap(), Some(10));
    let snapshot = file::open_read_only(&path_of(&path)).unwrap();
    let claims: i64 = snapshot
        .query_row("SELECT COUNT(*) FROM claims", [], |r| r.get(0))
        .unwrap();
    assert_eq!(claims, 1, "moved once");
    let version: i64 = snapshot
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version as usize, migrate::MIGRATIONS.len());
    assert_eq!(
        read::meta(&conn, THROUGH_KEY).unwrap(),
        None,
        "the boundary lives in the file only"
    );
}

/// A snapshot file left beside a new log (another log's, by its stream generation) is not
/// used: the new log replaces it at its first prune, as nothing was pruned yet.
#[test]
fn another_logs_snapshot_file_is_replaced_not_used() {
    let other = tempfile::tempdir().unwrap();
    let conn = log_with_events(other.path(), 4);
    assert_eq!(prune_to(&conn, 1), 3);
    drop(conn);
    let dir = tempfile::tempdir().unwrap();
    let conn = log_with_events(dir.path(), 2);
    std::fs::copy(
        path_of(&other.path().join("s.db")),
        path_of(&dir.path().join("s.db")),
    )
    .unwrap();
    assert_eq!(through(&conn).unwrap(), None, "not this log's");
    assert_eq!(restore(&conn).unwrap(), 0);
    assert_eq!(prune_to(&conn, 1), 1);
    assert_eq!(through(&conn).unwrap(), Some(1));
    let snapshot = file::open_read_only(&path_of(&dir.path().join("s.db"))).unwrap();
    let sessions: i64 = snapshot
        .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sessions, 1, "made again for this log");
}

/// A backup of a log that has another log's snapshot file beside it does not take that file:
/// the copy gets a generation of its own, under which the file would pass for its snapshot
/// (and the copy would delete the events it seems to cover when opened).
#[test]
fn a_copy_leaves_another_logs_snapshot_file_behind() {
    let other = tempfile::tempdir().unwrap();
    let conn = log_with_events(other.path(), 4);
    assert_eq!(prune_to(&conn, 1), 3);
    drop(conn);
    let dir = tempfile::tempdir().unwrap();
    let conn = log_with_events(dir.path(), 2);
    drop(conn);
    let db = dir.path().join("s.db");
    std::fs::copy(path_of(&other.path().join("s.db")), path_of(&db)).unwrap();
    let to = dir.path().join("copy.db");
    copy::copy(&db, &to).unwrap();
    assert!(to.exists());
    assert!(
        !path_of(&to).exists(),
        "another log's snapshot is not copied"
    );

    // Its own snapshot is.
    let conn = Connection::open(&db).unwrap();
    assert_eq!(prune_to(&conn, 1), 1);
    drop(conn);
    let again = dir.path().join("again.db");
    copy::copy(&db, &again).unwrap();
    assert!(path_of(&again).exists(), "the log's own snapshot is copied");
}

/// The snapshot holds what the log holds (prompts, paths): a database made private keeps a
/// private snapshot.
#[cfg(unix)]
#[test]
fn the_snapshot_file_gets_the_databases_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let conn = log_with_events(dir.path(), 2);
    let db = dir.path().join("s.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(prune_to(&conn, 1), 1);
    let mode = std::fs::metadata(path_of(&db))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}
