#!/usr/bin/env python3
"""Generates seed003.json, the JSON Schema of seed 003's payloads, from the seed's text.

    python3 src/ingest/schema/seed003.py ../shared/seeds/003_b0c47e110fa9c354.txt \
        > src/ingest/schema/seed003.json

The seed is a rendered reference page: each schema is its name, its type (object, string,
...), an optional `additionalProperties` line, and `Fields` bullets such as
`statusRequiredFactorySessionDurableLifecycleStatus`, with constraint bullets (`minimum0`,
`enum"A" | "B"`, `pattern...`) under a field or under a string type. This reads those back.

Where the page lost a schema's field list (a closed object whose `Fields` list is empty), the
schema is left open and GAPS below gives what the seed still says of it: the fields of its
example, typed by the component named like them, required as the example has them. Open
event payloads may not restate a context field (`sessionId`, `requestId`, ...). Every such
choice is listed in docs/api.md ("Payload schemas").
"""
import json
import re
import sys

TYPES = {"object", "string", "array", "integer", "number", "boolean", "oneOf"}
# Context fields the seed says payloads must not restate.
CONTEXT_NAMES = ["sessionId", "orchestratorKind", "phaseId", "checkpointId", "requestId",
                 "traceIds", "workIds", "dispatchId"]
DATE_TIME = {"type": "string", "format": "date-time"}


def ref(name):
    return {"$ref": f"#/$defs/{name}"}


# What the seed says of the schemas whose field list its page lost: (required, optional).
GAPS = {
    "RunRequestEventPayload": ({"recordedAt": DATE_TIME, "factory": ref("Factory")}, {}),
    "SessionLifecycleControlEventPayload": ({
        "operation": ref("FactorySessionLifecycleControlKind"),
        "outcome": ref("FactorySessionLifecycleControlOutcome"),
        "previousStatus": ref("FactorySessionDurableLifecycleStatus"),
        "newStatus": ref("FactorySessionDurableLifecycleStatus"),
        "occurredAt": DATE_TIME}, {}),
    "RunResponseEventPayload": ({}, {}),
    "InitialStructureRequestEventPayload": ({"factory": ref("Factory")}, {}),
    "FactoryChangeEventPayload": ({"factory": ref("Factory")}, {}),
    "RelationshipChangeRequestEventPayload": ({"relation": ref("Relation")}, {}),
    "FactoryStateResponseEventPayload": ({"state": ref("FactoryState")}, {}),
    # "Single-work submissions ... are converted into this one-work request shape": the works.
    "WorkRequestEventPayload": ({"type": ref("WorkRequestType")},
                                {"works": {"type": "array", "items": ref("Work")}}),
    "JavaScriptPhaseChangeEventPayload": ({
        "phase": {"type": "string"},
        "phases": {"type": "array", "items": {"type": "string"}},
        "scriptStatus": ref("FactorySessionJavaScriptScriptStatus"),
        "childDispatchCounts": ref("FactorySessionJavaScriptChildDispatchCounts")}, {}),
    "FactoryArtifact": ({"id": {"type": "string"}, "kind": ref("FactoryArtifactKind"),
                         "visibility": ref("FactoryArtifactVisibility")}, {}),
    "FactoryResponseEventProvenance": ({
        "provider": {"type": "string"}, "nativeEventType": {"type": "string"},
        "delivery": ref("FactoryResponseEventProvenanceDelivery"),
        "representation": ref("FactoryResponseEventProvenanceRepresentation"),
        "fidelity": ref("FactoryResponseEventProvenanceFidelity")}, {}),
}

# The seed describes these in prose only.
PROSE = {
    # "Retention gaps include fromSequence, toSequence, and firstAvailableSequence; item-scoped
    # gaps include affectedItemId and reason. The alternatives are exclusive."
    "FactoryResponseEventStreamGapPayload": {"oneOf": [
        {"type": "object", "additionalProperties": False,
         "required": ["fromSequence", "toSequence", "firstAvailableSequence"],
         "properties": {"fromSequence": {"type": "integer", "minimum": 0},
                        "toSequence": {"type": "integer", "minimum": 0},
                        "firstAvailableSequence": {"type": "integer", "minimum": 1}}},
        {"type": "object", "additionalProperties": False,
         "required": ["affectedItemId", "reason"],
         "properties": {"affectedItemId": {"type": "string", "minLength": 1},
                        "reason": {"type": "string", "minLength": 1}}}]},
    # "Discriminated by the content block kind field."
    "FactoryResponseEventContentBlock": {
        "type": "object", "required": ["kind"],
        "properties": {"kind": ref("FactoryResponseEventContentBlockKind")},
        "if": {"properties": {"kind": {"const": "TOOL_REQUEST"}}},
        "then": ref("FactoryResponseEventToolRequestContentBlock")},
    # The page breaks this pattern over lines: optional whitespace around a reasoning effort
    # in any letter case, or one invocation-parameter placeholder.
    "ReasoningEffort": {"type": "string", "pattern":
                        r"^(?:\s*(?i:minimal|low|medium|high|xhigh|max)?\s*|\$\{[A-Za-z0-9_.-]+\})$"},
    # Checked by kind and phase (src/ingest/schema/mod.rs), not as one union.
    "FactoryResponseEventPayload": {},
}


def field_type(text):
    """A field's type text (`stringformat: date-time`, `Work[]`, `integer`...) as a schema."""
    nullable = text.endswith("nullable")
    text = text.removesuffix("nullable")
    fmt = None
    if "format: " in text:
        text, fmt = text.split("format: ")
    if text == "":
        schema = {}
    elif text.endswith("[]"):
        schema = {"type": "array", "items": field_type(text[:-2])}
    elif text == "oneOf":
        schema = {}
    elif text in TYPES:
        schema = {"type": text}
    else:
        schema = ref(text)
    if fmt in ("date-time",):
        schema["format"] = fmt
    if fmt == "int64" and schema.get("type") == "string":
        schema["pattern"] = "^[0-9]+$"
    if nullable:
        schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


def constrain(schema, bullet):
    """Applies one constraint bullet (`minimum0`, `enum"A" | "B"`, ...) to a schema."""
    target = schema["anyOf"][0] if "anyOf" in schema else schema
    if target.get("type") == "array" and not bullet.startswith(("minItems", "uniqueItems")):
        target = target["items"]
    for key in ("minimum", "maximum", "minLength", "maxLength", "minItems"):
        if bullet.startswith(key):
            value = float(bullet[len(key):])
            target[key] = int(value) if value.is_integer() else value
            return
    if bullet.startswith("enum"):
        values = re.findall(r'"([^"]*)"', bullet)
        if len(values) == 1 and "$ref" in target:
            target["const"] = values[0]
        else:
            target["enum"] = values
    elif bullet.startswith("pattern"):
        target["pattern"] = bullet[len("pattern"):]
    elif bullet.startswith("uniqueItems"):
        target["uniqueItems"] = True
    elif bullet.startswith("additionalProperties"):
        rest = bullet[len("additionalProperties"):]
        if rest.startswith("/components/schemas/"):
            target["additionalProperties"] = ref(rest.split("/")[-1])
        else:
            target["additionalProperties"] = rest.startswith("true")


def blocks(lines):
    """Yields (name, body lines) for each schema on the page."""
    starts = []
    for i, line in enumerate(lines):
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", line):
            continue
        following = [l for l in lines[i + 1:i + 6] if l.strip()]
        if following and following[0] in TYPES and following[0] != "oneOf":
            starts.append(i)
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        yield lines[start], lines[start + 1:end]


def parse(body):
    kind = next(l for l in body if l.strip())
    schema = {"type": kind}
    fields, field, closed, listed = {}, None, False, False
    required = []
    for line in body:
        if line == "Fields":
            listed = True
        elif line.startswith("  • ") and not line.startswith("    "):
            bullet = line[4:]
            m = re.fullmatch(r"([a-z][A-Za-z0-9]*?)(Required|Optional)(.*)", bullet) if listed else None
            if m:
                field = m.group(1)
                fields[field] = field_type(m.group(3))
                if m.group(2) == "Required":
                    required.append(field)
            elif bullet.startswith("additionalPropertiesfalse"):
                closed = True
            else:
                constrain(schema, bullet)
        elif line.startswith("    • ") and field is not None:
            constrain(fields[field], line[6:])
        elif line in ("Event catalog",) or line.startswith("Corpus-constructed"):
            break
    if kind == "object":
        if fields:
            schema["properties"] = fields
        if required:
            schema["required"] = required
        if closed and (fields or not listed):
            schema["additionalProperties"] = False
    return schema, closed and listed and not fields


def main(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    defs, open_payloads = {}, []
    for name, body in blocks(lines):
        schema, lost = parse(body)
        if name in defs:
            continue
        if lost and name not in GAPS:
            schema = {"type": "object"}
        defs[name] = schema
    for name, (required, optional) in GAPS.items():
        props = {**required, **optional}
        if name.endswith("EventPayload"):
            props.update({c: False for c in CONTEXT_NAMES if c not in props})
            open_payloads.append(name)
        defs[name] = {"type": "object", "properties": props}
        if required:
            defs[name]["required"] = list(required)
    defs.update(PROSE)
    # Named on the page without any shape: anything is accepted.
    for name in sorted(set(re.findall(r"#/\$defs/(\w+)", json.dumps(defs))) - set(defs)):
        defs[name] = {}
    events = {}
    for i, line in enumerate(lines):
        m = re.fullmatch(r"Payload ([A-Za-z]+)", line)
        if m:
            event_type = lines[i - 2].lstrip("#")
            events[event_type] = m.group(1)
    # The seed's own example of each schema (the tests check them valid).
    examples = {}
    for i, line in enumerate(lines):
        if line.endswith(" example") and i + 1 < len(lines):
            start = next((j for j in range(i + 1, min(i + 8, len(lines))) if lines[j] in ("{", "{}")), None)
            if start is None:
                continue
            end = start if lines[start] == "{}" else lines.index("}", start)
            examples.setdefault(line.split()[0], json.loads("\n".join(lines[start:end + 1])))
    doc = {
        "$comment": "Generated by seed003.py from seed 003 (003_b0c47e110fa9c354.txt). Do not edit.",
        "factoryEventPayloads": events,
        "openPayloads": sorted(open_payloads),
        "examples": dict(sorted(examples.items())),
        "$defs": dict(sorted(defs.items())),
    }
    json.dump(doc, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
