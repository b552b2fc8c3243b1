//! `/owners`: watcher owners, one per platform account (seed 002, REQ-HOOKS-13/14).

use super::AppState;
use super::decide::{self, name, position};
use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use crate::coordination::Command;
use crate::coordination::owners::{Acquire, Heartbeat, Release};
use crate::http::openapi::schemas;
use crate::ingest::InvalidRequest;
use crate::projection::owners::{self, Owner};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The hex SHA-256 of a relay token: what is stored and compared, never the token.
pub fn token_hash(token: &str) -> String {
    crate::event::id::hex(&Sha256::digest(token.as_bytes()))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AcquireBody {
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
    #[schema(minimum = 1)]
    #[serde(deserialize_with = "decide::whole")]
    pid: i64,
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    hostname: String,
    #[serde(default, deserialize_with = "decide::optional_whole")]
    #[schema(minimum = 0, maximum = 65535)]
    relay_port: Option<u16>,
    #[schema(nullable, min_length = 1)]
    relay_token: Option<String>,
}

#[utoipa::path(
    post,
    path = "/owners/acquire",
    tag = "coordination",
    request_body(content = AcquireBody),
    responses(
        (status = 200, description = "The owner row: this watcher owns the account.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 409, description = "Refused by the current state: a reason code in `error`.", body = schemas::ErrorBody)
    )
)]
/// `POST /owners/acquire`.
pub async fn acquire(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: AcquireBody = decide::body(&state, body, None)?;
    if b.pid <= 0 {
        return Err(ApiError::invalid("pid must be a positive integer"));
    }
    let token = match b.relay_token {
        Some(t) if t.is_empty() => return Err(ApiError::invalid("relayToken must not be empty")),
        t => t.map(|t| token_hash(&t)),
    };
    let command = Command::Acquire(Acquire {
        platform: name("platform", b.platform)?,
        account: name("account", b.account)?,
        pid: b.pid,
        hostname: name("hostname", b.hostname)?,
        relay_port: b.relay_port.map(i64::from),
        relay_token_sha256: token,
    });
    decide::run(&state, command).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatBody {
    #[serde(deserialize_with = "decide::whole")]
    generation: i64,
    #[serde(default, deserialize_with = "decide::optional_whole")]
    #[schema(minimum = 0, maximum = 4_294_967_295_u64)]
    attached: Option<u32>,
    #[schema(schema_with = schemas::positions)]
    positions: Option<Value>,
}

/// Most position keys one heartbeat may give.
pub const MAX_POSITIONS: usize = 1000;

/// The platform's own positions: an object of 1 to 1,000 keys (names, as a chat or a stream
/// is named) whose values are positions (a string or a number).
fn positions(value: Option<Value>) -> Result<Option<Value>, ApiError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(map)) if (1..=MAX_POSITIONS).contains(&map.len()) => map,
        Some(_) => {
            return Err(ApiError::Invalid(InvalidRequest::new(
                format!("\"positions\" must be an object of 1 to {MAX_POSITIONS} positions"),
                json!({ "field": "positions" }),
            )));
        }
    };
    let mut checked = serde_json::Map::new();
    for (key, value) in map {
        let key = name("positions", key)?;
        let value = position("positions", Some(value))?;
        checked.insert(key, Value::from(value));
    }
    Ok(Some(Value::Object(checked)))
}

#[utoipa::path(
    post,
    path = "/owners/{platform}/{account}/heartbeat",
    tag = "coordination",
    params(("platform" = String, Path, description = "The platform (`x`, `slack`, ...)."), ("account" = String, Path, description = "The account on it.")),
    request_body(content = HeartbeatBody),
    responses(
        (status = 200, description = "The owner row.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 409, description = "Refused by the current state: a reason code in `error`.", body = schemas::ErrorBody)
    )
)]
/// `POST /owners/{platform}/{account}/heartbeat`.
pub async fn heartbeat(
    State(state): State<AppState>,
    ApiPath((platform, account)): ApiPath<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: HeartbeatBody = decide::body(&state, body, None)?;
    let command = Command::Heartbeat(Heartbeat {
        platform,
        account,
        generation: b.generation,
        attached: b.attached.map(i64::from),
        positions: positions(b.positions)?,
    });
    decide::run(&state, command).await
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OwnerReleaseBody)]
pub struct ReleaseBody {
    #[serde(deserialize_with = "decide::whole")]
    generation: i64,
}

#[utoipa::path(
    post,
    path = "/owners/{platform}/{account}/release",
    tag = "coordination",
    params(("platform" = String, Path, description = "The platform (`x`, `slack`, ...)."), ("account" = String, Path, description = "The account on it.")),
    request_body(content = ReleaseBody),
    responses(
        (status = 200, description = "The released owner row.", body = schemas::Row),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 409, description = "Refused by the current state: a reason code in `error`.", body = schemas::ErrorBody)
    )
)]
/// `POST /owners/{platform}/{account}/release`.
pub async fn release(
    State(state): State<AppState>,
    ApiPath((platform, account)): ApiPath<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let b: ReleaseBody = decide::body(&state, body, None)?;
    let command = Command::ReleaseOwner(Release {
        platform,
        account,
        generation: b.generation,
    });
    decide::run(&state, command).await
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OwnersQuery {
    platform: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct OwnerList {
    #[schema(value_type = Vec<schemas::Row>)]
    owners: Vec<Owner>,
}

#[utoipa::path(
    get,
    path = "/owners",
    tag = "coordination",
    params(OwnersQuery),
    responses(
        (status = 200, description = "Every account's owner, its status judged now.", body = OwnerList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /owners`: every account's owner, its status judged now.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<OwnersQuery>,
) -> Result<Json<OwnerList>, ApiError> {
    let now = state.config.clock.now();
    let hung_after = state.config.owner_hung_after;
    let rows = state
        .store
        .read(move |conn| owners::list(conn, query.platform.as_deref()))
        .await?;
    Ok(Json(OwnerList {
        owners: rows.iter().map(|o| o.view(now, hung_after)).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/owners/{platform}/{account}",
    tag = "coordination",
    params(("platform" = String, Path, description = "The platform (`x`, `slack`, ...)."), ("account" = String, Path, description = "The account on it.")),
    responses(
        (status = 200, description = "The owner.", body = schemas::Row),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /owners/{platform}/{account}`.
pub async fn one(
    State(state): State<AppState>,
    ApiPath((platform, account)): ApiPath<(String, String)>,
) -> Result<Json<Owner>, ApiError> {
    let now = state.config.clock.now();
    let hung_after = state.config.owner_hung_after;
    state
        .store
        .read(move |conn| owners::get(conn, &platform, &account))
        .await?
        .map(|o| Json(o.view(now, hung_after)))
        .ok_or(ApiError::NotFound { path: None })
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyBody {
    token: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Verified {
    valid: bool,
}

#[utoipa::path(
    post,
    path = "/owners/{platform}/{account}/verify-token",
    tag = "coordination",
    params(("platform" = String, Path, description = "The platform (`x`, `slack`, ...)."), ("account" = String, Path, description = "The account on it.")),
    request_body(content = VerifyBody),
    responses(
        (status = 200, description = "Whether the token is the owner's.", body = Verified),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `POST /owners/{platform}/{account}/verify-token`: whether a relay token is the owner's,
/// for a subscriber that must check one (the token is never returned).
pub async fn verify_token(
    State(state): State<AppState>,
    ApiPath((platform, account)): ApiPath<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Verified>, ApiError> {
    let b: VerifyBody = decide::body(&state, body, None)?;
    let owner = state
        .store
        .read(move |conn| owners::get(conn, &platform, &account))
        .await?
        .ok_or(ApiError::NotFound { path: None })?;
    let valid = owner.released_at.is_none()
        && owner
            .relay_token_sha256
            .is_some_and(|stored| stored == token_hash(&b.token));
    Ok(Json(Verified { valid }))
}
