//! The writer's Prometheus metrics, counted on the writer thread at each commit: the events
//! appended (by source and type family), the ids answered as duplicates, the requests refused
//! as conflicts, and how long and how large each commit was. `GET /metrics` gathers them.
//!
//! Labels stay few whatever clients send: the type is reduced to its catalogue family, and a
//! source outside [`SOURCES`] (a client may name any) is counted as `other`.

use super::{AppendError, Appended};
use crate::event::{StoredEvent, catalogue};
use prometheus::core::Collector;
use prometheus::{Histogram, HistogramOpts, IntCounter, IntCounterVec, Opts};
use std::time::Duration;

/// The sources hooklog's own contracts give events; any other is labelled `other`.
pub const SOURCES: &[&str] = &["api", "hook", "normalized", "factory", "coordination"];

/// Commit latency buckets, in seconds: 0.5 ms to 2.5 s.
const COMMIT_SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];
/// Events per commit: 1 to 2,048 (the writer's largest batch), in powers of two.
const BATCH_EVENTS: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0,
];

#[derive(Clone)]
pub struct WriterMetrics {
    appended: IntCounterVec,
    duplicates: IntCounter,
    conflicts: IntCounter,
    commit_seconds: Histogram,
    batch_events: Histogram,
}

impl Default for WriterMetrics {
    fn default() -> Self {
        let histogram = |name: &str, help: &str, buckets: &[f64]| {
            let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
            Histogram::with_opts(opts).expect("a valid histogram")
        };
        WriterMetrics {
            appended: IntCounterVec::new(
                Opts::new(
                    "hooklog_events_appended_total",
                    "Events appended to the log, by source and type family.",
                ),
                &["source", "family"],
            )
            .expect("a valid counter"),
            duplicates: IntCounter::new(
                "hooklog_events_duplicate_total",
                "Events whose id was already stored with the same content: answered, not appended.",
            )
            .expect("a valid counter"),
            conflicts: IntCounter::new(
                "hooklog_events_conflict_total",
                "Requests refused (409) because an id was already stored with other content.",
            )
            .expect("a valid counter"),
            commit_seconds: histogram(
                "hooklog_writer_commit_seconds",
                "Time from BEGIN to the end of COMMIT for each writer transaction.",
                COMMIT_SECONDS,
            ),
            batch_events: histogram(
                "hooklog_writer_batch_events",
                "Events appended per writer transaction (group commit).",
                BATCH_EVENTS,
            ),
        }
    }
}

impl WriterMetrics {
    /// One committed transaction: `events` new events, taking `took` from `BEGIN`.
    pub fn record_commit(&self, events: usize, took: Duration) {
        self.commit_seconds.observe(took.as_secs_f64());
        self.batch_events.observe(events as f64);
    }

    /// The events a commit appended.
    pub fn record_appended(&self, events: &[StoredEvent]) {
        for event in events {
            let source = match SOURCES.contains(&event.source.as_str()) {
                true => event.source.as_str(),
                false => "other",
            };
            let family = catalogue::family(&event.event_type);
            self.appended.with_label_values(&[source, family]).inc();
        }
    }

    /// One append request's answer: its duplicates, or its refusal as a conflict.
    pub fn record_answer(&self, answer: &Result<Vec<Appended>, AppendError>) {
        match answer {
            Ok(appended) => {
                let duplicates = appended.iter().filter(|a| a.duplicate).count();
                self.duplicates.inc_by(duplicates as u64);
            }
            Err(AppendError::Conflict { .. } | AppendError::ConflictWithinRequest { .. }) => {
                self.conflicts.inc();
            }
            Err(_) => {}
        }
    }

    /// Every metric, for a registry to gather.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.appended.clone()),
            Box::new(self.duplicates.clone()),
            Box::new(self.conflicts.clone()),
            Box::new(self.commit_seconds.clone()),
            Box::new(self.batch_events.clone()),
        ]
    }
}
