//! Unit tests of the hook projection: dispatch, previews, clis, durations.

use super::preview::preview;
use super::tool::millis_between;
use super::*;
use crate::projection::missions::MissionState;

#[test]
fn dispatch_follows_the_seed_map() {
    assert_eq!(
        action("PreToolUse", Some("subagent_spawn")),
        Action::SubagentStart
    );
    assert_eq!(
        action("PreToolUse", Some("bash_command")),
        Action::ToolStart
    );
    assert_eq!(action("PreToolUse", Some("git_dirty")), Action::Other);
    assert_eq!(action("PermissionRequest", None), Action::Permission);
    assert_eq!(
        action("UserPromptSubmit", Some("hero_active")),
        Action::OpenMission
    );
    assert_eq!(
        action("hero_idle", None),
        Action::CloseMission {
            state: MissionState::Completed
        }
    );
    assert_eq!(
        action("StopFailure", None),
        Action::CloseMission {
            state: MissionState::Failed
        }
    );
    assert_eq!(action("PreCompact", None), Action::Other);
}

#[test]
fn previews_hide_patch_bodies_and_mcp_arguments() {
    let patch = View::parse(
        r#"{"tool":"apply_patch","toolInput":{"command":"*** Begin Patch\n*** Update File: src/a.rs\n@@\n-secret\n+x\n*** Add File: b.rs\n"}}"#,
    );
    assert_eq!(
        preview(&patch, "apply_patch").as_deref(),
        Some("src/a.rs, b.rs")
    );
    let mcp = View::parse(r#"{"toolInput":{"token":"abc"},"command":"raw"}"#);
    assert_eq!(preview(&mcp, "mcp__x__y"), None);
    let bash = View::parse(r#"{"toolInput":{"command":"cargo  test\n -p x"}}"#);
    assert_eq!(preview(&bash, "Bash").as_deref(), Some("cargo test -p x"));
    let long = View::parse(&format!(r#"{{"command":"{}"}}"#, "a".repeat(500)));
    assert_eq!(preview(&long, "Bash").unwrap().len(), 200);
}

#[test]
fn cli_is_named_or_inferred_from_codex_fields() {
    assert_eq!(
        cli_of(&View::parse(r#"{"cli":"codex-cli"}"#)),
        Some("codex-cli")
    );
    assert_eq!(
        cli_of(&View::parse(r#"{"cli":"emacs"}"#)),
        Some("claude-code")
    );
    assert_eq!(
        cli_of(&View::parse(r#"{"turn_id":"t"}"#)),
        Some("codex-cli")
    );
    assert_eq!(
        cli_of(&View::parse(
            r#"{"transcriptPath":"/h/.codex/sessions/x.jsonl"}"#
        )),
        Some("codex-cli")
    );
    assert_eq!(cli_of(&View::parse("{}")), None);
}

#[test]
fn durations_are_never_negative() {
    assert_eq!(
        millis_between("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.250Z"),
        Some(1250)
    );
    assert_eq!(
        millis_between("2026-01-01T00:00:02.000Z", "2026-01-01T00:00:01.000Z"),
        Some(0)
    );
}
