//! `/sessions` and `/sessions/{id}`: the `sessions` projection (every session from any source).
//! A session's events, as a page or a stream, are in `streams.rs`.

use super::AppState;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use crate::http::openapi::schemas;
use crate::projection::cost::{self, Group};
use crate::projection::sessions::{self, Session, SessionState};
use crate::projection::usage;
use crate::states::Family;
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

/// Rows a projection list returns when no `limit` is given (seed 000's `/missions` default).
pub const DEFAULT_ROWS: u32 = 50;

/// The state a `state` filter names; one outside `S` is refused: a typo must not look like
/// "nothing matches".
pub fn check_state<S: Family>(state: Option<&str>) -> Result<Option<S>, ApiError> {
    match state {
        None => Ok(None),
        Some(s) => S::parse(s).map(Some).ok_or_else(|| {
            ApiError::invalid(format!("state must be one of {}", S::NAMES.join(", ")))
        }),
    }
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SessionsQuery {
    #[param(schema_with = session_states)]
    state: Option<String>,
    source: Option<String>,
    /// The app a hook server's envelope named (`source_app`).
    source_app: Option<String>,
    /// The hooklog that stored the session's first event.
    origin: Option<String>,
    /// Only sessions whose last event is before this sequence: the previous page's
    /// `nextBefore`.
    #[param(minimum = 1)]
    before: Option<i64>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    #[schema(value_type = Vec<schemas::Row>)]
    sessions: Vec<Session>,
    /// Where the next (less recently active) page starts: pass it as `before`. A full page
    /// always names one; `null` once no older session can match. A page filtered by anything but a live state reads at most
    /// 5,000 sessions, so it may hold fewer than `limit` and still name one.
    next_before: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/sessions",
    tag = "projections",
    params(SessionsQuery),
    responses(
        (status = 200, description = "Most recently active first.", body = SessionList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /sessions`: most recently active first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<SessionsQuery>,
) -> Result<Json<SessionList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    let wanted = check_state::<SessionState>(query.state.as_deref())?;
    if query.before.is_some_and(|b| b < 1) {
        return Err(ApiError::invalid("before must be a sequence, 1 or more"));
    }
    let page = state
        .store
        .read(move |conn| {
            let filter = sessions::ListFilter {
                state: wanted,
                source: query.source.as_deref(),
                source_app: query.source_app.as_deref(),
                origin: query.origin.as_deref(),
                before: query.before,
            };
            sessions::list(conn, &filter, limit)
        })
        .await?;
    Ok(Json(SessionList {
        sessions: page.sessions,
        next_before: page.next_before,
    }))
}

#[utoipa::path(
    get,
    path = "/sessions/{id}",
    tag = "projections",
    params(("id" = String, Path, description = "The session id.")),
    responses(
        (status = 200, description = "The session, with `usage`: its tokens and cost from transcripts (`null` when none were read).", body = schemas::Row),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /sessions/{id}`: the session's row, and its usage (`GET /usage?by=session`'s group).
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SessionWithUsage>, ApiError> {
    let (session, rows) = state
        .store
        .read(move |conn| {
            let filter = usage::Filter {
                session: Some(id.clone()),
                ..usage::Filter::default()
            };
            Ok((
                sessions::get(conn, &id)?,
                usage::totals(conn, usage::By::Session, &filter)?,
            ))
        })
        .await?;
    let session = session.ok_or(ApiError::NotFound { path: None })?;
    let (groups, _) = cost::groups(&rows, &state.config.prices);
    Ok(Json(SessionWithUsage {
        session,
        usage: groups.into_iter().next(),
    }))
}

/// A session as `GET /sessions/{id}` answers it.
#[derive(Serialize)]
pub struct SessionWithUsage {
    #[serde(flatten)]
    session: Session,
    usage: Option<Group>,
}

fn session_states() -> utoipa::openapi::schema::Object {
    schemas::one_of(SessionState::NAMES)
}
