//! `POST /events`: the canonical ingest for any producer. An item is either the short form
//! `{id?, type, sessionId?, eventTime?, source?, payload?}` or a whole envelope as hooklog
//! returns it (`{schemaVersion, id, type, context:{...}, payload}`), so an export can be
//! re-imported line by line. Unknown fields are refused rather than silently dropped. An item
//! with `hook_event_type` and `payload` is another hook server's envelope ([`super::hook_server`]).

use super::body::{self, Item, kind};
use super::{InvalidRequest, reject_unknown};
use crate::event::{NewEvent, SCHEMA_VERSION, id::new_event_id, time};
use serde_json::{Map, Value};

/// The source recorded for events posted here without one.
pub const DEFAULT_SOURCE: &str = crate::event::Source::Api.as_str();

pub const MAX_ID_CHARS: usize = 128;
pub const MAX_TYPE_CHARS: usize = 128;
pub const MAX_SESSION_ID_CHARS: usize = 256;
pub const MAX_SOURCE_CHARS: usize = 64;
/// A host name's limit.
pub const MAX_ORIGIN_CHARS: usize = 253;

const SHORT_FIELDS: &[&str] = &["id", "type", "sessionId", "eventTime", "source", "payload"];
const ENVELOPE_FIELDS: &[&str] = &["schemaVersion", "id", "type", "context", "payload"];
const CONTEXT_FIELDS: &[&str] = &[
    "sequence",
    "sessionId",
    "sessionSequence",
    "source",
    "origin",
    "eventTime",
    "receivedAt",
];

/// Parses a whole `POST /events` body. All or nothing: the first bad item refuses the request.
pub fn parse(body: &[u8], ndjson: bool) -> Result<Vec<NewEvent>, InvalidRequest> {
    body::split(body, ndjson)?
        .into_iter()
        .map(|(item, map)| parse_item(item, map))
        .collect()
}

fn parse_item(item: Item, mut map: Map<String, Value>) -> Result<NewEvent, InvalidRequest> {
    if super::hook_server::is_envelope(&map) {
        return super::hook_server::parse(&item, map);
    }
    let envelope = map.contains_key("context") || map.contains_key("schemaVersion");
    if envelope {
        reject_unknown(&item, &map, ENVELOPE_FIELDS, "")?;
        match map.get("schemaVersion") {
            None | Some(Value::Null) => {}
            Some(Value::String(v)) if v == SCHEMA_VERSION => {}
            Some(_) => {
                return Err(InvalidRequest::field(
                    &item,
                    "schemaVersion",
                    &format!("must be \"{SCHEMA_VERSION}\""),
                ));
            }
        }
    } else {
        reject_unknown(&item, &map, SHORT_FIELDS, "")?;
    }
    let mut context = match map.remove("context") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(c)) => c,
        Some(other) => {
            return Err(InvalidRequest::field(
                &item,
                "context",
                &format!("must be an object, not {}", kind(&other)),
            ));
        }
    };
    reject_unknown(&item, &context, CONTEXT_FIELDS, "context.")?;
    for position in ["sequence", "sessionSequence"] {
        // The log assigns positions; incoming ones (an export's) are checked, then ignored.
        if let Some(v) = context.get(position).filter(|v| !v.is_null())
            && v.as_u64().is_none()
        {
            let field = format!("context.{position}");
            return Err(InvalidRequest::field(
                &item,
                &field,
                "must be an integer >= 0",
            ));
        }
    }
    // Short form keeps these at the top level, the envelope inside `context`.
    let mut take = |key: &str| -> (String, Option<Value>) {
        if envelope {
            (format!("context.{key}"), context.remove(key))
        } else {
            (key.to_string(), map.remove(key))
        }
    };
    let session = take("sessionId");
    let source = take("source");
    let event_time = take("eventTime");
    // Only a stored event (an export's line, an aggregated one) has an arrival time and an
    // origin of its own.
    let (received_at, origin) = if envelope {
        (Some(take("receivedAt")), Some(take("origin")))
    } else {
        (None, None)
    };

    let (event_id, generated_id) = match map.remove("id") {
        None | Some(Value::Null) => (new_event_id(), true),
        Some(v) => (bounded_string(&item, "id", v, MAX_ID_CHARS)?, false),
    };
    let event_type = match map.remove("type") {
        None | Some(Value::Null) => {
            return Err(InvalidRequest::field(&item, "type", "is required"));
        }
        Some(v) => bounded_string(&item, "type", v, MAX_TYPE_CHARS)?,
    };
    let session_id = optional(session, |f, v| {
        bounded_string(&item, f, v, MAX_SESSION_ID_CHARS)
    })?;
    let source = optional(source, |f, v| bounded_string(&item, f, v, MAX_SOURCE_CHARS))?
        .unwrap_or_else(|| DEFAULT_SOURCE.to_string());
    let event_time = optional(event_time, |f, v| timestamp(&item, f, v))?;
    let received_at = match received_at {
        Some(r) => optional(r, |f, v| timestamp(&item, f, v))?,
        None => None,
    };
    let origin = match origin {
        Some(o) => optional(o, |f, v| bounded_string(&item, f, v, MAX_ORIGIN_CHARS))?,
        None => None,
    };
    let payload = match map.remove("payload") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(p @ Value::Object(_)) => p.to_string(),
        Some(other) => {
            return Err(InvalidRequest::field(
                &item,
                "payload",
                &format!("must be an object, not {}", kind(&other)),
            ));
        }
    };
    Ok(NewEvent {
        event_id,
        generated_id,
        session_id,
        event_type,
        source,
        event_time,
        received_at,
        origin,
        payload,
    })
}

/// Applies `parse` to a present, non-null value; absent and null both mean "not given".
fn optional<T>(
    (field, value): (String, Option<Value>),
    parse: impl FnOnce(&str, Value) -> Result<T, InvalidRequest>,
) -> Result<Option<T>, InvalidRequest> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => parse(&field, v).map(Some),
    }
}

/// A non-empty string of at most `max` characters, without control characters.
fn bounded_string(
    item: &Item,
    field: &str,
    value: Value,
    max: usize,
) -> Result<String, InvalidRequest> {
    let Value::String(s) = value else {
        return Err(InvalidRequest::field(
            item,
            field,
            &format!("must be a string, not {}", kind(&value)),
        ));
    };
    if s.is_empty() {
        return Err(InvalidRequest::field(item, field, "must not be empty"));
    }
    if s.chars().count() > max {
        return Err(InvalidRequest::field(
            item,
            field,
            &format!("must be at most {max} characters"),
        ));
    }
    if s.chars().any(char::is_control) {
        return Err(InvalidRequest::field(
            item,
            field,
            "must not contain control characters",
        ));
    }
    Ok(s)
}

fn timestamp(item: &Item, field: &str, value: Value) -> Result<String, InvalidRequest> {
    match &value {
        Value::String(s) => time::normalize(s)
            .ok_or_else(|| InvalidRequest::field(item, field, "must be an RFC 3339 date-time")),
        other => Err(InvalidRequest::field(
            item,
            field,
            &format!("must be an RFC 3339 string, not {}", kind(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(body: &str) -> Result<NewEvent, InvalidRequest> {
        parse(body.as_bytes(), false).map(|mut v| v.remove(0))
    }

    #[test]
    fn short_form_fills_defaults() {
        let e = one(r#"{"type":"Stop"}"#).unwrap();
        assert_eq!(e.source, DEFAULT_SOURCE);
        assert_eq!(e.payload, "{}");
        assert_eq!(e.session_id, None);
        assert_eq!(
            uuid::Uuid::parse_str(&e.event_id)
                .unwrap()
                .get_version_num(),
            7
        );
    }

    #[test]
    fn payload_keys_are_sorted_so_equal_documents_are_equal_strings() {
        let a = one(r#"{"type":"t","payload":{"b":1,"a":{"d":2,"c":3}}}"#).unwrap();
        let b = one(r#"{"type":"t","payload":{"a":{"c":3,"d":2},"b":1}}"#).unwrap();
        assert_eq!(a.payload, b.payload);
        assert_eq!(a.payload, r#"{"a":{"c":3,"d":2},"b":1}"#);
    }

    #[test]
    fn envelope_form_keeps_times_and_ignores_positions() {
        let e = one(
            r#"{"schemaVersion":"hooklog.event.v1","id":"x1","type":"Stop",
                "context":{"sequence":9,"sessionId":"s","sessionSequence":4,"source":"hook",
                "eventTime":"2026-01-01T00:00:00Z","receivedAt":"2026-01-01T00:00:01.5Z"},
                "payload":{"k":true}}"#,
        )
        .unwrap();
        assert_eq!(e.event_id, "x1");
        assert_eq!(e.session_id.as_deref(), Some("s"));
        assert_eq!(e.source, "hook");
        assert_eq!(e.event_time.as_deref(), Some("2026-01-01T00:00:00.000Z"));
        assert_eq!(e.received_at.as_deref(), Some("2026-01-01T00:00:01.500Z"));
    }

    #[test]
    fn refusals_name_the_field() {
        let cases = [
            (r#"{"payload":{}}"#, "type"),
            (r#"{"type":""}"#, "type"),
            (r#"{"type":7}"#, "type"),
            (r#"{"type":"t","id":5}"#, "id"),
            (r#"{"type":"t","sessionId":["s"]}"#, "sessionId"),
            (r#"{"type":"t","eventTime":"noon"}"#, "eventTime"),
            (r#"{"type":"t","payload":"text"}"#, "payload"),
            (r#"{"type":"t","source":"a\nb"}"#, "source"),
            (
                r#"{"type":"t","context":{"eventTime":1}}"#,
                "context.eventTime",
            ),
            (
                r#"{"type":"t","context":{"sequence":-1}}"#,
                "context.sequence",
            ),
            (r#"{"type":"t","schemaVersion":"v2"}"#, "schemaVersion"),
        ];
        for (body, field) in cases {
            let err = one(body).unwrap_err();
            assert_eq!(err.details["field"], field, "{body}: {}", err.message);
        }
        let err = one(r#"{"type":"t","sesionId":"s"}"#).unwrap_err();
        assert_eq!(err.details["unknownFields"], json!(["sesionId"]));
        let err = one(r#"{"type":"t","context":{"tick":1}}"#).unwrap_err();
        assert_eq!(err.details["unknownFields"], json!(["context.tick"]));
        let long = format!(r#"{{"type":"{}"}}"#, "x".repeat(MAX_TYPE_CHARS + 1));
        assert_eq!(one(&long).unwrap_err().details["field"], "type");
    }

    #[test]
    fn a_bad_item_refuses_the_whole_batch_and_names_its_index() {
        let err = parse(br#"[{"type":"a"},{"type":"b"},{"type":null}]"#, false).unwrap_err();
        assert_eq!(err.details["index"], 2);
    }
}
