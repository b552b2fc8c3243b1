//! `hooklog tail`: follow a session (or everything) as readable lines, or raw envelopes with
//! `--json`. It reconnects by itself with its cursor (the `Last-Event-ID` of the last event it
//! printed) and a capped backoff, so a restart of the server neither loses nor repeats a line.

use crate::http::streams::GENERATION_HEADER;
use anyhow::{Context, bail};
use clap::Args;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;
use std::io::Write;
use std::time::Duration;

const BACKOFF_START: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// For the answer to a request (the headers, not the whole stream).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Three missed keepalives (the server sends one every 15 s by default).
const IDLE_TIMEOUT: Duration = Duration::from_secs(45);

#[derive(Args, Debug)]
pub struct TailArgs {
    /// The session to follow; without it, every event.
    pub session: Option<String>,
    /// The hooklog to read from.
    #[arg(long, env = "HOOKLOG_URL", default_value = "http://127.0.0.1:2468")]
    pub url: String,
    /// Sent as `Authorization: Bearer` when set.
    #[arg(long, env = "HOOKLOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Start after this position (the session's sequence, or the global one without a session).
    #[arg(long, conflicts_with_all = ["after_event_id", "from_now"])]
    pub after_sequence: Option<i64>,
    /// Start after the event with this id.
    #[arg(long, conflicts_with = "from_now")]
    pub after_event_id: Option<String>,
    /// Only events from now on.
    #[arg(long)]
    pub from_now: bool,
    /// Only events of this type.
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// Only events first stored by this hooklog (their `origin`; see `serve --origin`).
    #[arg(long)]
    pub origin: Option<String>,
    /// Print each event's canonical envelope as one JSON line.
    #[arg(long)]
    pub json: bool,
}

/// What one attempt to open the stream came to.
enum Opened {
    Stream(reqwest::Response),
    /// No server, a timeout, a 5xx: try again after the backoff.
    Retry,
    /// The server refused the cursor; `generation` is the one it answered with.
    Stale {
        generation: Option<String>,
        message: String,
    },
    /// The server refused us (a bad token): stop.
    Refused(String),
}

/// Where to resume: the id of the last event printed, or (before any) the user's own cursor.
struct Resume {
    last_id: Option<String>,
    /// Whether the user's `--after-*` flags still apply (not after a generation change).
    use_flags: bool,
    generation: Option<String>,
}

impl TailArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(self.follow())
    }

    async fn follow(self) -> anyhow::Result<()> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()?;
        let mut resume = Resume {
            last_id: None,
            use_flags: true,
            generation: None,
        };
        let mut backoff = BACKOFF_START;
        loop {
            // `--from-now` is pinned to the head once, so a reconnect before the first event
            // resumes from there instead of skipping what arrived while disconnected.
            if self.from_now && resume.use_flags && resume.last_id.is_none() {
                match self.head(&client).await {
                    Some(head) => resume.last_id = Some(head.to_string()),
                    None => {
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(BACKOFF_MAX);
                        continue;
                    }
                }
            }
            match self.connect(&client, &resume).await {
                Opened::Retry => {}
                Opened::Refused(message) => bail!(message),
                Opened::Stale {
                    generation,
                    message,
                } => {
                    if !self.generation_changed(&mut resume, generation) {
                        bail!(message);
                    }
                    continue;
                }
                Opened::Stream(response) => {
                    let generation = header(&response, GENERATION_HEADER);
                    if self.generation_changed(&mut resume, generation) {
                        continue;
                    }
                    backoff = BACKOFF_START;
                    match &resume.last_id {
                        Some(id) => eprintln!("hooklog tail: connected, resuming after {id}"),
                        None => eprintln!("hooklog tail: connected"),
                    }
                    let mut events = response.bytes_stream().eventsource();
                    // The server sends a keepalive every 15 s: silence much longer than that
                    // means the connection is gone, even if the socket says nothing.
                    while let Ok(Some(Ok(event))) =
                        tokio::time::timeout(IDLE_TIMEOUT, events.next()).await
                    {
                        if event.data.is_empty() {
                            continue;
                        }
                        if let Err(e) = self.print(&event.data) {
                            eprintln!("hooklog tail: skipped event {}: {e}", event.id);
                        }
                        resume.last_id = Some(event.id);
                    }
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Records the server's generation; when it differs from the one seen before, the database
    /// was replaced and every cursor is meaningless: say so and start from its beginning.
    fn generation_changed(&self, resume: &mut Resume, current: Option<String>) -> bool {
        let changed = resume.generation.is_some() && current != resume.generation;
        resume.generation = current;
        if changed {
            eprintln!(
                "hooklog tail: the stream generation changed (the database was replaced); starting over"
            );
            resume.last_id = None;
            resume.use_flags = false;
        }
        changed
    }

    /// The stream this tail follows: one session's, or the global one.
    fn stream_url(&self) -> String {
        let base = self.url.trim_end_matches('/');
        match &self.session {
            Some(session) => format!("{base}/sessions/{}/events", encode(session)),
            None => format!("{base}/events"),
        }
    }

    /// The stream's current head, in its own ordering (`None`: the server cannot be reached).
    async fn head(&self, client: &reqwest::Client) -> Option<i64> {
        // A session's probe answers with its head; the global head is in /health.
        let url = match &self.session {
            Some(_) => self.stream_url(),
            None => format!("{}/health", self.url.trim_end_matches('/')),
        };
        let mut request = client.get(url).header("accept", "application/json");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = tokio::time::timeout(REQUEST_TIMEOUT, request.send())
            .await
            .ok()?
            .ok()?;
        let body: Value = response.json().await.ok()?;
        body["headSequence"].as_i64()
    }

    /// Opens the stream, resuming after `resume.last_id` (as `Last-Event-ID`) or, before any
    /// event, from the user's own cursor flags.
    async fn connect(&self, client: &reqwest::Client, resume: &Resume) -> Opened {
        let base = self.url.trim_end_matches('/');
        let path = self.stream_url();
        let mut query = Vec::new();
        if self.session.is_none()
            && let Some(t) = &self.event_type
        {
            query.push(("type", t.clone()));
        }
        if self.session.is_none()
            && let Some(o) = &self.origin
        {
            query.push(("origin", o.clone()));
        }
        if resume.use_flags && resume.last_id.is_none() {
            if let Some(n) = self.after_sequence {
                query.push(("after_sequence", n.to_string()));
            }
            if let Some(id) = &self.after_event_id {
                query.push(("after_event_id", id.clone()));
            }
        }
        let mut request = client
            .get(path)
            .query(&query)
            .header("accept", "text/event-stream");
        if let Some(id) = &resume.last_id {
            request = request.header("last-event-id", id);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = match tokio::time::timeout(REQUEST_TIMEOUT, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => {
                eprintln!("hooklog tail: cannot reach {base} ({e}); retrying");
                return Opened::Retry;
            }
            Err(_) => {
                eprintln!("hooklog tail: {base} did not answer in {REQUEST_TIMEOUT:?}; retrying");
                return Opened::Retry;
            }
        };
        match response.status().as_u16() {
            200 => Opened::Stream(response),
            400 => {
                let generation = header(&response, GENERATION_HEADER);
                let body: Value = response.json().await.unwrap_or_default();
                Opened::Stale {
                    generation,
                    message: format!(
                        "the server refused the cursor: {} (first available {}, head {}); start again without it",
                        body["message"].as_str().unwrap_or("invalid request"),
                        body["firstAvailableSequence"],
                        body["headSequence"],
                    ),
                }
            }
            401 | 403 => Opened::Refused(format!(
                "the server refused the token ({}); set HOOKLOG_TOKEN or --token",
                response.status()
            )),
            status => {
                eprintln!("hooklog tail: the server answered {status}; retrying");
                Opened::Retry
            }
        }
    }

    fn print(&self, data: &str) -> anyhow::Result<()> {
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

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_shows_time_session_position_type_and_what_happened() {
        let envelope = json!({"type": "PreToolUse", "context": {"sequence": 9, "sessionId": "s1", "sessionSequence": 3,
            "eventTime": "2026-11-30T12:34:56.789Z"},
            "payload": {"tool_name": "Bash", "tool_input": {"command": "cargo   test\n --release"}}});
        assert_eq!(
            line(&envelope),
            "12:34:56.789  s1  #3  PreToolUse  Bash: cargo test --release"
        );
        let global = json!({"type": "Stop", "context": {"sequence": 4, "eventTime": "2026-11-30T00:00:00.000Z"}, "payload": {}});
        assert_eq!(line(&global), "00:00:00.000  -  #4  Stop");
    }

    #[test]
    fn summaries_prefer_the_tool_then_the_prompt_then_a_reason() {
        assert_eq!(
            summary(&json!({"tool_name": "Read", "tool_input": {"file_path": "/a/b.rs"}})),
            "Read: /a/b.rs"
        );
        assert_eq!(
            summary(&json!({"prompt": "x".repeat(100)})),
            format!("{}…", "x".repeat(80))
        );
        assert_eq!(
            summary(&json!({"reason": "prompt_input_exit"})),
            "prompt_input_exit"
        );
        assert_eq!(summary(&json!({"n": 1})), "");
    }

    #[test]
    fn summaries_read_stored_camel_case_and_the_newer_events() {
        let stored = json!({"tool": "Bash", "toolInput": {"command": "cargo test"}});
        assert_eq!(summary(&stored), "Bash: cargo test");
        let denied = json!({"tool": "Bash", "toolInput": {}, "reason": "auto mode: rm -rf"});
        assert_eq!(summary(&denied), "Bash: auto mode: rm -rf");
        let cases = [
            (
                json!({"taskId": "1", "taskSubject": "Write the tests"}),
                "Write the tests",
            ),
            (
                json!({"oldCwd": "/a", "newCwd": "/a/b", "cwd": "/a/b"}),
                "/a/b",
            ),
            (json!({"filePath": "/a/.env", "event": "change"}), "/a/.env"),
            (json!({"trigger": "auto", "compactSummary": "..."}), "auto"),
            (json!({"worktree_path": "/w/feature"}), "/w/feature"),
            (json!({"tool_calls": [{}, {}]}), "2 tool calls"),
            (json!({"lastAssistantMessage": "Done."}), "Done."),
            (
                json!({"mcp_server_name": "tracker", "action": "accept"}),
                "accept",
            ),
        ];
        for (payload, expected) in cases {
            assert_eq!(summary(&payload), expected, "{payload}");
        }
    }

    #[test]
    fn session_ids_are_percent_encoded_in_the_path() {
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
        assert_eq!(encode("sess_1-x.y~z"), "sess_1-x.y~z");
    }
}
