//! `hooklog tail` (the real binary) against the real server binary: every event printed exactly
//! once across a `kill -9` and restart of the server, readable lines, and a clear non-zero exit
//! on a stale cursor.

use crate::common;

use common::{ServerProcess, free_port, wait_for};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Lines = Arc<Mutex<Vec<String>>>;

/// Starts `hooklog tail`; returns it with its stdout lines and its stderr lines as they come.
fn tail_with_stderr(args: &[&str]) -> (Child, Lines, Lines) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .arg("tail")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hooklog tail");
    let collect = |pipe: Box<dyn std::io::Read + Send>| {
        let lines: Lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { return };
                sink.lock().unwrap().push(line);
            }
        });
        lines
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    (child, stdout, stderr)
}

fn tail(args: &[&str]) -> (Child, Lines) {
    let (child, stdout, _) = tail_with_stderr(args);
    (child, stdout)
}

/// Waits until tail has printed at least `n` lines.
async fn wait_lines(lines: &Lines, n: usize, deadline: Duration, what: &str) {
    wait_for(deadline, what, || lines.lock().unwrap().len() >= n).await;
}

fn ids(lines: &Lines) -> Vec<String> {
    lines
        .lock()
        .unwrap()
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

async fn post(url: &str, session: &str, from: usize, n: usize) {
    let events: Vec<Value> = (from..from + n)
        .map(|i| json!({"id": format!("{session}-{i}"), "type": "PostToolUse", "sessionId": session,
                        "payload": {"tool_name": "Bash", "tool_input": {"command": format!("echo {i}")}}}))
        .collect();
    let response = reqwest::Client::new()
        .post(format!("{url}/events"))
        .json(&events)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
}

#[tokio::test]
async fn tail_prints_every_event_exactly_once_across_a_server_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tail.db");
    let bind = format!("127.0.0.1:{}", free_port());
    let mut server = ServerProcess::start(&db, &bind);
    let url = server.url.clone();
    // tail starts first: the session has no events yet.
    let (mut child, lines) = tail(&["--json", "--url", &url, "s"]);
    post(&url, "s", 1, 20).await;
    post(&url, "other", 1, 5).await;
    wait_lines(&lines, 20, Duration::from_secs(20), "the first 20 lines").await;

    server.kill();
    post_while_down(&url).await;
    let server = ServerProcess::start(&db, &bind);
    post(&server.url, "s", 21, 20).await;
    wait_lines(&lines, 40, Duration::from_secs(30), "all 40 lines").await;
    // Anything extra (a repeat) would arrive right behind; give it the chance, then look.
    post(&server.url, "s", 41, 1).await;
    wait_lines(&lines, 41, Duration::from_secs(20), "the marker line").await;
    child.kill().unwrap();
    child.wait().unwrap();

    let expected: Vec<String> = (1..=41).map(|i| format!("s-{i}")).collect();
    assert_eq!(ids(&lines), expected, "every event of s once, in order");
}

/// While the server is down, producers fail; tail keeps retrying meanwhile.
async fn post_while_down(url: &str) {
    let refused = reqwest::Client::new()
        .post(format!("{url}/events"))
        .json(&json!({"type": "Stop"}))
        .send()
        .await;
    assert!(refused.is_err(), "the server is down");
}

#[tokio::test]
async fn tail_prints_readable_lines_and_exits_clearly_on_a_stale_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&dir.path().join("t.db"), "127.0.0.1:0");
    post(&server.url, "s", 1, 2).await;
    let (mut child, lines) = tail(&["--url", &server.url, "s"]);
    wait_lines(&lines, 2, Duration::from_secs(20), "two lines").await;
    child.kill().unwrap();
    child.wait().unwrap();
    let first = lines.lock().unwrap()[0].clone();
    assert!(
        first.contains("  s  #1  PostToolUse  Bash: echo 1"),
        "{first}"
    );

    let output = Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["tail", "--url", &server.url, "--after-sequence", "99", "s"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refused the cursor"), "{stderr}");
    assert!(stderr.contains("head 2"), "{stderr}");
}

#[tokio::test]
async fn tail_from_now_keeps_its_place_when_the_server_restarts_before_the_first_event() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("now.db");
    let bind = format!("127.0.0.1:{}", free_port());
    let mut server = ServerProcess::start(&db, &bind);
    post(&server.url, "s", 1, 3).await;
    let (mut child, lines, stderr) =
        tail_with_stderr(&["--json", "--from-now", "--url", &server.url, "s"]);
    wait_for(Duration::from_secs(20), "tail to connect", || {
        stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("connected"))
    })
    .await;
    server.kill();
    let server = ServerProcess::start(&db, &bind);
    // Posted while tail is still backing off: it must not be skipped as "before now".
    post(&server.url, "s", 4, 1).await;
    wait_for(
        Duration::from_secs(20),
        "the event posted during the outage",
        || !lines.lock().unwrap().is_empty(),
    )
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(ids(&lines), ["s-4"]);
}

#[tokio::test]
async fn tail_starts_over_when_the_database_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let bind = format!("127.0.0.1:{}", free_port());
    let mut first = ServerProcess::start(&dir.path().join("first.db"), &bind);
    post(&first.url, "s", 1, 3).await;
    let (mut child, lines, stderr) = tail_with_stderr(&["--json", "--url", &first.url, "s"]);
    wait_lines(&lines, 3, Duration::from_secs(20), "three lines").await;
    first.kill();
    // Another database behind the same address: its cursors mean nothing to the old ones.
    let second = ServerProcess::start(&dir.path().join("second.db"), &bind);
    post(&second.url, "s", 101, 2).await;
    wait_lines(
        &lines,
        5,
        Duration::from_secs(20),
        "the new database's events",
    )
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(ids(&lines), ["s-1", "s-2", "s-3", "s-101", "s-102"]);
    assert!(
        stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("generation changed"))
    );
}
