//! `hooklog import --claude-projects / --codex-sessions`: transcripts become events once (a
//! second import, or one of a file that grew, adds only what is new), streamed duplicates of
//! a message count once, subagents count under their parent session, and the usage table
//! holds the totals computed by hand in `fixtures/transcripts/README.md`; a rebuild of the
//! log gives the same tables.

use crate::common;

use common::assert_rebuilds_to_live;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::process::Command;

const CLAUDE_SESSION: &str = "7f3c2a10-5d1e-4b8a-9c2f-1a2b3c4d5e6f";
const CODEX_SESSION: &str = "019a4e6c-7b21-7d30-a1c4-3f5e8d9b0c12";

fn fixtures(rest: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/transcripts")
        .join(rest)
}

/// Runs `hooklog import <args> --db <db>` and returns what it printed; it must succeed.
fn import(db: &Path, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .arg("import")
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("run hooklog");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "import failed: {text}");
    text
}

/// `(model, input, output, 5m writes, 1h writes, cache reads, calls)` per model.
fn usage_by_model(db: &Path) -> Vec<(String, i64, i64, i64, i64, i64, i64)> {
    let conn = Connection::open(db).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT model, SUM(input_tokens), SUM(output_tokens), SUM(cache_write_5m_tokens),
                    SUM(cache_write_1h_tokens), SUM(cache_read_tokens), COUNT(*)
             FROM usage GROUP BY model ORDER BY model",
        )
        .unwrap();
    statement
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

/// The event id of the transcript prompt whose record uuid is `uuid` (a turn's key).
fn prompt_id(db: &Path, uuid: &str) -> String {
    Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT event_id FROM events WHERE type = 'TranscriptPrompt' AND json_extract(payload, '$.uuid') = ?1",
            [uuid],
            |r| r.get(0),
        )
        .unwrap()
}

fn row(model: &str, t: [i64; 6]) -> (String, i64, i64, i64, i64, i64, i64) {
    (model.to_string(), t[0], t[1], t[2], t[3], t[4], t[5])
}

#[test]
fn imported_transcripts_give_the_hand_computed_totals_once_however_often_they_are_imported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let claude = fixtures("claude/projects");
    let codex = fixtures("codex/sessions");
    let first = import(&db, &["--claude-projects", claude.to_str().unwrap()]);
    assert!(
        first.contains("files 2, records 14, new events 14, already stored 0"),
        "{first}"
    );
    assert!(
        first.contains("skipped 1: not JSON"),
        "the cut last line is reported: {first}"
    );
    assert!(
        first.contains(":12: not JSON"),
        "with its file and line: {first}"
    );
    let again = import(&db, &["--claude-projects", claude.to_str().unwrap()]);
    assert!(again.contains("new events 0, already stored 14"), "{again}");
    let codex_out = import(&db, &["--codex-sessions", codex.to_str().unwrap()]);
    assert!(
        codex_out.contains("files 1, records 5, new events 5"),
        "{codex_out}"
    );

    assert_eq!(
        usage_by_model(&db),
        [
            row("claude-haiku-4-5-20251001", [19, 260, 3_000, 0, 3_000, 2]),
            row(
                "claude-sonnet-4-5-20250929",
                [23, 755, 2_500, 300, 55_500, 4]
            ),
            row("gpt-5-codex", [5_000, 1_000, 0, 0, 15_000, 2]),
        ]
    );
    // The streamed message's two lines are two events and one call.
    assert_eq!(
        count(
            &db,
            "SELECT records FROM usage WHERE message_key = 'claude-code:msg_01Hq7cart0001:req_011CartTotals0001'"
        ),
        2
    );
    // The subagent's calls are in the parent's session, marked with its agent id, and count
    // under the turn that started it.
    let first = prompt_id(&db, "c0a80101-0000-4000-8000-000000000001");
    let second = prompt_id(&db, "c0a80101-0000-4000-8000-000000000008");
    assert_eq!(
        count(
            &db,
            &format!(
                "SELECT COUNT(*) FROM usage WHERE session_id = '{CLAUDE_SESSION}' AND agent_id = 'a3f9c1e' AND turn = '{first}'"
            )
        ),
        2
    );
    assert_eq!(
        count(
            &db,
            &format!("SELECT COUNT(*) FROM usage WHERE turn = '{second}'")
        ),
        1
    );
    // Sessions that predate hooklog appear, ended, with their prompts in time order.
    assert_eq!(
        count(
            &db,
            &format!(
                "SELECT COUNT(*) FROM sessions WHERE id IN ('{CLAUDE_SESSION}', '{CODEX_SESSION}') AND state = 'ended' AND source = 'transcript'"
            )
        ),
        2
    );
    let prompts: Vec<String> = Connection::open(&db)
        .unwrap()
        .prepare(&format!("SELECT json_extract(payload, '$.prompt') FROM events WHERE session_id = '{CLAUDE_SESSION}' AND type = 'TranscriptPrompt' ORDER BY session_sequence"))
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        prompts.len(),
        3,
        "two turns and the subagent's task: {prompts:?}"
    );
    assert!(prompts[0].starts_with("Why does the cart total"));
    assert!(prompts[1].starts_with("Find every caller"));
    assert!(prompts[2].starts_with("Fix it"));
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM alerts"),
        0,
        "every type is known"
    );
    assert_rebuilds_to_live(&db);
}

#[test]
fn a_transcript_that_grew_adds_only_its_new_records() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let projects = dir.path().join("projects");
    let project = projects.join("-home-dev-shop");
    std::fs::create_dir_all(&project).unwrap();
    let source = fixtures(&format!(
        "claude/projects/-home-dev-shop/{CLAUDE_SESSION}.jsonl"
    ));
    let whole = std::fs::read_to_string(source).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    let file = project.join(format!("{CLAUDE_SESSION}.jsonl"));
    // First the summary, the prompt and the first line of the streamed message, and half of
    // its second line (still being written).
    let half = &lines[3][..lines[3].len() / 2];
    std::fs::write(&file, format!("{}\n{half}", lines[..3].join("\n"))).unwrap();
    let first = import(&db, &["--claude-projects", projects.to_str().unwrap()]);
    assert!(first.contains("records 2, new events 2"), "{first}");
    let partial: i64 = count(&db, "SELECT output_tokens FROM usage");
    assert_eq!(partial, 12, "the usage so far");
    // The file grows: the cut line is whole now, and the rest of the session follows.
    std::fs::write(&file, &whole).unwrap();
    let second = import(&db, &["--claude-projects", projects.to_str().unwrap()]);
    assert!(
        second.contains("records 10, new events 8, already stored 2"),
        "{second}"
    );
    assert_eq!(
        usage_by_model(&db),
        [row(
            "claude-sonnet-4-5-20250929",
            [23, 755, 2_500, 300, 55_500, 4]
        )],
        "the streamed message's final usage replaced its first"
    );
    assert_rebuilds_to_live(&db);
}
