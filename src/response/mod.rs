//! Seed 003's ephemeral response events: `FactoryResponseEvent`s, transient observations of
//! what an agent did during a factory session (a message delta, a tool call, token usage).
//! They are kept apart from the canonical log on purpose: no projection reads them, so they
//! can never derive work state, `rebuild` does not see them, and they have a retention of
//! their own (short by default). Each factory session numbers its response events from 1;
//! sequence 0 is the synthetic `STREAM_GAP` record a stream sends when its cursor is older
//! than what is retained.
//!
//! [`store`] holds the SQL (the writer appends and prunes through it, streams read through
//! it), [`hub`] the broadcast of committed records; the stream (history, then live) is
//! `stream::responses`.

pub mod hub;
pub mod store;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SCHEMA_VERSION: &str = "agent-factory.response-event.v1";

/// `FactoryResponseEventKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Kind {
    Session,
    Run,
    Turn,
    Message,
    Reasoning,
    Tool,
    FileChange,
    Plan,
    Progress,
    Usage,
    Error,
    StreamGap,
}

/// `FactoryResponseEventPhase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Phase {
    Started,
    Delta,
    Updated,
    Completed,
    Failed,
    Canceled,
}

impl Kind {
    /// The payload shape of this kind in this phase: the seed's 14 shapes, `MESSAGE` and
    /// `TOOL` having a delta shape of their own.
    pub fn payload_schema(self, phase: Phase) -> &'static str {
        match (self, phase) {
            (Kind::Session, _) => "FactoryResponseEventSessionPayload",
            (Kind::Run, _) => "FactoryResponseEventRunPayload",
            (Kind::Turn, _) => "FactoryResponseEventTurnPayload",
            (Kind::Message, Phase::Delta) => "FactoryResponseEventMessageDeltaPayload",
            (Kind::Message, _) => "FactoryResponseEventMessagePayload",
            (Kind::Reasoning, _) => "FactoryResponseEventReasoningPayload",
            (Kind::Tool, Phase::Delta) => "FactoryResponseEventToolDeltaPayload",
            (Kind::Tool, _) => "FactoryResponseEventToolPayload",
            (Kind::FileChange, _) => "FactoryResponseEventFileChangePayload",
            (Kind::Plan, _) => "FactoryResponseEventPlanPayload",
            (Kind::Progress, _) => "FactoryResponseEventProgressPayload",
            (Kind::Usage, _) => "FactoryResponseEventUsagePayload",
            (Kind::Error, _) => "FactoryResponseEventErrorPayload",
            (Kind::StreamGap, _) => "FactoryResponseEventStreamGapPayload",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Session => "SESSION",
            Kind::Run => "RUN",
            Kind::Turn => "TURN",
            Kind::Message => "MESSAGE",
            Kind::Reasoning => "REASONING",
            Kind::Tool => "TOOL",
            Kind::FileChange => "FILE_CHANGE",
            Kind::Plan => "PLAN",
            Kind::Progress => "PROGRESS",
            Kind::Usage => "USAGE",
            Kind::Error => "ERROR",
            Kind::StreamGap => "STREAM_GAP",
        }
    }
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Started => "STARTED",
            Phase::Delta => "DELTA",
            Phase::Updated => "UPDATED",
            Phase::Completed => "COMPLETED",
            Phase::Failed => "FAILED",
            Phase::Canceled => "CANCELED",
        }
    }
}

/// A `FactoryResponseEvent`, fields in the seed's order. On the way in, `sequence` and
/// `factorySessionId` are hooklog's to set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Envelope {
    pub schema_version: String,
    pub event_id: String,
    #[serde(default)]
    pub sequence: i64,
    pub recorded_at: String,
    #[serde(default)]
    pub factory_session_id: String,
    pub run_id: String,
    pub kind: Kind,
    pub phase: Phase,
    pub provenance: Value,
    pub payload: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatch_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_item_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_session_ref: Option<String>,
}

/// A stored response event: its session, its sequence there, and its envelope as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub session_id: String,
    pub sequence: i64,
    pub envelope: String,
}

/// Where one posted response event is: its sequence, and whether it was already there.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    pub event_id: String,
    pub sequence: i64,
    pub duplicate: bool,
}

/// How long response events are kept: per session at most `max_per_session`, and none older
/// than `max_age` (by when hooklog stored them). `None`: no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retention {
    pub max_age: Option<std::time::Duration>,
    pub max_per_session: Option<u64>,
}

impl Default for Retention {
    /// One hour, and 10,000 per session: enough to reconnect, not an archive.
    fn default() -> Self {
        Retention {
            max_age: Some(std::time::Duration::from_secs(3600)),
            max_per_session: Some(10_000),
        }
    }
}

impl Retention {
    pub fn is_set(&self) -> bool {
        self.max_age.is_some() || self.max_per_session.is_some()
    }
}
