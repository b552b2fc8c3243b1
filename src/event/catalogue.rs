//! The catalogue of event types hooklog knows. A type outside it is still stored (nothing is
//! dropped), and the `alerts` projection raises `unknownEventType` for it, so a producer that
//! drifted from the contracts is noticed instead of silently ignored.

/// Claude Code's and Codex's hook events: seed 000's hook maps, and the rest of the catalogue
/// their hooks reference documents today (Codex's `Interrupt` among them). docs/hooks.md says
/// which of them the projections read.
pub const HOOK_EVENTS: &[&str] = &[
    "SessionStart",
    "Setup",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "MessageDisplay",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "Stop",
    "StopFailure",
    "Interrupt",
    "TeammateIdle",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "Elicitation",
    "ElicitationResult",
    "SessionEnd",
];

/// The compatibility `type` values of seed 000's `POST /event`, and the hook-specific types its
/// own handlers send beside `eventName`.
pub const COMPATIBILITY_TYPES: &[&str] = &[
    "hero_active",
    "mission_start",
    "file_access",
    "bash_command",
    "hero_idle",
    "awaiting_input",
    "permission_request",
    "subagent_spawn",
    "subagent_complete",
];

/// Seed 001's normalized events.
pub const NORMALIZED_EVENTS: &[&str] = &["registered", "stuck", "unstuck", "ended"];

/// Coordination outcomes (seed 002): owners, claims, gaps, alert acknowledgements; and the
/// notices of waiting agents (`notify`), each recorded in the session that waits.
pub const COORDINATION_EVENTS: &[&str] = &[
    "owner_acquired",
    "owner_refused",
    "owner_hung",
    "owner_heartbeat",
    "owner_released",
    "claim_granted",
    "claim_renewed",
    "claim_refused",
    "claim_released",
    "notice_sent",
    "notice_failed",
    "gap_opened",
    "gap_closed",
    "gap_refused",
    "gap_resumed",
    "alert_acknowledged",
    "permission_response",
    "permission_expired",
];

/// Seed 003's `FactoryEventType`, all 32 values.
pub const FACTORY_EVENTS: &[&str] = &[
    "RUN_REQUEST",
    "INITIAL_STRUCTURE_REQUEST",
    "FACTORY_CHANGE",
    "WORK_REQUEST",
    "RELATIONSHIP_CHANGE_REQUEST",
    "DISPATCH_REQUEST",
    "DISPATCH_WORKER_SESSION_ASSOCIATION",
    "MODEL_REQUEST",
    "MODEL_RESPONSE",
    "INFERENCE_REQUEST",
    "INFERENCE_RESPONSE",
    "SCRIPT_REQUEST",
    "SCRIPT_RESPONSE",
    "AGENT_RUN_RESPONSE",
    "DISPATCH_RESPONSE",
    "WORK_STATE_CHANGE",
    "FACTORY_STATE_RESPONSE",
    "RUN_RESPONSE",
    "SESSION_STARTED",
    "SESSION_PAUSED",
    "SESSION_RESUMED",
    "SESSION_RESULT_UPDATED",
    "SESSION_COMPLETED",
    "SESSION_LIFECYCLE_CONTROL",
    "ORCHESTRATOR_PHASE_CHANGED",
    "ORCHESTRATOR_CHECKPOINT_WRITTEN",
    "DISPATCH_QUEUED",
    "DISPATCH_INTERRUPTED",
    "DISPATCH_RECONCILED",
    "JAVASCRIPT_CHECKPOINT_REF",
    "JAVASCRIPT_PHASE_CHANGE",
    "ARTIFACT_CREATED",
];

/// Records read from Claude Code and Codex transcripts (`ingest::transcript`, source
/// `transcript`).
pub const TRANSCRIPT_EVENTS: &[&str] = &[
    "TranscriptPrompt",
    "TranscriptMessage",
    "TranscriptToolResult",
    "TranscriptTokenCount",
    "TranscriptRead",
    "TranscriptRefused",
];

/// What the JetStream aggregator refused or renamed (`jetstream::check`, source `replication`).
pub const STREAM_MESSAGE_FLAGGED: &str = "StreamMessageFlagged";

/// The events of source `replication`.
pub const REPLICATION_EVENTS: &[&str] = &[STREAM_MESSAGE_FLAGGED];

const GROUPS: &[&[&str]] = &[
    HOOK_EVENTS,
    COMPATIBILITY_TYPES,
    NORMALIZED_EVENTS,
    COORDINATION_EVENTS,
    FACTORY_EVENTS,
    TRANSCRIPT_EVENTS,
    REPLICATION_EVENTS,
];

/// Whether the catalogue knows this type (exact, case-sensitive match).
pub fn is_known(event_type: &str) -> bool {
    GROUPS.iter().any(|group| group.contains(&event_type))
}

/// The catalogue group a type belongs to (`hook`, `compatibility`, `normalized`,
/// `coordination`, `factory`, `transcript`, `replication`), or `unknown`: a label of bounded
/// cardinality for metrics, where the type itself is whatever a client sent.
pub fn family(event_type: &str) -> &'static str {
    const NAMES: [&str; 7] = [
        "hook",
        "compatibility",
        "normalized",
        "coordination",
        "factory",
        "transcript",
        "replication",
    ];
    GROUPS
        .iter()
        .zip(NAMES)
        .find(|(group, _)| group.contains(&event_type))
        .map_or("unknown", |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_every_group_and_nothing_else() {
        assert_eq!(FACTORY_EVENTS.len(), 32);
        for t in [
            "PreToolUse",
            "PermissionDenied",
            "CwdChanged",
            "PostCompact",
            "TaskCompleted",
            "hero_active",
            "stuck",
            "claim_granted",
            "notice_sent",
            "ARTIFACT_CREATED",
        ] {
            assert!(is_known(t), "{t}");
        }
        for t in ["pretooluse", "", "made_up_type"] {
            assert!(!is_known(t), "{t}");
        }
        assert_eq!(family("PreToolUse"), "hook");
        assert_eq!(family("stuck"), "normalized");
        assert_eq!(family("claim_granted"), "coordination");
        assert_eq!(family("ARTIFACT_CREATED"), "factory");
        assert_eq!(family("made_up_type"), "unknown");
    }
}
