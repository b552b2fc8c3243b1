//! Where the projections prepare their SQL, so that the same code can run on the retention
//! snapshot. Inside [`on_snapshot`], every projection table a statement names is replaced by
//! its `snapshot_<table>` twin (same columns, keys and indexes): a prune step applies the
//! events it prunes to the snapshot with the unchanged projection code, without renaming any
//! table. Outside it (always, on every other thread) statements are prepared as written.
//!
//! Every statement the projection code runs must be prepared here. A test in this module scans
//! the projection sources for the usual other ways; `tests/it/retention.rs` prunes every kind of
//! event and checks the live tables are untouched and each twin equals its live table.

use super::TABLES;
use rusqlite::{CachedStatement, Connection};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

thread_local! {
    /// Whether statements prepared on this thread go to the snapshot twins.
    static ON_SNAPSHOT: Cell<bool> = const { Cell::new(false) };
    /// Each statement's text, with the twins' names (the projections prepare a few dozen
    /// distinct statements; the map is emptied if it ever grows past [`MAX_REWRITTEN`]).
    static REWRITTEN: RefCell<HashMap<String, String>> = RefCell::new(HashMap::new());
}

const MAX_REWRITTEN: usize = 1024;

/// Prepares (through the connection's statement cache) `sql`, naming the snapshot twins of
/// the projection tables instead when called inside [`on_snapshot`].
pub fn prepare<'c>(conn: &'c Connection, sql: &str) -> rusqlite::Result<CachedStatement<'c>> {
    if !ON_SNAPSHOT.get() {
        return conn.prepare_cached(sql);
    }
    REWRITTEN.with_borrow_mut(|rewritten| {
        if !rewritten.contains_key(sql) {
            if rewritten.len() >= MAX_REWRITTEN {
                rewritten.clear();
            }
            rewritten.insert(sql.to_string(), to_twins(sql));
        }
        conn.prepare_cached(&rewritten[sql])
    })
}

/// Runs `f` with the projections' statements prepared against the snapshot twins (on this
/// thread). The previous mode comes back when `f` returns or panics.
pub fn on_snapshot<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ON_SNAPSHOT.set(self.0);
        }
    }
    let _restore = Restore(ON_SNAPSHOT.replace(true));
    f()
}

/// Whether `word` names a projection table (SQLite's names are case-insensitive).
fn is_table(word: &str) -> bool {
    TABLES.iter().any(|table| table.eq_ignore_ascii_case(word))
}

/// `sql` with each projection table's name replaced by its twin's: a whole bare word, or a
/// whole quoted identifier (`"sessions"`, `` `sessions` ``), outside string literals and `--`
/// comments.
fn to_twins(sql: &str) -> String {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 64);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        match b {
            b'\'' | b'"' | b'`' => {
                // A quoted literal or identifier; a doubled quote inside is an escaped one.
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == b {
                        if bytes.get(i + 1) == Some(&b) {
                            i += 2;
                            continue;
                        }
                        i += 1;
                        break;
                    }
                    i += 1;
                }
                let quoted = &sql[start..i];
                let inner = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
                if b != b'\'' && quoted.len() >= 2 && is_table(inner) {
                    out.push(b as char);
                    out.push_str("snapshot_");
                    out.push_str(inner);
                    out.push(b as char);
                } else {
                    out.push_str(quoted);
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                out.push_str(&sql[start..i]);
            }
            b if b.is_ascii_alphabetic() || b == b'_' => {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let word = &sql[start..i];
                if is_table(word) {
                    out.push_str("snapshot_");
                }
                out.push_str(word);
            }
            _ => {
                // One character (a multi-byte one whole).
                let len = sql[i..].chars().next().map_or(1, char::len_utf8);
                i += len;
                out.push_str(&sql[start..i]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_table_names_outside_quotes_become_twins() {
        assert_eq!(
            to_twins(
                "SELECT s.id, tool_uses.kind FROM sessions s JOIN tool_uses ON tool_uses.session_id = s.id \
                 WHERE s.cwd = 'sessions' AND s.id IN (SELECT session_id FROM \"heroes\") -- from heroes\n\
                 AND session_id IN (SELECT id FROM main.Heroes) ORDER BY tool_uses_running"
            ),
            "SELECT s.id, snapshot_tool_uses.kind FROM snapshot_sessions s JOIN snapshot_tool_uses \
             ON snapshot_tool_uses.session_id = s.id WHERE s.cwd = 'sessions' AND s.id IN \
             (SELECT session_id FROM \"snapshot_heroes\") -- from heroes\nAND session_id IN \
             (SELECT id FROM main.snapshot_Heroes) ORDER BY tool_uses_running"
        );
        assert_eq!(
            to_twins("INSERT INTO alerts (x) VALUES ('it''s alerts', 'é')"),
            "INSERT INTO snapshot_alerts (x) VALUES ('it''s alerts', 'é')"
        );
        assert_eq!(to_twins("SELECT 1 FROM events"), "SELECT 1 FROM events");
    }

    #[test]
    fn the_mode_is_this_threads_and_comes_back_after_a_panic() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE alerts (x); CREATE TABLE snapshot_alerts (x);")
            .unwrap();
        conn.execute("INSERT INTO snapshot_alerts VALUES (1)", [])
            .unwrap();
        let count = |conn: &Connection| -> i64 {
            prepare(conn, "SELECT COUNT(*) FROM alerts")
                .unwrap()
                .query_row([], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(count(&conn), 0);
        assert_eq!(on_snapshot(|| count(&conn)), 1);
        let other = std::thread::scope(|s| {
            on_snapshot(|| {
                s.spawn(|| {
                    let conn = Connection::open_in_memory().unwrap();
                    conn.execute_batch("CREATE TABLE alerts (x)").unwrap();
                    count(&conn)
                })
                .join()
                .unwrap()
            })
        });
        assert_eq!(other, 0, "another thread is not on the snapshot");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            on_snapshot(|| panic!("inside"));
        }));
        assert!(panicked.is_err());
        assert_eq!(count(&conn), 0, "off the snapshot again");
    }

    /// The projection sources prepare statements only through [`prepare`].
    #[test]
    fn the_projections_prepare_every_statement_here() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/projection");
        let mut checked = 0;
        // The sources here and in the folders here (one level: `recorder/`).
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => paths.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path())),
                false => paths.push(path),
            }
        }
        for path in paths {
            if path.file_name().unwrap() == "sql.rs" {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            // The usual ways to run SQL on a connection (a heuristic: the retention test that
            // prunes everything checks what the statements do).
            for needle in [
                ".prepare_cached(",
                ".prepare(",
                "conn.execute(",
                "conn.query_row(",
                "conn.query_row_and_then(",
                "conn.query_one(",
                "conn().",
                ".execute_batch(",
            ] {
                let found: Vec<usize> = source
                    .lines()
                    .enumerate()
                    .filter(|(_, line)| line.contains(needle))
                    .map(|(n, _)| n + 1)
                    .collect();
                assert!(
                    found.is_empty(),
                    "{}: `{needle}` on lines {found:?}; use projection::sql::prepare",
                    path.display()
                );
            }
            checked += 1;
        }
        assert!(checked >= 12, "read the projection sources ({checked})");
    }
}
