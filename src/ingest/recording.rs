//! One line of a recording, as `hooklog import` and `hooklog replay` read it: a
//! `hooklog.event.v1` envelope or short-form event (or an array of them), as `POST /events`
//! takes it, or a seed 003 `FactoryEvent` envelope, which names its session in
//! `context.sessionId`.

use super::{InvalidRequest, canonical, factory};
use crate::event::NewEvent;
use serde_json::{Value, json};

/// The events a recorded line holds.
pub fn parse_line(line: &[u8]) -> Result<Vec<NewEvent>, InvalidRequest> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| InvalidRequest::new(format!("not valid JSON: {e}"), json!({})))?;
    if value.get("schemaVersion").and_then(Value::as_str) == Some(factory::SCHEMA_VERSION) {
        let Some(session) = factory_session(&value) else {
            return Err(InvalidRequest::new(
                "a FactoryEvent line must name its session in context.sessionId",
                json!({ "field": "context.sessionId" }),
            ));
        };
        return factory::parse(line, false, &session);
    }
    canonical::parse(line, false)
}

/// The session a factory envelope names, if it names one.
pub fn factory_session(value: &Value) -> Option<String> {
    value
        .pointer("/context/sessionId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}
