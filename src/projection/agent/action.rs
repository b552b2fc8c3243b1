//! What a hook event does ([`Action`], from its name and hook-specific `type`) and what it says
//! about its session: the state it leaves it in, its cli, its working directory.

use super::View;
use crate::event::StoredEvent;
use crate::ingest::hook::KNOWN_CLIS;
use crate::projection::heroes::HeroState;
use crate::projection::missions::MissionState;

/// What a hook event does, from its name and its hook-specific `type`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    Spawn,
    OpenMission,
    CloseMission {
        state: MissionState,
    },
    ToolStart,
    ToolEnd {
        failed: bool,
    },
    /// `PermissionDenied`: the call it names ends `denied`.
    Denied,
    Permission,
    /// `TaskCreated` / `TaskCompleted`: a task of the mission in progress.
    TaskOpen,
    TaskDone,
    SubagentStart,
    SubagentStop,
    Notify,
    End,
    Other,
}

pub fn action(event_type: &str, hook_type: Option<&str>) -> Action {
    match (event_type, hook_type) {
        (_, Some("git_dirty")) => Action::Other,
        (_, Some("subagent_spawn")) => Action::SubagentStart,
        (_, Some("subagent_complete")) => Action::SubagentStop,
        (_, Some("permission_request")) => Action::Permission,
        ("SessionStart", _) => Action::Spawn,
        ("UserPromptSubmit" | "mission_start" | "hero_active", _) => Action::OpenMission,
        ("Stop" | "hero_idle", _) => Action::CloseMission {
            state: MissionState::Completed,
        },
        ("StopFailure", _) => Action::CloseMission {
            state: MissionState::Failed,
        },
        ("PreToolUse" | "file_access" | "bash_command", _) => Action::ToolStart,
        ("PostToolUse", _) => Action::ToolEnd { failed: false },
        ("PostToolUseFailure", _) => Action::ToolEnd { failed: true },
        ("PermissionDenied", _) => Action::Denied,
        ("PermissionRequest", _) => Action::Permission,
        ("TaskCreated", _) => Action::TaskOpen,
        ("TaskCompleted", _) => Action::TaskDone,
        ("SubagentStart", _) => Action::SubagentStart,
        ("SubagentStop", _) => Action::SubagentStop,
        ("Notification", _) => Action::Notify,
        ("SessionEnd", _) => Action::End,
        _ => Action::Other,
    }
}

/// The state a hook event puts its session (and hero) in; `None` leaves it.
pub fn state_after(action: Action, view: &View) -> Option<HeroState> {
    match action {
        // After a denial the agent carries on without the call.
        Action::OpenMission | Action::ToolEnd { .. } | Action::Denied => Some(HeroState::Active),
        Action::SubagentStart | Action::SubagentStop => Some(HeroState::Active),
        Action::ToolStart if awaits_input(view) => Some(HeroState::AwaitingInput),
        Action::ToolStart => Some(HeroState::Active),
        Action::Permission => Some(HeroState::AwaitingInput),
        Action::CloseMission { .. } => Some(HeroState::Idle),
        Action::End => Some(HeroState::Ended),
        Action::Notify => match view.text("notificationType") {
            Some("permission_prompt" | "elicitation_dialog") => Some(HeroState::AwaitingInput),
            _ => None,
        },
        // A fresh or resumed session waits for its prompt; a SessionStart after a compact
        // comes in the middle of work and changes nothing.
        Action::Spawn if view.text("source") == Some("compact") => None,
        Action::Spawn => Some(HeroState::Idle),
        Action::TaskOpen | Action::TaskDone | Action::Other => None,
    }
}

/// The cli an event names (unknown names fall back to `claude-code`) or reveals (Codex sends
/// `turn_id` and keeps transcripts under `~/.codex/`); `None` when it says nothing.
pub fn cli_of(view: &View) -> Option<&'static str> {
    if let Some(cli) = view.text("cli") {
        return Some(
            KNOWN_CLIS
                .iter()
                .find(|known| **known == cli)
                .copied()
                .unwrap_or("claude-code"),
        );
    }
    let codex = view.text("turnId").is_some()
        || view
            .text("transcriptPath")
            .is_some_and(|p| p.contains("/.codex/"));
    codex.then_some("codex-cli")
}

/// The working directory an event gives: `CwdChanged`'s new one, else the `cwd` every hook
/// body carries.
pub fn cwd_of(view: &View) -> Option<&str> {
    view.text("newCwd").or_else(|| view.text("cwd"))
}

fn awaits_input(view: &View) -> bool {
    view.hook_type() == Some("awaiting_input") || view.tool() == Some("AskUserQuestion")
}

/// Whether an event is one that spawns a hero (so a new hero is expected, not missing).
pub(super) fn spawns(event: &StoredEvent, view: &View) -> bool {
    matches!(event.event_type.as_str(), "SessionStart" | "hero_active")
        || matches!(
            view.hook_type(),
            Some("hero_active" | "internal_hero_spawn")
        )
}
