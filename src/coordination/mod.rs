//! Coordination commands (seed 002): acquiring a watcher owner, claiming a chat, opening and
//! moving catch-up gaps, acknowledging an alert, deciding a permission request. Each is decided by the writer inside its
//! transaction, against the projection tables as they are at that moment, so two racing
//! requests are decided one after the other and can never both win. The outcome, granted or
//! refused, is appended as events (source `coordination`), and the projections apply them like
//! any other event: a rebuild replays the outcomes, it never decides again.

pub mod claims;
pub mod gaps;
pub mod owners;
pub mod permissions;

use crate::event::StoredEvent;
use crate::projection::alerts::{self, Alert};
use crate::projection::claims::Claim;
use crate::projection::owners::Owner;
use chrono::{DateTime, Utc};
use gaps::ShownGap;
use rusqlite::Connection;
use serde::Serialize;
use serde_json::{Map, Value};
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
    /// This hooklog's name, recorded on the events it stores (`serve --origin`).
    fn origin(&self) -> &str;
    /// Appends an outcome event. Coordination events belong to no session (a claim names its
    /// session in the payload): they must not count as, or number within, an agent's session.
    fn append(&mut self, event_type: &str, payload: Value) -> Result<StoredEvent, DecideError> {
        self.append_to(None, event_type, payload)
    }

    /// Appends an outcome event in an agent's session: a permission decision is part of the
    /// story of the session that asked.
    fn append_in(
        &mut self,
        session: &str,
        event_type: &str,
        payload: Value,
    ) -> Result<StoredEvent, DecideError> {
        self.append_to(Some(session), event_type, payload)
    }

    /// Appends an outcome event, in `session` or in none.
    fn append_to(
        &mut self,
        session: Option<&str>,
        event_type: &str,
        payload: Value,
    ) -> Result<StoredEvent, DecideError>;
}

/// Why a command could not be decided. The writer then undoes the command and answers an
/// error: nothing inside its transaction panics.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("a row did not serialize: {0}")]
    Json(#[from] serde_json::Error),
    /// A coordination invariant does not hold (a bug, never data): a row the command has just
    /// written is not there, an id it has just made is stored already.
    #[error("a coordination invariant does not hold: {0}")]
    Invariant(&'static str),
}

/// The row a command has just written, read back: missing, an invariant is broken.
pub fn written<T>(row: Option<T>, what: &'static str) -> Result<T, DecideError> {
    row.ok_or(DecideError::Invariant(what))
}

/// A refusal's details: `{key: row}`.
pub fn detail(key: &str, row: &impl Serialize) -> Result<Value, DecideError> {
    let mut details = Map::new();
    details.insert(key.to_string(), serde_json::to_value(row)?);
    Ok(Value::Object(details))
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
        details: Value::Object(Map::new()),
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
    DecidePermission(permissions::Decide),
    ExpirePermission { request_id: String },
}

/// What a command that was carried out answers: the row it leaves, as the routes show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per command, boxed in its Verdict"
)]
pub enum Outcome {
    /// A heartbeat or a release: the owner.
    Owner(Owner),
    /// An acquire: the owner, and the account's unresolved gap (`null` when it has none).
    Acquired {
        #[serde(flatten)]
        owner: Owner,
        gap: Option<ShownGap>,
    },
    Claim(Claim),
    Gap(ShownGap),
    Alert(Alert),
    /// A permission decision or expiry: `{ok, resolved, request}`.
    Permission(permissions::Answer),
}

/// How a command ended. A refusal may still have appended events (a refused acquire or
/// claim is in the log); a `NotFound` never has.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Done(Box<Outcome>),
    Refused {
        code: &'static str,
        message: String,
        details: Value,
    },
    NotFound(&'static str),
}

impl Verdict {
    pub fn done(outcome: Outcome) -> Verdict {
        Verdict::Done(Box::new(outcome))
    }
}

pub fn execute(
    log: &mut dyn Log,
    rules: &Rules,
    command: &Command,
) -> Result<Verdict, DecideError> {
    match command {
        Command::Acquire(c) => owners::acquire(log, rules, c),
        Command::Heartbeat(c) => owners::heartbeat(log, rules, c),
        Command::ReleaseOwner(c) => owners::release(log, rules, c),
        Command::Claim(c) => claims::claim(log, c),
        Command::ReleaseClaim(c) => claims::release(log, c),
        Command::OpenGap(c) => gaps::open(log, c),
        Command::MoveGap(c) => gaps::advance(log, c),
        Command::AcknowledgeAlert { alert_id, by } => acknowledge(log, *alert_id, by.as_deref()),
        Command::DecidePermission(c) => permissions::decide(log, c),
        Command::ExpirePermission { request_id } => permissions::expire(log, request_id),
    }
}

fn acknowledge(log: &mut dyn Log, alert_id: i64, by: Option<&str>) -> Result<Verdict, DecideError> {
    let Some(alert) = alerts::get(log.conn(), alert_id)? else {
        return Ok(Verdict::NotFound("alert"));
    };
    if alert.acknowledged_at.is_none() {
        let payload = serde_json::json!({"alertId": alert_id, "kind": alert.kind, "by": by});
        log.append("alert_acknowledged", payload)?;
    }
    let alert = written(
        alerts::get(log.conn(), alert_id)?,
        "the alert just acknowledged",
    )?;
    Ok(Verdict::done(Outcome::Alert(alert)))
}
