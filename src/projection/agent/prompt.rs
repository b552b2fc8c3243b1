//! Prompt missions: a prompt opens one, `Stop` (or `StopFailure`, or `SessionEnd`) closes it,
//! interrupting what it left running.

use super::{Ctx, PROMPT_CHARS, SUMMARY_CHARS, TITLE_CHARS};
use crate::ingest::bounds::clip;
use crate::projection::missions::{self, Mission, MissionState};
use crate::projection::tables::Tables;
use crate::projection::tool_uses::ToolStatus;

impl<T: Tables> Ctx<'_, T> {
    pub(super) fn mission(&self, id: &str) -> rusqlite::Result<Option<Mission>> {
        self.tables.mission(self.session, id)
    }

    pub(super) fn new_mission(&self, kind: &str) -> Mission {
        Mission {
            id: missions::mission_id(&self.event.event_id),
            hero_id: self.hero.id.clone(),
            session_id: self.session.to_string(),
            kind: kind.into(),
            state: MissionState::Active,
            prompt: None,
            title: None,
            summary: None,
            parent_mission_id: None,
            subagent_id: None,
            subagent_type: None,
            degraded_reason: None,
            opened_event_id: self.event.event_id.clone(),
            closed_event_id: None,
            started_at: self.event.event_time.clone(),
            completed_at: None,
            opened_sequence: self.event.sequence,
        }
    }

    /// Opens a prompt mission, or reuses the one in progress (giving it this event's prompt
    /// if it had none: OpenClaw's `hero_active` opens it, `mission_start` names it).
    pub(super) fn open_mission(&mut self) -> rusqlite::Result<String> {
        let prompt = self.view.text("prompt").map(|p| clip(p, PROMPT_CHARS));
        let title = self
            .view
            .text("title")
            .or_else(|| {
                prompt
                    .as_deref()
                    .and_then(|p| p.lines().find(|l| !l.trim().is_empty()))
            })
            .map(|t| clip(t.trim(), TITLE_CHARS));
        if let Some(active) = self.hero.active_mission_id.clone()
            && let Some(mut mission) = self.mission(&active)?
            && mission.state == MissionState::Active
        {
            if mission.prompt.is_none() && prompt.is_some() {
                mission.prompt = prompt;
                mission.title = mission.title.or(title);
                self.tables.save_mission(mission)?;
            }
            return Ok(active);
        }
        let mission = Mission {
            prompt,
            title,
            ..self.new_mission("prompt")
        };
        let id = mission.id.clone();
        self.hero.active_mission_sequence = Some(mission.opened_sequence);
        self.tables.save_mission(mission)?;
        self.hero.active_mission_id = Some(id.clone());
        self.hero.mission_count += 1;
        Ok(id)
    }

    /// Ends the mission in progress with `state`; its open subagents and running tools are
    /// marked interrupted (their ends were never seen). A second Stop finds nothing to end.
    pub(super) fn close_mission(
        &mut self,
        state: MissionState,
    ) -> rusqlite::Result<Option<String>> {
        let at = &self.event.event_time;
        // Running tools whose end was never seen: the user pressed Esc, or the agent was killed;
        // or, when the transcript already gave the call an error, it was refused (`outcome.rs`).
        for mut tool in self.tables.running_tools(self.session)? {
            tool.status = match tool.error {
                Some(_) => ToolStatus::Denied,
                None => ToolStatus::Interrupted,
            };
            tool.closed_event_id = Some(self.event.event_id.clone());
            tool.finished_at = Some(at.clone());
            self.tables.save_tool(tool)?;
        }
        self.hero.active_mission_sequence = None;
        let Some(id) = self.hero.active_mission_id.take() else {
            return Ok(None);
        };
        if let Some(mut mission) = self.mission(&id)?
            && mission.state == MissionState::Active
        {
            mission.state = state;
            mission.summary = self.summary().or(mission.summary);
            mission.closed_event_id = Some(self.event.event_id.clone());
            mission.completed_at = Some(at.clone());
            self.tables.save_mission(mission)?;
            for mut child in self.tables.active_children(self.session, &id)? {
                child.state = MissionState::Interrupted;
                child.closed_event_id = Some(self.event.event_id.clone());
                child.completed_at = Some(at.clone());
                self.tables.save_mission(child)?;
            }
        }
        Ok(Some(id))
    }

    /// `SessionEnd`: whatever was in progress was interrupted.
    pub(super) fn end(&mut self) -> rusqlite::Result<Option<String>> {
        let closed = self.close_mission(MissionState::Interrupted)?;
        Ok(closed)
    }

    pub(super) fn summary(&self) -> Option<String> {
        self.view
            .text("summary")
            .or_else(|| self.view.text("lastAssistantMessage"))
            .map(|s| clip(s, SUMMARY_CHARS))
    }
}
