//! Shared test harness: a real hooklog on 127.0.0.1:0 with a temporary database file, an HTTP
//! client, and read-only access to the file for checking what was really stored.
#![allow(dead_code)]

pub mod sse;

use hooklog::App;
use hooklog::config::Config;
use reqwest::StatusCode;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestApp {
    pub url: String,
    pub db_path: PathBuf,
    pub client: reqwest::Client,
    pub dir: TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

/// Starts hooklog on a fresh temporary database.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts hooklog on a fresh temporary database, after `adjust` has changed its config.
pub async fn spawn_app_with(adjust: impl FnOnce(&mut Config)) -> TestApp {
    init_tracing();
    let dir = tempfile::tempdir().expect("temp dir");
    let db_path = dir.path().join("hooklog.db");
    let mut config = Config::for_path(&db_path);
    adjust(&mut config);
    start(config, dir).await
}

/// Starts hooklog on `config`, keeping `dir` (which holds the database) alive with it.
pub async fn start(config: Config, dir: TempDir) -> TestApp {
    let db_path = config.db_path.clone();
    let app = App::build(config).await.expect("app builds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (shutdown, stop) = oneshot::channel::<()>();
    let server = tokio::spawn(app.serve(listener, async {
        let _ = stop.await;
    }));
    TestApp {
        url,
        db_path,
        client: reqwest::Client::new(),
        dir,
        shutdown: Some(shutdown),
        server: Some(server),
    }
}

fn init_tracing() {
    if std::env::var_os("TEST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter("debug")
            .with_test_writer()
            .try_init();
    }
}

impl TestApp {
    /// POSTs a JSON body to `/events`.
    pub async fn post_json(&self, body: &Value) -> (StatusCode, Value) {
        self.post_raw("/events", "application/json", body.to_string().into_bytes())
            .await
    }

    /// POSTs NDJSON lines to `/events`.
    pub async fn post_ndjson(&self, lines: &[Value]) -> (StatusCode, Value) {
        let body: Vec<String> = lines.iter().map(Value::to_string).collect();
        self.post_raw(
            "/events",
            "application/x-ndjson",
            body.join("\n").into_bytes(),
        )
        .await
    }

    pub async fn post_raw(
        &self,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.url))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("request sent");
        let status = response.status();
        (status, response.json().await.expect("a JSON answer"))
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .expect("request sent");
        let status = response.status();
        (status, response.json().await.expect("a JSON answer"))
    }

    /// Asks a stream route for its JSON reconnect probe (`Accept: application/json`).
    pub async fn probe(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.url))
            .header("accept", "application/json")
            .send()
            .await
            .expect("probe sent")
    }

    /// Opens an event stream (`Accept: text/event-stream`) with extra headers.
    pub async fn stream(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self
            .client
            .get(format!("{}{path}", self.url))
            .header("accept", "text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("stream request sent")
    }

    /// Posts `n` events of session `session` (types cycle through a few known ones).
    pub async fn post_session_events(&self, session: &str, n: usize) -> Vec<Value> {
        let events: Vec<Value> = (0..n)
            .map(|i| serde_json::json!({"type": "PostToolUse", "sessionId": session, "payload": {"i": i}}))
            .collect();
        let (status, body) = self.post_json(&Value::Array(events)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["events"].as_array().unwrap().clone()
    }

    /// POSTs one JSON body to a hook route (`/event`, `/event/normalized`).
    pub async fn post_hook(&self, route: &str, body: &Value) -> (StatusCode, Value) {
        self.post_raw(route, "application/json", body.to_string().into_bytes())
            .await
    }

    /// POSTs one body to `/event` and returns the answer, which must be a 200.
    pub async fn post_hook_ok(&self, body: Value) -> Value {
        let (status, answer) = self.post_hook("/event", &body).await;
        assert_eq!(status, StatusCode::OK, "{body} -> {answer}");
        answer
    }

    /// Posts every line of `fixtures/hooks/<name>.ndjson` to `route`, one request per line, in
    /// order, and returns the answers (each must be a 200).
    pub async fn post_fixture(&self, route: &str, name: &str) -> Vec<Value> {
        let mut answers = Vec::new();
        for line in fixture(name) {
            let (status, answer) = self.post_hook(route, &line).await;
            assert_eq!(status, StatusCode::OK, "{line} -> {answer}");
            answers.push(answer);
        }
        answers
    }

    /// A read-only connection to the database file, independent of the server's, once the
    /// search rows of every acknowledged event are in it (the writer writes them right after
    /// the acknowledging commit, on its own thread), so the file reads as a whole.
    pub fn db(&self) -> Connection {
        let conn = open_read_only(&self.db_path);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let caught_up = || {
            let head = hooklog::store::read::head(&conn).unwrap();
            hooklog::projection::search::through(&conn).is_ok_and(|through| through >= head)
        };
        while !caught_up() {
            assert!(
                std::time::Instant::now() < deadline,
                "search rows still behind the log after 10 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        conn
    }

    /// The first column of every row of a query on the file, as text.
    pub fn strings(&self, sql: &str) -> Vec<String> {
        self.db()
            .prepare(sql)
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    pub fn event_count(&self) -> i64 {
        self.db()
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
            .unwrap()
    }

    /// Stops the server as SIGTERM would and waits until the database is closed.
    pub async fn stop(mut self) -> TempDir {
        let _ = self.shutdown.take().expect("running").send(());
        self.server
            .take()
            .expect("running")
            .await
            .expect("server task")
            .expect("server ran");
        std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap())
    }
}

/// Every projection table's rows, in a fixed order, as text.
pub fn dump_projections(conn: &rusqlite::Connection) -> Vec<String> {
    hooklog::projection::dump(conn).expect("projection tables read")
}

/// Waits (10 s at most) until a running server's search rows, written after the commits that
/// acknowledged their events (within about 50 ms), have caught up with its log: a server
/// killed before that leaves them to its next start, and its file then differs from a rebuild.
pub async fn wait_for_search(db: &std::path::Path) {
    let conn = Connection::open(db).expect("open the db");
    let caught_up = || -> bool {
        conn.query_row(
            "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'search_through'), 0)
                    >= COALESCE((SELECT MAX(sequence) FROM events), 0)",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    wait_for(std::time::Duration::from_secs(10), "search rows", caught_up).await;
}

/// Rebuilds the projections of a server's database (stopped, or running and idle) from its log, writing the rows the
/// replay holds in memory every event, every few events and only at the end, reading the log
/// on one thread and on two, and checks each rebuild equals the live tables row
/// for row (then rolls it back).
pub fn assert_rebuilds_to_live(path: &std::path::Path) {
    let mut conn = Connection::open(path).expect("open the db");
    // A running server writes search rows after the commit that acknowledged their events
    // (`search_through` in `meta`): the live tables are compared once they have caught up
    // with the log, or after a deadline, when the comparison says what is missing.
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(10) {
        let caught_up: bool = conn
            .query_row(
                "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'search_through'), 0)
                        >= COALESCE((SELECT MAX(sequence) FROM events), 0)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if caught_up {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let live = dump_projections(&conn);
    for events_per_flush in [1, 3, u64::MAX] {
        for read_beside in [false, true] {
            let how = hooklog::projection::Replay {
                events_per_flush,
                read_beside,
            };
            let tx = conn.transaction().unwrap();
            hooklog::store::rebuild::rebuild_with(&tx, how).expect("rebuild");
            assert_eq!(
                dump_projections(&tx),
                live,
                "a rebuild ({how:?}) equals the live projections"
            );
        }
    }
}

/// The lines of `fixtures/hooks/<name>.ndjson`.
pub fn fixture(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/fixtures/hooks/{name}.ndjson",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("fixture line is JSON"))
        .collect()
}

pub fn open_read_only(path: &std::path::Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the db read-only")
}

/// `GET /stats` of the server at `url`.
pub async fn stats(client: &reqwest::Client, url: &str) -> Value {
    client
        .get(format!("{url}/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The value of `series` (a metric's name, with its labels as `/metrics` prints them) in
/// `GET /metrics` of the server at `url`; `None` when it is not there.
pub async fn metric(client: &reqwest::Client, url: &str, series: &str) -> Option<f64> {
    let text = client
        .get(format!("{url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits until `condition` holds, polling, or panics after `deadline`.
pub async fn wait_for(deadline: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Checks the log's invariants on a database file: `sequence` is exactly 1..N and each session's
/// `session_sequence` is exactly 1..n. Returns N.
pub fn assert_gapless(conn: &Connection) -> i64 {
    let (count, min, max): (i64, Option<i64>, Option<i64>) = conn
        .query_row(
            "SELECT COUNT(*), MIN(sequence), MAX(sequence) FROM events",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    if count > 0 {
        assert_eq!(
            (min, max),
            (Some(1), Some(count)),
            "sequence is not exactly 1..{count}"
        );
    }
    let mut stmt = conn
        .prepare(
            "SELECT session_id, COUNT(*), MIN(session_sequence), MAX(session_sequence)
             FROM events WHERE session_id IS NOT NULL GROUP BY session_id",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (session, n, min, max) = row.unwrap();
        assert_eq!(
            (min, max),
            (1, n),
            "session {session}: session_sequence is not exactly 1..{n}"
        );
    }
    count
}

/// Runs the real `hooklog` binary with `args` (its log at `warn`) to its end and gives what it
/// printed; fails the test, showing both outputs, if it did not exit with success.
pub fn hooklog_stdout<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(args)
        .env("HOOKLOG_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The real `hooklog serve` binary as a child process.
pub struct ServerProcess {
    pub child: std::process::Child,
    pub url: String,
}

impl ServerProcess {
    /// Starts `hooklog serve` on `db` at `bind` (port 0 picks one) and waits for its address.
    pub fn start(db: &std::path::Path, bind: &str) -> ServerProcess {
        ServerProcess::start_with(db, bind, |_| {})
    }

    /// [`ServerProcess::start`], after `adjust` has changed the command (flags, environment,
    /// limits set in the child before it runs).
    pub fn start_with(
        db: &std::path::Path,
        bind: &str,
        adjust: impl FnOnce(&mut std::process::Command),
    ) -> ServerProcess {
        use std::io::BufRead;
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"));
        command
            .args(["serve", "--bind", bind, "--db"])
            .arg(db)
            .env("HOOKLOG_LOG", "warn")
            .stdout(std::process::Stdio::piped());
        adjust(&mut command);
        let mut child = command.spawn().expect("start hooklog");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .expect("address printed");
        ServerProcess {
            child,
            url: url.to_string(),
        }
    }

    /// SIGTERM, then waits (15 s at most) until the server has stopped, its log complete.
    pub async fn terminate(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let started = std::time::Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < Duration::from_secs(15), "did not stop");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().unwrap();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port no other test of this binary has been given, free when it is handed out. A port
/// from the OS (bind to 0) can come back to another test running alongside once its server
/// is killed, and that test's `tail` would then reconnect to the wrong server.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let _ = NEXT.compare_exchange(
        0,
        // Below Linux's ephemeral range (32768 and up), where port 0 binds come from.
        20_000 + (std::process::id() % 12_000) as u16,
        Ordering::AcqRel,
        Ordering::Acquire,
    );
    loop {
        let port = NEXT.fetch_add(1, Ordering::AcqRel);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Writes back whole, in their rows (`shared` `NULL`), the payloads of the split events whose
/// `payload_shared` row `p` meets `condition`.
fn payloads_whole(conn: &Connection, condition: &str) {
    let split: Vec<(i64, String, String, String)> = conn
        .prepare(&format!(
            "SELECT e.sequence, e.payload, p.fields, e.type
             FROM events e JOIN payload_shared p ON p.id = e.shared WHERE {condition}"
        ))
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (sequence, rest, fields, event_type) in split {
        let whole = hooklog::event::shared::join(&rest, &fields, &event_type).unwrap();
        conn.execute(
            "UPDATE events SET payload = ?1, shared = NULL WHERE sequence = ?2",
            rusqlite::params![whole, sequence],
        )
        .unwrap();
    }
}

/// Puts a database back as schema 37 left it (before migration 0038): `missions` keyed by its
/// id, with an index in opening order, and 0018's `recent_failures`; for tests that simulate
/// an older hooklog's file.
pub fn as_schema_37(conn: &Connection) {
    let views = include_str!("../../../migrations/0018_views.sql");
    let start = views.find("CREATE VIEW recent_failures").unwrap();
    let end = start + views[start..].find(";\n").unwrap() + 2;
    let view = &views[start..end];
    conn.execute_batch(&format!(
        "CREATE TABLE missions_37 (
             id TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL,
             state TEXT NOT NULL, prompt TEXT, title TEXT, summary TEXT,
             parent_mission_id TEXT, subagent_id TEXT, subagent_type TEXT,
             degraded_reason TEXT, opened_event_id TEXT NOT NULL, closed_event_id TEXT,
             started_at TEXT NOT NULL, completed_at TEXT, opened_sequence INTEGER NOT NULL,
             opening_pruned INTEGER);
         INSERT INTO missions_37 SELECT id, session_id, kind, state, prompt, title, summary,
             parent_mission_id, subagent_id, subagent_type, degraded_reason, opened_event_id,
             closed_event_id, started_at, completed_at, opened_sequence, opening_pruned
         FROM missions;
         DROP VIEW recent_failures;
         PRAGMA legacy_alter_table = ON;
         DROP TABLE missions;
         ALTER TABLE missions_37 RENAME TO missions;
         PRAGMA legacy_alter_table = OFF;
         CREATE INDEX missions_by_order ON missions (opened_sequence);
         CREATE INDEX missions_by_state ON missions (state, opened_sequence);
         CREATE INDEX missions_active ON missions (session_id, opened_sequence)
             WHERE state = 'active';
         CREATE INDEX missions_active_subagents ON missions (session_id, subagent_id,
             opened_sequence) WHERE state = 'active' AND subagent_id IS NOT NULL;
         CREATE INDEX missions_pruned ON missions (session_id, opened_sequence)
             WHERE opening_pruned = 1;
         CREATE INDEX missions_by_parent ON missions (parent_mission_id)
             WHERE parent_mission_id IS NOT NULL;
         {view}
         PRAGMA user_version = 37;"
    ))
    .unwrap();
}

/// Puts a database back as schema 36 left it (before migration 0037): a hero's state, mission
/// in progress and mission count in its `heroes` row, the session's `hero_state` a copy kept
/// by triggers; for tests that simulate an older hooklog's file. The hero's state keeps no
/// CHECK (hooklog writes its own values only).
pub fn as_schema_36(conn: &Connection) {
    as_schema_37(conn);
    let migration = include_str!("../../../migrations/0018_views.sql");
    let start = migration.find("CREATE VIEW agents_now").unwrap();
    let end = start + migration[start..].find(";\n").unwrap() + 2;
    let view = &migration[start..end];
    let triggers = include_str!("../../../migrations/0025_killed_agents.sql");
    let start = triggers
        .find("CREATE TRIGGER heroes_state_on_insert")
        .unwrap();
    let end = triggers.find("DROP INDEX heroes_live").unwrap();
    let triggers = &triggers[start..end];
    conn.execute_batch(&format!(
        "DROP VIEW agents_now;
         ALTER TABLE heroes ADD COLUMN state TEXT NOT NULL DEFAULT 'idle';
         ALTER TABLE heroes ADD COLUMN active_mission_id TEXT;
         ALTER TABLE heroes ADD COLUMN mission_count INTEGER NOT NULL DEFAULT 0;
         UPDATE heroes SET (state, active_mission_id, mission_count) =
             (SELECT hero_state,
                     (SELECT id FROM missions m WHERE m.opened_sequence = s.hero_mission),
                     hero_mission_count
              FROM sessions s WHERE s.id = heroes.session_id);
         ALTER TABLE sessions DROP COLUMN hero_mission;
         ALTER TABLE sessions DROP COLUMN hero_mission_count;
         {triggers}
         {view}
         PRAGMA user_version = 36;"
    ))
    .unwrap();
}

/// Puts a database back as schema 34 left it (before migration 0035): permission requests
/// with a unique index on their id and one by session, without `opening_pruned`; for tests
/// that simulate an older hooklog's file. The CHECKs keep 0036's form (comparisons joined by
/// OR), which accepts and refuses what schema 34's IN lists did.
pub fn as_schema_34(conn: &Connection) {
    as_schema_36(conn);
    conn.execute_batch(
        "CREATE TABLE permission_requests_34 (
             sequence INTEGER PRIMARY KEY, request_id TEXT NOT NULL UNIQUE,
             session_id TEXT NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL, input_key TEXT,
             preview TEXT, opened_at TEXT NOT NULL, waits_until TEXT, state TEXT NOT NULL,
             closed_at TEXT, closed_by INTEGER, decided_by TEXT, message TEXT);
         INSERT INTO permission_requests_34
         SELECT sequence, request_id, session_id, kind, tool, input_key, preview, opened_at,
                waits_until, state, closed_at, closed_by, decided_by, message
         FROM permission_requests;
         PRAGMA legacy_alter_table = ON;
         DROP TABLE permission_requests;
         ALTER TABLE permission_requests_34 RENAME TO permission_requests;
         PRAGMA legacy_alter_table = OFF;
         CREATE INDEX permission_requests_pending ON permission_requests (session_id)
             WHERE state = 'pending';
         CREATE INDEX permission_requests_session ON permission_requests (session_id, sequence);
         CREATE INDEX permission_requests_pending_by_order ON permission_requests (sequence)
             WHERE state = 'pending';
         PRAGMA user_version = 34;",
    )
    .unwrap();
}

/// Puts a database back as schema 33 left it (before migration 0034): a session's details in
/// its `sessions` row (at the end of it, where SQLite adds columns), no `session_details`;
/// for tests that simulate an older hooklog's file.
pub fn as_schema_33(conn: &Connection) {
    as_schema_34(conn);
    conn.execute_batch(
        "ALTER TABLE sessions ADD COLUMN first_event_time TEXT NOT NULL DEFAULT '';
         ALTER TABLE sessions ADD COLUMN cli TEXT;
         ALTER TABLE sessions ADD COLUMN cwd TEXT;
         ALTER TABLE sessions ADD COLUMN pane_id TEXT;
         ALTER TABLE sessions ADD COLUMN tty TEXT;
         ALTER TABLE sessions ADD COLUMN transcript_path TEXT;
         ALTER TABLE sessions ADD COLUMN model TEXT;
         ALTER TABLE sessions ADD COLUMN permission_mode TEXT;
         UPDATE sessions SET (first_event_time, cli, cwd, pane_id, tty, transcript_path, model,
                              permission_mode) =
             (SELECT first_event_time, cli, cwd, pane_id, tty, transcript_path, model,
                     permission_mode
              FROM session_details d WHERE d.session_id = sessions.id);
         DROP TABLE session_details;
         PRAGMA user_version = 33;",
    )
    .unwrap();
}

/// Puts a database back as schema 32 left it (before migration 0033): `tool_uses` keyed by
/// its id, with an index in opening order; for tests that simulate an older hooklog's file.
pub fn as_schema_32(conn: &Connection) {
    as_schema_33(conn);
    conn.execute_batch(
        "CREATE TABLE tool_uses_32 (
             id TEXT PRIMARY KEY, session_id TEXT NOT NULL, mission_id TEXT, tool_use_id TEXT,
             request_id TEXT, tool TEXT NOT NULL, kind TEXT NOT NULL, preview TEXT,
             status TEXT NOT NULL, error TEXT, opened_event_id TEXT, closed_event_id TEXT,
             started_at TEXT, finished_at TEXT, duration_ms INTEGER,
             opened_sequence INTEGER NOT NULL, opening_pruned INTEGER);
         INSERT INTO tool_uses_32 SELECT * FROM tool_uses;
         PRAGMA legacy_alter_table = ON;
         DROP TABLE tool_uses;
         ALTER TABLE tool_uses_32 RENAME TO tool_uses;
         PRAGMA legacy_alter_table = OFF;
         CREATE INDEX tool_uses_by_order ON tool_uses (opened_sequence);
         CREATE INDEX tool_uses_running ON tool_uses (session_id, opened_sequence)
             WHERE status = 'running';
         CREATE INDEX tool_uses_running_spawners ON tool_uses (session_id, opened_sequence)
             WHERE status = 'running' AND kind = 'subagent';
         CREATE INDEX tool_uses_running_by_order ON tool_uses (opened_sequence)
             WHERE status = 'running';
         CREATE INDEX tool_uses_pruned ON tool_uses (session_id, opened_sequence)
             WHERE opening_pruned = 1;
         PRAGMA user_version = 32;",
    )
    .unwrap();
}

/// Puts a database back as schema 31 left it (before migration 0032): a session's missions
/// have an index of their own, none says whether its opening event was pruned, and every
/// mission has an entry in `missions_by_parent`; for tests that simulate an older hooklog's
/// file.
pub fn as_schema_31(conn: &Connection) {
    as_schema_32(conn);
    conn.execute_batch(
        "DROP INDEX missions_pruned;
         ALTER TABLE missions DROP COLUMN opening_pruned;
         CREATE INDEX missions_by_session ON missions (session_id, opened_sequence);
         DROP INDEX missions_by_parent;
         CREATE INDEX missions_by_parent ON missions (parent_mission_id);
         PRAGMA user_version = 31;",
    )
    .unwrap();
}

/// Puts a database back as schema 30 left it (before migration 0031): a session's tool uses
/// have an index of their own, and none says whether its opening event was pruned; for tests
/// that simulate an older hooklog's file.
pub fn as_schema_30(conn: &Connection) {
    as_schema_31(conn);
    conn.execute_batch(
        "DROP INDEX tool_uses_pruned;
         ALTER TABLE tool_uses DROP COLUMN opening_pruned;
         CREATE INDEX tool_uses_by_session ON tool_uses (session_id, opened_sequence);
         PRAGMA user_version = 30;",
    )
    .unwrap();
}

/// Puts a database back as schema 29 left it (before migration 0030): each tool use and
/// mission names its hero (its session's); for tests that simulate an older hooklog's file.
pub fn as_schema_29(conn: &Connection) {
    as_schema_30(conn);
    conn.execute_batch(
        "ALTER TABLE tool_uses ADD COLUMN hero_id TEXT;
         ALTER TABLE missions ADD COLUMN hero_id TEXT NOT NULL DEFAULT '';",
    )
    .unwrap();
    let sessions: Vec<String> = conn
        .prepare("SELECT session_id FROM tool_uses UNION SELECT session_id FROM missions")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for session in sessions {
        let hero = hooklog::projection::heroes::hero_id(&session);
        for table in ["tool_uses", "missions"] {
            conn.execute(
                &format!("UPDATE {table} SET hero_id = ?1 WHERE session_id = ?2"),
                [&hero, &session],
            )
            .unwrap();
        }
    }
    conn.execute_batch("PRAGMA user_version = 29").unwrap();
}

/// Puts a database back as schema 28 left it (before migration 0029): the payloads whose
/// event name the shared fields stood for are whole again, and so is the view
/// ([`as_schema_29`] first); for tests that simulate an older hooklog's file.
pub fn as_schema_28(conn: &Connection) {
    as_schema_29(conn);
    payloads_whole(conn, "json_type(p.fields, '$.eventName') = 'true'");
    let migration = include_str!("../../../migrations/0026_payload_shared.sql");
    let view = &migration[migration.find("CREATE VIEW events_whole").unwrap()..];
    conn.execute_batch(&format!(
        "DELETE FROM payload_shared WHERE json_type(fields, '$.eventName') = 'true';
         DROP VIEW events_whole;
         {view}
         PRAGMA user_version = 28;"
    ))
    .unwrap();
}

/// Puts a database back as schema 27 left it (before migration 0028): each change row names
/// its mission by its id ([`as_schema_28`] first); for tests that simulate an older hooklog's
/// file.
pub fn as_schema_27(conn: &Connection) {
    as_schema_28(conn);
    let migration = include_str!("../../../migrations/0027_change_shapes.sql");
    let view = &migration[migration.find("CREATE VIEW changes_sent").unwrap()..];
    conn.execute_batch(&format!(
        "DROP VIEW changes_sent;
         ALTER TABLE agent_changes ADD COLUMN mission_id TEXT;
         UPDATE agent_changes SET mission_id = (SELECT id FROM missions
                                                WHERE opened_sequence = agent_changes.mission);
         ALTER TABLE agent_changes DROP COLUMN mission;
         {view}
         PRAGMA user_version = 27;"
    ))
    .unwrap();
}

/// Puts a database back as schema 26 left it (before migration 0027): every change row's
/// deltas whole in its row, no `change_shapes` ([`as_schema_27`] first); for tests that
/// simulate an older hooklog's file.
pub fn as_schema_26(conn: &Connection) {
    as_schema_27(conn);
    let shaped: Vec<(i64, String, String)> = conn
        .prepare(
            "SELECT c.sequence, s.shape, c.changes
             FROM agent_changes c JOIN change_shapes s ON s.id = c.shape",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (sequence, shape, values) in shaped {
        let whole = hooklog::projection::changes::shape::fill(&shape, &values).unwrap();
        conn.execute(
            "UPDATE agent_changes SET changes = ?1 WHERE sequence = ?2",
            rusqlite::params![whole, sequence],
        )
        .unwrap();
    }
    let migration = include_str!("../../../migrations/0024_change_rows_said.sql");
    let view = &migration[migration.find("CREATE VIEW changes_sent").unwrap()..];
    conn.execute_batch(&format!(
        "DROP VIEW changes_sent;
         ALTER TABLE agent_changes DROP COLUMN shape;
         DROP TABLE change_shapes;
         {view}
         PRAGMA user_version = 26;"
    ))
    .unwrap();
}

/// Puts a database back as schema 25 left it (before migration 0026): every payload whole in
/// its row, no `payload_shared` ([`as_schema_26`] first); for tests that simulate an older
/// hooklog's file.
pub fn as_schema_25(conn: &Connection) {
    as_schema_26(conn);
    payloads_whole(conn, "1");
    conn.execute_batch(
        "DROP VIEW events_whole;
         ALTER TABLE events DROP COLUMN shared;
         DROP TABLE payload_shared;
         PRAGMA user_version = 25;",
    )
    .unwrap();
}

/// Puts a database back as schema 24 left it (before migration 0025): the live sessions and
/// heroes indexed by state alone, no `sessions.hero_state` nor its triggers, no index of the
/// running tool uses or the pending permission requests by order; for tests that simulate an
/// older hooklog's file.
pub fn as_schema_24(conn: &Connection) {
    as_schema_25(conn);
    conn.execute_batch(
        "DROP TRIGGER heroes_state_on_insert;
         DROP TRIGGER heroes_state_on_update;
         DROP TRIGGER heroes_state_on_delete;
         DROP TRIGGER sessions_hero_state_on_insert;
         DROP INDEX sessions_heroes_live;
         DROP INDEX tool_uses_running_by_order;
         DROP INDEX permission_requests_pending_by_order;
         DROP INDEX sessions_live;
         ALTER TABLE sessions DROP COLUMN hero_state;
         CREATE INDEX sessions_live ON sessions (state) WHERE state <> 'ended';
         CREATE INDEX heroes_live ON heroes (state) WHERE state <> 'ended';
         PRAGMA user_version = 24;",
    )
    .unwrap();
}

/// Puts a database back as schema 23 left it (before migration 0024): change rows that name
/// their hero, the answers' missions in `hook_effects`, and 0022's view ([`as_schema_24`]
/// first); for tests that simulate an older hooklog's file.
pub fn as_schema_23(conn: &Connection) {
    as_schema_24(conn);
    let migration = include_str!("../../../migrations/0022_coded_keys.sql");
    let view = &migration[migration.find("CREATE VIEW changes_sent").unwrap()..];
    conn.execute_batch(&format!(
        "DROP VIEW changes_sent;
         CREATE TABLE agent_changes_23 (
             sequence   INTEGER PRIMARY KEY,
             hero_id    TEXT    NOT NULL,
             mission_id TEXT,
             changes    TEXT    NOT NULL
         );
         INSERT INTO agent_changes_23
             SELECT c.sequence, h.id, c.mission_id, c.changes
             FROM agent_changes c JOIN events e ON e.sequence = c.sequence
             JOIN heroes h ON h.session_id = e.session_id;
         CREATE TABLE hook_effects (
             sequence   INTEGER PRIMARY KEY,
             mission_id TEXT    NOT NULL
         );
         INSERT INTO hook_effects SELECT sequence, mission_id FROM agent_changes WHERE answered;
         DROP TABLE agent_changes;
         ALTER TABLE agent_changes_23 RENAME TO agent_changes;
         {view}
         PRAGMA user_version = 23;"
    ))
    .unwrap();
}
