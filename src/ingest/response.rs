//! `POST /factory-sessions/{session_id}/response-events`: seed 003's `FactoryResponseEvent`
//! envelopes, one, an array, or NDJSON. The envelope is closed and checked against the seed's
//! schema, its payload against the shape its `kind` and `phase` select. `sequence` and
//! `factorySessionId` are hooklog's: a given `sequence` is checked, then replaced; a given
//! `factorySessionId` must be the route's. `eventId` is the idempotency key within the session.
//!
//! A `STREAM_GAP` may be posted for an item whose lifecycle could not be observed
//! (`affectedItemId`, `reason`); the retention form (`fromSequence`, ...) is hooklog's own
//! record, sent with sequence 0, and is refused.

use super::body::{self, Item};
use super::factory::refused;
use super::schema;
use super::{InvalidRequest, check_id};
use crate::response::{Envelope, Kind};
use serde_json::{Map, Value, json};

const ENVELOPE_FIELDS: &[&str] = &[
    "schemaVersion",
    "eventId",
    "sequence",
    "recordedAt",
    "factorySessionId",
    "runId",
    "kind",
    "phase",
    "provenance",
    "payload",
    "dispatchId",
    "turnId",
    "itemId",
    "parentItemId",
    "providerSessionRef",
];

/// Parses a whole request for the session `session_id`. All or nothing.
pub fn parse(body: &[u8], ndjson: bool, session_id: &str) -> Result<Vec<Envelope>, InvalidRequest> {
    body::for_session(body, ndjson, session_id, ENVELOPE_FIELDS, parse_item)
}

fn parse_item(
    item: Item,
    mut map: Map<String, Value>,
    session_id: &str,
) -> Result<Envelope, InvalidRequest> {
    if let Some(given) = map.get("factorySessionId").and_then(Value::as_str)
        && given != session_id
    {
        return Err(InvalidRequest::field(
            &item,
            "factorySessionId",
            &format!("is {given:?} but the route's session is {session_id:?}"),
        ));
    }
    map.entry("factorySessionId").or_insert(json!(session_id));
    map.entry("sequence").or_insert(json!(0));
    let value = Value::Object(map);
    schema::check_named("FactoryResponseEvent", &value)
        .map_err(|r| refused(&item, "FactoryResponseEvent", "", r))?;
    let mut envelope: Envelope = serde_json::from_value(value)
        .map_err(|e| InvalidRequest::field(&item, "", &format!("does not decode: {e}")))?;
    check_id("eventId", &envelope.event_id, super::MAX_EVENT_ID_CHARS)
        .map_err(|e| InvalidRequest::field(&item, "eventId", &e.message))?;
    let shape = envelope.kind.payload_schema(envelope.phase);
    let what = format!("{} {}", envelope.kind.as_str(), envelope.phase.as_str());
    schema::check_named(shape, &envelope.payload)
        .map_err(|r| refused(&item, &what, "payload", r))?;
    if envelope.kind == Kind::StreamGap && envelope.payload.get("fromSequence").is_some() {
        let mut err = InvalidRequest::field(
            &item,
            "payload.fromSequence",
            "is hooklog's: a retention STREAM_GAP is sent by the stream, with sequence 0",
        );
        err.details["rule"] = json!("reserved");
        return Err(err);
    }
    envelope.sequence = 0;
    Ok(envelope)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(kind: &str, phase: &str, payload: Value) -> Value {
        json!({"schemaVersion": "agent-factory.response-event.v1", "eventId": "r1",
               "recordedAt": "2026-11-30T09:00:00.000Z", "runId": "run-1", "kind": kind,
               "phase": phase, "provenance": {"provider": "codex", "nativeEventType": "item.delta",
               "delivery": "NATIVE_STREAM", "representation": "DELTA", "fidelity": "LOSSLESS"},
               "payload": payload})
    }

    fn one(value: Value) -> Result<Envelope, InvalidRequest> {
        parse(value.to_string().as_bytes(), false, "fs-1").map(|mut v| v.remove(0))
    }

    #[test]
    fn kind_and_phase_choose_the_payload_shape() {
        let delta = json!({"contentBlockIndex": 0, "contentBlockKind": "TEXT", "textDelta": "he"});
        let e = one(envelope("MESSAGE", "DELTA", delta.clone())).unwrap();
        assert_eq!(
            (e.kind, e.factory_session_id.as_str()),
            (Kind::Message, "fs-1")
        );
        let err = one(envelope("MESSAGE", "COMPLETED", delta)).unwrap_err();
        assert_eq!(err.details["field"], "payload.role");
        assert_eq!(err.details["type"], "MESSAGE COMPLETED");
        assert_eq!(err.details["schema"], "FactoryResponseEventMessagePayload");
    }

    #[test]
    fn each_refusal_names_its_field_and_rule() {
        let ok = json!({"label": "step"});
        let mut cases = vec![];
        let mut e = envelope("PROGRESS", "UPDATED", ok.clone());
        e["kind"] = json!("CHATTER");
        cases.push((e, "kind", "enum"));
        let mut e = envelope("PROGRESS", "UPDATED", ok.clone());
        e.as_object_mut().unwrap().remove("runId");
        cases.push((e, "runId", "required"));
        let mut e = envelope("PROGRESS", "UPDATED", ok.clone());
        e["recordedAt"] = json!("noon");
        cases.push((e, "recordedAt", "format"));
        let mut e = envelope("PROGRESS", "UPDATED", ok.clone());
        e["provenance"]["delivery"] = json!("CARRIER_PIGEON");
        cases.push((e, "provenance.delivery", "enum"));
        cases.push((
            envelope(
                "PROGRESS",
                "UPDATED",
                json!({"label": "x", "percentComplete": 101}),
            ),
            "payload.percentComplete",
            "maximum",
        ));
        cases.push((
            envelope(
                "STREAM_GAP",
                "UPDATED",
                json!({"fromSequence": 1, "toSequence": 2, "firstAvailableSequence": 3}),
            ),
            "payload.fromSequence",
            "reserved",
        ));
        let mut e = envelope("PROGRESS", "UPDATED", ok.clone());
        e["factorySessionId"] = json!("fs-other");
        cases.push((e, "factorySessionId", ""));
        for (body, field, rule) in cases {
            let err = one(body.clone()).unwrap_err();
            assert_eq!(err.details["field"], field, "{body}: {}", err.message);
            if !rule.is_empty() {
                assert_eq!(err.details["rule"], rule, "{body}: {}", err.message);
            }
        }
        let mut e = envelope("PROGRESS", "UPDATED", ok);
        e["colour"] = json!(1);
        assert_eq!(
            one(e).unwrap_err().details["unknownFields"],
            json!(["colour"])
        );
    }
}
