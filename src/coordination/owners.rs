//! Watcher owners (REQ-HOOKS-13/14): one live owner per platform account. A second acquire
//! while the owner is live is refused (`owner_refused`, alert `watcherAlreadyRunning`); an
//! owner silent past the hung limit is taken over (`owner_hung`, then `owner_acquired` with the
//! next generation). Only the holder of the current generation heartbeats and releases.

use super::gaps::{self, Behind};
use super::{DecideError, Log, Outcome, Rules, Verdict, detail, written};
use crate::projection::accounts;
use crate::projection::owners::{self, Owner, OwnerRow};
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq)]
pub struct Acquire {
    pub platform: String,
    pub account: String,
    pub pid: i64,
    pub hostname: String,
    pub relay_port: Option<i64>,
    /// SHA-256 of the relay token, hex; the token itself never reaches the writer.
    pub relay_token_sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub platform: String,
    pub account: String,
    pub generation: i64,
    pub attached: Option<i64>,
    /// The platform's own last positions (a JSON object of position keys to positions).
    pub positions: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub platform: String,
    pub account: String,
    pub generation: i64,
}

fn shown(log: &dyn Log, rules: &Rules, row: &OwnerRow) -> Owner {
    row.view(log.now(), rules.owner_hung_after)
}

fn current(log: &dyn Log, platform: &str, account: &str) -> rusqlite::Result<Option<OwnerRow>> {
    owners::get(log.conn(), platform, account)
}

pub fn acquire(log: &mut dyn Log, rules: &Rules, c: &Acquire) -> Result<Verdict, DecideError> {
    let now = log.now();
    let owner = current(log, &c.platform, &c.account)?;
    let mut previous = None;
    if let Some(owner) = &owner {
        if owner.is_live(now, rules.owner_hung_after) {
            let payload = json!({"platform": c.platform, "account": c.account, "pid": c.pid,
                "hostname": c.hostname, "ownerGeneration": owner.generation,
                "ownerPid": owner.pid, "ownerHostname": owner.hostname});
            log.append("owner_refused", payload)?;
            return Ok(Verdict::Refused {
                code: "watcherAlreadyRunning",
                message: format!(
                    "{}/{} is owned by pid {} on {} (generation {}), heard from at {}; one watcher per account",
                    c.platform,
                    c.account,
                    owner.pid,
                    owner.hostname,
                    owner.generation,
                    owner.last_heartbeat_at
                ),
                details: detail("owner", &shown(log, rules, owner))?,
            });
        }
        if owner.released_at.is_none() {
            let payload = json!({"platform": c.platform, "account": c.account,
                "generation": owner.generation, "pid": owner.pid, "hostname": owner.hostname,
                "lastHeartbeatAt": owner.last_heartbeat_at});
            log.append("owner_hung", payload)?;
        }
        previous = Some(owner.generation);
    }
    let Some(generation) = super::next_generation(previous) else {
        return Ok(super::exhausted(&format!("{}/{}", c.platform, c.account)));
    };
    let payload = json!({"platform": c.platform, "account": c.account, "generation": generation,
        "pid": c.pid, "hostname": c.hostname, "relayPort": c.relay_port,
        "relayTokenSha256": c.relay_token_sha256, "previousGeneration": previous});
    log.append("owner_acquired", payload)?;
    // An owner that starts behind catches up: a gap opens in this same transaction.
    let behind = match owner {
        Some(previous) => Some(Behind::Takeover {
            generation: previous.generation,
            heartbeat_at: previous.last_heartbeat_at,
            positions: previous.positions,
        }),
        None => accounts::newest(log.conn(), &c.platform, &c.account)?.map(Behind::FirstOwner),
    };
    let gap = match &behind {
        Some(behind) => Some(gaps::open_behind(log, &c.platform, &c.account, behind)?),
        None => gaps::unresolved(log, &c.platform, &c.account)?,
    };
    let owner = written(
        current(log, &c.platform, &c.account)?,
        "the owner just acquired",
    )?;
    Ok(Verdict::done(Outcome::Acquired {
        owner: shown(log, rules, &owner),
        gap,
    }))
}

/// The owner row when `generation` is the live holder's, else a `notOwner` refusal.
fn holder(
    log: &dyn Log,
    rules: &Rules,
    platform: &str,
    account: &str,
    generation: i64,
) -> Result<Result<OwnerRow, Verdict>, DecideError> {
    let owner = current(log, platform, account)?;
    match owner {
        Some(o) if o.generation == generation && o.released_at.is_none() => Ok(Ok(o)),
        other => Ok(Err(Verdict::Refused {
            code: "notOwner",
            message: format!(
                "generation {generation} does not hold {platform}/{account}; nothing was changed"
            ),
            details: detail("owner", &other.map(|o| shown(log, rules, &o)))?,
        })),
    }
}

pub fn heartbeat(log: &mut dyn Log, rules: &Rules, c: &Heartbeat) -> Result<Verdict, DecideError> {
    if let Err(refusal) = holder(log, rules, &c.platform, &c.account, c.generation)? {
        return Ok(refusal);
    }
    let payload = json!({"platform": c.platform, "account": c.account,
        "generation": c.generation, "attached": c.attached, "positions": c.positions});
    log.append("owner_heartbeat", payload)?;
    let owner = written(
        current(log, &c.platform, &c.account)?,
        "the owner heartbeating",
    )?;
    Ok(Verdict::done(Outcome::Owner(shown(log, rules, &owner))))
}

pub fn release(log: &mut dyn Log, rules: &Rules, c: &Release) -> Result<Verdict, DecideError> {
    if let Err(refusal) = holder(log, rules, &c.platform, &c.account, c.generation)? {
        return Ok(refusal);
    }
    let payload = json!({"platform": c.platform, "account": c.account, "generation": c.generation});
    log.append("owner_released", payload)?;
    let owner = written(
        current(log, &c.platform, &c.account)?,
        "the owner just released",
    )?;
    Ok(Verdict::done(Outcome::Owner(shown(log, rules, &owner))))
}
