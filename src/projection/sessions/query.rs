//! The sessions as the REST routes read them: one by id, or a filtered list, each with its
//! hero.

use super::record::{AFTER_RECORD, RECORD_COLUMNS, RECORD_FROM, record};
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
        "SELECT {RECORD_COLUMNS}, h.id FROM {RECORD_FROM}
         LEFT JOIN heroes h ON h.session_id = s.id WHERE s.id = ?1"
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
    /// Only sessions whose last event is before this sequence: the previous page's
    /// `next_before`.
    pub before: Option<i64>,
}

/// A page of [`list`].
#[derive(Debug)]
pub struct Page {
    pub sessions: Vec<Session>,
    /// The `last_sequence` to ask for sessions before; `None` when no older one can match.
    pub next_before: Option<i64>,
}

/// The most sessions a page filtered by anything but a live state reads, by activity.
pub const SCAN_WINDOW: u32 = 5_000;

/// Sessions by most recent activity, filtered, each with its hero (joined for the page's rows
/// alone). A live state (any but `ended`) is read from `sessions_live`, which holds only the
/// sessions not ended, by state and activity, so a page reads its own rows; no filter walks
/// `sessions_by_activity` until the page is full; any other filter reads at most
/// [`SCAN_WINDOW`] sessions of that walk, and a page the window ended before it was full says
/// where to go on (`next_before`). No page reads every
/// session of the log, nor every session not ended (agents killed without `SessionEnd` stay
/// live for good).
pub fn list(conn: &Connection, filter: &ListFilter, limit: u32) -> rusqlite::Result<Page> {
    let live = filter.state.is_some_and(|s| s != SessionState::Ended);
    let filtered = filter.state.is_some()
        || filter.source.is_some()
        || filter.source_app.is_some()
        || filter.origin.is_some();
    let windowed = filtered && !live;
    let before = filter.before.unwrap_or(i64::MAX);
    // The page and the window's extent from one snapshot.
    let tx = conn.unchecked_transaction()?;
    let sessions: Vec<Session> = tx
        .prepare_cached(&list_sql(live, windowed))?
        .query_map(
            params![
                filter.state,
                filter.source,
                filter.source_app,
                limit,
                filter.origin,
                before
            ],
            row,
        )?
        .collect::<rusqlite::Result<_>>()?;
    let next_before = match sessions.len() == limit as usize {
        true => sessions.last().map(|s| s.record.last_sequence),
        // Fewer than asked for: the window held every older session (the end), or it
        // stopped at its size (go on below its oldest).
        false if windowed => crate::projection::filter::past_window(
            &tx,
            "SELECT last_sequence AS key FROM sessions INDEXED BY sessions_by_activity
             WHERE last_sequence < ?1 ORDER BY last_sequence DESC LIMIT ?2",
            params![before, SCAN_WINDOW],
            SCAN_WINDOW,
        )?,
        false => None,
    };
    tx.finish()?;
    Ok(Page {
        sessions,
        next_before,
    })
}

/// The statement [`list`] runs: from the live sessions, a window of the most recently active,
/// or all of them by activity.
fn list_sql(live: bool, windowed: bool) -> String {
    let from = match (live, windowed) {
        // The state is the index's first key and activity its second: only that state's
        // sessions are read, newest first, as many as the page shows.
        (true, _) => "(SELECT * FROM sessions INDEXED BY sessions_live
                       WHERE state = ?1 AND state <> 'ended' AND last_sequence < ?6)"
            .to_string(),
        (false, true) => format!(
            "(SELECT * FROM sessions INDEXED BY sessions_by_activity WHERE last_sequence < ?6
              ORDER BY last_sequence DESC LIMIT {SCAN_WINDOW})"
        ),
        (false, false) => "(SELECT * FROM sessions INDEXED BY sessions_by_activity
                            WHERE last_sequence < ?6)"
            .to_string(),
    };
    format!(
        "SELECT {RECORD_COLUMNS}, h.id FROM (
             SELECT * FROM {from}
             WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR source = ?2)
               AND (?3 IS NULL OR source_app = ?3) AND (?5 IS NULL OR origin = ?5)
             ORDER BY last_sequence DESC LIMIT ?4) s
         JOIN session_details d ON d.session_id = s.id
         LEFT JOIN heroes h ON h.session_id = s.id
         ORDER BY s.last_sequence DESC"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(conn: &Connection, live: bool, windowed: bool) -> String {
        let none: Option<&str> = None;
        let params = params![none, none, none, 10, none, i64::MAX];
        crate::projection::filter::plan_of(conn, &list_sql(live, windowed), params)
    }

    /// A live state reads the live sessions' index, that state's alone (a search on its key,
    /// not a scan of every session not ended); the rest walk the sessions by activity.
    #[test]
    fn each_list_reads_its_index() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let live = crate::projection::filter::plan_of(
            &conn,
            &list_sql(true, false),
            params![
                Some("stuck"),
                None::<&str>,
                None::<&str>,
                10,
                None::<&str>,
                i64::MAX
            ],
        );
        assert!(
            live.contains("sessions_live (state=? AND last_sequence<?)"),
            "{live}"
        );
        // In the index's order: a page is not every session of the state, sorted.
        assert!(!live.contains("TEMP B-TREE"), "{live}");
        for windowed in [false, true] {
            let plan = plan(&conn, false, windowed);
            assert!(plan.contains("sessions_by_activity"), "{plan}");
        }
    }
}
