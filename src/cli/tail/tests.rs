//! Unit tests of tail: lines, summaries, the session's path.

use super::connect::encode;
use super::*;
use serde_json::json;

#[test]
fn a_line_shows_time_session_position_type_and_what_happened() {
    let envelope = json!({"type": "PreToolUse", "context": {"sequence": 9, "sessionId": "s1", "sessionSequence": 3,
        "eventTime": "2026-11-30T12:34:56.789Z"},
        "payload": {"tool_name": "Bash", "tool_input": {"command": "cargo   test\n --release"}}});
    assert_eq!(
        line(&envelope),
        "12:34:56.789  s1  #3  PreToolUse  Bash: cargo test --release"
    );
    let global = json!({"type": "Stop", "context": {"sequence": 4, "eventTime": "2026-11-30T00:00:00.000Z"}, "payload": {}});
    assert_eq!(line(&global), "00:00:00.000  -  #4  Stop");
}

#[test]
fn summaries_prefer_the_tool_then_the_prompt_then_a_reason() {
    assert_eq!(
        summary(&json!({"tool_name": "Read", "tool_input": {"file_path": "/a/b.rs"}})),
        "Read: /a/b.rs"
    );
    assert_eq!(
        summary(&json!({"prompt": "x".repeat(100)})),
        format!("{}…", "x".repeat(80))
    );
    assert_eq!(
        summary(&json!({"reason": "prompt_input_exit"})),
        "prompt_input_exit"
    );
    assert_eq!(summary(&json!({"n": 1})), "");
}

#[test]
fn summaries_read_stored_camel_case_and_the_newer_events() {
    let stored = json!({"tool": "Bash", "toolInput": {"command": "cargo test"}});
    assert_eq!(summary(&stored), "Bash: cargo test");
    let denied = json!({"tool": "Bash", "toolInput": {}, "reason": "auto mode: rm -rf"});
    assert_eq!(summary(&denied), "Bash: auto mode: rm -rf");
    let cases = [
        (
            json!({"taskId": "1", "taskSubject": "Write the tests"}),
            "Write the tests",
        ),
        (
            json!({"oldCwd": "/a", "newCwd": "/a/b", "cwd": "/a/b"}),
            "/a/b",
        ),
        (json!({"filePath": "/a/.env", "event": "change"}), "/a/.env"),
        (json!({"trigger": "auto", "compactSummary": "..."}), "auto"),
        (json!({"worktree_path": "/w/feature"}), "/w/feature"),
        (json!({"tool_calls": [{}, {}]}), "2 tool calls"),
        (json!({"lastAssistantMessage": "Done."}), "Done."),
        (
            json!({"mcp_server_name": "tracker", "action": "accept"}),
            "accept",
        ),
    ];
    for (payload, expected) in cases {
        assert_eq!(summary(&payload), expected, "{payload}");
    }
}

#[test]
fn session_ids_are_percent_encoded_in_the_path() {
    assert_eq!(encode("a b/c"), "a%20b%2Fc");
    assert_eq!(encode("sess_1-x.y~z"), "sess_1-x.y~z");
}
