//! Retention: the writer prunes the oldest events once there are more than `max_events` or
//! they are older than `max_age`, in bounded steps between batches, so pruning never holds up
//! ingest for long. Positions survive pruning: the highest sequence pruned goes to `meta`, and
//! each pruned session's last `session_sequence` to `pruned_sessions`, so numbering continues.

use super::snapshot::Snapshot;
use crate::event::time;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

/// Most events one prune step deletes (one transaction). Each is applied to the retention
/// snapshot too, so this bounds how long a step holds the writer (docs/performance.md).
pub const PRUNE_STEP: i64 = 2_000;

/// Fewest events a prune step right after a batch deletes: a step has a fixed cost (reading
/// the range, the pruned sessions' numbering, the snapshot's boundary, two commits), worth
/// paying for this many. The writer's periodic tick prunes whatever is due, however little.
pub const PRUNE_MIN_STEP: i64 = 1_000;

pub use crate::config::Retention;

/// What a prune step did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Events deleted.
    pub pruned: i64,
    /// Events the policy no longer keeps that were kept because the publisher has not sent
    /// them to JetStream yet (at least this many: a step looks at most [`PRUNE_STEP`] ahead).
    pub unpublished: i64,
}

/// Deletes up to [`PRUNE_STEP`] of the oldest events the policy no longer keeps; returns how
/// many. Their `agent_changes` and search rows go with them; alerts and other projections keep
/// their rows. The retention snapshot (opened for this step) moves to the new boundary first.
pub fn prune_step(
    conn: &Connection,
    policy: &Retention,
    now: DateTime<Utc>,
) -> rusqlite::Result<i64> {
    let mut snapshot = Snapshot::of(conn)?;
    prune_step_min(conn, &mut snapshot, policy, now, 1, None, None).map(|step| step.pruned)
}

/// [`prune_step`] with the writer's `snapshot`, but does nothing unless at least `min` events
/// (or [`PRUNE_STEP`], if less) are due; with `publish_stream`, keeps every event its
/// publisher has not sent to that JetStream stream yet (the `published` table), so retention
/// never loses one before it is published; with `indexed_through`, keeps every event above
/// it (the writer has not written its search rows yet, `store::writer::derive`).
///
/// Two commits, in this order: the snapshot's (the pruned events applied to it, and its new
/// boundary), then the log's (the events deleted). A step that finds the snapshot already
/// past the oldest event (the second commit never happened) only deletes what it covers.
pub fn prune_step_min(
    conn: &Connection,
    snapshot: &mut Snapshot,
    policy: &Retention,
    now: DateTime<Utc>,
    min: i64,
    publish_stream: Option<&str>,
    indexed_through: Option<i64>,
) -> rusqlite::Result<Step> {
    if !policy.is_set() {
        return Ok(Step::default());
    }
    let tx = conn.unchecked_transaction()?;
    let (first, last): (Option<i64>, Option<i64>) =
        tx.query_row("SELECT MIN(sequence), MAX(sequence) FROM events", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(Step::default());
    };
    if let Some(covered) = snapshot.stands_at(&tx)?.filter(|s| *s >= first) {
        let pruned = delete_through(&tx, covered)?;
        tx.commit()?;
        return Ok(Step {
            pruned,
            unpublished: 0,
        });
    }
    let mut through = first - 1;
    if let Some(max) = policy.max_events {
        through = through.max(last.saturating_sub(i64::try_from(max).unwrap_or(i64::MAX)));
    }
    // An age beyond what a date can express keeps everything.
    let cutoff = policy
        .max_age
        .and_then(|age| chrono::Duration::from_std(age).ok())
        .and_then(|age| now.checked_sub_signed(age));
    if let Some(cutoff) = cutoff {
        let cutoff = time::format(cutoff);
        // The oldest events, in order, up to the first one still young enough.
        let old: i64 = tx.query_row(
            "SELECT COALESCE(MIN(sequence) - 1, ?2) FROM (
                 SELECT sequence, received_at FROM events WHERE sequence >= ?1
                 ORDER BY sequence LIMIT ?3)
             WHERE received_at >= ?4",
            params![
                first,
                (first + PRUNE_STEP - 1).min(last),
                PRUNE_STEP,
                cutoff
            ],
            |r| r.get(0),
        )?;
        through = through.max(old);
    }
    through = through.min(first + PRUNE_STEP - 1);
    if let Some(indexed) = indexed_through {
        through = through.min(indexed);
    }
    let mut unpublished = 0;
    if let Some(stream) = publish_stream {
        let published: i64 = tx.query_row(
            "SELECT COALESCE((SELECT sequence FROM published WHERE stream = ?1), 0)",
            [stream],
            |r| r.get(0),
        )?;
        if through > published {
            unpublished = through - published.max(first - 1);
            through = published;
        }
    }
    if through < first || through - first + 1 < min.clamp(1, PRUNE_STEP) {
        return Ok(Step {
            pruned: 0,
            unpublished,
        });
    }
    // What the pruned events built goes into the snapshot first, so a rebuild still has it.
    snapshot.advance(&tx, through)?;
    let pruned = delete_through(&tx, through)?;
    tx.commit()?;
    Ok(Step {
        pruned,
        unpublished,
    })
}

/// Finishes a prune step whose snapshot commit happened and whose log commit did not (a
/// crash, a full disk): deletes the events the snapshot already covers. Runs when the log is
/// opened for writing, whatever the retention policy, so the log and its snapshot agree
/// again before anything reads them; returns how many events it deleted.
pub fn finish_interrupted(conn: &Connection) -> rusqlite::Result<i64> {
    let mut snapshot = Snapshot::of(conn)?;
    let tx = conn.unchecked_transaction()?;
    let first: Option<i64> = tx.query_row("SELECT MIN(sequence) FROM events", [], |r| r.get(0))?;
    let Some(first) = first else {
        return Ok(0);
    };
    let Some(covered) = snapshot.stands_at(&tx)?.filter(|s| *s >= first) else {
        return Ok(0);
    };
    let pruned = delete_through(&tx, covered)?;
    tx.commit()?;
    Ok(pruned)
}

/// Where the pruned sessions' numbering stopped.
const PRUNED_SESSIONS: &str = "INSERT INTO pruned_sessions (session_id, last_session_sequence)
     SELECT session_id, MAX(session_sequence) FROM events NOT INDEXED
     WHERE sequence <= ?1 AND session_id IS NOT NULL GROUP BY session_id
     ON CONFLICT (session_id) DO UPDATE
     SET last_session_sequence = MAX(last_session_sequence, excluded.last_session_sequence)";

/// Marks the rows of `{table}` opened by the events a step prunes (those after the previous
/// boundary), read through the table's key or index on `{key}`, the opening event's sequence.
const PRUNED_OPENINGS: &str = "UPDATE {table} SET opening_pruned = 1
     WHERE {key} <= ?1
       AND {key} > COALESCE((SELECT CAST(value AS INTEGER) FROM meta
                             WHERE key = 'pruned_through_sequence'), 0)";

fn pruned_openings(table: &str, key: &str) -> String {
    PRUNED_OPENINGS
        .replace("{table}", table)
        .replace("{key}", key)
}

/// The payload fields a session's events shared go when its last event does (a session's
/// `session_sequence` and `sequence` rise together: the writer numbers both).
const PRUNED_SHARED: &str = "DELETE FROM payload_shared
     WHERE session_id IN (SELECT session_id FROM events NOT INDEXED
                          WHERE sequence <= ?1 AND session_id IS NOT NULL)
       AND (SELECT e.sequence FROM events e WHERE e.session_id = payload_shared.session_id
            ORDER BY e.session_sequence DESC LIMIT 1) <= ?1";

/// The log's half of a prune step, in the caller's transaction: records the numbering the
/// pruned events reach and the new boundary, then deletes the events through `through` with
/// their history rows. Returns how many events it deleted.
///
/// The pruned events are read by `sequence` (`NOT INDEXED`): left to itself, SQLite's planner
/// reads the whole session index for `session_id IS NOT NULL` instead (172 ms a step at
/// 5,000,000 events, against 0.5 ms for the range).
fn delete_through(tx: &Connection, through: i64) -> rusqlite::Result<i64> {
    tx.execute(PRUNED_SESSIONS, [through])?;
    // The tool uses, missions and permission requests these events opened outlive them:
    // their sessions find them through `tool_uses_pruned`, `missions_pruned` and
    // `permission_requests_pruned` from now on (`projection::of_session`).
    for (table, key) in crate::projection::opened_by_events() {
        tx.execute(&pruned_openings(table, key), [through])?;
    }
    tx.execute(
        "UPDATE meta SET value = CAST(MAX(CAST(value AS INTEGER), ?1) AS TEXT)
         WHERE key = 'pruned_through_sequence'",
        [through],
    )?;
    // What an event changed, and the mission it answered with, belong to its history: they go
    // with the event (the snapshot let go of its own when it advanced).
    tx.execute("DELETE FROM agent_changes WHERE sequence <= ?1", [through])?;
    // So is its search text: no hit can point at a pruned event.
    crate::projection::search::prune(tx, through)?;
    tx.execute(PRUNED_SHARED, [through])?;
    let pruned = tx.execute("DELETE FROM events WHERE sequence <= ?1", [through])?;
    Ok(pruned as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Durability;
    use crate::store::open::open_writer;
    use std::time::Duration;

    #[test]
    fn a_prune_step_reads_the_pruned_range_not_every_sessions_index_entry() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let plan = |sql: &str| crate::projection::filter::plan_of(&conn, sql, [1]);
        for sql in [PRUNED_SESSIONS, PRUNED_SHARED] {
            let plan = plan(sql);
            assert!(
                plan.contains("SEARCH events USING INTEGER PRIMARY KEY (rowid<?)"),
                "{plan}"
            );
            assert!(!plan.contains("(session_id>?)"), "{plan}");
        }
        // The tool uses, missions and permission requests a step's events opened: their range
        // of the order's key or index, not every row.
        for ((table, key), step) in crate::projection::opened_by_events().into_iter().zip([
            "tool_uses USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
            "missions USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
            "permission_requests USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
        ]) {
            let plan = plan(&pruned_openings(table, key));
            assert!(plan.contains(step), "{plan}");
        }
    }

    #[test]
    fn absurd_limits_keep_everything_instead_of_overflowing() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_writer(&dir.path().join("r.db"), Durability::Normal).unwrap();
        conn.execute(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source, event_time, received_at, payload, origin) VALUES (1, 'e', 's', 1, 'Stop', 'x', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '{}', 'here')",
            [],
        )
        .unwrap();
        let huge = Retention {
            max_events: Some(u64::MAX),
            max_age: Some(Duration::from_secs(u64::MAX)),
        };
        assert_eq!(prune_step(&conn, &huge, Utc::now()).unwrap(), 0);
        let none_left = Retention {
            max_events: Some(0),
            max_age: None,
        };
        assert_eq!(prune_step(&conn, &none_left, Utc::now()).unwrap(), 1);
        let pruned: String = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'pruned_through_sequence'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(pruned, "1");
    }

    #[test]
    fn events_not_yet_indexed_for_search_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_writer(&dir.path().join("r.db"), Durability::Normal).unwrap();
        for sequence in 1..=3 {
            conn.execute(
                "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source, event_time, received_at, payload, origin) VALUES (?1, 'e' || ?1, 's', ?1, 'Stop', 'x', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '{}', 'here')",
                [sequence],
            )
            .unwrap();
        }
        let none_left = Retention {
            max_events: Some(0),
            max_age: None,
        };
        let mut snapshot = Snapshot::of(&conn).unwrap();
        let step = prune_step_min(
            &conn,
            &mut snapshot,
            &none_left,
            Utc::now(),
            1,
            None,
            Some(1),
        )
        .unwrap();
        assert_eq!(
            step.pruned, 1,
            "only the event at or below the indexed sequence"
        );
        let left: i64 = conn
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 2);
    }
}
