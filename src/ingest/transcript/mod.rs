//! Transcripts: the JSONL files Claude Code and Codex CLI write for every session, read into
//! the log (source `transcript`). Each record that matters becomes one event with an id
//! derived from the record itself (a UUIDv5), so reading a file twice, or a file that grew,
//! appends only what is new. Pure: the callers read the files ([`claude`] and [`codex`] parse
//! one line each; [`in_order`] orders a session's records and marks their turns).
//!
//! What an event keeps by default ([`Keep::Metadata`]): the record's ids, model, usage, tool
//! names, and its text bounded as hook fields are (`prompt`, `response`); [`Keep::Full`] keeps
//! the whole message content. docs/usage.md says where each field comes from.

pub mod claude;
pub mod codex;

use crate::event::NewEvent;
use serde_json::{Map, Value, json};

/// The `source` of every event read from a transcript.
pub const SOURCE: &str = crate::event::Source::Transcript.as_str();

/// A person's prompt (Claude Code `user` text, Codex `user_message`): it opens a turn.
pub const PROMPT: &str = "TranscriptPrompt";
/// A model's message: its model, usage (Claude Code), text and tool calls.
pub const MESSAGE: &str = "TranscriptMessage";
/// Tool results handed back to the model (Claude Code `user` records of `tool_result`s).
pub const TOOL_RESULT: &str = "TranscriptToolResult";
/// Codex's token count after a model call (`event_msg` `token_count`).
pub const TOKEN_COUNT: &str = "TranscriptTokenCount";
/// How far the server has read a transcript a hook named (`follow`): appended with the
/// records that read found, its projection is `transcript_files`.
pub const READ: &str = "TranscriptRead";
/// A transcript a hook named that hooklog did not read (`follow::trust`): its path as named
/// and why.
pub const REFUSED: &str = "TranscriptRefused";
/// Every type a transcript event has (the catalogue knows them).
pub const EVENTS: &[&str] = &[PROMPT, MESSAGE, TOOL_RESULT, TOKEN_COUNT, READ, REFUSED];

/// The most characters of a tool result's error text kept (as a tool use's `error`).
pub const ERROR_CHARS: usize = 500;

/// The program that wrote a transcript (the payload's `cli`).
pub const CLAUDE_CODE: &str = "claude-code";
pub const CODEX: &str = "codex";

/// Namespace of the UUIDv5 event ids of transcript records (a fixed random UUID).
const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x5b1e_4c0e_9f6a_4d8b_a4f2_77c3_1e0d_9a61);

/// How much of a record's text is kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Keep {
    /// Ids, model, usage, tool names, and text bounded as hook fields are.
    #[default]
    Metadata,
    /// The whole conversation: every message's content as the transcript has it.
    Full,
}

/// Why a line became no event. Malformed lines are reported and skipped, never fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// Not JSON (a line cut short while it was written, or damaged).
    Malformed,
    /// JSON, but not an object.
    NotAnObject,
    /// A record with no session id (or, in a Codex rollout, before its `session_meta`).
    NoSession,
    /// A Claude Code record with no `uuid`: nothing to derive an id from.
    NoId,
    /// A kind of record hooklog does not keep (summaries, snapshots, progress, reasoning...).
    NotKept,
    /// A Codex token count without usage (`info: null`).
    NoUsage,
}

impl Skip {
    pub fn reason(self) -> &'static str {
        match self {
            Skip::Malformed => "not JSON (a truncated or damaged line)",
            Skip::NotAnObject => "not a JSON object",
            Skip::NoSession => "no session id",
            Skip::NoId => "no uuid to derive an event id from",
            Skip::NotKept => "a kind of record hooklog does not keep",
            Skip::NoUsage => "a token count without usage",
        }
    }

    /// Whether the line is damaged (reported one by one), rather than deliberately left out.
    pub fn is_error(self) -> bool {
        matches!(self, Skip::Malformed | Skip::NotAnObject)
    }
}

/// One record, read and not yet an event: [`in_order`] still marks its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub session_id: String,
    pub event_type: &'static str,
    /// The record's time, normalised; `None` when it had none (it then sorts first).
    pub event_time: Option<String>,
    /// What the event id derives from: unique per record, the same every time it is read.
    pub id_key: String,
    pub payload: Map<String, Value>,
}

impl Record {
    /// The event this record is: id `UUIDv5(namespace, id_key)`, source `transcript`.
    pub fn into_event(self) -> NewEvent {
        NewEvent {
            event_id: self.event_id(),
            generated_id: false,
            session_id: Some(self.session_id),
            event_type: self.event_type.to_string(),
            source: SOURCE.to_string(),
            event_time: self.event_time,
            received_at: None,
            origin: None,
            payload: Value::Object(self.payload).to_string(),
        }
    }

    /// The id its event has.
    pub fn event_id(&self) -> String {
        uuid::Uuid::new_v5(&NAMESPACE, self.id_key.as_bytes()).to_string()
    }

    /// A prompt of the main thread (not a subagent's, not a meta message) opens a turn.
    fn opens_turn(&self) -> bool {
        self.event_type == PROMPT
            && self.payload.get("agentId").is_none()
            && self.payload.get("isMeta") != Some(&Value::Bool(true))
    }
}

/// Puts records in time order (a stable sort: records of equal time keep their file order)
/// and marks each with its session's `turn`: the event id of the main-thread prompt at or
/// before it, subagents' records included, so a subagent's usage counts under the turn that
/// started it. Records before any prompt have no turn.
pub fn in_order(records: &mut [Record]) {
    in_order_from(records, Default::default());
}

/// [`in_order`], continuing turns already open (`turns`: session id to the turn's prompt), as a
/// read that starts inside a file does; returns each session's turn at the end.
pub fn in_order_from(
    records: &mut [Record],
    mut turns: std::collections::HashMap<String, String>,
) -> std::collections::HashMap<String, String> {
    records.sort_by(|a, b| a.event_time.cmp(&b.event_time));
    for record in records.iter_mut() {
        if record.opens_turn() {
            turns.insert(record.session_id.clone(), record.event_id());
        }
        if let Some(turn) = turns.get(&record.session_id) {
            record.payload.insert("turn".into(), json!(turn));
        }
    }
    turns
}

/// The event recording that the server read `path` up to byte `read_to` (a hook of `session`
/// named it), with the turn open at that point. Its id derives from the path and offset, so
/// the same read appended twice is one event.
pub fn read_marker(session: &str, path: &str, read_to: u64, turn: Option<&str>) -> NewEvent {
    let mut payload = Map::new();
    payload.insert("path".into(), json!(path));
    payload.insert("readTo".into(), json!(read_to));
    if let Some(turn) = turn {
        payload.insert("turn".into(), json!(turn));
    }
    Record {
        session_id: session.to_string(),
        event_type: READ,
        event_time: None,
        id_key: format!("read:{path}:{read_to}"),
        payload,
    }
    .into_event()
}

/// The `TranscriptRefused` event of a transcript not read: one per session, path and reason
/// (its id is made from them, so naming the file again in the session stores nothing new).
pub fn refused(session: &str, path: &str, reason: &str) -> NewEvent {
    let mut payload = Map::new();
    payload.insert("path".into(), json!(path));
    payload.insert("reason".into(), json!(reason));
    Record {
        session_id: session.to_string(),
        event_type: REFUSED,
        event_time: None,
        id_key: format!("refused:{session}:{path}:{reason}"),
        payload,
    }
    .into_event()
}

/// Token counts of one model call, as hooklog stores them whatever the program: input not
/// read from the cache, output (reasoning included), cache writes (5-minute and 1-hour) and
/// cache reads. `reasoning` is the part of `output` spent reasoning (Codex reports it).
/// Serialized with the names every answer and stored record uses (`inputTokens`, ...).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Usage {
    /// Input tokens not read from the cache.
    #[serde(rename = "inputTokens")]
    pub input: u64,
    /// Output tokens, reasoning included.
    #[serde(rename = "outputTokens")]
    pub output: u64,
    #[serde(rename = "cacheWrite5mTokens")]
    pub cache_write_5m: u64,
    #[serde(rename = "cacheWrite1hTokens")]
    pub cache_write_1h: u64,
    #[serde(rename = "cacheReadTokens")]
    pub cache_read: u64,
    /// The part of the output spent reasoning (Codex reports it).
    #[serde(rename = "reasoningTokens")]
    pub reasoning: u64,
}

impl Usage {
    pub fn to_json(self) -> Value {
        serde_json::to_value(self).expect("counts serialize")
    }

    /// The sum, count by count: the one place token counts are added.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_write_5m += other.cache_write_5m;
        self.cache_write_1h += other.cache_write_1h;
        self.cache_read += other.cache_read;
        self.reasoning += other.reasoning;
    }

    /// Reads [`Usage::to_json`] back (missing counts are 0).
    pub fn from_json(value: &Value) -> Usage {
        let n = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input: n("inputTokens"),
            output: n("outputTokens"),
            cache_write_5m: n("cacheWrite5mTokens"),
            cache_write_1h: n("cacheWrite1hTokens"),
            cache_read: n("cacheReadTokens"),
            reasoning: n("reasoningTokens"),
        }
    }
}

/// A line as a JSON object, or why it is not one.
fn object(line: &[u8]) -> Result<Map<String, Value>, Skip> {
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Skip::NotAnObject),
        Err(_) => Err(Skip::Malformed),
    }
}

/// A string field of `map`.
fn text<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

/// A count, reading absent or odd values as 0.
fn count(map: Option<&Value>, key: &str) -> u64 {
    map.and_then(|m| m.get(key))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(session: &str, kind: &'static str, time: &str, key: &str, agent: bool) -> Record {
        let mut payload = Map::new();
        if agent {
            payload.insert("agentId".into(), json!("a1"));
        }
        Record {
            session_id: session.into(),
            event_type: kind,
            event_time: Some(time.into()),
            id_key: key.into(),
            payload,
        }
    }

    #[test]
    fn records_sort_by_time_and_carry_the_main_threads_turn() {
        let mut records = vec![
            record("s", MESSAGE, "2026-01-01T00:00:03.000Z", "m2", true),
            record("s", PROMPT, "2026-01-01T00:00:01.000Z", "p1", false),
            record("s", MESSAGE, "2026-01-01T00:00:00.000Z", "m0", false),
            record("s", PROMPT, "2026-01-01T00:00:02.000Z", "sub-prompt", true),
            record("t", MESSAGE, "2026-01-01T00:00:04.000Z", "t1", false),
        ];
        in_order(&mut records);
        let keys: Vec<_> = records.iter().map(|r| r.id_key.as_str()).collect();
        assert_eq!(keys, ["m0", "p1", "sub-prompt", "m2", "t1"]);
        let p1 = records[1].event_id();
        let turns: Vec<_> = records.iter().map(|r| text(&r.payload, "turn")).collect();
        let p1 = Some(p1.as_str());
        assert_eq!(turns, [None, p1, p1, p1, None]);
    }

    #[test]
    fn the_catalogue_knows_every_transcript_type() {
        assert_eq!(EVENTS, crate::event::catalogue::TRANSCRIPT_EVENTS);
        for kind in EVENTS {
            assert_eq!(crate::event::catalogue::family(kind), "transcript");
        }
    }

    #[test]
    fn an_event_id_is_the_same_every_time_and_differs_per_record() {
        let a = record("s", PROMPT, "2026-01-01T00:00:01.000Z", "k1", false);
        let b = record("s", PROMPT, "2026-01-01T00:00:01.000Z", "k2", false);
        assert_eq!(
            a.clone().into_event().event_id,
            a.clone().into_event().event_id
        );
        assert_ne!(a.clone().into_event().event_id, b.into_event().event_id);
        let event = a.into_event();
        assert_eq!(event.source, SOURCE);
        assert!(!event.generated_id);
        assert_eq!(
            uuid::Uuid::parse_str(&event.event_id)
                .unwrap()
                .get_version_num(),
            5
        );
    }
}
