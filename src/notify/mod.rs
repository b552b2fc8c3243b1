//! Notices of waiting agents (`serve --notify URL`, docs/notify.md): when a session starts
//! waiting for its user (a permission request, an idle prompt), one POST per target tells
//! them, with the session, its project, the tool and a link to the session's page.
//!
//! The task reads committed events from the hub in sequence order and keeps the open
//! waiting spells ([`spell`]); deliveries ([`deliver`]) run in tasks of their own, so a target
//! that is slow or down holds neither ingest nor this task. At most [`MAX_DELIVERIES`]
//! notices are being delivered (tried, or waiting to try again) at once; the spells owing one
//! past that wait their turn, oldest first, and one that ends meanwhile is never sent.
//!
//! Nothing is missed when the task falls behind the hub: it reads what it missed from the log
//! (subscribe first, read, then skip what the hub repeats). On start it reads the log back
//! [`RESUME_WINDOW`] (at most [`RESUME_EVENTS`] events), so a spell still open whose notice
//! had not been sent (nor given up) before a restart is notified then. Only events this
//! hooklog stored first are looked at: an aggregator does not notify for other machines.

pub mod body;
pub mod deliver;
pub mod send;
pub mod spell;
pub mod tls;

use crate::config::Notify;
use crate::event::StoredEvent;
use crate::event::row::EVENT_COLUMNS;
use crate::store::{Store, read};
use crate::stream::Hub;
use deliver::Deliverer;
use spell::Spells;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinSet;

/// Notices being delivered at once (each a task, trying or waiting to try again).
pub const MAX_DELIVERIES: usize = 64;
/// How far back a start reads the log for spells still open and owed a notice.
pub const RESUME_WINDOW: Duration = Duration::from_secs(3600);
/// The most events a start reads back.
pub const RESUME_EVENTS: i64 = 100_000;
/// Events one read of the log takes.
const PAGE: i64 = 1000;

/// Starts the notice task on `store`'s hub, linking to `base` (`--public-url`, or the bound
/// address); `None` without a target. Abort the handle to stop it and every delivery.
pub fn start(
    store: &Arc<Store>,
    hub: &Hub,
    config: &Notify,
    clock: &crate::event::time::Clock,
    base: &str,
) -> Option<tokio::task::JoinHandle<()>> {
    if config.targets.is_empty() {
        return None;
    }
    let base = match reqwest::Url::parse(base) {
        Ok(base) => base,
        Err(e) => {
            tracing::error!(%base, error = %e, "the public URL is not a URL; no notices are sent");
            return None;
        }
    };
    let deliverer = match Deliverer::new(store, config) {
        Ok(deliverer) => Arc::new(deliverer),
        Err(e) => {
            tracing::error!(error = %e, "no HTTP client for notices; none are sent");
            return None;
        }
    };
    let since = crate::event::time::format(
        clock.now() - chrono::Duration::from_std(RESUME_WINDOW).unwrap_or_default(),
    );
    let mut watch = Watch {
        store: store.clone(),
        spells: Spells::new(config.targets.len(), base),
        seen: 0,
    };
    let mut live = hub.subscribe();
    Some(tokio::spawn(async move {
        // The deliveries end with this task (aborted when hooklog stops).
        let mut deliveries = JoinSet::new();
        watch.resume(&since).await;
        loop {
            for job in watch.spells.start(MAX_DELIVERIES - deliveries.len()) {
                deliveries.spawn(deliverer.clone().run(job));
            }
            tokio::select! {
                received = live.recv() => match received {
                    Ok(group) => {
                        for committed in &group.events {
                            watch.see(&committed.event);
                        }
                    }
                    Err(RecvError::Lagged(_)) => watch.catch_up(None).await,
                    Err(RecvError::Closed) => return,
                },
                Some(finished) = deliveries.join_next() => {
                    if let Ok((session, spell, target)) = finished {
                        watch.spells.finished(&session, spell, target);
                    }
                }
            }
        }
    }))
}

/// The spells, and how far the log has been read into them.
struct Watch {
    store: Arc<Store>,
    spells: Spells,
    /// The last sequence seen: the hub may repeat what a read of the log gave.
    seen: i64,
}

impl Watch {
    fn see(&mut self, event: &StoredEvent) {
        if event.sequence <= self.seen {
            return;
        }
        self.seen = event.sequence;
        if event.origin == self.store.origin {
            self.spells.see(event);
        }
    }

    /// At start: the log's last [`RESUME_EVENTS`] events received since `since`.
    async fn resume(&mut self, since: &str) {
        let head = match self.store.read(read::head).await {
            Ok(head) => head,
            Err(e) => {
                tracing::error!(error = %e, "reading the log's head for notices");
                0
            }
        };
        self.seen = (head - RESUME_EVENTS).max(0);
        self.catch_up(Some(since)).await;
        if self.spells.open_count() > 0 {
            tracing::info!(open = self.spells.open_count(), "sessions waiting at start");
        }
    }

    /// Reads the events after `seen` up to the head, a page at a time (only those received
    /// since `since`, when given).
    async fn catch_up(&mut self, since: Option<&str>) {
        loop {
            let (after, origin) = (self.seen, self.store.origin.clone());
            let since = since.map(str::to_string);
            let page = self
                .store
                .read(move |conn| page(conn, after, since.as_deref(), &origin))
                .await;
            let (events, through) = match page {
                Ok(page) => page,
                Err(e) => {
                    tracing::error!(error = %e, "reading the log for notices; some may be missed");
                    return;
                }
            };
            for event in &events {
                self.see(event);
            }
            if through <= after {
                return;
            }
            self.seen = self.seen.max(through);
        }
    }
}

/// The events after `after` (a page of them) that can open, end or settle a spell, and the
/// last sequence the page covers (`after` at the head).
fn page(
    conn: &rusqlite::Connection,
    after: i64,
    since: Option<&str>,
    origin: &str,
) -> rusqlite::Result<(Vec<StoredEvent>, i64)> {
    let through: i64 = conn
        .prepare_cached(
            "SELECT COALESCE(MAX(sequence), ?1) FROM
               (SELECT sequence FROM events WHERE sequence > ?1 ORDER BY sequence LIMIT ?2)",
        )?
        .query_row(rusqlite::params![after, PAGE], |r| r.get(0))?;
    let types = [
        spell::ANSWERS[0],
        spell::ANSWERS[1],
        spell::SENT,
        spell::FAILED,
    ]
    .map(|t| format!("'{t}'"))
    .join(", ");
    let events = conn
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM events
             WHERE sequence > ?1 AND sequence <= ?2 AND origin = ?3
               AND (?4 IS NULL OR received_at >= ?4)
               AND (source = 'hook' OR (source = 'coordination' AND type IN ({types})))
             ORDER BY sequence"
        ))?
        .query_map(
            rusqlite::params![after, through, origin, since],
            read::stored_event,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((events, through))
}
