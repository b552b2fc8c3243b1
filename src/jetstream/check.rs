//! What the aggregator believes of a message from the stream (docs/scale-out.md, "Trust"):
//!
//! - **Its origin is its subject's.** The body must be one event that states its origin, and
//!   the message must have come on that origin's subject (`hooklog.events.<origin>.<type>`).
//!   NATS decides who may publish on which subject (an account's permissions); this check makes
//!   the subject the proof of an event's origin, so a publisher allowed only
//!   `hooklog.events.evil.>` cannot store events as `laptop-1`'s.
//! - **Ids are an origin's own.** An event id is unique within its origin. An event whose id
//!   this log already holds for another origin is stored as `<id>@<origin>` (its origin's own
//!   events and every other origin's keep theirs), so an origin that publishes another's id
//!   first does not keep the genuine event out. An id that ends in `@<name>` for a name other
//!   than its event's origin is stored as `<id>@<origin>` too, so the names this rule gives are
//!   each origin's alone (`evil` cannot take `X@laptop-1` before laptop-1's `X` needs it).
//!
//! A message refused, and an event stored under its origin's name for its id, each leave a
//! [`NOTICE`] event in the log, whose projection raises a `stream_message_flagged` alert.

use super::subject;
use crate::event::{NewEvent, Source};
use serde_json::json;

/// The event that records what the aggregator refused or renamed (source `replication`).
pub const NOTICE: &str = crate::event::catalogue::STREAM_MESSAGE_FLAGGED;

/// Namespace of the notices' UUIDv5 event ids (a fixed random UUID).
const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x7c2d_91a4_5e3b_4f08_b6d1_0a9e_44c7_2f15);

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The body is not one event of the `POST /events` contract.
    NotAnEvent(String),
    /// The body states no `origin`: the subject could vouch for nothing.
    NoOrigin,
    /// The body's origin (or type) is not the subject's.
    NotItsSubject { expected: String },
    /// Its id is stored with other content for the same origin.
    Conflict(String),
}

impl Refusal {
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::NotAnEvent(_) => "not_an_event",
            Refusal::NoOrigin => "no_origin",
            Refusal::NotItsSubject { .. } => "origin_not_subject",
            Refusal::Conflict(_) => "id_conflict",
        }
    }

    pub fn message(&self) -> String {
        match self {
            Refusal::NotAnEvent(why) => format!("not an event: {why}"),
            Refusal::NoOrigin => "the event states no origin".to_string(),
            Refusal::NotItsSubject { expected } => {
                format!("its event belongs on the subject {expected}, not this one")
            }
            Refusal::Conflict(why) => why.clone(),
        }
    }
}

/// The one event a message on `subject` carries, if its origin is the subject's.
pub fn screen(subject_seen: &str, body: &[u8]) -> Result<NewEvent, Refusal> {
    let mut events = crate::ingest::canonical::parse(body, false)
        .map_err(|invalid| Refusal::NotAnEvent(invalid.to_string()))?;
    if events.len() != 1 {
        return Err(Refusal::NotAnEvent(format!(
            "{} events in one message",
            events.len()
        )));
    }
    let event = events.pop().expect("one");
    let Some(origin) = event.origin.as_deref() else {
        return Err(Refusal::NoOrigin);
    };
    let expected = subject(origin, &event.event_type);
    if expected != subject_seen {
        return Err(Refusal::NotItsSubject { expected });
    }
    Ok(event)
}

/// The id an event of `origin` is stored under when its own id is held by another origin.
pub fn own_id(id: &str, origin: &str) -> String {
    format!("{id}@{origin}")
}

/// Whether `id` reads as another origin's own id (`<id>@<name>`, `name` not `origin`): such an
/// id is stored as [`own_id`] too.
pub fn names_another_origin(id: &str, origin: &str) -> bool {
    id.rsplit_once('@').is_some_and(|(_, name)| name != origin)
}

/// Where a flagged message was in the stream, and what it was.
pub struct Flagged<'a> {
    pub stream: &'a str,
    pub stream_sequence: u64,
    pub subject: &'a str,
    /// The event id and origin the body stated, when it was an event.
    pub claimed: Option<(&'a str, &'a str)>,
}

/// The notice of a refused message.
pub fn refused(flagged: &Flagged<'_>, refusal: &Refusal) -> NewEvent {
    notice(
        flagged,
        refusal.reason(),
        &refusal.message(),
        serde_json::Value::Null,
    )
}

/// Why an event was stored under its origin's name for its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rename {
    /// The id is stored already, for this other origin.
    HeldBy(String),
    /// The id ends in another origin's name ([`names_another_origin`]).
    NamesAnotherOrigin,
}

/// The notice of an event stored as `stored_as` instead of its own id.
pub fn renamed(flagged: &Flagged<'_>, stored_as: &str, why: &Rename) -> NewEvent {
    let (reason, message) = match why {
        Rename::HeldBy(holder) => (
            "id_held_by_another_origin",
            format!("its event id is held by origin {holder}; stored as {stored_as}"),
        ),
        Rename::NamesAnotherOrigin => (
            "id_names_another_origin",
            format!("its event id ends in another origin's name; stored as {stored_as}"),
        ),
    };
    notice(flagged, reason, &message, json!(stored_as))
}

fn notice(
    flagged: &Flagged<'_>,
    reason: &str,
    message: &str,
    stored_as: serde_json::Value,
) -> NewEvent {
    let (event_id, origin) = flagged.claimed.unzip();
    let payload = json!({
        "stream": flagged.stream,
        "streamSequence": flagged.stream_sequence,
        "subject": flagged.subject,
        "reason": reason,
        "message": message,
        "eventId": event_id,
        "origin": origin,
        "storedAs": stored_as,
    });
    let key = format!("{}:{}:{reason}", flagged.stream, flagged.stream_sequence);
    NewEvent {
        event_id: uuid::Uuid::new_v5(&NAMESPACE, key.as_bytes()).to_string(),
        generated_id: false,
        session_id: None,
        event_type: NOTICE.to_string(),
        source: Source::Replication.as_str().to_string(),
        event_time: None,
        received_at: None,
        origin: None,
        payload: payload.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(origin: Option<&str>) -> String {
        let mut event = json!({"id": "e1", "type": "Stop", "sessionId": "s1", "payload": {}});
        if let Some(origin) = origin {
            event = json!({"schemaVersion": crate::event::SCHEMA_VERSION, "id": "e1",
                           "type": "Stop", "payload": {},
                           "context": {"origin": origin, "sessionId": "s1"}});
        }
        event.to_string()
    }

    #[test]
    fn an_event_is_believed_only_on_its_origins_subject() {
        let body = line(Some("laptop-1"));
        let event = screen("hooklog.events.laptop-1.Stop", body.as_bytes()).unwrap();
        assert_eq!(event.origin.as_deref(), Some("laptop-1"));
        assert_eq!(
            screen("hooklog.events.evil.Stop", body.as_bytes()).unwrap_err(),
            Refusal::NotItsSubject {
                expected: "hooklog.events.laptop-1.Stop".into()
            }
        );
        assert_eq!(
            screen("hooklog.events.laptop-1.Stop", line(None).as_bytes()).unwrap_err(),
            Refusal::NoOrigin
        );
        assert!(matches!(
            screen("hooklog.events.x.Stop", b"[1]").unwrap_err(),
            Refusal::NotAnEvent(_)
        ));
    }

    #[test]
    fn an_id_naming_another_origin_is_renamed() {
        assert!(names_another_origin("X@laptop-1", "evil"));
        assert!(!names_another_origin("X@laptop-1", "laptop-1"));
        assert!(!names_another_origin("X", "evil"));
        assert_eq!(own_id("X@laptop-1", "evil"), "X@laptop-1@evil");
        assert!(!names_another_origin(&own_id("X@laptop-1", "evil"), "evil"));
    }

    #[test]
    fn a_notice_has_one_id_per_message_and_reason() {
        let flagged = Flagged {
            stream: "HOOKLOG",
            stream_sequence: 7,
            subject: "hooklog.events.evil.Stop",
            claimed: Some(("e1", "laptop-1")),
        };
        let a = refused(&flagged, &Refusal::NoOrigin);
        let b = refused(&flagged, &Refusal::NoOrigin);
        assert_eq!(
            a.event_id, b.event_id,
            "a message read again is a duplicate"
        );
        let held = Rename::HeldBy("x".into());
        assert_ne!(a.event_id, renamed(&flagged, "e1@evil", &held).event_id);
        assert_eq!(a.source, "replication");
    }
}
