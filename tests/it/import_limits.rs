//! `hooklog import` obeys the limits HTTP does (issue 44, finding 8): the folder it is given is
//! the boundary (a symlink out of it is not read), a FIFO is refused and never waited on (as a
//! file in the folder or as the recording named), a line longer than the body limit or nested
//! deeper than the depth limit is refused by its number while the others go in, and nothing is
//! half-stored.

use crate::common;

use common::{assert_gapless, open_read_only};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `hooklog import <args> --db <db>`, failing the test if it is still running after 60 s
/// (a read that waits on a FIFO never ends by itself).
fn import(db: &Path, args: &[&str]) -> (Output, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .arg("import")
        .args(args)
        .arg("--db")
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hooklog");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("hooklog import {args:?} was still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, text)
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

fn event(id: &str, payload: &str) -> String {
    format!(r#"{{"id":"{id}","type":"Stop","sessionId":"s1","payload":{payload}}}"#)
}

#[test]
fn a_recording_line_past_the_body_or_depth_limit_is_refused_by_number_and_the_rest_go_in() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let recording = dir.path().join("recording.ndjson");
    let long = format!("\"{}\"", "x".repeat(2 * 1024 * 1024));
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let lines = [
        event("e1", "{}"),
        event("e2", &format!("{{\"big\":{long}}}")),
        event("e3", &format!("{{\"deep\":{deep}}}")),
        event("e4", "{}"),
    ];
    std::fs::write(&recording, lines.join("\n")).unwrap();

    let (output, text) = import(&db, &[recording.to_str().unwrap()]);
    assert!(
        !output.status.success(),
        "refused lines fail the import: {text}"
    );
    assert!(
        text.contains("imported 2, duplicates 0, rejected 2"),
        "{text}"
    );
    assert!(
        text.contains("line 2: the line is longer than 1048576 bytes"),
        "{text}"
    );
    assert!(
        text.contains("line 3: the line nests JSON deeper than 64 levels"),
        "{text}"
    );
    let conn = open_read_only(&db);
    assert_eq!(assert_gapless(&conn), 2);
    let ids: Vec<String> = conn
        .prepare("SELECT event_id FROM events ORDER BY sequence")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(ids, ["e1", "e4"]);

    // The limits are the server's flags: raised, the same lines go in.
    let (output, text) = import(
        &db,
        &[
            recording.to_str().unwrap(),
            "--body-limit",
            "4194304",
            "--max-json-depth",
            "128",
        ],
    );
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("imported 2, duplicates 2, rejected 0"),
        "{text}"
    );
}

#[test]
fn a_fifo_named_as_the_recording_is_refused_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let fifo = dir.path().join("recording.ndjson");
    mkfifo(&fifo);
    let (output, text) = import(&db, &[fifo.to_str().unwrap()]);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("not a regular file"), "{text}");
}

#[test]
fn a_transcript_folder_is_its_own_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let projects = dir.path().join("projects");
    let project = projects.join("-home-dev-shop");
    std::fs::create_dir_all(&project).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/transcripts/claude/projects/-home-dev-shop")
        .join("7f3c2a10-5d1e-4b8a-9c2f-1a2b3c4d5e6f.jsonl");
    let session = project.join("7f3c2a10-5d1e-4b8a-9c2f-1a2b3c4d5e6f.jsonl");
    std::fs::copy(&fixture, &session).unwrap();

    // Outside the folder: a transcript-shaped file with a word that must not be stored.
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let secret = r#"{"sessionId":"s-secret","type":"user","message":{"role":"user","content":"hunter2secret"},"uuid":"c0a80101-0000-4000-8000-0000000000ff","timestamp":"2026-11-02T09:00:00.000Z"}"#;
    std::fs::write(outside.join("secret.jsonl"), format!("{secret}\n")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.jsonl"), project.join("leak.jsonl")).unwrap();
    std::os::unix::fs::symlink(&outside, projects.join("linked-project")).unwrap();
    mkfifo(&project.join("fifo.jsonl"));
    // A line longer than the follower reads at once, in a transcript of its own.
    let long = format!(
        "{{\"sessionId\":\"s-long\",\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}\n",
        "y".repeat(9 * 1024 * 1024)
    );
    let inside = secret
        .replace("s-secret", "s-inside")
        .replace("ff\"", "fe\"");
    std::fs::write(project.join("long.jsonl"), format!("{long}{inside}\n")).unwrap();

    let (output, text) = import(&db, &["--claude-projects", projects.to_str().unwrap()]);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("leak.jsonl: not read: outside_transcript_roots"),
        "{text}"
    );
    assert!(
        text.contains("fifo.jsonl: not read: not_a_regular_file"),
        "{text}"
    );
    assert!(
        text.contains("long.jsonl:1: the line is longer than 8388608 bytes"),
        "{text}"
    );
    // The fixture's ten records, and the long file's second line.
    assert!(
        text.contains("files 2, records 11, new events 11"),
        "{text}"
    );
    let conn = open_read_only(&db);
    assert_eq!(assert_gapless(&conn), 11);
    let leaked: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM events WHERE session_id IN ('s-long', 's-secret')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        leaked, 0,
        "nothing outside the folder, nothing of the long line"
    );
    let inside: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM events WHERE session_id = 's-inside'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(inside, 1, "the line after the long one is read");
}
