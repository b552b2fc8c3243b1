//! `POST /event`: the tolerant hook ingest of seed 000. It takes what agent hooks send as it is:
//! raw Claude Code and Codex hook stdin (`hook_event_name`, `session_id`, `tool_name`, ...), or
//! the seed's own handler bodies (`eventName` plus a hook-specific `type`), or the selected
//! `type`-only compatibility payloads. Each body becomes one canonical event whose payload is
//! the body after normalization: snake_case aliases renamed to their camelCase fields, `tool`
//! resolved from its aliases, bounded text fields truncated (and the truncation recorded).

use super::InvalidRequest;
use super::body::kind;
use super::bounds;
use crate::event::NewEvent;
use serde_json::{Map, Value, json};

/// The source recorded for events that came through `/event`.
pub const SOURCE: &str = crate::event::Source::Hook.as_str();

/// The type stored for a body with no dispatch key at all.
pub const UNRECOGNIZED: &str = "unrecognized";

/// `type` values that dispatch on their own when no `eventName`/`hook`/`hook_event_name` is given.
pub const COMPATIBILITY_DISPATCH: &[&str] = &[
    "hero_active",
    "mission_start",
    "file_access",
    "bash_command",
    "hero_idle",
];

/// The `cli` values the protocol owns; anything else is recorded as `claude-code`.
pub const KNOWN_CLIS: &[&str] = &[
    "claude-code",
    "codex-cli",
    "cursor",
    "opencode",
    "openclaw",
    "web",
];

/// Whether an alias must hold a string.
#[derive(Clone, Copy, PartialEq)]
pub enum AliasKind {
    Text,
    Any,
}

/// snake_case fields hooks send, and the camelCase field each becomes. A camelCase field given
/// beside its alias wins. Text aliases holding anything but a string refuse the body.
pub const ALIASES: &[(&str, &str, AliasKind)] = &[
    ("session_id", "sessionId", AliasKind::Text),
    ("hero_id", "heroId", AliasKind::Text),
    ("tool_name", "toolName", AliasKind::Text),
    ("tool_use_id", "toolUseId", AliasKind::Text),
    ("turn_id", "turnId", AliasKind::Text),
    ("request_id", "requestId", AliasKind::Text),
    ("agent_id", "agentId", AliasKind::Text),
    ("agent_type", "agentType", AliasKind::Text),
    ("subagent_id", "subagentId", AliasKind::Text),
    ("subagent_type", "subagentType", AliasKind::Text),
    ("parent_subagent_id", "parentSubagentId", AliasKind::Text),
    ("parent_agent_id", "parentAgentId", AliasKind::Text),
    ("parent_mission_id", "parentMissionId", AliasKind::Text),
    ("child_mission_id", "childMissionId", AliasKind::Text),
    ("mission_id", "missionId", AliasKind::Text),
    ("degraded_reason", "degradedReason", AliasKind::Text),
    ("model_id", "modelId", AliasKind::Text),
    ("transcript_path", "transcriptPath", AliasKind::Text),
    (
        "agent_transcript_path",
        "agentTranscriptPath",
        AliasKind::Text,
    ),
    ("permission_mode", "permissionMode", AliasKind::Text),
    (
        "last_assistant_message",
        "lastAssistantMessage",
        AliasKind::Text,
    ),
    ("notification_type", "notificationType", AliasKind::Text),
    ("custom_instructions", "customInstructions", AliasKind::Text),
    ("file_path", "filePath", AliasKind::Text),
    ("input_preview", "inputPreview", AliasKind::Text),
    ("tool_summary", "toolSummary", AliasKind::Text),
    ("expires_at", "expiresAt", AliasKind::Text),
    // Fields of the newer hook events: tolerated as anything, since a moving catalogue must
    // never cost an event (a wrong type reads as absent).
    ("new_cwd", "newCwd", AliasKind::Any),
    ("old_cwd", "oldCwd", AliasKind::Any),
    ("task_id", "taskId", AliasKind::Any),
    ("task_subject", "taskSubject", AliasKind::Any),
    ("task_description", "taskDescription", AliasKind::Any),
    ("teammate_name", "teammateName", AliasKind::Any),
    ("compact_summary", "compactSummary", AliasKind::Any),
    ("tool_input", "toolInput", AliasKind::Any),
    ("tool_response", "toolResponse", AliasKind::Any),
    ("stop_hook_active", "stopHookActive", AliasKind::Any),
    (
        "permission_suggestions",
        "permissionSuggestions",
        AliasKind::Any,
    ),
];

/// Fields that route the event: anything but a string there is refused.
const ROUTING_FIELDS: &[&str] = &["eventName", "hook", "sessionId", "heroId", "tool"];

/// A parsed hook body: the event to store, and the hero alias still to resolve when the body
/// named a hero but no session.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    pub event: NewEvent,
    /// `heroId` when the body has no session id: the handler looks the hero up (it may also be
    /// a session id, which the seed accepts as a hero alias).
    pub hero_alias: Option<String>,
}

/// Parses one `/event` body. `cli_hint` is the `?cli=` query value, used when the body names no
/// `cli`. `event_id` is the producer's idempotency key (`X-Hooklog-Event-Id`), when it sent one.
pub fn parse(
    body: &[u8],
    cli_hint: Option<&str>,
    event_id: Option<String>,
) -> Result<HookEvent, InvalidRequest> {
    let value = super::json::from_slice(body).map_err(|e| {
        InvalidRequest::new(
            format!("body {e}"),
            json!({ "line": e.line(), "column": e.column() }),
        )
    })?;
    let Value::Object(map) = value else {
        return Err(InvalidRequest::new(
            format!("body must be a JSON object, not {}", kind(&value)),
            json!({}),
        ));
    };
    from_map(map, cli_hint, event_id)
}

/// [`parse`], for a body already read as a JSON object (a hook server's envelope carries one).
pub fn from_map(
    mut map: Map<String, Value>,
    cli_hint: Option<&str>,
    event_id: Option<String>,
) -> Result<HookEvent, InvalidRequest> {
    normalize(&mut map)?;
    let event_type = dispatch(&mut map)?;
    if !map.contains_key("cli")
        && let Some(cli) = cli_hint
    {
        map.insert("cli".into(), json!(cli));
    }
    bounds::truncate(&mut map);
    let session_id = text(&map, "sessionId");
    let hero_alias = match session_id {
        Some(_) => None,
        None => text(&map, "heroId"),
    };
    let (event_id, generated_id) = super::event_id(event_id)?;
    Ok(HookEvent {
        event: NewEvent {
            event_id,
            generated_id,
            session_id,
            event_type,
            source: SOURCE.to_string(),
            event_time: None,
            received_at: None,
            origin: None,
            payload: Value::Object(map).to_string(),
        },
        hero_alias,
    })
}

/// Renames aliases to their camelCase fields and resolves `tool`, refusing wrong types.
fn normalize(map: &mut Map<String, Value>) -> Result<(), InvalidRequest> {
    for (snake, camel, alias_kind) in ALIASES {
        let Some(value) = map.remove(*snake) else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        if *alias_kind == AliasKind::Text && !value.is_string() {
            return Err(wrong_type(snake, &value));
        }
        // A camelCase field wins over its alias, unless it is null (absent, in effect).
        match map.get(*camel) {
            Some(existing) if !existing.is_null() => {}
            _ => {
                map.insert((*camel).to_string(), value);
            }
        }
    }
    for field in ROUTING_FIELDS.iter().chain(["toolName"].iter()) {
        if let Some(value) = map.get(*field)
            && !value.is_string()
            && !value.is_null()
        {
            return Err(wrong_type(field, value));
        }
    }
    for field in ["sessionId", "heroId"] {
        if let Some(id) = map.get(field).and_then(Value::as_str) {
            super::check_id(field, id, super::canonical::MAX_SESSION_ID_CHARS)?;
        }
    }
    // `tool` wins over its aliases; they are folded into it.
    let alias = map.remove("toolName");
    if !map.get("tool").is_some_and(Value::is_string)
        && let Some(name) = alias.filter(Value::is_string)
    {
        map.insert("tool".into(), name);
    }
    Ok(())
}

/// The event's type: `eventName`, else `hook`, else `hook_event_name`, else a compatibility
/// `type`, else `unrecognized`. The chosen name is kept as `eventName`.
fn dispatch(map: &mut Map<String, Value>) -> Result<String, InvalidRequest> {
    let hook = map.remove("hook");
    let hook_event_name = map.remove("hook_event_name");
    if let Some(v) = &hook_event_name
        && !v.is_string()
        && !v.is_null()
    {
        return Err(wrong_type("hook_event_name", v));
    }
    let named = [map.get("eventName").cloned(), hook, hook_event_name]
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().map(str::to_string));
    let event_type = match named {
        Some(name) => {
            super::check_id("eventName", &name, super::canonical::MAX_TYPE_CHARS)?;
            map.insert("eventName".into(), json!(name));
            name
        }
        None => match map.get("type").and_then(Value::as_str) {
            Some(t) if COMPATIBILITY_DISPATCH.contains(&t) => t.to_string(),
            _ => UNRECOGNIZED.to_string(),
        },
    };
    Ok(event_type)
}

fn wrong_type(field: &str, value: &Value) -> InvalidRequest {
    InvalidRequest::new(
        format!("\"{field}\" must be a string, not {}", kind(value)),
        json!({ "field": field }),
    )
}

fn text(map: &Map<String, Value>, field: &str) -> Option<String> {
    map.get(field).and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::shared;

    #[test]
    fn every_fixture_hook_body_as_stored_splits_off_its_shared_fields_and_joins_back_exactly() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hooks");
        let mut split_bodies = 0;
        for file in std::fs::read_dir(dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_none_or(|e| e != "ndjson") {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let Ok(hook) = parse(line.as_bytes(), None, None) else {
                    continue;
                };
                let (payload, event_type) = (hook.event.payload, hook.event.event_type);
                if let Some(parts) = shared::split(&payload, &event_type) {
                    assert_eq!(
                        shared::join(&parts.rest, &parts.shared, &event_type).unwrap(),
                        payload
                    );
                    split_bodies += 1;
                }
            }
        }
        assert!(split_bodies > 50, "{split_bodies} bodies split");
    }

    fn payload(event: &HookEvent) -> Value {
        serde_json::from_str(&event.event.payload).unwrap()
    }

    #[test]
    fn raw_codex_payload_is_normalized_to_camel_case() {
        let body = json!({
            "hook_event_name": "PreToolUse", "session_id": "s1", "turn_id": "t1",
            "tool_name": "apply_patch", "tool_use_id": "call_1", "tool_input": {"command": "x"}
        });
        let parsed = parse(body.to_string().as_bytes(), None, None).unwrap();
        assert_eq!(parsed.event.event_type, "PreToolUse");
        assert_eq!(parsed.event.session_id.as_deref(), Some("s1"));
        assert_eq!(parsed.event.source, SOURCE);
        assert!(parsed.event.generated_id);
        let p = payload(&parsed);
        assert_eq!(p["eventName"], "PreToolUse");
        assert_eq!(p["tool"], "apply_patch");
        assert_eq!(p["toolUseId"], "call_1");
        assert_eq!(p["turnId"], "t1");
        assert_eq!(p["toolInput"]["command"], "x");
        for gone in ["hook_event_name", "session_id", "tool_name", "toolName"] {
            assert!(p.get(gone).is_none(), "{gone} should be folded");
        }
    }

    #[test]
    fn dispatch_prefers_event_name_then_hook_then_hook_event_name_then_type() {
        let cases = [
            (
                json!({"eventName": "Stop", "hook": "X", "hook_event_name": "Y"}),
                "Stop",
            ),
            (json!({"hook": "X", "hook_event_name": "Y"}), "X"),
            (json!({"hook_event_name": "Y", "type": "hero_idle"}), "Y"),
            (json!({"type": "hero_idle"}), "hero_idle"),
            (json!({"type": "set_race"}), UNRECOGNIZED),
            (json!({"sessionId": "s"}), UNRECOGNIZED),
        ];
        for (body, expected) in cases {
            let parsed = parse(body.to_string().as_bytes(), None, None).unwrap();
            assert_eq!(parsed.event.event_type, expected, "{body}");
        }
    }

    #[test]
    fn tool_wins_over_its_aliases_and_camel_case_wins_over_snake_case() {
        let body = json!({"eventName": "PreToolUse", "tool": "Bash", "toolName": "Edit",
                          "tool_name": "Read", "sessionId": "camel", "session_id": "snake"});
        let parsed = parse(body.to_string().as_bytes(), None, None).unwrap();
        let p = payload(&parsed);
        assert_eq!(p["tool"], "Bash");
        assert_eq!(parsed.event.session_id.as_deref(), Some("camel"));
    }

    #[test]
    fn refuses_non_objects_and_non_string_aliases() {
        for body in [
            "not json",
            "[1]",
            "\"x\"",
            "",
            r#"{"session_id": 5}"#,
            r#"{"tool_use_id": {}}"#,
            r#"{"eventName": 3}"#,
            r#"{"hook_event_name": true}"#,
            r#"{"sessionId": ""}"#,
            r#"{"eventName": ""}"#,
        ] {
            assert!(parse(body.as_bytes(), None, None).is_err(), "{body}");
        }
        let err = parse(br#"{"agent_type": 1}"#, None, None).unwrap_err();
        assert_eq!(err.details["field"], "agent_type");
    }

    #[test]
    fn cli_hint_fills_a_missing_cli_only() {
        let given = parse(
            br#"{"eventName":"SessionStart","cli":"cursor"}"#,
            Some("web"),
            None,
        );
        assert_eq!(payload(&given.unwrap())["cli"], "cursor");
        let hinted = parse(br#"{"eventName":"SessionStart"}"#, Some("codex-cli"), None);
        assert_eq!(payload(&hinted.unwrap())["cli"], "codex-cli");
    }

    #[test]
    fn hero_alias_is_kept_only_without_a_session() {
        let alias = parse(br#"{"eventName":"Stop","heroId":"h1"}"#, None, None).unwrap();
        assert_eq!(alias.hero_alias.as_deref(), Some("h1"));
        let both = parse(
            br#"{"eventName":"Stop","heroId":"h1","sessionId":"s"}"#,
            None,
            None,
        );
        assert_eq!(both.unwrap().hero_alias, None);
    }

    #[test]
    fn a_given_event_id_is_kept() {
        let parsed = parse(br#"{"eventName":"Stop"}"#, None, Some("id-1".into())).unwrap();
        assert_eq!(parsed.event.event_id, "id-1");
        assert!(!parsed.event.generated_id);
    }
}
