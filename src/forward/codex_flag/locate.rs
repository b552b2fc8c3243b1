//! Where the file writes its `features` table and the flag: toml_edit parses the text only
//! to give the byte spans the edits work on.

use super::{FlagError, KEY};
use std::ops::Range;
use toml_edit::{Document, Item, TableLike, Value};

/// How the file writes its `features` table.
pub(super) enum Form {
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

pub(super) struct Located {
    pub(super) form: Form,
    /// `codex_hooks`: its value and the span of the value's text.
    pub(super) flag: Option<(bool, Range<usize>)>,
    /// Codex's newer name for the same feature, when the file sets it.
    pub(super) hooks: Option<bool>,
    /// Keys written in the table's own section (sub-tables with their own header not counted).
    pub(super) own_keys: usize,
}

/// Whether the file turns Codex's hooks off: `hooks = false`, or `codex_hooks = false` with no
/// `hooks` (Codex reads `hooks`, the newer name, last, so it decides).
pub fn hooks_off(text: &str) -> bool {
    locate(text, "")
        .ok()
        .and_then(|found| found.hooks.or(found.flag.map(|(on, _)| on)))
        == Some(false)
}

pub(super) fn locate(text: &str, name: &str) -> Result<Located, FlagError> {
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
