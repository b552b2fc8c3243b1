//! A search: the [`Query`], its [`Order`] and [`Cursor`], the [`Page`] of [`Hit`]s it
//! answers with, and [`search`], which picks the plan that runs it.

use super::plans::{in_session, newest, ranked, small_session};
use rusqlite::Connection;
use serde::Serialize;

/// How hits are ordered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Order {
    /// Highest sequence first.
    Newest,
    /// Best BM25 score first among the newest matches (`rank.rs`), then newest.
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
    /// The BM25 score negated (lower is better), when ordered by rank.
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

/// Whether `e` is FTS5 refusing the query expression (a syntax error, an unknown column), not
/// the database failing.
pub fn is_query_error(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, Some(_))
        if f.extended_code == rusqlite::ffi::SQLITE_ERROR)
}
