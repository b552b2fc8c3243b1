//! Retention through the real server and file: the writer prunes the oldest events, positions
//! keep counting (globally and per session, across a restart), a cursor into pruned history is
//! refused on a session stream and announced with `STREAM_GAP` on the global stream.

use crate::common;

use common::sse::SseReader;
use common::{assert_rebuilds_to_live, dump_projections, spawn_app_with, start, wait_for};
use hooklog::config::Config;
use hooklog::store::retention::Retention;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

fn count(app: &common::TestApp) -> (i64, Option<i64>) {
    app.db()
        .query_row("SELECT COUNT(*), MIN(sequence) FROM events", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
}

#[tokio::test]
async fn pruning_by_count_keeps_positions_counting_and_refuses_pruned_cursors() {
    let retention = Retention {
        max_events: Some(100),
        max_age: None,
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    app.post_session_events("a", 50).await;
    for _ in 0..2 {
        app.post_session_events("b", 100).await;
    }
    wait_for(WAIT, "pruning to 100 events", || {
        count(&app) == (100, Some(151))
    })
    .await;

    // Session a lost every event, but its numbering and the log's go on.
    let ack = app.post_session_events("a", 1).await;
    assert_eq!(ack[0]["sequence"], 251);
    assert_eq!(ack[0]["sessionSequence"], 51);
    let pruned: i64 = app
        .db()
        .query_row(
            "SELECT last_session_sequence FROM pruned_sessions WHERE session_id = 'a'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(pruned, 50);

    // A session cursor inside pruned history: refused, with the bounds.
    let response = app
        .stream("/sessions/a/events?after_sequence=10", &[])
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["outcome"], "CURSOR_STALE");
    assert_eq!(body["firstAvailableSequence"], 51);
    assert_eq!(body["headSequence"], 51);
    // The cursor at the boundary is fine.
    let mut reader = SseReader::new(
        app.stream("/sessions/a/events?after_sequence=50", &[])
            .await,
    );
    assert_eq!(reader.next_event(WAIT).await.unwrap().position(), 51);

    // The global stream says what was lost, then continues from the first retained event.
    let mut global = SseReader::new(app.stream("/events?after_sequence=20", &[]).await);
    let gap = global.next_event(WAIT).await.unwrap();
    assert_eq!(gap.event.as_deref(), Some("STREAM_GAP"));
    assert_eq!(gap.id.as_deref(), Some("0"));
    let first_kept = count(&app).1.unwrap();
    assert_eq!(
        gap.envelope(),
        json!({"type": "STREAM_GAP", "fromSequence": 21, "toSequence": first_kept - 1, "firstAvailableSequence": first_kept})
    );
    assert_eq!(
        global.next_event(WAIT).await.unwrap().position(),
        first_kept
    );
    let (_, page) = app.get("/events?after_sequence=20&limit=1").await;
    assert_eq!(
        page["firstAvailableSequence"], first_kept,
        "a JSON page shows the boundary too"
    );
    assert_eq!(page["events"][0]["context"]["sequence"], first_kept);

    // After a restart the numbering still continues: the pruned head is in meta.
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    let app = start(
        Config {
            retention,
            ..Config::for_path(&db_path)
        },
        dir,
    )
    .await;
    let ack = app.post_session_events("a", 1).await;
    assert_eq!(ack[0]["sequence"], 252);
    assert_eq!(ack[0]["sessionSequence"], 52);
}

#[tokio::test]
async fn pruning_by_age_empties_an_idle_log_and_numbering_continues() {
    let retention = Retention {
        max_events: None,
        max_age: Some(Duration::from_millis(300)),
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    app.post_session_events("s", 10).await;
    // No more events arrive: the writer's periodic step prunes them once they are old enough.
    wait_for(WAIT, "every event to age out", || count(&app).0 == 0).await;
    let (_, health) = app.get("/health").await;
    assert_eq!(health["headSequence"], 10);
    let ack = app.post_session_events("s", 1).await;
    assert_eq!(ack[0]["sequence"], 11);
    assert_eq!(ack[0]["sessionSequence"], 11);
    let probe: Value = app.probe("/sessions/s/events").await.json().await.unwrap();
    assert_eq!(probe["outcome"], "STREAM_READY");
    assert_eq!(probe["firstAvailableSequence"], 11);
}

fn meta(app: &common::TestApp, key: &str) -> Option<i64> {
    app.db()
        .query_row(
            "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1",
            [key],
            |r| r.get(0),
        )
        .ok()
}

fn hooklog_rebuild(db: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .arg("rebuild")
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("run hooklog rebuild")
}

/// Issues 4 and 7: projections keep what pruned events built, and `hooklog rebuild` still
/// reproduces them (from the retention snapshot at the pruned boundary, then the retained
/// tail). A mixed workload (hook fixture, normalized fixture, coordination commands, factory
/// and API events) is pruned over many steps while it arrives.
#[tokio::test]
async fn rebuild_after_pruning_starts_from_the_snapshot_and_equals_the_live_tables() {
    const KEEP: i64 = 1_500;
    let retention = Retention {
        max_events: Some(KEEP as u64),
        max_age: None,
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    app.post_fixture("/event", "claude-code-session").await;
    app.post_fixture("/event/normalized", "normalized-session")
        .await;
    for i in 0..40 {
        let post = |path: &'static str, body: Value| {
            app.post_raw(path, "application/json", body.to_string().into_bytes())
        };
        post(
            "/claims",
            json!({"chat": format!("c{}", i % 7), "sessionId": format!("s{}", i % 5)}),
        )
        .await;
        post(
            "/owners/acquire",
            json!({"platform": "x", "account": format!("a{}", i % 4), "pid": i + 1, "hostname": "h"}),
        )
        .await;
        post(
            "/gaps",
            json!({"platform": "x", "account": format!("a{}", i % 4), "reason": "r"}),
        )
        .await;
    }
    let mut boundaries = Vec::new();
    // Requests of PRUNE_MIN_STEP events: each one's batch is followed by a prune step.
    for chunk in 0..12 {
        let events: Vec<Value> = (chunk * 1000..(chunk + 1) * 1000)
            .map(hooklog::bench::rebuild::mixed_event)
            .collect();
        let (status, body) = app.post_json(&Value::Array(events)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        wait_for(WAIT, "pruning down to the limit", || {
            app.event_count() <= KEEP
        })
        .await;
        let pruned = meta(&app, "pruned_through_sequence").unwrap();
        assert_eq!(
            hooklog::store::snapshot::through(&app.db()).unwrap(),
            Some(pruned),
            "the snapshot moves with the pruned boundary (its file commits first)"
        );
        boundaries.push(pruned);
    }
    boundaries.dedup();
    assert!(boundaries.len() >= 10, "many prune steps: {boundaries:?}");

    // The fixture session's events are all pruned; its hero, missions and tool uses remain.
    let session = "8c2e4f1a-3b7d-4e9a-a5c6-1d2f3e4a5b6c";
    tool_uses_outlive_their_events(&app, session).await;
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    let conn = rusqlite::Connection::open(&db_path).unwrap();
    let (left, heroes): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM events WHERE session_id = ?1),
                    (SELECT COUNT(*) FROM heroes WHERE session_id = ?1)",
            [session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((left, heroes), (0, 1));
    let live = dump_projections(&conn);
    drop(conn);

    let stats = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["stats", "--json", "--db"])
        .arg(&db_path)
        .output()
        .expect("run hooklog stats");
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(
        stats["snapshotThroughSequence"],
        stats["prunedThroughSequence"]
    );
    assert_ne!(stats["snapshotThroughSequence"], "0");

    let checked = hooklog_rebuild(&db_path, &["--check"]);
    let out = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{out}");
    assert!(out.contains("equal a rebuild"), "{out}");
    let rebuilt = hooklog_rebuild(&db_path, &[]);
    assert!(
        rebuilt.status.success(),
        "{}",
        String::from_utf8_lossy(&rebuilt.stderr)
    );
    assert!(
        String::from_utf8_lossy(&rebuilt.stdout).contains(&format!("from {KEEP} events")),
        "only the retained tail is replayed"
    );
    let conn = rusqlite::Connection::open(&db_path).unwrap();
    assert_eq!(dump_projections(&conn), live, "rebuilt equals live");
    drop(conn);
    // Sessions filled from the snapshot, with rows let go of and read back every few events.
    assert_rebuilds_to_live(&db_path);
    drop(dir);
}

/// Every session's tool uses are listed whether retention pruned the events that opened them
/// or not (migration 0031 finds them through the session's events, and the pruned ones through
/// their own index), page after page, filtered or not, and a mission shows its own; `fully`'s
/// are all pruned, and some session has both kinds.
async fn tool_uses_outlive_their_events(app: &common::TestApp, fully: &str) {
    let db = app.db();
    let sessions: Vec<(String, i64, i64)> = db
        .prepare(
            "SELECT session_id, COUNT(opening_pruned), COUNT(*) - COUNT(opening_pruned)
             FROM tool_uses GROUP BY session_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        sessions
            .iter()
            .any(|(s, p, k)| s == fully && *p > 0 && *k == 0)
    );
    assert!(
        sessions.iter().any(|(_, p, k)| *p > 0 && *k > 0),
        "{sessions:?}"
    );
    let ids = |sql: &str, key: &str| -> Vec<String> {
        db.prepare(sql)
            .unwrap()
            .query_map([key], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    for (session, _, _) in &sessions {
        for filter in ["", "&kind=bash"] {
            let mut listed = Vec::new();
            let mut before = String::new();
            loop {
                let (status, page) = app
                    .get(&format!(
                        "/tool-uses?session={session}{filter}&limit=7{before}"
                    ))
                    .await;
                assert_eq!(status, StatusCode::OK, "{page}");
                listed.extend(ids_in(&page["toolUses"]));
                match page["nextBefore"].as_i64() {
                    Some(next) => before = format!("&before={next}"),
                    None => break,
                }
            }
            let kind = match filter {
                "" => "",
                _ => "AND kind = 'bash'",
            };
            let stored = ids(
                &format!(
                    "SELECT id FROM tool_uses WHERE session_id = ?1 {kind}
                     ORDER BY opened_sequence DESC"
                ),
                session,
            );
            assert_eq!(listed, stored, "{session}{filter}");
        }
    }
    // And each session's missions, by session and by hero, in a state or not.
    let with_missions: Vec<String> = db
        .prepare(
            "SELECT session_id FROM missions GROUP BY session_id
             HAVING COUNT(opening_pruned) > 0 AND COUNT(opening_pruned) < COUNT(*)",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        !with_missions.is_empty(),
        "a session with both kinds of missions"
    );
    for session in with_missions.iter().map(String::as_str).chain([fully]) {
        let hero = hooklog::projection::heroes::hero_id(session);
        for (query, state) in [
            (format!("session={session}"), ""),
            (format!("heroId={hero}"), ""),
            (
                format!("session={session}&state=completed"),
                "AND state = 'completed'",
            ),
        ] {
            let (status, page) = app.get(&format!("/missions?{query}&limit=1000")).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            let listed = ids_in(&page["missions"]);
            let stored = ids(
                &format!(
                    "SELECT id FROM missions WHERE session_id = ?1 {state}
                     ORDER BY opened_sequence DESC"
                ),
                session,
            );
            assert!(!state.is_empty() || !stored.is_empty(), "{query}");
            assert_eq!(listed, stored, "{query}");
        }
    }
    // And each session's permission requests, page after page, in a state or not (migration
    // 0035: through the session's events, the pruned ones through their own index).
    let requesters: Vec<(String, i64)> = db
        .prepare(
            "SELECT session_id, COUNT(opening_pruned) FROM permission_requests
             GROUP BY session_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        requesters.iter().any(|(_, pruned)| *pruned > 0),
        "a request whose opening event was pruned: {requesters:?}"
    );
    for (session, _) in &requesters {
        for (filter, state) in [("", ""), ("&state=allowed", "AND state = 'allowed'")] {
            let mut listed = Vec::new();
            let mut before = String::new();
            loop {
                let (status, page) = app
                    .get(&format!(
                        "/permission-requests?session={session}{filter}&limit=2{before}"
                    ))
                    .await;
                assert_eq!(status, StatusCode::OK, "{page}");
                let rows = page["permissionRequests"].as_array().unwrap();
                listed.extend(
                    rows.iter()
                        .map(|r| r["requestId"].as_str().unwrap().to_string()),
                );
                match page["nextBefore"].as_i64() {
                    Some(next) => before = format!("&before={next}"),
                    None => break,
                }
            }
            let stored = ids(
                &format!(
                    "SELECT request_id FROM permission_requests WHERE session_id = ?1 {state}
                     ORDER BY sequence DESC"
                ),
                session,
            );
            assert_eq!(listed, stored, "{session}{filter}");
        }
    }
    let missions = ids(
        "SELECT DISTINCT mission_id FROM tool_uses WHERE session_id = ?1 AND mission_id IS NOT NULL",
        fully,
    );
    assert!(!missions.is_empty());
    for mission in missions {
        let (status, detail) = app.get(&format!("/missions/{mission}")).await;
        assert_eq!(status, StatusCode::OK, "{detail}");
        let shown = ids_in(&detail["toolUses"]);
        let stored = ids(
            "SELECT id FROM tool_uses WHERE mission_id = ?1 ORDER BY opened_sequence",
            &mission,
        );
        assert_eq!(shown, stored, "{mission}");
    }
}

/// The `id` of each row of a JSON array of rows.
fn ids_in(rows: &Value) -> Vec<String> {
    let rows = rows.as_array().expect("an array of rows");
    rows.iter()
        .map(|row| row["id"].as_str().expect("an id").to_string())
        .collect()
}

/// A database that pruned without a snapshot (before it kept one, or its snapshot file is
/// gone) cannot be rebuilt without losing what the pruned events built: `rebuild` and
/// `rebuild --check` say so and change nothing.
#[tokio::test]
async fn rebuild_refuses_a_log_pruned_before_the_snapshot_existed() {
    let app = spawn_app_with(|c| {
        c.retention = Retention {
            max_events: Some(5),
            max_age: None,
        }
    })
    .await;
    app.post_fixture("/event", "claude-code-session").await;
    wait_for(WAIT, "pruning", || app.event_count() == 5).await;
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    // What an older hooklog left (events pruned, no snapshot), or a copy of the database
    // without its snapshot file.
    std::fs::remove_file(hooklog::store::snapshot::path_of(&db_path)).unwrap();
    let conn = rusqlite::Connection::open(&db_path).unwrap();
    let before = dump_projections(&conn);
    drop(conn);
    for args in [&["--check"][..], &[][..]] {
        let out = hooklog_rebuild(&db_path, args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("there is no retention snapshot of what they built"),
            "{err}"
        );
    }
    let conn = rusqlite::Connection::open(&db_path).unwrap();
    assert_eq!(dump_projections(&conn), before, "nothing changed");
    drop(dir);
}

/// A prune step that keeps failing must show, not only be logged: the log then grows past its
/// limit while ingest goes on. Here a table of the snapshot file is renamed away from outside
/// (as a user's sqlite3 session could), so every prune step fails; `/health` and `/stats` say so
/// with the error, events are still stored, and once the table is back pruning resumes and
/// the state returns to `ok`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_prune_is_reported_by_health_and_clears_when_it_works_again() {
    let retention = Retention {
        max_events: Some(20),
        max_age: None,
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    let (_, health) = app.get("/health").await;
    assert_eq!(health["retention"], "ok");
    assert!(health.get("retentionError").is_none());
    app.post_session_events("a", 50).await;
    wait_for(WAIT, "pruning to 20 events", || count(&app).0 == 20).await;

    let outside =
        rusqlite::Connection::open(hooklog::store::snapshot::path_of(&app.db_path)).unwrap();
    outside.busy_timeout(WAIT).unwrap();
    outside
        .execute_batch("ALTER TABLE sessions RENAME TO sessions_away")
        .unwrap();
    // Ingest goes on; the log grows past its limit.
    app.post_session_events("a", 30).await;
    let health = health_once(&app, |h| h["retention"] == "failing").await;
    assert_eq!(health["ok"], true, "ingest still works: {health}");
    assert!(
        health["retentionError"]
            .as_str()
            .is_some_and(|e| e.contains("retention snapshot") && e.contains("sessions")),
        "{health}"
    );
    let (_, first) = app.get("/stats").await;
    assert_eq!(first["retention"]["state"], "failing");
    assert!(first["retention"]["failingSince"].is_string());
    // More batches (each followed by a prune step that finds too little due to try) and more
    // ticks: the state stays failing, the failures count up, and the run keeps its start.
    app.post_session_events("a", 5).await;
    let deadline = std::time::Instant::now() + WAIT;
    let stats = loop {
        let (_, stats) = app.get("/stats").await;
        assert_eq!(stats["retention"]["state"], "failing", "{stats}");
        assert_eq!(
            stats["retention"]["failingSince"], first["retention"]["failingSince"],
            "{stats}"
        );
        if stats["retention"]["consecutiveFailures"].as_u64().unwrap() >= 2 {
            break stats;
        }
        assert!(std::time::Instant::now() < deadline, "{stats}");
        app.post_session_events("a", 1).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(stats["retention"]["lastError"].is_string());
    let stored = count(&app).0;
    assert!(
        stored > 50,
        "nothing was pruned while failing ({stored} events)"
    );

    outside
        .execute_batch("ALTER TABLE sessions_away RENAME TO sessions")
        .unwrap();
    wait_for(WAIT, "pruning to resume", || count(&app).0 == 20).await;
    health_once(&app, |h| h["retention"] == "ok").await;
    let (_, stats) = app.get("/stats").await;
    assert_eq!(stats["retention"]["consecutiveFailures"], 0);
    assert!(stats["retention"]["pruned"].as_u64().unwrap() >= 60);
}

/// `GET /health` until its body satisfies `condition`, within `WAIT`; that body.
async fn health_once(app: &common::TestApp, condition: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (_, health) = app.get("/health").await;
        if condition(&health) {
            return health;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "health never got there: {health}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Pruning every event moves all it built into the snapshot: each table of the snapshot file
/// then equals its live table row for row, and the live tables are as they were. Every kind of event the
/// projections handle is pruned here, so a statement that read or wrote a live table while the
/// snapshot advanced would show.
#[tokio::test]
async fn pruning_everything_leaves_the_live_tables_and_the_snapshot_file_equal_to_them() {
    let retention = Retention {
        max_events: None,
        max_age: Some(Duration::from_secs(1)),
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    app.post_fixture("/event", "claude-code-session").await;
    app.post_fixture("/event/normalized", "normalized-session")
        .await;
    let events: Vec<Value> = (0..800).map(hooklog::bench::rebuild::mixed_event).collect();
    let (status, body) = app.post_json(&Value::Array(events)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // An account's event (`accounts`): its first owner below opens a gap from it.
    let message = json!({"type": "message", "source": "watch",
                         "payload": {"platform": "x", "account": "a", "position": "7"}});
    let (status, body) = app.post_json(&message).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Transcript records (`usage`) and a read of a transcript (`transcript_files`), as
    // `hooklog import` and the follower append them.
    let transcript = json!([
        {"type": "TranscriptMessage", "source": "transcript", "sessionId": "t1",
         "payload": {"cli": "claude-code", "model": "claude-haiku-4-5", "usageKey": "k1",
                     "usage": {"inputTokens": 3, "outputTokens": 9}}},
        {"type": "TranscriptRead", "source": "transcript", "sessionId": "t1",
         "payload": {"path": "/t/t1.jsonl", "readTo": 120}}
    ]);
    let (status, body) = app.post_json(&transcript).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let server = &app;
    let post = |path: String, body: Value| async move {
        let (status, answer) = server
            .post_raw(&path, "application/json", body.to_string().into_bytes())
            .await;
        assert!(status.is_success(), "{path}: {status} {answer}");
        answer
    };
    // Claims: granted, renewed, refused (held by another), released.
    let claim = json!({"chat": "c1", "sessionId": "s1", "ttlSeconds": 60});
    post("/claims".into(), claim.clone()).await;
    post("/claims".into(), claim).await;
    let (status, _) = app
        .post_raw(
            "/claims",
            "application/json",
            json!({"chat": "c1", "sessionId": "s2"})
                .to_string()
                .into_bytes(),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    post(
        "/claims/c1/release".into(),
        json!({"sessionId": "s1", "outcome": "sent"}),
    )
    .await;
    // Watcher owners: acquired, heartbeat, released.
    let owner = post(
        "/owners/acquire".into(),
        json!({"platform": "x", "account": "a", "pid": 7, "hostname": "h"}),
    )
    .await;
    let generation = owner["generation"]
        .as_i64()
        .unwrap_or_else(|| panic!("a generation in {owner}"));
    post(
        "/owners/x/a/heartbeat".into(),
        json!({"generation": generation, "attached": 2}),
    )
    .await;
    post(
        "/owners/x/a/release".into(),
        json!({"generation": generation}),
    )
    .await;
    // Gaps: one closed; one refused, then resumed.
    let open_gap = |account: &'static str| async move {
        let gap = post(
            "/gaps".into(),
            json!({"platform": "x", "account": account, "reason": "r"}),
        )
        .await;
        gap["id"]
            .as_str()
            .unwrap_or_else(|| panic!("an id in {gap}"))
            .to_string()
    };
    let id = open_gap("a").await;
    post(format!("/gaps/{id}/close"), json!({})).await;
    let id = open_gap("b").await;
    post(format!("/gaps/{id}/refuse"), json!({"detail": "d"})).await;
    post(format!("/gaps/{id}/resume"), json!({"by": "me"})).await;
    // An alert (the mixed workload's unknown `note` type raises them), acknowledged.
    let (_, alerts) = app.get("/alerts").await;
    let alert = alerts["alerts"][0]["id"].clone();
    assert!(!alert.is_null(), "an alert to acknowledge: {alerts}");
    post(format!("/alerts/{alert}/ack"), json!({"by": "me"})).await;

    // What each event changed and the mission it answered with (`agent_changes`), and its
    // search text (`search_text`), belong to its history and go with it. A tool use, a
    // mission or a permission request only notes that its opening event went
    // (`opening_pruned`, its last column).
    let opened = ["tool_uses: ", "missions: ", "permission_requests: "];
    let kept = |rows: Vec<String>| -> Vec<String> {
        rows.into_iter()
            .filter(|row| {
                !["agent_changes: ", "search_text: "]
                    .iter()
                    .any(|table| row.starts_with(table))
            })
            .map(|row| match opened.iter().any(|t| row.starts_with(t)) {
                true => row[..row.rfind(" | ").unwrap()].to_string(),
                false => row,
            })
            .collect()
    };
    let before = dump_projections(&app.db());
    assert!(
        before.iter().any(|row| row.starts_with("agent_changes: ")),
        "the workload changes heroes"
    );
    let live = kept(before);
    wait_for(Duration::from_secs(20), "every event pruned", || {
        app.event_count() == 0
    })
    .await;
    let conn = app.db();
    let after = dump_projections(&conn);
    assert_eq!(kept(after.clone()), live, "the live tables are untouched");
    for table in opened {
        let rows: Vec<&String> = after.iter().filter(|r| r.starts_with(table)).collect();
        assert!(!rows.is_empty(), "{table}");
        assert!(rows.iter().all(|r| r.ends_with(" | 1")), "{rows:?}");
    }
    assert_eq!(
        after.len(),
        live.len(),
        "the changes are pruned with their events"
    );
    let snapshot = common::open_read_only(&hooklog::store::snapshot::path_of(&app.db_path));
    // Read with plain SQL naming each table, not through the projections' statements.
    let rows = |conn: &rusqlite::Connection, table: &str| -> Vec<Vec<rusqlite::types::Value>> {
        let mut statement = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
            .unwrap();
        let columns = statement.column_count();
        statement
            .query_map([], |r| (0..columns).map(|i| r.get(i)).collect())
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    for table in hooklog::projection::TABLES {
        let live = rows(&conn, table);
        assert!(
            !live.is_empty() || *table == "agent_changes",
            "{table}: the workload builds rows in every table"
        );
        assert_eq!(
            rows(&snapshot, table),
            live,
            "{table}: the snapshot holds everything the pruned events built"
        );
    }
}

/// Not a check: how long a prune step takes (docs/performance.md, "The retention snapshot in a
/// file of its own"). A 60,000-event mixed log, then ten steps of `PRUNE_STEP` events each on the file
/// with `synchronous=FULL`. Run with `cargo test --release --test it retention::measure -- --ignored --nocapture`.
#[tokio::test]
#[ignore]
async fn measure_prune_steps() {
    let app = spawn_app_with(|_| {}).await;
    for chunk in 0..60 {
        let events: Vec<Value> = (chunk * 1000..(chunk + 1) * 1000)
            .map(hooklog::bench::rebuild::mixed_event)
            .collect();
        let (status, body) = app.post_json(&Value::Array(events)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let db_path = app.db_path.clone();
    let _dir = app.stop().await;
    let conn =
        hooklog::store::open::open_writer(&db_path, hooklog::config::Durability::Full).unwrap();
    let policy = Retention {
        max_events: Some(30_000),
        max_age: None,
    };
    // As the writer does: one snapshot handle, its file kept open between steps.
    let mut snapshot = hooklog::store::snapshot::Snapshot::of(&conn).unwrap();
    let mut times = Vec::new();
    for _ in 0..10 {
        let started = std::time::Instant::now();
        let step = hooklog::store::retention::prune_step_min(
            &conn,
            &mut snapshot,
            &policy,
            chrono::Utc::now(),
            1,
            None,
            None,
        )
        .unwrap();
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(step.pruned, hooklog::store::retention::PRUNE_STEP);
    }
    println!("prune steps of 2,000 events (ms): {times:.1?}");
}

/// A page filtered by type alone looks at a bounded window of events after its cursor; from a
/// cursor inside pruned history the window starts at the first retained event, so the page
/// does not spend its window on sequences that are gone.
#[tokio::test]
async fn a_filtered_page_from_a_pruned_cursor_looks_from_the_first_retained_event() {
    let retention = Retention {
        max_events: Some(100),
        max_age: None,
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    for _ in 0..12 {
        app.post_session_events("busy", 1000).await;
    }
    let rare = json!({"type": "Rare", "sessionId": "quiet", "payload": {}});
    let (status, answer) = app.post_json(&rare).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    wait_for(WAIT, "pruning to 100 events", || {
        count(&app) == (100, Some(11_902))
    })
    .await;
    let (_, page) = app.get("/events?type=Rare").await;
    assert_eq!(page["firstAvailableSequence"], 11_902, "{page}");
    assert_eq!(page["events"][0]["context"]["sequence"], 12_001, "{page}");
    assert_eq!(page["nextAfterSequence"], 12_001, "{page}");
}
