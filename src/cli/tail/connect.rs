//! Opening the stream: its URL, the request with the cursor and filters, and what the answer
//! means (a stream, retry, a stale cursor, a refused token); and the stream's head, for
//! `--from-now`.

use super::TailArgs;
use super::follow::Resume;
use crate::http::streams::GENERATION_HEADER;
use serde_json::Value;
use std::time::Duration;

/// For the answer to a request (the headers, not the whole stream).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What one attempt to open the stream came to.
pub(super) enum Opened {
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

impl TailArgs {
    /// The stream this tail follows: one session's, or the global one.
    fn stream_url(&self) -> String {
        let base = self.url.trim_end_matches('/');
        match &self.session {
            Some(session) => format!("{base}/sessions/{}/events", encode(session)),
            None => format!("{base}/events"),
        }
    }

    /// The stream's current head, in its own ordering (`None`: the server cannot be reached).
    pub(super) async fn head(&self, client: &reqwest::Client) -> Option<i64> {
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
    pub(super) async fn connect(&self, client: &reqwest::Client, resume: &Resume) -> Opened {
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
}

pub(super) fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

pub(super) fn encode(segment: &str) -> String {
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
