//! The `usage` projection (`migrations/0014_usage.sql`): the tokens of every model call read
//! from a transcript (`ingest::transcript`), one row per message key. The several records of
//! one call (Claude Code writes a streamed message as several lines sharing `message.id` and
//! `requestId`; Codex may repeat a token count) name the same key, and each count keeps the
//! largest any of them gave, which is the final one: counts only grow while a message streams,
//! and taking the largest makes the order the records arrive in irrelevant.
//!
//! The read side sums the rows by day, session, model, project or turn ([`totals`]); cost is
//! added when read, from the price table ([`super::prices`]).

use super::view::View;
use crate::event::StoredEvent;
use crate::ingest::transcript::Usage;
use rusqlite::{Connection, params};

/// Counts a transcript event's usage under its message key, if it carries any.
pub fn apply(conn: &Connection, event: &StoredEvent, view: &View) -> rusqlite::Result<()> {
    let (Some(key), Some(usage)) = (view.text("usageKey"), view.get("usage")) else {
        return Ok(());
    };
    let Some(session) = event.session_id.as_deref() else {
        return Ok(());
    };
    let u = Usage::from_json(usage);
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT INTO usage (message_key, session_id, cli, model, project, origin, agent_id, turn,
                            event_time, input_tokens, output_tokens, cache_write_5m_tokens,
                            cache_write_1h_tokens, cache_read_tokens, reasoning_tokens, records)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, 1)
         ON CONFLICT (message_key) DO UPDATE SET
             input_tokens = MAX(input_tokens, excluded.input_tokens),
             output_tokens = MAX(output_tokens, excluded.output_tokens),
             cache_write_5m_tokens = MAX(cache_write_5m_tokens, excluded.cache_write_5m_tokens),
             cache_write_1h_tokens = MAX(cache_write_1h_tokens, excluded.cache_write_1h_tokens),
             cache_read_tokens = MAX(cache_read_tokens, excluded.cache_read_tokens),
             reasoning_tokens = MAX(reasoning_tokens, excluded.reasoning_tokens),
             event_time = MIN(event_time, excluded.event_time),
             records = records + 1",
    )?
    .execute(params![
        key,
        session,
        view.text("cli").unwrap_or(""),
        view.text("model").unwrap_or(""),
        view.text("cwd"),
        event.origin,
        view.text("agentId"),
        view.text("turn"),
        event.event_time,
        n(u.input),
        n(u.output),
        n(u.cache_write_5m),
        n(u.cache_write_1h),
        n(u.cache_read),
        n(u.reasoning),
    ])?;
    Ok(())
}

/// What the rows are summed by.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// The calendar day of the call (UTC, or the offset asked for).
    Day,
    Session,
    Model,
    /// The working directory the call was made in.
    Project,
    /// The prompt that opened the call's turn (its subagents' calls included).
    Turn,
    /// The hooklog that first stored it.
    Origin,
}

impl By {
    /// The SQL of the key (`?1` is the day's offset modifier, e.g. `+60 minutes`).
    fn key(self) -> &'static str {
        match self {
            By::Day => "date(event_time, ?1)",
            By::Session => "session_id",
            By::Model => "model",
            By::Project => "COALESCE(project, '')",
            By::Turn => "COALESCE(turn, '')",
            By::Origin => "origin",
        }
    }
}

/// Which rows to sum.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Calls at or after this time (RFC 3339, as stored).
    pub since: Option<String>,
    pub session: Option<String>,
    /// Minutes east of UTC that days are counted in.
    pub offset_minutes: i32,
}

/// Summed token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub usage: Usage,
    /// Model calls counted.
    pub calls: u64,
}

impl Tokens {
    pub fn add(&mut self, other: &Tokens) {
        self.usage.add(&other.usage);
        self.calls += other.calls;
    }
}

/// One key's tokens for one model (cost is per model, so the models stay apart here).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    pub model: String,
    pub tokens: Tokens,
}

/// Minutes east of UTC of an offset written `Z`, `UTC`, `+02:00`, `-0530` or `+2`; at most 14
/// hours either way.
pub fn parse_offset(text: &str) -> Option<i32> {
    if matches!(text, "Z" | "z" | "UTC" | "utc") {
        return Some(0);
    }
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let (hours, minutes) = match rest.split_once(':') {
        Some((h, m)) => (h, m),
        None if rest.len() == 4 => rest.split_at(2),
        None => (rest, "0"),
    };
    let ok = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !ok(hours) || !ok(minutes) {
        return None;
    }
    let (hours, minutes): (i32, i32) = (hours.parse().ok()?, minutes.parse().ok()?);
    let total = hours * 60 + minutes;
    (minutes < 60 && total <= 14 * 60).then_some(sign * total)
}

/// The rows matching `filter`, summed by `by` and model, in key order.
pub fn totals(conn: &Connection, by: By, filter: &Filter) -> rusqlite::Result<Vec<Row>> {
    let modifier = format!("{:+} minutes", filter.offset_minutes);
    let statement = format!(
        "SELECT {key} AS k, model, SUM(input_tokens), SUM(output_tokens),
                SUM(cache_write_5m_tokens), SUM(cache_write_1h_tokens), SUM(cache_read_tokens),
                SUM(reasoning_tokens), COUNT(*)
         FROM usage
         WHERE (?2 IS NULL OR event_time >= ?2) AND (?3 IS NULL OR session_id = ?3)
           AND ?1 = ?1
         GROUP BY k, model ORDER BY k, model",
        key = by.key()
    );
    let mut statement = conn.prepare_cached(&statement)?;
    let rows = statement.query_map(params![modifier, filter.since, filter.session], |r| {
        let n = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
        Ok(Row {
            key: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
            model: r.get(1)?,
            tokens: Tokens {
                usage: Usage {
                    input: n(2)?,
                    output: n(3)?,
                    cache_write_5m: n(4)?,
                    cache_write_1h: n(5)?,
                    cache_read: n(6)?,
                    reasoning: n(7)?,
                },
                calls: n(8)?,
            },
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(sequence: i64, time: &str, payload: &str) -> StoredEvent {
        StoredEvent {
            sequence,
            event_id: format!("e{sequence}"),
            session_id: Some("s1".into()),
            session_sequence: Some(sequence),
            event_type: "TranscriptMessage".into(),
            source: "transcript".into(),
            event_time: time.into(),
            received_at: time.into(),
            origin: "here".into(),
            payload: payload.into(),
        }
    }

    #[test]
    fn offsets_read_in_the_usual_forms_and_nothing_else() {
        assert_eq!(parse_offset("Z"), Some(0));
        assert_eq!(parse_offset("+02:00"), Some(120));
        assert_eq!(parse_offset("-0530"), Some(-330));
        assert_eq!(parse_offset("+2"), Some(120));
        for bad in [
            "",
            "02:00",
            "+15:00",
            "+02:60",
            "+a",
            "Europe/Paris",
            "+02:00:00",
        ] {
            assert_eq!(parse_offset(bad), None, "{bad}");
        }
    }

    #[test]
    fn streamed_duplicates_count_once_with_their_final_usage_in_any_order() {
        let conn = Connection::open_in_memory().unwrap();
        crate::migrations::create(&conn).unwrap();
        let partial = r#"{"cli":"claude-code","model":"m","usageKey":"k1","usage":{"inputTokens":4,"outputTokens":12,"cacheReadTokens":100}}"#;
        let last = r#"{"cli":"claude-code","model":"m","usageKey":"k1","usage":{"inputTokens":4,"outputTokens":180,"cacheReadTokens":100}}"#;
        let other = r#"{"cli":"claude-code","model":"m","usageKey":"k2","usage":{"inputTokens":1,"outputTokens":2}}"#;
        // The final line first, then the partial one: the result is the same.
        for (i, (time, payload)) in [
            ("2026-11-02T09:00:02.000Z", last),
            ("2026-11-02T09:00:01.000Z", partial),
            ("2026-11-03T00:30:00.000Z", other),
        ]
        .into_iter()
        .enumerate()
        {
            let e = event(i as i64 + 1, time, payload);
            apply(&conn, &e, &View::parse(&e.payload)).unwrap();
        }
        let days = totals(&conn, By::Day, &Filter::default()).unwrap();
        assert_eq!(days.len(), 2);
        assert_eq!(days[0].key, "2026-11-02");
        assert_eq!(days[0].tokens.calls, 1);
        assert_eq!(days[0].tokens.usage.output, 180);
        assert_eq!(days[0].tokens.usage.input, 4);
        // One hour west of UTC, the second call is on the first day too.
        let west = Filter {
            offset_minutes: -60,
            ..Filter::default()
        };
        let days = totals(&conn, By::Day, &west).unwrap();
        assert_eq!(days.len(), 1);
        assert_eq!(days[0].tokens.usage.output, 182);
        let first: String = conn
            .query_row(
                "SELECT event_time FROM usage WHERE message_key = 'k1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(first, "2026-11-02T09:00:01.000Z");
    }
}
