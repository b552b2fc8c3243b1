//! The HTTP surface: the whole route table in [`router`], one file per resource family.

pub mod alerts;
pub mod claims;
pub mod decide;
pub mod error;
pub mod events;
pub mod extract;
pub mod factory;
pub mod gaps;
pub mod health;
pub mod heroes;
pub mod hooks;
pub mod missions;
pub mod owners;
pub mod recordings;
pub mod sessions;
pub mod streams;

use crate::config::Config;
use crate::store::Store;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, Uri};
use axum::routing::{get, post};
use error::ApiError;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::trace::TraceLayer;

/// Handles every handler needs. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub config: Arc<Config>,
    pub started: Instant,
    /// Turns true when the server starts shutting down; open streams end on it.
    pub shutdown: watch::Receiver<bool>,
}

/// Every route hooklog serves.
pub fn router(state: AppState) -> Router {
    let body_limit = state.config.body_limit;
    let body_timeout = state.config.body_timeout;
    Router::new()
        .route("/health", get(health::health))
        .route("/stats", get(health::stats))
        .route("/events", get(events::list).post(events::ingest))
        .route("/events/{id}", get(events::one))
        .route("/event", post(hooks::event))
        .route("/event/normalized", post(hooks::normalized))
        .route("/sessions", get(sessions::list))
        .route("/sessions/{id}", get(sessions::one))
        .route("/sessions/{id}/events", get(streams::session))
        .route("/sessions/{id}/export", get(recordings::export))
        .route("/sessions/{id}/replay", get(recordings::replay))
        .route("/factory-sessions/{id}", get(factory::one))
        .route(
            "/factory-sessions/{id}/events",
            get(factory::stream).post(factory::ingest),
        )
        .route("/factory-sessions/{id}/work", get(factory::work))
        .route("/factory-sessions/{id}/dispatches", get(factory::dispatches))
        .route("/heroes", get(heroes::list))
        .route("/heroes/{id}", get(heroes::one))
        .route("/missions", get(missions::list))
        .route("/missions/{id}", get(missions::one))
        .route("/tool-uses", get(missions::list_tool_uses))
        .route("/owners", get(owners::list))
        .route("/owners/acquire", post(owners::acquire))
        .route("/owners/{platform}/{account}", get(owners::one))
        .route("/owners/{platform}/{account}/heartbeat", post(owners::heartbeat))
        .route("/owners/{platform}/{account}/release", post(owners::release))
        .route("/owners/{platform}/{account}/verify-token", post(owners::verify_token))
        .route("/claims", get(claims::list).post(claims::claim))
        .route("/claims/{chat}", get(claims::one))
        .route("/claims/{chat}/release", post(claims::release))
        .route("/actions", get(claims::actions))
        .route("/gaps", get(gaps::list).post(gaps::open))
        .route("/gaps/{id}", get(gaps::one))
        .route("/gaps/{id}/close", post(gaps::close))
        .route("/gaps/{id}/refuse", post(gaps::refuse))
        .route("/gaps/{id}/resume", post(gaps::resume))
        .route("/accounts/{platform}/{account}/behind", get(gaps::behind))
        .route("/alerts", get(alerts::list))
        .route("/alerts/{id}/ack", post(alerts::acknowledge))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(RequestBodyTimeoutLayer::new(body_timeout))
        .layer(
            // Spans carry the method and path only: query strings may hold tokens, bodies
            // hold prompts and commands, and neither belongs in logs.
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                tracing::debug_span!("request", method = %request.method(), path = %request.uri().path())
            }),
        )
        .with_state(state)
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound {
        path: Some(uri.path().to_string()),
    }
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
