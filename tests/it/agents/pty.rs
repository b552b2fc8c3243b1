//! A program in a pseudo-terminal, as a person runs it: Claude Code's interactive TUI, the
//! only place (with its SDK mode) where a `PermissionRequest` hook fires.
//!
//! [`Tui`] starts a command as the leader of a new session whose controlling terminal is the
//! pty, keeps what it prints on a terminal emulator's screen (vt100) on a thread, types with [`Tui::send`], and
//! waits, with a deadline and never a fixed sleep, for the screen or any other condition
//! ([`Tui::wait_for`], [`Tui::until`]). Dropping it kills the whole process group.
//!
//! [`Tui::claude`] is Claude Code 2.1.197's TUI, offline against the rig's scripted model, in
//! its default permission mode, past every first-run screen (docs/hooks.md, "Approving from
//! elsewhere", and shared/AGENTS.md say how this was found).

use super::Rig;
use super::model::Closings;
use rustix::fs::{Mode, OFlags};
use rustix::process::{Pid, Signal};
use rustix::pty::OpenptFlags;
use serde_json::{Value, json};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a TUI test waits for what should happen in a second or two: generous, since a
/// loaded machine runs several CLIs at once, and never waited out when things go well.
pub const TUI_DEADLINE: Duration = Duration::from_secs(60);

/// The terminal's size: wide enough that a prompt or a command stays on one line.
const COLUMNS: u16 = 160;
const ROWS: u16 = 50;

/// The API key the scripted model is called with. Claude Code asks once whether to use a key
/// it finds in the environment, unless `~/.claude.json` approved its last 20 characters.
const API_KEY: &str = "sk-scripted";

/// Claude Code's footer while a turn runs, and under an idle prompt.
const BUSY: &str = "esc to interrupt";
const IDLE: &str = "for shortcuts";

pub struct Tui {
    child: Child,
    pid: Pid,
    master: File,
    /// The terminal as a person sees it, kept by the reading thread: a real terminal
    /// emulator's screen, not the output's text, since Claude Code's renderer redraws only the
    /// cells that changed (a word on the screen need never appear whole in the output: under
    /// load `done 3` was printed as `d`, a cursor move, `ne 3`).
    screen: Arc<Mutex<vt100::Parser>>,
    /// The scripted model's closing answers, for [`Tui::wait_turn_end`] ([`Tui::claude`]).
    closings: Closings,
}

/// A turn typed with [`Tui::submit`]: which of the model's closing answers ends it.
pub struct Turn(usize);

impl Tui {
    /// Starts `command` in a new pseudo-terminal of [`COLUMNS`] x [`ROWS`], as the leader of
    /// its own session with the pty as controlling terminal (as a terminal emulator does), so
    /// that killing its process group ends every process it started.
    pub fn start(mut command: Command) -> Tui {
        // The master side stays ours (CLOEXEC): the program must not inherit it.
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        let master = rustix::pty::openpt(flags).expect("a pseudo-terminal");
        rustix::pty::grantpt(&master).unwrap();
        rustix::pty::unlockpt(&master).unwrap();
        let name = rustix::pty::ptsname(&master, Vec::new()).unwrap();
        let size = rustix::termios::Winsize {
            ws_row: ROWS,
            ws_col: COLUMNS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&master, size).unwrap();
        let master = File::from(master);
        let slave = File::from(
            rustix::fs::open(
                name.as_c_str(),
                OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .unwrap(),
        );
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and the TIOCSCTTY ioctl are async-signal-safe system calls; the
        // closure allocates nothing and touches no lock.
        unsafe {
            command.pre_exec(|| {
                rustix::process::setsid()?;
                rustix::process::ioctl_tiocsctty(rustix::stdio::stdin())?;
                Ok(())
            });
        }
        let child = command.spawn().expect("start the program in a pty");
        // Our copies of the slave side close here, so that the reads below end once the
        // program and everything it started have gone.
        drop(command);
        let pid = Pid::from_child(&child);
        let (rows, columns) = (ROWS.try_into().unwrap(), COLUMNS.try_into().unwrap());
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, columns, 0)));
        let (sink, mut reader) = (screen.clone(), master.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 16384];
            // EIO once no process holds the slave side any more.
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                sink.lock().unwrap().process(&buffer[..n]);
            }
        });
        Tui {
            child,
            pid,
            master,
            screen,
            closings: Closings::default(),
        }
    }

    /// Claude Code's TUI in the rig's world: its home and project, the scripted model, no
    /// telemetry, the default permission mode (no `--dangerously-skip-permissions`), and
    /// `~/.claude.json` saying what a person would have answered on the first run (onboarding
    /// done, the API key approved, the project trusted). Returns once the prompt is ready.
    pub async fn claude(rig: &Rig, bin: &Path, args: &[&str]) -> Tui {
        first_run_done(rig);
        let mut command = rig.command(bin);
        command
            .env("ANTHROPIC_BASE_URL", &rig.model.url)
            .env("ANTHROPIC_API_KEY", API_KEY)
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("TERM", "xterm-256color")
            .env_remove("IS_SANDBOX")
            .args(args);
        let mut tui = Tui::start(command);
        tui.closings = rig.model.closings();
        // The footer under an empty prompt.
        tui.wait_for("Claude Code's prompt", |screen| screen.contains(IDLE))
            .await;
        tui
    }

    /// Types `text` as keys (a `\r` is Enter).
    pub fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// The screen as it is now, as text: one line per row.
    pub fn screen(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until the screen as it is now satisfies `ok`; panics after [`TUI_DEADLINE`]
    /// with the screen.
    pub async fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) {
        self.until(what, || ok(&self.screen())).await;
    }

    /// Waits until `ok` holds (checked every 20 ms); panics after [`TUI_DEADLINE`] with the
    /// screen.
    pub async fn until(&self, what: &str, mut ok: impl FnMut() -> bool) {
        let start = Instant::now();
        while !ok() {
            if start.elapsed() > TUI_DEADLINE {
                panic!(
                    "timed out waiting for {what}; the screen:\n{}",
                    self.screen().trim_end()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Types a prompt, waits until the TUI shows it, and presses Enter.
    pub async fn submit(&mut self, prompt: &str) -> Turn {
        self.send(prompt);
        self.wait_for(&format!("the prompt {prompt:?} typed"), |screen| {
            screen.contains(prompt)
        })
        .await;
        let turn = Turn(self.closings.lock().unwrap().len());
        self.send("\r");
        turn
    }

    /// Waits until `turn` is over: the model has given its closing answer, the screen shows
    /// it, and the footer is the idle one ([`IDLE`], not [`BUSY`]: the turn's hooks have run).
    /// Not the busy footer seen and then gone: a turn can be over before it is ever drawn.
    /// Typed input only reaches the prompt (`/exit` included) once the turn is over.
    pub async fn wait_turn_end(&self, turn: Turn) {
        self.wait_for("the end of the turn", |screen| {
            let closings = self.closings.lock().unwrap();
            closings.get(turn.0).is_some_and(|closing| {
                screen.contains(closing.as_str()) && screen.contains(IDLE) && !screen.contains(BUSY)
            })
        })
        .await;
    }

    /// `/exit` (between turns), then waits for the program to end.
    pub async fn exit(&mut self) -> ExitStatus {
        self.send("/exit\r");
        let mut status = None;
        let child = &mut self.child;
        let start = Instant::now();
        while status.is_none() {
            status = child.try_wait().unwrap();
            if start.elapsed() > TUI_DEADLINE {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        status.unwrap_or_else(|| panic!("/exit did not end it:\n{}", self.screen().trim_end()))
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process_group(self.pid, Signal::KILL);
        let _ = self.child.wait();
    }
}

/// Writes what a person answers on Claude Code's first run into `~/.claude.json`: the
/// onboarding (theme, login) done, the API key in the environment approved, and the rig's
/// project trusted (hooks run only in a trusted workspace).
fn first_run_done(rig: &Rig) {
    let path = rig.home.join(".claude.json");
    let mut config: Value = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_else(|| json!({}));
    let project = rig.project.canonicalize().unwrap();
    config["hasCompletedOnboarding"] = json!(true);
    config["customApiKeyResponses"] = json!({"approved": [API_KEY], "rejected": []});
    config["projects"][project.to_string_lossy().as_ref()]["hasTrustDialogAccepted"] = json!(true);
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
}
