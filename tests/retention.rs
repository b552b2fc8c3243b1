//! Retention through the real server and file: the writer prunes the oldest events, positions
//! keep counting (globally and per session, across a restart), a cursor into pruned history is
//! refused on a session stream and announced with `STREAM_GAP` on the global stream.

mod common;

use common::sse::SseReader;
use common::{spawn_app_with, start, wait_for};
use hooklog::config::Config;
use hooklog::store::retention::Retention;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

fn count(app: &common::TestApp) -> (i64, Option<i64>) {
    app.db()
        .query_row("SELECT COUNT(*), MIN(sequence) FROM events", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
}

#[tokio::test]
async fn pruning_by_count_keeps_positions_counting_and_refuses_pruned_cursors() {
    let retention = Retention {
        max_events: Some(100),
        max_age: None,
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    app.post_session_events("a", 50).await;
    for _ in 0..2 {
        app.post_session_events("b", 100).await;
    }
    wait_for(WAIT, "pruning to 100 events", || {
        count(&app) == (100, Some(151))
    })
    .await;

    // Session a lost every event, but its numbering and the log's go on.
    let ack = app.post_session_events("a", 1).await;
    assert_eq!(ack[0]["sequence"], 251);
    assert_eq!(ack[0]["sessionSequence"], 51);
    let pruned: i64 = app
        .db()
        .query_row(
            "SELECT last_session_sequence FROM pruned_sessions WHERE session_id = 'a'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(pruned, 50);

    // A session cursor inside pruned history: refused, with the bounds.
    let response = app
        .stream("/sessions/a/events?after_sequence=10", &[])
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["outcome"], "CURSOR_STALE");
    assert_eq!(body["firstAvailableSequence"], 51);
    assert_eq!(body["headSequence"], 51);
    // The cursor at the boundary is fine.
    let mut reader = SseReader::new(
        app.stream("/sessions/a/events?after_sequence=50", &[])
            .await,
    );
    assert_eq!(reader.next_event(WAIT).await.unwrap().position(), 51);

    // The global stream says what was lost, then continues from the first retained event.
    let mut global = SseReader::new(app.stream("/events?after_sequence=20", &[]).await);
    let gap = global.next_event(WAIT).await.unwrap();
    assert_eq!(gap.event.as_deref(), Some("STREAM_GAP"));
    assert_eq!(gap.id.as_deref(), Some("0"));
    let first_kept = count(&app).1.unwrap();
    assert_eq!(
        gap.envelope(),
        json!({"type": "STREAM_GAP", "fromSequence": 21, "toSequence": first_kept - 1, "firstAvailableSequence": first_kept})
    );
    assert_eq!(
        global.next_event(WAIT).await.unwrap().position(),
        first_kept
    );
    let (_, page) = app.get("/events?after_sequence=20&limit=1").await;
    assert_eq!(
        page["firstAvailableSequence"], first_kept,
        "a JSON page shows the boundary too"
    );
    assert_eq!(page["events"][0]["context"]["sequence"], first_kept);

    // After a restart the numbering still continues: the pruned head is in meta.
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    let app = start(
        Config {
            retention,
            ..Config::for_path(&db_path)
        },
        dir,
    )
    .await;
    let ack = app.post_session_events("a", 1).await;
    assert_eq!(ack[0]["sequence"], 252);
    assert_eq!(ack[0]["sessionSequence"], 52);
}

#[tokio::test]
async fn pruning_by_age_empties_an_idle_log_and_numbering_continues() {
    let retention = Retention {
        max_events: None,
        max_age: Some(Duration::from_millis(300)),
    };
    let app = spawn_app_with(|c| c.retention = retention).await;
    app.post_session_events("s", 10).await;
    // No more events arrive: the writer's periodic step prunes them once they are old enough.
    wait_for(WAIT, "every event to age out", || count(&app).0 == 0).await;
    let (_, health) = app.get("/health").await;
    assert_eq!(health["headSequence"], 10);
    let ack = app.post_session_events("s", 1).await;
    assert_eq!(ack[0]["sequence"], 11);
    assert_eq!(ack[0]["sessionSequence"], 11);
    let probe: Value = app.probe("/sessions/s/events").await.json().await.unwrap();
    assert_eq!(probe["outcome"], "STREAM_READY");
    assert_eq!(probe["firstAvailableSequence"], 11);
}
