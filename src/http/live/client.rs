//! Messages from the client. Seed 000's `hello` is a no-op and `ping` is answered `pong`;
//! `permission_response` and `plan_approval` decide a permission request (as `POST
//! /permission-response` and `POST /plan/approve` do, recorded as decided by `websocket`); its
//! other client messages act on state hooklog does not keep (guarded actions, notices, scrolls,
//! hero overrides), so they are refused, like anything malformed, with a compact
//! `server_toast`. A toast never echoes the message, and never closes the socket.

use crate::coordination::permissions::{Decide, Decider};
use crate::http::permissions::decision;
use serde_json::{Value, json};

/// Largest client message read: anything longer is refused with a toast (the socket's own
/// limit, above which it closes, is the body limit).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// Seed 000's client messages that hooklog has no state for.
const UNSERVED: &[&str] = &[
    "guarded_action_decision",
    "post_notice",
    "collect_scroll",
    "hero_state_override",
];

/// Why a client message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    TooLarge,
    Binary,
    NotJson,
    NotAMessage,
    Unserved,
    UnknownType,
    /// A decision without a request id (1 to 256 characters), a boolean `approved`, or with a
    /// message that is not text of at most 2,000 characters.
    InvalidDecision,
    /// A decision for a request that is not pending (decided already, answered elsewhere,
    /// expired, or unknown).
    NotPending,
}

impl Refusal {
    fn code(self) -> &'static str {
        match self {
            Refusal::TooLarge => "message_too_large",
            Refusal::Binary => "binary_message",
            Refusal::NotJson => "invalid_json",
            Refusal::NotAMessage => "invalid_message",
            Refusal::Unserved => "unsupported_message",
            Refusal::UnknownType => "unknown_message_type",
            Refusal::InvalidDecision => "invalid_decision",
            Refusal::NotPending => "permission_not_pending",
        }
    }

    fn message(self) -> String {
        match self {
            Refusal::TooLarge => format!("messages are at most {MAX_MESSAGE_BYTES} bytes"),
            Refusal::Binary => "messages are JSON text".into(),
            Refusal::NotJson => "the message is not valid JSON".into(),
            Refusal::NotAMessage => "a message is a JSON object with a string \"type\"".into(),
            Refusal::Unserved => {
                "hooklog records agent events and keeps no state this message could change".into()
            }
            Refusal::UnknownType => {
                "hooklog takes \"hello\", \"ping\", \"permission_response\" and \"plan_approval\""
                    .into()
            }
            Refusal::InvalidDecision => {
                "a decision names its request (1 to 256 characters), says `approved` as a boolean, and may carry a message of at most 2000 characters".into()
            }
            Refusal::NotPending => "that request is no longer pending: nothing was changed".into(),
        }
    }

    /// The `server_toast` frame for it.
    pub fn toast(self) -> Value {
        json!({"type": "server_toast", "level": "warning", "code": self.code(),
               "message": self.message()})
    }
}

/// What to do with a text message.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Send this frame, or nothing.
    Reply(Option<Value>),
    Decide(Decide),
}

/// Reads a text message: a decision, or the answer to anything else.
pub fn read(text: &str, now: &str) -> Incoming {
    if text.len() <= MAX_MESSAGE_BYTES
        && let Ok(message) = serde_json::from_str::<Value>(text)
    {
        let (key, plan) = match message.get("type").and_then(Value::as_str) {
            Some("permission_response") => ("requestId", false),
            Some("plan_approval") => ("planId", true),
            _ => return Incoming::Reply(answer(text, now)),
        };
        let id = message.get(key).and_then(Value::as_str);
        let approved = message.get("approved").and_then(Value::as_bool);
        let note = match message.get("message") {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(m)) => Some(Some(m.clone())),
            Some(_) => None,
        };
        // The bounds are the HTTP routes' own.
        let decide = match (id, approved, note) {
            (Some(id), Some(approved), Some(note)) => {
                decision(id.to_string(), approved, note, Decider::Websocket, plan).ok()
            }
            _ => None,
        };
        return match decide {
            Some(decide) => Incoming::Decide(decide),
            None => Incoming::Reply(Some(Refusal::InvalidDecision.toast())),
        };
    }
    Incoming::Reply(answer(text, now))
}

/// The answer to a text message that is not a decision: a frame to send, or nothing.
pub fn answer(text: &str, now: &str) -> Option<Value> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Some(Refusal::TooLarge.toast());
    }
    let Ok(message) = serde_json::from_str::<Value>(text) else {
        return Some(Refusal::NotJson.toast());
    };
    let Some(kind) = message.get("type").and_then(Value::as_str) else {
        return Some(Refusal::NotAMessage.toast());
    };
    match kind {
        "hello" => None,
        "ping" => Some(json!({"type": "pong", "time": now})),
        k if UNSERVED.contains(&k) => Some(Refusal::Unserved.toast()),
        _ => Some(Refusal::UnknownType.toast()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_is_quiet_ping_is_answered_and_the_rest_is_toasted_without_an_echo() {
        assert_eq!(answer(r#"{"type":"hello","client":"x"}"#, "t"), None);
        assert_eq!(
            answer(r#"{"type":"ping"}"#, "t"),
            Some(json!({"type": "pong", "time": "t"}))
        );
        for (text, code) in [
            ("{not json SECRET", "invalid_json"),
            ("[1,2]", "invalid_message"),
            (r#"{"type":7}"#, "invalid_message"),
            (
                r#"{"type":"post_notice","body":"SECRET"}"#,
                "unsupported_message",
            ),
            (r#"{"type":"SECRET"}"#, "unknown_message_type"),
        ] {
            let toast = answer(text, "t").unwrap();
            assert_eq!(toast["type"], "server_toast");
            assert_eq!(toast["code"], code, "{text}");
            assert!(!toast.to_string().contains("SECRET"), "{toast}");
        }
        let big = format!(
            r#"{{"type":"ping","pad":"{}"}}"#,
            "x".repeat(MAX_MESSAGE_BYTES)
        );
        assert_eq!(answer(&big, "t").unwrap()["code"], "message_too_large");
    }

    #[test]
    fn decisions_are_read_and_bad_ones_toasted() {
        assert_eq!(
            read(
                r#"{"type":"permission_response","requestId":"r1","approved":false,"message":"no"}"#,
                "t"
            ),
            Incoming::Decide(Decide {
                request_id: "r1".into(),
                approved: false,
                message: Some("no".into()),
                by: Decider::Websocket,
                plan_only: false,
            })
        );
        assert_eq!(
            read(
                r#"{"type":"plan_approval","planId":"p1","approved":true}"#,
                "t"
            ),
            Incoming::Decide(Decide {
                request_id: "p1".into(),
                approved: true,
                message: None,
                by: Decider::Websocket,
                plan_only: true,
            })
        );
        for bad in [
            r#"{"type":"permission_response","requestId":"r1"}"#,
            r#"{"type":"permission_response","requestId":"","approved":true}"#,
            r#"{"type":"permission_response","requestId":"r1","approved":"yes"}"#,
            r#"{"type":"plan_approval","requestId":"r1","approved":true}"#,
            r#"{"type":"permission_response","requestId":"r1","approved":true,"message":7}"#,
            r#"{"type":"permission_response","requestId":"r\u0007","approved":true}"#,
        ] {
            let Incoming::Reply(Some(toast)) = read(bad, "t") else {
                panic!("{bad} was taken");
            };
            assert_eq!(toast["code"], "invalid_decision", "{bad}");
        }
        assert_eq!(
            read(r#"{"type":"ping"}"#, "t"),
            Incoming::Reply(Some(json!({"type": "pong", "time": "t"})))
        );
    }
}
