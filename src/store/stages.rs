//! Every event's stages, timed (seed 002: "each event's stages are timed"): one histogram per
//! stage in `GET /metrics` (`hooklog_event_stage_seconds{stage}`), and, with
//! `HOOKLOG_LOG=info,hooklog::stages=debug`, one log line per batch with each event's own times.
//!
//! | stage | from | to | counted for |
//! |---|---|---|---|
//! | `receive` | the request's first guard | its events queued for the writer (body read, parsed) | each event of an HTTP ingest request |
//! | `queue` | queued | the writer's batch begins | each event of an append request |
//! | `apply` | the batch begins | `COMMIT` begins: every event's row and projections | each event the batch stored |
//! | `commit` | `COMMIT` begins | it ends (the fsync included) | each event the batch stored |
//! | `derive` | the commit ended | the commit of the event's search rows ended (`store::writer::derive`): the lag of search behind the acknowledgement | each event the batch stored |
//! | `publish` | the commit ended | the streams' hub has the batch and its callers are answered | each event the batch stored |
//! | `deliver` | the writer hands the batch to the hub, right after the commit | the first stream takes any of the group's events to send | each event of a group some stream sent live |
//!
//! An event waits for its whole batch, so `apply`, `commit` and `publish` are the batch's times,
//! counted once per event in it.

use prometheus::core::Collector;
use prometheus::{HistogramOpts, HistogramVec};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Receive,
    Queue,
    Apply,
    Derive,
    Commit,
    Publish,
    Deliver,
}

impl Stage {
    pub const ALL: [Stage; 7] = [
        Stage::Receive,
        Stage::Queue,
        Stage::Apply,
        Stage::Commit,
        Stage::Derive,
        Stage::Publish,
        Stage::Deliver,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Receive => "receive",
            Stage::Queue => "queue",
            Stage::Apply => "apply",
            Stage::Derive => "derive",
            Stage::Commit => "commit",
            Stage::Publish => "publish",
            Stage::Deliver => "deliver",
        }
    }
}

/// Stage buckets, in seconds: 10 µs to 2.5 s.
const BUCKETS: &[f64] = &[
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5,
];

/// The stage histograms; clones count into the same ones (the writer's and the streams' hub's).
#[derive(Clone)]
pub struct Stages {
    seconds: HistogramVec,
}

impl Default for Stages {
    fn default() -> Self {
        let opts = HistogramOpts::new(
            "hooklog_event_stage_seconds",
            "Time each event spent in each stage of its way from the request to a stream (docs/metrics.md).",
        )
        .buckets(BUCKETS.to_vec());
        Stages {
            seconds: HistogramVec::new(opts, &["stage"]).expect("a valid histogram"),
        }
    }
}

impl Stages {
    /// `events` events spent `took` in `stage`.
    pub fn observe(&self, stage: Stage, took: Duration, events: usize) {
        let histogram = self.seconds.with_label_values(&[stage.as_str()]);
        let seconds = took.as_secs_f64();
        for _ in 0..events {
            histogram.observe(seconds);
        }
    }

    /// Counts a committed batch's events into the histograms.
    pub fn observe_batch(&self, batch: &Batch) {
        for (arrival, events) in batch.arrivals {
            if let Some(arrived) = arrival.arrived {
                self.observe(Stage::Receive, arrival.queued - arrived, *events);
            }
            self.observe(Stage::Queue, batch.started - arrival.queued, *events);
        }
        self.observe(Stage::Apply, batch.apply, batch.stored);
        self.observe(Stage::Commit, batch.commit, batch.stored);
        self.observe(Stage::Publish, batch.publish, batch.stored);
    }

    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![Box::new(self.seconds.clone())]
    }
}

/// When an append request arrived and was queued, for its `receive` and `queue` stages.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// When the request met the first guard (its `receive` starts); `None` for a request that
    /// did not come over HTTP (an import, a follower).
    pub arrived: Option<Instant>,
    pub queued: Instant,
}

impl Arrival {
    pub fn now(arrived: Option<Instant>) -> Arrival {
        Arrival {
            arrived,
            queued: Instant::now(),
        }
    }
}

/// The target of the per-batch stage log line.
pub const LOG: &str = "hooklog::stages";

/// A committed batch, as the writer times it.
pub struct Batch<'a> {
    /// When the batch began (its requests' `queue` ends).
    pub started: Instant,
    /// Each append request's arrival, and how many events it brought.
    pub arrivals: &'a [(Arrival, usize)],
    /// Events the batch stored.
    pub stored: usize,
    pub apply: Duration,
    pub commit: Duration,
    pub publish: Duration,
}

/// One debug line per batch (`HOOKLOG_LOG=info,hooklog::stages=debug`): the events it stored
/// (`positions`: sequence and id), each request's `receive` and `queue`, and the batch's
/// `apply`, `commit` and `publish`, in µs (`derive` and `deliver` are in `/metrics` only).
pub fn log_batch(batch: &Batch, positions: &[(i64, String)]) {
    let micros = |d: Duration| d.as_micros() as u64;
    let requests: Vec<String> = batch
        .arrivals
        .iter()
        .map(|(arrival, events)| {
            let receive = arrival
                .arrived
                .map_or("-".to_string(), |a| micros(arrival.queued - a).to_string());
            let queue = micros(batch.started - arrival.queued);
            format!("{events} events: receive {receive} queue {queue}")
        })
        .collect();
    tracing::debug!(
        target: LOG,
        first = positions.first().map(|p| p.0),
        last = positions.last().map(|p| p.0),
        ids = ?positions.iter().map(|p| p.1.as_str()).collect::<Vec<_>>(),
        ?requests,
        apply_us = micros(batch.apply),
        commit_us = micros(batch.commit),
        publish_us = micros(batch.publish),
        "batch committed"
    );
}
