//! Tool calls: `PreToolUse` opens a row that `PostToolUse` (or a failure, or a denial) closes,
//! under the mission in progress; a permission request is a row of its own.

use super::Ctx;
use super::ERROR_CHARS;
use super::preview::{one_line, preview, tool_name};
use crate::ingest::bounds::clip;
use crate::projection::tables::Tables;
use crate::projection::tool_uses::{self, ToolStatus, ToolUse};

impl<T: Tables> Ctx<'_, T> {
    /// The mission a tool event belongs to: its subagent's, when the event names an agent with
    /// a mission in progress, else the prompt mission in progress.
    fn current_mission(&self) -> rusqlite::Result<Option<String>> {
        if let Some(agent) = self.view.text("agentId")
            && let Some(child) = self.tables.active_subagent(self.session, agent)?
        {
            return Ok(Some(child.id));
        }
        Ok(self.hero.active_mission_id.clone())
    }

    pub(super) fn new_tool_use(
        &self,
        tool: &str,
        kind: &str,
        status: ToolStatus,
    ) -> rusqlite::Result<ToolUse> {
        Ok(ToolUse {
            id: tool_uses::tool_row_id(&self.event.event_id),
            session_id: self.session.to_string(),
            hero_id: Some(self.hero.id.clone()),
            mission_id: self.current_mission()?,
            tool_use_id: self.view.text("toolUseId").map(str::to_string),
            request_id: self.view.text("requestId").map(str::to_string),
            tool: tool.to_string(),
            kind: kind.to_string(),
            preview: preview(self.view, tool),
            status,
            error: None,
            opened_event_id: Some(self.event.event_id.clone()),
            closed_event_id: None,
            started_at: Some(self.event.event_time.clone()),
            finished_at: None,
            duration_ms: None,
            opened_sequence: self.event.sequence,
        })
    }

    pub(super) fn tool_start(&mut self) -> rusqlite::Result<Option<String>> {
        let call = self.view.text("toolUseId");
        if let Some(call) = call
            && let Some(known) = self.tables.tool_by_call(self.session, call)?
        {
            // The same call announced twice (two hooks on one matcher): one row.
            return Ok(known.mission_id);
        }
        let tool = tool_name(self.view, &self.event.event_type);
        let kind = match self.view.hook_type() {
            Some("bash_command") => "bash",
            Some("file_access") => "file",
            Some("awaiting_input") => "input",
            _ => tool_uses::kind_of(&tool),
        };
        // Without the agent's id no PostToolUse can be matched to it: it is only reported.
        let status = match call {
            Some(_) => ToolStatus::Running,
            None => ToolStatus::Reported,
        };
        let row = self.new_tool_use(&tool, kind, status)?;
        let mission = row.mission_id.clone();
        self.tables.save_tool(row)?;
        Ok(mission)
    }

    pub(super) fn tool_end(&mut self, failed: bool) -> rusqlite::Result<Option<String>> {
        let failed = failed || self.view.bool("ok") == Some(false);
        match failed {
            true => self.end_call(ToolStatus::Failed, self.view.text("error")),
            false => self.end_call(ToolStatus::Completed, None),
        }
    }

    /// `PermissionDenied` (Claude Code's auto mode refused the call): the call ends `denied`,
    /// with the reason as its error.
    pub(super) fn denied(&mut self) -> rusqlite::Result<Option<String>> {
        self.end_call(ToolStatus::Denied, self.view.text("reason"))
    }

    /// Ends the call this event names (by `toolUseId`) with `status`; a call never seen is
    /// recorded with only its end.
    fn end_call(
        &mut self,
        status: ToolStatus,
        error: Option<&str>,
    ) -> rusqlite::Result<Option<String>> {
        let error = error.map(|e| clip(e, ERROR_CHARS));
        let at = self.event.event_time.clone();
        let known = match self.view.text("toolUseId") {
            Some(call) => self.tables.tool_by_call(self.session, call)?,
            None => None,
        };
        let row = match known {
            // A late PostToolUse also corrects a tool its Stop marked interrupted.
            Some(mut row)
                if matches!(row.status, ToolStatus::Running | ToolStatus::Interrupted) =>
            {
                row.duration_ms = row
                    .started_at
                    .as_deref()
                    .and_then(|s| millis_between(s, &at));
                // An error the transcript gave the call while it ran (read before this hook:
                // `outcome.rs`) wins over a hook that reports none.
                (row.status, row.error) = match (status, row.error.take()) {
                    (ToolStatus::Completed, Some(said)) => (ToolStatus::Failed, Some(said)),
                    (_, said) => (status, error.or(said)),
                };
                row.closed_event_id = Some(self.event.event_id.clone());
                row.finished_at = Some(at);
                row
            }
            // Already closed: a second PostToolUse changes nothing.
            Some(row) => return Ok(row.mission_id),
            // Its PreToolUse was never seen: record what is known.
            None => {
                let tool = tool_name(self.view, &self.event.event_type);
                let kind = tool_uses::kind_of(&tool);
                ToolUse {
                    status,
                    error,
                    opened_event_id: None,
                    started_at: None,
                    closed_event_id: Some(self.event.event_id.clone()),
                    finished_at: Some(at),
                    ..self.new_tool_use(&tool, kind, status)?
                }
            }
        };
        let mission = row.mission_id.clone();
        self.tables.save_tool(row)?;
        Ok(mission)
    }

    pub(super) fn permission(&mut self) -> rusqlite::Result<Option<String>> {
        let tool = self.view.tool().unwrap_or("unknown").to_string();
        let mut row = self.new_tool_use(&tool, "permission", ToolStatus::Requested)?;
        if let Some(reason) = ["rationale", "detail", "message"]
            .iter()
            .find_map(|f| self.view.text(f))
        {
            row.preview = Some(one_line(reason));
        }
        let mission = row.mission_id.clone();
        self.tables.save_tool(row)?;
        Ok(mission)
    }
}

/// Milliseconds from one RFC 3339 time to another (never negative: clocks disagree).
pub(super) fn millis_between(from: &str, to: &str) -> Option<i64> {
    let from = chrono::DateTime::parse_from_rfc3339(from).ok()?;
    let to = chrono::DateTime::parse_from_rfc3339(to).ok()?;
    Some((to - from).num_milliseconds().max(0))
}
