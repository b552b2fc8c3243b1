//! Seed 000's live frames, derived from the change stream: each change (one hook event's
//! deltas) becomes the frames FactionOS sends for it, in order, every one carrying the event's
//! `sequence` and `eventId` besides the seed's fields.
//!
//! | delta | frame |
//! |---|---|
//! | a new hero | `internal_hero_spawn {hero}` |
//! | a hero's `state` changed | `hero_state {heroId, state, activeMissionId}` |
//! | a new mission | `mission_start {mission}` |
//! | a mission's `state` left `active` | `mission_complete {missionId, heroId, state, summary, completedAt}` |
//! | another change of a mission | `mission_event {kind: "mission_updated", missionId, heroId, set}` |
//! | a new tool use | `tool_use {toolUse}` (and `tool_result` if it is already finished) |
//! | a tool use finished | `tool_result {toolUseId, heroId, missionId, status, ok, error, durationMs, finishedAt}` |
//! | a subagent's mission opened (it has a `parentMissionId`) | also `subagent_lineage_update {parentMissionId, childMissionId, subagentId, subagentType, state}` and `mission_graph_update {missionId, childMissionId, state}` |
//! | a permission request opened | `permission_request {requestId, heroId, sessionId, kind, toolName, detail, openedAt, waitsUntil, origin}` |
//! | a request allowed or denied | `permission_response {requestId, approved, decidedBy, message}` (`plan_approval_response {planId, ...}` for a plan) |
//! | a request expired | `mission_event {kind: "permission_expired", requestId}` |
//!
//! An event whose deltas make none of these (a `Notification`, a name hooklog does not know)
//! is one opaque `mission_event {kind: <event type>, missionId, heroId}`, as the seed forwards
//! unknown named events; its payload is never sent.

use crate::projection::changes::{Change, Delta, Entity, Op};
use crate::projection::missions::MissionState;
use crate::projection::permissions::{RequestKind, RequestState};
use crate::projection::tool_uses::ToolStatus;
use serde_json::{Map, Value, json};

/// The frames of one change, in order.
pub fn of(change: &Change) -> Vec<Value> {
    let mut frames = Vec::new();
    for delta in change.deltas() {
        frames_of_delta(&delta, &mut frames);
    }
    if frames.is_empty() {
        frames.push(json!({
            "type": "mission_event",
            "kind": change.event_type,
            "missionId": change.mission_id.as_deref().unwrap_or(&change.hero_id),
            "heroId": change.hero_id,
        }));
    }
    for frame in &mut frames {
        frame["sequence"] = json!(change.sequence);
        frame["eventId"] = json!(change.event_id);
    }
    frames
}

/// A request's `permission_request` frame, from its row's fields (a new request's delta sets
/// every one; hydration sends the pending ones).
pub fn permission_request(request: &Map<String, Value>) -> Value {
    json!({"type": "permission_request", "requestId": request.get("requestId"),
        "heroId": request.get("heroId"), "sessionId": request.get("sessionId"),
        "kind": request.get("kind"), "toolName": request.get("tool"),
        "detail": request.get("preview"), "openedAt": request.get("openedAt"),
        "waitsUntil": request.get("waitsUntil"), "origin": request.get("origin")})
}

fn text<'a>(set: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    set.get(field).and_then(Value::as_str)
}

fn frames_of_delta(delta: &Delta, frames: &mut Vec<Value>) {
    let set = &delta.set;
    match (delta.entity, delta.op) {
        (Entity::Hero, Op::Created) => {
            frames.push(json!({"type": "internal_hero_spawn", "hero": set}));
        }
        (Entity::Hero, Op::Updated) => {
            if let Some(state) = set.get("state") {
                frames.push(
                    json!({"type": "hero_state", "heroId": delta.id, "state": state,
                    "activeMissionId": set.get("activeMissionId")}),
                );
            }
        }
        (Entity::Mission, Op::Created) => {
            frames.push(json!({"type": "mission_start", "mission": set}));
            if let Some(parent) = text(set, "parentMissionId") {
                frames.push(
                    json!({"type": "subagent_lineage_update", "heroId": delta.hero_id,
                    "parentMissionId": parent, "childMissionId": delta.id,
                    "subagentId": set.get("subagentId"), "subagentType": set.get("subagentType"),
                    "state": set.get("state"), "degradedReason": set.get("degradedReason")}),
                );
                frames.push(
                    json!({"type": "mission_graph_update", "heroId": delta.hero_id,
                    "missionId": parent, "childMissionId": delta.id, "state": set.get("state")}),
                );
            }
        }
        (Entity::Mission, Op::Updated) => {
            let ended = text(set, "state")
                .and_then(MissionState::parse)
                .is_some_and(|s| s != MissionState::Active);
            let frame = match ended {
                true => json!({"type": "mission_complete", "missionId": delta.id,
                    "heroId": delta.hero_id, "state": set["state"], "summary": set.get("summary"),
                    "completedAt": set.get("completedAt")}),
                false => json!({"type": "mission_event", "kind": "mission_updated",
                    "missionId": delta.id, "heroId": delta.hero_id, "set": set}),
            };
            frames.push(frame);
        }
        (Entity::Permission, Op::Created) => frames.push(permission_request(set)),
        (Entity::Permission, Op::Updated) => {
            let state = text(set, "state").and_then(RequestState::parse);
            let approved = match state {
                Some(RequestState::Allowed) => true,
                Some(RequestState::Denied) => false,
                // Expired (or a state only a later hooklog writes): no decision was made.
                _ => {
                    frames.push(
                        json!({"type": "mission_event", "kind": "permission_expired",
                        "missionId": delta.hero_id, "heroId": delta.hero_id,
                        "requestId": delta.id}),
                    );
                    return;
                }
            };
            let frame = match text(set, "kind") == Some(RequestKind::Plan.as_str()) {
                true => json!({"type": "plan_approval_response", "planId": delta.id,
                    "approved": approved}),
                false => json!({"type": "permission_response", "requestId": delta.id,
                    "approved": approved}),
            };
            let mut frame = frame;
            frame["heroId"] = json!(delta.hero_id);
            frame["decidedBy"] = json!(set.get("decidedBy"));
            frame["message"] = json!(set.get("message"));
            frames.push(frame);
        }
        (Entity::ToolUse, op) => {
            if op == Op::Created {
                frames.push(json!({"type": "tool_use", "toolUse": set}));
            }
            let finished = text(set, "status")
                .and_then(ToolStatus::parse)
                .filter(|s| s.is_finished());
            if let Some(status) = finished {
                frames.push(json!({"type": "tool_result", "toolUseId": delta.id,
                    "heroId": delta.hero_id, "missionId": delta.mission_id,
                    "status": set["status"], "ok": status == ToolStatus::Completed,
                    "error": set.get("error"), "durationMs": set.get("durationMs"),
                    "finishedAt": set.get("finishedAt")}));
            }
        }
    }
}
