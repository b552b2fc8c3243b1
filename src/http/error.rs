//! The HTTP error type and its JSON envelope. Every refusal a client can see is one of these;
//! internal causes are logged, never sent.

use crate::ingest::InvalidRequest;
use crate::store::{AppendError, StoreError};
use axum::Json;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

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
}

impl ApiError {
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::Invalid(InvalidRequest::new(message, json!({})))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = self.parts();
        (status, Json(body)).into_response()
    }
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
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

impl ApiError {
    /// A body that could not be read: too large (413, naming the configured limit) or broken.
    pub fn from_body(rejection: BytesRejection, limit: usize) -> ApiError {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge { limit }
        } else if timed_out(&rejection) {
            ApiError::BodyTimeout
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

/// Whether a body failed because `RequestBodyTimeoutLayer` gave up on it.
fn timed_out(rejection: &BytesRejection) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(rejection);
    while let Some(error) = source {
        if error.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        source = error.source();
    }
    false
}
