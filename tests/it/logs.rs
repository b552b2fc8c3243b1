//! The real binary, logging everything (`HOOKLOG_LOG=trace`, every crate), is sent prompts,
//! commands, payloads and tokens, on accepted requests, refused ones and unknown routes: none of
//! them appears in its log. Logs carry ids, sizes and codes only.

use crate::common;

use common::ServerProcess;
use serde_json::json;

const TOKEN: &str = "tok-SECRETTOKEN-1f3a";
/// Every sensitive value sent contains this; the log must never contain it.
const MARK: &str = "SECRETMARK";

#[tokio::test]
async fn prompts_commands_payloads_and_tokens_never_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut server = ServerProcess::start_with(&dir.path().join("h.db"), "127.0.0.1:0", |c| {
        c.args(["--token", TOKEN])
            .env("HOOKLOG_LOG", "trace")
            .stderr(log);
    });
    let url = server.url.clone();
    let client = reqwest::Client::new();
    let post = |route: &str, body: String, token: &str| {
        client
            .post(format!("{url}{route}"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let statuses = [
        // Accepted.
        post(
            "/events",
            json!({"type": "PreToolUse", "sessionId": "s1",
            "payload": {"tool_name": "Bash", "tool_input": {"command": format!("rm -rf /{MARK}")}}})
            .to_string(),
            TOKEN,
        )
        .await,
        post(
            "/event",
            json!({"hook_event_name": "UserPromptSubmit", "session_id": "s1",
            "prompt": format!("please {MARK}")})
            .to_string(),
            TOKEN,
        )
        .await,
        post(
            "/event/normalized",
            json!({"type": "stuck", "sessionId": "s1", "paneId": "%1",
            "cwd": "/w", "transcriptPath": "/t", "reason": "permission",
            "message": format!("[Bash] {MARK}"), "timestamp": 1764500000000u64})
            .to_string(),
            TOKEN,
        )
        .await,
        post(
            "/owners/acquire",
            json!({"platform": "x", "account": "a", "pid": 1, "hostname": "h",
            "relayToken": format!("relay-{MARK}")})
            .to_string(),
            TOKEN,
        )
        .await,
        // Refused: bad JSON, a bad field, a conflict, a wrong token, an unknown route.
        post("/events", format!("{{\"type\": \"{MARK}"), TOKEN).await,
        post(
            "/events",
            json!({"type": "Stop", "payload": MARK}).to_string(),
            TOKEN,
        )
        .await,
        post(
            "/events",
            json!({"id": "e1", "type": "Stop", "payload": {"v": MARK}}).to_string(),
            TOKEN,
        )
        .await,
        post(
            "/events",
            json!({"id": "e1", "type": "Stop", "payload": {"v": format!("{MARK}2")}}).to_string(),
            TOKEN,
        )
        .await,
        post(
            "/events",
            json!({"type": "Stop"}).to_string(),
            &format!("{MARK}-wrong"),
        )
        .await,
        post(&format!("/nowhere/{MARK}?q={MARK}"), "{}".into(), TOKEN).await,
    ];
    for status in statuses {
        status.expect("answered");
    }
    // The token in a stream's URL.
    let stream = client
        .get(format!("{url}/events?access_token={TOKEN}&type={MARK}"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    drop(stream);
    let (status, _) = (
        client
            .get(format!("{url}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        (),
    );
    assert_eq!(status, 200);

    // SIGTERM, so the log is complete (shutdown lines included).
    server.terminate().await;
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("stopped cleanly") && log.lines().count() > 20,
        "the log was written: {log}"
    );
    for (i, line) in log.lines().enumerate() {
        assert!(!line.contains(MARK), "line {i} leaks: {line}");
        assert!(
            !line.contains("SECRETTOKEN"),
            "line {i} leaks the token: {line}"
        );
    }
}

/// A refusal by design (a stream over `--max-streams`: `503` with `Retry-After`) is logged as
/// a warning, not an error: an operator's `ERROR` lines are failures.
#[tokio::test]
async fn an_overloaded_503_is_a_warning_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("stderr.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut server = ServerProcess::start_with(&dir.path().join("h.db"), "127.0.0.1:0", |c| {
        c.args(["--max-streams", "1"]).stderr(log);
    });
    let client = reqwest::Client::new();
    let stream = |path: &str| {
        client
            .get(format!("{}{path}", server.url))
            .header("accept", "text/event-stream")
            .send()
    };
    let first = stream("/events").await.unwrap();
    assert_eq!(first.status(), 200);
    let second = stream("/events").await.unwrap();
    assert_eq!(second.status(), 503);
    drop((first, second));
    server.terminate().await;
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(" WARN ") && l.contains("503")),
        "the refusal is logged: {log}"
    );
    assert!(!log.contains(" ERROR "), "an error logged: {log}");
}
