//! The payload fields an event shares with the other events of its session, stored once.
//!
//! Every hook body repeats what its session already said: its session id, its transcript's
//! path, its working directory, its permission mode (and in some bodies its model). About 210
//! bytes of a 420-byte body. The writer stores the rest of the body in `events.payload`, and
//! the shared fields once, in a `payload_shared` row of the session that the event names
//! (`events.shared`): a session has one row for each combination it used (a new one when its
//! user changes the permission mode, say). Every reader gets the payload whole again ([`join`],
//! through `event::row`); in `sqlite3`, the `events_whole` view does the same.
//!
//! The event name (`eventName`) changes from one event to the next, so its value is not shared
//! (that would make a row for each of a session's event types); but it is the event's type,
//! which the row says already. When it is, the shared fields hold `"eventName":true` in its
//! place, and [`join`] writes the row's type back there (schema 29).
//!
//! A stored payload is canonical JSON (an object's keys sorted, no whitespace: serde_json's own
//! output), so the split is exact: the two halves are disjoint parts of one sorted object, and
//! joining them gives back the same bytes. A payload that is not canonical, or has a top-level
//! key written with an escape, is stored whole.

use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// The top-level payload fields that move to `payload_shared` when their value is a string:
/// each says something about the session, which its events repeat.
const FIELDS: &[&str] = &[
    "cli",
    "cwd",
    "model",
    "permissionMode",
    "sessionId",
    "transcriptPath",
];

/// A JSON object's members, borrowed from its text: keys in order, values as written. Reading
/// one fails for a key written with an escape, which is what makes [`write`] exact: a key
/// without one is written back as it was, between quotes.
type Members<'a> = BTreeMap<&'a str, &'a RawValue>;

/// A payload split in two: what stays in the event's row, and the fields it shares (a JSON
/// object, canonical as well).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub rest: String,
    pub shared: String,
}

/// The payload field that names the event, and what the shared fields hold in its place when
/// it names it by its type.
const NAME: &str = "eventName";
const NAMED: &str = "true";

/// Splits a canonical payload of an event of type `event_type`; `None` when nothing would move
/// (no shared field holds a string) or the payload is not a canonical JSON object with keys
/// written without escapes.
pub fn split(payload: &str, event_type: &str) -> Option<Split> {
    let mut rest: Members = serde_json::from_str(payload).ok()?;
    // Canonical: the object, written again, is the payload. Then so is any split of it joined
    // again, since a sorted map is written in key order whichever half held each member.
    if write(&rest, payload.len()) != payload {
        return None;
    }
    let mut shared = Members::new();
    for field in FIELDS {
        if let Some(value) = rest.get(field).filter(|v| v.get().starts_with('"')) {
            shared.insert(field, value);
            rest.remove(field);
        }
    }
    if shared.is_empty() {
        return None;
    }
    if rest
        .get(NAME)
        .is_some_and(|name| name.get() == quoted(event_type))
    {
        rest.remove(NAME);
        shared.insert(NAME, serde_json::from_str(NAMED).expect("valid JSON"));
    }
    Some(Split {
        rest: write(&rest, payload.len()),
        shared: write(&shared, payload.len()),
    })
}

/// The payload of an event of type `event_type` whole again: `rest` with the `shared` fields
/// put back in key order (and its type as its `eventName` where they say so). `None` if either
/// is not a JSON object with keys written without escapes (a row the writer did not write).
pub fn join(rest: &str, shared: &str, event_type: &str) -> Option<String> {
    let capacity = rest.len() + shared.len() + event_type.len();
    let shared: Members = serde_json::from_str(shared).ok()?;
    // The type's JSON text, made only for a row whose shared fields stand for its name.
    let name = shared
        .get(NAME)
        .is_some_and(|v| v.get() == NAMED)
        .then(|| named_by(event_type));
    let mut whole: Members = serde_json::from_str(rest).ok()?;
    whole.extend(shared);
    if let Some(name) = &name {
        whole.insert(NAME, name);
    }
    Some(write(&whole, capacity))
}

/// `event_type` as an `eventName` value.
fn named_by(event_type: &str) -> Box<RawValue> {
    RawValue::from_string(quoted(event_type)).expect("a JSON string")
}

/// `event_type`'s JSON text, as serde_json writes it.
fn quoted(event_type: &str) -> String {
    serde_json::to_string(event_type).expect("a string serializes")
}

/// The object's text, compact, as serde_json writes it.
fn write(members: &Members, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    out.push('{');
    for (n, (key, value)) in members.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(key);
        out.push_str("\":");
        out.push_str(value.get());
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"{"cwd":"/home/dev/src/shop","eventName":"PreToolUse","permissionMode":"default","sessionId":"s-1","tool":"Bash","toolInput":{"command":"cargo test","cwd":"/elsewhere"},"toolUseId":"toolu_1","transcriptPath":"/home/dev/.claude/projects/x/s-1.jsonl"}"#;

    #[test]
    fn a_hook_body_splits_into_its_own_fields_and_its_session_s_and_joins_back_exactly() {
        let split = split(BODY, "PreToolUse").unwrap();
        assert_eq!(
            split.rest,
            r#"{"tool":"Bash","toolInput":{"command":"cargo test","cwd":"/elsewhere"},"toolUseId":"toolu_1"}"#
        );
        assert_eq!(
            split.shared,
            r#"{"cwd":"/home/dev/src/shop","eventName":true,"permissionMode":"default","sessionId":"s-1","transcriptPath":"/home/dev/.claude/projects/x/s-1.jsonl"}"#
        );
        assert_eq!(
            join(&split.rest, &split.shared, "PreToolUse").unwrap(),
            BODY
        );
    }

    #[test]
    fn the_event_name_is_left_out_only_where_it_is_the_type() {
        // Filed under another type than it names: the name stays.
        let split_other = split(BODY, "PostToolUse").unwrap();
        assert!(split_other.rest.contains(r#""eventName":"PreToolUse""#));
        assert!(!split_other.shared.contains("eventName"));
        assert_eq!(
            join(&split_other.rest, &split_other.shared, "PostToolUse").unwrap(),
            BODY
        );
        // A name that is not a string, or a type that needs escapes, written back exactly.
        for (body, event_type) in [
            (r#"{"eventName":7,"sessionId":"s"}"#, "7"),
            (
                r#"{"eventName":"a\"b\u001f","sessionId":"s"}"#,
                "a\"b\u{1f}",
            ),
        ] {
            let parts = split(body, event_type).unwrap();
            assert_eq!(parts.shared.contains("eventName"), event_type != "7");
            assert_eq!(join(&parts.rest, &parts.shared, event_type).unwrap(), body);
        }
        // Rows stored before schema 29 share no name and join as they did.
        assert_eq!(
            join(r#"{"eventName":"Stop"}"#, r#"{"cwd":"/x"}"#, "Stop").unwrap(),
            r#"{"cwd":"/x","eventName":"Stop"}"#
        );
        // Without a shared field the payload stays whole, name and all.
        assert_eq!(split(r#"{"eventName":"Stop"}"#, "Stop"), None);
    }

    #[test]
    fn values_keep_their_exact_text_numbers_escapes_and_nulls_included() {
        let body = r#"{"a":[1,2.50,{"b":null}],"big":123456789012345678901234567890,"c":"\u00e9\n","cwd":"/tmp/\"q\"","n":null,"sessionId":"s"}"#;
        let split = split(body, "PreToolUse").unwrap();
        assert_eq!(split.shared, r#"{"cwd":"/tmp/\"q\"","sessionId":"s"}"#);
        assert_eq!(
            join(&split.rest, &split.shared, "PreToolUse").unwrap(),
            body
        );
    }

    #[test]
    fn only_strings_move_and_a_body_without_them_stays_whole() {
        // A shared field holding anything but a string stays where it is.
        let body = r#"{"cwd":null,"model":{"id":"m"},"sessionId":"s"}"#;
        let parts = split(body, "PreToolUse").unwrap();
        assert_eq!(parts.rest, r#"{"cwd":null,"model":{"id":"m"}}"#);
        assert_eq!(
            join(&parts.rest, &parts.shared, "PreToolUse").unwrap(),
            body
        );
        for whole in [r#"{"cwd":7,"tool":"Bash"}"#, "{}", "[1,2]", r#""text""#, ""] {
            assert_eq!(split(whole, "PreToolUse"), None, "{whole}");
        }
    }

    #[test]
    fn a_payload_that_is_not_canonical_is_stored_whole() {
        for body in [
            // keys out of order, whitespace, a key with an escape serde_json writes otherwise
            r#"{"sessionId":"s","cwd":"/x"}"#,
            r#"{"cwd": "/x","sessionId":"s"}"#,
            r#"{"\u0063wd":"/x","sessionId":"s"}"#,
            // a repeated key (the parser keeps the last)
            r#"{"cwd":"/x","cwd":"/y","sessionId":"s"}"#,
        ] {
            assert_eq!(split(body, "PreToolUse"), None, "{body}");
        }
    }

    #[test]
    fn keys_are_written_back_as_serde_json_writes_them_or_the_payload_stays_whole() {
        // Non-ASCII and U+007F are written as they are: such a body splits and joins back.
        let body: serde_json::Value =
            serde_json::json!({"caf\u{e9}\u{7f}": 1, "sessionId": "s", "\u{2028}": "x"});
        let text = body.to_string();
        let parts = split(&text, "PreToolUse").unwrap();
        assert_eq!(
            join(&parts.rest, &parts.shared, "PreToolUse").unwrap(),
            text
        );
        // A key serde_json must escape cannot be read without a copy: stored whole.
        let body = serde_json::json!({"a\nb": 1, "sessionId": "s"});
        assert_eq!(split(&body.to_string(), "PreToolUse"), None);
    }

    #[test]
    fn a_join_of_rows_that_are_not_objects_is_refused_not_guessed() {
        assert_eq!(join("[1]", r#"{"cwd":"/x"}"#, "PreToolUse"), None);
        assert_eq!(join("{}", "not json", "PreToolUse"), None);
        assert_eq!(
            join("{}", r#"{"cwd":"/x"}"#, "PreToolUse").unwrap(),
            r#"{"cwd":"/x"}"#
        );
        // A key written with an escape is not read back as something else.
        assert_eq!(
            join(r#"{"\u0063":1}"#, r#"{"cwd":"/x"}"#, "PreToolUse"),
            None
        );
    }
}
