//! The web view's routes without a browser: pages and files with their CSP, the login form
//! and its cookie (accepted only from the server's own origin), the scrubber's projections
//! route against `hooklog replay --until`'s code, the pulse, and the JSON envelope for every
//! bad input.

use crate::common;

use common::{spawn_app, spawn_app_with};
use hooklog::config::Secret;
use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "w3b-token";

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn pages_and_files_are_served_with_a_strict_csp_and_bad_input_gets_the_envelope() {
    let app = spawn_app().await;
    for path in [
        "/",
        "/s/abc",
        "/coordination",
        "/cost",
        "/assets/app.js",
        "/assets/app.css",
    ] {
        let response = app
            .client
            .get(format!("{}{path}", app.url))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap();
        assert!(csp.starts_with("default-src 'self'"), "{path}: {csp}");
    }
    let (status, body) = app.get("/assets/nope.js").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    for bad in [
        "/s/abc?x=1",
        "/pulse?minutes=0",
        "/pulse?minutes=x",
        "/pulse?other=1",
        "/sessions/s1/projections",
        "/sessions/s1/projections?until=0",
        "/sessions/s1/projections?until=x",
    ] {
        let (status, body) = app.get(bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["error"], "invalid_request", "{bad}");
    }
    let (status, _) = app.get("/sessions/nobody/projections?until=1").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = app
        .post_raw("/login", "application/json", b"{}".to_vec())
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
}

#[tokio::test]
async fn the_projections_route_answers_what_replay_until_prints_and_the_pulse_counts() {
    let app = spawn_app().await;
    app.post_fixture("/event", "codex-lifecycle").await;
    let (status, body) = app
        .get("/sessions/019a7c3e-5b2d-7f10-9c4e-2a6b8d0f1e3c/projections?until=3")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["position"], 3);
    let lines: Vec<&str> = body["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        lines[0],
        format!(
            "after #3 {} (3 events applied):",
            body["type"].as_str().unwrap()
        )
    );
    assert!(body["tables"]["heroes"][0]["state"].is_string(), "{body}");
    // The command, on the same file, prints the same lines.
    let printed = std::process::Command::new(env!("CARGO_BIN_EXE_hooklog"))
        .args([
            "replay",
            "--session",
            "019a7c3e-5b2d-7f10-9c4e-2a6b8d0f1e3c",
            "--until",
            "3",
            "--db",
        ])
        .arg(&app.db_path)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(printed.stdout).unwrap(),
        format!("{}\n", lines.join("\n"))
    );
    let (status, body) = app
        .get("/sessions/019a7c3e-5b2d-7f10-9c4e-2a6b8d0f1e3c/projections?until=999")
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    let (_, pulse) = app.get("/pulse").await;
    assert_eq!(pulse["minutes"], 60);
    let counts = &pulse["sessions"][0]["counts"];
    assert_eq!(counts.as_array().unwrap().len(), 60);
    // Posted this minute, or the one before if the minute turned since.
    let recent = counts[58].as_i64().unwrap() + counts[59].as_i64().unwrap();
    assert_eq!(
        recent, 8,
        "the fixture's 8 events, in the last minutes: {pulse}"
    );
}

#[tokio::test]
async fn a_login_sets_a_cookie_that_counts_only_on_the_servers_own_origin() {
    let app = spawn_app_with(|c| {
        c.security.token = Some(Secret(TOKEN.into()));
        c.security.cors_origins = vec!["http://localhost:5173".into()];
    })
    .await;
    let client = no_redirects();
    let page = client
        .get(format!("{}/s/x", app.url))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("<form method=\"post\" action=\"/login\"")
    );
    let login = |token: &str| {
        client
            .post(format!("{}/login", app.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}&next=%2Fs%2Fx"))
            .send()
    };
    let wrong = login("nope").await.unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(wrong.headers().get("set-cookie").is_none());
    let right = login(TOKEN).await.unwrap();
    assert_eq!(right.status(), StatusCode::SEE_OTHER);
    assert_eq!(right.headers()["location"], "/s/x");
    let cookie = right.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(!cookie.contains(TOKEN), "the cookie is not the token");
    let pair = cookie.split(';').next().unwrap().to_string();

    let read = |origin: Option<&'static str>| {
        let mut request = client
            .get(format!("{}/sessions", app.url))
            .header("cookie", pair.clone());
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    assert_eq!(read(None).await.unwrap().status(), StatusCode::OK);
    let own: &'static str = Box::leak(app.url.clone().into_boxed_str());
    assert_eq!(read(Some(own)).await.unwrap().status(), StatusCode::OK);
    // An allowed CORS origin may call with a token, but not ride on the user's cookie.
    assert_eq!(
        read(Some("http://localhost:5173")).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    let other = read(Some("http://evil.example")).await.unwrap();
    assert_eq!(other.status(), StatusCode::FORBIDDEN);
    // The page's own POST (an acknowledgement) passes the Origin check with the cookie.
    let ack = client
        .post(format!("{}/alerts/1/ack", app.url))
        .header("cookie", pair.clone())
        .header("origin", own)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(
        ack.status(),
        StatusCode::NOT_FOUND,
        "past the guards: no alert 1"
    );
    let (status, body) = (ack.status(), ack.json::<Value>().await.unwrap());
    assert_eq!(
        (status, &body["error"]),
        (StatusCode::NOT_FOUND, &json!("not_found"))
    );
    let logout = client
        .post(format!("{}/logout", app.url))
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), StatusCode::SEE_OTHER);
    assert!(
        logout.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
}

/// `POST /login` on the real binary at `url`, with `token`, from `client`.
async fn log_in(client: &reqwest::Client, url: &str, token: &str) -> reqwest::Response {
    client
        .post(format!("{url}/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}&next=%2F"))
        .send()
        .await
        .unwrap()
}

/// `GET /sessions` with `cookie` (`name=value`) and nothing else: its status.
async fn read_with(client: &reqwest::Client, url: &str, cookie: &str) -> StatusCode {
    let response = client
        .get(format!("{url}/sessions"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    response.status()
}

/// Issue 44, finding 7: the login cookie was the token's digest: the same at every login,
/// valid forever, still valid after `/logout`. Now each login is its own random session that
/// lasts a day (`Max-Age`), `/logout` ends it (and only it), and a restart with another token
/// ends them all.
#[tokio::test]
async fn each_login_is_its_own_expiring_session_that_logout_and_a_restart_end() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hooklog.db");
    let server = common::ServerProcess::start_with(&db, "127.0.0.1:0", |c| {
        c.args(["--token", TOKEN]);
    });
    let client = no_redirects();
    let mut cookies = Vec::new();
    for _ in 0..2 {
        let response = log_in(&client, &server.url, TOKEN).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let set = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(set.contains("; Max-Age=86400"), "a day: {set}");
        let pair = set.split(';').next().unwrap().to_string();
        let value = pair.strip_prefix("hooklog_session=").unwrap();
        assert_eq!(value.len(), 64, "{pair}");
        assert!(!value.contains(TOKEN));
        cookies.push(pair);
    }
    let (first, second) = (&cookies[0], &cookies[1]);
    assert_ne!(
        first, second,
        "each login its own session, not the token's digest"
    );
    for cookie in &cookies {
        assert_eq!(
            read_with(&client, &server.url, cookie).await,
            StatusCode::OK
        );
    }

    let logout = client
        .post(format!("{}/logout", server.url))
        .header("cookie", first)
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        read_with(&client, &server.url, first).await,
        StatusCode::UNAUTHORIZED,
        "a session logged out lets nobody in"
    );
    assert_eq!(
        read_with(&client, &server.url, second).await,
        StatusCode::OK,
        "another login stays"
    );

    drop(server);
    let server = common::ServerProcess::start_with(&db, "127.0.0.1:0", |c| {
        c.args(["--token", "another-token"]);
    });
    assert_eq!(
        read_with(&client, &server.url, second).await,
        StatusCode::UNAUTHORIZED,
        "a restart with another token ends every session"
    );
}

/// Issue 44, finding 7: `/login` took 500 wrong guesses in 0.05 s. Now after five wrong tokens
/// in a row from one address, its next tries are answered `429` (the login form again, with
/// `Retry-After`) without the token being looked at, even the right one, until the wait is
/// over; another address is not held up.
#[tokio::test]
async fn wrong_tokens_at_login_make_that_address_wait() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        common::ServerProcess::start_with(&dir.path().join("hooklog.db"), "127.0.0.1:0", |c| {
            c.args(["--token", TOKEN]);
        });
    let client = no_redirects();
    for _ in 0..5 {
        let wrong = log_in(&client, &server.url, "guess").await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    }
    let held = log_in(&client, &server.url, TOKEN).await;
    assert_eq!(held.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(held.headers()["retry-after"], "1");
    assert!(held.headers().get("set-cookie").is_none());
    assert!(held.text().await.unwrap().contains("wait 1 s"));

    let elsewhere = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    let other = log_in(&elsewhere, &server.url, TOKEN).await;
    assert_eq!(other.status(), StatusCode::SEE_OTHER, "another address");

    // Once the wait is over, the right token is looked at again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let again = log_in(&client, &server.url, TOKEN).await;
        if again.status() == StatusCode::SEE_OTHER {
            break;
        }
        assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(std::time::Instant::now() < deadline, "still held");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
