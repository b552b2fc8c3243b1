//! `/claims` and `/actions`: chat claims (seed 002, REQ-HOOKS-15) and their action log.

use super::AppState;
use super::decide::{self, name};
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use super::sessions::DEFAULT_ROWS;
use crate::coordination::Command;
use crate::coordination::claims::{Claim as ClaimCommand, OUTCOMES, Release};
use crate::http::openapi::schemas;
use crate::projection::claims::{self, Claim};
use crate::store::read;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

pub const DEFAULT_TTL_SECONDS: i64 = 600;
pub const MAX_TTL_SECONDS: i64 = 86_400;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimBody {
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    chat: String,
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    session_id: String,
    #[schema(nullable, minimum = 1, maximum = 86400)]
    #[serde(default, deserialize_with = "decide::optional_whole")]
    ttl_seconds: Option<i64>,
}

#[utoipa::path(
    post,
    path = "/claims",
    tag = "coordination",
    request_body(content = ClaimBody),
    responses(
        (status = 200, description = "Granted or renewed.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 409, description = "Refused by the current state: a reason code in `error`.", body = schemas::ErrorBody)
    )
)]
/// `POST /claims`: claim (or renew) a chat for a session.
pub async fn claim(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: ClaimBody = decide::body(&state, body, None)?;
    let ttl = b.ttl_seconds.unwrap_or(DEFAULT_TTL_SECONDS);
    if !(1..=MAX_TTL_SECONDS).contains(&ttl) {
        return Err(ApiError::invalid(format!(
            "ttlSeconds must be between 1 and {MAX_TTL_SECONDS}"
        )));
    }
    let command = Command::Claim(ClaimCommand {
        chat: name("chat", b.chat)?,
        session_id: name("sessionId", b.session_id)?,
        ttl_seconds: ttl,
    });
    decide::run(&state, command).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = ClaimReleaseBody)]
pub struct ReleaseBody {
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    session_id: String,
    #[schema(schema_with = outcomes)]
    outcome: String,
}

#[utoipa::path(
    post,
    path = "/claims/{chat}/release",
    tag = "coordination",
    params(("chat" = String, Path, description = "The chat.")),
    request_body(content = ReleaseBody),
    responses(
        (status = 200, description = "Released.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody),
        (status = 409, description = "Refused by the current state: a reason code in `error`.", body = schemas::ErrorBody)
    )
)]
/// `POST /claims/{chat}/release`: only the holder.
pub async fn release(
    State(state): State<AppState>,
    ApiPath(chat): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: ReleaseBody = decide::body(&state, body, None)?;
    if !OUTCOMES.contains(&b.outcome.as_str()) {
        return Err(ApiError::invalid(format!(
            "outcome must be one of {}",
            OUTCOMES.join(", ")
        )));
    }
    let command = Command::ReleaseClaim(Release {
        chat,
        session_id: name("sessionId", b.session_id)?,
        outcome: b.outcome,
    });
    decide::run(&state, command).await
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ClaimsQuery {
    #[serde(default)]
    all: bool,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ClaimList {
    #[schema(value_type = Vec<schemas::Row>)]
    claims: Vec<Claim>,
}

#[utoipa::path(
    get,
    path = "/claims",
    tag = "coordination",
    params(ClaimsQuery),
    responses(
        (status = 200, description = "Active claims (`?all=true`: every chat ever claimed).", body = ClaimList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /claims`: the active claims (`?all=true`: every chat ever claimed).
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ClaimsQuery>,
) -> Result<Json<ClaimList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    let now = state.config.clock.now();
    let claims = state
        .store
        .read(move |conn| claims::list(conn, query.all, now, limit))
        .await?;
    Ok(Json(ClaimList { claims }))
}

#[utoipa::path(
    get,
    path = "/claims/{chat}",
    tag = "coordination",
    params(("chat" = String, Path, description = "The chat.")),
    responses(
        (status = 200, description = "The claim.", body = schemas::Row),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /claims/{chat}`.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(chat): ApiPath<String>,
) -> Result<Json<Claim>, ApiError> {
    let now = state.config.clock.now();
    state
        .store
        .read(move |conn| claims::get(conn, &chat, now))
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound { path: None })
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ActionsQuery {
    chat: String,
    #[serde(default)]
    after_sequence: i64,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ActionList {
    #[schema(value_type = Vec<schemas::Envelope>)]
    actions: Vec<Box<RawValue>>,
}

#[utoipa::path(
    get,
    path = "/actions",
    tag = "coordination",
    params(ActionsQuery),
    responses(
        (status = 200, description = "The chat's claim events, in order.", body = ActionList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /actions?chat=`: every claim, renewal, refusal and release of a chat, in order, as the
/// events that record them.
pub async fn actions(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ActionsQuery>,
) -> Result<Json<ActionList>, ApiError> {
    let limit = page_limit_or(query.limit, super::events::DEFAULT_PAGE)?;
    let events = state
        .store
        .read(move |conn| {
            let sequences = claims::actions(conn, &query.chat, query.after_sequence, limit)?;
            sequences
                .into_iter()
                .map(|s| read::event_at(conn, s))
                .filter_map(Result::transpose)
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .await?;
    Ok(Json(ActionList {
        actions: events.iter().map(|e| e.envelope_raw()).collect(),
    }))
}

fn outcomes() -> utoipa::openapi::schema::Object {
    schemas::one_of(OUTCOMES)
}
