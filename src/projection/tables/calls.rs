//! [`Calls`]: the writer's in-memory index of each session's tool calls by tool use id.

use super::Result;
use crate::projection::tool_uses::{self, ToolUse};
use foldhash::HashMap;
use rusqlite::Connection;
use std::collections::hash_map::Entry;

/// The writer's index of tool calls, in place of one in SQL: for each session it has read, the
/// key (`opened_sequence`) of the latest call (not permission request) with each tool use id.
/// A session is read from SQL the first time it is asked about (through the session's
/// events), and kept while the writer's view of the file holds (the writer lets go of every
/// session when a request is undone, a batch fails, or another connection commits). An index
/// in SQL keyed by session and call id dirtied a page of its own for nearly every `PreToolUse`
/// when many sessions write at once.
#[derive(Default)]
pub struct Calls {
    sessions: HashMap<String, HashMap<String, i64>>,
}

impl Calls {
    /// The key of the session's latest call with this tool use id.
    pub(super) fn find(
        &mut self,
        conn: &Connection,
        session: &str,
        call: &str,
    ) -> Result<Option<i64>> {
        let calls = match self.sessions.entry(session.to_string()) {
            Entry::Occupied(held) => held.into_mut(),
            Entry::Vacant(slot) => slot.insert(tool_uses::calls_of(conn, session)?),
        };
        Ok(calls.get(call).copied())
    }

    /// A session with no events yet (none in the log, none pruned) is held with no calls,
    /// without reading them.
    pub fn none_yet(&mut self, session: &str) {
        self.sessions.entry(session.to_string()).or_default();
    }

    /// A tool use was saved: a call of a session held becomes its id's latest.
    pub(super) fn saved(&mut self, tool: &ToolUse) {
        if tool.kind == "permission" {
            return;
        }
        if let (Some(call), Some(calls)) =
            (&tool.tool_use_id, self.sessions.get_mut(&tool.session_id))
        {
            calls.insert(call.clone(), tool.opened_sequence);
        }
    }

    /// The calls held for a session, `None` when it is not held.
    pub fn of(&self, session: &str) -> Option<&HashMap<String, i64>> {
        self.sessions.get(session)
    }

    /// How many sessions are held.
    pub fn held(&self) -> usize {
        self.sessions.len()
    }

    pub fn clear(&mut self) {
        self.sessions.clear();
    }
}
