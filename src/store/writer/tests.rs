//! Tests of the writer thread's batches, run without the queue: requests refused alone, a
//! session row the database refuses, a full disk, a panic. The session caches' own tests are in
//! [`caches`].

mod caches;

use super::batch::Pending;
use super::thread::WriterThread;
use super::{AppendError, Appended, Decided};
use crate::config::Durability;
use crate::coordination;
use crate::event::NewEvent;
use crate::projection;
use crate::store::open::open_writer;
use std::cell::RefCell;
use tokio::sync::oneshot;

fn event(id: &str, session: &str, payload: &str) -> NewEvent {
    NewEvent {
        event_id: id.into(),
        generated_id: false,
        session_id: Some(session.into()),
        event_type: "Stop".into(),
        source: "test".into(),
        event_time: None,
        received_at: None,
        origin: None,
        payload: payload.into(),
    }
}

fn writer(dir: &tempfile::TempDir) -> WriterThread {
    let conn = open_writer(&dir.path().join("w.db"), Durability::Full).unwrap();
    WriterThread::scratch(conn, true).unwrap()
}

/// Makes the database refuse a row for session `bad` ('no bad sessions'): a trigger here,
/// a constraint one day. The session rows are written before `COMMIT`, outside the requests'
/// savepoints, so it sends a batch to its row-by-row run.
fn refuse_session_bad(writer: &WriterThread) {
    writer
        .conn()
        .execute_batch(
            "CREATE TRIGGER no_bad BEFORE INSERT ON sessions WHEN NEW.id = 'bad'
             BEGIN SELECT RAISE(ABORT, 'no bad sessions'); END",
        )
        .unwrap();
}

type Answer = oneshot::Receiver<Result<Vec<Appended>, AppendError>>;

type DecideAnswer = oneshot::Receiver<Result<Decided, AppendError>>;

/// A claim of chat `chat` by `session`, as a queued command.
fn claim(chat: &str, session: &str) -> (Pending, DecideAnswer) {
    let (reply, answer) = oneshot::channel();
    let claim = coordination::claims::Claim {
        chat: chat.into(),
        session_id: session.into(),
        ttl_seconds: 60,
    };
    let command = coordination::Command::Claim(claim);
    (Pending::Decide { command, reply }, answer)
}

/// A normalized `ended` event: it ends its session.
fn ended(id: &str, session: &str) -> NewEvent {
    NewEvent {
        event_type: "ended".into(),
        source: crate::ingest::normalized::SOURCE.into(),
        ..event(id, session, "{}")
    }
}

fn pending(events: Vec<NewEvent>) -> (Pending, Answer) {
    let (reply, answer) = oneshot::channel();
    (
        Pending::Append {
            events: super::prepared::Prepared::all(events),
            reply,
            arrival: crate::store::stages::Arrival::now(None),
        },
        answer,
    )
}

fn commit(
    writer: &mut WriterThread,
    requests: Vec<Vec<NewEvent>>,
) -> Vec<Result<Vec<Appended>, AppendError>> {
    let (batch, answers): (Vec<_>, Vec<_>) = requests.into_iter().map(pending).unzip();
    writer.commit_batch(batch);
    answers
        .into_iter()
        .map(|mut a| a.try_recv().unwrap())
        .collect()
}

fn positions(result: &Result<Vec<Appended>, AppendError>) -> Vec<(i64, Option<i64>)> {
    result
        .as_ref()
        .unwrap()
        .iter()
        .map(|a| (a.sequence, a.session_sequence))
        .collect()
}

#[test]
fn a_refused_request_is_undone_alone_inside_a_shared_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    let outcomes = commit(
        &mut writer,
        vec![
            vec![event("a1", "s", "{}"), event("a2", "s", "{}")],
            vec![
                event("b1", "s", "{}"),
                event("b2", "t", "{}"),
                event("a1", "s", r#"{"changed":true}"#),
            ],
            vec![event("c1", "s", "{}")],
            vec![event("d1", "t", "{}")],
        ],
    );
    assert_eq!(positions(&outcomes[0]), [(1, Some(1)), (2, Some(2))]);
    assert_eq!(
        outcomes[1],
        Err(AppendError::Conflict {
            index: 2,
            id: "a1".into(),
            sequence: 1
        })
    );
    assert_eq!(
        positions(&outcomes[2]),
        [(3, Some(3))],
        "b1's position is reused: no gap"
    );
    let stored: Vec<String> = writer
        .conn()
        .prepare("SELECT event_id FROM events ORDER BY sequence")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(stored, ["a1", "a2", "c1", "d1"]);
    assert_eq!(
        writer.stats().snapshot().commits,
        1,
        "one transaction for the four requests"
    );
    // The session rows, held in memory during the batch, lost the refused request's
    // changes too: `s` counts a1, a2, c1; `t` was made by d1, not by the undone b2.
    let sessions: Vec<(String, i64, i64, i64)> = writer
        .conn()
        .prepare("SELECT id, first_sequence, last_sequence, event_count FROM sessions ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(sessions, [("s".into(), 1, 3, 3), ("t".into(), 4, 4, 1)]);
}

#[test]
fn a_session_row_the_database_refuses_fails_only_its_own_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    // Something (a constraint one day, a trigger here) refuses one session's row. The rows
    // are written together before `COMMIT`, outside the requests' savepoints.
    refuse_session_bad(&writer);
    let outcomes = commit(
        &mut writer,
        vec![
            vec![event("ok1", "s", "{}")],
            vec![event("b1", "bad", "{}")],
            vec![event("ok2", "u", "{}")],
        ],
    );
    assert_eq!(positions(&outcomes[0]), [(1, Some(1))]);
    assert!(
        matches!(&outcomes[1], Err(AppendError::Storage(m)) if m.contains("no bad sessions")),
        "{:?}",
        outcomes[1]
    );
    assert_eq!(positions(&outcomes[2]), [(2, Some(1))]);
    assert_eq!(writer.stats().snapshot().reruns, 1);
    let sessions: Vec<String> = writer
        .conn()
        .prepare("SELECT id FROM sessions ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(sessions, ["s", "u"]);
    assert!(writer.healthy());
    // The next batch holds its rows again.
    commit(&mut writer, vec![vec![event("ok3", "s", "{}")]]);
    assert_eq!(writer.stats().snapshot().reruns, 1);
}

#[test]
fn mixed_batches_leave_the_projections_a_rebuild_gives() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    let hook = |id: &str, session: &str, kind: &str, payload: serde_json::Value| NewEvent {
        source: crate::ingest::hook::SOURCE.into(),
        event_type: kind.into(),
        ..event(id, session, &payload.to_string())
    };
    let tool = |call: &str| {
        serde_json::json!({"tool_name": "Bash", "tool_use_id": call,
        "tool_input": {"command": format!("make {call}")}})
    };
    let (c1, _c1) = claim("chat-s1", "s1");
    let (c2, _c2) = claim("chat-s2", "s2");
    let batch = vec![
        pending(vec![
            hook(
                "p1",
                "s1",
                "UserPromptSubmit",
                serde_json::json!({"prompt": "go"}),
            ),
            hook("t1", "s1", "PreToolUse", tool("call1")),
        ])
        .0,
        pending(vec![hook("t2", "s2", "PreToolUse", tool("call2"))]).0,
        // Refused: a1 twice with different content; its s1 and s3 changes are undone.
        pending(vec![
            hook("a1", "s1", "PreToolUse", tool("call3")),
            hook(
                "a3",
                "s3",
                "UserPromptSubmit",
                serde_json::json!({"prompt": "x"}),
            ),
            hook("a1", "s1", "PreToolUse", tool("call4")),
        ])
        .0,
        c1,
        pending(vec![
            hook("r1", "s1", "PostToolUse", tool("call1")),
            ended("n1", "s2"),
        ])
        .0,
        c2,
        pending(vec![hook("t3", "s2", "PreToolUse", tool("call5"))]).0,
    ];
    writer.commit_batch(batch);
    commit(
        &mut writer,
        vec![
            vec![hook("st1", "s1", "Stop", serde_json::json!({}))],
            vec![
                hook(
                    "x1",
                    "s1",
                    "UserPromptSubmit",
                    serde_json::json!({"prompt": "y"}),
                ),
                event("p1", "s1", "{}"),
            ],
            vec![hook("t4", "s3", "PreToolUse", tool("call6"))],
        ],
    );
    assert_eq!(writer.stats().snapshot().reruns, 0);
    // The search rows of what was kept (not of the refused requests' events), after the commits.
    assert!(writer.derive());
    let live = projection::dump(writer.conn()).unwrap();
    let sessions = live.iter().filter(|r| r.starts_with("sessions:")).count();
    assert_eq!(
        sessions, 3,
        "s1, s2 and s3 (made by t4, not by the refused a3)"
    );
    writer.conn().execute_batch("BEGIN").unwrap();
    crate::store::rebuild::rebuild(writer.conn()).unwrap();
    let rebuilt = projection::dump(writer.conn()).unwrap();
    writer.conn().execute_batch("ROLLBACK").unwrap();
    assert_eq!(live, rebuilt);
}

#[test]
fn a_batch_the_disk_refuses_stores_nothing_and_the_next_continues_gapless() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    commit(&mut writer, vec![vec![event("first", "s", "{}")]]);
    let pages: i64 = writer
        .conn()
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    writer
        .conn()
        .pragma_update(None, "max_page_count", pages + 2)
        .unwrap();
    // Larger than the free pages the migrations left (tables made again) and the two new
    // ones allowed together.
    let free: i64 = writer
        .conn()
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    let blob = (free as usize + 8) * crate::store::open::PAGE_SIZE as usize;
    let big = format!(r#"{{"blob":"{}"}}"#, "x".repeat(blob));
    let outcomes = commit(
        &mut writer,
        vec![
            vec![event("small", "s", "{}")],
            vec![event("big", "s", &big)],
        ],
    );
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Err(AppendError::Storage(_)))),
        "{outcomes:?}"
    );
    assert!(!writer.healthy());
    assert_eq!(writer.shared_head(), 1);

    writer
        .conn()
        .pragma_update(None, "max_page_count", 1_000_000)
        .unwrap();
    let outcomes = commit(&mut writer, vec![vec![event("small", "s", "{}")]]);
    assert_eq!(positions(&outcomes[0]), [(2, Some(2))]);
    assert!(writer.healthy());
}

thread_local! {
    /// An event id whose append panics, as a bug would (this thread's writer only).
    static PANIC_ON: RefCell<Option<String>> = const { RefCell::new(None) };
}

pub(super) fn panic_if_asked(event_id: &str) {
    if PANIC_ON.with_borrow(|id| id.as_deref() == Some(event_id)) {
        panic!("injected panic at {event_id}");
    }
}

#[test]
fn a_batch_that_panics_is_refused_whole_and_the_next_numbers_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    commit(&mut writer, vec![vec![event("first", "s", "{}")]]);
    PANIC_ON.set(Some("boom".into()));
    let (batch, answers): (Vec<_>, Vec<_>) =
        [vec![event("a", "s", "{}")], vec![event("boom", "t", "{}")]]
            .into_iter()
            .map(pending)
            .unzip();
    writer.commit_batch_or_survive(batch);
    PANIC_ON.set(None);
    for mut answer in answers {
        // Dropped unanswered: its HTTP handler answers 503.
        assert_eq!(
            answer.try_recv().err(),
            Some(oneshot::error::TryRecvError::Closed)
        );
    }
    assert_eq!(writer.head(), 1);
    // The session counter and row the panicked batch changed in memory are not kept.
    let outcomes = commit(&mut writer, vec![vec![event("again", "s", "{}")]]);
    assert_eq!(positions(&outcomes[0]), [(2, Some(2))]);
    let (events, count): (i64, i64) = writer
        .conn()
        .query_row(
            "SELECT (SELECT COUNT(*) FROM events), event_count FROM sessions WHERE id = 's'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((events, count), (2, 2));
}

/// Events another connection committed (someone's sqlite3, an import) have no search text in
/// the writer's memory: they are indexed from the log, not skipped.
#[test]
fn events_another_connection_committed_are_indexed_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    let said = |words: &str| format!(r#"{{"message":"{words}"}}"#);
    commit(
        &mut writer,
        vec![vec![event("e1", "s", &said("first words"))]],
    );
    let other = open_writer(&dir.path().join("w.db"), Durability::Full).unwrap();
    other
        .execute(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source, event_time, received_at, payload, origin) VALUES (2, 'e2', 's', 2, 'Stop', 'test',
                 '2026-12-03T00:00:00.000Z', '2026-12-03T00:00:00.000Z', ?1, 'here')",
            [said("second words")],
        )
        .unwrap();
    commit(
        &mut writer,
        vec![vec![event("e3", "s", &said("third words"))]],
    );
    while writer.derive() {}
    let indexed: Vec<i64> = writer
        .conn()
        .prepare("SELECT sequence FROM search_text ORDER BY 1")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(indexed, [1, 2, 3]);
    assert_eq!(projection::search::through(writer.conn()).unwrap(), 3);
}
