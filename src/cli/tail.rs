//! `hooklog tail`: follow a session (or everything) as readable lines, or raw envelopes with
//! `--json`. It reconnects by itself with its cursor (the `Last-Event-ID` of the last event it
//! printed) and a capped backoff, so a restart of the server neither loses nor repeats a line.

use anyhow::{Context, bail};
use clap::Args;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;
use std::io::Write;
use std::time::Duration;

const GENERATION_HEADER: &str = "x-hooklog-stream-generation-id";
const BACKOFF_START: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

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
    /// Print each event's canonical envelope as one JSON line.
    #[arg(long)]
    pub json: bool,
}

/// Why following stopped for good (anything else is retried).
enum Stop {
    Refused(String),
}

impl TailArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(self.follow())
    }

    async fn follow(self) -> anyhow::Result<()> {
        let client = reqwest::Client::new();
        let mut last_id: Option<String> = None;
        let mut generation: Option<String> = None;
        let mut backoff = BACKOFF_START;
        loop {
            match self.connect(&client, last_id.as_deref()).await {
                Ok(None) => {}
                Ok(Some(response)) => {
                    let current = response
                        .headers()
                        .get(GENERATION_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    if generation.is_some() && current != generation {
                        eprintln!(
                            "hooklog tail: the stream generation changed (the database was replaced); starting over"
                        );
                        generation = current;
                        last_id = None;
                        continue;
                    }
                    generation = current;
                    backoff = BACKOFF_START;
                    let mut events = response.bytes_stream().eventsource();
                    while let Some(Ok(event)) = events.next().await {
                        if event.data.is_empty() {
                            continue;
                        }
                        self.print(&event.data)?;
                        last_id = Some(event.id);
                    }
                }
                Err(Stop::Refused(message)) => bail!(message),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// Opens the stream: `Ok(None)` is worth retrying (no server, a 5xx); a refusal the server
    /// means (a stale cursor, a bad token) stops for good.
    async fn connect(
        &self,
        client: &reqwest::Client,
        last_id: Option<&str>,
    ) -> Result<Option<reqwest::Response>, Stop> {
        let base = self.url.trim_end_matches('/');
        let (path, mut query) = match &self.session {
            Some(session) => (
                format!("{base}/sessions/{}/events", encode(session)),
                Vec::new(),
            ),
            None => (format!("{base}/events"), Vec::new()),
        };
        if self.session.is_none()
            && let Some(t) = &self.event_type
        {
            query.push(("type", t.clone()));
        }
        if let Some(n) = self.after_sequence {
            query.push(("after_sequence", n.to_string()));
        }
        if let Some(id) = &self.after_event_id {
            query.push(("after_event_id", id.clone()));
        }
        if self.from_now {
            query.push(("from", "now".to_string()));
        }
        let mut request = client
            .get(path)
            .query(&query)
            .header("accept", "text/event-stream");
        if let Some(id) = last_id {
            request = request.header("last-event-id", id);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                eprintln!("hooklog tail: cannot reach {base} ({e}); retrying");
                return Ok(None);
            }
        };
        match response.status().as_u16() {
            200 => Ok(Some(response)),
            400 => {
                let body: Value = response.json().await.unwrap_or_default();
                Err(Stop::Refused(format!(
                    "the server refused the cursor: {} (first available {}, head {}); start again without it",
                    body["message"].as_str().unwrap_or("invalid request"),
                    body["firstAvailableSequence"],
                    body["headSequence"],
                )))
            }
            401 | 403 => Err(Stop::Refused(format!(
                "the server refused the token ({}); set HOOKLOG_TOKEN or --token",
                response.status()
            ))),
            status => {
                eprintln!("hooklog tail: the server answered {status}; retrying");
                Ok(None)
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
    format!("{time}  {session}  #{position}  {event_type}  {summary}")
        .trim_end()
        .to_string()
}

/// A short human summary of a payload: the tool and its command or file, a prompt's start, a
/// reason or message. Empty when nothing fits.
pub fn summary(payload: &Value) -> String {
    let text = |key: &str| payload[key].as_str().map(|s| one_line(s, 80));
    if let Some(tool) = payload["tool_name"].as_str().or(payload["tool"].as_str()) {
        let input = &payload["tool_input"];
        let detail = ["command", "file_path", "pattern", "url", "description"]
            .iter()
            .find_map(|k| input[*k].as_str());
        return match detail {
            Some(d) => format!("{tool}: {}", one_line(d, 80)),
            None => tool.to_string(),
        };
    }
    [
        "prompt",
        "reason",
        "message",
        "last_assistant_message",
        "error",
        "source",
    ]
    .iter()
    .find_map(|k| text(k))
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
    fn session_ids_are_percent_encoded_in_the_path() {
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
        assert_eq!(encode("sess_1-x.y~z"), "sess_1-x.y~z");
    }
}
