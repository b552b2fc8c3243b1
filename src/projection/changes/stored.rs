//! How a change row's deltas are stored: without what their event already says. A value in a
//! delta that equals its event's id (alone or after a prefix such as `tool-`), time, session
//! id or sequence, or its row's hero or mission id, is written as a short marker object in its
//! place, and [`expand`] puts the value back when the row is read: the text a reader gets is
//! exactly the text the recorder wrote. A created tool use or mission repeats most of these
//! (its own id, its session, its hero, the event that opened it and when), so a stored row is
//! about a third smaller.
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
//! No delta value is an object (a delta's `set` holds a row's scalar fields, and its own keys
//! are longer than one letter), so a marker cannot be mistaken for one; and a `"` inside a
//! JSON string is always escaped, so no string holds a marker's text: replacing each marker's
//! text with its value gives the deltas back, which the `changes_sent` view does in SQL for the
//! sqlite3 CLI (migration 0019). A row stored before this form (schema 18 and older) has no
//! marker and reads back unchanged.
//!
//! Both directions scan the JSON text serde wrote, byte by byte, without parsing it into
//! values: parsing and serializing again would cost the writer more, and `serde_json`'s maps
//! would reorder the fields.

use crate::event::StoredEvent;

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

/// `changes` (a JSON array of deltas) with the values `said` gives written as markers.
pub fn compact(changes: &str, said: &Said<'_>) -> String {
    let text = Text::of(said);
    let sequence = said.sequence.to_string();
    rewrite_values(changes, |at| match at[0] {
        b'"' => {
            let end = string_end(at, 0);
            text.marker(&at[1..end - 1]).map(|marker| (end, marker))
        }
        b'-' | b'0'..=b'9' => {
            let end = number_end(at, 0);
            (&at[..end] == sequence.as_bytes()).then(|| (end, br#"{"s":0}"#.to_vec()))
        }
        _ => None,
    })
}

/// Stored deltas with their markers replaced by the values `said` gives: the text `compact`
/// was given.
pub fn expand(stored: &str, said: &Said<'_>) -> String {
    let text = Text::of(said);
    rewrite_values(stored, |at| match at[0] {
        b'{' => text.expand(at, said.sequence),
        _ => None,
    })
}

/// `json` with the value at each value position (after a `:`) that `replace` answers for
/// replaced: `replace` gets the text from there on, and gives how many bytes it replaces and
/// with what. Everything else, strings whole, is copied.
fn rewrite_values(
    json: &str,
    mut replace: impl FnMut(&[u8]) -> Option<(usize, Vec<u8>)>,
) -> String {
    let bytes = json.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 2);
    let mut value = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if value && let Some((len, replacement)) = replace(&bytes[i..]) {
            out.extend_from_slice(&replacement);
            i += len;
            value = false;
            continue;
        }
        if b == b'"' {
            let end = string_end(bytes, i);
            out.extend_from_slice(&bytes[i..end]);
            i = end;
            value = false;
            continue;
        }
        out.push(b);
        if !b.is_ascii_whitespace() {
            value = b == b':';
        }
        i += 1;
    }
    String::from_utf8(out).expect("values, markers and copied UTF-8 are UTF-8")
}

/// The said values as they stand between quotes in JSON text.
struct Text {
    event_id: String,
    event_time: String,
    session_id: Option<String>,
    hero_id: String,
    mission_id: Option<String>,
}

impl Text {
    fn of(said: &Said<'_>) -> Text {
        let escaped = |s: &str| {
            let quoted = serde_json::to_string(s).expect("a string serializes");
            quoted[1..quoted.len() - 1].to_string()
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
            |said: Option<&String>| said.is_some_and(|s| !s.is_empty() && s.as_bytes() == content);
        if is(Some(&self.hero_id)) {
            return Some(br#"{"h":0}"#.to_vec());
        }
        if is(self.mission_id.as_ref()) {
            return Some(br#"{"m":0}"#.to_vec());
        }
        if is(self.session_id.as_ref()) {
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
        let fixed: [(&[u8], Option<Vec<u8>>); 5] = [
            (br#"{"h":0}"#, Some(quoted(&self.hero_id))),
            (br#"{"m":0}"#, self.mission_id.as_deref().map(quoted)),
            (br#"{"c":0}"#, self.session_id.as_deref().map(quoted)),
            (br#"{"t":0}"#, Some(quoted(&self.event_time))),
            (br#"{"s":0}"#, Some(sequence.to_string().into_bytes())),
        ];
        for (marker, value) in fixed {
            if at.starts_with(marker) {
                return value.map(|v| (marker.len(), v));
            }
        }
        let rest = at.strip_prefix(br#"{"e":""#)?;
        let prefix_len = PREFIXES
            .iter()
            .find(|p| rest.starts_with(p) && rest[p.len()..].starts_with(br#""}"#))?
            .len();
        let mut value = vec![b'"'];
        value.extend_from_slice(&rest[..prefix_len]);
        value.extend_from_slice(self.event_id.as_bytes());
        value.push(b'"');
        Some((6 + prefix_len + 2, value))
    }
}

/// The index just past the string that starts at `start` (a `"`), or the text's end.
fn string_end(bytes: &[u8], start: usize) -> usize {
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
fn number_end(bytes: &[u8], start: usize) -> usize {
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
            r#"[{"entity":"toolUse","op":"created","id":{"e":"tool-"},"heroId":{"h":0},"missionId":{"m":0},"set":{"id":{"e":"tool-"},"sessionId":{"c":0},"heroId":{"h":0},"preview":"grep \"tool-01a2-e\" 160","status":"running","openedEventId":{"e":""},"startedAt":{"t":0},"durationMs":{"s":0},"count":1600,"other":"x-01a2-e","long":"a-very-long-prefix-01a2-e","openedSequence":{"s":0}}}]"#
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
        assert_eq!(compact(&once, &said()), once);
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
            r#"[{"id":"s \"1\"","set":{"missionId":"mission-01a2-m","closedAt":{"t":0}}}]"#
        );
        assert_eq!(expand(&stored, &bare), full);
    }
}
