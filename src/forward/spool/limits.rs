//! How much the spool may hold, and dropping what is past it: events older than the maximum
//! age, then the oldest until the count and the size fit, and temporary files of runs that
//! died.

use super::{Spool, TMP_SUFFIX, now_nanos};
use std::fs;
use std::io;
use std::time::Duration;

/// A temporary file older than this belongs to a run that died before renaming it.
const STALE_TMP: Duration = Duration::from_secs(60);

/// How much the spool may hold before it drops its oldest events.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_events: usize,
    pub max_bytes: u64,
    pub max_age: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_events: 10_000,
            max_bytes: 64 * 1024 * 1024,
            max_age: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

impl Spool {
    /// Drops what is past the limits: events older than the maximum age, then the oldest
    /// until the count and the size fit; and temporary files of runs that died. Call it with
    /// the drain lock held. Returns how many events it dropped.
    pub fn enforce_limits(&self) -> io::Result<usize> {
        self.remove_stale_tmp();
        let listed = self.list()?;
        let now = now_nanos();
        let max_age = self.limits.max_age.as_nanos();
        let mut count = listed.len();
        let mut bytes: u64 = listed.iter().map(|l| l.bytes).sum();
        let mut dropped = 0;
        for l in &listed {
            let reason = if now.saturating_sub(l.captured_nanos) > max_age {
                "older than the spool's maximum age"
            } else if count > self.limits.max_events {
                "spool full (events)"
            } else if bytes > self.limits.max_bytes {
                "spool full (bytes)"
            } else {
                break;
            };
            self.drop_listed(l, reason)?;
            count -= 1;
            bytes -= l.bytes;
            dropped += 1;
        }
        Ok(dropped)
    }

    fn remove_stale_tmp(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let is_tmp = entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with('.') && n.ends_with(TMP_SUFFIX));
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE_TMP));
            if is_tmp && stale {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}
