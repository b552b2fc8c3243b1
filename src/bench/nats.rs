//! `hooklog bench nats`: many machines end to end. Starts a `nats-server -js` on a temporary
//! store, a publishing hooklog and an aggregator (both children on temporary databases), posts
//! events to the publisher and follows the aggregator's global stream. Reports the rate at which
//! a burst reaches the aggregator, and, at a steady offered rate, the time from the publisher's
//! answer (its commit) to the event's frame on the aggregator's stream (its commit).

use super::{Server, quantile};
use anyhow::{Context, bail};
use clap::Args;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct NatsArgs {
    /// Events of the burst (posted as fast as the publisher takes them).
    #[arg(long, default_value_t = 20_000)]
    pub events: usize,
    /// Events of the steady run that measures latency.
    #[arg(long, default_value_t = 5_000)]
    pub latency_events: usize,
    /// Events per second offered in the steady run (in requests of 10).
    #[arg(long, default_value_t = 1_000)]
    pub rate: usize,
    /// The `nats-server` binary (Debian: /usr/sbin/nats-server).
    #[arg(long, default_value = "nats-server")]
    pub nats_server: PathBuf,
}

/// A `nats-server` of our own, killed when dropped.
struct NatsServer {
    child: Child,
    url: String,
    dir: PathBuf,
}

impl NatsServer {
    fn start(binary: &PathBuf) -> anyhow::Result<NatsServer> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let dir = std::env::temp_dir().join(format!("hooklog-bench-nats-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let binary = if binary.is_absolute() || which(binary).is_some() {
            binary.clone()
        } else {
            PathBuf::from("/usr/sbin/nats-server")
        };
        let child = Command::new(&binary)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} (apt-get install nats-server)",
                    binary.display()
                )
            })?;
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if start.elapsed() > Duration::from_secs(20) {
                bail!("nats-server did not listen on {port}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(NatsServer {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            dir,
        })
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn which(binary: &PathBuf) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(binary))
        .find(|p| p.is_file())
}

/// A hooklog child with extra `serve` flags.
fn hooklog(name: &str, flags: &[&str]) -> anyhow::Result<Server> {
    let dir =
        std::env::temp_dir().join(format!("hooklog-bench-nats-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut command = Command::new(std::env::current_exe().context("finding the hooklog binary")?);
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--origin", name, "--db"])
        .arg(dir.join("bench.db"))
        .args(flags);
    Server::spawn(command, dir)
}

/// When each event (by its number) was answered by the publisher, and reached the aggregator.
#[derive(Default)]
struct Times {
    committed: Vec<Option<Instant>>,
    arrived: Vec<Option<Instant>>,
}

impl NatsArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let nats = NatsServer::start(&self.nats_server)?;
        let publisher = hooklog("bench-publisher", &["--publish", &nats.url])?;
        let aggregator = hooklog("bench-aggregator", &["--subscribe", &nats.url])?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        runtime.block_on(self.measure(publisher.url(), aggregator.url()))
    }

    async fn measure(&self, publisher: String, aggregator: String) -> anyhow::Result<()> {
        let total = self.events + self.latency_events;
        let times = Arc::new(Mutex::new(Times {
            committed: vec![None; total],
            arrived: vec![None; total],
        }));
        let follower = tokio::spawn(follow(aggregator.clone(), times.clone(), total));
        let client = reqwest::Client::new();

        // The burst: 8 connections of 100-event requests, as fast as they are answered.
        let start = Instant::now();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut posters = Vec::new();
        for _ in 0..8 {
            let (client, url, times, next) = (
                client.clone(),
                publisher.clone(),
                times.clone(),
                next.clone(),
            );
            let events = self.events;
            posters.push(tokio::spawn(async move {
                loop {
                    let from = next.fetch_add(100, std::sync::atomic::Ordering::Relaxed);
                    if from >= events {
                        return anyhow::Ok(());
                    }
                    post(&client, &url, from..(from + 100).min(events), &times).await?;
                }
            }));
        }
        for poster in posters {
            poster.await??;
        }
        let posted = start.elapsed();
        wait_until(&times, self.events).await?;
        let through = start.elapsed();
        println!(
            "burst: {} events posted in {:.2} s ({:.0} events/s into the publisher); all on the aggregator after {:.2} s: {:.0} events/s end to end",
            self.events,
            posted.as_secs_f64(),
            self.events as f64 / posted.as_secs_f64(),
            through.as_secs_f64(),
            self.events as f64 / through.as_secs_f64()
        );

        // The steady run: requests of 10 at the offered rate.
        let every = Duration::from_secs_f64(10.0 / self.rate.max(1) as f64);
        let mut tick = tokio::time::interval(every);
        let mut from = self.events;
        while from < total {
            tick.tick().await;
            let range = from..(from + 10).min(total);
            from = range.end;
            let (client, url, times) = (client.clone(), publisher.clone(), times.clone());
            tokio::spawn(async move { post(&client, &url, range, &times).await });
        }
        wait_until(&times, total).await?;
        follower.abort();
        let times = times.lock().unwrap_or_else(|e| e.into_inner());
        let mut lags: Vec<f64> = (self.events..total)
            .filter_map(|i| Some((times.arrived[i]? - times.committed[i]?).as_secs_f64() * 1e3))
            .collect();
        lags.sort_by(f64::total_cmp);
        let at = |p| quantile(&lags, p).unwrap_or_default();
        println!(
            "steady {} events/s, {} events: publisher commit to aggregator commit p50 {:.1} ms  p90 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
            self.rate,
            self.latency_events,
            at(0.5),
            at(0.9),
            at(0.99),
            lags.last().copied().unwrap_or_default()
        );
        Ok(())
    }
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    range: std::ops::Range<usize>,
    times: &Mutex<Times>,
) -> anyhow::Result<()> {
    let body: Vec<String> = range
        .clone()
        .map(|i| {
            serde_json::json!({"id": format!("bench-{i}"), "type": "Stop",
                               "sessionId": format!("bench-s{}", i % 100), "payload": {"n": i}})
            .to_string()
        })
        .collect();
    let response = client
        .post(format!("{url}/events"))
        .header("content-type", "application/x-ndjson")
        .body(body.join("\n"))
        .send()
        .await?;
    if !response.status().is_success() {
        bail!("the publisher answered {}", response.status());
    }
    let now = Instant::now();
    let mut times = times.lock().unwrap_or_else(|e| e.into_inner());
    for i in range {
        times.committed[i] = Some(now);
    }
    Ok(())
}

/// Follows the aggregator's global stream and notes when each event arrives.
async fn follow(url: String, times: Arc<Mutex<Times>>, total: usize) -> anyhow::Result<()> {
    let response = reqwest::Client::new()
        .get(format!("{url}/events?after_sequence=0"))
        .header("accept", "text/event-stream")
        .send()
        .await?;
    let mut frames = response.bytes_stream().eventsource();
    while let Some(frame) = frames.next().await {
        let frame = frame?;
        let now = Instant::now();
        let envelope: serde_json::Value = match serde_json::from_str(&frame.data) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let Some(i) = envelope["id"]
            .as_str()
            .and_then(|id| id.strip_prefix("bench-"))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|i| *i < total)
        else {
            continue;
        };
        times.lock().unwrap_or_else(|e| e.into_inner()).arrived[i] = Some(now);
    }
    Ok(())
}

/// Waits until the first `n` events have all arrived (10 minutes at most).
async fn wait_until(times: &Mutex<Times>, n: usize) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        let arrived = {
            let times = times.lock().unwrap_or_else(|e| e.into_inner());
            times.arrived[..n].iter().filter(|t| t.is_some()).count()
        };
        if arrived == n {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(600) {
            bail!("only {arrived} of {n} events reached the aggregator in 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
