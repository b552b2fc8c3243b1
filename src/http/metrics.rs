//! `GET /metrics`: hooklog in the Prometheus text format (docs/metrics.md lists each metric).
//!
//! Two kinds of value: counters and histograms kept as things happen (the writer's, the
//! streams', the refusals counted by [`count_refusals`]), and values read at scrape time from
//! what hooklog already tracks (the writer's queue, the WAL file, the stream slots, the alerts
//! table, retention, connections). Each scrape gathers both into a fresh registry.

use super::AppState;
use super::error::ApiError;
use crate::store::read;
use crate::store::writer::PruningState;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus::core::Collector;
use prometheus::{Encoder, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};
use std::sync::atomic::Ordering;

/// What the HTTP layer counts itself.
#[derive(Clone)]
pub struct HttpMetrics {
    /// Answers with a 4xx or 5xx status, by status: a short list, as hooklog's own answers
    /// use a handful of codes.
    refusals: IntCounterVec,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        let opts = Opts::new(
            "hooklog_http_refusals_total",
            "Requests answered with a 4xx or 5xx status, by status.",
        );
        HttpMetrics {
            refusals: IntCounterVec::new(opts, &["status"]).expect("a valid counter"),
        }
    }
}

/// Middleware, outside every guard: counts each refusal by its status.
pub async fn count_refusals(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        state
            .metrics
            .refusals
            .with_label_values(&[status.as_str()])
            .inc();
    }
    response
}

#[utoipa::path(
    get,
    path = "/metrics",
    tag = "meta",
    responses(
        (status = 200, description = "Prometheus text format (docs/metrics.md).", content_type = "text/plain; version=0.0.4", body = String)
    )
)]
/// `GET /metrics`.
pub async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let alerts = state.store.read(read::open_alerts_by_kind).await?;
    let registry = Registry::new();
    let writer = state.store.writer.stats();
    let collectors = [
        writer.metrics.collectors(),
        state.hub.metrics.collectors(),
        state.hub.stages.collectors(),
        vec![Box::new(state.metrics.refusals.clone()) as Box<dyn Collector>],
        read_now(&state, alerts),
        replication(&state),
    ];
    for collector in collectors.into_iter().flatten() {
        registry
            .register(collector)
            .map_err(|e| ApiError::Internal(format!("registering a metric: {e}")))?;
    }
    let mut body = Vec::new();
    prometheus::TextEncoder::new()
        .encode(&registry.gather(), &mut body)
        .map_err(|e| ApiError::Internal(format!("encoding metrics: {e}")))?;
    let content_type = [(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)];
    Ok((content_type, body).into_response())
}

/// The values read at scrape time.
fn read_now(state: &AppState, alerts: Vec<(String, i64)>) -> Vec<Box<dyn Collector>> {
    let writer = &state.store.writer;
    let connections = &state.connections;
    let max_streams = state.config.security.max_streams;
    let open_streams = max_streams.saturating_sub(state.stream_slots.available_permits());
    let budget_kib = state.config.connections.history_budget_kib();
    let history_held = budget_kib.saturating_sub(state.history_bytes.available_permits()) * 1024;
    let wal = format!("{}-wal", state.config.db_path.display());
    let wal_bytes = std::fs::metadata(wal).map_or(0, |m| m.len());
    let search = writer.search().lag(writer.head());
    let search_seconds = prometheus::Gauge::new(
        "hooklog_search_lag_seconds",
        "How long the oldest acknowledged event not yet searchable has waited since its commit.",
    )
    .expect("a valid gauge");
    search_seconds.set(search.lag_seconds);
    let alerts_open = IntGaugeVec::new(
        Opts::new("hooklog_alerts_open", "Alerts not acknowledged, by kind."),
        &["kind"],
    )
    .expect("a valid gauge");
    for (kind, count) in alerts {
        alerts_open.with_label_values(&[&kind]).set(count);
    }
    vec![
        gauge(
            "hooklog_head_sequence",
            "The last committed sequence.",
            writer.head(),
        ),
        gauge(
            "hooklog_search_lag_events",
            "Events acknowledged and not yet searchable (the writer indexes them after their commit).",
            search.lag_events,
        ),
        Box::new(search_seconds),
        gauge(
            "hooklog_writer_queue_depth",
            "Requests queued for the writer, not yet taken into a batch.",
            writer.queued() as i64,
        ),
        gauge(
            "hooklog_wal_bytes",
            "Size of the database's write-ahead log file.",
            wal_bytes as i64,
        ),
        gauge(
            "hooklog_streams_open",
            "Event streams open now (at most --max-streams).",
            open_streams as i64,
        ),
        gauge(
            "hooklog_stream_history_bytes_held",
            "Bytes of the shared history budget (--stream-history-bytes) that streams hold now: pages read and not yet taken by their clients.",
            history_held as i64,
        ),
        counter(
            "hooklog_streams_dropped_stalled_total",
            "Connections (event streams, mostly) closed because their client stopped reading.",
            connections.stalled.load(Ordering::Relaxed),
        ),
        gauge(
            "hooklog_connections_open",
            "Connections open now.",
            connections.open.load(Ordering::Relaxed) as i64,
        ),
        counter(
            "hooklog_connections_accepted_total",
            "Connections accepted.",
            connections.accepted.load(Ordering::Relaxed),
        ),
        counter(
            "hooklog_connections_refused_total",
            "Connections refused with a 503 because --max-connections were open.",
            connections.refused.load(Ordering::Relaxed),
        ),
        counter(
            "hooklog_retention_pruned_total",
            "Events pruned by retention since the server started.",
            writer.pruning().pruned,
        ),
        gauge(
            "hooklog_retention_failing",
            "1 while the last retention prune step failed, else 0.",
            i64::from(writer.pruning().state == PruningState::Failing),
        ),
        Box::new(alerts_open),
    ]
}

/// Publishing and aggregating (`serve --publish`, `--subscribe`), when configured.
fn replication(state: &AppState) -> Vec<Box<dyn Collector>> {
    use crate::jetstream::status::Link;
    let mut out = Vec::new();
    if let (Some(lag), Some(publishing)) = (
        state.replication.lag(state.store.writer.head()),
        state.replication.publishing(),
    ) {
        let seconds = prometheus::Gauge::new(
            "hooklog_publish_lag_seconds",
            "How long the oldest event not yet acknowledged by JetStream has waited.",
        )
        .expect("a valid gauge");
        seconds.set(lag.lag_seconds);
        out.extend([
            gauge(
                "hooklog_publish_lag_events",
                "Events committed here and not yet acknowledged by JetStream.",
                lag.lag_events,
            ),
            Box::new(seconds) as Box<dyn Collector>,
            gauge(
                "hooklog_publish_failing",
                "1 while the publisher's last attempt failed (NATS away), else 0.",
                i64::from(lag.link == Link::Failing),
            ),
            counter(
                "hooklog_published_total",
                "Events published and acknowledged by JetStream since the server started.",
                publishing.published,
            ),
        ]);
    }
    if let Some(aggregating) = state.replication.aggregating() {
        out.extend([
            counter(
                "hooklog_aggregate_consumed_total",
                "Messages from the stream appended (or found stored) and acknowledged.",
                aggregating.consumed,
            ),
            counter(
                "hooklog_aggregate_duplicates_total",
                "Of those, events that were already stored (redeliveries).",
                aggregating.duplicates,
            ),
            counter(
                "hooklog_aggregate_refused_total",
                "Messages refused (not an event, or an id stored with other content).",
                aggregating.refused,
            ),
            gauge(
                "hooklog_aggregate_failing",
                "1 while the aggregator's last attempt failed (NATS away), else 0.",
                i64::from(aggregating.link == Link::Failing),
            ),
        ]);
    }
    out
}

fn gauge(name: &str, help: &str, value: i64) -> Box<dyn Collector> {
    let gauge = IntGauge::new(name, help).expect("a valid gauge");
    gauge.set(value);
    Box::new(gauge)
}

fn counter(name: &str, help: &str, value: u64) -> Box<dyn Collector> {
    let counter = IntCounter::new(name, help).expect("a valid counter");
    counter.inc_by(value);
    Box::new(counter)
}
