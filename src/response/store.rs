//! The response events' SQL (`response_events`, `response_event_heads`, migration 0008). The
//! writer thread appends and prunes with these inside its own transactions; streams read with
//! the rest on reader connections.

use super::{Envelope, Recorded, Retention, Stored};
use crate::event::time;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

/// Most sessions one prune step trims.
const PRUNE_SESSIONS: i64 = 500;

/// Why a request's response events were not stored.
#[derive(Debug)]
pub enum Refused {
    /// `eventId` is stored at `sequence` with other content.
    Conflict {
        index: usize,
        event_id: String,
        sequence: i64,
    },
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for Refused {
    fn from(e: rusqlite::Error) -> Self {
        Refused::Sqlite(e)
    }
}

/// Appends one request's response events for `session` (the caller holds a savepoint, so a
/// refusal undoes them all). A known `eventId` with the same content is a duplicate.
pub fn append(
    conn: &Connection,
    session: &str,
    records: &[Envelope],
    received_at: &str,
    stored: &mut Vec<Stored>,
) -> Result<Vec<Recorded>, Refused> {
    let mut last: i64 = conn
        .prepare_cached("SELECT last_sequence FROM response_event_heads WHERE session_id = ?1")?
        .query_row([session], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    let mut answers = Vec::with_capacity(records.len());
    for (index, record) in records.iter().enumerate() {
        let known: Option<(i64, String)> = conn
            .prepare_cached(
                "SELECT sequence, envelope FROM response_events
                 WHERE session_id = ?1 AND event_id = ?2",
            )?
            .query_row([session, &record.event_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((sequence, envelope)) = known {
            let same = serde_json::from_str::<Envelope>(&envelope)
                .is_ok_and(|e| Envelope { sequence: 0, ..e } == *record);
            if !same {
                let event_id = record.event_id.clone();
                return Err(Refused::Conflict {
                    index,
                    event_id,
                    sequence,
                });
            }
            answers.push(Recorded {
                event_id: record.event_id.clone(),
                sequence,
                duplicate: true,
            });
            continue;
        }
        last += 1;
        let envelope = Envelope {
            sequence: last,
            factory_session_id: session.to_string(),
            ..record.clone()
        };
        let json = serde_json::to_string(&envelope).expect("an envelope serialises");
        conn.prepare_cached(
            "INSERT INTO response_events (session_id, sequence, event_id, run_id, kind, phase,
                                          recorded_at, received_at, envelope)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            session,
            last,
            record.event_id,
            record.run_id,
            record.kind.as_str(),
            record.phase.as_str(),
            record.recorded_at,
            received_at,
            json
        ])?;
        stored.push(Stored {
            session_id: session.to_string(),
            sequence: last,
            envelope: json,
        });
        answers.push(Recorded {
            event_id: record.event_id.clone(),
            sequence: last,
            duplicate: false,
        });
    }
    conn.prepare_cached(
        "INSERT INTO response_event_heads (session_id, last_sequence) VALUES (?1, ?2)
         ON CONFLICT (session_id) DO UPDATE SET last_sequence = excluded.last_sequence",
    )?
    .execute(params![session, last])?;
    Ok(answers)
}

/// One prune step, in its own transaction: the events older than `max_age`, and each
/// session's oldest beyond `max_per_session`. Per session the pruned ones are always its
/// oldest (sequences rise with the time they were stored), so what is left starts right after
/// `pruned_through`. Returns how many were deleted.
pub fn prune(conn: &Connection, policy: &Retention, now: DateTime<Utc>) -> rusqlite::Result<usize> {
    if !policy.is_set() {
        return Ok(0);
    }
    let tx = conn.unchecked_transaction()?;
    let mut doomed: Vec<(String, i64)> = Vec::new();
    if let Some(age) = policy.max_age {
        let cutoff = time::format(now - chrono::Duration::from_std(age).unwrap_or_default());
        doomed.extend(
            tx.prepare_cached(
                "SELECT session_id, MAX(sequence) FROM response_events WHERE received_at < ?1
                 GROUP BY session_id LIMIT ?2",
            )?
            .query_map(params![cutoff, PRUNE_SESSIONS], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?,
        );
    }
    if let Some(max) = policy.max_per_session {
        doomed.extend(
            tx.prepare_cached(
                "SELECT session_id, last_sequence - ?1 FROM response_event_heads
                 WHERE last_sequence - pruned_through > ?1 LIMIT ?2",
            )?
            .query_map(params![max as i64, PRUNE_SESSIONS], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?,
        );
    }
    let mut deleted = 0;
    for (session, through) in doomed {
        deleted += tx
            .prepare_cached("DELETE FROM response_events WHERE session_id = ?1 AND sequence <= ?2")?
            .execute(params![session, through])?;
        tx.prepare_cached(
            "UPDATE response_event_heads SET pruned_through = MAX(pruned_through, ?2)
             WHERE session_id = ?1",
        )?
        .execute(params![session, through])?;
    }
    tx.commit()?;
    Ok(deleted)
}

/// What a session's response stream holds: the oldest retained sequence (the one after the
/// head when none is left; 0 when there never was one) and the head.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bounds {
    pub first_available_sequence: i64,
    pub head_sequence: i64,
}

pub fn bounds(conn: &Connection, session: &str) -> rusqlite::Result<Bounds> {
    let (head, pruned): (i64, i64) = conn
        .prepare_cached(
            "SELECT last_sequence, pruned_through FROM response_event_heads WHERE session_id = ?1",
        )?
        .query_row([session], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, 0));
    let first = if head == 0 { 0 } else { pruned + 1 };
    Ok(Bounds {
        first_available_sequence: first,
        head_sequence: head,
    })
}

/// The sequence of a retained response event of the session, by its id.
pub fn sequence_of(
    conn: &Connection,
    session: &str,
    event_id: &str,
) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT sequence FROM response_events WHERE session_id = ?1 AND event_id = ?2",
    )?
    .query_row([session, event_id], |r| r.get(0))
    .optional()
}

/// The session's response events after `after`, in order: at most `limit`, and no more once
/// their envelopes reach `max_bytes` (one at the least). Also whether more may follow.
pub fn page(
    conn: &Connection,
    session: &str,
    after: i64,
    limit: u32,
    max_bytes: usize,
) -> rusqlite::Result<(Vec<Stored>, bool)> {
    let mut statement = conn.prepare_cached(
        "SELECT sequence, envelope FROM response_events WHERE session_id = ?1 AND sequence > ?2
         ORDER BY sequence LIMIT ?3",
    )?;
    let rows = statement.query_map(params![session, after, limit], |r| {
        Ok(Stored {
            session_id: session.to_string(),
            sequence: r.get(0)?,
            envelope: r.get(1)?,
        })
    })?;
    let (mut records, mut bytes) = (Vec::new(), 0usize);
    for row in rows {
        let record = row?;
        bytes = bytes.saturating_add(record.envelope.len());
        records.push(record);
        if bytes >= max_bytes {
            return Ok((records, true));
        }
    }
    let more = records.len() == limit as usize;
    Ok((records, more))
}

/// Whether the session has anything at all: events in the log or response events.
pub fn session_known(conn: &Connection, session: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM events WHERE session_id = ?1)
             OR EXISTS (SELECT 1 FROM response_event_heads WHERE session_id = ?1)
             OR EXISTS (SELECT 1 FROM pruned_sessions WHERE session_id = ?1)",
    )?
    .query_row([session], |r| r.get(0))
}
