//! Reading transcript folders for `hooklog import --claude-projects / --codex-sessions`: finds
//! the files (Claude Code: `<projects>/<project>/<session>.jsonl` and
//! `<session>/subagents/agent-<id>.jsonl`; Codex: `rollout-*.jsonl` anywhere under the sessions
//! folder), parses every line with `ingest::transcript`, and puts each session's records in
//! time order. A line still being written (no newline yet) is skipped as malformed this time
//! and read whole the next.
//!
//! The folder given is the boundary: a file is read only if `follow::trust` would let the
//! follower read it with the folder as its one root (its real path under the folder, so no
//! symlink out of it; a regular file, opened without waiting, so no FIFO or device; owned by
//! this user; one name). Symlinked folders are not entered. A line longer than the follower
//! reads at once ([`MAX_LINE`]) or nested deeper than `--max-json-depth` is reported by its
//! number and passed over without being held.

use super::lines::{Limits, Lines};
use crate::event::NewEvent;
use crate::follow::trust;
use crate::ingest::transcript::{self, Keep, Record, Skip, codex};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest transcript line read: as long as the follower reads at once.
pub const MAX_LINE: usize = crate::follow::chunk::MAX_READ as usize;

/// Which program's folder to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    ClaudeProjects,
    CodexSessions,
}

/// What reading the files found, before anything is appended.
#[derive(Debug, Default)]
pub struct Read {
    pub files: usize,
    /// Lines read into an event.
    pub records: usize,
    /// Lines that became no event, by reason.
    pub skipped: BTreeMap<Skip, usize>,
    /// Damaged lines, by file and line number, and why (reported one by one).
    pub damaged: Vec<(PathBuf, usize, String)>,
    /// Files not read, and why (outside the folder, not a regular file, ...).
    pub refused: Vec<(PathBuf, String)>,
    /// The events, in time order.
    pub events: Vec<NewEvent>,
}

/// Reads every transcript under `dir`, lines nested at most `depth` deep.
pub fn read(dir: &Path, layout: Layout, keep: Keep, depth: usize) -> std::io::Result<Read> {
    let root = std::fs::canonicalize(dir)?;
    let mut read = Read::default();
    let mut files = BTreeSet::new();
    collect(&root, &root, &mut files, &mut read.refused)?;
    let limits = Limits {
        bytes: MAX_LINE,
        depth,
    };
    let mut records = Vec::new();
    for file in files {
        let agent = match layout {
            Layout::ClaudeProjects => claude_agent(&file),
            Layout::CodexSessions if !codex::is_rollout(&file) => continue,
            Layout::CodexSessions => None,
        };
        let mut lines = match trust::open(&file) {
            Ok(opened) => Lines::new(opened, limits),
            Err(e) => {
                read.refused.push((file, e.to_string()));
                continue;
            }
        };
        read.files += 1;
        let mut reader = codex::Reader::default();
        while let Some((number, line)) = lines.next_line()? {
            let line = match line {
                Ok(line) => line,
                Err(refused) => {
                    read.damaged
                        .push((file.clone(), number, refused.to_string()));
                    continue;
                }
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = match layout {
                Layout::ClaudeProjects => transcript::claude::parse(&line, agent.as_deref(), keep),
                Layout::CodexSessions => reader.line(&line, keep),
            };
            match parsed {
                Ok(Some(record)) => records.push(record),
                Ok(None) => {}
                Err(skip) => {
                    *read.skipped.entry(skip).or_default() += 1;
                    if skip.is_error() {
                        read.damaged
                            .push((file.clone(), number, skip.reason().to_string()));
                    }
                }
            }
        }
    }
    read.records = records.len();
    transcript::in_order(&mut records);
    read.events = records.into_iter().map(Record::into_event).collect();
    Ok(read)
}

/// The real path of every `.jsonl` file under `dir` (itself under `root`, real) that the
/// follower would read with `root` as its one root; the others in `refused`, with why.
/// Folders are entered only as themselves, not through a symlink.
fn collect(
    root: &Path,
    dir: &Path,
    out: &mut BTreeSet<PathBuf>,
    refused: &mut Vec<(PathBuf, String)>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            collect(root, &path, out, refused)?;
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            match trust::screen(&path, &[root.to_path_buf()]) {
                Ok(Some(real)) => {
                    out.insert(real);
                }
                // Gone since it was listed, or a symlink to nothing.
                Ok(None) => {}
                Err(why) => refused.push((path, why.as_str().to_string())),
            }
        }
    }
    Ok(())
}

/// The agent id of a subagent transcript (`.../subagents/agent-<id>.jsonl`).
fn claude_agent(file: &Path) -> Option<String> {
    let in_subagents = file
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "subagents");
    let stem = file.file_stem()?.to_str()?;
    in_subagents
        .then(|| stem.strip_prefix("agent-").map(str::to_string))
        .flatten()
}

/// `~/<rest>`: the default folders.
pub fn home(rest: &str) -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/transcripts");

    #[test]
    fn the_claude_fixture_reads_main_and_subagent_records_and_reports_the_cut_line() {
        let dir = Path::new(FIXTURES).join("claude/projects");
        let read = read(&dir, Layout::ClaudeProjects, Keep::Metadata, 64).unwrap();
        assert_eq!(read.files, 2);
        // 10 records in the session file (its summary is not kept, its last line is cut), 4
        // in the subagent's.
        assert_eq!(read.records, 14);
        assert_eq!(read.skipped[&Skip::NotKept], 1);
        assert_eq!(read.skipped[&Skip::Malformed], 1);
        assert_eq!(read.damaged.len(), 1);
        assert_eq!(read.damaged[0].1, 12);
        let times: Vec<_> = read.events.iter().map(|e| e.event_time.clone()).collect();
        let mut sorted = times.clone();
        sorted.sort();
        assert_eq!(times, sorted, "in time order");
        let sub: Vec<_> = read
            .events
            .iter()
            .filter(|e| e.payload.contains("\"agentId\":\"a3f9c1e\""))
            .collect();
        assert_eq!(sub.len(), 4);
        assert!(
            sub.iter()
                .all(|e| e.session_id.as_deref() == Some("7f3c2a10-5d1e-4b8a-9c2f-1a2b3c4d5e6f"))
        );
    }

    #[test]
    fn the_codex_fixture_reads_its_prompt_tool_call_and_token_counts() {
        let dir = Path::new(FIXTURES).join("codex/sessions");
        let read = read(&dir, Layout::CodexSessions, Keep::Metadata, 64).unwrap();
        assert_eq!(read.files, 1);
        // A prompt, a tool call, three token counts (one a repeat).
        assert_eq!(read.records, 5);
        assert_eq!(read.skipped[&Skip::NoUsage], 1);
        assert_eq!(read.skipped[&Skip::NotKept], 3);
        assert!(read.damaged.is_empty());
    }
}
