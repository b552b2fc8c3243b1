//! `kill -9` of the real binary during heavy concurrent ingest, then restart: every acknowledged
//! event is present exactly once, the file passes `integrity_check`, sequences stay gapless, and
//! appends continue from the head.

mod common;

use common::{ServerProcess, assert_gapless, open_read_only, wait_for};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

const KILLS: usize = 3;
const WORKERS: usize = 6;

/// Posts until the server goes away; records each acknowledged id.
async fn produce(url: String, round: usize, worker: usize, acked: Arc<Mutex<Vec<String>>>) {
    let client = reqwest::Client::new();
    for n in 0.. {
        let batch = if worker.is_multiple_of(2) { 1 } else { 10 };
        let events: Vec<Value> = (0..batch)
            .map(|k| {
                json!({
                    "id": format!("r{round}-w{worker}-n{n}-k{k}"),
                    "type": "PostToolUse",
                    "sessionId": format!("s{}", (worker + n) % 5),
                    "payload": {"output": "y".repeat(300)},
                })
            })
            .collect();
        let body: Vec<String> = events.iter().map(Value::to_string).collect();
        let response = client
            .post(format!("{url}/events"))
            .header("content-type", "application/x-ndjson")
            .body(body.join("\n"))
            .send()
            .await;
        let Ok(response) = response else { return };
        if !response.status().is_success() {
            return;
        }
        let Ok(answer) = response.json::<Value>().await else {
            return;
        };
        let ids = answer["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_string());
        acked.lock().unwrap().extend(ids);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_ingest_loses_no_acknowledged_event() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    for round in 0..KILLS {
        let mut server = ServerProcess::start(&db, "127.0.0.1:0");
        let before = acked.lock().unwrap().len();
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| tokio::spawn(produce(server.url.clone(), round, w, acked.clone())))
            .collect();
        // Kill at a varying moment once a few hundred more events were acknowledged.
        let jitter = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as usize
            % 700;
        let target = before + 300 + jitter;
        wait_for(Duration::from_secs(60), "acknowledgements", || {
            acked.lock().unwrap().len() >= target
        })
        .await;
        server.kill();
        for worker in workers {
            worker.await.unwrap();
        }
    }

    // Restart: recovery happens on open; then check the file from outside the server.
    let server = ServerProcess::start(&db, "127.0.0.1:0");
    let conn = open_read_only(&db);
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let head = assert_gapless(&conn);
    let stored: HashSet<String> = conn
        .prepare("SELECT event_id FROM events")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let acked = acked.lock().unwrap().clone();
    let missing: Vec<&String> = acked.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged events lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    assert_eq!(
        acked.iter().collect::<HashSet<_>>().len(),
        acked.len(),
        "an id was acknowledged twice"
    );
    assert!(stored.len() >= acked.len());

    let client = reqwest::Client::new();
    let answer: Value = client
        .post(format!("{}/events", server.url))
        .json(&json!({"type": "Stop", "sessionId": "s0"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["events"][0]["sequence"],
        head + 1,
        "appends continue from the head"
    );
}
