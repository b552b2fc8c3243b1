//! The hook routes under bad input and odd sequences: every malformed body gets its documented
//! 4xx and stores nothing; events out of the expected order are recorded (with alerts where
//! the seed names them), never refused or crashed on; and the projections they build are
//! exactly what a replay of the log rebuilds.

use crate::common;

use common::{assert_rebuilds_to_live, dump_projections, spawn_app, spawn_app_with};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn malformed_bodies_get_the_documented_4xx_and_the_log_does_not_move() {
    let app = spawn_app_with(|c| c.body_limit = 64 * 1024).await;
    let huge = format!(
        r#"{{"hook_event_name":"UserPromptSubmit","prompt":"{}"}}"#,
        "x".repeat(70 * 1024)
    );
    // (route, body, expected status, expected body fields)
    let cases: Vec<(&str, String, StatusCode, Value)> = vec![
        ("/event", "{not json".into(), StatusCode::BAD_REQUEST, json!({"error": "invalid_request"})),
        ("/event", "".into(), StatusCode::BAD_REQUEST, json!({"error": "invalid_request"})),
        ("/event", "[{}]".into(), StatusCode::BAD_REQUEST, json!({"error": "invalid_request"})),
        ("/event", "\"Stop\"".into(), StatusCode::BAD_REQUEST, json!({"error": "invalid_request"})),
        ("/event", "42".into(), StatusCode::BAD_REQUEST, json!({"error": "invalid_request"})),
        ("/event", "null".into(), StatusCode::BAD_REQUEST, json!({"error": "invalid_request"})),
        (
            "/event",
            r#"{"hook_event_name":"Stop","session_id":7}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "details": {"field": "session_id"}}),
        ),
        (
            "/event",
            r#"{"hook_event_name":"PreToolUse","tool_use_id":["a"]}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "details": {"field": "tool_use_id"}}),
        ),
        (
            "/event",
            r#"{"hook_event_name":"SubagentStart","agent_id":{"id":1}}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "details": {"field": "agent_id"}}),
        ),
        (
            "/event",
            r#"{"eventName":false}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "details": {"field": "eventName"}}),
        ),
        (
            "/event",
            r#"{"hook_event_name":7}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "details": {"field": "hook_event_name"}}),
        ),
        (
            "/event",
            format!(r#"{{"eventName":"{}"}}"#, "E".repeat(200)),
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "details": {"field": "eventName"}}),
        ),
        (
            "/event",
            r#"{"eventName":"Stop","sessionId":""}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "details": {"field": "sessionId"}}),
        ),
        ("/event", huge.clone(), StatusCode::PAYLOAD_TOO_LARGE, json!({"error": "payload_too_large"})),
        ("/event/normalized", "{not json".into(), StatusCode::BAD_REQUEST, json!({"error": "Invalid JSON"})),
        ("/event/normalized", "".into(), StatusCode::BAD_REQUEST, json!({"error": "Invalid JSON"})),
        ("/event/normalized", "[1]".into(), StatusCode::BAD_REQUEST, json!({"error": "Invalid or missing event type"})),
        ("/event/normalized", "{}".into(), StatusCode::BAD_REQUEST, json!({"error": "Invalid or missing event type"})),
        (
            "/event/normalized",
            r#"{"type":"paused","sessionId":"s","timestamp":1}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"error": "Invalid or missing event type"}),
        ),
        (
            "/event/normalized",
            r#"{"type":"registered","sessionId":"s","cwd":"/","transcriptPath":"/t","timestamp":1}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"error": "Missing required field: paneId", "field": "paneId"}),
        ),
        (
            "/event/normalized",
            r#"{"type":"ended","sessionId":"s","timestamp":"yesterday"}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"field": "timestamp"}),
        ),
        (
            "/event/normalized",
            r#"{"type":"stuck","sessionId":"s","paneId":"%1","cwd":"/","transcriptPath":"/t","reason":"tired","message":"m","timestamp":1}"#.into(),
            StatusCode::BAD_REQUEST,
            json!({"field": "reason"}),
        ),
        ("/event/normalized", huge, StatusCode::PAYLOAD_TOO_LARGE, json!({"error": "Payload too large"})),
    ];
    for (route, body, status, expected) in &cases {
        let (got, answer) = app
            .post_raw(route, "application/json", body.clone().into_bytes())
            .await;
        let shown = &body[..body.len().min(80)];
        assert_eq!(got, *status, "{route} {shown}: {answer}");
        for (key, value) in expected.as_object().unwrap() {
            if key == "details" {
                assert_eq!(
                    answer["details"]["field"], value["field"],
                    "{route} {shown}"
                );
            } else {
                assert_eq!(&answer[key], value, "{route} {shown}: {answer}");
            }
        }
        if *route == "/event" {
            assert_eq!(answer["accepted"], false, "{shown}: {answer}");
            assert!(answer["message"].is_string(), "{shown}: {answer}");
        }
    }
    // The seed's exact bodies, byte for byte.
    let (_, answer) = app
        .post_raw("/event/normalized", "application/json", b"oops".to_vec())
        .await;
    assert_eq!(answer, json!({"error": "Invalid JSON"}));
    let (_, answer) = app
        .post_raw("/event/normalized", "application/json", b"{}".to_vec())
        .await;
    assert_eq!(answer, json!({"error": "Invalid or missing event type"}));

    assert_eq!(app.event_count(), 0, "no refused body stored anything");
    let sessions: i64 = app
        .db()
        .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sessions, 0);
    let (_, health) = app.get("/health").await;
    assert_eq!(health["writer"], "ok");
}

#[tokio::test]
async fn bodies_without_a_known_dispatch_are_stored_and_alerted() {
    let app = spawn_app().await;
    let (status, answer) = app
        .post_hook(
            "/event",
            &json!({"session_id": "s1", "note": "what is this"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["accepted"], true);
    assert_eq!(answer["sequence"], 1);
    let (_, answer) = app
        .post_hook("/event", &json!({"type": "set_race", "sessionId": "s1"}))
        .await;
    assert_eq!(answer["accepted"], true);
    let (_, answer) = app
        .post_hook(
            "/event",
            &json!({"hook_event_name": "UserPromptCancel", "session_id": "s1"}),
        )
        .await;
    assert_eq!(answer["accepted"], true);

    let (_, page) = app.get("/events").await;
    let types: Vec<&Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["type"])
        .collect();
    assert_eq!(
        types,
        [
            &json!("unrecognized"),
            &json!("unrecognized"),
            &json!("UserPromptCancel")
        ]
    );
    // One alert per unknown type and source: the second `unrecognized` is under the first's.
    let (_, alerts) = app.get("/alerts?kind=unknownEventType").await;
    let types: Vec<&Value> = alerts["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["details"]["type"])
        .collect();
    assert_eq!(types, [&json!("unrecognized"), &json!("UserPromptCancel")]);
}

#[tokio::test]
async fn out_of_order_events_are_recorded_with_the_seeds_alerts() {
    let app = spawn_app().await;
    let post = |body: Value| app.post_hook_ok(body);
    // A session first seen mid-way (hooklog started after the agent): its hero is made.
    let first = post(
        json!({"hook_event_name": "PreToolUse", "session_id": "late",
        "tool_name": "Read", "tool_use_id": "r1", "tool_input": {"file_path": "a.rs"}}),
    )
    .await;
    assert!(first["heroId"].is_string());
    // A PostToolUse whose PreToolUse was never seen.
    post(
        json!({"hook_event_name": "PostToolUse", "session_id": "late", "tool_name": "Bash",
        "tool_use_id": "never-opened"}),
    )
    .await;
    // A second PostToolUse for a closed call changes nothing.
    post(json!({"hook_event_name": "PostToolUse", "session_id": "late", "tool_use_id": "r1"}))
        .await;
    post(json!({"hook_event_name": "PostToolUse", "session_id": "late", "tool_use_id": "r1", "ok": false})).await;
    // A subagent stop for a subagent never started, and a start with no id and no prompt mission.
    post(json!({"hook_event_name": "SubagentStop", "session_id": "late", "agent_id": "ghost"}))
        .await;
    let orphan = post(json!({"hook_event_name": "SubagentStart", "session_id": "late"})).await;
    // Stop twice: the second finds nothing to complete.
    post(json!({"hook_event_name": "UserPromptSubmit", "session_id": "late", "prompt": "go"}))
        .await;
    let stop = post(json!({"hook_event_name": "Stop", "session_id": "late"})).await;
    let again = post(json!({"hook_event_name": "Stop", "session_id": "late"})).await;
    assert!(stop["missionId"].is_string());
    assert!(again.get("missionId").is_none(), "{again}");
    // A hook event with no session at all.
    post(json!({"hook_event_name": "Stop"})).await;

    // In the order they started (the list opens with the newest).
    let (_, tools) = app.get("/tool-uses?sessionId=late").await;
    let mut tools = tools["toolUses"].as_array().unwrap().clone();
    tools.reverse();
    assert_eq!(tools.len(), 2);
    assert_eq!(
        (&tools[0]["toolUseId"], &tools[0]["status"]),
        (&json!("r1"), &json!("completed"))
    );
    assert_eq!(tools[1]["toolUseId"], "never-opened");
    assert_eq!(tools[1]["status"], "completed");
    assert_eq!(tools[1]["openedEventId"], Value::Null);
    assert_eq!(tools[1]["startedAt"], Value::Null);

    let orphan = app
        .get(&format!(
            "/missions/{}",
            orphan["missionId"].as_str().unwrap()
        ))
        .await
        .1;
    assert_eq!(orphan["degradedReason"], "missing_subagent_id");
    assert_eq!(orphan["parentMissionId"], Value::Null);

    let (_, alerts) = app.get("/alerts").await;
    let kinds: Vec<(String, String)> = alerts["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().to_string(),
                a["details"]["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("missing_hero", "session_not_started"),
        ("lineage_degraded", "missing_subagent_id"),
        ("lineage_degraded", "unknown_subagent"),
        ("missing_hero", "no_session"),
    ]
    .iter()
    .map(|(k, r)| (k.to_string(), r.to_string()))
    .collect();
    // The ghost stop names an agent id, so it is an unknown subagent; the start names none.
    let mut sorted = kinds.clone();
    sorted.sort();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(sorted, expected_sorted, "{kinds:?}");
    let (_, health) = app.get("/health").await;
    assert_eq!(health["writer"], "ok");
    let db_path = app.db_path.clone();
    let _dir = app.stop().await;
    assert_rebuilds_to_live(&db_path);
}

#[tokio::test]
async fn long_prompts_are_cut_to_8000_characters_and_the_cut_is_recorded() {
    let app = spawn_app().await;
    let prompt = "é".repeat(10_000);
    let (_, answer) = app
        .post_hook(
            "/event",
            &json!({"hook_event_name": "UserPromptSubmit", "session_id": "s",
            "prompt": prompt}),
        )
        .await;
    let (_, event) = app
        .get(&format!("/events/{}", answer["eventId"].as_str().unwrap()))
        .await;
    assert_eq!(
        event["payload"]["prompt"].as_str().unwrap().chars().count(),
        8_000
    );
    assert_eq!(
        event["payload"]["hooklogTruncated"],
        json!({"prompt": 10_000})
    );
    let (_, mission) = app
        .get(&format!(
            "/missions/{}",
            answer["missionId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(mission["prompt"].as_str().unwrap().chars().count(), 8_000);
}

#[tokio::test]
async fn an_event_id_header_makes_a_hook_post_idempotent() {
    let app = spawn_app().await;
    let body = json!({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "hi"});
    let post = || async {
        let response = app
            .client
            .post(format!("{}/event", app.url))
            .header("x-hooklog-event-id", "hook-run-1")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.json::<Value>().await.unwrap()
    };
    let first = post().await;
    let second = post().await;
    assert_eq!(first["eventId"], "hook-run-1");
    assert!(first.get("duplicate").is_none());
    assert_eq!(second["duplicate"], true);
    assert_eq!(second["sequence"], first["sequence"]);
    assert_eq!(second["heroId"], first["heroId"]);
    assert_eq!(second["missionId"], first["missionId"]);
    assert_eq!(app.event_count(), 1);
    let missions: i64 = app
        .db()
        .query_row("SELECT COUNT(*) FROM missions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(missions, 1);
}

#[tokio::test]
async fn projection_routes_check_their_parameters_and_404_unknown_ids() {
    let app = spawn_app().await;
    app.post_fixture("/event", "codex-lifecycle").await;
    for path in [
        "/missions?limit=0",
        "/missions?limit=1001",
        "/missions?limit=ten",
        "/missions?limit=-1",
        "/missions?state=paused",
        "/missions?colour=red",
        "/heroes?limit=0",
        "/sessions?state=sleeping",
        "/tool-uses?status=done",
    ] {
        let (status, body) = app.get(path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"], "invalid_request", "{path}");
    }
    for path in ["/missions/nope", "/heroes/nope", "/sessions/nope"] {
        let (status, body) = app.get(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(body["error"], "not_found");
    }
    let (_, all) = app.get("/missions").await;
    assert_eq!(all["missions"].as_array().unwrap().len(), 2);
    let (_, one) = app.get("/missions?limit=1").await;
    assert_eq!(one["missions"].as_array().unwrap().len(), 1);
    assert_eq!(one["missions"][0]["kind"], "subagent", "newest first");
    let hero = &app.get("/heroes").await.1["heroes"][0];
    let by_hero = app
        .get(&format!(
            "/missions?heroId={}&state=completed",
            hero["id"].as_str().unwrap()
        ))
        .await
        .1;
    assert_eq!(by_hero["missions"].as_array().unwrap().len(), 2);
    let (_, none) = app.get("/missions?sessionId=other").await;
    assert_eq!(none["missions"], json!([]));
    let (_, sessions) = app.get("/sessions?state=idle&source=hook").await;
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1);
    let (_, requested) = app.get("/tool-uses?status=requested").await;
    assert_eq!(requested["toolUses"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_live_projections_equal_a_rebuild_from_the_log() {
    let app = spawn_app().await;
    for name in ["claude-code-session", "codex-lifecycle", "openclaw-session"] {
        app.post_fixture("/event", name).await;
    }
    app.post_fixture("/event/normalized", "normalized-session")
        .await;
    app.post_hook(
        "/event",
        &json!({"hook_event_name": "SubagentStop", "session_id": "x"}),
    )
    .await;
    // Lineage named by id, pointing at missions already closed: a rebuild that let go of
    // closed rows must read them back.
    let post = |body: Value| app.post_hook_ok(body);
    let prompt = post(
        json!({"hook_event_name": "UserPromptSubmit", "session_id": "ids",
        "prompt": "p"}),
    )
    .await;
    post(json!({"hook_event_name": "Stop", "session_id": "ids"})).await;
    let child = post(
        json!({"hook_event_name": "SubagentStart", "session_id": "ids",
        "agent_id": "a1", "parent_mission_id": prompt["missionId"]}),
    )
    .await;
    post(json!({"hook_event_name": "SubagentStop", "session_id": "ids", "agent_id": "a1"})).await;
    post(
        json!({"hook_event_name": "SubagentStop", "session_id": "ids",
        "child_mission_id": child["missionId"], "last_assistant_message": "again"}),
    )
    .await;
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    let mut conn = rusqlite::Connection::open(&db_path).unwrap();
    let live = dump_projections(&conn);
    assert!(
        live.len() >= 30,
        "the fixtures fill the projections: {}",
        live.len()
    );
    let tx = conn.transaction().unwrap();
    let replayed = hooklog::store::rebuild::rebuild(&tx).unwrap();
    assert_eq!(replayed as usize, 26 + 8 + 6 + 6 + 1 + 5);
    assert_eq!(
        dump_projections(&tx),
        live,
        "a rebuild reproduces every row"
    );
    drop(tx);
    drop(conn);
    assert_rebuilds_to_live(&db_path);
    drop(dir);
}

#[tokio::test]
async fn review_findings_stay_fixed() {
    let app = spawn_app().await;
    let post = |body: Value| app.post_hook_ok(body);
    // A permission request carrying the call's own tool_use_id does not hide the call's end.
    post(json!({"hook_event_name": "UserPromptSubmit", "session_id": "a", "prompt": "p"})).await;
    post(
        json!({"hook_event_name": "PreToolUse", "session_id": "a", "tool_name": "apply_patch",
        "tool_use_id": "c1"}),
    )
    .await;
    post(
        json!({"hook_event_name": "PermissionRequest", "session_id": "a",
        "tool_name": "apply_patch", "tool_use_id": "c1"}),
    )
    .await;
    post(json!({"hook_event_name": "PostToolUse", "session_id": "a", "tool_use_id": "c1"})).await;
    let (_, tools) = app.get("/tool-uses?sessionId=a").await;
    let statuses: Vec<&Value> = tools["toolUses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["status"])
        .collect();
    // Newest first: the permission request, then the call.
    assert_eq!(statuses, [&json!("requested"), &json!("completed")]);

    // A re-posted Stop is answered with the mission the first post completed, even though
    // the Stop also closed a child mission and interrupted tools.
    post(json!({"hook_event_name": "SubagentStart", "session_id": "a", "agent_id": "sub"})).await;
    let stop = json!({"hook_event_name": "Stop", "session_id": "a"});
    let send = |body: &Value| {
        app.client
            .post(format!("{}/event", app.url))
            .header("x-hooklog-event-id", "stop-1")
            .json(body)
            .send()
    };
    let first: Value = send(&stop).await.unwrap().json().await.unwrap();
    let again: Value = send(&stop).await.unwrap().json().await.unwrap();
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["missionId"], first["missionId"]);
    let (_, mission) = app
        .get(&format!(
            "/missions/{}",
            first["missionId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(mission["kind"], "prompt");

    // SessionStart after SessionEnd brings the session back: idle, no longer ended.
    post(json!({"hook_event_name": "SessionEnd", "session_id": "a"})).await;
    post(json!({"hook_event_name": "SessionStart", "session_id": "a", "source": "resume"})).await;
    let (_, s) = app.get("/sessions/a").await;
    assert_eq!((&s["state"], &s["endedAt"]), (&json!("idle"), &Value::Null));

    // A parentMissionId of another session is not taken as this subagent's parent.
    let other =
        post(json!({"hook_event_name": "UserPromptSubmit", "session_id": "b", "prompt": "q"}))
            .await;
    let child = post(
        json!({"eventName": "SubagentStart", "sessionId": "a", "subagentId": "x",
        "parentMissionId": other["missionId"]}),
    )
    .await;
    let (_, child) = app
        .get(&format!(
            "/missions/{}",
            child["missionId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(child["parentMissionId"], Value::Null);
    assert_eq!(child["degradedReason"], "missing_parent_mission");

    // A null camelCase field does not hide its snake_case alias.
    let filed =
        post(json!({"hook_event_name": "Stop", "sessionId": null, "session_id": "c"})).await;
    assert!(filed["heroId"].is_string(), "{filed}");

    // Long tool output is cut where it is, not refused.
    let output = "line\n".repeat(5_000);
    let answer = post(json!({"hook_event_name": "PostToolUse", "session_id": "c",
        "tool_use_id": "big", "tool_response": {"stdout": output}}))
    .await;
    let (_, event) = app
        .get(&format!("/events/{}", answer["eventId"].as_str().unwrap()))
        .await;
    assert_eq!(
        event["payload"]["toolResponse"]["stdout"]
            .as_str()
            .unwrap()
            .len(),
        10_000
    );
    assert_eq!(
        event["payload"]["hooklogTruncated"]["toolResponse.stdout"],
        25_000
    );

    // /event refuses an unknown query parameter in its own envelope.
    let (status, body) = app
        .post_raw("/event?bogus=1", "application/json", b"{}".to_vec())
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["accepted"], false);

    // /event/normalized judges the body before the headers, and keeps its shape on a 413.
    let response = app
        .client
        .post(format!("{}/event/normalized", app.url))
        .header("x-hooklog-event-id", "")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"error": "Invalid JSON"})
    );
    let (status, body) = app
        .post_raw(
            "/event/normalized",
            "application/json",
            vec![b' '; 2 * 1024 * 1024],
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body, json!({"error": "Payload too large"}));
    let db_path = app.db_path.clone();
    let _dir = app.stop().await;
    assert_rebuilds_to_live(&db_path);
}

/// `X-Hooklog-Event-Time` (what a spooling forwarder sends) becomes the event's time; a value
/// that is not an RFC 3339 time is refused and stores nothing.
#[tokio::test]
async fn an_event_time_header_sets_the_event_time() {
    let app = spawn_app().await;
    let body = json!({"hook_event_name": "Stop", "session_id": "timed"});
    let post = |time: &'static str| {
        app.client
            .post(format!("{}/event", app.url))
            .header("x-hooklog-event-time", time)
            .json(&body)
            .send()
    };
    let refused = post("yesterday").await.unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["accepted"], false);
    assert_eq!(refused["details"]["field"], "x-hooklog-event-time");
    assert_eq!(app.event_count(), 0);

    let stored = post("2026-01-02T03:04:05+01:00").await.unwrap();
    assert_eq!(stored.status(), StatusCode::OK);
    assert_eq!(
        app.strings("SELECT event_time FROM events"),
        ["2026-01-02T02:04:05.000Z"]
    );
}

/// `/event/normalized` with an idempotency key already used by another event: a 409 in the
/// seed's body shape (the producer's mistake), not the seed's 500 for hooklog's own failures.
#[tokio::test]
async fn a_reused_event_id_on_normalized_is_a_conflict_not_a_server_error() {
    let app = spawn_app().await;
    let post = |session: &'static str| {
        app.client
            .post(format!("{}/event/normalized", app.url))
            .header("x-hooklog-event-id", "adapter-1")
            .json(&json!({"type": "registered", "sessionId": session, "paneId": "%1",
                          "cwd": "/src", "transcriptPath": "/t.jsonl", "timestamp": 1764500000000i64}))
            .send()
    };
    assert_eq!(post("a").await.unwrap().status(), StatusCode::OK);
    assert_eq!(
        post("a").await.unwrap().status(),
        StatusCode::OK,
        "same event again"
    );
    let conflict = post("b").await.unwrap();
    assert_eq!(conflict.status(), StatusCode::CONFLICT);
    let body: Value = conflict.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("adapter-1"),
        "{body}"
    );
    assert_eq!(app.event_count(), 1);
}

/// Issue 41: the writer finds a subagent's mission by its id among the session's active
/// subagents, and a starting subagent's `Task` call among the running spawners only (migration
/// 0023's indexes, and a replay's maps of them). Two subagents run at once beside a tool left
/// running; each tool call goes to the mission of the subagent it names, each subagent takes
/// its own `Task` call's description as its title, one stopping leaves the other active, and a
/// rebuild gives the same rows.
#[tokio::test]
async fn concurrent_subagents_each_get_their_own_calls_and_a_rebuild_agrees() {
    let app = spawn_app().await;
    let post = |body: Value| app.post_hook_ok(body);
    let s = "many-subagents";
    let prompt = post(
        json!({"hook_event_name": "UserPromptSubmit", "session_id": s,
        "prompt": "fan out"}),
    )
    .await;
    // A tool left running, then two Task calls, each followed by the subagent it spawns.
    post(
        json!({"hook_event_name": "PreToolUse", "session_id": s, "tool_name": "Bash",
        "tool_use_id": "bash-1", "tool_input": {"command": "sleep 600"}}),
    )
    .await;
    let mut children = Vec::new();
    for (call, agent, what) in [
        ("task-1", "a1", "first look"),
        ("task-2", "a2", "second look"),
    ] {
        post(
            json!({"hook_event_name": "PreToolUse", "session_id": s, "tool_name": "Task",
            "tool_use_id": call, "tool_input": {"description": what, "prompt": what,
            "subagent_type": "Explore"}}),
        )
        .await;
        let child = post(json!({"hook_event_name": "SubagentStart", "session_id": s,
            "agent_id": agent, "agent_type": "Explore"}))
        .await;
        children.push(child["missionId"].as_str().unwrap().to_string());
    }
    assert_ne!(children[0], children[1]);
    for (agent, call) in [("a1", "grep-1"), ("a2", "grep-2"), ("a1", "grep-3")] {
        post(
            json!({"hook_event_name": "PreToolUse", "session_id": s, "agent_id": agent,
            "tool_name": "Grep", "tool_use_id": call, "tool_input": {"pattern": call}}),
        )
        .await;
    }
    post(json!({"hook_event_name": "SubagentStop", "session_id": s, "agent_id": "a1"})).await;
    post(
        json!({"hook_event_name": "PreToolUse", "session_id": s, "agent_id": "a2",
        "tool_name": "Grep", "tool_use_id": "grep-4", "tool_input": {"pattern": "grep-4"}}),
    )
    .await;

    let (status, missions) = app.get(&format!("/missions?session={s}&limit=100")).await;
    assert_eq!(status, StatusCode::OK, "{missions}");
    let mission = |id: &str| -> Value {
        missions["missions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} in {missions}"))
    };
    for (child, title, state) in [
        (&children[0], "first look", "completed"),
        (&children[1], "second look", "active"),
    ] {
        let m = mission(child);
        assert_eq!(m["title"], title, "{m}");
        assert_eq!(m["state"], state, "{m}");
        assert_eq!(m["parentMissionId"], prompt["missionId"], "{m}");
    }
    let (status, tools) = app.get(&format!("/tool-uses?session={s}&limit=100")).await;
    assert_eq!(status, StatusCode::OK, "{tools}");
    let mission_of = |call: &str| -> Value {
        tools["toolUses"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["toolUseId"] == call)
            .map(|t| t["missionId"].clone())
            .unwrap_or_else(|| panic!("{call} in {tools}"))
    };
    assert_eq!(mission_of("grep-1"), children[0].as_str());
    assert_eq!(mission_of("grep-3"), children[0].as_str());
    assert_eq!(mission_of("grep-2"), children[1].as_str());
    assert_eq!(mission_of("grep-4"), children[1].as_str());
    assert_eq!(mission_of("bash-1"), prompt["missionId"]);

    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    assert_rebuilds_to_live(&db_path);
    drop(dir);
}
