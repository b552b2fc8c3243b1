//! `/heroes` and `/heroes/{id}`: one hero per agent session (seed 000).

use super::AppState;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use super::sessions::{DEFAULT_ROWS, check_state};
use crate::projection::heroes::{self, Hero};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

pub const HERO_STATES: &[&str] = &["idle", "active", "awaiting_input", "ended"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeroesQuery {
    state: Option<String>,
    limit: Option<u32>,
}

#[derive(Serialize)]
pub struct HeroList {
    heroes: Vec<Hero>,
}

/// `GET /heroes`: most recently active first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HeroesQuery>,
) -> Result<Json<HeroList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    check_state(query.state.as_deref(), HERO_STATES)?;
    let heroes = state
        .store
        .read(move |conn| heroes::list(conn, query.state.as_deref(), limit))
        .await?;
    Ok(Json(HeroList { heroes }))
}

/// `GET /heroes/{id}`: a hero, or `404 {error:"not_found"}`.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Hero>, ApiError> {
    state
        .store
        .read(move |conn| heroes::get(conn, &id))
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound { path: None })
}
