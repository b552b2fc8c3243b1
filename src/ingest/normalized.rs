//! `POST /event/normalized`: seed 001's harness-agnostic events `registered`, `stuck`,
//! `unstuck` and `ended`. The body is stored as sent (after its fields are checked), under its
//! `type`, with `timestamp` (Unix milliseconds) as the event time. Extra fields are kept: the
//! seed lets later versions add optional ones.

use crate::event::{NewEvent, time};
use serde_json::{Map, Value};

/// The source recorded for events that came through `/event/normalized`.
pub const SOURCE: &str = crate::event::Source::Normalized.as_str();

/// Why a normalized body was refused. Each has the exact body seed 001 gives it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NormalizedError {
    #[error("Invalid JSON")]
    InvalidJson,
    #[error("Invalid or missing event type")]
    InvalidType,
    #[error("Missing required field: {0}")]
    Missing(&'static str),
    #[error("Invalid field: {field} {problem}")]
    Invalid {
        field: &'static str,
        problem: &'static str,
    },
}

impl NormalizedError {
    /// The field the error is about, if any.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            NormalizedError::Missing(field) | NormalizedError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// Each type and the fields it requires besides `type` (all strings but `timestamp`).
const REQUIRED: &[(&str, &[&str])] = &[
    (
        "registered",
        &["sessionId", "paneId", "cwd", "transcriptPath", "timestamp"],
    ),
    (
        "stuck",
        &[
            "sessionId",
            "paneId",
            "cwd",
            "transcriptPath",
            "reason",
            "message",
            "timestamp",
        ],
    ),
    ("unstuck", &["sessionId", "timestamp"]),
    ("ended", &["sessionId", "timestamp"]),
];

/// `stuck.reason` values.
pub const STUCK_REASONS: &[&str] = &["stopped", "permission"];

/// Parses one body. `event_id` is the producer's idempotency key, when it sent one.
pub fn parse(body: &[u8], event_id: (String, bool)) -> Result<NewEvent, NormalizedError> {
    let value = super::json::from_slice(body).map_err(|_| NormalizedError::InvalidJson)?;
    let Value::Object(map) = value else {
        return Err(NormalizedError::InvalidType);
    };
    let event_type = map
        .get("type")
        .and_then(Value::as_str)
        .ok_or(NormalizedError::InvalidType)?;
    let (event_type, required) = REQUIRED
        .iter()
        .find(|(t, _)| *t == event_type)
        .ok_or(NormalizedError::InvalidType)?;
    for field in *required {
        check(&map, field)?;
    }
    if *event_type == "stuck" && !STUCK_REASONS.contains(&text(&map, "reason")) {
        return Err(NormalizedError::Invalid {
            field: "reason",
            problem: "must be \"stopped\" or \"permission\"",
        });
    }
    let event_time = millis(&map["timestamp"]).ok_or(NormalizedError::Invalid {
        field: "timestamp",
        problem: "must be Unix milliseconds between 1970 and 9999",
    })?;
    let (event_id, generated_id) = event_id;
    Ok(NewEvent {
        event_id,
        generated_id,
        session_id: Some(text(&map, "sessionId").to_string()),
        event_type: event_type.to_string(),
        source: SOURCE.to_string(),
        event_time: Some(event_time),
        received_at: None,
        origin: None,
        payload: Value::Object(map).to_string(),
    })
}

/// A required field: present, and a non-empty string (`sessionId` bounded like every session
/// id), or a number for `timestamp`.
fn check(map: &Map<String, Value>, field: &'static str) -> Result<(), NormalizedError> {
    let value = match map.get(field) {
        None | Some(Value::Null) => return Err(NormalizedError::Missing(field)),
        Some(v) => v,
    };
    let problem = match (field, value) {
        ("timestamp", Value::Number(_)) => return Ok(()),
        ("timestamp", _) => "must be a number",
        (_, Value::String(s)) if s.is_empty() => "must not be empty",
        ("sessionId", Value::String(s))
            if super::check_id(field, s, super::canonical::MAX_SESSION_ID_CHARS).is_err() =>
        {
            "must be at most 256 characters, without control characters"
        }
        (_, Value::String(_)) => return Ok(()),
        _ => "must be a string",
    };
    Err(NormalizedError::Invalid { field, problem })
}

fn text<'a>(map: &'a Map<String, Value>, field: &str) -> &'a str {
    map.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Unix milliseconds as an RFC 3339 time (fractions of a millisecond are dropped).
fn millis(value: &Value) -> Option<String> {
    let ms = value.as_f64()?;
    if !ms.is_finite() || ms < 0.0 {
        return None;
    }
    let t = chrono::DateTime::from_timestamp_millis(ms.trunc() as i64)?;
    (chrono::Datelike::year(&t) <= 9999).then(|| time::format(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_json(body: Value) -> Result<NewEvent, NormalizedError> {
        parse(body.to_string().as_bytes(), ("id".into(), false))
    }

    #[test]
    fn stuck_with_every_field_is_stored_with_its_time() {
        let e = parse_json(
            json!({"type":"stuck","sessionId":"s","paneId":"%1","cwd":"/",
            "transcriptPath":"/t","reason":"permission","message":"[Bash] ls",
            "timestamp":1719987600000_i64, "extra": 1}),
        )
        .unwrap();
        assert_eq!(e.event_type, "stuck");
        assert_eq!(e.session_id.as_deref(), Some("s"));
        assert_eq!(e.event_time.as_deref(), Some("2024-07-03T06:20:00.000Z"));
        assert_eq!(e.source, SOURCE);
        let payload: Value = serde_json::from_str(&e.payload).unwrap();
        assert_eq!(payload["extra"], 1);
    }

    #[test]
    fn each_refusal_is_the_seeds() {
        assert_eq!(
            parse(b"{oops", ("i".into(), true)),
            Err(NormalizedError::InvalidJson)
        );
        for body in [
            json!([1]),
            json!({}),
            json!({"type": 3}),
            json!({"type": "paused"}),
        ] {
            assert_eq!(parse_json(body), Err(NormalizedError::InvalidType));
        }
        assert_eq!(
            parse_json(json!({"type":"unstuck","timestamp":1})),
            Err(NormalizedError::Missing("sessionId"))
        );
        assert_eq!(
            parse_json(
                json!({"type":"registered","sessionId":"s","paneId":"%1","cwd":"/",
                "timestamp":1})
            )
            .unwrap_err()
            .field(),
            Some("transcriptPath")
        );
        let wrong = [
            (
                json!({"type":"ended","sessionId":"s","timestamp":"now"}),
                "timestamp",
            ),
            (
                json!({"type":"ended","sessionId":5,"timestamp":1}),
                "sessionId",
            ),
            (
                json!({"type":"ended","sessionId":"","timestamp":1}),
                "sessionId",
            ),
            (
                json!({"type":"ended","sessionId":"s","timestamp":-1}),
                "timestamp",
            ),
            (
                json!({"type":"ended","sessionId":"s","timestamp":1e300}),
                "timestamp",
            ),
            (
                json!({"type":"stuck","sessionId":"s","paneId":"%1","cwd":"/",
                    "transcriptPath":"/t","reason":"bored","message":"m","timestamp":1}),
                "reason",
            ),
        ];
        for (body, field) in wrong {
            assert_eq!(
                parse_json(body.clone()).unwrap_err().field(),
                Some(field),
                "{body}"
            );
        }
    }
}
