//! Full-text search over the log (`migrations/0013_search.sql`): the text a person would
//! search in each event, in `search_text` (one row per event that has any, keyed by its
//! sequence), and the FTS5 index `search` over it.
//!
//! It is a projection like the others, with one difference in where it is written: the
//! writer indexes each event it appends, in the event's transaction ([`index`]); a rebuild
//! (and the migration that adds it) indexes the whole retained log at once ([`reindex`]);
//! retention deletes a pruned event's row ([`prune`]). Applying events to the retention
//! snapshot or to a scratch database (`projection::apply`) does not touch it: the index
//! holds the retained events only, and has no snapshot twin.
//!
//! What is searchable ([`text_of`]): the string values of the fields in [`TEXT_KEYS`] found
//! anywhere in the payload (a prompt, a tool's name, a message, a reason, ...), every string
//! inside the fields in [`DOCUMENTS`] (a tool's whole input and response: commands, file
//! paths, patterns, URLs, outputs), and for coordination outcomes the fields in
//! [`COORDINATION_KEYS`] (the chat, the session that claimed it, the outcome). Each string is
//! cut at [`MAX_STRING_CHARS`] characters (the bound hook ingest already applies inside tool
//! inputs and responses), and an event's text at [`MAX_TEXT_BYTES`].

use super::{Parsed, sql};
use crate::event::StoredEvent;
use crate::store::read;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::{Map, Value};

/// Fields whose string value is searchable wherever they are in a payload: camelCase as
/// `/event` stores hook bodies, and snake_case as hooks send them (an import may keep those).
pub const TEXT_KEYS: &[&str] = &[
    "prompt",
    "tool",
    "toolName",
    "tool_name",
    "command",
    "filePath",
    "file_path",
    "url",
    "query",
    "pattern",
    "error",
    "message",
    "lastAssistantMessage",
    "last_assistant_message",
    "reason",
    "description",
    "title",
    "summary",
    "text",
    "content",
    "name",
    "phaseName",
    "agentType",
    "agent_type",
    "subagentType",
    "subagent_type",
    "taskSubject",
    "task_subject",
    "taskDescription",
    "task_description",
    "teammateName",
    "teammate_name",
    "compactSummary",
    "compact_summary",
    "customInstructions",
    "custom_instructions",
    "inputPreview",
    "input_preview",
    "toolSummary",
    "tool_summary",
    "preview",
    "rationale",
    "detail",
    "response",
    "output",
    "result",
];

/// Fields every string inside of which is searchable: a tool's input and its response (a
/// command, a file path and its content, a patch, an output, a list of file names).
pub const DOCUMENTS: &[&str] = &[
    "toolInput",
    "tool_input",
    "toolResponse",
    "tool_response",
    "toolCalls",
    "tool_calls",
];

/// More searchable fields of coordination outcomes (`source` `coordination`): who claimed
/// which chat and how it ended, which account a watcher or a gap is for.
pub const COORDINATION_KEYS: &[&str] = &[
    "chat",
    "sessionId",
    "outcome",
    "platform",
    "account",
    "hostname",
];

/// Sources whose events are never indexed: `bench`, the load generators' log-only path
/// (docs/performance.md), which stays the log alone.
pub const UNINDEXED_SOURCES: &[&str] = &["bench"];

/// The most characters one string contributes.
pub const MAX_STRING_CHARS: usize = crate::ingest::bounds::NESTED_STRING_CHARS;
/// The most bytes of text one event has in the index.
pub const MAX_TEXT_BYTES: usize = 32 * 1024;
/// How deep into a payload's objects and lists searchable fields are looked for.
const MAX_DEPTH: usize = 8;

/// What marks a matched term in the snippets FTS5 makes (control characters, which
/// [`text_of`] never stores).
const OPEN: char = '\u{1}';
const CLOSE: char = '\u{2}';

/// The searchable text of an event (its fields one per line), or `None` when it has none.
/// `parsed` must be `Parsed::of(event)`.
pub fn text_of(event: &StoredEvent, parsed: &Parsed) -> Option<String> {
    if UNINDEXED_SOURCES.contains(&event.source.as_str()) {
        return None;
    }
    let mut text = Text::default();
    match parsed {
        Parsed::Hook(view) | Parsed::Normalized(view) | Parsed::Transcript(view) => {
            text.walk(view.fields(), &[], 0)
        }
        Parsed::Coordination(view) => text.walk(view.fields(), COORDINATION_KEYS, 0),
        Parsed::Factory(parts) => {
            text.walk(&parts.context, &[], 0);
            text.walk(&parts.payload, &[], 0);
        }
        Parsed::Other => {
            if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&event.payload) {
                text.walk(&map, &[], 0);
            }
        }
    }
    (!text.out.is_empty()).then_some(text.out)
}

/// An event's text as it is collected.
#[derive(Default)]
struct Text {
    out: String,
    full: bool,
}

impl Text {
    /// Takes the searchable fields of `map` (and `extra` ones), looking into the rest.
    fn walk(&mut self, map: &Map<String, Value>, extra: &[&str], depth: usize) {
        for (key, value) in map {
            if self.full {
                return;
            }
            if DOCUMENTS.contains(&key.as_str()) {
                self.all(value, depth);
            } else if TEXT_KEYS.contains(&key.as_str()) || extra.contains(&key.as_str()) {
                match value {
                    Value::String(s) => self.push(s),
                    // `content: [{"type": "text", "text": ...}]` and the like.
                    other => self.all(other, depth),
                }
            } else if depth < MAX_DEPTH {
                match value {
                    Value::Object(inner) => self.walk(inner, &[], depth + 1),
                    Value::Array(items) => {
                        for item in items {
                            if let Value::Object(inner) = item {
                                self.walk(inner, &[], depth + 1);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Takes every string inside `value`.
    fn all(&mut self, value: &Value, depth: usize) {
        if self.full || depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::String(s) => self.push(s),
            Value::Array(items) => items.iter().for_each(|v| self.all(v, depth + 1)),
            Value::Object(fields) => fields.values().for_each(|v| self.all(v, depth + 1)),
            _ => {}
        }
    }

    /// Appends one string on a line of its own: control characters become spaces, at most
    /// [`MAX_STRING_CHARS`] characters, and nothing past [`MAX_TEXT_BYTES`].
    fn push(&mut self, s: &str) {
        let s = s.trim();
        if s.is_empty() || self.full {
            return;
        }
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        for (n, c) in s.chars().enumerate() {
            if n == MAX_STRING_CHARS {
                break;
            }
            if self.out.len() + c.len_utf8() > MAX_TEXT_BYTES {
                self.full = true;
                break;
            }
            self.out
                .push(if c.is_control() && c != '\n' { ' ' } else { c });
        }
    }
}

/// Indexes one event just appended (the writer, in the event's transaction).
pub fn index(conn: &Connection, event: &StoredEvent, parsed: &Parsed) -> rusqlite::Result<()> {
    let Some(text) = text_of(event, parsed) else {
        return Ok(());
    };
    insert_text(conn, event.sequence, &text)?;
    sql::prepare(conn, "INSERT INTO search (rowid, text) VALUES (?1, ?2)")?
        .execute(params![event.sequence, text])?;
    Ok(())
}

fn insert_text(conn: &Connection, sequence: i64, text: &str) -> rusqlite::Result<()> {
    sql::prepare(
        conn,
        "INSERT INTO search_text (sequence, text) VALUES (?1, ?2)",
    )?
    .execute(params![sequence, text])?;
    Ok(())
}

/// Makes the index again from the events in the log: every row's text, then the FTS5 index
/// over them in one pass. Returns the rows written. Runs inside the caller's transaction.
pub fn reindex(conn: &Connection) -> rusqlite::Result<u64> {
    sql::prepare(conn, "DELETE FROM search_text")?.execute([])?;
    let mut rows = 0;
    let mut events = sql::prepare(
        conn,
        &format!(
            "SELECT {} FROM events ORDER BY sequence",
            read::EVENT_COLUMNS
        ),
    )?;
    let mut events = events.query([])?;
    while let Some(row) = events.next()? {
        let event = read::stored_event(row)?;
        if let Some(text) = text_of(&event, &Parsed::of(&event)) {
            insert_text(conn, event.sequence, &text)?;
            rows += 1;
        }
    }
    // 'rebuild' empties the index and reads every row of search_text into it.
    sql::prepare(conn, "INSERT INTO search (search) VALUES ('rebuild')")?.execute([])?;
    Ok(rows)
}

/// Deletes the rows of the events up to `through` (retention, in the transaction that prunes
/// them): their terms from the index first, which reads their text, then the text.
pub fn prune(conn: &Connection, through: i64) -> rusqlite::Result<()> {
    sql::prepare(
        conn,
        "INSERT INTO search (search, rowid, text)
         SELECT 'delete', sequence, text FROM search_text WHERE sequence <= ?1",
    )?
    .execute([through])?;
    sql::prepare(conn, "DELETE FROM search_text WHERE sequence <= ?1")?.execute([through])?;
    Ok(())
}

/// Whether the FTS5 index holds exactly the terms of `search_text` (FTS5's own
/// `integrity-check`, which reads every row): `Some(why)` when it does not.
pub fn check(conn: &Connection) -> rusqlite::Result<Option<String>> {
    match sql::prepare(
        conn,
        "INSERT INTO search (search, rank) VALUES ('integrity-check', 1)",
    )?
    .execute([])
    {
        Ok(_) => Ok(None),
        Err(rusqlite::Error::SqliteFailure(e, message))
            if e.code == rusqlite::ErrorCode::DatabaseCorrupt =>
        {
            Ok(Some(message.unwrap_or_else(|| e.to_string())))
        }
        Err(e) => Err(e),
    }
}

/// The rows of `search_text` as [`super::snapshot`] shows every projection's, so `rebuild
/// --check` compares them too.
pub fn snapshot(conn: &Connection, out: &mut Vec<String>) -> rusqlite::Result<()> {
    let mut statement = sql::prepare(conn, "SELECT sequence, text FROM search_text ORDER BY 1")?;
    let rows = statement.query_map([], |r| {
        Ok(format!(
            "search_text: {} | '{}'",
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?
        ))
    })?;
    for row in rows {
        out.push(row?);
    }
    Ok(())
}

/// The FTS5 expression for what a person typed: each word a quoted term (so `"`, `*`, `:`,
/// `-`, `AND` and the like are text, never syntax), all of them required; a part in double
/// quotes is a phrase; a word ending in `*` is a prefix. A lone `"` is ignored. Words without
/// a letter or digit (which the tokenizer would drop) are left out, so the expression is empty
/// when nothing searchable was typed.
pub fn words_to_fts(input: &str) -> String {
    let mut terms: Vec<String> = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('"') {
            match after.find('"') {
                Some(end) => {
                    terms.extend(quoted(&after[..end], false));
                    rest = &after[end + 1..];
                }
                // A quote that is never closed: the words after it, as words.
                None => rest = after,
            }
            continue;
        }
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '"')
            .unwrap_or(rest.len());
        let word = &rest[..end];
        let (word, prefix) = match word.trim_end_matches('*') {
            trimmed if trimmed.len() < word.len() => (trimmed, true),
            _ => (word, false),
        };
        terms.extend(quoted(word, prefix));
        rest = rest[end..].trim_start_matches(char::is_whitespace);
    }
    terms.join(" ")
}

/// `"text"` (a quote inside doubled), with `*` after it for a prefix; `None` without a letter
/// or digit.
fn quoted(text: &str, prefix: bool) -> Option<String> {
    if !text.chars().any(char::is_alphanumeric) {
        return None;
    }
    let star = if prefix { "*" } else { "" };
    Some(format!("\"{}\"{star}", text.replace('"', "\"\"")))
}

/// How hits are ordered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Order {
    /// Highest sequence first.
    Newest,
    /// Best bm25 score first (FTS5's `rank`), then newest.
    Rank,
}

/// Where a page starts: after the last hit of the page before.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cursor {
    /// Newest first: hits below this sequence.
    Before(i64),
    /// By rank: hits ranked after this (rank, sequence).
    After(f64, i64),
}

impl Cursor {
    /// The cursor as the API hands it out: `1234`, or `r:-3.25:1234` by rank.
    pub fn encode(&self) -> String {
        match self {
            Cursor::Before(sequence) => sequence.to_string(),
            Cursor::After(rank, sequence) => format!("r:{rank}:{sequence}"),
        }
    }

    pub fn decode(text: &str) -> Option<Cursor> {
        match text.strip_prefix("r:") {
            Some(rest) => {
                let (rank, sequence) = rest.rsplit_once(':')?;
                let rank: f64 = rank.parse().ok()?;
                rank.is_finite()
                    .then_some(Cursor::After(rank, sequence.parse().ok()?))
            }
            None => text.parse().ok().filter(|s| *s > 0).map(Cursor::Before),
        }
    }
}

/// A search: an FTS5 expression, filters on the event's own columns, an order and a page.
#[derive(Debug, Clone)]
pub struct Query {
    pub expression: String,
    pub session: Option<String>,
    pub event_type: Option<String>,
    pub source: Option<String>,
    /// The hooklog instance that first stored the event (its `origin`).
    pub origin: Option<String>,
    /// `event_time >= since` and `event_time < until`, in the log's time format.
    pub since: Option<String>,
    pub until: Option<String>,
    pub order: Order,
    pub limit: u32,
    pub cursor: Option<Cursor>,
}

/// One piece of a snippet: text, marked when it is a term the query matched.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Part {
    pub text: String,
    #[serde(rename = "match", skip_serializing_if = "std::ops::Not::not")]
    pub matched: bool,
}

/// An event the query matched.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub sequence: i64,
    pub id: String,
    pub session_id: Option<String>,
    pub session_sequence: Option<i64>,
    #[serde(rename = "type")]
    pub event_type: String,
    pub source: String,
    /// The hooklog instance that first stored the event.
    pub origin: String,
    pub event_time: String,
    /// Up to 16 words of the event's text around what matched, the matched terms marked;
    /// `…` where the text goes on.
    pub snippet: Vec<Part>,
    /// The bm25 score (lower is better), when ordered by rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<f64>,
}

/// A page of hits, and the cursor of the next one (`None`: this is the last).
pub struct Page {
    pub hits: Vec<Hit>,
    pub next: Option<Cursor>,
}

/// A session with at most this many events is searched from its own events (a probe of the
/// index for each, newest first) rather than from the index's matches.
pub const SESSION_PROBES: i64 = 2_000;

/// Runs `query`. Newest first, FTS5 walks the index backwards (or a small session's events)
/// and stops at a full page; by rank,
/// every match is scored. Then each hit's event and snippet. An empty expression matches
/// nothing. An FTS5 syntax error is the `Err` of [`is_query_error`].
pub fn search(conn: &Connection, query: &Query) -> rusqlite::Result<Page> {
    if query.expression.trim().is_empty() {
        return Ok(Page {
            hits: Vec::new(),
            next: None,
        });
    }
    match query.order {
        Order::Rank => ranked(conn, query),
        Order::Newest if small_session(conn, query)? => in_session(conn, query),
        Order::Newest => newest(conn, query),
    }
}

/// What a hit shows of its event, after its sequence and rank: selected with the match
/// itself when the plan walks in the page's order (no sort, so only the page's rows are
/// read and their snippets made).
const HIT_COLUMNS: &str = "e.event_id, e.session_id, e.session_sequence, e.type, e.source,
    e.origin, e.event_time, snippet(search, 0, char(1), char(2), '…', 16)";

/// A hit from a row of `sequence, rank,` [`HIT_COLUMNS`].
fn hit_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Hit> {
    Ok(Hit {
        sequence: r.get(0)?,
        rank: r.get(1)?,
        id: r.get(2)?,
        session_id: r.get(3)?,
        session_sequence: r.get(4)?,
        event_type: r.get(5)?,
        source: r.get(6)?,
        origin: r.get(7)?,
        event_time: r.get(8)?,
        snippet: parts(&r.get::<_, String>(9)?),
    })
}

/// The filters on the event's own columns, as SQL on `events e` (parameters 2 to 7).
fn filters(query: &Query) -> String {
    [
        (query.session.is_some(), " AND e.session_id = ?2"),
        (query.event_type.is_some(), " AND e.type = ?3"),
        (query.source.is_some(), " AND e.source = ?4"),
        (query.since.is_some(), " AND e.event_time >= ?5"),
        (query.until.is_some(), " AND e.event_time < ?6"),
        (query.origin.is_some(), " AND e.origin = ?7"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, clause)| *clause)
    .collect()
}

fn filtered(query: &Query) -> bool {
    query.session.is_some()
        || query.event_type.is_some()
        || query.source.is_some()
        || query.since.is_some()
        || query.until.is_some()
        || query.origin.is_some()
}

/// What a plan binds besides the query's parameters: a rank cursor (`?8`), an upper bound of
/// sequences (`?9`, exclusive) and the rows wanted (`?10`).
#[derive(Default)]
struct Bounds {
    rank: Option<f64>,
    below: Option<i64>,
    rows: i64,
}

/// Runs one of the statements below, each row read by `row`: parameters 1 to 7 are the
/// query's, 8 to 10 the plan's. Every one is bound, named in the statement or not, so one
/// statement text takes every value.
fn run<T>(
    conn: &Connection,
    sql: &str,
    query: &Query,
    bounds: Bounds,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    sql::prepare(conn, sql)?
        .query_map(
            params![
                query.expression,
                query.session,
                query.event_type,
                query.source,
                query.since,
                query.until,
                query.origin,
                bounds.rank,
                bounds.below,
                bounds.rows,
            ],
            row,
        )?
        .collect()
}

/// A page from `rows` (up to one more than the page): the page, and a cursor after its last
/// hit when there was one more.
fn paged(mut hits: Vec<Hit>, limit: usize) -> Page {
    if hits.len() <= limit {
        return Page { hits, next: None };
    }
    hits.truncate(limit);
    let next = hits.last().map(|last| match last.rank {
        Some(rank) => Cursor::After(rank, last.sequence),
        None => Cursor::Before(last.sequence),
    });
    Page { hits, next }
}

/// Newest first from the index, from the cursor (or the head) down, until the page is full.
fn newest(conn: &Connection, query: &Query) -> rusqlite::Result<Page> {
    let limit = query.limit as usize;
    let sql = format!(
        "SELECT search.rowid, NULL, {HIT_COLUMNS}
         FROM search JOIN events e ON e.sequence = search.rowid
         WHERE search MATCH ?1{} AND search.rowid < ?9
         ORDER BY search.rowid DESC LIMIT ?10",
        filters(query)
    );
    let below = match query.cursor {
        Some(Cursor::Before(sequence)) => sequence,
        _ => i64::MAX,
    };
    let bounds = Bounds {
        below: Some(below),
        rows: limit as i64 + 1,
        ..Bounds::default()
    };
    Ok(paged(run(conn, &sql, query, bounds, hit_row)?, limit))
}

/// Whether the query is for a session with at most [`SESSION_PROBES`] events.
fn small_session(conn: &Connection, query: &Query) -> rusqlite::Result<bool> {
    let Some(session) = &query.session else {
        return Ok(false);
    };
    let events: Option<i64> = sql::prepare(conn, "SELECT event_count FROM sessions WHERE id = ?1")?
        .query_row([session], |r| r.get(0))
        .optional()?;
    Ok(events.is_some_and(|n| n <= SESSION_PROBES))
}

/// Newest first from a session's own events, each looked up in the index.
fn in_session(conn: &Connection, query: &Query) -> rusqlite::Result<Page> {
    let limit = query.limit as usize;
    let mut sql = format!(
        "SELECT e.sequence, NULL, {HIT_COLUMNS}
         FROM events e CROSS JOIN search ON search.rowid = e.sequence
         WHERE search MATCH ?1{}",
        filters(query)
    );
    let below = match query.cursor {
        Some(Cursor::Before(sequence)) => {
            sql.push_str(" AND e.sequence < ?9");
            Some(sequence)
        }
        _ => None,
    };
    sql.push_str(" ORDER BY e.session_id DESC, e.session_sequence DESC LIMIT ?10");
    let bounds = Bounds {
        below,
        rows: limit as i64 + 1,
        ..Bounds::default()
    };
    Ok(paged(run(conn, &sql, query, bounds, hit_row)?, limit))
}

/// Best match first: every match scored (bm25), then newest first among equals.
/// The page is sorted after every match is scored, so its events and snippets are read after,
/// for the page's hits alone.
fn ranked(conn: &Connection, query: &Query) -> rusqlite::Result<Page> {
    let limit = query.limit as usize;
    let mut sql = String::from("SELECT search.rowid, search.rank FROM search");
    if filtered(query) {
        sql.push_str(" JOIN events e ON e.sequence = search.rowid");
    }
    sql.push_str(" WHERE search MATCH ?1");
    sql.push_str(&filters(query));
    let (rank, below) = match query.cursor {
        Some(Cursor::After(rank, sequence)) => {
            sql.push_str(" AND (search.rank > ?8 OR (search.rank = ?8 AND search.rowid < ?9))");
            (Some(rank), Some(sequence))
        }
        _ => (None, None),
    };
    sql.push_str(" ORDER BY search.rank, search.rowid DESC LIMIT ?10");
    let bounds = Bounds {
        rank,
        below,
        rows: limit as i64 + 1,
    };
    let found = run(conn, &sql, query, bounds, |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
    })?;
    let mut hits = Vec::with_capacity(found.len());
    for (sequence, rank) in found {
        if let Some(hit) = hit(conn, &query.expression, sequence, rank)? {
            hits.push(hit);
        }
    }
    Ok(paged(hits, limit))
}

/// The event at `sequence`, ranked `rank`, with its snippet for `expression`.
fn hit(
    conn: &Connection,
    expression: &str,
    sequence: i64,
    rank: f64,
) -> rusqlite::Result<Option<Hit>> {
    sql::prepare(
        conn,
        &format!(
            "SELECT search.rowid, ?3, {HIT_COLUMNS}
             FROM search JOIN events e ON e.sequence = search.rowid
             WHERE search MATCH ?1 AND search.rowid = ?2"
        ),
    )?
    .query_row(params![expression, sequence, rank], hit_row)
    .optional()
}

/// A snippet with FTS5's marks, as pieces.
fn parts(snippet: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut matched = false;
    for piece in snippet.split([OPEN, CLOSE]) {
        if !piece.is_empty() {
            parts.push(Part {
                text: piece.to_string(),
                matched,
            });
        }
        matched = !matched;
    }
    // `split` alternates only when marks alternate, which FTS5's do; a text that begins with
    // a match begins with an empty piece, skipped above but still flipping `matched`.
    parts
}

/// Whether `e` is FTS5 refusing the query expression (a syntax error, an unknown column), not
/// the database failing.
pub fn is_query_error(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, Some(_))
        if f.extended_code == rusqlite::ffi::SQLITE_ERROR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(source: &str, payload: &str) -> StoredEvent {
        StoredEvent {
            sequence: 1,
            event_id: "e1".into(),
            session_id: Some("s1".into()),
            session_sequence: Some(1),
            event_type: "PreToolUse".into(),
            source: source.into(),
            event_time: "2026-12-01T00:00:00.000Z".into(),
            received_at: "2026-12-01T00:00:00.000Z".into(),
            payload: payload.into(),
            origin: "here".into(),
        }
    }

    fn text(source: &str, payload: &str) -> Option<String> {
        let event = event(source, payload);
        text_of(&event, &Parsed::of(&event))
    }

    #[test]
    fn a_tool_use_gives_its_tool_and_every_string_of_its_input_and_response() {
        let payload = r#"{"cwd":"/home/dev","sessionId":"s1","tool":"Bash","toolInput":{"command":"cargo test","description":"Run"},
            "toolResponse":{"stdout":"ok","interrupted":false,"files":["a.rs","b.rs"]},"transcriptPath":"/t.jsonl"}"#;
        // In key order, as payloads are stored.
        assert_eq!(
            text("hook", payload).unwrap(),
            "Bash\ncargo test\nRun\na.rs\nb.rs\nok"
        );
        assert_eq!(text("hook", r#"{"sessionId":"s1","cwd":"/x"}"#), None);
    }

    #[test]
    fn coordination_outcomes_give_their_chat_and_session() {
        let payload = r#"{"chat":"dm:alice","sessionId":"s2","reason":"free","generation":3}"#;
        assert_eq!(text("coordination", payload).unwrap(), "dm:alice\nfree\ns2");
        // Elsewhere a session id is not text.
        assert_eq!(text("api", payload).unwrap(), "free");
    }

    #[test]
    fn nested_fields_count_and_control_characters_and_long_strings_are_cut() {
        let long = "x".repeat(MAX_STRING_CHARS + 10);
        let payload = serde_json::json!({"works": [{"name": "Review\u{1}guide"}], "message": long});
        let got = text("api", &payload.to_string()).unwrap();
        assert_eq!(got.lines().next(), Some(&*"x".repeat(MAX_STRING_CHARS)));
        assert_eq!(got.lines().nth(1), Some("Review guide"));
        let huge: Vec<String> = (0..20).map(|_| "y".repeat(5000)).collect();
        let payload = serde_json::json!({"toolInput": {"parts": huge}});
        assert!(text("hook", &payload.to_string()).unwrap().len() <= MAX_TEXT_BYTES);
    }

    #[test]
    fn typed_words_become_quoted_terms() {
        assert_eq!(words_to_fts("cargo test"), r#""cargo" "test""#);
        assert_eq!(words_to_fts("totals.rs"), r#""totals.rs""#);
        assert_eq!(
            words_to_fts(r#"say "hello there" rm -rf"#),
            r#""say" "hello there" "rm" "-rf""#
        );
        assert_eq!(words_to_fts(r#"it's a "stray"#), r#""it's" "a" "stray""#);
        assert_eq!(
            words_to_fts("tot* AND NEAR(x)"),
            r#""tot"* "AND" "NEAR(x)""#
        );
        assert_eq!(words_to_fts(r#"a"b"#), r#""a" "b""#);
        assert_eq!(words_to_fts(r#"-- * "" " "#), "");
        assert_eq!(words_to_fts("  "), "");
    }

    #[test]
    fn cursors_round_trip() {
        for cursor in [Cursor::Before(42), Cursor::After(-3.250_000_1e-6, 7)] {
            assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
        }
        for bad in ["", "x", "0", "-1", "r:nan:1", "r:1", "r:1:x"] {
            assert_eq!(Cursor::decode(bad), None, "{bad}");
        }
    }

    /// A log of `n` hook events in sessions `a` (odd sequences) and `b` (even), each saying
    /// "needle", projected and indexed as the writer would.
    fn log(n: i64) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        for sequence in 1..=n {
            let session = if sequence % 2 == 1 { "a" } else { "b" };
            let event = StoredEvent {
                sequence,
                event_id: format!("e{sequence}"),
                session_id: Some(session.into()),
                session_sequence: Some((sequence + 1) / 2),
                event_type: "PreToolUse".into(),
                source: "hook".into(),
                event_time: "2026-12-01T00:00:00.000Z".into(),
                received_at: "2026-12-01T00:00:00.000Z".into(),
                payload: format!(
                    r#"{{"tool":"Bash","toolInput":{{"command":"echo needle {sequence}"}}}}"#
                ),
                origin: "here".into(),
            };
            sql::prepare(
                &conn,
                "INSERT INTO events (sequence, event_id, session_id, session_sequence, type,
                     source, event_time, received_at, payload)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .unwrap()
            .execute(params![
                event.sequence,
                event.event_id,
                event.session_id,
                event.session_sequence,
                event.event_type,
                event.source,
                event.event_time,
                event.received_at,
                event.payload
            ])
            .unwrap();
            let parsed = Parsed::of(&event);
            super::super::apply_parsed(
                &super::super::tables::Live::new(&conn),
                &conn,
                &event,
                &parsed,
            )
            .unwrap();
            index(&conn, &event, &parsed).unwrap();
        }
        conn
    }

    fn query(q: &str) -> Query {
        Query {
            expression: words_to_fts(q),
            session: None,
            event_type: None,
            source: None,
            origin: None,
            since: None,
            until: None,
            order: Order::Newest,
            limit: 20,
            cursor: None,
        }
    }

    /// Every page of `query`, as the sequences of each.
    fn pages(conn: &Connection, mut query: Query) -> Vec<Vec<i64>> {
        let mut pages = Vec::new();
        loop {
            let page = search(conn, &query).unwrap();
            pages.push(page.hits.iter().map(|h| h.sequence).collect());
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => return pages,
            }
        }
    }

    #[test]
    fn pages_go_on_below_their_cursor_with_nothing_skipped_or_repeated() {
        let conn = log(10);
        let mut q = query("needle");
        q.limit = 4;
        assert_eq!(
            pages(&conn, q.clone()),
            [vec![10, 9, 8, 7], vec![6, 5, 4, 3], vec![2, 1]]
        );
        // A filter no match passes: one empty page.
        q.event_type = Some("PreToolUse".into());
        q.source = Some("nowhere".into());
        assert_eq!(pages(&conn, q), [Vec::<i64>::new()]);
    }

    #[test]
    fn a_small_session_is_searched_from_its_own_events_with_the_same_cursors() {
        let conn = log(12);
        let mut q = query("needle");
        q.session = Some("a".into());
        q.limit = 4;
        assert!(small_session(&conn, &q).unwrap());
        assert_eq!(pages(&conn, q.clone()), [vec![11, 9, 7, 5], vec![3, 1]]);
        q.session = Some("nobody".into());
        assert!(!small_session(&conn, &q).unwrap());
        assert_eq!(pages(&conn, q.clone()), [Vec::<i64>::new()]);
        q.session = Some("b".into());
        q.order = Order::Rank;
        let ranked = pages(&conn, q);
        assert_eq!(ranked.concat().len(), 6, "{ranked:?}");
    }

    #[test]
    fn snippets_become_parts() {
        assert_eq!(
            parts("\u{1}cargo\u{2} test …"),
            vec![
                Part {
                    text: "cargo".into(),
                    matched: true
                },
                Part {
                    text: " test …".into(),
                    matched: false
                }
            ]
        );
    }
}
