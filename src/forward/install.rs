//! Hook entries for `hooklog hook` in an agent's own settings file: Claude Code's
//! `settings.json` and Codex's `hooks.json`, which share one shape:
//! `{"hooks": {"<Event>": [{"matcher"?: "...", "hooks": [{"type": "command", ...}]}]}}`.
//!
//! The user's file is edited, not rewritten: everything hooklog does not manage is carried over
//! as the exact text it was (serde_json `RawValue`), in its order. hooklog adds one matcher
//! group of its own at the end of each event's list, and recognises its own entries by their
//! command (`... hook --managed`). Installing removes its old entries first, so it can be run
//! again; uninstalling removes them and the lists and keys that only they had made.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::path::Path;

/// A waiting `PermissionRequest` entry's timeout is its wait plus this: the forwarder delivers,
/// waits, and expires the request within it, so the agent never kills it first.
pub const APPROVAL_MARGIN_SECONDS: u64 = 10;

/// What marks a command hook as hooklog's own.
pub const MARKER: &str = " hook --managed";

/// An agent whose hooks hooklog can install.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
}

impl Agent {
    /// The events hooklog records for this agent, and whether each takes a tool matcher.
    ///
    /// Claude Code: the triggers of seed 000's hook map (`SessionStart`, `UserPromptSubmit`,
    /// `Stop`, `PreToolUse`, `PostToolUse`, `SubagentStop`, `PermissionRequest`) and the other
    /// events hooklog's projections read (`PostToolUseFailure`, `PermissionDenied`,
    /// `Notification`, `SubagentStart`, `TaskCreated`, `TaskCompleted`, `CwdChanged`,
    /// `PreCompact`, `PostCompact`, `StopFailure`, `SessionEnd`). Codex: every event Codex
    /// 0.171 runs that the projections read; of its twelve, `Interrupt` is only stored, and
    /// `StopFailure` came after it. A Codex that does not know an event ignores its entry.
    /// Tool events match every tool (`*`): a recorder wants all of them.
    pub fn events(self) -> &'static [(&'static str, bool)] {
        match self {
            Agent::Claude => &[
                ("SessionStart", false),
                ("UserPromptSubmit", false),
                ("PreToolUse", true),
                ("PostToolUse", true),
                ("PostToolUseFailure", true),
                ("PermissionRequest", true),
                ("PermissionDenied", true),
                ("Notification", false),
                ("SubagentStart", false),
                ("SubagentStop", false),
                ("TaskCreated", false),
                ("TaskCompleted", false),
                ("CwdChanged", false),
                ("PreCompact", false),
                ("PostCompact", false),
                ("Stop", false),
                ("StopFailure", false),
                ("SessionEnd", false),
            ],
            Agent::Codex => &[
                ("SessionStart", false),
                ("UserPromptSubmit", false),
                ("PreToolUse", true),
                ("PostToolUse", true),
                ("PermissionRequest", true),
                ("SubagentStart", false),
                ("SubagentStop", false),
                ("PreCompact", false),
                ("PostCompact", false),
                ("Stop", false),
                ("SessionEnd", false),
            ],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }
}

/// A JSON tree whose untouched parts are the user's own text.
#[derive(Serialize)]
#[serde(untagged)]
enum Node {
    Raw(Box<RawValue>),
    Map(IndexMap<String, Node>),
    List(Vec<Node>),
    Value(Value),
}

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("{0} is not valid JSON: {1}")]
    Json(String, serde_json::Error),
    #[error("{0}: `hooks` must be an object of event names to lists")]
    Shape(String),
}

/// The settings text with hooklog's entries replaced by one group per event running `command`
/// (`None`: with hooklog's entries removed). `original` is the file's text, empty if it does not
/// exist; `name` names it in errors. Returns the new text.
pub fn edit(
    original: &str,
    name: &str,
    agent: Agent,
    command: Option<&str>,
) -> Result<String, EditError> {
    edit_with(original, name, agent, command, None)
}

/// [`edit`], with the `PermissionRequest` entry waiting up to `approvals` seconds for a
/// decision made in hooklog (`hooklog hook --approvals`), its timeout set past that wait so the
/// agent never kills it first.
pub fn edit_with(
    original: &str,
    name: &str,
    agent: Agent,
    command: Option<&str>,
    approvals: Option<u64>,
) -> Result<String, EditError> {
    let shape = || EditError::Shape(name.to_string());
    let mut top: IndexMap<String, Node> = if original.trim().is_empty() {
        IndexMap::new()
    } else {
        let raw: IndexMap<String, Box<RawValue>> =
            serde_json::from_str(original).map_err(|e| EditError::Json(name.to_string(), e))?;
        raw.into_iter().map(|(k, v)| (k, Node::Raw(v))).collect()
    };
    let mut found = false;
    let mut hooks: IndexMap<String, Vec<Node>> = match top.get("hooks") {
        Some(Node::Raw(raw)) => {
            let events: IndexMap<String, Box<RawValue>> =
                serde_json::from_str(raw.get()).map_err(|_| shape())?;
            let mut kept = IndexMap::new();
            for (event, groups) in events {
                let groups: Vec<Box<RawValue>> =
                    serde_json::from_str(groups.get()).map_err(|_| shape())?;
                let groups: Vec<Node> = groups
                    .into_iter()
                    .filter_map(|g| without_managed(g, &mut found))
                    .collect();
                if !groups.is_empty() {
                    kept.insert(event, groups);
                }
            }
            kept
        }
        _ => IndexMap::new(),
    };
    if command.is_none() && !found {
        // Nothing of hooklog's: the file is left exactly as it is, whatever its formatting.
        return Ok(original.to_string());
    }
    if let Some(command) = command {
        for (event, takes_matcher) in agent.events() {
            let mut group = IndexMap::new();
            if *takes_matcher {
                group.insert("matcher".to_string(), Node::Value(json!("*")));
            }
            let entry = match approvals {
                Some(wait) if *event == "PermissionRequest" => json!({"type": "command",
                    "command": format!("{command} --approvals {wait}"),
                    "timeout": wait + APPROVAL_MARGIN_SECONDS}),
                _ => json!({"type": "command", "command": command, "timeout": 5}),
            };
            group.insert("hooks".to_string(), Node::List(vec![Node::Value(entry)]));
            hooks
                .entry((*event).to_string())
                .or_default()
                .push(Node::Map(group));
        }
    }
    if hooks.is_empty() {
        top.shift_remove("hooks");
    } else {
        let hooks = hooks
            .into_iter()
            .map(|(event, groups)| (event, Node::List(groups)))
            .collect();
        // An existing `hooks` key keeps its place; a new one goes last.
        match top.get_mut("hooks") {
            Some(slot) => *slot = Node::Map(hooks),
            None => {
                top.insert("hooks".to_string(), Node::Map(hooks));
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&top).expect("a JSON tree serializes");
    if original.is_empty() || original.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// A matcher group without hooklog's entries: `None` if only they were in it, the group's own
/// text if none were. Sets `found` when it had any.
fn without_managed(group: Box<RawValue>, found: &mut bool) -> Option<Node> {
    let Ok(fields) = serde_json::from_str::<IndexMap<String, Box<RawValue>>>(group.get()) else {
        return Some(Node::Raw(group));
    };
    let Some(Ok(entries)) = fields
        .get("hooks")
        .map(|h| serde_json::from_str::<Vec<Box<RawValue>>>(h.get()))
    else {
        return Some(Node::Raw(group));
    };
    let total = entries.len();
    let kept: Vec<Node> = entries
        .into_iter()
        .filter(|e| !is_managed(e))
        .map(Node::Raw)
        .collect();
    if kept.len() == total {
        return Some(Node::Raw(group));
    }
    *found = true;
    if kept.is_empty() {
        return None;
    }
    let mut rebuilt: IndexMap<String, Node> =
        fields.into_iter().map(|(k, v)| (k, Node::Raw(v))).collect();
    // `insert` on a key that is there keeps its place.
    rebuilt.insert("hooks".to_string(), Node::List(kept));
    Some(Node::Map(rebuilt))
}

fn is_managed(entry: &RawValue) -> bool {
    serde_json::from_str::<Value>(entry.get()).is_ok_and(|e| {
        e.get("type").and_then(Value::as_str) == Some("command")
            && e.get("command")
                .and_then(Value::as_str)
                .is_some_and(is_managed_command)
    })
}

/// Whether a command is hooklog's: the words `hook --managed`, as whole words (a user's
/// `foo hook --managed-by=ops` is not).
fn is_managed_command(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    words.windows(2).any(|w| w == ["hook", "--managed"])
}

/// The command a hook entry runs: this binary (quoted for a shell when needed), `hook`, the
/// marker flag, and the agent's own options.
pub fn command(exe: &Path, agent: Agent, url: Option<&str>) -> String {
    let mut command = format!("{}{MARKER}", shell_quote(&exe.to_string_lossy()));
    if agent == Agent::Codex {
        command.push_str(" --cli codex-cli");
    }
    if let Some(url) = url {
        command.push_str(" --url ");
        command.push_str(&shell_quote(url));
    }
    command
}

fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:=@,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "~/bin/guard.sh"
          }
        ]
      }
    ]
  },
  "permissions": {
    "allow": ["Bash(ls:*)"]
  }
}
"#;

    #[test]
    fn install_then_uninstall_gives_back_the_same_bytes() {
        let cmd = command(Path::new("/usr/local/bin/hooklog"), Agent::Claude, None);
        let installed = edit(USER, "settings.json", Agent::Claude, Some(&cmd)).unwrap();
        assert_ne!(installed, USER);
        let v: Value = serde_json::from_str(&installed).unwrap();
        // The user's group stays first; hooklog's comes after it.
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "~/bin/guard.sh"
        );
        assert_eq!(
            v["hooks"]["PreToolUse"][1]["hooks"][0]["command"],
            cmd.as_str()
        );
        assert_eq!(v["hooks"]["PreToolUse"][1]["matcher"], "*");
        assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], cmd.as_str());
        assert!(v["hooks"]["Stop"][0].get("matcher").is_none());
        assert_eq!(v["hooks"].as_object().unwrap().len(), 18);
        // Key order of the user's document is kept.
        let keys: Vec<_> = v.as_object().unwrap().keys().collect();
        assert!(installed.find("\"model\"") < installed.find("\"permissions\""));
        assert_eq!(keys.len(), 3);
        let again = edit(&installed, "settings.json", Agent::Claude, Some(&cmd)).unwrap();
        assert_eq!(again, installed, "installing twice changes nothing");
        let removed = edit(&installed, "settings.json", Agent::Claude, None).unwrap();
        assert_eq!(removed, USER);
    }

    #[test]
    fn approvals_make_only_the_permission_request_entry_wait() {
        let cmd = command(Path::new("/usr/local/bin/hooklog"), Agent::Claude, None);
        let installed =
            edit_with("", "settings.json", Agent::Claude, Some(&cmd), Some(120)).unwrap();
        let v: Value = serde_json::from_str(&installed).unwrap();
        let entry = &v["hooks"]["PermissionRequest"][0]["hooks"][0];
        assert_eq!(entry["command"], format!("{cmd} --approvals 120"));
        assert_eq!(entry["timeout"], 130);
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            cmd.as_str()
        );
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 5);
        // Still hooklog's own: installing again replaces it, uninstalling removes it.
        let plain = edit(&installed, "settings.json", Agent::Claude, Some(&cmd)).unwrap();
        let v: Value = serde_json::from_str(&plain).unwrap();
        assert_eq!(v["hooks"]["PermissionRequest"].as_array().unwrap().len(), 1);
        assert_eq!(
            v["hooks"]["PermissionRequest"][0]["hooks"][0]["command"],
            cmd.as_str()
        );
        let removed = edit(&installed, "settings.json", Agent::Claude, None).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&removed).unwrap(), json!({}));
    }

    #[test]
    fn a_file_without_hooks_loses_the_key_again() {
        let original = "{\n  \"theme\": \"dark\"\n}";
        let cmd = command(Path::new("/opt/hook log/hooklog"), Agent::Codex, None);
        assert_eq!(
            cmd,
            "'/opt/hook log/hooklog' hook --managed --cli codex-cli"
        );
        let installed = edit(original, "hooks.json", Agent::Codex, Some(&cmd)).unwrap();
        let v: Value = serde_json::from_str(&installed).unwrap();
        let events: Vec<&String> = v["hooks"].as_object().unwrap().keys().collect();
        for event in ["SessionEnd", "PreCompact", "PostCompact"] {
            assert!(events.contains(&&event.to_string()), "{event}: {events:?}");
        }
        assert_eq!(events.len(), 11);
        assert_eq!(
            edit(&installed, "hooks.json", Agent::Codex, None).unwrap(),
            original
        );
    }

    #[test]
    fn a_user_entry_sharing_a_group_with_a_managed_one_is_kept() {
        let mixed = r#"{"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "hooklog hook --managed"},
            {"type": "command", "command": "notify-send done"}]}]}}"#;
        let removed = edit(mixed, "settings.json", Agent::Claude, None).unwrap();
        let v: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(
            v,
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}})
        );
    }

    #[test]
    fn only_whole_words_mark_a_command_as_hooklogs() {
        assert!(is_managed_command("/usr/bin/hooklog hook --managed"));
        assert!(is_managed_command(
            "'/opt/x y/hooklog' hook --managed --cli codex-cli"
        ));
        assert!(!is_managed_command("foo hook --managed-by=ops"));
        assert!(!is_managed_command("my-hook --managed"));
    }

    #[test]
    fn uninstall_leaves_a_file_without_hooklog_entries_untouched() {
        let minified = r#"{"hooks":{"Stop":[]},"b":1,   "a":[1,2]}"#;
        assert_eq!(
            edit(minified, "settings.json", Agent::Claude, None).unwrap(),
            minified
        );
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(matches!(
            edit("{not json", "settings.json", Agent::Claude, None),
            Err(EditError::Json(..))
        ));
        assert!(matches!(
            edit(r#"{"hooks": []}"#, "settings.json", Agent::Claude, None),
            Err(EditError::Shape(_))
        ));
    }
}
