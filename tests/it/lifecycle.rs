//! The database on disk: readable by the sqlite3 CLI while the server runs, identity kept across
//! restarts, and a graceful shutdown that keeps everything it acknowledged.

use crate::common;

use common::{assert_gapless, spawn_app, start, stats};
use hooklog::config::Config;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::process::Command;

#[tokio::test]
async fn the_sqlite3_cli_reads_the_log_while_the_server_runs() {
    let app = spawn_app().await;
    let events: Vec<Value> = (0..50)
        .map(|i| json!({"type": "PostToolUse", "sessionId": "cli", "payload": {"i": i, "text": "é\"\n\\"}}))
        .collect();
    app.post_json(&Value::Array(events)).await;
    let query = "SELECT COUNT(*), SUM(json_valid(payload)), MAX(session_sequence) FROM events;";
    let output = match Command::new("sqlite3")
        .arg(&app.db_path)
        .arg(query)
        .output()
    {
        Ok(output) => {
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).unwrap().trim().to_string()
        }
        // No sqlite3 CLI on this machine: the same query through another connection (the CLI is
        // this plus a prompt). Install the `sqlite3` package to exercise the CLI itself.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("sqlite3 CLI not found; reading through a separate connection instead");
            app.db()
                .query_row(query, [], |r| {
                    Ok(format!(
                        "{}|{}|{}",
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?
                    ))
                })
                .unwrap()
        }
        Err(e) => panic!("running sqlite3: {e}"),
    };
    assert_eq!(output, "50|50|50");
    // And the server keeps writing while the file is being read.
    assert_eq!(
        app.post_json(&json!({"type": "Stop"})).await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_restart_keeps_the_log_the_generation_and_the_head() {
    let app = spawn_app().await;
    for _ in 0..3 {
        app.post_json(&json!({"type": "Stop", "sessionId": "s"}))
            .await;
    }
    let generation = app.get("/stats").await.1["streamGenerationId"].clone();
    assert_eq!(generation.as_str().unwrap().len(), 32);
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    // A clean stop leaves one self-contained file: a copy of the main file alone holds it all.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&db_path, &copy).unwrap();
    let copied: i64 = common::open_read_only(&copy)
        .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(copied, 3);

    // While it runs, a second hooklog on the same file is refused.
    let app = start(Config::for_path(&db_path), dir).await;
    let second = hooklog::App::build(Config::for_path(&db_path)).await;
    assert!(
        matches!(second, Err(hooklog::store::StoreError::InUse(_))),
        "a second server must be refused"
    );
    assert_eq!(app.get("/stats").await.1["streamGenerationId"], generation);
    let (_, ack) = app
        .post_json(&json!({"type": "Stop", "sessionId": "s"}))
        .await;
    assert_eq!(ack["events"][0]["sequence"], 4);
    assert_eq!(ack["events"][0]["sessionSequence"], 4);
    let version: i64 = app
        .db()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version as usize, hooklog::store::migrate::MIGRATIONS.len());
    let mode: String = app
        .db()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn graceful_shutdown_keeps_every_acknowledged_event() {
    let app = spawn_app().await;
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let (client, url) = (app.client.clone(), app.url.clone());
            tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in 0.. {
                    let body = json!({"id": format!("p{p}-{i}"), "type": "Stop", "sessionId": format!("s{p}")});
                    match client.post(format!("{url}/events")).json(&body).send().await {
                        Ok(r) if r.status() == StatusCode::OK => acked.push(body["id"].as_str().unwrap().to_string()),
                        _ => return acked,
                    }
                }
                acked
            })
        })
        .collect();
    common::wait_for(std::time::Duration::from_secs(30), "some events", || {
        app.event_count() >= 200
    })
    .await;
    let db_path = app.db_path.clone();
    let _dir = app.stop().await; // returns once the writer has committed and closed
    let mut acked = Vec::new();
    for producer in producers {
        acked.extend(producer.await.unwrap());
    }
    let conn = common::open_read_only(&db_path);
    assert_gapless(&conn);
    assert!(acked.len() >= 200);
    let mut present = conn
        .prepare("SELECT COUNT(*) FROM events WHERE event_id = ?1")
        .unwrap();
    for id in &acked {
        let n: i64 = present.query_row([id], |r| r.get(0)).unwrap();
        assert_eq!(n, 1, "acknowledged {id} is not in the file");
    }
}

/// What the server first sends back on `stream`, read within a 5 s deadline.
async fn first_answer(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut answer = vec![0; 4096];
    let n = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read(&mut answer))
        .await
        .expect("answered before the deadline")
        .unwrap();
    String::from_utf8_lossy(&answer[..n]).into_owned()
}

#[tokio::test]
async fn a_client_that_never_finishes_its_body_gets_408_and_cannot_hold_shutdown_open() {
    use tokio::io::AsyncWriteExt;
    let app = common::spawn_app_with(|c| {
        c.body_timeout = std::time::Duration::from_millis(300);
        c.drain_timeout = std::time::Duration::from_millis(500);
    })
    .await;
    let addr = app.url.trim_start_matches("http://").to_string();
    // The Host must name the server: the DNS-rebinding check refuses any other.
    let partial = format!(
        "POST /events HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    );

    // The body timeout answers a stalled body with 408.
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    slow.write_all(partial.as_bytes()).await.unwrap();
    let answer = first_answer(&mut slow).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");

    // A client stalled in its headers keeps its connection open; shutdown closes it anyway.
    let mut stalled = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stalled
        .write_all(format!("POST /events HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
        .await
        .unwrap();
    app.post_json(&json!({"type": "Stop"})).await;
    let started = std::time::Instant::now();
    let db_path = app.db_path.clone();
    let _dir = app.stop().await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(
        common::open_read_only(&db_path)
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        1
    );
}

/// The body timeout is an idle timeout: a body that keeps arriving, each piece sooner than the
/// timeout, is read to the end however long it takes in all.
#[tokio::test]
async fn a_body_that_trickles_in_within_the_idle_timeout_is_stored() {
    use tokio::io::AsyncWriteExt;
    let app =
        common::spawn_app_with(|c| c.body_timeout = std::time::Duration::from_millis(400)).await;
    let addr = app.url.trim_start_matches("http://").to_string();
    let body = json!({"type": "Stop", "sessionId": "trickle", "payload": {"note": "x".repeat(60)}})
        .to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /events HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    // Six pieces 100 ms apart: 500 ms in all, more than the timeout, never idle that long.
    let pieces: Vec<&[u8]> = body.as_bytes().chunks(body.len().div_ceil(6)).collect();
    assert_eq!(pieces.len(), 6);
    for piece in pieces {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        stream.write_all(piece).await.unwrap();
    }
    let answer = first_answer(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(
        common::open_read_only(&app.db_path)
            .query_row(
                "SELECT COUNT(*) FROM events WHERE session_id = 'trickle'",
                [],
                |r| r.get::<_, i64>(0)
            )
            .unwrap(),
        1
    );
}

#[tokio::test]
async fn hooklog_rebuild_checks_and_restores_the_projections() {
    let app = common::spawn_app().await;
    app.post_fixture("/event", "claude-code-session").await;
    app.post_fixture("/event/normalized", "normalized-session")
        .await;
    let db = app.db_path.clone();
    let rebuild = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
            .arg("rebuild")
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .expect("run hooklog rebuild")
    };
    // --check works on a copy, so it runs beside the server; rebuilding in place does not.
    let checked = rebuild(&["--check"]);
    let out = String::from_utf8_lossy(&checked.stdout);
    assert!(checked.status.success(), "{out}");
    assert!(out.contains("equal a rebuild"), "{out}");
    let refused = rebuild(&[]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("stop the server"));

    let dir = app.stop().await;
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE heroes SET cwd = '/tampered'", [])
        .unwrap();
    let tampered = rebuild(&["--check"]);
    let out = String::from_utf8_lossy(&tampered.stdout);
    assert!(!tampered.status.success());
    assert!(
        out.contains("/tampered"),
        "the differing row is shown: {out}"
    );
    let fixed = rebuild(&[]);
    assert!(
        fixed.status.success(),
        "{}",
        String::from_utf8_lossy(&fixed.stderr)
    );
    assert!(String::from_utf8_lossy(&fixed.stdout).contains("from 32 events"));
    assert!(rebuild(&["--check"]).status.success());
    let cwd: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT cwd FROM heroes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(cwd, "/home/dev/src/shop");
    drop(dir);
}

/// `/stats` of `hooklog serve` on `db` started with `flag` given `by_flag` and the variable
/// `variable` set to `by_env` (each only when given; the variable is cleared otherwise).
async fn stats_of_serve_with(
    db: &std::path::Path,
    flag: &str,
    variable: &str,
    by_flag: Option<&str>,
    by_env: Option<&str>,
) -> Value {
    let server = common::ServerProcess::start_with(db, "127.0.0.1:0", |command| {
        command.env_remove(variable);
        if let Some(value) = by_flag {
            command.args([flag, value]);
        }
        if let Some(value) = by_env {
            command.env(variable, value);
        }
    });
    stats(&reqwest::Client::new(), &server.url).await
}

/// `serve` answers HTTP on the worker threads it is given (`--workers`, `HOOKLOG_WORKERS`), as
/// `/stats` reports them; by default one fewer than the cores, at least one; 0 is refused.
#[tokio::test]
async fn serve_runs_as_many_http_workers_as_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("workers.db");
    let default =
        hooklog::config::http_workers_for(std::thread::available_parallelism().unwrap().get());
    // Counts other than the default, so that a flag or variable that is ignored fails.
    let (by_flag, by_env) = ((default + 1).to_string(), (default + 2).to_string());
    // (what is set, the flag, HOOKLOG_WORKERS, the workers expected)
    let cases = [
        ("--workers", Some(by_flag.as_str()), None, default + 1),
        ("HOOKLOG_WORKERS", None, Some(by_env.as_str()), default + 2),
        ("the default", None, None, default),
    ];
    for (case, flag, env, expected) in cases {
        let stats = stats_of_serve_with(&db, "--workers", "HOOKLOG_WORKERS", flag, env).await;
        assert_eq!(stats["httpWorkers"], expected, "{case}: {stats}");
    }

    for (flag, env) in [(Some("0"), None), (None, Some("0"))] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hooklog"));
        command
            .args(["serve", "--bind", "127.0.0.1:0", "--db"])
            .arg(&db)
            .env_remove("HOOKLOG_WORKERS");
        if let Some(n) = flag {
            command.args(["--workers", n]);
        }
        if let Some(n) = env {
            command.env("HOOKLOG_WORKERS", n);
        }
        let refused = command.output().unwrap();
        assert!(!refused.status.success(), "{flag:?} {env:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("--workers (HOOKLOG_WORKERS) must be at least 1"),
            "{stderr}"
        );
    }
}

/// The bundled SQLite is built to sync with `fdatasync` (`HAVE_FDATASYNC` in
/// .cargo/config.toml), so a commit's WAL sync does not also write the file's timestamps.
/// Checked by tracing a real import with strace where it can run (CI installs it); said and
/// skipped where it cannot.
#[test]
fn commits_sync_the_database_with_fdatasync() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("events.ndjson");
    std::fs::write(
        &input,
        "{\"type\":\"Stop\",\"sessionId\":\"s\",\"payload\":{}}\n",
    )
    .unwrap();
    let trace = dir.path().join("syncs.trace");
    let db = dir.path().join("synced.db");
    let traced = Command::new("strace")
        .args(["-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_hooklog"))
        .arg("import")
        .arg(&input)
        .arg("--db")
        .arg(&db)
        .output();
    let output = match traced {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("strace not found; install it to check how commits sync");
            return;
        }
        Err(e) => panic!("running strace: {e}"),
    };
    let syncs = std::fs::read_to_string(&trace).unwrap_or_default();
    if !output.status.success() && syncs.is_empty() {
        eprintln!(
            "strace cannot trace here: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        syncs
            .lines()
            .any(|l| l.contains("fdatasync(") && l.contains("synced.db-wal>")),
        "no fdatasync of the WAL:\n{syncs}"
    );
    assert!(
        !syncs
            .lines()
            .any(|l| l.contains(" fsync(") && l.contains("synced.db")),
        "the database was synced with fsync:\n{syncs}"
    );
}

/// `serve --durability` (or `HOOKLOG_DURABILITY`) sets the write connection's `synchronous`,
/// as `/stats` reads it back from SQLite: `full` by default, `normal` when asked; an unknown
/// level is refused at start.
#[tokio::test]
async fn serve_sets_the_durability_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("durability.db");
    // (what is set, the flag, HOOKLOG_DURABILITY, what /stats reports)
    let cases = [
        ("--durability normal", Some("normal"), None, "normal"),
        ("HOOKLOG_DURABILITY", None, Some("normal"), "normal"),
        ("--durability full", Some("full"), None, "full"),
        ("the default", None, None, "full"),
    ];
    for (case, flag, env, expected) in cases {
        let stats = stats_of_serve_with(&db, "--durability", "HOOKLOG_DURABILITY", flag, env).await;
        assert_eq!(stats["durability"], expected, "{case}: {stats}");
    }

    let refused = Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--durability",
            "fast",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("[possible values: full, normal]"),
        "{stderr}"
    );
}

/// Posts to `url` until the server stops answering, one event or an NDJSON batch of ten a
/// request, and returns the ids it was given a `200` for.
async fn post_until_refused(url: String, producer: usize) -> Vec<String> {
    let client = reqwest::Client::new();
    let mut acked = Vec::new();
    for n in 0.. {
        let batch = if producer.is_multiple_of(2) { 1 } else { 10 };
        let ids: Vec<String> = (0..batch).map(|k| format!("p{producer}-{n}-{k}")).collect();
        let lines: Vec<String> = ids
            .iter()
            .map(|id| {
                json!({"id": id, "type": "PostToolUse", "sessionId": format!("s{}", n % 3),
                       "payload": {"output": "z".repeat(200)}})
                .to_string()
            })
            .collect();
        let response = client
            .post(format!("{url}/events"))
            .header("content-type", "application/x-ndjson")
            .body(lines.join("\n"))
            .send()
            .await;
        match response {
            Ok(r) if r.status() == StatusCode::OK => acked.extend(ids),
            // A request the stopping server has read is finished and answered (its drain
            // timeout is 10 s); one it has not read finds the connection closed.
            Ok(r) => panic!("answered {} while stopping", r.status()),
            Err(_) => return acked,
        }
    }
    acked
}

/// SIGTERM and Ctrl-C (SIGINT) stop the real binary under load: it exits with status 0, every
/// event it acknowledged is in the file once, the file is whole and gapless, and its shutdown
/// checkpoint folded the WAL into the database although another process had the file open.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_and_sigint_under_load_stop_the_binary_with_every_acknowledged_event() {
    for (name, signal) in [("SIGTERM", libc::SIGTERM), ("SIGINT", libc::SIGINT)] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("signal.db");
        let mut server = common::ServerProcess::start(&db, "127.0.0.1:0");
        let producers: Vec<_> = (0..4)
            .map(|p| tokio::spawn(post_until_refused(server.url.clone(), p)))
            .collect();
        let client = reqwest::Client::new();
        let started = std::time::Instant::now();
        loop {
            if stats(&client, &server.url).await["headSequence"]
                .as_i64()
                .unwrap()
                >= 1000
            {
                break;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "{name}: no load"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        // A connection of another process, open across the shutdown (as a `sqlite3` session
        // or a `tail` would be): the server is then not the WAL's last user, so only its own
        // checkpoint at shutdown can leave the WAL empty.
        let outside = common::open_read_only(&db);
        outside
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get::<_, i64>(0))
            .unwrap();
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(
            unsafe { libc::kill(server.child.id() as libc::pid_t, signal) },
            0
        );
        let mut status = None;
        common::wait_for(
            std::time::Duration::from_secs(15),
            "the server to exit",
            || {
                status = server.child.try_wait().unwrap();
                status.is_some()
            },
        )
        .await;
        let status = status.unwrap();
        assert!(status.success(), "{name}: exited with {status}");
        let mut acked = Vec::new();
        for producer in producers {
            acked.extend(producer.await.unwrap());
        }
        assert!(acked.len() >= 1000, "{name}: {} acknowledged", acked.len());

        let wal = dir.path().join("signal.db-wal");
        let wal_bytes = std::fs::metadata(&wal).map(|m| m.len());
        assert_eq!(
            wal_bytes.ok(),
            Some(0),
            "{name}: the WAL was not checkpointed and truncated at shutdown"
        );
        drop(outside);
        let conn = common::open_read_only(&db);
        let integrity: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(integrity, "ok", "{name}");
        let stored = assert_gapless(&conn);
        assert!(stored >= acked.len() as i64, "{name}");
        let mut present = conn
            .prepare("SELECT COUNT(*) FROM events WHERE event_id = ?1")
            .unwrap();
        for id in &acked {
            let n: i64 = present.query_row([id], |r| r.get(0)).unwrap();
            assert_eq!(n, 1, "{name}: acknowledged {id} is not in the file once");
        }
    }
}

/// Without `--body-limit`, a body of exactly 1 MiB is taken and one byte more is `413`,
/// storing nothing.
#[tokio::test]
async fn the_default_body_limit_is_one_mebibyte() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("limit.db");
    let server = common::ServerProcess::start_with(&db, "127.0.0.1:0", |command| {
        command.env_remove("HOOKLOG_BODY_LIMIT");
    });
    let client = reqwest::Client::new();
    let body = |len: usize| {
        let shell = json!({"type": "Stop", "sessionId": "big", "payload": {"pad": ""}}).to_string();
        let padded = shell.replace(
            r#""pad":"""#,
            &format!(r#""pad":"{}""#, "x".repeat(len - shell.len())),
        );
        assert_eq!(padded.len(), len);
        padded
    };
    let post = |len: usize| {
        client
            .post(format!("{}/events", server.url))
            .header("content-type", "application/json")
            .body(body(len))
            .send()
    };
    let over = post(1024 * 1024 + 1).await.unwrap();
    assert_eq!(over.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let error: Value = over.json().await.unwrap();
    assert_eq!(error["error"], "payload_too_large", "{error}");
    let at = post(1024 * 1024).await.unwrap();
    assert_eq!(at.status(), StatusCode::OK);
    let answer: Value = at.json().await.unwrap();
    assert_eq!(answer["events"][0]["sequence"], 1, "the 413 stored nothing");
}
