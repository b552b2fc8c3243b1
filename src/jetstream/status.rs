//! How publishing and aggregating are doing, shared between their tasks and the routes that
//! show it (`/health`, `/stats`, `/metrics`). A task writes; readers take a copy.

use crate::event::time;
use serde::Serialize;
use std::sync::Mutex;

/// Where a task stands with NATS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Link {
    /// Not connected yet (starting).
    #[default]
    Connecting,
    /// Connected; the last exchange worked.
    Ok,
    /// The last attempt failed (NATS away, the stream refused); retrying with backoff.
    Failing,
}

/// The publisher's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Publishing {
    pub link: Link,
    pub url: String,
    pub stream: String,
    /// Only events stored first here are published (`true` when this hooklog also consumes
    /// the same server: see docs/scale-out.md, "Chains").
    pub own_events_only: bool,
    /// Every event at or below this sequence is in the stream (or is not this publisher's).
    pub acked_sequence: i64,
    /// Events published (and acknowledged) since the server started.
    pub published: u64,
    /// `receivedAt` of the oldest event not acknowledged yet, when there is one.
    #[serde(skip)]
    pub oldest_pending: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_at: Option<String>,
}

/// The aggregator's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Aggregating {
    pub link: Link,
    pub url: String,
    pub stream: String,
    pub durable: String,
    /// Messages appended (or found already stored) and acknowledged since the server started.
    pub consumed: u64,
    /// Of those, how many were already stored (redeliveries, or an event seen twice).
    pub duplicates: u64,
    /// Messages refused (not an event, or an id stored with other content): terminated, so
    /// JetStream does not deliver them again; each is logged.
    pub refused: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_at: Option<String>,
}

/// Both, behind locks; `None` for what this server was not asked to do.
#[derive(Debug, Default)]
pub struct Replication {
    pub publishing: Option<Mutex<Publishing>>,
    pub aggregating: Option<Mutex<Aggregating>>,
}

/// The publisher's lag as `/health` and `/stats` show it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublishLag {
    pub link: Link,
    /// Events committed here and not yet acknowledged by JetStream.
    pub lag_events: i64,
    /// How long the oldest of them has waited, in seconds (0 when none).
    pub lag_seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl Replication {
    /// Empty states for what `config` asks for.
    pub fn for_config(config: &crate::config::Config) -> Replication {
        Replication {
            publishing: config.publish.as_ref().map(|t| {
                Mutex::new(Publishing {
                    url: t.url.clone(),
                    stream: t.stream.clone(),
                    ..Publishing::default()
                })
            }),
            aggregating: config.subscribe.as_ref().map(|s| {
                Mutex::new(Aggregating {
                    url: s.target.url.clone(),
                    stream: s.target.stream.clone(),
                    durable: s.durable.clone(),
                    ..Aggregating::default()
                })
            }),
        }
    }

    pub fn publishing(&self) -> Option<Publishing> {
        let p = self.publishing.as_ref()?;
        Some(p.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    pub fn aggregating(&self) -> Option<Aggregating> {
        let a = self.aggregating.as_ref()?;
        Some(a.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// The publish lag against the log's `head`, when publishing.
    pub fn lag(&self, head: i64) -> Option<PublishLag> {
        let p = self.publishing()?;
        let lag_events = (head - p.acked_sequence).max(0);
        let lag_seconds = match (&p.oldest_pending, lag_events) {
            (Some(at), 1..) => time::parse(at).map_or(0.0, |at| {
                let waited = chrono::Utc::now() - at;
                (waited.num_milliseconds().max(0) as f64) / 1000.0
            }),
            _ => 0.0,
        };
        Some(PublishLag {
            link: p.link,
            lag_events,
            lag_seconds,
            last_error: p.last_error,
        })
    }

    pub(super) fn update_publishing(&self, change: impl FnOnce(&mut Publishing)) {
        if let Some(p) = &self.publishing {
            change(&mut p.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    pub(super) fn update_aggregating(&self, change: impl FnOnce(&mut Aggregating)) {
        if let Some(a) = &self.aggregating {
            change(&mut a.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }
}

/// Records a failure on a task's state.
pub(super) fn failed(
    link: &mut Link,
    last_error: &mut Option<String>,
    at: &mut Option<String>,
    error: String,
) {
    *link = Link::Failing;
    *last_error = Some(error);
    *at = Some(time::now());
}
