//! `/factory-sessions/{session_id}/response-events`: seed 003's ephemeral stream. `POST`
//! stores `FactoryResponseEvent`s (outside the log); `GET` streams them as SSE with the same
//! cursors, keepalive, identity headers and JSON probe as the session's canonical stream,
//! except that a cursor older than what is retained opens the stream anyway, with a
//! `STREAM_GAP` record (sequence 0) first that names what was lost.

use super::AppState;
use super::error::{ApiError, Recovery};
use super::extract::{ApiPath, ApiQuery};
use super::handshake::{identity, probe_failed, wants_probe};
use super::streams::{self, GENERATION_HEADER, StreamQuery};
use crate::event::time;
use crate::http::openapi::schemas;
use crate::ingest;
use crate::response::{self, Envelope, Kind, Phase, Recorded};
use crate::stream::cursor::{Pruned, Resolution};
use crate::stream::follower::follow;
use crate::stream::frame;
use crate::stream::responses::{self, FRAME_EVENT, Responses};
use crate::stream::scope::Bounds;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;
use std::sync::Arc;

#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ResponsesIngested)]
pub struct Ingested {
    #[schema(value_type = Vec<Object>)]
    events: Vec<Recorded>,
}

#[utoipa::path(
    post,
    path = "/factory-sessions/{id}/response-events",
    tag = "factory",
    params(("id" = String, Path, description = "The factory session id.")),
    request_body(content((schemas::ResponseEventsBody = "application/json"), (String = "application/x-ndjson"))),
    responses(
        (status = 200, description = "Stored (outside the log), after the commit.", body = Ingested),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `POST /factory-sessions/{session_id}/response-events`: all stored or none.
pub async fn ingest(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Ingested>, ApiError> {
    let (id, body, ndjson) = super::factory::envelopes(&state, id, &headers, body)?;
    let records = ingest::response::parse(&body, ndjson, &id)?;
    let events = state.store.writer.respond(id, records).await?;
    Ok(Json(Ingested { events }))
}

#[utoipa::path(
    get,
    path = "/factory-sessions/{id}/response-events",
    tag = "factory",
    params(("id" = String, Path, description = "The factory session id."), StreamQuery),
    responses(
        (status = 200, description = "`event: FactoryResponseEvent` frames; with `Accept: application/json` the reconnect probe.", content((Object = "application/json"), (String = "text/event-stream"))),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /factory-sessions/{session_id}/response-events`: the stream, or the probe.
pub async fn stream(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let cursor = query.cursor(&headers)?;
    let session = id.clone();
    let resolved = state
        .store
        .read(move |conn| responses::resolve(conn, &session, &cursor))
        .await
        .map_err(ApiError::from);
    if wants_probe(&headers) {
        return Ok(match resolved {
            Ok((resolution, known)) => probe(&state, &id, resolution, known),
            Err(e) => probe_failed(&state, &id, &e),
        });
    }
    let (resolution, _) = resolved?;
    let (after, pruned) = match resolution.opening(true) {
        Ok(opening) => opening,
        Err(bounds) => return Ok(stale(&state, &id, bounds)),
    };
    let source = Arc::new(Responses {
        hub: state.store.responses.clone(),
        session: id.clone(),
    });
    let history = streams::history(&state);
    let records = follow(source, state.store.clone(), after, history);
    let first = pruned.map(|pruned| gap_frame(&id, &pruned));
    let mut response = streams::respond(&state, first, records)?;
    dress(&state, &id, response.headers_mut());
    Ok(response)
}

/// The `STREAM_GAP` record for a cursor before the retained records: a whole
/// `FactoryResponseEvent` with sequence 0, reserved for it.
pub fn gap_record(session: &str, pruned: &Pruned) -> Envelope {
    let Pruned { after, first } = *pruned;
    Envelope {
        schema_version: response::SCHEMA_VERSION.to_string(),
        event_id: format!("stream-gap-{}-{}", after + 1, first - 1),
        sequence: 0,
        recorded_at: time::format(chrono::Utc::now()),
        factory_session_id: session.to_string(),
        run_id: String::new(),
        kind: Kind::StreamGap,
        phase: Phase::Updated,
        provenance: json!({"provider": "hooklog", "nativeEventType": "retention_gap",
            "delivery": "SYNTHESIZED", "representation": "NOTIFICATION", "fidelity": "LIFECYCLE_ONLY"}),
        payload: pruned.json(),
        dispatch_id: None,
        turn_id: None,
        item_id: None,
        parent_item_id: None,
        provider_session_ref: None,
    }
}

fn gap_frame(session: &str, pruned: &Pruned) -> Bytes {
    let data = serde_json::to_string(&gap_record(session, pruned)).expect("serialises");
    frame::one(0, FRAME_EVENT, &data)
}

/// The generation and identity headers every answer of the route carries.
fn dress(state: &AppState, session: &str, headers: &mut HeaderMap) {
    if let Ok(value) = HeaderValue::from_str(&state.store.generation_id) {
        headers.insert(GENERATION_HEADER, value);
    }
    headers.extend(identity(state, session));
}

fn stale(state: &AppState, session: &str, bounds: Bounds) -> Response {
    let mut response = ApiError::StaleCursor {
        message: "the cursor does not name a response event of this session; reconnect without it",
        first_available_sequence: bounds.first_available_sequence,
        head_sequence: bounds.head_sequence,
    }
    .into_response();
    dress(state, session, response.headers_mut());
    response
}

fn probe(state: &AppState, session: &str, resolution: Resolution, known: bool) -> Response {
    let outcome = match resolution {
        _ if !known => Recovery::UnknownSession,
        Resolution::Stale { .. } => Recovery::CursorStale,
        Resolution::Ready { .. } | Resolution::Behind { .. } => Recovery::StreamReady,
    };
    let stale = outcome == Recovery::CursorStale;
    let bounds = resolution.bounds();
    let mut body = json!({
        "sessionId": session,
        "factorySessionId": session,
        "outcome": outcome,
        "retry": { "omitAfterEventId": stale, "omitAfterSequence": stale },
        "headSequence": bounds.head_sequence,
        "firstAvailableSequence": bounds.first_available_sequence,
        "streamGenerationId": state.store.generation_id,
    });
    if let Ok((_, Some(pruned))) = resolution.opening(true) {
        body["gap"] = gap_record(session, &pruned).payload;
    }
    let mut response = Json(body).into_response();
    dress(state, session, response.headers_mut());
    response
}
