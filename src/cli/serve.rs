//! `hooklog serve`: run the server until SIGTERM or Ctrl-C.

use crate::App;
use crate::config::{Config, DEFAULT_BODY_LIMIT, Durability};
use anyhow::{Context, bail};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// SQLite database file (created if missing).
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
    /// Address to listen on. Port 0 picks a free port (printed on start).
    #[arg(long, env = "HOOKLOG_BIND", default_value = "127.0.0.1:2468")]
    pub bind: SocketAddr,
    /// `full`: an acknowledged event survives power loss. `normal`: faster, may lose the last
    /// commits on power loss (never on a crash of hooklog itself).
    #[arg(long, value_enum, default_value_t = Durability::Full)]
    pub durability: Durability,
    /// Largest request body accepted, in bytes.
    #[arg(long, default_value_t = DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// Keep at most this many events; older ones are pruned (positions keep counting).
    #[arg(long, env = "HOOKLOG_RETAIN_MAX_EVENTS")]
    pub retain_max_events: Option<u64>,
    /// Prune events received longer ago than this (e.g. `30d`, `12h`, `90m`).
    #[arg(long, env = "HOOKLOG_RETAIN_MAX_AGE", value_parser = humantime::parse_duration)]
    pub retain_max_age: Option<std::time::Duration>,
    /// Allow listening on a non-loopback address (hooklog stores prompts and commands).
    #[arg(long, env = "HOOKLOG_ALLOW_NON_LOOPBACK_BIND")]
    pub allow_non_loopback: bool,
}

impl ServeArgs {
    pub fn run(self) -> anyhow::Result<()> {
        init_tracing();
        if !self.bind.ip().is_loopback() && !self.allow_non_loopback {
            bail!(
                "refusing to listen on {}: it is not a loopback address and hooklog stores prompts and \
                 commands; pass --allow-non-loopback if you really mean it",
                self.bind
            );
        }
        let config = Config {
            durability: self.durability,
            body_limit: self.body_limit,
            retention: crate::store::retention::Retention {
                max_events: self.retain_max_events,
                max_age: self.retain_max_age,
            },
            ..Config::for_path(&self.db)
        };
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        runtime.block_on(async move {
            let app = App::build(config)
                .await
                .with_context(|| format!("opening {}", self.db.display()))?;
            let listener = tokio::net::TcpListener::bind(self.bind)
                .await
                .with_context(|| format!("listening on {}", self.bind))?;
            let addr = listener.local_addr()?;
            // One line on stdout, so scripts and tests that pass port 0 learn the port.
            println!(
                "hooklog listening on http://{addr} (database {})",
                self.db.display()
            );
            tracing::info!(%addr, "serving");
            app.serve(listener, shutdown_signal()).await?;
            tracing::info!("stopped cleanly");
            Ok(())
        })
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HOOKLOG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown requested");
}
