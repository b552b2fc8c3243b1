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

#[derive(Debug, Clone)]
pub struct Config {
    pub db_path: PathBuf,
    pub durability: Durability,
    /// Largest request body accepted, in bytes (413 above it).
    pub body_limit: usize,
    pub reader_pool_size: u32,
    /// Committed events the hub buffers for slow live subscribers.
    pub hub_capacity: usize,
    /// Idle time after which an event stream sends a `: keepalive` comment.
    pub keepalive: Duration,
    /// How long a request body may go without receiving any bytes (then 408).
    pub body_timeout: Duration,
    /// On shutdown, how long open connections get to finish before they are closed anyway.
    pub drain_timeout: Duration,
    /// Which old events the writer prunes (none by default).
    pub retention: crate::store::retention::Retention,
    /// The writer's clock (the system clock; tests advance it).
    pub clock: crate::event::time::Clock,
    /// A watcher owner silent for longer than this is hung: the next acquire takes over.
    pub owner_hung_after: Duration,
}

pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

impl Config {
    pub fn for_path(db_path: impl Into<PathBuf>) -> Config {
        Config {
            db_path: db_path.into(),
            durability: Durability::Full,
            body_limit: DEFAULT_BODY_LIMIT,
            reader_pool_size: 8,
            hub_capacity: 4096,
            keepalive: Duration::from_secs(15),
            body_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(10),
            retention: Default::default(),
            clock: Default::default(),
            owner_hung_after: Duration::from_secs(60),
        }
    }
}
