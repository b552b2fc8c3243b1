//! `GET /changes`: what each hook event changed in the heroes, missions and tool uses
//! (`agent_changes`), numbered by the log's sequence. A JSON page by default; with
//! `Accept: text/event-stream`, a stream that replays from a cursor and continues live, with the
//! same cursors, stale answers and `STREAM_GAP` as the global event stream.

use super::AppState;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::ApiQuery;
use super::streams::{self, Asked, StreamQuery, Style};
use crate::config::PAGE_BYTES;
use crate::http::openapi::schemas;
use crate::projection::changes::{self, Change};
use crate::stream::changes::Changes;
use crate::stream::cursor::Resolution;
use crate::stream::follower::follow;
use crate::stream::frame;
use crate::stream::scope::{Filter, Scope};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The SSE `event:` name of every change frame.
pub const FRAME_EVENT: &str = "changes";

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ChangesQuery {
    #[param(ignore)] // For the stream only: described in the operation.
    after_event_id: Option<String>,
    #[param(minimum = 0)]
    after_sequence: Option<i64>,
    #[param(ignore)]
    from: Option<String>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangePage {
    changes: Vec<Change>,
    head_sequence: i64,
    next_after_sequence: i64,
}

#[utoipa::path(
    get,
    path = "/changes",
    tag = "events",
    params(ChangesQuery),
    responses(
        (status = 200, description = "A page of changes, or with `Accept: text/event-stream` a stream of them.", content((Object = "application/json"), (String = "text/event-stream"))),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /changes`.
pub async fn changes(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<ChangesQuery>,
) -> Result<Response, ApiError> {
    let scope = Scope::Global(Filter::default());
    let asked = StreamQuery {
        after_event_id: query.after_event_id,
        after_sequence: query.after_sequence,
        from: query.from,
    };
    let after = match asked.asked(&state, &scope, &headers).await? {
        Asked::Stream(resolution) => return open(state, resolution),
        Asked::Page { after } => after,
    };
    let limit = page_limit_or(query.limit, 100)?;
    let page = state
        .store
        .read(move |conn| {
            let tx = conn.unchecked_transaction()?;
            let head = scope.bounds(&tx)?.head_sequence;
            let (changes, more) = changes::page(&tx, after, head, limit, PAGE_BYTES)?;
            tx.finish()?;
            // A short page saw every event up to the head; a full one, up to its last change.
            let next = match more {
                true => changes.last().map_or(after, |c| c.sequence),
                false => head.max(after),
            };
            Ok(ChangePage {
                changes,
                head_sequence: head,
                next_after_sequence: next,
            })
        })
        .await?;
    Ok(Json(page).into_response())
}

/// The stream, or the stale-cursor refusal.
fn open(state: AppState, resolution: Resolution) -> Result<Response, ApiError> {
    let (after, pruned) = match resolution.opening(true) {
        Ok(opening) => opening,
        Err(bounds) => return Ok(streams::stale(&state, bounds, &Style::default())),
    };
    let source = Arc::new(Changes {
        hub: state.hub.clone(),
    });
    let history = streams::history(&state);
    let pages = follow(source, state.store.clone(), after, history);
    let chunks = pages.map(|page| page.map(|page| frames(&page)));
    let first = pruned.map(|pruned| streams::gap_frame(&pruned));
    let mut response = streams::respond(&state, first, chunks)?;
    response
        .headers_mut()
        .insert(streams::GENERATION_HEADER, streams::generation(&state));
    Ok(response)
}

/// One frame per event: `id` its sequence, `data` the change.
fn frames(page: &[Change]) -> Bytes {
    let mut out = String::new();
    for change in page {
        frame::push(&mut out, change.sequence, FRAME_EVENT, &change.to_json());
    }
    Bytes::from(out)
}
