//! A lenient reader over a hook event's payload. `/event` stores payloads already normalized
//! (camelCase), but a hook event can also arrive through `POST /events` with `source: "hook"`
//! and a raw snake_case payload, or from an import; the projections must read both the same
//! way. So every field is looked up by its camelCase name, then its snake_case alias, and
//! anything but a non-empty string reads as absent: a projection never refuses an event.

use crate::ingest::hook::ALIASES;
use foldhash::HashMap;
use serde_json::{Map, Value};
use std::sync::LazyLock;

/// Each camelCase name with a snake_case alias: the alias, and the name's bit in a [`View`]'s
/// sets of present fields. Most lookups are of fields an event does not have; the sets
/// answer those without looking in the payload at all.
static ALIAS: LazyLock<HashMap<&'static str, (&'static str, u64)>> = LazyLock::new(|| {
    assert!(ALIASES.len() <= 64, "one bit an alias");
    ALIASES
        .iter()
        .enumerate()
        .map(|(i, (snake, camel, _))| (*camel, (*snake, 1 << i)))
        .collect()
});

/// The bit of each name of [`ALIASES`], by the name: in the camelCase set, the snake_case set,
/// or both (a name may be one alias's camelCase and another's snake_case).
static BIT: LazyLock<HashMap<&'static str, (u64, u64)>> = LazyLock::new(|| {
    let mut bits: HashMap<&'static str, (u64, u64)> = HashMap::default();
    for (i, (snake, camel, _)) in ALIASES.iter().enumerate() {
        bits.entry(*camel).or_default().0 |= 1 << i;
        bits.entry(*snake).or_default().1 |= 1 << i;
    }
    bits
});

pub struct View {
    map: Map<String, Value>,
    /// The aliased fields present (not `null`) by their camelCase name, one bit each ([`ALIAS`]).
    camel: u64,
    /// The same by their snake_case name.
    snake: u64,
}

impl View {
    pub fn parse(payload: &str) -> View {
        let map = match serde_json::from_str(payload) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let (mut camel, mut snake) = (0, 0);
        for (name, value) in &map {
            if !value.is_null()
                && let Some((c, s)) = BIT.get(name.as_str())
            {
                camel |= c;
                snake |= s;
            }
        }
        View { map, camel, snake }
    }

    /// The payload's fields, as parsed (empty when it is not a JSON object).
    pub fn fields(&self) -> &Map<String, Value> {
        &self.map
    }

    /// A field's value by camelCase name, else by its snake_case alias.
    pub fn get(&self, camel: &str) -> Option<&Value> {
        let Some((snake, bit)) = ALIAS.get(camel) else {
            return self.map.get(camel).filter(|v| !v.is_null());
        };
        if self.camel & bit != 0 {
            self.map.get(camel)
        } else if self.snake & bit != 0 {
            self.map.get(*snake)
        } else {
            None
        }
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

    /// A `null` is absent: a camelCase `null` falls back to its snake_case alias, and a field
    /// in neither form (or only `null`) reads as absent, as does an unaliased one.
    #[test]
    fn nulls_are_absent_and_aliases_fall_back() {
        let view = View::parse(
            r#"{"sessionId":null,"session_id":"snake","modelId":null,"model_id":null,
                "tool":"Edit","type":null,"toolUseId":"camel","tool_use_id":"snake"}"#,
        );
        assert_eq!(view.text("sessionId"), Some("snake"));
        assert_eq!(view.get("modelId"), None);
        assert_eq!(view.get("turnId"), None);
        assert_eq!(view.text("toolUseId"), Some("camel"));
        assert_eq!(view.text("tool"), Some("Edit"));
        assert_eq!(view.get("type"), None);
        assert_eq!(view.get("missing"), None);
    }
}
