//! Issue 31: full-text search through the real server and file. Hits for a command, a file
//! path, a prompt's phrase and a claim's chat; the filters and both orders' paging; what a
//! person types never breaks the query (a malformed FTS5 expression is a 400 in `fts` mode
//! only); pruning leaves no hit on a pruned event; `rebuild --check` is clean with the index.

use crate::common;

use common::{TestApp, spawn_app, spawn_app_with, wait_for};
use hooklog::store::retention::Retention;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const CLAUDE: &str = "8c2e4f1a-3b7d-4e9a-a5c6-1d2f3e4a5b6c";
const CODEX: &str = "019a7c3e-5b2d-7f10-9c4e-2a6b8d0f1e3c";

async fn search(app: &TestApp, query: &[(&str, &str)]) -> (StatusCode, Value) {
    let response = app
        .client
        .get(format!("{}/search", app.url))
        .query(query)
        .send()
        .await
        .expect("request sent");
    let status = response.status();
    (status, response.json().await.expect("a JSON answer"))
}

async fn hits(app: &TestApp, query: &[(&str, &str)]) -> Vec<Value> {
    let (status, body) = search(app, query).await;
    assert_eq!(status, StatusCode::OK, "{query:?}: {body}");
    body["hits"].as_array().unwrap().clone()
}

fn types(hits: &[Value]) -> Vec<&str> {
    hits.iter().map(|h| h["type"].as_str().unwrap()).collect()
}

fn sequences(hits: &[Value]) -> Vec<i64> {
    hits.iter()
        .map(|h| h["sequence"].as_i64().unwrap())
        .collect()
}

/// The snippet's matched pieces, lowercased.
fn matched(hit: &Value) -> Vec<String> {
    hit["snippet"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["match"] == true)
        .map(|p| p["text"].as_str().unwrap().to_lowercase())
        .collect()
}

/// The Claude Code and Codex fixtures on `/event`, and a claim on a chat.
async fn loaded() -> TestApp {
    let app = spawn_app().await;
    app.post_fixture("/event", "claude-code-session").await;
    app.post_fixture("/event", "codex-lifecycle").await;
    let (status, claim) = app
        .post_hook(
            "/claims",
            &json!({"chat": "dm:alice-ops", "sessionId": "s-chat"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{claim}");
    app
}

#[tokio::test]
async fn a_command_a_file_path_a_prompt_phrase_and_a_claim_are_found() {
    let app = loaded().await;

    // A command: the Bash calls that ran it, newest first, with the event's positions.
    let found = hits(&app, &[("q", "git commit")]).await;
    assert_eq!(types(&found), ["PostToolUse", "PreToolUse"], "{found:#?}");
    let pre = &found[1];
    assert_eq!(pre["sessionId"], CLAUDE);
    assert_eq!(pre["source"], "hook");
    assert!(pre["id"].as_str().is_some_and(|id| !id.is_empty()));
    assert!(pre["sessionSequence"].as_i64().unwrap() > 0);
    assert!(pre["eventTime"].as_str().unwrap().ends_with('Z'));
    assert!(found[0]["sequence"].as_i64() > pre["sequence"].as_i64());
    assert!(matched(pre).starts_with(&["git".to_string(), "commit".to_string()]));
    let stored: String = app
        .db()
        .query_row(
            "SELECT event_id FROM events WHERE sequence = ?1",
            [pre["sequence"].as_i64().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(pre["id"], stored.as_str());

    // A file path, typed as it is (the dot is no FTS5 syntax in the default mode): the Edit's
    // call, permission request and result, and the subagent's report of it.
    let found = hits(&app, &[("q", "totals.rs")]).await;
    for expected in [
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "SubagentStop",
    ] {
        assert!(types(&found).contains(&expected), "{expected}: {found:#?}");
    }
    assert!(
        found
            .iter()
            .all(|h| matched(h).contains(&"totals.rs".to_string()))
    );

    // A phrase of a prompt, in double quotes; its words apart do not make it.
    let found = hits(&app, &[("q", "\"off by a cent\"")]).await;
    assert_eq!(types(&found), ["UserPromptSubmit"]);
    assert!(hits(&app, &[("q", "\"cent off\"")]).await.is_empty());
    // Codex's prompt, by a word of it.
    let found = hits(&app, &[("q", "endpoint")]).await;
    assert!(found.iter().all(|h| h["sessionId"] == CODEX), "{found:#?}");
    assert!(types(&found).contains(&"UserPromptSubmit"));

    // A claim: the coordination outcome names the chat, and the session that claimed it.
    let found = hits(&app, &[("q", "alice-ops")]).await;
    assert_eq!(types(&found), ["claim_granted"]);
    assert_eq!(found[0]["source"], "coordination");
    assert_eq!(found[0]["sessionId"], Value::Null);
    let by_session = hits(&app, &[("q", "s-chat"), ("type", "claim_granted")]).await;
    assert_eq!(sequences(&by_session), sequences(&found));

    // Nothing matches a word no event has.
    let (status, body) = search(&app, &[("q", "zanzibar")]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["hits"], json!([]));
    assert_eq!(body["nextCursor"], Value::Null);
}

#[tokio::test]
async fn filters_narrow_and_cursors_page_through_every_hit_once() {
    let app = loaded().await;
    // "test" is in many events of both sessions.
    let all = hits(&app, &[("q", "test"), ("limit", "1000")]).await;
    assert!(all.len() >= 8, "{all:#?}");
    let mut newest_first = sequences(&all);
    newest_first.sort_by(|a, b| b.cmp(a));
    assert_eq!(sequences(&all), newest_first);
    assert!(all.iter().any(|h| h["sessionId"] == CODEX));

    // Filters: session, type, source, and time.
    let claude = hits(
        &app,
        &[("q", "test"), ("session", CLAUDE), ("limit", "1000")],
    )
    .await;
    assert!(!claude.is_empty() && claude.len() < all.len());
    assert!(claude.iter().all(|h| h["sessionId"] == CLAUDE));
    let pre = hits(
        &app,
        &[("q", "test"), ("type", "PreToolUse"), ("limit", "1000")],
    )
    .await;
    assert!(!pre.is_empty() && pre.iter().all(|h| h["type"] == "PreToolUse"));
    assert!(
        hits(&app, &[("q", "test"), ("source", "normalized")])
            .await
            .is_empty()
    );
    assert_eq!(
        hits(
            &app,
            &[("q", "test"), ("source", "hook"), ("limit", "1000")]
        )
        .await
        .len(),
        all.len()
    );
    let times: Vec<&str> = all
        .iter()
        .map(|h| h["eventTime"].as_str().unwrap())
        .collect();
    let middle = times[times.len() / 2];
    let since = hits(&app, &[("q", "test"), ("since", middle), ("limit", "1000")]).await;
    let until = hits(&app, &[("q", "test"), ("until", middle), ("limit", "1000")]).await;
    assert!(
        since
            .iter()
            .all(|h| h["eventTime"].as_str().unwrap() >= middle)
    );
    assert!(
        until
            .iter()
            .all(|h| h["eventTime"].as_str().unwrap() < middle)
    );
    assert_eq!(since.len() + until.len(), all.len());
    assert_eq!(
        hits(&app, &[("q", "test"), ("since", "1h"), ("limit", "1000")])
            .await
            .len(),
        all.len()
    );
    assert!(
        hits(&app, &[("q", "test"), ("until", "1h")])
            .await
            .is_empty()
    );

    // Pages of 3, newest first and by rank: every hit once, in order.
    for order in ["newest", "rank"] {
        let mut paged: Vec<Value> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut query = vec![("q", "test"), ("limit", "3"), ("order", order)];
            if let Some(c) = &cursor {
                query.push(("cursor", c));
            }
            let (status, body) = search(&app, &query).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["order"], order);
            let page = body["hits"].as_array().unwrap();
            assert!(page.len() <= 3);
            paged.extend(page.iter().cloned());
            match body["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
        let mut got = sequences(&paged);
        if order == "rank" {
            let ranks: Vec<f64> = paged.iter().map(|h| h["rank"].as_f64().unwrap()).collect();
            assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
            got.sort_by(|a, b| b.cmp(a));
        }
        assert_eq!(got, sequences(&all), "{order}");
    }
    // A cursor of the other order, or none of ours: 400.
    for (order, cursor) in [("newest", "r:-1.5:3"), ("rank", "12"), ("newest", "x")] {
        let (status, body) =
            search(&app, &[("q", "test"), ("order", order), ("cursor", cursor)]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"], "invalid_request");
    }
    // Origin: every event here was stored by this hooklog, except one stored elsewhere
    // (an exported event keeps its origin), which only its origin's filter finds.
    let (status, body) = app
        .post_json(&json!({
            "schemaVersion": "hooklog.event.v1",
            "id": "far-away-1",
            "type": "note",
            "context": {"sessionId": "s-far", "source": "manual", "origin": "devbox-far",
                        "eventTime": "2026-11-30T12:00:00Z", "receivedAt": "2026-11-30T12:00:01Z"},
            "payload": {"message": "test from far away"}
        }))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let far = hits(&app, &[("q", "test"), ("origin", "devbox-far")]).await;
    assert_eq!(far.len(), 1, "{far:#?}");
    assert_eq!(
        (&far[0]["id"], &far[0]["origin"]),
        (&json!("far-away-1"), &json!("devbox-far"))
    );
    let here = all[0]["origin"].as_str().unwrap().to_string();
    assert!(!here.is_empty() && here != "devbox-far");
    let local = hits(&app, &[("q", "test"), ("origin", &here), ("limit", "1000")]).await;
    assert_eq!(sequences(&local), sequences(&all));
}

/// Issue 43: by rank, the best match first. A word said three times in a short command beats
/// it said once (in a long one or a short one); with `OR`, the rarer word weighs more than one
/// every match has. The score is computed among the newest matches (`rank.rs`), not by FTS5.
#[tokio::test]
async fn by_rank_the_text_that_says_it_most_and_the_rarer_word_come_first() {
    let app = spawn_app().await;
    let commands = [
        "echo needle then a long line of words that say little about anything at all here",
        "needle needle needle",
        "echo needle",
        "echo needle and something rare",
    ];
    let lines: Vec<Value> = commands
        .iter()
        .map(|command| {
            json!({"type": "PreToolUse", "source": "hook", "sessionId": "s-rank",
                "payload": {"tool_name": "Bash", "tool_input": {"command": command}}})
        })
        .collect();
    let (status, body) = app.post_ndjson(&lines).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let all = hits(&app, &[("q", "needle"), ("order", "newest")]).await;
    let sequence_of = |command: &str| {
        let i = commands.iter().position(|c| *c == command).unwrap();
        sequences(&all)[commands.len() - 1 - i]
    };

    let ranked = hits(&app, &[("q", "needle"), ("order", "rank")]).await;
    assert_eq!(ranked.len(), 4);
    assert_eq!(
        ranked[0]["sequence"].as_i64(),
        Some(sequence_of("needle needle needle")),
        "{ranked:?}"
    );
    let position = |hits: &[Value], command: &str| {
        sequences(hits)
            .iter()
            .position(|s| *s == sequence_of(command))
            .unwrap()
    };
    assert!(
        position(&ranked, "echo needle") < position(&ranked, commands[0]),
        "the same word once in a shorter text ranks first: {ranked:?}"
    );

    let ranked = hits(
        &app,
        &[("q", "needle OR rare"), ("mode", "fts"), ("order", "rank")],
    )
    .await;
    assert_eq!(
        ranked[0]["sequence"].as_i64(),
        Some(sequence_of("echo needle and something rare")),
        "{ranked:?}"
    );
    let ranks: Vec<f64> = ranked.iter().map(|h| h["rank"].as_f64().unwrap()).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
}

#[tokio::test]
async fn what_a_person_types_never_breaks_the_query_and_fts_mode_says_what_is_wrong() {
    let app = loaded().await;
    // Stray quotes, FTS5 operators and punctuation are text in the default mode.
    for typed in [
        "\"cargo",
        "cargo\"",
        "cargo AND",
        "NOT",
        "(checkout",
        "col:value",
        "NEAR(a b",
        "^-*",
        "it's",
        "rm -rf build",
        "totals.rs:88",
        "pasted\nacross\tlines\r\n",
        "\"\"",
    ] {
        let (status, body) = search(&app, &[("q", typed)]).await;
        assert_eq!(status, StatusCode::OK, "{typed:?}: {body}");
        assert!(body["hits"].is_array(), "{typed:?}: {body}");
    }
    let found = hits(&app, &[("q", "\"cargo")]).await;
    assert!(
        !found.is_empty(),
        "the stray quote is ignored, the word searched"
    );
    let found = hits(&app, &[("q", "totals.rs:88")]).await;
    assert_eq!(types(&found), ["PostToolUse", "SubagentStop"]);
    // The expression that ran is in the answer.
    let (_, body) = search(&app, &[("q", "chec* \"half to\"")]).await;
    assert_eq!(body["query"], "\"chec\"* \"half to\"");
    assert!(!body["hits"].as_array().unwrap().is_empty());

    // FTS5 syntax in fts mode: it works, and a malformed expression is a 400 envelope.
    let found = hits(&app, &[("q", "cargo NOT checkout"), ("mode", "fts")]).await;
    assert!(found.is_empty(), "{found:#?}");
    let found = hits(&app, &[("q", "commit OR endpoint"), ("mode", "fts")]).await;
    assert!(
        found.iter().any(|h| h["sessionId"] == CODEX)
            && found.iter().any(|h| h["sessionId"] == CLAUDE)
    );
    for bad in [
        "\"cargo",
        "cargo AND",
        "(checkout",
        "col:value",
        "NEAR(a b",
        "totals.rs",
    ] {
        let (status, body) = search(&app, &[("q", bad), ("mode", "fts")]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}: {body}");
        assert_eq!(body["error"], "invalid_request");
        assert_eq!(body["details"]["mode"], "fts");
        assert!(body["message"].as_str().unwrap().contains("FTS5"), "{body}");
    }
    // Refusals of the request itself.
    for query in [
        vec![],
        vec![("q", "  ")],
        vec![("q", "x"), ("mode", "regex")],
        vec![("q", "x"), ("order", "oldest")],
        vec![("q", "x"), ("limit", "0")],
        vec![("q", "x"), ("since", "yesterday")],
        vec![("q", "x"), ("bogus", "1")],
        // Issue 44: a NUL was a 500 in words mode.
        vec![("q", "a\u{0}b")],
        vec![("q", "a\u{0}b"), ("mode", "fts")],
        vec![("q", "\u{1}\u{7f}")],
    ] {
        let (status, body) = search(&app, &query).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query:?}: {body}");
    }
    let long = "x ".repeat(1500);
    let (status, _) = search(&app, &[("q", &long)]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn after_pruning_no_hit_points_at_a_pruned_event_and_rebuild_check_is_clean() {
    let app = spawn_app_with(|c| {
        c.retention = Retention {
            max_events: Some(30),
            max_age: None,
        }
    })
    .await;
    // 60 events that all say "needle", one request each, so pruning runs between them.
    for i in 0..60 {
        app.post_hook_ok(json!({"hook_event_name": "PreToolUse", "session_id": "p1",
            "tool_name": "Bash", "tool_use_id": format!("t{i}"),
            "tool_input": {"command": format!("echo needle {i}")}}))
            .await;
    }
    wait_for(Duration::from_secs(10), "pruning to 30 events", || {
        app.event_count() == 30
    })
    .await;
    let first_kept: i64 = app
        .db()
        .query_row("SELECT MIN(sequence) FROM events", [], |r| r.get(0))
        .unwrap();
    let found = hits(&app, &[("q", "needle"), ("limit", "1000")]).await;
    assert_eq!(found.len(), 30);
    assert!(sequences(&found).iter().all(|s| *s >= first_kept));
    for hit in &found {
        let (status, _) = app
            .get(&format!("/events/{}", hit["id"].as_str().unwrap()))
            .await;
        assert_eq!(status, StatusCode::OK, "{hit}");
    }
    let (rows, below): (i64, i64) = app
        .db()
        .query_row(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE sequence < ?1) FROM search_text",
            [first_kept],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((rows, below), (30, 0));
    let indexed: i64 = app
        .db()
        .query_row(
            "SELECT COUNT(*) FROM search WHERE search MATCH 'needle'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexed, 30, "the FTS5 index has no pruned event either");

    let db = app.db_path.clone();
    let _dir = app.stop().await;
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["rebuild", "--check", "--db"])
        .arg(&db)
        .output()
        .expect("run hooklog rebuild --check");
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{out}");
    assert!(out.contains("and the search index its text"), "{out}");
}

#[tokio::test]
async fn rebuild_check_reports_an_index_that_differs_from_the_log() {
    let app = loaded().await;
    let db = app.db_path.clone();
    let dir = app.stop().await;
    let rebuild = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
            .arg("rebuild")
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .expect("run hooklog rebuild")
    };
    let clean = rebuild(&["--check"]);
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );

    // A row of text changed by hand: the check names it, a rebuild puts it back.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE search_text SET text = 'tampered' WHERE sequence = (SELECT MAX(sequence) FROM search_text)",
        [],
    )
    .unwrap();
    drop(conn);
    let dirty = rebuild(&["--check"]);
    let out = String::from_utf8_lossy(&dirty.stdout);
    assert!(!dirty.status.success(), "{out}");
    assert!(
        out.contains("search_text:") && out.contains("tampered"),
        "{out}"
    );
    assert!(out.contains("search index does not match"), "{out}");
    assert!(rebuild(&[]).status.success());
    let again = rebuild(&["--check"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );

    // And the index itself serves the rebuilt text.
    let app = common::start(hooklog::config::Config::for_path(&db), dir).await;
    assert!(hits(&app, &[("q", "tampered")]).await.is_empty());
    assert!(!hits(&app, &[("q", "totals.rs")]).await.is_empty());
}

#[tokio::test]
async fn a_database_from_before_search_is_indexed_when_it_is_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    {
        // Schema 10 with two events, as a hooklog before issue 31 left it.
        let mut conn = rusqlite::Connection::open(&db).unwrap();
        for (number, (_, sql, _)) in hooklog::store::migrate::MIGRATIONS
            .iter()
            .enumerate()
            .take(10)
        {
            conn.execute_batch(sql).unwrap();
            conn.pragma_update(None, "user_version", (number + 1) as i64)
                .unwrap();
        }
        let tx = conn.transaction().unwrap();
        tx.execute_batch(
            r#"INSERT INTO events VALUES
               (1, 'e1', 's1', 1, 'UserPromptSubmit', 'hook', '2026-11-30T00:00:00.000Z',
                '2026-11-30T00:00:00.000Z', '{"prompt":"make the widget blue","sessionId":"s1"}'),
               (2, 'e2', 's1', 2, 'PreToolUse', 'hook', '2026-11-30T00:00:01.000Z',
                '2026-11-30T00:00:01.000Z', '{"tool":"Bash","toolInput":{"command":"paint widget"},"sessionId":"s1"}');"#,
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let app = common::start(hooklog::config::Config::for_path(&db), dir).await;
    let found = hits(&app, &[("q", "widget")]).await;
    assert_eq!(sequences(&found), [2, 1]);
}

/// Issue 41: search rows are written after the commit that acknowledged their events. What a
/// crash between the two commits leaves (events stored, their search rows not, `search_through`
/// behind) is caught up from the log when the server starts again, and `/health` shows the lag
/// until then.
#[tokio::test]
async fn search_rows_a_crash_left_unwritten_are_made_from_the_log_on_start() {
    let app = loaded().await;
    let (_, page) = search(&app, &[("q", "totals.rs")]).await;
    let head = app.get("/health").await.1["headSequence"].as_i64().unwrap();
    assert_eq!(page["indexedThrough"], head, "a search waits for the head");
    let (_, health) = app.get("/health").await;
    assert_eq!(health["search"]["indexedThrough"], head, "{health}");
    assert_eq!(health["search"]["lagEvents"], 0, "{health}");
    let db = app.db_path.clone();
    let dir = app.stop().await;

    // The state a kill -9 between an acknowledging commit and its search rows' commit leaves.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let behind = head / 2;
    let rows_above = |conn: &rusqlite::Connection| -> Vec<(i64, String)> {
        let mut rows = conn
            .prepare("SELECT sequence, text FROM search_text WHERE sequence > ?1 ORDER BY 1")
            .unwrap();
        rows.query_map([behind], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let lost = rows_above(&conn);
    let with_bash: Vec<i64> = lost
        .iter()
        .filter(|(_, text)| text.contains("Bash"))
        .map(|(s, _)| *s)
        .collect();
    assert!(!with_bash.is_empty(), "{lost:?}");
    conn.execute_batch(&format!(
        "INSERT INTO search (search, rowid, text)
             SELECT 'delete', sequence, text FROM search_text WHERE sequence > {behind};
         DELETE FROM search_text WHERE sequence > {behind};
         UPDATE meta SET value = '{behind}' WHERE key = 'search_through';"
    ))
    .unwrap();
    drop(conn);

    let app = common::start(hooklog::config::Config::for_path(&db), dir).await;
    let found = sequences(&hits(&app, &[("q", "Bash"), ("limit", "1000")]).await);
    for sequence in &with_bash {
        assert!(found.contains(sequence), "{sequence} in {found:?}");
    }
    let (_, health) = app.get("/health").await;
    assert_eq!(health["search"]["indexedThrough"], head, "{health}");
    assert_eq!(health["search"]["lagEvents"], 0, "{health}");
    let db = app.db_path.clone();
    let _dir = app.stop().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    assert_eq!(rows_above(&conn), lost, "the same rows, made again");
    drop(conn);
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["rebuild", "--check", "--db"])
        .arg(&db)
        .output()
        .expect("run hooklog rebuild --check");
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{out}");
}

/// Issue 44, finding 4: a search has a budget. One that runs past it is stopped by SQLite and
/// answered 400, the readers it used serve other reads at once; too many terms or prefixes are
/// refused before anything runs.
#[tokio::test]
async fn a_search_past_its_budget_is_stopped_and_the_readers_stay_usable() {
    let app = spawn_app_with(|c| c.security.search_budget = Duration::ZERO).await;
    // Enough matches that ranking them takes more than SQLite's first look at the budget.
    for batch in 0..4 {
        let lines: Vec<Value> = (0..500)
            .map(|i| {
                json!({"type": "PreToolUse", "source": "hook", "sessionId": format!("b{batch}"),
                    "payload": {"tool_name": "Bash",
                        "tool_input": {"command": format!("cargo test --release part{i}")}}})
            })
            .collect();
        let (status, body) = app.post_ndjson(&lines).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    for _ in 0..3 {
        let (status, body) = search(&app, &[("q", "cargo"), ("order", "rank")]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["details"]["budgetMs"], 0, "{body}");
    }
    // Every pooled reader is free of the stopped searches' check.
    for _ in 0..20 {
        let (status, body) = app.get("/events?limit=1").await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    let app = loaded().await;
    let prefixes = (b'a'..=b'i')
        .map(|c| format!("{}*", c as char))
        .collect::<Vec<_>>()
        .join(" ");
    let words = (0..65)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    for q in [prefixes.as_str(), words.as_str()] {
        let (status, body) = search(&app, &[("q", q)]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["details"]["maxPrefixes"], 8, "{body}");
    }
    let (status, body) = search(&app, &[("q", "a* b* c*")]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// A budgeted read stops once its budget is spent, and as soon as its caller lets go of it:
/// a query that would never end gives its reader back either way.
#[tokio::test]
async fn a_budgeted_read_stops_at_its_budget_and_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = hooklog::config::Config::for_path(dir.path().join("h.db"));
    config.reader_pool_size = 1;
    let store = std::sync::Arc::new(hooklog::store::Store::open(&config, ()).unwrap());
    let endless = |conn: &rusqlite::Connection| {
        conn.query_row(
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT COUNT(*) FROM n",
            [],
            |r| r.get::<_, i64>(0),
        )
    };
    let started = std::time::Instant::now();
    let stopped = store.read_within(Duration::from_millis(200), endless).await;
    assert!(
        matches!(stopped, Err(hooklog::store::StoreError::OverBudget { .. })),
        "{stopped:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // Dropped after a moment, with a budget of an hour: the one reader comes back.
    let read = store.read_within(Duration::from_secs(3600), endless);
    let _ = tokio::time::timeout(Duration::from_millis(100), read).await;
    let one = tokio::time::timeout(
        Duration::from_secs(10),
        store.read(|conn| conn.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))),
    )
    .await
    .expect("the reader was given back")
    .unwrap();
    assert_eq!(one, 1);
}
