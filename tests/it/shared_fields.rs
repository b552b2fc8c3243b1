//! The payload fields an event shares with its session (its session id, transcript path,
//! working directory, permission mode, model) are stored once per session and
//! combination (`payload_shared`, migration 0026), the event name where it is the event's type
//! (0029), and every reader gets each payload whole:
//! REST pages, the session's SSE stream, a duplicate's comparison, `sqlite3` through the
//! `events_whole` view, a rebuild. Retention takes a session's rows with its last event.

use crate::common;

use common::sse::SseReader;
use common::{spawn_app, spawn_app_with, wait_for};
use hooklog::config::Retention;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// A Claude Code hook body as the CLI writes it on the hook's stdin.
fn claude(session: &str, name: &str, mode: &str, cwd: &str, extra: Value) -> Value {
    let mut body = json!({
        "session_id": session,
        "transcript_path": format!("/home/dev/.claude/projects/-home-dev-src-shop/{session}.jsonl"),
        "cwd": cwd,
        "permission_mode": mode,
        "hook_event_name": name,
    });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

/// A session's turn: a prompt, a Bash call, a permission mode change, a call in another
/// directory, and its end.
fn turn(session: &str) -> Vec<Value> {
    let shop = "/home/dev/src/shop";
    vec![
        claude(
            session,
            "SessionStart",
            "default",
            shop,
            json!({"source": "startup", "model": "claude-sonnet-4-5"}),
        ),
        claude(
            session,
            "UserPromptSubmit",
            "default",
            shop,
            json!({"prompt": "Fix the \"rounding\" bug\n"}),
        ),
        claude(
            session,
            "PreToolUse",
            "default",
            shop,
            json!({"tool_name": "Bash", "tool_use_id": format!("{session}-1"), "tool_input": {"command": "cargo test", "cwd": "/not/shared"}}),
        ),
        claude(
            session,
            "PostToolUse",
            "default",
            shop,
            json!({"tool_name": "Bash", "tool_use_id": format!("{session}-1"), "tool_input": {"command": "cargo test"}, "tool_response": {"stdout": "ok", "exitCode": 0}}),
        ),
        claude(
            session,
            "PreToolUse",
            "acceptEdits",
            "/home/dev/src/shop/web",
            json!({"tool_name": "Edit", "tool_use_id": format!("{session}-2"), "tool_input": {"file_path": "a.rs"}}),
        ),
        claude(
            session,
            "Stop",
            "acceptEdits",
            "/home/dev/src/shop/web",
            json!({"stop_hook_active": false}),
        ),
    ]
}

/// The stored rows of a session: each payload as the row holds it, and its `shared` id.
fn rows(app: &common::TestApp, session: &str) -> Vec<(String, Option<i64>)> {
    app.db()
        .prepare("SELECT payload, shared FROM events WHERE session_id = ?1 ORDER BY sequence")
        .unwrap()
        .query_map([session], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test]
async fn shared_fields_are_stored_once_a_session_and_every_reader_gets_the_payload_whole() {
    let app = spawn_app().await;
    for session in ["s-one", "s-two"] {
        for body in turn(session) {
            app.post_hook_ok(body).await;
        }
    }

    // Each event, as REST shows it, carries every field its body had (normalized).
    let (status, page) = app.get("/events?session=s-one&limit=100").await;
    assert_eq!(status, StatusCode::OK);
    let events = page["events"].as_array().unwrap().clone();
    assert_eq!(events.len(), 6, "{page}");
    let mut by_sequence = events.clone();
    by_sequence.sort_by_key(|e| e["context"]["sessionSequence"].as_i64());
    for (event, body) in by_sequence.iter().zip(turn("s-one")) {
        let payload = &event["payload"];
        assert_eq!(payload["sessionId"], "s-one");
        assert_eq!(payload["eventName"], body["hook_event_name"]);
        assert_eq!(payload["cwd"], body["cwd"]);
        assert_eq!(payload["permissionMode"], body["permission_mode"]);
        assert_eq!(payload["transcriptPath"], body["transcript_path"]);
    }
    assert_eq!(by_sequence[0]["payload"]["model"], "claude-sonnet-4-5");
    assert_eq!(
        by_sequence[1]["payload"]["prompt"],
        "Fix the \"rounding\" bug\n"
    );
    assert_eq!(by_sequence[2]["payload"]["toolInput"]["cwd"], "/not/shared");

    // The rows hold only what is the event's own; the shared fields are in one row per
    // combination the session used.
    let stored = rows(&app, "s-one");
    assert_eq!(stored.len(), 6);
    for (payload, shared) in &stored {
        assert!(shared.is_some(), "{payload}");
        let row: Value = serde_json::from_str(payload).unwrap();
        for field in [
            "cwd",
            "model",
            "permissionMode",
            "sessionId",
            "transcriptPath",
        ] {
            assert!(row.get(field).is_none(), "{field} in {payload}");
        }
        // The event name is the row's type (schema 29).
        assert!(row.get("eventName").is_none(), "{payload}");
    }
    assert_eq!(
        stored[2].0,
        r#"{"tool":"Bash","toolInput":{"command":"cargo test","cwd":"/not/shared"},"toolUseId":"s-one-1"}"#
    );
    let combinations = app.strings(
        "SELECT CAST(COUNT(*) AS TEXT) FROM payload_shared WHERE session_id = 's-one'
         UNION ALL SELECT CAST(COUNT(DISTINCT shared) AS TEXT) FROM events WHERE session_id = 's-one'",
    );
    // SessionStart (with its model); the prompt and the Bash call in the shop; the Edit and
    // the Stop in web with acceptEdits: three combinations.
    assert_eq!(combinations, ["3", "3"]);

    // sqlite3 reads the whole payloads through the view.
    let modes = app.strings(
        "SELECT json_extract(payload, '$.permissionMode') || ' ' || json_extract(payload, '$.cwd')
         FROM events_whole WHERE session_id = 's-two' ORDER BY sequence",
    );
    assert_eq!(modes[0], "default /home/dev/src/shop");
    assert_eq!(modes[5], "acceptEdits /home/dev/src/shop/web");
    let names = app.strings(
        "SELECT json_extract(payload, '$.eventName') FROM events_whole
         WHERE session_id = 's-two' ORDER BY sequence",
    );
    let sent: Vec<String> = turn("s-two")
        .iter()
        .map(|b| b["hook_event_name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, sent);

    // The session's stream sends the same payloads as the page.
    let mut reader = SseReader::new(
        app.stream("/sessions/s-one/events?after_sequence=0", &[])
            .await,
    );
    for expected in &by_sequence {
        let sent = reader.next_event(WAIT).await.unwrap().envelope();
        assert_eq!(sent["payload"], expected["payload"]);
        assert_eq!(sent["id"], expected["id"]);
    }

    // A hook re-posted with its id is the same event; with other content, a conflict: both
    // compare against the whole payload.
    let body = claude(
        "s-one",
        "Notification",
        "default",
        "/home/dev/src/shop",
        json!({"message": "waiting"}),
    );
    let post = |body: Value| {
        app.client
            .post(format!("{}/event", app.url))
            .header("x-hooklog-event-id", "notify-1")
            .json(&body)
            .send()
    };
    assert_eq!(post(body.clone()).await.unwrap().status(), StatusCode::OK);
    let again: Value = post(body.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(again["duplicate"], true, "{again}");
    let mut other = body;
    other["cwd"] = json!("/elsewhere");
    assert_eq!(post(other).await.unwrap().status(), StatusCode::CONFLICT);

    // A body's numbers keep the text they were posted with.
    let raw = br#"{"hook_event_name":"PostToolUse","session_id":"s-one","cwd":"/home/dev/src/shop","tool_name":"Bash","tool_use_id":"n-1","tool_response":{"ratio":1.50,"big":123456789012345678901234567890}}"#;
    let (status, _) = app
        .post_raw("/event", "application/json", raw.to_vec())
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, page) = app.get("/events?session=s-one&limit=100").await;
    let posted = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["payload"]["toolUseId"] == "n-1")
        .unwrap();
    assert_eq!(
        posted["payload"]["toolResponse"].to_string(),
        r#"{"big":123456789012345678901234567890,"ratio":1.50}"#
    );

    let db_path = app.db_path.clone();
    let _dir = app.stop().await;
    common::assert_rebuilds_to_live(&db_path);
}

/// `hooklog export --session old` of the file at `db`.
fn export(db: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["export", "--session", "old", "--db"])
        .arg(db)
        .output()
        .expect("run hooklog export")
}

#[tokio::test]
async fn a_file_from_before_keeps_its_whole_payloads_and_new_events_share() {
    let app = spawn_app().await;
    for body in turn("old") {
        app.post_hook_ok(body).await;
    }
    let (_, before) = app.get("/events?session=old&limit=100").await;
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    common::as_schema_25(&rusqlite::Connection::open(&db_path).unwrap());
    // A command that reads the file without migrating it says what to do.
    let refused = export(&db_path);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("schema 25") && said.contains("hooklog serve"),
        "{said}"
    );

    let app = common::start(hooklog::config::Config::for_path(&db_path), dir).await;
    let (_, after) = app.get("/events?session=old&limit=100").await;
    assert_eq!(
        after["events"], before["events"],
        "the upgrade reads the same events"
    );
    let exported = export(&db_path);
    assert!(exported.status.success());
    let mut lines: Vec<Value> = String::from_utf8(exported.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut listed = before["events"].as_array().unwrap().clone();
    let order = |e: &Value| e["context"]["sequence"].as_i64();
    lines.sort_by_key(order);
    listed.sort_by_key(order);
    assert_eq!(lines, listed, "the export reads the same events");
    assert!(rows(&app, "old").iter().all(|(_, shared)| shared.is_none()));
    for body in turn("new") {
        app.post_hook_ok(body).await;
    }
    assert!(rows(&app, "new").iter().all(|(_, shared)| shared.is_some()));
    let db_path = app.db_path.clone();
    let _dir = app.stop().await;
    common::assert_rebuilds_to_live(&db_path);
}

#[tokio::test]
async fn retention_takes_a_sessions_shared_fields_with_its_last_event() {
    let retention = Retention {
        max_events: Some(5),
        max_age: None,
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    for body in turn("gone") {
        app.post_hook_ok(body).await;
    }
    for body in turn("kept") {
        app.post_hook_ok(body).await;
    }
    // 14 events, 5 kept: every event of `gone` and the first three of `kept` are pruned.
    for body in turn("kept").into_iter().take(2) {
        app.post_hook_ok(body).await;
    }
    let sessions = || app.strings("SELECT DISTINCT session_id FROM payload_shared ORDER BY 1");
    wait_for(WAIT, "the gone session's shared fields to go", || {
        sessions() == ["kept"]
    })
    .await;
    // `kept`'s rows stay while any of its events does, and its events still read whole.
    wait_for(WAIT, "pruning to 5 events", || {
        app.strings("SELECT CAST(COUNT(*) AS TEXT) FROM events") == ["5"]
    })
    .await;
    let (_, page) = app.get("/events?session=kept&limit=100").await;
    for event in page["events"].as_array().unwrap() {
        assert_eq!(event["payload"]["sessionId"], "kept", "{event}");
        assert!(event["payload"]["cwd"].is_string(), "{event}");
    }
    // A session whose every event was pruned may speak again, with fields it used before:
    // they are written again (the writer let go of the ids it held when the prune step ran).
    let back = turn("gone").remove(1);
    app.post_hook_ok(back.clone()).await;
    let (_, page) = app.get("/events?session=gone&limit=100").await;
    let events = page["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{page}");
    let payload = &events[0]["payload"];
    assert_eq!(payload["permissionMode"], back["permission_mode"]);
    assert_eq!(payload["cwd"], back["cwd"]);
    assert_eq!(payload["transcriptPath"], back["transcript_path"]);
    assert_eq!(payload["sessionId"], "gone");
    let dangling = app.strings(
        "SELECT CAST(COUNT(*) AS TEXT) FROM events WHERE shared IS NOT NULL
         AND shared NOT IN (SELECT id FROM payload_shared)",
    );
    assert_eq!(dangling, ["0"]);
}
