//! [`SessionRows`]: session rows held in memory while events change them, written in one go,
//! with one request's changes undone when its savepoint is rolled back.

use super::Result;
use crate::event::StoredEvent;
use crate::projection::heroes::Progress;
use crate::projection::sessions::{self, Facts, Record};
use foldhash::HashMap;
use rusqlite::Connection;

/// Session rows held in memory while events change them, and written by
/// [`SessionRows::flush`]. The writer holds the rows its batches change here, written once
/// per batch (a batch of 2,000 events over 50 sessions would otherwise read and rewrite each
/// row 40 times) and kept between batches while no other connection commits; it can undo one
/// request's changes when that request's savepoint is rolled back. A rebuild holds them
/// between its flushes.
#[derive(Default)]
pub struct SessionRows {
    rows: HashMap<String, SessionRow>,
    /// The sessions whose row became changed since the last write (a write looks at these
    /// only; a rebuild holds every session's row).
    changed: Vec<String>,
    /// While a request is open: each row it changed, as it was before (`None`: not held).
    undo: Option<Vec<(String, Option<SessionRow>)>>,
    /// The open (or last) request, counted from 1.
    request: u64,
}

#[derive(Clone)]
struct SessionRow {
    record: Record,
    /// Whether SQL has a row for this session (then a flush updates it, else inserts it).
    stored: bool,
    /// Whether SQL's row differs from `record`.
    dirty: bool,
    /// Whether SQL's details (`session_details`) may differ from `record`'s.
    details: bool,
    /// The last request that saved this row's earlier state in `undo`.
    saved_for: u64,
}

impl SessionRows {
    /// Updates (or makes) the event's session row with what the event says; `load` reads a
    /// row that is not held from SQL.
    pub fn apply(
        &mut self,
        load: impl FnOnce(&str) -> Result<Option<Record>>,
        event: &StoredEvent,
        facts: &Facts,
    ) -> Result<()> {
        let Some(session) = event.session_id.as_deref() else {
            return Ok(());
        };
        if let Some(row) = self.changing(session) {
            row.details |= row.record.update(event, facts);
            return Ok(());
        }
        let stored = load(session)?;
        let known = stored.is_some();
        let (record, details) =
            sessions::next(stored, event, facts).expect("the event has a session");
        self.hold_changed(session, record, known, details);
        Ok(())
    }

    /// Sets the progress of a session's hero in its row; `load` reads a row that is not held
    /// from SQL (a hero's session has one: its first event made it).
    pub fn set_hero(
        &mut self,
        load: impl FnOnce(&str) -> Result<Option<Record>>,
        session: &str,
        progress: Progress,
    ) -> Result<()> {
        if let Some(row) = self.changing(session) {
            row.record.hero = Some(progress);
            return Ok(());
        }
        let Some(mut record) = load(session)? else {
            return Err(rusqlite::Error::QueryReturnedNoRows);
        };
        record.hero = Some(progress);
        self.hold_changed(session, record, true, false);
        Ok(())
    }

    /// Holds a row that was not held, changed since SQL had it (`stored`: SQL has a row for
    /// the session; `details`: its details may differ), undone by the open request's undo.
    fn hold_changed(&mut self, session: &str, record: Record, stored: bool, details: bool) {
        if let Some(undo) = &mut self.undo {
            undo.push((session.to_string(), None));
        }
        let row = SessionRow {
            record,
            stored,
            dirty: true,
            details,
            saved_for: self.request,
        };
        self.rows.insert(session.to_string(), row);
        self.changed.push(session.to_string());
    }

    /// A held row about to change: its earlier state saved for the open request's undo, and
    /// marked changed.
    fn changing(&mut self, session: &str) -> Option<&mut SessionRow> {
        let row = self.rows.get_mut(session)?;
        if let Some(undo) = &mut self.undo
            && row.saved_for != self.request
        {
            undo.push((session.to_string(), Some(row.clone())));
            row.saved_for = self.request;
        }
        if !row.dirty {
            row.dirty = true;
            self.changed.push(session.to_string());
        }
        Some(row)
    }

    /// The row of a session, when it is held.
    pub fn get(&self, session: &str) -> Option<&Record> {
        self.rows.get(session).map(|row| &row.record)
    }

    /// A request starts: what it changes can be undone until [`SessionRows::keep_request`].
    pub fn begin_request(&mut self) {
        self.request += 1;
        self.undo = Some(Vec::new());
    }

    /// The open request's changes stay.
    pub fn keep_request(&mut self) {
        self.undo = None;
    }

    /// The open request's changes are undone (its savepoint was rolled back).
    pub fn undo_request(&mut self) {
        for (session, before) in self.undo.take().into_iter().flatten().rev() {
            match before {
                Some(row) => self.rows.insert(session, row),
                None => self.rows.remove(&session),
            };
        }
    }

    /// Writes every changed row to SQL; the rows stay held. After a failure some rows are
    /// marked written and some not, so the caller must abandon the transaction and
    /// [`SessionRows::clear`] them (the writer then runs the batch again without holding rows).
    pub fn flush(&mut self, conn: &Connection) -> Result<()> {
        self.take_changed(|row| row.record.store(conn, row.stored, row.details))
    }

    /// Lets go of the rows that have not changed since they were last written, calling
    /// `gone` with each one's session (a replay's memory then holds the sessions in use, not
    /// every session of the log).
    pub(super) fn let_go_of_unchanged(&mut self, mut gone: impl FnMut(&str)) {
        self.rows.retain(|session, row| {
            if row.dirty {
                return true;
            }
            gone(session);
            false
        });
    }

    /// The changed rows, each with whether SQL has a row for its session, marked written.
    pub(super) fn changed(&mut self) -> Vec<(Record, bool)> {
        let mut rows = Vec::with_capacity(self.changed.len());
        self.take_changed(|row| {
            rows.push((row.record.clone(), row.stored));
            Ok(())
        })
        .expect("collecting cannot fail");
        rows
    }

    /// Hands each changed row to `write`, then marks it written.
    fn take_changed(&mut self, mut write: impl FnMut(&SessionRow) -> Result<()>) -> Result<()> {
        for session in std::mem::take(&mut self.changed) {
            // A row undone since it changed may be gone, or as SQL has it.
            if let Some(row) = self.rows.get_mut(&session).filter(|row| row.dirty) {
                write(row)?;
                row.stored = true;
                row.dirty = false;
                row.details = false;
            }
        }
        Ok(())
    }

    /// How many rows are held.
    pub fn held(&self) -> usize {
        self.rows.len()
    }

    /// Lets go of every row (after a flush, or when the transaction that changed them is
    /// gone).
    pub fn clear(&mut self) {
        self.rows.clear();
        self.changed.clear();
        self.undo = None;
    }
}
