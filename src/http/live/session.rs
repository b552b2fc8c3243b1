//! One socket's life: the hydration frames, then, until the client leaves or hooklog stops,
//! the live frames of the change stream interleaved with answers to the client's messages.
//! A send that does not complete within [`SEND_TIMEOUT`] (a client that stopped reading) ends
//! the socket instead of holding its frames.

use super::{client, frames, hydrate};
use crate::coordination::permissions::Decide;
use crate::coordination::{Command, Outcome, Verdict};
use crate::event::time;
use crate::http::AppState;
use crate::stream::changes::Changes;
use crate::stream::follower::follow;
use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Seed 000's protocol version this channel speaks.
pub const PROTOCOL_VERSION: u32 = 1;
/// How long one frame may take to leave.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves the socket until it ends; `held` (its stream slot, its connection's place) is freed
/// then.
pub async fn run(mut socket: WebSocket, state: AppState, held: impl Send) {
    let _held = held;
    if let Err(why) = serve(&mut socket, &state).await {
        tracing::debug!(%why, "live socket closed");
    }
}

/// Why a socket ended.
#[derive(Debug, thiserror::Error)]
enum Ended {
    #[error("the client went away")]
    Gone,
    #[error("a frame could not be sent: {0}")]
    Send(String),
    #[error("a read failed: {0}")]
    Read(String),
}

async fn send(socket: &mut WebSocket, frame: &Value) -> Result<(), Ended> {
    let message = Message::Text(frame.to_string().into());
    match tokio::time::timeout(SEND_TIMEOUT, socket.send(message)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Ended::Send(e.to_string())),
        Err(_) => Err(Ended::Send("the client stopped reading".into())),
    }
}

async fn close(socket: &mut WebSocket, code: u16, reason: &'static str) {
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    let _ = tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Close(Some(frame)))).await;
}

/// Decides a permission request for the socket's client. A decision that settles it needs
/// no answer: its `permission_response` frame comes with the changes, to every socket.
async fn decide(state: &AppState, decision: Decide) -> Option<Value> {
    let command = Command::DecidePermission(decision);
    match state.store.writer.decide(command).await {
        Ok(decided) => match decided.verdict {
            Verdict::Done(outcome) => match *outcome {
                Outcome::Permission(answer) if answer.resolved => None,
                Outcome::Permission(answer) => {
                    let mut toast = client::Refusal::NotPending.toast();
                    // Why, as `POST /permission-response` says it (`not_pending`, `wait_over`,
                    // `other_origin`, ...).
                    toast["reason"] = json!(answer.reason);
                    Some(toast)
                }
                _ => Some(client::Refusal::NotPending.toast()),
            },
            _ => Some(client::Refusal::NotPending.toast()),
        },
        Err(e) => {
            tracing::warn!(error = %e, "a socket's decision was not stored");
            Some(
                json!({"type": "server_toast", "level": "error", "code": "not_stored",
                "message": "the decision was not stored; try again"}),
            )
        }
    }
}

/// Resolves once hooklog starts shutting down.
async fn stopping(shutdown: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stopping| *stopping).await;
}

async fn serve(socket: &mut WebSocket, state: &AppState) -> Result<(), Ended> {
    let snapshot = state
        .store
        .read(hydrate::read)
        .await
        .map_err(|e| Ended::Read(e.to_string()))?;
    let connected = json!({"type": "connected", "server": "hooklog",
        "serverVersion": env!("CARGO_PKG_VERSION"), "protocolVersion": PROTOCOL_VERSION,
        "time": time::now(), "headSequence": snapshot.head,
        "streamGenerationId": state.store.generation_id});
    send(socket, &connected).await?;
    send(
        socket,
        &json!({"type": "roster_update", "heroes": snapshot.heroes}),
    )
    .await?;
    send(
        socket,
        &json!({"type": "mission_state", "missions": snapshot.missions}),
    )
    .await?;
    for request in &snapshot.pending {
        if let Ok(Value::Object(fields)) = serde_json::to_value(request) {
            send(socket, &frames::permission_request(&fields)).await?;
        }
    }
    let source = Arc::new(Changes {
        hub: state.hub.clone(),
    });
    let history = crate::http::streams::history(state);
    let changes = follow(source, state.store.clone(), snapshot.head, history);
    let mut changes = std::pin::pin!(changes);
    let mut shutdown = state.shutdown.clone();
    loop {
        tokio::select! {
            () = stopping(&mut shutdown) => {
                close(socket, close_code::AWAY, "hooklog is stopping").await;
                return Ok(());
            }
            incoming = socket.recv() => {
                let reply = match incoming {
                    None | Some(Ok(Message::Close(_))) => return Err(Ended::Gone),
                    Some(Err(e)) => return Err(Ended::Read(e.to_string())),
                    Some(Ok(Message::Text(text))) => match client::read(text.as_str(), &time::now()) {
                        client::Incoming::Reply(reply) => reply,
                        client::Incoming::Decide(decision) => decide(state, decision).await,
                    },
                    Some(Ok(Message::Binary(_))) => Some(client::Refusal::Binary.toast()),
                    // The protocol's own pings are answered by the socket itself.
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => None,
                };
                if let Some(reply) = reply {
                    send(socket, &reply).await?;
                }
            }
            page = changes.next() => match page {
                Some(Ok(page)) => {
                    for change in &page {
                        for frame in frames::of(change) {
                            send(socket, &frame).await?;
                        }
                    }
                }
                Some(Err(e)) => {
                    close(socket, close_code::ERROR, "reading the changes failed").await;
                    return Err(Ended::Read(e.to_string()));
                }
                None => {
                    close(socket, close_code::AWAY, "hooklog is stopping").await;
                    return Ok(());
                }
            },
        }
    }
}
