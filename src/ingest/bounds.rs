//! Bounded text fields. Hooks may send whole prompts and long messages; the seed bounds them
//! (a prompt to 8,000 characters) and so does hooklog, at the edge, before anything is stored.
//! A truncated field is recorded in the payload under `hooklogTruncated`, with the length it
//! had, so a reader of the log knows the text is not whole.

use serde_json::{Map, Value, json};

/// The payload field that lists what was truncated: `{"prompt": 12000}` (original characters).
pub const TRUNCATED_FIELD: &str = "hooklogTruncated";

/// Top-level text fields and the most characters each keeps.
pub const LIMITS: &[(&str, usize)] = &[
    ("prompt", 8_000),
    ("title", 200),
    ("summary", 4_000),
    ("lastAssistantMessage", 4_000),
    ("message", 2_000),
    ("command", 2_000),
    ("inputPreview", 2_000),
    ("toolSummary", 2_000),
    ("preview", 2_000),
    ("rationale", 2_000),
    ("detail", 2_000),
    ("response", 2_000),
    ("error", 4_000),
    ("customInstructions", 2_000),
    ("compactSummary", 4_000),
    ("taskDescription", 2_000),
];

/// Documents whose every string is bounded: a tool's input and its response can hold a whole
/// file, a command's output or a patch; `PostToolBatch` carries several of each in
/// `toolCalls`. The structure is kept; long strings are cut.
pub const NESTED: &[&str] = &["toolInput", "toolResponse", "tool_calls"];

/// The most characters one string inside [`NESTED`] keeps.
pub const NESTED_STRING_CHARS: usize = 10_000;

/// Truncates every bounded field of `map` that is too long, and records it (nested strings
/// under their path, e.g. `toolResponse.stdout` or `toolResponse.content[0].text`).
pub fn truncate(map: &mut Map<String, Value>) {
    let mut truncated = Map::new();
    for (field, limit) in LIMITS {
        if let Some(Value::String(text)) = map.get_mut(*field)
            && let Some(original) = cut(text, *limit)
        {
            truncated.insert((*field).to_string(), json!(original));
        }
    }
    for field in NESTED {
        if let Some(value) = map.get_mut(*field) {
            cut_strings(value, field.to_string(), &mut truncated);
        }
    }
    if !truncated.is_empty() {
        map.insert(TRUNCATED_FIELD.into(), Value::Object(truncated));
    }
}

fn cut_strings(value: &mut Value, path: String, truncated: &mut Map<String, Value>) {
    match value {
        Value::String(text) => {
            if let Some(original) = cut(text, NESTED_STRING_CHARS) {
                truncated.insert(path, json!(original));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                cut_strings(item, format!("{path}[{i}]"), truncated);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields.iter_mut() {
                cut_strings(item, format!("{path}.{key}"), truncated);
            }
        }
        _ => {}
    }
}

/// Cuts `text` to `limit` characters; returns its original length in characters if it was cut.
pub fn cut(text: &mut String, limit: usize) -> Option<usize> {
    let (end, _) = text.char_indices().nth(limit)?;
    let original = limit + text[end..].chars().count();
    text.truncate(end);
    Some(original)
}

/// `text` cut to `limit` characters (for projection columns; nothing recorded).
pub fn clip(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => text[..end].to_string(),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_prompt_is_cut_to_8000_characters_and_recorded() {
        let prompt = "é".repeat(8_123);
        let mut map = json!({"prompt": prompt, "cwd": "x".repeat(9_000)})
            .as_object()
            .unwrap()
            .clone();
        truncate(&mut map);
        assert_eq!(map["prompt"].as_str().unwrap().chars().count(), 8_000);
        assert_eq!(map[TRUNCATED_FIELD], json!({"prompt": 8_123}));
        assert_eq!(
            map["cwd"].as_str().unwrap().len(),
            9_000,
            "cwd is not bounded"
        );
    }

    #[test]
    fn long_strings_inside_tool_input_and_response_are_cut_where_they_are() {
        let big = "x".repeat(NESTED_STRING_CHARS + 5);
        let mut map = json!({
            "toolInput": {"file_path": "a.rs", "content": big},
            "toolResponse": {"content": [{"type": "text", "text": big}], "ok": true},
            "other": big,
        })
        .as_object()
        .unwrap()
        .clone();
        truncate(&mut map);
        assert_eq!(map["toolInput"]["file_path"], "a.rs");
        assert_eq!(
            map["toolInput"]["content"].as_str().unwrap().len(),
            NESTED_STRING_CHARS
        );
        assert_eq!(map["toolResponse"]["ok"], true);
        assert_eq!(
            map[TRUNCATED_FIELD],
            json!({"toolInput.content": NESTED_STRING_CHARS + 5,
                   "toolResponse.content[0].text": NESTED_STRING_CHARS + 5})
        );
        assert_eq!(
            map["other"].as_str().unwrap().len(),
            NESTED_STRING_CHARS + 5
        );
    }

    #[test]
    fn short_fields_are_left_alone_and_unrecorded() {
        let mut map = json!({"prompt": "hi", "summary": 5})
            .as_object()
            .unwrap()
            .clone();
        truncate(&mut map);
        assert_eq!(map["prompt"], "hi");
        assert!(map.get(TRUNCATED_FIELD).is_none());
    }

    #[test]
    fn clip_counts_characters_not_bytes() {
        assert_eq!(clip("ééé", 2), "éé");
        assert_eq!(clip("ab", 5), "ab");
    }
}
