//! `GET /sessions/{id}/projections?until=N`: the projections as they stood after event `N` of
//! a session (its sequence in the log), replayed from the session's events on a scratch
//! database. It is `hooklog replay --session ID --until N` over HTTP, through the same code
//! ([`crate::store::scratch`]), and it is what the web view's replay scrubber shows.

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use super::openapi::schemas;
use crate::store::scratch::{self, Until};
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Map, Value, json};

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UntilQuery {
    /// A sequence in the log: the snapshot is taken after the session's first event at or
    /// after it.
    #[param(minimum = 1)]
    until: i64,
}

#[utoipa::path(
    get,
    path = "/sessions/{id}/projections",
    tag = "projections",
    params(("id" = String, Path, description = "The session id."), UntilQuery),
    responses(
        (status = 200, description = "`sessionId`, `position`, `type`, `applied`, `lines` and `tables`: the projections after that event.", body = Object),
        (status = 400, description = "Invalid input (no `until`, below 1, or past the session's last event).", body = schemas::ErrorBody),
        (status = 404, description = "No such session.", body = schemas::ErrorBody)
    )
)]
/// `GET /sessions/{id}/projections?until=N`.
pub async fn until(
    State(state): State<AppState>,
    ApiPath(session): ApiPath<String>,
    ApiQuery(query): ApiQuery<UntilQuery>,
) -> Result<Json<Value>, ApiError> {
    if query.until < 1 {
        return Err(ApiError::invalid("until must be a sequence >= 1"));
    }
    let events = {
        let session = session.clone();
        state
            .store
            .read(move |conn| scratch::session_events(conn, &session))
            .await?
    };
    let head = match events.last() {
        Some((position, _)) => *position,
        None => return Err(ApiError::NotFound { path: None }),
    };
    let replayed = tokio::task::spawn_blocking(move || scratch::until(&events, query.until))
        .await
        .map_err(|e| ApiError::Internal(format!("the replay panicked: {e}")))?
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let Some(snapshot) = replayed else {
        return Err(ApiError::invalid(format!(
            "session {session} has no event at or after #{}; its last is #{head}",
            query.until
        )));
    };
    Ok(Json(answer(&session, &snapshot)))
}

/// The snapshot as JSON: the lines `hooklog replay --until` prints, and the same rows by
/// table, each row an object of its columns (as text, clipped as the lines clip them).
fn answer(session: &str, snapshot: &Until) -> Value {
    let mut tables: Map<String, Value> = Map::new();
    for ((table, _), columns) in &snapshot.rows {
        let row: Map<String, Value> = columns
            .iter()
            .map(|(c, v)| (c.clone(), Value::String(v.clone())))
            .collect();
        let rows = tables
            .entry(table.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(rows) = rows {
            rows.push(Value::Object(row));
        }
    }
    json!({
        "sessionId": session,
        "position": snapshot.position,
        "type": snapshot.event_type,
        "applied": snapshot.applied,
        "lines": snapshot.lines(),
        "tables": tables,
    })
}
