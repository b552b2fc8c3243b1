//! Event streams through the real server: history then live on one connection, cursors and
//! their precedence, stale cursors, the JSON probe, keepalives, shutdown, and no gap or
//! duplicate under concurrent writers and reconnecting readers.

use crate::common;

use common::sse::SseReader;
use common::{spawn_app, spawn_app_with};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_session_stream_replays_history_then_continues_live_on_one_connection() {
    let app = spawn_app().await;
    let acks = app.post_session_events("a", 5).await;
    app.post_session_events("other", 3).await;
    let response = app.stream("/sessions/a/events", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let generation = response.headers()["x-hooklog-stream-generation-id"]
        .to_str()
        .unwrap()
        .to_string();
    let mut reader = SseReader::new(response);
    let hint = reader.next(WAIT).await.unwrap();
    assert_eq!(hint.retry, Some(1000), "a retry hint comes first");

    let history = reader.events(5, WAIT).await;
    assert_eq!(
        history.iter().map(|f| f.position()).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    for (frame, ack) in history.iter().zip(&acks) {
        assert_eq!(frame.event.as_deref(), Some("PostToolUse"));
        let envelope = frame.envelope();
        assert_eq!(envelope["id"], ack["id"]);
        assert_eq!(envelope["context"]["sessionSequence"], frame.position());
        assert_eq!(envelope["context"]["sessionId"], "a");
    }
    let live_acks = app.post_session_events("a", 3).await;
    app.post_session_events("other", 2).await;
    let live = reader.events(3, WAIT).await;
    assert_eq!(
        live.iter().map(|f| f.position()).collect::<Vec<_>>(),
        [6, 7, 8]
    );
    assert_eq!(live[2].envelope()["id"], live_acks[2]["id"]);
    assert_eq!(
        app.get("/stats").await.1["streamGenerationId"],
        generation.as_str()
    );
}

#[tokio::test]
async fn cursors_start_after_the_named_event_and_last_event_id_wins() {
    let app = spawn_app().await;
    let acks = app.post_session_events("s", 6).await;
    let id = |n: usize| acks[n - 1]["id"].as_str().unwrap().to_string();
    let first_position = |path: String, headers: Vec<(&'static str, String)>| {
        let app = &app;
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let mut reader = SseReader::new(app.stream(&path, &headers).await);
            reader.next_event(WAIT).await.unwrap().position()
        }
    };
    assert_eq!(first_position("/sessions/s/events".into(), vec![]).await, 1);
    assert_eq!(
        first_position("/sessions/s/events?after_sequence=3".into(), vec![]).await,
        4
    );
    assert_eq!(
        first_position(
            format!("/sessions/s/events?after_event_id={}", id(2)),
            vec![]
        )
        .await,
        3
    );
    // Both cursors: the event id wins.
    let both = format!(
        "/sessions/s/events?after_sequence=4&after_event_id={}",
        id(1)
    );
    assert_eq!(first_position(both.clone(), vec![]).await, 2);
    // Last-Event-ID (what EventSource resends with the original URL) wins over both.
    assert_eq!(
        first_position(both.clone(), vec![("last-event-id", "5".into())]).await,
        6
    );
    assert_eq!(
        first_position(both, vec![("last-event-id", id(3))]).await,
        4
    );
    // The global stream is ordered by sequence and takes the same cursors.
    let mut global = SseReader::new(app.stream("/events?after_sequence=4", &[]).await);
    assert_eq!(global.next_event(WAIT).await.unwrap().position(), 5);
}

#[tokio::test]
async fn from_now_streams_only_new_events() {
    let app = spawn_app().await;
    app.post_session_events("s", 4).await;
    let mut reader = SseReader::new(app.stream("/sessions/s/events?from=now", &[]).await);
    reader.next(WAIT).await.unwrap(); // retry hint: the stream is open
    let acks = app.post_session_events("s", 1).await;
    let frame = reader.next_event(WAIT).await.unwrap();
    assert_eq!(frame.position(), 5);
    assert_eq!(frame.envelope()["id"], acks[0]["id"]);
}

#[tokio::test]
async fn an_empty_session_sends_keepalives_until_its_first_event() {
    let app = spawn_app_with(|c| c.keepalive = Duration::from_millis(100)).await;
    let mut reader = SseReader::new(app.stream("/sessions/not-yet/events", &[]).await);
    let mut keepalives = 0;
    while keepalives < 2 {
        let frame = reader.next(WAIT).await.expect("the stream stays open");
        assert!(frame.data.is_none(), "no event yet");
        if frame.comment.as_deref() == Some("keepalive") {
            keepalives += 1;
        }
    }
    app.post_session_events("not-yet", 1).await;
    assert_eq!(reader.next_event(WAIT).await.unwrap().position(), 1);
}

#[tokio::test]
async fn stale_cursors_are_refused_never_skipped() {
    let app = spawn_app().await;
    app.post_session_events("s", 3).await;
    let elsewhere = app.post_session_events("t", 1).await;
    let foreign_id = elsewhere[0]["id"].as_str().unwrap();
    for path in [
        "/sessions/s/events?after_sequence=4".to_string(),
        "/sessions/s/events?after_event_id=no-such-event".to_string(),
        format!("/sessions/s/events?after_event_id={foreign_id}"),
        "/events?after_sequence=99".to_string(),
    ] {
        let response = app.stream(&path, &[]).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path}");
        assert!(
            response
                .headers()
                .contains_key("x-hooklog-stream-generation-id")
        );
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_cursor", "{path}");
        assert_eq!(body["outcome"], "CURSOR_STALE");
        assert_eq!(body["firstAvailableSequence"], 1);
    }
    let body: Value = app
        .stream("/sessions/s/events?after_sequence=9", &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["headSequence"], 3, "the session's own head");
    let response = app
        .stream("/sessions/s/events", &[("last-event-id", "7")])
        .await;
    assert_eq!(
        response.status(),
        StatusCode::BAD_REQUEST,
        "a stale Last-Event-ID is refused too"
    );
    for bad in [
        "/sessions/s/events?after_sequence=-1",
        "/sessions/s/events?from=later",
        "/sessions/s/events?cursor=1",
    ] {
        let response = app.stream(bad, &[]).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(
            response.json::<Value>().await.unwrap()["error"],
            "invalid_request"
        );
    }
}

#[tokio::test]
async fn the_json_probe_reports_ready_stale_or_unknown() {
    let app = spawn_app().await;
    app.post_session_events("s", 2).await;
    let probe = |path: &'static str| {
        let app = &app;
        async move {
            let response = app.probe(path).await;
            assert_eq!(response.status(), StatusCode::OK);
            assert!(
                response
                    .headers()
                    .contains_key("x-hooklog-stream-generation-id")
            );
            response.json::<Value>().await.unwrap()
        }
    };
    let generation = app.get("/stats").await.1["streamGenerationId"].clone();
    let ready = probe("/sessions/s/events?after_sequence=1").await;
    assert_eq!(ready["outcome"], "STREAM_READY");
    assert_eq!(ready["sessionId"], "s");
    assert_eq!(
        ready["retry"],
        json!({"omitAfterEventId": false, "omitAfterSequence": false})
    );
    assert_eq!(ready["headSequence"], 2);
    assert_eq!(ready["firstAvailableSequence"], 1);
    assert_eq!(ready["streamGenerationId"], generation);
    let stale = probe("/sessions/s/events?after_sequence=5").await;
    assert_eq!(stale["outcome"], "CURSOR_STALE");
    assert_eq!(
        stale["retry"],
        json!({"omitAfterEventId": true, "omitAfterSequence": true})
    );
    let unknown = probe("/sessions/nobody/events").await;
    assert_eq!(unknown["outcome"], "UNKNOWN_SESSION");
    assert_eq!(unknown["headSequence"], 0);
}

#[tokio::test]
async fn the_global_stream_filters_by_type_session_and_source() {
    let app = spawn_app().await;
    app.post_json(&json!([
        {"type": "Stop", "sessionId": "a"},
        {"type": "PreToolUse", "sessionId": "a", "source": "hook"},
        {"type": "Stop", "sessionId": "b", "source": "hook"},
        {"type": "Stop"},
    ]))
    .await;
    let positions = |path: &'static str, n: usize| {
        let app = &app;
        async move {
            let mut reader = SseReader::new(app.stream(path, &[]).await);
            reader
                .events(n, WAIT)
                .await
                .iter()
                .map(|f| f.position())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(positions("/events?type=Stop", 3).await, [1, 3, 4]);
    assert_eq!(positions("/events?source=hook&type=Stop", 1).await, [3]);
    assert_eq!(positions("/events?session=a", 2).await, [1, 2]);
    // The JSON page takes the same filters.
    let (_, page) = app.get("/events?type=Stop&session=b").await;
    assert_eq!(page["events"].as_array().unwrap().len(), 1);
    assert_eq!(page["headSequence"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_100_open_streams_finishes_promptly() {
    let app = spawn_app().await;
    app.post_session_events("s", 2).await;
    let mut readers = Vec::new();
    for i in 0..100 {
        let path = if i % 2 == 0 {
            "/sessions/s/events"
        } else {
            "/events"
        };
        let mut reader = SseReader::new(app.stream(path, &[]).await);
        reader.next_event(WAIT).await.unwrap();
        readers.push(reader);
    }
    let started = Instant::now();
    app.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        started.elapsed()
    );
    for reader in &mut readers {
        // Each stream ends (after the rest of what it had to send).
        while reader.next(WAIT).await.is_some() {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_resumes_without_losing_an_event() {
    const EVENTS: usize = 20_000;
    let app = spawn_app_with(|c| c.hub_capacity = 64).await;
    let mut reader = SseReader::new(app.stream("/sessions/s/events", &[]).await);
    reader.next(WAIT).await.unwrap(); // open; from here on it reads nothing for a while
    for from in (0..EVENTS).step_by(1_000) {
        let events: Vec<Value> = (from..from + 1_000)
            .map(|i| json!({"type": "PostToolUse", "sessionId": "s", "payload": {"i": i, "pad": "p".repeat(200)}}))
            .collect();
        assert_eq!(app.post_json(&Value::Array(events)).await.0, StatusCode::OK);
    }
    for expected in 1..=EVENTS as i64 {
        let frame = reader
            .next_event(WAIT)
            .await
            .expect("the stream stays open");
        assert_eq!(frame.position(), expected);
        assert_eq!(frame.envelope()["payload"]["i"], expected - 1);
    }
}

/// The server's resident memory, in KiB, from `/proc`.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A subscriber that stops reading while 100,000 events (about 230 MB of envelopes) are
/// committed: the real server's memory does not follow them (the stream waits on its socket
/// and the hub drops what the subscriber misses), and once it reads again it gets every
/// event, in order, from the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_does_not_grow_server_memory_and_resumes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const EVENTS: usize = 100_000;
    const BATCH: usize = 400; // about 830 KB a request, under the 1 MiB body limit
    let dir = tempfile::tempdir().unwrap();
    // The subscriber pauses for as long as the ingest takes: a stall shorter than the stall
    // timeout, which a slow build or machine must not turn into a closed stream
    // (tests/it/hostile.rs covers the timeout itself).
    let server =
        common::ServerProcess::start_with(&dir.path().join("hooklog.db"), "127.0.0.1:0", |c| {
            c.args(["--stall-timeout", "600s"]);
        });
    let addr = server.url.trim_start_matches("http://").to_string();
    // HTTP/1.0, so the body is the bare event stream (no chunked framing to undo).
    let mut socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
    socket
        .write_all(
            format!("GET /sessions/s/events HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut received = Vec::new();
    let mut chunk = vec![0; 64 * 1024];
    while !String::from_utf8_lossy(&received).contains("retry:") {
        let n = tokio::time::timeout(WAIT, socket.read(&mut chunk))
            .await
            .expect("the stream opens")
            .unwrap();
        assert!(n > 0, "the stream closed");
        received.extend_from_slice(&chunk[..n]);
    }
    // From here the subscriber reads nothing until every event is committed.
    let pid = server.child.id();
    let before = rss_kib(pid);
    let client = reqwest::Client::new();
    let pad = "p".repeat(2_000);
    for from in (0..EVENTS).step_by(BATCH) {
        let events: Vec<Value> = (from..from + BATCH)
            .map(|i| json!({"type": "PostToolUse", "sessionId": "s", "payload": {"i": i, "pad": pad}}))
            .collect();
        let response = client
            .post(format!("{}/events", server.url))
            .json(&events)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let after = rss_kib(pid);
    let grown_mib = after.saturating_sub(before) / 1024;
    eprintln!("server RSS {before} KiB -> {after} KiB while a subscriber stalled");
    // The same ingest with no subscriber at all grows the server by about 95 MiB here (the
    // writer's 64 MiB page cache fills, the allocator keeps some of what the 830 KB request
    // bodies used); it grew about 103 MiB with the stalled one. Holding the stalled stream's
    // 230 MB of frames would put it above 320 MiB.
    assert!(
        grown_mib < 200,
        "server RSS grew by {grown_mib} MiB ({before} KiB -> {after} KiB) while a subscriber stalled"
    );

    // Reading again: every event, in order, then nothing else is needed.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut expected: i64 = 1;
    let mut pending = received;
    while expected <= EVENTS as i64 {
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let frame = String::from_utf8(pending[..end].to_vec()).unwrap();
            pending.drain(..end + 2);
            if let Some(id) = frame.lines().find_map(|l| l.strip_prefix("id: ")) {
                assert_eq!(id.parse::<i64>().unwrap(), expected, "no gap, no duplicate");
                expected += 1;
            }
        }
        if expected > EVENTS as i64 {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let n = tokio::time::timeout(left, socket.read(&mut chunk))
            .await
            .expect("every event within the deadline")
            .unwrap();
        assert!(n > 0, "the stream closed at event {expected}");
        pending.extend_from_slice(&chunk[..n]);
    }
}

/// Live events are published in groups whose frames are rendered once per kind of stream and
/// shared. Streams of one kind that join while events are being written (so their first live
/// groups overlap the history they just read, and they take those in part) must each still get
/// exactly their own run of positions, each frame naming its own event: a shared chunk handed
/// to a stream at the wrong point would show as a repeat, a gap, or a frame whose id disagrees
/// with its envelope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_of_one_kind_share_live_frames_and_each_gets_its_own_run() {
    let app = std::sync::Arc::new(spawn_app().await);
    let writer = {
        let app = app.clone();
        tokio::spawn(async move {
            let (mut session_head, mut shared_sequences) = (0i64, Vec::new());
            for round in 0..60usize {
                // Batches of 1 to 37 events, other sessions' events in between, so groups (of
                // at most 16 events) hold a varying share of each stream's events.
                let n = 1 + (round * 7) % 37;
                let sessions: Vec<&str> = (0..n)
                    .map(|i| if i % 3 == 2 { "other" } else { "shared" })
                    .collect();
                let events: Vec<Value> = sessions
                    .iter()
                    .enumerate()
                    .map(|(i, session)| json!({"type": "PostToolUse", "sessionId": session, "payload": {"round": round, "i": i}}))
                    .collect();
                let (status, body) = app.post_json(&Value::Array(events)).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                for (ack, session) in body["events"].as_array().unwrap().iter().zip(&sessions) {
                    if *session == "shared" {
                        session_head += 1;
                        assert_eq!(ack["sessionSequence"], session_head);
                        shared_sequences.push(ack["sequence"].as_i64().unwrap());
                    }
                }
            }
            (session_head, shared_sequences)
        })
    };
    // Streams join from the start while the writer runs: each reads history while new groups
    // are published behind it.
    let mut readers = Vec::new();
    while !writer.is_finished() || readers.len() < 8 {
        for path in ["/sessions/shared/events", "/events?session=shared"] {
            readers.push((path, SseReader::new(app.stream(path, &[]).await)));
        }
        tokio::task::yield_now().await;
    }
    let (session_head, shared_sequences) = writer.await.unwrap();
    assert!(readers.len() >= 8);
    for (path, mut reader) in readers {
        let global = path.starts_with("/events");
        let expected: Vec<i64> = if global {
            shared_sequences.clone()
        } else {
            (1..=session_head).collect()
        };
        let frames = reader.events(expected.len(), WAIT).await;
        let positions: Vec<i64> = frames.iter().map(|f| f.position()).collect();
        assert_eq!(positions, expected, "{path}");
        for frame in &frames {
            let envelope = frame.envelope();
            assert_eq!(envelope["context"]["sessionId"], "shared", "{path}");
            let own = if global {
                "sequence"
            } else {
                "sessionSequence"
            };
            assert_eq!(envelope["context"][own], frame.position(), "{path}");
        }
    }
}
