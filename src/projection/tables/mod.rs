//! Where the session, hero, mission and tool-use projections keep their rows while events are
//! applied. The projection logic (`sessions`, `agent`) is written once, against [`Tables`]:
//!
//! - [`Live`] reads and writes the SQL tables at once: the writer uses it, so every event's
//!   changes are in its own transaction.
//! - [`Cached`] keeps the rows a replay is working on in memory and writes them at the end
//!   (and every [`FLUSH_EVERY`] events): `hooklog rebuild` uses it, because one SQL
//!   write costs 4-8 µs and a hook event makes three to six of them. What it does not hold
//!   it reads through a [`Backing`]: the connection itself, or (for a rebuild that keeps the
//!   rows on one thread and the connection on another) a request to the connection's thread.
//!
//! Both answer every question exactly as the SQL tables would at that point of the log; the
//! live-equals-rebuild tests compare the two on every fixture and on a large mixed log.
//!
//! `live.rs` has [`Live`], with the writer's [`SessionRows`] (`session_rows.rs`), [`Calls`]
//! (`calls.rs`) and [`Known`] (`known.rs`); `cached.rs` has [`Cached`], which keeps each session's rows in a
//! shard (`shard.rs`), reads the rest through a [`Backing`] (`backing.rs`) and hands what
//! changed out as [`Changes`] (`changed.rs`).

mod backing;
mod cached;
mod calls;
mod changed;
mod known;
mod live;
mod session_rows;
mod shard;

pub use backing::Backing;
pub use cached::{Cached, FLUSH_EVERY};
pub use calls::Calls;
pub use changed::Changes;
pub use known::Known;
pub use live::Live;
pub use session_rows::SessionRows;

use super::changes::ChangeRow;
use super::heroes::Hero;
use super::missions::Mission;
use super::sessions::Facts;
use super::tool_uses::ToolUse;
use crate::event::StoredEvent;
use serde_json::Value;

pub type Result<T> = rusqlite::Result<T>;

/// The rows the agent projections read and write. Every lookup is within one session.
pub trait Tables {
    /// Records an alert this event raised, after every alert of the events before it.
    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()>;
    /// Updates (or makes) the event's session row with what the event says.
    fn session(&self, event: &StoredEvent, facts: &Facts) -> Result<()>;
    /// The model a session's row names (`None` when it has no row or names none).
    fn session_model(&self, session: &str) -> Result<Option<String>>;
    fn hero(&self, session: &str) -> Result<Option<Hero>>;
    fn save_hero(&self, hero: Hero) -> Result<()>;
    /// A mission of this session by id (`None` for another session's).
    fn mission(&self, session: &str, id: &str) -> Result<Option<Mission>>;
    fn save_mission(&self, mission: Mission) -> Result<()>;
    /// The latest active subagent mission of the session for a subagent id.
    fn active_subagent(&self, session: &str, subagent: &str) -> Result<Option<Mission>>;
    /// The still-active children of a mission of the session, in the order they opened.
    fn active_children(&self, session: &str, parent: &str) -> Result<Vec<Mission>>;
    /// The session's tool call (not permission request) with this tool use id.
    fn tool_by_call(&self, session: &str, call: &str) -> Result<Option<ToolUse>>;
    /// The latest running subagent-spawning call of the session.
    fn running_spawner(&self, session: &str) -> Result<Option<ToolUse>>;
    /// Every running tool use of the session, in the order they started.
    fn running_tools(&self, session: &str) -> Result<Vec<ToolUse>>;
    fn save_tool(&self, tool: ToolUse) -> Result<()>;
    /// Records what a hook event (or a transcript event that set its hero's model) changed in
    /// the agent rows, and the mission a hook event answered with (`agent_changes`), stored as
    /// [`ChangeRow::compacted`] against `event`.
    fn changes(&self, event: &StoredEvent, row: ChangeRow) -> Result<()>;
}
