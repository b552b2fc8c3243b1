//! The disk refuses writes under a running server: full (a small tmpfs, or a file size limit on
//! the server process where mounting is not allowed) or read-only (immutable files). Ingest on
//! every route answers `503 storage_unavailable` and stores nothing, `/health` says `failing`,
//! reads keep working, and once the disk takes writes again ingest recovers by itself: the next
//! event lands right after the last stored one, the refused events can be posted again, and
//! the file is intact and gapless.

use crate::common;

use common::{ServerProcess, assert_gapless, open_read_only};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

async fn post(url: &str, route: &str, body: &Value) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}{route}"))
        .json(body)
        .send()
        .await
        .expect("answered");
    let status = response.status();
    (status, response.json().await.expect("a JSON answer"))
}

async fn get(url: &str, path: &str) -> (StatusCode, Value) {
    let response = reqwest::get(format!("{url}{path}"))
        .await
        .expect("answered");
    let status = response.status();
    (status, response.json().await.expect("a JSON answer"))
}

fn event(id: &str, bytes: usize) -> Value {
    json!({"id": id, "type": "PostToolUse", "sessionId": "s1", "payload": {"output": "z".repeat(bytes)}})
}

/// Posts events of `bytes` until the server refuses one; returns the refused event.
async fn fill(url: &str, prefix: &str, bytes: usize) -> Value {
    for n in 0..2_000 {
        let event = event(&format!("{prefix}-{n}"), bytes);
        let (status, answer) = post(url, "/events", &event).await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(answer["error"], "storage_unavailable", "{answer}");
            return event;
        }
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    panic!("the disk never filled up");
}

/// Posts factory events until the server refuses one.
async fn fill_factory(url: &str) {
    for n in 0..2_000 {
        let event = json!({
            "schemaVersion": "agent-factory.event.v1", "id": format!("fill-{n}"),
            "type": "SESSION_STARTED",
            "context": {"tick": 0, "eventTime": "2026-11-30T09:00:00.000Z"},
            "payload": {"startedAt": "2026-11-30T09:00:00.000Z"}});
        let (status, answer) =
            post(url, &format!("/factory-sessions/fill-{n}/events"), &event).await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            return;
        }
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    panic!("the disk never filled up");
}

/// Every ingest route refuses with 503 and the head does not move; reads keep working.
async fn assert_refused_and_readable(url: &str) -> i64 {
    let (status, health) = get(url, "/health").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{health}");
    assert_eq!(health["writer"], "failing");
    let head = health["headSequence"].as_i64().unwrap();

    let attempts = [
        ("/events", event("refused-1", 200)),
        (
            "/event",
            json!({"hook_event_name": "UserPromptSubmit", "session_id": "s2", "prompt": "hello"}),
        ),
        (
            "/factory-sessions/fs-1/events",
            json!({
            "schemaVersion": "agent-factory.event.v1", "id": "fe-1", "type": "SESSION_STARTED",
            "context": {"tick": 0, "eventTime": "2026-11-30T09:00:00.000Z"},
            "payload": {"startedAt": "2026-11-30T09:00:00.000Z"}}),
        ),
        ("/claims", json!({"chat": "dm:alice", "sessionId": "s1"})),
    ];
    for (route, body) in attempts {
        let (status, answer) = post(url, route, &body).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{route}: {answer}");
        assert_eq!(answer["error"], "storage_unavailable", "{route}: {answer}");
    }
    let (status, answer) = post(
        url,
        "/event/normalized",
        &json!({"type": "ended", "sessionId": "s3", "timestamp": 1764500000000u64}),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer, json!({"error": "storage_unavailable"}));
    assert_eq!(
        get(url, "/health").await.1["headSequence"],
        head,
        "a refused write moved the head"
    );

    // Reads: a page, a projection, and a stream's history.
    let (status, page) = get(url, "/events?limit=2").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["headSequence"], head);
    assert_eq!(get(url, "/sessions/s1").await.0, StatusCode::OK);
    let stream = reqwest::Client::new()
        .get(format!("{url}/sessions/s1/events"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let mut frames = common::sse::SseReader::new(stream);
    let first = frames
        .next_event(Duration::from_secs(5))
        .await
        .expect("history");
    assert_eq!(first.position(), 1);
    head
}

/// After `make_room`, ingest works again without a restart, right after the last stored event.
async fn assert_recovers(url: &str, db: &Path, head: i64, refused: &Value) {
    let (status, answer) = post(url, "/events", &event("after", 200)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["events"][0]["sequence"],
        head + 1,
        "nothing half-written"
    );
    let (status, answer) = post(url, "/events", refused).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["events"][0]["duplicate"], false,
        "it was never stored"
    );
    let (status, health) = get(url, "/health").await;
    assert_eq!(status, StatusCode::OK, "{health}");
    assert_eq!(health["writer"], "ok");
    assert_eq!(health["headSequence"], head + 2);

    let conn = open_read_only(db);
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    assert_eq!(assert_gapless(&conn), head + 2);
    let refused_rows: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM events WHERE event_id IN ('refused-1', 'fe-1')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(refused_rows, 0, "a refused request left rows behind");
}

/// Fills the disk (big events, then small ones, so the last free pages go too), checks the
/// refusal, calls `make_room`, checks the recovery.
async fn full_then_room(server: &ServerProcess, db: &Path, make_room: impl FnOnce()) {
    let url = server.url.as_str();
    fill(url, "big", 200_000).await;
    let refused = fill(url, "small", 200).await;
    // A factory event writes fewer pages than an event with search text: the last pages go too.
    fill_factory(url).await;
    let head = assert_refused_and_readable(url).await;
    make_room();
    assert_recovers(url, db, head, &refused).await;
}

/// A tmpfs mounted over a directory, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` where mounting is not allowed (not root, or no mount in this sandbox).
    fn mount(dir: PathBuf, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The server with `RLIMIT_FSIZE` at `bytes` (hard limit unlimited) and `SIGXFSZ` ignored, so
/// a write past it fails with `EFBIG` instead of killing the process: what a full disk looks
/// like to SQLite, without mounting anything.
fn start_with_file_size_limit(db: &Path, bytes: u64) -> ServerProcess {
    use std::os::unix::process::CommandExt;
    ServerProcess::start_with(db, "127.0.0.1:0", move |command| {
        // SAFETY: between fork and exec only async-signal-safe calls (signal, setrlimit).
        unsafe {
            command.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: libc::RLIM_INFINITY,
                };
                match libc::setrlimit(libc::RLIMIT_FSIZE, &limit) {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            });
        }
    })
}

/// Lifts the server's file size limit from outside, as freeing disk space would.
fn lift_file_size_limit(server: &ServerProcess) {
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: prlimit with a valid pid and limit structs.
    let result = unsafe {
        libc::prlimit(
            server.child.id() as libc::pid_t,
            libc::RLIMIT_FSIZE,
            &unlimited,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
}

#[tokio::test]
async fn a_full_filesystem_refuses_ingest_keeps_reads_and_recovers_when_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mount) = Tmpfs::mount(dir.path().join("small"), "8m") else {
        eprintln!("mount not allowed here: filling the disk with a file size limit instead");
        let db = dir.path().join("h.db");
        let server = start_with_file_size_limit(&db, 3 * 1024 * 1024);
        full_then_room(&server, &db, || lift_file_size_limit(&server)).await;
        return;
    };
    // Most of the filesystem is taken by another file; deleting it is the space returning.
    let filler = mount.0.join("filler");
    std::fs::write(&filler, vec![7u8; 5 * 1024 * 1024]).unwrap();
    let db = mount.0.join("h.db");
    let server = ServerProcess::start(&db, "127.0.0.1:0");
    full_then_room(&server, &db, || std::fs::remove_file(&filler).unwrap()).await;
    drop(server);
}

#[tokio::test]
async fn a_file_size_limit_refuses_ingest_and_lifting_it_recovers() {
    // The fallback of the test above, run everywhere so it cannot rot where mount works.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let server = start_with_file_size_limit(&db, 3 * 1024 * 1024);
    full_then_room(&server, &db, || lift_file_size_limit(&server)).await;
}

/// Files made immutable (`chattr +i`: even root cannot write them), made writable on drop.
struct Immutable(Vec<PathBuf>);

impl Immutable {
    /// `None` where the flag cannot be set (no CAP_LINUX_IMMUTABLE, or a filesystem without it).
    fn set(files: Vec<PathBuf>) -> Option<Immutable> {
        let set = Command::new("chattr")
            .arg("+i")
            .args(&files)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let guard = Immutable(files);
        set.then_some(guard)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").args(&self.0).status();
    }
}

#[tokio::test]
async fn a_read_only_database_refuses_ingest_keeps_reads_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let server = ServerProcess::start(&db, "127.0.0.1:0");
    let url = server.url.as_str();
    for n in 0..3 {
        let (status, answer) = post(url, "/events", &event(&format!("before-{n}"), 100)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    let Some(read_only) = Immutable::set(vec![db.clone(), wal]) else {
        eprintln!("skipped: chattr +i is not available here (needs root and ext4/xfs/btrfs)");
        return;
    };
    let refused = event("refused-0", 100);
    let (status, answer) = post(url, "/events", &refused).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer["error"], "storage_unavailable");
    let head = assert_refused_and_readable(url).await;
    assert_eq!(head, 3);
    drop(read_only);
    assert_recovers(url, &db, head, &refused).await;
}
