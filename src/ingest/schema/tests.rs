//! The table walked whole: every `FactoryEvent` type and every response-event payload shape
//! with the seed's own example (valid), and made invalid each way the seed allows: a required
//! field taken out, a field no schema has put in, a context field restated.

use super::*;
use crate::event::catalogue::FACTORY_EVENTS;
use serde_json::json;

fn table() -> Value {
    serde_json::from_str(TABLE).unwrap()
}

fn example(name: &str) -> Value {
    table()["examples"][name].clone()
}

fn required(name: &str) -> Vec<String> {
    table()["$defs"][name]["required"]
        .as_array()
        .map(|r| r.iter().map(|f| f.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn refused(result: Result<(), Refusal>, what: &str) -> Refusal {
    result.expect_err(&format!("{what} should be refused"))
}

#[test]
fn every_factory_event_type_has_a_payload_schema() {
    for event_type in FACTORY_EVENTS {
        assert!(
            factory_payload_schema(event_type).is_some(),
            "{event_type} has no payload schema"
        );
    }
    assert_eq!(SCHEMAS.factory.len(), 32);
}

#[test]
fn each_factory_payload_takes_the_seeds_example_and_refuses_what_breaks_its_schema() {
    let open: Vec<String> = serde_json::from_value(table()["openPayloads"].clone()).unwrap();
    for event_type in FACTORY_EVENTS {
        let name = factory_payload_schema(event_type).unwrap();
        let valid = example(name);
        assert!(valid.is_object(), "the seed has an example of {name}");
        check_factory_payload(event_type, &valid)
            .unwrap_or_else(|r| panic!("{event_type}: the seed's example is refused: {r:?}"));

        let mut restated = valid.clone();
        restated["sessionId"] = json!("fs-1");
        let r = refused(check_factory_payload(event_type, &restated), event_type);
        assert_eq!((r.field.as_str(), r.schema.as_str()), ("sessionId", name));
        let rule = if open.contains(&name.to_string()) {
            "false"
        } else {
            "additionalProperties"
        };
        assert_eq!(r.rule, rule, "{event_type}: {r:?}");

        if !open.contains(&name.to_string()) {
            let mut bogus = valid.clone();
            bogus["bogus"] = json!(1);
            let r = refused(check_factory_payload(event_type, &bogus), event_type);
            assert_eq!(
                (r.field.as_str(), r.rule.as_str()),
                ("bogus", "additionalProperties")
            );
        }
        for field in required(name) {
            let mut missing = valid.clone();
            missing.as_object_mut().unwrap().remove(&field);
            let r = refused(check_factory_payload(event_type, &missing), &field);
            assert_eq!(
                (r.field, r.rule.as_str()),
                (field, "required"),
                "{event_type}"
            );
        }
    }
}

#[test]
fn enums_formats_and_nested_schemas_are_checked_and_named_by_path() {
    let cases = [
        (
            "SESSION_PAUSED",
            json!({"status": "NAPPING", "pausedAt": "1970-01-01T00:00:00Z"}),
            "status",
            "enum",
        ),
        (
            "SESSION_PAUSED",
            json!({"status": "PAUSED", "pausedAt": "yesterday"}),
            "pausedAt",
            "format",
        ),
        (
            "DISPATCH_QUEUED",
            json!({"dispatchKind": "PETRI_TRANSITION", "queuePosition": -1}),
            "queuePosition",
            "minimum",
        ),
        (
            "MODEL_REQUEST",
            json!({"modelRequestId": "m", "attempt": 0, "operation": "TTS", "worker": "w", "model": "m", "providerLocality": "LOCAL"}),
            "attempt",
            "minimum",
        ),
        (
            "ARTIFACT_CREATED",
            json!({"artifact": {"id": "a", "kind": "REPORT", "visibility": "PUBLIC"}}),
            "artifact.kind",
            "enum",
        ),
        (
            "JAVASCRIPT_CHECKPOINT_REF",
            json!({"checkpointId": "c", "artifactRef": {"artifactId": "a"}}),
            "artifactRef.id",
            "required",
        ),
        (
            "RUN_REQUEST",
            json!({"recordedAt": "1970-01-01T00:00:00Z", "factory": {"name": "Not A Name"}}),
            "factory.name",
            "pattern",
        ),
        (
            "DISPATCH_REQUEST",
            json!({"transitionId": "t", "inputs": [{"workId": "w", "extra": 1}]}),
            "inputs.0.extra",
            "additionalProperties",
        ),
        ("SESSION_STARTED", json!("not an object"), "", "type"),
    ];
    for (event_type, payload, field, rule) in cases {
        let r = refused(check_factory_payload(event_type, &payload), event_type);
        assert_eq!(
            (r.field.as_str(), r.rule.as_str()),
            (field, rule),
            "{event_type}: {r:?}"
        );
    }
}

#[test]
fn each_response_payload_shape_takes_the_seeds_example_and_refuses_a_broken_one() {
    let shapes: Vec<&String> = SCHEMAS
        .named
        .keys()
        .filter(|n| n.ends_with("Payload") && n.as_str() != "FactoryResponseEventPayload")
        .collect();
    assert_eq!(shapes.len(), 14, "{shapes:?}");
    for name in shapes {
        let mut valid = example(name);
        if name == "FactoryResponseEventMessagePayload" {
            // The seed's example has no content block, against its own `minItems: 1`.
            valid["contentBlocks"] = json!([{"kind": "TEXT", "text": "hi"}]);
        }
        check_named(name, &valid).unwrap_or_else(|r| panic!("{name}: {r:?}"));
        let broken = match name.as_str() {
            // Open in the seed: anything but a non-object.
            "FactoryResponseEventSessionPayload" | "FactoryResponseEventPlanPayload" => json!([]),
            _ => {
                let mut b = valid.clone();
                b["bogus"] = json!(1);
                b
            }
        };
        refused(check_named(name, &broken), name);
    }
    let gap = "FactoryResponseEventStreamGapPayload";
    check_named(
        gap,
        &json!({"affectedItemId": "i", "reason": "provider_reconnect"}),
    )
    .unwrap();
    let mixed = json!({"fromSequence": 1, "toSequence": 2, "firstAvailableSequence": 3, "affectedItemId": "i"});
    assert_eq!(refused(check_named(gap, &mixed), gap).rule, "oneOf");
}

#[test]
fn the_response_envelope_example_is_valid_and_closed() {
    let envelope = example("FactoryResponseEvent");
    check_named("FactoryResponseEvent", &envelope).unwrap();
    let mut bad = envelope.clone();
    bad["provenance"]["fidelity"] = json!("PERFECT");
    let r = refused(check_named("FactoryResponseEvent", &bad), "fidelity");
    assert_eq!(
        (r.field.as_str(), r.rule.as_str()),
        ("provenance.fidelity", "enum")
    );
    bad = envelope;
    bad["colour"] = json!("blue");
    assert_eq!(
        refused(check_named("FactoryResponseEvent", &bad), "colour").field,
        "colour"
    );
}
