//! Agent Factory sessions (seed 003) through HTTP: the recorded session posted whole and in
//! pieces, read back as projections and as the session stream.

use crate::common;

use common::sse::SseReader;
use common::{TestApp, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const SESSION: &str = "fs-2f9c41d0-6b1e-4c8a-9e55-0d3b7a1c4e21";

fn recording() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/factory/docs-review-session.ndjson"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn post_envelopes(app: &TestApp, envelopes: &[Value]) -> (StatusCode, Value) {
    let body: Vec<String> = envelopes.iter().map(Value::to_string).collect();
    app.post_raw(
        &format!("/factory-sessions/{SESSION}/events"),
        "application/x-ndjson",
        body.join("\n").into_bytes(),
    )
    .await
}

/// What the projections say about the session: summary, work, dispatches.
async fn projections(app: &TestApp) -> Value {
    let (status, mut session) = app.get(&format!("/factory-sessions/{SESSION}")).await;
    assert_eq!(status, StatusCode::OK, "{session}");
    // The identity set is the database's, not the events'.
    session.as_object_mut().unwrap().remove("streamIdentity");
    let (_, work) = app.get(&format!("/factory-sessions/{SESSION}/work")).await;
    let (_, dispatches) = app
        .get(&format!("/factory-sessions/{SESSION}/dispatches"))
        .await;
    json!({"session": session, "work": work, "dispatches": dispatches})
}

#[tokio::test]
async fn the_recording_projects_its_lifecycle_work_and_dispatches() {
    let app = spawn_app().await;
    let envelopes = recording();
    let (status, answer) = post_envelopes(&app, &envelopes).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let p = projections(&app).await;
    let session = &p["session"];
    assert_eq!(
        session["status"], "FAILED",
        "SESSION_COMPLETED's finalStatus"
    );
    assert_eq!(session["state"], "ended");
    assert_eq!(session["resultStatus"], "FAILED_WITH_PARTIAL");
    assert_eq!(session["startedAt"], "2026-11-30T09:00:02.000Z");
    assert_eq!(session["pausedAt"], "2026-11-30T09:00:25.000Z");
    assert_eq!(session["resumedAt"], "2026-11-30T09:01:01.000Z");
    assert_eq!(session["completedAt"], "2026-11-30T09:01:35.000Z");
    assert_eq!(session["eventCount"], 48);
    assert_eq!(session["work"], json!({"done": 1, "failed": 1}));
    assert_eq!(
        session["dispatches"],
        json!({"COMPLETED": 1, "FAILED": 1, "INTERRUPTED": 1})
    );

    let work = p["work"]["work"].as_array().unwrap();
    assert_eq!(work.len(), 2);
    assert_eq!(
        (
            &work[0]["workId"],
            &work[0]["name"],
            &work[0]["state"],
            &work[0]["placeId"],
            &work[0]["moves"]
        ),
        (
            &json!("w-1"),
            &json!("Review install guide"),
            &json!("done"),
            &json!("p-done"),
            &json!(2)
        )
    );
    assert_eq!(
        (&work[1]["state"], &work[1]["requestId"]),
        (&json!("failed"), &json!("req-work-1"))
    );

    let dispatches = p["dispatches"]["dispatches"].as_array().unwrap();
    let d = |id: &str| {
        dispatches
            .iter()
            .find(|d| d["dispatchId"] == id)
            .unwrap()
            .clone()
    };
    let d1 = d("d-1");
    assert_eq!(
        (
            &d1["state"],
            &d1["outcome"],
            &d1["workerSessionId"],
            &d1["kind"],
            &d1["durationMs"]
        ),
        (
            &json!("COMPLETED"),
            &json!("ACCEPTED"),
            &json!("ws-1"),
            &json!("PETRI_TRANSITION"),
            &json!(13000)
        )
    );
    assert_eq!(d1["workIds"], json!(["w-1"]));
    assert_eq!(d1["events"], 11, "every event naming d-1 counts on it");
    let d2 = d("d-2");
    assert_eq!(
        (&d2["state"], &d2["reason"]),
        (&json!("INTERRUPTED"), &json!("worker lost its connection"))
    );
    assert_eq!(
        (&d("d-3")["state"], &d("d-3")["outcome"]),
        (&json!("FAILED"), &json!("FAILED"))
    );

    let (_, alerts) = app.get("/alerts").await;
    assert_eq!(
        alerts["alerts"],
        json!([]),
        "all 32 factory types are in the catalogue"
    );
}

#[tokio::test]
async fn one_batch_or_many_small_ones_give_the_same_projections_and_twice_adds_nothing() {
    let envelopes = recording();
    let whole = spawn_app().await;
    post_envelopes(&whole, &envelopes).await;
    let pieces = spawn_app().await;
    for chunk in envelopes.chunks(5) {
        let (status, answer) = post_envelopes(&pieces, chunk).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    // One at a time as single JSON objects too, for the last few.
    assert_eq!(projections(&whole).await, projections(&pieces).await);

    let (status, again) = post_envelopes(&whole, &envelopes).await;
    assert_eq!(status, StatusCode::OK);
    let answers = again["events"].as_array().unwrap();
    assert!(answers.iter().all(|a| a["duplicate"] == true));
    assert_eq!(whole.event_count(), 48);
}

#[tokio::test]
async fn a_batch_with_one_bad_envelope_stores_nothing_and_names_it() {
    let app = spawn_app().await;
    let mut envelopes = recording();
    envelopes[7]["context"]["colour"] = json!("blue");
    let (status, body) = post_envelopes(&app, &envelopes).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["details"]["line"], 8);
    assert_eq!(body["details"]["unknownFields"], json!(["context.colour"]));
    assert_eq!(app.event_count(), 0);

    let mut envelopes = recording();
    envelopes[3]["context"]["sessionId"] = json!("someone-else");
    let (status, body) = app
        .post_raw(
            &format!("/factory-sessions/{SESSION}/events"),
            "application/json",
            Value::Array(envelopes).to_string().into_bytes(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (&body["details"]["index"], &body["details"]["field"]),
        (&json!(3), &json!("context.sessionId"))
    );
    for (mutate, field) in [
        (json!({"type": "RUN_STARTED"}), "type"),
        (
            json!({"schemaVersion": "hooklog.event.v1"}),
            "schemaVersion",
        ),
        (json!({"id": ""}), "id"),
        (json!({"payload": "text"}), "payload"),
    ] {
        let mut one = recording()[0].clone();
        for (k, v) in mutate.as_object().unwrap() {
            one[k] = v.clone();
        }
        let (status, body) = post_envelopes(&app, &[one]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}");
        assert_eq!(body["details"]["field"], field);
    }
    assert_eq!(app.event_count(), 0);
}

#[tokio::test]
async fn the_session_stream_gives_back_what_was_posted_with_the_logs_numbers() {
    let app = spawn_app().await;
    // An unknown session first: the probe says so.
    let probe: Value = app
        .probe(&format!("/factory-sessions/{SESSION}/events"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&probe["outcome"], &probe["factorySessionId"]),
        (&json!("UNKNOWN_SESSION"), &json!(SESSION))
    );

    let envelopes = recording();
    post_envelopes(&app, &envelopes).await;
    let response = app
        .stream(&format!("/factory-sessions/{SESSION}/events"), &[])
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers["x-factory-session-factory-session-id"], SESSION);
    let generation = headers["x-hooklog-stream-generation-id"].to_str().unwrap();
    assert_eq!(
        headers["x-factory-session-stream-generation-id"],
        generation
    );
    assert!(headers.contains_key("x-factory-session-backend-scope-id"));
    assert!(headers.contains_key("x-factory-session-logical-session-key-id"));
    let mut reader = SseReader::new(response);
    let frames = reader
        .events(envelopes.len(), Duration::from_secs(10))
        .await;
    for (n, (posted, frame)) in envelopes.iter().zip(frames).enumerate() {
        assert_eq!(frame.event.as_deref(), Some("FactoryEvent"));
        assert_eq!(frame.id, Some((n + 1).to_string()));
        let got: Value = serde_json::from_str(frame.data.as_deref().unwrap()).unwrap();
        assert_eq!(got["schemaVersion"], "agent-factory.event.v1");
        for field in ["id", "type", "payload"] {
            assert_eq!(got[field], posted[field], "{field} of {}", posted["id"]);
        }
        assert_eq!(got["context"]["sessionSequence"], n + 1);
        let mut context = posted["context"].as_object().unwrap().clone();
        let mut returned = got["context"].as_object().unwrap().clone();
        for owned in ["sequence", "sessionSequence"] {
            context.remove(owned);
            returned.remove(owned);
        }
        assert_eq!(
            returned, context,
            "non-sequence context of {}",
            posted["id"]
        );
    }
    // The probe now says the stream is ready, with the same identity headers.
    let probe = app
        .probe(&format!(
            "/factory-sessions/{SESSION}/events?after_sequence=10"
        ))
        .await;
    assert_eq!(
        probe.headers()["x-factory-session-factory-session-id"],
        SESSION
    );
    let body: Value = probe.json().await.unwrap();
    assert_eq!(body["outcome"], "STREAM_READY");
    // The same events in the global page show the factory envelope too.
    let (_, page) = app.get("/events?limit=1").await;
    assert_eq!(page["events"][0]["schemaVersion"], "agent-factory.event.v1");
    assert_eq!(page["events"][0]["context"]["tick"], 0);
}
