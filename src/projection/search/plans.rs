//! The statements a search runs (newest first from the index, newest first from a small
//! session's own events, or by rank), their shared filters and bounds, and how a row becomes a
//! [`Hit`] with its snippet in [`Part`]s.

use super::{Cursor, Hit, Page, Part, Query, SESSION_PROBES, rank};
use rusqlite::{Connection, OptionalExtension, params};

/// What marks a matched term in the snippets FTS5 makes (control characters, which
/// [`text_of`](super::text_of) never stores).
const OPEN: char = '\u{1}';
const CLOSE: char = '\u{2}';

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

/// What a plan binds besides the query's parameters: an upper bound of sequences (`?8`,
/// exclusive) and the rows wanted (`?9`).
#[derive(Default)]
struct Bounds {
    below: Option<i64>,
    rows: i64,
}

/// Runs one of the statements below, each row read by `row`: parameters 1 to 7 are the
/// query's, 8 and 9 the plan's. Every one is bound, named in the statement or not, so one
/// statement text takes every value.
fn run<T>(
    conn: &Connection,
    sql: &str,
    query: &Query,
    bounds: Bounds,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    conn.prepare_cached(sql)?
        .query_map(
            params![
                query.expression,
                query.session,
                query.event_type,
                query.source,
                query.since,
                query.until,
                query.origin,
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
pub(super) fn newest(conn: &Connection, query: &Query) -> rusqlite::Result<Page> {
    let limit = query.limit as usize;
    let sql = format!(
        "SELECT search.rowid, NULL, {HIT_COLUMNS}
         FROM search JOIN events e ON e.sequence = search.rowid
         WHERE search MATCH ?1{} AND search.rowid < ?8
         ORDER BY search.rowid DESC LIMIT ?9",
        filters(query)
    );
    let below = match query.cursor {
        Some(Cursor::Before(sequence)) => sequence,
        _ => i64::MAX,
    };
    let bounds = Bounds {
        below: Some(below),
        rows: limit as i64 + 1,
    };
    Ok(paged(run(conn, &sql, query, bounds, hit_row)?, limit))
}

/// Whether the query is for a session with at most [`SESSION_PROBES`] events.
pub(super) fn small_session(conn: &Connection, query: &Query) -> rusqlite::Result<bool> {
    let Some(session) = &query.session else {
        return Ok(false);
    };
    let events: Option<i64> = conn
        .prepare_cached("SELECT event_count FROM sessions WHERE id = ?1")?
        .query_row([session], |r| r.get(0))
        .optional()?;
    Ok(events.is_some_and(|n| n <= SESSION_PROBES))
}

/// Newest first from a session's own events, each looked up in the index.
pub(super) fn in_session(conn: &Connection, query: &Query) -> rusqlite::Result<Page> {
    let limit = query.limit as usize;
    let mut sql = format!(
        "SELECT e.sequence, NULL, {HIT_COLUMNS}
         FROM events e CROSS JOIN search ON search.rowid = e.sequence
         WHERE search MATCH ?1{}",
        filters(query)
    );
    let below = match query.cursor {
        Some(Cursor::Before(sequence)) => {
            sql.push_str(" AND e.sequence < ?8");
            Some(sequence)
        }
        _ => None,
    };
    sql.push_str(" ORDER BY e.session_id DESC, e.session_sequence DESC LIMIT ?9");
    let bounds = Bounds {
        below,
        rows: limit as i64 + 1,
    };
    Ok(paged(run(conn, &sql, query, bounds, hit_row)?, limit))
}

/// How many of the newest matches `order=rank` scores: a match's score can only be known
/// against the others, so every one in the window is read before the best is; the newest
/// 10,000 take a few milliseconds whatever the log's size (all 480,000 matches of a common
/// word took 150 ms a page at 1,000,000 events).
pub const RANK_WINDOW: i64 = 10_000;

/// Best match first among the newest [`RANK_WINDOW`] matches of the expression (filters apply
/// within them): each scored against the others ([`rank::ranks`]), then newest first among
/// equals. The page's events and snippets are read after, for the page's hits alone.
pub(super) fn ranked(conn: &Connection, query: &Query) -> rusqlite::Result<Page> {
    let limit = query.limit as usize;
    let mut sql = format!("SELECT search.rowid, {}(search) FROM search", rank::HITS);
    if filtered(query) {
        // The window's oldest match first (FTS5 walks a term's matches by rowid without
        // reading them), then the filters within the window.
        sql.push_str(&format!(
            " JOIN events e ON e.sequence = search.rowid
             WHERE search MATCH ?1 AND search.rowid >= COALESCE((SELECT rowid FROM search
                WHERE search MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET {}), 0){}",
            RANK_WINDOW - 1,
            filters(query)
        ));
    } else {
        sql.push_str(" WHERE search MATCH ?1 ORDER BY search.rowid DESC");
    }
    sql.push_str(" LIMIT ?9");
    let bounds = Bounds {
        rows: RANK_WINDOW,
        ..Bounds::default()
    };
    let window = run(conn, &sql, query, bounds, |r| {
        Ok(rank::Hits::from_blob(r.get(0)?, &r.get::<_, Vec<u8>>(1)?))
    })?;
    let mut ranked: Vec<(f64, i64)> = rank::ranks(&window)
        .into_iter()
        .zip(window.iter().map(|row| row.sequence))
        .filter(|(rank, sequence)| match query.cursor {
            Some(Cursor::After(after, below)) => {
                *rank > after || (*rank == after && *sequence < below)
            }
            _ => true,
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut hits = Vec::with_capacity(limit + 1);
    for (rank, sequence) in ranked.into_iter().take(limit + 1) {
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
    conn.prepare_cached(&format!(
        "SELECT search.rowid, ?3, {HIT_COLUMNS}
             FROM search JOIN events e ON e.sequence = search.rowid
             WHERE search MATCH ?1 AND search.rowid = ?2"
    ))?
    .query_row(params![expression, sequence, rank], hit_row)
    .optional()
}

/// A snippet with FTS5's marks, as pieces.
pub(super) fn parts(snippet: &str) -> Vec<Part> {
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
