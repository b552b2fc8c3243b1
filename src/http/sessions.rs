//! `/sessions` and `/sessions/{id}`: the `sessions` projection (every session from any source).
//! A session's events, as a page or a stream, are in `streams.rs`.

use super::AppState;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use crate::projection::sessions::{self, Session};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

/// Rows a projection list returns when no `limit` is given (seed 000's `/missions` default).
pub const DEFAULT_ROWS: u32 = 50;

/// The states a session can be in.
pub const SESSION_STATES: &[&str] = &["active", "idle", "awaiting_input", "stuck", "ended"];

/// Refuses a `state` filter outside `allowed`: a typo must not look like "nothing matches".
pub fn check_state(state: Option<&str>, allowed: &[&str]) -> Result<(), ApiError> {
    match state {
        Some(s) if !allowed.contains(&s) => Err(ApiError::invalid(format!(
            "state must be one of {}",
            allowed.join(", ")
        ))),
        _ => Ok(()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsQuery {
    state: Option<String>,
    source: Option<String>,
    /// The app a hook server's envelope named (`source_app`).
    source_app: Option<String>,
    limit: Option<u32>,
}

#[derive(Serialize)]
pub struct SessionList {
    sessions: Vec<Session>,
}

/// `GET /sessions`: most recently active first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<SessionsQuery>,
) -> Result<Json<SessionList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    check_state(query.state.as_deref(), SESSION_STATES)?;
    let sessions = state
        .store
        .read(move |conn| {
            let filter = sessions::ListFilter {
                state: query.state.as_deref(),
                source: query.source.as_deref(),
                source_app: query.source_app.as_deref(),
            };
            sessions::list(conn, &filter, limit)
        })
        .await?;
    Ok(Json(SessionList { sessions }))
}

/// `GET /sessions/{id}`.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Session>, ApiError> {
    state
        .store
        .read(move |conn| sessions::get(conn, &id))
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound { path: None })
}
