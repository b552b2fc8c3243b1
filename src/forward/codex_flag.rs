//! `[features] codex_hooks = true` in Codex's `config.toml`: the switch without which a Codex
//! from before hooks became a stable feature runs no hook at all.
//!
//! The file is edited as text and never written back from a parsed tree: toml_edit only says
//! where things are (byte spans), and hooklog inserts or replaces a few bytes there, so every
//! other byte, comment and blank line stays as it was. Each change carries a marker comment
//! saying what it was, and [`undo`] takes back exactly that change:
//!
//! | the file has | [`turn_on`] writes | marker |
//! |---|---|---|
//! | no `features` | a `[features]` table with the key, at the end | ` # hooklog: added` on both lines |
//! | `[features]` without the key | `codex_hooks = true` under the header | ` # hooklog: added` |
//! | dotted `features.x = ...` keys | `features.codex_hooks = true` above the first | ` # hooklog: added` |
//! | `features = { ... }` | `codex_hooks = true` first in the braces | [`ADDED_INLINE`] on the line above |
//! | `codex_hooks = false` | `true` in its place | [`WAS_FALSE`] on the line above |
//! | `codex_hooks = true`, or Codex's newer name `hooks` | nothing: the setting is the user's | |

use std::ops::Range;
use toml_edit::{Document, Item, TableLike, Value};

/// The feature's key in `[features]`.
pub const KEY: &str = "codex_hooks";
/// Ends a line that hooklog wrote whole.
const ADDED: &str = " # hooklog: added";
/// The line above a `codex_hooks` that hooklog turned from `false` to `true`.
pub const WAS_FALSE: &str = "# hooklog: codex_hooks below was false";
/// The line above a `features = { ... }` that hooklog put `codex_hooks = true` into.
pub const ADDED_INLINE: &str = "# hooklog: added codex_hooks to the line below";
/// What hooklog puts right after the `{` of an inline `features` table: the first when the
/// table had other keys, the second when it was empty.
const INLINE_ENTRIES: [&str; 2] = [" codex_hooks = true,", " codex_hooks = true "];

#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("{0} is not valid TOML: {1}")]
    Toml(String, toml_edit::TomlError),
    #[error("{0}: `features` must be a table, and `features.{KEY}` true or false")]
    Shape(String),
    #[error(
        "{0}: hooklog's edit would not leave valid TOML with `{KEY}` on; the file is left as it is"
    )]
    Unsafe(String),
}

/// How the file writes its `features` table.
enum Form {
    Absent,
    /// Only sub-tables with headers of their own (`[features.x]`): no header to write under.
    Implicit,
    /// `[features]`, with the span of its header.
    Header(Range<usize>),
    /// Dotted keys in the top-level table; the offset of the first `features`.
    Dotted(usize),
    /// `features = { ... }`: the offset of its `{`, and whether it has no keys.
    Inline(usize, bool),
}

struct Located {
    form: Form,
    /// `codex_hooks`: its value and the span of the value's text.
    flag: Option<(bool, Range<usize>)>,
    /// Codex's newer name for the same feature, when the file sets it.
    hooks: Option<bool>,
    /// Keys written in the table's own section (sub-tables with their own header not counted).
    own_keys: usize,
}

/// `config.toml`'s text with `codex_hooks` on; `original` is empty when there is no file.
pub fn turn_on(original: &str, name: &str) -> Result<String, FlagError> {
    let found = locate(original, name)?;
    if found.hooks.is_some() || found.flag.as_ref().is_some_and(|(on, _)| *on) {
        return Ok(original.to_string());
    }
    let nl = newline(original);
    let mut text = original.to_string();
    if let Some((_, value)) = found.flag {
        let line = line_at(original, value.start);
        // A `false` under hooklog's own marker, or on hooklog's own line, is marked already.
        let marked = original[line.clone()].ends_with(ADDED)
            || line_before(original, line.start).is_some_and(|l| original[l] == *WAS_FALSE);
        text.replace_range(value, "true");
        if !marked {
            text.insert_str(line.start, &format!("{WAS_FALSE}{nl}"));
        }
        return check(text, name, true);
    }
    match found.form {
        Form::Absent | Form::Implicit => {
            if !text.is_empty() {
                text.push_str(nl);
            }
            text.push_str(&format!("[features]{ADDED}{nl}{KEY} = true{ADDED}{nl}"));
        }
        Form::Header(header) => match original[header.end..].find('\n') {
            Some(end) => {
                let at = header.end + end + 1;
                text.insert_str(at, &format!("{KEY} = true{ADDED}{nl}"));
            }
            None => text.push_str(&format!("{nl}{KEY} = true{ADDED}")),
        },
        Form::Dotted(first) => {
            let at = line_at(original, first).start;
            text.insert_str(at, &format!("features.{KEY} = true{ADDED}{nl}"));
        }
        Form::Inline(brace, empty) => {
            text.insert_str(brace + 1, INLINE_ENTRIES[usize::from(empty)]);
            let at = line_at(original, brace).start;
            text.insert_str(at, &format!("{ADDED_INLINE}{nl}"));
        }
    }
    check(text, name, true)
}

/// `config.toml`'s text with hooklog's own change to `codex_hooks` taken back. A flag without
/// hooklog's marker is the user's and stays; so does a marked line the user has since edited.
pub fn undo(original: &str, name: &str) -> Result<String, FlagError> {
    let found = locate(original, name)?;
    let Some((on, value)) = found.flag else {
        return Ok(original.to_string());
    };
    let line = line_at(original, value.start);
    let above = line_before(original, line.start);
    let above_is = |marker: &str| above.clone().is_some_and(|l| original[l] == *marker);
    let mut text = original.to_string();
    if original[line.clone()].ends_with(ADDED) {
        let ours = [
            format!("{KEY} = true{ADDED}"),
            format!("features.{KEY} = true{ADDED}"),
        ];
        if !ours.contains(&original[line.clone()].to_string()) {
            return Ok(text);
        }
        remove_line(&mut text, line);
        if let Form::Header(header) = found.form {
            let header = line_at(original, header.start);
            if original[header.clone()] == format!("[features]{ADDED}") {
                if found.own_keys == 1 {
                    // The table was hooklog's too: it goes, with the newline put before it.
                    remove_line(&mut text, header.clone());
                    remove_newline_before(&mut text, header.start);
                } else {
                    // The user has written into it since: it stays theirs, unmarked.
                    text.replace_range(header.end - ADDED.len()..header.end, "");
                }
            }
        }
    } else if above_is(WAS_FALSE) {
        if on {
            text.replace_range(value, "false");
        }
        remove_line(&mut text, above.unwrap());
    } else if above_is(ADDED_INLINE) {
        let Form::Inline(brace, _) = found.form else {
            return Ok(text);
        };
        let after = &original[brace + 1..];
        let Some(entry) = INLINE_ENTRIES.iter().find(|e| after.starts_with(**e)) else {
            return Ok(text);
        };
        text.replace_range(brace + 1..brace + 1 + entry.len(), "");
        remove_line(&mut text, above.unwrap());
    } else {
        return Ok(text);
    }
    check(text, name, false)
}

/// Codex's newer name for the feature, `[features] hooks`, when the file sets it: Codex then
/// reads it last, so it decides (and hooklog leaves the file alone).
pub fn hooks_setting(text: &str) -> Option<bool> {
    locate(text, "").ok().and_then(|found| found.hooks)
}

fn locate(text: &str, name: &str) -> Result<Located, FlagError> {
    let doc = Document::parse(text).map_err(|e| FlagError::Toml(name.to_string(), e))?;
    let shape = || FlagError::Shape(name.to_string());
    let Some((key, item)) = doc.get_key_value("features") else {
        return Ok(Located {
            form: Form::Absent,
            flag: None,
            hooks: None,
            own_keys: 0,
        });
    };
    let (form, table): (Form, &dyn TableLike) = match item {
        Item::Table(t) if t.is_dotted() => (Form::Dotted(key.span().ok_or_else(shape)?.start), t),
        Item::Table(t) if t.is_implicit() => (Form::Implicit, t),
        Item::Table(t) => (Form::Header(t.span().ok_or_else(shape)?), t),
        Item::Value(Value::InlineTable(t)) => {
            let brace = t.span().ok_or_else(shape)?.start;
            (Form::Inline(brace, t.is_empty()), t)
        }
        _ => return Err(shape()),
    };
    let flag = match table.get(KEY) {
        None => None,
        Some(item) => Some((
            item.as_bool().ok_or_else(shape)?,
            item.span().ok_or_else(shape)?,
        )),
    };
    let own_keys = table
        .iter()
        .filter(|(_, item)| item.is_value() || item.as_table().is_some_and(|t| t.is_dotted()))
        .count();
    Ok(Located {
        form,
        flag,
        hooks: table.get("hooks").and_then(Item::as_bool),
        own_keys,
    })
}

/// The result must read as TOML with the flag where it was meant to be: a slip here would
/// otherwise leave Codex unable to start.
fn check(text: String, name: &str, on: bool) -> Result<String, FlagError> {
    let unsafe_edit = || FlagError::Unsafe(name.to_string());
    let found = locate(&text, name).map_err(|_| unsafe_edit())?;
    if on && !found.flag.is_some_and(|(value, _)| value) {
        return Err(unsafe_edit());
    }
    Ok(text)
}

/// The file's own line ending, for the lines hooklog adds.
fn newline(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

/// The line holding offset `at`, without its line ending.
fn line_at(text: &str, at: usize) -> Range<usize> {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let end = if text[..end].ends_with('\r') {
        end - 1
    } else {
        end
    };
    start..end
}

/// The line before the one starting at `start`.
fn line_before(text: &str, start: usize) -> Option<Range<usize>> {
    (start > 0).then(|| line_at(text, start - 1))
}

/// Removes a line with its line ending; the last line, having none, takes the one before it.
fn remove_line(text: &mut String, line: Range<usize>) {
    let rest = &text[line.end..];
    if let Some(ending) = ["\r\n", "\n"].iter().find(|e| rest.starts_with(**e)) {
        text.replace_range(line.start..line.end + ending.len(), "");
    } else {
        text.replace_range(line.clone(), "");
        remove_newline_before(text, line.start);
    }
}

fn remove_newline_before(text: &mut String, at: usize) {
    let before = &text[..at];
    let len = ["\r\n", "\n"]
        .iter()
        .find(|e| before.ends_with(**e))
        .map_or(0, |e| e.len());
    text.replace_range(at - len..at, "");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(text: &str) -> Option<bool> {
        locate(text, "config.toml").unwrap().flag.map(|(on, _)| on)
    }

    /// Every shape the flag can be written in: installing turns it on, installing again changes
    /// nothing, and uninstalling gives back the original bytes.
    #[test]
    fn each_shape_comes_back_byte_for_byte() {
        let shapes = [
            ("no file", ""),
            (
                "no features",
                "model = \"o3\" # mine\n\n[tui]\nnotifications = true\n",
            ),
            ("no trailing newline", "model = \"o3\""),
            ("only a newline", "\n"),
            (
                "crlf",
                "model = \"o3\"\r\n[tui]\r\nnotifications = true\r\n",
            ),
            (
                "table without the key",
                "[features] # flags\nweb_search = true\n\n[tui]\nx = 1\n",
            ),
            ("table header last, no newline", "a = 1\n[features]"),
            ("empty table", "[features]\n"),
            (
                "false",
                "[features]\ncodex_hooks = false # off for now\nother = 1\n",
            ),
            ("false, crlf", "[features]\r\ncodex_hooks = false\r\n"),
            ("dotted false", "features.codex_hooks = false\n[tui]\n"),
            (
                "dotted other",
                "# top\nfeatures.web_search = true\nmodel = \"o3\"\n",
            ),
            ("inline", "features = { web_search = true } # inline\n"),
            ("inline empty", "features = {}\n"),
            (
                "inline false",
                "features = { codex_hooks = false, b = true }\n",
            ),
            ("sub-table only", "[features.extra]\nq = 1\n"),
        ];
        for (what, original) in shapes {
            let on = turn_on(original, "config.toml").unwrap();
            assert_ne!(on, original, "{what}: nothing changed");
            assert_eq!(flag(&on), Some(true), "{what}: not on:\n{on}");
            assert_eq!(turn_on(&on, "config.toml").unwrap(), on, "{what}: twice");
            assert_eq!(undo(&on, "config.toml").unwrap(), original, "{what}:\n{on}");
        }
    }

    #[test]
    fn what_install_writes() {
        assert_eq!(
            turn_on("", "c").unwrap(),
            "[features] # hooklog: added\ncodex_hooks = true # hooklog: added\n"
        );
        assert_eq!(
            turn_on("a = 1\n", "c").unwrap(),
            "a = 1\n\n[features] # hooklog: added\ncodex_hooks = true # hooklog: added\n"
        );
        assert_eq!(
            turn_on("[features]\nx = 1\n", "c").unwrap(),
            "[features]\ncodex_hooks = true # hooklog: added\nx = 1\n"
        );
        assert_eq!(
            turn_on("[features]\ncodex_hooks = false # mine\n", "c").unwrap(),
            format!("[features]\n{WAS_FALSE}\ncodex_hooks = true # mine\n")
        );
        assert_eq!(
            turn_on("features = { x = 1 }\n", "c").unwrap(),
            format!("{ADDED_INLINE}\nfeatures = {{ codex_hooks = true, x = 1 }}\n")
        );
        assert_eq!(
            turn_on("features.x = 1\n", "c").unwrap(),
            "features.codex_hooks = true # hooklog: added\nfeatures.x = 1\n"
        );
    }

    /// The user's own `true`, and Codex's newer key `hooks` either way, are the user's choice.
    #[test]
    fn a_setting_of_the_users_is_left_alone() {
        for text in [
            "[features]\ncodex_hooks = true\n",
            "features.codex_hooks = true # mine\n",
            "features = { codex_hooks = true }\n",
            "[features]\nhooks = false\n",
            "[features]\nhooks = true\n",
        ] {
            assert_eq!(turn_on(text, "c").unwrap(), text);
            assert_eq!(undo(text, "c").unwrap(), text);
        }
        assert_eq!(hooks_setting("[features]\nhooks = false\n"), Some(false));
        assert_eq!(hooks_setting("[features]\ncodex_hooks = false\n"), None);
    }

    /// Edits made after install stay; only hooklog's own change is taken back.
    #[test]
    fn uninstall_after_the_user_edited_undoes_only_hooklogs_change() {
        let original = "[tui]\nx = 1\n";
        let on = turn_on(original, "c").unwrap();
        // The user adds a key to the table hooklog made, and a setting elsewhere.
        let edited = on.replace("[tui]\n", "[tui]\ny = 2\n").replace(
            "codex_hooks = true # hooklog: added\n",
            "codex_hooks = true # hooklog: added\nweb_search = true\n",
        );
        assert_eq!(
            undo(&edited, "c").unwrap(),
            "[tui]\ny = 2\nx = 1\n\n[features]\nweb_search = true\n"
        );
        // The user turned the flag back off themselves: the value is theirs, the marker goes.
        let was_false = turn_on("[features]\ncodex_hooks = false\n", "c").unwrap();
        let off_again = was_false.replace("= true", "= false");
        assert_eq!(
            undo(&off_again, "c").unwrap(),
            "[features]\ncodex_hooks = false\n"
        );
        // A line hooklog added that the user has since changed is theirs now.
        let changed = turn_on("[features]\n", "c")
            .unwrap()
            .replace("= true", "= false");
        assert_eq!(undo(&changed, "c").unwrap(), changed);
        // Installing over it turns it on again without a second marker.
        assert_eq!(
            turn_on(&changed, "c").unwrap(),
            turn_on("[features]\n", "c").unwrap()
        );
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(matches!(
            turn_on("[features", "c"),
            Err(FlagError::Toml(..))
        ));
        for text in [
            "features = 1\n",
            "[[features]]\n",
            "[features]\ncodex_hooks = \"yes\"\n",
        ] {
            assert!(
                matches!(turn_on(text, "c"), Err(FlagError::Shape(_))),
                "{text}"
            );
        }
    }
}
