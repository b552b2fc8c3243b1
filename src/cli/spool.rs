//! `hooklog spool status|flush|clear`: see and act on what `hooklog hook` has not delivered.

use super::forwarder::SpoolArgs;
use crate::forward::{self, Drained, Sender, Target};
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct SpoolCommand {
    #[command(subcommand)]
    pub action: SpoolAction,
    #[command(flatten)]
    pub spool: SpoolArgs,
}

#[derive(Subcommand, Debug)]
pub enum SpoolAction {
    /// How many events wait, how old they are, and what was dropped.
    Status {
        /// As one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Deliver every spooled event now, in order; exits non-zero if some are left.
    Flush {
        /// The hooklog to deliver to.
        #[arg(long, env = "HOOKLOG_URL", default_value = super::forwarder::DEFAULT_URL)]
        url: String,
        /// Sent as `Authorization: Bearer` when set.
        #[arg(long, env = "HOOKLOG_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Per request, in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
    },
    /// Delete every spooled event (each is named in the dropped log).
    Clear,
}

/// How long `flush` and `clear` wait for a running hook to finish its drain.
const LOCK_WAIT: Duration = Duration::from_secs(10);

impl SpoolCommand {
    pub fn run(self) -> anyhow::Result<()> {
        let spool = self.spool.open().context("cannot open the spool")?;
        match self.action {
            SpoolAction::Status { json } => status(&spool, json),
            SpoolAction::Flush {
                url,
                token,
                timeout_ms,
            } => flush(
                &spool,
                Target { url, token },
                Duration::from_millis(timeout_ms),
            ),
            SpoolAction::Clear => clear(&spool),
        }
    }
}

fn status(spool: &forward::spool::Spool, as_json: bool) -> anyhow::Result<()> {
    let listed = spool.list()?;
    let dropped = spool.dropped()?;
    let bytes: u64 = listed.iter().map(|l| l.bytes).sum();
    let time = |nanos: u128| {
        let t = chrono::DateTime::from_timestamp_nanos(i64::try_from(nanos).unwrap_or(i64::MAX));
        crate::event::time::format(t)
    };
    let oldest = listed.first().map(|l| time(l.captured_nanos));
    let newest = listed.last().map(|l| time(l.captured_nanos));
    if as_json {
        let report = json!({
            "dir": spool.dir(),
            "events": listed.len(),
            "bytes": bytes,
            "oldestCapturedAt": oldest,
            "newestCapturedAt": newest,
            "dropped": dropped.len(),
            "lastDropped": dropped.last(),
        });
        println!("{report}");
        return Ok(());
    }
    println!("spool   {}", spool.dir().display());
    match (oldest, newest) {
        (Some(oldest), Some(newest)) => println!(
            "waiting {} events, {bytes} bytes, captured {oldest} .. {newest}",
            listed.len()
        ),
        _ => println!("waiting 0 events"),
    }
    println!(
        "dropped {} (see {})",
        dropped.len(),
        forward::spool::DROPPED_LOG
    );
    for d in dropped.iter().rev().take(5) {
        println!(
            "  {} {} {}",
            d.time,
            d.id.as_deref().unwrap_or("-"),
            d.reason
        );
    }
    Ok(())
}

fn flush(spool: &forward::spool::Spool, target: Target, timeout: Duration) -> anyhow::Result<()> {
    let url = target.url.clone();
    let _lock = spool
        .lock(Instant::now() + LOCK_WAIT)
        .context("another run holds the spool's lock; try again")?;
    let dropped = spool.enforce_limits()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let sender = Sender::new(target)?;
    let mut total = Drained::default();
    runtime.block_on(async {
        loop {
            let round = forward::drain(spool, &sender, Instant::now() + timeout, 100).await;
            total.delivered += round.delivered;
            total.duplicates += round.duplicates;
            total.rejected += round.rejected;
            let progressed = round.delivered + round.rejected > 0;
            if round.stopped.is_some() || !progressed {
                total.stopped = round.stopped;
                break;
            }
        }
    });
    let left = spool.list()?.len();
    println!(
        "delivered {} ({} already stored), rejected {}, dropped by the limits {dropped}, left {left}",
        total.delivered, total.duplicates, total.rejected
    );
    if left > 0 {
        bail!(
            "{left} events are still spooled: {} ({url})",
            total.stopped.as_deref().unwrap_or("not delivered")
        );
    }
    Ok(())
}

fn clear(spool: &forward::spool::Spool) -> anyhow::Result<()> {
    let _lock = spool
        .lock(Instant::now() + LOCK_WAIT)
        .context("another run holds the spool's lock; try again")?;
    let listed = spool.list()?;
    for l in &listed {
        spool.drop_listed(l, "cleared by `hooklog spool clear`")?;
    }
    println!("cleared {} events", listed.len());
    Ok(())
}
