//! `GET /alerts` (the alerts projection, oldest first) and `POST /alerts/{id}/ack`.

use super::AppState;
use super::decide;
use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use crate::coordination::Command;
use crate::projection::alerts::{self, Alert};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertQuery {
    kind: Option<String>,
    #[serde(default)]
    unacknowledged: bool,
    #[serde(default)]
    after_id: i64,
    limit: Option<u32>,
}

#[derive(Serialize)]
pub struct AlertList {
    alerts: Vec<Alert>,
}

pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<AlertQuery>,
) -> Result<Json<AlertList>, ApiError> {
    if query.after_id < 0 {
        return Err(ApiError::invalid("after_id must be >= 0"));
    }
    let limit = super::events::page_limit(query.limit)?;
    let alerts = state
        .store
        .read(move |conn| {
            alerts::list(
                conn,
                query.kind.as_deref(),
                query.unacknowledged,
                query.after_id,
                limit,
            )
        })
        .await?;
    Ok(Json(AlertList { alerts }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckBody {
    by: Option<String>,
}

/// `POST /alerts/{id}/ack`: acknowledges an alert (an `alert_acknowledged` event); again is a
/// no-op that answers the alert as it is.
pub async fn acknowledge(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: AckBody = decide::body(&state, body, Some("{}"))?;
    let by = b.by.map(|by| decide::name("by", by)).transpose()?;
    decide::run(&state, Command::AcknowledgeAlert { alert_id: id, by }).await
}
