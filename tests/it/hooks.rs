//! The hook contracts end to end: each recorded session in `fixtures/hooks/` is posted through
//! HTTP, and the projections the seeds describe are read back over REST and from the file.

use crate::common;

use common::{TestApp, fixture, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn get_ok(app: &TestApp, path: &str) -> Value {
    let (status, body) = app.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

fn rows<'a>(body: &'a Value, key: &str) -> &'a Vec<Value> {
    body[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} in {body}"))
}

/// Tool uses of a mission as `(tool, kind, status)`, in the order they started.
fn tools(mission: &Value) -> Vec<(String, String, String)> {
    rows(mission, "toolUses")
        .iter()
        .map(|t| {
            (
                t["tool"].as_str().unwrap().to_string(),
                t["kind"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn triples(list: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    list.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

#[tokio::test]
async fn codex_lifecycle_becomes_a_codex_hero_a_completed_mission_tools_a_permission_and_a_child() {
    let app = spawn_app().await;
    let answers = app.post_fixture("/event", "codex-lifecycle").await;
    let session = fixture("codex-lifecycle")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    for (n, answer) in answers.iter().enumerate() {
        assert_eq!(answer["accepted"], true);
        assert_eq!(answer["sequence"], n + 1);
    }
    let hero_id = answers[0]["heroId"]
        .as_str()
        .expect("SessionStart names its hero");
    assert!(answers.iter().all(|a| a["heroId"] == hero_id));
    let mission_id = answers[1]["missionId"]
        .as_str()
        .expect("the prompt opens a mission");

    let hero = get_ok(&app, &format!("/heroes/{hero_id}")).await;
    assert_eq!(hero["cli"], "codex-cli", "raw Codex stdin is recognised");
    assert_eq!(hero["sessionId"], session);
    assert_eq!(hero["cwd"], "/home/dev/src/api");
    assert_eq!(hero["model"], "gpt-5-codex");
    assert_eq!(hero["state"], "idle", "Stop idles the hero");
    assert_eq!(hero["activeMissionId"], Value::Null);

    let mission = get_ok(&app, &format!("/missions/{mission_id}")).await;
    assert_eq!(mission["kind"], "prompt");
    assert_eq!(mission["state"], "completed");
    assert_eq!(
        mission["title"],
        "Add a health check endpoint and a test for it."
    );
    assert_eq!(mission["summary"], "Added GET /health with a test.");
    // Neither tool's PostToolUse is in the lifecycle, so Stop marks them interrupted.
    assert_eq!(
        tools(&mission),
        triples(&[
            ("Bash", "bash", "interrupted"),
            ("apply_patch", "file", "interrupted"),
            ("apply_patch", "permission", "requested"),
        ])
    );
    let tool_uses = rows(&mission, "toolUses");
    assert_eq!(tool_uses[0]["preview"], "rg -n 'Router::new' src");
    assert_eq!(tool_uses[0]["toolUseId"], "call_bash_1");
    assert_eq!(
        tool_uses[1]["preview"], "src/routes.rs, tests/health.rs",
        "an apply_patch shows the files it touches, never the patch body"
    );
    assert_eq!(tool_uses[2]["requestId"], "req_1");

    let children = rows(&mission, "childMissions");
    assert_eq!(children.len(), 1);
    let child = &children[0];
    assert_eq!(child["kind"], "subagent");
    assert_eq!(child["state"], "completed");
    assert_eq!(child["parentMissionId"], mission_id);
    assert_eq!(child["subagentId"], "sub_reviewer");
    assert_eq!(child["subagentType"], "reviewer");
    assert_eq!(child["summary"], "The route and its test look right.");
    assert_eq!(child["degradedReason"], Value::Null);
    assert_eq!(
        answers[5]["missionId"], child["id"],
        "SubagentStart answers the child"
    );

    // The log holds the normalized body: camelCase fields, the dispatch name as eventName.
    let (_, page) = app.get(&format!("/events?session={session}")).await;
    let stored = &rows(&page, "events")[2];
    assert_eq!(stored["type"], "PreToolUse");
    assert_eq!(stored["context"]["source"], "hook");
    assert_eq!(stored["payload"]["eventName"], "PreToolUse");
    assert_eq!(stored["payload"]["tool"], "Bash");
    assert_eq!(stored["payload"]["toolUseId"], "call_bash_1");
    assert!(stored["payload"].get("hook_event_name").is_none());
    assert!(stored["payload"].get("tool_name").is_none());

    let (_, alerts) = app.get("/alerts").await;
    assert_eq!(
        alerts["alerts"],
        json!([]),
        "nothing degraded, nothing unknown"
    );
}

#[tokio::test]
async fn claude_code_session_builds_two_missions_a_subagent_and_every_tool_use() {
    let app = spawn_app().await;
    let answers = app.post_fixture("/event", "claude-code-session").await;
    let lines = fixture("claude-code-session");
    let session = lines[0]["session_id"].as_str().unwrap();
    let hero_id = answers[0]["heroId"].as_str().unwrap();

    let hero = get_ok(&app, &format!("/heroes/{hero_id}")).await;
    assert_eq!(hero["cli"], "claude-code");
    assert_eq!(hero["state"], "ended", "SessionEnd ends the hero");
    assert_eq!(hero["missionCount"], 3, "two prompts and one subagent");

    let listed = get_ok(&app, &format!("/missions?sessionId={session}")).await;
    let missions = rows(&listed, "missions");
    assert_eq!(missions.len(), 3);
    // Newest first: the second prompt, the subagent, the first prompt.
    let (second, child, first) = (&missions[0], &missions[1], &missions[2]);
    assert_eq!(first["id"], answers[1]["missionId"]);
    assert_eq!(
        first["title"],
        "The checkout total is off by a cent on CI. Find out why and fix it."
    );
    assert_eq!(first["state"], "completed");
    assert_eq!(
        first["summary"],
        "Fixed: line totals now round half to even; the checkout tests pass."
    );
    assert_eq!(second["id"], answers[19]["missionId"]);
    assert_eq!(second["prompt"], "Now commit it.");
    assert_eq!(second["state"], "completed");
    assert_eq!(child["kind"], "subagent");
    assert_eq!(child["parentMissionId"], first["id"]);
    assert_eq!(child["subagentId"], "agent_a1");
    assert_eq!(child["subagentType"], "Explore");
    assert_eq!(child["state"], "completed");
    assert_eq!(
        child["title"], "Find the rounding code",
        "from the Task call that spawned it"
    );

    let first = get_ok(
        &app,
        &format!("/missions/{}", first["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(
        tools(&first),
        triples(&[
            ("Bash", "bash", "completed"),
            ("Task", "subagent", "completed"),
            ("Edit", "file", "completed"),
            ("Edit", "permission", "requested"),
            ("Write", "file", "failed"),
            ("Bash", "bash", "completed"),
        ])
    );
    let first_tools = rows(&first, "toolUses");
    assert_eq!(
        first_tools[2]["preview"],
        "/home/dev/src/shop/checkout/src/totals.rs"
    );
    assert!(
        first_tools[4]["error"]
            .as_str()
            .unwrap()
            .starts_with("EACCES")
    );
    assert!(first_tools[0]["durationMs"].as_i64().unwrap() >= 0);
    // The subagent's own tool call belongs to the subagent's mission.
    let child = get_ok(
        &app,
        &format!("/missions/{}", child["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(tools(&child), triples(&[("Grep", "search", "completed")]));
    let second = get_ok(
        &app,
        &format!("/missions/{}", second["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(tools(&second), triples(&[("Bash", "bash", "completed")]));

    let s = get_ok(&app, &format!("/sessions/{session}")).await;
    assert_eq!(s["state"], "ended");
    assert_eq!(s["source"], "hook");
    assert_eq!(s["cli"], "claude-code");
    assert_eq!(s["eventCount"], lines.len());
    assert_eq!(s["firstSequence"], 1);
    assert_eq!(s["lastSequence"], lines.len());
    assert_eq!(s["permissionMode"], "default");
    assert_eq!(s["model"], "claude-sonnet-4-5");
    assert_eq!(s["heroId"], hero_id);
    assert!(s["endedAt"].is_string());
    assert_eq!(s["transcriptPath"], lines[0]["transcript_path"]);

    let (_, alerts) = app.get("/alerts").await;
    assert_eq!(alerts["alerts"], json!([]));
}

#[tokio::test]
async fn openclaw_type_only_payloads_drive_a_hero_and_its_mission() {
    let app = spawn_app().await;
    let answers = app.post_fixture("/event", "openclaw-session").await;
    let mission_id = answers[0]["missionId"].as_str().expect("hero_active opens");
    assert_eq!(
        answers[1]["missionId"], mission_id,
        "mission_start reuses it"
    );
    let hero = get_ok(
        &app,
        &format!("/heroes/{}", answers[0]["heroId"].as_str().unwrap()),
    )
    .await;
    assert_eq!(hero["cli"], "openclaw");
    assert_eq!(hero["state"], "idle");

    let mission = get_ok(&app, &format!("/missions/{mission_id}")).await;
    assert_eq!(mission["prompt"], "Proofread the install guide");
    assert_eq!(mission["state"], "completed");
    assert_eq!(mission["summary"], "Fixed two typos in the install guide.");
    // Without the agent's tool use ids nothing can close them: they are reported, not running.
    assert_eq!(
        tools(&mission),
        triples(&[
            ("Read", "file", "reported"),
            ("Bash", "bash", "reported"),
            ("Edit", "file", "reported"),
        ])
    );
    let previews: Vec<&Value> = rows(&mission, "toolUses")
        .iter()
        .map(|t| &t["preview"])
        .collect();
    assert_eq!(
        previews,
        [
            &json!("docs/install.md"),
            &json!("vale docs/install.md"),
            &json!("fix two typos")
        ]
    );
    let types: Vec<String> = app.strings("SELECT type FROM events ORDER BY sequence");
    assert_eq!(
        types,
        [
            "hero_active",
            "mission_start",
            "file_access",
            "bash_command",
            "file_access",
            "hero_idle"
        ]
    );
}

#[tokio::test]
async fn normalized_events_move_the_session_through_stuck_and_unstuck() {
    let app = spawn_app().await;
    let lines = fixture("normalized-session");
    let session = lines[0]["sessionId"].as_str().unwrap();
    let mut seen = Vec::new();
    for line in &lines {
        let response = app
            .client
            .post(format!("{}/event/normalized", app.url))
            .json(line)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let sequence = response.headers()["x-hooklog-sequence"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(response.headers().contains_key("x-hooklog-event-id"));
        assert_eq!(
            response.text().await.unwrap(),
            r#"{"ok":true}"#,
            "the seed's answer"
        );
        let s = get_ok(&app, &format!("/sessions/{session}")).await;
        seen.push((sequence, s));
    }
    let state = |i: usize| seen[i].1["state"].as_str().unwrap().to_string();
    assert_eq!(seen[0].0, "1");
    assert_eq!(state(0), "active");
    assert_eq!(seen[0].1["paneId"], "%12");
    assert_eq!(seen[0].1["source"], "normalized");
    assert_eq!(seen[0].1["firstEventTime"], "2024-07-03T06:20:00.000Z");

    assert_eq!(state(1), "stuck");
    assert_eq!(seen[1].1["stuckReason"], "permission");
    assert_eq!(seen[1].1["stuckMessage"], lines[1]["message"]);
    assert_eq!(seen[1].1["stuckSince"], "2024-07-03T06:20:30.000Z");

    // unstuck names only the session: the pane comes from the stored session state.
    assert_eq!(state(2), "active");
    assert_eq!(seen[2].1["paneId"], "%12");
    assert_eq!(seen[2].1["stuckReason"], Value::Null);
    assert_eq!(seen[2].1["stuckSince"], Value::Null);

    assert_eq!(state(3), "stuck");
    assert_eq!(seen[3].1["stuckReason"], "stopped");
    assert_eq!(state(4), "active");
    assert_eq!(state(5), "ended");
    assert_eq!(seen[5].1["endedAt"], "2024-07-03T06:26:40.000Z");
    assert_eq!(seen[5].1["eventCount"], 6);
    let (_, heroes) = app.get("/heroes").await;
    assert_eq!(
        heroes["heroes"],
        json!([]),
        "normalized events make no heroes"
    );
}

#[tokio::test]
async fn the_seeds_handler_bodies_and_hero_id_aliases_work() {
    let app = spawn_app().await;
    let post = |body: Value| app.post_hook_ok(body);
    let spawned = post(
        json!({"eventName": "SessionStart", "type": "internal_hero_spawn",
        "sessionId": "tty-4", "cli": "cursor", "cwd": "/src", "tty": "/dev/pts/4",
        "modelId": "m-1", "faction": "north"}),
    )
    .await;
    let hero_id = spawned["heroId"].as_str().unwrap().to_string();
    // Later bodies name the hero, not the session: the hero's session is found.
    let prompt = post(
        json!({"eventName": "UserPromptSubmit", "type": "hero_active",
        "heroId": hero_id, "prompt": "Tidy the README", "title": "README"}),
    )
    .await;
    assert_eq!(prompt["heroId"], hero_id.as_str());
    let mission_id = prompt["missionId"].as_str().unwrap().to_string();
    post(
        json!({"eventName": "PreToolUse", "type": "bash_command", "sessionId": "tty-4",
        "command": "wc -l README.md", "toolUseId": "b1"}),
    )
    .await;
    post(
        json!({"eventName": "PostToolUse", "sessionId": "tty-4", "toolUseId": "b1", "ok": false,
        "error": "exit 1"}),
    )
    .await;
    post(
        json!({"eventName": "PreToolUse", "type": "awaiting_input", "sessionId": "tty-4",
        "prompt": "Which style?", "options": ["short", "long"], "toolUseId": "q1"}),
    )
    .await;
    let waiting = get_ok(&app, &format!("/heroes/{hero_id}")).await;
    assert_eq!(waiting["state"], "awaiting_input");
    post(
        json!({"eventName": "PostToolUse", "type": "input_received", "sessionId": "tty-4",
        "response": "short", "toolUseId": "q1"}),
    )
    .await;
    let answered = get_ok(&app, &format!("/heroes/{hero_id}")).await;
    assert_eq!(answered["state"], "active");
    post(
        json!({"eventName": "PreToolUse", "type": "permission_request", "sessionId": "tty-4",
        "requestId": "r1", "toolName": "ExitPlanMode", "rationale": "Plan ready for review"}),
    )
    .await;
    let spawn = post(json!({"eventName": "PreToolUse", "type": "subagent_spawn",
        "sessionId": "tty-4", "toolUseId": "t9", "subagentId": "sa-1", "subagentType": "Plan",
        "description": "Outline the sections"}))
    .await;
    let complete = post(
        json!({"eventName": "SubagentStop", "type": "subagent_complete",
        "sessionId": "tty-4", "subagentId": "sa-1", "summary": "Three sections."}),
    )
    .await;
    assert_eq!(spawn["missionId"], complete["missionId"]);
    let stop = post(
        json!({"eventName": "Stop", "type": "hero_idle", "sessionId": "tty-4",
        "summary": "README tidied."}),
    )
    .await;
    assert_eq!(stop["missionId"], mission_id.as_str());

    let hero = get_ok(&app, &format!("/heroes/{hero_id}")).await;
    assert_eq!(
        (
            &hero["cli"],
            &hero["cwd"],
            &hero["tty"],
            &hero["model"],
            &hero["faction"]
        ),
        (
            &json!("cursor"),
            &json!("/src"),
            &json!("/dev/pts/4"),
            &json!("m-1"),
            &json!("north")
        )
    );
    assert_eq!(hero["state"], "idle");
    let mission = get_ok(&app, &format!("/missions/{mission_id}")).await;
    assert_eq!(mission["title"], "README");
    assert_eq!(mission["summary"], "README tidied.");
    assert_eq!(
        tools(&mission),
        triples(&[
            ("Bash", "bash", "failed"),
            ("AskUserQuestion", "input", "completed"),
            ("ExitPlanMode", "permission", "requested"),
        ])
    );
    assert_eq!(
        rows(&mission, "toolUses")[2]["preview"],
        "Plan ready for review"
    );
    let child = &rows(&mission, "childMissions")[0];
    assert_eq!(child["subagentId"], "sa-1");
    assert_eq!(child["title"], "Outline the sections");
    assert_eq!(child["summary"], "Three sections.");

    // A heroId that names no hero is taken as a session id (the seed's alias).
    let aliased = post(json!({"eventName": "SessionStart", "heroId": "plain-session"})).await;
    let s = get_ok(&app, "/sessions/plain-session").await;
    assert_eq!(s["heroId"], aliased["heroId"]);
}
