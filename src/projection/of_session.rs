//! A session's rows of a projection opened by its events (tool uses, missions, permission
//! requests), found through the events' own session index (migrations 0031, 0032 and 0035,
//! issue 41). Such a row is opened by an event of its session and keyed by that event's
//! sequence (`opened_sequence`, or `sequence` for a permission request: the table's key, or an
//! index in that order), so walking the session's events in order and looking each
//! one up finds its rows in order, and a hook event that opens one writes no entry on a page of
//! its session's for it (the event's own entry is on such a page already).
//!
//! The rows whose opening event retention pruned (`opening_pruned = 1`) are found through a
//! partial index keyed by session; every one of them is older than any row an event still in
//! the log opened, so the session's rows are those, then the others. A statement here reads
//! one part, then the other (`UNION ALL` gives its parts' rows in turn), each in its index's
//! order, and stops at its limit: a page reads what it shows, and a window read for a filter
//! is read only as far as the page needs. Nothing sorts the rows, which would read every row
//! up to the limit of each part first.

use rusqlite::types::Value;
use rusqlite::{Connection, Row, ToSql};

/// A projection table whose rows [`Scope`] reads.
pub struct Table {
    pub name: &'static str,
    /// Its stored columns, as the row reader takes them; [`Table::key`] among them.
    pub columns: &'static str,
    /// What the row reader takes after the columns: expressions on the row `t`, each with a
    /// comma before it (`""`: nothing).
    pub computed: &'static str,
    /// The column holding the sequence of the event that opened the row.
    pub key: &'static str,
    /// Its index on [`Table::key`], or `None` when that is the table's key.
    pub by_order: Option<&'static str>,
    /// Its partial index on `(session_id, key) WHERE opening_pruned = 1`.
    pub pruned: &'static str,
}

impl Table {
    /// [`Table::columns`], each of `t`, then [`Table::computed`].
    fn of_t(&self) -> String {
        let columns = self
            .columns
            .split(',')
            .map(|c| format!("t.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        format!("{columns}{}", self.computed)
    }
}

/// Which rows of one session a statement reads.
pub struct Scope {
    pub table: &'static Table,
    pub session: String,
    /// Leave out the rows opened before this sequence (a mission's opening).
    pub from: Option<i64>,
    /// Leave out the rows opened at or after this sequence (a page's cursor).
    pub before: Option<i64>,
    /// Terms on the row (`t.`), with the parameter each binds (`:name`) and its value.
    pub terms: Vec<(String, Option<(&'static str, Value)>)>,
}

/// Which way a statement reads.
#[derive(Clone, Copy)]
pub enum Order {
    Oldest,
    Newest,
}

impl Scope {
    pub fn of(table: &'static Table, session: &str) -> Scope {
        Scope {
            table,
            session: session.to_string(),
            from: None,
            before: None,
            terms: Vec::new(),
        }
    }

    /// Adds `t.<column> = <name>` (`name` is `:column`), when `value` is given.
    pub fn eq(mut self, column: &str, name: &'static str, value: Option<&str>) -> Scope {
        if let Some(value) = value {
            let value = Value::Text(value.to_string());
            self.terms
                .push((format!("t.{column} = {name}"), Some((name, value))));
        }
        self
    }

    /// Adds a term that binds nothing.
    pub fn term(mut self, term: &str) -> Scope {
        self.terms.push((term.to_string(), None));
        self
    }

    /// The statement: its rows in `order`, at most `limit` (a parameter's name, bound to `-1`
    /// for all of them).
    pub fn sql(&self, order: Order, limit: &str) -> String {
        let (way, pruned_first) = match order {
            Order::Oldest => ("ASC", true),
            Order::Newest => ("DESC", false),
        };
        let mut opened = vec!["e.session_id = :session".to_string()];
        let mut pruned = vec![
            "t.opening_pruned = 1".to_string(),
            "t.session_id = :session".to_string(),
        ];
        if self.from.is_some() {
            // A mission opened by an event retention pruned: every event left is after it.
            opened.push(
                "e.session_sequence >= COALESCE((SELECT session_sequence FROM events
                     WHERE sequence = :from AND session_id = :session), 0)"
                    .into(),
            );
            pruned.push(format!("t.{} >= :from", self.table.key));
        }
        if self.before.is_some() {
            // The cursor is a row's key, an event of the session; any other number is placed
            // among the session's events by its sequence.
            opened.push(
                "e.session_sequence < COALESCE(
                     (SELECT session_sequence FROM events
                      WHERE sequence = :before AND session_id = :session),
                     (SELECT session_sequence + 1 FROM events
                      WHERE session_id = :session AND sequence < :before
                      ORDER BY session_sequence DESC LIMIT 1),
                     0)"
                .into(),
            );
            pruned.push(format!("t.{} < :before", self.table.key));
        }
        for (term, _) in &self.terms {
            opened.push(term.clone());
            pruned.push(term.clone());
        }
        let Table {
            name,
            key,
            by_order,
            pruned: pruned_index,
            ..
        } = self.table;
        let cols = self.table.of_t();
        let by_order = match by_order {
            Some(index) => format!("INDEXED BY {index}"),
            None => String::new(),
        };
        let opened = format!(
            "SELECT * FROM (SELECT {cols} FROM events e
                 JOIN {name} t {by_order} ON t.{key} = e.sequence
                 WHERE {terms} ORDER BY e.session_sequence {way} LIMIT {limit})",
            terms = opened.join(" AND "),
        );
        let pruned = format!(
            "SELECT * FROM (SELECT {cols} FROM {name} t INDEXED BY {pruned_index}
                 WHERE {terms} ORDER BY t.{key} {way} LIMIT {limit})",
            terms = pruned.join(" AND "),
        );
        let (first, second) = match pruned_first {
            true => (pruned, opened),
            false => (opened, pruned),
        };
        format!("{first} UNION ALL {second} LIMIT {limit}")
    }

    /// The named parameters of [`Scope::sql`], each once, then `extra`.
    pub fn params(&self, extra: &[(&'static str, Value)]) -> Vec<(&'static str, Value)> {
        let mut params = vec![(":session", Value::Text(self.session.clone()))];
        if let Some(from) = self.from {
            params.push((":from", Value::Integer(from)));
        }
        if let Some(before) = self.before {
            params.push((":before", Value::Integer(before)));
        }
        for (name, value) in self.terms.iter().filter_map(|(_, bound)| bound.as_ref()) {
            if !params.iter().any(|(n, _)| n == name) {
                params.push((name, value.clone()));
            }
        }
        params.extend(extra.iter().cloned());
        params
    }

    /// Runs `sql` (made from [`Scope::sql`]) with this scope's parameters and `extra`, each
    /// row read by `row`.
    pub fn query<T>(
        &self,
        conn: &Connection,
        sql: &str,
        extra: &[(&'static str, Value)],
        row: fn(&Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<Vec<T>> {
        let params = self.params(extra);
        conn.prepare_cached(sql)?
            .query_map(bound(&params).as_slice(), row)?
            .collect()
    }
}

/// `params` as rusqlite binds them by name.
pub fn bound<'a>(params: &'a [(&'static str, Value)]) -> Vec<(&'static str, &'a dyn ToSql)> {
    params.iter().map(|(n, v)| (*n, v as &dyn ToSql)).collect()
}

/// The plan of `sql` (made from `scope`) with a limit of 10, checked to read the session's
/// events and each part in its index's order as far as the limit: no table scanned, nothing
/// sorted. For the callers' own checks of which indexes it names.
#[cfg(test)]
pub fn plan_read_in_order(conn: &Connection, sql: &str, scope: &Scope) -> String {
    let params = scope.params(&[(":limit", Value::Integer(10))]);
    let plan = super::filter::plan_of(conn, sql, bound(&params).as_slice());
    assert!(plan.contains("SEARCH e USING"), "{sql}: {plan}");
    assert!(plan.contains("(session_id=?"), "{sql}: {plan}");
    let scans = plan.lines().filter(|l| l.starts_with("SCAN"));
    assert!(
        scans.clone().all(|l| l.starts_with("SCAN (subquery")),
        "{sql}: {plan}"
    );
    assert!(!plan.contains("TEMP B-TREE"), "{sql}: {plan}");
    plan
}
