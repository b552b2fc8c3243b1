//! `hooklog rebuild`: drops every projection and derives it again from the log, proving (and
//! restoring) that projections are a pure function of the events. `--check` does it on a
//! copy and reports any difference from the live tables, changing nothing; it can run while
//! the server does.

use crate::config::Durability;
use crate::projection;
use crate::store::{self, open};
use anyhow::{Context, bail};
use clap::Args;
use rusqlite::Connection;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct RebuildArgs {
    /// SQLite database file.
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
    /// Rebuild a copy and compare it with the live tables; change nothing. Exits 1 on a
    /// difference.
    #[arg(long)]
    pub check: bool,
}

impl RebuildArgs {
    pub fn run(self) -> anyhow::Result<()> {
        if !self.db.exists() {
            bail!("{} does not exist", self.db.display());
        }
        if self.check {
            return check(&self.db);
        }
        let _lock = store::lock(&self.db).context(
            "rebuild rewrites the projections: stop the server first (or use --check, which works on a copy)",
        )?;
        let mut conn = open::open_writer(&self.db, Durability::Full)
            .with_context(|| format!("opening {}", self.db.display()))?;
        refuse_without_snapshot(&conn, &self.db)?;
        let started = Instant::now();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let replayed = crate::store::rebuild::rebuild(&tx)?;
        tx.commit()?;
        report("rebuilt", replayed, started);
        Ok(())
    }
}

/// A database that pruned events without a retention snapshot of what they built (pruned
/// before schema 6, or its snapshot file `<db>.snapshot` is missing, behind the log or
/// another log's) has that only in its live tables: a rebuild would lose it, and a check would
/// report that loss as a difference. Both say so instead.
fn refuse_without_snapshot(conn: &Connection, db: &std::path::Path) -> anyhow::Result<()> {
    let pruned: i64 = conn.query_row(
        "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'pruned_through_sequence'",
        [],
        |r| r.get(0),
    )?;
    if pruned > 0 && store::snapshot::through(conn)?.is_none() {
        bail!(
            "events 1..{pruned} were pruned and there is no retention snapshot of what they \
             built (pruned before this database kept one, schema 6, or {} is missing, behind \
             the log or another log's): it is only in the live tables, so a rebuild from the \
             log cannot reproduce it; nothing was compared or changed",
            store::snapshot::path_of(db).display()
        );
    }
    Ok(())
}

fn report(what: &str, events: u64, started: Instant) {
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{what} {} projection tables from {events} events in {:.2} s ({:.0} events/s)",
        projection::TABLES.len(),
        seconds,
        events as f64 / seconds.max(1e-9)
    );
}

/// Rebuilds a consistent copy of the log and its retention snapshot (`VACUUM INTO`, which a
/// running server does not notice) and compares its tables before and after.
fn check(db: &std::path::Path) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("a scratch directory for the copy")?;
    let copy = dir.path().join("check.db");
    store::snapshot::copy(db, &copy).context("copying the database and its snapshot")?;
    let mut conn = open::open_writer(&copy, Durability::Normal)?;
    refuse_without_snapshot(&conn, db)?;
    // The server indexes acknowledged events after their commit: the copy's search rows are
    // caught up from its log first, as the server does on start.
    let head = store::read::head(&conn)?;
    while projection::search::catch_up(&conn, 10_000)? < head {}
    let live = projection::dump(&conn)?;
    // The live search index against its own text rows (which the snapshot compares with a
    // rebuild's): together, the index equals a rebuilt one.
    let index = projection::search::check(&conn)?;
    let started = Instant::now();
    let tx = conn.transaction()?;
    let replayed = crate::store::rebuild::rebuild(&tx)?;
    let rebuilt = projection::dump(&tx)?;
    drop(tx);
    report("checked", replayed, started);
    let (live_rows, rebuilt_rows): (HashSet<&String>, HashSet<&String>) =
        (live.iter().collect(), rebuilt.iter().collect());
    let missing: Vec<&String> = live
        .iter()
        .filter(|row| !rebuilt_rows.contains(row))
        .collect();
    let extra: Vec<&String> = rebuilt
        .iter()
        .filter(|row| !live_rows.contains(row))
        .collect();
    if let Some(why) = &index {
        println!("- the live search index does not match its text: {why}");
    }
    if missing.is_empty() && extra.is_empty() && index.is_none() {
        println!(
            "the live projections equal a rebuild from the log ({} rows), and the search index its text",
            live.len()
        );
        return Ok(());
    }
    if missing.is_empty() && extra.is_empty() {
        bail!("the search index differs from its text rows (`hooklog rebuild` makes it again)");
    }
    for row in missing.iter().take(20) {
        println!("- live only:    {row}");
    }
    for row in extra.iter().take(20) {
        println!("+ rebuild only: {row}");
    }
    bail!(
        "{} live rows differ from a rebuild ({} only live, {} only rebuilt)",
        missing.len() + extra.len(),
        missing.len(),
        extra.len()
    )
}
