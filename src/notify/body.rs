//! What a notice says, and the request each kind of target takes for it: hooklog's own JSON,
//! ntfy's text body with `Title`/`Tags`/`Click` headers, or a Slack incoming webhook's
//! `{"text": ...}`. Pure: no I/O, so each shape is tested here.

use crate::config::NotifyKind;
use serde_json::{Value, json};

/// Why a session waits: what the event that opened the spell says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A `PermissionRequest`, or a `Notification` of a `permission_prompt`.
    Permission,
    /// A `Notification` of an `idle_prompt`: the agent has been waiting for a prompt a while.
    Idle,
    /// A `Notification` of an `elicitation_dialog`: an MCP server asks the user something.
    Elicitation,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Permission => "permission",
            Reason::Idle => "idle",
            Reason::Elicitation => "elicitation",
        }
    }
}

/// A waiting spell as its notice tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub session: String,
    /// The sequence and id of the event that opened the spell.
    pub spell: i64,
    pub spell_event_id: String,
    pub reason: Reason,
    pub cwd: Option<String>,
    pub tool: Option<String>,
    /// The `Notification`'s own message, when it has one.
    pub message: Option<String>,
    /// When the spell began (the event's time).
    pub since: String,
    /// The session's page.
    pub url: String,
}

/// A request for one target: its body, its content type and the headers it adds.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

impl Notice {
    /// The last component of the working directory, or the session id without one.
    pub fn project(&self) -> &str {
        self.cwd
            .as_deref()
            .and_then(|cwd| cwd.trim_end_matches('/').rsplit('/').next())
            .filter(|p| !p.is_empty())
            .unwrap_or(&self.session)
    }

    /// One line saying who waits for what.
    pub fn headline(&self) -> String {
        let project = self.project();
        match (self.reason, self.tool.as_deref()) {
            (Reason::Permission, Some(tool)) => {
                format!("{project}: waiting for permission to use {tool}")
            }
            (Reason::Permission, None) => format!("{project}: waiting for permission"),
            (Reason::Idle, _) => format!("{project}: waiting for your input"),
            (Reason::Elicitation, _) => format!("{project}: waiting for an answer"),
        }
    }

    /// The request a target of `kind` takes.
    pub fn request(&self, kind: NotifyKind) -> Request {
        match kind {
            NotifyKind::Json => Request {
                content_type: "application/json",
                headers: Vec::new(),
                body: self.json().to_string(),
            },
            NotifyKind::Ntfy => Request {
                content_type: "text/plain; charset=utf-8",
                headers: vec![
                    (
                        "Title",
                        header_text(&format!("hooklog: {}", self.project())),
                    ),
                    ("Tags", "hourglass".to_string()),
                    ("Click", self.url.clone()),
                ],
                body: self.text(),
            },
            NotifyKind::Slack => {
                let mut text = slack_escape(&self.headline());
                if let Some(message) = &self.message {
                    text.push('\n');
                    text.push_str(&slack_escape(message));
                }
                text.push_str(&format!("\n<{}|Open the session>", self.url));
                Request {
                    content_type: "application/json",
                    headers: Vec::new(),
                    body: json!({ "text": text }).to_string(),
                }
            }
        }
    }

    /// hooklog's own body (`--notify URL`). `spellEventId` is the same in every notice of a
    /// spell, redelivered ones included: a receiver that must show each once dedupes on it.
    pub fn json(&self) -> Value {
        json!({
            "kind": "waiting",
            "sessionId": self.session,
            "project": self.project(),
            "cwd": self.cwd,
            "tool": self.tool,
            "reason": self.reason.as_str(),
            "message": self.message,
            "since": self.since,
            "url": self.url,
            "spellSequence": self.spell,
            "spellEventId": self.spell_event_id,
        })
    }

    /// The headline, the agent's own message, and the link.
    fn text(&self) -> String {
        let mut text = self.headline();
        if let Some(message) = &self.message {
            text.push('\n');
            text.push_str(message);
        }
        text.push('\n');
        text.push_str(&self.url);
        text
    }
}

/// Slack reads `&`, `<` and `>` as markup: they are sent escaped.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A header value as ntfy reads it: plain ASCII as it is, anything else as an RFC 2047
/// encoded word (`=?UTF-8?Q?...?=`), which ntfy decodes. Control characters are dropped.
fn header_text(text: &str) -> String {
    let text: String = text.chars().filter(|c| !c.is_control()).collect();
    if text.is_ascii() {
        return text;
    }
    let mut out = String::from("=?UTF-8?Q?");
    for byte in text.bytes() {
        match byte {
            b' ' => out.push('_'),
            b if b.is_ascii_alphanumeric() || b"-.:/!*+".contains(&b) => out.push(b as char),
            b => out.push_str(&format!("={b:02X}")),
        }
    }
    out.push_str("?=");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice() -> Notice {
        Notice {
            session: "s1".into(),
            spell: 7,
            spell_event_id: "e7".into(),
            reason: Reason::Permission,
            cwd: Some("/home/ann/shop/".into()),
            tool: Some("Bash".into()),
            message: None,
            since: "2026-12-03T10:00:00.000Z".into(),
            url: "http://127.0.0.1:2468/s/s1".into(),
        }
    }

    #[test]
    fn the_json_body_names_the_session_project_tool_reason_and_link() {
        let request = notice().request(NotifyKind::Json);
        assert_eq!(request.content_type, "application/json");
        let body: Value = serde_json::from_str(&request.body).unwrap();
        assert_eq!(body["kind"], "waiting");
        assert_eq!(body["sessionId"], "s1");
        assert_eq!(body["project"], "shop");
        assert_eq!(body["cwd"], "/home/ann/shop/");
        assert_eq!(body["tool"], "Bash");
        assert_eq!(body["reason"], "permission");
        assert_eq!(body["since"], "2026-12-03T10:00:00.000Z");
        assert_eq!(body["url"], "http://127.0.0.1:2468/s/s1");
        assert_eq!(body["spellSequence"], 7);
    }

    #[test]
    fn ntfy_takes_the_text_as_body_and_title_tags_click_as_headers() {
        let request = notice().request(NotifyKind::Ntfy);
        assert!(request.content_type.starts_with("text/plain"));
        assert_eq!(
            request.body,
            "shop: waiting for permission to use Bash\nhttp://127.0.0.1:2468/s/s1"
        );
        let header = |name| {
            request
                .headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("Title"), Some("hooklog: shop"));
        assert_eq!(header("Tags"), Some("hourglass"));
        assert_eq!(header("Click"), Some("http://127.0.0.1:2468/s/s1"));
    }

    #[test]
    fn a_non_ascii_ntfy_title_is_an_encoded_word() {
        assert_eq!(
            header_text("hooklog: café"),
            "=?UTF-8?Q?hooklog:_caf=C3=A9?="
        );
        assert_eq!(header_text("a\r\nb"), "ab");
    }

    #[test]
    fn slack_takes_one_escaped_text_with_a_link() {
        let mut idle = notice();
        idle.reason = Reason::Idle;
        idle.message = Some("Claude is waiting for your input <now> & later".into());
        let body: Value = serde_json::from_str(&idle.request(NotifyKind::Slack).body).unwrap();
        assert_eq!(
            body,
            json!({"text": "shop: waiting for your input\n\
                Claude is waiting for your input &lt;now&gt; &amp; later\n\
                <http://127.0.0.1:2468/s/s1|Open the session>"})
        );
    }

    #[test]
    fn without_a_cwd_the_project_is_the_session() {
        let mut bare = notice();
        bare.cwd = None;
        bare.tool = None;
        assert_eq!(bare.headline(), "s1: waiting for permission");
    }
}
