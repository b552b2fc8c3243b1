//! Server-Sent Events: `GET /sessions/{id}/events` (one session, ordered by `sessionSequence`)
//! and `GET /events` with `Accept: text/event-stream` (everything, ordered by `sequence`). With
//! `Accept: application/json` the session route is a reconnect probe instead.

use super::AppState;
use super::error::{ApiError, Recovery};
use super::extract::{ApiPath, ApiQuery};
use crate::http::openapi::schemas;
use crate::store::StoreError;
use crate::stream::FrameKind;
use crate::stream::cursor::{Cursor, Pruned, Resolution};
use crate::stream::events::Events;
use crate::stream::follower::{History, follow};
use crate::stream::frame;
use crate::stream::scope::{Bounds, Scope};
use crate::stream::ticks::follow_ticks;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;

pub const GENERATION_HEADER: &str = "x-hooklog-stream-generation-id";

/// How a route dresses its stream: the `event:` name of every frame (`None`: the event's type),
/// the identity headers on the stream, the probe and a stale-cursor refusal, and the order of
/// a session stream's history.
#[derive(Clone, Default)]
pub struct Style {
    pub frame_event: Option<&'static str>,
    pub headers: HeaderMap,
    pub order: Order,
}

/// The order a stream sends its history in.
#[derive(Clone, Copy, Default, PartialEq)]
pub enum Order {
    /// The log's order (its positions).
    #[default]
    Log,
    /// Ascending `context.tick`, ties in the log's order (seed 003's factory stream).
    Ticks,
}
/// The cursor parameters every stream route takes.
#[derive(Deserialize, Default, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    pub after_event_id: Option<String>,
    #[param(minimum = 0)]
    pub after_sequence: Option<i64>,
    /// `now`: live only.
    #[param(pattern = "^now$")]
    pub from: Option<String>,
}

impl StreamQuery {
    pub fn cursor(self, headers: &HeaderMap) -> Result<Cursor, ApiError> {
        let after_sequence = after_sequence(self.after_sequence)?;
        let from_now = match self.from.as_deref() {
            None => false,
            Some("now") => true,
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "from must be \"now\", not {other:?}"
                )));
            }
        };
        let last_event_id = last_event_id(headers)?;
        Ok(Cursor {
            last_event_id,
            after_event_id: self.after_event_id.filter(|v| !v.is_empty()),
            after_sequence,
            from_now,
        })
    }
}

/// What a route that answers a JSON page, or with `Accept: text/event-stream` a stream, was
/// asked for.
pub enum Asked {
    /// The stream, from this cursor (resolved against the route's scope).
    Stream(Resolution),
    /// A page after this sequence.
    Page { after: i64 },
}

impl StreamQuery {
    /// The stream's cursor, or the page's `after_sequence` (a page takes no other cursor).
    pub async fn asked(
        self,
        state: &AppState,
        scope: &Scope,
        headers: &HeaderMap,
    ) -> Result<Asked, ApiError> {
        if wants_event_stream(headers) {
            let cursor = self.cursor(headers)?;
            return Ok(Asked::Stream(resolve(state, scope, &cursor).await?));
        }
        if self.after_event_id.is_some() || self.from.is_some() {
            return Err(ApiError::invalid(
                "after_event_id and from are for streams (Accept: text/event-stream); pages use after_sequence",
            ));
        }
        let after = after_sequence(self.after_sequence)?.unwrap_or(0);
        Ok(Asked::Page { after })
    }
}

/// The `after_sequence` parameter, which streams and pages take alike: a position, `>= 0`.
pub fn after_sequence(value: Option<i64>) -> Result<Option<i64>, ApiError> {
    match value {
        Some(n) if n < 0 => Err(ApiError::invalid("after_sequence must be >= 0")),
        value => Ok(value),
    }
}

/// The `Last-Event-ID` header: the id as the UTF-8 its bytes are (an EventSource sends the id
/// it last saw that way, whatever its characters), `None` when absent or empty. A number there
/// is a position, and must be one (`>= 0`); bytes that are not UTF-8, or a negative position,
/// are refused: a cursor is honoured or refused, never ignored.
fn last_event_id(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let id = std::str::from_utf8(value.as_bytes())
        .map_err(|_| ApiError::invalid("Last-Event-ID must be UTF-8"))?
        .trim();
    if id.parse::<i64>().is_ok_and(|n| n < 0) {
        return Err(ApiError::invalid(
            "Last-Event-ID must be a position >= 0 or an event id",
        ));
    }
    Ok((!id.is_empty()).then(|| id.to_string()))
}

/// Whether the client asked for JSON rather than an event stream.
pub fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    accept.contains("application/json") && !accept.contains("text/event-stream")
}

pub fn wants_event_stream(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    accept.contains("text/event-stream")
}

#[utoipa::path(
    get,
    path = "/sessions/{id}/events",
    tag = "streams",
    params(("id" = String, Path, description = "The session id."), StreamQuery),
    responses(
        (status = 200, description = "The session's stream (history after the cursor, then live; frame ids are sessionSequence), or with `Accept: application/json` the reconnect probe.", content((Object = "application/json"), (String = "text/event-stream"))),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /sessions/{id}/events`.
pub async fn session(
    State(state): State<AppState>,
    ApiPath(session_id): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let cursor = query.cursor(&headers)?;
    let scope = Scope::Session(session_id.clone());
    let resolution = resolve(&state, &scope, &cursor).await?;
    if wants_json(&headers) {
        return Ok(probe(
            &state,
            &session_id,
            resolution,
            &Style::default(),
            None,
        ));
    }
    open(state, scope, resolution, Style::default())
}

/// Resolves a cursor on the reader pool.
pub async fn resolve(
    state: &AppState,
    scope: &Scope,
    cursor: &Cursor,
) -> Result<Resolution, ApiError> {
    let (scope, cursor) = (scope.clone(), cursor.clone());
    Ok(state
        .store
        .read(move |conn| cursor.resolve(conn, &scope))
        .await?)
}

/// Opens the event stream, or refuses a stale cursor with `400 invalid_cursor`. A global
/// stream whose cursor is before the retained history opens anyway, with a `STREAM_GAP` frame
/// first that names the pruned range.
pub fn open(
    state: AppState,
    scope: Scope,
    resolution: Resolution,
    style: Style,
) -> Result<Response, ApiError> {
    let reports_gaps = matches!(scope, Scope::Global(_));
    let (after, pruned) = match resolution.opening(reports_gaps) {
        Ok(opening) => opening,
        Err(bounds) => return Ok(stale(&state, bounds, &style)),
    };
    let kind = FrameKind {
        scope,
        frame_event: style.frame_event,
    };
    let history = history(&state);
    let (store, hub) = (state.store.clone(), state.hub.clone());
    let chunks: std::pin::Pin<Box<dyn futures_util::Stream<Item = _> + Send>> = match style.order {
        Order::Log => Box::pin(follow(
            Arc::new(Events { hub, kind }),
            store,
            after,
            history,
        )),
        Order::Ticks => Box::pin(follow_ticks(store, hub, kind, after, history)),
    };
    let first = pruned.map(|pruned| gap_frame(&pruned));
    let mut response = respond(&state, first, chunks)?;
    let headers = response.headers_mut();
    headers.insert(GENERATION_HEADER, generation(&state));
    headers.extend(style.headers);
    Ok(response)
}

/// The history budget every stream shares.
pub fn history(state: &AppState) -> History {
    History {
        permits: state.history_bytes.clone(),
        page_bytes: state.config.connections.page_bytes,
    }
}

/// The response of every SSE stream: it takes one of the `max_streams` slots (or answers
/// `503`), sends `retry:`, then `first` if given, then each chunk as it comes; an idle stretch
/// of `keepalive` becomes a keepalive comment. It ends with the chunks, at a read error, or
/// when hooklog stops.
pub fn respond<S>(state: &AppState, first: Option<Bytes>, chunks: S) -> Result<Response, ApiError>
where
    S: futures_util::Stream<Item = Result<Bytes, StoreError>> + Send + 'static,
{
    let slot = stream_slot(state)?;
    let mut shutdown = state.shutdown.clone();
    let keepalive = state.config.keepalive;
    let body = async_stream::stream! {
        yield Ok::<Bytes, StoreError>(frame::retry());
        if let Some(first) = first {
            yield Ok(first);
        }
        let mut chunks = std::pin::pin!(chunks);
        loop {
            match tokio::time::timeout(keepalive, chunks.next()).await {
                Ok(Some(Ok(chunk))) => yield Ok(chunk),
                Ok(Some(Err(e))) => {
                    tracing::warn!(error = %e, "a stream ended by a read error");
                    yield Err(e);
                    break;
                }
                Ok(None) => break,
                Err(_idle) => yield Ok(Bytes::from_static(frame::KEEPALIVE)),
            }
        }
    }
    .take_until(Box::pin(async move {
        let _ = shutdown.wait_for(|stopping| *stopping).await;
    }));
    Ok(event_stream(body, slot))
}

/// One of the `max_streams` slots, or `503 too_many_streams`. Taken before a stream starts;
/// handed to [`event_stream`], which holds it until the stream ends.
pub fn stream_slot(state: &AppState) -> Result<OwnedSemaphorePermit, ApiError> {
    state.stream_slots.clone().try_acquire_owned().map_err(|_| {
        tracing::warn!(
            limit = state.config.security.max_streams,
            "event stream refused: every stream slot is taken"
        );
        ApiError::TooManyStreams {
            limit: state.config.security.max_streams,
        }
    })
}

/// A `text/event-stream` response (not cached) around a stream of frames; `slot` is freed
/// when the body is dropped (the stream ended, or the client went away).
pub fn event_stream<S>(body: S, slot: OwnedSemaphorePermit) -> Response
where
    S: futures_util::Stream<Item = Result<Bytes, StoreError>> + Send + 'static,
{
    let body = body.map(move |frame| {
        let _held = &slot;
        frame
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The first frame of a global stream whose cursor was pruned: what was lost, and where the
/// stream resumes. Its id is 0, reserved for it: no event has sequence 0.
pub fn gap_frame(pruned: &Pruned) -> Bytes {
    let data = json!({
        "type": "STREAM_GAP",
        "fromSequence": pruned.after + 1,
        "toSequence": pruned.first - 1,
        "firstAvailableSequence": pruned.first,
    });
    frame::one(0, "STREAM_GAP", &data.to_string())
}

pub fn generation(state: &AppState) -> HeaderValue {
    HeaderValue::from_str(&state.store.generation_id).expect("the generation id is hex")
}

pub fn stale(state: &AppState, bounds: Bounds, style: &Style) -> Response {
    let mut response = ApiError::StaleCursor {
        message: "the cursor does not name a position in this stream's retained history; reconnect without it to replay from the start",
        first_available_sequence: bounds.first_available_sequence,
        head_sequence: bounds.head_sequence,
    }
    .into_response();
    let headers = response.headers_mut();
    headers.insert(GENERATION_HEADER, generation(state));
    headers.extend(style.headers.clone());
    response
}

/// The JSON reconnect probe (seed 003's `FactorySessionEventStreamRecovery`, with the bounds).
/// `id_field` adds the session id under another name too (`factorySessionId`).
pub fn probe(
    state: &AppState,
    session_id: &str,
    resolution: Resolution,
    style: &Style,
    id_field: Option<&str>,
) -> Response {
    let (outcome, bounds) = match resolution {
        Resolution::Stale { bounds }
        | Resolution::Behind { bounds, .. }
        | Resolution::Ready { bounds, .. }
            if bounds.head_sequence == 0 =>
        {
            (Recovery::UnknownSession, bounds)
        }
        Resolution::Stale { bounds } | Resolution::Behind { bounds, .. } => {
            (Recovery::CursorStale, bounds)
        }
        Resolution::Ready { bounds, .. } => (Recovery::StreamReady, bounds),
    };
    let stale = outcome == Recovery::CursorStale;
    let mut body = json!({
        "sessionId": session_id,
        "outcome": outcome,
        "retry": { "omitAfterEventId": stale, "omitAfterSequence": stale },
        "headSequence": bounds.head_sequence,
        "firstAvailableSequence": bounds.first_available_sequence,
        "streamGenerationId": state.store.generation_id,
    });
    if let Some(field) = id_field {
        body[field] = json!(session_id);
    }
    let mut response = Json(body).into_response();
    let headers = response.headers_mut();
    headers.insert(GENERATION_HEADER, generation(state));
    headers.extend(style.headers.clone());
    response
}
