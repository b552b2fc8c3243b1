//! `GET /usage`: token usage read from transcripts (`projection::usage`), summed by day,
//! session, model, project, turn or origin, with its cost from the price table.

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiQuery, blank_is_absent};
use super::search::moment;
use crate::projection::cost::{self, Group};
use crate::projection::usage::{self, By, Filter};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

/// What the rows may be summed by.
pub const BY: &[&str] = &["day", "session", "model", "project", "turn", "origin"];

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// What to sum by: `day` (default), `session`, `model`, `project`, `turn` or `origin`.
    #[param(schema_with = bys)]
    by: Option<String>,
    /// Only calls at or after this time: an RFC 3339 time, or an age (`7d`, `12h`).
    #[serde(default, deserialize_with = "blank_is_absent")]
    #[param(schema_with = super::openapi::schemas::moment)]
    since: Option<String>,
    /// Only this session's calls (`sessionId` is accepted too).
    #[serde(alias = "sessionId")]
    session: Option<String>,
    /// The UTC offset days are counted in (`+02:00`, `-0530`, `Z`); UTC by default.
    #[serde(default, deserialize_with = "blank_is_absent")]
    #[param(schema_with = super::openapi::schemas::utc_offset)]
    tz: Option<String>,
}

fn bys() -> utoipa::openapi::schema::Object {
    super::openapi::schemas::one_of(BY)
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    by: String,
    /// The offset days were counted in, in minutes east of UTC.
    utc_offset_minutes: i32,
    /// The date of the price table the costs come from.
    prices_as_of: String,
    groups: Vec<Group>,
    total: Group,
}

#[utoipa::path(
    get,
    path = "/usage",
    tag = "projections",
    params(UsageQuery),
    responses(
        (status = 200, description = "Tokens and cost per key, in key order, and their total.", body = UsageReport),
        (status = 400, description = "Invalid input; nothing was done.", body = super::openapi::schemas::ErrorBody)
    )
)]
/// `GET /usage?by=day`: tokens and cost from transcripts, summed by the key asked for.
pub async fn usage(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<UsageQuery>,
) -> Result<Json<UsageReport>, ApiError> {
    let by_text = query.by.unwrap_or_else(|| "day".into());
    let by: By = serde_json::from_value(serde_json::Value::String(by_text.clone()))
        .map_err(|_| ApiError::invalid(format!("by must be one of {}", BY.join(", "))))?;
    let offset = match query.tz.as_deref() {
        None => 0,
        Some(tz) => usage::parse_offset(tz)
            .ok_or_else(|| ApiError::invalid("tz must be a UTC offset: +02:00, -0530 or Z"))?,
    };
    let filter = Filter {
        since: query
            .since
            .as_deref()
            .map(|t| moment("since", t, chrono::Utc::now()))
            .transpose()?,
        session: query.session,
        offset_minutes: offset,
    };
    let rows = state
        .store
        .read(move |conn| usage::totals(conn, by, &filter))
        .await?;
    let prices = state.config.prices.clone();
    let (groups, total) = cost::groups(&rows, &prices);
    Ok(Json(UsageReport {
        by: by_text,
        utc_offset_minutes: offset,
        prices_as_of: prices.as_of.clone(),
        groups,
        total,
    }))
}
