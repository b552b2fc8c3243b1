//! `GET /openapi.json` against the route table and the server: every route is described, and
//! every status the description gives a route is one a request really gets.

use crate::common;

use common::{TestApp, spawn_app, spawn_app_with};
use hooklog::config::Secret;
use serde_json::{Value, json};
use std::collections::BTreeSet;

const FACTORY: &str = "fs-2f9c41d0-6b1e-4c8a-9e55-0d3b7a1c4e21";

/// Documented statuses no request here can produce, and where they are proven instead.
const PROVEN_ELSEWHERE: &[(&str, &str, &str)] = &[
    // The writer must be failing: tests/it/storage.rs fills the disk.
    ("get", "/health", "503"),
    // Five wrong tokens first, with a token configured: the_login_form_answers_as_described.
    ("post", "/login", "429"),
];

async fn description(app: &TestApp) -> Value {
    let response = app.client.get(format!("{}/openapi.json", app.url));
    let response = response.send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// Every (method, path template, status) the description documents.
fn documented(doc: &Value) -> BTreeSet<(String, String, String)> {
    let mut all = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for status in operation["responses"].as_object().unwrap().keys() {
                all.insert((method.clone(), path.clone(), status.clone()));
            }
        }
    }
    all
}

#[tokio::test]
async fn every_route_in_the_table_is_described_as_openapi_3_1() {
    let app = spawn_app().await;
    let doc = description(&app).await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    for route in hooklog::http::routes() {
        let method = route.method.as_str().to_lowercase();
        let operation = &doc["paths"][&route.path][&method];
        assert!(
            operation.is_object(),
            "{method} {} is not described",
            route.path
        );
    }
    let described: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert_eq!(
        described,
        hooklog::http::routes().len(),
        "a route described but not served"
    );
    // The streams say what they are.
    let stream = &doc["paths"]["/sessions/{id}/events"]["get"]["responses"]["200"]["content"];
    assert!(stream["text/event-stream"].is_object(), "{stream}");
    let ingest = &doc["paths"]["/events"]["post"]["requestBody"]["content"];
    assert!(ingest["application/x-ndjson"].is_object(), "{ingest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_but_the_open_ones_answers_401_without_the_token() {
    let app = spawn_app_with(|c| c.security.token = Some(Secret("t".into()))).await;
    let doc = description_with_token(&app).await;
    for (method, path, status) in documented(&doc) {
        if status != "401" {
            continue;
        }
        // `POST /login` is open; its `401` is a wrong token in the form (tested below).
        if is_open(&doc, &method, &path) {
            assert_eq!((method.as_str(), path.as_str()), ("post", "/login"));
            continue;
        }
        let concrete = path.replace("{id}", "x").replace("{chat}", "x");
        let concrete = concrete
            .replace("{platform}", "x")
            .replace("{account}", "x");
        let url = format!("{}{concrete}", app.url);
        let request = match method.as_str() {
            "post" => app.client.post(url).body("{}"),
            _ => app.client.get(url),
        };
        let got = request.send().await.unwrap().status();
        assert_eq!(got, 401, "{method} {path}");
    }
    assert!(!documented(&doc).contains(&("get".into(), "/health".into(), "401".into())));
    assert!(!documented(&doc).contains(&("get".into(), "/assets/{file}".into(), "401".into())));
    // The operations the description leaves open are exactly the ones the server does.
    for route in hooklog::http::routes() {
        let method = route.method.as_str().to_lowercase();
        assert_eq!(
            is_open(&doc, &method, &route.path),
            hooklog::http::auth::is_open(&route.method, &route.path),
            "{method} {}",
            route.path
        );
    }
}

/// Whether the description lets an operation go without the bearer token (`security: [{}]`).
fn is_open(doc: &Value, method: &str, path: &str) -> bool {
    doc["paths"][path][method]["security"] == json!([{}])
}

/// `POST /login`'s statuses with a token configured: the `401` of a wrong token is the login
/// form (HTML), the right one is `303` with the cookie, and after five wrong ones the form
/// comes back `429` with `Retry-After`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_form_answers_as_described() {
    let app = spawn_app_with(|c| c.security.token = Some(Secret("t".into()))).await;
    let doc = description_with_token(&app).await;
    let login = &doc["paths"]["/login"]["post"];
    assert!(
        login["requestBody"]["content"]["application/x-www-form-urlencoded"].is_object(),
        "{login}"
    );
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let post = |body: &'static str| {
        client
            .post(format!("{}/login", app.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let wrong = post("token=nope&next=%2Fs%2Fx").await.unwrap();
    assert_eq!(wrong.status(), 401);
    let html = wrong.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(html.starts_with("text/html"), "{html}");
    assert!(login["responses"]["401"]["content"]["text/html"].is_object());
    let right = post("token=t&next=%2Fs%2Fx").await.unwrap();
    assert_eq!(right.status(), 303);
    assert_eq!(right.headers()["location"], "/s/x");
    assert!(right.headers().contains_key("set-cookie"));
    assert_eq!(post("next=%2F").await.unwrap().status(), 400);
    assert_eq!(post("token=t&admin=1").await.unwrap().status(), 400);
    // Five wrong tokens in a row: the form again, 429, with the wait.
    for _ in 0..5 {
        assert_eq!(post("token=nope").await.unwrap().status(), 401);
    }
    let held = post("token=t").await.unwrap();
    assert_eq!(held.status(), 429);
    assert!(held.headers().contains_key("retry-after"));
    assert!(login["responses"]["429"]["content"]["text/html"].is_object());
    assert!(login["responses"]["429"]["headers"]["Retry-After"].is_object());
}

async fn description_with_token(app: &TestApp) -> Value {
    let response = app.client.get(format!("{}/openapi.json", app.url));
    let response = response.bearer_auth("t").send().await.unwrap();
    response.json().await.unwrap()
}

/// Sends requests in order, checking each status, and records which documented statuses
/// they produced.
struct Exercise<'a> {
    app: &'a TestApp,
    /// Follows no redirect: a `303` is what is checked.
    client: reqwest::Client,
    produced: BTreeSet<(String, String, String)>,
    /// Requests answered otherwise than expected (reported together at the end).
    wrong: Vec<String>,
}

impl Exercise<'_> {
    async fn send(
        &mut self,
        method: &str,
        template: &str,
        path: &str,
        body: Option<&str>,
        expected: u16,
    ) -> Value {
        let headers: &[(&str, &str)] = &[];
        self.send_with(method, template, path, body, headers, expected)
            .await
    }

    async fn send_with(
        &mut self,
        method: &str,
        template: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
        expected: u16,
    ) -> Value {
        let url = format!("{}{path}", self.app.url);
        let mut request = match method {
            "post" => self.client.post(url).body(body.unwrap_or("").to_string()),
            _ => self.client.get(url),
        };
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let streaming = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
        let answer = match (streaming || status == 101, status) {
            (true, _) => Value::Null,
            _ => {
                let text = response.text().await.unwrap();
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            }
        };
        if status != expected {
            let wrong = format!("{method} {path}: {status}, not {expected}: {answer}");
            self.wrong.push(wrong);
        }
        let key = (method.to_string(), template.to_string(), status.to_string());
        self.produced.insert(key);
        answer
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_status_is_produced() {
    let app = spawn_app().await;
    let doc = description(&app).await;
    let mut x = Exercise {
        app: &app,
        client: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
        produced: BTreeSet::new(),
        wrong: Vec::new(),
    };
    let upgrade = [
        ("connection", "upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];
    let sse = [("accept", "text/event-stream")];
    x.send_with("get", "/", "/", None, &upgrade, 101).await;
    x.send("get", "/", "/", None, 200).await;
    x.send("get", "/", "/?view=board", None, 400).await;
    let not_websocket = [("upgrade", "h2c")];
    x.send_with("get", "/", "/", None, &not_websocket, 400)
        .await;

    // The web view: pages, files, the login form (no token configured here: any token is
    // right), the pulse chart.
    x.send("get", "/s/{id}", "/s/s1", None, 200).await;
    x.send("get", "/s/{id}", "/s/s1?e=3", None, 400).await;
    x.send("get", "/coordination", "/coordination", None, 200)
        .await;
    x.send("get", "/coordination", "/coordination?x=1", None, 400)
        .await;
    x.send("get", "/cost", "/cost", None, 200).await;
    x.send("get", "/cost", "/cost?since=7d", None, 400).await;
    x.send("get", "/assets/{file}", "/assets/app.css", None, 200)
        .await;
    x.send("get", "/assets/{file}", "/assets/app.js", None, 200)
        .await;
    x.send("get", "/assets/{file}", "/assets/favicon.svg", None, 200)
        .await;
    x.send("get", "/assets/{file}", "/assets/nope.js", None, 404)
        .await;
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let login = Some("token=any&next=%2Fs%2Fs1");
    x.send_with("post", "/login", "/login", login, &form, 303)
        .await;
    x.send_with("post", "/login", "/login", Some("next=%2F"), &form, 400)
        .await;
    x.send("post", "/logout", "/logout", None, 303).await;
    x.send("get", "/pulse", "/pulse", None, 200).await;
    x.send("get", "/pulse", "/pulse?minutes=1440", None, 200)
        .await;
    x.send("get", "/pulse", "/pulse?minutes=0", None, 400).await;
    x.send("get", "/pulse", "/pulse?minutes=1441", None, 400)
        .await;
    x.send("get", "/pulse", "/pulse?bogus=1", None, 400).await;
    x.send("get", "/health", "/health", None, 200).await;
    x.send("get", "/stats", "/stats", None, 200).await;
    x.send("get", "/metrics", "/metrics", None, 200).await;
    x.send("get", "/openapi.json", "/openapi.json", None, 200)
        .await;

    // The log.
    let e1 = r#"{"id":"e1","type":"UserPromptSubmit","sessionId":"s1","source":"hook","payload":{"prompt":"hi"}}"#;
    x.send("post", "/events", "/events", Some(e1), 200).await;
    x.send("post", "/events", "/events", Some("[]"), 400).await;
    let other = r#"{"id":"e1","type":"Stop","sessionId":"s1"}"#;
    x.send("post", "/events", "/events", Some(other), 409).await;
    x.send(
        "post",
        "/events",
        "/events",
        Some(r#"{"type":"made_up"}"#),
        200,
    )
    .await;
    x.send("get", "/events", "/events", None, 200).await;
    x.send("get", "/events", "/events?limit=0", None, 400).await;
    x.send("get", "/events/{id}", "/events/e1", None, 200).await;
    x.send("get", "/events/{id}", "/events/nope", None, 404)
        .await;
    x.send("get", "/search", "/search?q=made_up", None, 200)
        .await;
    x.send("get", "/search", "/search?q=%22a%20AND&mode=fts", None, 400)
        .await;
    x.send("get", "/usage", "/usage?by=model&since=7d", None, 200)
        .await;
    x.send("get", "/usage", "/usage?by=week", None, 400).await;
    x.send("get", "/changes", "/changes", None, 200).await;
    x.send("get", "/changes", "/changes?limit=0", None, 400)
        .await;

    // Hooks.
    let hook = r#"{"hook_event_name":"UserPromptSubmit","session_id":"h1","prompt":"go"}"#;
    x.send("post", "/event", "/event", Some(hook), 200).await;
    x.send("post", "/event", "/event", Some("[]"), 400).await;
    let id = [("x-hooklog-event-id", "e1")];
    x.send_with("post", "/event", "/event", Some(hook), &id, 409)
        .await;
    let ended = r#"{"type":"ended","sessionId":"n1","timestamp":1764500000000}"#;
    x.send(
        "post",
        "/event/normalized",
        "/event/normalized",
        Some(ended),
        200,
    )
    .await;
    x.send(
        "post",
        "/event/normalized",
        "/event/normalized",
        Some("{}"),
        400,
    )
    .await;

    // Sessions, recordings, projections.
    x.send("get", "/sessions", "/sessions", None, 200).await;
    x.send("get", "/sessions", "/sessions?state=bogus", None, 400)
        .await;
    x.send("get", "/sessions/{id}", "/sessions/s1", None, 200)
        .await;
    x.send("get", "/sessions/{id}", "/sessions/nope", None, 404)
        .await;
    let t = "/sessions/{id}/projections";
    x.send("get", t, "/sessions/s1/projections?until=1", None, 200)
        .await;
    x.send("get", t, "/sessions/s1/projections?until=0", None, 400)
        .await;
    x.send("get", t, "/sessions/s1/projections", None, 400)
        .await;
    x.send("get", t, "/sessions/s1/projections?until=999999", None, 400)
        .await;
    x.send("get", t, "/sessions/nope/projections?until=1", None, 404)
        .await;
    let t = "/sessions/{id}/events";
    x.send_with("get", t, "/sessions/s1/events", None, &sse, 200)
        .await;
    x.send("get", t, "/sessions/s1/events?after_sequence=-1", None, 400)
        .await;
    x.send(
        "get",
        "/sessions/{id}/export",
        "/sessions/s1/export",
        None,
        200,
    )
    .await;
    x.send(
        "get",
        "/sessions/{id}/export",
        "/sessions/nope/export",
        None,
        404,
    )
    .await;
    let t = "/sessions/{id}/replay";
    x.send("get", t, "/sessions/s1/replay?speed=1000", None, 200)
        .await;
    x.send("get", t, "/sessions/s1/replay?speed=0", None, 400)
        .await;
    x.send("get", "/heroes", "/heroes", None, 200).await;
    x.send("get", "/heroes", "/heroes?state=bogus", None, 400)
        .await;
    let heroes = x.send("get", "/heroes", "/heroes", None, 200).await;
    let hero = heroes["heroes"][0]["id"].as_str().unwrap().to_string();
    x.send("get", "/heroes/{id}", &format!("/heroes/{hero}"), None, 200)
        .await;
    x.send("get", "/heroes/{id}", "/heroes/nope", None, 404)
        .await;
    let missions = x.send("get", "/missions", "/missions", None, 200).await;
    let mission = missions["missions"][0]["id"].as_str().unwrap().to_string();
    x.send("get", "/missions", "/missions?state=bogus", None, 400)
        .await;
    x.send(
        "get",
        "/missions/{id}",
        &format!("/missions/{mission}"),
        None,
        200,
    )
    .await;
    x.send("get", "/missions/{id}", "/missions/nope", None, 404)
        .await;
    x.send("get", "/tool-uses", "/tool-uses", None, 200).await;
    x.send("get", "/tool-uses", "/tool-uses?status=bogus", None, 400)
        .await;

    // Factory sessions.
    let lines = common::fixture("../factory/docs-review-session");
    let first = lines[0].to_string();
    let t = "/factory-sessions/{id}/events";
    let f = format!("/factory-sessions/{FACTORY}");
    x.send("post", t, &format!("{f}/events"), Some(&first), 200)
        .await;
    x.send("post", t, &format!("{f}/events"), Some("[]"), 400)
        .await;
    let mut changed = lines[1].clone();
    changed["id"] = lines[0]["id"].clone();
    x.send(
        "post",
        t,
        &format!("{f}/events"),
        Some(&changed.to_string()),
        409,
    )
    .await;
    x.send_with("get", t, &format!("{f}/events"), None, &sse, 200)
        .await;
    x.send(
        "get",
        t,
        &format!("{f}/events?after_sequence=-1"),
        None,
        400,
    )
    .await;
    x.send("get", "/factory-sessions/{id}", &f, None, 200).await;
    x.send(
        "get",
        "/factory-sessions/{id}",
        "/factory-sessions/nope",
        None,
        404,
    )
    .await;
    for part in ["work", "dispatches"] {
        let t = format!("/factory-sessions/{{id}}/{part}");
        x.send("get", &t, &format!("{f}/{part}"), None, 200).await;
        x.send("get", &t, &format!("{f}/{part}?limit=0"), None, 400)
            .await;
    }
    let t = "/factory-sessions/{id}/response-events";
    let record = json!({
        "schemaVersion": "agent-factory.response-event.v1", "eventId": "r-1", "runId": "run-1",
        "recordedAt": "2026-11-30T09:00:07.000Z", "kind": "TOOL", "phase": "STARTED",
        "provenance": {"provider": "codex", "nativeEventType": "item/started",
                       "delivery": "NATIVE_STREAM", "representation": "SNAPSHOT",
                       "fidelity": "NORMALIZED"},
        "payload": {"toolCallId": "t-1", "toolName": "shell"}});
    let path = format!("{f}/response-events");
    x.send("post", t, &path, Some(&record.to_string()), 200)
        .await;
    x.send("post", t, &path, Some("[]"), 400).await;
    x.send_with("get", t, &path, None, &sse, 200).await;
    x.send("get", t, &format!("{path}?after_sequence=-1"), None, 400)
        .await;

    // Owners.
    let acquire = r#"{"platform":"x","account":"a","pid":1,"hostname":"h","relayToken":"t"}"#;
    let second = r#"{"platform":"x","account":"a","pid":2,"hostname":"h"}"#;
    x.send(
        "post",
        "/owners/acquire",
        "/owners/acquire",
        Some(acquire),
        200,
    )
    .await;
    x.send(
        "post",
        "/owners/acquire",
        "/owners/acquire",
        Some(second),
        409,
    )
    .await;
    x.send(
        "post",
        "/owners/acquire",
        "/owners/acquire",
        Some("{}"),
        400,
    )
    .await;
    x.send("get", "/owners", "/owners", None, 200).await;
    x.send("get", "/owners", "/owners?bogus=1", None, 400).await;
    let t = "/owners/{platform}/{account}";
    x.send("get", t, "/owners/x/a", None, 200).await;
    x.send("get", t, "/owners/x/nope", None, 404).await;
    for (action, ok) in [
        ("heartbeat", r#"{"generation":1}"#),
        ("release", r#"{"generation":1}"#),
    ] {
        let t = format!("/owners/{{platform}}/{{account}}/{action}");
        let stale = r#"{"generation":99}"#;
        x.send(
            "post",
            &t,
            &format!("/owners/x/a/{action}"),
            Some("{}"),
            400,
        )
        .await;
        x.send(
            "post",
            &t,
            &format!("/owners/x/a/{action}"),
            Some(stale),
            409,
        )
        .await;
        if action == "heartbeat" {
            x.send("post", &t, &format!("/owners/x/a/{action}"), Some(ok), 200)
                .await;
        }
    }
    let t = "/owners/{platform}/{account}/verify-token";
    x.send(
        "post",
        t,
        "/owners/x/a/verify-token",
        Some(r#"{"token":"t"}"#),
        200,
    )
    .await;
    x.send("post", t, "/owners/x/a/verify-token", Some("{}"), 400)
        .await;
    x.send(
        "post",
        t,
        "/owners/x/nope/verify-token",
        Some(r#"{"token":"t"}"#),
        404,
    )
    .await;
    let t = "/owners/{platform}/{account}/release";
    x.send(
        "post",
        t,
        "/owners/x/a/release",
        Some(r#"{"generation":1}"#),
        200,
    )
    .await;

    // Claims.
    let claim = r#"{"chat":"c1","sessionId":"s1"}"#;
    x.send("post", "/claims", "/claims", Some(claim), 200).await;
    x.send(
        "post",
        "/claims",
        "/claims",
        Some(r#"{"chat":"c1","sessionId":"s2"}"#),
        409,
    )
    .await;
    x.send("post", "/claims", "/claims", Some("{}"), 400).await;
    x.send("get", "/claims", "/claims", None, 200).await;
    x.send("get", "/claims", "/claims?limit=0", None, 400).await;
    x.send("get", "/claims/{chat}", "/claims/c1", None, 200)
        .await;
    x.send("get", "/claims/{chat}", "/claims/nope", None, 404)
        .await;
    let t = "/claims/{chat}/release";
    let by_other = r#"{"sessionId":"s2","outcome":"sent"}"#;
    let by_holder = r#"{"sessionId":"s1","outcome":"sent"}"#;
    x.send("post", t, "/claims/c1/release", Some(by_other), 409)
        .await;
    x.send("post", t, "/claims/c1/release", Some("{}"), 400)
        .await;
    x.send("post", t, "/claims/nope/release", Some(by_holder), 404)
        .await;
    x.send("post", t, "/claims/c1/release", Some(by_holder), 200)
        .await;
    x.send("get", "/actions", "/actions?chat=c1", None, 200)
        .await;
    x.send("get", "/actions", "/actions", None, 400).await;

    // Gaps.
    let open = |account: &str| format!(r#"{{"platform":"x","account":"{account}","reason":"r"}}"#);
    let gap = x
        .send("post", "/gaps", "/gaps", Some(&open("g1")), 200)
        .await;
    let g1 = gap["id"].as_str().unwrap().to_string();
    let gap = x
        .send("post", "/gaps", "/gaps", Some(&open("g2")), 200)
        .await;
    let g2 = gap["id"].as_str().unwrap().to_string();
    x.send("post", "/gaps", "/gaps", Some("{}"), 400).await;
    x.send("get", "/gaps", "/gaps", None, 200).await;
    x.send("get", "/gaps", "/gaps?status=bogus", None, 400)
        .await;
    x.send("get", "/gaps/{id}", &format!("/gaps/{g1}"), None, 200)
        .await;
    x.send("get", "/gaps/{id}", "/gaps/nope", None, 404).await;
    x.send(
        "get",
        "/accounts/{platform}/{account}/behind",
        "/accounts/x/g1/behind",
        None,
        200,
    )
    .await;
    let moves = [
        ("close", g1.as_str(), r#"{}"#, r#"{"toPosition":true}"#),
        ("refuse", g2.as_str(), r#"{"detail":"d"}"#, r#"{}"#),
        ("resume", g2.as_str(), r#"{"by":"b"}"#, r#"{}"#),
    ];
    for (action, id, ok, bad) in moves {
        let t = format!("/gaps/{{id}}/{action}");
        x.send("post", &t, &format!("/gaps/{id}/{action}"), Some(bad), 400)
            .await;
        x.send("post", &t, &format!("/gaps/nope/{action}"), Some(ok), 404)
            .await;
        x.send("post", &t, &format!("/gaps/{id}/{action}"), Some(ok), 200)
            .await;
        x.send("post", &t, &format!("/gaps/{id}/{action}"), Some(ok), 409)
            .await;
    }

    // Alerts.
    x.send("get", "/alerts", "/alerts", None, 200).await;
    x.send("get", "/alerts", "/alerts?limit=0", None, 400).await;
    x.send("post", "/alerts/{id}/ack", "/alerts/1/ack", Some("{}"), 200)
        .await;
    x.send(
        "post",
        "/alerts/{id}/ack",
        "/alerts/abc/ack",
        Some("{}"),
        400,
    )
    .await;
    x.send(
        "post",
        "/alerts/{id}/ack",
        "/alerts/999/ack",
        Some("{}"),
        404,
    )
    .await;

    // Approvals.
    let asked = r#"{"hook_event_name":"PermissionRequest","session_id":"p1","tool_name":"Bash","tool_input":{"command":"ls"},"hooklogWaitSeconds":60}"#;
    let opened = x.send("post", "/event", "/event", Some(asked), 200).await;
    let request = opened["requestId"].as_str().unwrap().to_string();
    let one = "/permission-requests/{id}";
    x.send(
        "get",
        "/permission-requests",
        "/permission-requests",
        None,
        200,
    )
    .await;
    let bad_state = "/permission-requests?state=maybe";
    x.send("get", "/permission-requests", bad_state, None, 400)
        .await;
    let path = format!("/permission-requests/{request}");
    x.send("get", one, &path, None, 200).await;
    x.send("get", one, &format!("{path}?wait=601"), None, 400)
        .await;
    x.send("get", one, "/permission-requests/nope", None, 404)
        .await;
    let respond = format!(r#"{{"requestId":"{request}","approved":false}}"#);
    let cross_site = [("sec-fetch-site", "cross-site")];
    let response = "/permission-response";
    x.send_with("post", response, response, Some(&respond), &cross_site, 403)
        .await;
    x.send("post", response, response, Some(&respond), 200)
        .await;
    x.send("post", response, response, Some("{}"), 400).await;
    let plan = r#"{"planId":"nope"}"#;
    x.send("post", "/plan/approve", "/plan/approve", Some(plan), 200)
        .await;
    x.send("post", "/plan/approve", "/plan/approve", Some("[]"), 400)
        .await;
    x.send_with(
        "post",
        "/plan/approve",
        "/plan/approve",
        Some(plan),
        &cross_site,
        403,
    )
    .await;
    let expire = "/permission-requests/{id}/expire";
    x.send("post", expire, &format!("{path}/expire"), None, 200)
        .await;

    assert!(x.wrong.is_empty(), "{:#?}", x.wrong);
    let documented = documented(&doc);
    let missing: Vec<_> = documented
        .iter()
        .filter(|(_, _, status)| status != "401")
        .filter(|d| !x.produced.contains(*d))
        .filter(|(m, p, s)| !PROVEN_ELSEWHERE.contains(&(m.as_str(), p.as_str(), s.as_str())))
        .collect();
    assert!(
        missing.is_empty(),
        "documented, never produced: {missing:#?}"
    );
    let undocumented: Vec<_> = x.produced.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "produced, not documented: {undocumented:#?}"
    );
}
