//! Seed 000's live channel: `GET /` with `Upgrade: websocket` opens a WebSocket that sends the
//! hydration frames (`connected`, `roster_update`, `mission_state`), then the hero, mission and
//! tool frames of every hook event committed after them, derived from the change stream. A
//! plain `GET /` (no upgrade) is the web view's board page.
//!
//! The socket is behind the same guards as every route (token, `Host`, `Origin`, rate limit)
//! and takes one of the `--max-streams` slots for its life, and keeps its connection's place
//! under `--max-connections` (past the WebSockets that leaves room for: `503
//! too_many_connections`). What it holds is bounded: a page of
//! changes at a time, a client message of at most the body limit.

pub mod client;
pub mod frames;
pub mod hydrate;
mod session;

use super::AppState;
use super::error::ApiError;
use super::server::Place;
use super::streams;
use crate::http::openapi::schemas;
use axum::Extension;
use axum::extract::State;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::http::{HeaderMap, Uri, header};
use axum::response::{IntoResponse, Response};

#[utoipa::path(
    get,
    path = "/",
    tag = "live",
    responses(
        (status = 101, description = "With `Upgrade: websocket`: seed 000's live channel (docs/api.md)."),
        (status = 200, description = "Without `Upgrade`: the web view's board page (docs/web.md).", content_type = "text/html", body = String),
        (status = 400, description = "A query string, or an `Upgrade` that is not a WebSocket handshake.", body = schemas::ErrorBody)
    )
)]
/// `GET /`: the WebSocket, or (without `Upgrade`) the web view.
pub async fn root(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    place: Option<Extension<Place>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    if uri.query().is_some_and(|q| !q.is_empty()) {
        return Err(ApiError::invalid("GET / takes no query parameters"));
    }
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(_) if !headers.contains_key(header::UPGRADE) => return Ok(crate::web::page()),
        Err(rejection) => {
            return Err(ApiError::invalid(format!(
                "not a WebSocket handshake: {}",
                rejection.body_text()
            )));
        }
    };
    // The connection's place is kept for the socket's life (`serve` gives every request one).
    let place = match place {
        Some(Extension(place)) => Some(
            place
                .for_websocket()
                .map_err(|limit| ApiError::TooManyWebSockets { limit })?,
        ),
        None => None,
    };
    let slot = streams::stream_slot(&state)?;
    let limit = state.config.body_limit;
    Ok(upgrade
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| session::run(socket, state, (slot, place)))
        .into_response())
}
