//! Counters the writer keeps about its commits, so group commit can be seen working: how many
//! transactions, how many events, and how many events each transaction carried.

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// Batch-size buckets: 1, 2-3, 4-7, ..., 1024+ events per commit.
const BUCKETS: usize = 11;

#[derive(Default)]
pub struct WriterStats {
    commits: AtomicU64,
    events: AtomicU64,
    by_size: [AtomicU64; BUCKETS],
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatsSnapshot {
    pub commits: u64,
    pub events: u64,
    /// `[{"events": "4-7", "commits": 12}, ...]`, buckets with no commits left out.
    pub batch_sizes: Vec<BatchBucket>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct BatchBucket {
    pub events: String,
    pub commits: u64,
}

impl WriterStats {
    /// Records one committed transaction holding `events` new events (0 for all-duplicates).
    pub fn record_commit(&self, events: usize) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.events.fetch_add(events as u64, Ordering::Relaxed);
        self.by_size[bucket(events)].fetch_add(1, Ordering::Relaxed);
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
            batch_sizes,
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
        for n in [1, 2, 3, 4, 7, 8, 1000, 5000] {
            stats.record_commit(n);
        }
        let snap = stats.snapshot();
        assert_eq!(snap.commits, 8);
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
