//! `/events`: canonical ingest (`POST`), a JSON page of the log (`GET`), one event by id.

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use super::guard::{self, Arrived};
use super::streams::{self, Asked, StreamQuery};
use crate::http::openapi::schemas;
use crate::ingest::{body::is_ndjson, canonical};
use crate::store::{Appended, read};
use crate::stream::scope::{Budget, Filter, PAGE_BYTES, Scope};
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

pub const DEFAULT_PAGE: u32 = 100;
pub const MAX_PAGE: u32 = 1000;

/// A page size from a `limit` query parameter: 100 when absent, 1 to 1,000 when given.
pub fn page_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    page_limit_or(limit, DEFAULT_PAGE)
}

/// A page size from a `limit` query parameter: `default` when absent, 1 to 1,000 when given.
pub fn page_limit_or(limit: Option<u32>, default: u32) -> Result<u32, ApiError> {
    let limit = limit.unwrap_or(default);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "limit must be between 1 and {MAX_PAGE}"
        )));
    }
    Ok(limit)
}

#[derive(Serialize)]
pub struct IngestResponse {
    events: Vec<Appended>,
}

#[utoipa::path(
    post,
    path = "/events",
    tag = "events",
    request_body(content((schemas::EventsBody = "application/json"), (String = "application/x-ndjson")), description = "One event, a JSON array (stored together or not at all), or NDJSON lines."),
    responses(
        (status = 200, description = "Stored (or already stored: `duplicate: true`), after the commit.", body = schemas::Positions),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody),
        (status = 409, description = "An event id already stored with other content; nothing from the request was stored.", body = schemas::ErrorBody)
    )
)]
/// `POST /events`: one event, a JSON array, or NDJSON. All stored, or none.
pub async fn ingest(
    State(state): State<AppState>,
    stamp: Option<Extension<Arrived>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<IngestResponse>, ApiError> {
    let body = body.map_err(|r| ApiError::from_body(r, state.config.body_limit))?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let events = canonical::parse(&body, is_ndjson(content_type))?;
    let count = events.len();
    let arrived = guard::arrived(stamp);
    let appended = state.store.writer.append_arrived(events, arrived).await?;
    tracing::debug!(count, "events appended");
    Ok(Json(IngestResponse { events: appended }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    #[param(minimum = 0)]
    after_sequence: Option<i64>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Only this session's events (`sessionId` is accepted too).
    #[serde(alias = "sessionId")]
    session: Option<String>,
    #[serde(rename = "type")]
    event_type: Option<String>,
    source: Option<String>,
    /// Only events first stored by this hooklog (`context.origin`).
    origin: Option<String>,
    #[param(ignore)] // For the stream only: described in the operation.
    after_event_id: Option<String>,
    #[param(ignore)]
    from: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    #[schema(value_type = Vec<schemas::Envelope>)]
    events: Vec<Box<RawValue>>,
    head_sequence: i64,
    /// The oldest sequence still retained: a cursor below `firstAvailableSequence - 1` means
    /// events in between were pruned.
    first_available_sequence: i64,
    /// The cursor for the next page: the last sequence returned, or the one asked for; for a
    /// filter on type, source or origin alone that did not fill the page, how far it looked
    /// (`headSequence` once it reached the head).
    next_after_sequence: i64,
}

/// The most events a page filtered by type, source or origin alone looks at (by sequence,
/// after its cursor).
pub const SCAN_WINDOW: i64 = 10_000;

#[utoipa::path(
    get,
    path = "/events",
    tag = "events",
    params(EventsQuery),
    responses(
        (status = 200, description = "A page of envelopes, or with `Accept: text/event-stream` the global stream (history after the cursor, then live).", content((Page = "application/json"), (String = "text/event-stream"))),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /events`: with `Accept: text/event-stream`, the global stream (history from a cursor,
/// then live); otherwise a JSON page of canonical envelopes. Both take `session`, `type`,
/// `source`, `origin` filters.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> Result<Response, ApiError> {
    let scope = Scope::Global(Filter {
        session: query.session,
        event_type: query.event_type,
        source: query.source,
        origin: query.origin,
    });
    let asked = StreamQuery {
        after_event_id: query.after_event_id,
        after_sequence: query.after_sequence,
        from: query.from,
    };
    let after = match asked.asked(&state, &scope, &headers).await? {
        Asked::Stream(resolution) => {
            return streams::open(state, scope, resolution, streams::Style::default());
        }
        Asked::Page { after } => after,
    };
    let limit = page_limit(query.limit)?;
    // A filter on the type, source or origin alone has no index: a page looks at no more than
    // SCAN_WINDOW events after its cursor (or after the pruned ones, for a cursor below them),
    // and says how far it looked.
    let windowed =
        matches!(&scope, Scope::Global(f) if f.session.is_none() && *f != Filter::default());
    let (page, bounds, through) = state
        .store
        .read(move |conn| {
            let tx = conn.unchecked_transaction()?;
            let bounds = Scope::Global(Filter::default()).bounds(&tx)?;
            let through = match windowed {
                true => after
                    .max(bounds.first_available_sequence - 1)
                    .saturating_add(SCAN_WINDOW),
                false => i64::MAX,
            };
            let budget = Budget {
                events: limit,
                bytes: PAGE_BYTES,
            };
            let page = scope.page_through(&tx, after, through, budget)?;
            tx.finish()?;
            Ok((page, bounds, through))
        })
        .await?;
    let events = page.events;
    let next = match events.last() {
        Some(last) if page.more => last.sequence,
        // A window read whole: the next match is after it.
        _ if through < i64::MAX => through.min(bounds.head_sequence).max(after),
        last => last.map_or(after, |e| e.sequence),
    };
    Ok(Json(Page {
        events: events.iter().map(|e| e.envelope_raw()).collect(),
        head_sequence: bounds.head_sequence,
        first_available_sequence: bounds.first_available_sequence,
        next_after_sequence: next,
    })
    .into_response())
}

#[utoipa::path(
    get,
    path = "/events/{id}",
    tag = "events",
    params(("id" = String, Path, description = "The event id.")),
    responses(
        (status = 200, description = "The event.", body = schemas::Envelope),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /events/{id}`: one envelope, or 404.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Box<RawValue>>, ApiError> {
    let event = state
        .store
        .read(move |conn| read::event_by_id(conn, &id))
        .await?;
    event
        .map(|e| Json(e.envelope_raw()))
        .ok_or(ApiError::NotFound { path: None })
}
