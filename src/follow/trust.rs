//! Which transcripts may be read (issue 44). A hook event names a path, and whoever can post
//! to hooklog can name any: so a named transcript is read only when its real path (symlinks
//! and `..` resolved) lies under a transcript root, it is a regular file owned by the user
//! hooklog runs as and has no other name (a hard link), and its real name is a transcript's
//! (`.jsonl`). Anything else is not opened.
//!
//! The roots (`serve --transcript-root`, `config::default_transcript_roots`) are where Claude Code and Codex
//! write their transcripts. A file is followed under its real path, so two spellings of one
//! file (`./`, a symlink) share one offset. It is opened without following a last symlink and
//! without blocking (a FIFO or a device put in its place after the check is refused at open,
//! never waited on), and checked again through the open file, whose path must still be the
//! one checked (a folder on the way swapped for a symlink is caught there).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a named transcript is not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its real path is under no transcript root.
    OutsideRoots,
    /// It is not a regular file (a directory, a FIFO, a device, a socket).
    NotRegularFile,
    /// Another user owns it.
    NotOwned,
    /// It has other names (hard links): one of them may be anywhere.
    HardLinked,
    /// Its real name does not end in `.jsonl` (a symlink named like a transcript).
    NotATranscript,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::OutsideRoots => "outside_transcript_roots",
            Refusal::NotRegularFile => "not_a_regular_file",
            Refusal::NotOwned => "not_owned_by_hooklogs_user",
            Refusal::HardLinked => "hard_linked",
            Refusal::NotATranscript => "not_a_transcript_name",
        }
    }
}

/// The real path of a named transcript that may be read, `Ok(None)` when it does not exist
/// (yet), or why it may not be.
pub fn screen(named: &Path, roots: &[PathBuf]) -> Result<Option<PathBuf>, Refusal> {
    let real = match std::fs::canonicalize(named) {
        Ok(real) => real,
        Err(_) => return Ok(None),
    };
    let under = roots
        .iter()
        .any(|root| std::fs::canonicalize(root).is_ok_and(|root| real.starts_with(&root)));
    if !under {
        return Err(Refusal::OutsideRoots);
    }
    if real.extension().is_none_or(|e| e != "jsonl") {
        return Err(Refusal::NotATranscript);
    }
    let meta = std::fs::symlink_metadata(&real).map_err(|_| Refusal::NotRegularFile)?;
    check(&meta)?;
    Ok(Some(real))
}

/// Opens a screened transcript for reading: without following a last symlink and without
/// waiting (on a FIFO put in its place), and checked again through the open file.
pub fn open(real: &Path) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(real)?;
    check(&file.metadata()?).map_err(|refused| std::io::Error::other(refused.as_str()))?;
    // A folder on the way swapped for a symlink since the check: the file opened is elsewhere.
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    if opened != real {
        return Err(std::io::Error::other(
            "the transcript moved since it was checked",
        ));
    }
    Ok(file)
}

fn check(meta: &std::fs::Metadata) -> Result<(), Refusal> {
    if !meta.file_type().is_file() {
        return Err(Refusal::NotRegularFile);
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if meta.uid() != unsafe { libc::geteuid() } {
        return Err(Refusal::NotOwned);
    }
    if meta.nlink() > 1 {
        return Err(Refusal::HardLinked);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_under_a_root_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("projects");
        std::fs::create_dir_all(root.join("p")).unwrap();
        let inside = root.join("p/s.jsonl");
        std::fs::write(&inside, "{}\n").unwrap();
        let outside = dir.path().join("secret.jsonl");
        std::fs::write(&outside, "{}\n").unwrap();
        let roots = vec![root.clone()];

        assert_eq!(
            screen(&inside, &roots),
            Ok(Some(std::fs::canonicalize(&inside).unwrap()))
        );
        // Another spelling of the same file is the same file.
        let dotted = root.join("p/../p/./s.jsonl");
        assert_eq!(screen(&dotted, &roots), screen(&inside, &roots));
        assert_eq!(screen(&outside, &roots), Err(Refusal::OutsideRoots));
        // A symlink inside a root to a file outside it is the file outside.
        let link = root.join("p/link.jsonl");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert_eq!(screen(&link, &roots), Err(Refusal::OutsideRoots));
        let fifo = root.join("p/fifo.jsonl");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(screen(&fifo, &roots), Err(Refusal::NotRegularFile));
        // Opened, a FIFO is refused at once rather than waited on.
        assert!(open(&fifo).is_err());
        // A second name for a file of hooklog's user (its keys, say) is refused.
        let hard = root.join("p/hard.jsonl");
        std::fs::hard_link(&outside, &hard).unwrap();
        assert_eq!(screen(&hard, &roots), Err(Refusal::HardLinked));
        let named = root.join("p/named.jsonl");
        std::fs::write(root.join("p/notes.txt"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("p/notes.txt"), &named).unwrap();
        assert_eq!(screen(&named, &roots), Err(Refusal::NotATranscript));
        assert_eq!(screen(&root.join("p/missing.jsonl"), &roots), Ok(None));
    }
}
