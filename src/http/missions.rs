//! `/missions`, `/missions/{id}` (with its tool uses and child missions) and `/tool-uses`.

use super::AppState;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiPath, ApiQuery};
use super::sessions::{DEFAULT_ROWS, check_state};
use crate::http::openapi::schemas;
use crate::projection::missions::{self, Mission, MissionFilter, MissionState};
use crate::projection::tool_uses::{self, ToolStatus, ToolUse, ToolUseFilter};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

/// The most tool uses and child missions `/missions/{id}` embeds.
const EMBEDDED_ROWS: u32 = 1000;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct MissionsQuery {
    #[param(schema_with = mission_states)]
    state: Option<String>,
    hero_id: Option<String>,
    /// Only this session's missions (`sessionId` is accepted too).
    #[serde(rename = "session", alias = "sessionId")]
    session_id: Option<String>,
    parent_mission_id: Option<String>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct MissionList {
    #[schema(value_type = Vec<schemas::Row>)]
    missions: Vec<Mission>,
}

#[utoipa::path(
    get,
    path = "/missions",
    tag = "projections",
    params(MissionsQuery),
    responses(
        (status = 200, description = "Missions.", body = MissionList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /missions`: most recently opened first; `limit` 50 by default, 1 to 1,000.
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<MissionsQuery>,
) -> Result<Json<MissionList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    let filter = MissionFilter {
        state: check_state(query.state.as_deref())?,
        hero_id: query.hero_id,
        session_id: query.session_id,
        parent_mission_id: query.parent_mission_id,
    };
    let missions = state
        .store
        .read(move |conn| missions::list(conn, &filter, limit))
        .await?;
    Ok(Json(MissionList { missions }))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MissionDetail {
    #[serde(flatten)]
    mission: Mission,
    tool_uses: Vec<ToolUse>,
    child_missions: Vec<Mission>,
}

#[utoipa::path(
    get,
    path = "/missions/{id}",
    tag = "projections",
    params(("id" = String, Path, description = "The mission id.")),
    responses(
        (status = 200, description = "The mission with its tool uses and child missions.", body = schemas::Row),
        (status = 404, description = "No such resource.", body = schemas::ErrorBody)
    )
)]
/// `GET /missions/{id}`: the mission, its tool uses in order, and its child missions.
pub async fn one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<MissionDetail>, ApiError> {
    let detail = state
        .store
        .read(move |conn| {
            let Some(mission) = missions::get(conn, &id)? else {
                return Ok(None);
            };
            let children = MissionFilter {
                parent_mission_id: Some(id.clone()),
                ..Default::default()
            };
            Ok(Some(MissionDetail {
                tool_uses: tool_uses::first_of_mission(conn, &mission, EMBEDDED_ROWS)?,
                child_missions: missions::list(conn, &children, EMBEDDED_ROWS)?,
                mission,
            }))
        })
        .await?;
    detail.map(Json).ok_or(ApiError::NotFound { path: None })
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ToolUsesQuery {
    mission_id: Option<String>,
    /// Only this session's tool uses (`sessionId` is accepted too).
    #[serde(rename = "session", alias = "sessionId")]
    session_id: Option<String>,
    #[param(schema_with = tool_use_states)]
    status: Option<String>,
    /// Only this kind of tool (`bash`, `file`, `search`, `web`, `subagent`, `mcp`, `input`,
    /// `permission`, `other`).
    kind: Option<String>,
    /// Only this tool, by the name the agent gave it (`Bash`, `apply_patch`, ...).
    tool: Option<String>,
    /// Only tool uses opened before this sequence: the previous page's `nextBefore`.
    #[param(minimum = 1)]
    before: Option<i64>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolUseList {
    #[schema(value_type = Vec<schemas::Row>)]
    tool_uses: Vec<ToolUse>,
    /// Where the next (older) page starts: pass it as `before`. `null` when no older tool use
    /// matches. A page may hold fewer than `limit` rows and still name one: a filter no index
    /// serves reads at most 5,000 tool uses a page.
    next_before: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/tool-uses",
    tag = "projections",
    params(ToolUsesQuery),
    responses(
        (status = 200, description = "Tool calls and permission requests.", body = ToolUseList),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /tool-uses?missionId=&session=&status=&kind=&tool=&before=`: newest first.
pub async fn list_tool_uses(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ToolUsesQuery>,
) -> Result<Json<ToolUseList>, ApiError> {
    let limit = page_limit_or(query.limit, DEFAULT_ROWS)?;
    let filter = ToolUseFilter {
        status: check_state(query.status.as_deref())?,
        mission_id: query.mission_id,
        session_id: query.session_id,
        kind: query.kind,
        tool: query.tool,
    };
    let before = query.before;
    if before.is_some_and(|b| b < 1) {
        return Err(ApiError::invalid("before must be a sequence, 1 or more"));
    }
    let page = state
        .store
        .read(move |conn| tool_uses::newest(conn, &filter, before, limit))
        .await?;
    Ok(Json(ToolUseList {
        tool_uses: page.tool_uses,
        next_before: page.next_before,
    }))
}

fn mission_states() -> utoipa::openapi::schema::Object {
    schemas::one_of(MissionState::NAMES)
}

fn tool_use_states() -> utoipa::openapi::schema::Object {
    schemas::one_of(ToolStatus::NAMES)
}
