//! `GET /metrics`: after known traffic, each counter equals what was sent.

use crate::common;

use common::sse::SseReader;
use common::{TestApp, spawn_app_with};
use hooklog::config::Secret;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const TOKEN: &str = "metrics-secret";
const DEADLINE: Duration = Duration::from_secs(10);

async fn spawn() -> TestApp {
    spawn_app_with(|c| c.security.token = Some(Secret(TOKEN.into()))).await
}

async fn send(app: &TestApp, method: &str, path: &str, body: Option<Value>) -> StatusCode {
    let url = format!("{}{path}", app.url);
    let request = match method {
        "POST" => app.client.post(url).body(body.unwrap().to_string()),
        _ => app.client.get(url),
    };
    request.bearer_auth(TOKEN).send().await.unwrap().status()
}

async fn get_json(app: &TestApp, path: &str) -> Value {
    let response = app.client.get(format!("{}{path}", app.url));
    let response = response.bearer_auth(TOKEN).send().await.unwrap();
    response.json().await.unwrap()
}

/// Session `s1`'s event stream, from its start.
async fn session_stream(app: &TestApp) -> SseReader {
    let response = app
        .client
        .get(format!("{}/sessions/s1/events", app.url))
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    SseReader::new(response)
}

/// Every sample of a scrape, keyed by its name and labels as written
/// (`hooklog_http_refusals_total{status="400"}`).
async fn scrape(app: &TestApp) -> BTreeMap<String, f64> {
    let response = app.client.get(format!("{}/metrics", app.url));
    let response = response.bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (key, value) = line.rsplit_once(' ').expect("a sample line");
            (key.to_string(), value.parse().expect("a number"))
        })
        .collect()
}

fn value(samples: &BTreeMap<String, f64>, key: &str) -> f64 {
    *samples
        .get(key)
        .unwrap_or_else(|| panic!("{key} missing from {samples:#?}"))
}

#[tokio::test]
async fn counters_equal_the_traffic_sent() {
    let app = spawn().await;
    let first = json!([
        {"id": "a", "type": "PreToolUse", "sessionId": "s1", "source": "api"},
        {"id": "b", "type": "made_up", "sessionId": "s1"},
        {"id": "c", "type": "SessionStart", "source": "my-own-script"},
        {"id": "d", "type": "stuck", "source": "normalized"},
    ]);
    assert_eq!(
        send(&app, "POST", "/events", Some(first)).await,
        StatusCode::OK
    );
    // The same ids again: two duplicates, nothing appended.
    let again = json!([
        {"id": "a", "type": "PreToolUse", "sessionId": "s1", "source": "api"},
        {"id": "b", "type": "made_up", "sessionId": "s1"},
    ]);
    assert_eq!(
        send(&app, "POST", "/events", Some(again)).await,
        StatusCode::OK
    );
    // A known id with other content: a conflict, refused whole.
    let conflict = json!({"id": "a", "type": "PostToolUse", "sessionId": "s1"});
    let status = send(&app, "POST", "/events", Some(conflict)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let status = send(&app, "POST", "/events", Some(json!("not an object"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        send(&app, "GET", "/no-such-route", None).await,
        StatusCode::NOT_FOUND
    );
    let anonymous = app.client.get(format!("{}/events", app.url)).send().await;
    assert_eq!(anonymous.unwrap().status(), StatusCode::UNAUTHORIZED);

    let samples = scrape(&app).await;
    let appended = |source: &str, family: &str| {
        let key =
            format!("hooklog_events_appended_total{{family=\"{family}\",source=\"{source}\"}}");
        value(&samples, &key)
    };
    assert_eq!(appended("api", "hook"), 1.0);
    assert_eq!(
        appended("other", "hook"),
        1.0,
        "a source of its own is folded into other"
    );
    assert_eq!(appended("api", "unknown"), 1.0);
    assert_eq!(appended("normalized", "normalized"), 1.0);
    let refused = |status: &str| {
        value(
            &samples,
            &format!("hooklog_http_refusals_total{{status=\"{status}\"}}"),
        )
    };
    assert_eq!(refused("400"), 1.0);
    assert_eq!(refused("401"), 1.0);
    assert_eq!(refused("404"), 1.0);
    assert_eq!(refused("409"), 1.0);
    assert_eq!(value(&samples, "hooklog_events_duplicate_total"), 2.0);
    assert_eq!(value(&samples, "hooklog_events_conflict_total"), 1.0);
    assert_eq!(value(&samples, "hooklog_head_sequence"), 4.0);
    // Three requests reached the writer one after the other: three commits, four events.
    assert_eq!(value(&samples, "hooklog_writer_batch_events_count"), 3.0);
    assert_eq!(value(&samples, "hooklog_writer_batch_events_sum"), 4.0);
    assert_eq!(value(&samples, "hooklog_writer_commit_seconds_count"), 3.0);
    assert_eq!(value(&samples, "hooklog_writer_queue_depth"), 0.0);
    assert!(
        value(&samples, "hooklog_wal_bytes") > 0.0,
        "the WAL holds the commits"
    );
    assert_eq!(value(&samples, "hooklog_retention_pruned_total"), 0.0);

    // Alerts open by kind: exactly what GET /alerts lists unacknowledged.
    let alerts = get_json(&app, "/alerts?unacknowledged=true").await;
    let mut kinds: BTreeMap<String, f64> = BTreeMap::new();
    for alert in alerts["alerts"].as_array().unwrap() {
        *kinds
            .entry(alert["kind"].as_str().unwrap().into())
            .or_default() += 1.0;
    }
    assert_eq!(kinds.get("unknownEventType"), Some(&1.0), "{alerts}");
    for (kind, count) in &kinds {
        let key = format!("hooklog_alerts_open{{kind=\"{kind}\"}}");
        assert_eq!(value(&samples, &key), *count, "{kind}");
    }
}

#[tokio::test]
async fn a_stream_counts_while_open_and_its_history_rows_once_served() {
    let app = spawn().await;
    let events: Vec<Value> = (0..3)
        .map(|i| json!({"type": "PostToolUse", "sessionId": "s1", "payload": {"i": i}}))
        .collect();
    let status = send(&app, "POST", "/events", Some(Value::Array(events))).await;
    assert_eq!(status, StatusCode::OK);
    let mut stream = session_stream(&app).await;
    assert_eq!(stream.events(3, DEADLINE).await.len(), 3);

    let samples = scrape(&app).await;
    assert_eq!(value(&samples, "hooklog_streams_open"), 1.0);
    assert_eq!(value(&samples, "hooklog_stream_catchup_rows_total"), 3.0);
    assert_eq!(value(&samples, "hooklog_stream_fell_behind_total"), 0.0);

    drop(stream);
    let mut open = 1.0;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while open != 0.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stream never closed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
        open = value(&scrape(&app).await, "hooklog_streams_open");
    }
}

#[tokio::test]
async fn metrics_want_the_token() {
    let app = spawn().await;
    let response = app.client.get(format!("{}/metrics", app.url)).send().await;
    assert_eq!(response.unwrap().status(), StatusCode::UNAUTHORIZED);
}

/// Every event's stages are timed (issue 41): each event stored through HTTP is counted once in
/// each writer stage, and each one a stream sent live once in `deliver`.
#[tokio::test]
async fn every_stored_event_is_counted_once_in_each_of_its_stages() {
    let app = spawn().await;
    let hook = json!({"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash",
        "tool_input": {"command": "ls"}});
    assert_eq!(
        send(&app, "POST", "/event", Some(hook)).await,
        StatusCode::OK
    );
    let mut stream = session_stream(&app).await;
    // The first is history: once it is read, the stream is following the hub, so the next
    // two reach it live.
    assert_eq!(stream.events(1, DEADLINE).await.len(), 1);
    let two = json!([
        {"type": "note", "sessionId": "s1", "payload": {"i": 1}},
        {"type": "note", "sessionId": "s1", "payload": {"i": 2}},
    ]);
    assert_eq!(
        send(&app, "POST", "/events", Some(two)).await,
        StatusCode::OK
    );
    assert_eq!(stream.events(2, DEADLINE).await.len(), 2);

    // The writer counts a batch's stages once its callers are answered: wait for the last.
    let key = |series: &str, stage: &str| {
        format!("hooklog_event_stage_seconds_{series}{{stage=\"{stage}\"}}")
    };
    let mut samples = scrape(&app).await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while samples.get(&key("count", "derive")) != Some(&3.0) {
        assert!(tokio::time::Instant::now() < deadline, "{samples:#?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
        samples = scrape(&app).await;
    }
    let count = |stage: &str| value(&samples, &key("count", stage));
    let sum = |stage: &str| value(&samples, &key("sum", stage));
    for stage in ["receive", "queue", "apply", "commit", "derive", "publish"] {
        assert_eq!(count(stage), 3.0, "{stage}: {samples:#?}");
    }
    assert_eq!(count("deliver"), 2.0, "{samples:#?}");
    for stage in ["receive", "apply", "commit", "derive"] {
        assert!(sum(stage) > 0.0, "{stage} took no time: {samples:#?}");
    }
}
