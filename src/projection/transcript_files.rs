//! The `transcript_files` projection: how far the server has read each transcript a hook
//! named, from the `TranscriptRead` events (`follow`). A read never goes back: the offset
//! kept is the largest one read to.

use super::view::View;
use crate::event::StoredEvent;
use rusqlite::{Connection, OptionalExtension, params};

/// Records a read of a transcript.
pub fn apply(conn: &Connection, event: &StoredEvent, view: &View) -> rusqlite::Result<()> {
    let (Some(path), Some(read_to), Some(session)) = (
        view.text("path"),
        view.int("readTo"),
        event.session_id.as_deref(),
    ) else {
        return Ok(());
    };
    conn.prepare_cached("INSERT INTO transcript_files (path, session_id, read_to, turn, last_sequence, last_read_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (path) DO UPDATE SET
             read_to = MAX(read_to, excluded.read_to),
             turn = COALESCE(excluded.turn, turn),
             last_sequence = excluded.last_sequence,
             last_read_at = excluded.last_read_at",
    )?
    .execute(params![
        path,
        session,
        read_to,
        view.text("turn"),
        event.sequence,
        event.event_time
    ])?;
    Ok(())
}

/// Where the next read of `path` starts, and the turn open there (`(0, None)` for a file
/// never read).
pub fn position(conn: &Connection, path: &str) -> rusqlite::Result<(u64, Option<String>)> {
    Ok(conn
        .prepare_cached("SELECT read_to, turn FROM transcript_files WHERE path = ?1")?
        .query_row([path], |r| {
            Ok((r.get::<_, i64>(0)?.max(0) as u64, r.get(1)?))
        })
        .optional()?
        .unwrap_or((0, None)))
}
