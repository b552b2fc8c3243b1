//! A lenient reader over a hook event's payload. `/event` stores payloads already normalized
//! (camelCase), but a hook event can also arrive through `POST /events` with `source: "hook"`
//! and a raw snake_case payload, or from an import; the projections must read both the same
//! way. So every field is looked up by its camelCase name, then its snake_case alias, and
//! anything but a non-empty string reads as absent: a projection never refuses an event.

use crate::ingest::hook::ALIASES;
use foldhash::HashMap;
use serde_json::{Map, Value};
use std::sync::LazyLock;

/// Each camelCase name's snake_case alias, by the camelCase name: most lookups are of fields
/// an event does not have, and each of those asks for the alias.
static SNAKE: LazyLock<HashMap<&'static str, &'static str>> = LazyLock::new(|| {
    ALIASES
        .iter()
        .map(|(snake, camel, _)| (*camel, *snake))
        .collect()
});

pub struct View {
    map: Map<String, Value>,
}

impl View {
    pub fn parse(payload: &str) -> View {
        let map = match serde_json::from_str(payload) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        View { map }
    }

    /// The payload's fields, as parsed (empty when it is not a JSON object).
    pub fn fields(&self) -> &Map<String, Value> {
        &self.map
    }

    /// A field's value by camelCase name, else by its snake_case alias.
    pub fn get(&self, camel: &str) -> Option<&Value> {
        self.map.get(camel).filter(|v| !v.is_null()).or_else(|| {
            SNAKE
                .get(camel)
                .and_then(|snake| self.map.get(*snake))
                .filter(|v| !v.is_null())
        })
    }

    /// A non-empty string field.
    pub fn text(&self, camel: &str) -> Option<&str> {
        self.get(camel)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }

    pub fn int(&self, camel: &str) -> Option<i64> {
        self.get(camel).and_then(Value::as_i64)
    }

    pub fn bool(&self, camel: &str) -> Option<bool> {
        self.get(camel).and_then(Value::as_bool)
    }

    /// The tool: `tool` wins over `toolName` / `tool_name`.
    pub fn tool(&self) -> Option<&str> {
        self.text("tool").or_else(|| self.text("toolName"))
    }

    /// The hook-specific `type` (`bash_command`, `permission_request`, ...).
    pub fn hook_type(&self) -> Option<&str> {
        self.text("type")
    }

    /// A string inside `toolInput`.
    pub fn input_text(&self, key: &str) -> Option<&str> {
        self.get("toolInput")
            .and_then(|input| input.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_camel_case_then_snake_case_and_ignores_wrong_types() {
        let view = View::parse(
            r#"{"sessionId":"camel","session_id":"snake","tool_use_id":"t1","turn_id":5,
                "tool_name":"Bash","tool_input":{"command":"ls"},"prompt":""}"#,
        );
        assert_eq!(view.text("sessionId"), Some("camel"));
        assert_eq!(view.text("toolUseId"), Some("t1"));
        assert_eq!(view.text("turnId"), None);
        assert_eq!(view.tool(), Some("Bash"));
        assert_eq!(view.input_text("command"), Some("ls"));
        assert_eq!(view.text("prompt"), None);
        assert_eq!(View::parse("[1]").text("x"), None);
    }
}
