//! Deciding a permission request (issue 40): allow or deny it (`POST /permission-response`,
//! seed 000's `POST /plan/approve`, the board, the WebSocket), or let it expire (the waiting
//! hook's time ran out). The first of them settles a pending request, and is the one event
//! appended, in the request's session so it reads as part of the session's story; any later
//! one, or one for a request already answered elsewhere, is answered `resolved: false` and
//! appends nothing. The answer carries the request as it stands, so a waiting hook that
//! expires a request a decision beat by a moment still gives the agent that decision.

use super::{DecideError, Log, Outcome, Verdict, written};
use crate::event::time;
use crate::projection::permissions::{
    self, EXPIRED, PermissionRequest, RESPONSE, RequestKind, RequestState,
};
use serde::Serialize;
use serde_json::json;

/// A decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decide {
    pub request_id: String,
    pub approved: bool,
    /// Given to the agent with a deny.
    pub message: Option<String>,
    pub by: Decider,
    /// Only a plan's request (`POST /plan/approve`) may be decided.
    pub plan_only: bool,
}

/// Who decided, for the record: the board, a token's client, or a WebSocket client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider {
    /// The board: its login cookie, or a same-origin page when no token is configured.
    Web,
    /// The bearer token, or any other client when no token is configured.
    Api,
    Websocket,
}

impl Decider {
    pub fn as_str(self) -> &'static str {
        match self {
            Decider::Web => "web",
            Decider::Api => "api",
            Decider::Websocket => "websocket",
        }
    }
}

/// The answer to a decision or an expiry, as `POST /permission-response` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Answer {
    pub ok: bool,
    /// Whether this call settled the request.
    pub resolved: bool,
    /// Why it did not: `unknown`, `not_pending` (settled already), `no_hook_waiting` (the
    /// request is a record only: no hook was installed to wait for a decision), `wait_over`
    /// (the waiting hook has given up), `not_a_plan` (`POST /plan/approve` for another kind),
    /// `other_origin` (another hooklog stored it, and its hook waits there: an aggregator's
    /// copy cannot be decided).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub reason: Option<&'static str>,
    /// The request as it stands after it (`null`: no such request).
    pub request: Option<PermissionRequest>,
}

fn answer(reason: Option<&'static str>, request: Option<PermissionRequest>) -> Verdict {
    Verdict::done(Outcome::Permission(Answer {
        ok: true,
        resolved: reason.is_none(),
        reason,
        request,
    }))
}

pub fn decide(log: &mut dyn Log, d: &Decide) -> Result<Verdict, DecideError> {
    let request = match permissions::get(log.conn(), &d.request_id)? {
        None => return Ok(answer(Some("unknown"), None)),
        Some(r) => r,
    };
    let refused = if request.state != RequestState::Pending {
        Some("not_pending")
    } else if !stored_here(log, &request) {
        Some("other_origin")
    } else if d.plan_only && request.kind != RequestKind::Plan {
        Some("not_a_plan")
    } else {
        // A decision nobody will carry out must not be recorded as if it were.
        match request.waits_until.as_deref().map(time::parse) {
            None => Some("no_hook_waiting"),
            Some(until) if until.is_none_or(|until| until < log.now()) => Some("wait_over"),
            Some(_) => None,
        }
    };
    if refused.is_some() {
        return Ok(answer(refused, Some(request)));
    }
    let message = d.message.as_deref().filter(|_| !d.approved);
    let payload = json!({"requestId": d.request_id, "sessionId": request.session_id,
        "approved": d.approved, "behavior": if d.approved { "allow" } else { "deny" },
        "message": message, "by": d.by.as_str(), "kind": request.kind, "tool": request.tool});
    log.append_in(&request.session_id, RESPONSE, payload)?;
    settled(log, &d.request_id)
}

pub fn expire(log: &mut dyn Log, request_id: &str) -> Result<Verdict, DecideError> {
    let Some(request) = permissions::get(log.conn(), request_id)? else {
        return Ok(answer(Some("unknown"), None));
    };
    if request.state != RequestState::Pending {
        return Ok(answer(Some("not_pending"), Some(request)));
    }
    if !stored_here(log, &request) {
        return Ok(answer(Some("other_origin"), Some(request)));
    }
    let payload = json!({"requestId": request_id, "sessionId": request.session_id,
        "kind": request.kind, "tool": request.tool});
    log.append_in(&request.session_id, EXPIRED, payload)?;
    settled(log, request_id)
}

/// Whether this hooklog stored the request, so that a hook waits on it here. On an aggregator
/// the request and its decision both come from the agent's own hooklog. A request whose
/// opening event retention has pruned has no origin left: it is taken as this hooklog's, so
/// that its hook's expiry still settles it (a decision is refused anyway: its wait is long
/// over).
fn stored_here(log: &dyn Log, request: &PermissionRequest) -> bool {
    request
        .origin
        .as_deref()
        .is_none_or(|origin| origin == log.origin())
}

fn settled(log: &dyn Log, request_id: &str) -> Result<Verdict, DecideError> {
    let request = written(
        permissions::get(log.conn(), request_id)?,
        "the request just settled",
    )?;
    if request.state == RequestState::Pending {
        return Err(DecideError::Invariant("a settled request is still pending"));
    }
    Ok(answer(None, Some(request)))
}
