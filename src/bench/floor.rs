//! The HTTP floor: how many single-event POSTs a server that does nothing with them answers on
//! this machine, loaded by the same generator as `bench ingest --scenario single`.
//!
//! A hooklog request costs the HTTP exchange (hyper, axum, the kernel's loopback, the load
//! generator beside it on the same cores) plus what hooklog does with the event. The second part
//! is hooklog's; the first is the machine's, and this measures it: the null server reads the
//! body and answers a fixed acknowledgement of the same shape, storing nothing.

use super::Server;
use super::ingest::Load;
use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::serve::ListenerExt;
use clap::Args;
use std::process::Command;

#[derive(Args, Debug)]
pub struct NullServerArgs {}

/// What `POST /events` answers for one event, with made-up positions.
const ACK: &str = r#"{"events":[{"id":"0193a5b0-7c1e-7000-8000-000000000000","sequence":1,"sessionSequence":1,"duplicate":false}]}"#;

impl NullServerArgs {
    /// Serves until killed, on a port of 127.0.0.1 it prints, with the TCP settings and the
    /// default worker count of `hooklog serve` (it does not read `--workers` or
    /// `HOOKLOG_WORKERS`).
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = crate::http::server::runtime(crate::config::default_http_workers())
            .context("starting the async runtime")?;
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            println!("null server listening on http://{}", listener.local_addr()?);
            let listener = listener.tap_io(|stream| {
                let _ = stream.set_nodelay(true);
            });
            let router = Router::new().route("/events", post(acknowledge));
            axum::serve(listener, router).await?;
            Ok(())
        })
    }
}

async fn acknowledge(body: Bytes) -> impl IntoResponse {
    // The body is read whole, as hooklog reads it, and looked at (an empty one is refused), so
    // that the read cannot be skipped.
    let status = if body.is_empty() {
        axum::http::StatusCode::BAD_REQUEST
    } else {
        axum::http::StatusCode::OK
    };
    (status, [(header::CONTENT_TYPE, "application/json")], ACK)
}

/// What the floor run measured.
pub struct Floor {
    pub events_per_second: f64,
    /// The null server's CPU time (user + system) per request, when it could be read.
    pub server_cpu_micros: Option<f64>,
}

/// Posts `events` single-event requests over `connections` connections to a fresh null server.
pub fn measure(events: usize, connections: usize) -> anyhow::Result<Floor> {
    let dir = std::env::temp_dir().join(format!("hooklog-floor-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut command = Command::new(std::env::current_exe().context("finding the hooklog binary")?);
    command.args(["bench", "null-server"]);
    let mut server = Server::spawn(command, dir)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let cpu_before = server.cpu_seconds();
    let report = runtime.block_on(
        Load {
            url: server.url(),
            events,
            connections,
            batch: 1,
            sessions: 50,
        }
        .run(),
    )?;
    let cpu = server
        .cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| (after - before) * 1e6 / events as f64);
    server.stop();
    Ok(Floor {
        events_per_second: events as f64 / report.elapsed.as_secs_f64(),
        server_cpu_micros: cpu,
    })
}
