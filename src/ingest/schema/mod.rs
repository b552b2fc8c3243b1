//! Seed 003's payload schemas, as one table: `seed003.json`, generated from the seed's text by
//! `seed003.py` (which says how, and what it fills in where the seed's page lost a field list).
//! Every `FactoryEvent` type's payload, the `FactoryResponseEvent` envelope and each of its
//! payload shapes is checked against it with the `jsonschema` crate (draft 2020-12, formats
//! such as `date-time` checked). A refusal names the schema, the field and the rule.

use jsonschema::{ValidationError, Validator};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::LazyLock;

const TABLE: &str = include_str!("seed003.json");

/// The compiled table: one validator per named schema that is checked on its own.
struct Schemas {
    /// `FactoryEventType` -> the validator of its payload, and the payload schema's name.
    factory: HashMap<String, (String, Validator)>,
    /// A schema name (`FactoryResponseEvent`, `FactoryResponseEventToolPayload`, ...) -> its
    /// validator.
    named: HashMap<String, Validator>,
}

static SCHEMAS: LazyLock<Schemas> = LazyLock::new(|| {
    let table: Value = serde_json::from_str(TABLE).expect("seed003.json is JSON");
    let defs = &table["$defs"];
    let compile = |name: &str| {
        let schema = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": defs,
            "$ref": format!("#/$defs/{name}"),
        });
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("seed003.json: schema {name}: {e}"))
    };
    let factory = table["factoryEventPayloads"]
        .as_object()
        .expect("factoryEventPayloads")
        .iter()
        .map(|(event_type, name)| {
            let name = name.as_str().expect("a schema name");
            (event_type.clone(), (name.to_string(), compile(name)))
        })
        .collect();
    let named = defs
        .as_object()
        .expect("$defs")
        .keys()
        .filter(|name| name.starts_with("FactoryResponseEvent"))
        .map(|name| (name.clone(), compile(name)))
        .collect();
    Schemas { factory, named }
});

/// Why a value does not match its schema: which schema, which field (a dotted path from the
/// value checked, e.g. `artifact.kind`; empty for the value itself), which rule (the JSON
/// Schema keyword: `required`, `enum`, `additionalProperties`, `format`, `false` for a field
/// that may not be there, ...), and the validator's words.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub schema: String,
    pub field: String,
    pub rule: String,
    pub message: String,
}

/// The name of the payload schema of a `FactoryEventType`, if it is one.
pub fn factory_payload_schema(event_type: &str) -> Option<&'static str> {
    SCHEMAS
        .factory
        .get(event_type)
        .map(|(name, _)| name.as_str())
}

/// Checks a `FactoryEvent` payload against its type's schema.
pub fn check_factory_payload(event_type: &str, payload: &Value) -> Result<(), Refusal> {
    let (name, validator) = SCHEMAS
        .factory
        .get(event_type)
        .unwrap_or_else(|| panic!("{event_type} is not a FactoryEventType"));
    check(name, validator, payload)
}

/// Checks a value against one of the `FactoryResponseEvent*` schemas.
pub fn check_named(name: &str, value: &Value) -> Result<(), Refusal> {
    let validator = SCHEMAS
        .named
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not in seed003.json"));
    check(name, validator, value)
}

fn check(name: &str, validator: &Validator, value: &Value) -> Result<(), Refusal> {
    match validator.validate(value) {
        Ok(()) => Ok(()),
        Err(error) => Err(refusal(name, &error)),
    }
}

fn refusal(schema: &str, error: &ValidationError) -> Refusal {
    use jsonschema::error::ValidationErrorKind as Kind;
    let mut path: Vec<String> = error
        .instance_path()
        .as_str()
        .split('/')
        .skip(1)
        .map(|part| part.replace("~1", "/").replace("~0", "~"))
        .collect();
    let (rule, message) = match error.kind() {
        Kind::Required { property } => {
            path.push(property.as_str().unwrap_or_default().to_string());
            ("required".to_string(), "is required".to_string())
        }
        Kind::AdditionalProperties { unexpected } => {
            path.push(unexpected.first().cloned().unwrap_or_default());
            (
                "additionalProperties".to_string(),
                format!("is not a field of {schema} (it is closed)"),
            )
        }
        Kind::FalseSchema => (
            "false".to_string(),
            "may not be here (the seed keeps it in the context, or in no payload)".to_string(),
        ),
        kind => (kind.keyword().to_string(), error.to_string()),
    };
    Refusal {
        schema: schema.to_string(),
        field: path.join("."),
        rule,
        message,
    }
}

#[cfg(test)]
mod tests;
