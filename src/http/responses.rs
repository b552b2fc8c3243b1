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
use crate::ingest::{self, body::is_ndjson};
use crate::response::store::{self, Bounds};
use crate::response::{self, Envelope, Kind, Phase, Recorded};
use crate::store::StoreError;
use crate::stream::cursor::Cursor;
use crate::stream::responses::{FRAME_EVENT, follow};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::json;

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
    ingest::check_id("session_id", &id, ingest::canonical::MAX_SESSION_ID_CHARS)?;
    let body = body.map_err(|r| ApiError::from_body(r, state.config.body_limit))?;
    let ndjson = is_ndjson(
        headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    let records = ingest::response::parse(&body, ndjson, &id)?;
    let events = state.store.writer.respond(id, records).await?;
    Ok(Json(Ingested { events }))
}

/// Where a response stream starts.
enum Start {
    Ready(i64),
    /// The cursor is before the retained records: a `STREAM_GAP` first, then from `first`.
    Gap {
        after: i64,
        first: i64,
    },
    Stale,
}

struct Resolved {
    start: Start,
    bounds: Bounds,
    /// The session has events in the log or response events.
    known: bool,
}

/// Resolves the cursor against the session's response events in one read transaction.
fn resolve(
    conn: &rusqlite::Connection,
    session: &str,
    cursor: &Cursor,
) -> rusqlite::Result<Resolved> {
    let tx = conn.unchecked_transaction()?;
    let bounds = store::bounds(&tx, session)?;
    let named = match (
        &cursor.last_event_id,
        &cursor.after_event_id,
        cursor.after_sequence,
    ) {
        (Some(last), _, _) => match last.trim().parse::<i64>() {
            Ok(n) => Some(Some(n)),
            Err(_) => Some(store::sequence_of(&tx, session, last)?),
        },
        (None, Some(id), _) => Some(store::sequence_of(&tx, session, id)?),
        (None, None, Some(n)) => Some(Some(n)),
        (None, None, None) => None,
    };
    let oldest = (bounds.first_available_sequence - 1).max(0);
    let start = match named {
        Some(None) => Start::Stale,
        Some(Some(n)) if n > bounds.head_sequence || n < 0 => Start::Stale,
        Some(Some(n)) if n < oldest => Start::Gap {
            after: n,
            first: bounds.first_available_sequence,
        },
        Some(Some(n)) => Start::Ready(n),
        None if cursor.from_now => Start::Ready(bounds.head_sequence),
        None => Start::Ready(oldest),
    };
    let known = store::session_known(&tx, session)?;
    tx.finish()?;
    Ok(Resolved {
        start,
        bounds,
        known,
    })
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
        .read(move |conn| resolve(conn, &session, &cursor))
        .await
        .map_err(ApiError::from);
    if wants_probe(&headers) {
        return Ok(match resolved {
            Ok(resolved) => probe(&state, &id, &resolved),
            Err(e) => probe_failed(&state, &id, &e),
        });
    }
    let resolved = resolved?;
    let (after, gap) = match resolved.start {
        Start::Stale => return Ok(stale(&state, &id, resolved.bounds)),
        Start::Ready(after) => (after, None),
        Start::Gap { after, first } => (first - 1, Some(gap_frame(&id, after, first))),
    };
    let slot = streams::stream_slot(&state)?;
    let budget = (
        state.history_bytes.clone(),
        state.config.connections.page_bytes,
    );
    let records = follow(
        state.store.clone(),
        state.store.responses.clone(),
        id.clone(),
        after,
        budget,
    );
    let keepalive = state.config.keepalive;
    let mut shutdown = state.shutdown.clone();
    let body = async_stream::stream! {
        yield Ok::<Bytes, StoreError>(Bytes::from(format!("retry: {}\n\n", streams::RETRY.as_millis())));
        if let Some(gap) = gap {
            yield Ok(gap);
        }
        let mut records = std::pin::pin!(records);
        loop {
            match tokio::time::timeout(keepalive, records.next()).await {
                Ok(Some(Ok(frames))) => yield Ok(frames),
                Ok(Some(Err(e))) => {
                    tracing::warn!(error = %e, "response-event stream ended by a read error");
                    yield Err(e);
                    break;
                }
                Ok(None) => break,
                Err(_idle) => yield Ok(Bytes::from_static(b": keepalive\n\n")),
            }
        }
    }
    .take_until(Box::pin(async move {
        let _ = shutdown.wait_for(|stopping| *stopping).await;
    }));
    let mut response = streams::event_stream(body, slot);
    dress(&state, &id, response.headers_mut());
    Ok(response)
}

/// The `STREAM_GAP` record for a cursor at `after` when the oldest retained is `first`: a
/// whole `FactoryResponseEvent` with sequence 0, reserved for it.
pub fn gap_record(session: &str, after: i64, first: i64) -> Envelope {
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
        payload: json!({"fromSequence": after + 1, "toSequence": first - 1,
            "firstAvailableSequence": first}),
        dispatch_id: None,
        turn_id: None,
        item_id: None,
        parent_item_id: None,
        provider_session_ref: None,
    }
}

fn gap_frame(session: &str, after: i64, first: i64) -> Bytes {
    let data = serde_json::to_string(&gap_record(session, after, first)).expect("serialises");
    Bytes::from(format!("id: 0\nevent: {FRAME_EVENT}\ndata: {data}\n\n"))
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

fn probe(state: &AppState, session: &str, resolved: &Resolved) -> Response {
    let outcome = match resolved.start {
        _ if !resolved.known => Recovery::UnknownSession,
        Start::Stale => Recovery::CursorStale,
        Start::Ready(_) | Start::Gap { .. } => Recovery::StreamReady,
    };
    let stale = outcome == Recovery::CursorStale;
    let mut body = json!({
        "sessionId": session,
        "factorySessionId": session,
        "outcome": outcome,
        "retry": { "omitAfterEventId": stale, "omitAfterSequence": stale },
        "headSequence": resolved.bounds.head_sequence,
        "firstAvailableSequence": resolved.bounds.first_available_sequence,
        "streamGenerationId": state.store.generation_id,
    });
    if let Start::Gap { after, first } = resolved.start {
        body["gap"] = gap_record(session, after, first).payload;
    }
    let mut response = Json(body).into_response();
    dress(state, session, response.headers_mut());
    response
}
