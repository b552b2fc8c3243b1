//! Clients that stop reading, stop talking, or send what a parser could read two ways: each
//! gets a bounded, documented cut-off or a clear refusal, and the server stays up for the
//! others (docs/security.md, "Connections").

use crate::common;

use common::sse::SseReader;
use common::{ServerProcess, spawn_app, spawn_app_with, stats};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The server process's peak resident memory (`VmHWM`), in bytes.
fn peak_rss(server: &ServerProcess) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kib * 1024
}

fn addr(url: &str) -> String {
    url.trim_start_matches("http://").to_string()
}

/// Raises this test process's open-file limit to at least `needed` (the server it starts
/// inherits it), if it may; returns whether it is that high now.
fn open_files_at_least(needed: u64) -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return false;
        }
        if limit.rlim_cur < needed {
            // Past the hard limit where this process may (root may raise it), else up to it.
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max.max(needed),
                rlim_max: limit.rlim_max.max(needed),
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                limit.rlim_cur = limit.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        }
    }
    limit.rlim_cur >= needed
}

#[tokio::test]
async fn readers_that_stop_reading_huge_events_are_cut_off_and_memory_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with(&dir.path().join("hooklog.db"), "127.0.0.1:0", |c| {
        c.args(["--stall-timeout", "2s"]);
    });
    let client = reqwest::Client::new();
    let blob = "x".repeat(900 * 1024);
    for i in 0..600 {
        let event = json!({"type": "big", "sessionId": "bigp", "payload": {"i": i, "blob": blob}});
        let response = client
            .post(format!("{}/events", server.url))
            .json(&event)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }

    // Three clients with a small receive buffer ask for the whole session and read nothing.
    let mut stalled = Vec::new();
    for _ in 0..3 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket
            .connect(addr(&server.url).parse().unwrap())
            .await
            .unwrap();
        let request = format!(
            "GET /sessions/bigp/events HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
            addr(&server.url)
        );
        tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
            .await
            .unwrap();
        stalled.push(stream);
    }
    // Each is closed once it has taken nothing for the stall timeout.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let closed = stats(&client, &server.url).await["connections"]["closedForStalling"]
            .as_u64()
            .unwrap();
        if closed >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{closed} of 3 stalled readers closed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(stalled);

    // A reader that reads gets every event, once, in order.
    let response = client
        .get(format!("{}/sessions/bigp/events", server.url))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut frames = SseReader::new(response);
    for expected in 1..=600 {
        let frame = frames
            .next_event(Duration::from_secs(30))
            .await
            .expect("a frame");
        assert_eq!(frame.position(), expected);
        assert_eq!(frame.envelope()["payload"]["i"], expected - 1);
    }
    let peak = peak_rss(&server);
    eprintln!("server peak RSS: {} MB", peak / 1024 / 1024);
    assert!(
        peak < 300 * 1024 * 1024,
        "the server's peak RSS was {} MB",
        peak / 1024 / 1024
    );
}

#[tokio::test]
async fn a_thousand_idle_sockets_do_not_stop_a_valid_post() {
    if !open_files_at_least(1_400) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must allow 1,400 open files"
        );
        eprintln!("skipped: this process may not open 1,400 files (RLIMIT_NOFILE)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(&dir.path().join("hooklog.db"), "127.0.0.1:0");
    let target = addr(&server.url);
    let mut idle = Vec::new();
    for i in 0..1_100 {
        let mut socket = TcpStream::connect(&target).unwrap();
        match i % 3 {
            0 => {}                                              // sends nothing
            1 => socket.write_all(b"POST /events HTT").unwrap(), // half a request line
            _ => socket
                .write_all(b"GET /health HTTP/1.1\r\nHost: x")
                .unwrap(), // half a head
        }
        idle.push(socket);
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let response = client
        .post(format!("{}/event?reply=empty", server.url))
        .json(&json!({"session_id": "s1", "hook_event_name": "Stop"}))
        .send()
        .await
        .expect("answered within a second");
    assert_eq!(response.status(), StatusCode::OK);
    let open = stats(&client, &server.url).await["connections"]["open"]
        .as_u64()
        .unwrap();
    assert!(open >= 1_100, "{open} connections open");
}

/// Reads until the server closes the connection (or `within` passes); returns what it sent.
fn read_until_closed(socket: &mut TcpStream, within: Duration) -> Option<String> {
    socket.set_read_timeout(Some(within)).unwrap();
    let mut answer = Vec::new();
    match socket.read_to_end(&mut answer) {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            Some(String::from_utf8_lossy(&answer).into_owned())
        }
        Err(_) => None,
    }
}

#[tokio::test]
async fn silent_half_sent_and_idle_connections_are_closed_and_the_cap_refuses_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with(&dir.path().join("hooklog.db"), "127.0.0.1:0", |c| {
        c.args(["--header-timeout", "1s", "--max-connections", "20"]);
    });
    let target = addr(&server.url);
    let mut silent = TcpStream::connect(&target).unwrap();
    let mut half = TcpStream::connect(&target).unwrap();
    half.write_all(b"GET /heal").unwrap();
    let mut kept_alive = TcpStream::connect(&target).unwrap();
    kept_alive
        .write_all(format!("GET /health HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .unwrap();
    // Twenty connections at once: the 21st is refused with a 503 and closed.
    let mut others: Vec<TcpStream> = (0..17)
        .map(|_| TcpStream::connect(&target).unwrap())
        .collect();
    let mut refused = TcpStream::connect(&target).unwrap();
    let answer = read_until_closed(&mut refused, Duration::from_secs(5)).expect("closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    assert!(
        answer.contains("\"error\":\"too_many_connections\""),
        "{answer}"
    );

    // After the header timeout each is closed: one that sent nothing, one that sent half a
    // request line, one idle after its answer.
    for (name, socket) in [
        ("silent", &mut silent),
        ("half", &mut half),
        ("kept alive", &mut kept_alive),
    ] {
        let answer = read_until_closed(socket, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("the {name} connection was not closed"));
        if name == "kept alive" {
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        }
    }
    for socket in &mut others {
        read_until_closed(socket, Duration::from_secs(10)).expect("closed");
    }
    let client = reqwest::Client::new();
    let stats = stats(&client, &server.url).await;
    assert_eq!(stats["connections"]["refused"], 1, "{stats}");
    let (status, _) = {
        let response = client
            .post(format!("{}/events", server.url))
            .json(&json!({"type": "after"}))
            .send()
            .await
            .unwrap();
        (response.status(), ())
    };
    assert_eq!(status, StatusCode::OK);
}

// Multi-threaded: the test's blocking socket calls must not stop the server in this process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_past_its_deadline_is_refused_and_not_stored() {
    let app = spawn_app_with(|c| c.body_deadline = Duration::from_millis(800)).await;
    let target = app.url.trim_start_matches("http://").to_string();
    let body =
        br#"{"type":"slow","payload":{"pad":"..........................................."}}"#;
    let mut socket = TcpStream::connect(&target).unwrap();
    socket
        .write_all(
            format!(
                "POST /events HTTP/1.1\r\nHost: {target}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    // The answer is read as it comes, while the body trickles in.
    let mut reading = socket.try_clone().unwrap();
    let reader =
        std::thread::spawn(move || read_until_closed(&mut reading, Duration::from_secs(10)));
    // A byte every 50 ms: never idle for the 30 s idle timeout, and not whole in 800 ms.
    for byte in body {
        if socket.write_all(&[*byte]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let answer = reader.join().unwrap().expect("answered");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(app.event_count(), 0);
}

#[tokio::test]
async fn malformed_and_negative_cursors_are_400_on_every_stream_and_its_probe() {
    let app = spawn_app().await;
    app.post_session_events("s1", 3).await;
    for path in [
        "/events",
        "/sessions/s1/events",
        "/factory-sessions/s1/events",
    ] {
        for accept in ["text/event-stream", "application/json"] {
            if path == "/events" && accept == "application/json" {
                continue; // a JSON page, which takes no Last-Event-ID
            }
            for bad in [&b"-5"[..], b"-1", b"\xff\xfe"] {
                let response = app
                    .client
                    .get(format!("{}{path}", app.url))
                    .header("accept", accept)
                    .header(
                        "last-event-id",
                        reqwest::header::HeaderValue::from_bytes(bad).unwrap(),
                    )
                    .send()
                    .await
                    .unwrap();
                assert_eq!(
                    response.status(),
                    StatusCode::BAD_REQUEST,
                    "{path} {accept} {bad:?}"
                );
                let body: Value = response.json().await.unwrap();
                assert_eq!(body["error"], "invalid_request", "{path} {bad:?}: {body}");
            }
        }
    }
}

#[tokio::test]
async fn a_non_ascii_last_event_id_is_honoured_as_the_id_it_is() {
    let app = spawn_app().await;
    let (status, _) = app
        .post_json(&json!([
            {"id": "e-1", "type": "a", "sessionId": "s1"},
            {"id": "café", "type": "b", "sessionId": "s1"},
            {"id": "e-3", "type": "c", "sessionId": "s1"},
        ]))
        .await;
    assert_eq!(status, StatusCode::OK);
    let cafe = reqwest::header::HeaderValue::from_bytes("café".as_bytes()).unwrap();
    // The stream resumes after it: the first frame is the event after `café`.
    let response = app
        .client
        .get(format!("{}/events", app.url))
        .header("accept", "text/event-stream")
        .header("last-event-id", cafe.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let frame = SseReader::new(response)
        .next_event(Duration::from_secs(5))
        .await
        .expect("a frame");
    assert_eq!(frame.position(), 3);
    // The probe agrees, and an id nobody stored is refused, never ignored.
    let probe = app
        .client
        .get(format!("{}/sessions/s1/events", app.url))
        .header("accept", "application/json")
        .header("last-event-id", cafe)
        .send()
        .await
        .unwrap();
    let probe: Value = probe.json().await.unwrap();
    assert_eq!(probe["outcome"], "STREAM_READY", "{probe}");
    let unknown = app
        .client
        .get(format!("{}/sessions/s1/events", app.url))
        .header("accept", "text/event-stream")
        .header(
            "last-event-id",
            reqwest::header::HeaderValue::from_bytes("thé".as_bytes()).unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
}

/// Sends `request` as it is and returns the status line of the answer.
fn raw_status(target: &str, request: &str) -> String {
    let mut socket = TcpStream::connect(target).unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    let answer = read_until_closed(&mut socket, Duration::from_secs(5)).unwrap_or_default();
    answer.lines().next().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_must_be_one_and_an_absolute_target_must_name_this_server() {
    let app = spawn_app().await;
    let target = app.url.trim_start_matches("http://").to_string();
    let cases = [
        (
            format!(
                "GET /health HTTP/1.1\r\nHost: {target}\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
            ),
            "400",
        ),
        (
            "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n".to_string(),
            "400",
        ),
        (
            format!(
                "GET http://evil.example/health HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n"
            ),
            "403",
        ),
        (
            format!(
                "GET http://{target}/health HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n"
            ),
            "200",
        ),
        ("GET /health HTTP/1.0\r\n\r\n".to_string(), "200"),
        (
            format!("GET /health HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n"),
            "200",
        ),
    ];
    for (request, status) in cases {
        let line = raw_status(&target, &request);
        assert!(line.contains(status), "{request:?} -> {line}");
    }
}

#[tokio::test]
async fn a_body_that_names_a_key_twice_is_400_on_every_ingest_route_and_stores_nothing() {
    let app = spawn_app().await;
    let cases = [
        ("/events", r#"{"type":"a","type":"b"}"#),
        (
            "/events",
            r#"[{"type":"a"},{"type":"b","payload":{"x":1,"x":2}}]"#,
        ),
        (
            "/event",
            r#"{"hook_event_name":"Stop","session_id":"s1","session_id":"s2"}"#,
        ),
        (
            "/event?reply=empty",
            r#"{"hook_event_name":"Stop","hook_event_name":"SessionEnd"}"#,
        ),
        (
            "/event/normalized",
            r#"{"type":"ended","sessionId":"s","sessionId":"t","timestamp":1}"#,
        ),
        ("/factory-sessions/f1/events", r#"{"id":"x","id":"y"}"#),
        ("/claims", r#"{"chat":"c1","chat":"c2","sessionId":"s1"}"#),
    ];
    for (route, body) in cases {
        let response = app
            .client
            .post(format!("{}{route}", app.url))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{route} {body}");
        let answer: Value = response.json().await.unwrap();
        let text = answer.to_string();
        assert!(
            text.contains("duplicate key") || text.contains("Invalid JSON"),
            "{route}: {answer}"
        );
    }
    let ndjson = app
        .post_raw(
            "/events",
            "application/x-ndjson",
            b"{\"type\":\"a\"}\n{\"type\":\"b\",\"type\":\"c\"}\n".to_vec(),
        )
        .await;
    assert_eq!(ndjson.0, StatusCode::BAD_REQUEST);
    assert_eq!(ndjson.1["details"]["line"], 2, "{}", ndjson.1);
    assert_eq!(app.event_count(), 0);
}

/// Issue 44, finding 6: a WebSocket keeps its connection's place under `--max-connections`
/// for its life, `/stats` counts it open, and WebSockets may take all places but an eighth:
/// the next is refused with `503 too_many_connections` while `/health` (a plain request)
/// still answers. Closing sockets frees their places.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_hold_their_connection_place_and_past_the_cap_are_refused_while_health_answers()
{
    const MAX: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with(&dir.path().join("hooklog.db"), "127.0.0.1:0", |c| {
        c.args(["--max-connections", &MAX.to_string()]);
    });
    let ws = server.url.replacen("http://", "ws://", 1) + "/";
    let mut sockets = Vec::new();
    let refusal = loop {
        assert!(
            sockets.len() <= MAX,
            "more WebSockets open than connection places"
        );
        match tokio_tungstenite::connect_async(&ws).await {
            Ok((socket, _)) => sockets.push(socket),
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => break response,
            Err(other) => panic!("the refusal is an HTTP answer, not {other}"),
        }
    };
    assert_eq!(
        sockets.len(),
        MAX - MAX / 8,
        "an eighth kept for plain requests"
    );
    assert_eq!(refusal.status(), 503);
    assert_eq!(refusal.headers()["retry-after"], "1");
    let body: Value =
        serde_json::from_slice(refusal.body().as_deref().unwrap_or_default()).unwrap();
    assert_eq!(body["error"], "too_many_connections", "{body}");

    let client = reqwest::Client::new();
    let health = client
        .get(format!("{}/health", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(
        health.status(),
        StatusCode::OK,
        "health answers past the WebSockets' cap"
    );
    // Read to its end, so the client's connection goes back to its pool and is reused.
    health.bytes().await.unwrap();
    let open = stats(&client, &server.url).await["connections"]["open"]
        .as_u64()
        .unwrap() as usize;
    assert!(
        open > sockets.len(),
        "every socket counted open (and this request): {open}"
    );

    // Closed sockets free their places: another WebSocket is accepted.
    for mut socket in sockets.drain(..3) {
        socket.close(None).await.unwrap();
    }
    // Their places come back as their connections end (not at once): until then the next
    // upgrade is still refused; without the release it would be refused for good.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut accepted = Vec::new();
    while accepted.len() < 3 {
        match tokio_tungstenite::connect_async(&ws).await {
            Ok((socket, response)) => {
                assert_eq!(response.status(), 101);
                accepted.push(socket);
                continue;
            }
            Err(tokio_tungstenite::tungstenite::Error::Http(refused)) => {
                assert_eq!(refused.status(), 503);
                assert!(
                    Instant::now() < deadline,
                    "{} WebSockets accepted 10 s after three closed, not 3",
                    accepted.len()
                );
            }
            Err(other) => panic!("the refusal is an HTTP answer, not {other}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The places are the three freed, no more.
    match tokio_tungstenite::connect_async(&ws).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(refused)) => {
            assert_eq!(refused.status(), 503)
        }
        other => panic!(
            "a fifteenth WebSocket: {:?}",
            other.map(|(_, r)| r.status())
        ),
    }
}
