//! What a running hooklog is configured with. The CLI builds it from flags; tests build it
//! directly with [`Config::for_path`].

use std::path::PathBuf;
use std::time::Duration;

/// How hard a commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Durability {
    /// `synchronous=FULL`: an acknowledged event survives power loss. The default.
    #[default]
    Full,
    /// `synchronous=NORMAL`: survives a crash of hooklog, may lose the last commits on power loss.
    Normal,
}

impl Durability {
    pub fn pragma(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

/// HTTP worker threads `hooklog serve` runs by default on a machine with `cores` cores: one
/// fewer, and at least one. The writer is a thread of its own, and under load it needs a core
/// to itself: it is the one stage every event goes through in turn, so time it spends waiting
/// for a CPU that an HTTP worker holds is time no event can be stored. On two cores one worker
/// answered 10-17% more single-event POSTs than two (docs/performance.md).
pub fn http_workers_for(cores: usize) -> usize {
    cores.saturating_sub(1).max(1)
}

/// [`http_workers_for`] this machine's cores (as many as this process may use).
pub fn default_http_workers() -> usize {
    http_workers_for(std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[derive(Debug, Clone)]
pub struct Config {
    pub db_path: PathBuf,
    pub durability: Durability,
    /// Largest request body accepted, in bytes (413 above it).
    pub body_limit: usize,
    pub reader_pool_size: u32,
    /// Published groups (each of at most 16 committed events) the hub buffers for live
    /// subscribers that are behind; past that they catch up from the database.
    pub hub_capacity: usize,
    /// Requests the writer's queue holds: beyond them producers wait (backpressure instead of
    /// unbounded memory), a client's request at most `store::writer::QUEUE_WAIT`, then it is
    /// refused `503 overloaded` (8,192; tests make it small).
    pub writer_queue: usize,
    /// Payload bytes of those groups the hub keeps at most (the newest group always).
    pub hub_bytes: usize,
    /// Idle time after which an event stream sends a `: keepalive` comment.
    pub keepalive: Duration,
    /// How long a request body may go without receiving any bytes (then 408).
    pub body_timeout: Duration,
    /// How long a whole request body may take, however steadily it trickles in (then 408).
    pub body_deadline: Duration,
    /// Limits on connections and on what event streams hold (docs/security.md).
    pub connections: Connections,
    /// On shutdown, how long open connections get to finish before they are closed anyway.
    pub drain_timeout: Duration,
    /// Which old events the writer prunes (none by default).
    pub retention: Retention,
    /// How long response events (seed 003's ephemeral stream) are kept: their own policy.
    pub response_retention: crate::response::Retention,
    /// The writer's clock (the system clock; tests advance it).
    pub clock: crate::event::time::Clock,
    /// A watcher owner silent for longer than this is hung: the next acquire takes over.
    pub owner_hung_after: Duration,
    /// Who may talk to hooklog, and how much (docs/security.md).
    pub security: Security,
    /// This hooklog's name, recorded as the `origin` of every event it stores first
    /// (`serve --origin`; the host name by default).
    pub origin: String,
    /// Where committed events are published (`serve --publish`); `None`: nowhere.
    pub publish: Option<Target>,
    /// Where events are consumed from and appended here (`serve --subscribe`); `None`: nowhere.
    pub subscribe: Option<Subscription>,
    /// Whether the writer indexes each event for search (`projection::search`). Always on,
    /// but for `bench search`, which measures ingest without it (`serve --no-search-index`,
    /// hidden: a log written without it has an incomplete index until `hooklog rebuild`).
    pub search_index: bool,
    /// Model prices that usage is costed with (`serve --prices FILE` adds to the embedded
    /// table, `projection::prices`).
    pub prices: std::sync::Arc<crate::projection::prices::Prices>,
    /// Whether the transcripts hooks name are followed (`follow`), and what of their
    /// records is kept; `None`: not followed (`serve --no-transcripts`).
    pub follow_transcripts: Option<crate::ingest::transcript::Keep>,
    /// The folders whose transcripts may be read (`follow`): [`default_transcript_roots`]
    /// and those `serve --transcript-root` adds.
    pub transcript_roots: Vec<PathBuf>,
    /// Where a notice goes when an agent starts waiting (`serve --notify`, docs/notify.md);
    /// no target: none is sent.
    pub notify: Notify,
}

/// Notices of waiting agents (`serve --notify`, `--public-url`; docs/notify.md).
#[derive(Debug, Clone)]
pub struct Notify {
    pub targets: Vec<NotifyTarget>,
    /// The base of the session links notices carry (`--public-url`); `None`:
    /// `http://<bound address>`.
    pub public_url: Option<String>,
    /// The wait after a first failed attempt, doubled after each next one up to `backoff_max`.
    pub backoff: Duration,
    pub backoff_max: Duration,
    /// Attempts per notice before it is given up.
    pub attempts: u32,
    /// How long one attempt may take, connecting included.
    pub timeout: Duration,
    /// PEM certificates an https target's certificate may chain to, besides the system's
    /// roots (`--notify-ca`: a self-hosted ntfy behind a private CA).
    pub ca: Option<PathBuf>,
}

impl Default for Notify {
    fn default() -> Notify {
        Notify {
            targets: Vec::new(),
            public_url: None,
            backoff: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            attempts: 8,
            timeout: Duration::from_secs(10),
            ca: None,
        }
    }
}

/// One `--notify` target: the body it takes, and its URL, a secret (a Slack webhook's or an
/// ntfy topic's URL is all it takes to post there), never logged nor stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyTarget {
    pub kind: NotifyKind,
    pub url: Secret,
}

/// The body a notice target takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifyKind {
    /// hooklog's own JSON (`--notify URL`).
    Json,
    /// ntfy's: the text as the body, `Title`/`Tags`/`Click` headers (`--notify ntfy:URL`).
    Ntfy,
    /// A Slack incoming webhook's `{"text": ...}` (`--notify slack:URL`).
    Slack,
}

impl NotifyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyKind::Json => "json",
            NotifyKind::Ntfy => "ntfy",
            NotifyKind::Slack => "slack",
        }
    }
}

impl NotifyTarget {
    /// `URL`, `ntfy:URL` or `slack:URL`, with an `http` or `https` URL. The error never
    /// repeats the value: it may hold a secret.
    pub fn parse(given: &str) -> Result<NotifyTarget, String> {
        let (kind, url) = [("ntfy:", NotifyKind::Ntfy), ("slack:", NotifyKind::Slack)]
            .into_iter()
            .find_map(|(prefix, kind)| given.strip_prefix(prefix).map(|url| (kind, url)))
            .unwrap_or((NotifyKind::Json, given));
        let kind_name = kind.as_str();
        match reqwest::Url::parse(url.trim()) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
                Ok(NotifyTarget {
                    kind,
                    url: Secret(parsed.to_string()),
                })
            }
            _ => Err(format!(
                "a --notify {kind_name} target is not an http(s) URL (the value is not shown: it \
                 may hold a secret)"
            )),
        }
    }

    /// Whether the target takes TLS (the notices' client then loads root certificates).
    pub fn is_https(&self) -> bool {
        self.url.0.starts_with("https:")
    }

    /// The target's host, the only part of its URL a log line or an event may name.
    pub fn host(&self) -> String {
        reqwest::Url::parse(&self.url.0)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// Which old events the writer prunes (`store::retention`); none by default.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Retention {
    pub max_events: Option<u64>,
    pub max_age: Option<Duration>,
}

impl Retention {
    pub fn is_set(&self) -> bool {
        self.max_events.is_some() || self.max_age.is_some()
    }
}

/// The bearer token, host check, CORS origins and limits. Defaults: no token, loopback host
/// names only, no CORS origin, no rate limit, 4,096 open streams, JSON nested 64 deep.
#[derive(Debug, Clone)]
pub struct Security {
    /// When set, every route but `/health` wants `Authorization: Bearer <token>`.
    pub token: Option<Secret>,
    /// Host names accepted on a loopback bind besides `localhost`, `127.0.0.1` and `[::1]`.
    pub extra_hosts: Vec<String>,
    /// Browser origins allowed to read answers (CORS). Empty: none.
    pub cors_origins: Vec<String>,
    /// Requests per second per client address; `None`: no limit.
    pub rate_limit: Option<RateLimit>,
    /// Event streams open at once (SSE and replays); one more is a `503`.
    pub max_streams: usize,
    /// Deepest nesting of `[` and `{` a request body may have; deeper is a `400`.
    pub max_json_depth: usize,
    /// How long one search may run before SQLite stops it (`400`, docs/api.md).
    pub search_budget: Duration,
}

/// How long one search may run by default (`serve --search-budget`).
pub const DEFAULT_SEARCH_BUDGET: Duration = Duration::from_secs(3);

/// Limits on connections and on the history event streams hold (docs/security.md,
/// "Connections"). Defaults: 30 s for a request's head, 30 s for a stalled answer, 10,000
/// connections (lowered to fit the open-file limit by `hooklog serve`), 1 MiB history pages,
/// 256 MiB of history for all streams together.
#[derive(Debug, Clone)]
pub struct Connections {
    /// Time a client has to send a request's head, from connecting or from the end of the
    /// previous answer on a kept-alive connection; then the connection is closed.
    pub header_timeout: Duration,
    /// A connection whose peer accepts no byte of an answer for this long is closed.
    pub stall_timeout: Duration,
    /// Connections open at once; one more is answered `503` and closed.
    pub max_connections: usize,
    /// Payload bytes one read of history takes for an event stream.
    pub page_bytes: usize,
    /// Payload bytes of history all event streams together may hold.
    pub history_budget: usize,
}

pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// Payload bytes one read of history takes before it stops, on the routes that send history
/// to clients (streams, export, replay, pages of `/events`): what a client that reads slowly
/// makes hooklog hold is counted in bytes, not in events of any size.
pub const PAGE_BYTES: usize = 1024 * 1024;

impl Default for Connections {
    fn default() -> Connections {
        Connections {
            header_timeout: Duration::from_secs(30),
            stall_timeout: Duration::from_secs(30),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            page_bytes: PAGE_BYTES,
            history_budget: 256 * 1024 * 1024,
        }
    }
}

impl Connections {
    /// The history budget in KiB (the permits of `AppState::history_bytes`), never less than
    /// one page, so a page can always be read.
    pub fn history_budget_kib(&self) -> usize {
        self.history_budget
            .max(self.page_bytes)
            .div_ceil(1024)
            .max(1)
    }
}

/// A token bucket per client address: `burst` requests at once, refilled at `per_second`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

/// A value that must never reach a log: its `Debug` prints `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

pub const DEFAULT_MAX_STREAMS: usize = 4096;
pub const DEFAULT_MAX_JSON_DEPTH: usize = 64;
/// The Vite dev server's and preview's origins, allowed by `--cors-dev-origins`.
pub const DEV_ORIGINS: [&str; 4] = [
    "http://localhost:5173",
    "http://127.0.0.1:5173",
    "http://localhost:4173",
    "http://127.0.0.1:4173",
];

impl Default for Security {
    fn default() -> Security {
        Security {
            token: None,
            extra_hosts: Vec::new(),
            cors_origins: Vec::new(),
            rate_limit: None,
            max_streams: DEFAULT_MAX_STREAMS,
            max_json_depth: DEFAULT_MAX_JSON_DEPTH,
            search_budget: DEFAULT_SEARCH_BUDGET,
        }
    }
}

pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

impl Config {
    pub fn for_path(db_path: impl Into<PathBuf>) -> Config {
        Config {
            db_path: db_path.into(),
            durability: Durability::Full,
            body_limit: DEFAULT_BODY_LIMIT,
            reader_pool_size: 8,
            hub_capacity: 512,
            writer_queue: 8192,
            hub_bytes: 64 * 1024 * 1024,
            keepalive: Duration::from_secs(15),
            body_timeout: Duration::from_secs(30),
            body_deadline: Duration::from_secs(60),
            connections: Connections::default(),
            drain_timeout: Duration::from_secs(10),
            retention: Default::default(),
            response_retention: Default::default(),
            clock: Default::default(),
            owner_hung_after: Duration::from_secs(60),
            security: Security::default(),
            origin: host_name(),
            publish: None,
            subscribe: None,
            search_index: true,
            prices: Default::default(),
            follow_transcripts: Some(Default::default()),
            transcript_roots: default_transcript_roots(),
            notify: Notify::default(),
        }
    }
}

/// Where transcripts live unless `serve --transcript-root` adds others: Claude Code's projects
/// folder (`$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`) and Codex's sessions
/// folder (`$CODEX_HOME/sessions`, else `~/.codex/sessions`), of the user hooklog runs as.
pub fn default_transcript_roots() -> Vec<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");
    let claude = env("CLAUDE_CONFIG_DIR").or_else(|| home.as_ref().map(|h| h.join(".claude")));
    let codex = env("CODEX_HOME").or_else(|| home.as_ref().map(|h| h.join(".codex")));
    [
        claude.map(|c| c.join("projects")),
        codex.map(|c| c.join("sessions")),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The machine's host name, the default `origin` (`localhost` if it cannot be read).
pub fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer it is given.
    let rc = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    match std::str::from_utf8(&buffer[..end]) {
        Ok(name) if rc == 0 && !name.is_empty() => name.to_string(),
        _ => "localhost".to_string(),
    }
}

/// A JetStream stream on a NATS server (`serve --publish`, `--subscribe`).
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `nats://host:port` (several, comma-separated, for a cluster).
    pub url: String,
    /// The stream's name (`--publish-stream`), created if missing.
    pub stream: String,
    /// Copies of the stream a cluster keeps, when this hooklog creates it (1, 3 or 5).
    pub replicas: usize,
}

/// Where an aggregator reads from: a stream and its durable consumer's name. Each aggregator
/// has a consumer of its own (two behind one name each hold every event).
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub target: Target,
    pub durable: String,
}

#[cfg(test)]
mod tests {
    #[test]
    fn http_workers_leave_the_writer_a_core() {
        assert_eq!(super::http_workers_for(0), 1);
        assert_eq!(super::http_workers_for(1), 1);
        assert_eq!(super::http_workers_for(2), 1);
        assert_eq!(super::http_workers_for(8), 7);
    }
}
