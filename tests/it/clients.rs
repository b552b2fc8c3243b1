//! The agents' real clients as they are today: Claude Code's HTTP hooks (whose 2xx JSON answers
//! Claude Code validates as hook output), the hook catalogue of its current reference, and the
//! envelope other hook servers' scripts post to `/events`.

use crate::common;

use common::{TestApp, assert_rebuilds_to_live, dump_projections, fixture, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const DOCUMENTED_HOST: &str = "http://127.0.0.1:2468";

/// The Claude Code settings docs/hooks.md tells users to write for HTTP hooks.
fn documented_http_config() -> Value {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/hooks.md"))
        .expect("docs/hooks.md");
    let block = docs
        .split("```json")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .find(|block| block.contains(r#""type": "http""#))
        .expect("a JSON block with HTTP hooks");
    serde_json::from_str(block).expect("the documented settings are JSON")
}

/// For each event of the documented settings: its hook's type and the URL it posts to (for a
/// command hook, the URL its curl command names).
fn documented_urls() -> BTreeMap<String, (String, String)> {
    let config = documented_http_config();
    let mut urls = BTreeMap::new();
    for (event, groups) in config["hooks"].as_object().expect("hooks") {
        let hook = &groups[0]["hooks"][0];
        let kind = hook["type"].as_str().unwrap().to_string();
        let url = match kind.as_str() {
            "http" => hook["url"].as_str().unwrap().to_string(),
            _ => hook["command"]
                .as_str()
                .unwrap()
                .split('\'')
                .find(|part| part.starts_with(DOCUMENTED_HOST))
                .expect("the curl command names hooklog's URL")
                .to_string(),
        };
        urls.insert(event.clone(), (kind, url));
    }
    urls
}

#[tokio::test]
async fn every_claude_code_body_posted_the_documented_http_way_gets_an_empty_200() {
    let urls = documented_urls();
    // The documented settings hook every event `hooks install` installs for Claude Code, and
    // only SessionStart (which Claude Code runs only as a command hook) goes through curl.
    let installed: BTreeSet<String> = hooklog::forward::install::Agent::Claude
        .events()
        .iter()
        .map(|(event, _)| event.to_string())
        .collect();
    assert_eq!(urls.keys().cloned().collect::<BTreeSet<_>>(), installed);
    for (event, (kind, _)) in &urls {
        let expected = if event == "SessionStart" {
            "command"
        } else {
            "http"
        };
        assert_eq!(kind, expected, "{event}");
    }

    let app = spawn_app().await;
    let mut posted = 0;
    for name in ["claude-code-session", "claude-code-catalogue"] {
        for body in fixture(name) {
            let event = body["hook_event_name"].as_str().unwrap();
            let Some((_, url)) = urls.get(event) else {
                continue; // not an event the documented settings hook
            };
            let url = url.replace(DOCUMENTED_HOST, &app.url);
            let response = app
                .client
                .post(&url)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{event}");
            let sequence = response.headers()["x-hooklog-sequence"].to_str().unwrap();
            let id = response.headers()["x-hooklog-event-id"]
                .to_str()
                .unwrap()
                .to_string();
            posted += 1;
            assert_eq!(sequence, posted.to_string(), "{event}");
            assert!(response.bytes().await.unwrap().is_empty(), "{event}: body");
            let (status, stored) = app.get(&format!("/events/{id}")).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(stored["type"], event);
        }
    }
    assert!(posted >= 40, "{posted} bodies posted");
    assert_eq!(app.event_count(), posted as i64);

    // A Stop, the event whose strict output schema made JSON answers fail, on its own.
    let stop =
        json!({"session_id": "s-stop", "hook_event_name": "Stop", "stop_hook_active": false});
    let response = app
        .client
        .post(format!("{}/event?reply=empty", app.url))
        .json(&stop)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.content_length(), Some(0));

    // A refusal stays non-2xx (a non-blocking error to Claude Code) and stores nothing.
    let before = app.event_count();
    let (status, answer) = app
        .post_raw(
            "/event?reply=empty",
            "application/json",
            b"{not json".to_vec(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["accepted"], false);
    let (status, _) = app
        .post_raw(
            "/event?reply=maybe",
            "application/json",
            stop.to_string().into_bytes(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(app.event_count(), before);

    // Without the flag, seed 000's answer is unchanged.
    let answer = app.post_hook_ok(stop).await;
    assert_eq!(answer["accepted"], true);
    assert_eq!(answer["sequence"], before + 1);
}

async fn unknown_alerts(app: &TestApp) -> Vec<Value> {
    let (status, body) = app.get("/alerts?kind=unknownEventType").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["alerts"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_thousand_events_of_a_new_type_raise_one_alert_until_it_is_acknowledged() {
    let app = spawn_app().await;
    let future = |i: usize| json!({"session_id": format!("s{}", i % 7), "hook_event_name": "FutureHook", "n": i});
    for i in 0..1_000 {
        app.post_hook_ok(future(i)).await;
    }
    // The same name from another source is another alert; a second unknown name is another.
    let (status, body) = app
        .post_json(&json!([
            {"type": "FutureHook", "source": "importer", "payload": {}},
            {"type": "FutureHook", "source": "importer", "payload": {}},
            {"type": "OtherFutureHook", "source": "hook", "sessionId": "s1", "payload": {}},
        ]))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(app.event_count(), 1_003);
    let alerts = unknown_alerts(&app).await;
    let raised: Vec<(Value, Value)> = alerts
        .iter()
        .map(|a| (a["details"]["type"].clone(), a["details"]["source"].clone()))
        .collect();
    assert_eq!(
        raised,
        vec![
            (json!("FutureHook"), json!("hook")),
            (json!("FutureHook"), json!("importer")),
            (json!("OtherFutureHook"), json!("hook")),
        ]
    );
    assert_eq!(alerts[0]["eventSequence"], 1, "raised by the first one");

    // Once acknowledged, the next one raises a new alert (and only one).
    let id = alerts[0]["id"].as_i64().unwrap();
    let (status, _) = app
        .post_raw(
            &format!("/alerts/{id}/ack"),
            "application/json",
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for i in 0..3 {
        app.post_hook_ok(future(i)).await;
    }
    let alerts = unknown_alerts(&app).await;
    assert_eq!(alerts.len(), 4);
    assert_eq!(alerts[3]["details"]["type"], "FutureHook");
    assert_eq!(alerts[3]["eventSequence"], 1_005);
    assert!(alerts[3]["acknowledgedAt"].is_null());

    let dir = app.stop().await;
    assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}

#[tokio::test]
async fn the_current_claude_code_catalogue_is_known_and_projected() {
    let app = spawn_app().await;
    let bodies = fixture("claude-code-catalogue");
    let answers = app.post_fixture("/event", "claude-code-catalogue").await;
    let session = bodies[0]["session_id"].as_str().unwrap();
    assert!(
        unknown_alerts(&app).await.is_empty(),
        "no unknownEventType for the documented events"
    );
    let (_, alerts) = app.get("/alerts").await;
    assert_eq!(alerts["alerts"], json!([]), "no alert at all");

    // CwdChanged moves the session and its hero; the compaction is on the session.
    let (_, row) = app.get(&format!("/sessions/{session}")).await;
    assert_eq!(row["cwd"], "/home/dev/src/shop/web");
    assert_eq!(row["compactions"], 1);
    let post_compact = bodies
        .iter()
        .position(|b| b["hook_event_name"] == "PostCompact")
        .unwrap();
    let (_, compacted) = app
        .get(&format!(
            "/events/{}",
            answers[post_compact]["eventId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(row["lastCompactAt"], compacted["context"]["eventTime"]);
    assert_eq!(row["state"], "ended");
    let (_, hero) = app
        .get(&format!("/heroes/{}", row["heroId"].as_str().unwrap()))
        .await;
    assert_eq!(hero["cwd"], "/home/dev/src/shop/web");

    // The denied call and the two tasks are on the prompt mission.
    let prompt = bodies
        .iter()
        .position(|b| b["hook_event_name"] == "UserPromptSubmit")
        .unwrap();
    let mission_id = answers[prompt]["missionId"].as_str().unwrap();
    let (_, mission) = app.get(&format!("/missions/{mission_id}")).await;
    let rows: Vec<(&str, &str, &str, &str)> = mission["toolUses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tool"].as_str().unwrap(),
                t["kind"].as_str().unwrap(),
                t["status"].as_str().unwrap(),
                t["preview"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                "task",
                "task",
                "completed",
                "Read src/totals.rs and list the rounding paths"
            ),
            (
                "task",
                "task",
                "open",
                "Add a test for the discount rounding"
            ),
            (
                "Read",
                "file",
                "completed",
                "/home/dev/src/shop/src/totals.rs"
            ),
            ("Bash", "bash", "denied", "rm -rf build"),
        ]
    );
    let denied = &mission["toolUses"][3];
    assert_eq!(
        denied["error"],
        "Auto mode classifier: recursive delete outside the allowed commands"
    );
    assert!(denied["finishedAt"].is_string());
    assert_eq!(mission["toolUses"][0]["toolUseId"], "task:1");
    // The open task outlives the turn's Stop and the SessionEnd: a task is not a running call.
    assert_eq!(mission["state"], "completed");

    // Each event is stored under its own name, and `tail` has something to say of it.
    let stored = app.strings("SELECT type FROM events ORDER BY sequence");
    let sent: Vec<&str> = bodies
        .iter()
        .map(|b| b["hook_event_name"].as_str().unwrap())
        .collect();
    assert_eq!(stored, sent);
    let (_, page) = app.get("/events?limit=100").await;
    for envelope in page["events"].as_array().unwrap() {
        let line = hooklog::cli::tail::summary(&envelope["payload"]);
        let quiet = ["SessionStart"];
        let t = envelope["type"].as_str().unwrap();
        assert!(
            !line.is_empty() || quiet.contains(&t),
            "tail says nothing of {t}"
        );
    }

    let dir = app.stop().await;
    assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}

/// What another hook server's script posts for one raw hook body.
fn hook_server_envelope(body: &Value, timestamp_ms: i64) -> Value {
    json!({
        "source_app": "switching-app",
        "session_id": body["session_id"],
        "hook_event_type": body["hook_event_name"],
        "payload": body,
        "timestamp": timestamp_ms,
        "model_name": "",
        "tool_name": body["tool_name"],
    })
}

/// The projections with event ids written as their sequence (`#3`) and the source app left
/// out, so two logs of the same events compare equal; alerts (stamped with the time each
/// event was received) are compared by kind and message.
fn comparable(app: &TestApp) -> Vec<String> {
    let db = app.db();
    let ids: Vec<(String, i64)> = db
        .prepare("SELECT event_id, sequence FROM events")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut rows = dump_projections(&db);
    rows.retain(|row| !row.starts_with("alerts:"));
    for row in &mut rows {
        for (id, sequence) in &ids {
            *row = row.replace(id, &format!("#{sequence}"));
        }
        *row = row.replace("'switching-app'", "NULL");
    }
    let alerts = app.strings("SELECT kind || ': ' || message FROM alerts ORDER BY id");
    rows.extend(alerts);
    rows
}

#[tokio::test]
async fn a_hook_server_envelope_on_events_projects_like_the_bare_body_on_event() {
    let bare = spawn_app().await;
    let wrapped = spawn_app().await;
    let start_ms = 1_764_590_400_000_i64;
    let mut n = 0;
    for name in [
        "claude-code-session",
        "codex-lifecycle",
        "claude-code-catalogue",
    ] {
        let bodies = fixture(name);
        for (i, body) in bodies.iter().enumerate() {
            n += 1;
            let at = start_ms + n * 1_000;
            let time = chrono::DateTime::from_timestamp_millis(at)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let response = bare
                .client
                .post(format!("{}/event", bare.url))
                .header("x-hooklog-event-time", time)
                .json(body)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            // Most as one object per request, as the script posts them; the last three of each
            // session as one array.
            if i + 3 < bodies.len() {
                let (status, answer) = wrapped.post_json(&hook_server_envelope(body, at)).await;
                assert_eq!(status, StatusCode::OK, "{answer}");
                assert_eq!(answer["events"][0]["sequence"], n);
            }
        }
        let tail: Vec<Value> = bodies
            .iter()
            .enumerate()
            .skip(bodies.len() - 3)
            .map(|(i, b)| {
                let k = n - (bodies.len() - 1 - i) as i64;
                hook_server_envelope(b, start_ms + k * 1_000)
            })
            .collect();
        let (status, answer) = wrapped.post_json(&Value::Array(tail)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    assert_eq!(wrapped.event_count(), n);
    assert_eq!(
        wrapped.strings("SELECT DISTINCT source FROM events"),
        vec!["hook"]
    );
    let first_time = wrapped.strings("SELECT event_time FROM events WHERE sequence = 1");
    assert_eq!(first_time, vec!["2025-12-01T12:00:01.000Z"]);
    assert_eq!(comparable(&wrapped), comparable(&bare));
    assert!(
        comparable(&bare)
            .iter()
            .any(|r| r.starts_with("tool_uses:")),
        "the comparison covers tool uses"
    );

    // The source app is on the sessions, and filters them.
    let (_, listed) = wrapped.get("/sessions?source_app=switching-app").await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 3);
    let (_, none) = wrapped.get("/sessions?source_app=other").await;
    assert_eq!(none["sessions"], json!([]));
    let (_, one) = bare.get("/sessions?source_app=switching-app").await;
    assert_eq!(one["sessions"], json!([]));

    // A bad envelope is refused whole, naming the item and the field.
    let before = wrapped.event_count();
    let (status, answer) = wrapped
        .post_json(&json!([
            hook_server_envelope(&json!({"session_id": "x", "hook_event_name": "Stop"}), start_ms),
            {"source_app": "a", "hook_event_type": "Stop", "payload": [1]},
        ]))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["details"]["index"], 1);
    assert_eq!(answer["details"]["field"], "payload");
    assert_eq!(wrapped.event_count(), before);

    let dir = wrapped.stop().await;
    assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}
