//! Counters the writer keeps about its commits, so group commit can be seen working: how many
//! transactions, how many events, and how many events each transaction carried.

use super::metrics::WriterMetrics;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Batch-size buckets: 1, 2-3, 4-7, ..., 1024+ events per commit.
const BUCKETS: usize = 11;

#[derive(Default)]
pub struct WriterStats {
    commits: AtomicU64,
    events: AtomicU64,
    apply_micros: AtomicU64,
    commit_micros: AtomicU64,
    reruns: AtomicU64,
    isolated: AtomicU64,
    by_size: [AtomicU64; BUCKETS],
    /// The same commits, and what they appended, as Prometheus metrics (`GET /metrics`).
    pub metrics: WriterMetrics,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatsSnapshot {
    pub commits: u64,
    pub events: u64,
    /// Time spent inserting and projecting, inside transactions.
    pub apply_micros: u64,
    /// Time spent in `COMMIT` (the fsync, and any checkpoint it triggers).
    pub commit_micros: u64,
    /// `[{"events": "4-7", "commits": 12}, ...]`, buckets with no commits left out.
    pub batch_sizes: Vec<BatchBucket>,
    /// Batches run a second time, writing each event's session row at once, because writing
    /// the rows the writer held in memory failed.
    #[serde(default)]
    pub reruns: u64,
    /// Batches run a second time with a savepoint per request, because a request was refused
    /// (a conflicting id, a row the database refuses) while the batch's requests shared one
    /// transaction without them.
    #[serde(default)]
    pub isolated: u64,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct BatchBucket {
    pub events: String,
    pub commits: u64,
}

impl WriterStats {
    /// Records one committed transaction holding `events` new events (0 for all-duplicates),
    /// and how long its two phases took.
    pub fn record_commit(&self, events: usize, apply: Duration, commit: Duration) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.apply_micros
            .fetch_add(apply.as_micros() as u64, Ordering::Relaxed);
        self.commit_micros
            .fetch_add(commit.as_micros() as u64, Ordering::Relaxed);
        self.events.fetch_add(events as u64, Ordering::Relaxed);
        if events > 0 {
            self.by_size[bucket(events)].fetch_add(1, Ordering::Relaxed);
        }
        self.metrics.record_commit(events, apply + commit);
    }

    /// Records a batch run again row by row (see [`StatsSnapshot::reruns`]).
    pub fn record_rerun(&self) {
        self.reruns.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a batch run again request by request (see [`StatsSnapshot::isolated`]).
    pub fn record_isolated(&self) {
        self.isolated.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        let batch_sizes = self
            .by_size
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.load(Ordering::Relaxed)))
            .filter(|(_, commits)| *commits > 0)
            .map(|(i, commits)| BatchBucket {
                events: label(i),
                commits,
            })
            .collect();
        StatsSnapshot {
            commits: self.commits.load(Ordering::Relaxed),
            events: self.events.load(Ordering::Relaxed),
            apply_micros: self.apply_micros.load(Ordering::Relaxed),
            commit_micros: self.commit_micros.load(Ordering::Relaxed),
            batch_sizes,
            reruns: self.reruns.load(Ordering::Relaxed),
            isolated: self.isolated.load(Ordering::Relaxed),
        }
    }
}

fn bucket(events: usize) -> usize {
    (usize::BITS - events.max(1).leading_zeros() - 1).min(BUCKETS as u32 - 1) as usize
}

fn label(bucket: usize) -> String {
    let low = 1usize << bucket;
    match bucket {
        0 => "1".to_string(),
        b if b == BUCKETS - 1 => format!("{low}+"),
        _ => format!("{low}-{}", (low << 1) - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two() {
        let stats = WriterStats::default();
        for n in [0, 1, 2, 3, 4, 7, 8, 1000, 5000] {
            stats.record_commit(n, Duration::ZERO, Duration::ZERO);
        }
        let snap = stats.snapshot();
        assert_eq!(snap.commits, 9, "a commit of duplicates only is a commit");
        let labels: Vec<(&str, u64)> = snap
            .batch_sizes
            .iter()
            .map(|b| (b.events.as_str(), b.commits))
            .collect();
        assert_eq!(
            labels,
            [
                ("1", 1),
                ("2-3", 2),
                ("4-7", 2),
                ("8-15", 1),
                ("512-1023", 1),
                ("1024+", 1)
            ]
        );
    }
}
