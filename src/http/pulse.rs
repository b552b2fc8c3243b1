//! `GET /pulse?minutes=N`: how many events each session received per minute over the last `N`
//! minutes (default 60): the web view's pulse chart. Read from the newest event back, by
//! `received_at`, until an event older than the window (or [`MAX_SCAN`] events).

use super::AppState;
use super::error::ApiError;
use super::extract::ApiQuery;
use super::openapi::schemas;
use crate::event::time;
use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Duration, DurationRound, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The most events one answer reads; past it the answer says `truncated`.
const MAX_SCAN: usize = 200_000;
const MAX_MINUTES: i64 = 24 * 60;

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PulseQuery {
    /// The window, in minutes (default 60).
    #[param(minimum = 1, maximum = 1440)]
    minutes: Option<i64>,
}

/// Counts per session, one per minute, oldest minute first.
struct Pulse {
    head: i64,
    counts: BTreeMap<String, Vec<u64>>,
    truncated: bool,
}

#[utoipa::path(
    get,
    path = "/pulse",
    tag = "web",
    params(PulseQuery),
    responses(
        (status = 200, description = "`from`, `minutes`, `headSequence`, `truncated`, and `sessions`: each `sessionId` with its `counts`, one per minute, oldest first.", body = Object),
        (status = 400, description = "Invalid input; nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /pulse?minutes=N`: events per minute per session over the last `N` minutes.
pub async fn pulse(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<PulseQuery>,
) -> Result<Json<Value>, ApiError> {
    let minutes = query.minutes.unwrap_or(60);
    if !(1..=MAX_MINUTES).contains(&minutes) {
        return Err(ApiError::invalid(format!(
            "minutes must be between 1 and {MAX_MINUTES}"
        )));
    }
    let now = Utc::now();
    let from =
        now.duration_trunc(Duration::minutes(1)).unwrap_or(now) - Duration::minutes(minutes - 1);
    let pulse = state
        .store
        .read(move |conn| count(conn, from, minutes as usize))
        .await?;
    let sessions: Vec<Value> = pulse
        .counts
        .into_iter()
        .map(|(id, counts)| json!({"sessionId": id, "counts": counts}))
        .collect();
    Ok(Json(json!({
        "from": time::format(from),
        "minutes": minutes,
        "headSequence": pulse.head,
        "truncated": pulse.truncated,
        "sessions": sessions,
    })))
}

fn count(
    conn: &rusqlite::Connection,
    from: DateTime<Utc>,
    minutes: usize,
) -> rusqlite::Result<Pulse> {
    let head: i64 = conn.query_row("SELECT COALESCE(MAX(sequence), 0) FROM events", [], |r| {
        r.get(0)
    })?;
    let mut statement = conn.prepare(
        "SELECT session_id, received_at FROM events WHERE sequence <= ?1 ORDER BY sequence DESC",
    )?;
    let mut rows = statement.query([head])?;
    let mut pulse = Pulse {
        head,
        counts: BTreeMap::new(),
        truncated: false,
    };
    let mut scanned = 0;
    while let Some(row) = rows.next()? {
        scanned += 1;
        if scanned > MAX_SCAN {
            pulse.truncated = true;
            break;
        }
        let received: String = row.get(1)?;
        let Some(at) = time::parse(&received) else {
            continue;
        };
        if at < from {
            break;
        }
        let Some(session) = row.get::<_, Option<String>>(0)? else {
            continue;
        };
        let minute = ((at - from).num_seconds() / 60) as usize;
        if minute < minutes {
            pulse
                .counts
                .entry(session)
                .or_insert_with(|| vec![0; minutes])[minute] += 1;
        }
    }
    Ok(pulse)
}
