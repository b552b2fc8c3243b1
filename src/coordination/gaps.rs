//! Catch-up gaps (REQ-HOOKS-17/18). An account has at most one unresolved gap: opening
//! another while one is open or refused returns that one. Only an open gap closes or is
//! refused; only a refused gap resumes (a person's decision, recorded with who made it). Any
//! other move is a `409` and changes nothing.

use super::{DecideError, Log, Outcome, Verdict, detail, written};
use crate::event::StoredEvent;
use crate::projection::accounts::Newest;
use crate::projection::gaps::{self, Gap, GapCause, GapStatus};
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq)]
pub struct Open {
    pub platform: String,
    pub account: String,
    pub from_position: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    Close { to_position: Option<String> },
    Refuse { detail: String },
    Resume { by: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub gap_id: String,
    pub transition: Transition,
}

/// A gap as a command answers it: with `created` when the command could have opened it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownGap {
    #[serde(flatten)]
    pub gap: Gap,
    /// Whether this command opened it (`false`: the account's unresolved gap was answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
}

fn shown(gap: Gap, created: Option<bool>) -> ShownGap {
    ShownGap { gap, created }
}

/// The gap an event has just opened, read back.
fn opened(log: &dyn Log, event: &StoredEvent) -> Result<ShownGap, DecideError> {
    let gap = gaps::get(log.conn(), &gaps::gap_id(&event.event_id))?;
    Ok(shown(written(gap, "the gap just opened")?, Some(true)))
}

pub fn open(log: &mut dyn Log, c: &Open) -> Result<Verdict, DecideError> {
    if let Some(gap) = gaps::unresolved(log.conn(), &c.platform, &c.account)? {
        return Ok(Verdict::done(Outcome::Gap(shown(gap, Some(false)))));
    }
    let payload = json!({"platform": c.platform, "account": c.account,
        "fromPosition": c.from_position, "reason": c.reason});
    let event = log.append("gap_opened", payload)?;
    Ok(Verdict::done(Outcome::Gap(opened(log, &event)?)))
}

/// Where an owner that starts behind must catch up from (REQ-HOOKS-17).
#[derive(Debug, Clone, PartialEq)]
pub enum Behind {
    /// It takes over from a stopped or hung owner: from that owner's last heartbeat.
    Takeover {
        generation: i64,
        heartbeat_at: String,
        positions: Option<String>,
    },
    /// It is the account's first owner and the account has events: from the newest.
    FirstOwner(Newest),
}

/// Opens the gap an owner starting `behind` needs, in the acquire's transaction, unless the
/// account has an unresolved one already (a refused catch-up stays refused); answers the
/// account's unresolved gap either way, with `created`.
pub fn open_behind(
    log: &mut dyn Log,
    platform: &str,
    account: &str,
    behind: &Behind,
) -> Result<ShownGap, DecideError> {
    if let Some(gap) = gaps::unresolved(log.conn(), platform, account)? {
        return Ok(shown(gap, Some(false)));
    }
    let mut payload = json!({"platform": platform, "account": account});
    let from = match behind {
        Behind::Takeover {
            generation,
            heartbeat_at,
            positions,
        } => json!({"cause": GapCause::Takeover,
            "reason": format!("takeover from generation {generation}, last heard from at {heartbeat_at}"),
            "fromHeartbeatAt": heartbeat_at,
            "fromPositions": positions.as_deref().and_then(|p| serde_json::from_str::<Value>(p).ok())}),
        Behind::FirstOwner(newest) => json!({"cause": GapCause::FirstOwner,
            "reason": format!("first owner of an account with events, the newest at sequence {}", newest.sequence),
            "fromEventId": newest.event_id, "fromPosition": newest.position}),
    };
    if let (Some(p), Some(f)) = (payload.as_object_mut(), from.as_object()) {
        p.extend(f.clone());
    }
    let event = log.append("gap_opened", payload)?;
    opened(log, &event)
}

/// The account's unresolved gap, shown with `created: false`, if it has one.
pub fn unresolved(
    log: &dyn Log,
    platform: &str,
    account: &str,
) -> rusqlite::Result<Option<ShownGap>> {
    Ok(gaps::unresolved(log.conn(), platform, account)?.map(|g| shown(g, Some(false))))
}

pub fn advance(log: &mut dyn Log, c: &Move) -> Result<Verdict, DecideError> {
    let Some(gap) = gaps::get(log.conn(), &c.gap_id)? else {
        return Ok(Verdict::NotFound("gap"));
    };
    let (from, event_type, extra) = match &c.transition {
        Transition::Close { to_position } => (
            GapStatus::Open,
            "gap_closed",
            json!({"toPosition": to_position}),
        ),
        Transition::Refuse { detail } => {
            (GapStatus::Open, "gap_refused", json!({"detail": detail}))
        }
        Transition::Resume { by } => (
            GapStatus::Refused,
            "gap_resumed",
            json!({"by": by, "refusedDetail": gap.refused_detail}),
        ),
    };
    if gap.status != from {
        return Ok(Verdict::Refused {
            code: "invalidGapTransition",
            message: format!(
                "gap {} is {}: only a{} {from} gap can take {event_type}; nothing was changed",
                gap.id,
                gap.status,
                if from == GapStatus::Open { "n" } else { "" }
            ),
            details: detail("gap", &gap)?,
        });
    }
    let mut payload = json!({"gapId": gap.id, "platform": gap.platform, "account": gap.account});
    if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    log.append(event_type, payload)?;
    let gap = written(gaps::get(log.conn(), &c.gap_id)?, "the gap just moved")?;
    Ok(Verdict::done(Outcome::Gap(shown(gap, None))))
}
