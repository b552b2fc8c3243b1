//! Claude Code (the real CLI) against hooklog: with the forwarder installed by `hooklog hooks
//! install`, with the documented HTTP hooks block, while hooklog is down, resumed, and with a
//! tool its permission mode refuses.

use super::model::{CLAUDE_CACHE_READ, CLAUDE_CACHE_WRITE, CLAUDE_INPUT, CLAUDE_OUTPUT};
use super::{DEADLINE, Rig, cli, drift, page, usage_matches};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

const PER_CALL: [u64; 4] = [
    CLAUDE_INPUT,
    CLAUDE_OUTPUT,
    CLAUDE_CACHE_WRITE,
    CLAUDE_CACHE_READ,
];

/// Claude Code in print mode, offline: the scripted model, no telemetry, root allowed to skip
/// permission prompts (`IS_SANDBOX`), and every hook's outcome printed on stdout.
fn claude(rig: &Rig, bin: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = rig.command(bin);
    command
        .env("ANTHROPIC_BASE_URL", &rig.model.url)
        .env("ANTHROPIC_API_KEY", "sk-scripted")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("IS_SANDBOX", "1")
        .args(["-p", "--output-format", "stream-json", "--verbose"])
        .arg("--include-hook-events")
        .args(args);
    let mut command = tokio::process::Command::from(command);
    command.stdout(Stdio::piped()).stderr(Stdio::null());
    command.kill_on_drop(true);
    command
}

/// A session kept open over several prompts (`--input-format stream-json`).
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Every line Claude Code printed.
    lines: Vec<Value>,
}

impl Session {
    fn start(rig: &Rig, bin: &Path, args: &[&str]) -> Session {
        let mut command = claude(rig, bin, &["--input-format", "stream-json"]);
        command.args(args).stdin(Stdio::piped());
        let mut child = command.spawn().expect("start claude");
        Session {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()).lines(),
            child,
            lines: Vec::new(),
        }
    }

    /// Sends one prompt and reads until its turn's `result` line.
    async fn prompt(&mut self, text: &str) -> Value {
        let message = json!({"type": "user", "message": {"role": "user", "content": text}});
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
        loop {
            let line = self
                .next_line()
                .await
                .expect("claude ended before its result");
            if line["type"] == "result" {
                return line;
            }
        }
    }

    async fn next_line(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(DEADLINE, self.stdout.next_line())
            .await
            .expect("claude printed nothing for too long")
            .unwrap()?;
        let value: Value = serde_json::from_str(&line).unwrap_or(json!({ "text": line }));
        self.lines.push(value.clone());
        Some(value)
    }

    /// Closes its input (the session ends) and reads the rest of what it prints.
    async fn close(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        while self.next_line().await.is_some() {}
        let status = tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "claude exited with {status}");
        self.lines
    }
}

/// One `claude -p PROMPT` run to its end; every line it printed.
async fn run(rig: &Rig, bin: &Path, prompt: &str, args: &[&str]) -> Vec<Value> {
    let mut command = claude(rig, bin, args);
    command.arg(prompt).stdin(Stdio::null());
    let out = tokio::time::timeout(DEADLINE, command.output())
        .await
        .expect("claude -p took too long")
        .unwrap();
    assert!(out.status.success(), "claude -p failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or(json!({ "text": l })))
        .collect()
}

/// The session id of a run's output.
fn session_of(lines: &[Value]) -> String {
    lines
        .iter()
        .find_map(|l| l["session_id"].as_str())
        .expect("a session id printed")
        .to_string()
}

/// Every hook Claude Code ran reported `success`; returns the events they ran for.
fn assert_hooks_succeeded(lines: &[Value]) -> Vec<String> {
    let responses: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "system" && l["subtype"] == "hook_response")
        .collect();
    assert!(!responses.is_empty(), "no hook ran");
    for response in &responses {
        assert_eq!(
            response["outcome"], "success",
            "a hook did not succeed: {response}"
        );
    }
    responses
        .iter()
        .map(|r| r["hook_event"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Waits until the session shows the usage of `calls` scripted model calls.
async fn wait_usage(rig: &Rig, session: &str, calls: u64) {
    rig.wait_until(
        &format!("/sessions/{session}"),
        &format!("the usage of {calls} model calls"),
        |s| usage_matches(&s["usage"], calls, PER_CALL),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_with_the_installed_forwarder_is_recorded_turn_by_turn() {
    let Some(bin) = cli("claude") else { return };
    let rig = Rig::start().await;
    rig.hooklog(&["hooks", "install", "--cli", "claude"]);
    let mut session = Session::start(&rig, &bin, &["--dangerously-skip-permissions"]);

    // Three turns: two commands (3 model calls), a failing one (2), none (1). Usage is
    // current after each turn, not one call behind.
    session
        .prompt("look around\nrun: echo one\nrun: echo two")
        .await;
    let id = session_of(&session.lines);
    wait_usage(&rig, &id, 3).await;
    session.prompt("now this\nrun: false").await;
    wait_usage(&rig, &id, 5).await;
    session.prompt("thanks").await;
    wait_usage(&rig, &id, 6).await;
    let lines = session.close().await;
    // First, so that a run against a new release reports what it sent before any assertion.
    drift::check(&rig, &bin).await;
    let ran = assert_hooks_succeeded(&lines);
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
    ] {
        assert!(
            ran.iter().any(|e| e == event),
            "no {event} hook ran: {ran:?}"
        );
    }

    let ended = rig
        .wait_until(&format!("/sessions/{id}"), "the session's end", |s| {
            s["state"] == "ended"
        })
        .await;
    assert_eq!(ended["cli"], "claude-code");
    assert_eq!(
        rig.tool_uses(&id).await,
        [
            ("echo one".into(), "completed".into(), None),
            ("echo two".into(), "completed".into(), None),
            ("false".into(), "failed".into(), Some("Exit code 1".into())),
        ]
    );
    let missions = rig.get(&format!("/missions?sessionId={id}")).await;
    let states: Vec<&str> = missions["missions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["completed"; 3], "{missions:#}");
    // The hero runs on the model Claude Code asked the model server for (claude-opus-4-8 by
    // default in 2.1.197), which its hooks do not name: the transcript does.
    assert_eq!(rig.model.models().len(), 1, "{:?}", rig.model.models());
    let heroes = rig.get("/heroes").await;
    assert_eq!(
        heroes["heroes"][0]["model"],
        rig.model.models()[0],
        "{heroes:#}"
    );
    // Priced as Claude Code prices it: its own cost of the session (each turn's result line
    // says it) is what hooklog's price table gives for the same tokens.
    let claude_says = lines
        .iter()
        .rev()
        .find_map(|l| (l["type"] == "result").then(|| l["total_cost_usd"].as_f64()))
        .flatten()
        .expect("the session's cost on its last result line");
    let usage = &ended["usage"];
    assert_eq!(
        usage["unpricedModels"],
        json!([]),
        "hooklog has no price for the model Claude Code uses by default: {usage}"
    );
    let cost = usage["costUsd"].as_f64().unwrap();
    assert!(
        (cost - claude_says).abs() < 1e-9,
        "hooklog {cost}, Claude Code {claude_says}"
    );
    rig.assert_no_alert().await;
    rig.assert_rebuilds();
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_resumed_goes_on_in_the_same_session_and_a_new_one_is_another() {
    let Some(bin) = cli("claude") else { return };
    let rig = Rig::start().await;
    rig.hooklog(&["hooks", "install", "--cli", "claude"]);
    let skip = ["--dangerously-skip-permissions"];
    let first = run(&rig, &bin, "first\nrun: echo first", &skip).await;
    assert_hooks_succeeded(&first);
    let id = session_of(&first);
    wait_usage(&rig, &id, 2).await;

    let resumed = run(
        &rig,
        &bin,
        "again\nrun: echo again",
        &["--resume", &id, skip[0]],
    )
    .await;
    assert_hooks_succeeded(&resumed);
    assert_eq!(session_of(&resumed), id, "--resume keeps the session id");
    wait_usage(&rig, &id, 4).await;
    let previews: Vec<String> = rig.tool_uses(&id).await.into_iter().map(|t| t.0).collect();
    assert_eq!(previews, ["echo first", "echo again"]);

    let other = run(&rig, &bin, "other\nrun: echo other", &skip).await;
    let other_id = session_of(&other);
    assert_ne!(other_id, id);
    wait_usage(&rig, &other_id, 2).await;
    let sessions = rig.get("/sessions").await;
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 2);
    rig.assert_no_alert().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_claude_code_session_while_hooklog_is_down_arrives_through_the_spool() {
    let Some(bin) = cli("claude") else { return };
    let mut rig = Rig::start().await;
    rig.hooklog(&["hooks", "install", "--cli", "claude"]);
    rig.kill_server();
    let skip = ["--dangerously-skip-permissions"];
    let offline = run(&rig, &bin, "offline\nrun: echo offline\nrun: false", &skip).await;
    assert_hooks_succeeded(&offline);
    let id = session_of(&offline);
    rig.restart_server();
    // The next hook that runs delivers the spool first.
    let online = run(&rig, &bin, "online", &skip).await;
    assert_hooks_succeeded(&online);

    rig.wait_until(&format!("/sessions/{id}"), "the spooled session", |s| {
        s["state"] == "ended"
    })
    .await;
    assert_eq!(
        rig.tool_uses(&id).await,
        [
            ("echo offline".into(), "completed".into(), None),
            ("false".into(), "failed".into(), Some("Exit code 1".into())),
        ]
    );
    // In the order the hooks ran, each once.
    let types: Vec<String> = rig.db().prepare(
        "SELECT type FROM events WHERE session_id = ?1 AND source = 'hook' ORDER BY session_sequence",
    ).unwrap().query_map([&id], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    assert_eq!(
        types,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PreToolUse",
            "PostToolUseFailure",
            "Stop",
            "SessionEnd"
        ]
    );
    rig.assert_no_alert().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_with_the_documented_http_hooks_block_reports_success() {
    let Some(bin) = cli("claude") else { return };
    let rig = Rig::start().await;
    let settings = documented_http_block().replace("http://127.0.0.1:2468", &rig.url);
    std::fs::create_dir_all(rig.home.join(".claude")).unwrap();
    std::fs::write(rig.home.join(".claude/settings.json"), settings).unwrap();
    let skip = ["--dangerously-skip-permissions"];
    let lines = run(&rig, &bin, "http\nrun: echo http\nrun: false", &skip).await;
    let ran = assert_hooks_succeeded(&lines);
    assert!(ran.iter().any(|e| e == "Stop"), "{ran:?}");
    let id = session_of(&lines);
    rig.wait_until(&format!("/sessions/{id}"), "the session's end", |s| {
        s["state"] == "ended"
    })
    .await;
    wait_usage(&rig, &id, 3).await;
    assert_eq!(
        rig.tool_uses(&id).await,
        [
            ("echo http".into(), "completed".into(), None),
            ("false".into(), "failed".into(), Some("Exit code 1".into())),
        ]
    );
    rig.assert_no_alert().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_claude_code_refuses_without_a_hook_shows_as_denied_with_its_reason() {
    let Some(bin) = cli("claude") else { return };
    let rig = Rig::start().await;
    rig.hooklog(&["hooks", "install", "--cli", "claude"]);
    // The default permission mode in print mode: a command that writes is refused, and no
    // hook says so (no PostToolUse, no PermissionDenied).
    let lines = run(&rig, &bin, "make it\nrun: touch made.txt", &[]).await;
    assert_hooks_succeeded(&lines);
    let result = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash");
    assert!(!rig.project.join("made.txt").exists());
    let id = session_of(&lines);
    let uses = rig
        .wait_until(&format!("/tool-uses?sessionId={id}"), "the refusal", |t| {
            t["toolUses"][0]["status"] == "denied"
        })
        .await;
    // Claude Code's own words (2.1.197: "touch in '.../made.txt' was blocked. ...").
    let error = uses["toolUses"][0]["error"].as_str().unwrap_or("");
    assert!(
        error.contains("made.txt"),
        "the transcript's reason: {uses:#}"
    );
    rig.assert_no_alert().await;
}

/// The `~/.claude/settings.json` block docs/hooks.md gives for HTTP hooks, as it is written
/// there.
fn documented_http_block() -> String {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/hooks.md")).unwrap();
    let start = doc
        .find("```json\n{\n  \"hooks\": {\n    \"SessionStart\"")
        .expect("the HTTP hooks block in docs/hooks.md");
    let block = &doc[start + "```json\n".len()..];
    let end = block.find("```").unwrap();
    let block = &block[..end];
    serde_json::from_str::<Value>(block).expect("the documented block is JSON");
    block.to_string()
}

/// The session page on what the real Claude Code made (issue 45): three turns told by its
/// hooks and its transcript read as one story in Chromium (`page::assert_reads_as_one_story`).
#[tokio::test(flavor = "multi_thread")]
async fn claude_codes_session_reads_as_one_story_in_chromium() {
    let Some(bin) = cli("claude") else { return };
    let rig = Rig::start().await;
    rig.hooklog(&["hooks", "install", "--cli", "claude"]);
    let mut session = Session::start(&rig, &bin, &["--dangerously-skip-permissions"]);
    session
        .prompt("look around\nrun: echo one\nrun: echo two")
        .await;
    let id = session_of(&session.lines);
    wait_usage(&rig, &id, 3).await;
    session.prompt("now this\nrun: false").await;
    wait_usage(&rig, &id, 5).await;
    session.prompt("thanks").await;
    wait_usage(&rig, &id, 6).await;
    session.close().await;
    rig.wait_until(&format!("/sessions/{id}"), "the session's end", |s| {
        s["state"] == "ended"
    })
    .await;
    // The hooks and the transcript each told of the three calls: the page shows them once.
    let told_twice: i64 = rig
        .db()
        .query_row(
            "SELECT count(*) FROM events e, json_each(e.payload, '$.toolCalls') c
             WHERE e.session_id = ?1 AND e.type = 'TranscriptMessage'",
            [&id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(told_twice, 3, "the transcript tells each call too");
    assert_eq!(rig.tool_uses(&id).await.len(), 3);
    page::assert_reads_as_one_story(&rig, &id, 3, PER_CALL, "claude-code-session").await;
}
