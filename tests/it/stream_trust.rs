//! What an aggregator believes of a message from the stream (issue 44, finding 5): an attacker
//! allowed to publish on the stream, under a name of its own (`evil`), cannot store events as
//! another machine's, cannot keep another machine's events out by taking their ids first, and
//! cannot make another machine's messages vanish as JetStream "duplicates" by reusing their
//! `Nats-Msg-Id`. A real `nats-server`, two real hooklogs (a publisher, `laptop-1`, and an
//! aggregator), and the attacker publishing straight to JetStream.
//!
//! Skipped, with a message, where `nats-server` is missing; under `CI=true` that is a failure.

use crate::common;
use crate::nats;

use common::{ServerProcess, free_port, open_read_only};
use nats::{Nats, nats_server};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// A message body as a hooklog publishes it: the event's recording line.
fn line(id: &str, origin: &str, session: &str) -> String {
    json!({"schemaVersion": hooklog::event::SCHEMA_VERSION, "id": id, "type": "Stop",
           "payload": {"by": origin}, "context": {"origin": origin, "sessionId": session}})
    .to_string()
}

fn ids(db: &Path, sql: &str) -> BTreeSet<String> {
    let conn = open_read_only(db);
    let mut statement = conn.prepare(sql).unwrap();
    statement
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Waits until `sql` (one count) answers `n` in `db`.
async fn wait_for(db: &Path, sql: &str, n: i64) {
    let start = Instant::now();
    loop {
        let held: i64 = open_read_only(db).query_row(sql, [], |r| r.get(0)).unwrap();
        if held == n {
            return;
        }
        assert!(start.elapsed() < DEADLINE, "{sql}: {held}, not {n}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Publishes a message as the attacker, retrying until the stream exists to take it.
async fn publish(js: &async_nats::jetstream::Context, subject: &str, msg_id: &str, body: String) {
    let start = Instant::now();
    loop {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", msg_id);
        let sent = js
            .publish_with_headers(subject.to_string(), headers, body.clone().into())
            .await;
        match sent {
            Ok(ack) => match ack.await {
                Ok(ack) => {
                    assert!(!ack.duplicate, "{msg_id} is new to the stream");
                    return;
                }
                Err(e) => assert!(start.elapsed() < DEADLINE, "no stream: {e}"),
            },
            Err(e) => assert!(start.elapsed() < DEADLINE, "no stream: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_cannot_speak_for_another_take_its_ids_or_its_message_ids() {
    let Some(binary) = nats_server() else { return };
    let store = tempfile::tempdir().unwrap();
    let nats = Nats::start(&binary, free_port(), store.path());
    let url = nats.url();
    let dir = tempfile::tempdir().unwrap();
    let serve = |name: &str, flag: &str| {
        let db = dir.path().join(format!("{name}.db"));
        let args = ["--origin", name, flag, &url].map(String::from);
        let bind = format!("127.0.0.1:{}", free_port());
        ServerProcess::start_with(&db, &bind, move |c| {
            c.args(args);
        })
    };
    let central = serve("central", "--subscribe");
    let laptop = serve("laptop-1", "--publish");
    let central_db = dir.path().join("central.db");

    let attacker = async_nats::connect(&url).await.expect("connect to NATS");
    let js = async_nats::jetstream::new(attacker);
    let evil = "hooklog.events.evil.Stop";
    // (a) laptop-1's name in the body, on evil's subject.
    publish(&js, evil, "m1", line("forged-1", "laptop-1", "s-forged")).await;
    // (b) laptop-1's ids taken first: one plainly, one in the form a rename would give it.
    publish(&js, evil, "m2", line("taken-1", "evil", "s-evil")).await;
    publish(&js, evil, "m3", line("taken-2", "evil", "s-evil")).await;
    publish(&js, evil, "m4", line("taken-2@laptop-1", "evil", "s-evil")).await;
    // (c) the message id a publisher used to give an event: its event id.
    publish(&js, evil, "taken-3", line("evil-3", "evil", "s-evil")).await;
    let evil_ids = "SELECT COUNT(*) FROM events WHERE origin = 'evil'";
    wait_for(&central_db, evil_ids, 4).await;

    // laptop-1's genuine events, published by its hooklog afterwards.
    let genuine: Vec<String> = ["taken-1", "taken-2", "taken-3", "plain-1"]
        .iter()
        .map(|id| {
            json!({"id": id, "type": "Stop", "sessionId": "s-laptop", "payload": {}}).to_string()
        })
        .collect();
    let response = reqwest::Client::new()
        .post(format!("{}/events", laptop.url))
        .header("content-type", "application/x-ndjson")
        .body(genuine.join("\n"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let theirs = "SELECT COUNT(*) FROM events WHERE origin = 'laptop-1'";
    wait_for(&central_db, theirs, 4).await;

    // Every genuine event is held, as laptop-1's; those whose ids evil took under laptop-1's
    // name for them; nothing evil sent is laptop-1's.
    let laptop_ids = ids(
        &central_db,
        "SELECT event_id FROM events WHERE origin = 'laptop-1'",
    );
    let expected = ["taken-1@laptop-1", "taken-2@laptop-1", "taken-3", "plain-1"];
    assert_eq!(laptop_ids, expected.map(String::from).into());
    assert_eq!(
        ids(
            &central_db,
            "SELECT event_id FROM events WHERE origin = 'evil'"
        ),
        ["taken-1", "taken-2", "taken-2@laptop-1@evil", "evil-3"]
            .map(String::from)
            .into()
    );
    assert_eq!(
        ids(
            &central_db,
            "SELECT event_id FROM events WHERE event_id LIKE 'forged%' OR session_id = 's-forged'"
        ),
        BTreeSet::new(),
        "a message whose body names another origin than its subject's is not stored"
    );
    let laptop_sessions = ids(
        &central_db,
        "SELECT id FROM sessions WHERE origin = 'laptop-1'",
    );
    assert_eq!(laptop_sessions, ["s-laptop".to_string()].into());

    // Each refusal and rename left a notice, and the alerts say so once per subject and reason.
    let notices = ids(
        &central_db,
        "SELECT json_extract(payload, '$.reason') || ' ' || json_extract(payload, '$.subject')
           || ' ' || COALESCE(json_extract(payload, '$.storedAs'), '-')
         FROM events WHERE type = 'StreamMessageFlagged' AND source = 'replication'",
    );
    let laptop_subject = "hooklog.events.laptop-1.Stop";
    assert_eq!(
        notices,
        [
            format!("origin_not_subject {evil} -"),
            format!("id_names_another_origin {evil} taken-2@laptop-1@evil"),
            format!("id_held_by_another_origin {laptop_subject} taken-1@laptop-1"),
            format!("id_held_by_another_origin {laptop_subject} taken-2@laptop-1"),
        ]
        .into()
    );
    let alerts: Value = reqwest::get(format!(
        "{}/alerts?kind=stream_message_flagged",
        central.url
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let raised: BTreeSet<String> = alerts["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{} {}", a["details"]["reason"], a["details"]["subject"]))
        .collect();
    assert_eq!(
        raised,
        [
            format!("\"origin_not_subject\" \"{evil}\""),
            format!("\"id_names_another_origin\" \"{evil}\""),
            format!("\"id_held_by_another_origin\" \"{laptop_subject}\""),
        ]
        .into(),
        "{alerts}"
    );
}
