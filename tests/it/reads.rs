//! Read routes: paging the log, one event by id, alerts, health, and JSON errors for unknown
//! routes and bad query strings.

use crate::common;

use common::spawn_app;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn seed(app: &common::TestApp) {
    let events: Vec<Value> = (0..30)
        .map(|i| json!({"type": "PreToolUse", "sessionId": if i % 3 == 0 { "a" } else { "b" }, "payload": {"i": i}}))
        .collect();
    assert_eq!(app.post_json(&Value::Array(events)).await.0, StatusCode::OK);
}

#[tokio::test]
async fn pages_walk_the_whole_log_in_order() {
    let app = spawn_app().await;
    seed(&app).await;
    let mut after = 0;
    let mut seen = Vec::new();
    loop {
        let (status, page) = app
            .get(&format!("/events?after_sequence={after}&limit=7"))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(page["headSequence"], 30);
        let events = page["events"].as_array().unwrap();
        if events.is_empty() {
            assert_eq!(page["nextAfterSequence"], after);
            break;
        }
        assert!(events.len() <= 7);
        for e in events {
            assert_eq!(e["schemaVersion"], "hooklog.event.v1");
            seen.push(e["context"]["sequence"].as_i64().unwrap());
        }
        after = page["nextAfterSequence"].as_i64().unwrap();
    }
    assert_eq!(seen, (1..=30).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_session_page_holds_only_that_session_in_session_order() {
    let app = spawn_app().await;
    seed(&app).await;
    let (_, page) = app
        .get("/events?session=a&after_sequence=4&limit=100")
        .await;
    let events = page["events"].as_array().unwrap();
    let positions: Vec<(i64, i64)> = events
        .iter()
        .map(|e| {
            (
                e["context"]["sequence"].as_i64().unwrap(),
                e["context"]["sessionSequence"].as_i64().unwrap(),
            )
        })
        .collect();
    // Session a holds sequences 1, 4, 7, ..., 28 (session sequences 1..10); after 4: from 7.
    assert_eq!(
        positions,
        (3..=10).map(|n| (3 * n - 2, n)).collect::<Vec<_>>()
    );
    assert!(events.iter().all(|e| e["context"]["sessionId"] == "a"));
    let (_, none) = app.get("/events?session=nobody").await;
    assert_eq!(none["events"], json!([]));
}

#[tokio::test]
async fn one_event_by_id_or_404() {
    let app = spawn_app().await;
    let (_, ack) = app
        .post_json(&json!({"id": "my-id", "type": "Stop", "payload": {"k": "v"}}))
        .await;
    assert_eq!(ack["events"][0]["id"], "my-id");
    let (status, event) = app.get("/events/my-id").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(event["id"], "my-id");
    assert_eq!(event["type"], "Stop");
    assert_eq!(event["payload"]["k"], "v");
    assert_eq!(event["context"]["source"], "api");
    assert!(event["context"].get("sessionId").is_none());
    let (status, missing) = app.get("/events/other-id").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(missing["error"], "not_found");
}

#[tokio::test]
async fn bad_query_strings_are_400_envelopes() {
    let app = spawn_app().await;
    for path in [
        "/events?after_sequence=abc",
        "/events?after_sequence=-1",
        "/events?limit=0",
        "/events?limit=5000",
        "/alerts?limit=0",
        "/alerts?after_id=x",
        "/alerts?after_id=-2",
        "/events?sesion=typo",
    ] {
        let (status, body) = app.get(path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"], "invalid_request", "{path}");
    }
}

#[tokio::test]
async fn alerts_filter_by_kind_and_page_by_id() {
    let app = spawn_app().await;
    let unknown: Vec<Value> = (0..5)
        .map(|i| json!({"type": format!("custom_{i}")}))
        .collect();
    app.post_json(&Value::Array(unknown)).await;
    let (_, all) = app.get("/alerts?kind=unknownEventType&limit=3").await;
    let ids: Vec<i64> = all["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3]);
    let (_, rest) = app.get("/alerts?after_id=3").await;
    assert_eq!(rest["alerts"].as_array().unwrap().len(), 2);
    let (_, other) = app.get("/alerts?kind=hungOwner").await;
    assert_eq!(other["alerts"], json!([]));
}

#[tokio::test]
async fn health_reports_the_head_and_unknown_routes_are_json_404s() {
    let before_start = std::time::Instant::now();
    let app = spawn_app().await;
    let (status, health) = app.get("/health").await;
    let up_at_most = before_start.elapsed().as_millis() as u64;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["ok"], true);
    assert_eq!(health["headSequence"], 0);
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    // The server's clock, as an RFC 3339 UTC time, and how long it has been up.
    let time = chrono::DateTime::parse_from_rfc3339(health["time"].as_str().unwrap()).unwrap();
    let skew = (chrono::Utc::now() - time.to_utc()).num_seconds().abs();
    assert!(skew < 60, "time {} is {skew} s away", health["time"]);
    let uptime = health["uptimeMs"].as_u64().expect("uptimeMs is a number");
    assert!(
        uptime <= up_at_most,
        "uptimeMs {uptime} > {up_at_most} since start"
    );
    app.post_json(&json!({"type": "Stop"})).await;
    let later = app.get("/health").await.1;
    assert_eq!(later["headSequence"], 1);
    assert!(later["uptimeMs"].as_u64().unwrap() >= uptime, "{later}");
    // And it counts: within a deadline it passes a millisecond it had not reached.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while app.get("/health").await.1["uptimeMs"].as_u64().unwrap() <= uptime {
        assert!(
            std::time::Instant::now() < deadline,
            "uptimeMs stays at {uptime}"
        );
        tokio::task::yield_now().await;
    }

    let (status, body) = app.get("/no/such/route?secret=abc").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        json!({"error": "not_found", "path": "/no/such/route"})
    );
    let response = app
        .client
        .delete(format!("{}/events", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"],
        "method_not_allowed"
    );
}

/// One spelling of a session filter on every route, its other name accepted; an empty value
/// of a parameter that must parse is an absent one (issue 42).
#[tokio::test]
async fn a_session_filter_is_session_on_every_route_and_an_empty_parameter_is_absent() {
    let app = spawn_app().await;
    seed(&app).await;
    for session in ["a", "b"] {
        let start = json!({"hook_event_name": "SessionStart", "session_id": session,
                           "source": "startup"});
        assert_eq!(app.post_hook("/event", &start).await.0, StatusCode::OK);
        let prompt = json!({"hook_event_name": "UserPromptSubmit", "session_id": session,
                            "prompt": "list the files"});
        assert_eq!(app.post_hook("/event", &prompt).await.0, StatusCode::OK);
    }
    for (session, call) in [("a", "t1"), ("b", "t2"), ("b", "t3")] {
        let body = json!({"hook_event_name": "PreToolUse", "session_id": session,
                          "tool_name": "Bash", "tool_use_id": call,
                          "tool_input": {"command": "ls"}});
        assert_eq!(app.post_hook("/event", &body).await.0, StatusCode::OK);
    }
    // (route, the list's key, how many rows session b has)
    let routes = [
        ("/events?limit=1000&", "events", 24),
        ("/tool-uses?", "toolUses", 2),
        ("/missions?", "missions", 1),
        ("/permission-requests?", "permissionRequests", 0),
    ];
    for (route, key, n) in routes {
        let (status, all) = app.get(route).await;
        assert_eq!(status, StatusCode::OK, "{route}: {all}");
        let (status, b) = app.get(&format!("{route}session=b")).await;
        assert_eq!(status, StatusCode::OK, "{route}: {b}");
        assert_eq!(b[key].as_array().unwrap().len(), n, "{route}session=b: {b}");
        if n > 0 {
            assert!(b[key].as_array().unwrap().len() < all[key].as_array().unwrap().len());
        }
        let (status, other) = app.get(&format!("{route}sessionId=b")).await;
        assert_eq!(status, StatusCode::OK, "{route}: {other}");
        assert_eq!(
            other[key], b[key],
            "{route}: sessionId is session's other name"
        );
    }
    for route in ["/search?q=ls&sessionId=b", "/usage?sessionId=b"] {
        assert_eq!(app.get(route).await.0, StatusCode::OK, "{route}");
    }
    // The parameters schemathesis found answered 400 when empty.
    assert_eq!(app.get("/search?q=ls&cursor=").await.0, StatusCode::OK);
    assert_eq!(app.get("/usage?since=").await.0, StatusCode::OK);
    assert_eq!(
        app.get("/search?q=ls&since=&until=").await.0,
        StatusCode::OK
    );
    assert_eq!(app.get("/usage?tz=").await.0, StatusCode::OK);
    // Anything else is taken as given: an empty value outside an enum is refused, as the
    // description says it must be.
    assert_eq!(app.get("/heroes?state=").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(
        app.get("/tool-uses?limit=").await.0,
        StatusCode::BAD_REQUEST
    );
}

/// Issue 43: `GET /tool-uses` opens with the newest tool uses, pages back with `before` and
/// `nextBefore`, and filters by kind and tool as well as status and session.
#[tokio::test]
async fn tool_uses_open_with_the_newest_and_page_back_by_kind_tool_and_status() {
    let app = spawn_app().await;
    let mut calls = Vec::new();
    for i in 0..9 {
        let session = ["a", "b", "c"][i % 3];
        let (tool, input) = match i % 3 {
            0 => ("Bash", json!({"command": format!("cargo test {i}")})),
            1 => ("Read", json!({"file_path": format!("/src/{i}.rs")})),
            _ => ("Grep", json!({"pattern": format!("fn {i}")})),
        };
        let call = format!("call-{i}");
        let pre = json!({"hook_event_name": "PreToolUse", "session_id": session,
                         "tool_name": tool, "tool_use_id": call, "tool_input": input});
        assert_eq!(app.post_hook("/event", &pre).await.0, StatusCode::OK);
        if i % 2 == 0 {
            let mut post = pre.clone();
            post["hook_event_name"] = json!("PostToolUse");
            post["tool_response"] = json!({"ok": true});
            assert_eq!(app.post_hook("/event", &post).await.0, StatusCode::OK);
        }
        calls.push(call);
    }
    let ids = |page: &Value| -> Vec<String> {
        page["toolUses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["toolUseId"].as_str().unwrap().to_string())
            .collect()
    };
    let newest_first: Vec<String> = calls.iter().rev().cloned().collect();
    let (status, all) = app.get("/tool-uses").await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(ids(&all), newest_first);
    assert_eq!(all["nextBefore"], Value::Null, "nothing older");

    // Page by page, four at a time: the same rows, each once.
    let mut paged = Vec::new();
    let mut next = String::new();
    loop {
        let (status, page) = app.get(&format!("/tool-uses?limit=4{next}")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        paged.extend(ids(&page));
        match page["nextBefore"].as_i64() {
            Some(before) => next = format!("&before={before}"),
            None => break,
        }
    }
    assert_eq!(paged, newest_first);

    let (_, bash) = app.get("/tool-uses?kind=bash").await;
    assert_eq!(ids(&bash), ["call-6", "call-3", "call-0"]);
    let (_, read) = app.get("/tool-uses?tool=Read&status=running").await;
    assert_eq!(ids(&read), ["call-7", "call-1"]);
    let (_, done) = app.get("/tool-uses?status=completed&session=c").await;
    assert_eq!(ids(&done), ["call-8", "call-2"]);
    let (_, running) = app.get("/tool-uses?status=running&limit=2").await;
    assert_eq!(ids(&running), ["call-7", "call-5"]);
    let before = running["nextBefore"].as_i64().expect("more run");
    let (_, older) = app
        .get(&format!("/tool-uses?status=running&before={before}"))
        .await;
    assert_eq!(ids(&older), ["call-3", "call-1"]);
    let (_, none) = app.get("/tool-uses?tool=WebFetch").await;
    assert_eq!(ids(&none), Vec::<String>::new());
    assert_eq!(none["nextBefore"], Value::Null);
    for bad in [
        "/tool-uses?before=0",
        "/tool-uses?before=x",
        "/tool-uses?kind=bash&bogus=1",
    ] {
        let (status, body) = app.get(bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["error"], "invalid_request", "{bad}: {body}");
    }
}

/// Issue 43: a page of `/events` filtered by type, source or origin alone (no index serves
/// them) looks at no more than 10,000 events after its cursor: a filter that matches nothing
/// answers without reading the whole log, with a cursor that says how far it looked, and
/// following the cursors finds every match once, in order.
#[tokio::test]
async fn a_filtered_event_page_reads_a_bounded_window_and_says_how_far_it_looked() {
    let app = spawn_app().await;
    for _ in 0..12 {
        app.post_session_events("busy", 1000).await;
    }
    let rare = json!({"type": "Rare", "sessionId": "quiet", "payload": {}});
    let (status, answer) = app.post_json(&rare).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (_, first) = app.get("/events?type=Rare").await;
    assert_eq!(first["events"], json!([]), "not in the first 10,000");
    assert_eq!(first["nextAfterSequence"], 10_000);
    assert_eq!(first["headSequence"], 12_001);
    let (_, second) = app.get("/events?type=Rare&after_sequence=10000").await;
    assert_eq!(second["events"][0]["type"], "Rare");
    assert_eq!(second["events"].as_array().unwrap().len(), 1);
    assert_eq!(second["nextAfterSequence"], 12_001, "{second}");

    // Nothing matches: two windows to the head, each an empty page.
    let mut after = 0;
    let mut pages = 0;
    loop {
        let (status, page) = app
            .get(&format!("/events?source=nowhere&after_sequence={after}"))
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(page["events"], json!([]));
        pages += 1;
        let next = page["nextAfterSequence"].as_i64().unwrap();
        assert!(next > after, "{page}");
        after = next;
        if next == page["headSequence"].as_i64().unwrap() {
            break;
        }
    }
    assert_eq!((pages, after), (2, 12_001));
    // A full page still ends at its last event; a session filter reads its index as before.
    let (_, full) = app.get("/events?type=PostToolUse&limit=5").await;
    assert_eq!(full["nextAfterSequence"], 5);
    let (_, session) = app.get("/events?session=quiet").await;
    assert_eq!(session["nextAfterSequence"], 12_001);
}

/// `GET /sessions` and `GET /heroes` on more sessions than a page reads: a live state comes
/// from the index of live sessions, however many ended sessions are newer; a filter no index
/// serves reads at most 5,000 sessions a page and says where to go on.
#[tokio::test]
async fn session_lists_read_the_live_index_or_a_bounded_window_and_page_on() {
    let app = spawn_app().await;
    // The oldest session is a hook session that ends; then 100 live sessions of one event
    // each; then 5,100 sessions ended by the normalized contract, newer than all of them.
    for body in [
        json!({"hook_event_name": "SessionStart", "session_id": "old", "source": "startup",
            "cwd": "/w", "transcript_path": "/w/old.jsonl"}),
        json!({"hook_event_name": "SessionEnd", "session_id": "old", "reason": "exit"}),
    ] {
        app.post_hook_ok(body).await;
    }
    let live: Vec<Value> = (0..100)
        .map(|i| json!({"type": "Note", "sessionId": format!("live{i}"), "payload": {}}))
        .collect();
    assert_eq!(app.post_ndjson(&live).await.0, StatusCode::OK);
    for batch in 0..51 {
        let lines: Vec<Value> = (0..100)
            .map(|i| {
                json!({"type": "ended", "source": "normalized",
                "sessionId": format!("e{}", batch * 100 + i), "payload": {}})
            })
            .collect();
        let (status, answer) = app.post_ndjson(&lines).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    let (_, newest) = app.get("/sessions?limit=1").await;
    assert_eq!(newest["sessions"][0]["state"], "ended", "{newest}");
    let (_, one) = app.get("/sessions/live0").await;
    let state = one["state"].as_str().unwrap().to_string();
    assert_ne!(state, "ended");

    // The live state: every live session on the first page, though 5,100 newer sessions
    // ended (a walk of the newest 5,000 would find none of them).
    let (_, page) = app
        .get(&format!("/sessions?state={state}&limit=1000"))
        .await;
    let ids: Vec<&str> = page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 100, "{page}");
    assert_eq!((ids[0], ids[99]), ("live99", "live0"), "most recent first");
    assert_eq!(page["nextBefore"], Value::Null);
    // In pages of 40: 40, 40, 20, none repeated, the last naming no more.
    let mut seen = std::collections::HashSet::new();
    let mut cursor = String::new();
    let mut sizes = Vec::new();
    loop {
        let (_, page) = app
            .get(&format!("/sessions?state={state}&limit=40{cursor}"))
            .await;
        let rows = page["sessions"].as_array().unwrap();
        sizes.push(rows.len());
        for row in rows {
            assert!(seen.insert(row["id"].as_str().unwrap().to_string()));
        }
        match page["nextBefore"].as_i64() {
            Some(next) => cursor = format!("&before={next}"),
            None => break,
        }
    }
    assert_eq!(sizes, [40, 40, 20]);

    // The one hook session is older than the newest 5,000: the first page is empty and names
    // where to go on, the next finds it and ends the list.
    let (_, first) = app.get("/sessions?source=hook").await;
    assert_eq!(first["sessions"], json!([]), "{first}");
    let next = first["nextBefore"]
        .as_i64()
        .expect("a cursor past the window");
    let (_, second) = app
        .get(&format!("/sessions?source=hook&before={next}"))
        .await;
    assert_eq!(second["sessions"][0]["id"], "old", "{second}");
    assert_eq!(second["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(second["nextBefore"], Value::Null);

    // The ended hero is found by walking the sessions; no hero is live.
    let (_, ended) = app.get("/heroes?state=ended").await;
    assert_eq!(ended["heroes"][0]["sessionId"], "old", "{ended}");
    let (_, idle) = app.get("/heroes?state=idle").await;
    assert_eq!(idle["heroes"], json!([]), "{idle}");
}

/// Agents killed without `SessionEnd` stay live for good; the live-state pages of sessions,
/// heroes, running tool uses and pending requests read their rows newest first from indexes,
/// and a hero's state is its own (a session made `stuck` by a watcher keeps an `active` hero),
/// whichever of the session and hero rows the writer wrote first. The file says the same, and
/// rebuilds to it.
#[tokio::test]
async fn live_state_pages_list_killed_and_living_agents_newest_first() {
    let app = spawn_app().await;
    let hook = |session: &str, name: &str, extra: Value| {
        let mut body = json!({"hook_event_name": name, "session_id": session,
            "cwd": "/w", "transcript_path": format!("/w/{session}.jsonl")});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let start = |s: &str| hook(s, "SessionStart", json!({"source": "startup"}));
    let prompt = |s: &str| hook(s, "UserPromptSubmit", json!({"prompt": "go"}));
    let call = |s: &str, id: &str| {
        hook(
            s,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_use_id": id,
            "tool_input": {"command": "cargo test"}}),
        )
    };
    let mut bodies = Vec::new();
    // Three agents killed mid-call: their heroes and sessions stay active.
    for s in ["k1", "k2", "k3"] {
        bodies.extend([start(s), prompt(s), call(s, &format!("{s}-1"))]);
    }
    bodies.extend([start("i1"), prompt("i1"), hook("i1", "Stop", json!({}))]);
    bodies.extend([
        start("w1"),
        prompt("w1"),
        hook(
            "w1",
            "PermissionRequest",
            json!({"tool_name": "Bash",
            "tool_input": {"command": "rm -rf target"}}),
        ),
    ]);
    bodies.extend([
        start("e1"),
        hook("e1", "SessionEnd", json!({"reason": "exit"})),
    ]);
    bodies.extend([start("s1"), prompt("s1")]);
    for body in bodies {
        app.post_hook_ok(body).await;
    }
    // A watcher says s1 is stuck: its session is, its hero is still active.
    let stuck = json!({"type": "stuck", "sessionId": "s1", "paneId": "%1", "cwd": "/w",
        "transcriptPath": "/w/s1.jsonl", "reason": "stopped", "message": "no output",
        "timestamp": 1});
    assert_eq!(
        app.post_hook("/event/normalized", &stuck).await.0,
        StatusCode::OK
    );
    // k2 goes on working: the newest activity of all.
    app.post_hook_ok(call("k2", "k2-2")).await;

    assert_eq!(
        listed(&app, "/heroes?state=active", "heroes", "sessionId").await,
        ["k2", "s1", "k3", "k1"]
    );
    assert_eq!(
        listed(&app, "/heroes?state=idle", "heroes", "sessionId").await,
        ["i1"]
    );
    assert_eq!(
        listed(&app, "/heroes?state=awaiting_input", "heroes", "sessionId").await,
        ["w1"]
    );
    assert_eq!(
        listed(&app, "/heroes?state=ended", "heroes", "sessionId").await,
        ["e1"]
    );
    assert_eq!(
        listed(&app, "/sessions?state=active", "sessions", "id").await,
        ["k2", "k3", "k1"]
    );
    assert_eq!(
        listed(&app, "/sessions?state=stuck", "sessions", "id").await,
        ["s1"]
    );
    // The running calls of every session, newest first: k2's second, then the killed ones.
    assert_eq!(
        listed(&app, "/tool-uses?status=running", "toolUses", "toolUseId").await,
        ["k2-2", "k3-1", "k2-1", "k1-1"]
    );
    // w1's request stays pending (no hook waits on it to expire it), newest first with any
    // other; k2's second call opens one too, newer.
    app.post_hook_ok(hook(
        "k2",
        "PermissionRequest",
        json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}}),
    ))
    .await;
    assert_eq!(
        listed(
            &app,
            "/permission-requests?state=pending",
            "permissionRequests",
            "sessionId"
        )
        .await,
        ["k2", "w1"]
    );

    // In the file, each session carries its hero's state (none for a session without one):
    // the seven with a hero have one, and no session without a hero has one.
    let differing = app.strings(
        "SELECT s.id FROM sessions s LEFT JOIN heroes h ON h.session_id = s.id
         WHERE (s.hero_state IS NULL) IS NOT (h.id IS NULL)",
    );
    assert_eq!(differing, Vec::<String>::new());
    let with_state =
        app.strings("SELECT id FROM sessions WHERE hero_state IS NOT NULL ORDER BY id");
    assert_eq!(with_state, ["e1", "i1", "k1", "k2", "k3", "s1", "w1"]);
    common::assert_rebuilds_to_live(&app.db_path);
}

/// `field` of each row of the list `list` that `GET path` answers (which must be a 200).
async fn listed(app: &common::TestApp, path: &str, list: &str, field: &str) -> Vec<String> {
    let (status, page) = app.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {page}");
    page[list]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: {page}"))
        .iter()
        .map(|row| row[field].as_str().unwrap().to_string())
        .collect()
}
