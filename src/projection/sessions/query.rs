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

/// Sessions by most recent activity, filtered. Unfiltered, the newest are read from
/// `sessions_by_activity`; a filter reads every session (few match, and walking that index
/// newest first would look up every session that does not, one by one).
pub fn list(conn: &Connection, filter: &ListFilter, limit: u32) -> rusqlite::Result<Vec<Session>> {
    let filtered = filter.state.is_some()
        || filter.source.is_some()
        || filter.source_app.is_some()
        || filter.origin.is_some();
    let sessions = match filtered {
        true => "sessions s NOT INDEXED",
        false => "sessions s",
    };
    conn.prepare_cached(&format!(
        "SELECT {RECORD_COLUMNS}, h.id FROM {sessions} LEFT JOIN heroes h ON h.session_id = s.id
         WHERE (?1 IS NULL OR s.state = ?1) AND (?2 IS NULL OR s.source = ?2)
           AND (?3 IS NULL OR s.source_app = ?3) AND (?5 IS NULL OR s.origin = ?5)
         ORDER BY s.last_sequence DESC LIMIT ?4"
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
