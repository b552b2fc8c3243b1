//! What tail prints: an event's envelope as one JSON line, or as a readable line (time,
//! session, position, type and a short summary), after the filters the server cannot apply.

use super::TailArgs;
use anyhow::Context;
use serde_json::Value;
use std::io::Write;

impl TailArgs {
    pub(super) fn print(&self, data: &str) -> anyhow::Result<()> {
        let envelope: Value = serde_json::from_str(data).context("an event that is not JSON")?;
        if let Some(t) = &self.event_type
            && envelope["type"].as_str() != Some(t.as_str())
        {
            return Ok(());
        }
        if let Some(o) = &self.origin
            && envelope["context"]["origin"].as_str() != Some(o.as_str())
        {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        if self.json {
            writeln!(out, "{data}")?;
        } else {
            writeln!(out, "{}", line(&envelope))?;
        }
        out.flush()?;
        Ok(())
    }
}

/// `12:00:00.123  sess_1  #7  PreToolUse  Bash: cargo test`
pub fn line(envelope: &Value) -> String {
    let context = &envelope["context"];
    let time = context["eventTime"].as_str().unwrap_or("");
    let time = time.get(11..23).unwrap_or(time);
    let session = context["sessionId"].as_str().unwrap_or("-");
    let position = context["sessionSequence"]
        .as_i64()
        .or(context["sequence"].as_i64())
        .unwrap_or(0);
    let event_type = envelope["type"].as_str().unwrap_or("?");
    let summary = summary(&envelope["payload"]);
    format_line(time, session, position, event_type, &summary)
}

/// A line from its parts: `time` (`HH:MM:SS.mmm`), the session (`-` for none), the stream
/// position, the type and what to say about the event. `hooklog search` prints its hits so.
pub fn format_line(
    time: &str,
    session: &str,
    position: i64,
    event_type: &str,
    summary: &str,
) -> String {
    format!("{time}  {session}  #{position}  {event_type}  {summary}")
        .trim_end()
        .to_string()
}

/// A short human summary of a payload: the tool and its command or file, a prompt's start, a
/// reason or message. Empty when nothing fits.
pub fn summary(payload: &Value) -> String {
    // `/event` stores hook bodies in camelCase; an import may hold them as the hook sent them.
    let field = |camel: &str, snake: &str| {
        Some(&payload[camel])
            .filter(|v| !v.is_null())
            .unwrap_or(&payload[snake])
    };
    let text = |camel: &str, snake: &str| field(camel, snake).as_str().map(|s| one_line(s, 80));
    if let Some(tool) = payload["tool"].as_str().or(payload["tool_name"].as_str()) {
        let input = field("toolInput", "tool_input");
        let detail = ["command", "file_path", "pattern", "url", "description"]
            .iter()
            .find_map(|k| input[*k].as_str());
        let reason = text("reason", "reason");
        return match (detail, reason) {
            (Some(d), _) => format!("{tool}: {}", one_line(d, 80)),
            (None, Some(reason)) => format!("{tool}: {reason}"),
            (None, None) => tool.to_string(),
        };
    }
    if let Some(calls) = payload["tool_calls"].as_array() {
        return format!("{} tool calls", calls.len());
    }
    [
        ("prompt", "prompt"),
        ("taskSubject", "task_subject"),
        ("newCwd", "new_cwd"),
        ("filePath", "file_path"),
        ("reason", "reason"),
        ("message", "message"),
        ("lastAssistantMessage", "last_assistant_message"),
        ("error", "error"),
        ("commandName", "command_name"),
        ("teammateName", "teammate_name"),
        ("worktreePath", "worktree_path"),
        ("name", "name"),
        ("trigger", "trigger"),
        ("action", "action"),
        ("source", "source"),
    ]
    .iter()
    .find_map(|(camel, snake)| text(camel, snake))
    .unwrap_or_default()
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}
