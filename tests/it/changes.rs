//! `GET /changes`: what each hook event changed in the heroes, missions and tool uses, as a
//! page and as a stream that resumes across a restart with nothing missed or repeated.

use crate::common;

use common::sse::SseReader;
use common::{assert_rebuilds_to_live, fixture, spawn_app};
use hooklog::config::Config;
use hooklog::projection::changes;
use reqwest::StatusCode;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(10);

/// Every change after `after`, page by page.
async fn all_changes(app: &common::TestApp, after: i64) -> Vec<Value> {
    let mut changes = Vec::new();
    let mut after = after;
    loop {
        let (status, page) = app
            .get(&format!("/changes?after_sequence={after}&limit=7"))
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let got = page["changes"].as_array().unwrap().clone();
        let next = page["nextAfterSequence"].as_i64().unwrap();
        if got.is_empty() {
            assert_eq!(next, page["headSequence"].as_i64().unwrap());
            return changes;
        }
        changes.extend(got);
        after = next;
    }
}

/// Folds deltas into rows: a new row is its `set`, a change merges its `set` in.
fn fold(changes: &[Value]) -> BTreeMap<(String, String), Map<String, Value>> {
    let mut rows: BTreeMap<(String, String), Map<String, Value>> = BTreeMap::new();
    for change in changes {
        for delta in change["changes"].as_array().unwrap() {
            let key = (
                delta["entity"].as_str().unwrap().to_string(),
                delta["id"].as_str().unwrap().to_string(),
            );
            let set = delta["set"].as_object().unwrap().clone();
            match delta["op"].as_str().unwrap() {
                "created" => {
                    assert!(rows.insert(key, set).is_none(), "created twice: {delta}");
                }
                "updated" => {
                    // A delta holds what changed, and only that.
                    let row = rows.get_mut(&key).expect("updated before created");
                    assert!(!set.is_empty(), "an empty delta: {change}");
                    for (field, value) in &set {
                        assert_ne!(
                            row.get(field),
                            Some(value),
                            "{field} did not change: {delta}"
                        );
                    }
                    row.extend(set);
                }
                other => panic!("op {other}"),
            }
        }
    }
    rows
}

#[tokio::test]
async fn folding_the_changes_in_order_gives_the_projection_rows() {
    let app = spawn_app().await;
    for name in ["claude-code-session", "codex-lifecycle", "openclaw-session"] {
        app.post_fixture("/event", name).await;
    }
    let changes = all_changes(&app, 0).await;
    let sequences: Vec<i64> = changes
        .iter()
        .map(|c| c["sequence"].as_i64().unwrap())
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] < w[1]), "{sequences:?}");
    let mut folded = fold(&changes);
    // A permission request's deltas are its opening and its decision: one the session's own
    // events close (answered in the terminal) has no delta, so its state is only in
    // `/permission-requests`. Every request opened has its delta.
    let (_, requests) = app.get("/permission-requests?limit=1000").await;
    let requests = requests["permissionRequests"].as_array().unwrap();
    assert!(!requests.is_empty(), "the fixtures ask for permission");
    for request in requests {
        let key = (
            "permission".to_string(),
            request["requestId"].as_str().unwrap().to_string(),
        );
        let opened = folded.remove(&key).expect("a delta for every request");
        assert_eq!(opened["tool"], request["tool"]);
        assert_eq!(opened["openedAt"], request["openedAt"]);
    }
    let mut expected = BTreeMap::new();
    for (route, field, entity) in [
        ("/heroes", "heroes", "hero"),
        ("/missions", "missions", "mission"),
        ("/tool-uses", "toolUses", "toolUse"),
    ] {
        let (_, body) = app.get(&format!("{route}?limit=1000")).await;
        for row in body[field].as_array().unwrap() {
            let id = row["id"].as_str().unwrap().to_string();
            let mut row = row.as_object().unwrap().clone();
            if entity == "hero" {
                // A hero's latest activity is its session's latest event, which every change
                // names itself: the hero's deltas do not repeat it.
                let (_, session) = app
                    .get(&format!("/sessions/{}", row["sessionId"].as_str().unwrap()))
                    .await;
                assert_eq!(row.remove("lastSequence").unwrap(), session["lastSequence"]);
                assert_eq!(row.remove("updatedAt").unwrap(), session["lastEventTime"]);
            }
            expected.insert((entity.to_string(), id), row);
        }
    }
    assert!(
        expected.len() >= 23,
        "the fixtures make rows of every kind: {}",
        expected.len()
    );
    assert_eq!(folded, expected);
    // Each change names its event as the log has it.
    let first = &changes[0];
    let (_, event) = app
        .get(&format!("/events/{}", first["eventId"].as_str().unwrap()))
        .await;
    assert_eq!(event["context"]["sequence"], first["sequence"]);
    assert_eq!(event["type"], first["type"]);
    assert_eq!(event["context"]["eventTime"], first["eventTime"]);
    let dir = app.stop().await;
    assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}

/// Reads change frames until one with sequence `through`.
async fn frames_through(reader: &mut SseReader, through: i64) -> Vec<i64> {
    let mut ids = Vec::new();
    while ids.last() != Some(&through) {
        let frame = reader
            .next_event(DEADLINE)
            .await
            .expect("the stream goes on");
        assert_eq!(frame.event.as_deref(), Some("changes"));
        let change = frame.envelope();
        assert_eq!(change["sequence"].as_i64(), Some(frame.position()));
        ids.push(frame.position());
    }
    ids
}

#[tokio::test]
async fn the_change_stream_resumes_after_a_restart_with_nothing_missed_or_repeated() {
    let lines = fixture("claude-code-session");
    let post = |app: &common::TestApp, lines: &[Value]| {
        let lines = lines.to_vec();
        let app_url = app.url.clone();
        let client = app.client.clone();
        async move {
            let mut last = 0;
            for line in lines {
                let answer: Value = client
                    .post(format!("{app_url}/event"))
                    .json(&line)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                last = answer["sequence"].as_i64().unwrap();
            }
            last
        }
    };
    let app = spawn_app().await;
    // Other traffic between hook events: it changes no hero and makes no frame.
    app.post_session_events("api-only", 5).await;
    let mut reader = SseReader::new(app.stream("/changes", &[]).await);
    let first = post(&app, &lines[..10]).await;
    let mut seen = frames_through(&mut reader, first).await;
    drop(reader);

    let dir = app.stop().await;
    let app = common::start(Config::for_path(dir.path().join("hooklog.db")), dir).await;
    // Committed while nobody listens: the resumed stream reads them from history...
    let second = post(&app, &lines[10..18]).await;
    let last_seen = seen.last().unwrap().to_string();
    let response = app
        .stream("/changes", &[("last-event-id", &last_seen)])
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    seen.extend(frames_through(&mut reader, second).await);
    // ...and then live.
    let third = post(&app, &lines[18..]).await;
    seen.extend(frames_through(&mut reader, third).await);

    let stored: Vec<i64> = app
        .db()
        .prepare("SELECT sequence FROM agent_changes ORDER BY sequence")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(seen, stored, "every change once, in order");
    assert_eq!(
        stored.len(),
        lines.len(),
        "each hook event of the session has its change"
    );
}

#[tokio::test]
async fn change_cursors_follow_the_event_stream_rules() {
    let app = spawn_app().await;
    app.post_fixture("/event", "codex-lifecycle").await;
    let (status, body) = app.get("/changes?after_sequence=-1").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    let (status, _) = app.get("/changes?sesion=x").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = app.get("/changes?from=now").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "from is for the stream");
    let stale = app.stream("/changes?after_sequence=999", &[]).await;
    assert_eq!(stale.status(), StatusCode::BAD_REQUEST);
    assert!(
        stale
            .headers()
            .contains_key("x-hooklog-stream-generation-id")
    );
    assert_eq!(
        stale.json::<Value>().await.unwrap()["outcome"],
        "CURSOR_STALE"
    );
    // `from=now`: only what is committed from now on.
    let mut reader = SseReader::new(app.stream("/changes?from=now", &[]).await);
    let answer = app
        .post_hook_ok(json!({"hook_event_name": "Stop", "session_id": "later"}))
        .await;
    let frame = reader.next_event(DEADLINE).await.unwrap();
    assert_eq!(frame.position(), answer["sequence"].as_i64().unwrap());
    // A page that reached the head says so; the next one starts there.
    let (_, page) = app.get("/changes?after_sequence=0&limit=1000").await;
    assert_eq!(page["nextAfterSequence"], page["headSequence"]);
    let (_, page) = app.get("/changes?after_sequence=0&limit=2").await;
    assert_eq!(page["changes"].as_array().unwrap().len(), 2);
    assert_eq!(page["nextAfterSequence"], page["changes"][1]["sequence"]);
}

/// The change rows as the `changes_sent` view gives them.
const SENT_ROWS: &str = "SELECT sequence, changes FROM changes_sent ORDER BY 1";

/// The change rows' deltas as stored, with markers and coded keys: a shaped row's values put
/// into its shape (`change_shapes`).
fn slim_rows(conn: &rusqlite::Connection) -> Vec<(i64, String)> {
    conn.prepare(
        "SELECT c.sequence, c.changes, s.shape
         FROM agent_changes c LEFT JOIN change_shapes s ON s.id = c.shape ORDER BY 1",
    )
    .unwrap()
    .query_map([], |r| {
        let (sequence, changes, shape): (i64, String, Option<String>) =
            (r.get(0)?, r.get(1)?, r.get(2)?);
        let deltas = match shape {
            Some(shape) => changes::shape::fill(&shape, &changes).unwrap(),
            None => changes,
        };
        Ok((sequence, deltas))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Hook events posted with an id of their own, so a re-post is a duplicate answered as the
/// first post was: a prompt (answered with the mission it opens) and a notification during
/// it (answered with none, though its change row names the mission in progress).
fn answered_hooks() -> [(&'static str, Value); 2] {
    [
        (
            "ask-1",
            json!({"hook_event_name": "UserPromptSubmit", "session_id": "asked", "prompt": "p"}),
        ),
        (
            "note-1",
            json!({"hook_event_name": "Notification", "session_id": "asked", "message": "m"}),
        ),
    ]
}

/// Posts [`answered_hooks`], returning the answers.
async fn post_answered(app: &common::TestApp) -> Vec<Value> {
    let mut answers = Vec::new();
    for (id, body) in answered_hooks() {
        let response = app
            .client
            .post(format!("{}/event", app.url))
            .header("x-hooklog-event-id", id)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut answer: Value = response.json().await.unwrap();
        answer.as_object_mut().unwrap().remove("duplicate");
        answers.push(answer);
    }
    answers
}

/// Starts a server on `db` (which upgrades it), checks that `GET /changes` sends `sent` and
/// that a re-post of [`answered_hooks`] is answered with `answers`, stops it, and opens the
/// file again.
async fn upgraded(
    db: &std::path::Path,
    dir: tempfile::TempDir,
    sent: &[Value],
    answers: &[Value],
) -> (tempfile::TempDir, rusqlite::Connection) {
    let app = common::start(Config::for_path(db), dir).await;
    assert_eq!(all_changes(&app, 0).await, sent);
    assert_eq!(
        post_answered(&app).await,
        answers,
        "re-posts answered as before"
    );
    assert_eq!(all_changes(&app, 0).await, sent, "re-posts are duplicates");
    let dir = app.stop().await;
    (dir, rusqlite::Connection::open(db).unwrap())
}

/// Issues 41 and 43: a change row is stored without what its event says (markers in place of
/// the event's id, time, session, sequence and the row's hero and mission; no hero column:
/// its session's) and with its keys coded, and `GET /changes` puts the values and keys back.
/// A database whose rows were stored in full (schema 18), or with markers but keys in full
/// (schema 21), each with the heroes named and the answers in `hook_effects` (schema 23), is
/// rewritten when it is upgraded: its file holds the slim rows a fresh one would, the route
/// sends the same changes, a re-posted hook event is answered as before, and the
/// `changes_sent` view gives sqlite3 users the same text.
#[tokio::test]
async fn change_rows_are_stored_slim_and_a_database_stored_in_full_is_slimmed_on_upgrade() {
    let app = spawn_app().await;
    for name in ["claude-code-session", "codex-lifecycle", "openclaw-session"] {
        app.post_fixture("/event", name).await;
    }
    let answers = post_answered(&app).await;
    assert!(answers[0]["missionId"].is_string(), "{}", answers[0]);
    assert!(answers[1].get("missionId").is_none(), "{}", answers[1]);
    let sent = all_changes(&app, 0).await;
    let notified = sent.last().unwrap();
    assert_eq!(notified["missionId"], answers[0]["missionId"]);
    assert_eq!(notified["heroId"], answers[1]["heroId"]);
    let dir = app.stop().await;
    let db = dir.path().join("hooklog.db");
    let stored = |conn: &rusqlite::Connection, query: &str| -> Vec<(i64, String)> {
        conn.prepare(query)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let conn = rusqlite::Connection::open(&db).unwrap();
    let slim = slim_rows(&conn);
    let full = stored(&conn, SENT_ROWS);
    // The view gives what the route sends.
    let parsed = |rows: &[(i64, String)]| -> Vec<(i64, Value)> {
        rows.iter()
            .map(|(s, c)| (*s, serde_json::from_str(c).unwrap()))
            .collect()
    };
    let as_sent: Vec<(i64, Value)> = sent
        .iter()
        .map(|c| (c["sequence"].as_i64().unwrap(), c["changes"].clone()))
        .collect();
    assert_eq!(parsed(&full), as_sent);
    let bytes = |rows: &[(i64, String)]| rows.iter().map(|(_, c)| c.len()).sum::<usize>();
    assert!(
        bytes(&slim) * 2 < bytes(&full),
        "slim rows are less than half the size: {} against {}",
        bytes(&slim),
        bytes(&full)
    );
    assert!(slim.iter().any(|(_, c)| c.contains(r#"{"e":"tool-"}"#)));
    // Every key of every delta and of every row it sets is coded: a field added to a row
    // without a code would fail here.
    for (sequence, changes) in &slim {
        let deltas: Vec<serde_json::Map<String, Value>> = serde_json::from_str(changes).unwrap();
        for delta in &deltas {
            let set = delta["F"].as_object().unwrap();
            for key in delta.keys().chain(set.keys()) {
                assert_eq!(key.len(), 1, "event {sequence}: {key} has no code");
            }
        }
    }

    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('agent_changes')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        columns,
        ["sequence", "changes", "answered", "shape", "mission"]
    );

    // The database as schema 18 left it: every row in full, no view.
    common::as_schema_23(&conn);
    conn.execute_batch(
        "UPDATE agent_changes SET changes = (SELECT changes FROM changes_sent s
                                             WHERE s.sequence = agent_changes.sequence);
         DROP VIEW changes_sent;
         DROP INDEX tool_uses_by_order;
         DROP INDEX sessions_by_activity;
         DROP INDEX sessions_live;
         DROP INDEX heroes_live;
         DROP INDEX missions_active_subagents;
         DROP INDEX tool_uses_running_spawners;
         PRAGMA user_version = 18;",
    )
    .unwrap();
    assert_eq!(
        stored(
            &conn,
            "SELECT sequence, changes FROM agent_changes ORDER BY 1"
        ),
        full
    );
    drop(conn);
    let (dir, conn) = upgraded(&db, dir, &sent, &answers).await;
    assert_eq!(
        slim_rows(&conn),
        slim,
        "the upgrade stores the rows a fresh database does"
    );
    let gone: bool = conn
        .query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'hook_effects')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(gone);

    // The database as schema 21 left it: markers, but every key in full.
    let keyed: Vec<(i64, String)> = slim
        .iter()
        .map(|(sequence, changes)| {
            let mut text = changes.clone();
            for (key, code) in changes::KEYS.iter().zip(changes::CODES) {
                let code = char::from(*code);
                text = text.replace(&format!("\"{code}\":"), &format!("\"{key}\":"));
            }
            (*sequence, text)
        })
        .collect();
    common::as_schema_23(&conn);
    assert!(
        keyed
            .iter()
            .any(|(_, c)| c.contains(r#""openedEventId":{"e":""}"#))
    );
    for (sequence, changes) in &keyed {
        conn.execute(
            "UPDATE agent_changes SET changes = ?2 WHERE sequence = ?1",
            rusqlite::params![sequence, changes],
        )
        .unwrap();
    }
    conn.execute_batch(
        "DROP INDEX missions_active_subagents;
         DROP INDEX tool_uses_running_spawners;
         PRAGMA user_version = 21;",
    )
    .unwrap();
    drop(conn);
    let (dir, conn) = upgraded(&db, dir, &sent, &answers).await;
    assert_eq!(
        slim_rows(&conn),
        slim,
        "the upgrade from schema 21 codes the keys"
    );
    assert_eq!(parsed(&stored(&conn, SENT_ROWS)), as_sent);
    drop(conn);
    assert_rebuilds_to_live(&db);
    drop(dir);
}

/// The change rows as stored: sequence, text (values, for a shaped row) and shape.
fn raw_rows(conn: &rusqlite::Connection) -> Vec<(i64, String, Option<i64>)> {
    conn.prepare("SELECT sequence, changes, shape FROM agent_changes ORDER BY 1")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Issue 43: a change row's deltas are stored as a shape, once in `change_shapes` for every row
/// of the same form, and the row's own values; `GET /changes` and the `changes_sent` view put
/// them back. Only a row with no delta, or too many values, is stored whole. A file of schema
/// 26 (every row whole) is shaped when it is upgraded, to the rows a fresh file holds, and a
/// rebuild makes them again with the same shapes; its tool uses and missions, which named
/// their hero until schema 30, read as before.
#[tokio::test]
async fn change_rows_of_one_form_share_their_shape_and_a_whole_row_file_is_shaped_on_upgrade() {
    let app = spawn_app().await;
    let shapes =
        |app: &common::TestApp| app.strings("SELECT CAST(COUNT(*) AS TEXT) FROM change_shapes");
    for name in [
        "claude-code-session",
        "codex-lifecycle",
        "claude-code-session",
    ] {
        app.post_fixture("/event", name).await;
    }
    // The session goes on as before: its rows take the shapes it already wrote.
    let before = shapes(&app);
    app.post_fixture("/event", "claude-code-session").await;
    assert_eq!(shapes(&app), before);
    // A prompt with a NUL, quotes and a non-ASCII letter: its values are JSON text the view
    // must give back as the route does.
    app.post_hook_ok(
        json!({"hook_event_name": "UserPromptSubmit", "session_id": "nul",
                            "prompt": "a\u{0}\"z\" é"}),
    )
    .await;
    let sent = all_changes(&app, 0).await;
    let pages = [
        app.get("/tool-uses?limit=100").await.1,
        app.get("/missions?limit=100").await.1,
    ];
    let sessions = app.get("/sessions?limit=100").await.1;
    assert!(
        sessions["sessions"].as_array().unwrap().iter().any(|s| {
            s["cwd"].is_string() && s["transcriptPath"].is_string() && s["cli"].is_string()
        }),
        "{sessions}"
    );
    let listed = pages
        .iter()
        .flat_map(|p| p.as_object().unwrap().values())
        .filter_map(Value::as_array)
        .flatten()
        .count();
    assert!(listed > 10, "{pages:?}");
    let dir = app.stop().await;
    let db = dir.path().join("hooklog.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let raw = raw_rows(&conn);
    // Each names its session's hero.
    for row in pages
        .iter()
        .flat_map(|p| p.as_object().unwrap().values())
        .filter_map(Value::as_array)
        .flatten()
    {
        let hero: String = conn
            .query_row(
                "SELECT id FROM heroes WHERE session_id = ?1",
                [row["sessionId"].as_str().unwrap()],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(row["heroId"], hero.as_str(), "{row}");
    }
    let slim = slim_rows(&conn);
    let mut shaped = 0;
    for ((sequence, stored, shape), (_, deltas)) in raw.iter().zip(&slim) {
        match shape {
            Some(_) => {
                shaped += 1;
                let values: Vec<Value> = serde_json::from_str(stored).unwrap();
                assert!(values.len() <= changes::shape::MAX_VALUES);
                assert!(values.iter().all(|v| v.is_string() || v.is_number()));
            }
            None => assert_eq!(
                changes::shape::split(deltas),
                None,
                "event {sequence}: a row that could be shaped is whole"
            ),
        }
    }
    let shapes: usize = before[0].parse().unwrap();
    assert!(shaped > 2 * shapes, "{shaped} rows, {shapes} shapes");
    let bytes = |rows: &[(i64, String)]| rows.iter().map(|(_, c)| c.len()).sum::<usize>();
    let stored: usize = raw.iter().map(|(_, c, _)| c.len()).sum();
    assert!(
        stored * 3 < bytes(&slim),
        "the rows hold less than a third of their deltas: {stored} against {}",
        bytes(&slim)
    );
    // The view gives what the route sends.
    let viewed: Vec<(i64, Value)> = conn
        .prepare(SENT_ROWS)
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|row| {
            let (sequence, text) = row.unwrap();
            (sequence, serde_json::from_str(&text).unwrap())
        })
        .collect();
    let as_sent: Vec<(i64, Value)> = sent
        .iter()
        .map(|c| (c["sequence"].as_i64().unwrap(), c["changes"].clone()))
        .collect();
    assert_eq!(viewed, as_sent);

    // The file as schema 26 left it: every row whole.
    common::as_schema_26(&conn);
    drop(conn);
    let app = common::start(Config::for_path(&db), dir).await;
    assert_eq!(all_changes(&app, 0).await, sent);
    // Tool uses and missions, which named their hero until 0030, read the same after it;
    // sessions, whose details were in their row until 0034, too.
    assert_eq!(
        [
            app.get("/tool-uses?limit=100").await.1,
            app.get("/missions?limit=100").await.1,
        ],
        pages
    );
    assert_eq!(app.get("/sessions?limit=100").await.1, sessions);
    let dir = app.stop().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    assert_eq!(
        raw_rows(&conn),
        raw,
        "the upgrade stores what a fresh file does"
    );
    drop(conn);
    assert_rebuilds_to_live(&db);
    drop(dir);
}
