//! [`Changes`]: the agent rows a replay changed, taken out of memory, and how they are written.

use super::Result;
use crate::projection::changes::{self, ChangeRow};
use crate::projection::heroes::{self, Hero};
use crate::projection::missions::{self, Mission};
use crate::projection::sessions::Record;
use crate::projection::tool_uses::{self, ToolUse};
use rusqlite::Connection;

/// Agent rows a replay changed, taken out of memory to be written
/// ([`Cached::take_changes`](super::Cached::take_changes)).
#[derive(Default)]
pub struct Changes {
    /// Each with whether SQL has a row for its session.
    pub(super) sessions: Vec<(Record, bool)>,
    pub(super) heroes: Vec<Hero>,
    pub(super) missions: Vec<Mission>,
    pub(super) tools: Vec<ToolUse>,
    pub(super) changes: Vec<ChangeRow>,
}

impl Changes {
    /// Writes every row.
    pub fn write(&self, conn: &Connection) -> Result<()> {
        for (record, stored) in &self.sessions {
            // A replay does not follow which details changed: each is looked at.
            record.store(conn, *stored, true)?;
        }
        // A hero's progress is in its session's row, written above.
        let mut save = heroes::saving(conn)?;
        for hero in &self.heroes {
            heroes::save_said_with(&mut save, hero)?;
        }
        let mut save = missions::saving(conn)?;
        for mission in &self.missions {
            missions::save_with(&mut save, mission)?;
        }
        let mut save = tool_uses::saving(conn)?;
        for tool in &self.tools {
            tool_uses::save_with(&mut save, tool)?;
        }
        let mut keys = changes::Keys::default();
        for row in &self.changes {
            changes::save_with(conn, row, &mut keys)?;
        }
        Ok(())
    }
}
