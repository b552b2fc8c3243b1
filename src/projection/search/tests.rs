//! Unit tests of search: what text an event gives, typed words, cursors, and pages of hits
//! over a small projected log.

use super::plans::{parts, small_session};
use super::*;
use crate::event::StoredEvent;
use crate::projection::Parsed;
use rusqlite::{Connection, params};

fn event(source: &str, payload: &str) -> StoredEvent {
    StoredEvent {
        sequence: 1,
        event_id: "e1".into(),
        session_id: Some("s1".into()),
        session_sequence: Some(1),
        event_type: "PreToolUse".into(),
        source: source.into(),
        event_time: "2026-12-01T00:00:00.000Z".into(),
        received_at: "2026-12-01T00:00:00.000Z".into(),
        payload: payload.into(),
        origin: "here".into(),
    }
}

fn text(source: &str, payload: &str) -> Option<String> {
    let event = event(source, payload);
    text_of(&event, &Parsed::of(&event))
}

#[test]
fn a_tool_use_gives_its_tool_and_every_string_of_its_input_and_response() {
    let payload = r#"{"cwd":"/home/dev","sessionId":"s1","tool":"Bash","toolInput":{"command":"cargo test","description":"Run"},
        "toolResponse":{"stdout":"ok","interrupted":false,"files":["a.rs","b.rs"]},"transcriptPath":"/t.jsonl"}"#;
    // In key order, as payloads are stored.
    assert_eq!(
        text("hook", payload).unwrap(),
        "Bash\ncargo test\nRun\na.rs\nb.rs\nok"
    );
    assert_eq!(text("hook", r#"{"sessionId":"s1","cwd":"/x"}"#), None);
}

#[test]
fn coordination_outcomes_give_their_chat_and_session() {
    let payload = r#"{"chat":"dm:alice","sessionId":"s2","reason":"free","generation":3}"#;
    assert_eq!(text("coordination", payload).unwrap(), "dm:alice\nfree\ns2");
    // Elsewhere a session id is not text.
    assert_eq!(text("api", payload).unwrap(), "free");
}

#[test]
fn nested_fields_count_and_control_characters_and_long_strings_are_cut() {
    let long = "x".repeat(MAX_STRING_CHARS + 10);
    let payload = serde_json::json!({"works": [{"name": "Review\u{1}guide"}], "message": long});
    let got = text("api", &payload.to_string()).unwrap();
    assert_eq!(got.lines().next(), Some(&*"x".repeat(MAX_STRING_CHARS)));
    assert_eq!(got.lines().nth(1), Some("Review guide"));
    let huge: Vec<String> = (0..20).map(|_| "y".repeat(5000)).collect();
    let payload = serde_json::json!({"toolInput": {"parts": huge}});
    assert!(text("hook", &payload.to_string()).unwrap().len() <= MAX_TEXT_BYTES);
}

#[test]
fn typed_words_become_quoted_terms() {
    assert_eq!(words_to_fts("cargo test"), r#""cargo" "test""#);
    assert_eq!(words_to_fts("totals.rs"), r#""totals.rs""#);
    assert_eq!(
        words_to_fts(r#"say "hello there" rm -rf"#),
        r#""say" "hello there" "rm" "-rf""#
    );
    assert_eq!(words_to_fts(r#"it's a "stray"#), r#""it's" "a" "stray""#);
    assert_eq!(
        words_to_fts("tot* AND NEAR(x)"),
        r#""tot"* "AND" "NEAR(x)""#
    );
    assert_eq!(words_to_fts(r#"a"b"#), r#""a" "b""#);
    assert_eq!(words_to_fts(r#"-- * "" " "#), "");
    assert_eq!(words_to_fts("  "), "");
}

#[test]
fn cursors_round_trip() {
    for cursor in [Cursor::Before(42), Cursor::After(-3.250_000_1e-6, 7)] {
        assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
    }
    for bad in ["", "x", "0", "-1", "r:nan:1", "r:1", "r:1:x"] {
        assert_eq!(Cursor::decode(bad), None, "{bad}");
    }
}

/// A log of `n` hook events in sessions `a` (odd sequences) and `b` (even), each saying
/// "needle", projected and indexed as the writer would.
fn log(n: i64) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    super::register(&conn).unwrap();
    crate::migrations::create(&conn).unwrap();
    for sequence in 1..=n {
        let session = if sequence % 2 == 1 { "a" } else { "b" };
        let event = StoredEvent {
            sequence,
            event_id: format!("e{sequence}"),
            session_id: Some(session.into()),
            session_sequence: Some((sequence + 1) / 2),
            event_type: "PreToolUse".into(),
            source: "hook".into(),
            event_time: "2026-12-01T00:00:00.000Z".into(),
            received_at: "2026-12-01T00:00:00.000Z".into(),
            payload: format!(
                r#"{{"tool":"Bash","toolInput":{{"command":"echo needle {sequence}"}}}}"#
            ),
            origin: "here".into(),
        };
        conn.prepare_cached(
            "INSERT INTO events (sequence, event_id, session_id, session_sequence, type,
                 source, event_time, received_at, payload)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .unwrap()
        .execute(params![
            event.sequence,
            event.event_id,
            event.session_id,
            event.session_sequence,
            event.event_type,
            event.source,
            event.event_time,
            event.received_at,
            event.payload
        ])
        .unwrap();
        let parsed = Parsed::of(&event);
        crate::projection::apply_parsed(
            &crate::projection::tables::Live::new(&conn),
            &conn,
            &event,
            &parsed,
        )
        .unwrap();
        let texts: Vec<_> = text_to_index(&event, &parsed).into_iter().collect();
        write(&conn, &texts, event.sequence).unwrap();
    }
    conn
}

fn query(q: &str) -> Query {
    Query {
        expression: words_to_fts(q),
        session: None,
        event_type: None,
        source: None,
        origin: None,
        since: None,
        until: None,
        order: Order::Newest,
        limit: 20,
        cursor: None,
    }
}

/// Every page of `query`, as the sequences of each.
fn pages(conn: &Connection, mut query: Query) -> Vec<Vec<i64>> {
    let mut pages = Vec::new();
    loop {
        let page = search(conn, &query).unwrap();
        pages.push(page.hits.iter().map(|h| h.sequence).collect());
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => return pages,
        }
    }
}

#[test]
fn pages_go_on_below_their_cursor_with_nothing_skipped_or_repeated() {
    let conn = log(10);
    let mut q = query("needle");
    q.limit = 4;
    assert_eq!(
        pages(&conn, q.clone()),
        [vec![10, 9, 8, 7], vec![6, 5, 4, 3], vec![2, 1]]
    );
    // A filter no match passes: one empty page.
    q.event_type = Some("PreToolUse".into());
    q.source = Some("nowhere".into());
    assert_eq!(pages(&conn, q), [Vec::<i64>::new()]);
}

#[test]
fn a_small_session_is_searched_from_its_own_events_with_the_same_cursors() {
    let conn = log(12);
    let mut q = query("needle");
    q.session = Some("a".into());
    q.limit = 4;
    assert!(small_session(&conn, &q).unwrap());
    assert_eq!(pages(&conn, q.clone()), [vec![11, 9, 7, 5], vec![3, 1]]);
    q.session = Some("nobody".into());
    assert!(!small_session(&conn, &q).unwrap());
    assert_eq!(pages(&conn, q.clone()), [Vec::<i64>::new()]);
    q.session = Some("b".into());
    q.order = Order::Rank;
    let ranked = pages(&conn, q);
    assert_eq!(ranked.concat().len(), 6, "{ranked:?}");
}

#[test]
fn snippets_become_parts() {
    assert_eq!(
        parts("\u{1}cargo\u{2} test …"),
        vec![
            Part {
                text: "cargo".into(),
                matched: true
            },
            Part {
                text: " test …".into(),
                matched: false
            }
        ]
    );
}

#[test]
fn by_rank_only_the_newest_window_of_matches_is_scored_and_paged() {
    let n = super::plans::RANK_WINDOW + 3;
    let conn = log(n);
    let mut q = query("needle");
    q.order = Order::Rank;
    q.limit = 1000;
    let mut found = pages(&conn, q).concat();
    found.sort_unstable();
    // The three oldest matches are outside the window; every newer one is on some page once.
    assert_eq!(found, (4..=n).collect::<Vec<_>>());
}
