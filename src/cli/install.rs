//! `hooklog hooks install|uninstall`: write `hooklog hook` into Claude Code's `settings.json`
//! and Codex's `hooks.json`, keeping the user's own hooks, turn on Codex's `codex_hooks` feature
//! in its `config.toml` for a Codex that needs it, and take all of it out again.

use crate::forward::codex_flag::{self, version};
use crate::forward::install::{self, Agent};
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Subcommand, Debug)]
pub enum HooksCommand {
    /// Add hooklog's hook entries (replacing any it added before); for a Codex before 0.124.0,
    /// also set `[features] codex_hooks = true` in its config.toml.
    Install(InstallArgs),
    /// Remove exactly the entries `install` added, and undo its change to config.toml.
    Uninstall(Which),
}

#[derive(Args, Debug)]
pub struct Which {
    /// Which agent's settings.
    #[arg(long = "cli", value_enum)]
    pub cli: Cli,
    /// `user`: every project (~/.claude/settings.json, $CODEX_HOME/hooks.json and config.toml);
    /// `project`: the current directory's (.claude/settings.json, .codex/hooks.json and
    /// config.toml).
    #[arg(long, value_enum, default_value = "user")]
    pub scope: Scope,
    /// Print the change as a diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct InstallArgs {
    #[command(flatten)]
    pub which: Which,
    /// The hooklog binary the hooks run [default: this one].
    #[arg(long)]
    pub exe: Option<PathBuf>,
    /// Written into the hook command as `--url`; without it the hook reads `HOOKLOG_URL` from
    /// the agent's environment, or uses http://127.0.0.1:2468.
    #[arg(long)]
    pub url: Option<String>,
    /// The Codex version to install for, instead of asking the `codex` on PATH
    /// (`codex --version`): only a Codex before 0.124.0 gets `[features] codex_hooks = true`.
    #[arg(long, value_name = "X.Y.Z", value_parser = parse_codex_version)]
    pub codex_version: Option<version::Version>,
    /// Answer permission requests from hooklog (the board, `POST /permission-response`): the
    /// `PermissionRequest` hook waits up to this many seconds for a decision, then leaves the
    /// agent to ask in its terminal [default when given without a value: 120].
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, require_equals = true,
          default_missing_value = "120", value_parser = clap::value_parser!(u64).range(1..=590))]
    pub approvals: Option<u64>,
}

fn parse_codex_version(text: &str) -> Result<version::Version, String> {
    version::parse(text).ok_or_else(|| format!("{text:?} is not a version like 0.171.0"))
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Cli {
    Claude,
    Codex,
    All,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Scope {
    User,
    Project,
}

impl Cli {
    fn agents(self) -> &'static [Agent] {
        match self {
            Cli::Claude => &[Agent::Claude],
            Cli::Codex => &[Agent::Codex],
            Cli::All => &[Agent::Claude, Agent::Codex],
        }
    }
}

impl HooksCommand {
    pub fn run(self) -> anyhow::Result<()> {
        match self {
            HooksCommand::Install(args) => {
                let exe = match args.exe {
                    Some(exe) => exe,
                    None => std::env::current_exe().context("cannot tell where hooklog is")?,
                };
                for agent in args.which.cli.agents() {
                    let command = install::command(&exe, *agent, args.url.as_deref());
                    apply(*agent, &args.which, Some(&command), args.approvals)?;
                    if *agent == Agent::Codex {
                        install_codex_flag(&args.which, args.codex_version)?;
                        if !args.which.dry_run {
                            println!("{TRUST}");
                        }
                    }
                }
            }
            HooksCommand::Uninstall(which) => {
                for agent in which.cli.agents() {
                    apply(*agent, &which, None, None)?;
                    if *agent == Agent::Codex {
                        apply_flag(&which, FlagChange::Undo)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The settings file `agent` reads for `scope`.
pub fn settings_path(agent: Agent, scope: Scope) -> anyhow::Result<PathBuf> {
    Ok(match agent {
        Agent::Claude => match scope {
            Scope::User => match env_dir("CLAUDE_CONFIG_DIR") {
                Some(dir) => dir,
                None => home()?.join(".claude"),
            },
            Scope::Project => PathBuf::from(".claude"),
        }
        .join("settings.json"),
        Agent::Codex => codex_dir(scope)?.join("hooks.json"),
    })
}

/// Codex's `config.toml` for `scope`, beside its `hooks.json`.
pub fn codex_config_path(scope: Scope) -> anyhow::Result<PathBuf> {
    Ok(codex_dir(scope)?.join("config.toml"))
}

fn codex_dir(scope: Scope) -> anyhow::Result<PathBuf> {
    Ok(match scope {
        Scope::User => match env_dir("CODEX_HOME") {
            Some(dir) => dir,
            None => home()?.join(".codex"),
        },
        Scope::Project => PathBuf::from(".codex"),
    })
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn home() -> anyhow::Result<PathBuf> {
    env_dir("HOME").context("HOME is not set")
}

/// The copy of a settings file taken before hooklog first wrote to it.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".hooklog-backup");
    path.with_file_name(name)
}

/// What a Codex needs to run hooklog's new hooks, said after installing for it.
const TRUST: &str = "codex: Codex runs a new or changed hook only once you trust it: \
open codex, run /hooks and trust hooklog's entries (`codex exec` in scripts or CI: \
--dangerously-bypass-hook-trust)";

/// How long `codex --version` may take.
const ASK_CODEX_FOR: Duration = Duration::from_secs(10);

/// Installs (`command`) or uninstalls (`None`) one agent's hook entries.
fn apply(
    agent: Agent,
    which: &Which,
    command: Option<&str>,
    approvals: Option<u64>,
) -> anyhow::Result<()> {
    let settings = FileEdit {
        path: settings_path(agent, which.scope)?,
        edit: &|text, name| Ok(install::edit_with(text, name, agent, command, approvals)?),
        is_empty: |text| {
            serde_json::from_str::<serde_json::Value>(text)
                .is_ok_and(|v| v.as_object().is_some_and(|o| o.is_empty()))
        },
        done: match command {
            Some(_) => format!("hooklog hook runs on {} events", agent.events().len()),
            None => "hooklog's hook entries removed".to_string(),
        },
    };
    write_edit(agent, settings, which.dry_run, command.is_some())
}

/// Install's change to Codex's `config.toml`, by the Codex's version (`known`, else the one
/// `codex --version` reports): the flag for a Codex that needs it; for a later one, hooklog's
/// flag from an earlier install taken out; nothing when the version cannot be told.
fn install_codex_flag(which: &Which, known: Option<version::Version>) -> anyhow::Result<()> {
    use version::Need;
    let asked = known.map_or_else(ask_codex, Ok);
    let config = codex_config_path(which.scope)?;
    let why = match (version::need(asked.as_ref().ok().copied()), &asked) {
        (Need::Flag, _) => return apply_flag(which, FlagChange::TurnOn),
        (Need::NoFlag, Ok(v)) => {
            println!(
                "codex: Codex {} runs hooks without a `[features]` flag; none written",
                show(v)
            );
            return apply_flag(which, FlagChange::TakeOut);
        }
        (_, Err(why)) => why.clone(),
        (_, Ok(v)) => format!("Codex {} is a build from source", show(v)),
    };
    println!(
        "codex: {why}: no `[features]` flag written; a Codex before 0.124.0 runs hooks only \
         with `[features] codex_hooks = true` in {} (`--codex-version X.Y.Z` writes it)",
        config.display()
    );
    Ok(())
}

fn show(v: &version::Version) -> String {
    format!("{}.{}.{}", v.major, v.minor, v.patch)
}

/// The version of the `codex` on PATH, from `codex --version`, or why it cannot be told.
fn ask_codex() -> Result<version::Version, String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new("codex")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run `codex --version` ({e})"))?;
    let deadline = Instant::now() + ASK_CODEX_FOR;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`codex --version` did not answer within {} s",
                    ASK_CODEX_FOR.as_secs()
                ));
            }
        }
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    version::from_output(&out).ok_or_else(|| {
        let first: String = out.lines().next().unwrap_or("").chars().take(80).collect();
        format!("`codex --version` printed {first:?}, not `codex-cli X.Y.Z`")
    })
}

/// What is done to `[features] codex_hooks` in `config.toml`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FlagChange {
    /// Install, for a Codex that needs it: on, with hooklog's marker.
    TurnOn,
    /// Install, for a Codex that does not: hooklog's marked change from before taken back.
    TakeOut,
    /// Uninstall: hooklog's marked change taken back.
    Undo,
}

fn apply_flag(which: &Which, change: FlagChange) -> anyhow::Result<()> {
    let installing = change != FlagChange::Undo;
    let flag = FileEdit {
        path: codex_config_path(which.scope)?,
        edit: &|text, name| {
            let after = match change {
                FlagChange::TurnOn => codex_flag::turn_on(text, name)?,
                FlagChange::TakeOut | FlagChange::Undo => codex_flag::undo(text, name)?,
            };
            if installing && codex_flag::hooks_off(&after) {
                println!(
                    "codex: {name}: `[features]` turns Codex's hooks off (`hooks = false`, or \
                     `codex_hooks = false`); hooklog leaves it as you set it"
                );
            }
            Ok(after)
        },
        is_empty: str::is_empty,
        done: match change {
            FlagChange::TurnOn => format!("[features] {} = true", codex_flag::KEY),
            FlagChange::TakeOut => format!(
                "hooklog's {} taken out (this Codex needs none, and warns of it at every start)",
                codex_flag::KEY
            ),
            FlagChange::Undo => format!("hooklog's change to {} undone", codex_flag::KEY),
        },
    };
    write_edit(Agent::Codex, flag, which.dry_run, installing)
}

/// One file hooklog changes, and how.
struct FileEdit<'a> {
    path: PathBuf,
    /// The new text from the file's text (empty when there is no file) and its name for errors.
    edit: &'a dyn Fn(&str, &str) -> anyhow::Result<String>,
    /// Whether a text has nothing left in it: a file hooklog made then goes away on uninstall.
    is_empty: fn(&str) -> bool,
    /// What the write did, for the line printed after it.
    done: String,
}

fn write_edit(agent: Agent, file: FileEdit, dry_run: bool, installing: bool) -> anyhow::Result<()> {
    // A settings file that is a link (dotfile managers) is edited where it points, so the link
    // stays a link.
    let path = fs::canonicalize(&file.path).unwrap_or(file.path);
    let shown = path.display().to_string();
    let original = match fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {shown}")),
    };
    let before = original.as_deref().unwrap_or("");
    let after = (file.edit)(before, &shown)?;
    let backup = backup_path(&path);
    // A file that did not exist before hooklog made it goes away with hooklog's change (on
    // install too: the flag an older install wrote into a config.toml it made).
    let remove = original.as_deref().is_some_and(|text| *text != after)
        && !backup.exists()
        && (file.is_empty)(&after);
    let unchanged = match &original {
        Some(text) => !remove && *text == after,
        // No file, and none to make.
        None => !installing || after.is_empty(),
    };
    let verb = if installing { "install" } else { "uninstall" };
    if unchanged {
        println!("{}: {shown}: nothing to {verb}", agent.name());
        return Ok(());
    }
    let after = if remove { String::new() } else { after };
    if dry_run {
        let diff = similar::TextDiff::from_lines(before, &after);
        print!(
            "{}",
            diff.unified_diff().header(
                &format!("{shown} (now)"),
                &format!("{shown} (after {verb})")
            )
        );
        return Ok(());
    }
    // A file about to be removed was hooklog's own: a copy of it would be no user's file, and
    // would make the next uninstall take a file hooklog made for the user's.
    if original.is_some() && !backup.exists() && !remove {
        // A copy keeps the file's mode: settings can hold API keys in `env`.
        fs::copy(&path, &backup)
            .with_context(|| format!("cannot back {shown} up to {}", backup.display()))?;
        println!(
            "{}: backed {shown} up to {}",
            agent.name(),
            backup.display()
        );
    }
    if remove {
        fs::remove_file(&path).with_context(|| format!("cannot remove {shown}"))?;
        println!("{}: {shown}: removed (hooklog had made it)", agent.name());
        return Ok(());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension("hooklog-tmp");
    write_private(&tmp, &after).with_context(|| format!("cannot write {}", tmp.display()))?;
    if let Ok(meta) = fs::metadata(&path) {
        let _ = fs::set_permissions(&tmp, meta.permissions());
    }
    fs::rename(&tmp, &path).with_context(|| format!("cannot replace {shown}"))?;
    println!("{}: {shown}: {}", agent.name(), file.done);
    Ok(())
}

/// Writes a new file readable by its owner only (its final mode is set after).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())
}
