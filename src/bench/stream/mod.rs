//! `hooklog bench stream`: how event streams hold up.
//! - `catchup`: posts N events, then one client replays them over the global stream from a
//!   cursor and counts them; reports events/s received.
//! - `fanout`: S subscribers on one session (`from=now`) while events are posted at R/s; every
//!   subscriber must receive every event; reports the delivery lag (the event's `receivedAt`,
//!   set just before its commit, to the moment a subscriber reads it) and the server's memory.

mod client;

use super::Server;
use super::ingest::Load;
use crate::config::Durability;
use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use client::{FrameCounter, open};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
pub enum StreamScenario {
    Catchup,
    Fanout,
    All,
}

#[derive(Args)]
pub struct StreamArgs {
    /// A running hooklog to load. Default: start a fresh one on a temporary database.
    #[arg(long)]
    pub url: Option<String>,
    #[arg(long, value_enum, default_value_t = StreamScenario::All)]
    pub scenario: StreamScenario,
    /// Events posted, then replayed, by `catchup`.
    #[arg(long, default_value_t = 1_000_000)]
    pub events: usize,
    /// Subscribers of `fanout`.
    #[arg(long, default_value_t = 1_000)]
    pub subscribers: usize,
    /// Events per second posted during `fanout`.
    #[arg(long, default_value_t = 2_000)]
    pub rate: usize,
    /// How often `fanout` posts a batch, in milliseconds: each request carries `rate * tick /
    /// 1000` events, so a longer tick makes bigger bursts at the same rate.
    #[arg(long, default_value_t = 100)]
    pub tick_ms: u64,
    /// How long `fanout` posts, in seconds.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Durability of the server this command starts.
    #[arg(long, value_enum, default_value_t = Durability::Full)]
    pub durability: Durability,
}

impl StreamArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Runtime::new()?;
        let mut server = Server::external_or_start(self.url.as_deref(), self.durability)?;
        let url = server.url();
        let result = runtime.block_on(async {
            if matches!(self.scenario, StreamScenario::Catchup | StreamScenario::All) {
                self.catchup(&url, &server).await?;
            }
            if matches!(self.scenario, StreamScenario::Fanout | StreamScenario::All) {
                self.fanout(&url, &server).await?;
                if let Some(rss) = server.rss() {
                    println!("  server memory with the subscribers still connected: {rss}");
                }
            }
            anyhow::Ok(())
        });
        server.stop();
        result
    }

    async fn catchup(&self, url: &str, server: &Server) -> anyhow::Result<()> {
        let before = head(url).await?;
        let load = Load {
            url: url.to_string(),
            events: self.events,
            connections: 8,
            batch: 1_000,
            sessions: 50,
        };
        let posted = load.run().await?;
        println!(
            "\ncatchup: posted {} events in {:.1} s",
            self.events,
            posted.elapsed.as_secs_f64()
        );
        let cpu = Cpu::now(server);
        let started = Instant::now();
        let mut stream = open(url, &format!("/events?after_sequence={before}")).await?;
        let mut counter = FrameCounter::default();
        while counter.events < self.events {
            if !stream.read(|frame| counter.count(frame)).await {
                bail!("the replay ended early");
            }
        }
        let elapsed = started.elapsed();
        println!(
            "  replayed {} events over one SSE connection in {:.2} s: {:.0} events/s",
            counter.events,
            elapsed.as_secs_f64(),
            counter.events as f64 / elapsed.as_secs_f64()
        );
        cpu.report(server);
        Ok(())
    }

    async fn fanout(&self, url: &str, server: &Server) -> anyhow::Result<()> {
        let session = format!("fanout-{}", std::process::id());
        let lags = Arc::new(Mutex::new(Vec::new()));
        let received = Arc::new(AtomicUsize::new(0));
        let total = self.rate * self.seconds as usize;
        let mut subscribers = Vec::new();
        for s in 0..self.subscribers {
            let mut stream = open(url, &format!("/sessions/{session}/events?from=now")).await?;
            let (lags, received) = (lags.clone(), received.clone());
            subscribers.push(tokio::spawn(async move {
                let mut counter = FrameCounter {
                    sample_every: 50,
                    sample_offset: s % 50,
                    ..Default::default()
                };
                while counter.events < total {
                    if !stream.read(|frame| counter.count(frame)).await {
                        break;
                    }
                }
                received.fetch_add(counter.events, Ordering::Relaxed);
                lags.lock().await.extend(counter.lags);
                counter.events
            }));
        }
        println!(
            "\nfanout: {} subscribers on one session, {} events/s for {} s, posted every {} ms",
            self.subscribers, self.rate, self.seconds, self.tick_ms
        );
        let cpu = Cpu::now(server);
        let posting = Instant::now();
        post_at_rate(url, &session, self.rate, self.seconds, self.tick_ms).await?;
        let posting = posting.elapsed().as_secs_f64();
        println!(
            "  posted {total} events in {posting:.2} s: {:.0} events/s",
            total as f64 / posting
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut short = 0;
        for subscriber in subscribers {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, subscriber).await {
                Ok(Ok(n)) if n == total => {}
                _ => short += 1,
            }
        }
        cpu.report(server);
        let samples: Vec<(i64, f64)> = lags.lock().await.clone();
        println!(
            "  delivered {} of {} events ({} subscribers short)\n  delivery lag ms (sampled, {} samples): {}",
            received.load(Ordering::Relaxed),
            total * self.subscribers,
            short,
            samples.len(),
            Percentiles::of(samples.iter().map(|s| s.1)),
        );
        // The first second and the rest, apart: a start-up cost (it was this load generator's
        // read buffers growing on every connection at once, see `READ_BUFFER`) shows there.
        let first = samples.iter().map(|s| s.0).min().unwrap_or_default();
        let (early, steady): (Vec<&(i64, f64)>, Vec<_>) =
            samples.iter().partition(|s| s.0 < first + 1_000_000);
        println!(
            "    events of the first second: {}\n    every later event: {}",
            Percentiles::of(early.iter().map(|s| s.1)),
            Percentiles::of(steady.iter().map(|s| s.1)),
        );
        if short > 0 {
            bail!("{short} subscribers did not receive every event");
        }
        Ok(())
    }
}

/// Posts `rate` events per second to `session` for `seconds`, one NDJSON batch every `tick_ms`.
/// Each batch is sent on the tick without waiting for the one before to be answered, so a slow
/// answer does not lower the rate (as many agents posting at once would not wait either).
async fn post_at_rate(
    url: &str,
    session: &str,
    rate: usize,
    seconds: u64,
    tick_ms: u64,
) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    let tick_ms = tick_ms.clamp(1, 1000);
    let per_tick = (rate * tick_ms as usize).div_ceil(1000).max(1);
    let total = rate * seconds as usize;
    let mut tick = tokio::time::interval(Duration::from_millis(tick_ms));
    let mut posts = tokio::task::JoinSet::new();
    let mut sent = 0;
    while sent < total {
        tick.tick().await;
        let n = per_tick.min(total - sent);
        let body: Vec<String> = (sent..sent + n)
            .map(|i| serde_json::json!({"type": "PostToolUse", "sessionId": session, "payload": {"i": i, "tool_name": "Bash"}}).to_string())
            .collect();
        let request = client
            .post(format!("{url}/events"))
            .header("content-type", "application/x-ndjson")
            .body(body.join("\n"));
        posts.spawn(async move {
            let response = request.send().await?;
            if !response.status().is_success() {
                bail!("the server answered {}", response.status());
            }
            anyhow::Ok(())
        });
        sent += n;
    }
    while let Some(posted) = posts.join_next().await {
        posted??;
    }
    Ok(())
}

/// CPU time used by the server and by this load generator since a start point: both share the
/// machine's cores, so each one's cost is taken from the other.
struct Cpu {
    server: Option<f64>,
    client: Option<f64>,
}

impl Cpu {
    fn now(server: &Server) -> Cpu {
        Cpu {
            server: server.cpu_seconds(),
            client: super::cpu_seconds("/proc/self/stat"),
        }
    }

    fn report(&self, server: &Server) {
        let now = Cpu::now(server);
        let used = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2} s", b - a),
            _ => "unknown".to_string(),
        };
        println!(
            "  CPU used: server {}, load generator {}",
            used(self.server, now.server),
            used(self.client, now.client)
        );
    }
}

async fn head(url: &str) -> anyhow::Result<i64> {
    let health: serde_json::Value = reqwest::get(format!("{url}/health")).await?.json().await?;
    health["headSequence"]
        .as_i64()
        .context("no headSequence in /health")
}

/// Lag percentiles, printed as one line.
struct Percentiles(Vec<f64>);

impl Percentiles {
    fn of(lags: impl Iterator<Item = f64>) -> Percentiles {
        let mut lags: Vec<f64> = lags.collect();
        lags.sort_by(f64::total_cmp);
        Percentiles(lags)
    }

    fn at(&self, p: f64) -> f64 {
        super::quantile(&self.0, p).unwrap_or_default()
    }
}

impl std::fmt::Display for Percentiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
            self.at(0.5),
            self.at(0.9),
            self.at(0.99),
            self.0.last().copied().unwrap_or_default()
        )
    }
}
