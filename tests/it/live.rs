//! Seed 000's live channel through the real server and a real WebSocket client: hydration,
//! the frames of a replayed Claude Code session in order, client messages, and the guards.

use crate::common;

use common::{fixture, spawn_app, spawn_app_with};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const DEADLINE: Duration = Duration::from_secs(10);

fn ws_url(app: &common::TestApp, query: &str) -> String {
    format!("{}/{query}", app.url.replacen("http://", "ws://", 1))
}

async fn connect(app: &common::TestApp) -> Socket {
    let (socket, response) = tokio_tungstenite::connect_async(ws_url(app, ""))
        .await
        .expect("the handshake succeeds");
    assert_eq!(response.status(), 101);
    socket
}

/// The next text frame as JSON (protocol pings skipped); panics after the deadline.
async fn next_frame(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("a frame before the deadline")
            .expect("the socket is open")
            .expect("a readable frame");
        match message {
            Message::Text(text) => return serde_json::from_str(&text).expect("frames are JSON"),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected message {other:?}"),
        }
    }
}

async fn hydrate(socket: &mut Socket) -> (Value, Value, Value) {
    let connected = next_frame(socket).await;
    let roster = next_frame(socket).await;
    let missions = next_frame(socket).await;
    assert_eq!(connected["type"], "connected", "{connected}");
    assert_eq!(roster["type"], "roster_update", "{roster}");
    assert_eq!(missions["type"], "mission_state", "{missions}");
    (connected, roster, missions)
}

#[tokio::test]
async fn a_socket_is_hydrated_then_follows_a_claude_code_session_frame_by_frame() {
    let app = spawn_app().await;
    // Before the socket: a session with a prompt in progress, for the hydration.
    let earlier = app
        .post_hook_ok(
            json!({"hook_event_name": "UserPromptSubmit", "session_id": "before",
                             "prompt": "Earlier work"}),
        )
        .await;
    let mut socket = connect(&app).await;
    let (connected, roster, missions) = hydrate(&mut socket).await;
    assert_eq!(connected["server"], "hooklog");
    assert_eq!(connected["headSequence"], earlier["sequence"]);
    assert_eq!(roster["heroes"][0]["id"], earlier["heroId"]);
    assert_eq!(missions["missions"][0]["id"], earlier["missionId"]);
    assert_eq!(missions["missions"][0]["toolUses"], json!([]));

    let answers = app.post_fixture("/event", "claude-code-session").await;
    let last_sequence = answers.last().unwrap()["sequence"].as_i64().unwrap();
    let mut frames = Vec::new();
    while frames
        .last()
        .is_none_or(|f: &Value| f["sequence"].as_i64() != Some(last_sequence))
    {
        frames.push(next_frame(&mut socket).await);
    }
    let shown: Vec<String> = frames
        .iter()
        .map(|f| {
            let kind = f["type"].as_str().unwrap().to_string();
            match kind.as_str() {
                "hero_state" => format!("hero_state:{}", f["state"].as_str().unwrap()),
                "mission_event" => format!("mission_event:{}", f["kind"].as_str().unwrap()),
                "tool_result" => format!("tool_result:{}", f["status"].as_str().unwrap()),
                _ => kind,
            }
        })
        .collect();
    let expected = [
        "internal_hero_spawn",        // SessionStart
        "mission_start",              // UserPromptSubmit
        "hero_state:active",          //
        "tool_use",                   // PreToolUse Bash
        "tool_result:completed",      // PostToolUse Bash
        "tool_use",                   // PreToolUse Task
        "mission_start",              // SubagentStart: the child mission
        "subagent_lineage_update",    //   and its lineage
        "mission_graph_update",       //
        "tool_use",                   // PreToolUse Grep (in the subagent)
        "tool_result:completed",      // PostToolUse Grep
        "mission_complete",           // SubagentStop
        "tool_result:completed",      // PostToolUse Task
        "tool_use",                   // PreToolUse Edit
        "tool_use",                   // PermissionRequest
        "hero_state:awaiting_input",  //
        "permission_request",         //   and the request it opens
        "mission_event:Notification", // Notification: opaque
        "tool_result:completed",      // PostToolUse Edit
        "hero_state:active",          //
        "tool_use",                   // PreToolUse Write
        "tool_result:failed",         // PostToolUseFailure Write
        "tool_use",                   // PreToolUse Bash
        "tool_result:completed",      // PostToolUse Bash
        "mission_complete",           // Stop
        "hero_state:idle",            //
        "mission_start",              // UserPromptSubmit
        "hero_state:active",          //
        "mission_event:PreCompact",   // PreCompact: opaque
        "mission_event:SessionStart", // SessionStart (compact): the hero exists already
        "tool_use",                   // PreToolUse Bash
        "tool_result:completed",      // PostToolUse Bash
        "mission_complete",           // Stop
        "hero_state:idle",            //
        "hero_state:ended",           // SessionEnd
    ];
    assert_eq!(shown, expected, "{frames:#?}");

    // Every frame names its event and they come in the log's order.
    let sequences: Vec<i64> = frames
        .iter()
        .map(|f| f["sequence"].as_i64().unwrap())
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] <= w[1]), "{sequences:?}");
    let posted: Vec<i64> = answers
        .iter()
        .map(|a| a["sequence"].as_i64().unwrap())
        .collect();
    assert!(sequences.iter().all(|s| posted.contains(s)));
    // The frames name what the REST routes show.
    let hero = &answers[0]["heroId"];
    assert_eq!(frames[0]["hero"]["id"], *hero);
    assert_eq!(frames[1]["mission"]["id"], answers[1]["missionId"]);
    assert_eq!(frames[24]["missionId"], answers[18]["missionId"]);
    assert_eq!(frames[24]["state"], "completed");
    let (_, tool) = app
        .get("/tool-uses?sessionId=8c2e4f1a-3b7d-4e9a-a5c6-1d2f3e4a5b6c&limit=1000")
        .await;
    let first = tool["toolUses"].as_array().unwrap().last().unwrap();
    assert_eq!(frames[3]["toolUse"]["id"], first["id"]);
    assert_eq!(frames[4]["toolUseId"], first["id"]);
    assert_eq!(frames[4]["ok"], true);
    assert_eq!(frames[21]["ok"], false);
    for frame in &frames {
        let text = frame.to_string();
        assert!(
            !text.contains("transcript_path") && !text.contains("tool_response"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn bad_client_messages_get_a_toast_and_the_socket_carries_on() {
    let app = spawn_app().await;
    let mut socket = connect(&app).await;
    hydrate(&mut socket).await;
    socket
        .send(Message::text(r#"{"type":"hello","client":"test"}"#))
        .await
        .unwrap();
    for (bad, code) in [
        (Message::text("{not json"), "invalid_json"),
        (Message::text("[1,2,3]"), "invalid_message"),
        (
            Message::text(r#"{"type":"collect_scroll","scrollId":"s"}"#),
            "unsupported_message",
        ),
        (
            Message::text(r#"{"type":"made_up"}"#),
            "unknown_message_type",
        ),
        (Message::binary(vec![0u8, 159, 146, 150]), "binary_message"),
        (
            Message::text(format!(r#"{{"type":"ping","x":"{}"}}"#, "y".repeat(70_000))),
            "message_too_large",
        ),
    ] {
        socket.send(bad).await.unwrap();
        let toast = next_frame(&mut socket).await;
        assert_eq!(toast["type"], "server_toast", "{toast}");
        assert_eq!(toast["code"], code, "{toast}");
    }
    // Still open and served: a ping is answered, and a new event is framed.
    socket
        .send(Message::text(r#"{"type":"ping"}"#))
        .await
        .unwrap();
    assert_eq!(next_frame(&mut socket).await["type"], "pong");
    app.post_hook_ok(json!({"hook_event_name": "SessionStart", "session_id": "after"}))
        .await;
    assert_eq!(next_frame(&mut socket).await["type"], "internal_hero_spawn");
    // Beyond the body limit the socket reads nothing more: it ends, it does not hang.
    let huge = format!(r#"{{"type":"ping","x":"{}"}}"#, "y".repeat(1_200_000));
    let _ = socket.send(Message::text(huge)).await;
    let ended = tokio::time::timeout(DEADLINE, async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => continue,
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the socket ends after a message over the limit"
    );
}

#[tokio::test]
async fn the_socket_keeps_the_token_host_and_origin_rules_and_plain_get_is_not_it() {
    let app = spawn_app_with(|c| {
        c.security.token = Some(hooklog::config::Secret("s3cret".into()));
    })
    .await;
    let refused = tokio_tungstenite::connect_async(ws_url(&app, "")).await;
    match refused {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 401),
        other => panic!("expected a 401, got {other:?}"),
    }
    let (mut socket, _) = tokio_tungstenite::connect_async(ws_url(&app, "?access_token=s3cret"))
        .await
        .expect("the token in the URL is accepted");
    hydrate(&mut socket).await;
    let mut request = ws_url(&app, "").into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    request
        .headers_mut()
        .insert("origin", "http://evil.example".parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 403),
        other => panic!("expected a 403, got {other:?}"),
    }
    let mut request = ws_url(&app, "?access_token=s3cret")
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("host", "evil.example:2468".parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 403),
        other => panic!("expected a 403, got {other:?}"),
    }
    let plain = app
        .client
        .get(format!("{}/", app.url))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 200, "a plain GET / is the web view");
    assert_eq!(plain.headers()["content-type"], "text/html; charset=utf-8");
}

#[tokio::test]
async fn sockets_take_stream_slots_and_end_when_hooklog_stops() {
    let app = spawn_app_with(|c| c.security.max_streams = 1).await;
    let mut socket = connect(&app).await;
    hydrate(&mut socket).await;
    match tokio_tungstenite::connect_async(ws_url(&app, "")).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!("expected a 503, got {other:?}"),
    }
    let stopping = tokio::spawn(app.stop());
    let closed = tokio::time::timeout(DEADLINE, async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    })
    .await
    .expect("the socket closes when hooklog stops");
    assert_eq!(closed, Some(1001));
    tokio::time::timeout(DEADLINE, stopping)
        .await
        .expect("an open socket does not hold the shutdown")
        .unwrap();
}

#[test]
fn the_fixture_is_the_session_the_frames_test_expects() {
    let names: Vec<String> = fixture("claude-code-session")
        .iter()
        .map(|line| line["hook_event_name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 26);
    assert_eq!(names.first().map(String::as_str), Some("SessionStart"));
    assert_eq!(names.last().map(String::as_str), Some("SessionEnd"));
}

#[tokio::test]
async fn permission_requests_are_framed_and_decided_over_the_socket() {
    let app = spawn_app().await;
    let mut socket = connect(&app).await;
    hydrate(&mut socket).await;
    let asked = app
        .post_hook_ok(
            json!({"hook_event_name": "PermissionRequest", "session_id": "w1",
            "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}, "hooklogWaitSeconds": 60}),
        )
        .await;
    let request = asked["requestId"].as_str().unwrap().to_string();
    let mut frames = Vec::new();
    while !frames
        .iter()
        .any(|f: &Value| f["type"] == "permission_request")
    {
        let frame = next_frame(&mut socket).await;
        frames.push(frame);
    }
    let opened = frames.last().unwrap();
    assert_eq!(opened["requestId"], request.as_str());
    assert_eq!(opened["toolName"], "Bash");
    assert_eq!(opened["detail"], "rm -rf build");
    assert_eq!(opened["sessionId"], "w1");
    // A socket that connects while it waits is told of it after the hydration.
    let mut late = connect(&app).await;
    hydrate(&mut late).await;
    let waiting = next_frame(&mut late).await;
    assert_eq!(waiting["type"], "permission_request", "{waiting}");
    assert_eq!(waiting["requestId"], request.as_str());
    assert_eq!(waiting["toolName"], "Bash");
    assert!(waiting["waitsUntil"].is_string(), "{waiting}");

    // A decision sent on the socket settles it; every socket gets its frame.
    let deny = json!({"type": "permission_response", "requestId": request, "approved": false,
        "message": "use the staging box"});
    socket.send(Message::text(deny.to_string())).await.unwrap();
    let decided = next_frame(&mut socket).await;
    assert_eq!(decided["type"], "permission_response", "{decided}");
    assert_eq!(decided["requestId"], request.as_str());
    assert_eq!(decided["approved"], false);
    assert_eq!(decided["decidedBy"], "websocket");
    assert_eq!(decided["message"], "use the staging box");
    let (_, row) = app.get(&format!("/permission-requests/{request}")).await;
    assert_eq!(row["state"], "denied");
    assert_eq!(row["decidedBy"], "websocket");
    // A second one is refused with a toast, and changes nothing.
    socket.send(Message::text(deny.to_string())).await.unwrap();
    let toast = next_frame(&mut socket).await;
    assert_eq!(toast["code"], "permission_not_pending", "{toast}");
    assert_eq!(toast["reason"], "not_pending", "{toast}");
    let bad = json!({"type": "permission_response", "requestId": request});
    socket.send(Message::text(bad.to_string())).await.unwrap();
    assert_eq!(next_frame(&mut socket).await["code"], "invalid_decision");
    // Once it is settled, a new socket is not told of it: its first frame after the
    // hydration is the answer to a ping.
    let mut later = connect(&app).await;
    hydrate(&mut later).await;
    later
        .send(Message::text(r#"{"type":"ping"}"#))
        .await
        .unwrap();
    assert_eq!(next_frame(&mut later).await["type"], "pong");

    // The change stream carries the same two changes of the request.
    let (_, changes) = app.get("/changes").await;
    let permission: Vec<&Value> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["changes"].as_array().unwrap())
        .filter(|d| d["entity"] == "permission")
        .collect();
    assert_eq!(permission.len(), 2, "{permission:?}");
    assert_eq!(permission[0]["op"], "created");
    assert_eq!(permission[1]["set"]["state"], "denied");
}

#[tokio::test]
async fn a_subagent_mission_is_framed_with_its_lineage() {
    let app = spawn_app().await;
    app.post_hook_ok(
        json!({"hook_event_name": "UserPromptSubmit", "session_id": "l1",
        "prompt": "review"}),
    )
    .await;
    let mut socket = connect(&app).await;
    hydrate(&mut socket).await;
    app.post_hook_ok(
        json!({"hook_event_name": "SubagentStart", "session_id": "l1",
        "agent_id": "a1", "agent_type": "reviewer"}),
    )
    .await;
    let mut frames = Vec::new();
    while !frames
        .iter()
        .any(|f: &Value| f["type"] == "mission_graph_update")
    {
        frames.push(next_frame(&mut socket).await);
    }
    let lineage = frames
        .iter()
        .find(|f| f["type"] == "subagent_lineage_update")
        .expect("a lineage frame");
    let start = frames
        .iter()
        .find(|f| f["type"] == "mission_start")
        .unwrap();
    assert_eq!(lineage["childMissionId"], start["mission"]["id"]);
    assert_eq!(
        lineage["parentMissionId"],
        start["mission"]["parentMissionId"]
    );
    assert_eq!(lineage["subagentType"], "reviewer");
    let graph = frames.last().unwrap();
    assert_eq!(graph["missionId"], lineage["parentMissionId"]);
    assert!(graph["missionId"].is_string());
}
