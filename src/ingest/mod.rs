//! Wire contracts. Each file turns one kind of request body into [`NewEvent`]s: pure functions,
//! no I/O, so every rule about what is accepted is testable without a server.
//!
//! [`NewEvent`]: crate::event::NewEvent

pub mod body;
pub mod bounds;
pub mod canonical;
pub mod factory;
pub mod hook;
pub mod hook_server;
pub mod json;
pub mod normalized;
pub mod recording;
pub mod response;
pub mod schema;
pub mod transcript;

use serde_json::{Map, Value, json};

/// Why a request body was refused. Becomes `400 {error:"invalid_request", message, details}`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidRequest {
    pub message: String,
    pub details: Value,
}

impl InvalidRequest {
    pub fn new(message: impl Into<String>, details: Value) -> Self {
        InvalidRequest {
            message: message.into(),
            details,
        }
    }

    /// An error about one field of one item of a batch.
    pub fn field(item: &body::Item, field: &str, problem: &str) -> Self {
        let mut details = item.location();
        details["field"] = json!(field);
        InvalidRequest::new(format!("{item}: \"{field}\" {problem}"), details)
    }
}

/// Refuses an object with fields outside `allowed`, naming them (`prefix` says where the object
/// sits, e.g. `context.`): a misspelt field must not be silently dropped.
pub fn reject_unknown(
    item: &body::Item,
    map: &Map<String, Value>,
    allowed: &[&str],
    prefix: &str,
) -> Result<(), InvalidRequest> {
    let unknown: Vec<String> = map
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .map(|k| format!("{prefix}{k}"))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let mut details = item.location();
    details["unknownFields"] = json!(unknown);
    details["allowedFields"] = json!(allowed);
    Err(InvalidRequest::new(
        format!("{item} has unknown fields: {}", unknown.join(", ")),
        details,
    ))
}

/// The most characters a producer's own event id may have.
pub const MAX_EVENT_ID_CHARS: usize = canonical::MAX_ID_CHARS;

/// The event id for a single-event route: the producer's idempotency key when it sent one
/// (`X-Hooklog-Event-Id`), else a fresh UUIDv7. The flag says the id was made here.
pub fn event_id(given: Option<String>) -> Result<(String, bool), InvalidRequest> {
    match given {
        None => Ok((crate::event::id::new_event_id(), true)),
        Some(id) => {
            check_id("eventId", &id, MAX_EVENT_ID_CHARS)?;
            Ok((id, false))
        }
    }
}

/// An identifier: 1 to `max` characters, none of them control characters.
pub fn check_id(field: &str, id: &str, max: usize) -> Result<(), InvalidRequest> {
    if id.is_empty() || id.chars().count() > max || id.chars().any(char::is_control) {
        return Err(InvalidRequest::new(
            format!("\"{field}\" must be 1 to {max} characters, without control characters"),
            json!({ "field": field }),
        ));
    }
    Ok(())
}
