//! A writer too far behind (here: twenty writes on a queue of one while the write lock is held): a client's request that finds the writer's queue full waits
//! `store::writer::QUEUE_WAIT`, then is refused `503 overloaded` with `Retry-After`, and
//! nothing from it is stored; a retry with the same event id is stored once.

use crate::common;

use common::{spawn_app_with, wait_for};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Within the writer's busy timeout (5 s): the outside lock must be let go before it, or the
/// blocked batch fails as `storage_unavailable` instead.
const WAIT: Duration = Duration::from_secs(4);

/// A request's event id, and its answer: status, `Retry-After`, body.
type Answer = (String, StatusCode, Option<String>, Value);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_writer_queue_refuses_with_503_and_stores_nothing_of_the_refused() {
    let app = Arc::new(spawn_app_with(|c| c.writer_queue = 1).await);
    // Hold the database's write lock from outside: the writer's next batch waits on it, so
    // its queue (one request) fills and the requests behind it wait for a place. Twenty, so
    // that some are behind the queue even if the writer drains a few into its blocked batch.
    let outside = rusqlite::Connection::open(&app.db_path).unwrap();
    outside.execute_batch("BEGIN IMMEDIATE").unwrap();

    let answers: Arc<Mutex<Vec<Answer>>> = Arc::default();
    let requests: Vec<_> = (0..20)
        .map(|i| {
            let (app, answers) = (app.clone(), answers.clone());
            tokio::spawn(async move {
                let id = format!("0193a5b0-7c1e-7000-8000-0000000000{i:02}");
                let body = json!({"id": id, "type": "Note", "sessionId": "s", "payload": {"i": i}});
                let response = app
                    .client
                    .post(format!("{}/events", app.url))
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_string());
                let body: Value = response.json().await.unwrap();
                answers
                    .lock()
                    .unwrap()
                    .push((id, status, retry_after, body));
            })
        })
        .collect();
    // The refusals come after the queue wait (1 s); the accepted requests are still blocked.
    wait_for(WAIT, "a request refused as overloaded", || {
        !answers.lock().unwrap().is_empty()
    })
    .await;
    outside.execute_batch("COMMIT").unwrap();
    for request in requests {
        request.await.unwrap();
    }

    let answers = answers.lock().unwrap().clone();
    let (refused, stored): (Vec<_>, Vec<_>) = answers
        .iter()
        .partition(|(_, status, ..)| *status == StatusCode::SERVICE_UNAVAILABLE);
    assert!(!refused.is_empty() && !stored.is_empty(), "{answers:?}");
    for (_, _, retry_after, body) in &refused {
        assert_eq!(body["error"], "overloaded", "{body}");
        assert_eq!(retry_after.as_deref(), Some("1"));
    }
    for (_, status, ..) in &stored {
        assert_eq!(*status, StatusCode::OK, "{answers:?}");
    }
    let db = app.db();
    let ids: Vec<String> = db
        .prepare("SELECT event_id FROM events ORDER BY sequence")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ids.len(), stored.len(), "only the accepted are stored");
    for (id, ..) in &refused {
        assert!(!ids.contains(id), "refused {id} is not stored");
    }

    // A retry of a refused request is stored, once.
    let (id, ..) = refused[0];
    let body = json!({"id": id, "type": "Note", "sessionId": "s", "payload": {}});
    let (status, answer) = app.post_json(&body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["events"][0]["duplicate"], false);
    common::assert_gapless(&db);
}
