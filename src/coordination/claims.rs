//! Chat claims (REQ-HOOKS-15): one session at a time acts on a chat. A claim is granted when
//! the chat is free, released, expired, or held by a session that has ended; the holder
//! claiming again renews it; anyone else is refused (`chatClaimedElsewhere`). Every grant,
//! renewal, refusal and release is an event, so the chat's action log is a view of the log.

use super::{DecideError, Log, Outcome, Verdict, detail, written};
use crate::event::time;
use crate::projection::claims::{self, ClaimState};
use crate::projection::sessions::SessionState;
use serde_json::json;

#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub chat: String,
    pub session_id: String,
    pub ttl_seconds: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub chat: String,
    pub session_id: String,
    /// `sent`, `interrupted`, `failed` or `released`.
    pub outcome: String,
}

pub const OUTCOMES: &[&str] = &["sent", "interrupted", "failed", "released"];

fn current(log: &dyn Log, chat: &str) -> rusqlite::Result<Option<claims::Claim>> {
    claims::get(log.conn(), chat, log.now())
}

pub fn claim(log: &mut dyn Log, c: &Claim) -> Result<Verdict, DecideError> {
    let now = log.now();
    let expires_at = time::format(now + chrono::Duration::seconds(c.ttl_seconds));
    let held = current(log, &c.chat)?;
    // A session that has ended cannot hold anything: a grant would be void the moment it
    // was made, and a sender trusting it would act on a chat anyone can take.
    if session_ended(log, &c.session_id)? {
        let payload = json!({"chat": c.chat, "sessionId": c.session_id, "reason": "session_ended"});
        log.append("claim_refused", payload)?;
        return Ok(Verdict::Refused {
            code: "sessionEnded",
            message: format!(
                "session {} has ended; it cannot claim chat {}",
                c.session_id, c.chat
            ),
            details: json!({}),
        });
    }
    // `None`: the holder renews; `Some(why)`: a grant, and why the chat was free.
    let reason = match &held {
        Some(h) if h.active && h.session_id == c.session_id => None,
        Some(h) if h.active => {
            let payload = json!({"chat": c.chat, "sessionId": c.session_id,
                "holder": h.session_id, "holderGeneration": h.generation});
            log.append("claim_refused", payload)?;
            return Ok(Verdict::Refused {
                code: "chatClaimedElsewhere",
                message: format!(
                    "chat {} is claimed by session {} until {}",
                    c.chat, h.session_id, h.expires_at
                ),
                details: detail("holder", h)?,
            });
        }
        None => Some("free"),
        Some(h) if h.state == ClaimState::Released => Some("released"),
        Some(h) if h.session_ended => Some("holder_ended"),
        Some(_) => Some("expired"),
    };
    let event_type = match reason {
        None => "claim_renewed",
        Some(_) => "claim_granted",
    };
    let Some(generation) = super::next_generation(held.as_ref().map(|h| h.generation)) else {
        return Ok(super::exhausted(&format!("chat {}", c.chat)));
    };
    let payload = json!({"chat": c.chat, "sessionId": c.session_id, "generation": generation,
        "ttlSeconds": c.ttl_seconds, "expiresAt": expires_at, "reason": reason,
        "previousHolder": held.as_ref().filter(|h| h.session_id != c.session_id).map(|h| &h.session_id)});
    log.append(event_type, payload)?;
    let claim = written(current(log, &c.chat)?, "the claim just granted or renewed")?;
    Ok(Verdict::done(Outcome::Claim(claim)))
}

fn session_ended(log: &dyn Log, session_id: &str) -> rusqlite::Result<bool> {
    use rusqlite::OptionalExtension;
    let state = log
        .conn()
        .prepare_cached("SELECT state FROM sessions WHERE id = ?1")?
        .query_row([session_id], |r| r.get::<_, SessionState>(0))
        .optional()?;
    Ok(state == Some(SessionState::Ended))
}

pub fn release(log: &mut dyn Log, c: &Release) -> Result<Verdict, DecideError> {
    let Some(held) = current(log, &c.chat)? else {
        return Ok(Verdict::NotFound("claim"));
    };
    if held.state != ClaimState::Held || held.session_id != c.session_id {
        return Ok(Verdict::Refused {
            code: "notHolder",
            message: format!(
                "session {} does not hold chat {}; nothing was changed",
                c.session_id, c.chat
            ),
            details: detail("claim", &held)?,
        });
    }
    let payload = json!({"chat": c.chat, "sessionId": c.session_id,
        "generation": held.generation, "outcome": c.outcome});
    log.append("claim_released", payload)?;
    let claim = written(current(log, &c.chat)?, "the claim just released")?;
    Ok(Verdict::done(Outcome::Claim(claim)))
}
