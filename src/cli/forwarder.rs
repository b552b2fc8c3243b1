//! `hooklog hook`: the forwarder an agent's hook runs. It reads one hook payload from stdin,
//! spools it under a fresh time-ordered id, and delivers the spool to hooklog within its
//! timeout. Whatever happens it exits 0, and it prints nothing: a hook must never break or
//! stall the agent (Claude Code reads a hook's stdout, and exit code 2 would block a tool call).
//!
//! One exception, asked for: with `--approvals SECONDS` (written by `hooks install
//! --approvals` on the `PermissionRequest` entry only), a `PermissionRequest` waits up to that
//! long for a decision made in hooklog and prints it as the hook's output
//! ([`crate::forward::approval`]); no decision, no output.

use crate::forward::spool::{self, Header, Limits, Route, Spool};
use crate::forward::{self, Sender, Target, approval};
use clap::Args;
use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where hooklog listens unless told otherwise.
pub const DEFAULT_URL: &str = "http://127.0.0.1:2468";
/// A run's budget, start-up to exit, unless told otherwise.
const DEFAULT_TIMEOUT_MS: u64 = 1500;
/// At most this many spooled events are delivered by one run, so a run after a long outage
/// stays short; the runs after it deliver the rest.
pub const MAX_PER_RUN: usize = 200;
/// A payload larger than this is not spooled (hooklog's default body limit is 1 MiB).
const MAX_PAYLOAD_BYTES: u64 = 16 * 1024 * 1024;
/// The run exits this long after its timeout whatever it is doing (a stdin that never
/// closes, a stuck disk): its event is in the spool, or was never read.
const WATCHDOG_GRACE: Duration = Duration::from_millis(50);

#[derive(Args, Debug)]
pub struct HookArgs {
    /// The hooklog to deliver to.
    #[arg(long, env = "HOOKLOG_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// `event`: a hook payload (`POST /event`); `normalized`: a seed 001 event.
    #[arg(long, value_enum, default_value = "event")]
    pub route: Route,
    /// Sent as `Authorization: Bearer` when set.
    #[arg(long, env = "HOOKLOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The whole run's budget, start-up to exit, in milliseconds.
    #[arg(long, env = "HOOKLOG_TIMEOUT_MS", default_value_t = DEFAULT_TIMEOUT_MS)]
    pub timeout_ms: u64,
    /// The cli to record when the payload names none (sent as `?cli=`), e.g. `codex-cli`.
    #[arg(long)]
    pub cli: Option<String>,
    #[command(flatten)]
    pub spool: SpoolArgs,
    /// For a `PermissionRequest`: wait up to this many seconds for a decision made in hooklog
    /// (the board, `POST /permission-response`) and print it for the agent; none by then, print
    /// nothing (the agent asks in its terminal). Other events are unaffected.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=600))]
    pub approvals: Option<u64>,
    /// Marks a hook entry written by `hooklog hooks install`; changes nothing else.
    #[arg(long, hide = true)]
    pub managed: bool,
}

/// Where the spool is and how much it may hold (shared by `hook` and `spool`).
#[derive(Args, Debug, Clone)]
pub struct SpoolArgs {
    /// The spool directory [default: $XDG_STATE_HOME/hooklog/spool or
    /// ~/.local/state/hooklog/spool].
    #[arg(long = "spool", env = "HOOKLOG_SPOOL")]
    pub dir: Option<PathBuf>,
    /// Past this many events the oldest are dropped (and logged).
    #[arg(long, env = "HOOKLOG_SPOOL_MAX_EVENTS", default_value_t = Limits::default().max_events)]
    pub spool_max_events: usize,
    /// Past this many bytes the oldest events are dropped (and logged).
    #[arg(long, env = "HOOKLOG_SPOOL_MAX_BYTES", default_value_t = Limits::default().max_bytes)]
    pub spool_max_bytes: u64,
    /// Events older than this are dropped (and logged), e.g. `7d`, `12h`.
    #[arg(long, env = "HOOKLOG_SPOOL_MAX_AGE", default_value = "7d", value_parser = humantime::parse_duration)]
    pub spool_max_age: Duration,
}

impl SpoolArgs {
    pub fn open(&self) -> std::io::Result<Spool> {
        let dir = self.dir.clone().unwrap_or_else(spool::default_dir);
        Spool::open(
            &dir,
            Limits {
                max_events: self.spool_max_events,
                max_bytes: self.spool_max_bytes,
                max_age: self.spool_max_age,
            },
        )
    }
}

impl HookArgs {
    /// The settings a run uses when its flags or environment do not parse (a typo in a hook
    /// command, `HOOKLOG_TIMEOUT_MS=1.5s`): the defaults, with the URL, token and spool
    /// directory from the environment when they are there. The event is still captured.
    pub fn fallback() -> HookArgs {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let limits = Limits::default();
        HookArgs {
            url: env("HOOKLOG_URL").unwrap_or_else(|| DEFAULT_URL.into()),
            route: Route::Event,
            token: env("HOOKLOG_TOKEN"),
            timeout_ms: env("HOOKLOG_TIMEOUT_MS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(DEFAULT_TIMEOUT_MS),
            cli: None,
            approvals: None,
            spool: SpoolArgs {
                dir: env("HOOKLOG_SPOOL").map(PathBuf::from),
                spool_max_events: limits.max_events,
                spool_max_bytes: limits.max_bytes,
                spool_max_age: limits.max_age,
            },
            managed: false,
        }
    }

    /// Never fails and never returns: the process exits 0 when the work is done, or at the
    /// watchdog.
    pub fn run(self) -> ! {
        let started = Instant::now();
        let timeout = Duration::from_millis(self.timeout_ms);
        let deadline = started + timeout;
        std::panic::set_hook(Box::new(|_| {}));
        // The watchdog's time: the run's timeout, until a permission request to wait on moves
        // it (`Watchdog::extend`).
        let watchdog = Watchdog::start(deadline + WATCHDOG_GRACE);
        let _ = std::panic::catch_unwind(move || self.forward(deadline, &watchdog));
        std::process::exit(0)
    }

    fn forward(self, deadline: Instant, watchdog: &Watchdog) {
        let mut payload = Vec::new();
        let read = std::io::stdin()
            .take(MAX_PAYLOAD_BYTES + 1)
            .read_to_end(&mut payload);
        let spool = self.spool.open().ok();
        let event = match read {
            Ok(_) if payload.iter().all(u8::is_ascii_whitespace) => None,
            Ok(_) if payload.len() as u64 > MAX_PAYLOAD_BYTES => {
                if let Some(spool) = &spool {
                    let _ = spool.log_dropped(&spool::Dropped {
                        time: crate::event::time::now(),
                        id: None,
                        reason: "payload larger than 16 MiB".into(),
                        bytes: payload.len() as u64,
                    });
                }
                None
            }
            Ok(_) => Some(forward::spool::Entry {
                header: Header {
                    id: uuid::Uuid::now_v7().to_string(),
                    route: self.route,
                    cli: self.cli.clone(),
                    captured_at: crate::event::time::now(),
                },
                // A request this run will wait on says so, for hooklog to offer it for a
                // decision (and only until the wait is over).
                body: match self.approvals {
                    Some(seconds) if approval::asks(&payload) => approval::mark(payload, seconds),
                    _ => payload,
                },
            }),
            Err(_) => None,
        };
        // Spool first, before anything that can fail, so the event survives whatever happens
        // next.
        let spooled = match (&spool, &event) {
            (Some(spool), Some(event)) => spool
                .put(spool::now_nanos(), &event.header, &event.body)
                .is_ok(),
            _ => false,
        };
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let Ok(sender) = Sender::new(Target {
            url: self.url.clone(),
            token: self.token.clone(),
        }) else {
            return;
        };
        // A permission request to wait on: its id is the event's, known before delivery.
        let waits = match (self.approvals, &event) {
            (Some(seconds), Some(e)) if approval::asks(&e.body) => {
                let until = Instant::now() + Duration::from_secs(seconds);
                watchdog.extend(until + approval::EXPIRE_BUDGET + WATCHDOG_GRACE);
                Some((e.header.id.clone(), until))
            }
            _ => None,
        };
        let timeout = Duration::from_millis(self.timeout_ms);
        runtime.block_on(async {
            let unspooled = event.filter(|_| !spooled);
            let Some(spool) = &spool else {
                // No spool at all: a direct delivery is all there is.
                if let Some(event) = &unspooled {
                    let _ = sender.send(event, deadline).await;
                }
                return;
            };
            // Another run is draining: it re-lists the spool as it goes, so it (or the run
            // after it) delivers this event too.
            let Some(_lock) = spool.lock(deadline) else {
                return;
            };
            let drained = forward::drain(spool, &sender, deadline, MAX_PER_RUN).await;
            // An event the spool could not take (a full disk) goes directly, but only after
            // everything spooled before it, so it overtakes nothing.
            if let Some(event) = &unspooled
                && drained.stopped.is_none()
            {
                let _ = sender.send(event, deadline).await;
            }
            // The limits apply to what is left, after this run delivered what it could.
            if drained.stopped.is_some() {
                let _ = spool.enforce_limits();
            }
        });
        let Some((id, until)) = waits else { return };
        let first_seen_by = deadline.min(until);
        let output = runtime.block_on(approval::wait(
            &sender,
            &id,
            until,
            first_seen_by,
            async || {
                // hooklog does not know the request yet: deliver the spool again (this run holds
                // no lock now, so it takes it, as any run would).
                let Some(spool) = spool.as_ref() else { return };
                let step = (Instant::now() + timeout).min(until);
                let Some(_lock) = spool.lock(step) else {
                    return;
                };
                forward::drain(spool, &sender, step, MAX_PER_RUN).await;
            },
        ));
        if let Some(output) = output {
            println!("{output}");
        }
    }
}

/// Exits the process at its time, whatever the run is doing (a stdin that never closes, a
/// stuck disk). The time can be moved later, once: for a permission request to wait on (the
/// thread wakes at the first time, reads the later one, and sleeps again).
struct Watchdog {
    exit_at: std::sync::Arc<std::sync::Mutex<Instant>>,
}

impl Watchdog {
    fn start(exit_at: Instant) -> Watchdog {
        let shared = std::sync::Arc::new(std::sync::Mutex::new(exit_at));
        let watched = shared.clone();
        std::thread::spawn(move || {
            loop {
                let at = *watched.lock().unwrap_or_else(|e| e.into_inner());
                match at.checked_duration_since(Instant::now()) {
                    Some(left) => std::thread::sleep(left),
                    None => std::process::exit(0),
                }
            }
        });
        Watchdog { exit_at: shared }
    }

    /// Moves the exit later (never earlier: the thread reads it only once the first is due).
    fn extend(&self, exit_at: Instant) {
        let mut at = self.exit_at.lock().unwrap_or_else(|e| e.into_inner());
        *at = (*at).max(exit_at);
    }
}
