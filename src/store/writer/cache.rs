//! What the writer holds about sessions between events and batches: each session's last
//! `session_sequence`, its `sessions` row, its tool calls, its hero, the ids of its shared
//! payload fields' rows, and the keys change rows are saved with. Holding them saves reading
//! them for every event; [`SessionCache`] is where they are begun, kept, undone, written and
//! let go of, so that nothing else has to know when they go stale.

use crate::projection::tables::{Calls, Known, Live, SessionRows};
use crate::store::read;
use rusqlite::{Connection, OptionalExtension};
use std::cell::RefCell;
use std::collections::HashMap;

/// Sessions whose counters and rows the writer keeps between batches, at most (about 600
/// bytes each, and about 300 for each combination of shared payload fields held, usually one
/// or two); past it, they are let go of and read again as needed.
pub(super) const MAX_HELD_SESSIONS: usize = 4_096;

/// Combinations of shared payload fields held for one session, at most.
const MAX_SHARED_A_SESSION: usize = 64;

/// The writer's session caches. Kept from one batch to the next while no other connection has
/// committed (see `data_version`); read from the file otherwise.
#[derive(Default)]
pub(super) struct SessionCache {
    /// Last `session_sequence` given per session.
    pub(super) heads: HashMap<String, i64>,
    /// The `sessions` rows the batches changed, held in memory: written just before each
    /// `COMMIT` (and before a coordination command, which reads them through SQL), and kept
    /// for the next batch on the same terms as `heads`.
    pub(super) rows: RefCell<SessionRows>,
    /// The tool calls of the sessions the batches touched (`projection::tables::Calls`), kept
    /// on the same terms as `heads` and let go of when a request is undone.
    pub(super) calls: RefCell<Calls>,
    /// The heroes and change rows' keys the batches read and saved
    /// (`projection::tables::Known`), kept on the same terms as `calls`.
    pub(super) known: RefCell<Known>,
    /// The `payload_shared` rows of the sessions the batches touched: session, then fields,
    /// then the row's id (`event::shared`). Kept on the same terms as `heads`.
    shared: HashMap<String, HashMap<String, i64>>,
    /// `PRAGMA data_version` when the last batch began, if it committed: the value changes
    /// (at least) whenever another connection commits, which would make the caches above
    /// stale. The writer's own work outside a batch must not change `sessions`, the events'
    /// session numbering, `tool_uses`, `heroes`, `missions`, `change_shapes` or
    /// `payload_shared` without calling [`SessionCache::forget`] (a prune step, which deletes
    /// pruned sessions' `payload_shared` rows, calls it; so does a batch run row by row).
    data_version: Option<i64>,
}

impl SessionCache {
    /// At the start of a batch, inside its transaction: lets go of everything held if another
    /// connection has committed since the last batch, or if more sessions are held than
    /// [`MAX_HELD_SESSIONS`].
    pub(super) fn begin_batch(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let version = data_version(conn)?;
        if self.data_version != Some(version)
            || self.heads.len() > MAX_HELD_SESSIONS
            || self.rows.get_mut().held() > MAX_HELD_SESSIONS
            || self.calls.get_mut().held() > MAX_HELD_SESSIONS
            || self.known.get_mut().held() > MAX_HELD_SESSIONS
            || self.shared.len() > MAX_HELD_SESSIONS
        {
            self.forget();
        }
        self.data_version = Some(version);
        Ok(())
    }

    /// Lets go of the session counters and rows held (a batch was rolled back): the next batch
    /// reads them from the file.
    pub(super) fn forget(&mut self) {
        self.heads.clear();
        self.rows.get_mut().clear();
        self.calls.get_mut().clear();
        self.known.get_mut().clear();
        self.shared.clear();
        self.data_version = None;
    }

    /// Writes the session rows held in memory.
    pub(super) fn flush(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        self.rows.get_mut().flush(conn)
    }

    /// Opens the record of the held session rows a request changes.
    pub(super) fn begin_request(&mut self) {
        self.rows.get_mut().begin_request();
    }

    /// Keeps what the request did to the held session rows.
    pub(super) fn keep_request(&mut self) {
        self.rows.get_mut().keep_request();
    }

    /// Undoes the request's changes to the held session rows. Some counts, calls, heroes, keys
    /// and shared fields' ids were for rows just undone: they are let go of, and the next event
    /// asks the file again.
    pub(super) fn undo_request(&mut self) {
        self.rows.get_mut().undo_request();
        self.heads.clear();
        self.calls.get_mut().clear();
        self.known.get_mut().clear();
        self.shared.clear();
    }

    /// The next `session_sequence` of a session: from the file the first time (and again after
    /// another connection commits), then counted here (a batch of 2,000 events over 50
    /// sessions asks the index 50 times, not 2,000).
    pub(super) fn next_session_sequence(
        &mut self,
        conn: &Connection,
        session: &str,
    ) -> rusqlite::Result<i64> {
        if let Some(last) = self.heads.get_mut(session) {
            *last += 1;
            return Ok(*last);
        }
        let head = read::session_head(conn, session)?;
        if head == 0 {
            // A session the log has never seen (nor pruned) has no calls to read.
            self.calls.get_mut().none_yet(session);
        }
        self.heads.insert(session.to_string(), head + 1);
        Ok(head + 1)
    }

    /// The id of the session's `payload_shared` row holding `fields`, written the first time a
    /// session's event shares them.
    pub(super) fn shared_id(
        &mut self,
        conn: &Connection,
        session: &str,
        fields: &str,
    ) -> rusqlite::Result<i64> {
        if let Some(id) = self.shared.get(session).and_then(|s| s.get(fields)) {
            return Ok(*id);
        }
        // A session whose fields keep changing holds at most this many.
        if self
            .shared
            .get(session)
            .is_some_and(|s| s.len() >= MAX_SHARED_A_SESSION)
        {
            self.shared.remove(session);
        }
        let stored = conn
            .prepare_cached("SELECT id FROM payload_shared WHERE session_id = ?1 AND fields = ?2")?
            .query_row([session, fields], |r| r.get(0))
            .optional()?;
        let id = match stored {
            Some(id) => id,
            None => {
                conn.prepare_cached(
                    "INSERT INTO payload_shared (session_id, fields) VALUES (?1, ?2)",
                )?
                .execute([session, fields])?;
                conn.last_insert_rowid()
            }
        };
        self.shared
            .entry(session.to_string())
            .or_default()
            .insert(fields.to_string(), id);
        Ok(id)
    }

    /// The projections' tables over `conn`, with the session rows, calls, heroes and change
    /// rows' keys held here.
    pub(super) fn tables<'c>(&'c self, conn: &'c Connection) -> Live<'c> {
        Live::holding(conn, &self.rows, &self.calls, &self.known)
    }
}

/// `PRAGMA data_version`: it changes (at least) whenever another connection commits to the
/// database; never for this connection's own commits.
fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))
}
