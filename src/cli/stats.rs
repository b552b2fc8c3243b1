//! `hooklog stats`: what a database holds, read from the file (read-only; the server may run).

use crate::store::{read, snapshot};
use anyhow::{Context, bail};
use clap::Args;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value, json};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// SQLite database file.
    #[arg(long, env = "HOOKLOG_DB", default_value = "hooklog.db")]
    pub db: PathBuf,
    /// Print JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

impl StatsArgs {
    pub fn run(self) -> anyhow::Result<()> {
        if !self.db.exists() {
            bail!("{} does not exist", self.db.display());
        }
        let conn = Connection::open_with_flags(&self.db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening {}", self.db.display()))?;
        let stats = gather(&conn, &self.db)?;
        if self.json {
            println!("{}", serde_json::to_string_pretty(&stats)?);
            return Ok(());
        }
        for (key, value) in stats.as_object().expect("an object") {
            if let Value::Object(counts) = value {
                println!("{key}:");
                for (name, n) in counts {
                    println!("  {name:<40} {n}");
                }
            } else {
                println!("{key:<24} {value}");
            }
        }
        Ok(())
    }
}

/// The numbers `hooklog stats` prints.
pub fn gather(conn: &Connection, path: &std::path::Path) -> anyhow::Result<Value> {
    let one = |sql: &str| -> rusqlite::Result<Value> {
        conn.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0))
            .map(|v| match v {
                rusqlite::types::Value::Integer(i) => json!(i),
                rusqlite::types::Value::Text(t) => json!(t),
                _ => Value::Null,
            })
    };
    let file_bytes = |p: std::path::PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let wal = std::path::PathBuf::from(format!("{}-wal", path.display()));
    let mut by_type = Map::new();
    let mut statement =
        conn.prepare("SELECT type, COUNT(*) FROM events GROUP BY type ORDER BY 2 DESC, 1")?;
    for row in statement.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (t, n) = row?;
        by_type.insert(t, n.into());
    }
    let mut by_source = Map::new();
    let mut statement =
        conn.prepare("SELECT source, COUNT(*) FROM events GROUP BY source ORDER BY 2 DESC, 1")?;
    for row in statement.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (s, n) = row?;
        by_source.insert(s, n.into());
    }
    Ok(json!({
        "database": path.display().to_string(),
        "fileBytes": file_bytes(path.to_path_buf()),
        "walBytes": file_bytes(wal),
        "schemaVersion": one("PRAGMA user_version")?,
        "streamGenerationId": read::meta(conn, "stream_generation_id")?,
        "events": one("SELECT COUNT(*) FROM events")?,
        "headSequence": read::head(conn)?,
        "oldestRetainedSequence": one("SELECT MIN(sequence) FROM events")?,
        "oldestRetainedAt": one("SELECT received_at FROM events ORDER BY sequence LIMIT 1")?,
        "newestAt": one("SELECT received_at FROM events ORDER BY sequence DESC LIMIT 1")?,
        "prunedThroughSequence": read::meta(conn, "pruned_through_sequence")?,
        // Read from the snapshot's own file; a string, as the meta values beside it.
        "snapshotThroughSequence": snapshot::through(conn)?.map(|s| s.to_string()),
        "snapshotBytes": file_bytes(snapshot::path_of(path)),
        "sessions": one("SELECT COUNT(*) FROM sessions")?,
        "heroes": one("SELECT COUNT(*) FROM heroes")?,
        "missions": one("SELECT COUNT(*) FROM missions")?,
        "alerts": one("SELECT COUNT(*) FROM alerts")?,
        "bySource": by_source,
        "byType": by_type,
    }))
}
