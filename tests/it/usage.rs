//! `GET /usage`, `hooklog usage` and a session's usage on `GET /sessions/{id}`, over the
//! transcript fixtures imported with `hooklog import`: the tokens and cost per day, session,
//! model and turn are the ones computed by hand in `fixtures/transcripts/README.md`, days move
//! with `tz`, a model without a price is listed rather than costed at zero, and bad input is
//! a 400 envelope.

use crate::common;

use common::{TestApp, start};
use hooklog::config::Config;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const CLAUDE_SESSION: &str = "7f3c2a10-5d1e-4b8a-9c2f-1a2b3c4d5e6f";
const CODEX_SESSION: &str = "019a4e6c-7b21-7d30-a1c4-3f5e8d9b0c12";
/// Sonnet 0.039219 + Haiku 0.005369 (fixtures/transcripts/README.md, prices of 2026-12-02,
/// unchanged in the table of 2026-12-03).
const CLAUDE_COST: f64 = 0.044588;
const HAIKU_COST: f64 = 0.005369;
const CODEX_COST: f64 = 0.018125;

fn hooklog(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(args)
        .output()
        .expect("run hooklog")
}

/// A server over a database the transcript fixtures were imported into.
async fn app_with_fixtures(adjust: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/transcripts");
    for (flag, sub) in [
        ("--claude-projects", "claude/projects"),
        ("--codex-sessions", "codex/sessions"),
    ] {
        let dir = fixtures.join(sub);
        let output = hooklog(&[
            "import",
            flag,
            dir.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{output:?}");
    }
    let mut config = Config::for_path(&db);
    adjust(&mut config);
    start(config, dir).await
}

fn group<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == key)
        .unwrap_or_else(|| panic!("no group {key}: {report}"))
}

/// The event id of the transcript prompt whose record uuid is `uuid` (a turn's key).
fn prompt_id(app: &TestApp, uuid: &str) -> String {
    app.db()
        .query_row(
            "SELECT event_id FROM events WHERE type = 'TranscriptPrompt' AND json_extract(payload, '$.uuid') = ?1",
            [uuid],
            |r| r.get(0),
        )
        .unwrap()
}

fn close(value: &Value, expected: f64) -> bool {
    (value.as_f64().unwrap() - expected).abs() < 1e-9
}

fn tokens(g: &Value) -> [u64; 6] {
    [
        "inputTokens",
        "outputTokens",
        "cacheWrite5mTokens",
        "cacheWrite1hTokens",
        "cacheReadTokens",
        "calls",
    ]
    .map(|f| g[f].as_u64().unwrap())
}

#[tokio::test]
async fn usage_by_session_model_day_and_turn_matches_the_hand_computed_table() {
    let app = app_with_fixtures(|_| {}).await;

    let (status, by_session) = app.get("/usage?by=session").await;
    assert_eq!(status, 200, "{by_session}");
    assert_eq!(by_session["pricesAsOf"], "2026-12-03");
    let claude = group(&by_session, CLAUDE_SESSION);
    assert_eq!(tokens(claude), [42, 1_015, 5_500, 300, 58_500, 6]);
    assert!(close(&claude["costUsd"], CLAUDE_COST), "{claude}");
    assert_eq!(claude["unpricedModels"], serde_json::json!([]));
    let codex = group(&by_session, CODEX_SESSION);
    assert_eq!(tokens(codex), [5_000, 1_000, 0, 0, 15_000, 2]);
    assert_eq!(codex["reasoningTokens"], 300);
    assert!(close(&codex["costUsd"], CODEX_COST), "{codex}");
    assert!(close(
        &by_session["total"]["costUsd"],
        CLAUDE_COST + CODEX_COST
    ));

    let (_, by_model) = app.get("/usage?by=model").await;
    let haiku = group(&by_model, "claude-haiku-4-5-20251001");
    assert_eq!(tokens(haiku), [19, 260, 3_000, 0, 3_000, 2]);
    assert!(close(&haiku["costUsd"], HAIKU_COST));
    assert_eq!(
        by_model["groups"].as_array().unwrap().len(),
        3,
        "no <synthetic> row"
    );

    // UTC days: turn 1 (with its subagent) on the 2nd; turn 2 and Codex on the 3rd.
    let (_, by_day) = app.get("/usage?by=day").await;
    assert_eq!(
        tokens(group(&by_day, "2026-11-02")),
        [37, 955, 5_500, 0, 43_500, 5]
    );
    assert_eq!(
        tokens(group(&by_day, "2026-11-03")),
        [5_005, 1_060, 0, 300, 30_000, 3]
    );
    // One hour west, turn 2 (00:10 UTC) was still on the 2nd.
    let (_, west) = app.get("/usage?by=day&tz=-01:00").await;
    assert_eq!(west["utcOffsetMinutes"], -60);
    assert_eq!(
        tokens(group(&west, "2026-11-02")),
        [42, 1_015, 5_500, 300, 58_500, 6]
    );

    // Turn 1 holds its subagent's calls.
    let (_, by_turn) = app
        .get(&format!("/usage?by=turn&session={CLAUDE_SESSION}"))
        .await;
    let first = group(
        &by_turn,
        &prompt_id(&app, "c0a80101-0000-4000-8000-000000000001"),
    );
    assert_eq!(first["calls"], 5);
    let second = group(
        &by_turn,
        &prompt_id(&app, "c0a80101-0000-4000-8000-000000000008"),
    );
    assert_eq!(tokens(second), [5, 60, 0, 300, 15_000, 1]);

    let (_, projects) = app.get("/usage?by=project").await;
    assert_eq!(group(&projects, "/home/dev/shop")["calls"], 6);
    assert_eq!(group(&projects, "/home/dev/api")["calls"], 2);

    // Calls since a time after all of them: nothing.
    let (_, none) = app.get("/usage?since=2026-11-04T00:00:00Z").await;
    assert_eq!(none["groups"], serde_json::json!([]));
    assert_eq!(none["total"]["calls"], 0);

    // A session's page carries its usage.
    let (status, session) = app.get(&format!("/sessions/{CLAUDE_SESSION}")).await;
    assert_eq!(status, 200);
    assert_eq!(session["id"], CLAUDE_SESSION);
    assert_eq!(session["state"], "ended");
    assert!(
        close(&session["usage"]["costUsd"], CLAUDE_COST),
        "{session}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_model_missing_from_the_price_table_is_listed_not_priced_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.json");
    // An override that corrects Sonnet's price and knows no more models than the table.
    std::fs::write(
        &prices,
        r#"{"asOf":"2026-12-24","models":{"claude-sonnet-4-5":{"input":6,"output":30,"cacheWrite5m":7.5,"cacheWrite1h":12,"cacheRead":0.6}}}"#,
    )
    .unwrap();
    let mut table = hooklog::projection::prices::load(Some(&prices)).unwrap();
    table.models.remove("claude-haiku-4-5");
    let app = app_with_fixtures(|c| c.prices = std::sync::Arc::new(table)).await;
    let (_, report) = app.get("/usage?by=session").await;
    assert_eq!(report["pricesAsOf"], "2026-12-24");
    let claude = group(&report, CLAUDE_SESSION);
    assert_eq!(
        claude["unpricedModels"],
        serde_json::json!(["claude-haiku-4-5-20251001"])
    );
    assert_eq!(tokens(claude)[0], 42, "its tokens still count");
    // Said plainly, with how to add the price.
    for note in [&claude["costNote"], &report["total"]["costNote"]] {
        let note = note.as_str().unwrap_or_else(|| panic!("{report}"));
        assert!(
            note.starts_with("cost leaves out claude-haiku-4-5-20251001 (no published price"),
            "{note}"
        );
        assert!(note.contains("`hooklog serve --prices FILE`"), "{note}");
    }
    assert_eq!(group(&report, CODEX_SESSION)["costNote"], Value::Null);
    // Sonnet at twice the price, Haiku not at all: the price is read when asked, no rebuild.
    assert!(close(&claude["costUsd"], 2.0 * 0.039219), "{claude}");
    app.stop().await;
}

#[tokio::test]
async fn bad_usage_queries_are_refused_with_the_error_envelope() {
    let app = app_with_fixtures(|_| {}).await;
    for query in [
        "by=week",
        "tz=Europe/Paris",
        "tz=%2B15:00",
        "since=yesterday-ish",
        "colour=blue",
    ] {
        let (status, body) = app.get(&format!("/usage?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body["error"], "invalid_request", "{query}: {body}");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooklog_usage_prints_a_table_and_the_json_answer() {
    let app = app_with_fixtures(|_| {}).await;
    let url = app.url.clone();
    let (table, json) = tokio::task::spawn_blocking(move || {
        let table = hooklog(&["usage", "--by", "model", "--url", &url]);
        let json = hooklog(&["usage", "--by", "session", "--json", "--url", &url]);
        (table, json)
    })
    .await
    .unwrap();
    assert!(table.status.success(), "{table:?}");
    let table = String::from_utf8(table.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("model"), "{table}");
    let sonnet = lines
        .iter()
        .find(|l| l.starts_with("claude-sonnet-4-5-20250929"))
        .unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = sonnet.split_whitespace().collect();
    assert_eq!(
        &cells[1..7],
        ["4", "23", "755", "2500", "300", "55500"],
        "{table}"
    );
    assert_eq!(cells[7], "0.0392", "{table}");
    assert!(lines.iter().any(|l| l.starts_with("total")), "{table}");
    assert!(table.contains("prices as of 2026-12-03"), "{table}");
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["by"], "session");
    assert!(close(&group(&json, CODEX_SESSION)["costUsd"], CODEX_COST));
    app.stop().await;
}

/// A live Claude Code session whose hooks name no model: its hero takes the model of its
/// transcript's main thread (a subagent on another model, or a notice Claude Code wrote
/// itself, does not change it), follows a switch of model, and a rebuild gives the same rows.
/// The gateway-style usage (cache writes beside a split of zeros) counts its writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_hero_takes_its_main_threads_model_from_the_transcript() {
    const SESSION: &str = "5e55a0de-0000-4000-8000-00000000c1de";
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("projects").join(SESSION).join("subagents");
    std::fs::create_dir_all(&agents).unwrap();
    let main = dir.path().join("projects").join(format!("{SESSION}.jsonl"));
    let agent = agents.join("agent-a1.jsonl");
    let db = dir.path().join("hooklog.db");
    let app = start(crate::follow::reading(&db, dir.path()), dir).await;
    let append = |path: &Path, line: String| {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(file, "{line}").unwrap();
    };
    let assistant = |uuid: &str, at: &str, model: &str, extra: &str| {
        format!(
            r#"{{"type":"assistant","uuid":"{uuid}","sessionId":"{SESSION}","timestamp":"2026-12-03T09:00:{at}.000Z","requestId":"req-{uuid}","cwd":"/w/app"{extra},"message":{{"id":"msg-{uuid}","model":"{model}","role":"assistant","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":3,"output_tokens":5,"cache_creation_input_tokens":10,"cache_read_input_tokens":0,"cache_creation":{{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}}}}}}}}"#
        )
    };
    let hook = |event: &str, extra: serde_json::Value| {
        let mut body = serde_json::json!({
            "session_id": SESSION,
            "transcript_path": main,
            "cwd": "/w/app",
            "hook_event_name": event,
        });
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let hero_model = |db: &Path| -> Option<String> {
        common::open_read_only(db)
            .query_row(
                "SELECT model FROM heroes WHERE session_id = ?1",
                [SESSION],
                |r| r.get(0),
            )
            .unwrap()
    };
    let messages = |db: &Path| -> i64 {
        common::open_read_only(db)
            .query_row(
                "SELECT COUNT(*) FROM events WHERE type = 'TranscriptMessage'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let deadline = std::time::Duration::from_secs(10);
    let hero = hooklog::projection::heroes::hero_id(SESSION);

    app.post_hook_ok(hook(
        "UserPromptSubmit",
        serde_json::json!({"prompt": "hi"}),
    ))
    .await;
    let (_, before) = app.get(&format!("/heroes/{hero}")).await;
    assert_eq!(before["model"], Value::Null, "the hook names no model");
    append(
        &main,
        format!(
            r#"{{"type":"user","uuid":"u1","sessionId":"{SESSION}","timestamp":"2026-12-03T09:00:00.000Z","cwd":"/w/app","message":{{"role":"user","content":"hi"}}}}"#
        ),
    );
    append(&main, assistant("a1", "01", "claude-opus-4-8", ""));
    app.post_hook_ok(hook("Stop", serde_json::json!({}))).await;
    common::wait_for(deadline, "the hero's model", || {
        hero_model(&app.db_path).as_deref() == Some("claude-opus-4-8")
    })
    .await;
    let (_, shown) = app.get(&format!("/heroes/{hero}")).await;
    assert_eq!(shown["model"], "claude-opus-4-8", "{shown}");

    // A subagent on Haiku: its calls count, the hero's model stays.
    append(
        &agent,
        assistant(
            "s1",
            "02",
            "claude-haiku-4-5-20251001",
            r#","isSidechain":true,"agentId":"a1""#,
        ),
    );
    app.post_hook_ok(hook(
        "SubagentStop",
        serde_json::json!({"agent_id": "a1", "agent_transcript_path": agent}),
    ))
    .await;
    common::wait_for(deadline, "the subagent's message", || {
        messages(&app.db_path) == 2
    })
    .await;
    assert_eq!(hero_model(&app.db_path).as_deref(), Some("claude-opus-4-8"));
    let (_, session) = app.get(&format!("/sessions/{SESSION}")).await;
    assert_eq!(session["model"], "claude-opus-4-8", "{session}");

    // A switch of model (`/model sonnet`), then a notice Claude Code wrote itself.
    append(&main, assistant("a2", "03", "claude-sonnet-5", ""));
    append(
        &main,
        format!(
            r#"{{"type":"assistant","uuid":"a3","sessionId":"{SESSION}","timestamp":"2026-12-03T09:00:04.000Z","message":{{"id":"m3","model":"<synthetic>","content":[{{"type":"text","text":"API Error"}}],"usage":{{"input_tokens":0,"output_tokens":0}}}}}}"#
        ),
    );
    app.post_hook_ok(hook("Stop", serde_json::json!({}))).await;
    common::wait_for(deadline, "the main thread's new messages", || {
        messages(&app.db_path) == 4
    })
    .await;
    assert_eq!(hero_model(&app.db_path).as_deref(), Some("claude-sonnet-5"));

    // Every call's 10 cache writes count (the split of zeros is not the whole story).
    let (_, usage) = app
        .get(&format!("/usage?by=session&session={SESSION}"))
        .await;
    let total = &usage["total"];
    assert_eq!(total["calls"], 3, "{usage}");
    assert_eq!(total["cacheWrite5mTokens"], 30, "{usage}");
    assert_eq!(total["cacheWrite1hTokens"], 0, "{usage}");

    let dir = app.stop().await;
    common::assert_rebuilds_to_live(&db);
    drop(dir);
}

/// A session whose transcripts were imported before any hook of it arrived: the hero its first
/// hook makes starts with the main thread's model (Sonnet), not its subagent's (Haiku) nor a
/// `<synthetic>` notice's, as the session row says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hero_made_after_its_transcript_was_imported_starts_with_its_model() {
    let app = app_with_fixtures(|_| {}).await;
    let (_, session) = app.get(&format!("/sessions/{CLAUDE_SESSION}")).await;
    assert_eq!(session["model"], "claude-sonnet-4-5-20250929", "{session}");
    app.post_hook_ok(serde_json::json!({
        "session_id": CLAUDE_SESSION,
        "cwd": "/home/dev/shop",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "go on",
    }))
    .await;
    let hero = hooklog::projection::heroes::hero_id(CLAUDE_SESSION);
    let (status, shown) = app.get(&format!("/heroes/{hero}")).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["model"], "claude-sonnet-4-5-20250929", "{shown}");
    let db = app.db_path.clone();
    let dir = app.stop().await;
    common::assert_rebuilds_to_live(&db);
    drop(dir);
}
