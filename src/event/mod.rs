//! The canonical event: what producers hand to the writer ([`NewEvent`]), what the log holds
//! ([`StoredEvent`]), and the one JSON envelope every reader sees ([`StoredEvent::envelope_json`]).

pub mod catalogue;
pub mod id;
pub mod row;
pub mod shared;
pub mod source;
pub mod time;

pub use source::Source;

use serde_json::value::RawValue;

/// The `schemaVersion` of hooklog's own envelope.
pub const SCHEMA_VERSION: &str = "hooklog.event.v1";
/// Factory events (source `factory`) are shown in seed 003's envelope, with this version.
pub const FACTORY_SCHEMA_VERSION: &str = "agent-factory.event.v1";
const FACTORY_SOURCE: &str = Source::Factory.as_str();

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
    /// The hooklog that first stored it: only set for an event that was stored elsewhere (an
    /// aggregated, imported or replayed one). `None`: this hooklog (`serve --origin`).
    pub origin: Option<String>,
    /// The body, serialised with sorted keys so that equal documents are equal strings.
    pub payload: String,
}

impl NewEvent {
    /// The row this event becomes at `sequence` / `session_sequence`. `received_at` is the
    /// arrival time unless the event brings its own (a re-imported recording); the event time
    /// defaults to the arrival time; the origin is `here` unless the event brings its own.
    pub fn stored(
        &self,
        sequence: i64,
        session_sequence: Option<i64>,
        received_at: &str,
        here: &str,
    ) -> StoredEvent {
        let received_at = self.received_at.as_deref().unwrap_or(received_at);
        StoredEvent {
            sequence,
            event_id: self.event_id.clone(),
            session_id: self.session_id.clone(),
            session_sequence,
            event_type: self.event_type.clone(),
            source: self.source.clone(),
            event_time: self
                .event_time
                .as_deref()
                .unwrap_or(received_at)
                .to_string(),
            received_at: received_at.to_string(),
            origin: self.origin.as_deref().unwrap_or(here).to_string(),
            payload: self.payload.clone(),
        }
    }
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
    /// The hooklog instance that first stored it (`serve --origin`, the host name by default).
    /// Empty only in a database not yet opened by a server since it learnt origins.
    pub origin: String,
    pub payload: String,
}

impl StoredEvent {
    /// The canonical envelope on one line, as SSE `data:`, export lines and REST return it:
    /// `{"schemaVersion","id","type","context":{"sequence","sessionId"?,"sessionSequence"?,
    /// "source","origin","eventTime","receivedAt"},"payload"}`. Written directly rather than through a
    /// serializer: the payload is already JSON (the schema checks `json_valid`), so it is copied,
    /// not parsed again; streams render every event they send this way.
    pub fn envelope_json(&self) -> String {
        let mut out = String::with_capacity(self.payload.len() + 320);
        self.write_envelope(&mut out);
        out
    }

    /// Appends the envelope to `out` (see [`StoredEvent::envelope_json`]). A factory event
    /// (source `factory`) is written as seed 003's `FactoryEvent` instead.
    pub fn write_envelope(&self, out: &mut String) {
        if self.source == FACTORY_SOURCE && self.write_factory_envelope(out) {
            return;
        }
        self.write_record(out);
    }

    /// The event as a recording line: hooklog's own envelope for every event, factory events
    /// included (their payload then holds `{context, payload}`), with `source` and
    /// `receivedAt`, so `POST /events` or `hooklog import` restores it exactly.
    pub fn record_json(&self) -> String {
        let mut out = String::with_capacity(self.payload.len() + 320);
        self.write_record(&mut out);
        out
    }

    /// Appends the recording line to `out` (see [`StoredEvent::record_json`]).
    pub fn write_record(&self, out: &mut String) {
        let out = &mut *out;
        out.push_str("{\"schemaVersion\":");
        push_str(out, SCHEMA_VERSION);
        out.push_str(",\"id\":");
        push_str(out, &self.event_id);
        out.push_str(",\"type\":");
        push_str(out, &self.event_type);
        out.push_str(",\"context\":{\"sequence\":");
        out.push_str(itoa::Buffer::new().format(self.sequence));
        if let Some(session) = &self.session_id {
            out.push_str(",\"sessionId\":");
            push_str(out, session);
        }
        if let Some(n) = self.session_sequence {
            out.push_str(",\"sessionSequence\":");
            out.push_str(itoa::Buffer::new().format(n));
        }
        out.push_str(",\"source\":");
        push_str(out, &self.source);
        out.push_str(",\"origin\":");
        push_str(out, &self.origin);
        out.push_str(",\"eventTime\":");
        push_str(out, &self.event_time);
        out.push_str(",\"receivedAt\":");
        push_str(out, &self.received_at);
        out.push_str("},\"payload\":");
        out.push_str(if self.payload.is_empty() {
            "null"
        } else {
            &self.payload
        });
        out.push('}');
    }

    /// `{"schemaVersion":"agent-factory.event.v1","id","type","context":{...},"payload"}`: the
    /// stored context with the log's `sequence`, `sessionId` and `sessionSequence` put back.
    /// False (nothing written) if the stored payload is not in the factory form (a row written
    /// from outside hooklog): it is then shown in hooklog's own envelope.
    fn write_factory_envelope(&self, out: &mut String) -> bool {
        #[derive(serde::Deserialize)]
        struct Stored<'a> {
            context: serde_json::Map<String, serde_json::Value>,
            #[serde(borrow)]
            payload: &'a RawValue,
        }
        let Ok(stored) = serde_json::from_str::<Stored>(&self.payload) else {
            return false;
        };
        let mut context = stored.context;
        context.insert("sequence".into(), self.sequence.into());
        if let Some(session) = &self.session_id {
            context.insert("sessionId".into(), session.clone().into());
        }
        if let Some(n) = self.session_sequence {
            context.insert("sessionSequence".into(), n.into());
        }
        out.push_str("{\"schemaVersion\":");
        push_str(out, FACTORY_SCHEMA_VERSION);
        out.push_str(",\"id\":");
        push_str(out, &self.event_id);
        out.push_str(",\"type\":");
        push_str(out, &self.event_type);
        out.push_str(",\"context\":");
        out.push_str(&serde_json::Value::Object(context).to_string());
        out.push_str(",\"payload\":");
        out.push_str(stored.payload.get());
        out.push('}');
        true
    }

    /// The envelope as raw JSON, for embedding in larger responses with its field order kept.
    pub fn envelope_raw(&self) -> Box<RawValue> {
        RawValue::from_string(self.envelope_json()).expect("an envelope is JSON")
    }
}

/// Appends `s` as a JSON string literal. Ids, types, sources and times rarely hold anything
/// to escape, so those are copied as they are.
fn push_str(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).expect("a string always serialises"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// The envelope as a serializer writes it: the reference `envelope_json` must match.
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
        origin: &'a str,
        event_time: &'a str,
        received_at: &'a str,
    }

    fn reference(e: &StoredEvent) -> String {
        serde_json::to_string(&Envelope {
            schema_version: SCHEMA_VERSION,
            id: &e.event_id,
            event_type: &e.event_type,
            context: Context {
                sequence: e.sequence,
                session_id: e.session_id.as_deref(),
                session_sequence: e.session_sequence,
                source: &e.source,
                origin: &e.origin,
                event_time: &e.event_time,
                received_at: &e.received_at,
            },
            payload: serde_json::from_str(&e.payload).unwrap(),
        })
        .unwrap()
    }

    #[test]
    fn the_written_envelope_matches_the_serializer_byte_for_byte() {
        let mut event = StoredEvent {
            sequence: 42,
            event_id: "id \"quoted\" \\ é \u{1}".into(),
            session_id: Some("s\n1".into()),
            session_sequence: Some(7),
            event_type: "PreToolUse".into(),
            source: "hook".into(),
            event_time: "2026-11-30T12:00:00.000Z".into(),
            received_at: "2026-11-30T12:00:00.003Z".into(),
            origin: "devbox-3".into(),
            payload: r#"{"a":[1,2.50,{"b":null}],"c":"\u00e9\n"}"#.into(),
        };
        assert_eq!(event.envelope_json(), reference(&event));
        event.session_id = None;
        event.session_sequence = None;
        assert_eq!(event.envelope_json(), reference(&event));
    }

    #[test]
    fn a_factory_event_is_shown_in_the_factory_envelope_with_the_logs_numbers() {
        let event = StoredEvent {
            sequence: 12,
            event_id: "f-1".into(),
            session_id: Some("fs".into()),
            session_sequence: Some(3),
            event_type: "WORK_STATE_CHANGE".into(),
            source: FACTORY_SOURCE.into(),
            event_time: "2026-11-30T12:00:00.000Z".into(),
            received_at: "2026-11-30T12:00:00.001Z".into(),
            origin: "here".into(),
            payload: r#"{"context":{"tick":4,"eventTime":"2026-11-30T12:00:00Z","workIds":["w"]},"payload":{"workId":"w","n":1.50}}"#.into(),
        };
        let value: serde_json::Value = serde_json::from_str(&event.envelope_json()).unwrap();
        assert_eq!(value["schemaVersion"], FACTORY_SCHEMA_VERSION);
        assert_eq!(value["id"], "f-1");
        assert_eq!(
            value["context"],
            serde_json::json!({"sequence": 12, "sessionId": "fs", "sessionSequence": 3, "tick": 4,
                               "eventTime": "2026-11-30T12:00:00Z", "workIds": ["w"]})
        );
        assert!(
            event
                .envelope_json()
                .ends_with(r#""payload":{"workId":"w","n":1.50}}"#)
        );
        // A row not in the factory form still reads, in hooklog's envelope.
        let odd = StoredEvent {
            payload: "{}".into(),
            ..event
        };
        assert!(
            odd.envelope_json()
                .starts_with(r#"{"schemaVersion":"hooklog.event.v1""#)
        );
    }

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
            origin: "here".into(),
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
