//! The spool's directory: opening it (made owner-only), refusing one that someone else
//! controls, and where it lives when `HOOKLOG_SPOOL` is not set.

use super::{Limits, Spool};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

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
pub(super) fn euid() -> u32 {
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
