//! Following transcripts live: hook events naming a growing Claude Code transcript give the
//! right usage after each `Stop`, a subagent's transcript is read after `SubagentStop`, and
//! after a restart the server resumes from the offset it committed, counting nothing twice.

use crate::common;

use common::{TestApp, assert_rebuilds_to_live, metric, start, wait_for};
use hooklog::config::Config;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SESSION: &str = "7f3c2a10-5d1e-4b8a-9c2f-1a2b3c4d5e6f";
const DEADLINE: Duration = Duration::from_secs(10);

fn fixture(rest: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/transcripts/claude/projects/-home-dev-shop")
        .join(rest);
    std::fs::read_to_string(path)
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_string)
        .collect()
}

/// A server that reads the transcripts under `root` (and no others).
pub fn reading(db: &Path, root: &Path) -> Config {
    let mut config = Config::for_path(db);
    config.transcript_roots = vec![root.to_path_buf()];
    config
}

fn append(path: &Path, lines: &[String]) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(lines.concat().as_bytes()).unwrap();
}

async fn hook(app: &TestApp, event: &str, transcript: &Path, extra: serde_json::Value) {
    let mut body = json!({
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": "/home/dev/shop",
        "hook_event_name": event,
    });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    app.post_hook_ok(body).await;
}

/// `(calls, input, output, cache reads)` of the session's usage, from the file.
fn usage(db: &Path) -> (i64, i64, i64, i64) {
    common::open_read_only(db)
        .query_row(
            "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
                    COALESCE(SUM(cache_read_tokens), 0) FROM usage WHERE session_id = ?1",
            [SESSION],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap()
}

async fn wait_for_usage(app: &TestApp, expected: (i64, i64, i64, i64)) {
    let db = app.db_path.clone();
    wait_for(DEADLINE, &format!("usage {expected:?}"), || {
        usage(&db) == expected
    })
    .await;
}

/// The event id of the transcript prompt whose record uuid is `uuid` (a turn's key).
fn prompt_id(db: &Path, uuid: &str) -> String {
    common::open_read_only(db)
        .query_row(
            "SELECT event_id FROM events WHERE type = 'TranscriptPrompt' AND json_extract(payload, '$.uuid') = ?1",
            [uuid],
            |r| r.get(0),
        )
        .unwrap()
}

fn events_of_type(db: &Path, kind: &str) -> i64 {
    common::open_read_only(db)
        .query_row("SELECT COUNT(*) FROM events WHERE type = ?1", [kind], |r| {
            r.get(0)
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_follows_a_growing_transcript_after_each_stop_and_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let transcripts = dir.path().join("projects");
    let agents = transcripts.join(SESSION).join("subagents");
    std::fs::create_dir_all(&agents).unwrap();
    let main: PathBuf = transcripts.join(format!("{SESSION}.jsonl"));
    let agent = agents.join("agent-a3f9c1e.jsonl");
    let lines = fixture(&format!("{SESSION}.jsonl"));
    let sub = fixture(&format!("{SESSION}/subagents/agent-a3f9c1e.jsonl"));
    let db = dir.path().join("hooklog.db");
    let app = start(reading(&db, dir.path()), dir).await;

    // Turn 1 up to the streamed message's first line, and half of its second (being written).
    append(&main, &lines[..3]);
    append(&main, &[lines[3][..40].to_string()]);
    hook(&app, "Stop", &main, json!({})).await;
    wait_for_usage(&app, (1, 4, 12, 12_000)).await;

    // The line is finished, the turn goes on; its subagent ran meanwhile.
    append(&main, &[lines[3][40..].to_string()]);
    append(&main, &lines[4..8]);
    append(&agent, &sub);
    hook(
        &app,
        "SubagentStop",
        &main,
        json!({"agent_id": "a3f9c1e", "agent_transcript_path": agent}),
    )
    .await;
    // Sonnet A (final 180 out), B, C; Haiku S1, S2.
    wait_for_usage(&app, (5, 37, 955, 43_500)).await;
    let first = prompt_id(&app.db_path, "c0a80101-0000-4000-8000-000000000001");
    assert_eq!(
        common::open_read_only(&app.db_path)
            .query_row(
                "SELECT COUNT(*) FROM usage WHERE agent_id = 'a3f9c1e' AND turn = ?1",
                [&first],
                |r| r.get::<_, i64>(0),
            )
            .unwrap(),
        2,
        "the subagent's calls count under the turn that started it"
    );

    // A restart: the offset committed with the events is where the next read starts.
    let dir = app.stop().await;
    append(&main, &lines[8..11]);
    let app = start(reading(&db, dir.path()), dir).await;
    hook(&app, "Stop", &main, json!({})).await;
    wait_for_usage(&app, (6, 42, 1_015, 58_500)).await;
    let second_turn: String = common::open_read_only(&db)
        .query_row(
            "SELECT turn FROM usage WHERE message_key = 'claude-code:c0a80101-0000-4000-8000-000000000009'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        second_turn,
        prompt_id(&db, "c0a80101-0000-4000-8000-000000000008")
    );
    // Every record once: the 6 whole assistant lines of the main file (one synthetic; the cut
    // last line is not read yet), the 2 of the subagent's.
    assert_eq!(events_of_type(&db, "TranscriptMessage"), 8);
    assert_eq!(events_of_type(&db, "TranscriptPrompt"), 3);
    let read_to: i64 = common::open_read_only(&db)
        .query_row(
            "SELECT read_to FROM transcript_files WHERE path = ?1",
            [main.to_str().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(read_to as u64, std::fs::metadata(&main).unwrap().len());
    let dir = app.stop().await;
    assert_rebuilds_to_live(&db);
    drop(dir);
}

/// Claude Code writes a turn's last lines a little after its `Stop` hook fires: what is
/// written while the file is still followed is read without another hook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_written_just_after_the_stop_are_read_without_another_hook() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join(format!("{SESSION}.jsonl"));
    let lines = fixture(&format!("{SESSION}.jsonl"));
    let db = dir.path().join("hooklog.db");
    let app = start(reading(&db, dir.path()), dir).await;

    append(&main, &lines[..3]);
    hook(&app, "Stop", &main, json!({})).await;
    wait_for_usage(&app, (1, 4, 12, 12_000)).await;
    // The rest of the streamed message, after the hook and its first read: no hook follows.
    append(&main, &lines[3..4]);
    wait_for_usage(&app, (1, 4, 180, 12_000)).await;
    assert_eq!(
        events_of_type(&db, "TranscriptRead"),
        2,
        "one read for each time the file grew, none for the looks that found nothing"
    );
}

/// Issue 44: a hook names a path, and whoever can post to hooklog can name any. A transcript
/// outside the transcript roots, a symlink or `..` out of them, a FIFO (which would block the
/// follower and hold shutdown) and another user's file are not read: each raises one
/// `transcript_refused` alert (however many sessions name it), nothing of it is stored, and a
/// real transcript is still followed after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcripts_outside_the_roots_fifos_and_other_users_files_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects");
    std::fs::create_dir_all(&root).unwrap();
    let lines = fixture(&format!("{SESSION}.jsonl"));
    // A file hooklog must not read: a real transcript, so it would be stored if it were.
    let secret = dir.path().join("secret.jsonl");
    append(&secret, &lines);
    let link = root.join("link.jsonl");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let dotted = root.join("../secret.jsonl");
    let fifo = root.join("fifo.jsonl");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let mut refused = vec![
        (secret.clone(), "outside_transcript_roots"),
        (link.clone(), "outside_transcript_roots"),
        (dotted.clone(), "outside_transcript_roots"),
        (fifo.clone(), "not_a_regular_file"),
    ];
    // Another user's file under a root: only root can make one.
    let theirs = root.join("theirs.jsonl");
    append(&theirs, &lines);
    if rustix::fs::chown(&theirs, Some(rustix::fs::Uid::from_raw(65534)), None).is_ok() {
        refused.push((theirs.clone(), "not_owned_by_hooklogs_user"));
    } else {
        println!("skipped the other user's file: changing its owner needs root");
    }
    let db = dir.path().join("hooklog.db");
    let app = start(reading(&db, &root), dir).await;

    for (number, (path, _)) in refused.iter().enumerate() {
        // Each path named by two sessions.
        for session in [format!("s-{number}-a"), format!("s-{number}-b")] {
            app.post_hook_ok(json!({"session_id": session, "hook_event_name": "Stop",
                "transcript_path": path, "cwd": "/w"}))
                .await;
        }
    }
    let alerts = || -> Vec<(String, String)> {
        let conn = common::open_read_only(&db);
        let mut rows = conn
            .prepare(
                "SELECT json_extract(details, '$.path'), json_extract(details, '$.reason')
                 FROM alerts WHERE kind = 'transcript_refused' ORDER BY id",
            )
            .unwrap();
        rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    wait_for(DEADLINE, "an alert for each refused path", || {
        alerts().len() == refused.len()
    })
    .await;
    let expected: Vec<(String, String)> = refused
        .iter()
        .map(|(p, why)| (p.to_string_lossy().into_owned(), why.to_string()))
        .collect();
    assert_eq!(alerts(), expected, "one per path, the first session's");

    // A real transcript is still followed: the FIFO held nothing up.
    let main = root.join(format!("{SESSION}.jsonl"));
    append(&main, &lines[..3]);
    hook(&app, "Stop", &main, json!({})).await;
    wait_for_usage(&app, (1, 4, 12, 12_000)).await;
    let read: Vec<String> = common::open_read_only(&db)
        .prepare("SELECT DISTINCT json_extract(payload, '$.path') FROM events WHERE type = 'TranscriptRead'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let main_real = std::fs::canonicalize(&main).unwrap();
    assert_eq!(read, [main_real.to_string_lossy()], "nothing else was read");
    let (_, alerts_page) = app.get("/alerts?kind=transcript_refused").await;
    assert_eq!(
        alerts_page["alerts"].as_array().unwrap().len(),
        refused.len()
    );
    // Shutdown is not held by the FIFO.
    tokio::time::timeout(DEADLINE, app.stop())
        .await
        .expect("stops");
}

/// Issue 44, finding 3: a transcript whose records are already stored with other content
/// (imported with `--transcripts full`, then followed keeping metadata) is read in one pass:
/// the stored ones are left out together, not one writer round trip (one refused request)
/// per record, and the records that are new are stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_stored_with_other_content_are_left_out_in_one_pass() {
    const STORED: usize = 400;
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("projects");
    let folder = projects.join("-w");
    std::fs::create_dir_all(&folder).unwrap();
    let main = folder.join(format!("{SESSION}.jsonl"));
    // An assistant message (its text, its usage), as many times as wanted under new uuids.
    let template: serde_json::Value =
        serde_json::from_str(&fixture(&format!("{SESSION}.jsonl"))[2]).unwrap();
    let copies = |range: std::ops::Range<usize>| -> Vec<String> {
        range
            .map(|k| {
                let mut line = template.clone();
                line["uuid"] = json!(format!("c0a80101-0000-4000-8000-{:012}", 1_000 + k));
                line["message"]["id"] = json!(format!("msg_copy_{k}"));
                format!("{line}\n")
            })
            .collect()
    };
    append(&main, &copies(0..STORED));
    let db = dir.path().join("hooklog.db");
    let imported = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["import", "--transcripts", "full", "--claude-projects"])
        .arg(&projects)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(imported.status.success(), "{imported:?}");
    let app = start(reading(&db, &projects), dir).await;
    append(&main, &copies(STORED..STORED + 3));

    hook(&app, "Stop", &main, json!({})).await;
    wait_for(DEADLINE, "the file read to its end", || {
        events_of_type(&db, "TranscriptRead") == 1
    })
    .await;
    assert_eq!(
        events_of_type(&db, "TranscriptMessage") as usize,
        STORED + 3,
        "the stored records kept, the new ones added"
    );
    let conflicts = metric(&app.client, &app.url, "hooklog_events_conflict_total")
        .await
        .expect("the conflict counter");
    assert_eq!(
        conflicts, 0.0,
        "the stored records were left out before the append, not refused one at a time"
    );
    // Kept as they were stored: with their full content.
    let full: i64 = common::open_read_only(&db)
        .query_row(
            "SELECT COUNT(*) FROM events WHERE type = 'TranscriptMessage'
             AND json_extract(payload, '$.content') IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(full as usize, STORED);
}
