//! What a new socket is sent before any live frame (seed 000's connection hydration): the
//! live heroes and those the mission snapshot names, the recent missions with bounded
//! tool-use arrays, and the permission requests still pending, all read in one transaction with the log's head, so the live frames that
//! follow start exactly after it.

use crate::projection::heroes::{self, HeroView};
use crate::projection::missions::{self, Mission, MissionFilter};
use crate::projection::permissions::{self, PermissionRequest, RequestState, Select};
use crate::projection::tool_uses::ToolUse;
use crate::stream::scope::{Filter, Scope};
use rusqlite::Connection;
use serde::Serialize;

/// Seed 000's defaults: 80 missions, 20 tool uses of each that is not active.
pub const MISSIONS: u32 = 80;
pub const TOOL_USES: u32 = 20;
/// An active mission's tool uses are all sent, up to this many (as `/missions/{id}` embeds).
pub const ACTIVE_TOOL_USES: u32 = 1000;
/// Most live heroes sent (besides those the missions name).
pub const LIVE_HEROES: u32 = 500;
/// Most pending permission requests sent: the newest (a waiting hook gives up within
/// minutes, so the oldest are the first to be over).
pub const PENDING_REQUESTS: u32 = 200;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MissionWithTools {
    #[serde(flatten)]
    pub mission: Mission,
    pub tool_uses: Vec<ToolUse>,
}

pub struct Snapshot {
    /// The log's head when it was read: live frames start after it.
    pub head: i64,
    pub heroes: Vec<HeroView>,
    pub missions: Vec<MissionWithTools>,
    /// Pending permission requests, oldest first.
    pub pending: Vec<PermissionRequest>,
}

/// Reads the snapshot in one read transaction.
pub fn read(conn: &Connection) -> rusqlite::Result<Snapshot> {
    let tx = conn.unchecked_transaction()?;
    let head = Scope::Global(Filter::default()).bounds(&tx)?.head_sequence;
    let mut heroes = heroes::live(&tx, LIVE_HEROES)?;
    let recent = missions::list(&tx, &MissionFilter::default(), MISSIONS)?;
    let mut missions = Vec::with_capacity(recent.len());
    for mission in recent {
        if !heroes.iter().any(|h| h.hero.id == mission.hero_id)
            && let Some(hero) = heroes::get(&tx, &mission.hero_id)?
        {
            heroes.push(hero);
        }
        let tool_uses = missions::latest_tool_uses(&tx, &mission, TOOL_USES, ACTIVE_TOOL_USES)?;
        missions.push(MissionWithTools { mission, tool_uses });
    }
    let pending = Select {
        state: Some(RequestState::Pending),
        ..Select::default()
    };
    let mut pending = permissions::list(&tx, &pending, PENDING_REQUESTS)?.permission_requests;
    pending.reverse();
    tx.finish()?;
    Ok(Snapshot {
        head,
        heroes,
        missions,
        pending,
    })
}
