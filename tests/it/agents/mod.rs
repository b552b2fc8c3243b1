//! The real agent CLIs, end to end: Claude Code and Codex from npm, at the versions
//! `tests/agents/package.json` pins, run offline against the scripted model ([`model`]) with
//! hooklog's hooks installed each documented way, talking to the real `hooklog serve` binary.
//! What is asserted is what a user sees: every hook succeeds, the events, missions, tool uses
//! with their results, usage after each turn, the session's end, the hero's model, no alert.
//! Claude Code's interactive TUI, where `PermissionRequest` hooks run, is driven in a
//! pseudo-terminal ([`pty`]).
//!
//! The CLIs are looked for in `$HOOKLOG_AGENTS_BIN`, else `tests/agents/node_modules/.bin`
//! (`npm ci --prefix tests/agents` puts them there; `.ci/run` does). Without them the tests
//! say so and pass; under `CI=true` they fail instead. `.ci/agents-drift` runs the same tests
//! against `@latest` of both CLIs with `HOOKLOG_AGENTS_DRIFT=1`, which prints the hook events
//! and fields hooklog does not know instead of failing on them ([`drift`]).

mod claude;
mod codex;
mod drift;
pub mod model;
mod page;
mod permission;
pub mod pty;

use crate::common::{ServerProcess, free_port};
use model::Model;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a test waits for what a turn should have made visible.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The directory the CLIs are taken from.
pub fn bin_dir() -> PathBuf {
    match std::env::var_os("HOOKLOG_AGENTS_BIN") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/node_modules/.bin"),
    }
}

/// The CLI `name` (`claude`, `codex`), or `None` after saying it is missing (a panic under CI).
pub fn cli(name: &str) -> Option<PathBuf> {
    let path = bin_dir().join(name);
    if path.is_file() {
        return Some(path);
    }
    let message = format!(
        "{} not found (npm ci --prefix tests/agents; see docs/hooks.md, \"Tested with\")",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("CI runs the real agent CLIs: {message}");
    }
    eprintln!("SKIPPED: this agent test did not run: {message}");
    None
}

/// The version a CLI prints.
pub fn version(cli: &Path) -> String {
    let out = std::process::Command::new(cli)
        .arg("--version")
        .output()
        .expect("run --version");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `hooklog serve` as the agents' user runs it: with their home, so the transcripts it reads
/// are those under its default roots (`~/.claude/projects`, `~/.codex/sessions`).
fn serve(db: &Path, bind: &str, home: &Path) -> ServerProcess {
    ServerProcess::start_with(db, bind, |command| {
        command
            .env("HOME", home)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME");
    })
}

/// One test's world: a home directory of its own (agents' settings, transcripts, hooklog's
/// spool), a project directory, the scripted model, and `hooklog serve` on a port that stays
/// the same across a restart.
pub struct Rig {
    /// Everything above lives here, under the target directory: Codex refuses a home under
    /// /tmp.
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub db: PathBuf,
    pub url: String,
    pub model: Model,
    server: Option<ServerProcess>,
    bind: String,
    client: reqwest::Client,
}

impl Rig {
    pub async fn start() -> Rig {
        let dir = tempfile::Builder::new()
            .prefix("agents-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let db = dir.path().join("hooklog.db");
        let bind = format!("127.0.0.1:{}", free_port());
        let server = serve(&db, &bind, &home);
        Rig {
            url: server.url.clone(),
            home,
            project,
            db,
            model: Model::start().await,
            server: Some(server),
            bind,
            client: reqwest::Client::new(),
            _dir: dir,
        }
    }

    /// `kill -9` of hooklog: the agents' hooks find nobody listening.
    pub fn kill_server(&mut self) {
        self.server.take().expect("running").kill();
    }

    /// hooklog again, on the same port and database.
    pub fn restart_server(&mut self) {
        assert!(self.server.is_none(), "already running");
        self.server = Some(serve(&self.db, &self.bind, &self.home));
    }

    /// The environment every program of this rig runs in: its own home, hooklog's address,
    /// the CLIs on `PATH` (as `hooklog hooks install` expects to find `codex`).
    pub fn command(&self, program: &Path) -> std::process::Command {
        let mut command = std::process::Command::new(program);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(bin_dir()).chain(std::env::split_paths(&path));
        command
            .current_dir(&self.project)
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .env("HOME", &self.home)
            .env("HOOKLOG_URL", &self.url)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("HOOKLOG_SPOOL")
            .env_remove("HOOKLOG_TOKEN");
        command
    }

    /// Runs `hooklog ARGS` as the user would, in the rig's home; panics unless it succeeds.
    pub fn hooklog(&self, args: &[&str]) -> String {
        let out = self
            .command(Path::new(env!("CARGO_BIN_EXE_hooklog")))
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "hooklog {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    pub async fn get(&self, path: &str) -> Value {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "GET {path}");
        response.json().await.unwrap()
    }

    /// Polls `GET path` until `ok` holds for the answer, or panics after [`DEADLINE`] with
    /// the last answer.
    pub async fn wait_until(&self, path: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let answer = self.get(path).await;
            if ok(&answer) {
                return answer;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; last GET {path}: {answer:#}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The session's tool uses, oldest first, as `(preview, status, error)`.
    pub async fn tool_uses(&self, session: &str) -> Vec<(String, String, Option<String>)> {
        let answer = self.get(&format!("/tool-uses?sessionId={session}")).await;
        let mut rows: Vec<&Value> = answer["toolUses"].as_array().unwrap().iter().collect();
        rows.sort_by_key(|r| r["openedSequence"].as_i64());
        rows.iter()
            .map(|r| {
                (
                    r["preview"].as_str().unwrap_or("").to_string(),
                    r["status"].as_str().unwrap().to_string(),
                    r["error"].as_str().map(str::to_string),
                )
            })
            .collect()
    }

    /// No alert of any kind.
    pub async fn assert_no_alert(&self) {
        let alerts = self.get("/alerts").await;
        assert_eq!(alerts["alerts"], serde_json::json!([]), "alerts raised");
    }

    /// `hooklog rebuild --check` finds the live projections equal to a replay of the log.
    pub fn assert_rebuilds(&self) {
        let db = self.db.to_string_lossy().into_owned();
        self.hooklog(&["rebuild", "--check", "--db", &db]);
    }

    pub fn db(&self) -> rusqlite::Connection {
        crate::common::open_read_only(&self.db)
    }
}

/// The usage hooklog shows for a session after `calls` model calls of the scripted model.
pub fn usage_matches(usage: &Value, calls: u64, per_call: [u64; 4]) -> bool {
    let [input, output, write, read] = per_call;
    usage["calls"] == calls
        && usage["inputTokens"] == calls * input
        && usage["outputTokens"] == calls * output
        && usage["cacheWrite5mTokens"].as_u64().unwrap_or(0)
            + usage["cacheWrite1hTokens"].as_u64().unwrap_or(0)
            == calls * write
        && usage["cacheReadTokens"] == calls * read
}
