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

use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SUFFIX: &str = ".event";
const TMP_SUFFIX: &str = ".tmp";
const LOCK_FILE: &str = ".lock";
/// What the spool dropped, one JSON line each (ids, sizes and reasons; never a payload).
pub const DROPPED_LOG: &str = "dropped.ndjson";
/// The dropped log is rotated to `dropped.ndjson.1` past this size.
const DROPPED_LOG_MAX_BYTES: u64 = 1024 * 1024;
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

pub struct Spool {
    dir: PathBuf,
    limits: Limits,
}

/// The drain lock; released when dropped.
pub struct DrainLock(#[allow(dead_code)] File);

impl Spool {
    /// Opens the spool in `dir`, creating it (owner-only on Unix: events hold prompts and
    /// commands) if needed.
    pub fn open(dir: &Path, limits: Limits) -> io::Result<Spool> {
        if !dir.is_dir() {
            let mut builder = fs::DirBuilder::new();
            builder.recursive(true);
            // Owner-only from the moment it exists (and its missing parents too), so no other
            // run or user ever sees it open; an existing one (given with --spool) keeps its mode.
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir)?;
        }
        #[cfg(unix)]
        check_private(dir)?;
        Ok(Spool {
            dir: dir.to_path_buf(),
            limits,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

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

/// Nanoseconds since the epoch.
pub fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// The event id in a spool file's name.
fn id_of(path: &Path) -> Option<String> {
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

/// Refuses a spool directory that another user owns or that others may write to. Spooled
/// events hold prompts and commands, and every file in the spool is delivered with this user's
/// token: a directory someone else controls (a path under a shared `/tmp` made first by another
/// user, a symbolic link planted there, or a directory of a group that holds other users, such
/// as macOS's `staff`) could be read, or could have events planted in it.
#[cfg(unix)]
fn check_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("the spool {} {why}; not using it", dir.display()),
        ))
    };
    let me = euid();
    // A link is followed only if this user made it (in a sticky /tmp, nobody else can replace
    // it); its target must then pass the same checks.
    // Without a trailing slash, which would make lstat follow the link.
    let link = fs::symlink_metadata(dir.components().collect::<PathBuf>())?;
    if link.file_type().is_symlink() && link.uid() != me {
        return refuse(format!(
            "is a symbolic link made by uid {}, not by this user (uid {me})",
            link.uid()
        ));
    }
    let meta = fs::metadata(dir)?;
    if meta.uid() != me {
        return refuse(format!(
            "belongs to uid {}, not to this user (uid {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return refuse(format!(
            "is writable by other users (mode {:o}; chmod 700 it)",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// This process's effective user id.
#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Where the spool lives when `HOOKLOG_SPOOL` is not set: `$XDG_STATE_HOME/hooklog/spool`, else
/// `~/.local/state/hooklog/spool`, else (no home) `hooklog-spool-<uid>` in the temporary
/// directory, which [`Spool::open`] uses only if this user owns it.
pub fn default_dir() -> PathBuf {
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty()) {
        return PathBuf::from(state).join("hooklog").join("spool");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|s| !s.is_empty()) {
        return PathBuf::from(home)
            .join(".local")
            .join("state")
            .join("hooklog")
            .join("spool");
    }
    #[cfg(unix)]
    let user = euid().to_string();
    #[cfg(not(unix))]
    let user = "user".to_string();
    std::env::temp_dir().join(format!("hooklog-spool-{user}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(id: &str) -> Header {
        Header {
            id: id.into(),
            route: Route::Event,
            cli: None,
            captured_at: "2026-11-30T00:00:00.000Z".into(),
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_world_writable_spool_is_refused_and_a_private_one_taken() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let refused = Spool::open(dir.path(), Limits::default()).err().unwrap();
        assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied);
        assert!(refused.to_string().contains("writable by other users"));
        // A group may hold other users (macOS's `staff`): group write is refused too.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o770)).unwrap();
        assert!(Spool::open(dir.path(), Limits::default()).is_err());
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o750)).unwrap();
        assert!(Spool::open(dir.path(), Limits::default()).is_ok());
        // A new directory is made owner-only, and so are the parents made for it.
        let made = dir.path().join("parent").join("made");
        Spool::open(&made, Limits::default()).unwrap();
        for path in [&made, &dir.path().join("parent")] {
            assert_eq!(
                fs::metadata(path).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
        // A link of this user's to a private directory is followed.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&made, &link).unwrap();
        assert!(Spool::open(&link, Limits::default()).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_spool_owned_by_another_user_is_refused() {
        // A directory this user does not own: as root, one given away to `nobody`; otherwise
        // `/`, which is root's.
        let dir = tempfile::tempdir().unwrap();
        let foreign = if euid() == 0 {
            std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
            dir.path().to_path_buf()
        } else {
            PathBuf::from("/")
        };
        let refused = Spool::open(&foreign, Limits::default()).err().unwrap();
        assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied);
        assert!(refused.to_string().contains("belongs to uid"), "{refused}");
        // As root, a link made by another user (to a directory of root's) is not followed.
        if euid() == 0 {
            let mine = dir.path().join("mine");
            fs::create_dir(&mine).unwrap();
            let outside = tempfile::tempdir().unwrap();
            let planted = outside.path().join("planted");
            std::os::unix::fs::symlink(&mine, &planted).unwrap();
            std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
            // Named as it is, and with a trailing slash (which makes lstat follow a link).
            let slashed = PathBuf::from(format!("{}/", planted.display()));
            for path in [&planted, &slashed] {
                let refused = Spool::open(path, Limits::default()).err().unwrap();
                assert!(
                    refused
                        .to_string()
                        .contains("symbolic link made by uid 65534"),
                    "{refused}"
                );
            }
        }
    }

    #[test]
    fn lists_in_capture_order_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), Limits::default()).unwrap();
        let now = now_nanos();
        spool.put(now + 2, &header("c"), b"{\"n\":3}").unwrap();
        spool.put(now, &header("a"), b"{\"n\":1}").unwrap();
        spool.put(now + 1, &header("b"), b"{\"n\":2}").unwrap();
        let listed = spool.list().unwrap();
        let ids: Vec<_> = listed
            .iter()
            .map(|l| spool.read(l).unwrap().unwrap().header.id)
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let entry = spool.read(&listed[1]).unwrap().unwrap();
        assert_eq!(entry.body, b"{\"n\":2}");
        assert_eq!(entry.header, header("b"));
    }

    #[test]
    fn drops_oldest_past_the_count_and_logs_it() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_events: 2,
            ..Limits::default()
        };
        let spool = Spool::open(dir.path(), limits).unwrap();
        let now = now_nanos();
        for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
            spool.put(now + i as u128, &header(id), b"{}").unwrap();
        }
        assert_eq!(spool.enforce_limits().unwrap(), 2);
        let left: Vec<_> = spool
            .list()
            .unwrap()
            .iter()
            .map(|l| spool.read(l).unwrap().unwrap().header.id)
            .collect();
        assert_eq!(left, ["c", "d"]);
        let dropped = spool.dropped().unwrap();
        let ids: Vec<_> = dropped.iter().map(|d| d.id.as_deref().unwrap()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(dropped[0].reason.contains("spool full"));
    }

    #[test]
    fn drops_events_older_than_the_maximum_age() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_age: Duration::from_secs(60),
            ..Limits::default()
        };
        let spool = Spool::open(dir.path(), limits).unwrap();
        let now = now_nanos();
        spool
            .put(now - 120_000_000_000, &header("old"), b"{}")
            .unwrap();
        spool.put(now, &header("new"), b"{}").unwrap();
        assert_eq!(spool.enforce_limits().unwrap(), 1);
        assert_eq!(spool.list().unwrap().len(), 1);
        assert_eq!(spool.dropped().unwrap()[0].id.as_deref(), Some("old"));
    }

    #[test]
    fn a_malformed_file_is_dropped_not_delivered() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), Limits::default()).unwrap();
        fs::write(
            dir.path().join(format!("{:039}-x{SUFFIX}", now_nanos())),
            b"junk",
        )
        .unwrap();
        let listed = spool.list().unwrap();
        assert!(spool.read(&listed[0]).unwrap().is_none());
        assert!(spool.list().unwrap().is_empty());
        let dropped = spool.dropped().unwrap();
        assert_eq!(dropped[0].reason, "malformed spool file");
        assert_eq!(dropped[0].id.as_deref(), Some("x"));
    }

    #[test]
    fn one_drainer_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path(), Limits::default()).unwrap();
        let held = spool.lock(Instant::now()).expect("free lock");
        assert!(spool.lock(Instant::now()).is_none());
        drop(held);
        assert!(spool.lock(Instant::now()).is_some());
    }
}
