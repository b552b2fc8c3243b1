//! The command line: one file per subcommand, each an `Args` struct with `run()`.

pub mod backup;
pub mod export;
pub mod forwarder;
pub mod import;
pub mod install;
pub mod lines;
pub mod notify;
pub mod rebuild;
pub mod replay;
pub mod replication;
pub mod search;
pub mod serve;
pub mod spool;
pub mod stats;
pub mod tail;
pub mod transcripts;
pub mod usage;

use clap::{Parser, Subcommand};

/// hooklog: the black box recorder for coding agents.
#[derive(Parser)]
#[command(name = "hooklog", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the server.
    // Boxed: its flags make it much larger than the other commands.
    Serve(Box<serve::ServeArgs>),
    /// Follow a session, or every event, as readable lines (or JSON with --json).
    Tail(tail::TailArgs),
    /// Full-text search of a running hooklog: one line per hit, as `tail` prints events.
    Search(search::SearchArgs),
    /// Token usage and cost from transcripts, by day, session, model, project or turn.
    Usage(usage::UsageArgs),
    /// Write a session (or everything) as an NDJSON recording.
    Export(export::ExportArgs),
    /// Append a recording, or Claude Code / Codex transcripts, to a database (idempotent).
    Import(import::ImportArgs),
    /// Re-post a recording to a running hooklog, or step through it in a scratch projection.
    Replay(replay::ReplayArgs),
    /// A consistent copy of the database, taken while the server runs.
    Backup(backup::BackupArgs),
    /// What the database holds: events, sessions, size, head, types.
    Stats(stats::StatsArgs),
    /// Drop every projection and derive it again from the log (--check: compare, change nothing).
    Rebuild(rebuild::RebuildArgs),
    /// Forward one hook payload (stdin) to hooklog; spools it when hooklog cannot take it.
    /// Silent, and exits 0 whatever happens.
    Hook(forwarder::HookArgs),
    /// What `hooklog hook` has spooled: see it, deliver it, clear it.
    Spool(spool::SpoolCommand),
    /// Install or remove `hooklog hook` in Claude Code's and Codex's settings.
    #[command(subcommand)]
    Hooks(install::HooksCommand),
    /// Load generators that measure hooklog.
    #[command(subcommand)]
    Bench(crate::bench::BenchCommand),
}

impl Cli {
    pub fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Serve(args) => (*args).run(),
            Command::Tail(args) => args.run(),
            Command::Search(args) => args.run(),
            Command::Usage(args) => args.run(),
            Command::Rebuild(args) => args.run(),
            Command::Export(args) => args.run(),
            Command::Import(args) => args.run(),
            Command::Replay(args) => args.run(),
            Command::Backup(args) => args.run(),
            Command::Stats(args) => args.run(),
            Command::Hook(args) => args.run(),
            Command::Spool(command) => command.run(),
            Command::Hooks(command) => command.run(),
            Command::Bench(command) => command.run(),
        }
    }
}

/// `GET` on a running hooklog (`query` in the URL, the bearer `token` when set): the JSON body
/// of a success, or an error naming what failed (unreachable, no JSON, or the server's
/// refusal of `what` with its message).
pub async fn get_json(
    client: &reqwest::Client,
    url: &str,
    query: &[(&str, String)],
    token: Option<&str>,
    what: &str,
) -> anyhow::Result<serde_json::Value> {
    use anyhow::Context;
    let mut request = client.get(url).query(query);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    let body: serde_json::Value = response
        .json()
        .await
        .with_context(|| format!("the server answered {status} with no JSON"))?;
    if !status.is_success() {
        anyhow::bail!(
            "the server refused {what} ({status}): {}",
            body["message"].as_str().unwrap_or("no message")
        );
    }
    Ok(body)
}
