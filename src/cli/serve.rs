//! `hooklog serve`: run the server until SIGTERM or Ctrl-C.

use crate::App;
use crate::config::{
    Config, Connections, DEFAULT_BODY_LIMIT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_STREAMS, DEV_ORIGINS, Durability, RateLimit, Secret, Security,
    default_http_workers,
};
use anyhow::{Context, bail};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// SQLite database file (created if missing).
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
    /// Many machines: `--origin`, `--publish`, `--subscribe` (docs/scale-out.md).
    #[command(flatten)]
    pub replication: super::replication::ReplicationArgs,
    /// Notices of waiting agents: `--notify`, `--public-url` (docs/notify.md).
    #[command(flatten)]
    pub notices: super::notify::NotifyArgs,
    /// Address to listen on. Port 0 picks a free port (printed on start).
    #[arg(long, env = "HOOKLOG_BIND", default_value = "127.0.0.1:2468")]
    pub bind: SocketAddr,
    /// `full`: an acknowledged event survives power loss. `normal`: faster, may lose the last
    /// commits on power loss (never on a crash of hooklog itself).
    #[arg(long, env = "HOOKLOG_DURABILITY", value_enum, default_value_t = Durability::Full)]
    pub durability: Durability,
    /// Largest request body accepted, in bytes (413 above it).
    #[arg(long, env = "HOOKLOG_BODY_LIMIT", default_value_t = DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// Keep at most this many events; older ones are pruned (positions keep counting).
    #[arg(long, env = "HOOKLOG_RETAIN_MAX_EVENTS")]
    pub retain_max_events: Option<u64>,
    /// Prune events received longer ago than this (e.g. `30d`, `12h`, `90m`).
    #[arg(long, env = "HOOKLOG_RETAIN_MAX_AGE", value_parser = humantime::parse_duration)]
    pub retain_max_age: Option<std::time::Duration>,
    /// Keep response events (seed 003's ephemeral stream) this long (`0s`: no age limit).
    #[arg(long, env = "HOOKLOG_RESPONSE_RETAIN_MAX_AGE", value_parser = humantime::parse_duration, default_value = "1h")]
    pub response_retain_max_age: std::time::Duration,
    /// Keep at most this many response events per factory session (`0`: no limit).
    #[arg(
        long,
        env = "HOOKLOG_RESPONSE_RETAIN_MAX_EVENTS",
        default_value_t = 10_000
    )]
    pub response_retain_max_events: u64,
    /// Allow listening on a non-loopback address (hooklog stores prompts and commands); a
    /// token is then required.
    #[arg(long, env = "HOOKLOG_ALLOW_NON_LOOPBACK_BIND")]
    pub allow_non_loopback: bool,
    /// Require `Authorization: Bearer <token>` on every route but /health.
    #[arg(long, env = "HOOKLOG_AUTH_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A browser origin allowed to call hooklog (CORS), e.g. `http://localhost:3000`. Repeat,
    /// or separate with commas. None by default.
    #[arg(
        long = "cors-origin",
        env = "HOOKLOG_CORS_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// Also allow the local Vite dev and preview origins (localhost and 127.0.0.1, ports 5173
    /// and 4173).
    #[arg(long, env = "HOOKLOG_CORS_DEV_ORIGINS")]
    pub cors_dev_origins: bool,
    /// A host name accepted in the Host header on a loopback bind, besides localhost,
    /// 127.0.0.1 and [::1]. Repeat, or separate with commas.
    #[arg(
        long = "allow-host",
        env = "HOOKLOG_ALLOW_HOSTS",
        value_delimiter = ','
    )]
    pub allow_hosts: Vec<String>,
    /// Requests per second allowed per client address (a token bucket); 0: no limit.
    #[arg(long, env = "HOOKLOG_RATE_LIMIT", default_value_t = 0.0)]
    pub rate_limit: f64,
    /// Requests a client may send at once before the rate applies (default: one second's
    /// worth, at least 1).
    #[arg(long, env = "HOOKLOG_RATE_LIMIT_BURST")]
    pub rate_limit_burst: Option<f64>,
    /// Event streams (SSE, replays) open at once; one more is answered 503.
    #[arg(long, env = "HOOKLOG_MAX_STREAMS", default_value_t = DEFAULT_MAX_STREAMS)]
    pub max_streams: usize,
    /// Deepest nesting of arrays and objects accepted in a request body (400 deeper).
    #[arg(long, env = "HOOKLOG_MAX_JSON_DEPTH", default_value_t = DEFAULT_MAX_JSON_DEPTH)]
    pub max_json_depth: usize,
    /// How long one search may run before it is stopped (answered 400; docs/api.md).
    #[arg(long, env = "HOOKLOG_SEARCH_BUDGET", value_parser = humantime::parse_duration, default_value = "3s")]
    pub search_budget: Duration,
    /// Threads answering HTTP requests. Default: one fewer than the machine's cores, at least
    /// one, so that the writer thread keeps a core to itself under load.
    #[arg(long, env = "HOOKLOG_WORKERS")]
    pub workers: Option<usize>,
    /// Time a client has to send a request's head, from connecting or from the end of the
    /// previous answer on a kept-alive connection; then the connection is closed.
    #[arg(long, env = "HOOKLOG_HEADER_TIMEOUT", value_parser = humantime::parse_duration, default_value = "30s")]
    pub header_timeout: Duration,
    /// A connection whose client accepts no byte of an answer (an event stream it stopped
    /// reading) for this long is closed.
    #[arg(long, env = "HOOKLOG_STALL_TIMEOUT", value_parser = humantime::parse_duration, default_value = "30s")]
    pub stall_timeout: Duration,
    /// A request body that receives no byte for this long is refused (408).
    #[arg(long, env = "HOOKLOG_BODY_IDLE_TIMEOUT", value_parser = humantime::parse_duration, default_value = "30s")]
    pub body_idle_timeout: Duration,
    /// A request body not whole this long after the request began is refused (408), however
    /// steadily it trickles in.
    #[arg(long, env = "HOOKLOG_BODY_DEADLINE", value_parser = humantime::parse_duration, default_value = "60s")]
    pub body_deadline: Duration,
    /// Connections open at once; one more is answered 503 and closed. Default: 10,000, or
    /// fewer to stay 128 below the open-file limit (which serve raises to its hard limit).
    #[arg(long, env = "HOOKLOG_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Bytes of history (event payloads) all event streams together may hold while their
    /// clients take it.
    #[arg(long, env = "HOOKLOG_STREAM_HISTORY_BYTES", default_value_t = Connections::default().history_budget)]
    pub stream_history_bytes: usize,
    /// For `bench search` only: do not index new events for search, to measure ingest
    /// without the index. The index then misses them until `hooklog rebuild`.
    #[arg(long, hide = true)]
    pub no_search_index: bool,
    /// A price table (JSON, in the form of the embedded one: docs/usage.md) whose models add
    /// to or replace the embedded prices that usage is costed with.
    #[arg(long, env = "HOOKLOG_PRICES", value_name = "FILE")]
    pub prices: Option<std::path::PathBuf>,
    /// Do not read the transcripts hooks name (docs/usage.md): no live token usage.
    #[arg(long, env = "HOOKLOG_NO_TRANSCRIPTS")]
    pub no_transcripts: bool,
    /// What is kept of each transcript record read: its metadata and bounded text, or the
    /// full conversation.
    #[arg(
        long,
        value_enum,
        env = "HOOKLOG_TRANSCRIPTS",
        default_value = "metadata"
    )]
    pub transcripts: crate::ingest::transcript::Keep,
    /// Also read transcripts under this folder (repeat for more). Transcripts are read only
    /// under Claude Code's projects folder and Codex's sessions folder unless added here
    /// (docs/security.md).
    #[arg(long = "transcript-root", value_name = "DIR")]
    pub transcript_roots: Vec<std::path::PathBuf>,
}

impl ServeArgs {
    pub fn run(self) -> anyhow::Result<()> {
        init_tracing();
        let security = self.security()?;
        let connections = self.connections(raise_open_file_limit())?;
        let replication = self.replication.replication()?;
        let config = Config {
            origin: replication.origin,
            publish: replication.publish,
            subscribe: replication.subscribe,
            durability: self.durability,
            body_limit: self.body_limit,
            body_timeout: self.body_idle_timeout,
            body_deadline: self.body_deadline,
            connections,
            retention: crate::config::Retention {
                max_events: self.retain_max_events,
                max_age: self.retain_max_age,
            },
            response_retention: crate::response::Retention {
                max_age: Some(self.response_retain_max_age).filter(|d| !d.is_zero()),
                max_per_session: Some(self.response_retain_max_events).filter(|n| *n > 0),
            },
            security,
            search_index: !self.no_search_index,
            prices: std::sync::Arc::new(crate::projection::prices::load(self.prices.as_deref())?),
            follow_transcripts: (!self.no_transcripts).then_some(self.transcripts),
            transcript_roots: crate::config::default_transcript_roots()
                .into_iter()
                .chain(self.transcript_roots.iter().cloned())
                .collect(),
            notify: self.notices.notify()?,
            ..Config::for_path(&self.db)
        };
        let workers = self.workers.unwrap_or_else(default_http_workers);
        if workers == 0 {
            bail!("--workers (HOOKLOG_WORKERS) must be at least 1");
        }
        let runtime =
            crate::http::server::runtime(workers).context("starting the async runtime")?;
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

impl ServeArgs {
    /// The connection limits, or why these flags cannot start a server. `open_files` is the
    /// process's open-file limit, when known: the default connection cap stays below it.
    pub fn connections(&self, open_files: Option<u64>) -> anyhow::Result<Connections> {
        let fitting = open_files.map_or(DEFAULT_MAX_CONNECTIONS, |limit| {
            let usable = limit.saturating_sub(RESERVED_FILES).max(1);
            DEFAULT_MAX_CONNECTIONS.min(usize::try_from(usable).unwrap_or(usize::MAX))
        });
        let max_connections = self.max_connections.unwrap_or(fitting);
        if max_connections == 0 {
            bail!("--max-connections (HOOKLOG_MAX_CONNECTIONS) must be at least 1");
        }
        if self.header_timeout.is_zero() || self.stall_timeout.is_zero() {
            bail!("--header-timeout and --stall-timeout must be more than 0");
        }
        tracing::info!(max_connections, "connection limit");
        Ok(Connections {
            header_timeout: self.header_timeout,
            stall_timeout: self.stall_timeout,
            max_connections,
            history_budget: self.stream_history_bytes,
            ..Connections::default()
        })
    }

    /// The security settings, or why these flags cannot start a server.
    pub fn security(&self) -> anyhow::Result<Security> {
        let token = match self.token.as_deref().map(str::trim) {
            Some("") => {
                bail!("the token is empty; pass a real one with --token or HOOKLOG_AUTH_TOKEN")
            }
            token => token.map(|t| Secret(t.to_string())),
        };
        if !self.bind.ip().is_loopback() {
            if !self.allow_non_loopback {
                bail!(
                    "refusing to listen on {}: it is not a loopback address and hooklog stores prompts and \
                     commands; pass --allow-non-loopback (and a --token) if you really mean it",
                    self.bind
                );
            }
            if token.is_none() {
                bail!(
                    "refusing to listen on {} without a token: on a non-loopback address every client \
                     must authenticate; pass --token or set HOOKLOG_AUTH_TOKEN",
                    self.bind
                );
            }
        }
        if !(self.rate_limit >= 0.0 && self.rate_limit.is_finite()) {
            bail!("--rate-limit must be a number >= 0 (0: no limit)");
        }
        if self.rate_limit == 0.0 && self.rate_limit_burst.is_some() {
            bail!("--rate-limit-burst needs a --rate-limit");
        }
        let rate_limit = (self.rate_limit > 0.0).then(|| RateLimit {
            per_second: self.rate_limit,
            burst: self.rate_limit_burst.unwrap_or(self.rate_limit).max(1.0),
        });
        if self.max_streams == 0 || self.max_json_depth == 0 {
            bail!("--max-streams and --max-json-depth must be at least 1");
        }
        let mut cors_origins = self.cors_origins.clone();
        if self.cors_dev_origins {
            cors_origins.extend(DEV_ORIGINS.iter().map(|o| o.to_string()));
        }
        for origin in &cors_origins {
            if origin == "*" || axum::http::HeaderValue::from_str(origin).is_err() {
                bail!("--cors-origin {origin:?} is not an origin such as http://localhost:3000");
            }
        }
        Ok(Security {
            token,
            extra_hosts: self.allow_hosts.clone(),
            cors_origins,
            rate_limit,
            max_streams: self.max_streams,
            max_json_depth: self.max_json_depth,
            search_budget: self.search_budget,
        })
    }
}

/// Open files kept for the database (the writer's and the readers' files, WAL and shared
/// memory), the log and the listener: the default connection cap leaves them free.
const RESERVED_FILES: u64 = 128;

/// Raises this process's open-file soft limit to its hard limit (Linux's soft default of
/// 1,024 is what a few idle sockets exhaust); returns the soft limit now in force.
fn raise_open_file_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    let before = limit.rlim_cur;
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = limit.rlim_max;
        }
    }
    tracing::info!(
        before,
        now = limit.rlim_cur,
        hard = limit.rlim_max,
        "open-file limit"
    );
    Some(limit.rlim_cur)
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// `hooklog serve` with no flags: what issue 2 and the README promise.
    #[test]
    fn serve_defaults_to_the_documented_address_database_and_durability() {
        let cli = crate::cli::Cli::command();
        let serve = cli.find_subcommand("serve").expect("a serve subcommand");
        let default = |id: &str| {
            let arg = serve
                .get_arguments()
                .find(|a| a.get_id() == id)
                .unwrap_or_else(|| panic!("no --{id}"));
            let values: Vec<_> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            values.join(",")
        };
        assert_eq!(default("bind"), "127.0.0.1:2468");
        assert_eq!(default("db"), "hooklog.db");
        assert_eq!(default("durability"), "full");
        assert_eq!(default("body_limit"), "1048576");
    }
}
