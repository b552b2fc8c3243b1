//! `GET /alerts`: the alerts projection, oldest first.

use super::AppState;
use super::error::ApiError;
use super::extract::ApiQuery;
use crate::projection::alerts::{self, Alert};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertQuery {
    kind: Option<String>,
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
        .read(move |conn| alerts::list(conn, query.kind.as_deref(), query.after_id, limit))
        .await?;
    Ok(Json(AlertList { alerts }))
}
