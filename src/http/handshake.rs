//! Seed 003's identity handshake and reconnect probe, shared by the factory session's two
//! streams (canonical and response events): the `X-Factory-Session-*` headers and the identity
//! set they are compared with, when `Accept` asks for the probe, and the probe's answer when
//! its read failed.

use super::AppState;
use super::error::ApiError;
use axum::Json;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use uuid::Uuid;

pub const FACTORY_SESSION_ID_HEADER: &str = "x-factory-session-factory-session-id";
pub const STREAM_GENERATION_HEADER: &str = "x-factory-session-stream-generation-id";
pub const BACKEND_SCOPE_HEADER: &str = "x-factory-session-backend-scope-id";
pub const LOGICAL_SESSION_KEY_HEADER: &str = "x-factory-session-logical-session-key-id";
/// The seed's four identity headers (CORS exposes and allows them).
pub const IDENTITY_HEADERS: [&str; 4] = [
    FACTORY_SESSION_ID_HEADER,
    STREAM_GENERATION_HEADER,
    BACKEND_SCOPE_HEADER,
    LOGICAL_SESSION_KEY_HEADER,
];

/// The namespace the backend scope id is made in from the stream generation (fixed forever).
const BACKEND_NAMESPACE: Uuid = Uuid::from_u128(0x6c0e_4a42_8f51_4d7e_9a55_3b1f_2c6d_7e90);

/// The identity set a client compares the handshake headers with (seed 003: "the latest
/// sync-preflight or session-read identity set"): `GET /factory-sessions/{id}` carries it.
#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
pub struct StreamIdentity {
    pub factory_session_id: String,
    pub stream_generation_id: String,
    pub backend_scope_id: String,
    pub logical_session_key_id: String,
}

impl StreamIdentity {
    /// One database is one backend scope (a UUIDv5 of its stream generation); a session's
    /// logical key is a UUIDv5 of its id within that scope.
    pub fn of(state: &AppState, session_id: &str) -> StreamIdentity {
        let generation = &state.store.generation_id;
        let scope = Uuid::new_v5(&BACKEND_NAMESPACE, generation.as_bytes());
        StreamIdentity {
            factory_session_id: session_id.to_string(),
            stream_generation_id: generation.clone(),
            backend_scope_id: scope.to_string(),
            logical_session_key_id: Uuid::new_v5(&scope, session_id.as_bytes()).to_string(),
        }
    }

    /// As the seed's `X-Factory-Session-*` headers.
    pub fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let values = [
            &self.factory_session_id,
            &self.stream_generation_id,
            &self.backend_scope_id,
            &self.logical_session_key_id,
        ];
        for (name, value) in IDENTITY_HEADERS.into_iter().zip(values) {
            if let Ok(value) = HeaderValue::from_bytes(value.as_bytes()) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
        headers
    }
}

/// The seed's identity headers for a session.
pub fn identity(state: &AppState, session_id: &str) -> HeaderMap {
    StreamIdentity::of(state, session_id).headers()
}

/// Seed 003: "when Accept includes application/json, the canonical session events route acts
/// as a reconnect probe", whatever else it lists (a media range with `q=0` does not count).
pub fn wants_probe(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            media.eq_ignore_ascii_case("application/json") && !refused
        })
}

/// The probe's answer when its read failed: the seed's `INTERNAL_ERROR` outcome (a `500`,
/// with the cause logged, not sent).
pub fn probe_failed(state: &AppState, session_id: &str, error: &ApiError) -> Response {
    tracing::error!(error = ?error, "reconnect probe: the read failed");
    let body = serde_json::json!({
        "error": "internal",
        "message": "internal error",
        "sessionId": session_id,
        "factorySessionId": session_id,
        "outcome": super::error::Recovery::InternalError,
        "retry": { "omitAfterEventId": false, "omitAfterSequence": false },
        "streamGenerationId": state.store.generation_id,
    });
    let mut response = (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response();
    response.headers_mut().extend(identity(state, session_id));
    response
}
