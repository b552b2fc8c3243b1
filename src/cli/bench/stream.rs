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
use memchr::memmem::Finder;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
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

/// One SSE connection on its own bare hyper HTTP/1.1 connection, read frame by frame. The
/// reader finds frame ends with `memchr` and hands out frames in place: the load generator
/// shares the server's two cores, so what it spends per event is taken from the server.
/// The connection is driven by the task that reads it (not spawned), so a chunk costs one task
/// wake-up, not two.
struct SseConnection {
    connection: Pin<Box<Http1Connection>>,
    body: hyper::body::Incoming,
    /// A frame cut across chunks, and how far it has been searched for its end.
    buffer: Vec<u8>,
    searched: usize,
}

type Http1Connection = hyper::client::conn::http1::Connection<
    hyper_util::rt::TokioIo<tokio::net::TcpStream>,
    Empty<Bytes>,
>;

/// Bytes each SSE connection of the load generator reads at a time.
const READ_BUFFER: usize = 64 * 1024;

async fn open(url: &str, path: &str) -> anyhow::Result<SseConnection> {
    let authority = url.trim_start_matches("http://").to_string();
    let stream = tokio::net::TcpStream::connect(&authority).await?;
    // A fixed read buffer: hyper's adaptive one grows each connection's buffer from 8 KiB up to
    // ~400 KiB under a burst, and with 1,000 connections doing that at once the first second
    // of a run went mostly to zeroing fresh memory in this process (perf: over half of its
    // samples in the kernel's clear_page), so subscribers fell behind for reasons of the
    // load generator's own, not the server's.
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .read_buf_exact_size(Some(READ_BUFFER))
        .handshake(hyper_util::rt::TokioIo::new(stream))
        .await?;
    let mut connection = Box::pin(connection);
    let request = hyper::Request::get(path)
        .header("host", &authority)
        .header("accept", "text/event-stream")
        .body(Empty::<Bytes>::new())?;
    let response = tokio::select! {
        response = sender.send_request(request) => response?,
        ended = &mut connection => bail!("the connection ended before an answer: {ended:?}"),
    };
    if !response.status().is_success() {
        bail!("opening {path}: {}", response.status());
    }
    Ok(SseConnection {
        connection,
        body: response.into_body(),
        buffer: Vec::new(),
        searched: 0,
    })
}

impl SseConnection {
    /// Reads the next chunk and hands every frame it completes (with its blank-line
    /// terminator) to `each`; `false` when the stream has ended. A chunk of whole frames is
    /// read where it lies; only a frame cut across chunks is copied.
    async fn read(&mut self, mut each: impl FnMut(&[u8])) -> bool {
        let chunk = tokio::select! {
            chunk = self.body.frame() => match chunk {
                Some(Ok(chunk)) => chunk,
                _ => return false,
            },
            _ = &mut self.connection => return false,
        };
        let Ok(chunk) = chunk.into_data() else {
            return true;
        };
        let in_place = self.buffer.is_empty();
        let (data, mut from): (&[u8], usize) = if in_place {
            (&chunk, 0)
        } else {
            self.buffer.extend_from_slice(&chunk);
            (&self.buffer, self.searched)
        };
        let mut start = 0;
        while let Some(at) = frame_end(&data[from..]) {
            let end = from + at + 2;
            each(&data[start..end]);
            start = end;
            from = end;
        }
        if in_place {
            self.buffer.extend_from_slice(&chunk[start..]);
        } else {
            self.buffer.drain(..start);
        }
        // A terminator may straddle the next chunk: search again from the last byte.
        self.searched = self.buffer.len().saturating_sub(1);
        true
    }
}

/// Where the first blank line (`\n\n`) starts. Line breaks are a few per frame, so stepping
/// from one to the next with `memchr` is cheaper than a two-byte substring search.
fn frame_end(data: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'\n', data).find(|&i| data.get(i + 1) == Some(&b'\n'))
}

static DATA_LINE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\ndata:"));
static RECEIVED_AT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"receivedAt\":\""));

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

/// Counts event frames; on every `sample_every`-th one, measures the delivery lag (and keeps
/// the event's `receivedAt`, in µs, beside it).
#[derive(Default)]
struct FrameCounter {
    events: usize,
    sample_every: usize,
    sample_offset: usize,
    lags: Vec<(i64, f64)>,
}

impl FrameCounter {
    fn count(&mut self, frame: &[u8]) {
        let Some(at) = (if frame.starts_with(b"data:") {
            Some(0)
        } else {
            DATA_LINE.find(frame).map(|i| i + 1)
        }) else {
            return;
        };
        self.events += 1;
        if self.sample_every == 0 || self.events % self.sample_every != self.sample_offset {
            return;
        }
        let now = Utc::now();
        let data = &frame[at..];
        let data = &data[..memchr::memchr(b'\n', data).unwrap_or(data.len())];
        let Some(at) = RECEIVED_AT
            .find(data)
            .map(|i| i + RECEIVED_AT.needle().len())
        else {
            return;
        };
        if let Some(received) = data
            .get(at..at + 24)
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| t.parse::<DateTime<Utc>>().ok())
        {
            let lag = (now - received).num_microseconds().unwrap_or(0) as f64 / 1000.0;
            self.lags.push((received.timestamp_micros(), lag));
        }
    }
}
