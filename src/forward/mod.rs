//! The hook forwarder behind `hooklog hook`: take one hook payload, give it an id, and get it
//! to hooklog without ever blocking or breaking the agent that ran the hook.
//!
//! Every event goes through the [`spool`] first (an outbox): it is written to a file, then the
//! run takes the drain lock and delivers the spool in capture order, oldest first, its own
//! event last, removing each file once hooklog has answered for it. So an event is never only
//! in memory: a run that fails, times out or is killed leaves it for the next run, and a
//! delivery whose answer was lost is sent again under the same id, which hooklog stores once.

pub mod approval;
pub mod codex_flag;
pub mod install;
pub mod spool;

use spool::{Entry, Listed, Route, Spool};
use std::time::Instant;

/// Statuses that say the event itself is wrong: sending it again cannot help, so it is dropped
/// (and logged). Everything else that is not a success (no connection, a timeout, 5xx, 429,
/// 401 for a wrong token, 404 for a wrong URL) keeps it spooled for a later run.
const PERMANENT: [u16; 5] = [400, 409, 413, 415, 422];

/// Where and how to deliver.
#[derive(Clone, Debug)]
pub struct Target {
    /// The hooklog, e.g. `http://127.0.0.1:2468`.
    pub url: String,
    pub token: Option<String>,
}

/// What one delivery attempt came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    /// hooklog stored it (or already had it: `duplicate`).
    Stored { duplicate: bool },
    /// hooklog refused the event for what it is (`PERMANENT`).
    Rejected(u16),
    /// Try again later: no answer in time, no connection, or a status that may change.
    Failed(String),
}

/// What a drain did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Drained {
    pub delivered: usize,
    pub duplicates: usize,
    pub rejected: usize,
    /// Why it stopped before the spool was empty, if it did.
    pub stopped: Option<String>,
}

/// Sends spooled events to one hooklog over one client (one connection, kept alive).
pub struct Sender {
    client: reqwest::Client,
    target: Target,
}

impl Sender {
    pub fn new(target: Target) -> reqwest::Result<Sender> {
        let client = reqwest::Client::builder().no_proxy().build()?;
        Ok(Sender { client, target })
    }

    /// A request to hooklog at `path`, with the token if there is one.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let url = format!("{}{path}", self.target.url.trim_end_matches('/'));
        let request = self.client.request(method, url);
        match &self.target.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// POSTs one event, giving up at `deadline`.
    pub async fn send(&self, entry: &Entry, deadline: Instant) -> Sent {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return Sent::Failed("out of time".into());
        };
        let url = format!(
            "{}{}",
            self.target.url.trim_end_matches('/'),
            entry.header.route.path()
        );
        let mut request = self
            .client
            .post(url)
            .timeout(left)
            .header("content-type", "application/json")
            .header(crate::http::hooks::EVENT_ID_HEADER, &entry.header.id)
            .body(entry.body.clone());
        if entry.header.route == Route::Event {
            request = request.header(
                crate::http::hooks::EVENT_TIME_HEADER,
                &entry.header.captured_at,
            );
            if let Some(cli) = &entry.header.cli {
                request = request.query(&[("cli", cli)]);
            }
        }
        if let Some(token) = &self.target.token {
            request = request.bearer_auth(token);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_timeout() => return Sent::Failed("timed out".into()),
            Err(e) if e.is_connect() => return Sent::Failed("no connection".into()),
            Err(_) => return Sent::Failed("request failed".into()),
        };
        let status = response.status();
        if status.is_success() {
            // `/event` says whether it already had the event; the body is read within the
            // same deadline, and a body that does not come in time changes nothing: the event
            // is stored either way.
            let duplicate = match tokio::time::timeout_at(deadline.into(), response.bytes()).await {
                Ok(Ok(body)) => serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("duplicate").and_then(|d| d.as_bool()))
                    .unwrap_or(false),
                _ => false,
            };
            Sent::Stored { duplicate }
        } else if PERMANENT.contains(&status.as_u16()) {
            Sent::Rejected(status.as_u16())
        } else {
            Sent::Failed(format!("HTTP {}", status.as_u16()))
        }
    }
}

/// Delivers the spool in order, at most `max` events, until `deadline` or until it is empty;
/// stops at the first event that cannot be delivered now (so nothing overtakes it). Call with
/// the drain lock held.
pub async fn drain(spool: &Spool, sender: &Sender, deadline: Instant, max: usize) -> Drained {
    let mut drained = Drained::default();
    let mut budget = max;
    // Listed again after each pass: runs that spooled while this one delivered (and are
    // waiting for the lock) have their events delivered here too.
    while budget > 0 && Instant::now() < deadline {
        let listed = match spool.list() {
            Ok(listed) => listed,
            Err(e) => {
                drained.stopped = Some(format!("cannot list the spool: {e}"));
                return drained;
            }
        };
        if listed.is_empty() {
            break;
        }
        for l in listed.iter().take(budget) {
            budget -= 1;
            if let Err(stop) = deliver_one(spool, sender, l, deadline, &mut drained).await {
                drained.stopped = Some(stop);
                return drained;
            }
        }
    }
    drained
}

async fn deliver_one(
    spool: &Spool,
    sender: &Sender,
    listed: &Listed,
    deadline: Instant,
    drained: &mut Drained,
) -> Result<(), String> {
    let entry = match spool.read(listed) {
        Ok(Some(entry)) => entry,
        Ok(None) => return Ok(()),
        Err(e) => return Err(format!("cannot read the spool: {e}")),
    };
    let result = match sender.send(&entry, deadline).await {
        Sent::Stored { duplicate } => {
            drained.delivered += 1;
            drained.duplicates += usize::from(duplicate);
            spool.remove(listed)
        }
        Sent::Rejected(status) => {
            drained.rejected += 1;
            let reason = format!("refused by hooklog: HTTP {status}");
            spool.drop_listed(listed, &reason)
        }
        Sent::Failed(why) => return Err(why),
    };
    result.map_err(|e| format!("cannot update the spool: {e}"))
}
