//! Hook events (source `hook`) in the hero, mission and tool-use projections, as seed 000's
//! ingest mapping says: `SessionStart` spawns a hero, a prompt opens a mission and `Stop`
//! completes it, `PreToolUse` opens a tool use that `PostToolUse` closes, subagents open child
//! missions. Events for a session whose start was never seen materialise its hero (and raise
//! `missing_hero`); lineage that cannot be resolved is recorded with a reason (and raises
//! `lineage_degraded`). Nothing here fails an event: odd sequences are recorded, not refused.
//!
//! [`apply`] resolves the session's hero and runs the event's [`Action`] (`action.rs`) on a
//! `Ctx`; what each action does to the rows is in `prompt.rs` (prompt missions), `tool.rs`
//! (tool calls and permission requests), `task.rs` (tasks) and `subagent.rs` (child missions);
//! `preview.rs` says in one line what a tool call does.

mod action;
mod outcome;
pub(crate) mod preview;
mod prompt;
mod subagent;
mod task;
mod tool;

pub use action::{Action, action, cli_of, cwd_of, state_after};

use super::Effects;
use super::heroes::{self, Hero, HeroState};
use super::recorder::Recorder;
use super::tables::Tables;
use super::view::View;
use crate::event::StoredEvent;
use action::spawns;
use serde_json::json;

pub const MISSING_HERO: &str = "missing_hero";
pub const LINEAGE_DEGRADED: &str = "lineage_degraded";

const PROMPT_CHARS: usize = 8_000;
const TITLE_CHARS: usize = 80;
const SUMMARY_CHARS: usize = 4_000;
const PREVIEW_CHARS: usize = 200;
const ERROR_CHARS: usize = 500;
const SUBAGENT_ID_CHARS: usize = 128;

/// The event being applied and the hero it updates: what each action works on.
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
        ctx.hero.state = state;
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
                // A transcript read before the session's first hook event may have named it.
                model: tables.session_model(session)?,
                faction: None,
                state: HeroState::Idle,
                active_mission_id: None,
                active_mission_sequence: None,
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

/// The model of a transcript record of the session's main thread (not a subagent's, not one
/// Claude Code made itself): the model the session runs on from then on. Claude Code's hook
/// inputs name no model; its transcript does.
pub fn main_thread_model(view: &View) -> Option<&str> {
    let subagent = view.text("agentId").is_some() || view.bool("isSidechain") == Some(true);
    view.text("model")
        .filter(|m| !subagent && *m != crate::ingest::transcript::claude::SYNTHETIC_MODEL)
}

/// What a transcript event does to the agent rows, recorded as one change of the event (so
/// the change streams fold to `GET /heroes` and `GET /tool-uses`): the session's hero, if it
/// has one, takes the model its main thread runs on (`model`, [`main_thread_model`]; a session
/// with no hero yet gets it when its hero is made, from its session row), and a tool result
/// settles the calls its hooks did not (`outcome.rs`).
pub fn apply_transcript<T: Tables>(
    tables: &T,
    event: &StoredEvent,
    view: &View,
    model: Option<&str>,
) -> rusqlite::Result<()> {
    let Some(session) = event.session_id.as_deref() else {
        return Ok(());
    };
    let settles = event.event_type == crate::ingest::transcript::TOOL_RESULT;
    if model.is_none() && !settles {
        return Ok(());
    }
    let recorder = Recorder::new(tables);
    let Some(mut hero) = recorder.hero(session)? else {
        return Ok(());
    };
    if settles && outcome::apply(&recorder, session, view)? {
        recorder.of_hero(&hero);
    }
    if let Some(model) = model
        && hero.model.as_deref() != Some(model)
    {
        hero.model = Some(model.to_string());
        recorder.save_hero(hero)?;
    }
    if let Some(row) = recorder.finish(event.sequence, &Effects::default()) {
        tables.changes(event, row)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
