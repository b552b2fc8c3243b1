//! Coordination commands (seed 002): acquiring a watcher owner, claiming a chat, opening and
//! moving catch-up gaps, acknowledging an alert. Each is decided by the writer inside its
//! transaction, against the projection tables as they are at that moment, so two racing
//! requests are decided one after the other and can never both win. The outcome, granted or
//! refused, is appended as events (source `coordination`), and the projections apply them like
//! any other event: a rebuild replays the outcomes, it never decides again.

pub mod claims;
pub mod gaps;
pub mod owners;

use crate::event::StoredEvent;
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde_json::Value;
use std::time::Duration;

/// The source of every event a command appends.
pub const SOURCE: &str = crate::event::Source::Coordination.as_str();

/// Settings the decisions depend on.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// An owner silent for longer than this is hung (seed 002: 60 s).
    pub owner_hung_after: Duration,
}

/// What the writer gives a command: its open transaction, the batch's time, and a way to
/// append an event (stored and projected at once, so the command can read the result).
pub trait Log {
    fn conn(&self) -> &Connection;
    fn now(&self) -> DateTime<Utc>;
    /// Appends an outcome event. Coordination events belong to no session (a claim names its
    /// session in the payload): they must not count as, or number within, an agent's session.
    fn append(&mut self, event_type: &str, payload: Value) -> rusqlite::Result<StoredEvent>;
}

/// The generation after `previous` (1 for the first), or `None` if it would overflow (only a
/// log with forged outcomes can get there).
pub fn next_generation(previous: Option<i64>) -> Option<i64> {
    match previous {
        None => Some(1),
        Some(g) => g.max(0).checked_add(1),
    }
}

/// The refusal for a generation that cannot be incremented.
pub fn exhausted(what: &str) -> Verdict {
    Verdict::Refused {
        code: "generationExhausted",
        message: format!("{what} has reached the largest generation; nothing was changed"),
        details: serde_json::json!({}),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Acquire(owners::Acquire),
    Heartbeat(owners::Heartbeat),
    ReleaseOwner(owners::Release),
    Claim(claims::Claim),
    ReleaseClaim(claims::Release),
    OpenGap(gaps::Open),
    MoveGap(gaps::Move),
    AcknowledgeAlert { alert_id: i64, by: Option<String> },
}

/// How a command ended. A refusal may still have appended events (a refused acquire or
/// claim is in the log); a `NotFound` never has.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Done(Value),
    Refused {
        code: &'static str,
        message: String,
        details: Value,
    },
    NotFound(&'static str),
}

pub fn execute(log: &mut dyn Log, rules: &Rules, command: &Command) -> rusqlite::Result<Verdict> {
    match command {
        Command::Acquire(c) => owners::acquire(log, rules, c),
        Command::Heartbeat(c) => owners::heartbeat(log, rules, c),
        Command::ReleaseOwner(c) => owners::release(log, rules, c),
        Command::Claim(c) => claims::claim(log, c),
        Command::ReleaseClaim(c) => claims::release(log, c),
        Command::OpenGap(c) => gaps::open(log, c),
        Command::MoveGap(c) => gaps::advance(log, c),
        Command::AcknowledgeAlert { alert_id, by } => acknowledge(log, *alert_id, by.as_deref()),
    }
}

fn acknowledge(log: &mut dyn Log, alert_id: i64, by: Option<&str>) -> rusqlite::Result<Verdict> {
    use crate::projection::alerts;
    let Some(alert) = alerts::get(log.conn(), alert_id)? else {
        return Ok(Verdict::NotFound("alert"));
    };
    if alert.acknowledged_at.is_none() {
        let payload = serde_json::json!({"alertId": alert_id, "kind": alert.kind, "by": by});
        log.append("alert_acknowledged", payload)?;
    }
    let alert = alerts::get(log.conn(), alert_id)?.expect("the alert was just read");
    Ok(Verdict::Done(
        serde_json::to_value(alert).expect("an alert serializes"),
    ))
}
