//! Reading a request body's JSON. An object that names the same key twice
//! (`{"type":"a","type":"b"}`) is refused rather than read as its last value: JSON leaves
//! duplicate keys to the reader (RFC 8259, 4), so two programs reading the same bytes can see
//! two different events. Every ingest route reads its body here.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// Why a body is not JSON hooklog reads.
#[derive(Debug)]
pub enum JsonError {
    /// Not JSON at all.
    Syntax(serde_json::Error),
    /// JSON, with an object that names a key twice.
    DuplicateKey(serde_json::Error),
}

impl JsonError {
    pub fn line(&self) -> usize {
        self.inner().line()
    }

    pub fn column(&self) -> usize {
        self.inner().column()
    }

    fn inner(&self) -> &serde_json::Error {
        match self {
            JsonError::Syntax(e) | JsonError::DuplicateKey(e) => e,
        }
    }
}

/// Reads as "body {error}": "... is not valid JSON: ..." or "... names a key twice: ...".
impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax(e) => write!(f, "is not valid JSON: {e}"),
            JsonError::DuplicateKey(e) => write!(f, "names a key twice in one object: {e}"),
        }
    }
}

/// Parses `bytes` as one JSON value, refusing duplicate keys.
pub fn from_slice(bytes: &[u8]) -> Result<Value, JsonError> {
    let mut checking = serde_json::Deserializer::from_slice(bytes);
    let checked = UniqueKeys
        .deserialize(&mut checking)
        .and_then(|()| checking.end());
    if let Err(e) = checked {
        return Err(match e.classify() {
            serde_json::error::Category::Data => JsonError::DuplicateKey(e),
            _ => JsonError::Syntax(e),
        });
    }
    serde_json::from_slice(bytes).map_err(JsonError::Syntax)
}

/// Walks a JSON value, failing on the first object that names a key twice.
struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(UniqueKeys)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Objects are small: a list beats a hash set for them.
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            map.next_value_seed(UniqueKeys)?;
            seen.push(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_at_any_depth_and_however_spelled() {
        for body in [
            r#"{"type":"a","type":"b"}"#,
            r#"{"payload":{"x":1,"y":2,"x":3}}"#,
            r#"[{"a":1},{"b":1,"b":1}]"#,
            r#"{"type":"a","t\u0079pe":"b"}"#,
        ] {
            let error = from_slice(body.as_bytes()).unwrap_err();
            assert!(
                matches!(error, JsonError::DuplicateKey(_)),
                "{body}: {error}"
            );
            assert!(error.to_string().contains("duplicate key"), "{error}");
        }
    }

    #[test]
    fn other_json_reads_as_serde_json_reads_it() {
        for body in [
            r#"{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}],"n":1.50,"big":123456789012345678901234567890}"#,
            "[]",
            "\"text\"",
            "null",
        ] {
            let ours = from_slice(body.as_bytes()).unwrap();
            let theirs: Value = serde_json::from_slice(body.as_bytes()).unwrap();
            assert_eq!(ours, theirs, "{body}");
        }
        for body in ["", "{", r#"{"a":}"#, "[1,]", "{} {}"] {
            let error = from_slice(body.as_bytes()).unwrap_err();
            assert!(matches!(error, JsonError::Syntax(_)), "{body}: {error}");
        }
    }
}
