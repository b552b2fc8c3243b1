//! Many machines: this log published to a NATS JetStream stream, and a stream's events
//! appended to this log. JetStream is the distributed, replicated part (a stream replicated
//! over a cluster, de-duplication by `Nats-Msg-Id`, durable consumers that resume from a
//! position); each hooklog stays one SQLite file with one writer. hooklog never replicates
//! anything itself.
//!
//! - [`publish`]: the log is the outbox. A task reads committed events after the last position
//!   JetStream acknowledged (the `published` table), publishes each with a `Nats-Msg-Id` made
//!   from its content ([`message_id`]), waits for the acks, and records the new position through
//!   the writer. Ingest never waits for it; while NATS is away it retries, and resumes where it
//!   stopped.
//! - [`aggregate`]: a durable pull consumer hands each message to the writer's ordinary
//!   append path (id, origin and times kept) and acknowledges it only after the commit. A
//!   redelivered message is a duplicate by event id, not a second row. [`check`]: what it
//!   believes of a message (its origin is its subject's; ids are an origin's own).
//! - [`status`]: how both are doing, for `/health`, `/stats` and `/metrics`.
//!
//! Not to be confused with `http::origin`, the browser `Origin` header check: an event's
//! `origin` names the hooklog that first stored it.

pub mod aggregate;
pub mod check;
pub mod publish;
pub mod status;

use crate::config::Config;
use crate::store::Store;
use crate::stream::Hub;
use async_nats::jetstream::{self, stream};
use status::Replication;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The stream hooklog publishes to and consumes from unless told otherwise.
pub const DEFAULT_STREAM: &str = "HOOKLOG";
/// Subjects are `hooklog.events.<origin>.<type>`; the stream takes `hooklog.events.>`.
pub const SUBJECT_PREFIX: &str = "hooklog.events";
/// How long JetStream remembers a message id to drop a second publish of it (its default).
/// Past it, a republished event is dropped by the aggregators instead (by event id).
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);
/// How long a connection attempt may take before it counts as a failure and is retried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// JetStream requests (stream and consumer management, publish acks) give up after this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a client whose connection dropped waits before it would reconnect (see [`connect`]).
const ABANDONED_CLIENT_WAIT: Duration = Duration::from_secs(3600);
/// Retry delays while NATS is away: doubling from the first to the last.
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

pub use crate::config::{Subscription, Target};

/// Starts the publisher and the aggregator this configuration asks for, on the current
/// runtime. They run until aborted.
///
/// Chains without loops: a hooklog that consumes a server and publishes to the same server
/// (the same `--publish` and `--subscribe` URL) publishes only the events first stored here;
/// publishing to another server (the next link of a chain) sends every event.
pub fn start(
    store: &Arc<Store>,
    hub: &Hub,
    config: &Config,
    status: &Arc<Replication>,
) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    if let Some(target) = &config.publish {
        let own_events_only = config
            .subscribe
            .as_ref()
            .is_some_and(|s| s.target.url == target.url);
        status.update_publishing(|p| p.own_events_only = own_events_only);
        let publisher = publish::Publisher {
            store: store.clone(),
            hub: hub.clone(),
            target: target.clone(),
            own_events_only,
            status: status.clone(),
        };
        tasks.push(tokio::spawn(publisher.run()));
    }
    if let Some(source) = &config.subscribe {
        let aggregator = aggregate::Aggregator {
            store: store.clone(),
            source: source.clone(),
            status: status.clone(),
        };
        tasks.push(tokio::spawn(aggregator.run()));
    }
    tasks
}

/// The subject of an event: `hooklog.events.<origin>.<type>`, each part made a valid subject
/// token (`.`, `*`, `>` and white space become `_`).
pub fn subject(origin: &str, event_type: &str) -> String {
    format!("{SUBJECT_PREFIX}.{}.{}", token(origin), token(event_type))
}

/// The `Nats-Msg-Id` of a message: the SHA-256 of its subject and body, in hex. JetStream drops
/// a second message with an id it saw within its duplicate window, whatever its subject; an id
/// made from the content cannot be taken by a publisher that does not already hold that content
/// (an event id can: it may be known, or chosen, before the event is published). A message
/// published again carries the same id (its body is its stored event's recording line).
pub fn message_id(subject: &str, body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(subject.as_bytes())
        .chain_update(b"\n")
        .chain_update(body)
        .finalize();
    crate::event::id::hex(&digest)
}

fn token(part: &str) -> String {
    if part.is_empty() {
        return "_".to_string();
    }
    part.chars()
        .map(|c| match c {
            '.' | '*' | '>' => '_',
            c if c.is_whitespace() || c.is_control() => '_',
            c => c,
        })
        .collect()
}

/// Connects to NATS (`url` may list several servers, comma-separated) and returns its
/// JetStream context. Fails fast while no server answers (the caller retries).
///
/// One connection is one session: the client does not reconnect by itself. A client that
/// reconnects sends the publishes that were waiting when the connection dropped; if the server
/// lost some that were sent just before (a NATS 2.9 file store can lose what it acknowledged
/// last when it is killed), those sent late land in the stream ahead of the lost ones, which
/// the publisher sends again only after: their session's order would be broken. So after the
/// first connection the client waits an hour before it would try again, and the caller, which
/// sees its requests time out, starts a new session on a new client instead. (An abandoned
/// client that does reconnect after that hour only sends duplicates, dropped by id.)
async fn connect(url: &str) -> Result<jetstream::Context, async_nats::Error> {
    let servers: Vec<&str> = url.split(',').map(str::trim).collect();
    let connected = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let after_first = connected.clone();
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(CONNECT_TIMEOUT)
        .request_timeout(Some(REQUEST_TIMEOUT))
        .max_reconnects(servers.len())
        .reconnect_delay_callback(move |_| {
            match after_first.load(std::sync::atomic::Ordering::Acquire) {
                true => ABANDONED_CLIENT_WAIT,
                false => Duration::ZERO,
            }
        })
        .name("hooklog")
        .connect(servers)
        .await?;
    connected.store(true, std::sync::atomic::Ordering::Release);
    Ok(jetstream::ContextBuilder::new()
        .timeout(REQUEST_TIMEOUT)
        .build(client))
}

/// An error once the session's connection has dropped (its client does not reconnect: see
/// [`connect`]), so the caller starts a new session.
fn still_connected(js: &jetstream::Context) -> Result<(), async_nats::Error> {
    match js.client().connection_state() {
        async_nats::connection::State::Connected => Ok(()),
        state => Err(format!("the connection to NATS is {state:?}").into()),
    }
}

/// The stream, created with hooklog's settings if it does not exist yet. An existing stream is
/// used as it is (its operator may have set limits or placement of their own).
async fn ensure_stream(
    js: &jetstream::Context,
    target: &Target,
) -> Result<stream::Stream, async_nats::Error> {
    let config = stream::Config {
        name: target.stream.clone(),
        subjects: vec![format!("{SUBJECT_PREFIX}.>")],
        storage: stream::StorageType::File,
        num_replicas: target.replicas,
        duplicate_window: DUPLICATE_WINDOW,
        ..Default::default()
    };
    Ok(js.get_or_create_stream(config).await?)
}

/// The next retry delay after `current`.
fn next_backoff(current: Duration) -> Duration {
    (current * 2).min(BACKOFF_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_has_one_token_per_part_whatever_the_names_hold() {
        assert_eq!(
            subject("devbox-3", "PreToolUse"),
            "hooklog.events.devbox-3.PreToolUse"
        );
        assert_eq!(subject("a.b c", "x>*"), "hooklog.events.a_b_c.x__");
        assert_eq!(subject("", "t"), "hooklog.events._.t");
    }
}
