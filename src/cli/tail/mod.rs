//! `hooklog tail`: follow a session (or everything) as readable lines, or raw envelopes with
//! `--json`. It reconnects by itself with its cursor (the `Last-Event-ID` of the last event it
//! printed) and a capped backoff, so a restart of the server neither loses nor repeats a line.
//!
//! This file holds the flags; `follow.rs` is the reconnect loop and its cursor, `connect.rs`
//! opens the stream (and asks for its head), `print.rs` turns an event into a line.

mod connect;
mod follow;
mod print;

pub use print::{format_line, line, summary};

use clap::Args;

#[derive(Args, Debug)]
pub struct TailArgs {
    /// The session to follow; without it, every event.
    pub session: Option<String>,
    /// The hooklog to read from.
    #[arg(long, env = "HOOKLOG_URL", default_value = "http://127.0.0.1:2468")]
    pub url: String,
    /// Sent as `Authorization: Bearer` when set.
    #[arg(long, env = "HOOKLOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Start after this position (the session's sequence, or the global one without a session).
    #[arg(long, conflicts_with_all = ["after_event_id", "from_now"])]
    pub after_sequence: Option<i64>,
    /// Start after the event with this id.
    #[arg(long, conflicts_with = "from_now")]
    pub after_event_id: Option<String>,
    /// Only events from now on.
    #[arg(long)]
    pub from_now: bool,
    /// Only events of this type.
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// Only events first stored by this hooklog (their `origin`; see `serve --origin`).
    #[arg(long)]
    pub origin: Option<String>,
    /// Print each event's canonical envelope as one JSON line.
    #[arg(long)]
    pub json: bool,
}

impl TailArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(self.follow())
    }
}

#[cfg(test)]
mod tests;
