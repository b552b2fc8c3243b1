//! Wire contracts. Each file turns one kind of request body into [`NewEvent`]s: pure functions,
//! no I/O, so every rule about what is accepted is testable without a server.
//!
//! [`NewEvent`]: crate::event::NewEvent

pub mod body;
pub mod canonical;

use serde_json::{Value, json};

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
