//! `hooklog bench calibrate`: what this machine does right now without hooklog, measured the way
//! the issues state their reference numbers ("raw rusqlite appends of such events in batches of
//! 1,000 reach about 40,000-55,000 events/s with time-ordered ids", "parsing the payload JSON
//! alone runs at about 300,000 rows/s", "an fsync costs 0.2-0.5 ms").
//!
//! The speed of the VMs these benchmarks run on changes several-fold from one hour to the next.
//! A hooklog number means little without the machine's own number taken minutes apart, so
//! docs/performance.md gives both.

use super::ingest;
use clap::Args;
use rusqlite::{Connection, params};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Events appended for each kind of id.
    #[arg(long, default_value_t = 100_000)]
    pub events: usize,
    /// fsyncs timed.
    #[arg(long, default_value_t = 300)]
    pub syncs: usize,
    /// Single-event POSTs sent to the do-nothing HTTP server (0: skip it).
    #[arg(long, default_value_t = 100_000)]
    pub http_events: usize,
}

/// Events per transaction, as in the reference.
const BATCH: usize = 1_000;
const SESSIONS: usize = 50;

/// The references the issues were written against (low, high).
const APPEND_ORDERED: (f64, f64) = (40_000.0, 55_000.0);
const APPEND_RANDOM: (f64, f64) = (15_000.0, 20_000.0);
const PARSE: (f64, f64) = (300_000.0, 300_000.0);
const FSYNC_MS: (f64, f64) = (0.2, 0.5);
/// Issue 2's target for single-event POSTs at 64 connections, events/s.
const SINGLE_TARGET: f64 = 20_000.0;
const CONNECTIONS: usize = 64;

#[derive(Clone, Copy)]
enum Ids {
    TimeOrdered,
    Random,
}

impl CalibrateArgs {
    pub fn run(self) -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        println!("hooklog bench calibrate: this machine now, against the issues' references");
        let ordered = append(
            &dir.path().join("ordered.db"),
            self.events,
            Ids::TimeOrdered,
        )?;
        line(
            "raw SQLite appends, batches of 1,000, UUIDv7 ids",
            ordered,
            "events/s",
            APPEND_ORDERED,
        );
        let random = append(&dir.path().join("random.db"), self.events, Ids::Random)?;
        line(
            "raw SQLite appends, batches of 1,000, random ids",
            random,
            "events/s",
            APPEND_RANDOM,
        );
        let parsed = parse(&dir.path().join("ordered.db"))?;
        line("payload JSON parsed from the log", parsed, "rows/s", PARSE);
        let (median, p90) = fsync(&dir.path().join("sync.bin"), self.syncs)?;
        println!(
            "  fsync after a 16 KiB write: median {:.3} ms, p90 {:.3} ms (reference {}-{} ms)",
            ms(median),
            ms(p90),
            FSYNC_MS.0,
            FSYNC_MS.1
        );
        if self.http_events > 0 {
            let floor = super::floor::measure(self.http_events, CONNECTIONS)?;
            let factor = ordered / ((APPEND_ORDERED.0 + APPEND_ORDERED.1) / 2.0);
            println!(
                "  HTTP floor, single POSTs at {CONNECTIONS} connections to a server that stores nothing: \
                 {} events/s{} (issue 2's {} at the append factor x{factor:.2}: {})",
                grouped(floor.events_per_second),
                floor
                    .server_cpu_micros
                    .map(|us| format!(", server CPU {us:.1} µs/request"))
                    .unwrap_or_default(),
                grouped(SINGLE_TARGET),
                grouped(SINGLE_TARGET * factor),
            );
        }
        Ok(())
    }
}

/// One measured rate and how it compares with the middle of its reference range.
fn line(what: &str, rate: f64, unit: &str, (low, high): (f64, f64)) {
    let reference = if low == high {
        format!("~{}", grouped(low))
    } else {
        format!("{}-{}", grouped(low), grouped(high))
    };
    println!(
        "  {what}: {} {unit} (reference {reference}: x{:.2})",
        grouped(rate),
        rate / ((low + high) / 2.0)
    );
}

/// A whole number with thousands separators, as the issues write them.
fn grouped(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Appends `events` hook-sized events to a fresh `events` table (the real schema, plain
/// `synchronous=FULL` WAL connection, nothing else), `BATCH` to a transaction; events/s.
fn append(path: &Path, events: usize, ids: Ids) -> anyhow::Result<f64> {
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(crate::store::migrate::MIGRATIONS[0].1)?;
    let payloads: Vec<String> = (0..SESSIONS)
        .map(|i| ingest::hook_payload(i, SESSIONS))
        .collect();
    let mut next_in_session = [0i64; SESSIONS];
    let started = Instant::now();
    for first in (0..events).step_by(BATCH) {
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO events (sequence, event_id, session_id, session_sequence, type,
                                     source, event_time, received_at, payload)
                 VALUES (?1, ?2, ?3, ?4, 'PreToolUse', 'bench', ?5, ?5, ?6)",
            )?;
            // One time per transaction, as hooklog's writer stamps `received_at` per batch.
            let now = crate::event::time::format(chrono::Utc::now());
            for i in first..(first + BATCH).min(events) {
                let session = i % SESSIONS;
                next_in_session[session] += 1;
                let id = match ids {
                    Ids::TimeOrdered => uuid::Uuid::now_v7(),
                    Ids::Random => uuid::Uuid::new_v4(),
                };
                insert.execute(params![
                    i as i64 + 1,
                    id.to_string(),
                    format!("bench-session-{session}"),
                    next_in_session[session],
                    &now,
                    payloads[session],
                ])?;
            }
        }
        tx.commit()?;
    }
    Ok(events as f64 / started.elapsed().as_secs_f64())
}

/// Reads every payload of the log and parses it into a JSON tree; rows/s.
fn parse(path: &Path) -> anyhow::Result<f64> {
    let conn = Connection::open(path)?;
    let started = Instant::now();
    let mut statement = conn.prepare("SELECT payload FROM events ORDER BY sequence")?;
    let mut rows = statement.query([])?;
    let mut count = 0usize;
    let mut keys = 0usize;
    while let Some(row) = rows.next()? {
        let text = row.get_ref(0)?.as_str()?;
        let value: serde_json::Value = serde_json::from_str(text)?;
        keys += value.as_object().map_or(0, |o| o.len());
        count += 1;
    }
    anyhow::ensure!(keys >= count, "payloads parsed to objects");
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

/// Times `count` rounds of a 16 KiB write at a moving offset of a preallocated file and an
/// fsync of it; the median and the 90th percentile.
fn fsync(path: &Path, count: usize) -> anyhow::Result<(Duration, Duration)> {
    const SIZE: u64 = 8 << 20;
    const WRITE: usize = 16 << 10;
    let file = std::fs::File::create(path)?;
    file.set_len(SIZE)?;
    file.sync_all()?;
    let block: Vec<u8> = (0..WRITE).map(|i| (i % 251) as u8).collect();
    let mut times = Vec::with_capacity(count);
    let mut offset = 0u64;
    for _ in 0..count.max(1) {
        file.write_all_at(&block, offset)?;
        offset = (offset + WRITE as u64) % (SIZE - WRITE as u64);
        let started = Instant::now();
        file.sync_all()?;
        times.push(started.elapsed());
    }
    times.sort();
    let at = |p: f64| super::quantile(&times, p).expect("at least one fsync timed");
    Ok((at(0.5), at(0.9)))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(super::grouped(0.0), "0");
        assert_eq!(super::grouped(999.4), "999");
        assert_eq!(super::grouped(40_000.0), "40,000");
        assert_eq!(super::grouped(1_234_567.0), "1,234,567");
    }
}
