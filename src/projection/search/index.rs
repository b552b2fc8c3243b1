//! Keeping the index: the rows of events already acknowledged, written in batches of their
//! own ([`write`], [`catch_up`]), the whole log again, pruned events deleted, FTS5's
//! integrity check, and the rows as a snapshot shows them.
//!
//! The index is written after the commit that acknowledged its events, by the same writer,
//! and `meta`'s `search_through` says how far it has got: every event at or below it is
//! indexed, none above it. A crash between the two commits loses nothing: the rows above
//! `search_through` are made again from the log ([`catch_up`]).

use super::text_of;
use crate::event::StoredEvent;
use crate::event::row::{EVENT_COLUMNS, stored_event};
use crate::projection::Parsed;
use rusqlite::{Connection, params};

/// The `meta` key of the last sequence the index has caught up to.
const THROUGH: &str = "search_through";

/// Every event at or below this sequence is indexed, none above it.
pub fn through(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1")?
        .query_row([THROUGH], |r| r.get(0))
}

fn set_through(conn: &Connection, sequence: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?
        .execute(params![THROUGH, sequence.to_string()])?;
    Ok(())
}

/// The text to index of an event just stored, which the writer keeps until it writes its
/// batch of search rows.
pub fn text_to_index(event: &StoredEvent, parsed: &Parsed) -> Option<(i64, String)> {
    text_of(event, parsed).map(|text| (event.sequence, text))
}

/// Writes the search rows `texts` (sequence and text, in order) of the events after
/// `search_through` up to `last` (an event with no text has no row), and moves
/// `search_through` to `last`. Runs in the caller's transaction.
pub fn write(conn: &Connection, texts: &[(i64, String)], last: i64) -> rusqlite::Result<()> {
    for (sequence, text) in texts {
        insert_text(conn, *sequence, text)?;
        conn.prepare_cached("INSERT INTO search (rowid, text) VALUES (?1, ?2)")?
            .execute(params![sequence, text])?;
    }
    set_through(conn, last)
}

/// Indexes up to `limit` events after `search_through`, read from the log, in the caller's
/// transaction; returns the new `search_through` (the head once it has caught up).
pub fn catch_up(conn: &Connection, limit: i64) -> rusqlite::Result<i64> {
    let after = through(conn)?;
    let mut texts = Vec::new();
    let (mut last, mut read) = (after, 0);
    {
        let mut events = conn.prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE sequence > ?1 ORDER BY sequence LIMIT ?2"
        ))?;
        let mut rows = events.query(params![after, limit])?;
        while let Some(row) = rows.next()? {
            let event = stored_event(row)?;
            last = event.sequence;
            read += 1;
            texts.extend(text_to_index(&event, &Parsed::of(&event)));
        }
    }
    if read < limit {
        // Every event is read: caught up to the head (past any pruned ones above `after`).
        last = last.max(crate::event::row::head(conn)?);
    }
    if last > after {
        write(conn, &texts, last)?;
    }
    Ok(last)
}

fn insert_text(conn: &Connection, sequence: i64, text: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO search_text (sequence, text) VALUES (?1, ?2)")?
        .execute(params![sequence, text])?;
    Ok(())
}

/// Makes the index again from the events in the log: every row's text, then the FTS5 index
/// over them in one pass. Returns the rows written. Runs inside the caller's transaction.
pub fn reindex(conn: &Connection) -> rusqlite::Result<u64> {
    conn.prepare_cached("DELETE FROM search_text")?
        .execute([])?;
    let mut rows = 0;
    let mut events = conn.prepare_cached(&format!(
        "SELECT {} FROM events ORDER BY sequence",
        EVENT_COLUMNS
    ))?;
    let mut events = events.query([])?;
    while let Some(row) = events.next()? {
        let event = stored_event(row)?;
        if let Some(text) = text_of(&event, &Parsed::of(&event)) {
            insert_text(conn, event.sequence, &text)?;
            rows += 1;
        }
    }
    // 'rebuild' empties the index and reads every row of search_text into it.
    conn.prepare_cached("INSERT INTO search (search) VALUES ('rebuild')")?
        .execute([])?;
    set_through(conn, crate::event::row::head(conn)?)?;
    Ok(rows)
}

/// Deletes the rows of the events up to `through` (retention, in the transaction that prunes
/// them): their terms from the index first, which reads their text, then the text.
pub fn prune(conn: &Connection, through: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO search (search, rowid, text)
         SELECT 'delete', sequence, text FROM search_text WHERE sequence <= ?1",
    )?
    .execute([through])?;
    conn.prepare_cached("DELETE FROM search_text WHERE sequence <= ?1")?
        .execute([through])?;
    Ok(())
}

/// Whether the FTS5 index holds exactly the terms of `search_text` (FTS5's own
/// `integrity-check`, which reads every row): `Some(why)` when it does not.
pub fn check(conn: &Connection) -> rusqlite::Result<Option<String>> {
    match conn
        .prepare_cached("INSERT INTO search (search, rank) VALUES ('integrity-check', 1)")?
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

/// The rows of `search_text` as [`crate::projection::dump`] shows every projection's, so
/// `rebuild --check` compares them too.
pub fn dump(conn: &Connection, out: &mut Vec<String>) -> rusqlite::Result<()> {
    let mut statement = conn.prepare_cached("SELECT sequence, text FROM search_text ORDER BY 1")?;
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
