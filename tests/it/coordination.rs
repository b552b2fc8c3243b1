//! Coordination over HTTP (seed 002): watcher owners, chat claims, catch-up gaps and alert
//! acknowledgements, decided in the writer's transaction. "A minute later" is the server's
//! clock moved forward (`Config::clock`), never a sleep.

use crate::common;

use common::{TestApp, dump_projections, spawn_app, spawn_app_with};
use hooklog::event::time::Clock;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

async fn app_with_clock() -> (TestApp, Clock) {
    let clock = Clock::default();
    let shared = clock.clone();
    let app = spawn_app_with(move |c| c.clock = shared).await;
    (app, clock)
}

async fn post(app: &TestApp, path: &str, body: Value) -> (StatusCode, Value) {
    app.post_raw(path, "application/json", body.to_string().into_bytes())
        .await
}

fn count(app: &TestApp, sql: &str) -> i64 {
    app.db().query_row(sql, [], |r| r.get(0)).unwrap()
}

fn acquire(pid: i64) -> Value {
    json!({"platform": "x", "account": "matt", "pid": pid, "hostname": "box",
           "relayPort": 4100, "relayToken": "tok-secret"})
}

#[tokio::test]
async fn twenty_racing_acquires_make_exactly_one_owner() {
    let app = spawn_app().await;
    let results = futures_util::future::join_all(
        (1..=20).map(|pid| post(&app, "/owners/acquire", acquire(pid))),
    )
    .await;
    let winners: Vec<&Value> = results
        .iter()
        .filter(|(s, _)| *s == StatusCode::OK)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    assert_eq!(winners[0]["generation"], 1);
    for (status, body) in results.iter().filter(|(s, _)| *s != StatusCode::OK) {
        assert_eq!(*status, StatusCode::CONFLICT);
        assert_eq!(body["error"], "watcherAlreadyRunning");
        assert_eq!(body["owner"]["pid"], winners[0]["pid"]);
    }
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM events WHERE type = 'owner_acquired'"
        ),
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM events WHERE type = 'owner_refused'"
        ),
        19
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM alerts WHERE kind = 'watcherAlreadyRunning'"
        ),
        19
    );
    // The token is stored as its hash only, and never sent back.
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM events WHERE payload LIKE '%tok-secret%'"
        ),
        0
    );
    assert!(winners[0].get("relayToken").is_none());
    assert_eq!(winners[0]["hasRelayToken"], true);
    let (_, ok) = post(
        &app,
        "/owners/x/matt/verify-token",
        json!({"token": "tok-secret"}),
    )
    .await;
    assert_eq!(ok["valid"], true);
    let (_, bad) = post(
        &app,
        "/owners/x/matt/verify-token",
        json!({"token": "guess"}),
    )
    .await;
    assert_eq!(bad["valid"], false);
}

#[tokio::test]
async fn a_silent_owner_is_taken_over_and_its_old_generation_refused() {
    let (app, clock) = app_with_clock().await;
    let (status, first) = post(&app, "/owners/acquire", acquire(100)).await;
    assert_eq!(status, StatusCode::OK);
    // Heartbeats keep it live past 60 s in all.
    clock.advance(Duration::from_secs(40));
    let (status, beat) = post(
        &app,
        "/owners/x/matt/heartbeat",
        json!({"generation": 1, "attached": 3}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{beat}");
    assert_eq!(beat["attached"], 3);
    clock.advance(Duration::from_secs(40));
    let (status, _) = post(&app, "/owners/acquire", acquire(200)).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "heard from 40 s ago: still live"
    );

    // 61 s of silence: hung, then taken over with the next generation.
    clock.advance(Duration::from_secs(61));
    let (_, shown) = app.get("/owners/x/matt").await;
    assert_eq!(shown["status"], "hung");
    let (status, second) = post(&app, "/owners/acquire", acquire(300)).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["generation"], 2);
    assert_eq!(second["pid"], 300);
    assert_eq!(second["status"], "live");
    let types: Vec<String> =
        app.strings("SELECT type FROM events WHERE type LIKE 'owner_%' ORDER BY sequence");
    assert_eq!(
        types,
        [
            "owner_acquired",
            "owner_heartbeat",
            "owner_refused",
            "owner_hung",
            "owner_acquired"
        ]
    );
    let (_, hung) = app.get("/alerts?kind=hungOwner").await;
    assert_eq!(hung["alerts"][0]["details"]["generation"], 1);

    // The old process wakes up: its generation no longer holds the account.
    let (status, body) = post(&app, "/owners/x/matt/heartbeat", json!({"generation": 1})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"], "notOwner");
    assert_eq!(body["owner"]["generation"], 2);
    let (status, _) = post(&app, "/owners/x/matt/release", json!({"generation": 1})).await;
    assert_eq!(status, StatusCode::CONFLICT);

    // Only the holder releases; the next owner then starts without a takeover.
    let (status, released) = post(&app, "/owners/x/matt/release", json!({"generation": 2})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(released["status"], "released");
    let (status, third) = post(&app, "/owners/acquire", acquire(400)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(third["generation"], 3);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM events WHERE type = 'owner_hung'"
        ),
        1
    );
    let (_, owners) = app.get("/owners").await;
    assert_eq!(owners["owners"].as_array().unwrap().len(), 1);
    assert_ne!(
        third["startedAt"], first["startedAt"],
        "a new owner starts anew"
    );
}

#[tokio::test]
async fn twenty_racing_claims_make_one_holder_and_nineteen_refusals_all_logged() {
    let app = spawn_app().await;
    let results = futures_util::future::join_all((0..20).map(|i| {
        post(
            &app,
            "/claims",
            json!({"chat": "dm:alice", "sessionId": format!("s{i}")}),
        )
    }))
    .await;
    let granted: Vec<&Value> = results
        .iter()
        .filter(|(s, _)| *s == StatusCode::OK)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(granted.len(), 1, "{results:?}");
    let holder = granted[0]["sessionId"].as_str().unwrap();
    for (status, body) in results.iter().filter(|(s, _)| *s != StatusCode::OK) {
        assert_eq!(*status, StatusCode::CONFLICT);
        assert_eq!(body["error"], "chatClaimedElsewhere");
        assert_eq!(body["holder"]["sessionId"], holder);
    }
    let (_, actions) = app.get("/actions?chat=dm:alice").await;
    let actions = actions["actions"].as_array().unwrap();
    assert_eq!(
        actions.len(),
        20,
        "every claim and refusal is in the action log"
    );
    assert_eq!(actions[0]["type"], "claim_granted");
    assert!(actions[1..].iter().all(|a| a["type"] == "claim_refused"));
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM events WHERE type LIKE 'claim_%'"
        ),
        20
    );
}

#[tokio::test]
async fn claims_renew_expire_free_themselves_when_their_session_ends_and_release() {
    let (app, clock) = app_with_clock().await;
    let claim = |chat: &str, session: &str, ttl: i64| json!({"chat": chat, "sessionId": session, "ttlSeconds": ttl});
    let (_, first) = post(&app, "/claims", claim("c1", "s1", 30)).await;
    assert_eq!(
        (&first["generation"], &first["active"]),
        (&json!(1), &json!(true))
    );
    // The holder claiming again renews it, with the chat's next generation.
    clock.advance(Duration::from_secs(20));
    let (status, renewed) = post(&app, "/claims", claim("c1", "s1", 30)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(renewed["generation"], 2);
    assert!(renewed["expiresAt"].as_str() > first["expiresAt"].as_str());
    // Expired: free for anyone.
    clock.advance(Duration::from_secs(31));
    let (_, listed) = app.get("/claims").await;
    assert_eq!(
        listed["claims"],
        json!([]),
        "an expired claim is not active"
    );
    let (_, all) = app.get("/claims?all=true").await;
    assert_eq!(all["claims"].as_array().unwrap().len(), 1);
    let (status, taken) = post(&app, "/claims", claim("c1", "s2", 600)).await;
    assert_eq!(status, StatusCode::OK, "{taken}");
    assert_eq!(
        (&taken["sessionId"], &taken["generation"]),
        (&json!("s2"), &json!(3))
    );

    // A claim whose session has ended frees itself (normalized ended, or a SessionEnd hook).
    let (status, _) = post(&app, "/claims", claim("c1", "s3", 600)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = post(
        &app,
        "/event/normalized",
        json!({"type": "ended", "sessionId": "s2", "timestamp": 1_764_500_000_000_i64}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, shown) = app.get("/claims/c1").await;
    assert_eq!(
        (&shown["sessionEnded"], &shown["active"]),
        (&json!(true), &json!(false))
    );
    let (status, freed) = post(&app, "/claims", claim("c1", "s3", 600)).await;
    assert_eq!(status, StatusCode::OK, "{freed}");
    assert_eq!(freed["sessionId"], "s3");
    let (_, hooked) = post(&app, "/claims", claim("c2", "h1", 600)).await;
    assert_eq!(hooked["active"], true);
    app.post_hook(
        "/event",
        &json!({"hook_event_name": "SessionEnd", "session_id": "h1"}),
    )
    .await;
    let (status, _) = post(&app, "/claims", claim("c2", "h2", 600)).await;
    assert_eq!(status, StatusCode::OK);

    // Only the holder releases.
    let release = |session: &str, outcome: &str| json!({"sessionId": session, "outcome": outcome});
    let (status, body) = post(&app, "/claims/c1/release", release("s2", "sent")).await;
    assert_eq!(
        (status, &body["error"]),
        (StatusCode::CONFLICT, &json!("notHolder"))
    );
    let (status, body) = post(&app, "/claims/c1/release", release("s3", "sent")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&body["state"], &body["outcome"]),
        (&json!("released"), &json!("sent"))
    );
    let (status, _) = post(&app, "/claims/nowhere/release", release("s3", "sent")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = post(&app, "/claims/c1/release", release("s3", "exploded")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (_, actions) = app.get("/actions?chat=c1").await;
    let kinds: Vec<&Value> = actions["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["type"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("claim_granted"),
            &json!("claim_renewed"),
            &json!("claim_granted"),
            &json!("claim_refused"),
            &json!("claim_granted"),
            &json!("claim_released")
        ]
    );
    let reasons: Vec<&Value> = actions["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] == "claim_granted")
        .map(|a| &a["payload"]["reason"])
        .collect();
    assert_eq!(
        reasons,
        [&json!("free"), &json!("expired"), &json!("holder_ended")]
    );
}

#[tokio::test]
async fn the_gap_state_machine_allows_its_moves_and_refuses_the_rest() {
    let app = spawn_app().await;
    let open =
        json!({"platform": "discord", "account": "a1", "reason": "takeover", "fromPosition": 1234});
    let (status, gap) = post(&app, "/gaps", open.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&gap["status"], &gap["created"], &gap["fromPosition"]),
        (&json!("open"), &json!(true), &json!("1234"))
    );
    let id = gap["id"].as_str().unwrap().to_string();
    let (_, again) = post(&app, "/gaps", open.clone()).await;
    assert_eq!(
        (&again["id"], &again["created"]),
        (&json!(id), &json!(false)),
        "one open gap per account"
    );

    let moves = |id: &str| {
        [
            (format!("/gaps/{id}/close"), json!({"toPosition": "1300"})),
            (
                format!("/gaps/{id}/refuse"),
                json!({"detail": "rate limited by discord"}),
            ),
            (format!("/gaps/{id}/resume"), json!({"by": "matt"})),
        ]
    };
    // open: resume is refused; refuse is allowed.
    let [close, refuse, resume] = moves(&id);
    let (status, body) = post(&app, &resume.0, resume.1.clone()).await;
    assert_eq!(
        (status, &body["error"]),
        (StatusCode::CONFLICT, &json!("invalidGapTransition"))
    );
    let (status, refused) = post(&app, &refuse.0, refuse.1.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(refused["status"], "refused");
    let (_, behind) = app.get("/accounts/discord/a1/behind").await;
    assert_eq!(
        (&behind["behind"], &behind["refused"]),
        (&json!(true), &json!(true))
    );
    // refused: close and refuse are refused; opening another returns this one; resume is allowed.
    for (path, body) in [&close, &refuse] {
        let (status, _) = post(&app, path, body.clone()).await;
        assert_eq!(status, StatusCode::CONFLICT, "{path}");
    }
    let (_, same) = post(&app, "/gaps", open.clone()).await;
    assert_eq!(same["id"], id.as_str());
    let (status, resumed) = post(&app, &resume.0, resume.1.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resumed["status"], "open");
    assert_eq!(resumed["resumedBy"], "matt");
    assert_eq!(resumed["history"][0]["refused"], "rate limited by discord");
    assert_eq!(resumed["history"][1]["resumedBy"], "matt");
    // open again: close is allowed; then everything is refused.
    let (status, closed) = post(&app, &close.0, close.1.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&closed["status"], &closed["toPosition"]),
        (&json!("closed"), &json!("1300"))
    );
    for (path, body) in moves(&id) {
        let (status, _) = post(&app, &path, body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{path} on a closed gap");
    }
    let (_, behind) = app.get("/accounts/discord/a1/behind").await;
    assert_eq!(behind, json!({"behind": false, "refused": false}));
    let (status, _) = post(&app, "/gaps/gap-nope/close", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let kinds: Vec<String> = app.strings("SELECT kind FROM alerts ORDER BY id");
    assert_eq!(kinds, ["catchUpRefused", "gapResumed"]);
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM events WHERE type LIKE 'gap_%'"),
        4,
        "refused moves append nothing"
    );
    let (_, gaps) = app.get("/gaps?status=closed&platform=discord").await;
    assert_eq!(gaps["gaps"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn alerts_are_acknowledged_once_through_the_log() {
    let app = spawn_app().await;
    post(&app, "/owners/acquire", acquire(1)).await;
    post(&app, "/owners/acquire", acquire(2)).await;
    let (_, open) = app.get("/alerts?unacknowledged=true").await;
    let id = open["alerts"][0]["id"].as_i64().unwrap();
    let (status, acked) = post(&app, &format!("/alerts/{id}/ack"), json!({"by": "matt"})).await;
    assert_eq!(status, StatusCode::OK);
    assert!(acked["acknowledgedAt"].is_string());
    let (status, again) = app
        .post_raw(&format!("/alerts/{id}/ack"), "application/json", Vec::new())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["acknowledgedAt"], acked["acknowledgedAt"]);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM events WHERE type = 'alert_acknowledged'"
        ),
        1
    );
    let (_, open) = app.get("/alerts?unacknowledged=true").await;
    assert_eq!(open["alerts"], json!([]));
    let (status, _) = post(&app, "/alerts/999/ack", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_commands_are_refused_and_store_nothing() {
    let app = spawn_app_with(|c| c.body_limit = 4096).await;
    let cases: Vec<(&str, String, StatusCode)> = vec![
        ("/owners/acquire", "{oops".into(), StatusCode::BAD_REQUEST),
        ("/owners/acquire", "[]".into(), StatusCode::BAD_REQUEST),
        (
            "/owners/acquire",
            json!({"platform": "x"}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/owners/acquire",
            json!({"platform": "x", "account": "a", "pid": "1", "hostname": "h"}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/owners/acquire",
            json!({"platform": "x", "account": "a", "pid": 0, "hostname": "h"}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/owners/acquire",
            json!({"platform": "", "account": "a", "pid": 1, "hostname": "h"}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/owners/acquire",
            json!({"platform": "x", "account": "a", "pid": 1, "hostname": "h", "colour": 1})
                .to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/owners/acquire",
            json!({"platform": "x", "account": "a", "pid": 1, "hostname": "h", "relayPort": 70000})
                .to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/owners/x/a/heartbeat",
            json!({}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/claims",
            json!({"chat": "c"}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/claims",
            json!({"chat": "c", "sessionId": "s", "ttlSeconds": 0}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/claims",
            json!({"chat": "c", "sessionId": "s", "ttlSeconds": 1e9}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/gaps",
            json!({"platform": "x", "account": "a"}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/gaps",
            json!({"platform": "x", "account": "a", "reason": "r", "fromPosition": [1]})
                .to_string(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "/gaps",
            json!({"platform": "x", "account": "a", "reason": "x".repeat(5000)}).to_string(),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            "/gaps/g/refuse",
            json!({"detail": ""}).to_string(),
            StatusCode::BAD_REQUEST,
        ),
        ("/alerts/abc/ack", "{}".into(), StatusCode::BAD_REQUEST),
    ];
    for (path, body, expected) in cases {
        let (status, answer) = app
            .post_raw(path, "application/json", body.clone().into_bytes())
            .await;
        assert_eq!(status, expected, "{path} {body}: {answer}");
        assert!(answer["error"].is_string(), "{path}: {answer}");
    }
    assert_eq!(app.event_count(), 0);
}

#[tokio::test]
async fn a_rebuild_reproduces_owners_claims_gaps_and_alerts() {
    let (app, clock) = app_with_clock().await;
    post(&app, "/owners/acquire", acquire(1)).await;
    post(&app, "/owners/acquire", acquire(2)).await;
    post(
        &app,
        "/owners/x/matt/heartbeat",
        json!({"generation": 1, "attached": 1}),
    )
    .await;
    clock.advance(Duration::from_secs(120));
    post(&app, "/owners/acquire", acquire(3)).await;
    post(&app, "/claims", json!({"chat": "c", "sessionId": "s1"})).await;
    post(&app, "/claims", json!({"chat": "c", "sessionId": "s2"})).await;
    post(
        &app,
        "/claims/c/release",
        json!({"sessionId": "s1", "outcome": "failed"}),
    )
    .await;
    let (_, gap) = post(
        &app,
        "/gaps",
        json!({"platform": "x", "account": "matt", "reason": "takeover"}),
    )
    .await;
    let id = gap["id"].as_str().unwrap();
    post(&app, &format!("/gaps/{id}/refuse"), json!({"detail": "no"})).await;
    post(&app, &format!("/gaps/{id}/resume"), json!({"by": "matt"})).await;
    post(&app, "/alerts/1/ack", json!({})).await;
    let db_path = app.db_path.clone();
    let dir = app.stop().await;
    let mut conn = rusqlite::Connection::open(&db_path).unwrap();
    let live = dump_projections(&conn);
    for table in [
        "watcher_owners",
        "claims",
        "claim_actions",
        "gaps",
        "alerts",
    ] {
        assert!(
            live.iter().any(|row| row.starts_with(&format!("{table}:"))),
            "{table} is empty"
        );
    }
    let tx = conn.transaction().unwrap();
    hooklog::store::rebuild::rebuild(&tx).unwrap();
    assert_eq!(dump_projections(&tx), live);
    drop(tx);
    drop(dir);
}

#[tokio::test]
async fn forged_outcomes_cannot_take_the_writer_down_and_ended_sessions_cannot_claim() {
    let app = spawn_app().await;
    // An outcome posted as an event (an import path) with the largest generation there is.
    let forged = json!({"type": "owner_acquired", "source": "coordination",
        "payload": {"platform": "x", "account": "max", "generation": i64::MAX, "pid": 1,
                    "hostname": "h"}});
    let (status, _) = app.post_json(&forged).await;
    assert_eq!(status, StatusCode::OK);
    let release = json!({"type": "owner_released", "source": "coordination",
        "payload": {"platform": "x", "account": "max", "generation": i64::MAX}});
    app.post_json(&release).await;
    let (status, body) = post(
        &app,
        "/owners/acquire",
        json!({"platform": "x", "account": "max",
        "pid": 2, "hostname": "h"}),
    )
    .await;
    assert_eq!(
        (status, &body["error"]),
        (StatusCode::CONFLICT, &json!("generationExhausted"))
    );
    let (_, health) = app.get("/health").await;
    assert_eq!(health["writer"], "ok");
    let (status, _) = post(&app, "/claims", json!({"chat": "c", "sessionId": "s"})).await;
    assert_eq!(status, StatusCode::OK, "the writer still decides");

    // A session that has ended is refused, and the refusal is in the action log.
    app.post_hook(
        "/event",
        &json!({"hook_event_name": "SessionEnd", "session_id": "gone"}),
    )
    .await;
    let (status, body) = post(&app, "/claims", json!({"chat": "d", "sessionId": "gone"})).await;
    assert_eq!(
        (status, &body["error"]),
        (StatusCode::CONFLICT, &json!("sessionEnded"))
    );
    let (_, actions) = app.get("/actions?chat=d").await;
    assert_eq!(actions["actions"][0]["type"], "claim_refused");

    // Claims neither make sessions nor number within them.
    let (status, _) = app.get("/sessions/s").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a claim does not make a session"
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM events WHERE source = 'coordination' AND session_id IS NOT NULL"
        ),
        0
    );
}
