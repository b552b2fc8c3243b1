//! The forwarder's spool: a directory of events waiting for delivery, one file each.
//!
//! Every captured event is written here first (to a temporary name, then renamed), and removed
//! once hooklog has answered for it. A run that is killed, or times out, leaves its event
//! behind for the next run, and since the file keeps the event's id, a delivery whose answer
//! was lost is stored once however often it is retried.
//!
//! File names start with the capture time in nanoseconds, so listing the directory in name
//! order is delivering in capture order. One run at a time drains (an exclusive lock on
//! `.lock`); putting an event needs no lock.
//!
//! This file holds what the spool keeps ([`Header`], [`Listed`], [`Entry`]); `dir.rs` opens
//! the directory (where it is by default, and the check that it is this user's alone),
//! `files.rs` puts, lists, reads and removes event files, `lock.rs` is the drain lock,
//! `limits.rs` drops what is past the [`Limits`], and `dropped.rs` is the log of what was
//! dropped.

mod dir;
mod dropped;
mod files;
mod limits;
mod lock;

pub use dir::default_dir;
pub use dropped::{DROPPED_LOG, Dropped};
pub use limits::Limits;
pub use lock::DrainLock;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

const SUFFIX: &str = ".event";
const TMP_SUFFIX: &str = ".tmp";

/// Which hooklog route an event is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// `POST /event`: a hook payload as the agent gives it.
    Event,
    /// `POST /event/normalized`: one of seed 001's adapter events.
    Normalized,
}

impl Route {
    pub fn path(self) -> &'static str {
        match self {
            Route::Event => "/event",
            Route::Normalized => "/event/normalized",
        }
    }
}

/// What the spool keeps about an event besides its body.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The event's id, sent as `X-Hooklog-Event-Id`.
    pub id: String,
    pub route: Route,
    /// Sent as `?cli=` on the `event` route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli: Option<String>,
    /// When the forwarder read the event (RFC 3339), sent as `X-Hooklog-Event-Time`.
    pub captured_at: String,
}

/// An event in the spool, as listed (its body is read only when it is delivered).
#[derive(Clone, Debug)]
pub struct Listed {
    pub path: PathBuf,
    /// Capture time, nanoseconds since the epoch, from the file name.
    pub captured_nanos: u128,
    pub bytes: u64,
}

/// A spooled event read back.
pub struct Entry {
    pub header: Header,
    pub body: Vec<u8>,
}

pub struct Spool {
    dir: PathBuf,
    limits: Limits,
}

/// Nanoseconds since the epoch.
pub fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
