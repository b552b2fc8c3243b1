//! `hooklog replay`: a recording, again.
//!
//! - `replay FILE --to URL [--speed N | --no-delay]` re-posts it to a running hooklog, each line
//!   to the route it belongs to, spaced as recorded (divided by `--speed`): to reproduce a
//!   problem live.
//! - `replay FILE | --session S [--until SEQ] [--step]` applies it to a scratch database and
//!   prints what each event changed in the projections (a mission opened, a tool finished, a
//!   claim held): the debugger's view. `--until` applies everything up to that event and
//!   prints the projections as they stood then; `--step` waits for Enter after each event.

use crate::event::{NewEvent, time};
use crate::ingest::{canonical, factory, hook, normalized, recording};
use crate::store::scratch::{self, Scratch};
use anyhow::{Context, bail};
use clap::Args;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

/// The longest pause `--to` makes between two lines, however far apart they were recorded.
const MAX_PAUSE: Duration = Duration::from_secs(10);

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The recording: NDJSON of envelopes (`hooklog export`), raw hook bodies, normalized
    /// events or factory envelopes.
    pub file: Option<PathBuf>,
    /// Re-post to this hooklog instead of stepping through.
    #[arg(long)]
    pub to: Option<String>,
    /// With --to: this many times faster than recorded.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// With --to: no pauses at all.
    #[arg(long)]
    pub no_delay: bool,
    /// Sent as `Authorization: Bearer` with --to.
    #[arg(long, env = "HOOKLOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Step through this session of --db instead of a file.
    #[arg(long, conflicts_with = "file")]
    pub session: Option<String>,
    /// The database --session reads.
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
    /// Apply up to this event (its sequence in the recording) and print the projections then.
    #[arg(long)]
    pub until: Option<i64>,
    /// Wait for Enter after each event.
    #[arg(long)]
    pub step: bool,
}

/// Where a line of a recording goes.
#[derive(Debug, Clone, PartialEq)]
enum Route {
    /// `POST /events`: hooklog envelopes, short-form events, arrays of them.
    Events,
    /// `POST /event`: raw hook bodies.
    Hook,
    /// `POST /event/normalized`.
    Normalized,
    /// `POST /factory-sessions/{session}/events`.
    Factory(String),
    /// A line that cannot be sent anywhere, and why.
    Nowhere(String),
}

/// One line of a recording: where it goes and the event it makes.
struct Line {
    number: usize,
    route: Route,
    body: Value,
    /// When it happened, if the line says.
    at: Option<chrono::DateTime<chrono::Utc>>,
}

impl ReplayArgs {
    pub fn run(self) -> anyhow::Result<()> {
        if let Some(url) = self.to.clone() {
            let file = self.file.clone().context("--to needs a FILE to replay")?;
            if !(0.01..=1000.0).contains(&self.speed) {
                bail!("--speed must be between 0.01 and 1000");
            }
            let lines = read_lines(&file)?;
            let runtime = tokio::runtime::Runtime::new()?;
            return runtime.block_on(post_all(&self, &url, lines));
        }
        let events = match (&self.file, &self.session) {
            (Some(file), _) => recorded_events(&read_lines(file)?)?,
            (None, Some(session)) => session_events(&self.db, session)?,
            (None, None) => bail!("give a FILE, or --session with --db"),
        };
        step_through(&events, self.until, self.step)
    }
}

fn read_lines(path: &std::path::Path) -> anyhow::Result<Vec<Line>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut lines = Vec::new();
    for (i, text) in std::io::BufReader::new(file).lines().enumerate() {
        let text = text?;
        if text.trim().is_empty() {
            continue;
        }
        let body: Value =
            serde_json::from_str(&text).with_context(|| format!("line {} is not JSON", i + 1))?;
        lines.push(classify(i + 1, body));
    }
    Ok(lines)
}

/// Which route a line belongs to, and its time.
fn classify(number: usize, body: Value) -> Line {
    let text = |v: &Value, pointer: &str| {
        v.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let schema = text(&body, "/schemaVersion");
    let (route, at) = if schema.as_deref() == Some(factory::SCHEMA_VERSION) {
        let route = match recording::factory_session(&body) {
            Some(session) => Route::Factory(session),
            None => Route::Nowhere(
                "a FactoryEvent line must name its session in context.sessionId".into(),
            ),
        };
        (route, text(&body, "/context/eventTime"))
    } else if body.is_array() || schema.is_some() || body.get("context").is_some() {
        (Route::Events, text(&body, "/context/eventTime"))
    } else if body.get("eventName").is_none()
        && body.get("hook").is_none()
        && body.get("hook_event_name").is_none()
        && matches!(
            body.get("type").and_then(Value::as_str),
            Some("registered" | "stuck" | "unstuck" | "ended")
        )
    {
        let at = body
            .get("timestamp")
            .and_then(Value::as_i64)
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(time::format);
        (Route::Normalized, at)
    } else {
        (Route::Hook, None)
    };
    Line {
        number,
        route,
        at: at.as_deref().and_then(time::parse),
        body,
    }
}

/// The URL a line is posted to (path segments percent-encoded).
fn url_for(base: &reqwest::Url, route: &Route) -> Result<reqwest::Url, String> {
    let segments: Vec<&str> = match route {
        Route::Events => vec!["events"],
        Route::Hook => vec!["event"],
        Route::Normalized => vec!["event", "normalized"],
        Route::Factory(session) => vec!["factory-sessions", session, "events"],
        Route::Nowhere(why) => return Err(why.clone()),
    };
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| "the --to URL cannot take a path".to_string())?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

async fn post_all(args: &ReplayArgs, url: &str, lines: Vec<Line>) -> anyhow::Result<()> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let base = reqwest::Url::parse(url).with_context(|| format!("--to {url} is not a URL"))?;
    let (mut posted, mut failed) = (0, Vec::new());
    let mut previous: Option<chrono::DateTime<chrono::Utc>> = None;
    for line in &lines {
        if !args.no_delay
            && let (Some(before), Some(at)) = (previous, line.at)
        {
            let gap = (at - before)
                .to_std()
                .unwrap_or_default()
                .div_f64(args.speed);
            tokio::time::sleep(gap.min(MAX_PAUSE)).await;
        }
        previous = line.at.or(previous);
        let target = match url_for(&base, &line.route) {
            Ok(target) => target,
            Err(why) => {
                failed.push(format!("line {}: {why}", line.number));
                continue;
            }
        };
        let mut request = client
            .post(target)
            .header("content-type", "application/json")
            .body(line.body.to_string());
        if let Some(token) = &args.token {
            request = request.bearer_auth(token);
        }
        match request.send().await {
            Ok(r) if r.status().is_success() => posted += 1,
            Ok(r) => {
                let status = r.status();
                let body = r.text().await.unwrap_or_default();
                failed.push(format!("line {}: {status} {body}", line.number));
            }
            Err(e) => failed.push(format!("line {}: {e}", line.number)),
        }
    }
    println!("posted {posted} of {} lines to {url}", lines.len());
    for f in failed.iter().take(20) {
        println!("  {f}");
    }
    if !failed.is_empty() {
        bail!("{} lines were refused", failed.len());
    }
    Ok(())
}

/// The events a recording makes, parsed as the routes would parse them.
fn recorded_events(lines: &[Line]) -> anyhow::Result<Vec<(i64, NewEvent)>> {
    let mut events = Vec::new();
    for line in lines {
        let bytes = line.body.to_string().into_bytes();
        let parsed = match &line.route {
            Route::Events => canonical::parse(&bytes, false).map_err(|e| e.message),
            Route::Hook => hook::parse(&bytes, None, None)
                .map(|h| vec![h.event])
                .map_err(|e| e.message),
            Route::Normalized => {
                normalized::parse(&bytes, crate::ingest::event_id(None).expect("generated"))
                    .map(|e| vec![e])
                    .map_err(|e| e.to_string())
            }
            Route::Factory(session) => {
                factory::parse(&bytes, false, session).map_err(|e| e.message)
            }
            Route::Nowhere(why) => Err(why.clone()),
        }
        .map_err(|e| anyhow::anyhow!("line {}: {e}", line.number))?;
        let position = line
            .body
            .pointer("/context/sequence")
            .and_then(Value::as_i64)
            .unwrap_or(line.number as i64);
        events.extend(parsed.into_iter().map(|e| (position, e)));
    }
    Ok(events)
}

/// A session's events from a database, as they were stored.
fn session_events(db: &std::path::Path, session: &str) -> anyhow::Result<Vec<(i64, NewEvent)>> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", db.display()))?;
    crate::store::migrate::check_current(&conn)
        .map_err(|e| anyhow::anyhow!("{}: {e}", db.display()))?;
    let events = scratch::session_events(&conn, session)?;
    if events.is_empty() {
        bail!("{} has no events of session {session}", db.display());
    }
    Ok(events)
}

/// Applies the events to a scratch database one by one, printing what each changed; with
/// `until`, only the projections as they stood after that event.
fn step_through(events: &[(i64, NewEvent)], until: Option<i64>, step: bool) -> anyhow::Result<()> {
    if let Some(until) = until {
        let Some(snapshot) = scratch::until(events, until)? else {
            bail!("the recording has no event at or after #{until}");
        };
        for line in snapshot.lines() {
            println!("{line}");
        }
        return Ok(());
    }
    let mut scratch = Scratch::new()?;
    let mut before = scratch.rows()?;
    let stdin = std::io::stdin();
    for (position, event) in events {
        scratch.apply(event)?;
        let after = scratch.rows()?;
        println!(
            "#{position} {} {}",
            event.event_type,
            event.session_id.as_deref().unwrap_or("-")
        );
        for line in scratch::changes(&before, &after) {
            println!("{line}");
        }
        before = after;
        if step {
            eprint!("(Enter for the next event) ");
            let mut ignored = String::new();
            if stdin.lock().read_line(&mut ignored)? == 0 {
                return Ok(());
            }
        }
    }
    Ok(())
}
