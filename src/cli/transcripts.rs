//! Reading transcript folders for `hooklog import --claude-projects / --codex-sessions`: finds
//! the files (Claude Code: `<projects>/<project>/<session>.jsonl` and
//! `<session>/subagents/agent-<id>.jsonl`; Codex: `rollout-*.jsonl` anywhere under the sessions
//! folder), parses every line with `ingest::transcript`, and puts each session's records in
//! time order. Files are read whole: a line still being written (no newline yet) is skipped as
//! malformed this time and read whole the next.

use crate::event::NewEvent;
use crate::ingest::transcript::{self, Keep, Record, Skip, codex};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Damaged lines, by file and line number (reported one by one).
    pub damaged: Vec<(PathBuf, usize, Skip)>,
    /// The events, in time order.
    pub events: Vec<NewEvent>,
}

/// Reads every transcript under `dir`.
pub fn read(dir: &Path, layout: Layout, keep: Keep) -> std::io::Result<Read> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut read = Read::default();
    let mut records = Vec::new();
    for file in files {
        let agent = match layout {
            Layout::ClaudeProjects => claude_agent(&file),
            Layout::CodexSessions if !codex::is_rollout(&file) => continue,
            Layout::CodexSessions => None,
        };
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(file = %file.display(), error = %e, "transcript not readable");
                continue;
            }
        };
        read.files += 1;
        let mut reader = codex::Reader::default();
        for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = match layout {
                Layout::ClaudeProjects => transcript::claude::parse(line, agent.as_deref(), keep),
                Layout::CodexSessions => reader.line(line, keep),
            };
            match parsed {
                Ok(Some(record)) => records.push(record),
                Ok(None) => {}
                Err(skip) => {
                    *read.skipped.entry(skip).or_default() += 1;
                    if skip.is_error() {
                        read.damaged.push((file.clone(), i + 1, skip));
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

/// Every `.jsonl` file under `dir`, at any depth.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
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
        let read = read(&dir, Layout::ClaudeProjects, Keep::Metadata).unwrap();
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
        let read = read(&dir, Layout::CodexSessions, Keep::Metadata).unwrap();
        assert_eq!(read.files, 1);
        // A prompt, a tool call, three token counts (one a repeat).
        assert_eq!(read.records, 5);
        assert_eq!(read.skipped[&Skip::NoUsage], 1);
        assert_eq!(read.skipped[&Skip::NotKept], 3);
        assert!(read.damaged.is_empty());
    }
}
