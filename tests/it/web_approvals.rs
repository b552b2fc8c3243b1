//! Answering permission requests from the web view (issue 40), in a real Chromium against the
//! real `hooklog serve`, with the real forwarder (`hooklog hook --approvals 30`) waiting on the
//! request as Claude Code's hook would: a deny typed on a board card is what the forwarder
//! prints, and a background tab is notified of the request; an allow on the session page
//! likewise, while a second request of the session, denied through the API, loses its buttons
//! and joins the session's history. Each decision is recorded once, `decidedBy: "web"`.
//!
//! Skipped, with a message, where `chromium` or `chromedriver` is missing; under `CI=true`
//! that is a failure.

use crate::approvals::{checked, count, forwarder, post, requests, types};
use crate::browser::{Browser, ONE_BROWSER, chromium};
use crate::common::ServerProcess;
use serde_json::{Value, json};
use std::process::Child;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(20);

fn request_body(session: &str, command: &str) -> Value {
    json!({"hook_event_name": "PermissionRequest", "session_id": session, "tool_name": "Bash",
        "tool_input": {"command": command}, "cwd": "/tmp/p", "transcript_path": "/tmp/p/t.jsonl"})
}

/// The decision the forwarder waiting on request `which` printed, as JSON, once it has exited.
/// One still waiting at the deadline is stopped, and the failure says which and what it wrote.
async fn decision(child: Child, which: &str) -> Value {
    let pid = child.id().to_string();
    let mut exited = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap());
    let output = match tokio::time::timeout(DEADLINE, &mut exited).await {
        Ok(output) => output.unwrap(),
        Err(_) => {
            std::process::Command::new("kill")
                .arg(&pid)
                .status()
                .unwrap();
            let output = exited.await.unwrap();
            panic!(
                "the forwarder of {which} did not exit within {DEADLINE:?} of its decision; \
                 stdout {:?}, stderr {:?}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    };
    let out = checked(output);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// Puts the tab "in the background" (`document.hidden`) and stands in for the browser's
/// notifications, recording each one made: the API the page calls, not the desktop's pop-up.
const BACKGROUND_TAB: &str = "(() => {
    window.told = [];
    class Told extends EventTarget {
        static permission = 'default';
        static async requestPermission() { Told.permission = 'granted'; return 'granted'; }
        constructor(title, options) { super(); this.closed = false; window.told.push(this); Object.assign(this, {title}, options); }
        close() { this.closed = true; }
    }
    window.Notification = Told;
    Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});
    return true;
})()";

/// The card of session `s` (CSS).
fn card(session: &str) -> String {
    format!("[data-session=\"{session}\"]")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_denied_from_its_board_card_with_a_message_the_forwarder_prints() {
    let Some(found) = chromium() else { return };
    let _one = ONE_BROWSER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let server = ServerProcess::start(&db, "127.0.0.1:0");
    let url = server.url.clone();
    let browser = Browser::start(found).await;
    browser.goto(&format!("{url}/")).await;
    browser
        .wait_until(
            DEADLINE,
            "the stream to be live",
            "document.getElementById('live').dataset.state === 'live'",
        )
        .await;
    browser.eval(BACKGROUND_TAB).await;
    browser.click(".notify-toggle").await;
    browser
        .wait_until(
            DEADLINE,
            "notifications on",
            "document.querySelector('.notify-toggle').getAttribute('aria-pressed') === 'true' \
             && localStorage.getItem('hooklog.notify') === 'on'",
        )
        .await;

    let started = std::time::Instant::now();
    let child = forwarder(
        &url,
        &dir.path().join("spool"),
        30,
        &request_body("s1", "rm -rf build"),
    );
    let s1 = card("s1");
    let (_, took) = browser
        .wait_until(
            DEADLINE,
            "the card's Deny button",
            &format!("document.querySelector('{s1} .approval button.deny')"),
        )
        .await;
    eprintln!(
        "the request was on its card {:?} after the forwarder started ({took:?} of waiting)",
        started.elapsed()
    );
    let asked = browser
        .eval(&format!(
            "document.querySelector('{s1} .approval .ask').textContent"
        ))
        .await;
    assert_eq!(asked, json!("⚠ Bash: rm -rf build"));
    assert_eq!(browser.eval("document.title").await, json!("(1) hooklog"));
    // The tab is in the background: one notification, saying what is asked and where.
    let told = browser
        .eval("window.told.map(n => [n.title, n.body])")
        .await;
    assert_eq!(
        told,
        json!([[
            "hooklog: Bash asks for permission",
            "Bash: rm -rf build\nsession s1"
        ]])
    );
    // Clicking it focuses the tab and closes it.
    browser
        .eval("(window.told[0].dispatchEvent(new Event('click')), true)")
        .await;
    assert_eq!(browser.eval("window.told[0].closed").await, json!(true));
    browser.screenshot("board-approval").await;

    // An event of the session redraws its card (Claude Code notifies of the prompt it shows
    // right after the request): what is being typed survives it.
    browser
        .type_into(&format!("{s1} .approval input[name=message]"), "not on ")
        .await;
    browser
        .eval(&format!(
            "document.querySelector('{s1}').dataset.before = 'a redraw'"
        ))
        .await;
    let notification = json!({"hook_event_name": "Notification", "session_id": "s1",
        "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"});
    let (status, _) = post(&url, "/event", &notification).await;
    assert_eq!(status, 200);
    browser
        .wait_until(
            DEADLINE,
            "a redraw of the card",
            &format!("!document.querySelector('{s1}').dataset.before"),
        )
        .await;
    let input = format!("document.querySelector('{s1} .approval input[name=message]')");
    assert_eq!(
        browser
            .eval(&format!(
                "document.activeElement === {input} && {input}.value"
            ))
            .await,
        json!("not on "),
        "the message field kept its text and the focus"
    );
    browser
        .type_into(&format!("{s1} .approval input[name=message]"), "main")
        .await;
    browser.click(&format!("{s1} .approval button.deny")).await;

    assert_eq!(
        decision(child, "the board card's request").await,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "not on main"}}})
    );
    browser
        .wait_until(
            DEADLINE,
            "the outcome on the card, and no buttons",
            &format!(
                "document.querySelector('{s1} .approval .outcome')?.textContent === '✗ denied by web: not on main' \
                 && !document.querySelector('{s1} button') && document.title === 'hooklog'"
            ),
        )
        .await;
    // The button pressed is gone; the focus is on what it did, not lost to the page's top.
    assert_eq!(
        browser
            .eval(&format!(
                "document.activeElement === document.querySelector('{s1} .approval .outcome')"
            ))
            .await,
        json!(true)
    );
    let rows = requests(&url, "session=s1").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["state"], "denied");
    assert_eq!(rows[0]["decidedBy"], "web");
    assert_eq!(rows[0]["message"], "not on main");
    assert_eq!(count(&types(&db), "permission_response"), 1);
    browser.screenshot("board-approval-denied").await;
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_allowed_from_its_session_page_and_one_settled_elsewhere_loses_its_buttons() {
    let Some(found) = chromium() else { return };
    let _one = ONE_BROWSER.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let server = ServerProcess::start(&db, "127.0.0.1:0");
    let url = server.url.clone();
    let spool = dir.path().join("spool");
    // Two requests of one session, one after the other.
    let first = forwarder(&url, &spool, 30, &request_body("s2", "cargo build"));
    crate::common::wait_for(DEADLINE, "the first request", || {
        count(&types(&db), "PermissionRequest") == 1
    })
    .await;
    let second = forwarder(&url, &spool, 30, &request_body("s2", "git push"));
    crate::common::wait_for(DEADLINE, "the second request", || {
        count(&types(&db), "PermissionRequest") == 2
    })
    .await;

    let browser = Browser::start(found).await;
    browser.goto(&format!("{url}/s/s2")).await;
    let (order, _) = browser
        .wait_until(
            DEADLINE,
            "both requests, oldest first",
            "(p => p.length === 2 && p.map(a => a.querySelector('.preview').textContent))\
             ([...document.querySelectorAll('.permission-requests .approval')])",
        )
        .await;
    assert_eq!(order, json!(["cargo build", "git push"]));
    assert_eq!(browser.eval("document.title").await, json!("(2) hooklog"));

    // The second is denied by another client: its buttons go, the first keeps its own.
    let pending = requests(&url, "session=s2&state=pending").await;
    let push = pending.iter().find(|r| r["preview"] == "git push").unwrap()["requestId"].clone();
    let (_, answer) = post(
        &url,
        "/permission-response",
        &json!({"requestId": push, "approved": false}),
    )
    .await;
    assert_eq!(answer["resolved"], true, "{answer}");
    assert_eq!(
        decision(second, "the request denied through the API").await["hookSpecificOutput"]["decision"],
        json!({"behavior": "deny"})
    );
    let panels = "[...document.querySelectorAll('.permission-requests .approval')]";
    browser
        .wait_until(
            DEADLINE,
            "the second's outcome",
            &format!(
                "(p => p[1].dataset.state === 'denied' && !p[1].querySelector('button') \
                  && p[1].querySelector('.outcome').textContent === '✗ denied by api' \
                  && p[0].querySelector('button.allow'))({panels})"
            ),
        )
        .await;
    assert_eq!(browser.eval("document.title").await, json!("(1) hooklog"));

    browser
        .click(".permission-requests .approval button.allow")
        .await;
    assert_eq!(
        decision(first, "the request allowed on the session page").await,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"}}})
    );
    browser
        .wait_until(
            DEADLINE,
            "the outcome, and both in the history",
            &format!(
                "(p => p[0].querySelector('.outcome').textContent === '✓ allowed by web' \
                  && !document.querySelector('.permission-requests .approval button') \
                  && document.querySelectorAll('.permission-requests tbody tr').length === 2)({panels})"
            ),
        )
        .await;
    let history = browser
        .eval(
            "[...document.querySelectorAll('.permission-requests tbody tr')]\
             .map(tr => [...tr.cells].slice(1, 5).map(td => td.textContent))",
        )
        .await;
    assert_eq!(
        history,
        json!([
            ["Bash: git push", "denied", "api", ""],
            ["Bash: cargo build", "allowed", "web", ""]
        ])
    );
    browser.screenshot("session-approvals").await;

    let rows = requests(&url, "session=s2").await;
    let states: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r["preview"].clone(),
                r["state"].clone(),
                r["decidedBy"].clone(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            (json!("git push"), json!("denied"), json!("api")),
            (json!("cargo build"), json!("allowed"), json!("web"))
        ]
    );
    assert_eq!(count(&types(&db), "permission_response"), 2);
    browser.close().await;
}
