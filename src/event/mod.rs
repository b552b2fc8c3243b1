//! The canonical event: what producers hand to the writer ([`NewEvent`]), what the log holds
//! ([`StoredEvent`]), and the one JSON envelope every reader sees ([`StoredEvent::envelope_json`]).

pub mod catalogue;
pub mod id;
pub mod time;

use serde::Serialize;
use serde_json::value::RawValue;

/// The `schemaVersion` of hooklog's own envelope.
pub const SCHEMA_VERSION: &str = "hooklog.event.v1";

/// An event on its way into the log. Everything here came from the producer, already validated
/// at the edge; the writer adds only the positions and, when absent, the times.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Stable id: the producer's own, or a UUIDv7 made at the edge. The idempotency key.
    pub event_id: String,
    /// The id was made here a moment ago, so no stored event can have it: the writer skips the
    /// duplicate lookup (the UNIQUE index would still refuse a collision).
    pub generated_id: bool,
    pub session_id: Option<String>,
    pub event_type: String,
    pub source: String,
    /// When it happened, as the producer says (normalised RFC 3339 UTC). `None`: use `received_at`.
    pub event_time: Option<String>,
    /// Only set when re-importing a recording, so the copy keeps the original arrival time.
    pub received_at: Option<String>,
    /// The body, serialised with sorted keys so that equal documents are equal strings.
    pub payload: String,
}

/// An event as the log holds it, with its positions.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub sequence: i64,
    pub event_id: String,
    pub session_id: Option<String>,
    pub session_sequence: Option<i64>,
    pub event_type: String,
    pub source: String,
    pub event_time: String,
    pub received_at: String,
    pub payload: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    schema_version: &'a str,
    id: &'a str,
    #[serde(rename = "type")]
    event_type: &'a str,
    context: Context<'a>,
    payload: &'a RawValue,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Context<'a> {
    sequence: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_sequence: Option<i64>,
    source: &'a str,
    event_time: &'a str,
    received_at: &'a str,
}

impl StoredEvent {
    /// The canonical envelope on one line, as SSE `data:`, export lines and REST return it.
    pub fn envelope_json(&self) -> String {
        serde_json::to_string(&self.envelope()).expect("an envelope always serialises")
    }

    /// The envelope as raw JSON, for embedding in larger responses with its field order kept.
    pub fn envelope_raw(&self) -> Box<RawValue> {
        RawValue::from_string(self.envelope_json()).expect("an envelope is JSON")
    }

    fn envelope(&self) -> Envelope<'_> {
        let payload: &RawValue = serde_json::from_str(&self.payload)
            .unwrap_or_else(|_| serde_json::from_str("null").expect("null is JSON"));
        Envelope {
            schema_version: SCHEMA_VERSION,
            id: &self.event_id,
            event_type: &self.event_type,
            context: Context {
                sequence: self.sequence,
                session_id: self.session_id.as_deref(),
                session_sequence: self.session_sequence,
                source: &self.source,
                event_time: &self.event_time,
                received_at: &self.received_at,
            },
            payload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_embeds_the_payload_verbatim_and_omits_absent_session() {
        let event = StoredEvent {
            sequence: 3,
            event_id: "e1".into(),
            session_id: None,
            session_sequence: None,
            event_type: "Stop".into(),
            source: "api".into(),
            event_time: "2026-11-30T12:00:00.000Z".into(),
            received_at: "2026-11-30T12:00:00.001Z".into(),
            payload: r#"{"a":[1,2]}"#.into(),
        };
        let value: serde_json::Value = serde_json::from_str(&event.envelope_json()).unwrap();
        assert_eq!(value["schemaVersion"], SCHEMA_VERSION);
        assert_eq!(value["context"]["sequence"], 3);
        assert!(value["context"].get("sessionId").is_none());
        assert_eq!(value["payload"]["a"][1], 2);
        assert!(event.envelope_json().starts_with(r#"{"schemaVersion":"#));
        assert_eq!(event.envelope_raw().get(), event.envelope_json());
    }
}
