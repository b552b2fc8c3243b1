//! Notices of waiting agents (`serve --notify`): one per waiting spell and target, delivered
//! across a receiver that fails first, recorded as `notice_failed` / `notice_sent` in the
//! waiting session, in each target's shape, resumed after a restart, and never in ingest's way;
//! over TLS to an https target whose certificate chains to `--notify-ca`, and to none otherwise.

mod receiver;

use crate::common::{self, ServerProcess, TestApp, spawn_app_with, wait_for};
use base64::Engine;
use hooklog::config::{Config, Notify, NotifyTarget};
use receiver::Receiver;
use serde_json::{Value, json};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(20);
const CWD: &str = "/home/dev/src/shop";

/// A config that notifies `targets`, retrying quickly, with links under `http://hooklog.test`.
fn notifying(targets: Vec<String>) -> impl FnOnce(&mut Config) {
    move |config| {
        config.notify = Notify {
            targets: targets
                .iter()
                .map(|t| NotifyTarget::parse(t).unwrap())
                .collect(),
            public_url: Some("http://hooklog.test".into()),
            backoff: Duration::from_millis(20),
            backoff_max: Duration::from_millis(100),
            ..Notify::default()
        }
    }
}

fn hook(session: &str, name: &str) -> Value {
    json!({"hook_event_name": name, "session_id": session, "cwd": CWD})
}

fn permission(session: &str) -> Value {
    let mut body = hook(session, "PermissionRequest");
    body["tool_name"] = json!("Bash");
    body["tool_input"] = json!({"command": "cargo test"});
    body
}

fn idle(session: &str) -> Value {
    let mut body = hook(session, "Notification");
    body["notification_type"] = json!("idle_prompt");
    body["message"] = json!("Claude is waiting for your input");
    body
}

/// Session `s1`'s permission request posted to the hooklog at `url`: its answer.
async fn ask(url: &str) -> Value {
    reqwest::Client::new()
        .post(format!("{url}/event"))
        .json(&permission("s1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Whether the database file at `db` holds a notice event of type `kind`.
fn holds_notice(db: &std::path::Path, kind: &str) -> bool {
    notices(&common::open_read_only(db))
        .iter()
        .any(|n| n.0 == kind)
}

/// The notice events in the log, in order: (type, session, payload).
fn notices(db: &rusqlite::Connection) -> Vec<(String, String, Value)> {
    db.prepare(
        "SELECT type, session_id, payload FROM events
         WHERE type IN ('notice_sent', 'notice_failed') ORDER BY sequence",
    )
    .unwrap()
    .query_map([], |r| {
        let payload: String = r.get(2)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            serde_json::from_str(&payload).unwrap(),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn sent(app: &TestApp) -> usize {
    let db = app.db();
    notices(&db).iter().filter(|n| n.0 == "notice_sent").count()
}

#[tokio::test]
async fn a_waiting_session_is_notified_once_per_spell_across_a_receiver_that_fails_twice() {
    let receiver = Receiver::failing(2).await;
    let app = spawn_app_with(notifying(vec![format!("{}/in", receiver.url)])).await;
    let asked = app.post_hook_ok(permission("s1")).await;
    wait_for(DEADLINE, "the notice_sent", || sent(&app) == 1).await;

    let got = receiver.got();
    let answers: Vec<_> = got.iter().map(|g| g.answered).collect();
    assert_eq!(answers, [Some(500), Some(500), Some(200)]);
    assert!(
        got.iter().all(|g| g.body == got[0].body),
        "every attempt sends the same notice"
    );
    let body = got[2].json();
    assert_eq!(body["kind"], "waiting");
    assert_eq!(body["sessionId"], "s1");
    assert_eq!(body["project"], "shop");
    assert_eq!(body["cwd"], CWD);
    assert_eq!(body["tool"], "Bash");
    assert_eq!(body["reason"], "permission");
    assert_eq!(body["url"], "http://hooklog.test/s/s1");
    assert_eq!(body["spellSequence"], asked["sequence"]);

    let recorded = notices(&app.db());
    let kinds: Vec<_> = recorded.iter().map(|n| n.0.as_str()).collect();
    assert_eq!(kinds, ["notice_failed", "notice_failed", "notice_sent"]);
    for (n, (_, session, payload)) in recorded.iter().enumerate() {
        assert_eq!(session, "s1", "recorded in the waiting session");
        assert_eq!(payload["spellSequence"], asked["sequence"]);
        assert_eq!(payload["attempt"], n + 1);
        assert_eq!(payload["target"], 0);
        assert_eq!(payload["targetHost"], "127.0.0.1");
        assert!(!payload.to_string().contains("/in"), "no URL in {payload}");
    }
    assert_eq!(recorded[0].2["status"], 500);
    assert_eq!(recorded[0].2["final"], false);
    assert_eq!(recorded[2].2["status"], 200);
    let (_, alerts) = app.get("/alerts").await;
    assert!(
        !alerts.to_string().contains("notice_"),
        "known types: {alerts}"
    );

    // The same spell asks again: nothing more. Another session's notice comes after it.
    app.post_hook_ok(permission("s1")).await;
    app.post_hook_ok(idle("s1")).await;
    app.post_hook_ok(permission("s2")).await;
    wait_for(DEADLINE, "s2's notice", || sent(&app) == 2).await;
    let delivered = receiver.delivered();
    let sessions: Vec<_> = delivered
        .iter()
        .map(|g| g.json()["sessionId"].clone())
        .collect();
    assert_eq!(sessions, ["s1", "s2"]);

    // A tool ran: the spell is over, and the next request opens a new one.
    let mut ran = hook("s1", "PostToolUse");
    ran["tool_name"] = json!("Bash");
    app.post_hook_ok(ran).await;
    let again = app.post_hook_ok(permission("s1")).await;
    wait_for(DEADLINE, "the new spell's notice", || sent(&app) == 3).await;
    let last = receiver.delivered().pop().unwrap().json();
    assert_eq!(last["sessionId"], "s1");
    assert_eq!(last["spellSequence"], again["sequence"]);
    assert_eq!(receiver.delivered().len(), 3);
    let dir = app.stop().await;
    common::assert_rebuilds_to_live(&dir.path().join("hooklog.db"));
}

#[tokio::test]
async fn each_kind_of_target_gets_its_own_shape() {
    let receiver = Receiver::failing(0).await;
    let targets = vec![
        format!("{}/json", receiver.url),
        format!("ntfy:{}/topic", receiver.url),
        format!("slack:{}/services/T0/B0/x", receiver.url),
    ];
    let app = spawn_app_with(notifying(targets)).await;
    app.post_hook_ok(idle("s1")).await;
    wait_for(DEADLINE, "three notices", || sent(&app) == 3).await;
    let got = receiver.delivered();
    let at = |path: &str| got.iter().find(|g| g.path == path).unwrap().clone();

    let own = at("/json");
    assert_eq!(own.header("content-type"), Some("application/json"));
    assert_eq!(own.json()["reason"], "idle");
    assert_eq!(own.json()["message"], "Claude is waiting for your input");

    let ntfy = at("/topic");
    assert!(
        ntfy.header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(ntfy.header("title"), Some("hooklog: shop"));
    assert_eq!(ntfy.header("tags"), Some("hourglass"));
    assert_eq!(ntfy.header("click"), Some("http://hooklog.test/s/s1"));
    assert!(
        ntfy.body.starts_with("shop: waiting for your input\n"),
        "{}",
        ntfy.body
    );

    let slack = at("/services/T0/B0/x").json();
    let text = slack["text"].as_str().unwrap();
    assert!(text.starts_with("shop: waiting for your input"), "{text}");
    assert!(
        text.ends_with("<http://hooklog.test/s/s1|Open the session>"),
        "{text}"
    );

    let kinds: Vec<_> = notices(&app.db())
        .into_iter()
        .map(|n| n.2["targetKind"].as_str().unwrap().to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(kinds, ["json", "ntfy", "slack"]);
    app.stop().await;
}

#[tokio::test]
async fn a_receiver_that_never_answers_does_not_hold_ingest() {
    let receiver = Receiver::hanging().await;
    let app = spawn_app_with(|config| {
        notifying(vec![format!("{}/in", receiver.url)])(config);
        config.notify.timeout = Duration::from_secs(300);
    })
    .await;
    app.post_hook_ok(permission("s0")).await;
    wait_for(DEADLINE, "a held notice", || !receiver.got().is_empty()).await;
    // 50 more sessions start waiting while the receiver holds its connections.
    for n in 1..=50 {
        let answer = app.post_hook_ok(permission(&format!("s{n}"))).await;
        assert_eq!(answer["accepted"], true);
    }
    let held = receiver.got().len();
    assert!(
        held <= hooklog::notify::deliver::MAX_SENDING,
        "{held} attempts at once"
    );
    assert!(receiver.delivered().is_empty());
    app.stop().await;
}

#[tokio::test]
async fn a_notice_not_delivered_before_a_restart_is_sent_after_it() {
    let receiver = Receiver::failing(usize::MAX).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let target = format!("{}/in", receiver.url);
    let serve = |db: &std::path::Path| {
        ServerProcess::start_with(db, "127.0.0.1:0", |command| {
            command.args(["--notify", &target, "--public-url", "http://hooklog.test/"]);
        })
    };
    let mut first = serve(&db);
    let asked = ask(&first.url).await;
    wait_for(DEADLINE, "a failed attempt", || {
        holds_notice(&db, "notice_failed")
    })
    .await;
    first.kill();

    receiver.fail_next(0);
    let _second = serve(&db);
    wait_for(DEADLINE, "the notice after the restart", || {
        !receiver.delivered().is_empty()
    })
    .await;
    wait_for(DEADLINE, "its notice_sent", || {
        holds_notice(&db, "notice_sent")
    })
    .await;
    let notice = receiver.delivered()[0].json();
    assert_eq!(notice["spellSequence"], asked["sequence"]);
    assert_eq!(notice["url"], "http://hooklog.test/s/s1");
    assert_eq!(receiver.delivered().len(), 1);
}

/// The test CA that signed the TLS receiver's certificate.
fn test_ca() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tls/ca.pem")
}

#[tokio::test]
async fn an_https_target_is_taken_at_start_and_delivered_to_over_tls_with_the_ca_given() {
    let receiver = Receiver::tls(1).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    // A user in the URL goes as Basic authorization (ntfy's access control).
    let address = receiver.url.strip_prefix("https://").unwrap();
    let target = format!("ntfy:https://us%40er:p%3As@{address}/topic");
    let server = ServerProcess::start_with(&db, "127.0.0.1:0", |command| {
        command
            .args(["--notify", &target, "--public-url", "http://hooklog.test/"])
            .arg("--notify-ca")
            .arg(test_ca());
    });
    let asked = ask(&server.url).await;
    wait_for(DEADLINE, "the notice_sent", || {
        holds_notice(&db, "notice_sent")
    })
    .await;

    // A 500 first, then the notice again on a new connection: both over TLS.
    let answers: Vec<_> = receiver.got().iter().map(|g| g.answered).collect();
    assert_eq!(answers, [Some(500), Some(200)]);
    assert_eq!(receiver.failed_handshakes(), 0);
    let got = receiver.delivered().pop().unwrap();
    assert_eq!(got.path, "/topic");
    assert_eq!(got.header("host"), Some(address));
    let basic = base64::engine::general_purpose::STANDARD.encode("us@er:p:s");
    assert_eq!(
        got.header("authorization"),
        Some(&*format!("Basic {basic}"))
    );
    assert_eq!(got.header("title"), Some("hooklog: shop"));
    assert_eq!(got.header("click"), Some("http://hooklog.test/s/s1"));
    assert!(
        got.body
            .starts_with("shop: waiting for permission to use Bash\n")
    );

    let recorded = notices(&common::open_read_only(&db));
    let kinds: Vec<_> = recorded.iter().map(|n| n.0.as_str()).collect();
    assert_eq!(kinds, ["notice_failed", "notice_sent"]);
    let payload = &recorded[1].2;
    assert_eq!(payload["spellSequence"], asked["sequence"]);
    assert_eq!(payload["targetKind"], "ntfy");
    assert_eq!(payload["targetHost"], "127.0.0.1");
    assert_eq!(payload["status"], 200);
}

#[tokio::test]
async fn an_https_target_whose_certificate_no_trusted_root_signed_gets_nothing() {
    // The system's roots only: the test CA is not among them.
    let receiver = Receiver::tls(0).await;
    let app = spawn_app_with(|config| {
        notifying(vec![format!("{}/in", receiver.url)])(config);
        config.notify.attempts = 2;
    })
    .await;
    app.post_hook_ok(permission("s1")).await;
    let given_up = |app: &TestApp| {
        notices(&app.db())
            .iter()
            .any(|n| n.0 == "notice_failed" && n.2["final"] == true)
    };
    wait_for(DEADLINE, "the notice given up", || given_up(&app)).await;
    // The receiver sees each refused handshake when the client's alert reaches it.
    wait_for(DEADLINE, "two refused handshakes", || {
        receiver.failed_handshakes() == 2
    })
    .await;
    assert!(receiver.got().is_empty(), "no request got through");
    let recorded = notices(&app.db());
    assert_eq!(recorded.len(), 2);
    for (_, _, payload) in &recorded {
        let error = payload["error"].as_str().unwrap();
        assert!(
            error.starts_with("TLS: invalid peer certificate: UnknownIssuer"),
            "{error}"
        );
        assert!(!error.contains("/in"), "no URL in {error}");
    }
    app.stop().await;
}

#[test]
fn an_https_target_with_no_root_to_check_it_stops_the_start_without_echoing_it() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("no-roots.pem");
    std::fs::write(&empty, "").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args(["serve", "--bind", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("hooklog.db"))
        .args(["--notify", "slack:https://127.0.0.1:9/services/T/B/sekrit"])
        .env("SSL_CERT_FILE", &empty)
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no root certificate") && stderr.contains("--notify-ca"),
        "{stderr}"
    );
    assert!(!stderr.contains("sekrit"), "{stderr}");
}
