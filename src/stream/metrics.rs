//! What event streams did, as Prometheus metrics (`GET /metrics`): the history rows they
//! served from the database, and how often one fell behind the hub and went back to it.

use prometheus::IntCounter;
use prometheus::core::Collector;

/// Shared by every stream through the [`Hub`](super::Hub); clones count into the same metrics.
#[derive(Clone)]
pub struct StreamMetrics {
    /// Events a stream sent from the database rather than live from the hub.
    pub catchup_rows: IntCounter,
    /// Times a live stream fell behind the hub and went back to the database.
    pub fell_behind: IntCounter,
}

impl Default for StreamMetrics {
    fn default() -> Self {
        StreamMetrics {
            catchup_rows: IntCounter::new(
                "hooklog_stream_catchup_rows_total",
                "Events event streams served from the database (history and catch-up), not live.",
            )
            .expect("a valid counter"),
            fell_behind: IntCounter::new(
                "hooklog_stream_fell_behind_total",
                "Times a live event stream fell behind the hub and caught up from the database.",
            )
            .expect("a valid counter"),
        }
    }
}

impl StreamMetrics {
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.catchup_rows.clone()),
            Box::new(self.fell_behind.clone()),
        ]
    }
}
