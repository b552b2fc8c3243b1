//! Hostile input against every ingest route, through the real server: arbitrary bytes, deep
//! nesting, huge strings, invalid UTF-8, a wrong type in every field of a valid body, odd path
//! parameters. Whatever comes in: never a 5xx, never a dropped connection (a panic), always a
//! JSON answer, and the log's head moves only for a request that was accepted. Afterwards the
//! file is intact and its sequences gapless.
//!
//! `PROPTEST_CASES` sets the cases per route (default 160: about 3,000 requests in all). A
//! second test walks every field of every route's valid body and puts each of a list of wrong
//! values in it, so "a wrong type in every field" does not depend on the generator's luck.

use crate::common;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A POST route and a valid body for it, which the generators take apart.
struct Target {
    /// The path, with `{}` where a path parameter goes.
    path: &'static str,
    ndjson: bool,
    /// Commands may record a refusal (`409`) in the log; nothing else that is refused may.
    command: bool,
    template: Value,
}

fn targets() -> Vec<Target> {
    let t = |path, command, template| Target {
        path,
        ndjson: false,
        command,
        template,
    };
    let event = json!({"id": "e-1", "type": "PreToolUse", "sessionId": "s", "eventTime": "2026-11-30T12:00:00Z",
                       "source": "hook", "payload": {"tool_name": "Bash", "tool_input": {"command": "ls"}}});
    vec![
        t("/events", false, event.clone()),
        Target {
            ndjson: true,
            ..t("/events", false, event)
        },
        t(
            "/events",
            false,
            json!({"schemaVersion": "hooklog.event.v1", "id": "e-2", "type": "Stop",
                   "context": {"sequence": 1, "sessionId": "s", "sessionSequence": 1, "source": "x",
                               "eventTime": "2026-11-30T12:00:00Z", "receivedAt": "2026-11-30T12:00:01Z"},
                   "payload": {}}),
        ),
        t(
            "/event",
            false,
            json!({"eventName": "PreToolUse", "sessionId": "s", "tool_name": "Bash",
                   "tool_input": {"command": "ls"}, "cwd": "/w", "prompt": "p", "hook_event_name": "PreToolUse",
                   "transcript_path": "/t", "tool_use_id": "u1", "agent_id": "a", "type": "hero_active"}),
        ),
        t(
            "/event/normalized",
            false,
            json!({"type": "stuck", "sessionId": "s9", "paneId": "%3", "cwd": "/src",
                   "transcriptPath": "/t.jsonl", "reason": "permission", "message": "m", "timestamp": 1764500000000u64}),
        ),
        t(
            "/factory-sessions/{}/events",
            false,
            json!({"schemaVersion": "agent-factory.event.v1", "id": "fe-1", "type": "DISPATCH_REQUEST",
                   "context": {"tick": 4, "eventTime": "2026-11-30T09:00:08.000Z", "dispatchId": "d-1",
                               "workIds": ["w-1"], "sessionId": "fs-1"},
                   "payload": {"transitionId": "t", "inputs": [{"workId": "w-1"}]}}),
        ),
        t(
            "/factory-sessions/{}/response-events",
            false,
            json!({"schemaVersion": "agent-factory.response-event.v1", "eventId": "r-1",
                   "recordedAt": "2026-11-30T09:00:00.000Z", "runId": "run-1", "kind": "TOOL",
                   "phase": "STARTED", "itemId": "i-1",
                   "provenance": {"provider": "codex", "nativeEventType": "item/started",
                                  "delivery": "NATIVE_STREAM", "representation": "SNAPSHOT",
                                  "fidelity": "NORMALIZED"},
                   "payload": {"toolCallId": "t-1", "toolName": "shell", "argumentsSummary": {"cmd": "ls"}}}),
        ),
        t(
            "/owners/acquire",
            true,
            json!({"platform": "x", "account": "a", "pid": 1, "hostname": "h", "relayPort": 1, "relayToken": "t"}),
        ),
        t(
            "/owners/x/{}/heartbeat",
            true,
            json!({"generation": 1, "attached": 1}),
        ),
        t("/owners/{}/a/release", true, json!({"generation": 1})),
        t("/owners/x/{}/verify-token", true, json!({"token": "t"})),
        t(
            "/claims",
            true,
            json!({"chat": "c", "sessionId": "s", "ttlSeconds": 60}),
        ),
        t(
            "/claims/{}/release",
            true,
            json!({"sessionId": "s", "outcome": "done"}),
        ),
        t(
            "/gaps",
            true,
            json!({"platform": "x", "account": "a", "fromPosition": 1, "reason": "r"}),
        ),
        t("/gaps/{}/close", true, json!({"toPosition": 2})),
        t("/gaps/{}/refuse", true, json!({"detail": "d"})),
        t("/gaps/{}/resume", true, json!({"by": "b"})),
        t("/alerts/{}/ack", true, json!({"by": "b"})),
    ]
}

/// What one case sends.
#[derive(Clone)]
enum Input {
    /// The valid body as it is (so some cases are accepted, and later ones meet stored ids).
    Valid,
    /// Any bytes at all.
    Bytes(Vec<u8>),
    /// Any JSON document.
    Json(Value),
    /// The valid body with the field at `field` (a path of keys) replaced.
    Mutated { field: usize, value: Value },
    /// The valid body with a field's value replaced by a long string.
    Huge { field: usize, text: String },
    /// The valid body with bytes that are not UTF-8 inside a string.
    NotUtf8 { field: usize, bytes: Vec<u8> },
    /// `depth` openers (then maybe their closers) inside a valid body's payload.
    Deep {
        depth: usize,
        object: bool,
        closed: bool,
    },
    /// The valid body, truncated.
    Cut(usize),
}

/// Short enough to print when a case fails (a huge string is shown by its length).
impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn short(text: &str) -> String {
            match text.len() > 300 {
                true => format!(
                    "{}... ({} bytes)",
                    &text[..text.floor_char_boundary(300)],
                    text.len()
                ),
                false => text.to_string(),
            }
        }
        match self {
            Input::Valid => write!(f, "Valid"),
            Input::Bytes(b) => write!(f, "Bytes({})", short(&String::from_utf8_lossy(b))),
            Input::Json(v) => write!(f, "Json({})", short(&v.to_string())),
            Input::Mutated { field, value } => {
                write!(
                    f,
                    "Mutated {{ field: {field}, value: {} }}",
                    short(&value.to_string())
                )
            }
            Input::Huge { field, text } => write!(
                f,
                "Huge {{ field: {field}, text: {:?} x {} }}",
                text.chars().next(),
                text.chars().count()
            ),
            Input::NotUtf8 { field, bytes } => {
                write!(f, "NotUtf8 {{ field: {field}, bytes: {bytes:?} }}")
            }
            Input::Deep {
                depth,
                object,
                closed,
            } => {
                write!(
                    f,
                    "Deep {{ depth: {depth}, object: {object}, closed: {closed} }}"
                )
            }
            Input::Cut(at) => write!(f, "Cut({at})"),
        }
    }
}

/// Panics on any thread of this process (the server runs in it) since the hook was set.
static PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            previous(info);
        }));
    });
}

fn panics() -> usize {
    PANICS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Above this, a body the server refuses before reading it (a bad path parameter) may still
/// be in the kernel's buffer when the server closes the connection after its answer; the
/// kernel then resets the connection and the client may never read the answer. That is TCP,
/// not hooklog: such a case passes if nothing panicked and the head did not move.
const UNREAD_BODY_MAY_RESET: usize = 64 * 1024;

fn json_value() -> impl Strategy<Value = Value> {
    let odd_numbers = [
        "1e400",
        "-1e-400",
        "-0",
        "123456789012345678901234567890",
        "18446744073709551616",
        "-9223372036854775809",
        "1.5",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        prop::sample::select(odd_numbers.to_vec())
            .prop_map(|n| serde_json::from_str::<Value>(n).unwrap()),
        ".{0,40}".prop_map(Value::String),
        prop::sample::select(vec![
            "",
            " ",
            "\u{0}",
            "\n",
            "2026-11-30T12:00:00Z",
            "now",
            "%3"
        ])
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        1 => Just(Input::Valid),
        1 => prop::collection::vec(any::<u8>(), 0..600).prop_map(Input::Bytes),
        1 => json_value().prop_map(Input::Json),
        3 => (any::<usize>(), json_value()).prop_map(|(field, value)| Input::Mutated { field, value }),
        1 => (any::<usize>(), 0usize..400_000, prop::sample::select(vec!['x', 'é', '\u{1F600}', '\u{7}', '"', '\\']))
            .prop_map(|(field, n, c)| Input::Huge { field, text: std::iter::repeat_n(c, n).collect() }),
        1 => (any::<usize>(), prop::collection::vec(0x80u8..=0xff, 1..20))
            .prop_map(|(field, bytes)| Input::NotUtf8 { field, bytes }),
        1 => (1usize..5000, any::<bool>(), any::<bool>())
            .prop_map(|(depth, object, closed)| Input::Deep { depth, object, closed }),
        1 => any::<usize>().prop_map(Input::Cut),
    ]
}

/// The paths of every value in a document (`["context","tick"]`), parents before children.
fn fields(value: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if let Value::Object(map) = value {
        for (key, child) in map {
            prefix.push(key.clone());
            out.push(prefix.clone());
            fields(child, prefix, out);
            prefix.pop();
        }
    }
}

fn replace(template: &Value, field: usize, value: Value) -> Value {
    let mut all = Vec::new();
    fields(template, &mut Vec::new(), &mut all);
    let mut body = template.clone();
    let path = &all[field % all.len()];
    let mut at = &mut body;
    for key in path {
        at = at.get_mut(key).unwrap();
    }
    *at = value;
    body
}

fn body_of(target: &Target, input: &Input) -> Vec<u8> {
    let template = &target.template;
    match input {
        Input::Valid => template.to_string().into_bytes(),
        Input::Bytes(bytes) => bytes.clone(),
        Input::Json(value) => value.to_string().into_bytes(),
        Input::Mutated { field, value } => replace(template, *field, value.clone())
            .to_string()
            .into_bytes(),
        Input::Huge { field, text } => replace(template, *field, Value::String(text.clone()))
            .to_string()
            .into_bytes(),
        Input::NotUtf8 { field, bytes } => {
            let marker = "\u{1}MARK\u{1}";
            let text = replace(template, *field, Value::String(marker.into())).to_string();
            let escaped = serde_json::to_string(marker).unwrap();
            let escaped = &escaped[1..escaped.len() - 1];
            let (before, after) = text.split_once(escaped).unwrap();
            [before.as_bytes(), bytes, after.as_bytes()].concat()
        }
        Input::Deep {
            depth,
            object,
            closed,
        } => {
            let (open, close) = if *object {
                ("{\"a\":", "}")
            } else {
                ("[", "]")
            };
            let inner = if *closed {
                format!("{}1{}", open.repeat(*depth), close.repeat(*depth))
            } else {
                open.repeat(*depth)
            };
            let mut body = template.to_string();
            let last = body.rfind('}').unwrap();
            body.insert_str(last, &format!(",\"deep\":{inner}"));
            body.into_bytes()
        }
        Input::Cut(at) => {
            let text = template.to_string().into_bytes();
            text[..at % text.len()].to_vec()
        }
    }
}

/// Percent-encodes every byte but ASCII letters and digits.
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn head(app: &common::TestApp, client: &reqwest::Client) -> i64 {
    let health: Value = client
        .get(format!("{}/health", app.url))
        .send()
        .await
        .expect("health answered")
        .json()
        .await
        .unwrap();
    health["headSequence"].as_i64().unwrap()
}

/// Sends one body and checks the answer: JSON, below 500, nothing panicked, and the head moved
/// only if the request was accepted. Returns whether it was (a 2xx).
async fn check_case(
    app: &common::TestApp,
    client: &reqwest::Client,
    target: &Target,
    path: &str,
    body: Vec<u8>,
) -> Result<bool, String> {
    let content_type = match target.ndjson {
        true => "application/x-ndjson",
        false => "application/json",
    };
    let size = body.len();
    let panics_before = panics();
    let before = head(app, client).await;
    let sent = client
        .post(format!("{}{path}", app.url))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await;
    let (status, answer) = match sent {
        Ok(response) => {
            let status = response.status();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| format!("{path}: answer cut ({e})"))?;
            let answer: Value = serde_json::from_slice(&bytes).map_err(|_| {
                format!(
                    "{path}: {status} answer is not JSON: {}",
                    String::from_utf8_lossy(&bytes)
                )
            })?;
            (status, answer)
        }
        Err(e) if size > UNREAD_BODY_MAY_RESET && panics() == panics_before => {
            (StatusCode::BAD_REQUEST, json!({"reset": e.to_string()}))
        }
        Err(e) => {
            return Err(format!(
                "{path}: no answer to {size} bytes ({e}); panics: {}",
                panics() - panics_before
            ));
        }
    };
    let moved = head(app, client).await - before;
    if status.is_server_error() {
        return Err(format!("{path}: {status} {answer}"));
    }
    if panics() != panics_before {
        return Err(format!("{path}: the server panicked ({status} {answer})"));
    }
    let may_move = status.is_success() || (target.command && status == StatusCode::CONFLICT);
    if moved < 0 || (!may_move && moved != 0) {
        return Err(format!(
            "{path}: {status} {answer} moved the head by {moved}"
        ));
    }
    Ok(status.is_success())
}

/// A client that opens a connection per request: a connection the server closed after an
/// early answer (a 413 before the body was read) must not be reused for the next request.
fn one_shot_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The file behind `app` is intact, gapless, and holds exactly the head's events.
fn assert_file_intact(runtime: &tokio::runtime::Runtime, app: &common::TestApp) {
    let (status, health) = runtime.block_on(app.get("/health"));
    assert_eq!(status, StatusCode::OK, "{health}");
    let conn = app.db();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    assert_eq!(common::assert_gapless(&conn), health["headSequence"]);
}

#[test]
fn a_wrong_value_in_every_field_of_every_route_is_answered_cleanly() {
    let runtime = runtime();
    count_panics();
    let app = runtime.block_on(common::spawn_app());
    let client = one_shot_client();
    let wrong = [
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        serde_json::from_str::<Value>("1e400").unwrap(),
        json!(18446744073709551615u64),
        json!(""),
        json!("x"),
        json!("\u{0}\n"),
        json!([]),
        json!([1, "a"]),
        json!({}),
        json!({"a": {"b": [null]}}),
        json!("y".repeat(5000)),
    ];
    let mut cases = 0;
    for target in targets() {
        let mut paths = Vec::new();
        fields(&target.template, &mut Vec::new(), &mut paths);
        for (field, keys) in paths.iter().enumerate() {
            for value in &wrong {
                let body = replace(&target.template, field, value.clone());
                let path = target.path.replace("{}", "x");
                runtime
                    .block_on(check_case(
                        &app,
                        &client,
                        &target,
                        &path,
                        body.to_string().into_bytes(),
                    ))
                    .unwrap_or_else(|e| panic!("field {keys:?} = {value}: {e}"));
                cases += 1;
            }
        }
    }
    assert!(cases > 1000, "{cases} cases");
    assert_eq!(panics(), 0, "something panicked while serving");
    assert_file_intact(&runtime, &app);
    runtime.block_on(app.stop());
}

#[test]
fn hostile_bodies_never_get_a_5xx_and_move_the_head_only_when_accepted() {
    let runtime = runtime();
    count_panics();
    let app = runtime.block_on(common::spawn_app());
    let client = one_shot_client();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(160);
    let accepted = std::cell::Cell::new(0);
    for target in targets() {
        let mut runner = TestRunner::new(RunnerConfig {
            cases,
            failure_persistence: None,
            ..RunnerConfig::default()
        });
        let param = prop_oneof![
            Just("x".to_string()),
            Just("1".to_string()),
            ".{1,40}".prop_map(|s| s),
        ];
        runner
            .run(&(input(), param), |(input, param)| {
                let body = body_of(&target, &input);
                let path = target.path.replace("{}", &encode(&param));
                let ok = runtime
                    .block_on(check_case(&app, &client, &target, &path, body))
                    .map_err(TestCaseError::fail)?;
                if ok {
                    accepted.set(accepted.get() + 1);
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e}", target.path));
    }
    // Some cases must have been accepted, or the generators only ever made garbage.
    assert_eq!(panics(), 0, "something panicked while serving");
    eprintln!(
        "{} cases per route, {} accepted, head {}",
        cases,
        accepted.get(),
        runtime.block_on(head(&app, &client))
    );
    let accepted = accepted.get();
    assert!(accepted > 20, "only {accepted} accepted cases");
    assert_file_intact(&runtime, &app);
    runtime.block_on(app.stop());
}
