//! Keeping the index: an event indexed as it is appended, the whole log again, pruned events
//! deleted, FTS5's integrity check, and the rows as a snapshot shows them.

use super::text_of;
use crate::event::StoredEvent;
use crate::event::row::{EVENT_COLUMNS, stored_event};
use crate::projection::Parsed;
use rusqlite::{Connection, params};

/// Indexes one event just appended (the writer, in the event's transaction).
pub fn index(conn: &Connection, event: &StoredEvent, parsed: &Parsed) -> rusqlite::Result<()> {
    let Some(text) = text_of(event, parsed) else {
        return Ok(());
    };
    insert_text(conn, event.sequence, &text)?;
    conn.prepare_cached("INSERT INTO search (rowid, text) VALUES (?1, ?2)")?
        .execute(params![event.sequence, text])?;
    Ok(())
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
