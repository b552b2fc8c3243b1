//! A session as a recording: `GET /sessions/{id}/export` (NDJSON, one `hooklog.event.v1`
//! envelope per line, as `hooklog export` writes it) and `GET /sessions/{id}/replay?speed=`
//! (Server-Sent Events: the recorded session again, with its original spacing scaled).

use super::AppState;
use super::error::ApiError;
use super::extract::{ApiPath, ApiQuery};
use crate::event::StoredEvent;
use crate::http::openapi::schemas;
use crate::store::{Store, StoreError};
use crate::stream::frame;
use crate::stream::scope::{Budget, PAGE_BYTES, Scope};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures_util::StreamExt;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// Events read per page.
const PAGE: u32 = 500;
/// The longest pause a replay makes between two events, however far apart they were.
const MAX_PAUSE: Duration = Duration::from_secs(10);

/// A session's events, a page at a time, each page in one short read.
fn pages(
    store: Arc<Store>,
    session: String,
) -> impl futures_util::Stream<Item = Result<Vec<StoredEvent>, StoreError>> {
    async_stream::stream! {
        let mut after = 0;
        loop {
            let scope = Scope::Session(session.clone());
            let budget = Budget { events: PAGE, bytes: PAGE_BYTES };
            let page = match store.read(move |conn| scope.page(conn, after, budget)).await {
                Ok(page) => page.events,
                Err(e) => { yield Err(e); break; }
            };
            let Some(last) = page.last() else { break };
            after = last.session_sequence.unwrap_or(after + 1);
            yield Ok(page);
        }
    }
}

#[utoipa::path(
    get,
    path = "/sessions/{id}/export",
    tag = "recordings",
    params(("id" = String, Path, description = "The session id.")),
    responses(
        (status = 200, description = "The session as NDJSON, one envelope per line.", content_type = "application/x-ndjson", body = String),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /sessions/{id}/export`: the session's events as NDJSON, read a page at a time.
pub async fn export(
    State(state): State<AppState>,
    ApiPath(session): ApiPath<String>,
) -> Result<Response, ApiError> {
    let exists = {
        let session = session.clone();
        state
            .store
            .read(move |conn| Scope::Session(session).page(conn, 0, Budget::events(1)))
            .await?
    };
    if exists.events.is_empty() {
        return Err(ApiError::NotFound { path: None });
    }
    let body = pages(state.store.clone(), session).map(|page| {
        page.map(|page| {
            let mut chunk = String::new();
            for event in &page {
                event.write_record(&mut chunk);
                chunk.push('\n');
            }
            Bytes::from(chunk)
        })
    });
    let mut response = Response::new(Body::from_stream(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(response)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReplayQuery {
    /// How many times faster than recorded (default 1; 0.01 to 1000).
    #[param(minimum = 0.01, maximum = 1000.0)]
    speed: Option<f64>,
}

#[utoipa::path(
    get,
    path = "/sessions/{id}/replay",
    tag = "recordings",
    params(("id" = String, Path, description = "The session id."), ReplayQuery),
    responses(
        (status = 200, description = "The session re-emitted with its recorded spacing; ends after the last event.", content((String = "text/event-stream"))),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /sessions/{id}/replay?speed=10`: the session's recorded events as SSE frames (the
/// same frames as its live stream), spaced as their event times were, divided by `speed`
/// (a pause is at most 10 s). Ends after the last event.
pub async fn replay(
    State(state): State<AppState>,
    ApiPath(session): ApiPath<String>,
    ApiQuery(query): ApiQuery<ReplayQuery>,
) -> Result<Response, ApiError> {
    let speed = query.speed.unwrap_or(1.0);
    if !(0.01..=1000.0).contains(&speed) {
        return Err(ApiError::invalid("speed must be between 0.01 and 1000"));
    }
    let slot = super::streams::stream_slot(&state)?;
    let mut shutdown = state.shutdown.clone();
    let mut pages = Box::pin(pages(state.store.clone(), session));
    let body = async_stream::stream! {
        let mut previous: Option<chrono::DateTime<chrono::Utc>> = None;
        while let Some(page) = pages.next().await {
            let page = match page {
                Ok(page) => page,
                Err(e) => { yield Err::<Bytes, StoreError>(e); break; }
            };
            for event in page {
                let at = crate::event::time::parse(&event.event_time);
                if let (Some(before), Some(at)) = (previous, at) {
                    let gap = (at - before).to_std().unwrap_or_default().div_f64(speed);
                    tokio::time::sleep(gap.min(MAX_PAUSE)).await;
                }
                previous = at.or(previous);
                let position = event.session_sequence.unwrap_or(event.sequence);
                yield Ok(frame::one(position, &event.event_type, &event.envelope_json()));
            }
        }
    }
    .take_until(Box::pin(async move {
        let _ = shutdown.wait_for(|stopping| *stopping).await;
    }));
    Ok(super::streams::event_stream(body, slot))
}
