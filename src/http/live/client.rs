//! Messages from the client. Seed 000's `hello` is a no-op and `ping` is answered `pong`; its
//! other client messages act on state hooklog does not keep (permissions, plans, guarded
//! actions, notices, scrolls, hero overrides), so they are refused, like anything malformed,
//! with a compact `server_toast`. A toast never echoes the message, and never closes the socket.

use serde_json::{Value, json};

/// Largest client message read: anything longer is refused with a toast (the socket's own
/// limit, above which it closes, is the body limit).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// Seed 000's client messages that hooklog has no state for.
const UNSERVED: &[&str] = &[
    "permission_response",
    "plan_approval",
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
            Refusal::UnknownType => "hooklog takes \"hello\" and \"ping\"".into(),
        }
    }

    /// The `server_toast` frame for it.
    pub fn toast(self) -> Value {
        json!({"type": "server_toast", "level": "warning", "code": self.code(),
               "message": self.message()})
    }
}

/// The answer to a text message: a frame to send, or nothing.
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
}
