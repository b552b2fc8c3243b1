//! The `WHERE` clause of a list route: one `column = ?n` term for each filter given, and none
//! for a filter left out. A term written `(?1 IS NULL OR column = ?1)` works for both, but it
//! hides the column from SQLite's planner, which then scans the whole table (every tool use of
//! the log, sorted, for `GET /tool-uses?session=...`) instead of searching its index.

use rusqlite::types::Value;

/// Terms and the values they bind, in order.
#[derive(Default)]
pub struct Where {
    terms: Vec<String>,
    values: Vec<Value>,
}

impl Where {
    /// `column = ?` when `value` is given.
    pub fn eq(self, column: &str, value: Option<&str>) -> Where {
        match value {
            Some(value) => self.bind(&format!("{column} = ?"), value),
            None => self,
        }
    }

    /// A term with one `?`, bound to `value`.
    pub fn bind(mut self, term: &str, value: &str) -> Where {
        self.values.push(Value::Text(value.to_string()));
        let number = format!("?{}", self.values.len());
        self.terms.push(term.replacen('?', &number, 1));
        self
    }

    /// A term with one `?`, bound to the integer `value`.
    pub fn bind_integer(mut self, term: &str, value: i64) -> Where {
        self.values.push(Value::Integer(value));
        let number = format!("?{}", self.values.len());
        self.terms.push(term.replacen('?', &number, 1));
        self
    }

    /// A term of its own (with no value), such as `status = 'running'`, which a partial index
    /// on that condition serves.
    pub fn term(mut self, term: &str) -> Where {
        self.terms.push(term.to_string());
        self
    }

    /// ` WHERE a = ?1 AND ...`, or nothing; then `tail` (an `ORDER BY`), with `LIMIT` bound last.
    pub fn sql(&self, select: &str, tail: &str) -> String {
        let mut sql = select.to_string();
        if !self.terms.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&self.terms.join(" AND "));
        }
        sql.push(' ');
        sql.push_str(tail);
        sql.push_str(&format!(" LIMIT ?{}", self.values.len() + 1));
        sql
    }

    /// The values to bind, then `limit`.
    pub fn values(self, limit: u32) -> Vec<Value> {
        let mut values = self.values;
        values.push(Value::Integer(limit.into()));
        values
    }
}

/// Where a newest-first page read from a window of at most `window` rows goes on once it held
/// fewer rows than asked for: `keys` selects the window's keys newest first, as `key`. The
/// window's oldest key when it was full (older rows may match), or `None` when it reached the
/// oldest row (the end). Read in the page's own transaction, so the window is the page's.
pub fn past_window(
    conn: &rusqlite::Connection,
    keys: &str,
    params: impl rusqlite::Params,
    window: u32,
) -> rusqlite::Result<Option<i64>> {
    let (read, oldest): (u32, Option<i64>) = conn
        .prepare_cached(&format!("SELECT COUNT(*), MIN(key) FROM ({keys})"))?
        .query_row(params, |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(oldest.filter(|_| read == window))
}

/// The query plan of a list statement (`EXPLAIN QUERY PLAN`), one step a line, for tests that
/// check it searches an index.
#[cfg(test)]
pub fn plan(conn: &rusqlite::Connection, filter: Where, sql: impl Fn(&Where) -> String) -> String {
    let sql = sql(&filter);
    plan_of(conn, &sql, rusqlite::params_from_iter(filter.values(10)))
}

/// The query plan of `sql` with `params` bound, one step a line.
#[cfg(test)]
pub fn plan_of(conn: &rusqlite::Connection, sql: &str, params: impl rusqlite::Params) -> String {
    let mut statement = conn
        .prepare_cached(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap();
    let steps = statement
        .query_map(params, |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap);
    steps.map(|step| step + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_given_filters_make_terms_numbered_in_order() {
        let filter = Where::default()
            .eq("state", None)
            .eq("session_id", Some("s"))
            .term("status = 'running'")
            .bind("x = (SELECT y FROM t WHERE id = ?)", "m")
            .bind("z >= ?", "m");
        assert_eq!(
            filter.sql("SELECT * FROM t", "ORDER BY n"),
            "SELECT * FROM t WHERE session_id = ?1 AND status = 'running' \
             AND x = (SELECT y FROM t WHERE id = ?2) AND z >= ?3 ORDER BY n LIMIT ?4"
        );
        let values = filter.values(5);
        assert_eq!(values.len(), 4);
        assert_eq!(values[3], Value::Integer(5));
        assert_eq!(
            Where::default().sql("SELECT 1", "ORDER BY 1"),
            "SELECT 1 ORDER BY 1 LIMIT ?1"
        );
    }
}
