//! The drift report: which hook events and input fields a CLI sent that hooklog does not know.
//! At the pinned versions there must be none (a test fails); with `HOOKLOG_AGENTS_DRIFT=1`
//! (`.ci/agents-drift`, against `@latest`) they are printed instead, with the versions tested,
//! so a rename in a new release is seen before users see it.

use super::{Rig, version};
use hooklog::event::catalogue;
use hooklog::ingest::hook;
use std::collections::BTreeSet;
use std::path::Path;

/// Hook input fields hooklog knows under their own names (it reads them, or keeps them as
/// sent), besides the camelCase names its aliases give (`ingest::hook::ALIASES`): every field
/// Claude Code 2.1.197 and Codex 0.171.0 were seen to send is one or the other.
const OWN_NAMES: &[&str] = &[
    // Both CLIs.
    "cwd",
    "hookEventName",
    "eventName",
    "model",
    "source",
    "prompt",
    "tool",
    "toolInput",
    "toolResponse",
    "stopHookActive",
    "reason",
    "cli",
    // Claude Code; the snake_case ones have no alias, and are kept as sent.
    "effort",
    "error",
    "prompt_id",
    "duration_ms",
    "is_interrupt",
    "background_tasks",
    "session_crons",
];

/// Whether hooklog knows a field of a stored hook payload.
fn known(field: &str) -> bool {
    hook::ALIASES.iter().any(|alias| alias.1 == field) || OWN_NAMES.contains(&field)
}

/// Whether this run reports drift instead of failing on it.
fn reporting() -> bool {
    std::env::var("HOOKLOG_AGENTS_DRIFT").is_ok_and(|v| v == "1")
}

/// Reads every hook event the rig stored and checks its name and fields against what hooklog
/// knows; see the module's doc for what happens to the unknown ones.
pub async fn check(rig: &Rig, cli: &Path) {
    let db = rig.db();
    let mut rows = db
        .prepare("SELECT type, payload FROM events_whole WHERE source = 'hook'")
        .unwrap();
    let (mut events, mut fields) = (BTreeSet::new(), BTreeSet::new());
    let mut seen = BTreeSet::new();
    for row in rows
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
    {
        let (kind, payload) = row.unwrap();
        seen.insert(kind.clone());
        if !catalogue::is_known(&kind) {
            events.insert(kind.clone());
        }
        let payload: serde_json::Value = serde_json::from_str(&payload).unwrap();
        for key in payload.as_object().into_iter().flat_map(|o| o.keys()) {
            if !known(key) {
                fields.insert(format!("{kind}.{key}"));
            }
        }
    }
    let version = version(cli);
    println!("AGENTS: {version}: hook events seen: {seen:?}");
    if reporting() {
        println!("DRIFT: {version}: events hooklog does not know: {events:?}");
        println!("DRIFT: {version}: fields hooklog does not know: {fields:?}");
        return;
    }
    assert!(
        events.is_empty(),
        "{version} sent unknown events {events:?}"
    );
    assert!(
        fields.is_empty(),
        "{version} sent unknown fields {fields:?}"
    );
}
