//! `hooklog hook`, `hooklog spool` and `hooklog hooks install|uninstall`, run as the real
//! binary against a real hooklog (or none), with the spool in a temporary directory.

use crate::common;

use common::{ServerProcess, free_port, open_read_only, spawn_app, spawn_app_with, wait_for};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_hooklog");
/// What a run may take beyond its own timeout: starting a process on a busy two-core machine.
const START_UP_SLACK: Duration = Duration::from_millis(1000);
/// A Codex from before hooks were on by default: install writes `codex_hooks` for it
/// (`tests/it/install_codex.rs` has the later ones).
const OLD_CODEX: &str = "0.123.0";

struct Run {
    output: Output,
    elapsed: Duration,
}

/// One `hooklog hook` run with `body` on stdin.
fn hook(spool: &Path, url: &str, timeout_ms: u64, body: &[u8], args: &[&str]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .arg("hook")
        .args(args)
        .env("HOOKLOG_URL", url)
        .env("HOOKLOG_SPOOL", spool)
        .env("HOOKLOG_TIMEOUT_MS", timeout_ms.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hooklog hook");
    // A run that exits without reading (it never does, but) must not fail the helper.
    let _ = child.stdin.take().unwrap().write_all(body);
    let output = child.wait_with_output().unwrap();
    Run {
        output,
        elapsed: started.elapsed(),
    }
}

/// Checks what a hook run must always be: exit 0, nothing printed, within its timeout.
fn assert_quiet(run: &Run, timeout_ms: u64) {
    assert_eq!(run.output.status.code(), Some(0), "hook exit code");
    assert!(run.output.stdout.is_empty(), "hook printed to stdout");
    assert!(
        run.output.stderr.is_empty(),
        "hook printed to stderr: {}",
        String::from_utf8_lossy(&run.output.stderr)
    );
    assert!(
        run.elapsed < Duration::from_millis(timeout_ms) + START_UP_SLACK,
        "hook took {:?} with a {timeout_ms} ms timeout",
        run.elapsed
    );
}

fn spooled(spool: &Path) -> usize {
    std::fs::read_dir(spool)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".event"))
                .count()
        })
        .unwrap_or(0)
}

fn tool_call(session: &str, n: usize) -> Vec<u8> {
    json!({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_use_id": format!("tu-{n}"), "tool_input": {"command": format!("echo {n}")}, "n": n})
    .to_string()
    .into_bytes()
}

fn cli(args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(BIN);
    command.args(args);
    for (k, v) in envs {
        command.env(k, v);
    }
    command.output().expect("run hooklog")
}

/// Each session's `n` values in stored order.
fn stored_order(db: &Path) -> Vec<(String, Vec<i64>)> {
    let conn = open_read_only(db);
    let mut stmt = conn
        .prepare(
            "SELECT session_id, json_extract(payload, '$.n') FROM events \
             ORDER BY session_id, session_sequence",
        )
        .unwrap();
    let mut sessions: Vec<(String, Vec<i64>)> = Vec::new();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap();
    for row in rows {
        let (session, n) = row.unwrap();
        match sessions.last_mut() {
            Some((s, ns)) if *s == session => ns.push(n),
            _ => sessions.push((session, vec![n])),
        }
    }
    sessions
}

/// Server down: 500 runs (five sessions, one thread each, so runs overlap) all exit 0 quietly
/// within the timeout and spool their events. Server up: the next runs drain the spool, and
/// the log holds all the events exactly once, each session's in the order they were run, with
/// the time they were captured rather than delivered.
#[test]
fn server_down_then_up_every_event_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let timeout_ms = 1500;
    const SESSIONS: usize = 5;
    const PER_SESSION: usize = 100;
    std::thread::scope(|scope| {
        for s in 0..SESSIONS {
            let (spool, url) = (&spool, &url);
            scope.spawn(move || {
                for i in 0..PER_SESSION {
                    let run = hook(spool, url, timeout_ms, &tool_call(&format!("s{s}"), i), &[]);
                    assert_quiet(&run, timeout_ms);
                }
            });
        }
    });
    assert_eq!(spooled(&spool), SESSIONS * PER_SESSION);
    let down_until = chrono::Utc::now();

    let db = dir.path().join("hooklog.db");
    let _server = ServerProcess::start(&db, &format!("127.0.0.1:{port}"));
    let mut extra = 0;
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for s in 0..SESSIONS {
            let (spool, url) = (&spool, &url);
            handles.push(scope.spawn(move || {
                let mut runs = 0;
                // Each later run delivers at most 200 spooled events; a few runs empty it.
                while spooled(spool) > 0 && runs < 20 {
                    let body = tool_call(&format!("s{s}"), PER_SESSION + runs);
                    assert_quiet(&hook(spool, url, timeout_ms, &body, &[]), timeout_ms);
                    runs += 1;
                }
                runs
            }));
        }
        extra = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum::<usize>();
    });
    // No extra run: a run that found the lock taken left its event to the run holding it,
    // which lists the spool again before it lets go.
    assert_eq!(spooled(&spool), 0, "the spool is empty");

    let sessions = stored_order(&db);
    assert_eq!(sessions.len(), SESSIONS);
    let mut total = 0;
    for (session, ns) in &sessions {
        total += ns.len();
        let expected: Vec<i64> = (0..ns.len() as i64).collect();
        assert_eq!(
            ns, &expected,
            "session {session}: every event once, in order"
        );
        assert!(ns.len() >= PER_SESSION);
    }
    assert_eq!(total, SESSIONS * PER_SESSION + extra);
    let conn = open_read_only(&db);
    let late: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM events WHERE json_extract(payload, '$.n') < ?1 AND event_time > ?2",
            rusqlite::params![PER_SESSION as i64, hooklog::event::time::format(down_until)],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(late, 0, "spooled events keep the time they were captured");
    let status = cli(&["spool", "status", "--json"], &[("HOOKLOG_SPOOL", &spool)]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["events"], 0);
    assert_eq!(status["dropped"], 0);
}

/// A proxy in front of hooklog that passes requests on at once and holds each answer back for
/// `delay`: a server that commits, then answers too late.
async fn slow_proxy(upstream: String, delay: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = upstream.trim_start_matches("http://").to_string();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let server = tokio::net::TcpStream::connect(upstream).await.unwrap();
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                let mut first = vec![0; 64 * 1024];
                let Ok(n) = server_read.read(&mut first).await else {
                    return;
                };
                tokio::time::sleep(delay).await;
                if client_write.write_all(&first[..n]).await.is_ok() {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                }
            });
        }
    });
    format!("http://{addr}")
}

async fn hook_async(spool: &Path, url: &str, timeout_ms: u64, body: Vec<u8>) -> Run {
    let (spool, url) = (spool.to_path_buf(), url.to_string());
    tokio::task::spawn_blocking(move || hook(&spool, &url, timeout_ms, &body, &[]))
        .await
        .unwrap()
}

/// A server slower than the timeout: the run still ends within its timeout, and the event,
/// which the server did store, is delivered again by the next run and stored once.
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_server_neither_stalls_the_hook_nor_doubles_the_event() {
    let app = spawn_app().await;
    let spool = app.dir.path().join("spool");
    let slow = slow_proxy(app.url.clone(), Duration::from_secs(3)).await;
    let timeout_ms = 400;
    let run = hook_async(&spool, &slow, timeout_ms, tool_call("slow", 0)).await;
    assert_quiet(&run, timeout_ms);
    assert!(
        run.elapsed >= Duration::from_millis(timeout_ms),
        "the run waited for its timeout"
    );
    // The server stored it; the forwarder never heard, so it is still spooled.
    wait_for(
        Duration::from_secs(10),
        "the slow request to commit",
        || app.event_count() == 1,
    )
    .await;
    assert_eq!(spooled(&spool), 1);

    let run = hook_async(&spool, &app.url, 1500, tool_call("slow", 1)).await;
    assert_quiet(&run, 1500);
    assert_eq!(spooled(&spool), 0);
    assert_eq!(app.event_count(), 2, "the re-delivery was a duplicate");
    assert_eq!(
        stored_order(&app.db_path),
        vec![("slow".to_string(), vec![0, 1])]
    );
}

/// A hooklog that wants a token: a run without it (401) keeps its event spooled, not dropped,
/// and a run with `HOOKLOG_TOKEN` delivers both, in order.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_keeps_the_event_and_the_right_one_delivers_it() {
    let app = spawn_app_with(|c| {
        c.security.token = Some(hooklog::config::Secret("hook-secret".into()));
    })
    .await;
    let spool = app.dir.path().join("spool");
    let run = hook_async(&spool, &app.url, 1500, tool_call("tok", 0)).await;
    assert_quiet(&run, 1500);
    assert_eq!(spooled(&spool), 1, "a 401 is not the event's fault");
    assert_eq!(app.event_count(), 0);
    let (spool_dir, url) = (spool.clone(), app.url.clone());
    let run = tokio::task::spawn_blocking(move || {
        hook(
            &spool_dir,
            &url,
            1500,
            &tool_call("tok", 1),
            &["--token", "hook-secret"],
        )
    })
    .await
    .unwrap();
    assert_quiet(&run, 1500);
    assert_eq!(spooled(&spool), 0);
    assert_eq!(
        stored_order(&app.db_path),
        vec![("tok".to_string(), vec![0, 1])]
    );
}

/// A run whose stdin never closes still ends, at its timeout, with exit 0.
#[test]
fn a_stdin_that_never_closes_does_not_hold_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .arg("hook")
        .env("HOOKLOG_SPOOL", dir.path())
        .env("HOOKLOG_TIMEOUT_MS", "300")
        .env("HOOKLOG_URL", format!("http://127.0.0.1:{}", free_port()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    let output = child.wait_with_output().unwrap();
    let run = Run {
        output,
        elapsed: started.elapsed(),
    };
    assert_quiet(&run, 300);
}

/// Flags it does not know, a URL that is not one, and an environment value that does not
/// parse still exit 0 silently (a hook command with a typo must not block the agent), and the
/// event is still captured: the run falls back to the defaults.
#[tokio::test(flavor = "multi_thread")]
async fn bad_arguments_are_silent_and_keep_the_event() {
    let app = spawn_app().await;
    let spool = app.dir.path().join("spool");
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let bad: [&[&str]; 3] = [
        &["--no-such-flag"],
        &["--route", "nowhere"],
        &["--url", "::"],
    ];
    for (n, args) in bad.into_iter().enumerate() {
        let run = hook(&spool, &nowhere, 500, &tool_call("bad", n), args);
        assert_quiet(&run, 500);
        assert_eq!(spooled(&spool), n + 1, "run {n} kept its event");
    }
    // A timeout that is not a number: the defaults, this time with a hooklog to deliver to.
    let (spool_dir, url) = (spool.clone(), app.url.clone());
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(BIN)
            .arg("hook")
            .env("HOOKLOG_URL", url)
            .env("HOOKLOG_SPOOL", spool_dir)
            .env("HOOKLOG_TIMEOUT_MS", "1.5s")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child.stdin.take().unwrap().write_all(&tool_call("bad", 3));
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty() && output.stderr.is_empty());
    assert_eq!(
        spooled(&spool),
        0,
        "the run delivered the three before it, then its own"
    );
    assert_eq!(
        stored_order(&app.db_path),
        vec![("bad".to_string(), vec![0, 1, 2, 3])]
    );
}

/// An event hooklog refuses for what it is (not JSON) is dropped and logged, and does not
/// hold back the events after it.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_event_is_dropped_and_logged_not_retried() {
    let app = spawn_app().await;
    let spool = app.dir.path().join("spool");
    assert_quiet(
        &hook_async(&spool, &app.url, 1500, b"{not json".to_vec()).await,
        1500,
    );
    assert_quiet(
        &hook_async(&spool, &app.url, 1500, tool_call("r", 0)).await,
        1500,
    );
    assert_eq!(spooled(&spool), 0);
    assert_eq!(app.event_count(), 1);
    let status = cli(&["spool", "status", "--json"], &[("HOOKLOG_SPOOL", &spool)]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["dropped"], 1);
    assert_eq!(
        status["lastDropped"]["reason"],
        "refused by hooklog: HTTP 400"
    );
    assert!(
        !std::fs::read_to_string(spool.join("dropped.ndjson"))
            .unwrap()
            .contains("not json"),
        "the dropped log names events, it does not keep them"
    );
}

/// `spool flush` fails (non-zero, the events kept) while hooklog is down, and delivers
/// everything in order once it is up; `spool clear` empties the spool and logs each event.
#[test]
fn spool_flush_and_clear() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    for i in 0..3 {
        assert_quiet(&hook(&spool, &url, 1500, &tool_call("f", i), &[]), 1500);
    }
    let envs: [(&str, &Path); 1] = [("HOOKLOG_SPOOL", &spool)];
    let flush = |url: &str| {
        Command::new(BIN)
            .args(["spool", "flush", "--url", url])
            .env("HOOKLOG_SPOOL", &spool)
            .output()
            .unwrap()
    };
    let failed = flush(&url);
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("3 events are still spooled"));
    assert_eq!(spooled(&spool), 3);

    let db = dir.path().join("hooklog.db");
    let server = ServerProcess::start(&db, &format!("127.0.0.1:{port}"));
    let flushed = flush(&server.url);
    assert!(flushed.status.success(), "{flushed:?}");
    assert!(String::from_utf8_lossy(&flushed.stdout).starts_with("delivered 3 (0 already stored)"));
    assert_eq!(stored_order(&db), vec![("f".to_string(), vec![0, 1, 2])]);

    // Two events spooled for a hooklog that is not there, then cleared.
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    for i in 3..5 {
        assert_quiet(&hook(&spool, &nowhere, 1500, &tool_call("f", i), &[]), 1500);
    }
    let cleared = cli(&["spool", "clear"], &envs);
    assert_eq!(
        String::from_utf8_lossy(&cleared.stdout),
        "cleared 2 events\n"
    );
    assert_eq!(spooled(&spool), 0);
    let status: Value =
        serde_json::from_slice(&cli(&["spool", "status", "--json"], &envs).stdout).unwrap();
    assert_eq!(status["dropped"], 2);
}

const USER_SETTINGS: &str = r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/guard.sh",
            "timeout": 10
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send 'done'"
          }
        ]
      }
    ]
  },
  "permissions": {
    "allow": [
      "Bash(ls:*)"
    ]
  }
}
"#;

/// Install into a settings.json with the user's own hooks, then uninstall: the file is the
/// original byte for byte, a backup of the original exists, and the installed command, run as
/// Claude Code runs it, delivers to hooklog.
#[tokio::test(flavor = "multi_thread")]
async fn install_then_uninstall_leaves_the_settings_as_they_were() {
    let app = spawn_app().await;
    let home = app.dir.path().join("home");
    let settings = home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, USER_SETTINGS).unwrap();
    let envs: [(&str, &Path); 1] = [("HOME", &home)];

    let dry = cli(&["hooks", "install", "--cli", "claude", "--dry-run"], &envs);
    assert!(dry.status.success());
    let diff = String::from_utf8_lossy(&dry.stdout);
    assert!(
        diff.contains("+") && diff.contains("hook --managed"),
        "{diff}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), USER_SETTINGS);
    assert!(!home.join(".claude/settings.json.hooklog-backup").exists());

    let installed = cli(&["hooks", "install", "--cli", "claude"], &envs);
    assert!(installed.status.success(), "{installed:?}");
    let text = std::fs::read_to_string(&settings).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let events = v["hooks"].as_object().unwrap();
    assert_eq!(events.len(), 18);
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "~/bin/guard.sh"
    );
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send 'done'"
    );
    let command = v["hooks"]["Stop"][1]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(command.ends_with("hook --managed"), "{command}");
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/settings.json.hooklog-backup")).unwrap(),
        USER_SETTINGS
    );

    // The entry works: the command as a shell runs it, a hook payload on stdin.
    let mut child = Command::new("sh")
        .args(["-c", &command])
        .env("HOOKLOG_URL", &app.url)
        .env("HOOKLOG_SPOOL", app.dir.path().join("spool"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"session_id":"installed","hook_event_name":"Stop"}"#)
        .unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(app.strings("SELECT session_id FROM events"), ["installed"]);

    // Installing again replaces hooklog's entries instead of adding more.
    assert!(
        cli(&["hooks", "install", "--cli", "claude"], &envs)
            .status
            .success()
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);

    let removed = cli(&["hooks", "uninstall", "--cli", "claude"], &envs);
    assert!(removed.status.success(), "{removed:?}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), USER_SETTINGS);
    assert!(home.join(".claude/settings.json.hooklog-backup").exists());
}

/// Codex: `$CODEX_HOME/hooks.json` and `config.toml`, made by install when missing (its eleven
/// events, `SessionEnd` among them, the hook labelled `codex-cli`; for an old Codex the
/// feature flag on), and gone again after uninstall,
/// with no backup left of files that were hooklog's own, however many times it is done.
#[test]
fn codex_hooks_json_is_made_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join("codex");
    let envs: [(&str, &Path); 2] = [("CODEX_HOME", &codex), ("HOME", dir.path())];
    let hooks = codex.join("hooks.json");
    assert!(
        cli(
            &[
                "hooks",
                "install",
                "--cli",
                "codex",
                "--codex-version",
                OLD_CODEX
            ],
            &envs
        )
        .status
        .success()
    );
    let text = std::fs::read_to_string(&hooks).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    // In the file's own order (a `Value` would sort the keys).
    let ordered: indexmap::IndexMap<String, indexmap::IndexMap<String, Value>> =
        serde_json::from_str(&text).unwrap();
    let events: Vec<&String> = ordered["hooks"].keys().collect();
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PermissionRequest",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "PostCompact",
            "Stop",
            "SessionEnd"
        ]
    );
    let command = v["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.ends_with("hook --managed --cli codex-cli"),
        "{command}"
    );
    assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert!(
        cli(&["hooks", "uninstall", "--cli", "codex"], &envs)
            .status
            .success()
    );
    assert!(
        !hooks.exists(),
        "hooklog made the file, so it takes it away"
    );
    let again = cli(&["hooks", "uninstall", "--cli", "codex"], &envs);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to uninstall"));
    for cycle in 1..=2 {
        assert!(
            cli(
                &[
                    "hooks",
                    "install",
                    "--cli",
                    "codex",
                    "--codex-version",
                    OLD_CODEX
                ],
                &envs
            )
            .status
            .success()
        );
        assert!(
            std::fs::read_to_string(codex.join("config.toml"))
                .unwrap()
                .contains("codex_hooks = true")
        );
        assert!(
            cli(&["hooks", "uninstall", "--cli", "codex"], &envs)
                .status
                .success()
        );
        let left: Vec<_> = std::fs::read_dir(&codex)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "cycle {cycle}: {left:?}");
    }
}

/// Codex's `config.toml` through the real binary, for a Codex that needs the flag, in each
/// shape its `codex_hooks` flag can be in: `--dry-run` prints the change as a diff and writes nothing; install turns the flag on
/// (backing an existing file up first) and again changes nothing; uninstall gives back the
/// original byte for byte, or removes the file when hooklog made it.
#[test]
fn codex_config_toml_install_then_uninstall_is_byte_identical() {
    let shapes = [
        ("no file", None),
        (
            "no [features]",
            Some("# mine\nmodel = \"o3\" # pinned\n\n[tui]\nnotifications = true\n"),
        ),
        (
            "[features] without the key",
            Some("[features] # flags\nweb_search = true\n\n[tui]\nx = 1\n"),
        ),
        (
            "codex_hooks = false",
            Some("[features]\ncodex_hooks = false # not yet\nother = 1\n"),
        ),
        (
            "dotted key",
            Some("features.codex_hooks = false\nmodel = \"o3\"\n"),
        ),
        ("inline table", Some("features = { web_search = true }\n")),
        (
            "CRLF, no final newline",
            Some("model = \"o3\"\r\n[tui]\r\nx = 1"),
        ),
    ];
    for (what, original) in shapes {
        let dir = tempfile::tempdir().unwrap();
        let codex = dir.path().join("codex");
        std::fs::create_dir_all(&codex).unwrap();
        let config = codex.join("config.toml");
        let backup = codex.join("config.toml.hooklog-backup");
        if let Some(text) = original {
            std::fs::write(&config, text).unwrap();
        }
        let envs: [(&str, &Path); 2] = [("CODEX_HOME", &codex), ("HOME", dir.path())];
        let on_disk = || std::fs::read_to_string(&config).ok();

        let dry = cli(
            &[
                "hooks",
                "install",
                "--cli",
                "codex",
                "--codex-version",
                OLD_CODEX,
                "--dry-run",
            ],
            &envs,
        );
        assert!(dry.status.success(), "{what}: {dry:?}");
        let diff = String::from_utf8_lossy(&dry.stdout);
        assert!(
            diff.contains("config.toml (after install)")
                && diff
                    .lines()
                    .any(|l| l.starts_with('+') && l.contains("codex_hooks = true")),
            "{what}: {diff}"
        );
        assert_eq!(on_disk().as_deref(), original, "{what}: dry run wrote");
        assert!(!backup.exists(), "{what}: dry run backed up");

        let installed = cli(
            &[
                "hooks",
                "install",
                "--cli",
                "codex",
                "--codex-version",
                OLD_CODEX,
            ],
            &envs,
        );
        assert!(installed.status.success(), "{what}: {installed:?}");
        let text = on_disk().unwrap();
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        assert_eq!(
            doc["features"]["codex_hooks"].as_bool(),
            Some(true),
            "{what}: {text}"
        );
        assert_eq!(
            std::fs::read_to_string(&backup).ok().as_deref(),
            original,
            "{what}: the backup is the file as it was, and only a file that was there has one"
        );
        assert!(
            cli(
                &[
                    "hooks",
                    "install",
                    "--cli",
                    "codex",
                    "--codex-version",
                    OLD_CODEX
                ],
                &envs
            )
            .status
            .success()
        );
        assert_eq!(on_disk().unwrap(), text, "{what}: installing again");

        let removed = cli(&["hooks", "uninstall", "--cli", "codex"], &envs);
        assert!(removed.status.success(), "{what}: {removed:?}");
        assert_eq!(on_disk().as_deref(), original, "{what}");
    }
}

/// A config.toml that is a link (dotfile managers) is edited where it points and stays a link;
/// the file keeps its mode. A flag the user set, or Codex's newer key `hooks`, is theirs:
/// install leaves the file alone, and says so when `hooks = false` turns hooks off.
#[cfg(unix)]
#[test]
fn codex_config_toml_links_modes_and_the_users_own_setting() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join("codex");
    let dotfiles = dir.path().join("dotfiles");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("codex.toml");
    let original = "model = \"o3\"\n";
    std::fs::write(&real, original).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = codex.join("config.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let envs: [(&str, &Path); 2] = [("CODEX_HOME", &codex), ("HOME", dir.path())];

    assert!(
        cli(
            &[
                "hooks",
                "install",
                "--cli",
                "codex",
                "--codex-version",
                OLD_CODEX
            ],
            &envs
        )
        .status
        .success()
    );
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .contains("codex_hooks = true")
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&real), 0o640);
    assert_eq!(mode(&dotfiles.join("codex.toml.hooklog-backup")), 0o640);
    assert!(
        cli(&["hooks", "uninstall", "--cli", "codex"], &envs)
            .status
            .success()
    );
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), original);

    for (users, note) in [
        ("[features]\ncodex_hooks = true\n", false),
        ("[features]\nhooks = true\n", false),
        ("[features]\nhooks = false # not here\n", true),
    ] {
        std::fs::write(&real, users).unwrap();
        let installed = cli(
            &[
                "hooks",
                "install",
                "--cli",
                "codex",
                "--codex-version",
                OLD_CODEX,
            ],
            &envs,
        );
        let out = String::from_utf8_lossy(&installed.stdout);
        assert!(installed.status.success());
        assert!(out.contains("codex.toml: nothing to install"), "{out}");
        assert_eq!(out.contains("turns Codex's hooks off"), note, "{out}");
        assert!(
            cli(&["hooks", "uninstall", "--cli", "codex"], &envs)
                .status
                .success()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), users);
    }
}

/// A spool directory anyone may write to (or another user's) is not used: files planted there
/// would be delivered under this user's token, and spooled prompts could be read. The run still
/// delivers its own event directly, leaves nothing in that directory, and does not forward the
/// planted file; `spool status` says why the spool is refused.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_world_writable_spool_is_not_used_and_the_event_is_sent_directly() {
    use std::os::unix::fs::PermissionsExt;
    let app = spawn_app().await;
    let spool = app.dir.path().join("shared-spool");
    std::fs::create_dir(&spool).unwrap();
    std::fs::set_permissions(&spool, std::fs::Permissions::from_mode(0o777)).unwrap();
    // A planted event, named as the spool names its files.
    let planted = format!(
        "{:039}-planted.event",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    std::fs::write(
        spool.join(&planted),
        format!(
            "{}\n{}",
            json!({"id": "0199a000-0000-7000-8000-000000000001", "route": "event", "capturedAt": "2026-11-30T00:00:00.000Z"}),
            String::from_utf8(tool_call("planted", 0)).unwrap()
        ),
    )
    .unwrap();
    let (spool_dir, url) = (spool.clone(), app.url.clone());
    let run = tokio::task::spawn_blocking(move || {
        hook(&spool_dir, &url, 1500, &tool_call("own", 1), &[])
    })
    .await
    .unwrap();
    assert_quiet(&run, 1500);
    assert_eq!(
        stored_order(&app.db_path),
        vec![("own".to_string(), vec![1])],
        "only the run's own event is stored"
    );
    let names: Vec<String> = std::fs::read_dir(&spool)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![planted], "nothing written to the refused spool");
    let status = cli(&["spool", "status"], &[("HOOKLOG_SPOOL", &spool)]);
    assert!(!status.status.success());
    assert!(
        String::from_utf8_lossy(&status.stderr).contains("writable by other users"),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}
