//! How a change row's deltas are stored: without what their event already says, and with
//! short keys. A value in a delta that equals its event's id (alone or after a prefix such as
//! `tool-`), time, session id or sequence, or its row's hero or mission id, is written as a
//! short marker object in its place; each key is written as its one-character code
//! ([`KEYS`]); and [`expand`] puts values and keys back when the row is read: the text a reader
//! gets is exactly the text the recorder wrote. A created tool use or mission repeats most of
//! these values (its own id, its session, its hero, the event that opened it and when) and
//! names every field of its row, so a stored row is about half the size.
//!
//! The markers, each only where a value stands (after a `:`):
//!
//! | marker | stands for |
//! |---|---|
//! | `{"e":""}`, `{"e":"tool-"}`, `{"e":"mission-"}` | `"<event id>"`, `"tool-<event id>"`, `"mission-<event id>"` |
//! | `{"t":0}` | `"<event time>"` |
//! | `{"c":0}` | `"<session id>"` |
//! | `{"h":0}` | `"<hero id>"` |
//! | `{"m":0}` | `"<mission id>"` |
//! | `{"s":0}` | the event's sequence, a number |
//!
//! No delta value is an object (a delta's `set` holds a row's scalar fields), and no code is a
//! marker's letter, so a marker cannot be mistaken for a delta or a row; and a `"` inside a
//! JSON string is always escaped, so no string holds a marker's or a coded key's text:
//! replacing each marker's text with its value and each `"<code>":` with its key gives the
//! deltas back, which the `changes_sent` view does in SQL for the sqlite3 CLI (migrations 0019
//! and 0022). A row stored before these forms (schema 18 and older, 21 and older for keys) has
//! no marker or code and reads back unchanged.
//!
//! Both directions scan the JSON text serde wrote, byte by byte, without parsing it into
//! values: parsing and serializing again would cost the writer more, and `serde_json`'s maps
//! would reorder the fields.

use crate::event::StoredEvent;
use foldhash::HashMap;
use std::borrow::Cow;
use std::sync::LazyLock;

/// What a change row's event and row say, which its stored deltas name by marker.
pub struct Said<'a> {
    pub event_id: &'a str,
    pub event_time: &'a str,
    pub session_id: Option<&'a str>,
    pub sequence: i64,
    pub hero_id: &'a str,
    pub mission_id: Option<&'a str>,
}

impl<'a> Said<'a> {
    pub fn of(event: &'a StoredEvent, hero_id: &'a str, mission_id: Option<&'a str>) -> Said<'a> {
        Said {
            event_id: &event.event_id,
            event_time: &event.event_time,
            session_id: event.session_id.as_deref(),
            sequence: event.sequence,
            hero_id,
            mission_id,
        }
    }
}

/// What an `e` marker's value may hold before the event id: the ids made from an event's.
const PREFIXES: [&[u8]; 3] = [b"", b"tool-", b"mission-"];

/// `changes` (a JSON array of deltas) with the values `said` gives written as markers and its
/// keys as their [`KEYS`] codes.
pub fn compact(changes: &str, said: &Said<'_>) -> String {
    let text = Text::of(said);
    let sequence = said.sequence.to_string();
    rewrite(changes, code_of, |at| match at[0] {
        b'"' => {
            let end = string_end(at, 0);
            text.marker(&at[1..end - 1]).map(|marker| (end, marker))
        }
        b'-' | b'0'..=b'9' => {
            let end = number_end(at, 0);
            (&at[..end] == sequence.as_bytes()).then(|| (end, br#"{"s":0}"#.to_vec()))
        }
        // A marker already there (a row stored in an older form, compacted again) is kept
        // whole: its `"tool-"` is not a value to mark.
        b'{' => marker_at(at).map(|(len, _)| (len, at[..len].to_vec())),
        _ => None,
    })
}

/// Stored deltas with their markers replaced by the values `said` gives and their key codes by
/// the keys: the text `compact` was given.
pub fn expand(stored: &str, said: &Said<'_>) -> String {
    let text = Text::of(said);
    rewrite(stored, key_of, |at| match at[0] {
        b'{' => text.expand(at, said.sequence),
        _ => None,
    })
}

/// The keys a change row's deltas are written with (a delta's own and the fields of the rows
/// it sets), each stored as a one-character code: the key at index `i` as `CODES[i]`. Only
/// ever appended to: a stored row's codes keep their meaning. A key not here is stored as it
/// is. Migration 0022's `changes_sent` view spells the same table out in SQL, and a test
/// checks that each key a real session's rows hold is here.
pub const KEYS: [&str; 46] = [
    // A delta's own.
    "entity",
    "op",
    "id",
    "heroId",
    "missionId",
    "set",
    // A hero's fields.
    "sessionId",
    "cli",
    "cwd",
    "tty",
    "model",
    "faction",
    "state",
    "activeMissionId",
    "missionCount",
    "spawnedEventId",
    "spawnedAt",
    // A mission's.
    "kind",
    "prompt",
    "title",
    "summary",
    "parentMissionId",
    "subagentId",
    "subagentType",
    "degradedReason",
    "openedEventId",
    "closedEventId",
    "startedAt",
    "completedAt",
    "openedSequence",
    // A tool use's.
    "toolUseId",
    "requestId",
    "tool",
    "preview",
    "status",
    "error",
    "finishedAt",
    "durationMs",
    // A permission request's.
    "sequence",
    "openedAt",
    "waitsUntil",
    "closedAt",
    "closedBy",
    "decidedBy",
    "message",
    "origin",
];

/// The codes, one character each: no key is that short, and none is a marker's letter
/// (`e`, `t`, `c`, `h`, `m`, `s`), so a marker never reads as a coded delta.
pub const CODES: &[u8; 56] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abdfgijklnopqruvwxyz";

/// Each key's code, by the key (every key of every change row is looked up here).
static CODE_OF: LazyLock<HashMap<&'static [u8], u8>> = LazyLock::new(|| {
    KEYS.iter()
        .zip(CODES)
        .map(|(key, code)| (key.as_bytes(), *code))
        .collect()
});

/// The code of a key (its text between the quotes), if it has one.
pub(super) fn code_of(key: &[u8]) -> Option<&'static [u8]> {
    CODE_OF.get(key).map(std::slice::from_ref)
}

/// The key a code stands for.
fn key_of(code: &[u8]) -> Option<&'static [u8]> {
    let [c] = code else { return None };
    let index = CODES.iter().position(|x| x == c)?;
    KEYS.get(index).map(|k| k.as_bytes())
}

/// `json` with each key (a string followed by `:`) that `key` answers for replaced by its
/// answer, and the value at each value position (after a `:`) that `value` answers for
/// replaced: `value` gets the text from there on, and gives how many bytes it replaces and
/// with what. Everything else, strings whole, is copied.
fn rewrite(
    json: &str,
    key: fn(&[u8]) -> Option<&'static [u8]>,
    mut value: impl FnMut(&[u8]) -> Option<(usize, Vec<u8>)>,
) -> String {
    let bytes = json.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 2);
    let mut at_value = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if at_value && let Some((len, replacement)) = value(&bytes[i..]) {
            out.extend_from_slice(&replacement);
            i += len;
            at_value = false;
            continue;
        }
        if b == b'"' {
            let end = string_end(bytes, i);
            let is_key =
                !at_value && bytes[end..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b':');
            match is_key
                .then(|| key(&bytes[i + 1..(end - 1).max(i + 1)]))
                .flatten()
            {
                Some(replacement) => {
                    out.push(b'"');
                    out.extend_from_slice(replacement);
                    out.push(b'"');
                }
                None => out.extend_from_slice(&bytes[i..end]),
            }
            i = end;
            at_value = false;
            continue;
        }
        out.push(b);
        if !b.is_ascii_whitespace() {
            at_value = b == b':';
        }
        i += 1;
    }
    String::from_utf8(out).expect("values, markers, keys and copied UTF-8 are UTF-8")
}

/// The said values as they stand between quotes in JSON text (as said, unless a character
/// of one is escaped there).
struct Text<'a> {
    event_id: Cow<'a, str>,
    event_time: Cow<'a, str>,
    session_id: Option<Cow<'a, str>>,
    hero_id: Cow<'a, str>,
    mission_id: Option<Cow<'a, str>>,
}

impl<'a> Text<'a> {
    fn of(said: &Said<'a>) -> Text<'a> {
        let escaped = |s: &'a str| -> Cow<'a, str> {
            if !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
                return Cow::Borrowed(s);
            }
            let quoted = serde_json::to_string(s).expect("a string serializes");
            Cow::Owned(quoted[1..quoted.len() - 1].to_string())
        };
        Text {
            event_id: escaped(said.event_id),
            event_time: escaped(said.event_time),
            session_id: said.session_id.map(escaped),
            hero_id: escaped(said.hero_id),
            mission_id: said.mission_id.map(escaped),
        }
    }

    /// The marker for a string value's text (between its quotes), if it is a said value.
    fn marker(&self, content: &[u8]) -> Option<Vec<u8>> {
        let is =
            |said: Option<&str>| said.is_some_and(|s| !s.is_empty() && s.as_bytes() == content);
        if is(Some(&self.hero_id)) {
            return Some(br#"{"h":0}"#.to_vec());
        }
        if is(self.mission_id.as_deref()) {
            return Some(br#"{"m":0}"#.to_vec());
        }
        if is(self.session_id.as_deref()) {
            return Some(br#"{"c":0}"#.to_vec());
        }
        if is(Some(&self.event_time)) {
            return Some(br#"{"t":0}"#.to_vec());
        }
        let id = self.event_id.as_bytes();
        if !id.is_empty() && content.ends_with(id) {
            let prefix = &content[..content.len() - id.len()];
            if PREFIXES.contains(&prefix) {
                let mut marker = br#"{"e":""#.to_vec();
                marker.extend_from_slice(prefix);
                marker.extend_from_slice(br#""}"#);
                return Some(marker);
            }
        }
        None
    }

    /// The length of the marker `at` starts with and the value it stands for, if it is one
    /// whose value is known.
    fn expand(&self, at: &[u8], sequence: i64) -> Option<(usize, Vec<u8>)> {
        let quoted = |s: &str| {
            let mut v = Vec::with_capacity(s.len() + 2);
            v.push(b'"');
            v.extend_from_slice(s.as_bytes());
            v.push(b'"');
            v
        };
        let (len, marker) = marker_at(at)?;
        let value = match marker {
            Marker::Hero => Some(quoted(&self.hero_id)),
            Marker::Mission => self.mission_id.as_deref().map(quoted),
            Marker::Session => self.session_id.as_deref().map(quoted),
            Marker::Time => Some(quoted(&self.event_time)),
            Marker::Sequence => Some(sequence.to_string().into_bytes()),
            Marker::Event(prefix) => {
                let mut value = vec![b'"'];
                value.extend_from_slice(prefix);
                value.extend_from_slice(self.event_id.as_bytes());
                value.push(b'"');
                Some(value)
            }
        };
        value.map(|v| (len, v))
    }
}

/// What a marker stands for.
enum Marker {
    Hero,
    Mission,
    Session,
    Time,
    Sequence,
    /// The event id after one of [`PREFIXES`].
    Event(&'static [u8]),
}

/// The length of the marker `at` starts with, if it starts with one.
pub(super) fn marker_len(at: &[u8]) -> Option<usize> {
    marker_at(at).map(|(len, _)| len)
}

/// The marker `at` starts with, and its length.
fn marker_at(at: &[u8]) -> Option<(usize, Marker)> {
    let fixed: [(&[u8], Marker); 5] = [
        (br#"{"h":0}"#, Marker::Hero),
        (br#"{"m":0}"#, Marker::Mission),
        (br#"{"c":0}"#, Marker::Session),
        (br#"{"t":0}"#, Marker::Time),
        (br#"{"s":0}"#, Marker::Sequence),
    ];
    if let Some((text, marker)) = fixed.into_iter().find(|(text, _)| at.starts_with(text)) {
        return Some((text.len(), marker));
    }
    let rest = at.strip_prefix(br#"{"e":""#)?;
    let prefix = PREFIXES
        .into_iter()
        .find(|p| rest.starts_with(p) && rest[p.len()..].starts_with(br#""}"#))?;
    Some((6 + prefix.len() + 2, Marker::Event(prefix)))
}

/// The index just past the string that starts at `start` (a `"`), or the text's end.
pub(super) fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index just past the number that starts at `start`.
pub(super) fn number_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said() -> Said<'static> {
        Said {
            event_id: "01a2-e",
            event_time: "2026-12-06T04:27:46.377Z",
            session_id: Some("s \"1\""),
            sequence: 160,
            hero_id: "hero-9",
            mission_id: Some("mission-01a2-m"),
        }
    }

    #[test]
    fn what_the_event_says_is_stored_as_markers_and_read_back_exactly() {
        let full = r#"[{"entity":"toolUse","op":"created","id":"tool-01a2-e","heroId":"hero-9","missionId":"mission-01a2-m","set":{"id":"tool-01a2-e","sessionId":"s \"1\"","heroId":"hero-9","preview":"grep \"tool-01a2-e\" 160","status":"running","openedEventId":"01a2-e","startedAt":"2026-12-06T04:27:46.377Z","durationMs":160,"count":1600,"other":"x-01a2-e","long":"a-very-long-prefix-01a2-e","openedSequence":160}}]"#;
        let stored = compact(full, &said());
        assert_eq!(
            stored,
            r#"[{"A":"toolUse","B":"created","C":{"e":"tool-"},"D":{"h":0},"E":{"m":0},"F":{"C":{"e":"tool-"},"G":{"c":0},"D":{"h":0},"7":"grep \"tool-01a2-e\" 160","8":"running","Z":{"e":""},"1":{"t":0},"b":{"s":0},"count":1600,"other":"x-01a2-e","long":"a-very-long-prefix-01a2-e","3":{"s":0}}}]"#
        );
        assert!(stored.len() < full.len());
        assert_eq!(expand(&stored, &said()), full);
    }

    #[test]
    fn a_row_stored_in_full_and_an_empty_row_read_back_unchanged() {
        let full = r#"[{"entity":"hero","op":"updated","id":"hero-1","set":{"state":"idle","activeMissionId":null}}]"#;
        assert_eq!(expand(full, &said()), full);
        assert_eq!(compact("[]", &said()), "[]");
        assert_eq!(expand("[]", &said()), "[]");
        // Compacting twice changes nothing more.
        let once = compact(r#"[{"id":"hero-9","set":{}}]"#, &said());
        assert_eq!(once, r#"[{"C":{"h":0},"F":{}}]"#);
        assert_eq!(compact(&once, &said()), once);
        // Even when a said value is a marker's own text: a session called `tool-`, an event
        // id `mission-`.
        let odd = Said {
            event_id: "mission-",
            session_id: Some("tool-"),
            ..said()
        };
        let full = r#"[{"id":"tool-mission-","set":{"sessionId":"tool-","openedEventId":"mission-","missionId":"mission-mission-"}}]"#;
        let once = compact(full, &odd);
        assert_eq!(
            once,
            r#"[{"C":{"e":"tool-"},"F":{"G":{"c":0},"Z":{"e":""},"E":{"e":"mission-"}}}]"#
        );
        assert_eq!(compact(&once, &odd), once);
        assert_eq!(expand(&once, &odd), full);
    }

    #[test]
    fn only_keys_are_coded_and_every_code_reads_back() {
        // A value with a key's text, a value with a code's, and an unknown key stay as they are.
        let full = r#"[{"entity":"hero","set":{"state":"id","preview":"\"id\": 7","model":"A","x":["id","op"]}}]"#;
        let stored = compact(full, &said());
        assert_eq!(
            stored,
            r#"[{"A":"hero","F":{"M":"id","7":"\"id\": 7","K":"A","x":["id","op"]}}]"#
        );
        assert_eq!(expand(&stored, &said()), full);
        // Each key has a code of its own, none a marker's letter, and each reads back.
        let mut codes: Vec<&[u8]> = KEYS.iter().filter_map(|k| code_of(k.as_bytes())).collect();
        assert_eq!(codes.len(), KEYS.len());
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), KEYS.len());
        for key in KEYS {
            let code = code_of(key.as_bytes()).unwrap();
            assert!(!b"ethcms".contains(&code[0]), "{key}");
            assert_eq!(key_of(code), Some(key.as_bytes()));
        }
    }

    #[test]
    fn the_sqlite3_view_decodes_every_code() {
        let view = include_str!("../../../migrations/0022_coded_keys.sql");
        for key in KEYS {
            let code = char::from(code_of(key.as_bytes()).unwrap()[0]);
            let pair = format!(r#"'"{code}":', '"{key}":'"#);
            assert!(view.contains(&pair), "{pair}");
        }
    }

    #[test]
    fn without_a_session_or_mission_their_values_stay() {
        let bare = Said {
            session_id: None,
            mission_id: None,
            ..said()
        };
        let full = r#"[{"id":"s \"1\"","set":{"missionId":"mission-01a2-m","closedAt":"2026-12-06T04:27:46.377Z"}}]"#;
        let stored = compact(full, &bare);
        assert_eq!(
            stored,
            r#"[{"C":"s \"1\"","F":{"E":"mission-01a2-m","i":{"t":0}}}]"#
        );
        assert_eq!(expand(&stored, &bare), full);
    }
}
