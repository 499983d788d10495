"""A JSON Schema (draft 2020-12) of the YAML scene format, generated from the proto descriptors.

Where it sits: schema/; `scenec schema` prints it, editors use it through yaml-language-server
(`# yaml-language-server: $schema=scene.schema.json`). It follows the same mapping as the loader:
field names as keys, oneof members as keys (at most one per oneof), enums as lowercase strings,
numeric fields as numbers or expression strings, a scalar where a list is expected. Descriptions
come from the comments of `scene.proto` and carry each field's unit. No jax.
"""

from __future__ import annotations

import functools
import itertools
import pathlib
import re

from google.protobuf.descriptor import FieldDescriptor as FD

from . import scene_pb2, units
from .from_yaml import real_oneof

DRAFT = "https://json-schema.org/draft/2020-12/schema"

_FLOATS = (FD.TYPE_DOUBLE, FD.TYPE_FLOAT)
_INTS = (FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_UINT32, FD.TYPE_UINT64)

_BLOCK = re.compile(r"^\s*(message|enum|oneof)\s+(\w+)\s*\{")
_FIELD = re.compile(r"^\s*(?:optional\s+|repeated\s+)?[\w.]+\s+(\w+)\s*=\s*\d+[^;]*;\s*(?://\s*(.*))?$")
_VALUE = re.compile(r"^\s*(\w+)\s*=\s*\d+\s*;\s*(?://\s*(.*))?$")


@functools.lru_cache(maxsize=1)
def proto_comments() -> dict[str, str]:
    """`{"Body": "...", "Body.mass": "...", "JointKind.HINGE": "..."}` from scene.proto's comments.

    A small line scanner (the generated module carries no comments): trailing `//` comments of
    fields and enum values, and the `//` lines just above a message or enum.
    """
    path = pathlib.Path(__file__).with_name("scene.proto")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    out: dict[str, str] = {}
    stack: list[tuple[str, str]] = []   # (kind, name) of open blocks
    leading: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("//"):
            leading.append(stripped[2:].strip())
            continue
        block = _BLOCK.match(line)
        if block:
            kind, name = block.groups()
            if kind != "oneof" and leading:
                out[name] = " ".join(leading)
            stack.append((kind, name))
        elif stripped.startswith("}") and stack:
            stack.pop()
        elif stack:
            owner = next((n for k, n in reversed(stack) if k != "oneof"), None)
            match = _FIELD.match(line) or _VALUE.match(line)
            if owner and match and match.group(2):
                out[f"{owner}.{match.group(1)}"] = match.group(2).strip()
        leading = []
    return out


def _describe(field) -> str:
    comment = proto_comments().get(f"{field.containing_type.name}.{field.name}", "")
    spec = units.field_unit_spec(field)
    if spec and field.type in _FLOATS + _INTS:
        unit = "dimensionless" if spec == "1" else "any unit" if spec == "any" else spec
        comment = f"{comment} [unit: {unit}]" if comment else f"[unit: {unit}]"
    return comment


def _scalar(field) -> dict:
    if field.type in _FLOATS:
        return {"$ref": "#/$defs/number"}
    if field.type in _INTS:
        return {"$ref": "#/$defs/integer"}
    if field.type == FD.TYPE_BOOL:
        return {"type": "boolean"}
    if field.type == FD.TYPE_ENUM:
        return {"type": "string", "enum": [v.name.lower() for v in field.enum_type.values]}
    return {"type": "string"}


def _field(field) -> dict:
    if field.type == FD.TYPE_MESSAGE:
        ref = {"$ref": f"#/$defs/{field.message_type.name}"}
        schema = {"anyOf": [{"type": "array", "items": ref}, {"type": "null"}]} if field.is_repeated \
            else {"anyOf": [ref, {"type": "null"}]}
    else:
        item = _scalar(field)
        schema = {"anyOf": [item, {"type": "array", "items": item}]} if field.is_repeated else item
    description = _describe(field)
    if description:
        schema["description"] = description
    return schema


def _message(desc) -> dict:
    properties = {f.name: _field(f) for f in desc.fields}
    schema = {"type": "object", "title": desc.name, "properties": properties,
              "additionalProperties": False}
    if desc.name in proto_comments():
        schema["description"] = proto_comments()[desc.name]
    exclusive = []
    for oneof in desc.oneofs:
        members = [f.name for f in oneof.fields if real_oneof(f) is not None]
        if len(members) > 1:
            exclusive.append({"not": {"anyOf": [{"required": list(pair)}
                                                for pair in itertools.combinations(members, 2)]}})
    if exclusive:
        schema["allOf"] = exclusive
    return schema


def _parameters() -> dict:
    value = {"$ref": "#/$defs/number"}
    long_form = {"type": "object", "additionalProperties": False, "required": ["value"],
                 "properties": {"value": value, "doc": {"type": "string"}}}
    item = {"type": "object", "additionalProperties": False, "required": ["name"],
            "properties": {"name": {"type": "string"}, "value": value, "doc": {"type": "string"}}}
    return {
        "description": "named constants usable in any numeric field and in later parameters, in "
                       "order: `name: value-or-expression` (or `name: {value, doc}`), or a list of "
                       "{name, value, doc}",
        "anyOf": [
            {"type": "object", "additionalProperties": {"anyOf": [value, long_form]}},
            {"type": "array", "items": item},
            {"type": "null"},
        ],
    }


def _messages(root) -> list:
    """Every message type reachable from `root`, in first-seen order."""
    seen, order, todo = set(), [], [root]
    while todo:
        desc = todo.pop(0)
        if desc.full_name in seen:
            continue
        seen.add(desc.full_name)
        order.append(desc)
        todo += [f.message_type for f in desc.fields if f.type == FD.TYPE_MESSAGE]
    return order


def json_schema() -> dict:
    """The schema as a JSON-ready dict."""
    defs = {desc.name: _message(desc) for desc in _messages(scene_pb2.Scene.DESCRIPTOR)}
    defs["Scene"]["properties"]["parameters"] = _parameters()
    del defs["Parameter"]
    expression = {"type": "string", "description": "an expression: numbers with units (`5 cm`, "
                  "`30 deg`, `9.81 m/s^2`), parameter names, + - * / ^, parentheses, pi and "
                  "functions (radians, degrees, sqrt, sin, cos, tan, asin, acos, atan2, abs, min, max)"}
    defs["number"] = {"anyOf": [{"type": "number"}, expression]}
    defs["integer"] = {"anyOf": [{"type": "integer"}, expression]}
    return {
        "$schema": DRAFT,
        "$id": "https://scenec.invalid/scene.schema.json",
        "title": "scenec scene",
        "description": "A physics scene for scenec (YAML). Generated from schema/scene.proto by "
                       "`scenec schema`; units are SI unless a value carries its own.",
        "$ref": "#/$defs/Scene",
        "$defs": defs,
    }
