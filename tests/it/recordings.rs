//! Record, replay and rebuild: a session exported from one hooklog and imported into another
//! keeps its ids, times and projections; importing twice adds nothing; `replay --to` rebuilds
//! the same projections on a live server; and a large mixed log's projections equal a rebuild.

use crate::common;

use common::{TestApp, dump_projections, fixture, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::process::Command;

const CLAUDE_SESSION: &str = "8c2e4f1a-3b7d-4e9a-a5c6-1d2f3e4a5b6c";
const FACTORY_SESSION: &str = "fs-2f9c41d0-6b1e-4c8a-9e55-0d3b7a1c4e21";

fn hooklog(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(args)
        .output()
        .expect("run hooklog")
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

async fn post_factory_fixture(app: &TestApp) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/factory/docs-review-session.ndjson"
    );
    let (status, body) = app
        .post_raw(
            &format!("/factory-sessions/{FACTORY_SESSION}/events"),
            "application/x-ndjson",
            std::fs::read(path).unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// What a server's REST says about a session, with log positions taken out (they differ
/// between databases by design).
async fn session_view(app: &TestApp, session: &str) -> Value {
    let (_, mut s) = app.get(&format!("/sessions/{session}")).await;
    for position in ["firstSequence", "lastSequence"] {
        s.as_object_mut().unwrap().remove(position);
    }
    let (_, missions) = app
        .get(&format!("/missions?sessionId={session}&limit=1000"))
        .await;
    let (_, tools) = app
        .get(&format!("/tool-uses?sessionId={session}&limit=1000"))
        .await;
    let hero = match s["heroId"].as_str() {
        Some(id) => app.get(&format!("/heroes/{id}")).await.1,
        None => Value::Null,
    };
    let strip = |mut v: Value, key: &str| {
        for row in v[key].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("openedSequence");
        }
        v
    };
    let mut hero = hero;
    if let Some(h) = hero.as_object_mut() {
        h.remove("lastSequence");
    }
    json!({"session": s, "hero": hero, "missions": strip(missions, "missions"),
           "toolUses": strip(tools, "toolUses")})
}

/// A session's events as the stream gives them, without the log's positions.
async fn session_events(app: &TestApp, session: &str) -> Vec<Value> {
    let (_, page) = app
        .get(&format!("/events?session={session}&limit=1000"))
        .await;
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e["context"].as_object_mut().unwrap().remove("sequence");
            e
        })
        .collect()
}

#[tokio::test]
async fn a_session_exported_from_one_hooklog_and_imported_into_another_is_the_same_session() {
    let a = spawn_app().await;
    a.post_fixture("/event", "claude-code-session").await;
    post_factory_fixture(&a).await;
    a.post_fixture("/event", "codex-lifecycle").await;

    // Export over HTTP and with the CLI: the same bytes.
    let response = a
        .client
        .get(format!("{}/sessions/{CLAUDE_SESSION}/export", a.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let over_http = response.text().await.unwrap();
    let file = a.dir.path().join("claude.ndjson");
    let db = a.db_path.to_string_lossy().to_string();
    let exported = hooklog(&[
        "export",
        "--session",
        CLAUDE_SESSION,
        "--db",
        &db,
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(exported.status.success(), "{}", text(&exported));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), over_http);
    assert_eq!(over_http.lines().count(), 26);
    let factory_file = a.dir.path().join("factory.ndjson");
    let exported = hooklog(&[
        "export",
        "--session",
        FACTORY_SESSION,
        "--db",
        &db,
        "-o",
        factory_file.to_str().unwrap(),
    ]);
    assert!(exported.status.success());
    let (status, _) = a.get("/sessions/nobody/export").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Import both into an empty database, twice.
    let b_dir = tempfile::tempdir().unwrap();
    let b_db = b_dir.path().join("b.db");
    let b_db_arg = b_db.to_str().unwrap();
    for recording in [&file, &factory_file] {
        let first = hooklog(&["import", recording.to_str().unwrap(), "--db", b_db_arg]);
        assert!(first.status.success(), "{}", text(&first));
        assert!(
            text(&first).contains("duplicates 0, rejected 0"),
            "{}",
            text(&first)
        );
        let again = hooklog(&["import", recording.to_str().unwrap(), "--db", b_db_arg]);
        assert!(
            text(&again).contains("imported 0,"),
            "importing twice adds nothing: {}",
            text(&again)
        );
    }
    let b = common::start(hooklog::config::Config::for_path(&b_db), b_dir).await;
    assert_eq!(b.event_count(), 26 + 48);

    // The events: same ids, types, times, sources and payloads, numbered 1..n in the session.
    assert_eq!(
        session_events(&b, CLAUDE_SESSION).await,
        session_events(&a, CLAUDE_SESSION).await
    );
    assert_eq!(
        session_events(&b, FACTORY_SESSION).await,
        session_events(&a, FACTORY_SESSION).await
    );
    // The projections of the session: the same, ids included.
    assert_eq!(
        session_view(&b, CLAUDE_SESSION).await,
        session_view(&a, CLAUDE_SESSION).await
    );
    let dispatches = format!("/factory-sessions/{FACTORY_SESSION}/dispatches");
    assert_eq!(b.get(&dispatches).await.1, a.get(&dispatches).await.1);
}

// The CLI runs as a child process while this test waits on it: the server needs threads of
// its own meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_a_recording_to_a_live_server_reproduces_its_projections() {
    let a = spawn_app().await;
    a.post_fixture("/event", "claude-code-session").await;
    let file = a.dir.path().join("claude.ndjson");
    let db = a.db_path.to_string_lossy().to_string();
    assert!(
        hooklog(&[
            "export",
            "--session",
            CLAUDE_SESSION,
            "--db",
            &db,
            "-o",
            file.to_str().unwrap()
        ])
        .status
        .success()
    );

    let c = spawn_app().await;
    let replayed = hooklog(&[
        "replay",
        file.to_str().unwrap(),
        "--to",
        &c.url,
        "--no-delay",
    ]);
    assert!(replayed.status.success(), "{}", text(&replayed));
    assert!(text(&replayed).contains("posted 26 of 26"));
    assert_eq!(
        session_view(&c, CLAUDE_SESSION).await,
        session_view(&a, CLAUDE_SESSION).await
    );

    // Raw hook bodies replay too (new ids, so compare what the projections say, not ids).
    let d = spawn_app().await;
    let raw = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/hooks/codex-lifecycle.ndjson"
    );
    let replayed = hooklog(&["replay", raw, "--to", &d.url, "--speed", "1000"]);
    assert!(replayed.status.success(), "{}", text(&replayed));
    let (_, missions) = d.get("/missions").await;
    let states: Vec<&Value> = missions["missions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["state"])
        .collect();
    assert_eq!(states, [&json!("completed"), &json!("completed")]);

    // The debugger view says what each event changed.
    let steps = hooklog(&["replay", raw]);
    let out = text(&steps);
    assert!(steps.status.success(), "{out}");
    assert!(out.contains("#2 UserPromptSubmit"), "{out}");
    assert!(out.contains("+ missions"), "{out}");
    assert!(out.contains("status: running -> interrupted"), "{out}");
    let at = hooklog(&[
        "replay",
        "--session",
        CLAUDE_SESSION,
        "--db",
        &db,
        "--until",
        "10",
    ]);
    let out = text(&at);
    assert!(at.status.success(), "{out}");
    assert!(out.starts_with("after #10 "), "{out}");
    assert!(out.contains("+ heroes"), "{out}");
}

#[tokio::test]
async fn the_replay_route_re_emits_a_session_in_order() {
    let app = spawn_app().await;
    app.post_fixture("/event", "codex-lifecycle").await;
    let session = fixture("codex-lifecycle")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let response = app
        .client
        .get(format!("{}/sessions/{session}/replay?speed=1000", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.text().await.unwrap();
    let ids: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6", "7", "8"]);
    let (status, _) = app
        .get(&format!("/sessions/{session}/replay?speed=0"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn backup_and_stats_read_a_running_database() {
    let app = spawn_app().await;
    app.post_fixture("/event", "codex-lifecycle").await;
    let db = app.db_path.to_string_lossy().to_string();
    let copy = app.dir.path().join("copy.db");
    let backed = hooklog(&["backup", copy.to_str().unwrap(), "--db", &db]);
    assert!(backed.status.success(), "{}", text(&backed));
    let events: i64 = rusqlite::Connection::open(&copy)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(events, 8);
    assert!(
        !hooklog(&["backup", copy.to_str().unwrap(), "--db", &db])
            .status
            .success(),
        "never overwrites"
    );
    let stats = hooklog(&["stats", "--db", &db, "--json"]);
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["events"], 8);
    assert_eq!(stats["headSequence"], 8);
    assert_eq!(stats["heroes"], 1);
    assert_eq!(stats["byType"]["PreToolUse"], 2);
    assert_eq!(stats["bySource"]["hook"], 8);
}

/// A mixed workload of 100,000 events over every source: hook, normalized, factory and
/// coordination (through their routes), and plain API events. The live projections must equal
/// a rebuild from the log, row for row.
#[tokio::test]
async fn a_large_mixed_log_rebuilds_to_exactly_the_live_projections() {
    let app = spawn_app().await;
    let mut total = 0usize;
    let mut batch = Vec::new();
    for i in 0..98_000usize {
        let event = hooklog::bench::rebuild::mixed_event(i);
        batch.push(event);
        if batch.len() == 2000 {
            let events = std::mem::take(&mut batch);
            total += events.len();
            let (status, body) = app.post_json(&Value::Array(events)).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }
    // Coordination commands, decided by the writer.
    for i in 0..1_000 {
        let (status, _) = app
            .post_raw(
                "/claims",
                "application/json",
                json!({"chat": format!("c{}", i % 50), "sessionId": format!("s{}", i % 40)})
                    .to_string()
                    .into_bytes(),
            )
            .await;
        assert!(status == StatusCode::OK || status == StatusCode::CONFLICT);
        app.post_raw("/owners/acquire", "application/json",
            json!({"platform": "x", "account": format!("a{}", i % 20), "pid": i + 1, "hostname": "h"}).to_string().into_bytes())
            .await;
        app.post_raw(
            "/gaps",
            "application/json",
            json!({"platform": "x", "account": format!("a{}", i % 20), "reason": "r"})
                .to_string()
                .into_bytes(),
        )
        .await;
    }
    let events = app.event_count() as usize;
    assert!(events >= 100_000 && total == 98_000, "{events}");
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    let mut conn = rusqlite::Connection::open(&db_path).unwrap();
    let live = dump_projections(&conn);
    assert!(live.len() > 1_000, "{}", live.len());
    let tx = conn.transaction().unwrap();
    let replayed = hooklog::store::rebuild::rebuild(&tx).unwrap();
    assert_eq!(replayed as usize, events);
    assert_eq!(
        dump_projections(&tx),
        live,
        "live projections equal a rebuild"
    );
    drop(tx);
    // Rows held in memory are written and let go of every 7,919 events, and read back.
    let tx = conn.transaction().unwrap();
    let how = hooklog::projection::Replay {
        events_per_flush: 7_919,
        read_beside: false,
    };
    hooklog::store::rebuild::rebuild_with(&tx, how).unwrap();
    assert_eq!(dump_projections(&tx), live, "a rebuild in steps too");
    drop(tx);
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_keeps_a_long_recordings_order_and_takes_factory_envelopes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.ndjson");
    let lines: Vec<String> = (1..=3000)
        .map(|i| json!({"id": format!("e{i:05}"), "type": "note", "sessionId": "s1", "payload": {"i": i}}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let db = dir.path().join("long.db");
    let db_arg = db.to_str().unwrap();
    let imported = hooklog(&["import", file.to_str().unwrap(), "--db", db_arg]);
    assert!(imported.status.success(), "{}", text(&imported));
    let misplaced: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM events WHERE event_id <> printf('e%05d', session_sequence)
                OR sequence <> session_sequence",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(misplaced, 0, "every line lands at its own position");

    // The factory fixture, as FactoryEvent envelopes, imports as it is.
    let factory = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/factory/docs-review-session.ndjson"
    );
    let imported = hooklog(&["import", factory, "--db", db_arg]);
    assert!(
        text(&imported).contains("imported 48, duplicates 0, rejected 0"),
        "{}",
        text(&imported)
    );

    // replay --to sends a factory line to its session's route, its id percent-encoded.
    let app = spawn_app().await;
    let odd = dir.path().join("odd.ndjson");
    let mut envelope: Value = serde_json::from_str(
        std::fs::read_to_string(factory)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    envelope["context"]["sessionId"] = json!("run#7 a/b");
    let mut orphan = envelope.clone();
    orphan["id"] = json!("orphan");
    orphan["context"]
        .as_object_mut()
        .unwrap()
        .remove("sessionId");
    std::fs::write(&odd, format!("{envelope}\n{orphan}\n")).unwrap();
    let replayed = hooklog(&[
        "replay",
        odd.to_str().unwrap(),
        "--to",
        &app.url,
        "--no-delay",
    ]);
    let out = text(&replayed);
    assert!(out.contains("posted 1 of 2"), "{out}");
    assert!(
        out.contains("line 2: a FactoryEvent line must name its session"),
        "{out}"
    );
    let (status, session) = app.get("/factory-sessions/run%237%20a%2Fb").await;
    assert_eq!(status, StatusCode::OK, "{session}");
    assert_eq!(session["eventCount"], 1);
}
