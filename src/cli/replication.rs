//! `hooklog serve`'s flags for many machines: this hooklog's name (`--origin`), publishing to a
//! JetStream stream (`--publish`), and consuming one as an aggregator (`--subscribe`). See
//! docs/scale-out.md.

use crate::jetstream::{DEFAULT_STREAM, Subscription, Target};
use anyhow::bail;
use clap::Args;

#[derive(Args, Debug, Default)]
pub struct ReplicationArgs {
    /// This hooklog's name, recorded as `origin` on every event it stores first (default: the
    /// host name). Give each machine its own.
    #[arg(long, env = "HOOKLOG_ORIGIN")]
    pub origin: Option<String>,
    /// Publish every committed event to NATS JetStream at this URL (`nats://host:4222`; a
    /// comma-separated list for a cluster).
    #[arg(long, env = "HOOKLOG_PUBLISH")]
    pub publish: Option<String>,
    /// The stream published to and consumed from (created if missing).
    #[arg(long, env = "HOOKLOG_PUBLISH_STREAM", default_value = DEFAULT_STREAM)]
    pub publish_stream: String,
    /// Copies of the stream a NATS cluster keeps, when this hooklog creates it (1, 3 or 5).
    #[arg(long, env = "HOOKLOG_PUBLISH_REPLICAS", default_value_t = 1)]
    pub publish_replicas: usize,
    /// Run as an aggregator: consume the stream at this NATS URL and append its events here.
    #[arg(long, env = "HOOKLOG_SUBSCRIBE")]
    pub subscribe: Option<String>,
    /// The aggregator's durable consumer (default: `aggregator-<origin>`). Each aggregator
    /// needs its own to receive every event.
    #[arg(long, env = "HOOKLOG_SUBSCRIBE_DURABLE")]
    pub subscribe_durable: Option<String>,
}

/// What the flags configure: the origin, and where to publish and consume.
pub struct Replication {
    pub origin: String,
    pub publish: Option<Target>,
    pub subscribe: Option<Subscription>,
}

impl ReplicationArgs {
    pub fn replication(&self) -> anyhow::Result<Replication> {
        let origin = match self.origin.as_deref().map(str::trim) {
            None => crate::config::host_name(),
            Some(o) if valid_name(o, crate::ingest::canonical::MAX_ORIGIN_CHARS) => o.to_string(),
            Some(o) => bail!(
                "--origin {o:?} must be 1 to 253 characters without white space or control characters"
            ),
        };
        if !valid_name(&self.publish_stream, 255) || self.publish_stream.contains(['.', '*', '>']) {
            bail!("--publish-stream must be a JetStream stream name (no '.', '*', '>' or spaces)");
        }
        if ![1, 3, 5].contains(&self.publish_replicas) {
            bail!("--publish-replicas must be 1, 3 or 5");
        }
        let target = |url: &str| Target {
            url: url.to_string(),
            stream: self.publish_stream.clone(),
            replicas: self.publish_replicas,
        };
        let durable = match &self.subscribe_durable {
            Some(d) => d.clone(),
            None => format!("aggregator-{origin}").replace(['.', '*', '>', ' '], "_"),
        };
        if !valid_name(&durable, 255) || durable.contains(['.', '*', '>']) {
            bail!("--subscribe-durable must be a consumer name (no '.', '*', '>' or spaces)");
        }
        Ok(Replication {
            publish: self.publish.as_deref().map(target),
            subscribe: self.subscribe.as_deref().map(|url| Subscription {
                target: target(url),
                durable,
            }),
            origin,
        })
    }
}

fn valid_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.chars().count() <= max
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}
