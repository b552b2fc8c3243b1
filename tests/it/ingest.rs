//! `POST /events` through the real server: the three body forms, idempotency, atomicity, and
//! refusals that store nothing.

use crate::common;

use common::{assert_gapless, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn object_array_and_ndjson_are_appended_in_order_with_session_sequences() {
    let app = spawn_app().await;
    let (status, one) = app
        .post_json(&json!({"type": "SessionStart", "sessionId": "a"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{one}");
    let (_, array) = app
        .post_json(&json!([
            {"type": "PreToolUse", "sessionId": "a", "payload": {"tool_name": "Bash"}},
            {"type": "PreToolUse", "sessionId": "b"},
        ]))
        .await;
    let (_, lines) = app
        .post_ndjson(&[
            json!({"type": "Stop", "sessionId": "a"}),
            json!({"type": "Notification"}),
        ])
        .await;

    let acks: Vec<&Value> = [&one, &array, &lines]
        .iter()
        .flat_map(|r| r["events"].as_array().unwrap())
        .collect();
    let positions: Vec<(i64, Option<i64>)> = acks
        .iter()
        .map(|a| {
            (
                a["sequence"].as_i64().unwrap(),
                a["sessionSequence"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        positions,
        [
            (1, Some(1)),
            (2, Some(2)),
            (3, Some(1)),
            (4, Some(3)),
            (5, None)
        ]
    );
    assert!(acks.iter().all(|a| a["duplicate"] == false));

    let db = app.db();
    let rows: Vec<(String, String, Option<String>, String)> = db
        .prepare("SELECT event_id, type, session_id, payload FROM events ORDER BY sequence")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let ids: Vec<&str> = acks.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), ids);
    assert_eq!(rows[1].1, "PreToolUse");
    assert_eq!(rows[1].3, r#"{"tool_name":"Bash"}"#);
    assert_eq!(rows[4].2, None);
    assert_eq!(assert_gapless(&db), 5);
}

#[tokio::test]
async fn payload_numbers_keep_their_full_precision() {
    let app = spawn_app().await;
    let body = br#"{"id":"n","type":"Stop","payload":{"big":123456789012345678901234567890,"tiny":1e-400,"huge":1e400,"f":0.1,"one":1.0}}"#;
    let (status, answer) = app
        .post_raw("/events", "application/json", body.to_vec())
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let payload: String = app
        .db()
        .query_row("SELECT payload FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        payload,
        r#"{"big":123456789012345678901234567890,"f":0.1,"huge":1e+400,"one":1.0,"tiny":1e-400}"#
    );
    let valid: bool = app
        .db()
        .query_row("SELECT json_valid(payload) FROM events", [], |r| r.get(0))
        .unwrap();
    assert!(valid);
    // The same document again is the same event, not a conflict.
    let (_, again) = app
        .post_raw("/events", "application/json", body.to_vec())
        .await;
    assert_eq!(again["events"][0]["duplicate"], true);
}

#[tokio::test]
async fn generated_ids_are_time_ordered_uuid_v7() {
    let app = spawn_app().await;
    let batch: Vec<Value> = (0..20).map(|_| json!({"type": "Stop"})).collect();
    let (_, body) = app.post_json(&Value::Array(batch)).await;
    let ids: Vec<String> = body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect();
    for id in &ids {
        assert_eq!(
            uuid::Uuid::parse_str(id).unwrap().get_version_num(),
            7,
            "{id}"
        );
    }
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(sorted, ids, "ids sort in sequence order");
}

#[tokio::test]
async fn reposting_an_acknowledged_id_appends_nothing_and_returns_its_position() {
    let app = spawn_app().await;
    let event =
        json!({"id": "evt-1", "type": "PreToolUse", "sessionId": "s", "payload": {"b": 1, "a": 2}});
    let (_, first) = app.post_json(&event).await;
    // Same document, keys in another order: still the same event.
    let reordered =
        json!({"payload": {"a": 2, "b": 1}, "sessionId": "s", "type": "PreToolUse", "id": "evt-1"});
    let (status, again) = app.post_json(&reordered).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["events"][0]["duplicate"], true);
    assert_eq!(
        again["events"][0]["sequence"],
        first["events"][0]["sequence"]
    );
    assert_eq!(again["events"][0]["sessionSequence"], 1);
    // A duplicate inside a batch next to a new event: only the new one is appended.
    let (_, mixed) = app
        .post_ndjson(&[event.clone(), json!({"type": "Stop", "sessionId": "s"})])
        .await;
    assert_eq!(mixed["events"][0]["duplicate"], true);
    assert_eq!(mixed["events"][1]["sequence"], 2);
    assert_eq!(mixed["events"][1]["sessionSequence"], 2);
    assert_eq!(app.event_count(), 2);
}

#[tokio::test]
async fn a_conflicting_repost_is_409_and_stores_nothing_from_its_request() {
    let app = spawn_app().await;
    app.post_json(&json!({"id": "evt-1", "type": "Stop", "payload": {"n": 1}}))
        .await;
    let (status, body) = app
        .post_json(&json!([
            {"id": "new-1", "type": "Stop", "sessionId": "s"},
            {"id": "evt-1", "type": "Stop", "payload": {"n": 2}},
        ]))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "conflict");
    assert_eq!(body["details"]["index"], 1);
    assert_eq!(body["details"]["id"], "evt-1");
    assert_eq!(body["details"]["sequence"], 1);
    assert_eq!(
        app.event_count(),
        1,
        "the new event of the refused request was not kept"
    );
    // The sequence the rolled-back event would have had is reused: the log stays gapless.
    let (_, next) = app
        .post_json(&json!({"type": "Stop", "sessionId": "s"}))
        .await;
    assert_eq!(next["events"][0]["sequence"], 2);
    assert_eq!(next["events"][0]["sessionSequence"], 1);
    // The same new id twice in one request with different content: refused, nothing stored.
    let (status, body) = app
        .post_json(&json!([
            {"id": "twin", "type": "Stop"},
            {"type": "Stop"},
            {"id": "twin", "type": "Stop", "payload": {"other": true}},
        ]))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["details"]["firstIndex"], 0);
    assert_eq!(body["details"]["index"], 2);
    assert!(
        body["details"].get("sequence").is_none(),
        "no position: it was undone"
    );
    assert_eq!(app.event_count(), 2);
    // Same id with another eventTime than the stored one is a conflict too.
    let (status, _) = app
        .post_json(&json!({"id": "evt-1", "type": "Stop", "payload": {"n": 1}, "eventTime": "2020-01-01T00:00:00Z"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn an_invalid_line_inside_an_ndjson_batch_stores_nothing_from_that_batch() {
    let app = spawn_app().await;
    let body = "{\"type\":\"Stop\",\"sessionId\":\"s\"}\n{\"type\":\"Stop\"}\n{\"type\": \n{\"type\":\"Stop\"}\n";
    let (status, answer) = app
        .post_raw("/events", "application/x-ndjson", body.into())
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["error"], "invalid_request");
    assert_eq!(answer["details"]["line"], 3);
    let body = "{\"type\":\"Stop\"}\n{\"type\":\"Stop\",\"sessionId\":42}\n";
    let (status, answer) = app
        .post_raw("/events", "application/x-ndjson", body.into())
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["details"]["line"], 2);
    assert_eq!(answer["details"]["field"], "sessionId");
    assert_eq!(app.event_count(), 0);
}

#[tokio::test]
async fn bad_input_is_refused_with_the_envelope_and_changes_nothing() {
    let app = spawn_app().await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_payload = format!(
        r#"{{"type":"Stop","payload":{{"a":{}1{}}}}}"#,
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    let mut invalid_utf8 = br#"{"type":"Stop","payload":{"s":""#.to_vec();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    invalid_utf8.extend_from_slice(br#""}}"#);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not JSON", b"type=Stop".to_vec()),
        ("empty body", Vec::new()),
        ("truncated", br#"{"type":"Stop""#.to_vec()),
        ("a string", br#""Stop""#.to_vec()),
        ("null", b"null".to_vec()),
        ("an empty array", b"[]".to_vec()),
        ("array of numbers", b"[1,2]".to_vec()),
        ("missing type", br#"{"payload":{}}"#.to_vec()),
        ("empty type", br#"{"type":""}"#.to_vec()),
        ("numeric type", br#"{"type":12}"#.to_vec()),
        ("object id", br#"{"type":"Stop","id":{}}"#.to_vec()),
        ("empty id", br#"{"type":"Stop","id":""}"#.to_vec()),
        (
            "numeric session",
            br#"{"type":"Stop","sessionId":1}"#.to_vec(),
        ),
        (
            "bad time",
            br#"{"type":"Stop","eventTime":"soon"}"#.to_vec(),
        ),
        (
            "numeric time",
            br#"{"type":"Stop","eventTime":1700000000}"#.to_vec(),
        ),
        (
            "array payload",
            br#"{"type":"Stop","payload":[1]}"#.to_vec(),
        ),
        (
            "boolean source",
            br#"{"type":"Stop","source":true}"#.to_vec(),
        ),
        (
            "unknown field",
            br#"{"type":"Stop","session_id":"s"}"#.to_vec(),
        ),
        (
            "unknown context field",
            br#"{"type":"Stop","context":{"tick":0}}"#.to_vec(),
        ),
        (
            "foreign schema",
            br#"{"type":"Stop","schemaVersion":"agent-factory.event.v1"}"#.to_vec(),
        ),
        (
            "huge type",
            format!(r#"{{"type":"{}"}}"#, "t".repeat(10_000)).into_bytes(),
        ),
        ("deep nesting", deep.into_bytes()),
        ("deep payload", deep_payload.into_bytes()),
        ("invalid UTF-8", invalid_utf8),
        (
            "second item bad",
            br#"[{"type":"Stop"},{"type":null}]"#.to_vec(),
        ),
    ];
    for (name, body) in cases {
        let (status, answer) = app.post_raw("/events", "application/json", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {answer}");
        assert_eq!(answer["error"], "invalid_request", "{name}");
        assert!(
            answer["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{name}"
        );
        assert!(answer["details"].is_object(), "{name}");
    }
    assert_eq!(app.event_count(), 0);
    let (_, health) = app.get("/health").await;
    assert_eq!(health["headSequence"], 0);
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_and_stores_nothing() {
    let app = common::spawn_app_with(|c| c.body_limit = 64 * 1024).await;
    let big = json!({"type": "Stop", "payload": {"blob": "x".repeat(70 * 1024)}});
    let (status, answer) = app.post_json(&big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer["error"], "payload_too_large");
    assert_eq!(answer["details"]["limitBytes"], 64 * 1024);
    let fits = json!({"type": "Stop", "payload": {"blob": "x".repeat(60 * 1024)}});
    assert_eq!(app.post_json(&fits).await.0, StatusCode::OK);
    assert_eq!(app.event_count(), 1);
}

#[tokio::test]
async fn an_unknown_type_is_stored_and_raises_an_alert() {
    let app = spawn_app().await;
    let (_, ack) = app
        .post_json(&json!({"type": "SomethingNew", "sessionId": "s", "source": "probe"}))
        .await;
    let (_, known) = app.post_json(&json!({"type": "PreToolUse"})).await;
    assert_eq!(known["events"][0]["sequence"], 2);
    assert_eq!(app.event_count(), 2);
    let (status, alerts) = app.get("/alerts").await;
    assert_eq!(status, StatusCode::OK);
    let alerts = alerts["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "only the unknown type raises an alert");
    assert_eq!(alerts[0]["kind"], "unknownEventType");
    assert_eq!(alerts[0]["eventId"], ack["events"][0]["id"]);
    assert_eq!(alerts[0]["eventSequence"], 1);
    assert_eq!(alerts[0]["sessionId"], "s");
    assert_eq!(alerts[0]["details"]["type"], "SomethingNew");
    let kind: String = app
        .db()
        .query_row("SELECT kind FROM alerts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kind, "unknownEventType");
}

#[tokio::test]
async fn an_envelope_read_back_imports_into_another_database_unchanged() {
    let source = spawn_app().await;
    let (_, ack) = source
        .post_json(&json!({"type": "PreToolUse", "sessionId": "s", "eventTime": "2026-01-02T03:04:05.678+01:00",
                           "source": "hook", "payload": {"tool_name": "Bash"}}))
        .await;
    let id = ack["events"][0]["id"].as_str().unwrap().to_string();
    let (_, original) = source.get(&format!("/events/{id}")).await;
    assert_eq!(original["context"]["eventTime"], "2026-01-02T02:04:05.678Z");

    let copy = spawn_app().await;
    copy.post_json(&json!({"type": "Stop", "sessionId": "other"}))
        .await;
    let (status, imported) = copy.post_json(&original).await;
    assert_eq!(status, StatusCode::OK, "{imported}");
    assert_eq!(
        imported["events"][0]["sequence"], 2,
        "positions are the new log's"
    );
    let (_, copied) = copy.get(&format!("/events/{id}")).await;
    assert_eq!(
        copied["context"]["receivedAt"],
        original["context"]["receivedAt"]
    );
    assert_eq!(
        copied["context"]["eventTime"],
        original["context"]["eventTime"]
    );
    assert_eq!(copied["payload"], original["payload"]);
    assert_eq!(copied["context"]["source"], "hook");
    assert_eq!(copied["context"]["sessionSequence"], 1);
    // Importing it again adds nothing.
    let (_, again) = copy.post_json(&original).await;
    assert_eq!(again["events"][0]["duplicate"], true);
    assert_eq!(copy.event_count(), 2);
}

#[tokio::test]
async fn a_recorded_claude_code_session_replays_in_order_and_idempotently() {
    let app = spawn_app().await;
    let recording = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/claude-code-session.ndjson"
    ))
    .unwrap();
    let lines: Vec<Value> = recording
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let (status, first) = app
        .post_raw("/events", "application/x-ndjson", recording.clone())
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (_, again) = app
        .post_raw("/events", "application/x-ndjson", recording)
        .await;
    assert!(
        again["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["duplicate"] == true)
    );
    assert_eq!(app.event_count(), lines.len() as i64);

    let (_, page) = app
        .get(&format!(
            "/events?session={}",
            lines[0]["sessionId"].as_str().unwrap()
        ))
        .await;
    let stored = page["events"].as_array().unwrap();
    assert_eq!(stored.len(), lines.len());
    for (n, (line, event)) in lines.iter().zip(stored).enumerate() {
        assert_eq!(event["id"], line["id"]);
        assert_eq!(event["context"]["sessionSequence"], n + 1);
        assert_eq!(event["context"]["eventTime"], line["eventTime"]);
        assert_eq!(event["payload"], line["payload"], "payload kept as sent");
    }
    let (_, alerts) = app.get("/alerts").await;
    assert_eq!(
        alerts["alerts"],
        json!([]),
        "every Claude Code hook event is in the catalogue"
    );
}
