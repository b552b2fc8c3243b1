//! The fields of a hero, mission or tool use that differ between two versions of the row,
//! written straight into JSON (`"name":value` pairs under the names the API shows), for
//! `Delta::set`. Compared field by field, and only what changed is serialized: on the writer's
//! path this runs for nearly every hook event's hero, and building maps of values for it cost
//! more than the rest of the recording.

use super::heroes::Hero;
use super::missions::Mission;
use super::tool_uses::ToolUse;
use serde::Serialize;

/// A row whose changed fields can be written as JSON.
pub trait Diff: Serialize {
    /// Appends `"name":value` for each field of `self` that differs from `before`, comma
    /// separated (the caller writes the braces); returns whether it wrote any.
    fn write_changed(&self, before: &Self, out: &mut Vec<u8>) -> bool;

    /// Appends the whole row as a JSON object.
    fn write_all(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(out, self).expect("a row serializes");
    }
}

fn put<T: Serialize>(out: &mut Vec<u8>, first: &mut bool, name: &str, value: &T) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    serde_json::to_writer(&mut *out, value).expect("a field serializes");
}

/// `Diff` for a row type: each field with its JSON name (as `#[serde(rename_all = "camelCase")]`
/// names it; the fold test in tests/it/changes.rs compares them with the API's rows).
macro_rules! diff {
    ($row:ty { $($field:ident => $name:literal),* $(,)? }) => {
        impl Diff for $row {
            fn write_changed(&self, before: &Self, out: &mut Vec<u8>) -> bool {
                let mut first = true;
                $(if self.$field != before.$field {
                    put(out, &mut first, $name, &self.$field);
                })*
                !first
            }
        }
    };
}

diff!(Hero {
    id => "id", session_id => "sessionId", cli => "cli", cwd => "cwd", tty => "tty",
    model => "model", faction => "faction", state => "state",
    active_mission_id => "activeMissionId", mission_count => "missionCount",
    spawned_event_id => "spawnedEventId", spawned_at => "spawnedAt",
});

diff!(Mission {
    id => "id", hero_id => "heroId", session_id => "sessionId", kind => "kind",
    state => "state", prompt => "prompt", title => "title", summary => "summary",
    parent_mission_id => "parentMissionId", subagent_id => "subagentId",
    subagent_type => "subagentType", degraded_reason => "degradedReason",
    opened_event_id => "openedEventId", closed_event_id => "closedEventId",
    started_at => "startedAt", completed_at => "completedAt", opened_sequence => "openedSequence",
});

diff!(ToolUse {
    id => "id", session_id => "sessionId", hero_id => "heroId", mission_id => "missionId",
    tool_use_id => "toolUseId", request_id => "requestId", tool => "tool", kind => "kind",
    preview => "preview", status => "status", error => "error",
    opened_event_id => "openedEventId", closed_event_id => "closedEventId",
    started_at => "startedAt", finished_at => "finishedAt", duration_ms => "durationMs",
    opened_sequence => "openedSequence",
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::heroes::HeroState;
    use serde_json::{Value, json};

    #[test]
    fn only_the_fields_that_differ_are_written_under_their_api_names() {
        let hero = Hero {
            id: "h".into(),
            session_id: "s".into(),
            cli: "claude-code".into(),
            cwd: "/".into(),
            tty: None,
            model: None,
            faction: None,
            state: HeroState::Idle,
            active_mission_id: None,
            active_mission_sequence: None,
            mission_count: 0,
            spawned_event_id: "e".into(),
            spawned_at: "t".into(),
        };
        let mut all = Vec::new();
        hero.write_all(&mut all);
        let all: Value = serde_json::from_slice(&all).unwrap();
        assert_eq!(all.as_object().unwrap().len(), 12);
        let mut after = hero.clone();
        after.state = HeroState::Active;
        after.active_mission_id = Some("m\"1".into());
        after.mission_count = 2;
        let mut out = b"{".to_vec();
        assert!(after.write_changed(&hero, &mut out));
        out.push(b'}');
        let set: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            set,
            json!({"state": "active", "activeMissionId": "m\"1", "missionCount": 2})
        );
        assert!(!hero.write_changed(&hero.clone(), &mut Vec::new()));
    }
}
