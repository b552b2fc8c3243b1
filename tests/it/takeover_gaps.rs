//! Seed 002's gaps that open by themselves (REQ-HOOKS-17): a takeover from a stopped or hung
//! owner opens one from the positions its last heartbeat recorded, a first owner on an account
//! with events opens one from the newest, each in the acquire's own transaction. "A minute
//! later" is the server's clock moved forward, never a sleep.

use crate::common;

use common::{TestApp, assert_rebuilds_to_live, spawn_app, spawn_app_with};
use hooklog::event::time::Clock;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

async fn post(app: &TestApp, path: &str, body: Value) -> (StatusCode, Value) {
    app.post_raw(path, "application/json", body.to_string().into_bytes())
        .await
}

async fn ok(app: &TestApp, path: &str, body: Value) -> Value {
    let (status, answer) = post(app, path, body).await;
    assert_eq!(status, StatusCode::OK, "{path}: {answer}");
    answer
}

fn acquire(platform: &str, account: &str, pid: i64) -> Value {
    json!({"platform": platform, "account": account, "pid": pid, "hostname": "box"})
}

#[tokio::test]
async fn a_takeover_opens_a_gap_from_the_last_heartbeats_positions() {
    let clock = Clock::default();
    let shared = clock.clone();
    let app = spawn_app_with(move |c| c.clock = shared).await;
    let first = ok(&app, "/owners/acquire", acquire("x", "matt", 1)).await;
    assert_eq!(
        first["gap"],
        Value::Null,
        "a first owner of an account without events"
    );
    let positions = json!({"sequenceId": "1723.99", "dm:alice": 1234});
    let beat = ok(
        &app,
        "/owners/x/matt/heartbeat",
        json!({"generation": 1, "positions": positions}),
    )
    .await;
    assert_eq!(
        beat["positions"],
        json!({"dm:alice": "1234", "sequenceId": "1723.99"})
    );
    // A heartbeat without positions keeps the last ones.
    clock.advance(Duration::from_secs(5));
    let beat = ok(&app, "/owners/x/matt/heartbeat", json!({"generation": 1})).await;
    assert_eq!(beat["positions"]["dm:alice"], "1234");
    let last_heard = beat["lastHeartbeatAt"].clone();

    clock.advance(Duration::from_secs(61));
    let second = ok(&app, "/owners/acquire", acquire("x", "matt", 2)).await;
    assert_eq!(second["generation"], 2);
    assert_eq!(
        second["positions"],
        Value::Null,
        "a new owner starts without positions"
    );
    let gap = &second["gap"];
    assert_eq!(gap["created"], true, "{second}");
    assert_eq!(gap["status"], "open");
    assert_eq!(gap["cause"], "takeover");
    assert_eq!(
        gap["fromPositions"],
        json!({"dm:alice": "1234", "sequenceId": "1723.99"})
    );
    assert_eq!(gap["fromHeartbeatAt"], last_heard);
    assert_eq!(gap["fromEventId"], Value::Null);
    // In the acquire's transaction: one batch, so one received_at, in this order.
    let rows: Vec<(String, String)> = app
        .db()
        .prepare("SELECT type, received_at FROM events WHERE sequence > 3 ORDER BY sequence")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let types: Vec<&str> = rows.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, ["owner_hung", "owner_acquired", "gap_opened"]);
    assert!(rows.iter().all(|(_, at)| *at == rows[0].1));
    let (_, behind) = app.get("/accounts/x/matt/behind").await;
    assert_eq!(
        (behind["behind"].as_bool(), behind["refused"].as_bool()),
        (Some(true), Some(false))
    );

    // The state machine works on it unchanged; a refused catch-up stays refused across the
    // next takeover (no second gap), and a stopped (released) owner is taken over too.
    let id = gap["id"].as_str().unwrap().to_string();
    ok(
        &app,
        &format!("/gaps/{id}/refuse"),
        json!({"detail": "rate limited"}),
    )
    .await;
    ok(&app, "/owners/x/matt/release", json!({"generation": 2})).await;
    let third = ok(&app, "/owners/acquire", acquire("x", "matt", 3)).await;
    assert_eq!(
        (third["gap"]["id"].as_str(), &third["gap"]["created"]),
        (Some(id.as_str()), &json!(false))
    );
    assert_eq!(third["gap"]["status"], "refused");
    ok(&app, &format!("/gaps/{id}/resume"), json!({"by": "matt"})).await;
    ok(
        &app,
        &format!("/gaps/{id}/close"),
        json!({"toPosition": "1724"}),
    )
    .await;
    ok(&app, "/owners/x/matt/release", json!({"generation": 3})).await;
    let fourth = ok(&app, "/owners/acquire", acquire("x", "matt", 4)).await;
    assert_eq!(
        fourth["gap"]["created"], true,
        "a stopped owner's account is behind again"
    );
    assert_eq!(
        fourth["gap"]["fromPositions"],
        Value::Null,
        "owner 3 never reported positions"
    );
    let dir = app.stop().await;
    assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}

#[tokio::test]
async fn a_first_owner_on_an_account_with_events_opens_a_gap_from_the_newest() {
    let app = spawn_app().await;
    let message = |id: &str, account: &str, position: Value| {
        json!({"id": id, "type": "message", "source": "watch",
               "payload": {"platform": "discord", "account": account, "position": position,
                           "text": "hi"}})
    };
    let (status, body) = app
        .post_json(&json!([
            message("m1", "a1", json!("1100")),
            message("m2", "a1", json!(1105)),
            message("m3", "other", json!("9")),
            {"type": "note", "payload": {"account": "a1"}},
        ]))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let owner = ok(&app, "/owners/acquire", acquire("discord", "a1", 7)).await;
    let gap = &owner["gap"];
    assert_eq!(gap["created"], true, "{owner}");
    assert_eq!(gap["cause"], "first_owner");
    assert_eq!(gap["fromEventId"], "m2");
    assert_eq!(gap["fromPosition"], "1105");
    let lonely = ok(&app, "/owners/acquire", acquire("discord", "quiet", 8)).await;
    assert_eq!(lonely["gap"], Value::Null, "no events, nothing to catch up");
    let (_, behind) = app.get("/accounts/discord/a1/behind").await;
    assert_eq!(behind["behind"], true);
    let (_, gaps) = app.get("/gaps?platform=discord").await;
    assert_eq!(gaps["gaps"].as_array().unwrap().len(), 1);
    let dir = app.stop().await;
    assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}

#[tokio::test]
async fn heartbeat_positions_are_checked() {
    let app = spawn_app().await;
    ok(&app, "/owners/acquire", acquire("x", "p", 1)).await;
    for positions in [
        json!([1, 2]),
        json!("1234"),
        json!({}),
        json!({"dm": true}),
        json!({"dm": ""}),
        json!({"": "1"}),
        Value::Object([("k".repeat(300), json!("1"))].into_iter().collect()),
    ] {
        let (status, body) = post(
            &app,
            "/owners/x/p/heartbeat",
            json!({"generation": 1, "positions": positions}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{positions}: {body}");
        assert_eq!(body["error"], "invalid_request");
    }
    let (_, owner) = app.get("/owners/x/p").await;
    assert_eq!(owner["positions"], Value::Null, "nothing was recorded");
}
