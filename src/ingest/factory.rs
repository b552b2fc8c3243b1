//! `POST /factory-sessions/{session_id}/events`: seed 003's `FactoryEvent` envelopes, one, an
//! array, or NDJSON. The envelope and its context are closed objects: unknown fields are
//! refused. The log assigns `sequence` and `sessionSequence` (incoming values are checked for
//! type, then ignored); the `id` is kept, and is the idempotency key. The payload is checked
//! against its type's schema from the seed ([`super::schema`]).
//!
//! Stored form: type, session and id in their columns, `context.eventTime` as the event time,
//! and the payload column holding `{"context": {...}, "payload": {...}}`: every context field
//! as posted except the three the log owns (`sequence`, `sessionSequence`, `sessionId`), and
//! the payload as posted. [`crate::event::StoredEvent::write_envelope`] puts the envelope
//! back together from it.

use super::body::{self, Item, kind};
use super::schema::{self, Refusal};
use super::{InvalidRequest, reject_unknown};
use crate::event::{NewEvent, catalogue::FACTORY_EVENTS, time};
use serde_json::{Map, Value, json};

/// The source recorded for factory events.
pub const SOURCE: &str = crate::event::Source::Factory.as_str();
pub const SCHEMA_VERSION: &str = "agent-factory.event.v1";

const ENVELOPE_FIELDS: &[&str] = &["schemaVersion", "id", "type", "context", "payload"];

/// The context fields of the seed, and what each must hold.
const CONTEXT_FIELDS: &[(&str, Shape)] = &[
    ("sequence", Shape::Count),
    ("tick", Shape::Count),
    ("eventTime", Shape::Time),
    ("sessionId", Shape::Text),
    ("sessionSequence", Shape::Count),
    ("orchestratorKind", Shape::OneOf(&["PETRI", "JAVASCRIPT"])),
    ("orchestratorDialect", Shape::Text),
    ("phaseId", Shape::Text),
    ("phaseName", Shape::Text),
    ("checkpointId", Shape::Text),
    ("requestId", Shape::Text),
    ("traceIds", Shape::Texts),
    ("workIds", Shape::Texts),
    ("dispatchId", Shape::Text),
    ("currentChainingTraceId", Shape::Text),
    ("previousChainingTraceIds", Shape::Texts),
    ("source", Shape::Text),
];

/// Context fields the log owns: not stored, written back from the log's own columns.
const OWNED_BY_THE_LOG: &[&str] = &["sequence", "sessionSequence", "sessionId"];

#[derive(Clone, Copy)]
enum Shape {
    Count,
    Time,
    Text,
    Texts,
    OneOf(&'static [&'static str]),
}

/// Parses a whole request for the session `session_id`. All or nothing.
pub fn parse(body: &[u8], ndjson: bool, session_id: &str) -> Result<Vec<NewEvent>, InvalidRequest> {
    body::for_session(body, ndjson, session_id, ENVELOPE_FIELDS, parse_item)
}

fn parse_item(
    item: Item,
    mut map: Map<String, Value>,
    session_id: &str,
) -> Result<NewEvent, InvalidRequest> {
    match map.remove("schemaVersion") {
        Some(Value::String(v)) if v == SCHEMA_VERSION => {}
        None => return Err(InvalidRequest::field(&item, "schemaVersion", "is required")),
        Some(_) => {
            return Err(InvalidRequest::field(
                &item,
                "schemaVersion",
                &format!("must be \"{SCHEMA_VERSION}\""),
            ));
        }
    }
    let id = match map.remove("id") {
        Some(Value::String(id)) => {
            super::check_id("id", &id, super::MAX_EVENT_ID_CHARS).map_err(|_| {
                InvalidRequest::field(
                    &item,
                    "id",
                    "must be 1 to 128 characters, without control characters",
                )
            })?;
            id
        }
        None => return Err(InvalidRequest::field(&item, "id", "is required")),
        Some(other) => {
            return Err(InvalidRequest::field(
                &item,
                "id",
                &format!("must be a string, not {}", kind(&other)),
            ));
        }
    };
    let event_type = match map.remove("type") {
        Some(Value::String(t)) if FACTORY_EVENTS.contains(&t.as_str()) => t,
        None => return Err(InvalidRequest::field(&item, "type", "is required")),
        Some(_) => {
            return Err(InvalidRequest::field(
                &item,
                "type",
                "must be one of the 32 FactoryEventType values (RUN_REQUEST, SESSION_STARTED, ...)",
            ));
        }
    };
    let mut context = match map.remove("context") {
        Some(Value::Object(c)) => c,
        None => return Err(InvalidRequest::field(&item, "context", "is required")),
        Some(other) => {
            return Err(InvalidRequest::field(
                &item,
                "context",
                &format!("must be an object, not {}", kind(&other)),
            ));
        }
    };
    let context_names: Vec<&str> = CONTEXT_FIELDS.iter().map(|(f, _)| *f).collect();
    reject_unknown(&item, &context, &context_names, "context.")?;
    for (field, shape) in CONTEXT_FIELDS {
        if let Some(value) = context.get(*field) {
            check(&item, field, *shape, value)?;
        }
    }
    for required in ["tick", "eventTime"] {
        if !context.contains_key(required) {
            return Err(InvalidRequest::field(
                &item,
                &format!("context.{required}"),
                "is required",
            ));
        }
    }
    if let Some(given) = context.get("sessionId").and_then(Value::as_str)
        && given != session_id
    {
        return Err(InvalidRequest::field(
            &item,
            "context.sessionId",
            &format!("is {given:?} but the route's session is {session_id:?}"),
        ));
    }
    let payload = match map.remove("payload") {
        Some(p @ Value::Object(_)) => p,
        None => return Err(InvalidRequest::field(&item, "payload", "is required")),
        Some(other) => {
            return Err(InvalidRequest::field(
                &item,
                "payload",
                &format!("must be an object, not {}", kind(&other)),
            ));
        }
    };
    schema::check_factory_payload(&event_type, &payload)
        .map_err(|r| refused(&item, &event_type, "payload", r))?;
    let event_time = context["eventTime"].as_str().and_then(time::normalize);
    for owned in OWNED_BY_THE_LOG {
        context.remove(*owned);
    }
    Ok(NewEvent {
        event_id: id,
        generated_id: false,
        session_id: Some(session_id.to_string()),
        event_type,
        source: SOURCE.to_string(),
        event_time,
        received_at: None,
        origin: None,
        payload: json!({ "context": context, "payload": payload }).to_string(),
    })
}

/// A value refused by its seed 003 schema: `details` name the field (under `prefix`, e.g.
/// `payload.artifact.kind`), the rule, the schema and the event type or kind.
pub fn refused(item: &Item, what: &str, prefix: &str, r: Refusal) -> InvalidRequest {
    let field = match (prefix.is_empty(), r.field.is_empty()) {
        (true, _) => r.field.clone(),
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix}.{}", r.field),
    };
    let mut err = InvalidRequest::field(
        item,
        &field,
        &format!("{} ({what} {}: rule {})", r.message, r.schema, r.rule),
    );
    err.details["rule"] = json!(r.rule);
    err.details["schema"] = json!(r.schema);
    err.details["type"] = json!(what);
    err
}

fn check(item: &Item, field: &str, shape: Shape, value: &Value) -> Result<(), InvalidRequest> {
    let ok = match shape {
        Shape::Count => value.as_u64().is_some(),
        Shape::Time => value.as_str().and_then(time::normalize).is_some(),
        Shape::Text => value.is_string(),
        Shape::Texts => value
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string)),
        Shape::OneOf(allowed) => value.as_str().is_some_and(|v| allowed.contains(&v)),
    };
    if ok {
        return Ok(());
    }
    let expected = match shape {
        Shape::Count => "an integer >= 0".to_string(),
        Shape::Time => "an RFC 3339 date-time".to_string(),
        Shape::Text => "a string".to_string(),
        Shape::Texts => "an array of strings".to_string(),
        Shape::OneOf(allowed) => format!("one of {}", allowed.join(", ")),
    };
    Err(InvalidRequest::field(
        item,
        &format!("context.{field}"),
        &format!("must be {expected}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(context: Value) -> Value {
        json!({"schemaVersion": SCHEMA_VERSION, "id": "e1", "type": "WORK_STATE_CHANGE",
               "context": context, "payload": {"workId": "w1", "workTypeName": "doc",
               "fromState": "a", "toState": "b", "fromPlaceId": "p-a", "toPlaceId": "p-b", "source": "api"}})
    }

    fn one(value: Value) -> Result<NewEvent, InvalidRequest> {
        parse(value.to_string().as_bytes(), false, "fs-1").map(|mut v| v.remove(0))
    }

    #[test]
    fn a_valid_envelope_keeps_its_id_and_context_but_not_the_logs_numbers() {
        let e = one(envelope(
            json!({"sequence": 9, "sessionSequence": 4, "sessionId": "fs-1",
            "tick": 3, "eventTime": "2026-11-30T12:00:00Z", "workIds": ["w1"], "dispatchId": "d1"}),
        ))
        .unwrap();
        assert_eq!(e.event_id, "e1");
        assert_eq!(e.session_id.as_deref(), Some("fs-1"));
        assert_eq!(e.event_time.as_deref(), Some("2026-11-30T12:00:00.000Z"));
        let stored: Value = serde_json::from_str(&e.payload).unwrap();
        assert_eq!(
            stored["context"],
            json!({"tick": 3, "eventTime": "2026-11-30T12:00:00Z", "workIds": ["w1"], "dispatchId": "d1"})
        );
        assert_eq!(stored["payload"]["workId"], "w1");
    }

    #[test]
    fn each_refusal_names_its_field() {
        let ok_context = json!({"tick": 0, "eventTime": "2026-11-30T12:00:00Z"});
        let mut cases = vec![
            (
                json!({"schemaVersion": "v2", "id": "e", "type": "RUN_REQUEST", "context": ok_context, "payload": {}}),
                "schemaVersion",
            ),
            (
                json!({"schemaVersion": SCHEMA_VERSION, "id": "", "type": "RUN_REQUEST", "context": ok_context, "payload": {}}),
                "id",
            ),
            (
                json!({"schemaVersion": SCHEMA_VERSION, "id": "e", "type": "RUN_STARTED", "context": ok_context, "payload": {}}),
                "type",
            ),
            (
                json!({"schemaVersion": SCHEMA_VERSION, "id": "e", "type": "RUN_REQUEST", "context": ok_context, "payload": []}),
                "payload",
            ),
            (
                json!({"schemaVersion": SCHEMA_VERSION, "id": "e", "type": "RUN_REQUEST", "payload": {}}),
                "context",
            ),
        ];
        for (context, field) in [
            (json!({"eventTime": "2026-11-30T12:00:00Z"}), "context.tick"),
            (
                json!({"tick": -1, "eventTime": "2026-11-30T12:00:00Z"}),
                "context.tick",
            ),
            (json!({"tick": 0}), "context.eventTime"),
            (json!({"tick": 0, "eventTime": "noon"}), "context.eventTime"),
            (
                json!({"tick": 0, "eventTime": "2026-11-30T12:00:00Z", "sessionId": "other"}),
                "context.sessionId",
            ),
            (
                json!({"tick": 0, "eventTime": "2026-11-30T12:00:00Z", "workIds": [1]}),
                "context.workIds",
            ),
            (
                json!({"tick": 0, "eventTime": "2026-11-30T12:00:00Z", "orchestratorKind": "BPMN"}),
                "context.orchestratorKind",
            ),
        ] {
            cases.push((envelope(context), field));
        }
        for (body, field) in cases {
            let err = one(body.clone()).unwrap_err();
            assert_eq!(err.details["field"], field, "{body}: {}", err.message);
        }
        let err = one(envelope(
            json!({"tick": 0, "eventTime": "2026-11-30T12:00:00Z", "colour": 1}),
        ))
        .unwrap_err();
        assert_eq!(err.details["unknownFields"], json!(["context.colour"]));
        let mut extra = envelope(json!({"tick": 0, "eventTime": "2026-11-30T12:00:00Z"}));
        extra["meta"] = json!(1);
        assert_eq!(
            one(extra).unwrap_err().details["unknownFields"],
            json!(["meta"])
        );
    }
}
