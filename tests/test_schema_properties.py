"""Properties: random mutations of the shipped scenes give diagnostics or success, never an exception.

Mutations: delete keys, change types, swap numbers for strings / NaN / huge values, duplicate named
entries, break references, insert junk keys, and corrupt the raw YAML or protobuf text. Every
diagnostic must use a catalogued code and point at a line of the file (or at the file itself).
The number of examples is bounded so the suite stays fast.
"""

from __future__ import annotations

import copy
import os

import yaml
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import SCENE_PATHS
from scenec.compiler.check import check
from scenec.schema import CODES, load, render_text

# SCENEC_PROPERTY_EXAMPLES raises the count for a longer local search; the default keeps CI fast.
SETTINGS = settings(max_examples=int(os.environ.get("SCENEC_PROPERTY_EXAMPLES", 80)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
DOCUMENTS = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in SCENE_PATHS]

JUNK_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-10**30, 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "2 * lg", "30 deg", "1 m + 1 kg", "((", "radians(", "nan", "1e999",
                     "world", "hinge", "-1", "1/0", "sqrt(-1)", "🦄", "a/0"]),
    st.lists(st.integers(-3, 3), max_size=5),
    st.dictionaries(st.sampled_from(["name", "x", "radius", "pos"]), st.integers(), max_size=2),
)


def paths(node, prefix=()):
    """Every position in a plain YAML structure: (path to the container, key or index)."""
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append(prefix + (key,))
            out += paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.append(prefix + (i,))
            out += paths(value, prefix + (i,))
    return out


def parent_of(document, path):
    node = document
    for step in path[:-1]:
        node = node[step]
    return node


def mutate(data, document):
    document = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        where = paths(document)
        if not where:
            break
        path = data.draw(st.sampled_from(where), label="path")
        parent, last = parent_of(document, path), path[-1]
        op = data.draw(st.sampled_from(["delete", "replace", "duplicate", "rename", "junk_key",
                                        "stringify"]), label="op")
        if op == "delete":
            del parent[last]
        elif op == "replace":
            parent[last] = data.draw(JUNK_VALUES, label="value")
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        elif op == "rename" and isinstance(parent[last], str):
            parent[last] = parent[last][::-1] + "x"
        elif op == "junk_key" and isinstance(parent[last], dict):
            parent[last][data.draw(st.sampled_from(["radious", "nmae", "q", "bodies", "~"]))] = 1
        elif op == "stringify" and isinstance(parent[last], (int, float)) \
                and not isinstance(parent[last], bool):
            parent[last] = data.draw(st.sampled_from([f"{parent[last]} m", f"{parent[last]} deg",
                                                      f"{parent[last]} *", "nan", "1e12"]))
    return document


def assert_well_formed(result, text):
    lines = text.splitlines()
    for d in result.diagnostics:
        assert d.code in CODES, d
        assert 0 <= d.span.line <= max(len(lines), 1) + 1, d
        if d.span.line == 0:
            assert d.span.col == 0
    render_text(result.diagnostics, result.sources)


@SETTINGS
@given(data=st.data())
def test_mutated_yaml_never_raises(data):
    document = DOCUMENTS[data.draw(st.integers(0, len(DOCUMENTS) - 1), label="scene")]
    mutated = mutate(data, document)
    text = yaml.safe_dump(mutated, allow_unicode=True, sort_keys=False)
    result = check(text)
    assert_well_formed(result, text)


@SETTINGS
@given(data=st.data())
def test_corrupted_yaml_text_never_raises(data):
    text = SCENE_PATHS[data.draw(st.integers(0, len(SCENE_PATHS) - 1), label="scene")].read_text()
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        at = data.draw(st.integers(0, len(text)), label="at")
        piece = data.draw(st.sampled_from(["[", "]", "{", "}", ":", "- ", "\t", "&a ", "*a", "!!str ",
                                           "'", '"', "\n  ", "#", "\x00", "é", "---\n"]), label="piece")
        cut = data.draw(st.integers(0, 3), label="cut")
        text = text[:at] + piece + text[at + cut:]
    result = check(text)
    assert_well_formed(result, text)


@SETTINGS
@given(data=st.data())
def test_corrupted_pbtxt_never_raises(data, tmp_path_factory):
    scene = load(SCENE_PATHS[data.draw(st.integers(0, len(SCENE_PATHS) - 1), label="scene")]).scene
    text = text_format.MessageToString(scene)
    for _ in range(data.draw(st.integers(0, 3), label="edits")):
        at = data.draw(st.integers(0, len(text)), label="at")
        piece = data.draw(st.sampled_from(["{", "}", ":", "[", "]", '"', "nmae: 1 ", "radius: -1 ",
                                           "kind: BALL ", "bodies { } ", "1e400", "<", "#"]))
        text = text[:at] + piece + text[at:]
    path = tmp_path_factory.mktemp("pbtxt") / "scene.pbtxt"
    path.write_text(text, encoding="utf-8")
    result = check(path)
    assert_well_formed(result, text)


def test_there_is_something_to_mutate():
    assert DOCUMENTS and all(len(paths(d)) > 10 for d in DOCUMENTS)
