//! Tests of the session caches ([`SessionCache`](super::super::cache::SessionCache)): what
//! they hold equals the file after a refused request, a restart, another connection's commit,
//! a coordination command, and past their cap.

use super::super::cache::MAX_HELD_SESSIONS;
use super::*;
use crate::coordination::Verdict;
use rusqlite::Connection;

/// A raw hook event (source `hook`) of session `s`.
fn hook(id: &str, name: &str, call: Option<&str>) -> NewEvent {
    let mut payload = serde_json::json!({"session_id": "s", "hook_event_name": name});
    if let Some(call) = call {
        payload["tool_name"] = "Bash".into();
        payload["tool_use_id"] = call.into();
    }
    NewEvent {
        event_type: name.into(),
        source: crate::ingest::hook::SOURCE.into(),
        ..event(id, "s", &payload.to_string())
    }
}

/// Tool use ids with their rows' keys, in order.
type CallRows = Vec<(String, i64)>;

/// The calls the writer holds for session `s`, and those a fresh read of the file gives.
fn held_and_read(writer: &mut WriterThread) -> (Option<CallRows>, CallRows) {
    let sorted = |calls: &foldhash::HashMap<String, i64>| {
        let mut calls: Vec<_> = calls.clone().into_iter().collect();
        calls.sort();
        calls
    };
    let held = writer.sessions().calls.borrow().of("s").map(sorted);
    let read = sorted(&projection::tool_uses::calls_of(writer.conn(), "s").unwrap());
    (held, read)
}

#[test]
fn the_calls_held_in_memory_equal_the_file_after_a_refused_request_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    commit(
        &mut writer,
        vec![vec![
            hook("e1", "SessionStart", None),
            hook("e2", "PreToolUse", Some("call-a")),
            hook("e3", "PostToolUse", Some("call-a")),
            hook("e4", "PreToolUse", Some("call-b")),
        ]],
    );
    let (held, read) = held_and_read(&mut writer);
    assert_eq!(read.len(), 2, "{read:?}");
    assert_eq!(held.as_ref(), Some(&read));

    // A batch where one request is refused (a1's id again, other content) after opening a
    // call: the batch runs again isolated, and the refused call is in neither.
    let outcomes = commit(
        &mut writer,
        vec![
            vec![hook("e5", "PreToolUse", Some("call-c"))],
            vec![
                hook("e6", "PreToolUse", Some("call-refused")),
                hook("e2", "PreToolUse", Some("call-other")),
            ],
            vec![hook("e7", "PostToolUse", Some("call-b"))],
        ],
    );
    assert!(outcomes[0].is_ok() && outcomes[2].is_ok());
    assert!(matches!(outcomes[1], Err(AppendError::Conflict { .. })));
    let (held, read) = held_and_read(&mut writer);
    assert_eq!(read.len(), 3, "{read:?}");
    assert!(!read.iter().any(|(call, _)| call == "call-refused"));
    // Let go of when the request was undone, then read again at e7.
    assert_eq!(held.as_ref(), Some(&read));
    let b: String = writer
        .conn()
        .query_row(
            "SELECT status FROM tool_uses WHERE tool_use_id = 'call-b'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(b, "completed", "e7 found call-b through the held calls");

    // A restart holds nothing, then reads the session again on its next event.
    drop(writer);
    let mut writer = super::writer(&dir);
    assert_eq!(held_and_read(&mut writer).0, None);
    commit(
        &mut writer,
        vec![vec![hook("e8", "PostToolUse", Some("call-c"))]],
    );
    let (held, read) = held_and_read(&mut writer);
    assert_eq!(held.as_ref(), Some(&read));
    let open: i64 = writer
        .conn()
        .query_row(
            "SELECT COUNT(*) FROM tool_uses WHERE status = 'running'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(open, 0, "e8 closed call-c, opened before the restart");
    let rows: i64 = writer
        .conn()
        .query_row("SELECT COUNT(*) FROM tool_uses", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 3, "no call was made twice");
}

#[test]
fn a_command_sees_the_session_rows_changed_earlier_in_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    let (append, _appended) = pending(vec![ended("e1", "s")]);
    let (decide, mut decided) = claim("c", "s");
    writer.commit_batch(vec![append, decide]);
    let decided = decided.try_recv().unwrap().unwrap();
    assert!(
        matches!(
            decided.verdict,
            Verdict::Refused {
                code: "sessionEnded",
                ..
            }
        ),
        "the claim is refused: its session ended in the same batch, {:?}",
        decided.verdict
    );
}

#[test]
fn rows_written_for_a_command_are_updated_after_it_in_the_same_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    let (first, _a) = pending(vec![event("e1", "s", "{}")]);
    let (decide, _decided) = claim("c", "s");
    let (second, _b) = pending(vec![event("e2", "s", "{}")]);
    writer.commit_batch(vec![first, decide, second]);
    // `s` was inserted before the command and must be updated (not inserted again) after.
    assert_eq!(
        writer.stats().snapshot().reruns,
        0,
        "no second run was needed"
    );
    let (count, last): (i64, i64) = writer
        .conn()
        .query_row(
            "SELECT event_count, last_sequence FROM sessions WHERE id = 's'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let e2: i64 = writer
        .conn()
        .query_row(
            "SELECT sequence FROM events WHERE event_id = 'e2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((count, last), (2, e2));
}

#[test]
fn another_connections_commit_makes_the_writer_read_the_file_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    commit(&mut writer, vec![vec![event("mine", "s", "{}")]]);
    // Someone else appends (another process, a sqlite3 session).
    let other = Connection::open(dir.path().join("w.db")).unwrap();
    other
        .execute(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type, source, event_time, received_at, payload, origin) VALUES (2, 'theirs', 's', 2, 'Stop', 'x', 't', 't', '{}', 'there')",
            [],
        )
        .unwrap();
    // ... and edits a projection row by hand.
    other
        .execute(
            "UPDATE session_details SET cwd = '/theirs' WHERE session_id = 's'",
            [],
        )
        .unwrap();
    let outcomes = commit(&mut writer, vec![vec![event("next", "s", "{}")]]);
    assert_eq!(positions(&outcomes[0]), [(3, Some(3))]);
    // The writer's session counter and row were read again, not kept from its last batch.
    let (cwd, count): (Option<String>, i64) = writer
        .conn()
        .query_row(
            "SELECT d.cwd, s.event_count
             FROM sessions s JOIN session_details d ON d.session_id = s.id WHERE s.id = 's'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((cwd.as_deref(), count), (Some("/theirs"), 2));
    // With nobody else committing, the next batch keeps them (and still counts right).
    assert_eq!(writer.sessions().heads.get("s"), Some(&3));
    assert_eq!(writer.sessions().rows.get_mut().held(), 1);
    let outcomes = commit(&mut writer, vec![vec![event("last", "s", "{}")]]);
    assert_eq!(positions(&outcomes[0]), [(4, Some(4))]);
    assert_eq!(writer.sessions().heads.get("s"), Some(&4));
}

#[test]
fn past_the_cap_the_session_caches_are_read_from_the_file_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    let many = (0..=MAX_HELD_SESSIONS)
        .map(|i| event(&format!("e{i}"), &format!("s{i}"), "{}"))
        .collect();
    commit(&mut writer, vec![many]);
    assert_eq!(writer.sessions().heads.len(), MAX_HELD_SESSIONS + 1);
    let outcomes = commit(&mut writer, vec![vec![event("next", "s0", "{}")]]);
    let head = MAX_HELD_SESSIONS as i64 + 2;
    assert_eq!(positions(&outcomes[0]), [(head, Some(2))]);
    // The next batch began by letting go of them: only what it touched is held now.
    assert_eq!(writer.sessions().heads.len(), 1);
    assert_eq!(writer.sessions().rows.get_mut().held(), 1);

    // The rows alone past the cap: a refused request lets go of the counters but keeps
    // the rows the requests before it changed.
    let many = (0..=MAX_HELD_SESSIONS)
        .map(|i| event(&format!("f{i}"), &format!("s{i}"), "{}"))
        .collect();
    let conflict = vec![event("next", "s0", r#"{"other":true}"#)];
    let outcomes = commit(&mut writer, vec![many, conflict]);
    assert!(matches!(outcomes[1], Err(AppendError::Conflict { .. })));
    assert!(writer.sessions().heads.is_empty());
    assert_eq!(
        writer.sessions().rows.get_mut().held(),
        MAX_HELD_SESSIONS + 1
    );
    let outcomes = commit(&mut writer, vec![vec![event("last", "s1", "{}")]]);
    assert_eq!(positions(&outcomes[0]), [(2 * head, Some(3))]);
    assert_eq!(writer.sessions().rows.get_mut().held(), 1);
}

#[test]
fn a_refused_request_takes_its_shared_fields_row_with_it_and_the_next_event_writes_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    let body = |name: &str| {
        format!(r#"{{"cwd":"/src/app","eventName":"{name}","sessionId":"n","tool":"Bash"}}"#)
    };
    let said = |id: &str, name: &str| NewEvent {
        event_type: name.into(),
        ..event(id, "n", &body(name))
    };
    commit(&mut writer, vec![vec![event("e1", "s", "{}")]]);
    // The first request opens session n (and its shared fields' row), then is refused; the
    // second shares the same fields and must not point at the row the refusal took back.
    let outcomes = commit(
        &mut writer,
        vec![
            vec![said("n1", "PreToolUse"), event("e1", "s", r#"{"other":1}"#)],
            vec![said("n2", "PreToolUse")],
            vec![said("n3", "PostToolUse")],
        ],
    );
    assert!(matches!(outcomes[0], Err(AppendError::Conflict { .. })));
    assert!(outcomes[1].is_ok() && outcomes[2].is_ok());
    let conn = writer.conn();
    let dangling: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM events
             WHERE shared IS NOT NULL AND shared NOT IN (SELECT id FROM payload_shared)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(dangling, 0);
    let stored: Vec<(String, String, Option<i64>)> = conn
        .prepare("SELECT event_id, payload, shared FROM events WHERE session_id = 'n'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(stored.len(), 2, "{stored:?}");
    for (id, payload, shared) in &stored {
        // The name is the row's type, and the rest is the event's own.
        assert_eq!(payload, r#"{"tool":"Bash"}"#, "{id}");
        assert!(shared.is_some(), "{id}");
    }
    for (id, name) in [("n2", "PreToolUse"), ("n3", "PostToolUse")] {
        let read = crate::store::read::event_by_id(conn, id).unwrap().unwrap();
        assert_eq!(read.payload, body(name), "{id} reads whole");
    }
    let rows: i64 = conn
        .query_row("SELECT COUNT(*) FROM payload_shared", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1, "one row for session n's fields");
}

#[test]
fn the_heroes_and_change_keys_held_equal_the_file_after_a_refused_request_and_another_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    let hero = |writer: &mut WriterThread| {
        let read = projection::heroes::by_session(writer.conn(), "s").unwrap();
        let held = writer.sessions().known.borrow().held_hero("s").cloned();
        (held, read.expect("session s has a hero"))
    };
    commit(
        &mut writer,
        vec![vec![
            hook("e1", "SessionStart", None),
            hook("e2", "UserPromptSubmit", None),
        ]],
    );
    let (held, read) = hero(&mut writer);
    assert_eq!((read.mission_count, read.state.as_str()), (1, "active"));
    assert_eq!(held.as_ref(), Some(&read));

    // A request opens a second mission, then is refused (e1's id, other content): the hero
    // held goes back to the file's, and the next request's change row names the first
    // mission, not the one the refusal took back.
    let outcomes = commit(
        &mut writer,
        vec![
            vec![
                hook("e3", "Stop", None),
                hook("e4", "UserPromptSubmit", None),
                NewEvent {
                    payload: r#"{"other":1}"#.into(),
                    ..hook("e1", "SessionStart", None)
                },
            ],
            vec![hook("e5", "PreToolUse", Some("call-a"))],
        ],
    );
    assert!(matches!(outcomes[0], Err(AppendError::Conflict { .. })));
    assert!(outcomes[1].is_ok());
    let (held, read) = hero(&mut writer);
    assert_eq!(held.as_ref(), Some(&read));
    assert_eq!((read.mission_count, read.state.as_str()), (1, "active"));
    let conn = writer.conn();
    let first: String = conn
        .query_row("SELECT id FROM missions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(read.active_mission_id.as_deref(), Some(first.as_str()));
    let named: Vec<Option<String>> = conn
        .prepare(
            "SELECT m.id FROM agent_changes c JOIN events e ON e.sequence = c.sequence
             LEFT JOIN missions m ON m.opened_sequence = c.mission WHERE e.event_id = 'e5'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(named, [Some(first)]);

    // The refused Stop's shape went with it (its id is e5's shape's now): a Stop after it
    // writes the shape again, and every shape held has the id the file gives it.
    commit(&mut writer, vec![vec![hook("e7", "Stop", None)]]);
    let held = writer.sessions().known.borrow().held_shapes();
    assert!(held.len() >= 2, "{held:?}");
    for (shape, id) in held {
        let stored: i64 = writer
            .conn()
            .query_row(
                "SELECT id FROM change_shapes WHERE shape = ?1",
                [&shape],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stored, id, "{shape}");
    }

    // Someone else edits the hero by hand: the next event starts from their row.
    Connection::open(dir.path().join("w.db"))
        .unwrap()
        .execute(
            "UPDATE heroes SET faction = 'theirs' WHERE session_id = 's'",
            [],
        )
        .unwrap();
    commit(
        &mut writer,
        vec![vec![hook("e6", "UserPromptSubmit", None)]],
    );
    let (held, read) = hero(&mut writer);
    assert_eq!(read.faction.as_deref(), Some("theirs"));
    assert_eq!(held.as_ref(), Some(&read));
}

#[test]
fn a_batch_run_row_by_row_leaves_nothing_held_that_its_events_changed() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = writer(&dir);
    // A session row the database refuses sends the batch to its row-by-row run, which
    // writes through the SQL tables alone; session s is new, and opens a call in it.
    refuse_session_bad(&writer);
    let outcomes = commit(
        &mut writer,
        vec![
            vec![event("b1", "bad", "{}")],
            vec![
                hook("e1", "SessionStart", None),
                hook("e2", "PreToolUse", Some("call-a")),
            ],
        ],
    );
    assert!(outcomes[0].is_err() && outcomes[1].is_ok());
    assert_eq!(writer.stats().snapshot().reruns, 1);
    // The next batch closes the call: it is found, not missed for a call list held empty.
    commit(
        &mut writer,
        vec![vec![hook("e3", "PostToolUse", Some("call-a"))]],
    );
    let statuses: Vec<String> = writer
        .conn()
        .prepare("SELECT status FROM tool_uses")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(statuses, ["completed"]);
    let (held, read) = held_and_read(&mut writer);
    assert_eq!(held.as_ref(), Some(&read));
}
