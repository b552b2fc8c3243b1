//! The large log `hooklog bench search` queries: realistic hook sessions posted as NDJSON
//! batches, and its size and the search index's share of it.

use super::SearchBenchArgs;
use crate::bench::ingest;
use crate::bench::sessions::Session;
use anyhow::{Context, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;

impl SearchBenchArgs {
    /// Posts the large log: `sessions` sessions open at once, split between two connections
    /// (so each session's events go in order), their events interleaved as agents' are.
    /// Returns the ids of the sessions played.
    pub(super) async fn build(&self, url: &str) -> anyhow::Result<Vec<String>> {
        const WORKERS: usize = 2;
        let per_worker = self.events.div_ceil(WORKERS);
        let mut workers = Vec::new();
        for w in 0..WORKERS {
            let events = per_worker.min(self.events - (w * per_worker).min(self.events));
            let (url, batch, turns) = (url.to_string(), self.batch.max(1), self.turns);
            let open = (self.sessions / WORKERS).max(1);
            workers.push(tokio::spawn(async move {
                build_part(&url, &format!("log{w}"), events, open, batch, turns).await
            }));
        }
        let mut ids = Vec::new();
        for worker in workers {
            ids.extend(worker.await??);
        }
        Ok(ids)
    }
}

/// One connection's share of the large log: `open` sessions at a time, one event of each in
/// turn, `batch` events a request.
async fn build_part(
    url: &str,
    run: &str,
    events: usize,
    open: usize,
    batch: usize,
    turns: usize,
) -> anyhow::Result<Vec<String>> {
    let authority = url.trim_start_matches("http://").to_string();
    let mut sender = ingest::connect(&authority).await?;
    let mut sessions: Vec<Session> = (0..open).map(|n| Session::new(run, n, turns)).collect();
    let mut ids: Vec<String> = sessions.iter().map(|s| s.id().to_string()).collect();
    let mut made = open;
    let mut posted = 0;
    let mut turn = 0;
    while posted < events {
        let mut lines = Vec::with_capacity(batch);
        while lines.len() < batch && posted + lines.len() < events {
            let slot = turn % open;
            turn += 1;
            let event = match sessions[slot].next_event() {
                Some(event) => event,
                None => {
                    sessions[slot] = Session::new(run, made, turns);
                    made += 1;
                    ids.push(sessions[slot].id().to_string());
                    sessions[slot]
                        .next_event()
                        .expect("a new session has events")
                }
            };
            lines.push(event.envelope_from("hook"));
        }
        posted += lines.len();
        let request = hyper::Request::post("/events")
            .header("host", &authority)
            .header("content-type", "application/x-ndjson")
            .body(Full::new(Bytes::from(lines.join("\n"))))?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!(
                "building the log: the server answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
    }
    Ok(ids)
}

/// The database file's size and the search index's share of it, by `dbstat`.
pub(super) fn sizes(db: &std::path::Path) -> anyhow::Result<()> {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", db.display()))?;
    let tables: Vec<(String, i64)> = conn
        .prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let total: i64 = tables.iter().map(|(_, size)| size).sum();
    let of = |pick: &dyn Fn(&str) -> bool| -> i64 {
        tables
            .iter()
            .filter(|(name, _)| pick(name))
            .map(|(_, size)| size)
            .sum()
    };
    let text = of(&|name| name == "search_text");
    let index = of(&|name| name.starts_with("search_") && name != "search_text");
    let events = of(&|name| name == "events" || name.starts_with("sqlite_autoindex_events"));
    let mb = |bytes: i64| bytes as f64 / 1e6;
    let share = |bytes: i64| bytes as f64 * 100.0 / total.max(1) as f64;
    println!(
        "database: {:.0} MB; the events table and its indexes {:.0} MB ({:.1}%); search: {:.0} MB ({:.1}%): text {:.0} MB ({:.1}%), FTS5 index {:.0} MB ({:.1}%)",
        mb(total),
        mb(events),
        share(events),
        mb(text + index),
        share(text + index),
        mb(text),
        share(text),
        mb(index),
        share(index),
    );
    let largest: Vec<String> = tables
        .iter()
        .take(8)
        .map(|(name, size)| format!("{name} {:.0} MB", mb(*size)))
        .collect();
    println!("  largest: {}", largest.join(", "));
    Ok(())
}
