//! Approvals (issue 40) through the real binary: a `PermissionRequest` delivered by the
//! forwarder (`hooklog hook --approvals`) or by the HTTP hook (`POST /event?wait=`) waits for a
//! decision posted by another client, prints it as the agent reads it, and the log holds the
//! request and exactly one decision.

use crate::common;

use common::{ServerProcess, assert_rebuilds_to_live, free_port, open_read_only, wait_for};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_hooklog");
const DEADLINE: Duration = Duration::from_secs(20);

/// A `PermissionRequest` as a waiting hook delivers it: saying it waits 60 s (the forwarder and
/// `?wait=` put their own wait there).
fn request_body(session: &str, tool: &str, command: &str) -> Value {
    json!({"hook_event_name": "PermissionRequest", "session_id": session, "tool_name": tool,
        "tool_input": {"command": command}, "cwd": "/tmp/project", "permission_mode": "default",
        "hooklogWaitSeconds": 60})
}

/// `hooklog hook --approvals SECONDS` with `body` on stdin, running.
pub(crate) fn forwarder(url: &str, spool: &Path, seconds: u64, body: &Value) -> Child {
    let mut child = Command::new(BIN)
        .args(["hook", "--approvals", &seconds.to_string()])
        .env("HOOKLOG_URL", url)
        .env("HOOKLOG_SPOOL", spool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hooklog hook");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(body.to_string().as_bytes()).unwrap();
    child
}

/// What the forwarder printed, once it has exited (exit 0, nothing on stderr).
pub(crate) fn printed(child: Child) -> String {
    checked(child.wait_with_output().unwrap())
}

/// What an exited forwarder printed, checking it exited 0 with nothing on stderr.
pub(crate) fn checked(output: std::process::Output) -> String {
    assert_eq!(output.status.code(), Some(0), "the hook exits 0");
    assert!(output.stderr.is_empty(), "stderr: {:?}", output.stderr);
    String::from_utf8(output.stdout).unwrap()
}

pub(crate) async fn get(url: &str, path: &str) -> Value {
    reqwest::get(format!("{url}{path}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

pub(crate) async fn post(url: &str, path: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The requests `GET /permission-requests?{query}` lists.
pub(crate) async fn requests(url: &str, query: &str) -> Vec<Value> {
    get(url, &format!("/permission-requests?{query}")).await["permissionRequests"]
        .as_array()
        .unwrap()
        .clone()
}

async fn pending(url: &str) -> Vec<Value> {
    requests(url, "state=pending").await
}

/// The id of the one pending request, once the database file has one.
async fn wait_pending(db: &Path) -> String {
    let mut id = None;
    wait_for(DEADLINE, "a pending request", || {
        id = open_read_only(db)
            .query_row(
                "SELECT request_id FROM permission_requests WHERE state = 'pending'",
                [],
                |r| r.get::<_, String>(0),
            )
            .ok();
        id.is_some()
    })
    .await;
    id.unwrap()
}

pub(crate) fn types(db: &Path) -> Vec<String> {
    let conn = open_read_only(db);
    let mut statement = conn
        .prepare("SELECT type FROM events ORDER BY sequence")
        .unwrap();
    statement
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

pub(crate) fn count(types: &[String], name: &str) -> usize {
    types.iter().filter(|t| *t == name).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_forwarder_prints_the_decision_posted_elsewhere_and_only_the_first_counts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let server = ServerProcess::start(&db, "127.0.0.1:0");
    let url = server.url.clone();
    let body = request_body("s1", "Bash", "rm -rf build");
    let child = forwarder(&url, &dir.path().join("spool"), 30, &body);
    let id = wait_pending(&db).await;
    let row = &pending(&url).await[0];
    assert_eq!(row["tool"], "Bash");
    assert_eq!(row["preview"], "rm -rf build");
    assert_eq!(row["sessionId"], "s1");
    assert_eq!(row["kind"], "permission");

    let decided = Instant::now();
    let deny = json!({"requestId": id, "approved": false, "message": "not on main"});
    let (status, answer) = post(&url, "/permission-response", &deny).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["ok"], true);
    assert_eq!(answer["resolved"], true);
    assert_eq!(answer["request"]["state"], "denied");
    assert_eq!(answer["request"]["decidedBy"], "api");

    let out = tokio::task::spawn_blocking(move || printed(child))
        .await
        .unwrap();
    let latency = decided.elapsed();
    eprintln!("decision to forwarder exit: {latency:?}");
    // It was the decision that ended the wait, not the 30 s timeout.
    assert!(latency < Duration::from_secs(10), "took {latency:?}");
    let printed: Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(
        printed,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "not on main"}}})
    );

    // A second decision, either way, changes nothing.
    let (status, again) = post(
        &url,
        "/permission-response",
        &json!({"requestId": id, "approved": true}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(again["resolved"], false);
    assert_eq!(again["request"]["state"], "denied");
    assert_eq!(again["request"]["message"], "not on main");
    let one = get(&url, &format!("/permission-requests/{id}")).await;
    assert_eq!(one["state"], "denied");

    // The server is killed below: its search rows, written after the commits that
    // acknowledged their events, are let catch up first (a killed server's catch up at its
    // next start), so the file compares with a rebuild.
    let started = Instant::now();
    while get(&url, "/health").await["search"]["lagEvents"] != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "search rows lag"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(server);
    let types = types(&db);
    assert_eq!(count(&types, "PermissionRequest"), 1, "{types:?}");
    assert_eq!(count(&types, "permission_response"), 1, "{types:?}");
    // The decision is part of the session's story.
    let conn = open_read_only(&db);
    let (session, number): (String, i64) = conn
        .query_row(
            "SELECT session_id, session_sequence FROM events WHERE type = 'permission_response'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((session.as_str(), number), ("s1", 2));
    assert_rebuilds_to_live(&db);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_decision_the_forwarder_prints_nothing_and_the_request_expires() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let server = ServerProcess::start(&db, "127.0.0.1:0");
    let body = request_body("s1", "Bash", "make deploy");
    let started = Instant::now();
    let child = forwarder(&server.url, &dir.path().join("spool"), 2, &body);
    let out = tokio::task::spawn_blocking(move || printed(child))
        .await
        .unwrap();
    assert_eq!(out, "", "no decision, no output");
    assert!(started.elapsed() >= Duration::from_secs(2), "it waited");
    let all = get(&server.url, "/permission-requests").await;
    let rows = all["permissionRequests"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["state"], "expired");
    assert_eq!(rows[0]["decidedBy"], Value::Null);
    // A decision after the expiry is refused.
    let id = rows[0]["requestId"].as_str().unwrap();
    let (_, late) = post(
        &server.url,
        "/permission-response",
        &json!({"requestId": id}),
    )
    .await;
    assert_eq!(late["resolved"], false);
    assert_eq!(late["request"]["state"], "expired");
    drop(server);
    let types = types(&db);
    assert_eq!(count(&types, "permission_expired"), 1, "{types:?}");
    assert_eq!(count(&types, "permission_response"), 0, "{types:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_http_hook_is_answered_with_the_decision_or_nothing_at_its_wait() {
    let app = common::spawn_app().await;
    let post_request = |wait: u64, body: Value| {
        let client = app.client.clone();
        let url = format!("{}/event?reply=empty&wait={wait}", app.url);
        tokio::spawn(async move {
            let response = client.post(url).json(&body).send().await.unwrap();
            let status = response.status().as_u16();
            let kind = response
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_string());
            (status, kind, response.text().await.unwrap())
        })
    };
    let waiting = post_request(30, request_body("h1", "Bash", "git push"));
    let id = wait_pending(&app.db_path).await;
    let (status, answer) = app
        .post_raw(
            "/permission-response",
            "application/json",
            json!({"requestId": id, "approved": true})
                .to_string()
                .into_bytes(),
        )
        .await;
    assert_eq!((status.as_u16(), &answer["resolved"]), (200, &json!(true)));
    let (status, kind, text) = waiting.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(kind.as_deref(), Some("application/json"));
    let output: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        output,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"}}})
    );

    // No decision within the wait: an empty answer (no verdict), and the request expired.
    let (status, _, text) = post_request(1, request_body("h2", "Bash", "ls"))
        .await
        .unwrap();
    assert_eq!((status, text.as_str()), (200, ""));
    let (_, rows) = app.get("/permission-requests?session=h2").await;
    assert_eq!(rows["permissionRequests"][0]["state"], "expired");

    // Other events are answered at once, whatever `wait` says.
    let stop = json!({"hook_event_name": "Stop", "session_id": "h2"});
    let (status, _, text) = post_request(30, stop).await.unwrap();
    assert_eq!((status, text.as_str()), (200, ""));
    let (status, refused) = app
        .post_raw(
            "/event?wait=601",
            "application/json",
            request_body("h3", "Bash", "ls").to_string().into_bytes(),
        )
        .await;
    assert_eq!(status.as_u16(), 400, "{refused}");
    assert_eq!(refused["accepted"], false);
    let (_, rows) = app.get("/permission-requests?session=h3").await;
    assert_eq!(rows["permissionRequests"], json!([]), "nothing stored");
    let db = app.db_path.clone();
    let _dir = app.stop().await;
    assert_rebuilds_to_live(&db);
}

#[tokio::test]
async fn the_sessions_own_events_close_a_request_answered_in_the_terminal() {
    let app = common::spawn_app().await;
    let post = |body: Value| app.post_hook_ok(body);
    let first = post(request_body("t1", "Bash", "rm -rf build")).await;
    let id = first["requestId"].as_str().unwrap().to_string();
    assert_eq!(first["eventId"], first["requestId"]);
    // Another call's end does not answer it; the same call's does.
    post(
        json!({"hook_event_name": "PostToolUse", "session_id": "t1", "tool_name": "Bash",
        "tool_input": {"command": "ls"}}),
    )
    .await;
    let (_, row) = app.get(&format!("/permission-requests/{id}")).await;
    assert_eq!(row["state"], "pending");
    let closing = post(json!({"hook_event_name": "PostToolUse", "session_id": "t1",
        "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}))
    .await;
    let (_, row) = app.get(&format!("/permission-requests/{id}")).await;
    assert_eq!(row["state"], "answered_elsewhere");
    assert_eq!(row["closedBy"], closing["sequence"]);
    // A decision for it now is refused, and stores nothing.
    let before = app.event_count();
    let (_, late) = app
        .post_raw(
            "/permission-response",
            "application/json",
            json!({"requestId": id, "approved": false})
                .to_string()
                .into_bytes(),
        )
        .await;
    assert_eq!(late["resolved"], false);
    assert_eq!(app.event_count(), before);

    // A new prompt closes every request still pending in the session, and only there.
    let a = post(request_body("t2", "Bash", "a")).await["requestId"].clone();
    let b = post(request_body("t2", "Write", "b")).await["requestId"].clone();
    let other = post(request_body("t3", "Bash", "c")).await["requestId"].clone();
    post(json!({"hook_event_name": "UserPromptSubmit", "session_id": "t2", "prompt": "go on"}))
        .await;
    for (id, state) in [
        (a, "answered_elsewhere"),
        (b, "answered_elsewhere"),
        (other, "pending"),
    ] {
        let (_, row) = app
            .get(&format!("/permission-requests/{}", id.as_str().unwrap()))
            .await;
        assert_eq!(row["state"], state, "{row}");
    }
    let (_, pending) = app.get("/permission-requests?state=pending").await;
    assert_eq!(pending["permissionRequests"].as_array().unwrap().len(), 1);
    let db = app.db_path.clone();
    let _dir = app.stop().await;
    assert_rebuilds_to_live(&db);
}

#[tokio::test]
async fn racing_decisions_settle_a_request_once_and_plans_take_only_plan_approve() {
    let app = common::spawn_app().await;
    let id = app.post_hook_ok(request_body("r1", "Bash", "x")).await["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    let decisions = (0..10).map(|i| {
        let body = json!({"requestId": id, "approved": i % 2 == 0}).to_string();
        app.post_raw(
            "/permission-response",
            "application/json",
            body.into_bytes(),
        )
    });
    let answers = futures_util::future::join_all(decisions).await;
    let won: Vec<&Value> = answers
        .iter()
        .filter(|(_, a)| a["resolved"] == true)
        .map(|(_, a)| a)
        .collect();
    assert_eq!(won.len(), 1, "exactly one decision wins: {answers:?}");
    let final_state = &won[0]["request"]["state"];
    assert!(
        answers
            .iter()
            .all(|(_, a)| &a["request"]["state"] == final_state)
    );

    // seed 000's /plan/approve decides an ExitPlanMode request, and only that.
    let plan = json!({"hook_event_name": "PermissionRequest", "session_id": "r1",
        "tool_name": "ExitPlanMode", "tool_input": {"plan": "1. refactor"},
        "hooklogWaitSeconds": 60});
    let plan_id = app.post_hook_ok(plan).await["requestId"].clone();
    let other_id = app.post_hook_ok(request_body("r1", "Edit", "y")).await["requestId"].clone();
    let approve = |id: &Value, approved: bool| {
        let body = json!({"planId": id, "approved": approved}).to_string();
        app.post_raw("/plan/approve", "application/json", body.into_bytes())
    };
    let (status, not_a_plan) = approve(&other_id, true).await;
    assert_eq!(
        (status.as_u16(), &not_a_plan["resolved"]),
        (200, &json!(false))
    );
    assert_eq!(not_a_plan["request"]["state"], "pending");
    let (_, rejected) = approve(&plan_id, false).await;
    assert_eq!(rejected["resolved"], true);
    assert_eq!(rejected["request"]["kind"], "plan");
    assert_eq!(rejected["request"]["state"], "denied");
}

#[tokio::test]
async fn bad_decisions_are_refused_and_change_nothing() {
    let app = common::spawn_app().await;
    let id = app.post_hook_ok(request_body("b1", "Bash", "x")).await["requestId"].clone();
    let before = app.event_count();
    let long = "m".repeat(2001);
    let refused = [
        "not json".to_string(),
        "[]".to_string(),
        json!({}).to_string(),
        json!({"requestId": ""}).to_string(),
        json!({"requestId": id, "approved": "yes"}).to_string(),
        json!({"requestId": id, "message": long}).to_string(),
        json!({"requestId": id, "by": "me"}).to_string(),
    ];
    for body in refused {
        let (status, answer) = app
            .post_raw(
                "/permission-response",
                "application/json",
                body.clone().into_bytes(),
            )
            .await;
        assert_eq!(status.as_u16(), 400, "{body}: {answer}");
        assert_eq!(answer["error"], "invalid_request");
    }
    // A browser request from another site never decides, even with no Origin header.
    let response = app
        .client
        .post(format!("{}/permission-response", app.url))
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"requestId": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert_eq!(app.event_count(), before, "nothing was stored");
    // A request no hook waits on is a record only: no decision is taken for it.
    let mut unwaited = request_body("b1", "Bash", "y");
    unwaited
        .as_object_mut()
        .unwrap()
        .remove("hooklogWaitSeconds");
    let record = app.post_hook_ok(unwaited).await;
    let (_, row) = app
        .get(&format!(
            "/permission-requests/{}",
            record["requestId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(row["waitsUntil"], Value::Null);
    let before = app.event_count();
    let (status, refused) = app
        .post_raw(
            "/permission-response",
            "application/json",
            json!({"requestId": record["requestId"]})
                .to_string()
                .into_bytes(),
        )
        .await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(refused["resolved"], false);
    assert_eq!(refused["reason"], "no_hook_waiting");
    assert_eq!(refused["request"]["state"], "pending");
    // An unknown id: seed 000's `resolved: false`.
    let (status, unknown) = app
        .post_raw(
            "/permission-response",
            "application/json",
            json!({"requestId": "nope"}).to_string().into_bytes(),
        )
        .await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(
        unknown,
        json!({"ok": true, "resolved": false, "reason": "unknown", "request": null})
    );
    let (status, _) = app.get("/permission-requests/nope").await;
    assert_eq!(status.as_u16(), 404);
    let (status, _) = app.get("/permission-requests?state=maybe").await;
    assert_eq!(status.as_u16(), 400);
    let (status, _) = app.get("/permission-requests?before=0").await;
    assert_eq!(status.as_u16(), 400);
    let (status, _) = app
        .get(&format!(
            "/permission-requests/{}?wait=601",
            id.as_str().unwrap()
        ))
        .await;
    assert_eq!(status.as_u16(), 400);
    assert_eq!(app.event_count(), before, "nothing was stored");
    let (_, row) = app
        .get(&format!("/permission-requests/{}", id.as_str().unwrap()))
        .await;
    assert_eq!(row["state"], "pending");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wait_survives_a_restart_of_hooklog() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let bind = format!("127.0.0.1:{}", free_port());
    let mut server = ServerProcess::start(&db, &bind);
    let url = server.url.clone();
    let child = forwarder(
        &url,
        &dir.path().join("spool"),
        60,
        &request_body("k1", "Bash", "deploy"),
    );
    let id = wait_pending(&db).await;
    server.kill();
    let server = ServerProcess::start(&db, &bind);
    let (_, answer) = post(
        &server.url,
        "/permission-response",
        &json!({"requestId": id}),
    )
    .await;
    assert_eq!(answer["resolved"], true);
    let out = tokio::task::spawn_blocking(move || printed(child))
        .await
        .unwrap();
    let printed: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        printed["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow"})
    );
}

/// An aggregator holds other machines' requests (issue 40's "left open"): it shows them, and
/// says whose they are, but a decision or an expiry there is refused, since the hook waits on
/// the agent's own hooklog; its requests stay decidable as before.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_another_hooklog_stored_is_shown_but_decided_only_where_its_hook_waits() {
    let app = common::spawn_app().await;
    let (_, health) = app.get("/health").await;
    let here = health["origin"].as_str().unwrap().to_string();
    assert_ne!(here, "laptop-1");
    // As an aggregator stores it: the stored envelope, with the origin that stored it first.
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let remote = json!({"id": "laptop-req-1", "type": "PermissionRequest",
        "context": {"sessionId": "r1", "source": "hook", "eventTime": now, "receivedAt": now,
            "origin": "laptop-1"},
        "payload": request_body("r1", "Bash", "make deploy")});
    let (status, answer) = app.post_json(&remote).await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    let local = app
        .post_hook_ok(request_body("l1", "Bash", "make test"))
        .await["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    let rows = requests(&app.url, "state=pending").await;
    let origin_of =
        |id: &str| rows.iter().find(|r| r["requestId"] == id).unwrap()["origin"].clone();
    assert_eq!(origin_of("laptop-req-1"), "laptop-1", "{rows:#?}");
    assert_eq!(origin_of(&local), here.as_str(), "{rows:#?}");

    let before = app.event_count();
    let allow = json!({"requestId": "laptop-req-1", "approved": true});
    let (status, refused) = post(&app.url, "/permission-response", &allow).await;
    assert_eq!(status, 200, "{refused}");
    assert_eq!(refused["resolved"], false, "{refused}");
    assert_eq!(refused["reason"], "other_origin", "{refused}");
    assert_eq!(refused["request"]["state"], "pending", "{refused}");
    let (_, expired) = post(
        &app.url,
        "/permission-requests/laptop-req-1/expire",
        &json!({}),
    )
    .await;
    assert_eq!(expired["reason"], "other_origin", "{expired}");
    assert_eq!(app.event_count(), before, "nothing was stored");

    let allow = json!({"requestId": local, "approved": true});
    let (_, decided) = post(&app.url, "/permission-response", &allow).await;
    assert_eq!(decided["resolved"], true, "{decided}");
}

/// A list of a state no index serves (here `expired`) reads at most 5,000 requests a page:
/// with the one expired request older than that, the first page is empty and names where to
/// go on, and the next page finds it and ends the list.
#[tokio::test]
async fn a_page_of_a_rare_state_reads_a_bounded_window_and_says_where_to_go_on() {
    let app = common::spawn_app().await;
    let first = app
        .post_hook_ok(request_body("r0", "Bash", "rm -rf old"))
        .await;
    let id = first["requestId"].as_str().unwrap().to_string();
    let (status, expired) = app
        .post_raw(
            &format!("/permission-requests/{id}/expire"),
            "application/json",
            b"{}".to_vec(),
        )
        .await;
    assert_eq!((status.as_u16(), &expired["resolved"]), (200, &json!(true)));
    // 5,000 newer requests, left pending, over 100 sessions.
    for batch in 0..5 {
        let lines: Vec<Value> = (0..1000)
            .map(|i| {
                let n = batch * 1000 + i;
                json!({"type": "PermissionRequest", "sessionId": format!("r{}", n % 100 + 1),
                    "source": "hook", "payload": {"tool_name": "Bash",
                    "tool_input": {"command": format!("make {n}")}}})
            })
            .collect();
        let (status, answer) = app.post_ndjson(&lines).await;
        assert_eq!(status.as_u16(), 200, "{answer}");
    }
    let requests: i64 = app
        .db()
        .query_row("SELECT COUNT(*) FROM permission_requests", [], |r| r.get(0))
        .unwrap();
    assert_eq!(requests, 5001);

    let (_, page) = app.get("/permission-requests?state=expired").await;
    assert_eq!(page["permissionRequests"], json!([]), "{page}");
    let next = page["nextBefore"]
        .as_i64()
        .expect("a cursor past the window");
    let (_, page) = app
        .get(&format!("/permission-requests?state=expired&before={next}"))
        .await;
    assert_eq!(page["permissionRequests"][0]["requestId"], id.as_str());
    assert_eq!(page["permissionRequests"].as_array().unwrap().len(), 1);
    assert_eq!(page["nextBefore"], Value::Null, "{page}");
    // An indexed list ends at a full page's last row, or with null.
    let (_, pending) = app.get("/permission-requests?state=pending&limit=10").await;
    assert_eq!(pending["permissionRequests"].as_array().unwrap().len(), 10);
    assert_eq!(
        pending["nextBefore"],
        pending["permissionRequests"][9]["sequence"]
    );
    let (_, one) = app.get("/permission-requests?session=r0").await;
    assert_eq!(one["permissionRequests"][0]["state"], "expired");
    assert_eq!(one["nextBefore"], Value::Null);
}
