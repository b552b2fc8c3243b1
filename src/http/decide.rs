//! What the coordination routes share: reading a JSON command body into a typed request (our
//! 400 envelope on anything malformed), and turning the writer's verdict into a response:
//! `200` with the resulting row, `409 {error:"<reason code>", message, ...}`, or `404`.

use super::AppState;
use super::error::ApiError;
use crate::coordination::{Command, Verdict};
use crate::ingest::{self, InvalidRequest, body::kind};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

/// Identifiers in commands (platforms, accounts, chats, sessions) are at most this long.
pub const MAX_NAME_CHARS: usize = 256;
/// Free text in commands (reasons, details) is at most this long.
pub const MAX_TEXT_CHARS: usize = 2000;

/// Parses a command body. `empty_is` stands in for an empty body (for commands whose fields
/// are all optional).
pub fn body<T: DeserializeOwned>(
    state: &AppState,
    bytes: Result<Bytes, BytesRejection>,
    empty_is: Option<&str>,
) -> Result<T, ApiError> {
    let bytes = bytes.map_err(|r| ApiError::from_body(r, state.config.body_limit))?;
    let bytes: &[u8] = match (bytes.iter().all(u8::is_ascii_whitespace), empty_is) {
        (true, Some(empty)) => empty.as_bytes(),
        _ => &bytes,
    };
    let value = crate::ingest::json::from_slice(bytes).map_err(|e| {
        InvalidRequest::new(
            format!("body {e}"),
            json!({ "line": e.line(), "column": e.column() }),
        )
    })?;
    if !value.is_object() {
        return Err(ApiError::invalid(format!(
            "body must be a JSON object, not {}",
            kind(&value)
        )));
    }
    serde_json::from_value(value).map_err(|e| ApiError::invalid(format!("invalid body: {e}")))
}

/// A name: 1 to 256 characters, no control characters.
pub fn name(field: &str, value: String) -> Result<String, ApiError> {
    ingest::check_id(field, &value, MAX_NAME_CHARS)?;
    Ok(value)
}

/// Free text: 1 to 2,000 characters.
pub fn text(field: &str, value: String) -> Result<String, ApiError> {
    if value.trim().is_empty() || value.chars().count() > MAX_TEXT_CHARS {
        return Err(ApiError::Invalid(InvalidRequest::new(
            format!("\"{field}\" must be 1 to {MAX_TEXT_CHARS} characters"),
            json!({ "field": field }),
        )));
    }
    Ok(value)
}

/// A platform position (a sequence id, a message id, a Slack ts): a string or a number,
/// kept as text.
pub fn position(field: &str, value: Option<Value>) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => name(field, s).map(Some),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(ApiError::Invalid(InvalidRequest::new(
            format!(
                "\"{field}\" must be a string or a number, not {}",
                kind(&other)
            ),
            json!({ "field": field }),
        ))),
    }
}

/// A whole number, also when written with a zero fraction (`625.0`, `1e3`): JSON Schema counts
/// those as integers, and producers that only have doubles write them so.
pub fn whole<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64>,
{
    let number = serde_json::Number::deserialize(deserializer)?;
    let exact = number.as_i64().or_else(|| {
        let float = number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15);
        float.map(|f| f as i64)
    });
    exact
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| D::Error::custom(format!("{number} is not a whole number in range")))
}

/// [`whole`], for a field that may be absent or null (use with `#[serde(default)]`).
pub fn optional_whole<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64>,
{
    #[derive(Deserialize)]
    struct Whole<T: TryFrom<i64>>(#[serde(deserialize_with = "whole")] T);
    Ok(Option::<Whole<T>>::deserialize(deserializer)?.map(|Whole(n)| n))
}

/// Runs a command through the writer and answers with its verdict.
pub async fn run(state: &AppState, command: Command) -> Result<Response, ApiError> {
    let decided = state.store.writer.decide(command).await?;
    Ok(match decided.verdict {
        // Through a `Value`, as ever: its keys come out in the same (sorted) order.
        Verdict::Done(outcome) => {
            Json(serde_json::to_value(outcome).map_err(|e| ApiError::Internal(e.to_string()))?)
                .into_response()
        }
        Verdict::Refused {
            code,
            message,
            details,
        } => {
            let mut body = json!({ "error": code, "message": message });
            if let (Some(body), Some(details)) = (body.as_object_mut(), details.as_object()) {
                body.extend(details.clone());
            }
            (StatusCode::CONFLICT, Json(body)).into_response()
        }
        Verdict::NotFound(what) => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": "not_found", "message": format!("no such {what}") })),
        )
            .into_response(),
    })
}
