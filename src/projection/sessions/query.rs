//! The sessions as the REST routes read them: one by id, or a filtered list, each with its
//! hero.

use super::record::{AFTER_RECORD, RECORD_COLUMNS, record};
use super::{Record, SessionState};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

/// One row of `sessions`, as the REST routes return it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    #[serde(flatten)]
    pub record: Record,
    /// The session's hero, when hook events made one.
    pub hero_id: Option<String>,
}

fn row(r: &Row<'_>) -> rusqlite::Result<Session> {
    Ok(Session {
        record: record(r)?,
        hero_id: r.get(AFTER_RECORD)?,
    })
}

pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<Session>> {
    conn.prepare_cached(&format!(
        "SELECT {RECORD_COLUMNS}, h.id FROM sessions s LEFT JOIN heroes h ON h.session_id = s.id
         WHERE s.id = ?1"
    ))?
    .query_row([id], row)
    .optional()
}

/// Which sessions [`list`] returns; `None` does not filter.
#[derive(Debug, Default)]
pub struct ListFilter<'a> {
    pub state: Option<SessionState>,
    pub source: Option<&'a str>,
    pub source_app: Option<&'a str>,
    pub origin: Option<&'a str>,
}

/// Sessions by most recent activity, filtered: `sessions_by_activity` walked newest first, so
/// a page stops as soon as it is full, and each session's hero is joined for the page's rows
/// alone. A filter few sessions pass looks each one up in turn (about 1.5 ms for 7,851
/// sessions); reading every session and sorting the matches instead cost 9 ms for a filter
/// most pass (docs/performance.md, "A year of events").
pub fn list(conn: &Connection, filter: &ListFilter, limit: u32) -> rusqlite::Result<Vec<Session>> {
    conn.prepare_cached(&format!(
        "SELECT {RECORD_COLUMNS}, h.id FROM (
             SELECT * FROM sessions INDEXED BY sessions_by_activity
             WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR source = ?2)
               AND (?3 IS NULL OR source_app = ?3) AND (?5 IS NULL OR origin = ?5)
             ORDER BY last_sequence DESC LIMIT ?4) s
         LEFT JOIN heroes h ON h.session_id = s.id
         ORDER BY s.last_sequence DESC"
    ))?
    .query_map(
        params![
            filter.state,
            filter.source,
            filter.source_app,
            limit,
            filter.origin
        ],
        row,
    )?
    .collect()
}
