//! The hook routes: `POST /event` (seed 000's tolerant hook ingest) and `POST /event/normalized`
//! (seed 001). Each takes one event per request and answers in its seed's own shape.

use super::AppState;
use super::error::{ApiError, Refused};
use super::guard::{self, Arrived};
use crate::coordination::{Command, Outcome, Verdict};
use crate::http::openapi::schemas;
use crate::http::permissions;
use crate::ingest::normalized::{self, NormalizedError};
use crate::ingest::{self, InvalidRequest, hook};
use crate::projection::heroes;
use crate::projection::permissions::{self as permission_requests, RequestState};
use crate::projection::view::View;
use crate::store::Appended;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::{Duration, Instant};

/// A producer's idempotency key: the same key is stored once, however often it is posted.
pub const EVENT_ID_HEADER: &str = "x-hooklog-event-id";
/// When a `/event` body happened, as its producer saw it (RFC 3339). A forwarder that delivers
/// an event late, from its spool, sends the time it captured it; without it the event's time is
/// the time it was received. (`/event/normalized` bodies carry their own `timestamp`.)
pub const EVENT_TIME_HEADER: &str = "x-hooklog-event-time";
/// Where `/event/normalized` (whose body is the seed's `{"ok":true}`) says what it stored.
pub const SEQUENCE_HEADER: &str = "x-hooklog-sequence";

/// `/event`'s refusals, whoever answered them (a guard, the method fallback, the handler): the
/// shared envelope with `accepted: false`, as seed 000 gives every one of them. A layer on that
/// route only (`http::router`).
pub async fn reshape(response: Response) -> Response {
    let Some(Refused(mut body)) = response.extensions().get::<Refused>().cloned() else {
        return response;
    };
    body["accepted"] = json!(false);
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    let bytes = serde_json::to_vec(&body).expect("an envelope serializes");
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventQuery {
    /// The cli to record when the body names none (`/event?cli=codex-cli` in a hook's URL).
    cli: Option<String>,
    /// How a stored event is answered; seed 000's `{accepted, heroId, missionId}` by default.
    #[serde(default)]
    reply: Reply,
    /// For a `PermissionRequest` (Claude Code's HTTP hook): wait up to this many seconds (1 to
    /// 600) for a decision, and answer with it as the hook's output JSON; with none by then, the
    /// request expires and the answer is empty (no verdict: the agent asks in its terminal).
    /// Other events are answered at once, as `reply` says.
    #[param(minimum = 1, maximum = 600)]
    wait: Option<u64>,
}

/// The answer to a stored `/event`.
#[derive(Deserialize, Default, Clone, Copy, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Reply {
    /// Seed 000's JSON body.
    #[default]
    Seed,
    /// `200` with an empty body, which Claude Code's HTTP hooks read as plain success (a JSON
    /// body would be read, and validated, as the hook's output). What was stored is in the
    /// `X-Hooklog-Event-Id` and `X-Hooklog-Sequence` headers. Refusals keep their JSON body
    /// and status: any non-2xx is a non-blocking error to Claude Code.
    Empty,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    hero_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mission_id: Option<String>,
    /// The permission request the event opened (a `PermissionRequest`): its id is the event's.
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<String>,
    event_id: String,
    sequence: i64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    duplicate: bool,
}

#[utoipa::path(
    post,
    path = "/event",
    tag = "hooks",
    params(EventQuery),
    request_body(content = schemas::HookBody, description = "One hook input, as the agent sends it."),
    responses(
        (status = 200, description = "Stored: seed 000's answer; with `?reply=empty`, an empty text/plain body and the X-Hooklog-Event-Id and X-Hooklog-Sequence headers.", content((Accepted = "application/json"), (String = "text/plain"))),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 409, description = "The X-Hooklog-Event-Id names an event stored with other content.", body = schemas::ErrorBody)
    )
)]
/// `POST /event`: one hook body, stored as one canonical event (source `hook`).
pub async fn event(
    State(state): State<AppState>,
    stamp: Option<Extension<Arrived>>,
    headers: HeaderMap,
    query: Result<Query<EventQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(ApiError::from)?;
    let body = body.map_err(|r| ApiError::from_body(r, state.config.body_limit))?;
    let id = given_event_id(&headers)?;
    let time = given_event_time(&headers)?;
    let mut parsed = hook::parse(&body, query.cli.as_deref(), id)?;
    parsed.event.event_time = time;
    if let Some(alias) = parsed.hero_alias.take() {
        // A hero id names its session; anything else given as `heroId` is a session id (the
        // seed accepts a session id there too).
        let hero = alias.clone();
        let session = state
            .store
            .read(move |conn| heroes::get(conn, &hero))
            .await?
            .map_or(alias, |h| h.hero.session_id);
        parsed.event.session_id = Some(session);
    }
    let wait = match query.wait {
        Some(seconds @ 1..=permissions::MAX_WAIT_SECONDS) => Some(Duration::from_secs(seconds)),
        Some(_) => {
            let message = format!(
                "wait must be between 1 and {}",
                permissions::MAX_WAIT_SECONDS
            );
            return Err(ApiError::invalid(message));
        }
        None => None,
    };
    let view = View::parse(&parsed.event.payload);
    let asks = permission_requests::opens(&parsed.event.event_type, &view).is_some();
    if let (true, Some(wait)) = (asks, wait) {
        // This answer is the hook that waits: the request says so, and for how long.
        let mut fields = view.fields().clone();
        fields.insert(
            permission_requests::WAIT_FIELD.into(),
            wait.as_secs().into(),
        );
        parsed.event.payload = serde_json::Value::Object(fields).to_string();
    }
    let appended = append_one(&state, parsed.event, guard::arrived(stamp)).await?;
    if let (true, Some(wait)) = (asks, wait) {
        return decision(&state, &appended, wait).await;
    }
    if query.reply == Reply::Empty {
        // Empty, but typed: a client (or a checker) must not have to guess what no body is.
        let empty = [(header::CONTENT_TYPE, "text/plain; charset=utf-8")];
        return Ok(stored_headers((empty, "").into_response(), &appended));
    }
    Ok(Json(Accepted {
        accepted: true,
        hero_id: appended.effects.hero_id,
        mission_id: appended.effects.mission_id,
        request_id: asks.then(|| appended.id.clone()),
        event_id: appended.id,
        sequence: appended.sequence,
        duplicate: appended.duplicate,
    })
    .into_response())
}

/// The answer to a `PermissionRequest` posted with `?wait=`: the decision as the hook's output
/// JSON once one is made; none by the end of the wait, the request expires (unless a decision
/// beats the expiry in the writer) and the answer is empty.
async fn decision(
    state: &AppState,
    appended: &Appended,
    wait: Duration,
) -> Result<Response, ApiError> {
    let id = &appended.id;
    let mut request = permissions::settled_within(state, id, wait).await?;
    if request
        .as_ref()
        .is_some_and(|r| r.state == RequestState::Pending)
    {
        let expire = Command::ExpirePermission {
            request_id: id.clone(),
        };
        if let Verdict::Done(outcome) = state.store.writer.decide(expire).await?.verdict
            && let Outcome::Permission(answer) = *outcome
        {
            request = answer.request;
        }
    }
    let response = match request.and_then(|r| r.hook_output()) {
        Some(output) => Json(output).into_response(),
        None => ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "").into_response(),
    };
    Ok(stored_headers(response, appended))
}

/// `response` with the stored event's id and sequence in its headers.
fn stored_headers(mut response: Response, appended: &Appended) -> Response {
    let headers = response.headers_mut();
    if let Ok(id) = HeaderValue::from_str(&appended.id) {
        headers.insert(EVENT_ID_HEADER, id);
    }
    headers.insert(SEQUENCE_HEADER, HeaderValue::from(appended.sequence));
    response
}

#[utoipa::path(
    post,
    path = "/event/normalized",
    tag = "hooks",
    request_body(content = schemas::NormalizedBody),
    responses(
        (status = 200, description = "Stored; the event id and sequence are in the X-Hooklog-Event-Id and X-Hooklog-Sequence headers.", body = schemas::Ok),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `POST /event/normalized`: one of seed 001's events, answered `{"ok":true}`, or with the
/// seed's error bodies (`{"error":"..."}`) whatever went wrong. Which event was stored is in
/// the response headers.
pub async fn normalized(
    State(state): State<AppState>,
    stamp: Option<Extension<Arrived>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match store_normalized(&state, &headers, body, guard::arrived(stamp)).await {
        Ok(response) => response,
        Err(e) => seed_error(e),
    }
}

async fn store_normalized(
    state: &AppState,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    arrived: Option<Instant>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|r| ApiError::from_body(r, state.config.body_limit))?;
    // The body is judged first, so a bad body gets the seed's answer whatever the headers.
    let given = given_event_id(headers);
    let mut event = match normalized::parse(&body, (String::new(), true)) {
        Ok(event) => event,
        Err(e) => return Ok(refused(&e)),
    };
    (event.event_id, event.generated_id) = ingest::event_id(given?)?;
    let appended = append_one(state, event, arrived).await?;
    let response = Json(json!({ "ok": true })).into_response();
    Ok(stored_headers(response, &appended))
}

fn refused(error: &NormalizedError) -> Response {
    let mut body = json!({ "error": error.to_string() });
    if let Some(field) = error.field() {
        body["field"] = json!(field);
    }
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

/// Seed 001 knows one body for a failure on its side, `500 {"error":"Internal server
/// error"}`; a body too large or too slow, or a bad idempotency header, keep their status with
/// a body of the same shape. A database that refuses the write (disk full, read-only) is not
/// a failure of hooklog's: it is the shared `503` with the seed's body shape
/// (`{"error":"storage_unavailable"}`), so a producer can tell "retry later" from a bug.
fn seed_error(error: ApiError) -> Response {
    let retry_after = error.retry_after();
    let (status, message) = match error {
        ApiError::Invalid(e) => (StatusCode::BAD_REQUEST, e.message),
        ApiError::PayloadTooLarge { .. } => {
            (StatusCode::PAYLOAD_TOO_LARGE, "Payload too large".into())
        }
        ApiError::BodyTimeout => (StatusCode::REQUEST_TIMEOUT, "Request timeout".into()),
        ApiError::StorageUnavailable(cause) => {
            tracing::error!(%cause, "storage unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "storage_unavailable".into(),
            )
        }
        ApiError::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, "shutting_down".into()),
        ApiError::Overloaded(_) => (StatusCode::SERVICE_UNAVAILABLE, "overloaded".into()),
        // The producer's idempotency key names another event: its fault, not a failure here.
        ApiError::Conflict { message, .. } => (StatusCode::CONFLICT, message),
        other => {
            tracing::error!(error = %other, "a normalized event could not be stored");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal server error".into(),
            )
        }
    };
    super::error::answer(status, json!({ "error": message }), retry_after)
}

fn given_event_id(headers: &HeaderMap) -> Result<Option<String>, InvalidRequest> {
    let Some(value) = headers.get(EVENT_ID_HEADER) else {
        return Ok(None);
    };
    let id = value.to_str().map_err(|_| {
        InvalidRequest::new(
            format!("{EVENT_ID_HEADER} must be visible ASCII"),
            json!({ "header": EVENT_ID_HEADER }),
        )
    })?;
    ingest::check_id(EVENT_ID_HEADER, id, ingest::MAX_EVENT_ID_CHARS)?;
    Ok(Some(id.to_string()))
}

fn given_event_time(headers: &HeaderMap) -> Result<Option<String>, InvalidRequest> {
    let Some(value) = headers.get(EVENT_TIME_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(crate::event::time::normalize)
        .map(Some)
        .ok_or_else(|| {
            InvalidRequest::new(
                format!("{EVENT_TIME_HEADER} must be an RFC 3339 timestamp"),
                json!({ "field": EVENT_TIME_HEADER }),
            )
        })
}

async fn append_one(
    state: &AppState,
    event: crate::event::NewEvent,
    arrived: Option<Instant>,
) -> Result<Appended, ApiError> {
    let mut appended = state
        .store
        .writer
        .append_arrived(vec![event], arrived)
        .await?;
    Ok(appended.remove(0))
}
