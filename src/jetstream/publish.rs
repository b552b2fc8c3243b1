//! The publisher: the log is the outbox. Committed events are read after the last position
//! JetStream acknowledged, published in sequence order with `Nats-Msg-Id` = a digest of the
//! subject and body (`super::message_id`) and the event's recording line (hooklog's envelope,
//! with `origin` and `receivedAt`) as the body, and the position moves only once every ack up
//! to it has come back. Ingest never waits
//! for this task: while NATS is away the events wait in the log, and the task retries with
//! backoff and resumes at the recorded position (a restart included).

use super::status::{self, Link, Replication};
use super::{
    BACKOFF_START, Target, connect, ensure_stream, message_id, next_backoff, still_connected,
    subject,
};
use crate::event::StoredEvent;
use crate::store::{Position, Store, read};
use crate::stream::Hub;
use async_nats::jetstream::context::PublishAckFuture;
use async_nats::jetstream::message::PublishMessage;
use rusqlite::{Connection, params};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Events read and published before their acks are awaited (the window in flight).
const PAGE: u32 = 512;
/// With nothing new committed, the task still looks this often (a missed wake costs no more).
const IDLE_LOOK: Duration = Duration::from_millis(250);
/// The recorded position is written at most this often while events keep coming (each write
/// is a small commit of its own); it is always written once the task catches up.
const RECORD_EVERY: Duration = Duration::from_millis(250);
/// After a failure, the events acknowledged this recently are published again. A NATS server
/// 2.9 acknowledges a message before its file store has written it out, so a `kill -9` (or a
/// crash) can lose the last messages it acknowledged; the stream drops the ones it still holds
/// as duplicates (well inside its 2-minute window) and stores the lost ones again.
const REPUBLISH_WINDOW: Duration = Duration::from_secs(30);

type Failure = async_nats::Error;

pub struct Publisher {
    pub store: Arc<Store>,
    /// Wakes the publisher when the writer commits.
    pub hub: Hub,
    pub target: Target,
    /// Publish only the events first stored here (this hooklog also consumes this server).
    pub own_events_only: bool,
    pub status: Arc<Replication>,
}

/// Where recent pages began and when they were acknowledged, for [`REPUBLISH_WINDOW`].
#[derive(Default)]
pub struct Recent(std::collections::VecDeque<(i64, Instant)>);

impl Recent {
    fn acked(&mut self, after: i64) {
        self.0.push_back((after, Instant::now()));
        while self
            .0
            .front()
            .is_some_and(|(_, at)| at.elapsed() > REPUBLISH_WINDOW)
        {
            self.0.pop_front();
        }
    }

    /// Where to read from after a failure that left the reading at `from`: the start of the
    /// oldest page acknowledged within the window, if earlier.
    fn replay_from(&self, from: i64) -> i64 {
        self.0
            .iter()
            .find(|(_, at)| at.elapsed() <= REPUBLISH_WINDOW)
            .map_or(from, |(after, _)| (*after).min(from))
    }
}

/// What one read of the log gave: the events to publish, and the position that is covered
/// once they are acknowledged (past events of other origins when only ours are published).
struct Page {
    events: Vec<StoredEvent>,
    through: i64,
}

impl Publisher {
    /// Runs until the task is aborted (at shutdown).
    pub async fn run(self) {
        let mut acked = loop {
            match self.recorded().await {
                Ok(acked) => break acked,
                Err(e) => {
                    tracing::error!(error = %e, "reading the published position; retrying");
                    tokio::time::sleep(super::BACKOFF_MAX).await;
                }
            }
        };
        self.status.update_publishing(|p| p.acked_sequence = acked);
        let mut backoff = BACKOFF_START;
        let mut failures = 0u64;
        let mut recent = Recent::default();
        let mut from = acked;
        loop {
            let error = match self
                .session(&mut from, &mut acked, &mut recent, &mut backoff)
                .await
            {
                Ok(()) => return,
                Err(e) => e.to_string(),
            };
            from = recent.replay_from(from);
            failures += 1;
            if failures == 1 || failures.is_multiple_of(50) {
                tracing::warn!(%error, failures, url = %self.target.url, "publishing to NATS failed; retrying");
            }
            let oldest = self.oldest_pending(acked).await;
            self.status.update_publishing(|p| {
                status::failed(&mut p.link, &mut p.last_error, &mut p.last_error_at, error);
                p.oldest_pending = oldest;
            });
            tokio::time::sleep(backoff).await;
            backoff = next_backoff(backoff);
        }
    }

    /// One connection's worth of publishing, reading after `from` (at or below `acked`, and
    /// moved forward with each page acknowledged): returns only on an error (or when the hub
    /// is gone, at shutdown: `Ok`).
    async fn session(
        &self,
        from: &mut i64,
        acked: &mut i64,
        recent: &mut Recent,
        backoff: &mut Duration,
    ) -> Result<(), Failure> {
        let mut wake = self.hub.subscribe();
        let js = connect(&self.target.url).await?;
        ensure_stream(&js, &self.target).await?;
        self.status.update_publishing(|p| p.link = Link::Ok);
        tracing::info!(url = %self.target.url, stream = %self.target.stream, from = *from, "publishing to JetStream");
        let mut recorded = (*acked, Instant::now());
        let mut cursor = *from;
        loop {
            still_connected(&js)?;
            let page = self.page(cursor).await?;
            if page.events.is_empty() && page.through == cursor {
                if recorded.0 != *acked {
                    self.record(*acked).await?;
                    recorded = (*acked, Instant::now());
                }
                self.status.update_publishing(|p| p.oldest_pending = None);
                tokio::select! {
                    woke = wake.recv() => {
                        if let Err(tokio::sync::broadcast::error::RecvError::Closed) = woke {
                            return Ok(());
                        }
                    }
                    () = tokio::time::sleep(IDLE_LOOK) => {}
                }
                continue;
            }
            let first = page.events.first().map(|e| e.received_at.clone());
            self.status.update_publishing(|p| p.oldest_pending = first);
            let mut acks: Vec<PublishAckFuture> = Vec::with_capacity(page.events.len());
            for event in &page.events {
                let subject = subject(&event.origin, &event.event_type);
                let body = event.record_json();
                let message = PublishMessage::build()
                    .message_id(message_id(&subject, body.as_bytes()))
                    .payload(body.into());
                acks.push(js.send_publish(subject, message).await?);
            }
            let count = acks.len() as u64;
            for ack in acks {
                ack.await?;
            }
            recent.acked(cursor);
            cursor = page.through;
            *from = cursor;
            *acked = (*acked).max(cursor);
            *backoff = BACKOFF_START;
            let now_acked = *acked;
            self.status.update_publishing(|p| {
                p.link = Link::Ok;
                p.acked_sequence = now_acked;
                p.published += count;
            });
            if recorded.1.elapsed() >= RECORD_EVERY {
                self.record(*acked).await?;
                recorded = (*acked, Instant::now());
            }
        }
    }

    /// The position recorded for this stream (0: nothing published yet).
    async fn recorded(&self) -> Result<i64, Failure> {
        let stream = self.target.stream.clone();
        Ok(self
            .store
            .read(move |conn| read::position(conn, Position::Published, &stream))
            .await?)
    }

    async fn record(&self, acked: i64) -> Result<(), Failure> {
        let stream = &self.target.stream;
        let writer = &self.store.writer;
        Ok(writer
            .record_position(Position::Published, stream, acked)
            .await?)
    }

    /// The next events to publish after `after`.
    async fn page(&self, after: i64) -> Result<Page, Failure> {
        let only = self.own_events_only.then(|| self.store.origin.clone());
        Ok(self
            .store
            .read(move |conn| page(conn, after, only.as_deref()))
            .await?)
    }

    /// `receivedAt` of the first event after `after` (for the lag in seconds while failing).
    async fn oldest_pending(&self, after: i64) -> Option<String> {
        let only = self.own_events_only.then(|| self.store.origin.clone());
        self.store
            .read(move |conn| Ok(page_of(conn, after, only.as_deref(), 1)?.pop()))
            .await
            .ok()
            .flatten()
            .map(|e| e.received_at)
    }
}

fn page_of(
    conn: &Connection,
    after: i64,
    only: Option<&str>,
    limit: u32,
) -> rusqlite::Result<Vec<StoredEvent>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM events WHERE sequence > ?1 AND (?2 IS NULL OR origin = ?2)
         ORDER BY sequence LIMIT ?3",
        read::EVENT_COLUMNS
    ))?
    .query_map(params![after, only, limit], read::stored_event)?
    .collect()
}

/// Up to [`PAGE`] events after `after`, and the position they cover: the last one's, or the
/// head when fewer came back (nothing else to publish up to it). Read in one transaction, so
/// the head is never ahead of what the events read could see.
fn page(conn: &Connection, after: i64, only: Option<&str>) -> rusqlite::Result<Page> {
    let tx = conn.unchecked_transaction()?;
    let events = page_of(&tx, after, only, PAGE)?;
    let through = if events.len() < PAGE as usize {
        read::head(&tx)?.max(after)
    } else {
        events.last().map_or(after, |e| e.sequence)
    };
    tx.finish()?;
    Ok(Page { events, through })
}
