//! Schemas of what hooklog reads or writes by hand, with no Rust type to derive them from: the
//! error envelope (built in `error.rs`), the event bodies the ingest parsers take apart field by
//! field, and the projection rows, described here as objects (docs/api.md has their fields).
#![allow(dead_code)] // The types exist to be described, never built.

use serde_json::Value;
use std::borrow::Cow;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, Object, ObjectBuilder, OneOfBuilder, Schema,
    SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

/// Text without control characters: the rule of every id and name hooklog accepts.
pub const NO_CONTROL: &str = r"^[^\x00-\x1F\x7F-\x9F]*$";

/// A string that is one of `values`: a filter's allowed values, from the constant the handler
/// checks against.
pub fn one_of(values: &[&str]) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
}

/// A moment as `since`/`until` take it: an RFC 3339 time, or an age back from now (`7d`,
/// `12h`, `90m`, `30s`, `2w`), exactly as `http::search::moment` reads them.
pub fn moment() -> Schema {
    let time = ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)));
    let age = ObjectBuilder::new()
        .schema_type(Type::String)
        // Empty counts as absent (docs/api.md, "Query parameters").
        .pattern(Some("^([0-9]{1,5}[smhdw])?$"));
    OneOfBuilder::new().item(time).item(age).build().into()
}

/// A UTC offset as `/usage`'s `tz` takes it: `Z`, `UTC`, `+2`, `+02:00`, `-0530`, at most 14
/// hours either way.
pub fn utc_offset() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(
            // Empty counts as absent (docs/api.md, "Query parameters").
            "^(|Z|z|UTC|utc|[+-](0?[0-9]|1[0-3])(:[0-5][0-9])?|[+-](0[0-9]|1[0-3])[0-5][0-9]|[+-]14(:?00)?)$",
        ))
        .build()
}

/// A platform position (a sequence id, a message id, a Slack ts): a name or a number, or null.
pub fn position() -> Schema {
    let name = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(256))
        .pattern(Some(NO_CONTROL));
    OneOfBuilder::new()
        .item(name)
        .item(ObjectBuilder::new().schema_type(Type::Number))
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .build()
        .into()
}

/// A heartbeat's positions: 1 to 1,000 named positions, or null.
pub fn positions() -> Object {
    let values = OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(256))
                .pattern(Some(NO_CONTROL)),
        )
        .item(ObjectBuilder::new().schema_type(Type::Number));
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
        .min_properties(Some(1))
        .max_properties(Some(1000))
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(256))
                .pattern(Some(NO_CONTROL)),
        ))
        .additional_properties(Some(AdditionalProperties::RefOr(RefOr::T(
            values.build().into(),
        ))))
        .build()
}

/// Every refusal: `error` is a stable code (`invalid_request`, `not_found`, `conflict`, a
/// coordination reason such as `watcherAlreadyRunning`, ...), `message` is for people.
/// Seed-shaped routes add their own keys (`accepted: false` on `/event`, `field` on
/// `/event/normalized`).
#[derive(ToSchema)]
pub struct ErrorBody {
    pub error: String,
    pub message: Option<String>,
    /// What was wrong, when that can be said precisely (a field, a limit, an index).
    #[schema(value_type = Option<Object>)]
    pub details: Option<Value>,
}

/// One event in the short form.
#[derive(ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShortEvent {
    /// The event id (the idempotency key); absent or null: a new UUIDv7.
    #[schema(
        nullable,
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub id: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub r#type: String,
    #[schema(
        nullable,
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub session_id: Option<String>,
    /// RFC 3339; stored in UTC, to the millisecond.
    #[schema(nullable, format = DateTime)]
    pub event_time: Option<String>,
    #[schema(
        nullable,
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub source: Option<String>,
    #[schema(nullable, value_type = Option<Object>)]
    pub payload: Option<Value>,
}

/// A stored event's envelope, as `GET /events/{id}` returns it (and may be posted back).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub schema_version: String,
    pub id: String,
    pub r#type: String,
    pub context: EnvelopeContext,
    #[schema(value_type = Object)]
    pub payload: Value,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvelopeContext {
    pub sequence: i64,
    pub session_id: Option<String>,
    pub session_sequence: Option<i64>,
    pub source: String,
    pub event_time: String,
    pub received_at: String,
}

/// `POST /events`: one event, or an array of them stored together or not at all. The
/// envelope form (`schemaVersion`, `context`) and other hook servers' envelopes are accepted
/// too (docs/api.md); they are described there.
pub struct EventsBody;

impl PartialSchema for EventsBody {
    fn schema() -> RefOr<Schema> {
        one_or_many(ShortEvent::name())
    }
}

impl ToSchema for EventsBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ShortEvent::name().into(), ShortEvent::schema()));
    }
}

/// One `item` object, or a non-empty array of them.
fn one_or_many(item: Cow<'static, str>) -> RefOr<Schema> {
    let one = Ref::from_schema_name(item);
    let many = ArrayBuilder::new().items(one.clone()).min_items(Some(1));
    OneOfBuilder::new().item(one).item(many).into()
}

/// An agent hook's input, as Claude Code and Codex send it: any object. The fields that route
/// it must be strings (or null) when present. The camelCase forms (`eventName`, `sessionId`,
/// `toolName`, ...) are accepted too, and win over these; docs/api.md lists them.
#[derive(ToSchema)]
pub struct HookBody {
    #[schema(
        nullable,
        min_length = 1,
        max_length = 128,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub hook_event_name: Option<String>,
    #[schema(
        nullable,
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub session_id: Option<String>,
    #[schema(nullable)]
    pub tool_name: Option<String>,
    /// Any JSON value.
    pub tool_input: Option<Value>,
}

/// A row of a projection (a session, hero, mission, tool use, owner, claim, gap, alert, work
/// item, dispatch): its fields are listed in docs/api.md.
#[derive(ToSchema)]
pub struct Row {}

/// Where a posted event landed in the log.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    pub id: String,
    pub sequence: i64,
    pub session_sequence: Option<i64>,
    /// The id was already stored with the same content: nothing was appended.
    pub duplicate: bool,
}

/// The answer to an append: one position per event, in request order.
#[derive(ToSchema)]
pub struct Positions {
    pub events: Vec<Position>,
}

/// Seed 001's `unstuck` and `ended`. Other fields are kept as sent.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NormalizedEnd {
    #[schema(pattern = "^(unstuck|ended)$")]
    pub r#type: String,
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub session_id: String,
    #[schema(minimum = 0, maximum = 253_402_300_799_999_f64)]
    pub timestamp: f64,
}

/// Seed 001's `registered`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NormalizedRegistered {
    #[schema(pattern = "^registered$")]
    pub r#type: String,
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub session_id: String,
    #[schema(min_length = 1)]
    pub pane_id: String,
    #[schema(min_length = 1)]
    pub cwd: String,
    #[schema(min_length = 1)]
    pub transcript_path: String,
    #[schema(minimum = 0, maximum = 253_402_300_799_999_f64)]
    pub timestamp: f64,
}

/// Seed 001's `stuck`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NormalizedStuck {
    #[schema(pattern = "^stuck$")]
    pub r#type: String,
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub session_id: String,
    #[schema(min_length = 1)]
    pub pane_id: String,
    #[schema(min_length = 1)]
    pub cwd: String,
    #[schema(min_length = 1)]
    pub transcript_path: String,
    #[schema(pattern = "^(stopped|permission)$")]
    pub reason: String,
    #[schema(min_length = 1)]
    pub message: String,
    #[schema(minimum = 0, maximum = 253_402_300_799_999_f64)]
    pub timestamp: f64,
}

/// `POST /event/normalized`: one of seed 001's events.
#[derive(ToSchema)]
#[serde(untagged)]
pub enum NormalizedBody {
    Registered(NormalizedRegistered),
    Stuck(NormalizedStuck),
    End(NormalizedEnd),
}

/// Seed 001's answer to a normalized event.
#[derive(ToSchema)]
pub struct Ok {
    pub ok: bool,
}

/// One of seed 003's `FactoryEvent` envelopes (its `payload` checked against the seed's schema
/// for its `type`; docs/api.md, "Payload schemas").
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FactoryEvent {
    pub schema_version: String,
    pub id: String,
    pub r#type: String,
    #[schema(value_type = Object)]
    pub context: Value,
    #[schema(value_type = Object)]
    pub payload: Value,
}

/// `POST /factory-sessions/{id}/events`: one envelope or an array of them.
pub struct FactoryEventsBody;

impl PartialSchema for FactoryEventsBody {
    fn schema() -> RefOr<Schema> {
        one_or_many(FactoryEvent::name())
    }
}

impl ToSchema for FactoryEventsBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((FactoryEvent::name().into(), FactoryEvent::schema()));
    }
}

/// One of seed 003's `FactoryResponseEvent`s (docs/api.md).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResponseEvent {
    pub schema_version: String,
    pub event_id: String,
    pub run_id: String,
    pub recorded_at: String,
    pub kind: String,
    #[schema(value_type = Object)]
    pub provenance: Value,
    #[schema(value_type = Object)]
    pub payload: Value,
}

/// `POST /factory-sessions/{id}/response-events`: one record or an array of them.
pub struct ResponseEventsBody;

impl PartialSchema for ResponseEventsBody {
    fn schema() -> RefOr<Schema> {
        one_or_many(ResponseEvent::name())
    }
}

impl ToSchema for ResponseEventsBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ResponseEvent::name().into(), ResponseEvent::schema()));
    }
}
