//! `hooklog hooks install --cli codex` decides by the Codex's version whether `config.toml` gets
//! `[features] codex_hooks = true`: only a Codex before 0.124.0 (hooks default-on since
//! openai/codex#19012) needs it; a later one would print a deprecation notice for it at every
//! start. Run as the real binary with `CODEX_HOME` in a temporary directory and a `PATH` that
//! holds no codex, or the real one the agent tests use (`tests/it/agents`; no stand-in).

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_hooklog");

/// What install prints for Codex's hook review.
const TRUST: [&str; 3] = [
    "run /hooks",
    "trust hooklog's entries",
    "--dangerously-bypass-hook-trust",
];

struct Env {
    dir: tempfile::TempDir,
    codex: PathBuf,
    /// What `PATH` the runs get.
    path: std::ffi::OsString,
}

impl Env {
    /// A `CODEX_HOME` and `HOME` of its own, and a `PATH` of one empty directory: no codex.
    fn without_codex() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let codex = dir.path().join("codex");
        std::fs::create_dir_all(&codex).unwrap();
        let empty = dir.path().join("bin");
        std::fs::create_dir_all(&empty).unwrap();
        let path = empty.into_os_string();
        Env { dir, codex, path }
    }

    fn run(&self, args: &[&str]) -> (Output, String) {
        let out = Command::new(BIN)
            .args(args)
            .env("CODEX_HOME", &self.codex)
            .env("HOME", self.dir.path())
            .env("PATH", &self.path)
            .output()
            .expect("run hooklog");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}: {out:?}");
        (out, stdout)
    }

    fn config(&self) -> PathBuf {
        self.codex.join("config.toml")
    }

    fn read_config(&self) -> Option<String> {
        std::fs::read_to_string(self.config()).ok()
    }
}

const USERS: &str = "# mine\nmodel = \"o3\"\n\n[tui]\nnotifications = true\n";

/// No codex to ask: hooks.json gets Codex's events, `config.toml` is left as it is (neither
/// made nor given a flag), and one line says why and what an old Codex needs; a flag an older
/// install wrote stays (it may be what that Codex runs on), and uninstall still takes it out
/// byte for byte. The trust notice follows every install, never a dry run.
#[test]
fn without_a_codex_no_flag_is_written_and_install_says_so() {
    let env = Env::without_codex();
    let (_, out) = env.run(&["hooks", "install", "--cli", "codex"]);
    assert!(out.contains("cannot run `codex --version`"), "{out}");
    assert!(
        out.contains("no `[features]` flag written")
            && out.contains("codex_hooks = true")
            && out.contains("--codex-version"),
        "{out}"
    );
    assert!(TRUST.iter().all(|t| out.contains(t)), "{out}");
    assert_eq!(env.read_config(), None, "no config.toml made");
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(env.codex.join("hooks.json")).unwrap())
            .unwrap();
    for event in ["SessionEnd", "PreCompact", "PostCompact", "Stop"] {
        assert!(hooks["hooks"][event].is_array(), "{event}: {hooks}");
    }

    // A file with the flag an older hooklog wrote.
    std::fs::write(env.config(), USERS).unwrap();
    env.run(&[
        "hooks",
        "install",
        "--cli",
        "codex",
        "--codex-version",
        "0.123.0",
    ]);
    let flagged = env.read_config().unwrap();
    assert!(
        flagged.contains("codex_hooks = true # hooklog: added"),
        "{flagged}"
    );
    let (_, out) = env.run(&["hooks", "install", "--cli", "codex"]);
    assert!(out.contains("no `[features]` flag written"), "{out}");
    assert_eq!(env.read_config().unwrap(), flagged);

    let (_, dry) = env.run(&["hooks", "install", "--cli", "codex", "--dry-run"]);
    assert!(!TRUST.iter().any(|t| dry.contains(t)), "{dry}");

    env.run(&["hooks", "uninstall", "--cli", "codex"]);
    assert_eq!(env.read_config().unwrap(), USERS);
}

/// A Codex with hooks on by default: no flag is written, and the flag an older install wrote
/// comes out again (the file is the user's, byte for byte; a file hooklog made goes), so
/// Codex's deprecation notice goes away. A Codex before 0.124.0 still gets the flag.
#[test]
fn a_current_codex_gets_no_flag_and_loses_hooklogs_old_one() {
    let env = Env::without_codex();
    for original in [Some(USERS), None] {
        if let Some(text) = original {
            std::fs::write(env.config(), text).unwrap();
        }
        env.run(&[
            "hooks",
            "install",
            "--cli",
            "codex",
            "--codex-version",
            "0.123.0",
        ]);
        assert!(
            env.read_config().unwrap().contains("codex_hooks = true"),
            "an old Codex gets the flag"
        );
        let (_, dry) = env.run(&[
            "hooks",
            "install",
            "--cli",
            "codex",
            "--codex-version",
            "0.171.0",
            "--dry-run",
        ]);
        assert!(
            dry.lines()
                .any(|l| l.starts_with('-') && l.contains("codex_hooks = true")),
            "{dry}"
        );
        let (_, out) = env.run(&[
            "hooks",
            "install",
            "--cli",
            "codex",
            "--codex-version",
            "0.171.0",
        ]);
        assert!(
            out.contains("Codex 0.171.0 runs hooks without a `[features]` flag"),
            "{out}"
        );
        assert_eq!(env.read_config().as_deref(), original, "{out}");
        // Again: nothing to do, nothing made.
        env.run(&[
            "hooks",
            "install",
            "--cli",
            "codex",
            "--codex-version",
            "0.171.0",
        ]);
        assert_eq!(env.read_config().as_deref(), original);
        env.run(&["hooks", "uninstall", "--cli", "codex"]);
        assert_eq!(env.read_config().as_deref(), original);
        let _ = std::fs::remove_file(env.config());
        let _ = std::fs::remove_file(env.codex.join("config.toml.hooklog-backup"));
    }
    // The user's own `codex_hooks = false` stays, and install says it turns hooks off.
    std::fs::write(env.config(), "[features]\ncodex_hooks = false\n").unwrap();
    let (_, out) = env.run(&[
        "hooks",
        "install",
        "--cli",
        "codex",
        "--codex-version",
        "0.171.0",
    ]);
    assert!(out.contains("turns Codex's hooks off"), "{out}");
    assert_eq!(
        env.read_config().unwrap(),
        "[features]\ncodex_hooks = false\n"
    );
}

/// The real Codex on PATH is asked for its version: 0.171.0 has hooks on by default, so the
/// flag an older install wrote comes out.
#[test]
fn the_codex_on_path_is_asked_for_its_version() {
    let Some(codex) = crate::agents::cli("codex") else {
        return;
    };
    let mut env = Env::without_codex();
    // Codex's launcher is a node script: node comes from the inherited PATH.
    let mut path = codex.parent().unwrap().as_os_str().to_owned();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    env.path = path;
    std::fs::write(env.config(), USERS).unwrap();
    env.run(&[
        "hooks",
        "install",
        "--cli",
        "codex",
        "--codex-version",
        "0.123.0",
    ]);
    assert_ne!(env.read_config().unwrap(), USERS);

    let (_, out) = env.run(&["hooks", "install", "--cli", "codex"]);
    assert!(
        out.contains("runs hooks without a `[features]` flag"),
        "{out}"
    );
    assert!(out.contains("taken out"), "{out}");
    assert_eq!(env.read_config().unwrap(), USERS);
}
