//! The edits: [`turn_on`] writes the flag with its marker, [`undo`] takes back exactly what
//! the marker says hooklog did, and each result is checked before it is handed back.

use super::lines::{line_at, line_before, newline, remove_line, remove_newline_before};
use super::locate::{Form, locate};
use super::{ADDED, ADDED_INLINE, FlagError, INLINE_ENTRIES, KEY, WAS_FALSE};

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
