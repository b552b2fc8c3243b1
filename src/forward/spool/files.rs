//! The spool's event files: putting one (temporary file, then rename), listing them in
//! capture order, reading one back and removing it once delivered.

use super::{Entry, Header, Listed, SUFFIX, Spool, TMP_SUFFIX};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

impl Spool {
    /// Writes an event to the spool (temporary file, then rename: a reader never sees half an
    /// event). Returns where it is.
    pub fn put(&self, captured_nanos: u128, header: &Header, body: &[u8]) -> io::Result<PathBuf> {
        let name = format!("{captured_nanos:039}-{}{SUFFIX}", safe_name(&header.id));
        let path = self.dir.join(&name);
        let tmp = self.dir.join(format!(".{name}{TMP_SUFFIX}"));
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp)?;
        let mut line = serde_json::to_vec(header).map_err(io::Error::other)?;
        line.push(b'\n');
        file.write_all(&line)?;
        file.write_all(body)?;
        drop(file);
        fs::rename(&tmp, &path)?;
        Ok(path)
    }

    /// The spooled events, oldest first.
    pub fn list(&self) -> io::Result<Vec<Listed>> {
        let mut listed = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !name.ends_with(SUFFIX) || name.starts_with('.') {
                continue;
            }
            let Some(captured_nanos) = name.split('-').next().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
            listed.push(Listed {
                path: entry.path(),
                captured_nanos,
                bytes,
            });
        }
        listed.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(listed)
    }

    /// Reads a spooled event. `Ok(None)`: it is gone (another run delivered it). An unreadable
    /// file is dropped (logged) and also answers `None`.
    pub fn read(&self, listed: &Listed) -> io::Result<Option<Entry>> {
        let raw = match fs::read(&listed.path) {
            Ok(raw) => raw,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let parsed = raw.iter().position(|&b| b == b'\n').and_then(|end| {
            let header: Header = serde_json::from_slice(&raw[..end]).ok()?;
            Some(Entry {
                header,
                body: raw[end + 1..].to_vec(),
            })
        });
        match parsed {
            Some(entry) => Ok(Some(entry)),
            None => {
                self.drop_listed(listed, "malformed spool file")?;
                Ok(None)
            }
        }
    }

    /// Removes a delivered event.
    pub fn remove(&self, listed: &Listed) -> io::Result<()> {
        match fs::remove_file(&listed.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// The event id in a spool file's name.
pub(super) fn id_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_suffix(SUFFIX)?;
    rest.split_once('-').map(|(_, id)| id.to_string())
}

/// An id as a file name: anything but ASCII letters, digits and `-` becomes `_` (ids the
/// forwarder makes are UUIDs, so this never changes them).
fn safe_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
