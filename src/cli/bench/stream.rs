//! `hooklog bench stream`: how event streams hold up.
//! - `catchup`: posts N events, then one client replays them over the global stream from a
//!   cursor and counts them; reports events/s received.
//! - `fanout`: S subscribers on one session (`from=now`) while events are posted at R/s; every
//!   subscriber must receive every event; reports the delivery lag (the event's `receivedAt`,
//!   set just before its commit, to the moment a subscriber reads it) and the server's memory.

use super::Server;
use super::ingest::Load;
use crate::config::Durability;
use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use clap::{Args, ValueEnum};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
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
                self.catchup(&url).await?;
            }
            if matches!(self.scenario, StreamScenario::Fanout | StreamScenario::All) {
                self.fanout(&url).await?;
                if let Some(rss) = server.rss() {
                    println!("  server memory with the subscribers still connected: {rss}");
                }
            }
            anyhow::Ok(())
        });
        server.stop();
        result
    }

    async fn catchup(&self, url: &str) -> anyhow::Result<()> {
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
        let started = Instant::now();
        let mut stream = open(url, &format!("/events?after_sequence={before}")).await?;
        let mut counter = FrameCounter::default();
        while counter.events < self.events {
            let frame = stream.frame().await.context("the replay ended early")?;
            counter.count(&frame);
        }
        let elapsed = started.elapsed();
        println!(
            "  replayed {} events over one SSE connection in {:.2} s: {:.0} events/s",
            counter.events,
            elapsed.as_secs_f64(),
            counter.events as f64 / elapsed.as_secs_f64()
        );
        Ok(())
    }

    async fn fanout(&self, url: &str) -> anyhow::Result<()> {
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
                    sample_every: 10,
                    sample_offset: s % 10,
                    ..Default::default()
                };
                while counter.events < total {
                    let Some(frame) = stream.frame().await else {
                        break;
                    };
                    counter.count(&frame);
                }
                received.fetch_add(counter.events, Ordering::Relaxed);
                lags.lock().await.extend(counter.lags);
                counter.events
            }));
        }
        println!(
            "\nfanout: {} subscribers on one session, {} events/s for {} s",
            self.subscribers, self.rate, self.seconds
        );
        post_at_rate(url, &session, self.rate, self.seconds).await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut short = 0;
        for subscriber in subscribers {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, subscriber).await {
                Ok(Ok(n)) if n == total => {}
                _ => short += 1,
            }
        }
        let mut lags = lags.lock().await.clone();
        lags.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            lags.get(((lags.len() as f64 * p) as usize).min(lags.len().saturating_sub(1)))
                .copied()
                .unwrap_or_default()
        };
        println!(
            "  delivered {} of {} events ({} subscribers short)\n  delivery lag ms (sampled, {} samples): p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
            received.load(Ordering::Relaxed),
            total * self.subscribers,
            short,
            lags.len(),
            pct(0.5),
            pct(0.9),
            pct(0.99),
            lags.last().copied().unwrap_or_default(),
        );
        if short > 0 {
            bail!("{short} subscribers did not receive every event");
        }
        Ok(())
    }
}

/// Posts `rate` events per second to `session` for `seconds`, in ten batches a second.
async fn post_at_rate(url: &str, session: &str, rate: usize, seconds: u64) -> anyhow::Result<()> {
    let client = reqwest::Client::new();
    let per_tick = rate.div_ceil(10);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut sent = 0;
    while sent < rate * seconds as usize {
        tick.tick().await;
        let n = per_tick.min(rate * seconds as usize - sent);
        let body: Vec<String> = (sent..sent + n)
            .map(|i| serde_json::json!({"type": "PostToolUse", "sessionId": session, "payload": {"i": i, "tool_name": "Bash"}}).to_string())
            .collect();
        let response = client
            .post(format!("{url}/events"))
            .header("content-type", "application/x-ndjson")
            .body(body.join("\n"))
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("the server answered {}", response.status());
        }
        sent += n;
    }
    Ok(())
}

async fn head(url: &str) -> anyhow::Result<i64> {
    let health: serde_json::Value = reqwest::get(format!("{url}/health")).await?.json().await?;
    health["headSequence"]
        .as_i64()
        .context("no headSequence in /health")
}

/// One SSE connection on its own bare hyper HTTP/1.1 connection, read frame by frame.
struct SseConnection {
    body: hyper::body::Incoming,
    buffer: Vec<u8>,
    /// Where the next frame starts in `buffer`, and how far it has been searched for its end.
    start: usize,
    searched: usize,
}

async fn open(url: &str, path: &str) -> anyhow::Result<SseConnection> {
    let authority = url.trim_start_matches("http://").to_string();
    let stream = tokio::net::TcpStream::connect(&authority).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let request = hyper::Request::get(path)
        .header("host", &authority)
        .header("accept", "text/event-stream")
        .body(Empty::<Bytes>::new())?;
    let response = sender.send_request(request).await?;
    if !response.status().is_success() {
        bail!("opening {path}: {}", response.status());
    }
    Ok(SseConnection {
        body: response.into_body(),
        buffer: Vec::new(),
        start: 0,
        searched: 0,
    })
}

impl SseConnection {
    /// The next frame (with its blank-line terminator), or `None` when the stream ends.
    async fn frame(&mut self) -> Option<Vec<u8>> {
        loop {
            let from = self.searched.max(self.start + 1);
            if let Some(at) = self
                .buffer
                .get(from..)
                .and_then(|rest| rest.windows(2).position(|w| w == b"\n\n"))
            {
                let end = from + at + 2;
                let frame = self.buffer[self.start..end].to_vec();
                self.start = end;
                self.searched = end;
                return Some(frame);
            }
            self.searched = self.buffer.len().saturating_sub(1);
            // Drop what was consumed before reading more, so the buffer stays small.
            self.buffer.drain(..self.start);
            self.searched -= self.start.min(self.searched);
            self.start = 0;
            let chunk = self.body.frame().await?.ok()?;
            if let Ok(data) = chunk.into_data() {
                self.buffer.extend_from_slice(&data);
            }
        }
    }
}

/// Counts event frames; on every `sample_every`-th one, measures the delivery lag.
#[derive(Default)]
struct FrameCounter {
    events: usize,
    sample_every: usize,
    sample_offset: usize,
    lags: Vec<f64>,
}

impl FrameCounter {
    fn count(&mut self, frame: &[u8]) {
        let Some(data) = frame
            .split(|b| *b == b'\n')
            .find(|l| l.starts_with(b"data:"))
        else {
            return;
        };
        self.events += 1;
        if self.sample_every == 0 || self.events % self.sample_every != self.sample_offset {
            return;
        }
        let now = Utc::now();
        let text = String::from_utf8_lossy(data);
        let Some(at) = text.find("\"receivedAt\":\"").map(|i| i + 14) else {
            return;
        };
        if let Some(received) = text
            .get(at..at + 24)
            .and_then(|t| t.parse::<DateTime<Utc>>().ok())
        {
            self.lags
                .push((now - received).num_microseconds().unwrap_or(0) as f64 / 1000.0);
        }
    }
}
