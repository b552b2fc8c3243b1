//! The forwarder's wait for a decision (issue 40, `hooklog hook --approvals SECONDS`): after
//! delivering a `PermissionRequest`, it long-polls hooklog for the request (whose id is the
//! event's) until someone allows or denies it, it is answered in the agent's terminal, or the
//! time is up. A decision is printed as the hook's output (Claude Code and Codex read the same
//! `hookSpecificOutput.decision`); anything else prints nothing, and the agent asks in its
//! terminal as usual. hooklog going away mid-wait costs nothing but the time it is away: the
//! request and any decision are in its log, and the forwarder asks again until its time is up.

use super::Sender;
use crate::projection::permissions::{PermissionRequest, RequestState, WAIT_FIELD};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::time::{Duration, Instant};

/// One long poll waits at most this long (a proxy or a restart in between costs no more).
const POLL: Duration = Duration::from_secs(25);
/// After a failed call, the next one comes this much later (doubling up to a second).
const RETRY: Duration = Duration::from_millis(100);
/// The expiry at the end is given this long.
pub const EXPIRE_BUDGET: Duration = Duration::from_secs(2);

/// Whether a hook payload is a permission request the forwarder should wait on.
pub fn asks(payload: &[u8]) -> bool {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(payload) else {
        return false;
    };
    ["hook_event_name", "hookEventName", "eventName"]
        .iter()
        .any(|field| body.get(*field).and_then(Value::as_str) == Some("PermissionRequest"))
}

/// The body with [`WAIT_FIELD`] set to `seconds`: hooklog offers the request for a decision
/// only while a hook waits for one. A body that is not a JSON object is left as it is.
pub fn mark(body: Vec<u8>, seconds: u64) -> Vec<u8> {
    match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(mut map)) => {
            map.insert(WAIT_FIELD.into(), seconds.into());
            serde_json::to_vec(&map).unwrap_or(body)
        }
        _ => body,
    }
}

/// Waits for request `id` until `deadline`, then lets it expire; returns the output to print.
/// hooklog must have the request by `first_seen_by` (the run's own timeout): if it is down, or
/// refuses the event or the token, the agent is not held for the whole wait. Once seen, the
/// wait goes on through a restart of hooklog. `deliver` is called whenever hooklog does not
/// know the request yet (the event is still in the spool): it delivers the spool again.
pub async fn wait(
    sender: &Sender,
    id: &str,
    deadline: Instant,
    first_seen_by: Instant,
    mut deliver: impl AsyncFnMut(),
) -> Option<Value> {
    let mut pause = RETRY;
    let mut seen = false;
    let path = format!("/permission-requests/{id}");
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if !seen && Instant::now() >= first_seen_by {
            return None;
        }
        // hooklog waits in whole seconds; the call itself ends at the deadline.
        let seconds = left.min(POLL).as_secs_f64().ceil() as u64;
        let poll = sender
            .request(Method::GET, &path)
            .query(&[("wait", seconds)])
            .timeout(left.min(POLL + Duration::from_secs(2)))
            .send()
            .await;
        match poll {
            Ok(response) if response.status().is_success() => {
                pause = RETRY;
                seen = true;
                let Ok(request) = response.json::<PermissionRequest>().await else {
                    continue;
                };
                if request.state != RequestState::Pending {
                    return request.hook_output();
                }
                continue;
            }
            Ok(response) if response.status() == StatusCode::NOT_FOUND => deliver().await,
            // A wrong token or a refused request will not come right by asking again.
            Ok(response) if response.status().is_client_error() => return None,
            _ => {}
        }
        tokio::time::sleep(pause.min(left)).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
    expire(sender, id).await
}

/// Expires the request; a decision that came first is returned instead.
async fn expire(sender: &Sender, id: &str) -> Option<Value> {
    let response = sender
        .request(Method::POST, &format!("/permission-requests/{id}/expire"))
        .timeout(EXPIRE_BUDGET)
        .send()
        .await
        .ok()?;
    let answer: Value = response.json().await.ok()?;
    let request: PermissionRequest = serde_json::from_value(answer.get("request")?.clone()).ok()?;
    request.hook_output()
}

#[cfg(test)]
mod tests {
    use super::asks;

    #[test]
    fn a_marked_body_says_how_long_its_hook_waits() {
        let marked = super::mark(br#"{"hook_event_name":"PermissionRequest"}"#.to_vec(), 30);
        let v: serde_json::Value = serde_json::from_slice(&marked).unwrap();
        assert_eq!(v[super::WAIT_FIELD], 30);
        assert_eq!(v["hook_event_name"], "PermissionRequest");
        assert_eq!(super::mark(b"[1]".to_vec(), 30), b"[1]");
    }

    #[test]
    fn only_a_permission_request_is_waited_on() {
        assert!(asks(
            br#"{"hook_event_name":"PermissionRequest","tool_name":"Bash"}"#
        ));
        assert!(asks(br#"{"hookEventName":"PermissionRequest"}"#));
        assert!(!asks(br#"{"hook_event_name":"PreToolUse"}"#));
        assert!(!asks(b"not json"));
        assert!(!asks(br#"["PermissionRequest"]"#));
    }
}
