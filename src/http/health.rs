//! `GET /health` (is it up, where is the head) and `GET /stats` (what the writer has done).

use super::AppState;
use crate::event::time;
use crate::jetstream::status::{Aggregating, Link, PublishLag, Publishing};
use crate::store::WriterState;
use crate::store::stats::StatsSnapshot;
use crate::store::writer::{Pruning, PruningState, SearchLag};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    ok: bool,
    /// `ok`, `failing` (the database refused the last batch) or `stopped`.
    #[schema(value_type = String)]
    writer: WriterState,
    version: &'static str,
    /// This hooklog's name, recorded on the events it stores (`serve --origin`).
    origin: String,
    uptime_ms: u128,
    /// Seed 000's flag for a server that makes up its heroes (its demo generator): hooklog's
    /// come from the log, always.
    mock: bool,
    time: String,
    head_sequence: i64,
    /// How far search is behind the head: the writer indexes acknowledged events after their
    /// commit, in batches, so a lag of milliseconds is normal; one that grows is not.
    search: SearchLag,
    /// `off` (no retention policy), `ok`, or `failing`: the last prune step failed, so the log
    /// is growing past its limit. Ingest goes on, so `ok` and the status do not change.
    #[schema(value_type = String)]
    retention: PruningState,
    /// Why pruning is failing, while it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    retention_error: Option<String>,
    /// With `serve --publish`: how far behind the log JetStream's stream is. A lag never makes
    /// the server unhealthy: ingest goes on and the events wait in the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    publish: Option<PublishLag>,
    /// With `serve --subscribe`: whether the aggregator is connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    aggregate: Option<Link>,
}

#[utoipa::path(
    get,
    path = "/health",
    tag = "meta",
    security(()),
    responses(
        (status = 200, description = "The writer can store events.", body = Health),
        (status = 503, description = "The writer cannot store events (same body, `ok: false`).", body = Health)
    )
)]
/// `200` while the writer can store events, `503` (same body, `ok: false`) when it cannot.
pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let writer = state.store.writer_state();
    let pruning = state.store.writer.pruning();
    let ok = writer == WriterState::Ok;
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let health = Health {
        ok,
        writer,
        version: env!("CARGO_PKG_VERSION"),
        origin: state.config.origin.clone(),
        uptime_ms: state.started.elapsed().as_millis(),
        mock: false,
        time: time::now(),
        head_sequence: state.store.writer.head(),
        search: state.store.writer.search().lag(state.store.writer.head()),
        retention: pruning.state,
        retention_error: pruning.last_error,
        publish: state.replication.lag(state.store.writer.head()),
        aggregate: state.replication.aggregating().map(|a| a.link),
    };
    (status, Json(health))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    head_sequence: i64,
    stream_generation_id: String,
    /// Threads of the runtime answering requests (`hooklog serve --workers`).
    http_workers: usize,
    /// The writer connection's `synchronous` setting: `full` or `normal` (`serve --durability`).
    durability: &'static str,
    writer: StatsSnapshot,
    /// How far search is behind the head (as in `/health`).
    search: SearchLag,
    retention: Pruning,
    /// Connections accepted, open now, refused past `--max-connections`, and closed because
    /// their client accepted no byte for `--stall-timeout` (a stream it stopped reading).
    connections: crate::http::server::CountersSnapshot,
    /// With `serve --publish`: the publisher's state and its lag.
    #[serde(skip_serializing_if = "Option::is_none")]
    publishing: Option<PublishingStats>,
    /// With `serve --subscribe`: what the aggregator consumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    aggregating: Option<Aggregating>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishingStats {
    #[serde(flatten)]
    state: Publishing,
    lag_events: i64,
    lag_seconds: f64,
}

#[utoipa::path(
    get,
    path = "/stats",
    tag = "meta",
    responses(
        (status = 200, description = "Head, generation, writer counters, retention, connections.", body = Object)
    )
)]
pub async fn stats(State(state): State<AppState>) -> Json<Stats> {
    Json(Stats {
        head_sequence: state.store.writer.head(),
        stream_generation_id: state.store.generation_id.clone(),
        http_workers: tokio::runtime::Handle::current().metrics().num_workers(),
        durability: state.store.synchronous,
        writer: state.store.writer.stats().snapshot(),
        search: state.store.writer.search().lag(state.store.writer.head()),
        retention: state.store.writer.pruning(),
        connections: state.connections.snapshot(),
        publishing: publishing_stats(&state),
        aggregating: state.replication.aggregating(),
    })
}

fn publishing_stats(state: &AppState) -> Option<PublishingStats> {
    let lag = state.replication.lag(state.store.writer.head())?;
    Some(PublishingStats {
        state: state.replication.publishing()?,
        lag_events: lag.lag_events,
        lag_seconds: lag.lag_seconds,
    })
}
