//! The named views of docs/schema.md ("Views"): each exists in a fresh database and answers
//! its question through the sqlite3 CLI, over transcripts imported with `hooklog import` and
//! hook events, coordination calls and an unknown event posted to the real server.

use crate::common;

use common::{TestApp, start};
use hooklog::config::Config;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const VIEWS: [&str; 10] = [
    "agents_now",
    "events_whole",
    "timeline",
    "recent_failures",
    "usage_by_day",
    "open_alerts",
    "pending_permissions",
    "owners",
    "held_claims",
    "changes_sent",
];

/// What the sqlite3 CLI prints for `sql` (with `args` before the file), or `None` without the
/// CLI (skipped, except under CI, where it must be installed).
fn sqlite3_text(args: &[&str], db: &Path, sql: &str) -> Option<String> {
    let output = match Command::new("sqlite3").args(args).arg(db).arg(sql).output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must have the sqlite3 CLI"
            );
            return None;
        }
        Err(e) => panic!("running sqlite3: {e}"),
    };
    assert!(
        output.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(String::from_utf8(output.stdout).unwrap())
}

/// The rows `sql` gives in the sqlite3 CLI (`-json`); `None` as [`sqlite3_text`].
fn sqlite3(db: &Path, sql: &str) -> Option<Vec<Value>> {
    let text = sqlite3_text(&["-json"], db, sql)?;
    // No rows: no output at all.
    Some(match text.trim() {
        "" => Vec::new(),
        rows => serde_json::from_str(rows).unwrap_or_else(|e| panic!("{e}: {rows}")),
    })
}

fn hooklog(args: &[&str]) {
    let output = Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(args)
        .output()
        .expect("run hooklog");
    assert!(output.status.success(), "{output:?}");
}

async fn post(app: &TestApp, path: &str, body: Value) -> Value {
    let (status, answer) = app
        .post_raw(path, "application/json", body.to_string().into_bytes())
        .await;
    assert_eq!(status, StatusCode::OK, "{path}: {answer}");
    answer
}

fn hook(name: &str, session: &str, more: Value) -> Value {
    let mut body = json!({"hook_event_name": name, "session_id": session, "cwd": "/tmp/p"});
    body.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    body
}

#[tokio::test]
async fn each_view_answers_its_question_in_the_sqlite3_cli() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/transcripts");
    let claude = fixtures.join("claude/projects");
    hooklog(&[
        "import",
        "--claude-projects",
        claude.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let Some(names) = sqlite3(&db, "SELECT name FROM sqlite_master WHERE type = 'view'") else {
        eprintln!("skipped: no sqlite3 CLI on this machine (install the sqlite3 package)");
        return;
    };
    let names: Vec<&str> = names.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for view in VIEWS {
        assert!(names.contains(&view), "{view} is not in {names:?}");
    }
    let app = start(Config::for_path(&db), dir).await;

    // One agent running a command, one whose command failed, one waiting for permission.
    let prompt = |s: &str, p: &str| hook("UserPromptSubmit", s, json!({"prompt": p}));
    let bash = |name: &str, s: &str, id: &str, command: &str, more: Value| {
        let mut more = more;
        more["tool_name"] = json!("Bash");
        more["tool_use_id"] = json!(id);
        more["tool_input"] = json!({"command": command});
        hook(name, s, more)
    };
    app.post_hook_ok(prompt("busy", "fix the build")).await;
    app.post_hook_ok(bash("PreToolUse", "busy", "t1", "cargo build", json!({})))
        .await;
    app.post_hook_ok(prompt("broke", "run the tests")).await;
    app.post_hook_ok(bash("PreToolUse", "broke", "t2", "cargo test", json!({})))
        .await;
    let failed = json!({"error": "Exit code 101"});
    app.post_hook_ok(bash(
        "PostToolUseFailure",
        "broke",
        "t2",
        "cargo test",
        failed,
    ))
    .await;
    app.post_hook_ok(bash(
        "PermissionRequest",
        "asks",
        "t3",
        "rm -rf build",
        json!({}),
    ))
    .await;
    app.post_json(&json!({"type": "Mystery", "sessionId": "busy"}))
        .await;
    post(
        &app,
        "/owners/acquire",
        json!({"platform": "x", "account": "matt", "pid": 1, "hostname": "box",
            "relayPort": 4100, "relayToken": "tok-secret"}),
    )
    .await;
    post(
        &app,
        "/claims",
        json!({"chat": "dm:alice", "sessionId": "busy", "ttlSeconds": 600}),
    )
    .await;
    let db = app.db_path.clone();
    let rows = |sql: &str| sqlite3(&db, sql).expect("sqlite3 was found above");
    let one = |sql: &str| {
        let rows = rows(sql);
        assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
        rows.into_iter().next().unwrap()
    };

    let busy = one("SELECT * FROM agents_now WHERE session_id = 'busy'");
    assert_eq!(
        (&busy["tool"], &busy["tool_input"], &busy["mission"]),
        (
            &json!("Bash"),
            &json!("cargo build"),
            &json!("fix the build")
        ),
        "{busy}"
    );
    let broke = one("SELECT * FROM agents_now WHERE session_id = 'broke'");
    assert_eq!(broke["tool"], Value::Null, "nothing runs: {broke}");

    let timeline =
        rows("SELECT * FROM timeline WHERE session_id = 'broke' ORDER BY session_sequence");
    let lines: Vec<(&str, &str)> = timeline
        .iter()
        .map(|r| (r["type"].as_str().unwrap(), r["summary"].as_str().unwrap()))
        .collect();
    assert_eq!(
        lines,
        [
            ("UserPromptSubmit", "run the tests"),
            ("PreToolUse", "cargo test"),
            ("PostToolUseFailure", "cargo test"),
        ]
    );
    // One session's timeline is read through its index, not by scanning the log.
    let sql = "EXPLAIN QUERY PLAN SELECT * FROM timeline WHERE session_id = 'broke'";
    let plan = sqlite3_text(&[], &db, sql).unwrap();
    assert!(plan.contains("SEARCH events USING"), "{plan}");

    // The log's rows keep what is each event's own; the view puts back what its session's
    // events share.
    let whole = rows(
        "SELECT w.type, json_extract(w.payload, '$.cwd') AS cwd,
                json_extract(w.payload, '$.sessionId') AS said, e.payload AS stored
         FROM events_whole w JOIN events e USING (sequence)
         WHERE w.session_id = 'broke' ORDER BY w.session_sequence",
    );
    assert_eq!(whole.len(), 3);
    for row in &whole {
        assert_eq!(
            (&row["cwd"], &row["said"]),
            (&json!("/tmp/p"), &json!("broke")),
            "{row}"
        );
        assert!(!row["stored"].as_str().unwrap().contains("/tmp/p"), "{row}");
    }

    let failure = one("SELECT * FROM recent_failures");
    assert_eq!(
        (&failure["session_id"], &failure["tool"], &failure["error"]),
        (&json!("broke"), &json!("Bash"), &json!("Exit code 101")),
        "{failure}"
    );

    // The fixtures' tokens, all of them, by day and model.
    let by_day = rows("SELECT * FROM usage_by_day");
    let output: i64 = by_day.iter().map(|r| r["output"].as_i64().unwrap()).sum();
    let total =
        one("SELECT SUM(output_tokens) AS output, COUNT(DISTINCT model) AS models FROM usage");
    assert!(output > 0);
    assert_eq!(json!(output), total["output"]);
    assert!(by_day.len() as i64 >= total["models"].as_i64().unwrap());

    // Newest first: the unknown type, then the heroes made without a SessionStart; an
    // acknowledged alert is no longer open.
    let kinds = |rows: Vec<Value>| -> Vec<(String, String)> {
        rows.iter()
            .map(|r| {
                (
                    r["kind"].as_str().unwrap().into(),
                    r["session_id"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    let made = |s: &str| ("missing_hero".to_string(), s.to_string());
    let unknown = ("unknownEventType".to_string(), "busy".to_string());
    let open = kinds(rows("SELECT * FROM open_alerts"));
    assert_eq!(
        open,
        [unknown.clone(), made("asks"), made("broke"), made("busy")]
    );
    let oldest = one("SELECT min(id) AS id FROM open_alerts")["id"]
        .as_i64()
        .unwrap();
    post(&app, &format!("/alerts/{oldest}/ack"), json!({})).await;
    let open = kinds(rows("SELECT * FROM open_alerts"));
    assert_eq!(open, [unknown, made("asks"), made("broke")]);
    let asks = one("SELECT * FROM pending_permissions");
    assert_eq!(
        (&asks["session_id"], &asks["tool"]),
        (&json!("asks"), &json!("Bash"))
    );
    let owner = one("SELECT * FROM owners");
    assert_eq!(
        (&owner["account"], &owner["status"]),
        (&json!("matt"), &json!("live"))
    );
    let claim = one("SELECT * FROM held_claims");
    assert_eq!(
        (&claim["chat"], &claim["session_id"]),
        (&json!("dm:alice"), &json!("busy"))
    );
    // The change rows as `GET /changes` sends them, though they are stored without what
    // their events say.
    let (status, page) = app.get("/changes?limit=1000").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let sent: Vec<(Value, Value)> = page["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["sequence"].clone(), c["changes"].clone()))
        .collect();
    let viewed: Vec<(Value, Value)> = rows("SELECT sequence, changes FROM changes_sent ORDER BY 1")
        .into_iter()
        .map(|r| {
            let changes = serde_json::from_str(r["changes"].as_str().unwrap()).unwrap();
            (r["sequence"].clone(), changes)
        })
        .collect();
    assert!(sent.len() >= 5, "{page}");
    assert_eq!(viewed, sent);
}
