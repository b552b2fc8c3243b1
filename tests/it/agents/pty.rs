//! A program in a pseudo-terminal, as a person runs it: Claude Code's interactive TUI, the
//! only place (with its SDK mode) where a `PermissionRequest` hook fires.
//!
//! [`Tui`] starts a command as the leader of a new session whose controlling terminal is the
//! pty, reads everything it prints into a buffer on a thread, types with [`Tui::send`], and
//! waits, with a deadline and never a fixed sleep, for the screen or any other condition
//! ([`Tui::wait_for`], [`Tui::until`]). Dropping it kills the whole process group.
//!
//! [`Tui::claude`] is Claude Code 2.1.197's TUI, offline against the rig's scripted model, in
//! its default permission mode, past every first-run screen (docs/hooks.md, "Approving from
//! elsewhere", and shared/AGENTS.md say how this was found).

use super::Rig;
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

pub struct Tui {
    child: Child,
    pid: Pid,
    master: File,
    /// Everything the program printed, as bytes.
    output: Arc<Mutex<Vec<u8>>>,
}

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
        let output = Arc::new(Mutex::new(Vec::new()));
        let (sink, mut reader) = (output.clone(), master.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 16384];
            // EIO once no process holds the slave side any more.
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Tui {
            child,
            pid,
            master,
            output,
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
        let tui = Tui::start(command);
        // The footer under an empty prompt.
        tui.wait_for("Claude Code's prompt", 0, |screen| {
            screen.contains("for shortcuts")
        })
        .await;
        tui
    }

    /// Types `text` as keys (a `\r` is Enter).
    pub fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// How much the program has printed so far: a mark for [`Tui::wait_for`].
    pub fn mark(&self) -> usize {
        self.output.lock().unwrap().len()
    }

    /// What the program printed since `mark`, as text ([`screen_text`]).
    pub fn screen(&self, mark: usize) -> String {
        let output = self.output.lock().unwrap();
        screen_text(&output[mark.min(output.len())..])
    }

    /// Waits until what the program printed since `mark` satisfies `ok`; panics after
    /// [`TUI_DEADLINE`] with the end of the screen.
    pub async fn wait_for(&self, what: &str, mark: usize, ok: impl Fn(&str) -> bool) {
        self.until(what, || ok(&self.screen(mark))).await;
    }

    /// Waits until `ok` holds (checked every 20 ms); panics after [`TUI_DEADLINE`] with the
    /// end of the screen.
    pub async fn until(&self, what: &str, mut ok: impl FnMut() -> bool) {
        let start = Instant::now();
        while !ok() {
            if start.elapsed() > TUI_DEADLINE {
                panic!(
                    "timed out waiting for {what}; the screen ended with:\n{}",
                    self.tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Types a prompt, waits until the TUI shows it, and presses Enter. Returns the mark
    /// the turn's output starts at.
    pub async fn submit(&mut self, prompt: &str) -> usize {
        let mark = self.mark();
        self.send(prompt);
        self.wait_for(&format!("the prompt {prompt:?} typed"), mark, |screen| {
            screen.contains(prompt)
        })
        .await;
        let mark = self.mark();
        self.send("\r");
        mark
    }

    /// Waits until the turn started at `mark` is over: the busy footer (`esc to interrupt`)
    /// shown, and after its last showing the idle footer again. (Not the model's closing text:
    /// the screen draws words in pieces, and under load `done 3` came out as `d ne 3`.) Typed
    /// input only reaches the prompt (`/exit` included) once the turn is over.
    pub async fn wait_turn_end(&self, mark: usize) {
        self.wait_for("the end of the turn", mark, |screen| {
            screen
                .rfind("esc to interrupt")
                .is_some_and(|at| screen[at..].contains("for shortcuts"))
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
        status.unwrap_or_else(|| panic!("/exit did not end it:\n{}", self.tail()))
    }

    /// The last lines of the screen, for a failure's message.
    pub fn tail(&self) -> String {
        let screen = self.screen(0);
        let start = screen.len().saturating_sub(3000);
        let start = (start..screen.len())
            .find(|&i| screen.is_char_boundary(i))
            .unwrap_or(screen.len());
        screen[start..].to_string()
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

/// A terminal's output as plain text: an escape sequence that moves the cursor becomes one
/// space (Claude Code's renderer moves the cursor over the blanks between words), any other
/// escape sequence and control character is dropped, and runs of blanks are one space. Good
/// for "does the screen say X", not for its layout.
pub fn screen_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let blank = |out: &mut String| {
        if !out.ends_with(' ') {
            out.push(' ');
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => {
                    let mut last = None;
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            last = Some(c);
                            break;
                        }
                    }
                    if matches!(last, Some('A'..='H' | 'J' | 'K' | 'd' | 'f')) {
                        blank(&mut out);
                    }
                }
                // OSC, DCS, APC, PM, SOS: up to BEL or ST.
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' | '\n' | '\t' | ' ' | '\u{a0}' => blank(&mut out),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[test]
fn screen_text_reads_claude_codes_cursor_moves_as_blanks() {
    let bytes = b"\x1b]0;\xe2\x9c\xb3 Claude Code\x07\x1b[38;5;246mrun:\x1b[8Gecho\x1b[13Ghi\x1b[16G>\x1b[18Gx.txt\x1b[39m\r\r\n\x1b[1mBash\x1b[22m(echo hi)\r\n  ? for\x1b[9Gshortcuts";
    assert_eq!(
        screen_text(bytes),
        "run: echo hi > x.txt Bash(echo hi) ? for shortcuts"
    );
}
