//! Subagents: child missions of the prompt mission in progress, with their lineage; lineage
//! that cannot be resolved is recorded with a reason and raises `lineage_degraded`.

use super::{Ctx, LINEAGE_DEGRADED, SUBAGENT_ID_CHARS, TITLE_CHARS};
use crate::ingest::bounds::clip;
use crate::projection::missions::{Mission, MissionState};
use crate::projection::tables::Tables;
use serde_json::json;

impl<T: Tables> Ctx<'_, T> {
    /// A subagent started: a child mission of the prompt mission in progress.
    pub(super) fn subagent_start(&mut self) -> rusqlite::Result<String> {
        let (subagent, mut reason) = self.subagent_id();
        if let Some(id) = &subagent
            && let Some(running) = self.tables.active_subagent(self.session, id)?
        {
            return Ok(running.id);
        }
        // A parent named by the body counts only if it is a mission of this session.
        let parent = match self.view.text("parentMissionId") {
            Some(given)
                if self
                    .mission(given)?
                    .is_some_and(|m| m.session_id == self.session) =>
            {
                Some(given.to_string())
            }
            _ => self.hero.active_mission_id.clone(),
        };
        if parent.is_none() && reason.is_none() {
            reason = Some("missing_parent_mission".into());
        }
        let reason = reason.or_else(|| self.view.text("degradedReason").map(str::to_string));
        let subagent_type = ["subagentType", "agentType"]
            .iter()
            .find_map(|f| self.view.text(f))
            .or_else(|| self.view.input_text("subagent_type"));
        // Claude Code's SubagentStart has no description; the Task call that spawned it does.
        let spawner = match self
            .view
            .text("description")
            .or_else(|| self.view.input_text("description"))
        {
            Some(given) => Some(given.to_string()),
            None => self
                .tables
                .running_spawner(self.session)?
                .and_then(|t| t.preview),
        };
        let title = spawner.map(|d| clip(&d, TITLE_CHARS));
        let mission = Mission {
            parent_mission_id: parent,
            subagent_id: subagent,
            subagent_type: subagent_type.map(|t| clip(t, SUBAGENT_ID_CHARS)),
            title,
            degraded_reason: reason.clone(),
            ..self.new_mission("subagent")
        };
        let id = mission.id.clone();
        self.tables.save_mission(mission)?;
        self.hero.mission_count += 1;
        if let Some(reason) = reason {
            self.degraded(&reason, Some(&id))?;
        }
        Ok(id)
    }

    /// A subagent stopped: its child mission completes.
    pub(super) fn subagent_stop(&mut self) -> rusqlite::Result<Option<String>> {
        let (subagent, reason) = self.subagent_id();
        let by_id = match self.view.text("childMissionId") {
            Some(id) => self
                .mission(id)?
                .filter(|m| m.session_id == self.session && m.kind == "subagent"),
            None => None,
        };
        let child = match (by_id, &subagent) {
            (Some(m), _) => Some(m),
            (None, Some(id)) => self.tables.active_subagent(self.session, id)?,
            (None, None) => None,
        };
        let Some(mut child) = child else {
            let reason = reason.unwrap_or_else(|| "unknown_subagent".into());
            self.degraded(&reason, None)?;
            return Ok(None);
        };
        let id = child.id.clone();
        if child.state == MissionState::Active {
            child.state = MissionState::Completed;
            child.summary = self.summary().or(child.summary);
            child.closed_event_id = Some(self.event.event_id.clone());
            child.completed_at = Some(self.event.event_time.clone());
            self.tables.save_mission(child)?;
        }
        Ok(Some(id))
    }

    /// The subagent id (`subagentId`, else `agentId`) and, when it is missing or unusable, why.
    fn subagent_id(&self) -> (Option<String>, Option<String>) {
        match self
            .view
            .text("subagentId")
            .or_else(|| self.view.text("agentId"))
        {
            None => (None, Some("missing_subagent_id".into())),
            Some(id)
                if id.chars().count() > SUBAGENT_ID_CHARS || id.chars().any(char::is_control) =>
            {
                (None, Some("invalid_subagent_id".into()))
            }
            Some(id) => (Some(id.to_string()), None),
        }
    }

    fn degraded(&self, reason: &str, mission: Option<&str>) -> rusqlite::Result<()> {
        let message = format!(
            "subagent lineage of session {} is degraded ({reason}) at its {}",
            self.session, self.event.event_type
        );
        let details =
            json!({"reason": reason, "missionId": mission, "type": self.event.event_type});
        self.tables
            .raise(LINEAGE_DEGRADED, self.event, &message, &details)
    }
}
