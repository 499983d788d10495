"""`scenec schema`: a JSON Schema (draft 2020-12) that accepts the shipped scenes and catches typos."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from scenec.schema.json_schema import json_schema

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def validator():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(validator, document):
    return [e.message for e in validator.iter_errors(document)]


def test_every_shipped_scene_validates(validator, scene_paths):
    for path in scene_paths:
        assert errors(validator, yaml.safe_load(path.read_text())) == [], path


def test_catches_typos_types_and_two_shapes(validator):
    assert errors(validator, {"bodies": [{"name": "a", "mas": 1}]})
    assert errors(validator, {"options": {"timestep": [1]}})
    assert errors(validator, {"joints": [{"name": "j", "kind": "hing"}]})
    assert errors(validator, {"bodies": [{"colliders": [{"sphere": {"radius": 1}, "box": {}}]}]})
    assert not errors(validator, {"bodies": [{"colliders": [{"sphere": {"radius": "5 cm"}}]}]})
    assert not errors(validator, {"init": [{"joint": "j", "q": 0.3}]})          # scalar for a list
    assert not errors(validator, {"parameters": {"leg": "0.4 m", "n": 3, "h": {"value": 1, "doc": "x"}}})
    assert not errors(validator, {"parameters": [{"name": "leg", "value": "0.4 m"}]})


def test_units_and_comments_in_descriptions():
    defs = json_schema()["$defs"]
    assert "[unit: kg]" in defs["Body"]["properties"]["mass"]["description"]
    assert "[unit: rad|m]" in defs["Joint"]["properties"]["range"]["description"]
    assert defs["Joint"]["properties"]["kind"]["enum"] == ["hinge", "slide", "ball", "free", "fixed"]
    assert "default" in defs["Options"]["properties"]["timestep"]["description"]


def test_cli_prints_the_schema(tmp_path):
    out = subprocess.run([sys.executable, "-m", "scenec.compiler.cli", "schema"],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == json_schema()
    target = tmp_path / "scene.schema.json"
    subprocess.run([sys.executable, "-m", "scenec.compiler.cli", "schema", "-o", str(target)], check=True)
    assert json.loads(target.read_text()) == json_schema()


def test_documented_example_validates(validator, repo_root):
    import re
    doc = (repo_root / "docs" / "format.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(.*?)```", doc, flags=re.S).group(1)
    assert errors(validator, yaml.safe_load(example)) == []
