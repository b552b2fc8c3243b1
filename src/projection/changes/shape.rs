//! How a change row's deltas are stored once for every row of the same form. Once its event's
//! values are markers and its keys codes ([`super::stored`]), a row's deltas are mostly the
//! same text as many other rows': a `PostToolUse` row is a tool use completed and its hero
//! active, with only the tool use's id and its duration its own. [`split`] takes those values
//! out, each replaced by a placeholder `{"_":N}`: what is left is the row's shape, stored once
//! in `change_shapes` (migration 0027), and the values, in order, are the row's JSON array.
//! [`fill`] puts them back: the text [`split`] was given.
//!
//! A value is a string or a number a field holds, but for the fields whose values are a few
//! names fixed by hooklog (an entity, an op, a state, a status, a kind: [`KEPT`]), which stay in
//! the shape, as do markers, `null`s and booleans. So the shapes are the forms hooklog's
//! projections write, a few dozen (the one name an event can bring is a permission decision's
//! `kind`, copied from the decision). A value the row holds twice (a
//! prompt and the title made of it) is stored once. A row with more than [`MAX_VALUES`]
//! values of its own (a `Stop` that interrupted many tool uses), or with a value outside a
//! field, is not split: it is stored whole.
//!
//! Inside a JSON string a `"` is always escaped, so no string holds a placeholder's text, and
//! the `changes_sent` view fills the shapes in SQL for the sqlite3 CLI.

use super::stored::{code_of, marker_len, number_end, string_end};
use serde_json::value::RawValue;
use std::io::Write;
use std::sync::LazyLock;

/// The most values a shaped row holds (the `changes_sent` view fills this many).
pub const MAX_VALUES: usize = 8;

/// The codes of the keys whose values stay in the shape (`entity`, `op`, `state`, `status`,
/// `kind`): names hooklog fixes, not values an agent sent.
static KEPT: LazyLock<Vec<&'static [u8]>> = LazyLock::new(|| {
    ["entity", "op", "state", "status", "kind"]
        .iter()
        .map(|k| code_of(k.as_bytes()).expect("each kept key has a code"))
        .collect()
});

/// The shape of `stored` (deltas as [`super::stored::compact`] wrote them) and its values as a
/// JSON array; `None` when the row is stored whole (no delta, too many values, or a value
/// outside a field).
pub fn split(stored: &str) -> Option<(String, String)> {
    let bytes = stored.as_bytes();
    if bytes == b"[]" {
        return None;
    }
    let mut shape = Vec::with_capacity(bytes.len());
    let mut values: Vec<&[u8]> = Vec::new();
    let mut key: &[u8] = b"";
    let mut at_value = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if at_value && let Some(len) = marker_len(&bytes[i..]) {
            shape.extend_from_slice(&bytes[i..i + len]);
            i += len;
            at_value = false;
            continue;
        }
        let end = match b {
            b'"' => string_end(bytes, i),
            b'-' | b'0'..=b'9' => number_end(bytes, i),
            _ => {
                shape.push(b);
                if !b.is_ascii_whitespace() {
                    at_value = b == b':';
                }
                i += 1;
                continue;
            }
        };
        let text = &bytes[i..end];
        if !at_value {
            let is_key =
                b == b'"' && bytes[end..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b':');
            if !is_key {
                // A string or number in an array.
                return None;
            }
            key = &text[1..text.len() - 1];
            shape.extend_from_slice(text);
        } else if b == b'"' && KEPT.contains(&key) {
            shape.extend_from_slice(text);
        } else {
            let index = match values.iter().position(|v| *v == text) {
                Some(index) => index,
                None if values.len() < MAX_VALUES => {
                    values.push(text);
                    values.len() - 1
                }
                None => return None,
            };
            write!(shape, r#"{{"_":{index}}}"#).expect("a Vec takes every write");
        }
        at_value = false;
        i = end;
    }
    let mut array = vec![b'['];
    for (n, value) in values.iter().enumerate() {
        if n > 0 {
            array.push(b',');
        }
        array.extend_from_slice(value);
    }
    array.push(b']');
    let values = String::from_utf8(array).expect("copied UTF-8");
    let shape = String::from_utf8(shape).expect("copied UTF-8 and ASCII placeholders");
    Some((shape, values))
}

/// The deltas `shape` with its placeholders replaced by `values` (a JSON array): the text
/// [`split`] was given. `None` when `values` is not an array of them all.
pub fn fill(shape: &str, values: &str) -> Option<String> {
    let values: Vec<&RawValue> = serde_json::from_str(values).ok()?;
    let mut out = String::with_capacity(shape.len() + values.len() * 48);
    let mut rest = shape;
    while let Some(at) = rest.find(r#"{"_":"#) {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        let end = after.find('}')?;
        let index: usize = after[..end].parse().ok()?;
        out.push_str(values.get(index)?.get());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_split_into_its_shape_and_values_and_filled_back_exactly() {
        let stored = r#"[{"A":"toolUse","B":"updated","C":"tool-01a2-x","D":{"h":0},"E":{"m":0},"F":{"8":"completed","0":{"e":""},"a":{"t":0},"b":27,"9":null,"R":"bash"}},{"A":"hero","B":"updated","C":{"h":0},"F":{"M":"active","O":-1.5e3,"x":true}}]"#;
        let (shape, values) = split(stored).unwrap();
        assert_eq!(
            shape,
            r#"[{"A":"toolUse","B":"updated","C":{"_":0},"D":{"h":0},"E":{"m":0},"F":{"8":"completed","0":{"e":""},"a":{"t":0},"b":{"_":1},"9":null,"R":"bash"}},{"A":"hero","B":"updated","C":{"h":0},"F":{"M":"active","O":{"_":2},"x":true}}]"#
        );
        assert_eq!(values, r#"["tool-01a2-x",27,-1.5e3]"#);
        assert_eq!(fill(&shape, &values).unwrap(), stored);
        // Another row of the same form has the same shape.
        let other = stored
            .replace("tool-01a2-x", "tool-01a2-y")
            .replace("27", "31000");
        let (same, values) = split(&other).unwrap();
        assert_eq!(same, shape);
        assert_eq!(values, r#"["tool-01a2-y",31000,-1.5e3]"#);
        assert_eq!(fill(&same, &values).unwrap(), other);
    }

    #[test]
    fn a_value_held_twice_is_stored_once_and_strings_keep_their_escapes() {
        let stored = r#"[{"A":"mission","F":{"S":"fix \"it\" {\"_\":0} ✓","T":"fix \"it\" {\"_\":0} ✓","U":"\u001f"}}]"#;
        let (shape, values) = split(stored).unwrap();
        assert_eq!(
            shape,
            r#"[{"A":"mission","F":{"S":{"_":0},"T":{"_":0},"U":{"_":1}}}]"#
        );
        assert_eq!(values, r#"["fix \"it\" {\"_\":0} ✓","\u001f"]"#);
        assert_eq!(fill(&shape, &values).unwrap(), stored);
    }

    #[test]
    fn rows_that_are_not_split() {
        // No delta.
        assert_eq!(split("[]"), None);
        // More values than the view fills.
        let many: Vec<String> = (0..=MAX_VALUES)
            .map(|n| format!(r#"{{"A":"toolUse","C":"tool-{n}"}}"#))
            .collect();
        assert_eq!(split(&format!("[{}]", many.join(","))), None);
        let (_, values) = split(&format!("[{}]", many[..MAX_VALUES].join(","))).unwrap();
        assert_eq!(values.matches("tool-").count(), MAX_VALUES);
        // A value in an array.
        assert_eq!(split(r#"[{"A":"hero","F":{"x":["a"]}}]"#), None);
        assert_eq!(split(r#"[{"A":"hero","F":{"x":[1]}}]"#), None);
        // A row without values of its own is still a shape.
        let bare = r#"[{"A":"hero","B":"updated","C":{"h":0},"F":{"M":"idle","N":null}}]"#;
        assert_eq!(split(bare), Some((bare.to_string(), "[]".to_string())));
    }

    #[test]
    fn a_shape_that_does_not_fit_its_values_is_refused() {
        let shape = r#"[{"C":{"_":1}}]"#;
        assert_eq!(fill(shape, r#"["a"]"#), None);
        assert_eq!(fill(shape, "not json"), None);
        assert_eq!(
            fill(shape, r#"["a","b"]"#).as_deref(),
            Some(r#"[{"C":"b"}]"#)
        );
    }

    #[test]
    fn the_sqlite3_view_fills_every_value_a_shape_may_hold() {
        // 0028 makes the view again, as 0027 did, with the mission named another way.
        for view in [
            include_str!("../../../migrations/0027_change_shapes.sql"),
            include_str!("../../../migrations/0028_change_missions.sql"),
        ] {
            for n in 0..MAX_VALUES {
                let fill = format!(r#"'{{"_":{n}}}', IFNULL(c.changes -> '$[{n}]', 'null')"#);
                assert!(view.contains(&fill), "{fill}");
            }
            assert!(!view.contains(&format!(r#"{{"_":{MAX_VALUES}}}"#)));
        }
    }
}
