//! One line of a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): a JSON
//! object `{timestamp, type, payload}`. `session_meta` names the session (`payload.id`) and its
//! directory; `turn_context` the model of the turns that follow; `event_msg` lines carry the
//! person's prompts (`user_message`) and the token counts (`token_count`, whose
//! `info.last_token_usage` is the last model call's usage and `info.total_token_usage` the
//! session's running total); `response_item` lines the model's output, tool calls among them.
//!
//! A rollout's records do not carry their session or model, so a [`Reader`] keeps what the
//! context lines said, and is fed one file's lines in order. Codex's `input_tokens` include
//! the cached ones (`cached_input_tokens`), and its `output_tokens` include the reasoning ones:
//! hooklog stores input without the cached part, as it does for Claude.

use super::{
    CODEX, ERROR_CHARS, Keep, MESSAGE, PROMPT, Record, Skip, TOKEN_COUNT, TOOL_RESULT, Usage,
    count, text,
};
use crate::ingest::bounds;
use serde_json::{Map, Value, json};

/// Whether a file is a Codex rollout (`rollout-*.jsonl`), by its name.
pub fn is_rollout(file: &std::path::Path) -> bool {
    file.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("rollout-"))
}

/// What the context lines of one rollout said so far.
#[derive(Debug, Default)]
pub struct Reader {
    session: Option<String>,
    model: Option<String>,
    cwd: Option<String>,
}

impl Reader {
    /// A reader for a rollout read from the middle (`follow`), whose `session_meta` and
    /// `turn_context` lines were read before: the session and model its hooks named.
    pub fn resuming(session: &str, model: Option<&str>) -> Reader {
        Reader {
            session: Some(session.to_string()),
            model: model.map(str::to_string),
            cwd: None,
        }
    }

    /// Reads one line: `Ok(Some)` a record, `Ok(None)` a context line (read, not stored).
    pub fn line(&mut self, line: &[u8], keep: Keep) -> Result<Option<Record>, Skip> {
        let map = super::object(line)?;
        let payload = map.get("payload").and_then(Value::as_object);
        let Some(payload) = payload else {
            return Err(Skip::NotKept);
        };
        match (text(&map, "type"), text(payload, "type")) {
            (Some("session_meta"), _) => {
                self.session = text(payload, "id").map(str::to_string);
                self.cwd = text(payload, "cwd").map(str::to_string).or(self.cwd.take());
                Ok(None)
            }
            (Some("turn_context"), _) => {
                self.model = text(payload, "model")
                    .map(str::to_string)
                    .or(self.model.take());
                self.cwd = text(payload, "cwd").map(str::to_string).or(self.cwd.take());
                Ok(None)
            }
            (Some("event_msg"), Some("user_message")) => {
                let mut out = self.base(keep)?;
                out.insert(
                    "prompt".into(),
                    json!(text(payload, "message").unwrap_or("")),
                );
                self.record(&map, line, PROMPT, out, keep)
            }
            (Some("event_msg"), Some("token_count")) => {
                let info = payload.get("info").filter(|i| i.is_object());
                let Some(info) = info else {
                    return Err(Skip::NoUsage);
                };
                let mut out = self.base(keep)?;
                let session = self.session.as_deref().unwrap_or_default();
                // One model call's usage, counted once: Codex may repeat a token count, and the
                // running total it carries is the same each time it does.
                let total = count(info.get("total_token_usage"), "total_tokens");
                out.insert(
                    "usageKey".into(),
                    json!(format!("{CODEX}:{session}:{total}")),
                );
                out.insert(
                    "usage".into(),
                    usage_of(info.get("last_token_usage")).to_json(),
                );
                self.record(&map, line, TOKEN_COUNT, out, keep)
            }
            // Codex 0.171 writes its items as `item_completed`: a person's prompt (no
            // `user_message` any more) and a finished command with its exit code.
            (Some("event_msg"), Some("item_completed")) => {
                let item = payload.get("item").unwrap_or(&Value::Null);
                let mut out = self.base(keep)?;
                match item.get("type").and_then(Value::as_str) {
                    Some("UserMessage") => {
                        out.insert("prompt".into(), json!(item_text(item)));
                        self.record(&map, line, PROMPT, out, keep)
                    }
                    Some("CommandExecution") => {
                        out.insert("toolResults".into(), json!([command_result(item)]));
                        self.record(&map, line, TOOL_RESULT, out, keep)
                    }
                    _ => Err(Skip::NotKept),
                }
            }
            (Some("response_item"), Some("function_call" | "custom_tool_call")) => {
                let mut out = self.base(keep)?;
                let mut call = json!({ "id": payload.get("call_id"), "name": payload.get("name") });
                if keep == Keep::Full {
                    call["input"] = payload.get("arguments").cloned().unwrap_or(Value::Null);
                }
                out.insert("toolCalls".into(), json!([call]));
                self.record(&map, line, MESSAGE, out, keep)
            }
            _ => Err(Skip::NotKept),
        }
    }

    /// The fields every record of this rollout has.
    fn base(&self, _keep: Keep) -> Result<Map<String, Value>, Skip> {
        if self.session.is_none() {
            return Err(Skip::NoSession);
        }
        let mut out = Map::new();
        out.insert("cli".into(), json!(CODEX));
        if let Some(model) = &self.model {
            out.insert("model".into(), json!(model));
        }
        if let Some(cwd) = &self.cwd {
            out.insert("cwd".into(), json!(cwd));
        }
        Ok(out)
    }

    fn record(
        &self,
        map: &Map<String, Value>,
        line: &[u8],
        event_type: &'static str,
        mut payload: Map<String, Value>,
        keep: Keep,
    ) -> Result<Option<Record>, Skip> {
        let session = self.session.clone().ok_or(Skip::NoSession)?;
        if keep == Keep::Metadata {
            bounds::truncate(&mut payload);
        }
        // A rollout's records have no ids of their own: the line itself, within its session,
        // is what identifies one (a line is never rewritten; a file only grows).
        let id_key = format!("{CODEX}:{session}:{}", String::from_utf8_lossy(line));
        Ok(Some(Record {
            session_id: session,
            event_type,
            event_time: text(map, "timestamp").and_then(crate::event::time::normalize),
            id_key,
            payload,
        }))
    }
}

/// The text of a `UserMessage` item: its `text` parts, one per line.
fn item_text(item: &Value) -> String {
    let parts = item.get("content").and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A finished shell command (`item_completed` of a `CommandExecution`) as a tool result:
/// its call id, whether it failed (a status other than `completed`, or an exit code other
/// than 0) and then why. Codex's `PostToolUse` hook has no exit code; this line has.
fn command_result(item: &Value) -> Value {
    let code = item.get("exit_code").and_then(Value::as_i64);
    let status = item.get("status").and_then(Value::as_str).unwrap_or("");
    let failed = status != "completed" || code.is_some_and(|c| c != 0);
    let mut result = json!({ "toolUseId": item.get("id"), "isError": failed });
    if let Some(code) = code {
        result["exitCode"] = json!(code);
    }
    if failed {
        let why = match code {
            Some(code) => format!("{status}: exit code {code}"),
            None => status.to_string(),
        };
        let output = item.get("aggregated_output").and_then(Value::as_str);
        let error = match output.map(str::trim).filter(|o| !o.is_empty()) {
            Some(output) => format!("{why}\n{output}"),
            None => why,
        };
        result["error"] = json!(bounds::clip(&error, ERROR_CHARS));
    }
    result
}

/// Codex's usage: `input_tokens` (cached included), `cached_input_tokens`, `output_tokens`
/// (reasoning included), `reasoning_output_tokens`.
fn usage_of(usage: Option<&Value>) -> Usage {
    let input = count(usage, "input_tokens");
    let cached = count(usage, "cached_input_tokens");
    Usage {
        input: input.saturating_sub(cached),
        output: count(usage, "output_tokens"),
        cache_write_5m: 0,
        cache_write_1h: 0,
        cache_read: cached,
        reasoning: count(usage, "reasoning_output_tokens"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":{"id":"0199-codex","cwd":"/w/api","cli_version":"0.60.0"}}"#;
    const CONTEXT: &str = r#"{"timestamp":"2026-11-03T14:00:01.000Z","type":"turn_context","payload":{"cwd":"/w/api","model":"gpt-5-codex"}}"#;
    const COUNT: &str = r#"{"timestamp":"2026-11-03T14:00:09.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":9000,"cached_input_tokens":6000,"output_tokens":700,"reasoning_output_tokens":300,"total_tokens":9700},"last_token_usage":{"input_tokens":5000,"cached_input_tokens":4000,"output_tokens":400,"reasoning_output_tokens":100,"total_tokens":5400}}}}"#;

    #[test]
    fn a_token_count_is_the_last_calls_usage_with_the_cached_part_apart() {
        let mut reader = Reader::default();
        assert_eq!(reader.line(META.as_bytes(), Keep::Metadata), Ok(None));
        assert_eq!(reader.line(CONTEXT.as_bytes(), Keep::Metadata), Ok(None));
        let record = reader
            .line(COUNT.as_bytes(), Keep::Metadata)
            .unwrap()
            .unwrap();
        assert_eq!(record.event_type, TOKEN_COUNT);
        assert_eq!(record.session_id, "0199-codex");
        assert_eq!(record.payload["model"], "gpt-5-codex");
        assert_eq!(record.payload["usageKey"], "codex:0199-codex:9700");
        assert_eq!(
            Usage::from_json(&record.payload["usage"]),
            Usage {
                input: 1000,
                output: 400,
                cache_write_5m: 0,
                cache_write_1h: 0,
                cache_read: 4000,
                reasoning: 100
            }
        );
    }

    #[test]
    fn prompts_and_tool_calls_are_kept_and_other_lines_skipped() {
        let mut reader = Reader::default();
        let prompt = br#"{"timestamp":"2026-11-03T14:00:02.000Z","type":"event_msg","payload":{"type":"user_message","message":"add a health route"}}"#;
        assert_eq!(reader.line(prompt, Keep::Metadata), Err(Skip::NoSession));
        reader.line(META.as_bytes(), Keep::Metadata).unwrap();
        let record = reader.line(prompt, Keep::Metadata).unwrap().unwrap();
        assert_eq!(record.event_type, PROMPT);
        assert_eq!(record.payload["prompt"], "add a health route");
        let call = br#"{"timestamp":"2026-11-03T14:00:03.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}}"#;
        let record = reader.line(call, Keep::Metadata).unwrap().unwrap();
        assert_eq!(
            record.payload["toolCalls"],
            json!([{"id": "call_1", "name": "shell"}])
        );
        let empty = br#"{"timestamp":"2026-11-03T14:00:04.000Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#;
        assert_eq!(reader.line(empty, Keep::Metadata), Err(Skip::NoUsage));
        let failed = br#"{"timestamp":"2026-11-03T14:00:04.500Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_2","command":["/bin/bash","-lc","false"],"status":"failed","aggregated_output":"","exit_code":1}}}"#;
        let record = reader.line(failed, Keep::Metadata).unwrap().unwrap();
        assert_eq!(record.event_type, TOOL_RESULT);
        assert_eq!(
            record.payload["toolResults"],
            json!([{"toolUseId": "call_2", "isError": true, "exitCode": 1, "error": "failed: exit code 1"}])
        );
        let ok = br#"{"timestamp":"2026-11-03T14:00:04.600Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"call_3","status":"completed","exit_code":0}}}"#;
        let record = reader.line(ok, Keep::Metadata).unwrap().unwrap();
        assert_eq!(
            record.payload["toolResults"],
            json!([{"toolUseId": "call_3", "isError": false, "exitCode": 0}])
        );
        let prompt = br#"{"timestamp":"2026-11-03T14:00:04.650Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u_1","content":[{"type":"text","text":"run it","text_elements":[]}]}}}"#;
        let record = reader.line(prompt, Keep::Metadata).unwrap().unwrap();
        assert_eq!(record.event_type, PROMPT);
        assert_eq!(record.payload["prompt"], "run it");
        let message = br#"{"timestamp":"2026-11-03T14:00:04.700Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"m_1"}}}"#;
        assert_eq!(reader.line(message, Keep::Metadata), Err(Skip::NotKept));
        let reasoning = br#"{"timestamp":"2026-11-03T14:00:05.000Z","type":"response_item","payload":{"type":"reasoning","summary":[]}}"#;
        assert_eq!(reader.line(reasoning, Keep::Metadata), Err(Skip::NotKept));
    }
}
