//! `kill -9` of the real binary at random moments during concurrent ingest, 20 times, restarting
//! each time: after every restart the file passes `integrity_check` and its sequences are
//! gapless; at the end every acknowledged event is present exactly once, including the requests
//! that were in flight at a kill and were retried with the same ids after the restart (each is
//! then either a duplicate or stored for the first time, never twice), and appends continue
//! from the head.

use crate::common;

use common::{ServerProcess, assert_gapless, open_read_only, wait_for};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

const KILLS: usize = 20;
const WORKERS: usize = 6;

/// A cheap random number (no seed to manage: each run kills at other moments).
fn random(below: usize) -> usize {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as usize;
    nanos.wrapping_mul(2_654_435_761) % below
}

/// Posts until the server goes away, recording each acknowledged id. `retry` is the request
/// this worker had in flight when the previous server died: it goes first, with the same ids.
/// Returns the request in flight when this server died, if any.
async fn produce(
    url: String,
    round: usize,
    worker: usize,
    retry: Option<Vec<Value>>,
    acked: Arc<Mutex<Vec<String>>>,
) -> Option<Vec<Value>> {
    let client = reqwest::Client::new();
    let mut next = retry;
    for n in 0.. {
        let events = next.take().unwrap_or_else(|| {
            let batch = if worker.is_multiple_of(2) { 1 } else { 10 };
            (0..batch)
                .map(|k| {
                    json!({
                        "id": format!("r{round}-w{worker}-n{n}-k{k}"),
                        "type": "PostToolUse",
                        "sessionId": format!("s{}", (worker + n) % 5),
                        "payload": {"output": "y".repeat(300)},
                    })
                })
                .collect()
        });
        let body: Vec<String> = events.iter().map(Value::to_string).collect();
        let response = client
            .post(format!("{url}/events"))
            .header("content-type", "application/x-ndjson")
            .body(body.join("\n"))
            .send()
            .await;
        let answer = match response {
            Ok(response) if response.status().is_success() => response.json::<Value>().await,
            Ok(response) => panic!("the server answered {}", response.status()),
            Err(_) => return Some(events),
        };
        let Ok(answer) = answer else {
            return Some(events);
        };
        let ids = answer["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_string());
        acked.lock().unwrap().extend(ids);
    }
    None
}

fn check_file(db: &std::path::Path) -> i64 {
    let conn = open_read_only(db);
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    assert_gapless(&conn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_ingest_loses_no_acknowledged_event() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut in_flight: Vec<Option<Vec<Value>>> = vec![None; WORKERS];
    let mut retried = 0;
    for round in 0..KILLS {
        let mut server = ServerProcess::start(&db, "127.0.0.1:0");
        if round > 0 {
            check_file(&db);
        }
        let before = acked.lock().unwrap().len();
        retried += in_flight.iter().filter(|r| r.is_some()).count();
        let workers: Vec<_> = in_flight
            .drain(..)
            .enumerate()
            .map(|(w, retry)| {
                tokio::spawn(produce(server.url.clone(), round, w, retry, acked.clone()))
            })
            .collect();
        // Kill at a random moment: after 1 to 1,500 more acknowledged events, plus a random
        // sub-millisecond delay so the kill can land anywhere in a batch's life.
        let target = before + 1 + random(1500);
        wait_for(Duration::from_secs(60), "acknowledgements", || {
            acked.lock().unwrap().len() >= target
        })
        .await;
        tokio::time::sleep(Duration::from_micros(random(1000) as u64)).await;
        server.kill();
        for worker in workers {
            in_flight.push(worker.await.unwrap());
        }
    }
    assert!(retried > 0, "no request was in flight at any kill");
    eprintln!(
        "{KILLS} kills, {} acknowledged, {retried} in-flight requests retried",
        acked.lock().unwrap().len()
    );

    // Restart: recovery happens on open; then check the file from outside the server.
    let server = ServerProcess::start(&db, "127.0.0.1:0");
    let head = check_file(&db);
    let conn = open_read_only(&db);
    let stored: HashMap<String, i64> = conn
        .prepare("SELECT event_id, COUNT(*) FROM events GROUP BY event_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(stored.values().all(|&n| n == 1), "an id is stored twice");
    let acked = acked.lock().unwrap().clone();
    let missing: Vec<&String> = acked
        .iter()
        .filter(|id| !stored.contains_key(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged events lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    // A retried request is acknowledged once more (as duplicates, if it had been stored).
    let distinct = acked.iter().collect::<HashSet<_>>().len();
    assert!(stored.len() >= distinct);

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
