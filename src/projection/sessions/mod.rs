//! The `sessions` projection: every session id seen in the log, from any source, with what the
//! events said about it (where it runs, its transcript, its model), its state, and its extent
//! in the log. Every event of a session updates its row in one upsert.
//!
//! Here is what an event says about its session ([`Facts`]); `record.rs` has the row
//! ([`Record`]) and how an event changes and stores it, `query.rs` the REST routes' reads.

mod query;
mod record;

pub use query::{ListFilter, Page, Session, get, list};
pub use record::{Record, apply, next};

use super::heroes::HeroState;
use crate::states::states;

states! {
    /// A session's `state`.
    pub enum SessionState {
        Active = "active",
        Idle = "idle",
        AwaitingInput = "awaiting_input",
        /// A normalized `stuck` event said so (with a reason and a message).
        Stuck = "stuck",
        Ended = "ended",
    }
}

impl From<HeroState> for SessionState {
    fn from(state: HeroState) -> SessionState {
        match state {
            HeroState::Idle => SessionState::Idle,
            HeroState::Active => SessionState::Active,
            HeroState::AwaitingInput => SessionState::AwaitingInput,
            HeroState::Ended => SessionState::Ended,
        }
    }
}

/// What one event says about its session. `None` leaves a field as it was.
#[derive(Debug, Default)]
pub struct Facts<'a> {
    /// The cli this event names (or reveals); `cli_default` is used when a new row has none.
    pub cli: Option<&'a str>,
    pub cli_default: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub pane_id: Option<&'a str>,
    pub tty: Option<&'a str>,
    pub transcript_path: Option<&'a str>,
    pub model: Option<&'a str>,
    pub permission_mode: Option<&'a str>,
    /// The state the event puts the session in; `None` keeps it (a new session starts `active`).
    pub state: Option<SessionState>,
    /// The state of a session this event opens, when `state` says none: a session first seen
    /// in a transcript is one that ran before (`ended`) until a hook says otherwise.
    pub state_if_new: Option<SessionState>,
    /// `(reason, message)` when `state` is `stuck`.
    pub stuck: Option<(&'a str, &'a str)>,
    /// What a factory event changes (seed 003's lifecycle columns).
    pub factory: Option<FactoryChange>,
    /// The app a hook server's envelope named (`source_app`), kept once given.
    pub source_app: Option<&'a str>,
    /// A compaction this event begins (`PreCompact`) or ends (`PostCompact`).
    pub compaction: Option<Compaction>,
}

/// A moment of a context compaction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Compaction {
    /// `PreCompact`: counted, since every compaction starts with one.
    Began,
    /// `PostCompact`: only its time is kept.
    Ended,
}

/// A factory lifecycle moment and its time.
#[derive(Debug, Clone, PartialEq)]
pub enum Lifecycle {
    RunRequested(String),
    Started(String),
    Paused(String),
    Resumed(String),
    Completed(String),
    RunResponded(String),
}

/// What a factory event changes on its session's row; `None` leaves a column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FactoryChange {
    pub time: Option<Lifecycle>,
    pub status: Option<String>,
    pub result: Option<String>,
}

/// The factory columns of a `sessions` row (NULL for every other kind of session).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FactoryColumns {
    pub factory_status: Option<String>,
    pub result_status: Option<String>,
    pub run_requested_at: Option<String>,
    pub started_at: Option<String>,
    pub paused_at: Option<String>,
    pub resumed_at: Option<String>,
    pub completed_at: Option<String>,
    pub run_responded_at: Option<String>,
}

impl FactoryColumns {
    pub(super) fn apply(&mut self, change: &FactoryChange) {
        if let Some(time) = &change.time {
            let (column, at) = match time {
                Lifecycle::RunRequested(at) => (&mut self.run_requested_at, at),
                Lifecycle::Started(at) => (&mut self.started_at, at),
                Lifecycle::Paused(at) => (&mut self.paused_at, at),
                Lifecycle::Resumed(at) => (&mut self.resumed_at, at),
                Lifecycle::Completed(at) => (&mut self.completed_at, at),
                Lifecycle::RunResponded(at) => (&mut self.run_responded_at, at),
            };
            *column = Some(at.clone());
        }
        if let Some(status) = &change.status {
            self.factory_status = Some(status.clone());
        }
        if let Some(result) = &change.result {
            self.result_status = Some(result.clone());
        }
    }
}
