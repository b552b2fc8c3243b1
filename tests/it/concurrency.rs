//! Many producers at once: every acknowledged event is in the file, the global sequence is
//! exactly 1..N, each session's sequence is exactly 1..n, and each client's events appear in
//! each session in the order that client was acknowledged.

use crate::common;

use common::{assert_gapless, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::HashMap;

const CLIENTS: usize = 8;
const EVENTS_PER_CLIENT: usize = 2_000;
const SESSIONS: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_clients_posting_concurrently_leave_a_gapless_log_in_ack_order() {
    let app = std::sync::Arc::new(spawn_app().await);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let app = app.clone();
            tokio::spawn(async move { post_all(&app, client).await })
        })
        .collect();
    let mut acked: Vec<(usize, String)> = Vec::new(); // (client, id) in each client's ack order
    for task in clients {
        acked.extend(task.await.unwrap());
    }
    assert_eq!(acked.len(), CLIENTS * EVENTS_PER_CLIENT);

    let db = app.db();
    assert_eq!(assert_gapless(&db), (CLIENTS * EVENTS_PER_CLIENT) as i64);
    let stored: HashMap<String, (String, i64)> = db
        .prepare("SELECT event_id, session_id, session_sequence FROM events")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // For each client and session, the session sequences must rise in the client's ack order.
    let mut last: HashMap<(usize, String), i64> = HashMap::new();
    for (client, id) in &acked {
        let (session, session_sequence) = stored
            .get(id)
            .unwrap_or_else(|| panic!("acked {id} missing"));
        let previous = last.insert((*client, session.clone()), *session_sequence);
        if let Some(previous) = previous {
            assert!(
                previous < *session_sequence,
                "client {client} session {session}: {previous} then {session_sequence}"
            );
        }
    }
    let (_, stats) = app.get("/stats").await;
    assert_eq!(stats["writer"]["events"], CLIENTS * EVENTS_PER_CLIENT);
    // Thousands of small commits went through the WAL many times over (about 30 pages each):
    // nothing kept it from being checkpointed and started over (a read transaction left
    // open in the server would), so it stayed near the writer's 16 MiB checkpoint point.
    let wal = std::fs::metadata(app.db_path.with_extension("db-wal"))
        .unwrap()
        .len();
    assert!(wal < 24 << 20, "the WAL grew to {wal} bytes");
}

/// Even clients post one event per request, odd clients NDJSON batches of 25.
async fn post_all(app: &common::TestApp, client: usize) -> Vec<(usize, String)> {
    let events: Vec<Value> = (0..EVENTS_PER_CLIENT)
        .map(|i| {
            json!({
                "id": format!("c{client}-e{i}"),
                "type": "PreToolUse",
                "sessionId": format!("session-{}", (client * 7 + i) % SESSIONS),
                "payload": {"client": client, "i": i},
            })
        })
        .collect();
    let chunk = if client.is_multiple_of(2) { 1 } else { 25 };
    let mut acked = Vec::new();
    for batch in events.chunks(chunk) {
        let (status, answer) = if chunk == 1 {
            app.post_json(&batch[0]).await
        } else {
            app.post_ndjson(batch).await
        };
        assert_eq!(status, StatusCode::OK, "{answer}");
        for ack in answer["events"].as_array().unwrap() {
            assert_eq!(ack["duplicate"], false);
            acked.push((client, ack["id"].as_str().unwrap().to_string()));
        }
    }
    acked
}
