//! The reconnect loop: open the stream, print what it sends, and on any break wait a capped
//! backoff and resume after the last event printed (starting over when the database was
//! replaced).

use super::TailArgs;
use super::connect::{Opened, header};
use crate::http::streams::GENERATION_HEADER;
use anyhow::bail;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use std::time::Duration;

const BACKOFF_START: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Three missed keepalives (the server sends one every 15 s by default).
const IDLE_TIMEOUT: Duration = Duration::from_secs(45);

/// Where to resume: the id of the last event printed, or (before any) the user's own cursor.
pub(super) struct Resume {
    pub(super) last_id: Option<String>,
    /// Whether the user's `--after-*` flags still apply (not after a generation change).
    pub(super) use_flags: bool,
    pub(super) generation: Option<String>,
}

impl TailArgs {
    pub(super) async fn follow(self) -> anyhow::Result<()> {
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
}
