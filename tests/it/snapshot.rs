//! The retention snapshot's file beside the database: a prune step interrupted between the
//! snapshot's commit and the log's, and a database that kept its snapshot in `snapshot_`
//! twins (schema 14) upgraded to the file, and a backup of a pruned database. Each must rebuild
//! to the live tables.

use crate::common;

use common::{assert_rebuilds_to_live, dump_projections, spawn_app_with};
use hooklog::config::Durability;
use hooklog::store::retention::{self, Retention};
use hooklog::store::snapshot::{self, Snapshot};
use hooklog::store::{migrate, open};
use reqwest::StatusCode;
use rusqlite::Connection;
use serde_json::Value;

/// A stopped server's database holding the hook and normalized fixtures and `mixed` events of
/// the mixed workload, nothing pruned. Returns the directory (kept alive) and the file.
async fn workload(mixed: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let app = spawn_app_with(|_| {}).await;
    app.post_fixture("/event", "claude-code-session").await;
    app.post_fixture("/event/normalized", "normalized-session")
        .await;
    let events: Vec<Value> = (0..mixed)
        .map(hooklog::bench::rebuild::mixed_event)
        .collect();
    let (status, body) = app.post_json(&Value::Array(events)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let path = app.db_path.clone();
    (app.stop().await, path)
}

/// Every projection table of the snapshot file, as text rows.
fn snapshot_rows(db: &std::path::Path) -> Vec<String> {
    dump_projections(&common::open_read_only(&snapshot::path_of(db)))
}

fn keep(events: u64) -> Retention {
    Retention {
        max_events: Some(events),
        max_age: None,
    }
}

/// The snapshot commits and the log's delete never does (a crash between them): the next
/// prune step only deletes what the snapshot already covers, without applying those events
/// to it again, and the one after moves it on; the log opened again (as a restart does)
/// finishes the delete too. Each time a rebuild equals the live tables.
#[tokio::test]
async fn a_prune_step_interrupted_after_the_snapshot_committed_is_finished_once() {
    let (_dir, db) = workload(1_200).await;
    let total: i64 = Connection::open(&db)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .unwrap();
    // The first half of the step: the snapshot moves to 500, the log keeps every event.
    let conn = open::open_writer(&db, Durability::Full).unwrap();
    let mut snap = Snapshot::of(&conn).unwrap();
    snap.advance(&conn, 500).unwrap();
    drop(snap);
    assert_eq!(snapshot::through(&conn).unwrap(), Some(500));
    let at_500 = snapshot_rows(&db);
    let count = |c: &Connection| -> i64 {
        c.query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(&conn), total, "the log's half never ran");

    // The next step finishes it: the events through 500 go, the snapshot stays where it was.
    let mut snap = Snapshot::of(&conn).unwrap();
    let policy = keep((total - 800) as u64);
    let step =
        retention::prune_step_min(&conn, &mut snap, &policy, chrono::Utc::now(), 1, None, None)
            .unwrap();
    assert_eq!(step.pruned, 500);
    assert_eq!(
        snapshot_rows(&db),
        at_500,
        "not applied to the snapshot again"
    );
    drop(snap);
    drop(conn);
    assert_rebuilds_to_live(&db);

    // The step after moves it on to 800.
    let conn = open::open_writer(&db, Durability::Full).unwrap();
    assert_eq!(
        retention::prune_step(&conn, &policy, chrono::Utc::now()).unwrap(),
        300
    );
    assert_eq!(snapshot::through(&conn).unwrap(), Some(800));
    // Interrupted again, and this time the log is opened again before any prune step.
    let mut snap = Snapshot::of(&conn).unwrap();
    snap.advance(&conn, 900).unwrap();
    drop(snap);
    drop(conn);
    let conn = open::open_writer(&db, Durability::Full).unwrap();
    assert_eq!(
        count(&conn),
        total - 900,
        "opening the log finished the delete"
    );
    drop(conn);
    assert_rebuilds_to_live(&db);
    let checked = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["rebuild", "--check", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
}

/// A database left by a hooklog that kept its snapshot in `snapshot_<table>` twins (schema
/// 14), with events pruned: opening it moves the twins' rows and the boundary into the file
/// and drops the twins, and a rebuild then equals the live tables.
#[tokio::test]
async fn a_database_with_snapshot_twins_upgrades_to_the_file_and_rebuilds_to_live() {
    const PRUNED: i64 = 700;
    let (dir, db) = workload(1_200).await;
    // The projections as they stood after event PRUNED: a copy of the log cut there, rebuilt.
    let cut = dir.path().join("cut.db");
    Connection::open(&db)
        .unwrap()
        .execute("VACUUM INTO ?1", [cut.to_string_lossy()])
        .unwrap();
    let mut at_boundary = Connection::open(&cut).unwrap();
    at_boundary
        .execute("DELETE FROM events WHERE sequence > ?1", [PRUNED])
        .unwrap();
    let tx = at_boundary.transaction().unwrap();
    hooklog::store::rebuild::rebuild(&tx).unwrap();
    tx.commit().unwrap();
    drop(at_boundary);

    // What hooklog at schema 14 left: the twins holding that state, the events through
    // PRUNED deleted with their history rows, both boundaries in meta.
    let conn = Connection::open(&db).unwrap();
    conn.execute("ATTACH ?1 AS cut", [cut.to_string_lossy()])
        .unwrap();
    // Schema 14 had a twin for each projection table it knew (not the later ones).
    let later = ["permission_requests"];
    for table in hooklog::projection::TABLES
        .iter()
        .filter(|t| !later.contains(t) && **t != "session_details")
    {
        // Schema 14's sessions held their details (0034), and its heroes their progress
        // (0037).
        let from = match *table {
            "sessions" => "cut.sessions s JOIN cut.session_details d ON d.session_id = s.id",
            "heroes" => "cut.heroes h JOIN cut.sessions s ON s.id = h.session_id",
            _ => &format!("cut.{table}"),
        };
        let columns = match *table {
            "sessions" => {
                "s.*, d.first_event_time, d.cli, d.cwd, d.pane_id, d.tty,
                           d.transcript_path, d.model, d.permission_mode"
            }
            "heroes" => {
                "h.*, s.hero_state AS state,
                           (SELECT id FROM cut.missions m WHERE m.opened_sequence = s.hero_mission)
                               AS active_mission_id,
                           s.hero_mission_count AS mission_count"
            }
            _ => "*",
        };
        conn.execute_batch(&format!(
            "CREATE TABLE main.snapshot_{table} AS SELECT {columns} FROM {from} WHERE 0;
             INSERT INTO main.snapshot_{table} SELECT {columns} FROM {from};"
        ))
        .unwrap();
    }
    // Schema 14's tool uses and missions named their hero (0030; what it was does not matter
    // here: the upgrade drops it).
    conn.execute_batch(
        "ALTER TABLE snapshot_tool_uses ADD COLUMN hero_id TEXT;
         ALTER TABLE snapshot_missions ADD COLUMN hero_id TEXT NOT NULL DEFAULT '';",
    )
    .unwrap();
    // Schema 14's change rows named their hero, and the missions hook events answered with had
    // a table of their own (0024).
    conn.execute_batch(
        "DROP TABLE snapshot_agent_changes;
         CREATE TABLE snapshot_agent_changes (sequence INTEGER PRIMARY KEY,
             hero_id TEXT NOT NULL, mission_id TEXT, changes TEXT NOT NULL);
         CREATE TABLE snapshot_hook_effects (sequence INTEGER PRIMARY KEY,
             mission_id TEXT NOT NULL);",
    )
    .unwrap();
    conn.execute_batch(&format!(
        "DETACH cut;
         DELETE FROM snapshot_agent_changes; DELETE FROM snapshot_hook_effects;
         INSERT INTO pruned_sessions (session_id, last_session_sequence)
             SELECT session_id, MAX(session_sequence) FROM events
             WHERE sequence <= {PRUNED} AND session_id IS NOT NULL GROUP BY session_id;
         UPDATE meta SET value = '{PRUNED}' WHERE key = 'pruned_through_sequence';
         INSERT INTO meta VALUES ('snapshot_through_sequence', '{PRUNED}');
         DELETE FROM agent_changes WHERE sequence <= {PRUNED};
         UPDATE tool_uses SET opening_pruned = 1 WHERE opened_sequence <= {PRUNED};
         UPDATE missions SET opening_pruned = 1 WHERE opened_sequence <= {PRUNED};
         INSERT INTO search (search, rowid, text)
             SELECT 'delete', sequence, text FROM search_text WHERE sequence <= {PRUNED};
         DELETE FROM search_text WHERE sequence <= {PRUNED};
         DELETE FROM events WHERE sequence <= {PRUNED};
         PRAGMA user_version = 14;"
    ))
    .unwrap();
    // Schema 14 had no table added later: the upgrade makes them, from the events it has.
    let earlier = |dump: Vec<String>| -> Vec<String> {
        dump.into_iter()
            .filter(|row| !later.iter().any(|t| row.starts_with(&format!("{t}: "))))
            .collect()
    };
    let live = earlier(dump_projections(&conn));
    common::as_schema_23(&conn);
    conn.execute_batch("PRAGMA user_version = 14").unwrap();
    for table in later {
        conn.execute_batch(&format!("DROP TABLE {table}")).unwrap();
    }
    // And no view (0018).
    let views: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'view'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for view in views {
        conn.execute_batch(&format!("DROP VIEW {view}")).unwrap();
    }
    // Nor the indexes of 0020, 0021 and 0023.
    conn.execute_batch(
        "DROP INDEX tool_uses_by_order; DROP INDEX sessions_by_activity;
         DROP INDEX sessions_live; DROP INDEX heroes_live;
         DROP INDEX missions_active_subagents; DROP INDEX tool_uses_running_spawners",
    )
    .unwrap();
    drop(conn);
    std::fs::remove_file(&cut).unwrap();
    assert!(!snapshot::path_of(&db).exists());

    let conn = open::open_writer(&db, Durability::Full).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version as usize, migrate::MIGRATIONS.len());
    let twins: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'snapshot%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(twins, 0, "the twins are gone");
    assert_eq!(snapshot::through(&conn).unwrap(), Some(PRUNED));
    assert_eq!(
        earlier(dump_projections(&conn)),
        live,
        "the live tables are untouched"
    );
    let sessions: i64 = common::open_read_only(&snapshot::path_of(&db))
        .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert!(sessions > 0, "the twins' rows are in the file");
    drop(conn);
    assert_rebuilds_to_live(&db);
}

/// `hooklog backup` of a pruned database copies its snapshot too, named after the copy's new
/// stream generation, so the copy can be rebuilt on its own; without the snapshot file it
/// could not.
#[tokio::test]
async fn a_backup_of_a_pruned_database_brings_its_snapshot_and_rebuilds() {
    let app = spawn_app_with(|c| c.retention = keep(300)).await;
    app.post_fixture("/event", "claude-code-session").await;
    let events: Vec<Value> = (0..1_000)
        .map(hooklog::bench::rebuild::mixed_event)
        .collect();
    let (status, body) = app.post_json(&Value::Array(events)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    common::wait_for(std::time::Duration::from_secs(10), "pruning", || {
        app.event_count() <= 300
    })
    .await;
    let copy = app.dir.path().join("copy.db");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["backup", "--db"])
        .arg(&app.db_path)
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _dir = app.stop().await;
    let conn = common::open_read_only(&copy);
    let pruned: i64 = conn
        .query_row(
            "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'pruned_through_sequence'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(pruned > 0);
    assert!(
        snapshot::through(&conn)
            .unwrap()
            .is_some_and(|s| s >= pruned)
    );
    drop(conn);
    let checked = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["rebuild", "--check", "--db"])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// A replay that starts from the retention snapshot loads each session's open rows from it:
/// two subagents started (and their `Task` calls running) in events that were pruned are
/// found by their ids, and the latest running spawner by a third, after the prune; a rebuild
/// gives the rows the server made.
#[tokio::test]
async fn subagents_running_across_a_prune_are_found_by_a_rebuild() {
    let app = spawn_app_with(|_| {}).await;
    let s = "across-a-prune";
    let post = |body: serde_json::Value| app.post_hook_ok(body);
    post(
        serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": s,
        "prompt": "fan out"}),
    )
    .await;
    for (call, agent) in [("task-1", "a1"), ("task-2", "a2")] {
        post(
            serde_json::json!({"hook_event_name": "PreToolUse", "session_id": s,
            "tool_name": "Task", "tool_use_id": call,
            "tool_input": {"description": call, "subagent_type": "Explore"}}),
        )
        .await;
        post(
            serde_json::json!({"hook_event_name": "SubagentStart", "session_id": s,
            "agent_id": agent}),
        )
        .await;
    }
    post(serde_json::json!({"hook_event_name": "Notification", "session_id": "other"})).await;
    let dir = app.stop().await;
    let db = dir.path().join("hooklog.db");
    let conn = open::open_writer(&db, Durability::Full).unwrap();
    assert_eq!(
        retention::prune_step(&conn, &keep(1), chrono::Utc::now()).unwrap(),
        5
    );
    drop(conn);

    let app = common::start(hooklog::config::Config::for_path(&db), dir).await;
    let post = |body: serde_json::Value| app.post_hook_ok(body);
    for (agent, call) in [("a2", "grep-2"), ("a1", "grep-1")] {
        post(
            serde_json::json!({"hook_event_name": "PreToolUse", "session_id": s,
            "agent_id": agent, "tool_name": "Grep", "tool_use_id": call,
            "tool_input": {"pattern": call}}),
        )
        .await;
    }
    post(
        serde_json::json!({"hook_event_name": "PreToolUse", "session_id": s,
        "tool_name": "Task", "tool_use_id": "task-3",
        "tool_input": {"description": "task-3", "subagent_type": "Explore"}}),
    )
    .await;
    post(
        serde_json::json!({"hook_event_name": "SubagentStart", "session_id": s,
        "agent_id": "a3"}),
    )
    .await;
    post(
        serde_json::json!({"hook_event_name": "SubagentStop", "session_id": s,
        "agent_id": "a1"}),
    )
    .await;
    let (status, missions) = app.get(&format!("/missions?session={s}&limit=100")).await;
    assert_eq!(status, StatusCode::OK, "{missions}");
    let titles: Vec<(&str, &str)> = missions["missions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == "subagent")
        .map(|m| (m["title"].as_str().unwrap(), m["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        titles,
        [
            ("task-3", "active"),
            ("task-2", "active"),
            ("task-1", "completed")
        ]
    );
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    assert_rebuilds_to_live(&db_path);
    drop(dir);
}
