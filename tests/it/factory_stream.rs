//! The rest of seed 003's canonical factory stream, through HTTP: payloads checked against
//! their type's schema, history in tick order, the identity set for browsers (CORS and
//! `GET /factory-sessions/{id}`), the probe on any `Accept` that names JSON, its
//! `INTERNAL_ERROR` outcome, and a restored backup's new stream generation.

use crate::common;

use common::sse::SseReader;
use common::{TestApp, spawn_app, spawn_app_with};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const SESSION: &str = "fs-ticks";
const WAIT: Duration = Duration::from_secs(10);

fn event(id: &str, tick: u64, event_type: &str, payload: Value) -> Value {
    json!({"schemaVersion": "agent-factory.event.v1", "id": id, "type": event_type,
           "context": {"tick": tick, "eventTime": "2026-11-30T09:00:00.000Z"}, "payload": payload})
}

/// A valid `ORCHESTRATOR_PHASE_CHANGED` at `tick`.
fn phase(id: &str, tick: u64) -> Value {
    event(
        id,
        tick,
        "ORCHESTRATOR_PHASE_CHANGED",
        json!({"phaseStatus": "ACTIVE"}),
    )
}

async fn post(app: &TestApp, envelopes: &[Value]) -> (StatusCode, Value) {
    app.post_raw(
        &format!("/factory-sessions/{SESSION}/events"),
        "application/json",
        Value::Array(envelopes.to_vec()).to_string().into_bytes(),
    )
    .await
}

#[tokio::test]
async fn a_payload_that_breaks_its_types_schema_is_refused_by_type_field_and_rule() {
    let app = spawn_app().await;
    let cases = [
        (
            "SESSION_PAUSED",
            json!({"bogus": 1}),
            "payload.status",
            "required",
        ),
        (
            "SESSION_PAUSED",
            json!({"status": "PAUSED", "pausedAt": "2026-11-30T09:00:00Z", "sessionId": SESSION}),
            "payload.sessionId",
            "additionalProperties",
        ),
        (
            "WORK_REQUEST",
            json!({"type": "FACTORY_REQUEST_BATCH", "requestId": "r-1"}),
            "payload.requestId",
            "false",
        ),
        (
            "ARTIFACT_CREATED",
            json!({"artifact": {"id": "a", "kind": "REPORT", "visibility": "PUBLIC"}}),
            "payload.artifact.kind",
            "enum",
        ),
    ];
    for (event_type, payload, field, rule) in cases {
        let (status, body) = post(
            &app,
            &[phase("ok", 0), event("bad", 1, event_type, payload)],
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{event_type}: {body}");
        assert_eq!(body["error"], "invalid_request");
        let details = &body["details"];
        assert_eq!(
            (
                &details["index"],
                &details["type"],
                &details["field"],
                &details["rule"]
            ),
            (&json!(1), &json!(event_type), &json!(field), &json!(rule)),
            "{body}"
        );
        assert!(body["message"].as_str().unwrap().contains(field), "{body}");
    }
    assert_eq!(app.event_count(), 0, "a refused batch stores nothing");
}

#[tokio::test]
async fn history_comes_in_ascending_tick_order_with_ids_that_never_skip_an_event() {
    let app = spawn_app().await;
    // Ticks 5, 2, 3, 3, 1 at positions 1..5.
    let posted: Vec<Value> = [5, 2, 3, 3, 1]
        .iter()
        .enumerate()
        .map(|(i, tick)| phase(&format!("e{}", i + 1), *tick))
        .collect();
    assert_eq!(post(&app, &posted).await.0, StatusCode::OK);
    let path = format!("/factory-sessions/{SESSION}/events");
    let mut reader = SseReader::new(app.stream(&path, &[]).await);
    let frames = reader.events(5, WAIT).await;
    let order: Vec<(i64, i64)> = frames
        .iter()
        .map(|f| {
            let e = f.envelope();
            (
                e["context"]["tick"].as_i64().unwrap(),
                e["context"]["sessionSequence"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [(1, 5), (2, 2), (3, 3), (3, 4), (5, 1)],
        "ties keep the log's order"
    );
    // Each id is the watermark: every position up to it has been sent.
    let ids: Vec<i64> = frames.iter().map(|f| f.position()).collect();
    assert_eq!(ids, [0, 0, 0, 0, 5]);

    // Live events then follow in the log's order, whatever their tick.
    assert_eq!(post(&app, &[phase("late", 0)]).await.0, StatusCode::OK);
    let live = reader.next_event(WAIT).await.unwrap();
    assert_eq!(
        (live.position(), live.envelope()["id"].clone()),
        (6, json!("late"))
    );

    // Reconnecting with an id received mid-history sends everything above it again (so
    // nothing is skipped); the client drops what it has by sessionSequence.
    let mut again = SseReader::new(app.stream(&path, &[("last-event-id", "0")]).await);
    assert_eq!(again.events(6, WAIT).await.len(), 6);
    let mut after = SseReader::new(app.stream(&path, &[("last-event-id", "5")]).await);
    assert_eq!(
        after.next_event(WAIT).await.unwrap().envelope()["id"],
        "late"
    );
}

#[tokio::test]
async fn browsers_can_read_and_send_the_identity_headers_and_the_session_read_carries_them() {
    let origin = "http://localhost:3000";
    let app = spawn_app_with(|c| c.security.cors_origins = vec![origin.to_string()]).await;
    assert_eq!(post(&app, &[phase("e1", 0)]).await.0, StatusCode::OK);
    let preflight = app
        .client
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/factory-sessions/{SESSION}/events", app.url),
        )
        .header("origin", origin)
        .header("access-control-request-method", "GET")
        .header(
            "access-control-request-headers",
            "x-factory-session-stream-generation-id",
        )
        .send()
        .await
        .unwrap();
    let allowed = preflight.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        allowed.contains("x-factory-session-stream-generation-id"),
        "{allowed}"
    );

    let read = app
        .client
        .get(format!("{}/factory-sessions/{SESSION}", app.url))
        .header("origin", origin)
        .send()
        .await
        .unwrap();
    let headers = read.headers().clone();
    let exposed = headers["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    let body: Value = read.json().await.unwrap();
    let identity = &body["streamIdentity"];
    for (header, field) in [
        ("x-factory-session-factory-session-id", "factorySessionId"),
        (
            "x-factory-session-stream-generation-id",
            "streamGenerationId",
        ),
        ("x-factory-session-backend-scope-id", "backendScopeId"),
        (
            "x-factory-session-logical-session-key-id",
            "logicalSessionKeyId",
        ),
    ] {
        assert!(
            exposed.contains(header),
            "{header} is not exposed: {exposed}"
        );
        assert_eq!(
            headers[header].to_str().unwrap(),
            identity[field],
            "{field}"
        );
    }
    // The stream's handshake says the same.
    let stream = app
        .stream(
            &format!("/factory-sessions/{SESSION}/events"),
            &[("origin", origin)],
        )
        .await;
    assert_eq!(
        stream.headers()["x-factory-session-stream-generation-id"]
            .to_str()
            .unwrap(),
        identity["streamGenerationId"]
    );
}

#[tokio::test]
async fn any_accept_that_names_json_gets_the_probe_and_a_failed_read_is_internal_error() {
    let app = spawn_app().await;
    assert_eq!(post(&app, &[phase("e1", 0)]).await.0, StatusCode::OK);
    let path = format!("{}/factory-sessions/{SESSION}/events", app.url);
    for accept in [
        "application/json, text/event-stream",
        "text/event-stream;q=0.9, application/json",
        "APPLICATION/JSON",
    ] {
        let answer = app
            .client
            .get(&path)
            .header("accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(
            answer.headers()["content-type"],
            "application/json",
            "{accept}"
        );
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["outcome"], "STREAM_READY", "{accept}");
    }
    for accept in [
        "text/event-stream",
        "application/json;q=0, text/event-stream",
        "*/*",
    ] {
        let answer = app
            .client
            .get(&path)
            .header("accept", accept)
            .send()
            .await
            .unwrap();
        assert_eq!(
            answer.headers()["content-type"],
            "text/event-stream",
            "{accept}"
        );
    }

    // Take the log away from under the server: the probe's read fails.
    let conn = rusqlite::Connection::open(&app.db_path).unwrap();
    conn.execute_batch("ALTER TABLE events RENAME TO events_away")
        .unwrap();
    let answer = app
        .client
        .get(&path)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        answer.headers()["x-factory-session-factory-session-id"],
        SESSION
    );
    let body: Value = answer.json().await.unwrap();
    assert_eq!(
        (&body["outcome"], &body["error"]),
        (&json!("INTERNAL_ERROR"), &json!("internal"))
    );
    assert_eq!(body["factorySessionId"], SESSION);
    conn.execute_batch("ALTER TABLE events_away RENAME TO events")
        .unwrap();
}

#[tokio::test]
async fn a_database_restored_from_a_backup_has_a_new_stream_generation() {
    let app = spawn_app().await;
    assert_eq!(
        post(&app, &[phase("e1", 0), phase("e2", 1)]).await.0,
        StatusCode::OK
    );
    let backup = app.dir.path().join("backup.db");
    hooklog::cli::backup::BackupArgs {
        file: backup.clone(),
        db: app.db_path.clone(),
    }
    .run()
    .unwrap();
    assert_eq!(post(&app, &[phase("e3", 2)]).await.0, StatusCode::OK);
    let (_, before) = app.get(&format!("/factory-sessions/{SESSION}")).await;
    let old_generation = before["streamIdentity"]["streamGenerationId"].clone();

    // Restore: the backup in place of the database, while hooklog is stopped.
    let db = app.db_path.clone();
    let dir = app.stop().await;
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    std::fs::copy(&backup, &db).unwrap();
    let app = common::start(hooklog::config::Config::for_path(&db), dir).await;
    // The head went back to 2; a new event takes position 3 again, another event than before.
    assert_eq!(
        post(&app, &[phase("e3-after-restore", 5)]).await.0,
        StatusCode::OK
    );
    let probe = app
        .probe(&format!(
            "/factory-sessions/{SESSION}/events?after_sequence=3"
        ))
        .await;
    let generation = probe.headers()["x-factory-session-stream-generation-id"]
        .to_str()
        .unwrap()
        .to_string();
    assert_ne!(
        json!(generation),
        old_generation,
        "old cursors must be invalidated"
    );
    let (_, stats) = app.get("/stats").await;
    assert_eq!(stats["streamGenerationId"], json!(generation));
    let kept: Vec<String> =
        app.strings("SELECT value FROM meta WHERE key = 'backup_of_generation'");
    assert_eq!(json!(kept[0]), old_generation);
}
