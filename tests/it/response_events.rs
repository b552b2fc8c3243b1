//! Seed 003's ephemeral response-event stream through HTTP: `FactoryResponseEvent`s posted
//! and validated, streamed back history-then-live, kept out of the log and its projections,
//! pruned by their own retention, and a reconnect across retention that gets `STREAM_GAP`
//! (sequence 0) first, then what is retained.

use crate::common;

use common::sse::SseReader;
use common::{TestApp, spawn_app, spawn_app_with, wait_for};
use hooklog::response::Retention;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const SESSION: &str = "fs-responses";
const WAIT: Duration = Duration::from_secs(10);

fn record(id: &str, kind: &str, phase: &str, payload: Value) -> Value {
    json!({"schemaVersion": "agent-factory.response-event.v1", "eventId": id,
           "recordedAt": "2026-11-30T09:00:00.000Z", "runId": "run-1", "kind": kind, "phase": phase,
           "provenance": {"provider": "codex", "nativeEventType": "item/agentMessage/delta",
                          "delivery": "NATIVE_STREAM", "representation": "DELTA", "fidelity": "LOSSLESS"},
           "payload": payload, "itemId": "item-1"})
}

fn delta(id: &str, text: &str) -> Value {
    record(
        id,
        "MESSAGE",
        "DELTA",
        json!({"contentBlockIndex": 0, "contentBlockKind": "TEXT", "textDelta": text}),
    )
}

async fn post(app: &TestApp, records: &[Value]) -> (StatusCode, Value) {
    let lines: Vec<String> = records.iter().map(Value::to_string).collect();
    app.post_raw(
        &format!("/factory-sessions/{SESSION}/response-events"),
        "application/x-ndjson",
        lines.join("\n").into_bytes(),
    )
    .await
}

fn stored(app: &TestApp) -> i64 {
    app.db()
        .query_row("SELECT COUNT(*) FROM response_events", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn response_events_stream_back_with_their_session_numbers_then_live() {
    let app = spawn_app().await;
    let (status, answer) = post(&app, &[delta("r1", "Hel"), delta("r2", "lo")]).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["events"][1],
        json!({"eventId": "r2", "sequence": 2, "duplicate": false})
    );

    let path = format!("/factory-sessions/{SESSION}/response-events");
    let response = app.stream(&path, &[]).await;
    assert_eq!(
        response.headers()["x-factory-session-factory-session-id"],
        SESSION
    );
    assert!(
        response
            .headers()
            .contains_key("x-factory-session-stream-generation-id")
    );
    let mut reader = SseReader::new(response);
    let frames = reader.events(2, WAIT).await;
    for (n, frame) in frames.iter().enumerate() {
        assert_eq!(frame.event.as_deref(), Some("FactoryResponseEvent"));
        assert_eq!(frame.position(), n as i64 + 1);
        let e = frame.envelope();
        assert_eq!(
            (&e["sequence"], &e["factorySessionId"]),
            (&json!(n + 1), &json!(SESSION))
        );
        hooklog::ingest::schema::check_named("FactoryResponseEvent", &e).unwrap();
    }
    assert_eq!(frames[0].envelope()["payload"]["textDelta"], "Hel");

    let tool = record(
        "r3",
        "TOOL",
        "STARTED",
        json!({"toolCallId": "t1", "toolName": "shell"}),
    );
    assert_eq!(post(&app, &[tool]).await.0, StatusCode::OK);
    let live = reader.next_event(WAIT).await.unwrap();
    assert_eq!(
        (live.position(), live.envelope()["kind"].clone()),
        (3, json!("TOOL"))
    );

    // Never part of the canonical log or its projections.
    assert_eq!(app.event_count(), 0);
    let (status, _) = app.get(&format!("/sessions/{SESSION}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let dir = app.stop().await;
    common::assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}

#[tokio::test]
async fn bad_records_are_refused_whole_and_a_known_event_id_is_a_duplicate() {
    let app = spawn_app().await;
    let mut bad_phase = delta("r2", "x");
    bad_phase["phase"] = json!("COMPLETED");
    let (status, body) = post(&app, &[delta("r1", "a"), bad_phase]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        (
            &body["details"]["line"],
            &body["details"]["type"],
            &body["details"]["schema"]
        ),
        (
            &json!(2),
            &json!("MESSAGE COMPLETED"),
            &json!("FactoryResponseEventMessagePayload")
        )
    );
    let mut unknown_kind = delta("r2", "x");
    unknown_kind["kind"] = json!("GOSSIP");
    let (_, body) = post(&app, &[unknown_kind]).await;
    assert_eq!(
        (&body["details"]["field"], &body["details"]["rule"]),
        (&json!("kind"), &json!("enum"))
    );
    assert_eq!(stored(&app), 0);

    assert_eq!(post(&app, &[delta("r1", "a")]).await.0, StatusCode::OK);
    let (status, again) = post(&app, &[delta("r1", "a")]).await;
    assert_eq!(
        (status, &again["events"][0]["duplicate"]),
        (StatusCode::OK, &json!(true))
    );
    let (status, conflict) = post(&app, &[delta("r1", "b")]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{conflict}");
    assert_eq!(stored(&app), 1);
}

#[tokio::test]
async fn a_reconnect_older_than_retention_gets_stream_gap_first_then_the_retained_events() {
    let app = spawn_app_with(|c| {
        c.response_retention = Retention {
            max_age: None,
            max_per_session: Some(3),
        };
    })
    .await;
    let path = format!("/factory-sessions/{SESSION}/response-events");
    // An EventSource that saw event 1, then lost its connection.
    post(&app, &[delta("r1", "a")]).await;
    let mut first = SseReader::new(app.stream(&path, &[]).await);
    let seen = first.next_event(WAIT).await.unwrap().id.unwrap();
    drop(first);
    let more: Vec<Value> = (2..=5).map(|i| delta(&format!("r{i}"), "x")).collect();
    assert_eq!(post(&app, &more).await.0, StatusCode::OK);
    wait_for(WAIT, "pruning to keep 3", || stored(&app) == 3).await;

    let probe: Value = app
        .probe(&format!("{path}?after_sequence={seen}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(probe["outcome"], "STREAM_READY");
    assert_eq!(
        probe["gap"],
        json!({"fromSequence": 2, "toSequence": 2, "firstAvailableSequence": 3})
    );

    // It reconnects as an EventSource does: the same URL, Last-Event-ID the last id it saw.
    let mut reader = SseReader::new(app.stream(&path, &[("last-event-id", &seen)]).await);
    let gap = reader.next_event(WAIT).await.unwrap();
    assert_eq!(
        (gap.id.as_deref(), gap.event.as_deref()),
        (Some("0"), Some("FactoryResponseEvent"))
    );
    let record = gap.envelope();
    assert_eq!(
        (&record["sequence"], &record["kind"]),
        (&json!(0), &json!("STREAM_GAP"))
    );
    assert_eq!(record["payload"], probe["gap"]);
    hooklog::ingest::schema::check_named("FactoryResponseEvent", &record).unwrap();
    let retained: Vec<i64> = reader
        .events(3, WAIT)
        .await
        .iter()
        .map(|f| f.position())
        .collect();
    assert_eq!(retained, [3, 4, 5]);

    // Caught up: the next reconnect (with the last id) has no gap, and live events follow.
    let mut resumed = SseReader::new(app.stream(&path, &[("last-event-id", "5")]).await);
    post(&app, &[delta("r6", "y")]).await;
    let next = resumed.next_event(WAIT).await.unwrap();
    assert_eq!(
        (next.position(), next.envelope()["eventId"].clone()),
        (6, json!("r6"))
    );

    // A cursor beyond the head is stale; a session never seen is unknown.
    let stale = app.stream(&format!("{path}?after_sequence=99"), &[]).await;
    assert_eq!(stale.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        stale.headers()["x-factory-session-factory-session-id"],
        SESSION
    );
    let body: Value = stale.json().await.unwrap();
    assert_eq!(
        (&body["outcome"], &body["headSequence"]),
        (&json!("CURSOR_STALE"), &json!(6))
    );
    let unknown: Value = app
        .probe("/factory-sessions/nobody/response-events")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(unknown["outcome"], "UNKNOWN_SESSION");
}

#[tokio::test]
async fn response_events_older_than_their_max_age_are_pruned_and_numbering_goes_on() {
    let app = spawn_app_with(|c| {
        c.response_retention = Retention {
            max_age: Some(Duration::from_millis(200)),
            max_per_session: None,
        };
    })
    .await;
    post(&app, &[delta("r1", "a"), delta("r2", "b")]).await;
    wait_for(WAIT, "age pruning", || stored(&app) == 0).await;
    let (_, answer) = post(&app, &[delta("r3", "c")]).await;
    assert_eq!(
        answer["events"][0]["sequence"], 3,
        "positions never restart"
    );
}
