//! Permission requests (issue 40): `GET /permission-requests` lists them, `GET
//! /permission-requests/{id}?wait=` waits for one to be settled (the waiting hook's long poll),
//! and seed 000's `POST /permission-response` and `POST /plan/approve` decide one; `POST
//! /permission-requests/{id}/expire` is the waiting hook giving up. Decisions and expiries are
//! coordination commands: the writer decides them, the first settles the request, and every
//! answer is seed 000's `{ok, resolved}` with the request as it stands.

use super::AppState;
use super::auth::Caller;
use super::decide;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use super::sessions::{DEFAULT_ROWS, check_state};
use crate::coordination::permissions::{Answer, Decide, Decider};
use crate::coordination::{Command, Outcome, Verdict};
use crate::http::openapi::schemas;
use crate::projection::permissions::{
    self, MESSAGE_CHARS, PermissionRequest, RequestState, Select,
};
use crate::stream::Hub;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

pub use crate::projection::permissions::MAX_WAIT_SECONDS;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    #[param(schema_with = request_states)]
    state: Option<String>,
    /// Only this session's requests.
    #[serde(alias = "sessionId")]
    session: Option<String>,
    /// Only requests opened before this sequence: the previous page's `nextBefore`.
    #[param(minimum = 1)]
    before: Option<i64>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestList {
    permission_requests: Vec<PermissionRequest>,
    /// Where the next (older) page starts: pass it as `before`. A full page always names one;
    /// `null` once no older request can match. A page of a state other than `pending`, without a session, reads at most 5,000
    /// requests, so it may hold fewer than `limit` and still name one.
    next_before: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/permission-requests",
    tag = "approvals",
    params(ListQuery),
    responses(
        (status = 200, description = "Newest first.", body = RequestList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /permission-requests`: newest first, by state and session.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<RequestList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    if query.before.is_some_and(|b| b < 1) {
        return Err(ApiError::invalid("before must be a sequence (1 or more)"));
    }
    let select = Select {
        state: check_state::<RequestState>(query.state.as_deref())?,
        session: query.session,
        before: query.before,
    };
    let page = state
        .store
        .read(move |conn| permissions::list(conn, &select, limit))
        .await?;
    Ok(Json(RequestList {
        permission_requests: page.permission_requests,
        next_before: page.next_before,
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OneQuery {
    /// Seconds to wait, while the request is pending, for it to be settled (0 to 600; 0 answers
    /// at once).
    #[param(minimum = 0, maximum = 600)]
    #[serde(default)]
    wait: u64,
}

#[utoipa::path(
    get,
    path = "/permission-requests/{id}",
    tag = "approvals",
    params(("id" = String, Path, description = "The request id."), OneQuery),
    responses(
        (status = 200, description = "The request: at once, or (with `wait`) once it is settled or the wait is over.", body = PermissionRequest),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /permission-requests/{id}?wait=`: the request, once it is settled or `wait` seconds
/// have passed, whichever comes first. The hook that delivered the request waits on this.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<OneQuery>,
) -> Result<Json<PermissionRequest>, ApiError> {
    if query.wait > MAX_WAIT_SECONDS {
        return Err(ApiError::invalid(format!(
            "wait must be between 0 and {MAX_WAIT_SECONDS}"
        )));
    }
    let request = settled_within(&state, &id, Duration::from_secs(query.wait)).await?;
    request.map(Json).ok_or(ApiError::NotFound { path: None })
}

/// The request once it is no longer pending, or as it is when `wait` is over (or hooklog
/// starts shutting down); `None` if there is no such request.
pub async fn settled_within(
    state: &AppState,
    id: &str,
    wait: Duration,
) -> Result<Option<PermissionRequest>, ApiError> {
    let deadline = tokio::time::Instant::now() + wait;
    // Subscribed before the first read: a decision committed between the two is seen.
    let mut hub = Hub::subscribe(&state.hub);
    let mut shutdown = state.shutdown.clone();
    loop {
        let id = id.to_string();
        let request = state
            .store
            .read(move |conn| permissions::get(conn, &id))
            .await?;
        let request = match request {
            Some(r) if r.state == RequestState::Pending => r,
            settled_or_unknown => return Ok(settled_or_unknown),
        };
        // Wait for an event of the request's session: a decision or an expiry is appended in
        // it, and its hook events are what answer it elsewhere.
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return Ok(Some(request)),
                _ = shutdown.wait_for(|stopping| *stopping) => return Ok(Some(request)),
                group = hub.recv() => match group {
                    Ok(group) if !group.events.iter().any(|c| {
                        c.event.session_id.as_deref() == Some(request.session_id.as_str())
                    }) => continue,
                    Err(RecvError::Closed) => return Ok(Some(request)),
                    // The session's event, or a lag that may have hidden one: read again.
                    _ => break,
                }
            }
        }
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResponseBody {
    /// The request's id (`requestId` of `GET /permission-requests`).
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    request_id: String,
    /// `false` denies; anything else (or nothing) allows, as seed 000 reads it.
    #[serde(default)]
    approved: Option<bool>,
    /// Given to the agent with a deny (at most 2,000 characters).
    #[schema(max_length = 2000)]
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanBody {
    /// The plan's request id (an `ExitPlanMode` request of `GET /permission-requests`).
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    plan_id: String,
    #[serde(default)]
    approved: Option<bool>,
    #[schema(max_length = 2000)]
    #[serde(default)]
    message: Option<String>,
}

#[utoipa::path(
    post,
    path = "/permission-response",
    tag = "approvals",
    request_body(content = ResponseBody),
    responses(
        (status = 200, description = "`resolved: true` if this decision settled the request; `false` if another came first, it was answered elsewhere, expired, or is unknown.", body = Answer),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 403, description = "A browser request from another site.", body = schemas::ErrorBody)
    )
)]
/// `POST /permission-response`: allow or deny a pending request (seed 000).
pub async fn respond(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Answer>, ApiError> {
    let b: ResponseBody = decide::body(&state, body, None)?;
    let by = decider(caller, &headers)?;
    // Seed 000: approval unless explicitly `false`.
    let approved = b.approved != Some(false);
    let decide = decision(b.request_id, approved, b.message, by, false)?;
    run(&state, Command::DecidePermission(decide)).await
}

#[utoipa::path(
    post,
    path = "/plan/approve",
    tag = "approvals",
    request_body(content = PlanBody),
    responses(
        (status = 200, description = "As `POST /permission-response`, for an `ExitPlanMode` request only (`resolved: false` for any other).", body = Answer),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 403, description = "A browser request from another site.", body = schemas::ErrorBody)
    )
)]
/// `POST /plan/approve`: approve or reject a plan (seed 000), an `ExitPlanMode` request.
pub async fn approve_plan(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Answer>, ApiError> {
    let b: PlanBody = decide::body(&state, body, None)?;
    let by = decider(caller, &headers)?;
    let approved = b.approved != Some(false);
    let decide = decision(b.plan_id, approved, b.message, by, true)?;
    run(&state, Command::DecidePermission(decide)).await
}

#[utoipa::path(
    post,
    path = "/permission-requests/{id}/expire",
    tag = "approvals",
    params(("id" = String, Path, description = "The request id.")),
    responses(
        (status = 200, description = "`resolved: true` if the request was pending and is now `expired`; otherwise the request as it was settled (a decision that came first is in it).", body = Answer)
    )
)]
/// `POST /permission-requests/{id}/expire`: the waiting hook's time is up.
pub async fn expire(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Answer>, ApiError> {
    // Any id: one that names no request is answered `resolved: false`.
    run(&state, Command::ExpirePermission { request_id: id }).await
}

/// A decision as every route takes it (HTTP, the WebSocket): the request named as any id is
/// (1 to 256 characters, no control character), a message of at most 2,000 characters (a
/// blank one is none).
pub fn decision(
    request_id: String,
    approved: bool,
    message: Option<String>,
    by: Decider,
    plan_only: bool,
) -> Result<Decide, ApiError> {
    let message = match message.filter(|m| !m.trim().is_empty()) {
        Some(m) if m.chars().count() > MESSAGE_CHARS => {
            return Err(ApiError::invalid(format!(
                "message must be at most {MESSAGE_CHARS} characters"
            )));
        }
        other => other,
    };
    Ok(Decide {
        request_id: decide::name("requestId", request_id)?,
        approved,
        message,
        by,
        plan_only,
    })
}

/// Who decides, for the record: `web` for the board (its login, or a same-origin page when no
/// token is configured), `api` for anything else. A page of another site never decides: the
/// `Origin` check refuses it, and a browser's `Sec-Fetch-Site` is checked here too.
fn decider(caller: Option<Extension<Caller>>, headers: &HeaderMap) -> Result<Decider, ApiError> {
    let site = headers
        .get("sec-fetch-site")
        .map(|v| v.to_str().unwrap_or("cross-site"));
    if matches!(site, Some(s) if s != "same-origin" && s != "none") {
        return Err(ApiError::OriginNotAllowed);
    }
    Ok(match caller.map(|Extension(c)| c) {
        Some(Caller::Login) => Decider::Web,
        Some(Caller::Token) => Decider::Api,
        _ if site == Some("same-origin") => Decider::Web,
        _ => Decider::Api,
    })
}

async fn run(state: &AppState, command: Command) -> Result<Json<Answer>, ApiError> {
    let decided = state.store.writer.decide(command).await?;
    match decided.verdict {
        Verdict::Done(outcome) => match *outcome {
            Outcome::Permission(answer) => Ok(Json(answer)),
            _ => Err(ApiError::Internal(
                "a permission command answered with another outcome".into(),
            )),
        },
        _ => Err(ApiError::Internal(
            "a permission command is never refused or not found".into(),
        )),
    }
}

fn request_states() -> utoipa::openapi::schema::Object {
    schemas::one_of(RequestState::NAMES)
}
