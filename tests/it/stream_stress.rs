//! Several writers post to several sessions while readers connect at random moments with
//! random cursors (none, sequence, event id, Last-Event-ID), read a while, drop the connection
//! and reconnect from where they were. Every connection must see exactly the contiguous run of
//! positions after its cursor, and every reader must end at the head: no gap, no duplicate.
//! The hub keeps only 8 events, so streams fall behind it and catch up from the database.

use crate::common;

use common::spawn_app_with;
use common::sse::SseReader;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const SESSIONS: usize = 5;
const WRITERS: usize = 4;
const POSTS_PER_WRITER: usize = 120;
const READERS: usize = 10;
const WAIT: Duration = Duration::from_secs(20);

/// xorshift: reproducible from the printed seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below.max(1)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_reconnecting_with_random_cursors_see_every_event_exactly_once() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    println!("seed {seed}");
    let app = Arc::new(spawn_app_with(|c| c.hub_capacity = 8).await);
    let writing = Arc::new(AtomicBool::new(true));

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut rng = Rng(seed ^ ((w as u64 + 1) * 0x9E37_79B9));
                for _ in 0..POSTS_PER_WRITER {
                    let n = 1 + rng.next(20) as usize;
                    let events: Vec<Value> = (0..n)
                        .map(|_| json!({"type": "PostToolUse", "sessionId": format!("s{}", rng.next(SESSIONS as u64))}))
                        .collect();
                    let (status, body) = app.post_json(&Value::Array(events)).await;
                    assert_eq!(status, StatusCode::OK, "{body}");
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let (app, writing) = (app.clone(), writing.clone());
            tokio::spawn(async move {
                read_with_reconnects(&app, seed ^ ((r as u64 + 7) * 0x85EB_CA6B), r, &writing).await
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    writing.store(false, Ordering::Release);
    let mut connections = 0;
    for reader in readers {
        connections += reader.await.unwrap();
    }
    assert!(
        connections >= READERS * 3,
        "readers reconnected ({connections} connections)"
    );
}

/// Returns how many connections the reader made.
async fn read_with_reconnects(
    app: &common::TestApp,
    seed: u64,
    reader: usize,
    writing: &AtomicBool,
) -> usize {
    let mut rng = Rng(seed);
    let session =
        (reader % (SESSIONS + 1) < SESSIONS).then(|| format!("s{}", reader % (SESSIONS + 1)));
    let path = match &session {
        Some(s) => format!("/sessions/{s}/events"),
        None => "/events".to_string(),
    };
    // (position, event id) of the last event seen; start from nothing or from a random point.
    let mut last: Option<(i64, String)> = None;
    let mut connections = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(rng.next(30))).await;
        let finished = !writing.load(Ordering::Acquire);
        let (query, header): (String, Option<String>) = match &last {
            None if rng.next(2) == 0 => (String::new(), None),
            None => {
                let at = rng.next(stream_head(app, &path).await as u64 + 1) as i64;
                last = Some((at, String::new()));
                (format!("?after_sequence={at}"), None)
            }
            Some((position, id)) => match rng.next(3) {
                0 => (format!("?after_sequence={position}"), None),
                1 if !id.is_empty() => (format!("?after_event_id={id}"), None),
                // An EventSource reconnect: original URL, newest id in the header.
                _ => (String::new(), Some(position.to_string())),
            },
        };
        let headers: Vec<(&str, &str)> = header
            .iter()
            .map(|h| ("last-event-id", h.as_str()))
            .collect();
        let response = app.stream(&format!("{path}{query}"), &headers).await;
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "reader {reader} {path}{query}"
        );
        connections += 1;
        let mut stream = SseReader::new(response);
        let mut expected = last.as_ref().map_or(1, |(p, _)| p + 1);
        // Read a random number of events, or, once writing has finished, up to the head.
        let target = if finished {
            stream_head(app, &path).await
        } else {
            expected - 1 + 1 + rng.next(60) as i64
        };
        let mut target = target;
        while expected <= target {
            // Wait in short steps: if the writers finish meanwhile, the target may never come.
            let Ok(frame) =
                tokio::time::timeout(Duration::from_millis(500), stream.next_event(WAIT)).await
            else {
                if !writing.load(Ordering::Acquire) {
                    target = target.min(stream_head(app, &path).await);
                }
                continue;
            };
            let frame = frame.expect("stream ended early");
            assert_eq!(
                frame.position(),
                expected,
                "reader {reader} on {path}{query}: gap or duplicate"
            );
            let envelope = frame.envelope();
            if let Some(s) = &session {
                assert_eq!(envelope["context"]["sessionId"], s.as_str());
            } else {
                assert_eq!(envelope["context"]["sequence"], expected);
            }
            last = Some((expected, envelope["id"].as_str().unwrap().to_string()));
            expected += 1;
        }
        if finished {
            return connections;
        }
    }
}

/// The head of the stream at `path`, in its own ordering.
async fn stream_head(app: &common::TestApp, path: &str) -> i64 {
    if path == "/events" {
        return app.get("/events?limit=1").await.1["headSequence"]
            .as_i64()
            .unwrap();
    }
    let response = app.probe(path).await;
    response.json::<Value>().await.unwrap()["headSequence"]
        .as_i64()
        .unwrap()
}
