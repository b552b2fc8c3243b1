//! `/factory-sessions/{session_id}`: seed 003's Agent Factory sessions. `POST .../events`
//! appends `FactoryEvent` envelopes; `GET .../events` is the session's stream (the one of
//! `/sessions/{id}/events`, its history in tick order) with `event: FactoryEvent` frames and
//! the seed's identity headers, or its JSON reconnect probe when `Accept` names JSON;
//! `GET /factory-sessions/{id}` (with the identity set), `.../work` and `.../dispatches` read
//! the factory projections.

use super::AppState;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use super::handshake::{StreamIdentity, identity, probe_failed, wants_probe};
use super::streams::{self, Order, StreamQuery, Style};
use crate::http::openapi::schemas;
use crate::ingest::{self, body::is_ndjson, factory};
use crate::projection::factory as projection;
use crate::store::Appended;
use crate::stream::scope::Scope;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn session_id(id: String) -> Result<String, ApiError> {
    ingest::check_id("session_id", &id, ingest::canonical::MAX_SESSION_ID_CHARS)?;
    Ok(id)
}

/// What both factory `POST` routes take: the route's session id (checked), the body (within the
/// body limit) and whether it is NDJSON.
pub(super) fn envelopes(
    state: &AppState,
    id: String,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(String, Bytes, bool), ApiError> {
    let id = session_id(id)?;
    let body = body.map_err(|r| ApiError::from_body(r, state.config.body_limit))?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    Ok((id, body, is_ndjson(content_type)))
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = FactoryIngested)]
pub struct Ingested {
    #[schema(value_type = Vec<schemas::Position>)]
    events: Vec<Appended>,
}

#[utoipa::path(
    post,
    path = "/factory-sessions/{id}/events",
    tag = "factory",
    params(("id" = String, Path, description = "The factory session id.")),
    request_body(content((schemas::FactoryEventsBody = "application/json"), (String = "application/x-ndjson"))),
    responses(
        (status = 200, description = "Stored, after the commit.", body = Ingested),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 409, description = "An event id already stored with other content; nothing from the request was stored.", body = schemas::ErrorBody)
    )
)]
/// `POST /factory-sessions/{session_id}/events`: envelopes, all stored or none.
pub async fn ingest(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Ingested>, ApiError> {
    let (id, body, ndjson) = envelopes(&state, id, &headers, body)?;
    let events = factory::parse(&body, ndjson, &id)?;
    let events = state.store.writer.append(events).await?;
    Ok(Json(Ingested { events }))
}

#[utoipa::path(
    get,
    path = "/factory-sessions/{id}/events",
    tag = "factory",
    params(("id" = String, Path, description = "The factory session id."), StreamQuery),
    responses(
        (status = 200, description = "`event: FactoryEvent` frames, history in tick order then live; with `Accept: application/json` the reconnect probe.", content((Object = "application/json"), (String = "text/event-stream"))),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /factory-sessions/{session_id}/events`: the stream, or the reconnect probe.
pub async fn stream(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let cursor = query.cursor(&headers)?;
    let scope = Scope::Session(id.clone());
    let style = Style {
        frame_event: Some("FactoryEvent"),
        headers: identity(&state, &id),
        order: Order::Ticks,
    };
    if wants_probe(&headers) {
        return Ok(match streams::resolve(&state, &scope, &cursor).await {
            Ok(resolution) => {
                streams::probe(&state, &id, resolution, &style, Some("factorySessionId"))
            }
            Err(e) => probe_failed(&state, &id, &e),
        });
    }
    let resolution = streams::resolve(&state, &scope, &cursor).await?;
    streams::open(state, scope, resolution, style)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FactorySession {
    session_id: String,
    /// The durable lifecycle status (`QUEUED`, `RUNNING`, `PAUSED`, `SUCCEEDED`, ...).
    status: Option<String>,
    /// The shared session state (`active`, `idle`, `ended`, ...).
    state: String,
    result_status: Option<String>,
    run_requested_at: Option<String>,
    started_at: Option<String>,
    paused_at: Option<String>,
    resumed_at: Option<String>,
    completed_at: Option<String>,
    run_responded_at: Option<String>,
    event_count: i64,
    first_sequence: i64,
    last_sequence: i64,
    work: Map<String, Value>,
    dispatches: Map<String, Value>,
    /// What the stream's `X-Factory-Session-*` headers say, to compare them with.
    stream_identity: Option<StreamIdentity>,
}

#[utoipa::path(
    get,
    path = "/factory-sessions/{id}",
    tag = "factory",
    params(("id" = String, Path, description = "The factory session id.")),
    responses(
        (status = 200, description = "The factory session, with its stream identity.", body = schemas::Row),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /factory-sessions/{session_id}`: lifecycle, counts and the stream identity (also as
/// headers), or 404.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<(HeaderMap, Json<FactorySession>), ApiError> {
    let identity = StreamIdentity::of(&state, &id);
    let mut session = read_session(&state, id).await?;
    session.stream_identity = Some(identity.clone());
    Ok((identity.headers(), Json(session)))
}

async fn read_session(state: &AppState, id: String) -> Result<FactorySession, ApiError> {
    state
        .store
        .read(move |conn| {
            let row = conn
                .prepare_cached(
                    "SELECT factory_status, state, result_status, run_requested_at, started_at,
                            paused_at, resumed_at, completed_at, run_responded_at, event_count,
                            first_sequence, last_sequence
                     FROM sessions WHERE id = ?1",
                )?
                .query_row([&id], |r| {
                    Ok(FactorySession {
                        session_id: id.clone(),
                        status: r.get(0)?,
                        state: r.get(1)?,
                        result_status: r.get(2)?,
                        run_requested_at: r.get(3)?,
                        started_at: r.get(4)?,
                        paused_at: r.get(5)?,
                        resumed_at: r.get(6)?,
                        completed_at: r.get(7)?,
                        run_responded_at: r.get(8)?,
                        event_count: r.get(9)?,
                        first_sequence: r.get(10)?,
                        last_sequence: r.get(11)?,
                        work: Map::new(),
                        dispatches: Map::new(),
                        stream_identity: None,
                    })
                })
                .optional()?;
            let Some(mut session) = row else {
                return Ok(None);
            };
            session.work = projection::counts(conn, "factory_work", &id)?;
            session.dispatches = projection::counts(conn, "factory_dispatches", &id)?;
            Ok(Some(session))
        })
        .await?
        .ok_or(ApiError::NotFound { path: None })
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct WorkList {
    #[schema(value_type = Vec<schemas::Row>)]
    work: Vec<projection::Work>,
}

#[utoipa::path(
    get,
    path = "/factory-sessions/{id}/work",
    tag = "factory",
    params(("id" = String, Path, description = "The factory session id."), ListQuery),
    responses(
        (status = 200, description = "Its work items, in the order they entered.", body = WorkList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /factory-sessions/{session_id}/work`: its work items, in the order they entered.
pub async fn work(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<WorkList>, ApiError> {
    let limit = page_limit_or(query.limit, super::events::MAX_PAGE)?;
    let work = state
        .store
        .read(move |conn| projection::work(conn, &id, limit))
        .await?;
    Ok(Json(WorkList { work }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct DispatchList {
    #[schema(value_type = Vec<schemas::Row>)]
    dispatches: Vec<projection::Dispatch>,
}

#[utoipa::path(
    get,
    path = "/factory-sessions/{id}/dispatches",
    tag = "factory",
    params(("id" = String, Path, description = "The factory session id."), ListQuery),
    responses(
        (status = 200, description = "Its dispatches.", body = DispatchList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /factory-sessions/{session_id}/dispatches`: its dispatches, in the order requested.
pub async fn dispatches(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<DispatchList>, ApiError> {
    let limit = page_limit_or(query.limit, super::events::MAX_PAGE)?;
    let dispatches = state
        .store
        .read(move |conn| projection::dispatches(conn, &id, limit))
        .await?;
    Ok(Json(DispatchList { dispatches }))
}
