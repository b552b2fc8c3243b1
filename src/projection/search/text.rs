//! What is searchable in an event: [`text_of`] and the fields it takes, collected by `Text`.

use crate::event::StoredEvent;
use crate::projection::Parsed;
use serde_json::{Map, Value};

/// Fields whose string value is searchable wherever they are in a payload: camelCase as
/// `/event` stores hook bodies, and snake_case as hooks send them (an import may keep those).
pub const TEXT_KEYS: &[&str] = &[
    "prompt",
    "tool",
    "toolName",
    "tool_name",
    "command",
    "filePath",
    "file_path",
    "url",
    "query",
    "pattern",
    "error",
    "message",
    "lastAssistantMessage",
    "last_assistant_message",
    "reason",
    "description",
    "title",
    "summary",
    "text",
    "content",
    "name",
    "phaseName",
    "agentType",
    "agent_type",
    "subagentType",
    "subagent_type",
    "taskSubject",
    "task_subject",
    "taskDescription",
    "task_description",
    "teammateName",
    "teammate_name",
    "compactSummary",
    "compact_summary",
    "customInstructions",
    "custom_instructions",
    "inputPreview",
    "input_preview",
    "toolSummary",
    "tool_summary",
    "preview",
    "rationale",
    "detail",
    "response",
    "output",
    "result",
];

/// Fields every string inside of which is searchable: a tool's input and its response (a
/// command, a file path and its content, a patch, an output, a list of file names).
pub const DOCUMENTS: &[&str] = &[
    "toolInput",
    "tool_input",
    "toolResponse",
    "tool_response",
    "toolCalls",
    "tool_calls",
];

/// More searchable fields of coordination outcomes (`source` `coordination`): who claimed
/// which chat and how it ended, which account a watcher or a gap is for.
pub const COORDINATION_KEYS: &[&str] = &[
    "chat",
    "sessionId",
    "outcome",
    "platform",
    "account",
    "hostname",
];

/// Sources whose events are never indexed: `bench`, the load generators' log-only path
/// (docs/performance.md), which stays the log alone.
pub const UNINDEXED_SOURCES: &[&str] = &["bench"];

/// The most characters one string contributes.
pub const MAX_STRING_CHARS: usize = crate::ingest::bounds::NESTED_STRING_CHARS;
/// The most bytes of text one event has in the index.
pub const MAX_TEXT_BYTES: usize = 32 * 1024;
/// How deep into a payload's objects and lists searchable fields are looked for.
const MAX_DEPTH: usize = 8;

/// The searchable text of an event (its fields one per line), or `None` when it has none.
/// `parsed` must be `Parsed::of(event)`.
pub fn text_of(event: &StoredEvent, parsed: &Parsed) -> Option<String> {
    text_of_payload(&event.source, &event.payload, parsed)
}

/// [`text_of`] an event from `source` with `payload`, before it is stored; `parsed` must be
/// `Parsed::of_payload(source, payload)`.
pub fn text_of_payload(source: &str, payload: &str, parsed: &Parsed) -> Option<String> {
    if UNINDEXED_SOURCES.contains(&source) {
        return None;
    }
    let mut text = Text::default();
    match parsed {
        Parsed::Hook(view)
        | Parsed::Normalized(view)
        | Parsed::Transcript(view)
        | Parsed::Replication(view) => text.walk(view.fields(), &[], 0),
        Parsed::Coordination(view) => text.walk(view.fields(), COORDINATION_KEYS, 0),
        Parsed::Factory(parts) => {
            text.walk(&parts.context, &[], 0);
            text.walk(&parts.payload, &[], 0);
        }
        Parsed::Other => {
            if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(payload) {
                text.walk(&map, &[], 0);
            }
        }
    }
    (!text.out.is_empty()).then_some(text.out)
}

/// An event's text as it is collected.
#[derive(Default)]
struct Text {
    out: String,
    full: bool,
}

impl Text {
    /// Takes the searchable fields of `map` (and `extra` ones), looking into the rest.
    fn walk(&mut self, map: &Map<String, Value>, extra: &[&str], depth: usize) {
        for (key, value) in map {
            if self.full {
                return;
            }
            if DOCUMENTS.contains(&key.as_str()) {
                self.all(value, depth);
            } else if TEXT_KEYS.contains(&key.as_str()) || extra.contains(&key.as_str()) {
                match value {
                    Value::String(s) => self.push(s),
                    // `content: [{"type": "text", "text": ...}]` and the like.
                    other => self.all(other, depth),
                }
            } else if depth < MAX_DEPTH {
                match value {
                    Value::Object(inner) => self.walk(inner, &[], depth + 1),
                    Value::Array(items) => {
                        for item in items {
                            if let Value::Object(inner) = item {
                                self.walk(inner, &[], depth + 1);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Takes every string inside `value`.
    fn all(&mut self, value: &Value, depth: usize) {
        if self.full || depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::String(s) => self.push(s),
            Value::Array(items) => items.iter().for_each(|v| self.all(v, depth + 1)),
            Value::Object(fields) => fields.values().for_each(|v| self.all(v, depth + 1)),
            _ => {}
        }
    }

    /// Appends one string on a line of its own: control characters become spaces, at most
    /// [`MAX_STRING_CHARS`] characters, and nothing past [`MAX_TEXT_BYTES`].
    fn push(&mut self, s: &str) {
        let s = s.trim();
        if s.is_empty() || self.full {
            return;
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        for (n, c) in s.chars().enumerate() {
            if n == MAX_STRING_CHARS {
                break;
            }
            if self.out.len() + c.len_utf8() > MAX_TEXT_BYTES {
                self.full = true;
                break;
            }
            self.out
                .push(if c.is_control() && c != '\n' { ' ' } else { c });
        }
    }
}
