//! [`Tables`] for the [`Recorder`]: every call goes to the wrapped tables; the reads keep the
//! rows as they were, the saves record their deltas.

use super::{Before, Recorder};
use crate::event::StoredEvent;
use crate::projection::changes::{ChangeRow, Entity};
use crate::projection::heroes::Hero;
use crate::projection::missions::Mission;
use crate::projection::sessions::Facts;
use crate::projection::tables::{Result, Tables};
use crate::projection::tool_uses::ToolUse;
use serde_json::Value;

impl<T: Tables> Tables for Recorder<'_, T> {
    fn raise(&self, kind: &str, event: &StoredEvent, message: &str, details: &Value) -> Result<()> {
        self.tables.raise(kind, event, message, details)
    }

    fn session(&self, event: &StoredEvent, facts: &Facts) -> Result<()> {
        self.tables.session(event, facts)
    }

    fn session_model(&self, session: &str) -> Result<Option<String>> {
        self.tables.session_model(session)
    }

    fn hero(&self, session: &str) -> Result<Option<Hero>> {
        let hero = self.tables.hero(session)?;
        if let Some(hero) = &hero {
            self.recording
                .borrow_mut()
                .read(Entity::Hero, &hero.id, || Before::Hero(hero.clone()));
        }
        Ok(hero)
    }

    fn save_hero(&self, hero: Hero) -> Result<()> {
        let mut recording = self.recording.borrow_mut();
        let write = recording.save(Entity::Hero, &hero.id, &hero, (None, None), |b| match b {
            Before::Hero(h) => Some(h),
            _ => None,
        });
        recording.hero = Some((hero.id.clone(), hero.active_mission_id.clone()));
        drop(recording);
        match write {
            true => self.tables.save_hero(hero),
            false => Ok(()),
        }
    }

    fn mission(&self, session: &str, id: &str) -> Result<Option<Mission>> {
        let mission = self.tables.mission(session, id)?;
        mission.iter().for_each(|m| self.read_mission(m));
        Ok(mission)
    }

    fn save_mission(&self, mission: Mission) -> Result<()> {
        let parents = (Some(mission.hero_id.clone()), None);
        let write = self.recording.borrow_mut().save(
            Entity::Mission,
            &mission.id,
            &mission,
            parents,
            |b| match b {
                Before::Mission(m) => Some(m),
                _ => None,
            },
        );
        match write {
            true => self.tables.save_mission(mission),
            false => Ok(()),
        }
    }

    fn active_subagent(&self, session: &str, subagent: &str) -> Result<Option<Mission>> {
        let mission = self.tables.active_subagent(session, subagent)?;
        mission.iter().for_each(|m| self.read_mission(m));
        Ok(mission)
    }

    fn active_children(&self, session: &str, parent: &str) -> Result<Vec<Mission>> {
        let children = self.tables.active_children(session, parent)?;
        for child in &children {
            self.read_mission(child);
        }
        Ok(children)
    }

    fn tool_by_call(&self, session: &str, call: &str) -> Result<Option<ToolUse>> {
        let tool = self.tables.tool_by_call(session, call)?;
        tool.iter().for_each(|t| self.read_tool(t));
        Ok(tool)
    }

    fn running_spawner(&self, session: &str) -> Result<Option<ToolUse>> {
        let tool = self.tables.running_spawner(session)?;
        tool.iter().for_each(|t| self.read_tool(t));
        Ok(tool)
    }

    fn running_tools(&self, session: &str) -> Result<Vec<ToolUse>> {
        let running = self.tables.running_tools(session)?;
        for tool in &running {
            self.read_tool(tool);
        }
        Ok(running)
    }

    fn save_tool(&self, tool: ToolUse) -> Result<()> {
        let parents = (tool.hero_id.clone(), tool.mission_id.clone());
        let write = self.recording.borrow_mut().save(
            Entity::ToolUse,
            &tool.id,
            &tool,
            parents,
            |b| match b {
                Before::Tool(t) => Some(t),
                _ => None,
            },
        );
        match write {
            true => self.tables.save_tool(tool),
            false => Ok(()),
        }
    }

    fn changes(&self, event: &StoredEvent, row: ChangeRow) -> Result<()> {
        self.tables.changes(event, row)
    }
}

impl<T> Recorder<'_, T> {
    fn read_mission(&self, mission: &Mission) {
        self.recording
            .borrow_mut()
            .read(Entity::Mission, &mission.id, || {
                Before::Mission(mission.clone())
            });
    }

    fn read_tool(&self, tool: &ToolUse) {
        self.recording
            .borrow_mut()
            .read(Entity::ToolUse, &tool.id, || Before::Tool(tool.clone()));
    }
}
