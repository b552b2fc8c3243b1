//! Deciding a permission request (issue 40): allow or deny it (`POST /permission-response`,
//! seed 000's `POST /plan/approve`, the board, the WebSocket), or let it expire (the waiting
//! hook's time ran out). The first of them settles a pending request, and is the one event
//! appended, in the request's session so it reads as part of the session's story; any later
//! one, or one for a request already answered elsewhere, is answered `resolved: false` and
//! appends nothing. The answer carries the request as it stands, so a waiting hook that
//! expires a request a decision beat by a moment still gives the agent that decision.

use super::{DecideError, Log, Outcome, Verdict, written};
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
    /// Who decided: `web`, `api`, `websocket`.
    pub by: &'static str,
    /// Only a plan's request (`POST /plan/approve`) may be decided.
    pub plan_only: bool,
}

/// The answer to a decision or an expiry, as `POST /permission-response` gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub ok: bool,
    /// Whether this command settled the request.
    pub resolved: bool,
    /// The request as it stands after it (`null`: no such request).
    pub request: Option<PermissionRequest>,
}

fn answer(resolved: bool, request: Option<PermissionRequest>) -> Verdict {
    Verdict::done(Outcome::Permission(Answer {
        ok: true,
        resolved,
        request,
    }))
}

pub fn decide(log: &mut dyn Log, d: &Decide) -> Result<Verdict, DecideError> {
    let request = permissions::get(log.conn(), &d.request_id)?;
    let Some(request) = request.filter(|r| r.state == RequestState::Pending) else {
        return Ok(answer(false, permissions::get(log.conn(), &d.request_id)?));
    };
    if d.plan_only && request.kind != RequestKind::Plan {
        return Ok(answer(false, Some(request)));
    }
    let message = d.message.as_deref().filter(|_| !d.approved);
    let payload = json!({"requestId": d.request_id, "sessionId": request.session_id,
        "approved": d.approved, "behavior": if d.approved { "allow" } else { "deny" },
        "message": message, "by": d.by, "kind": request.kind, "tool": request.tool});
    log.append_in(&request.session_id, RESPONSE, payload)?;
    settled(log, &d.request_id)
}

pub fn expire(log: &mut dyn Log, request_id: &str) -> Result<Verdict, DecideError> {
    let Some(request) = permissions::get(log.conn(), request_id)? else {
        return Ok(answer(false, None));
    };
    if request.state != RequestState::Pending {
        return Ok(answer(false, Some(request)));
    }
    let payload = json!({"requestId": request_id, "sessionId": request.session_id,
        "kind": request.kind, "tool": request.tool});
    log.append_in(&request.session_id, EXPIRED, payload)?;
    settled(log, request_id)
}

fn settled(log: &dyn Log, request_id: &str) -> Result<Verdict, DecideError> {
    let request = written(
        permissions::get(log.conn(), request_id)?,
        "the request just settled",
    )?;
    if request.state == RequestState::Pending {
        return Err(DecideError::Invariant("a settled request is still pending"));
    }
    Ok(answer(true, Some(request)))
}
