//! The history budget all streams share (`--stream-history-bytes`): a page of history read for
//! a client holds its share until the client has taken it, whatever the stream (`/events`,
//! a session, `/changes`, response events, the WebSocket's catch-up). Clients that stop reading
//! make the others wait for room, never make hooklog hold more (docs/security.md).

use crate::common;

use common::sse::SseReader;
use common::{ServerProcess, metric, stats};
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};

/// One page: with the budget this small, one page held by one stream is all of it.
const PAGE: u64 = 1024 * 1024;

async fn closed_for_stalling(client: &reqwest::Client, url: &str) -> u64 {
    stats(client, url).await["connections"]["closedForStalling"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn stalled_readers_of_changes_hold_the_shared_budget_and_the_others_wait_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with(&dir.path().join("hooklog.db"), "127.0.0.1:0", |c| {
        c.args(["--stall-timeout", "2s"]);
        c.args(["--stream-history-bytes", &PAGE.to_string()]);
    });
    let client = reqwest::Client::new();
    // About 5 KB of changes per prompt (the mission keeps the prompt's first 4 KB): several
    // pages of change history, far more than a stalled socket's buffers take.
    let prompt = "p".repeat(6000);
    for i in 0..1200 {
        let hook = json!({"hook_event_name": "UserPromptSubmit", "session_id": format!("s{i}"),
            "cwd": "/tmp", "prompt": prompt});
        let response = client
            .post(format!("{}/event", server.url))
            .json(&hook)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }

    // Two clients with a small receive buffer ask for every change and read nothing.
    let target = server.url.trim_start_matches("http://").to_string();
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(target.parse().unwrap()).await.unwrap();
        let request =
            format!("GET /changes HTTP/1.1\r\nHost: {target}\r\nAccept: text/event-stream\r\n\r\n");
        tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
            .await
            .unwrap();
        stalled.push(stream);
    }
    // They hold the whole budget: a page each that their connections cannot take, one of them
    // waiting for room. (Held for a moment could be a page on its way out: wait until it stays.)
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut since = Instant::now();
    while since.elapsed() < Duration::from_millis(500) {
        if metric(&client, &server.url, "hooklog_stream_history_bytes_held")
            .await
            .expect("the gauge in /metrics")
            < PAGE as f64
        {
            since = Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "the stalled readers held no page"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(closed_for_stalling(&client, &server.url).await, 0);

    // A reader of the log's history waits for room: its first event comes only after a stalled
    // reader was closed for stalling and let its page go.
    let response = client
        .get(format!("{}/events", server.url))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut frames = SseReader::new(response);
    let first = frames
        .next_event(Duration::from_secs(60))
        .await
        .expect("a frame");
    assert_eq!(first.position(), 1);
    assert!(
        closed_for_stalling(&client, &server.url).await >= 1,
        "the reader got history while stalled readers of /changes held the budget"
    );
    // And then everything, in order.
    for expected in 2..=1200 {
        let frame = frames
            .next_event(Duration::from_secs(30))
            .await
            .expect("a frame");
        assert_eq!(frame.position(), expected);
    }
    drop(stalled);
}
