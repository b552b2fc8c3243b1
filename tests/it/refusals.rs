//! Seed 000's refusal shapes through the real server: the `501` for its route families hooklog
//! does not serve (a `404` elsewhere), `accepted: false` on every refusal of `POST /event`,
//! the guards' included, and `mock: false` on `/health`.

use crate::common;

use common::{spawn_app, spawn_app_with};
use hooklog::config::{RateLimit, Secret};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn send(app: &common::TestApp, method: Method, path: &str) -> (StatusCode, Value) {
    let response = app
        .client
        .request(method, format!("{}{path}", app.url))
        .header("content-type", "application/json")
        .body(r#"{"prompt":"PRIVATE"}"#)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.expect("a JSON answer"))
}

#[tokio::test]
async fn the_seeds_route_families_hooklog_does_not_serve_answer_501_and_others_404() {
    let app = spawn_app().await;
    for (method, path, family, status, shown) in [
        (
            Method::GET,
            "/notices",
            "notices",
            "unsupported",
            "/notices",
        ),
        (Method::POST, "/notice", "notices", "unsupported", "/notice"),
        (
            Method::POST,
            "/task-queue/q-1/dispatch",
            "task-queue",
            "unsupported",
            "/task-queue/...",
        ),
        (
            Method::GET,
            "/command-center/plans",
            "command-center",
            "unsupported",
            "/command-center/...",
        ),
        (Method::POST, "/llm/plan", "llm", "unsupported", "/llm/..."),
        (
            Method::GET,
            "/docker/ps/SECRET-ID?token=PRIVATE",
            "container",
            "unsupported",
            "/docker/...",
        ),
        (
            Method::POST,
            "/internal-heroes/h1/prompt",
            "terminal",
            "unsupported",
            "/internal-heroes/...",
        ),
        (
            Method::POST,
            "/worker/execute",
            "worker-execution",
            "separate-surface",
            "/worker/...",
        ),
        (
            Method::GET,
            "/warroom",
            "warroom-worker",
            "separate-surface",
            "/warroom",
        ),
        (
            Method::POST,
            "/warroom/create",
            "warroom-worker",
            "separate-surface",
            "/warroom/...",
        ),
    ] {
        let (code, body) = send(&app, method.clone(), path).await;
        assert_eq!(code, StatusCode::NOT_IMPLEMENTED, "{method} {path}: {body}");
        assert_eq!(
            body,
            json!({"error": "not_implemented", "method": method.as_str(), "path": shown,
                   "family": family, "status": status,
                   "docs": "docs/api.md#routes-hooklog-does-not-serve",
                   "message": format!("hooklog records agent events; it does not serve FactionOS's {family} routes")}),
            "{method} {path}"
        );
        let text = body.to_string();
        assert!(
            !text.contains("SECRET") && !text.contains("PRIVATE"),
            "{text}"
        );
    }
    for path in ["/nowhere", "/noticeboard", "/sessions/s/x/y", "/replay"] {
        let (code, body) = send(&app, Method::GET, path).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(body, json!({"error": "not_found", "path": path}));
    }
    // Served routes are untouched: a known path, a wrong method.
    let (code, body) = send(&app, Method::DELETE, "/heroes").await;
    assert_eq!(
        (code, body["error"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
    assert!(body.get("accepted").is_none());
    assert_eq!(app.event_count(), 0);
}

#[tokio::test]
async fn every_refusal_of_post_event_says_accepted_false() {
    let app = spawn_app_with(|c| {
        c.security.token = Some(Secret("s3cret".into()));
        c.security.cors_origins = vec!["http://ok.example".into()];
        c.security.rate_limit = Some(RateLimit {
            per_second: 0.01,
            burst: 3.0,
        });
    })
    .await;
    let event = |token: Option<&str>, origin: Option<&str>, body: &str| {
        let mut request = app
            .client
            .post(format!("{}/event", app.url))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            let retry = response.headers().get("retry-after").is_some();
            (status, retry, response.json::<Value>().await.unwrap())
        }
    };
    let hook = r#"{"hook_event_name":"Stop","session_id":"s"}"#;
    let cases = [
        (
            event(None, None, hook).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            event(Some("s3cret"), Some("http://evil.example"), hook).await,
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
        ),
        (
            event(Some("s3cret"), None, "[1]").await,
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (event(Some("s3cret"), None, hook).await, StatusCode::OK, ""),
        (
            event(Some("s3cret"), None, hook).await,
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
        ),
    ];
    for ((status, retry, body), want, error) in cases {
        assert_eq!(status, want, "{body}");
        if want == StatusCode::OK {
            assert_eq!(body["accepted"], true);
            continue;
        }
        assert_eq!(body["accepted"], false, "{body}");
        assert_eq!(body["error"], error, "{body}");
        assert_eq!(
            retry,
            want == StatusCode::TOO_MANY_REQUESTS,
            "Retry-After kept"
        );
    }
    // The same guards on another route keep the shared envelope alone.
    let (status, body) = app.get("/heroes").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(body.get("accepted").is_none(), "{body}");
    assert_eq!(app.event_count(), 1, "only the accepted event is stored");
}

#[tokio::test]
async fn a_wrong_method_and_a_wrong_host_on_event_say_accepted_false_too() {
    let app = spawn_app().await;
    let (status, body) = send(&app, Method::GET, "/event").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(body["accepted"], false, "{body}");
    let response = app
        .client
        .post(format!("{}/event", app.url))
        .header("host", "evil.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        (body["error"].as_str(), &body["accepted"]),
        (Some("host_not_allowed"), &json!(false))
    );
}

#[tokio::test]
async fn health_says_it_is_not_a_mock() {
    let app = spawn_app().await;
    let (status, body) = app.get("/health").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["mock"], false);
    assert_eq!(body["ok"], true);
}
