//! Following transcripts live (`serve`, unless `--no-transcripts`): when a hook event that
//! ends a stretch of work (`Stop`, `SubagentStop`, `PreCompact`, `SessionEnd`) commits and
//! names a transcript readable here (`transcriptPath`, and a subagent's
//! `agentTranscriptPath`), that file is followed: its new whole lines are read, parsed as Claude
//! Code records (`ingest::transcript::claude`) or, for a Codex rollout (`rollout-*.jsonl`), as
//! Codex lines (`ingest::transcript::codex`), and appended through the writer with one
//! `TranscriptRead` event saying how far the file was read. They commit together, and the
//! offset is the `transcript_files` projection of that event, so a restart resumes where the
//! last committed read ended and nothing is counted twice (the records' ids are their own). A
//! read that found no record stores nothing.
//!
//! An agent may still be writing a turn's last lines when its hook runs (Claude Code writes
//! them up to ~0.2 s after `Stop`), so one read at the trigger can miss the turn's last model
//! call. A followed file is read again each time it grows, and let go once it has not grown
//! for [`QUIET`]. One follower per session transcript at a time ([`watch`]), which also
//! reads the subagent transcripts `SubagentStop` names, each right after the parent's (their
//! records count under the turn open in it): a trigger for a file already followed keeps its
//! follower going.
//!
//! The task learns of hook events from the hub. If it falls behind the hub it misses some
//! triggers, which costs nothing but time: the next trigger reads everything since the stored
//! offset. A file that is missing or unreadable is skipped with a debug line.
//!
//! Only files where transcripts live are read ([`trust`]): a path whose real location is
//! outside the transcript roots, that is not a regular file, or that another user owns is not
//! opened, and one `TranscriptRefused` event records it (its projection raises one
//! `transcript_refused` alert per path and reason).

pub mod chunk;
pub mod trust;
mod watch;

use crate::event::NewEvent;
use crate::ingest::hook as hook_ingest;
use crate::ingest::transcript::{self, Keep, Record, codex};
use crate::projection::transcript_files;
use crate::projection::view::View;
use crate::store::{AppendError, Store, read};
use crate::stream::Hub;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use watch::Followers;

/// The hook events after which a session's transcript is read.
pub const TRIGGERS: &[&str] = &["Stop", "SubagentStop", "PreCompact", "SessionEnd"];

/// How long a followed file must stay the same before it is let go.
pub const QUIET: Duration = Duration::from_secs(1);

/// How often a followed file is looked at.
const POLL: Duration = Duration::from_millis(100);

/// One transcript to read, as a hook named it.
#[derive(Debug, Clone, PartialEq)]
struct Target {
    session: String,
    path: PathBuf,
    /// The subagent whose transcript it is (`SubagentStop`'s `agentId`).
    agent: Option<String>,
    /// A subagent's records count under the turn open in its parent's transcript, read just
    /// before it by the same follower.
    parent: Option<PathBuf>,
    /// The model the hook named (Codex's hooks do): a rollout read from its middle has no
    /// `turn_context` line before the new lines to say it.
    model: Option<String>,
}

/// Starts following on the store's hub, keeping what `keep` says of each record, reading only
/// transcripts under `roots`.
pub fn start(
    store: &Arc<Store>,
    hub: &Hub,
    keep: Keep,
    roots: Vec<PathBuf>,
) -> tokio::task::JoinHandle<()> {
    let store = store.clone();
    let roots = Arc::new(roots);
    let mut hub = hub.subscribe();
    let followers = Followers::default();
    tokio::spawn(async move {
        // The followers end with this task (aborted when hooklog stops).
        let mut tasks = tokio::task::JoinSet::new();
        loop {
            while tasks.try_join_next().is_some() {}
            let published = match hub.recv().await {
                Ok(published) => published,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let here = published
                .events
                .iter()
                .filter(|c| c.event.origin == store.origin);
            for event in here {
                let (targets, roots) = (targets(&event.event), roots.clone());
                if targets.is_empty() {
                    continue;
                }
                // The checks stat the file system: off the runtime's threads.
                let Ok((allowed, refused)) =
                    tokio::task::spawn_blocking(move || screen(targets, &roots)).await
                else {
                    continue;
                };
                if !refused.is_empty() {
                    let store = store.clone();
                    tasks.spawn(async move {
                        if let Err(e) = append(&store, refused).await {
                            tracing::warn!(error = %e, "a refused transcript was not recorded");
                        }
                    });
                }
                followers.follow(&mut tasks, &store, allowed, keep);
            }
        }
    })
}

/// The transcripts a committed event asks to read: the session's, then a subagent's. (Only
/// events this hooklog stored first are looked at: a path in an event from another machine
/// names a file there.)
fn targets(event: &crate::event::StoredEvent) -> Vec<Target> {
    if event.source != hook_ingest::SOURCE || !TRIGGERS.contains(&event.event_type.as_str()) {
        return Vec::new();
    }
    let Some(session) = event.session_id.clone() else {
        return Vec::new();
    };
    let view = View::parse(&event.payload);
    let jsonl = |field| {
        view.text(field)
            .filter(|p| p.ends_with(".jsonl"))
            .map(PathBuf::from)
    };
    let main = jsonl("transcriptPath");
    let mut out: Vec<Target> = main
        .iter()
        .map(|path| Target {
            session: session.clone(),
            path: path.clone(),
            agent: None,
            parent: None,
            model: view.text("model").map(str::to_string),
        })
        .collect();
    if let Some(path) = jsonl("agentTranscriptPath") {
        out.push(Target {
            session,
            path,
            agent: view.text("agentId").map(str::to_string),
            parent: main,
            model: None,
        });
    }
    out
}

/// The targets that may be read, under their real paths (a subagent's parent too), and a
/// `TranscriptRefused` event for each that may not. A target whose file does not exist is
/// dropped (a later trigger finds it); a subagent's whose parent was dropped keeps no parent.
fn screen(targets: Vec<Target>, roots: &[PathBuf]) -> (Vec<Target>, Vec<NewEvent>) {
    let mut allowed = Vec::new();
    let mut refused = Vec::new();
    let mut real_of: HashMap<PathBuf, PathBuf> = HashMap::new();
    for mut target in targets {
        match trust::screen(&target.path, roots) {
            Ok(Some(real)) => {
                real_of.insert(target.path.clone(), real.clone());
                target.path = real;
                target.parent = target.parent.and_then(|p| real_of.get(&p).cloned());
                allowed.push(target);
            }
            Ok(None) => {
                tracing::debug!(path = %target.path.display(), "transcript not found");
            }
            Err(why) => {
                let path = target.path.to_string_lossy();
                tracing::warn!(%path, reason = why.as_str(), "a hook named a transcript hooklog does not read");
                refused.push(transcript::refused(&target.session, &path, why.as_str()));
            }
        }
    }
    (allowed, refused)
}

/// Where a follower is in its file, and what it knows of it.
struct Position {
    from: u64,
    /// The turn open at `from` (for a subagent's file: in its parent's).
    turn: Option<String>,
    /// A rollout's context so far (unused for Claude Code transcripts).
    codex: codex::Reader,
}

impl Position {
    /// Where the last committed read of `target` ended.
    async fn stored(store: &Arc<Store>, target: &Target) -> anyhow::Result<Position> {
        let key = target.path.to_string_lossy().into_owned();
        let (from, turn) = store
            .read(move |conn| transcript_files::position(conn, &key))
            .await?;
        Ok(Position {
            from,
            turn,
            codex: codex::Reader::resuming(&target.session, target.model.as_deref()),
        })
    }
}

/// Reads and appends everything new in one transcript, a bounded chunk at a time; returns
/// whether there was anything new.
async fn read_new(
    store: &Arc<Store>,
    target: &Target,
    at: &mut Position,
    keep: Keep,
) -> anyhow::Result<bool> {
    let mut grew = false;
    loop {
        let (path, from) = (target.path.clone(), at.from);
        let read = tokio::task::spawn_blocking(move || chunk::read(&path, from, chunk::MAX_READ))
            .await??;
        let Some(read) = read else {
            return Ok(grew);
        };
        grew = true;
        let key = target.path.to_string_lossy().into_owned();
        if let Some(events) = events_of(target, &key, &read, at, keep) {
            append(store, events).await?;
        }
        at.from = read.end;
        if !read.more {
            return Ok(grew);
        }
    }
}

/// The chunk's records in time order, then the `TranscriptRead` event that moves the offset;
/// `None` when the chunk has no record (nothing worth storing).
fn events_of(
    target: &Target,
    key: &str,
    read: &chunk::Chunk,
    at: &mut Position,
    keep: Keep,
) -> Option<Vec<NewEvent>> {
    let agent = target.agent.as_deref().or_else(|| agent_of(&target.path));
    let rollout = codex::is_rollout(&target.path);
    let mut records: Vec<Record> = read
        .bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .filter_map(|line| match rollout {
            true => at.codex.line(line, keep).ok().flatten(),
            false => transcript::claude::parse(line, agent, keep).ok().flatten(),
        })
        // A rollout's `session_meta` names its session; a hook's session is the one followed.
        .filter(|r| !rollout || r.session_id == target.session)
        .collect();
    if records.is_empty() {
        return None;
    }
    let open: HashMap<String, String> = at
        .turn
        .take()
        .map(|t| (target.session.clone(), t))
        .into_iter()
        .collect();
    let turns = transcript::in_order_from(&mut records, open);
    at.turn = turns.get(&target.session).cloned();
    let mut events: Vec<NewEvent> = records.into_iter().map(Record::into_event).collect();
    events.push(transcript::read_marker(
        &target.session,
        key,
        read.end,
        at.turn.as_deref(),
    ));
    Some(events)
}

/// The agent id of `.../subagents/agent-<id>.jsonl`.
fn agent_of(path: &Path) -> Option<&str> {
    let stem = path.file_stem()?.to_str()?;
    stem.strip_prefix("agent-")
}

/// Appends the events in one request, leaving out those already stored. A record stored
/// before may have other content (read with `--transcripts full`, or imported from a copy),
/// and one such record must not stop the file from being followed. The stored ids are looked
/// up in one read, so a file of such records costs one pass (issue 44). An event stored
/// between the look and the append (another follower's) is a conflict: looked up again.
/// The last event (the read's marker) is always sent: it moves the offset.
async fn append(store: &Arc<Store>, mut events: Vec<NewEvent>) -> anyhow::Result<()> {
    loop {
        let ids: Vec<String> = events.iter().map(|e| e.event_id.clone()).collect();
        let stored = store
            .read(move |conn| read::stored_origins(conn, &ids))
            .await?;
        let last = events.len() - 1;
        let mut index = 0;
        events.retain(|event| {
            let keep = index == last || !stored.contains_key(&event.event_id);
            index += 1;
            keep
        });
        match store.writer.enqueue(events.clone()).await?.await? {
            Ok(_) => return Ok(()),
            Err(AppendError::Conflict { index, .. }) if index < events.len() - 1 => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::StoredEvent;

    fn hook(kind: &str, payload: &str) -> StoredEvent {
        StoredEvent {
            sequence: 1,
            event_id: "e".into(),
            session_id: Some("s".into()),
            session_sequence: Some(1),
            event_type: kind.into(),
            source: "hook".into(),
            event_time: "2026-11-02T09:00:00.000Z".into(),
            received_at: "2026-11-02T09:00:00.000Z".into(),
            origin: "here".into(),
            payload: payload.into(),
        }
    }

    #[test]
    fn only_the_triggers_transcripts_are_read() {
        let stop = hook("Stop", r#"{"transcriptPath":"/t/s.jsonl"}"#);
        assert_eq!(targets(&stop).len(), 1);
        let sub = hook(
            "SubagentStop",
            r#"{"transcriptPath":"/t/s.jsonl","agentId":"a1","agentTranscriptPath":"/t/s/subagents/agent-a1.jsonl"}"#,
        );
        let found = targets(&sub);
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].agent.as_deref(), Some("a1"));
        assert!(targets(&hook("PreToolUse", r#"{"transcriptPath":"/t/s.jsonl"}"#)).is_empty());
        let codex = hook(
            "Stop",
            r#"{"transcriptPath":"/c/rollout-1.jsonl","model":"gpt-5-codex"}"#,
        );
        assert_eq!(targets(&codex)[0].model.as_deref(), Some("gpt-5-codex"));
        assert!(targets(&hook("Stop", r#"{"transcriptPath":"/etc/passwd"}"#)).is_empty());
    }
}
