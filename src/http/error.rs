//! The HTTP error type and its JSON envelope. Every refusal a client can see is one of these;
//! internal causes are logged, never sent.

use crate::ingest::InvalidRequest;
use crate::store::{AppendError, StoreError};
use axum::Json;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What was too busy to take a request in time.
#[derive(Debug, thiserror::Error)]
pub enum Overload {
    /// Every reader of the pool stayed busy (the pool's wait ran out).
    #[error("no database reader was free in time: {0}")]
    Readers(String),
    /// The writer's queue stayed full (`store::writer::QUEUE_WAIT`).
    #[error("the writer's queue stayed full")]
    Writer,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Invalid(#[from] InvalidRequest),
    #[error("not found")]
    NotFound { path: Option<String> },
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("{message}")]
    Conflict { message: String, details: Value },
    #[error("body larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    #[error("storage unavailable: {0}")]
    StorageUnavailable(String),
    #[error("shutting down")]
    ShuttingDown,
    #[error("internal error: {0}")]
    Internal(String),
    #[error("no valid bearer token")]
    Unauthorized,
    #[error("the Host header names another server")]
    HostNotAllowed,
    #[error("a browser page of an origin not allowed")]
    OriginNotAllowed,
    #[error("rate limited")]
    TooManyRequests { retry_after_secs: u64 },
    #[error("{limit} event streams are open already")]
    TooManyStreams { limit: usize },
    /// A WebSocket past the ones `--max-connections` leaves room for.
    #[error("{limit} WebSockets are open already")]
    TooManyWebSockets { limit: usize },
    #[error("overloaded: {0}")]
    Overloaded(Overload),
    /// An event stream's cursor names no position of its retained history (seed 003's
    /// `CURSOR_STALE`), with what to do about it.
    #[error("{message}")]
    StaleCursor {
        message: &'static str,
        first_available_sequence: i64,
        head_sequence: i64,
    },
}

crate::states::states! {
    /// What a stream's reconnect probe (or a refused cursor) says about a session's stream:
    /// seed 003's `FactorySessionEventStreamRecovery.outcome`.
    pub enum Recovery {
        /// The session has no events.
        UnknownSession = "UNKNOWN_SESSION",
        /// The cursor names no position of the retained history: reconnect without it.
        CursorStale = "CURSOR_STALE",
        StreamReady = "STREAM_READY",
        /// The probe's read failed (a `500`).
        InternalError = "INTERNAL_ERROR",
    }
}

impl ApiError {
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::Invalid(InvalidRequest::new(message, json!({})))
    }

    /// The seconds a `429` or an overloaded `503` asks the client to wait (its `Retry-After`
    /// header).
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::TooManyRequests { retry_after_secs } => Some(*retry_after_secs),
            ApiError::Overloaded(_) | ApiError::TooManyWebSockets { .. } => Some(1),
            _ => None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = self.retry_after();
        let (status, body) = self.parts();
        answer(status, body, retry_after)
    }
}

/// The envelope of a refusal, kept on its response: a route whose seed gives refusals another
/// shape (`/event`) reshapes what a guard or a fallback answered before its handler ran.
#[derive(Clone)]
pub struct Refused(pub Value);

/// A refusal's answer: `status`, the JSON `body`, and the `Retry-After` header when the
/// refusal asks the client to wait ([`ApiError::retry_after`]). The routes whose seed gives
/// refusals another body shape (`/event`, `/event/normalized`) answer through here too.
pub fn answer(status: StatusCode, body: Value, retry_after: Option<u64>) -> Response {
    let refused = Refused(body.clone());
    let mut response = (status, Json(body)).into_response();
    response.extensions_mut().insert(refused);
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

impl ApiError {
    /// The status and JSON envelope this error answers with.
    pub fn parts(self) -> (StatusCode, Value) {
        match self {
            ApiError::Invalid(e) => (
                StatusCode::BAD_REQUEST,
                json!({ "error": "invalid_request", "message": e.message, "details": e.details }),
            ),
            ApiError::NotFound { path: Some(path) } => (
                StatusCode::NOT_FOUND,
                json!({ "error": "not_found", "path": path }),
            ),
            ApiError::NotFound { path: None } => (
                StatusCode::NOT_FOUND,
                json!({ "error": "not_found", "message": "no such resource" }),
            ),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                json!({ "error": "method_not_allowed", "message": "this route does not take that method" }),
            ),
            ApiError::Conflict { message, details } => (
                StatusCode::CONFLICT,
                json!({ "error": "conflict", "message": message, "details": details }),
            ),
            ApiError::PayloadTooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({
                    "error": "payload_too_large",
                    "message": format!("request body is larger than {limit} bytes"),
                    "details": { "limitBytes": limit },
                }),
            ),
            ApiError::BodyTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                json!({ "error": "request_timeout", "message": "the request body did not arrive in time; nothing was stored" }),
            ),
            ApiError::StorageUnavailable(cause) => {
                tracing::error!(%cause, "storage unavailable");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({ "error": "storage_unavailable", "message": "the database could not take the write, so these events may not be stored; retry with the same event ids (a stored one is answered as a duplicate)" }),
                )
            }
            ApiError::ShuttingDown => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "error": "shutting_down", "message": "hooklog is stopping and did not store these events; retry with the same event ids" }),
            ),
            ApiError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                json!({ "error": "unauthorized", "message": "this hooklog wants Authorization: Bearer <token>" }),
            ),
            ApiError::HostNotAllowed => (
                StatusCode::FORBIDDEN,
                json!({ "error": "host_not_allowed", "message": "the Host header does not name this server (see --allow-host)" }),
            ),
            ApiError::OriginNotAllowed => (
                StatusCode::FORBIDDEN,
                json!({ "error": "origin_not_allowed", "message": "requests from this browser origin are refused (see --cors-origin)" }),
            ),
            ApiError::TooManyRequests { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                json!({
                    "error": "rate_limited",
                    "message": "too many requests from this address; retry after the Retry-After delay",
                    "details": { "retryAfterSeconds": retry_after_secs },
                }),
            ),
            ApiError::TooManyStreams { limit } => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({
                    "error": "too_many_streams",
                    "message": format!("{limit} event streams are open, the most this hooklog serves at once; retry later"),
                    "details": { "maxStreams": limit },
                }),
            ),
            ApiError::TooManyWebSockets { limit } => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({
                    "error": "too_many_connections",
                    "message": format!("{limit} WebSockets are open, the most this hooklog keeps with room left for other requests; retry later"),
                    "details": { "maxWebSockets": limit },
                }),
            ),
            ApiError::Overloaded(cause) => {
                tracing::warn!(%cause, "overloaded");
                let message = match cause {
                    Overload::Readers(_) => {
                        "every database reader stayed busy while this request waited; retry after the Retry-After delay"
                    }
                    Overload::Writer => {
                        "the writer's queue stayed full while this request waited, so nothing from it was stored; retry with the same event ids after the Retry-After delay"
                    }
                };
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({ "error": "overloaded", "message": message }),
                )
            }
            ApiError::StaleCursor {
                message,
                first_available_sequence,
                head_sequence,
            } => (
                StatusCode::BAD_REQUEST,
                json!({
                    "error": "invalid_cursor",
                    "outcome": Recovery::CursorStale,
                    "message": message,
                    "firstAvailableSequence": first_available_sequence,
                    "headSequence": head_sequence,
                }),
            ),
            ApiError::Internal(cause) => {
                tracing::error!(%cause, "internal error");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({ "error": "internal", "message": "internal error" }),
                )
            }
        }
    }
}

impl From<AppendError> for ApiError {
    fn from(e: AppendError) -> Self {
        match e {
            AppendError::Conflict {
                index,
                ref id,
                sequence,
            } => ApiError::Conflict {
                message: format!("{e}; nothing from this request was stored"),
                details: json!({ "index": index, "id": id, "sequence": sequence }),
            },
            AppendError::ConflictWithinRequest {
                first,
                index,
                ref id,
            } => ApiError::Conflict {
                message: format!("{e}; nothing from this request was stored"),
                details: json!({ "index": index, "id": id, "firstIndex": first }),
            },
            AppendError::Storage(cause) => ApiError::StorageUnavailable(cause),
            AppendError::Stopped => ApiError::ShuttingDown,
            AppendError::Overloaded => ApiError::Overloaded(Overload::Writer),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            // The reader pool's wait ran out: every reader was busy (overload), not a fault.
            StoreError::Pool(e) => ApiError::Overloaded(Overload::Readers(e.to_string())),
            e => ApiError::Internal(e.to_string()),
        }
    }
}

impl ApiError {
    /// A body that could not be read: too large (413, naming the configured limit) or broken.
    pub fn from_body(rejection: BytesRejection, limit: usize) -> ApiError {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge { limit }
        } else if timed_out(&rejection) {
            ApiError::BodyTimeout
        } else if let Some(limit) = too_deep(&rejection) {
            ApiError::Invalid(InvalidRequest::new(
                format!("the body nests JSON deeper than {limit} levels"),
                json!({ "maxDepth": limit }),
            ))
        } else {
            ApiError::invalid(format!(
                "could not read the request body: {}",
                rejection.body_text()
            ))
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::invalid(format!("invalid query string: {}", rejection.body_text()))
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::invalid(format!("invalid path: {}", rejection.body_text()))
    }
}

/// Whether a body failed because no bytes arrived for the idle timeout.
fn timed_out(rejection: &BytesRejection) -> bool {
    cause::<super::body_guard::BodyTimedOut>(rejection).is_some()
}

/// The depth limit a body broke, if that is why it failed.
fn too_deep(rejection: &BytesRejection) -> Option<usize> {
    cause::<super::depth::TooDeep>(rejection).map(|e| e.limit)
}

/// The first error of type `E` in a rejection's chain of causes.
fn cause<E: std::error::Error + 'static>(rejection: &BytesRejection) -> Option<&E> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(rejection);
    while let Some(error) = source {
        if let Some(found) = error.downcast_ref::<E>() {
            return Some(found);
        }
        source = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_reader_pool_that_stays_busy_is_a_503_with_retry_after_not_a_500() {
        let pool = r2d2::Pool::builder()
            .max_size(1)
            .connection_timeout(Duration::from_millis(20))
            .build(r2d2_sqlite::SqliteConnectionManager::memory())
            .unwrap();
        let _busy = pool.get().unwrap();
        let waited = pool.get().map(|_| ()).unwrap_err();
        let error = ApiError::from(StoreError::Pool(waited));
        assert_eq!(error.retry_after(), Some(1));
        let response =
            ApiError::from(StoreError::Pool(pool.get().map(|_| ()).unwrap_err())).into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        let (status, body) = error.parts();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["error"], "overloaded");
    }
}
