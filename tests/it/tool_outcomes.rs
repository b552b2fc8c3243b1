//! A tool call's outcome from the agent's transcript when its hooks did not say it
//! (`projection/agent/outcome.rs`): a call Claude Code refused without a hook is `denied` with
//! the transcript's reason, a Codex call its `PostToolUse` reported without an exit code is
//! `failed` when the rollout says so, whichever of the hook and the transcript comes first;
//! and what a hook said about a failure is kept.

use crate::common::{TestApp, spawn_app};
use serde_json::{Value, json};

fn hook(kind: &str, session: &str, call: &str, extra: Value) -> Value {
    let mut body = json!({"hook_event_name": kind, "session_id": session, "tool_name": "Bash",
                          "tool_use_id": call, "tool_input": {"command": "touch x"}});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

/// What a transcript says of the call: an error, and why.
async fn transcript_error(app: &TestApp, session: &str, call: &str, why: &str) {
    let event = json!({"type": "TranscriptToolResult", "source": "transcript", "sessionId": session,
        "payload": {"cli": "claude-code",
                    "toolResults": [{"toolUseId": call, "isError": true, "error": why}]}});
    let (status, answer) = app.post_json(&event).await;
    assert!(status.is_success(), "{answer}");
}

async fn start(app: &TestApp, session: &str) {
    app.post_hook_ok(json!({"hook_event_name": "SessionStart", "session_id": session}))
        .await;
    app.post_hook_ok(
        json!({"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": "go"}),
    )
    .await;
}

async fn the_call(app: &TestApp, session: &str) -> (String, Option<String>) {
    let (_, answer) = app.get(&format!("/tool-uses?sessionId={session}")).await;
    let row = &answer["toolUses"][0];
    (
        row["status"].as_str().unwrap().to_string(),
        row["error"].as_str().map(str::to_string),
    )
}

#[tokio::test]
async fn a_call_no_hook_ended_whose_transcript_result_is_an_error_is_denied_in_either_order() {
    let app = spawn_app().await;
    let why = "touch in '/p/x' was blocked.";
    // The transcript read after the Stop (the call is interrupted by then).
    start(&app, "s1").await;
    app.post_hook_ok(hook("PreToolUse", "s1", "t1", json!({})))
        .await;
    app.post_hook_ok(json!({"hook_event_name": "Stop", "session_id": "s1"}))
        .await;
    assert_eq!(the_call(&app, "s1").await.0, "interrupted");
    let (_, before) = app.get("/changes").await;
    transcript_error(&app, "s1", "t1", why).await;
    assert_eq!(
        the_call(&app, "s1").await,
        ("denied".into(), Some(why.into()))
    );
    // The change streams see it too: one change row more, saying so.
    let (_, after) = app.get("/changes").await;
    let changes = after["changes"].as_array().unwrap();
    assert_eq!(
        changes.len(),
        before["changes"].as_array().unwrap().len() + 1
    );
    let last = changes.last().unwrap().to_string();
    assert!(last.contains("denied") && last.contains(why), "{last}");
    // The transcript read before the Stop: the call keeps running until the Stop decides.
    start(&app, "s2").await;
    app.post_hook_ok(hook("PreToolUse", "s2", "t2", json!({})))
        .await;
    transcript_error(&app, "s2", "t2", why).await;
    assert_eq!(the_call(&app, "s2").await.0, "running");
    app.post_hook_ok(json!({"hook_event_name": "Stop", "session_id": "s2"}))
        .await;
    assert_eq!(
        the_call(&app, "s2").await,
        ("denied".into(), Some(why.into()))
    );
    crate::common::assert_rebuilds_to_live(&app.db_path);
}

#[tokio::test]
async fn a_call_reported_completed_whose_transcript_result_is_an_error_failed_in_either_order() {
    let app = spawn_app().await;
    let why = "failed: exit code 1";
    start(&app, "c1").await;
    app.post_hook_ok(hook("PreToolUse", "c1", "call_1", json!({})))
        .await;
    app.post_hook_ok(hook(
        "PostToolUse",
        "c1",
        "call_1",
        json!({"tool_response": ""}),
    ))
    .await;
    assert_eq!(the_call(&app, "c1").await.0, "completed");
    transcript_error(&app, "c1", "call_1", why).await;
    assert_eq!(
        the_call(&app, "c1").await,
        ("failed".into(), Some(why.into()))
    );

    start(&app, "c2").await;
    app.post_hook_ok(hook("PreToolUse", "c2", "call_2", json!({})))
        .await;
    transcript_error(&app, "c2", "call_2", why).await;
    app.post_hook_ok(hook(
        "PostToolUse",
        "c2",
        "call_2",
        json!({"tool_response": ""}),
    ))
    .await;
    assert_eq!(
        the_call(&app, "c2").await,
        ("failed".into(), Some(why.into()))
    );
    crate::common::assert_rebuilds_to_live(&app.db_path);
}

#[tokio::test]
async fn what_a_hook_said_of_a_failure_is_kept_and_a_success_result_changes_nothing() {
    let app = spawn_app().await;
    start(&app, "k").await;
    app.post_hook_ok(hook("PreToolUse", "k", "f", json!({})))
        .await;
    app.post_hook_ok(hook(
        "PostToolUseFailure",
        "k",
        "f",
        json!({"error": "Exit code 2"}),
    ))
    .await;
    transcript_error(&app, "k", "f", "something else").await;
    assert_eq!(
        the_call(&app, "k").await,
        ("failed".into(), Some("Exit code 2".into()))
    );

    start(&app, "ok").await;
    app.post_hook_ok(hook("PreToolUse", "ok", "g", json!({})))
        .await;
    let fine = json!({"type": "TranscriptToolResult", "source": "transcript", "sessionId": "ok",
        "payload": {"toolResults": [{"toolUseId": "g", "isError": false}]}});
    app.post_json(&fine).await;
    app.post_hook_ok(hook("PostToolUse", "ok", "g", json!({})))
        .await;
    assert_eq!(the_call(&app, "ok").await, ("completed".into(), None));
}
