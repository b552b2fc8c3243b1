//! `POST /events` as other hook servers' scripts post it: the envelope of the most used
//! open-source observability hook script, `{"source_app", "session_id", "hook_event_type",
//! "payload": <the raw hook body>, "timestamp", "model_name", ...}`, so a team switching to
//! hooklog changes only the URL. Each envelope becomes exactly the event `POST /event` makes of
//! its `payload` (source `hook`, every projection), with three things taken from around it:
//! `source_app` (kept as `sourceApp`), `timestamp` (the event time: milliseconds since the
//! epoch, or RFC 3339), and `hook_event_type` / `session_id` / `model_name` where the payload
//! lacks its own. The script's other fields (copies of payload fields, `chat`, `summary`)
//! are not stored.

use super::body::{Item, kind};
use super::{InvalidRequest, hook};
use crate::event::{NewEvent, time};
use serde_json::{Map, Value, json};

/// Whether an item of a `POST /events` body is such an envelope.
pub fn is_envelope(map: &Map<String, Value>) -> bool {
    map.contains_key("hook_event_type") && map.contains_key("payload")
}

/// The event an envelope stands for.
pub fn parse(item: &Item, mut map: Map<String, Value>) -> Result<NewEvent, InvalidRequest> {
    let mut body = match map.remove("payload") {
        Some(Value::Object(body)) => body,
        Some(other) => {
            let problem = format!(
                "must be an object (the hook's own body), not {}",
                kind(&other)
            );
            return Err(InvalidRequest::field(item, "payload", &problem));
        }
        None => unreachable!("is_envelope checked it"),
    };
    let source_app = text(item, &map, "source_app")?;
    let event_time = event_time(item, map.get("timestamp"))?;
    let around = [
        ("hook_event_type", "hook_event_name"),
        ("session_id", "session_id"),
        ("model_name", "model"),
    ];
    for (outer, inner) in around {
        if let Some(value) = text(item, &map, outer)?
            && !has_text(&body, inner)
        {
            body.insert(inner.to_string(), json!(value));
        }
    }
    if let Some(app) = source_app {
        body.insert("sourceApp".into(), json!(app));
    }
    let mut parsed = hook::from_map(body, None, None).map_err(|e| located(item, e))?;
    parsed.event.event_time = event_time;
    Ok(parsed.event)
}

/// A non-empty string field of the envelope; a field of another type refuses it.
fn text(
    item: &Item,
    map: &Map<String, Value>,
    field: &str,
) -> Result<Option<String>, InvalidRequest> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok((!s.is_empty()).then(|| s.clone())),
        Some(other) => Err(InvalidRequest::field(
            item,
            field,
            &format!("must be a string, not {}", kind(other)),
        )),
    }
}

/// Whether the hook body already has this field (in either spelling `/event` reads).
fn has_text(body: &Map<String, Value>, snake: &str) -> bool {
    let camel = hook::ALIASES
        .iter()
        .find(|(s, _, _)| *s == snake)
        .map(|(_, c, _)| *c);
    let named = |field: &str| body.get(field).is_some_and(|v| !v.is_null());
    named(snake)
        || camel.is_some_and(named)
        || (snake == "hook_event_name" && (named("eventName") || named("hook")))
}

/// `timestamp`: milliseconds since the epoch (what the script sends), or an RFC 3339 time.
fn event_time(item: &Item, value: Option<&Value>) -> Result<Option<String>, InvalidRequest> {
    let time = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(time::format),
        Some(Value::String(s)) => time::normalize(s),
        Some(_) => None,
    };
    time.map(Some).ok_or_else(|| {
        InvalidRequest::field(
            item,
            "timestamp",
            "must be milliseconds since the epoch or an RFC 3339 time",
        )
    })
}

/// A refusal of the hook body, said of the item it sat in.
fn located(item: &Item, error: InvalidRequest) -> InvalidRequest {
    let mut details = item.location();
    if let (Value::Object(into), Value::Object(from)) = (&mut details, error.details) {
        into.extend(from);
    }
    InvalidRequest::new(format!("{item}: payload: {}", error.message), details)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(extra: Value) -> Map<String, Value> {
        let mut map = json!({
            "source_app": "shop",
            "session_id": "s1",
            "hook_event_type": "PreToolUse",
            "payload": {"session_id": "s1", "hook_event_name": "PreToolUse",
                        "tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "ls"}},
            "timestamp": 1_764_590_400_123_i64,
            "model_name": "claude-sonnet-4-5",
        });
        map.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        map.as_object().unwrap().clone()
    }

    #[test]
    fn an_envelope_becomes_its_payload_as_a_hook_event() {
        let event = parse(&Item::Single, envelope(json!({}))).unwrap();
        let direct = hook::parse(
            br#"{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"ls"}}"#,
            None,
            None,
        )
        .unwrap()
        .event;
        assert_eq!(event.event_type, "PreToolUse");
        assert_eq!(event.session_id.as_deref(), Some("s1"));
        assert_eq!(event.source, hook::SOURCE);
        assert_eq!(
            event.event_time.as_deref(),
            Some("2025-12-01T12:00:00.123Z")
        );
        let mut payload: Value = serde_json::from_str(&event.payload).unwrap();
        assert_eq!(payload["sourceApp"], "shop");
        assert_eq!(payload["model"], "claude-sonnet-4-5");
        let map = payload.as_object_mut().unwrap();
        map.remove("sourceApp");
        map.remove("model");
        let direct: Value = serde_json::from_str(&direct.payload).unwrap();
        assert_eq!(payload, direct);
    }

    #[test]
    fn the_payload_names_win_over_the_envelope() {
        let event = parse(
            &Item::Single,
            envelope(json!({"hook_event_type": "Custom", "session_id": "unknown"})),
        )
        .unwrap();
        assert_eq!(event.event_type, "PreToolUse");
        assert_eq!(event.session_id.as_deref(), Some("s1"));
        let bare = parse(
            &Item::Single,
            envelope(json!({"payload": {"prompt": "hi"}, "hook_event_type": "UserPromptSubmit"})),
        )
        .unwrap();
        assert_eq!(bare.event_type, "UserPromptSubmit");
        assert_eq!(bare.session_id.as_deref(), Some("s1"));
    }

    #[test]
    fn bad_envelopes_are_refused_with_the_field() {
        let cases = [
            (json!({"payload": "text"}), "payload"),
            (json!({"timestamp": "yesterday"}), "timestamp"),
            (json!({"timestamp": true}), "timestamp"),
            (json!({"source_app": 5}), "source_app"),
            (json!({"payload": {"session_id": 5}}), "session_id"),
        ];
        for (extra, field) in cases {
            let error = parse(&Item::Index(2), envelope(extra.clone())).unwrap_err();
            assert_eq!(error.details["field"], field, "{extra}");
            assert_eq!(error.details["index"], 2, "{extra}");
        }
        let iso = parse(
            &Item::Single,
            envelope(json!({"timestamp": "2026-01-01T01:00:00+01:00"})),
        );
        assert_eq!(
            iso.unwrap().event_time.as_deref(),
            Some("2026-01-01T00:00:00.000Z")
        );
    }
}
