//! `/heroes` and `/heroes/{id}`: one hero per agent session (seed 000).

use super::AppState;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use super::sessions::{DEFAULT_ROWS, check_state};
use crate::http::openapi::schemas;
use crate::projection::heroes::{self, HeroState, HeroView};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HeroesQuery {
    #[param(schema_with = hero_states)]
    state: Option<String>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct HeroList {
    #[schema(value_type = Vec<schemas::Row>)]
    heroes: Vec<HeroView>,
}

#[utoipa::path(
    get,
    path = "/heroes",
    tag = "projections",
    params(HeroesQuery),
    responses(
        (status = 200, description = "Most recently active first.", body = HeroList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /heroes`: most recently active first.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HeroesQuery>,
) -> Result<Json<HeroList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    let wanted = check_state::<HeroState>(query.state.as_deref())?;
    let heroes = state
        .store
        .read(move |conn| heroes::list(conn, wanted, limit))
        .await?;
    Ok(Json(HeroList { heroes }))
}

#[utoipa::path(
    get,
    path = "/heroes/{id}",
    tag = "projections",
    params(("id" = String, Path, description = "The hero id.")),
    responses(
        (status = 200, description = "The hero.", body = schemas::Row),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /heroes/{id}`: a hero, or `404 {error:"not_found"}`.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<HeroView>, ApiError> {
    state
        .store
        .read(move |conn| heroes::get(conn, &id))
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound { path: None })
}

fn hero_states() -> utoipa::openapi::schema::Object {
    schemas::one_of(HeroState::NAMES)
}
