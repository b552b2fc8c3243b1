//! `GET /alerts` (the alerts projection, oldest first) and `POST /alerts/{id}/ack`.

use super::AppState;
use super::decide;
use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use crate::coordination::Command;
use crate::http::openapi::schemas;
use crate::projection::alerts::{self, Alert};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AlertQuery {
    kind: Option<String>,
    #[serde(default)]
    unacknowledged: bool,
    #[serde(default)]
    #[param(minimum = 0)]
    after_id: i64,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AlertList {
    #[schema(value_type = Vec<schemas::Row>)]
    alerts: Vec<Alert>,
}

#[utoipa::path(
    get,
    path = "/alerts",
    tag = "alerts",
    params(AlertQuery),
    responses(
        (status = 200, description = "Oldest first.", body = AlertList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
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

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckBody {
    #[schema(
        nullable,
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    by: Option<String>,
}

#[utoipa::path(
    post,
    path = "/alerts/{id}/ack",
    tag = "alerts",
    params(("id" = i64, Path, description = "The alert id.")),
    request_body(content = AckBody),
    responses(
        (status = 200, description = "The acknowledged alert.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
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
