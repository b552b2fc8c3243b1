//! `hooklog bench rebuild`: how fast `hooklog rebuild` re-derives the projections. It fills a
//! temporary database with a mixed workload (hook, normalized, factory and plain events, plus
//! coordination commands) through the real writer, then times `store::rebuild` over it
//! (in a transaction rolled back each time), or times it over a copy of `--db`.

use crate::App;
use crate::config::{Config, Durability};
use crate::coordination::{Command, claims::Claim};
use crate::ingest::canonical;
use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct RebuildArgs {
    /// Events in the generated workload.
    #[arg(long, default_value_t = 200_000)]
    pub events: usize,
    /// Time a copy of this database instead of a generated one.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Rebuilds timed (the best and the median are reported).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

const NORMALIZED: [&str; 4] = ["stuck", "unstuck", "registered", "ended"];
const FACTORY: [&str; 6] = [
    "WORK_REQUEST",
    "WORK_STATE_CHANGE",
    "DISPATCH_REQUEST",
    "DISPATCH_RESPONSE",
    "SESSION_STARTED",
    "SESSION_COMPLETED",
];

/// Event `i` of the mixed workload, in `POST /events` form. It comes in cycles of eight: a
/// prompt, two tool calls and the result of the first, a subagent start or stop, a normalized
/// event, a factory event, and a Stop or a plain event. Each cycle's hook events go to one of
/// 40 agent sessions in turn; on alternate visits to a session its subagent starts or stops,
/// and a Stop ends its prompt (interrupting the second tool call). The normalized and factory
/// events go to 30 adapter and 10 factory sessions.
///
/// (Before 2026-12-01 the agent session was `i % 40`, so each session got one kind of event:
/// no tool result matched its call, and a quarter of the events left a tool use running for
/// good.)
pub fn mixed_event(i: usize) -> Value {
    let cycle = i / 8;
    let agent = cycle % 40;
    let second_visit = (cycle / 40) % 2 == 1;
    let session = format!("s{agent}");
    match i % 8 {
        0 => json!({"type": "UserPromptSubmit", "sessionId": session, "source": "hook",
                    "payload": {"prompt": format!("task {i}"), "cwd": "/w"}}),
        1 | 2 => json!({"type": "PreToolUse", "sessionId": session, "source": "hook",
                    "payload": {"tool_name": "Bash", "tool_use_id": format!("t{i}"),
                                "tool_input": {"command": format!("make {i}")}}}),
        3 => json!({"type": "PostToolUse", "sessionId": session, "source": "hook",
                    "payload": {"tool_use_id": format!("t{}", i - 2), "ok": !i.is_multiple_of(3)}}),
        4 => json!({"type": if second_visit { "SubagentStop" } else { "SubagentStart" },
                    "sessionId": session, "source": "hook",
                    "payload": {"agent_id": format!("a{agent}")}}),
        5 => json!({"type": NORMALIZED[i % 4], "sessionId": format!("n{}", i % 30),
                    "source": "normalized",
                    "payload": {"paneId": "%1", "reason": "permission", "message": "m"}}),
        6 => {
            json!({"type": FACTORY[i % 6], "sessionId": format!("f{}", i % 10), "source": "factory",
                    "payload": {"context": {"tick": i, "eventTime": "2026-11-30T12:00:00Z",
                                            "dispatchId": format!("d{}", i % 50),
                                            "workIds": [format!("w{}", i % 70)]},
                                "payload": {"workId": format!("w{}", i % 70), "toState": "s",
                                            "outcome": "ACCEPTED", "finalStatus": "SUCCEEDED",
                                            "startedAt": "2026-11-30T12:00:00Z"}}})
        }
        _ if second_visit => {
            json!({"type": "Stop", "sessionId": session, "source": "hook", "payload": {}})
        }
        _ => json!({"type": "note", "sessionId": session, "payload": {"i": i}}),
    }
}

impl RebuildArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("rebuild.db");
        match &self.db {
            Some(db) => {
                rusqlite::Connection::open_with_flags(
                    db,
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
                )?
                .execute("VACUUM INTO ?1", [path.to_string_lossy()])
                .context("copying the database")?;
            }
            None => {
                let started = Instant::now();
                tokio::runtime::Runtime::new()?.block_on(generate(&path, self.events))?;
                println!(
                    "generated {} events in {:.1} s",
                    self.events,
                    started.elapsed().as_secs_f64()
                );
            }
        }
        let mut conn = crate::store::open::open_writer(&path, Durability::Normal)?;
        let events: i64 = conn.query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))?;
        let mut rates = Vec::new();
        for run in 1..=self.runs.max(1) {
            let tx = conn.transaction()?;
            let started = Instant::now();
            let replayed = crate::store::rebuild::rebuild(&tx)?;
            let seconds = started.elapsed().as_secs_f64();
            drop(tx);
            let rate = replayed as f64 / seconds;
            println!("run {run}: {replayed} events in {seconds:.2} s = {rate:.0} events/s");
            rates.push(rate);
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "rebuild of {events} events: best {:.0} events/s, median {:.0} events/s",
            rates[rates.len() - 1],
            rates[rates.len() / 2]
        );
        Ok(())
    }
}

/// Fills a database with `events` mixed events (in batches of 2,000) and a claim per 100.
async fn generate(path: &std::path::Path, events: usize) -> anyhow::Result<()> {
    let mut config = Config::for_path(path);
    config.durability = Durability::Normal;
    let app = App::build(config).await?;
    let writer = app.store().writer.clone();
    for start in (0..events).step_by(2000) {
        let batch: Vec<Value> = (start..(start + 2000).min(events))
            .map(mixed_event)
            .collect();
        let parsed = canonical::parse(Value::Array(batch).to_string().as_bytes(), false)
            .map_err(|e| anyhow::anyhow!(e.message))?;
        writer.append(parsed).await?;
        for i in (start..start + 2000).step_by(100) {
            let claim = Claim {
                chat: format!("c{}", i % 50),
                session_id: format!("s{}", i % 40),
                ttl_seconds: 600,
            };
            writer.decide(Command::Claim(claim)).await?;
        }
    }
    app.store().close().await;
    Ok(())
}
