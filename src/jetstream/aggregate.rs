//! The aggregator: a durable pull consumer on the stream hands each message to the writer's
//! ordinary append path, the one `POST /events` takes (the body is the event's recording line,
//! so its id, `origin`, `eventTime` and `receivedAt` are kept; the sequence numbers are this
//! log's own). A message is acknowledged only after its event is committed here: one that
//! arrives again (redelivered after a crash, or published twice past JetStream's duplicate
//! window) finds its id stored and is a duplicate, not a second row.
//!
//! Order. Messages are appended in the stream's order, so each session's events keep the
//! order their origin gave them. JetStream redelivers a message that was delivered but never
//! acknowledged (the aggregator or NATS died in between) only after the ack wait, behind newer
//! ones; appending it then would put it after its successors. So this log keeps its own
//! position in the stream (`consumed`), the consumer is made anew to start right after it
//! whenever a connection begins, and a message that is not the next one in the stream ends the
//! connection (the next one starts again from the position).

use super::check::{self, Flagged, Refusal, Rename};
use super::status::{self, Link, Replication};
use super::{BACKOFF_START, Subscription, connect, ensure_stream, next_backoff, still_connected};
use crate::event::NewEvent;
use crate::store::{AppendError, Position, Store, read};
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
use async_nats::jetstream::stream::ConsumerErrorKind;
use async_nats::jetstream::{AckKind, Message};
use futures_util::{FutureExt, StreamExt};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages taken at once, at most (all appended, then acknowledged, before the next ones).
const BATCH: usize = 256;
/// With no message for this long, the task still looks at its connection and records its
/// position.
const WAIT: Duration = Duration::from_secs(1);
/// How long JetStream waits for an ack before delivering a message again.
const ACK_WAIT: Duration = Duration::from_secs(30);
/// The recorded position is written at most this often while messages keep coming.
const RECORD_EVERY: Duration = Duration::from_millis(250);
/// Each connection starts this many messages before the position. A NATS server 2.9 can lose
/// the last messages it acknowledged when it is killed (its file store writes them out a
/// moment later), and then gives their stream sequences to the next messages: what this log
/// took from there is taken again (duplicates, by id), so nothing stored in those places
/// since is skipped.
const REWIND: u64 = 1024;

type Failure = async_nats::Error;

pub struct Aggregator {
    pub store: Arc<Store>,
    pub source: Subscription,
    pub status: Arc<Replication>,
}

/// Where `message` is in the stream, for the notice that flags it.
fn flagged<'a>(stream: &'a str, message: &'a Message) -> Result<Flagged<'a>, Failure> {
    Ok(Flagged {
        stream,
        stream_sequence: message.info()?.stream_sequence,
        subject: &message.subject,
        claimed: None,
    })
}

/// What became of one message.
enum Outcome {
    Appended {
        duplicates: u64,
    },
    Refused(String),
    /// The writer has stopped (shutdown): nothing more can be appended.
    Stopped,
}

impl Aggregator {
    /// Runs until the task is aborted (at shutdown) or the writer stops.
    pub async fn run(self) {
        let stream = self.source.target.stream.clone();
        let mut position = loop {
            let stream = stream.clone();
            match self
                .store
                .read(move |conn| read::position(conn, Position::Consumed, &stream))
                .await
            {
                Ok(p) => break p as u64,
                Err(e) => {
                    tracing::error!(error = %e, "reading the consumed position; retrying");
                    tokio::time::sleep(super::BACKOFF_MAX).await;
                }
            }
        };
        let mut backoff = BACKOFF_START;
        let mut failures = 0u64;
        loop {
            let error = match self.session(&mut position, &mut backoff).await {
                Ok(()) => return,
                Err(e) => e.to_string(),
            };
            failures += 1;
            if failures == 1 || failures.is_multiple_of(50) {
                tracing::warn!(%error, failures, url = %self.source.target.url, "consuming from NATS failed; retrying");
            }
            self.status.update_aggregating(|a| {
                status::failed(&mut a.link, &mut a.last_error, &mut a.last_error_at, error)
            });
            tokio::time::sleep(backoff).await;
            backoff = next_backoff(backoff);
        }
    }

    /// One connection's worth of consuming, from the message after `position` (the stream
    /// sequence of the last message committed here): returns only on an error, or `Ok` once
    /// the writer has stopped (at shutdown).
    async fn session(&self, position: &mut u64, backoff: &mut Duration) -> Result<(), Failure> {
        let js = connect(&self.source.target.url).await?;
        let mut stream = ensure_stream(&js, &self.source.target).await?;
        let last = stream.info().await?.state.last_sequence;
        *position = (*position).min(last).saturating_sub(REWIND);
        let durable = &self.source.durable;
        match stream.delete_consumer(durable).await {
            Ok(_) => {}
            // Not found: nothing to reset.
            Err(e) if matches!(e.kind(), ConsumerErrorKind::JetStream(_)) => {}
            Err(e) => return Err(e.into()),
        }
        let deliver_policy = match *position {
            0 => DeliverPolicy::All,
            p => DeliverPolicy::ByStartSequence {
                start_sequence: p + 1,
            },
        };
        let consumer = stream
            .create_consumer(pull::Config {
                durable_name: Some(durable.clone()),
                deliver_policy,
                ack_policy: AckPolicy::Explicit,
                ack_wait: ACK_WAIT,
                ..Default::default()
            })
            .await?;
        self.status.update_aggregating(|a| a.link = Link::Ok);
        tracing::info!(url = %self.source.target.url, stream = %self.source.target.stream,
                       durable, after = *position, "consuming from JetStream");
        // The first message of a fresh consumer is the first the stream holds after the
        // position (earlier ones may have been removed by the stream's limits).
        let mut expected: Option<u64> = None;
        let mut recorded = (*position, Instant::now());
        // Pulled continuously (the client keeps a batch requested ahead): a message is taken as
        // soon as it is in the stream, with whatever else has arrived by then.
        let mut incoming = consumer
            .stream()
            .max_messages_per_batch(BATCH)
            .messages()
            .await?;
        loop {
            still_connected(&js)?;
            let mut messages = Vec::new();
            match tokio::time::timeout(WAIT, incoming.next()).await {
                Err(_idle) => {}
                Ok(None) => return Err("the consumer's message stream ended".into()),
                Ok(Some(message)) => messages.push(message?),
            }
            while messages.len() < BATCH {
                match incoming.next().now_or_never() {
                    Some(Some(message)) => messages.push(message?),
                    Some(None) | None => break,
                }
            }
            // Only the run of messages that follow one another in the stream is taken.
            let mut out_of_order = None;
            let mut sequences = Vec::with_capacity(messages.len());
            for (i, message) in messages.iter().enumerate() {
                let sequence = message.info()?.stream_sequence;
                if expected.is_some_and(|e| sequence != e) {
                    out_of_order = Some((i, sequence));
                    break;
                }
                expected = Some(sequence + 1);
                sequences.push(sequence);
            }
            let taken = &messages[..sequences.len()];
            if !taken.is_empty() {
                if self.append(taken).await? {
                    return Ok(());
                }
                *position = *sequences.last().expect("not empty");
                *backoff = BACKOFF_START;
                self.status.update_aggregating(|a| a.link = Link::Ok);
            }
            if let Some((i, sequence)) = out_of_order {
                let wanted = expected.unwrap_or_default();
                self.record(*position).await?;
                return Err(format!(
                    "message {sequence} of the stream came where {wanted} was due (a redelivery, \
                     {} of {} in its batch); starting again after {position}",
                    i + 1,
                    messages.len()
                )
                .into());
            }
            if recorded.0 != *position && (taken.is_empty() || recorded.1.elapsed() >= RECORD_EVERY)
            {
                self.record(*position).await?;
                recorded = (*position, Instant::now());
            }
        }
    }

    /// Appends `messages` in order, then acknowledges each after its commit. True when the
    /// writer has stopped (shutdown). Each message is screened first (`check`): one refused is
    /// recorded by a notice event, then terminated; an event whose id another origin holds is
    /// stored under its origin's name for it, with a notice in the same request.
    async fn append(&self, messages: &[Message]) -> Result<bool, Failure> {
        let screened: Vec<Result<NewEvent, Refusal>> = messages
            .iter()
            .map(|m| check::screen(&m.subject, &m.payload))
            .collect();
        let ids: Vec<String> = screened
            .iter()
            .filter_map(|s| s.as_ref().ok().map(|e| e.event_id.clone()))
            .collect();
        // Which origin holds each id: stored, or taken by an earlier message of this batch.
        let mut held = self
            .store
            .read(move |conn| read::stored_origins(conn, &ids))
            .await?;
        let stream = &self.source.target.stream;
        // Queued one after the other from this task, so appended in the stream's order.
        let mut answers = Vec::with_capacity(messages.len());
        for (message, screened) in messages.iter().zip(screened) {
            let flagged = flagged(stream, message)?;
            let (events, refusal) = match screened {
                Err(refusal) => (vec![check::refused(&flagged, &refusal)], Some(refusal)),
                Ok(mut event) => {
                    let origin = event.origin.clone().unwrap_or_default();
                    let flagged = Flagged {
                        claimed: Some((&event.event_id, &origin)),
                        ..flagged
                    };
                    let rename = match held.get(&event.event_id) {
                        _ if check::names_another_origin(&event.event_id, &origin) => {
                            Some(Rename::NamesAnotherOrigin)
                        }
                        Some(holder) if *holder != origin => Some(Rename::HeldBy(holder.clone())),
                        Some(_) => None,
                        None => {
                            held.insert(event.event_id.clone(), origin.clone());
                            None
                        }
                    };
                    match rename {
                        Some(why) => {
                            let own = check::own_id(&event.event_id, &origin);
                            let notice = check::renamed(&flagged, &own, &why);
                            event.event_id = own;
                            (vec![event, notice], None)
                        }
                        None => (vec![event], None),
                    }
                }
            };
            answers.push((refusal, self.store.writer.enqueue(events).await));
        }
        for (message, (refusal, answer)) in messages.iter().zip(answers) {
            let Ok(reply) = answer else { return Ok(true) };
            let outcome = match reply.await.unwrap_or(Err(AppendError::Stopped)) {
                Ok(appended) => match refusal {
                    Some(refusal) => Outcome::Refused(refusal.message()),
                    None => Outcome::Appended {
                        duplicates: appended.iter().filter(|a| a.duplicate).count() as u64,
                    },
                },
                Err(AppendError::Stopped) => Outcome::Stopped,
                // Not acknowledged: consumed again from the position when the database
                // takes writes again.
                Err(AppendError::Storage(e)) => return Err(e.into()),
                // Its id is stored with other content: recorded, then refused.
                Err(conflict) => {
                    let refusal = Refusal::Conflict(conflict.to_string());
                    let notice = check::refused(&flagged(stream, message)?, &refusal);
                    match self.store.writer.enqueue(vec![notice]).await {
                        Err(_) => Outcome::Stopped,
                        Ok(reply) => match reply.await.unwrap_or(Err(AppendError::Stopped)) {
                            Ok(_) => Outcome::Refused(refusal.message()),
                            Err(AppendError::Storage(e)) => return Err(e.into()),
                            Err(_) => Outcome::Stopped,
                        },
                    }
                }
            };
            match outcome {
                Outcome::Appended { duplicates } => {
                    message.ack().await?;
                    self.status.update_aggregating(|a| {
                        a.consumed += 1;
                        a.duplicates += duplicates;
                    });
                }
                Outcome::Refused(why) => self.refuse(message, why).await?,
                Outcome::Stopped => return Ok(true),
            }
        }
        Ok(false)
    }

    async fn record(&self, position: u64) -> Result<(), Failure> {
        let stream = &self.source.target.stream;
        let writer = &self.store.writer;
        Ok(writer
            .record_position(Position::Consumed, stream, position as i64)
            .await?)
    }

    /// Terminates a message that can never be appended, so it is not delivered again (its
    /// notice is committed already).
    async fn refuse(&self, message: &Message, why: String) -> Result<(), Failure> {
        tracing::error!(subject = %message.subject, why, "refused a message from the stream");
        message.ack_with(AckKind::Term).await?;
        self.status.update_aggregating(|a| {
            a.refused += 1;
            a.last_error = Some(why);
            a.last_error_at = Some(crate::event::time::now());
        });
        Ok(())
    }
}
