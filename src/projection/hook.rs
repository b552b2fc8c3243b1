//! Hook events (source `hook`) in the hero, mission and tool-use projections, as seed 000's
//! ingest mapping says: `SessionStart` spawns a hero, a prompt opens a mission and `Stop`
//! completes it, `PreToolUse` opens a tool use that `PostToolUse` closes, subagents open child
//! missions. Events for a session whose start was never seen materialise its hero (and raise
//! `missing_hero`); lineage that cannot be resolved is recorded with a reason (and raises
//! `lineage_degraded`). Nothing here fails an event: odd sequences are recorded, not refused.

use super::Effects;
use super::heroes::{self, Hero};
use super::missions::{self, Mission};
use super::tables::Tables;
use super::tool_uses::{self, ToolUse};
use super::view::View;
use crate::event::StoredEvent;
use crate::ingest::bounds::clip;
use crate::ingest::hook::KNOWN_CLIS;
use serde_json::json;

pub const MISSING_HERO: &str = "missing_hero";
pub const LINEAGE_DEGRADED: &str = "lineage_degraded";

const PROMPT_CHARS: usize = 8_000;
const TITLE_CHARS: usize = 80;
const SUMMARY_CHARS: usize = 4_000;
const PREVIEW_CHARS: usize = 200;
const ERROR_CHARS: usize = 500;
const SUBAGENT_ID_CHARS: usize = 128;

/// What a hook event does, from its name and its hook-specific `type`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    Spawn,
    OpenMission,
    CloseMission {
        state: &'static str,
    },
    ToolStart,
    ToolEnd {
        failed: bool,
    },
    /// `PermissionDenied`: the call it names ends `denied`.
    Denied,
    Permission,
    /// `TaskCreated` / `TaskCompleted`: a task of the mission in progress.
    TaskOpen,
    TaskDone,
    SubagentStart,
    SubagentStop,
    Notify,
    End,
    Other,
}

pub fn action(event_type: &str, hook_type: Option<&str>) -> Action {
    match (event_type, hook_type) {
        (_, Some("git_dirty")) => Action::Other,
        (_, Some("subagent_spawn")) => Action::SubagentStart,
        (_, Some("subagent_complete")) => Action::SubagentStop,
        (_, Some("permission_request")) => Action::Permission,
        ("SessionStart", _) => Action::Spawn,
        ("UserPromptSubmit" | "mission_start" | "hero_active", _) => Action::OpenMission,
        ("Stop" | "hero_idle", _) => Action::CloseMission { state: "completed" },
        ("StopFailure", _) => Action::CloseMission { state: "failed" },
        ("PreToolUse" | "file_access" | "bash_command", _) => Action::ToolStart,
        ("PostToolUse", _) => Action::ToolEnd { failed: false },
        ("PostToolUseFailure", _) => Action::ToolEnd { failed: true },
        ("PermissionDenied", _) => Action::Denied,
        ("PermissionRequest", _) => Action::Permission,
        ("TaskCreated", _) => Action::TaskOpen,
        ("TaskCompleted", _) => Action::TaskDone,
        ("SubagentStart", _) => Action::SubagentStart,
        ("SubagentStop", _) => Action::SubagentStop,
        ("Notification", _) => Action::Notify,
        ("SessionEnd", _) => Action::End,
        _ => Action::Other,
    }
}

/// The state a hook event puts its session (and hero) in; `None` leaves it.
pub fn state_after(action: Action, view: &View) -> Option<&'static str> {
    match action {
        // After a denial the agent carries on without the call.
        Action::OpenMission | Action::ToolEnd { .. } | Action::Denied => Some("active"),
        Action::SubagentStart | Action::SubagentStop => Some("active"),
        Action::ToolStart if awaits_input(view) => Some("awaiting_input"),
        Action::ToolStart => Some("active"),
        Action::Permission => Some("awaiting_input"),
        Action::CloseMission { .. } => Some("idle"),
        Action::End => Some("ended"),
        Action::Notify => match view.text("notificationType") {
            Some("permission_prompt" | "elicitation_dialog") => Some("awaiting_input"),
            _ => None,
        },
        // A fresh or resumed session waits for its prompt; a SessionStart after a compact
        // comes in the middle of work and changes nothing.
        Action::Spawn if view.text("source") == Some("compact") => None,
        Action::Spawn => Some("idle"),
        Action::TaskOpen | Action::TaskDone | Action::Other => None,
    }
}

/// The cli an event names (unknown names fall back to `claude-code`) or reveals (Codex sends
/// `turn_id` and keeps transcripts under `~/.codex/`); `None` when it says nothing.
pub fn cli_of(view: &View) -> Option<&'static str> {
    if let Some(cli) = view.text("cli") {
        return Some(
            KNOWN_CLIS
                .iter()
                .find(|known| **known == cli)
                .copied()
                .unwrap_or("claude-code"),
        );
    }
    let codex = view.text("turnId").is_some()
        || view
            .text("transcriptPath")
            .is_some_and(|p| p.contains("/.codex/"));
    codex.then_some("codex-cli")
}

/// The working directory an event gives: `CwdChanged`'s new one, else the `cwd` every hook
/// body carries.
pub fn cwd_of(view: &View) -> Option<&str> {
    view.text("newCwd").or_else(|| view.text("cwd"))
}

fn awaits_input(view: &View) -> bool {
    view.hook_type() == Some("awaiting_input") || view.tool() == Some("AskUserQuestion")
}

/// Whether an event is one that spawns a hero (so a new hero is expected, not missing).
fn spawns(event: &StoredEvent, view: &View) -> bool {
    matches!(event.event_type.as_str(), "SessionStart" | "hero_active")
        || matches!(
            view.hook_type(),
            Some("hero_active" | "internal_hero_spawn")
        )
}

struct Ctx<'a, T: Tables> {
    tables: &'a T,
    event: &'a StoredEvent,
    view: &'a View,
    session: &'a str,
    hero: Hero,
}

pub fn apply<T: Tables>(tables: &T, event: &StoredEvent, view: &View) -> rusqlite::Result<Effects> {
    let action = action(&event.event_type, view.hook_type());
    let Some(session) = event.session_id.as_deref() else {
        if action != Action::Other {
            let message = format!(
                "hook event {} names no session or hero, so no hero could be resolved",
                event.event_type
            );
            tables.raise(
                MISSING_HERO,
                event,
                &message,
                &json!({"reason": "no_session"}),
            )?;
        }
        return Ok(Effects::default());
    };
    let hero = hero_for(tables, event, view, session)?;
    let mut ctx = Ctx {
        tables,
        event,
        view,
        session,
        hero,
    };
    let mission_id = match action {
        Action::Spawn => None,
        Action::OpenMission => Some(ctx.open_mission()?),
        Action::CloseMission { state } => ctx.close_mission(state)?,
        Action::ToolStart => ctx.tool_start()?,
        Action::ToolEnd { failed } => ctx.tool_end(failed)?,
        Action::Denied => ctx.denied()?,
        Action::Permission => ctx.permission()?,
        Action::TaskOpen => ctx.task_open()?,
        Action::TaskDone => ctx.task_done()?,
        Action::SubagentStart => Some(ctx.subagent_start()?),
        Action::SubagentStop => ctx.subagent_stop()?,
        Action::End => ctx.end()?,
        Action::Notify | Action::Other => None,
    };
    if let Some(state) = state_after(action, view) {
        ctx.hero.state = state.into();
    }
    let hero_id = ctx.hero.id.clone();
    tables.save_hero(ctx.hero)?;
    Ok(Effects {
        hero_id: Some(hero_id),
        mission_id,
    })
}

/// The session's hero, updated with what this event says; made if the session has none.
fn hero_for(
    tables: &impl Tables,
    event: &StoredEvent,
    view: &View,
    session: &str,
) -> rusqlite::Result<Hero> {
    let mut hero = match tables.hero(session)? {
        Some(hero) => hero,
        None => {
            if !spawns(event, view) {
                let message = format!(
                    "session {session} had no hero when its {} arrived (its SessionStart was not seen); one was made from this event",
                    event.event_type
                );
                let details = json!({"reason": "session_not_started", "type": event.event_type});
                tables.raise(MISSING_HERO, event, &message, &details)?;
            }
            Hero {
                id: heroes::hero_id(session),
                session_id: session.to_string(),
                cli: "claude-code".into(),
                cwd: "/".into(),
                tty: None,
                model: None,
                faction: None,
                state: "idle".into(),
                active_mission_id: None,
                mission_count: 0,
                spawned_event_id: event.event_id.clone(),
                spawned_at: event.event_time.clone(),
            }
        }
    };
    if let Some(cli) = cli_of(view) {
        hero.cli = cli.into();
    }
    let text = |field: &str| view.text(field).map(str::to_string);
    hero.cwd = cwd_of(view).map_or(hero.cwd, str::to_string);
    hero.tty = text("tty").or(hero.tty);
    hero.model = text("modelId").or_else(|| text("model")).or(hero.model);
    hero.faction = text("faction").or(hero.faction);
    Ok(hero)
}

impl<T: Tables> Ctx<'_, T> {
    fn mission(&self, id: &str) -> rusqlite::Result<Option<Mission>> {
        self.tables.mission(self.session, id)
    }

    fn new_mission(&self, kind: &str) -> Mission {
        Mission {
            id: missions::mission_id(&self.event.event_id),
            hero_id: self.hero.id.clone(),
            session_id: self.session.to_string(),
            kind: kind.into(),
            state: "active".into(),
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
    fn open_mission(&mut self) -> rusqlite::Result<String> {
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
            && mission.state == "active"
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
        self.tables.save_mission(mission)?;
        self.hero.active_mission_id = Some(id.clone());
        self.hero.mission_count += 1;
        Ok(id)
    }

    /// Ends the mission in progress with `state`; its open subagents and running tools are
    /// marked interrupted (their ends were never seen). A second Stop finds nothing to end.
    fn close_mission(&mut self, state: &str) -> rusqlite::Result<Option<String>> {
        let at = &self.event.event_time;
        // Running tools whose end was never seen: the user pressed Esc, or the agent was killed.
        for mut tool in self.tables.running_tools(self.session)? {
            tool.status = "interrupted".into();
            tool.closed_event_id = Some(self.event.event_id.clone());
            tool.finished_at = Some(at.clone());
            self.tables.save_tool(tool)?;
        }
        let Some(id) = self.hero.active_mission_id.take() else {
            return Ok(None);
        };
        if let Some(mut mission) = self.mission(&id)?
            && mission.state == "active"
        {
            mission.state = state.into();
            mission.summary = self.summary().or(mission.summary);
            mission.closed_event_id = Some(self.event.event_id.clone());
            mission.completed_at = Some(at.clone());
            self.tables.save_mission(mission)?;
            for mut child in self.tables.active_children(self.session, &id)? {
                child.state = "interrupted".into();
                child.closed_event_id = Some(self.event.event_id.clone());
                child.completed_at = Some(at.clone());
                self.tables.save_mission(child)?;
            }
        }
        Ok(Some(id))
    }

    /// `SessionEnd`: whatever was in progress was interrupted.
    fn end(&mut self) -> rusqlite::Result<Option<String>> {
        let closed = self.close_mission("interrupted")?;
        Ok(closed)
    }

    fn summary(&self) -> Option<String> {
        self.view
            .text("summary")
            .or_else(|| self.view.text("lastAssistantMessage"))
            .map(|s| clip(s, SUMMARY_CHARS))
    }

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

    fn new_tool_use(&self, tool: &str, kind: &str, status: &str) -> rusqlite::Result<ToolUse> {
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
            status: status.into(),
            error: None,
            opened_event_id: Some(self.event.event_id.clone()),
            closed_event_id: None,
            started_at: Some(self.event.event_time.clone()),
            finished_at: None,
            duration_ms: None,
            opened_sequence: self.event.sequence,
        })
    }

    fn tool_start(&mut self) -> rusqlite::Result<Option<String>> {
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
        let status = if call.is_some() {
            "running"
        } else {
            "reported"
        };
        let row = self.new_tool_use(&tool, kind, status)?;
        let mission = row.mission_id.clone();
        self.tables.save_tool(row)?;
        Ok(mission)
    }

    fn tool_end(&mut self, failed: bool) -> rusqlite::Result<Option<String>> {
        let failed = failed || self.view.bool("ok") == Some(false);
        match failed {
            true => self.end_call("failed", self.view.text("error")),
            false => self.end_call("completed", None),
        }
    }

    /// `PermissionDenied` (Claude Code's auto mode refused the call): the call ends `denied`,
    /// with the reason as its error.
    fn denied(&mut self) -> rusqlite::Result<Option<String>> {
        self.end_call("denied", self.view.text("reason"))
    }

    /// Ends the call this event names (by `toolUseId`) with `status`; a call never seen is
    /// recorded with only its end.
    fn end_call(&mut self, status: &str, error: Option<&str>) -> rusqlite::Result<Option<String>> {
        let error = error.map(|e| clip(e, ERROR_CHARS));
        let at = self.event.event_time.clone();
        let known = match self.view.text("toolUseId") {
            Some(call) => self.tables.tool_by_call(self.session, call)?,
            None => None,
        };
        let row = match known {
            // A late PostToolUse also corrects a tool its Stop marked interrupted.
            Some(mut row) if matches!(row.status.as_str(), "running" | "interrupted") => {
                row.duration_ms = row
                    .started_at
                    .as_deref()
                    .and_then(|s| millis_between(s, &at));
                row.status = status.into();
                row.error = error;
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
                    status: status.into(),
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

    /// `TaskCreated`: a row of kind `task`, `open` until its `TaskCompleted`, under the
    /// mission in progress. Its `toolUseId` is `task:` and the task's id, so it never meets
    /// a tool call's.
    fn task_open(&mut self) -> rusqlite::Result<Option<String>> {
        if let Some(known) = self.task()? {
            return Ok(known.mission_id); // announced twice
        }
        let row = self.new_task("open")?;
        let mission = row.mission_id.clone();
        self.tables.save_tool(row)?;
        Ok(mission)
    }

    /// `TaskCompleted`: its task completes; one never seen is recorded with only its end.
    fn task_done(&mut self) -> rusqlite::Result<Option<String>> {
        let at = self.event.event_time.clone();
        let row = match self.task()? {
            Some(mut row) if row.status == "open" => {
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
                ..self.new_task("completed")?
            },
        };
        let row = ToolUse {
            status: "completed".into(),
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

    fn new_task(&self, status: &str) -> rusqlite::Result<ToolUse> {
        let subject = ["taskSubject", "taskDescription"]
            .iter()
            .find_map(|f| self.view.text(f));
        Ok(ToolUse {
            tool_use_id: self.task_key(),
            preview: subject.map(one_line),
            ..self.new_tool_use("task", "task", status)?
        })
    }

    fn permission(&mut self) -> rusqlite::Result<Option<String>> {
        let tool = self.view.tool().unwrap_or("unknown").to_string();
        let mut row = self.new_tool_use(&tool, "permission", "requested")?;
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

    /// A subagent started: a child mission of the prompt mission in progress.
    fn subagent_start(&mut self) -> rusqlite::Result<String> {
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
    fn subagent_stop(&mut self) -> rusqlite::Result<Option<String>> {
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
        if child.state == "active" {
            child.state = "completed".into();
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

/// The tool an event is about: its `tool`, else what its hook-specific type implies.
fn tool_name(view: &View, event_type: &str) -> String {
    if let Some(tool) = view.tool() {
        return tool.to_string();
    }
    let implied = match view.hook_type().unwrap_or(event_type) {
        "bash_command" => "Bash",
        "file_access" => match view.text("operation") {
            Some("read") => "Read",
            Some("write") => "Write",
            Some("edit") => "Edit",
            _ => "file_access",
        },
        "awaiting_input" | "input_received" => "AskUserQuestion",
        "subagent_spawn" => "Task",
        _ => "unknown",
    };
    implied.to_string()
}

/// One line of at most 200 characters saying what a tool call does. Patch bodies and MCP
/// arguments are never shown: an apply_patch shows the files it touches, an MCP call only an
/// explicit preview.
fn preview(view: &View, tool: &str) -> Option<String> {
    let kind = tool_uses::kind_of(tool);
    if tool == "apply_patch" {
        let bodies = [
            view.text("command"),
            view.input_text("command"),
            view.input_text("input"),
            view.input_text("patch"),
        ];
        return bodies.into_iter().flatten().find_map(patch_paths);
    }
    let explicit = ["inputPreview", "preview", "toolSummary"];
    let explicit_raw = ["command", "path", "filePath", "description"];
    let given = explicit.iter().find_map(|f| view.text(f));
    if kind == "mcp" {
        return given.map(one_line);
    }
    let from_input = match kind {
        "bash" => view
            .input_text("command")
            .or_else(|| view.input_text("cmd")),
        "file" => ["file_path", "path", "notebook_path"]
            .iter()
            .find_map(|k| view.input_text(k)),
        "search" => view
            .input_text("pattern")
            .or_else(|| view.input_text("path")),
        "web" => view.input_text("url").or_else(|| view.input_text("query")),
        "subagent" => view.input_text("description"),
        _ => None,
    };
    given
        .or_else(|| explicit_raw.iter().find_map(|f| view.text(f)))
        .or(from_input)
        .map(one_line)
}

/// The files an apply_patch body touches (`*** Update File: src/a.rs`), comma-separated.
fn patch_paths(body: &str) -> Option<String> {
    let paths: Vec<&str> = body
        .lines()
        .filter_map(|line| {
            ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                .iter()
                .find_map(|prefix| line.strip_prefix(prefix))
        })
        .map(str::trim)
        .collect();
    (!paths.is_empty()).then(|| one_line(&paths.join(", ")))
}

fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    clip(&flat, PREVIEW_CHARS)
}

/// Milliseconds from one RFC 3339 time to another (never negative: clocks disagree).
fn millis_between(from: &str, to: &str) -> Option<i64> {
    let from = chrono::DateTime::parse_from_rfc3339(from).ok()?;
    let to = chrono::DateTime::parse_from_rfc3339(to).ok()?;
    Some((to - from).num_milliseconds().max(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_follows_the_seed_map() {
        assert_eq!(
            action("PreToolUse", Some("subagent_spawn")),
            Action::SubagentStart
        );
        assert_eq!(
            action("PreToolUse", Some("bash_command")),
            Action::ToolStart
        );
        assert_eq!(action("PreToolUse", Some("git_dirty")), Action::Other);
        assert_eq!(action("PermissionRequest", None), Action::Permission);
        assert_eq!(
            action("UserPromptSubmit", Some("hero_active")),
            Action::OpenMission
        );
        assert_eq!(
            action("hero_idle", None),
            Action::CloseMission { state: "completed" }
        );
        assert_eq!(
            action("StopFailure", None),
            Action::CloseMission { state: "failed" }
        );
        assert_eq!(action("PreCompact", None), Action::Other);
    }

    #[test]
    fn previews_hide_patch_bodies_and_mcp_arguments() {
        let patch = View::parse(
            r#"{"tool":"apply_patch","toolInput":{"command":"*** Begin Patch\n*** Update File: src/a.rs\n@@\n-secret\n+x\n*** Add File: b.rs\n"}}"#,
        );
        assert_eq!(
            preview(&patch, "apply_patch").as_deref(),
            Some("src/a.rs, b.rs")
        );
        let mcp = View::parse(r#"{"toolInput":{"token":"abc"},"command":"raw"}"#);
        assert_eq!(preview(&mcp, "mcp__x__y"), None);
        let bash = View::parse(r#"{"toolInput":{"command":"cargo  test\n -p x"}}"#);
        assert_eq!(preview(&bash, "Bash").as_deref(), Some("cargo test -p x"));
        let long = View::parse(&format!(r#"{{"command":"{}"}}"#, "a".repeat(500)));
        assert_eq!(preview(&long, "Bash").unwrap().len(), 200);
    }

    #[test]
    fn cli_is_named_or_inferred_from_codex_fields() {
        assert_eq!(
            cli_of(&View::parse(r#"{"cli":"codex-cli"}"#)),
            Some("codex-cli")
        );
        assert_eq!(
            cli_of(&View::parse(r#"{"cli":"emacs"}"#)),
            Some("claude-code")
        );
        assert_eq!(
            cli_of(&View::parse(r#"{"turn_id":"t"}"#)),
            Some("codex-cli")
        );
        assert_eq!(
            cli_of(&View::parse(
                r#"{"transcriptPath":"/h/.codex/sessions/x.jsonl"}"#
            )),
            Some("codex-cli")
        );
        assert_eq!(cli_of(&View::parse("{}")), None);
    }

    #[test]
    fn durations_are_never_negative() {
        assert_eq!(
            millis_between("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.250Z"),
            Some(1250)
        );
        assert_eq!(
            millis_between("2026-01-01T00:00:02.000Z", "2026-01-01T00:00:01.000Z"),
            Some(0)
        );
    }
}
