//! Splitting a request body into items: one JSON object, a JSON array of objects, or NDJSON
//! (one object per line). Errors name the array index or the 1-based line.

use super::InvalidRequest;
use serde_json::{Map, Value, json};
use std::fmt;

/// Where an item sat in the request, for error messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Item {
    Single,
    Index(usize),
    Line(usize),
}

impl Item {
    pub fn location(&self) -> Value {
        match self {
            Item::Single => json!({}),
            Item::Index(i) => json!({ "index": i }),
            Item::Line(l) => json!({ "line": l }),
        }
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Single => write!(f, "event"),
            Item::Index(i) => write!(f, "event at index {i}"),
            Item::Line(l) => write!(f, "event on line {l}"),
        }
    }
}

/// One JSON object of a request body, with where it sat.
pub type Located = (Item, Map<String, Value>);

/// Whether a Content-Type names newline-delimited JSON.
pub fn is_ndjson(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else { return false };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "application/x-ndjson"
            | "application/ndjson"
            | "application/jsonl"
            | "application/x-jsonlines"
    )
}

/// Parses one item of a session's route (the item, its object, the route's session).
pub type ParseItem<T> = fn(Item, Map<String, Value>, &str) -> Result<T, InvalidRequest>;

/// A whole request of envelopes for one session's route: split into its items, each refused
/// if it has a field outside `fields`, then parsed by `parse` for `session`. All or nothing:
/// the first refusal is the answer.
pub fn for_session<T>(
    body: &[u8],
    ndjson: bool,
    session: &str,
    fields: &[&str],
    parse: ParseItem<T>,
) -> Result<Vec<T>, InvalidRequest> {
    split(body, ndjson)?
        .into_iter()
        .map(|(item, map)| {
            super::reject_unknown(&item, &map, fields, "")?;
            parse(item, map, session)
        })
        .collect()
}

/// Splits a body into JSON objects with their locations. An empty batch is refused: a producer
/// that sends nothing has a bug worth hearing about.
pub fn split(body: &[u8], ndjson: bool) -> Result<Vec<Located>, InvalidRequest> {
    let items = if ndjson {
        split_lines(body)?
    } else {
        split_json(body)?
    };
    if items.is_empty() {
        return Err(InvalidRequest::new(
            "the request holds no events",
            json!({}),
        ));
    }
    Ok(items)
}

fn split_json(body: &[u8]) -> Result<Vec<Located>, InvalidRequest> {
    let value = super::json::from_slice(body).map_err(|e| {
        InvalidRequest::new(
            format!("body {e}"),
            json!({ "line": e.line(), "column": e.column() }),
        )
    })?;
    match value {
        Value::Object(map) => Ok(vec![(Item::Single, map)]),
        Value::Array(values) => values
            .into_iter()
            .enumerate()
            .map(|(i, v)| object(Item::Index(i), v))
            .collect(),
        other => Err(InvalidRequest::new(
            format!(
                "body must be a JSON object or an array of objects, not {}",
                kind(&other)
            ),
            json!({}),
        )),
    }
}

fn split_lines(body: &[u8]) -> Result<Vec<Located>, InvalidRequest> {
    let mut items = Vec::new();
    for (i, line) in body.split(|b| *b == b'\n').enumerate() {
        let item = Item::Line(i + 1);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value = super::json::from_slice(line).map_err(|e| {
            let mut details = item.location();
            details["column"] = json!(e.column());
            InvalidRequest::new(format!("{item} {e}"), details)
        })?;
        items.push(object(item, value)?);
    }
    Ok(items)
}

fn object(item: Item, value: Value) -> Result<Located, InvalidRequest> {
    match value {
        Value::Object(map) => Ok((item, map)),
        other => Err(InvalidRequest::new(
            format!("{item} must be a JSON object, not {}", kind(&other)),
            item.location(),
        )),
    }
}

/// The JSON kind of a value, as error messages name it.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndjson_skips_blank_lines_and_names_the_bad_line() {
        let ok = split(b"{\"a\":1}\r\n\n{\"b\":2}\n", true).unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1].0, Item::Line(3));
        let err = split(b"{\"a\":1}\n{oops\n", true).unwrap_err();
        assert_eq!(err.details["line"], 2);
        let err = split(b"{\"a\":1}\n[1]\n", true).unwrap_err();
        assert_eq!(err.details["line"], 2);
    }

    #[test]
    fn json_accepts_object_or_array_of_objects_only() {
        assert_eq!(split(br#"{"a":1}"#, false).unwrap()[0].0, Item::Single);
        assert_eq!(split(br#"[{"a":1},{"b":2}]"#, false).unwrap().len(), 2);
        assert_eq!(
            split(br#"[{"a":1},3]"#, false).unwrap_err().details["index"],
            1
        );
        assert!(split(b"42", false).is_err());
        assert!(split(b"[]", false).is_err());
        assert!(split(b"", true).is_err());
        assert!(split(b"{", false).is_err());
    }

    #[test]
    fn content_type_detection_ignores_parameters_and_case() {
        assert!(is_ndjson(Some("application/x-ndjson; charset=utf-8")));
        assert!(is_ndjson(Some("Application/JSONL")));
        assert!(!is_ndjson(Some("application/json")));
        assert!(!is_ndjson(None));
    }
}
