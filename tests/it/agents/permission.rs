//! Claude Code's interactive TUI (in a pseudo-terminal, [`super::pty`]) in its default
//! permission mode: a command it would ask about goes to the `PermissionRequest` hook first,
//! and the hook's decision answers it, with no key pressed (issue 40).

use super::pty::Tui;
use super::{Rig, cli};
use serde_json::{Value, json};
use std::path::PathBuf;

/// A command that default mode asks about (it writes a file), as the scripted model runs it.
const PROMPT: &str = "run: echo hi > x.txt";

/// A plain command hook on `PermissionRequest` (not hooklog) in `~/.claude/settings.json`: it
/// keeps its input and prints `decision` (nothing for `None`).
struct PlainHook {
    dir: PathBuf,
}

impl PlainHook {
    fn install(rig: &Rig, decision: Option<Value>) -> PlainHook {
        let dir = rig.home.join("permission-hook");
        std::fs::create_dir_all(&dir).unwrap();
        let decision = decision.map(|d| d.to_string()).unwrap_or_default();
        std::fs::write(dir.join("decision.json"), decision).unwrap();
        let script = dir.join("hook.sh");
        std::fs::write(
            &script,
            "#!/bin/sh\ndir=$(dirname \"$0\")\n\
             cat > \"$dir/input.tmp\" && mv \"$dir/input.tmp\" \"$dir/input.json\"\n\
             cat \"$dir/decision.json\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let command = format!("'{}'", script.display());
        let settings = json!({"hooks": {"PermissionRequest": [
            {"hooks": [{"type": "command", "command": command}]}
        ]}});
        std::fs::create_dir_all(rig.home.join(".claude")).unwrap();
        std::fs::write(
            rig.home.join(".claude/settings.json"),
            serde_json::to_vec_pretty(&settings).unwrap(),
        )
        .unwrap();
        PlainHook { dir }
    }

    /// What Claude Code gave the hook, if it ran.
    fn input(&self) -> Option<Value> {
        let bytes = std::fs::read(self.dir.join("input.json")).ok()?;
        Some(serde_json::from_slice(&bytes).expect("the hook's input is JSON"))
    }
}

fn decision(behavior: Value) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": behavior}})
}

/// The hook was asked about the scripted command, with what a remote approver needs.
fn assert_asked_about_the_command(hook: &PlainHook) {
    let input = hook.input().expect("the PermissionRequest hook ran");
    assert_eq!(input["hook_event_name"], "PermissionRequest", "{input:#}");
    assert_eq!(input["tool_name"], "Bash", "{input:#}");
    assert_eq!(
        input["tool_input"]["command"], "echo hi > x.txt",
        "{input:#}"
    );
    assert_eq!(input["permission_mode"], "default", "{input:#}");
    assert!(
        input["session_id"].as_str().is_some_and(|s| !s.is_empty()),
        "{input:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_codes_tui_runs_a_tool_its_permission_request_hook_allows() {
    let Some(bin) = cli("claude") else { return };
    let rig = Rig::start().await;
    let hook = PlainHook::install(&rig, Some(decision(json!({"behavior": "allow"}))));
    let mut tui = Tui::claude(&rig, &bin, &[]).await;
    // No key is pressed after the prompt: the hook's answer is the only one.
    let turn = tui.submit(PROMPT).await;
    tui.wait_turn_end(turn).await;
    assert_asked_about_the_command(&hook);
    let written = std::fs::read_to_string(rig.project.join("x.txt"));
    assert_eq!(written.ok().as_deref(), Some("hi\n"), "the tool ran");
    let results = rig.model.tool_results();
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["is_error"], false, "{results:#?}");
    assert!(tui.exit().await.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_request_hooks_deny_reaches_the_model_as_the_tools_error() {
    let Some(bin) = cli("claude") else { return };
    let rig = Rig::start().await;
    let message = "not now: the approver said no";
    let deny = json!({"behavior": "deny", "message": message});
    let hook = PlainHook::install(&rig, Some(decision(deny)));
    let mut tui = Tui::claude(&rig, &bin, &[]).await;
    let turn = tui.submit(PROMPT).await;
    // The model is called again with the refusal, and ends its turn.
    tui.wait_turn_end(turn).await;
    assert_asked_about_the_command(&hook);
    assert!(!rig.project.join("x.txt").exists(), "the tool did not run");
    let results = rig.model.tool_results();
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["is_error"], true, "{results:#?}");
    assert_eq!(results[0]["content"], message, "{results:#?}");
    assert!(tui.exit().await.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_request_hook_without_a_decision_leaves_the_dialog_to_the_keyboard() {
    let Some(bin) = cli("claude") else { return };
    let rig = Rig::start().await;
    let hook = PlainHook::install(&rig, None);
    let mut tui = Tui::claude(&rig, &bin, &[]).await;
    let turn = tui.submit(PROMPT).await;
    // The dialog shows while the hook runs; the hook says nothing, so a key answers it.
    tui.until("the hook to run", || hook.input().is_some())
        .await;
    tui.wait_for("Claude Code's permission dialog", |screen| {
        screen.contains("Do you want to proceed?")
    })
    .await;
    assert!(!rig.project.join("x.txt").exists(), "nothing ran unasked");
    // 1. Yes
    tui.send("1");
    tui.wait_turn_end(turn).await;
    assert_asked_about_the_command(&hook);
    assert!(rig.project.join("x.txt").exists(), "the tool ran");
    assert!(tui.exit().await.success());
}

/// `hooklog hooks install --approvals=30`: the `PermissionRequest` entry waits in hooklog for a
/// decision. Claude Code asks, the request shows as pending, a decision is posted to
/// `POST /permission-response`, and it answers the call; returns the request and the session.
async fn decide_in_hooklog(decision: Value) -> (Rig, Value, String) {
    let bin = cli("claude").expect("checked by the caller");
    let rig = Rig::start().await;
    rig.hooklog(&["hooks", "install", "--cli", "claude", "--approvals=30"]);
    let mut tui = Tui::claude(&rig, &bin, &[]).await;
    let turn = tui.submit(PROMPT).await;
    let pending = rig
        .wait_until(
            "/permission-requests?state=pending",
            "the pending request",
            |answer| {
                answer["permissionRequests"]
                    .as_array()
                    .is_some_and(|r| r.len() == 1)
            },
        )
        .await;
    let request = pending["permissionRequests"][0].clone();
    assert_eq!(request["tool"], "Bash", "{request:#}");
    let id = request["requestId"].as_str().unwrap().to_string();
    let mut body = decision;
    body["requestId"] = json!(id);
    let (_, answer) = crate::approvals::post(&rig.url, "/permission-response", &body).await;
    assert_eq!(answer["resolved"], true, "{answer:#}");
    // No key is pressed: hooklog's answer is the only one.
    tui.wait_turn_end(turn).await;
    assert!(tui.exit().await.success());
    let session = request["sessionId"].as_str().unwrap().to_string();
    let settled = rig.get(&format!("/permission-requests/{id}")).await;
    let responses: i64 = rig
        .db()
        .query_row(
            "SELECT count(*) FROM events WHERE type = 'permission_response'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(responses, 1, "one decision in the log");
    (rig, settled, session)
}

/// The Bash call among a session's tool uses (the request has a `permission` row of its own).
fn call(uses: &Value) -> &Value {
    let rows = uses["toolUses"].as_array().unwrap();
    let mut calls = rows.iter().filter(|r| r["kind"] == "bash");
    let call = calls.next().unwrap_or(&Value::Null);
    assert!(calls.next().is_none(), "one call: {uses:#}");
    call
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_posted_to_hooklog_allows_claude_codes_call() {
    if cli("claude").is_none() {
        return;
    }
    let (rig, request, session) = decide_in_hooklog(json!({"approved": true})).await;
    assert_eq!(request["state"], "allowed", "{request:#}");
    let written = std::fs::read_to_string(rig.project.join("x.txt"));
    assert_eq!(written.ok().as_deref(), Some("hi\n"), "the tool ran");
    rig.wait_until(
        &format!("/tool-uses?sessionId={session}"),
        "the call completed",
        |t| call(t)["status"] == "completed",
    )
    .await;
    rig.assert_no_alert().await;
    rig.assert_rebuilds();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denial_posted_to_hooklog_reaches_claude_codes_model_with_its_message() {
    if cli("claude").is_none() {
        return;
    }
    let message = "not on a Friday";
    let (rig, request, session) =
        decide_in_hooklog(json!({"approved": false, "message": message})).await;
    assert_eq!(request["state"], "denied", "{request:#}");
    assert_eq!(request["message"], message, "{request:#}");
    assert!(!rig.project.join("x.txt").exists(), "the tool did not run");
    let results = rig.model.tool_results();
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["is_error"], true, "{results:#?}");
    assert_eq!(results[0]["content"], message, "{results:#?}");
    // No hook reports the refused call; Claude Code's transcript does.
    let uses = rig
        .wait_until(
            &format!("/tool-uses?sessionId={session}"),
            "the call denied",
            |t| call(t)["status"] == "denied",
        )
        .await;
    assert_eq!(call(&uses)["error"], message, "{uses:#}");
    rig.assert_no_alert().await;
    rig.assert_rebuilds();
}
