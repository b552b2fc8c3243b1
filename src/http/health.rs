//! `GET /health` (is it up, where is the head) and `GET /stats` (what the writer has done).

use super::AppState;
use crate::event::time;
use crate::store::stats::StatsSnapshot;
use axum::Json;
use axum::extract::State;
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    ok: bool,
    version: &'static str,
    uptime_ms: u128,
    time: String,
    head_sequence: i64,
}

pub async fn health(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        ok: true,
        version: env!("CARGO_PKG_VERSION"),
        uptime_ms: state.started.elapsed().as_millis(),
        time: time::now(),
        head_sequence: state.store.writer.head(),
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    head_sequence: i64,
    stream_generation_id: String,
    writer: StatsSnapshot,
}

pub async fn stats(State(state): State<AppState>) -> Json<Stats> {
    Json(Stats {
        head_sequence: state.store.writer.head(),
        stream_generation_id: state.store.generation_id.clone(),
        writer: state.store.writer.stats().snapshot(),
    })
}
