//! `/gaps` and `/accounts/{platform}/{account}/behind`: catch-up gaps (seed 002,
//! REQ-HOOKS-17/18).

use super::AppState;
use super::decide::{self, name, position, text};
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use super::sessions::{DEFAULT_ROWS, check_state};
use crate::coordination::Command;
use crate::coordination::gaps::{Move, Open, Transition};
use crate::http::openapi::schemas;
use crate::projection::gaps::{self, Gap, GapFilter, GapStatus};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OpenBody {
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    platform: String,
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    account: String,
    #[schema(schema_with = schemas::position)]
    from_position: Option<Value>,
    #[schema(max_length = 2000, pattern = r"\S")]
    reason: String,
}

#[utoipa::path(
    post,
    path = "/gaps",
    tag = "coordination",
    request_body(content = OpenBody),
    responses(
        (status = 200, description = "The open gap (`created: false` when the account had one).", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `POST /gaps`: opens a gap, or returns the account's unresolved one (`"created": false`).
pub async fn open(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: OpenBody = decide::body(&state, body, None)?;
    let command = Command::OpenGap(Open {
        platform: name("platform", b.platform)?,
        account: name("account", b.account)?,
        from_position: position("fromPosition", b.from_position)?,
        reason: text("reason", b.reason)?,
    });
    decide::run(&state, command).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloseBody {
    #[schema(schema_with = schemas::position)]
    to_position: Option<Value>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefuseBody {
    #[schema(max_length = 2000, pattern = r"\S")]
    detail: String,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeBody {
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    by: String,
}

async fn advance(
    state: &AppState,
    id: String,
    transition: Transition,
) -> Result<Response, ApiError> {
    decide::run(
        state,
        Command::MoveGap(Move {
            gap_id: id,
            transition,
        }),
    )
    .await
}

#[utoipa::path(
    post,
    path = "/gaps/{id}/close",
    tag = "coordination",
    params(("id" = String, Path, description = "The gap id.")),
    request_body(content = CloseBody),
    responses(
        (status = 200, description = "Closed.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody),
        (status = 409, description = "Refused by the current state: a reason code in `error`.", body = schemas::ErrorBody)
    )
)]
/// `POST /gaps/{id}/close`: only an open gap.
pub async fn close(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: CloseBody = decide::body(&state, body, Some("{}"))?;
    let to_position = position("toPosition", b.to_position)?;
    advance(&state, id, Transition::Close { to_position }).await
}

#[utoipa::path(
    post,
    path = "/gaps/{id}/refuse",
    tag = "coordination",
    params(("id" = String, Path, description = "The gap id.")),
    request_body(content = RefuseBody),
    responses(
        (status = 200, description = "Refused.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody),
        (status = 409, description = "Refused by the current state: a reason code in `error`.", body = schemas::ErrorBody)
    )
)]
/// `POST /gaps/{id}/refuse`: only an open gap; raises `catchUpRefused`.
pub async fn refuse(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: RefuseBody = decide::body(&state, body, None)?;
    let detail = text("detail", b.detail)?;
    advance(&state, id, Transition::Refuse { detail }).await
}

#[utoipa::path(
    post,
    path = "/gaps/{id}/resume",
    tag = "coordination",
    params(("id" = String, Path, description = "The gap id.")),
    request_body(content = ResumeBody),
    responses(
        (status = 200, description = "Resumed.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody),
        (status = 409, description = "Refused by the current state: a reason code in `error`.", body = schemas::ErrorBody)
    )
)]
/// `POST /gaps/{id}/resume`: only a refused gap; raises `gapResumed`.
pub async fn resume(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: ResumeBody = decide::body(&state, body, None)?;
    let by = name("by", b.by)?;
    advance(&state, id, Transition::Resume { by }).await
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GapsQuery {
    #[param(schema_with = gap_states)]
    status: Option<String>,
    platform: Option<String>,
    account: Option<String>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct GapList {
    #[schema(value_type = Vec<schemas::Row>)]
    gaps: Vec<Gap>,
}

#[utoipa::path(
    get,
    path = "/gaps",
    tag = "coordination",
    params(GapsQuery),
    responses(
        (status = 200, description = "Newest first.", body = GapList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /gaps`: newest first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<GapsQuery>,
) -> Result<Json<GapList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    let filter = GapFilter {
        status: check_state(query.status.as_deref())?,
        platform: query.platform,
        account: query.account,
    };
    let gaps = state
        .store
        .read(move |conn| gaps::list(conn, &filter, limit))
        .await?;
    Ok(Json(GapList { gaps }))
}

#[utoipa::path(
    get,
    path = "/gaps/{id}",
    tag = "coordination",
    params(("id" = String, Path, description = "The gap id.")),
    responses(
        (status = 200, description = "The gap.", body = schemas::Row),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /gaps/{id}`.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Gap>, ApiError> {
    state
        .store
        .read(move |conn| gaps::get(conn, &id))
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound { path: None })
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Behind {
    /// An open or refused gap exists: sends should wait (or give up, when refused).
    behind: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<schemas::Row>)]
    gap: Option<Gap>,
    /// The catch-up was refused: waiting will not help until someone resumes it.
    refused: bool,
}

#[utoipa::path(
    get,
    path = "/accounts/{platform}/{account}/behind",
    tag = "coordination",
    params(("platform" = String, Path, description = "The platform (`x`, `slack`, ...)."), ("account" = String, Path, description = "The account on it.")),
    responses(
        (status = 200, description = "Whether sends to the account should wait.", body = Behind)
    )
)]
/// `GET /accounts/{platform}/{account}/behind`.
pub async fn behind(
    State(state): State<AppState>,
    ApiPath((platform, account)): ApiPath<(String, String)>,
) -> Result<Json<Behind>, ApiError> {
    let gap = state
        .store
        .read(move |conn| gaps::unresolved(conn, &platform, &account))
        .await?;
    Ok(Json(Behind {
        behind: gap.is_some(),
        refused: gap.as_ref().is_some_and(|g| g.status == GapStatus::Refused),
        gap,
    }))
}

fn gap_states() -> utoipa::openapi::schema::Object {
    schemas::one_of(GapStatus::NAMES)
}
