//! Realistic agent sessions for `bench ingest --scenario hooks`: the raw hook bodies of
//! `fixtures/hooks/` (a Claude Code session and a Codex one), each session given a fresh
//! session id, and each turn of it fresh tool use and subagent ids, so Pre and Post of one call
//! share an id no other call has.
//!
//! A Claude Code session is its `SessionStart`, its first turn (prompt, Bash, a Task with an
//! Explore subagent that greps, an Edit behind a permission request, a failed Write, Bash,
//! `Stop`) played `turns` times, then the fixture's end (a prompt, an auto compact, Bash,
//! `Stop`, `SessionEnd`). A Codex session (one in four) is its `SessionStart` and its turn
//! (prompt, Bash and apply_patch calls, a permission request, a subagent, `Stop`) played
//! `turns` times, then a `SessionEnd`: the fixture (seed 000's lifecycle) stops at `Stop`, but
//! the Codex CLI ends its sessions so (docs/hooks.md), and a session never ended stays live.
//!
//! The ids have the shapes the agents send, since they are a good part of each event's bytes:
//! a session id is a UUID (36 characters, as Claude Code's and Codex's are), a Claude tool use
//! id `toolu_` and 24 characters (as the Messages API's), a Codex call id `call_` and 24.
//! Subagent ids keep the fixture's with the session's number and turn appended.
//!
//! One session in twenty (a Claude Code one) is killed in its last turn and posts nothing more
//! (no `Stop`, no `SessionEnd`), as an agent whose terminal was closed or whose process was
//! killed: half of them with their subagent's grep done and the `Task` that spawned it still
//! running, half at the permission prompt for their `Edit` (the request stays pending: no hook
//! is left to expire it). Their sessions, heroes, missions, calls and requests stay live for
//! good, so a long log holds more of them the longer it is, as a user's does.

use std::sync::LazyLock;

const CLAUDE: &str = include_str!("../../fixtures/hooks/claude-code-session.ndjson");
const CODEX: &str = include_str!("../../fixtures/hooks/codex-lifecycle.ndjson");

/// One fixture as templates: the hook bodies, with the ids a fresh session replaces.
struct Template {
    lines: Vec<Line>,
    /// Where the repeated turn is (`lines[turn]`), the rest being the start and the end.
    turn: std::ops::Range<usize>,
    session_id: String,
    /// The tool use ids and subagent ids of the fixture, each made fresh per turn.
    call_ids: Vec<String>,
}

struct Line {
    event_type: String,
    body: String,
}

impl Template {
    fn parse(text: &str, turn: std::ops::Range<usize>) -> Template {
        let mut call_ids: Vec<String> = Vec::new();
        let mut session_id = String::new();
        let lines = text
            .lines()
            .map(|body| {
                let v: serde_json::Value = serde_json::from_str(body).expect("fixture line");
                session_id = v["session_id"].as_str().expect("session_id").to_string();
                for key in ["tool_use_id", "agent_id"] {
                    if let Some(id) = v[key].as_str()
                        && !call_ids.iter().any(|c| c == id)
                    {
                        call_ids.push(id.to_string());
                    }
                }
                Line {
                    event_type: v["hook_event_name"].as_str().expect("name").to_string(),
                    body: body.to_string(),
                }
            })
            .collect();
        // Longest first: where two start at the same place, the longer is the id there.
        call_ids.sort_by_key(|id| std::cmp::Reverse(id.len()));
        Template {
            lines,
            turn,
            session_id,
            call_ids,
        }
    }

    /// How many events a session of `turns` turns posts.
    fn len(&self, turns: usize) -> usize {
        self.lines.len() + self.turn.len() * turns.saturating_sub(1)
    }

    /// The line at `step` of a session of `turns` turns, and the turn it belongs to.
    fn line(&'static self, step: usize, turns: usize) -> (&'static Line, usize) {
        let start = self.turn.start;
        let per_turn = self.turn.len();
        if step < start {
            return (&self.lines[step], 0);
        }
        let in_turns = step - start;
        if in_turns < per_turn * turns {
            return (
                &self.lines[start + in_turns % per_turn],
                in_turns / per_turn,
            );
        }
        let tail = self.turn.end + (in_turns - per_turn * turns);
        (&self.lines[tail], turns)
    }
}

static CLAUDE_TEMPLATE: LazyLock<Template> = LazyLock::new(|| Template::parse(CLAUDE, 1..19));
static CODEX_TEMPLATE: LazyLock<Template> = LazyLock::new(|| {
    let first: serde_json::Value =
        serde_json::from_str(CODEX.lines().next().expect("a line")).expect("fixture line");
    // Codex 0.171's `SessionEnd` body (docs/hooks.md).
    let end = serde_json::json!({
        "session_id": first["session_id"],
        "transcript_path": first["transcript_path"],
        "cwd": first["cwd"],
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    });
    Template::parse(&format!("{}\n{end}", CODEX.trim_end()), 1..8)
});

/// One hook event of a session: its type and raw body.
pub struct HookEvent {
    pub event_type: &'static str,
    pub session_id: String,
    pub body: String,
}

/// A session being played: which fixture, its id, and how far it has got.
pub struct Session {
    template: &'static Template,
    number: usize,
    id: String,
    turns: usize,
    step: usize,
    /// How many events it posts: all of them, or (killed) fewer.
    len: usize,
}

/// One session in this many is killed (see the module's documentation).
pub const KILLED_EVERY: usize = 20;
/// The events of its last turn a killed session posts: the prompt, a Bash call, the `Task` call's
/// `PreToolUse`, its subagent's start and its grep; or, one in two, all that and the rest of the
/// subagent's work, then the `Edit` call, its `PermissionRequest` and the `Notification` that it
/// waits.
const KILLED_AFTER: [usize; 2] = [7, 12];

impl Session {
    /// The `number`th session of a run whose sessions are `turns` turns long; every fourth is
    /// a Codex session. `run` keeps the ids of two runs on one database apart.
    pub fn new(run: &str, number: usize, turns: usize) -> Session {
        let template: &'static Template = match number % 4 {
            3 => &CODEX_TEMPLATE,
            _ => &CLAUDE_TEMPLATE,
        };
        let turns = turns.max(1);
        let killed = (number % KILLED_EVERY == KILLED_EVERY / 2)
            .then(|| KILLED_AFTER[number / KILLED_EVERY % 2]);
        let len = match killed {
            Some(after) => template.turn.start + template.turn.len() * (turns - 1) + after,
            None => template.len(turns),
        };
        Session {
            template,
            number,
            id: session_id(run, number),
            turns,
            step: 0,
            len,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's next hook event, `None` once it has ended.
    pub fn next_event(&mut self) -> Option<HookEvent> {
        if self.step >= self.len {
            return None;
        }
        let (line, turn) = self.template.line(self.step, self.turns);
        self.step += 1;
        let body = line.body.replace(&self.template.session_id, &self.id);
        let body = fresh_calls(&body, &self.template.call_ids, self.number, turn);
        Some(HookEvent {
            event_type: &line.event_type,
            session_id: self.id.clone(),
            body,
        })
    }
}

/// The `number`th session id of `run`: a UUID, distinct for each run and number.
fn session_id(run: &str, number: usize) -> String {
    // FNV-1a: a stable hash of the run's name, so two runs on one database differ.
    let run = run.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!(
        "{:08x}-{:04x}-4e9a-a5c6-{number:012x}",
        run >> 32,
        (run >> 16) & 0xffff
    )
}

/// `body` with each of the fixture's call ids made fresh ([`call_id`]), in one pass, so a
/// fresh id is never rewritten again (it holds its fixture id).
fn fresh_calls(body: &str, calls: &[String], number: usize, turn: usize) -> String {
    let mut out = String::with_capacity(body.len() + 64);
    let mut rest = body;
    // The first call id in what is left (the longest of those starting there).
    while let Some((at, call)) = calls
        .iter()
        .filter_map(|call| rest.find(call.as_str()).map(|at| (at, call)))
        .min_by_key(|(at, call)| (*at, std::cmp::Reverse(call.len())))
    {
        out.push_str(&rest[..at]);
        out.push_str(&call_id(call, number, turn));
        rest = &rest[at + call.len()..];
    }
    out.push_str(rest);
    out
}

/// The fixture's call id `call` made fresh for a session's turn, as long as the agent's own:
/// `toolu_` and 24 characters for Claude Code, `call_` and 24 for Codex. The padding goes
/// before the session's number and turn, so no two of them give the same id.
fn call_id(call: &str, number: usize, turn: usize) -> String {
    let fresh = format!("_{number:07}_{turn:03}");
    let length: usize = if call.starts_with("toolu_") {
        30
    } else if call.starts_with("call_") {
        29
    } else {
        0
    };
    let pad = length.saturating_sub(call.len() + fresh.len());
    format!("{call}{}{fresh}", "0".repeat(pad))
}

impl HookEvent {
    /// The same event as a canonical envelope for `POST /events` with source `bench`, which
    /// no projection but `sessions` reads: the log-only path.
    pub fn envelope(&self) -> String {
        self.envelope_from("bench")
    }

    /// The same event as a canonical envelope of `source`: `hook` makes `POST /events` apply
    /// every hook projection to it, as `/event` would (`bench search` builds its log so, in
    /// batches).
    pub fn envelope_from(&self, source: &str) -> String {
        format!(
            r#"{{"type":"{}","sessionId":"{}","source":"{source}","payload":{}}}"#,
            self.event_type, self.session_id, self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn events(session: &mut Session) -> Vec<serde_json::Value> {
        std::iter::from_fn(|| session.next_event())
            .map(|e| serde_json::from_str(&e.body).expect("json"))
            .collect()
    }

    #[test]
    fn a_claude_session_repeats_its_turn_with_fresh_call_ids() {
        let played = events(&mut Session::new("run", 0, 3));
        let fixture = CLAUDE.lines().count();
        assert_eq!(played.len(), fixture + 2 * 18);
        let names: Vec<&str> = played
            .iter()
            .map(|v| v["hook_event_name"].as_str().unwrap())
            .collect();
        assert_eq!(names[0], "SessionStart");
        assert_eq!(names.last(), Some(&"SessionEnd"));
        assert_eq!(names.iter().filter(|n| **n == "Stop").count(), 4);
        // Every call id is opened by one PreToolUse and ended at most once.
        let mut opened: HashMap<&str, usize> = HashMap::new();
        for v in &played {
            let session = v["session_id"].as_str().unwrap();
            assert_eq!(session, played[0]["session_id"]);
            assert!(uuid::Uuid::parse_str(session).is_ok(), "{session}");
            if v["hook_event_name"] == "PreToolUse" {
                let call = v["tool_use_id"].as_str().unwrap();
                assert!(call.starts_with("toolu_") && call.len() == 30, "{call}");
                *opened.entry(call).or_default() += 1;
            }
        }
        assert_eq!(opened.len(), 7 + 2 * 6);
        assert!(opened.values().all(|n| *n == 1));
    }

    /// Every call of a long session is its own, past the turns where the turn's number grows
    /// a digit.
    #[test]
    fn call_ids_stay_distinct_over_thousands_of_turns() {
        let mut seen = std::collections::HashSet::new();
        let mut session = Session::new("run", 0, 10_050);
        while let Some(event) = session.next_event() {
            if event.event_type == "PreToolUse" {
                let v: serde_json::Value = serde_json::from_str(&event.body).unwrap();
                let call = v["tool_use_id"].as_str().unwrap().to_string();
                assert!(call.len() >= 30, "{call}");
                assert!(seen.insert(call.clone()), "{call} twice");
            }
        }
        assert_eq!(seen.len(), 7 + 10_049 * 6);
    }

    #[test]
    fn every_fourth_session_is_codex_and_each_has_its_own_id() {
        let codex = events(&mut Session::new("run", 3, 2));
        assert_eq!(codex.len(), 9 + 7);
        assert_eq!(codex.last().unwrap()["hook_event_name"], "SessionEnd");
        assert_eq!(codex.last().unwrap()["session_id"], codex[0]["session_id"]);
        assert!(codex[1]["turn_id"].is_string());
        let calls: Vec<&str> = codex
            .iter()
            .filter_map(|v| v["tool_use_id"].as_str())
            .collect();
        assert!(!calls.is_empty());
        assert!(
            calls
                .iter()
                .all(|c| c.starts_with("call_") && c.len() == 29)
        );
        let a = Session::new("run", 1, 2);
        let b = Session::new("run", 2, 2);
        assert_ne!(a.id(), b.id());
        assert_ne!(Session::new("other run", 1, 2).id(), a.id());
    }

    /// A killed session stops in its last turn, its `Task` call and subagent open, or (one in
    /// two) waiting at a permission prompt.
    #[test]
    fn one_session_in_twenty_is_killed_in_its_last_turn() {
        let killed = events(&mut Session::new("run", KILLED_EVERY / 2, 3));
        assert_eq!(killed.len(), 1 + 2 * 18 + KILLED_AFTER[0]);
        let names: Vec<&str> = killed
            .iter()
            .map(|v| v["hook_event_name"].as_str().unwrap())
            .collect();
        assert_eq!(names.iter().filter(|n| **n == "Stop").count(), 2);
        assert!(!names.contains(&"SessionEnd"));
        assert_eq!(
            names[names.len() - 4..],
            ["PreToolUse", "SubagentStart", "PreToolUse", "PostToolUse"]
        );
        assert_eq!(killed[killed.len() - 4]["tool_name"], "Task");
        let waiting = events(&mut Session::new("run", KILLED_EVERY + KILLED_EVERY / 2, 3));
        assert_eq!(waiting.len(), 1 + 2 * 18 + KILLED_AFTER[1]);
        let last: Vec<&str> = waiting[waiting.len() - 3..]
            .iter()
            .map(|v| v["hook_event_name"].as_str().unwrap())
            .collect();
        assert_eq!(last, ["PreToolUse", "PermissionRequest", "Notification"]);
        let whole = (0..KILLED_EVERY)
            .filter(|n| *n != KILLED_EVERY / 2)
            .all(|n| {
                let played = events(&mut Session::new("run", n, 2));
                played.last().unwrap()["hook_event_name"] == "SessionEnd"
            });
        assert!(whole);
    }

    #[test]
    fn the_envelope_wraps_the_body_as_its_payload() {
        let event = Session::new("run", 0, 1).next_event().unwrap();
        let envelope: serde_json::Value = serde_json::from_str(&event.envelope()).unwrap();
        assert_eq!(envelope["type"], "SessionStart");
        assert_eq!(envelope["source"], "bench");
        assert_eq!(
            envelope["payload"],
            serde_json::from_str::<serde_json::Value>(&event.body).unwrap()
        );
    }
}
