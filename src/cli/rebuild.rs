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
/// running server does not notice) and compares its tables before and after. The live tables
/// are first copied into a scratch file beside the copy; each table is then compared with its
/// rebuild by SQL (`EXCEPT`, both ways), which SQLite does on disk: the check's memory does not
/// grow with the log.
fn check(db: &std::path::Path) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("a scratch directory for the copy")?;
    let copy = dir.path().join("check.db");
    store::snapshot::copy(db, &copy).context("copying the database and its snapshot")?;
    let mut conn = open::open_writer(&copy, Durability::Normal)?;
    refuse_without_snapshot(&conn, db)?;
    // Sorting and `EXCEPT` go to temporary files, not memory.
    conn.pragma_update(None, "temp_store", "FILE")?;
    // The server indexes acknowledged events after their commit: the copy's search rows are
    // caught up from its log first, as the server does on start.
    let head = store::read::head(&conn)?;
    while projection::search::catch_up(&conn, 10_000)? < head {}
    // The live search index against its own text rows (which are compared with a rebuild's
    // below): together, the index equals a rebuilt one.
    let index = projection::search::check(&conn)?;
    let live = dir.path().join("live.db");
    conn.execute("ATTACH ?1 AS live", [live.to_string_lossy()])?;
    for table in compared() {
        conn.execute_batch(&format!(
            "CREATE TABLE live.{table} AS SELECT * FROM main.{table}"
        ))?;
    }
    let started = Instant::now();
    let tx = conn.transaction()?;
    let replayed = crate::store::rebuild::rebuild(&tx)?;
    report("checked", replayed, started);
    // The comparison reads every table once: a small page cache serves it as well.
    for schema in ["main", "live", "temp"] {
        tx.pragma_update(Some(schema), "cache_size", -COMPARE_CACHE_KIB)?;
    }
    let mut rows = 0i64;
    let (mut missing, mut extra) = (0u64, 0u64);
    for table in compared() {
        rows += tx.query_row(&format!("SELECT COUNT(*) FROM live.{table}"), [], |r| {
            r.get::<_, i64>(0)
        })?;
        missing += differ(&tx, table, "live", "main", "- live only:   ")?;
        extra += differ(&tx, table, "main", "live", "+ rebuild only:")?;
    }
    drop(tx);
    if let Some(why) = &index {
        println!("- the live search index does not match its text: {why}");
    }
    if missing == 0 && extra == 0 && index.is_none() {
        println!(
            "the live projections equal a rebuild from the log ({rows} rows), and the search index its text"
        );
        return Ok(());
    }
    if missing == 0 && extra == 0 {
        bail!("the search index differs from its text rows (`hooklog rebuild` makes it again)");
    }
    bail!(
        "{} live rows differ from a rebuild ({missing} only live, {extra} only rebuilt)",
        missing + extra
    )
}

/// The page cache, in KiB, of each schema while `--check` compares tables.
const COMPARE_CACHE_KIB: i64 = 8 * 1024;

/// The tables `--check` compares: every projection and the search text.
fn compared() -> impl Iterator<Item = &'static str> {
    projection::TABLES.iter().copied().chain(["search_text"])
}

/// The rows of `table` in schema `from` that `other` does not have: how many, the first 20 of
/// them printed after `mark` as sqlite3 would show them.
fn differ(
    conn: &Connection,
    table: &str,
    from: &str,
    other: &str,
    mark: &str,
) -> rusqlite::Result<u64> {
    let mut statement = conn.prepare(&format!(
        "SELECT * FROM {from}.{table} EXCEPT SELECT * FROM {other}.{table}"
    ))?;
    let columns = statement.column_count();
    let mut rows = statement.query([])?;
    let mut count = 0u64;
    while let Some(row) = rows.next()? {
        if count < 20 {
            let values = (0..columns)
                .map(|i| row.get_ref(i).map(projection::show))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            println!("{mark} {table}: {}", values.join(" | "));
        }
        count += 1;
    }
    Ok(count)
}
