"""docs/format.md stays true: its example scene checks clean, every message and field of
scene.proto has a row in the field reference, and every unit literal it names exists."""

from __future__ import annotations

import re

from google.protobuf.descriptor import FieldDescriptor as FD

from conftest import ROOT
from scenec.compiler.check import check
from scenec.schema import scene_pb2, units

DOC = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")


def sections() -> dict[str, str]:
    parts = re.split(r"^### (\w+)\s*$", DOC, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def messages(desc, seen=None):
    seen = {} if seen is None else seen
    if desc.name not in seen:
        seen[desc.name] = desc
        for field in desc.fields:
            if field.type == FD.TYPE_MESSAGE:
                messages(field.message_type, seen)
    return seen


def test_example_scene_checks_clean():
    example = re.search(r"```yaml\n(.*?)```", DOC, flags=re.S).group(1)
    result = check(example)
    assert result.diagnostics == (), result.diagnostics
    scene = result.loaded.scene
    assert scene.options.timestep == 0.001
    assert scene.init[0].q[0] > 1.57


def test_every_field_has_a_row():
    found = sections()
    for name, desc in messages(scene_pb2.Scene.DESCRIPTOR).items():
        assert name in found, f"docs/format.md has no section '### {name}'"
        for field in desc.fields:
            assert f"| `{field.name}` |" in found[name], f"docs/format.md: {name}.{field.name} missing"


def test_named_units_exist():
    listed = re.search(r"A \*\*number with a unit\*\* is converted: (.*?)\. Units", DOC, flags=re.S).group(1)
    for literal in re.findall(r"`([^`]+)`", listed):
        number, unit = literal.split(" ", 1)
        units.parse_unit(unit)
