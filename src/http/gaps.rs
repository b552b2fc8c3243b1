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
use crate::projection::gaps::{self, Gap, GapFilter};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const GAP_STATES: &[&str] = &["open", "closed", "refused"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OpenBody {
    platform: String,
    account: String,
    from_position: Option<Value>,
    reason: String,
}

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloseBody {
    to_position: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefuseBody {
    detail: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeBody {
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GapsQuery {
    status: Option<String>,
    platform: Option<String>,
    account: Option<String>,
    limit: Option<u32>,
}

#[derive(Serialize)]
pub struct GapList {
    gaps: Vec<Gap>,
}

/// `GET /gaps`: newest first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<GapsQuery>,
) -> Result<Json<GapList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    check_state(query.status.as_deref(), GAP_STATES)?;
    let filter = GapFilter {
        status: query.status,
        platform: query.platform,
        account: query.account,
    };
    let gaps = state
        .store
        .read(move |conn| gaps::list(conn, &filter, limit))
        .await?;
    Ok(Json(GapList { gaps }))
}

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

#[derive(Serialize)]
pub struct Behind {
    /// An open or refused gap exists: sends should wait (or give up, when refused).
    behind: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    gap: Option<Gap>,
    /// The catch-up was refused: waiting will not help until someone resumes it.
    refused: bool,
}

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
        refused: gap.as_ref().is_some_and(|g| g.status == "refused"),
        gap,
    }))
}
