//! One line of a Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`, and
//! its subagents' `<session>/subagents/agent-<id>.jsonl`): a JSON record with `type`, `uuid`,
//! `parentUuid`, `sessionId`, `timestamp`, and for `user`/`assistant` records a `message`.
//!
//! Kept: `user` records (a prompt, or tool results) and `assistant` records (a model's
//! message: `message.id`, `message.model`, `message.usage`, its text and tool calls). An
//! assistant message with several content blocks is written as several lines sharing
//! `message.id` and `requestId`, each with the usage so far: each line is its own event (its
//! `uuid` is its id), and all of them name one `usageKey`, so the usage projection counts the
//! message once. A subagent's records carry the parent's `sessionId` and their `agentId`.

use super::{CLAUDE_CODE, Keep, MESSAGE, PROMPT, Record, Skip, TOOL_RESULT, Usage, count, text};
use crate::ingest::bounds;
use serde_json::{Map, Value, json};

/// The model Claude Code names on messages it made itself (an error notice, an interruption):
/// no API call, so no usage is counted for it.
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Record fields copied into the payload as they are, when present.
const COPIED: &[&str] = &[
    "uuid",
    "parentUuid",
    "agentId",
    "isSidechain",
    "isMeta",
    "cwd",
    "gitBranch",
    "version",
    "requestId",
];

/// Reads one line. `agent` is the subagent id from the file's name (`agent-<id>.jsonl`), used
/// when the record does not name its own. `Ok(None)` is never returned for Claude Code lines
/// (every line is a record or skipped); the `Option` matches [`super::codex`].
pub fn parse(line: &[u8], agent: Option<&str>, keep: Keep) -> Result<Option<Record>, Skip> {
    let map = super::object(line)?;
    let kind = text(&map, "type");
    if !matches!(kind, Some("user" | "assistant")) {
        return Err(Skip::NotKept);
    }
    let session_id = text(&map, "sessionId").ok_or(Skip::NoSession)?.to_string();
    let uuid = text(&map, "uuid").ok_or(Skip::NoId)?.to_string();
    let mut payload = Map::new();
    payload.insert("cli".into(), json!(CLAUDE_CODE));
    for key in COPIED {
        if let Some(value) = map.get(*key).filter(|v| !v.is_null()) {
            payload.insert((*key).to_string(), value.clone());
        }
    }
    if let Some(agent) = agent
        && !payload.contains_key("agentId")
    {
        payload.insert("agentId".into(), json!(agent));
    }
    let message = map.get("message").and_then(Value::as_object);
    let event_type = match kind {
        Some("assistant") => assistant(message, &uuid, &mut payload, keep),
        _ => user(message, &mut payload, keep),
    };
    if keep == Keep::Metadata {
        bounds::truncate(&mut payload);
    }
    Ok(Some(Record {
        session_id,
        event_type,
        event_time: text(&map, "timestamp").and_then(crate::event::time::normalize),
        id_key: format!("{CLAUDE_CODE}:{uuid}"),
        payload,
    }))
}

/// An assistant record: the message's ids, model, usage and key, its text and tool calls.
fn assistant(
    message: Option<&Map<String, Value>>,
    uuid: &str,
    payload: &mut Map<String, Value>,
    keep: Keep,
) -> &'static str {
    let Some(message) = message else {
        return MESSAGE;
    };
    let message_id = text(message, "id");
    let model = text(message, "model");
    if let Some(id) = message_id {
        payload.insert("messageId".into(), json!(id));
    }
    if let Some(model) = model {
        payload.insert("model".into(), json!(model));
    }
    // The key the usage projection counts a message under: its id and the request's, which
    // every line of one streamed message shares; a record's own uuid when either is missing.
    let key = match (message_id, text(payload, "requestId")) {
        (Some(id), Some(request)) => format!("{CLAUDE_CODE}:{id}:{request}"),
        _ => format!("{CLAUDE_CODE}:{uuid}"),
    };
    if let Some(usage) = message.get("usage").filter(|u| u.is_object())
        && model != Some(SYNTHETIC_MODEL)
    {
        payload.insert("usageKey".into(), json!(key));
        payload.insert("usage".into(), usage_of(usage).to_json());
    }
    let blocks = blocks(message.get("content"));
    let text = texts(&blocks, "text");
    if !text.is_empty() {
        payload.insert("response".into(), json!(text));
    }
    let calls: Vec<Value> = blocks
        .iter()
        .filter(|b| text_of(b, "type") == Some("tool_use"))
        .map(|b| {
            let mut call = json!({ "id": b.get("id"), "name": b.get("name") });
            if keep == Keep::Full {
                call["input"] = b.get("input").cloned().unwrap_or(Value::Null);
            }
            call
        })
        .collect();
    if !calls.is_empty() {
        payload.insert("toolCalls".into(), Value::Array(calls));
    }
    if keep == Keep::Full
        && let Some(content) = message.get("content")
    {
        payload.insert("content".into(), content.clone());
    }
    MESSAGE
}

/// A user record: tool results when it carries any, else a prompt.
fn user(
    message: Option<&Map<String, Value>>,
    payload: &mut Map<String, Value>,
    keep: Keep,
) -> &'static str {
    let content = message.and_then(|m| m.get("content"));
    let parts = blocks(content);
    let results: Vec<Value> = parts
        .iter()
        .filter(|b| text_of(b, "type") == Some("tool_result"))
        .map(|b| {
            let mut result =
                json!({ "toolUseId": b.get("tool_use_id"), "isError": b.get("is_error") });
            // Why it failed, or why it was refused: the projections show it on the call.
            if b.get("is_error") == Some(&Value::Bool(true)) {
                let text = texts(&blocks(b.get("content")), "text");
                result["error"] = json!(bounds::clip(&text, super::ERROR_CHARS));
            }
            result
        })
        .collect();
    if keep == Keep::Full
        && let Some(content) = content
    {
        payload.insert("content".into(), content.clone());
    }
    if !results.is_empty() {
        payload.insert("toolResults".into(), Value::Array(results));
        return TOOL_RESULT;
    }
    let prompt = match content {
        Some(Value::String(s)) => s.clone(),
        _ => texts(&parts, "text"),
    };
    payload.insert("prompt".into(), json!(prompt));
    PROMPT
}

/// Claude's usage object: `input_tokens` (not from the cache), `output_tokens`,
/// `cache_creation_input_tokens` (split by `cache_creation.ephemeral_5m_input_tokens` /
/// `ephemeral_1h_input_tokens` when present; all 5-minute writes otherwise, the default
/// duration) and `cache_read_input_tokens`.
fn usage_of(usage: &Value) -> Usage {
    let usage = Some(usage);
    let written = count(usage, "cache_creation_input_tokens");
    let split = usage.and_then(|u| u.get("cache_creation"));
    let (five, hour) = match split {
        Some(_) => {
            let five = count(split, "ephemeral_5m_input_tokens");
            let hour = count(split, "ephemeral_1h_input_tokens");
            // The total is the number to trust: some gateways and proxies (and scripted test
            // models) send `cache_creation_input_tokens: N` beside a split of zeros, and the
            // API bills the total. What the split leaves out is counted as 5-minute writes,
            // the default duration (and the cheaper one, so a cost is never overstated).
            let rest = written.saturating_sub(five.saturating_add(hour));
            (five.saturating_add(rest), hour)
        }
        None => (written, 0),
    };
    Usage {
        input: count(usage, "input_tokens"),
        output: count(usage, "output_tokens"),
        cache_write_5m: five,
        cache_write_1h: hour,
        cache_read: count(usage, "cache_read_input_tokens"),
        reasoning: 0,
    }
}

/// A message's content blocks (a string content is one text block).
fn blocks(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(s)) => vec![json!({ "type": "text", "text": s })],
        _ => Vec::new(),
    }
}

/// The text of the blocks of one type, one block per line.
fn texts(blocks: &[Value], kind: &str) -> String {
    blocks
        .iter()
        .filter(|b| text_of(b, "type") == Some(kind))
        .filter_map(|b| text_of(b, "text"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn text_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Record {
        parse(line.as_bytes(), None, Keep::Metadata)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn an_assistant_line_keeps_its_ids_model_usage_and_tool_names() {
        let record = read(
            r#"{"type":"assistant","uuid":"u2","parentUuid":"u1","sessionId":"s1","timestamp":"2026-11-02T09:00:05.120Z","requestId":"req_1","cwd":"/w/app","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/app/a.rs"}}],"usage":{"input_tokens":3,"output_tokens":40,"cache_creation_input_tokens":1200,"cache_read_input_tokens":15000,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":1000}}}}"#,
        );
        assert_eq!(record.event_type, MESSAGE);
        assert_eq!(record.session_id, "s1");
        assert_eq!(record.id_key, "claude-code:u2");
        assert_eq!(
            record.event_time.as_deref(),
            Some("2026-11-02T09:00:05.120Z")
        );
        let p = &record.payload;
        assert_eq!(p["usageKey"], "claude-code:msg_1:req_1");
        assert_eq!(p["model"], "claude-sonnet-4-5-20250929");
        assert_eq!(p["response"], "Reading it.");
        assert_eq!(p["toolCalls"], json!([{"id": "toolu_1", "name": "Read"}]));
        assert_eq!(
            Usage::from_json(&p["usage"]),
            Usage {
                input: 3,
                output: 40,
                cache_write_5m: 200,
                cache_write_1h: 1000,
                cache_read: 15000,
                reasoning: 0
            }
        );
    }

    #[test]
    fn without_a_request_id_the_record_uuid_is_the_usage_key() {
        let record = read(
            r#"{"type":"assistant","uuid":"u9","sessionId":"s1","message":{"id":"msg_9","model":"claude-haiku-4-5-20251001","usage":{"input_tokens":10,"output_tokens":2,"cache_creation_input_tokens":50}}}"#,
        );
        assert_eq!(record.payload["usageKey"], "claude-code:u9");
        // No split given: the cache writes are 5-minute ones.
        assert_eq!(
            Usage::from_json(&record.payload["usage"]).cache_write_5m,
            50
        );
    }

    #[test]
    fn cache_writes_a_split_leaves_out_count_as_five_minute_writes() {
        let usage = |line: &str| Usage::from_json(&read(line).payload["usage"]);
        // A gateway's answer: the total, and a split of zeros.
        let zeros = usage(
            r#"{"type":"assistant","uuid":"u5","sessionId":"s1","requestId":"r","message":{"id":"m5","model":"claude-opus-4-8","usage":{"input_tokens":3,"output_tokens":1,"cache_creation_input_tokens":10,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}}}}"#,
        );
        assert_eq!((zeros.cache_write_5m, zeros.cache_write_1h), (10, 0));
        // A split that covers part of the total: the rest is 5-minute writes.
        let part = usage(
            r#"{"type":"assistant","uuid":"u6","sessionId":"s1","message":{"id":"m6","model":"m","usage":{"input_tokens":1,"output_tokens":1,"cache_creation_input_tokens":1200,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":1000}}}}"#,
        );
        assert_eq!((part.cache_write_5m, part.cache_write_1h), (200, 1000));
    }

    #[test]
    fn a_synthetic_message_counts_no_usage() {
        let record = read(
            r#"{"type":"assistant","uuid":"u3","sessionId":"s1","message":{"id":"m","model":"<synthetic>","content":[{"type":"text","text":"API Error"}],"usage":{"input_tokens":0,"output_tokens":0}}}"#,
        );
        assert!(!record.payload.contains_key("usage"));
        assert!(!record.payload.contains_key("usageKey"));
    }

    #[test]
    fn user_records_are_prompts_or_tool_results_and_subagents_are_marked() {
        let prompt = read(
            r#"{"type":"user","uuid":"u1","sessionId":"s1","message":{"role":"user","content":"fix the totals"}}"#,
        );
        assert_eq!(prompt.event_type, PROMPT);
        assert_eq!(prompt.payload["prompt"], "fix the totals");
        let result = parse(
            br#"{"type":"user","uuid":"u4","sessionId":"s1","isSidechain":true,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}}"#,
            Some("a7"),
            Keep::Metadata,
        )
        .unwrap()
        .unwrap();
        assert_eq!(result.event_type, TOOL_RESULT);
        assert_eq!(result.payload["agentId"], "a7");
        assert_eq!(result.payload["toolResults"][0]["toolUseId"], "toolu_1");
        assert!(!result.payload.contains_key("content"), "metadata only");
    }

    #[test]
    fn long_text_is_bounded_unless_the_whole_conversation_is_kept() {
        let long = "x".repeat(9_000);
        let line = format!(
            r#"{{"type":"user","uuid":"u1","sessionId":"s1","message":{{"content":"{long}"}}}}"#
        );
        let bounded = parse(line.as_bytes(), None, Keep::Metadata)
            .unwrap()
            .unwrap();
        assert_eq!(bounded.payload["prompt"].as_str().unwrap().len(), 8_000);
        assert_eq!(bounded.payload["hooklogTruncated"]["prompt"], 9_000);
        let full = parse(line.as_bytes(), None, Keep::Full).unwrap().unwrap();
        assert_eq!(full.payload["content"].as_str().unwrap().len(), 9_000);
    }

    #[test]
    fn damaged_and_other_lines_are_skipped_with_a_reason() {
        let skip = |line: &str| parse(line.as_bytes(), None, Keep::Metadata).unwrap_err();
        assert_eq!(
            skip(r#"{"type":"assistant","uuid":"u1","sess"#),
            Skip::Malformed
        );
        assert_eq!(skip("[1,2]"), Skip::NotAnObject);
        assert_eq!(
            skip(r#"{"type":"summary","summary":"x","leafUuid":"u"}"#),
            Skip::NotKept
        );
        assert_eq!(skip(r#"{"type":"user","uuid":"u1"}"#), Skip::NoSession);
        assert_eq!(skip(r#"{"type":"user","sessionId":"s"}"#), Skip::NoId);
    }
}
