//! What the spool dropped without delivering, and why: one JSON line each in
//! `dropped.ndjson` (ids, sizes and reasons; never a payload), rotated past 1 MiB.

use super::files::id_of;
use super::{Listed, Spool};
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};

/// What the spool dropped, one JSON line each (ids, sizes and reasons; never a payload).
pub const DROPPED_LOG: &str = "dropped.ndjson";
/// The dropped log is rotated to `dropped.ndjson.1` past this size.
const DROPPED_LOG_MAX_BYTES: u64 = 1024 * 1024;

/// One line of the dropped log.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dropped {
    pub time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub reason: String,
    pub bytes: u64,
}

impl Spool {
    /// Removes an event without delivering it, and says so in the dropped log.
    pub fn drop_listed(&self, listed: &Listed, reason: &str) -> io::Result<()> {
        // Logged first: a run stopped in between leaves a line too many, never a silent drop.
        self.log_dropped(&Dropped {
            time: crate::event::time::now(),
            id: id_of(&listed.path),
            reason: reason.to_string(),
            bytes: listed.bytes,
        })?;
        self.remove(listed)
    }

    /// Appends a line to the dropped log (rotating it past 1 MiB).
    pub fn log_dropped(&self, dropped: &Dropped) -> io::Result<()> {
        let path = self.dir.join(DROPPED_LOG);
        if fs::metadata(&path).is_ok_and(|m| m.len() > DROPPED_LOG_MAX_BYTES) {
            fs::rename(&path, self.dir.join(format!("{DROPPED_LOG}.1")))?;
        }
        let mut line = serde_json::to_vec(dropped).map_err(io::Error::other)?;
        line.push(b'\n');
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?
            .write_all(&line)
    }

    /// What the dropped log holds (the current file, not its rotated predecessor).
    pub fn dropped(&self) -> io::Result<Vec<Dropped>> {
        match fs::read_to_string(self.dir.join(DROPPED_LOG)) {
            Ok(text) => Ok(text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }
}
