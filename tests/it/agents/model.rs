//! The scripted model behind the real agent CLIs: an HTTP server on `127.0.0.1:0` that speaks
//! the Anthropic Messages API (`POST /v1/messages`, what Claude Code calls) and the OpenAI
//! Responses API (`POST /v1/responses`, what Codex calls), both as event streams.
//!
//! The script is in the prompt itself, so every answer follows from the request alone: each
//! line `run: COMMAND` of the conversation's last prompt is one shell call, made one model call
//! at a time (the call after the k-th tool result runs the (k+1)-th command); once every command
//! has its result, the model answers `done`. A turn with n commands is n + 1 model calls, and
//! each call reports the fixed usage below, so a test knows what hooklog must count.

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What each Claude call reports: input not from the cache, output, cache writes (a total
/// with a split of zeros, as gateways send it) and cache reads.
pub const CLAUDE_INPUT: u64 = 100;
pub const CLAUDE_OUTPUT: u64 = 7;
pub const CLAUDE_CACHE_WRITE: u64 = 10;
pub const CLAUDE_CACHE_READ: u64 = 5;
/// What each Codex call reports: input (cached included), of it cached, output (reasoning
/// included), of it reasoning.
pub const CODEX_INPUT: u64 = 100;
pub const CODEX_CACHED: u64 = 20;
pub const CODEX_OUTPUT: u64 = 10;
pub const CODEX_REASONING: u64 = 2;

pub struct Model {
    pub url: String,
    models: Arc<Mutex<Vec<String>>>,
    claude_calls: Arc<Mutex<Vec<Value>>>,
    closings: Closings,
    server: tokio::task::JoinHandle<()>,
}

/// The closing texts Claude Code's conversation was answered, in order: one per finished
/// turn (the calls without tools, such as a title, are not counted).
pub type Closings = Arc<Mutex<Vec<String>>>;

#[derive(Clone)]
struct State {
    /// The number the next answer's ids carry.
    next: Arc<AtomicU64>,
    /// The model each call asked for, in order.
    models: Arc<Mutex<Vec<String>>>,
    /// Claude Code's calls (`POST /v1/messages` bodies), in order.
    claude_calls: Arc<Mutex<Vec<Value>>>,
    closings: Closings,
}

impl Model {
    pub async fn start() -> Model {
        let models = Arc::new(Mutex::new(Vec::new()));
        let claude_calls = Arc::new(Mutex::new(Vec::new()));
        let closings = Closings::default();
        let state = State {
            next: Arc::new(AtomicU64::new(1)),
            models: models.clone(),
            claude_calls: claude_calls.clone(),
            closings: closings.clone(),
        };
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/responses", post(responses))
            .fallback(|| async { StatusCode::OK })
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Model {
            url,
            models,
            claude_calls,
            closings,
            server,
        }
    }

    /// Claude Code's closing answers so far, shared: a TUI test waits on it.
    pub fn closings(&self) -> Closings {
        self.closings.clone()
    }

    /// The tool results Claude Code handed back to the model, each once, in the order first
    /// handed back: the `tool_result` blocks of its calls' messages (`tool_use_id`, `content`,
    /// `is_error`).
    pub fn tool_results(&self) -> Vec<Value> {
        let mut seen: Vec<Value> = Vec::new();
        for call in self.claude_calls.lock().unwrap().iter() {
            let blocks = call["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["content"].as_array())
                .flatten()
                .filter(|b| b["type"] == "tool_result");
            for block in blocks {
                if !seen
                    .iter()
                    .any(|s| s["tool_use_id"] == block["tool_use_id"])
                {
                    seen.push(block.clone());
                }
            }
        }
        seen
    }

    /// The models the calls so far asked for, each once, in the order first asked.
    pub fn models(&self) -> Vec<String> {
        let mut seen = Vec::new();
        for model in self.models.lock().unwrap().iter() {
            if !seen.contains(model) {
                seen.push(model.clone());
            }
        }
        seen
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The `run:` lines of a prompt.
fn commands(prompt: &str) -> Vec<String> {
    prompt
        .lines()
        .filter_map(|line| line.trim().strip_prefix("run: "))
        .map(str::to_string)
        .collect()
}

/// The text of a message's content (a string, or blocks with `text`).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The next command to run: the conversation's last prompt's commands, less the results
/// already handed back after it.
fn next_command(items: impl Iterator<Item = Turn>) -> Option<String> {
    let (mut prompt, mut results) = (String::new(), 0);
    for item in items {
        match item {
            Turn::Prompt(text) => (prompt, results) = (text, 0),
            Turn::Result => results += 1,
            Turn::Other => {}
        }
    }
    commands(&prompt).into_iter().nth(results)
}

/// What a conversation item is, for the script.
enum Turn {
    Prompt(String),
    Result,
    Other,
}

/// Notes the call's model and gives the number its answer's ids carry.
fn next_id(state: &State, body: &Value) -> u64 {
    let model = body["model"].as_str().unwrap_or_default().to_string();
    state.models.lock().unwrap().push(model);
    state.next.fetch_add(1, Ordering::Relaxed)
}

fn event_stream(frames: Vec<(&str, Value)>) -> Response {
    let mut body = String::new();
    for (name, data) in frames {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    ([("content-type", "text/event-stream")], body).into_response()
}

/// Claude Code's call: a tool call for the next command, or the closing text.
async fn messages(
    axum::extract::State(state): axum::extract::State<State>,
    _headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = next_id(&state, &body);
    state.claude_calls.lock().unwrap().push(body.clone());
    let turns = body["messages"].as_array().into_iter().flatten().map(|m| {
        let content = &m["content"];
        let is_result = content
            .as_array()
            .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"));
        match (m["role"].as_str(), is_result) {
            (Some("user"), true) => Turn::Result,
            (Some("user"), false) => Turn::Prompt(text_of(content)),
            _ => Turn::Other,
        }
    });
    let conversation = body["tools"].is_array();
    let command = next_command(turns).filter(|_| conversation);
    if command.is_none() && conversation {
        state.closings.lock().unwrap().push(format!("done {n}"));
    }
    let usage = json!({
        "input_tokens": CLAUDE_INPUT, "output_tokens": 1,
        "cache_creation_input_tokens": CLAUDE_CACHE_WRITE,
        "cache_read_input_tokens": CLAUDE_CACHE_READ,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
    });
    let mut frames = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "model": body["model"], "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": usage}}),
    )];
    let (block, delta, stop) = match &command {
        Some(command) => (
            json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": "Bash", "input": {}}),
            json!({"type": "input_json_delta",
                   "partial_json": json!({"command": command, "description": "scripted"}).to_string()}),
            "tool_use",
        ),
        None => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": format!("done {n}")}),
            "end_turn",
        ),
    };
    frames.extend([
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                   "usage": {"output_tokens": CLAUDE_OUTPUT}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]);
    event_stream(frames)
}

/// Codex's call: a shell function call for the next command (with the shell tool the request
/// offers), or the closing message.
async fn responses(
    axum::extract::State(state): axum::extract::State<State>,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = next_id(&state, &body);
    let turns = body["input"].as_array().into_iter().flatten().map(|item| {
        match (item["type"].as_str(), item["role"].as_str()) {
            (Some("message"), Some("user")) => Turn::Prompt(text_of(&item["content"])),
            (Some("function_call_output" | "custom_tool_call_output"), _) => Turn::Result,
            _ => Turn::Other,
        }
    });
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let item = match next_command(turns) {
        Some(command) => {
            let (name, args) = if tools.contains(&"shell_command") {
                ("shell_command", json!({ "command": command }))
            } else if tools.contains(&"exec_command") {
                ("exec_command", json!({ "cmd": command }))
            } else {
                ("shell", json!({ "command": ["bash", "-lc", command] }))
            };
            json!({"type": "function_call", "id": format!("fc_{n}"), "name": name,
                   "arguments": args.to_string(), "call_id": format!("call_{n}")})
        }
        None => json!({"type": "message", "role": "assistant", "id": format!("m_{n}"),
                       "content": [{"type": "output_text", "text": format!("done {n}")}]}),
    };
    let usage = json!({
        "input_tokens": CODEX_INPUT, "input_tokens_details": {"cached_tokens": CODEX_CACHED},
        "output_tokens": CODEX_OUTPUT, "output_tokens_details": {"reasoning_tokens": CODEX_REASONING},
        "total_tokens": CODEX_INPUT + CODEX_OUTPUT
    });
    event_stream(vec![
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": format!("resp_{n}")}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"id": format!("resp_{n}"), "usage": usage}}),
        ),
    ])
}
