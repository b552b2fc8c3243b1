//! Tasks (`TaskCreated` / `TaskCompleted`): rows of kind `task` under the mission in progress.

use super::Ctx;
use super::preview::one_line;
use super::tool::millis_between;
use crate::projection::tables::Tables;
use crate::projection::tool_uses::{ToolStatus, ToolUse};

impl<T: Tables> Ctx<'_, T> {
    /// `TaskCreated`: a row of kind `task`, `open` until its `TaskCompleted`, under the
    /// mission in progress. Its `toolUseId` is `task:` and the task's id, so it never meets
    /// a tool call's.
    pub(super) fn task_open(&mut self) -> rusqlite::Result<Option<String>> {
        if let Some(known) = self.task()? {
            return Ok(known.mission_id); // announced twice
        }
        let row = self.new_task(ToolStatus::Open)?;
        let mission = row.mission_id.clone();
        self.tables.save_tool(row)?;
        Ok(mission)
    }

    /// `TaskCompleted`: its task completes; one never seen is recorded with only its end.
    pub(super) fn task_done(&mut self) -> rusqlite::Result<Option<String>> {
        let at = self.event.event_time.clone();
        let row = match self.task()? {
            Some(mut row) if row.status == ToolStatus::Open => {
                row.duration_ms = row
                    .started_at
                    .as_deref()
                    .and_then(|s| millis_between(s, &at));
                row
            }
            Some(row) => return Ok(row.mission_id), // completed already
            None => ToolUse {
                opened_event_id: None,
                started_at: None,
                ..self.new_task(ToolStatus::Completed)?
            },
        };
        let row = ToolUse {
            status: ToolStatus::Completed,
            closed_event_id: Some(self.event.event_id.clone()),
            finished_at: Some(at),
            ..row
        };
        let mission = row.mission_id.clone();
        self.tables.save_tool(row)?;
        Ok(mission)
    }

    fn task_key(&self) -> Option<String> {
        self.view.text("taskId").map(|id| format!("task:{id}"))
    }

    fn task(&self) -> rusqlite::Result<Option<ToolUse>> {
        match self.task_key() {
            Some(key) => Ok(self
                .tables
                .tool_by_call(self.session, &key)?
                .filter(|row| row.kind == "task")),
            None => Ok(None),
        }
    }

    fn new_task(&self, status: ToolStatus) -> rusqlite::Result<ToolUse> {
        let subject = ["taskSubject", "taskDescription"]
            .iter()
            .find_map(|f| self.view.text(f));
        Ok(ToolUse {
            tool_use_id: self.task_key(),
            preview: subject.map(one_line),
            ..self.new_tool_use("task", "task", status)?
        })
    }
}
