"""The importers on hostile and randomly damaged inputs: diagnostics, never an exception.

Seeded mutations of valid models (truncation, deleted or doubled elements, attribute values
replaced by junk, random bytes) are imported; each import must return normally. A bounded number
of examples keeps this fast.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings, strategies as st

from scenec.compiler.importers import exit_code, import_file
from scenec.compiler.importers.xmltree import MAX_DEPTH

from test_import_mjcf import FRAMES, HUMANOID
from test_import_urdf import ARM

BRAX = """bodies { name: "a" colliders { capsule { radius: 0.1 length: 1 } } mass: 1 inertia { x: 1 y: 1 z: 1 } }
bodies { name: "b" colliders { box { halfsize { x: 0.1 y: 0.1 z: 0.1 } } } mass: 2 }
bodies { name: "g" colliders { plane {} } frozen { all: true } }
joints { name: "j" parent: "a" child: "b" parent_offset { z: -0.5 } rotation { z: 90 }
         angle_limit { min: -30 max: 30 } angle_limit { min: 0 max: 10 } }
actuators { name: "m" joint: "j" strength: 10 torque {} }
collide_include { first: "b" second: "g" }
defaults { angles { name: "j" angle { x: 5 } } }
dt: 0.02 substeps: 4 gravity { z: -9.8 }
"""
JUNK = ["", "nan", "inf", "-1", "1e400", "abc", "0 0", "1 2 3 4 5 6 7", "\u00e9\u00e8", "true",
        "-0", "99999999999999999999", "&amp;", "1,2,3", "1e-400"]


def mutate_xml(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    values = list(re.finditer(r'="[^"]*"', text))
    attrs = list(re.finditer(r' [\w:]+="[^"]*"', text))
    choice = rng.randrange(5)
    if choice == 1 and values:  # replace an attribute value by junk
        m = rng.choice(values)
        return text[:m.start()] + '="' + rng.choice(JUNK) + '"' + text[m.end():]
    if choice == 2 and lines:  # delete an element (a line)
        del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if choice == 3 and lines:  # double a line
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i + 1] + lines[i:])
    if choice == 4 and attrs:  # delete an attribute
        m = rng.choice(attrs)
        return text[:m.start()] + text[m.end():]
    return text[:rng.randrange(len(text) + 1)]  # truncate


def mutate_pbtxt(text: str, rng: random.Random) -> str:
    tokens = re.findall(r'"[^"]*"|[{}:]|[^\s{}:]+', text)
    if not tokens:
        return text + rng.choice(JUNK)
    choice = rng.randrange(4)
    i = rng.randrange(len(tokens))
    if choice == 0:
        tokens = tokens[:i]
    elif choice == 1:
        tokens[i] = rng.choice(JUNK + ['"x"', "{", "}", "name", "angle_limit"])
    elif choice == 2:
        del tokens[i]
    else:
        tokens.insert(i, tokens[rng.randrange(len(tokens))])
    return " ".join(tokens)


CASES = [("m.xml", FRAMES, mutate_xml), ("h.xml", HUMANOID, mutate_xml),
         ("r.urdf", ARM, mutate_xml), ("c.pbtxt", BRAX, mutate_pbtxt)]


@pytest.mark.parametrize("name,text,mutate", CASES, ids=[c[0] for c in CASES])
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), rounds=st.integers(1, 4))
def test_mutated_models_never_raise(tmp_path_factory, name, text, mutate, seed, rounds):
    rng = random.Random(seed)
    for _ in range(rounds):
        text = mutate(text, rng) or " "
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_text(text)
    result = import_file(path)
    assert exit_code(result.diagnostics) in (0, 1, 2)
    for d in result.diagnostics:
        assert d.span.file == str(path) or d.span.line == 0 or d.code == "E712"


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([".xml", ".urdf", ".pbtxt", ".model"]))
def test_random_bytes(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("bytes") / f"x{suffix}"
    path.write_bytes(data)
    assert exit_code(import_file(path).diagnostics) in (0, 1, 2)


def test_deep_nesting_and_entities_are_refused(tmp_path):
    deep = tmp_path / "deep.xml"
    deep.write_text("<mujoco><worldbody>" + "<body>" * (MAX_DEPTH + 5) + "</body>" * (MAX_DEPTH + 5)
                    + "</worldbody></mujoco>")
    assert [d.code for d in import_file(deep).diagnostics] == ["E700"]
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaaaaaaaa">'
                    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><mujoco model="&b;"/>')
    assert [d.code for d in import_file(bomb).diagnostics] == ["E700"]
    nested = tmp_path / "deep.pbtxt"
    nested.write_text("bodies { colliders { " * 40 + "} }" * 40)
    assert exit_code(import_file(nested).diagnostics) in (0, 2)
