//! The drain lock: one run at a time delivers the spool (an exclusive lock on `.lock`).

use super::Spool;
use std::fs::{self, File, OpenOptions};
use std::time::{Duration, Instant};

const LOCK_FILE: &str = ".lock";

/// The drain lock; released when dropped.
pub struct DrainLock(#[allow(dead_code)] File);

impl Spool {
    /// Takes the drain lock, trying until `deadline`. `None`: another run holds it (or the
    /// lock file cannot be opened).
    pub fn lock(&self, deadline: Instant) -> Option<DrainLock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK_FILE))
            .ok()?;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(DrainLock(file)),
                Err(fs::TryLockError::WouldBlock) => {}
                Err(fs::TryLockError::Error(_)) => return None,
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
