"""scenec.schema.load: sources, the YAML mapping onto the proto, folded values, spans.

Values are compared with hand-computed SI numbers; spans with positions counted in the test text.
"""

from __future__ import annotations

import math
import pathlib

import pytest

from scenec.schema import Span, load, scene_pb2

# Folding does a couple of float operations per value; anything beyond a few ulps is a bug.
FOLD_RTOL = 1e-12


def codes(loaded):
    return [d.code for d in loaded.diagnostics]


def at(loaded, code):
    """(line, col) of the first diagnostic with `code`."""
    for d in loaded.diagnostics:
        if d.code == code:
            return d.span.line, d.span.col
    raise AssertionError(f"no {code} in {[(d.code, str(d.span), d.message) for d in loaded.diagnostics]}")


def test_shipped_scenes_load_clean(scene_paths):
    assert scene_paths, "no scenes found"
    for path in scene_paths:
        loaded = load(path)
        assert loaded.diagnostics == (), (path, loaded.diagnostics)
        assert loaded.scene.name
        assert loaded.path == path
        assert loaded.base_dir == path.parent.resolve()


def test_sources_path_text_message(tmp_path):
    text = "name: x\nbodies:\n  - name: a\n"
    (tmp_path / "s.yaml").write_text(text)
    from_path = load(str(tmp_path / "s.yaml"))
    from_pathlike = load(tmp_path / "s.yaml")
    from_text = load(text)
    assert from_path.scene == from_pathlike.scene == from_text.scene
    assert from_text.path is None and from_text.base_dir == pathlib.Path.cwd()
    assert from_text.sources == {"<string>": text}
    message = scene_pb2.Scene(name="m")
    message.bodies.add(name="a")
    loaded = load(message)
    assert loaded.scene == message and loaded.scene is not message
    assert loaded.sources == {} and loaded.path is None


def test_name_defaults_to_stem(tmp_path):
    (tmp_path / "my_scene.yaml").write_text("bodies: []\n")
    assert load(tmp_path / "my_scene.yaml").scene.name == "my_scene"
    assert load("bodies: []\n").scene.name == ""


def test_unit_literals_fold_to_si():
    loaded = load("""
parameters:
  a: 5 cm
  b: 2 mm
  c: 10 g
  d: 30 deg
  e: 1000 kg/m^3
  f: 9.81 m/s^2
  g_: 1 N*m
  h: 20 ms
  i: 0.5 rad
  j: 1 km
  k: "2 * a + b"
bodies:
  - {name: x, pos: [a, b, k], mass: c, euler: [d, i, 0]}
""")
    values = {p.name: (p.value, p.unit) for p in loaded.scene.parameters}
    expected = {"a": (0.05, "m"), "b": (0.002, "m"), "c": (0.01, "kg"), "d": (math.pi / 6, "rad"),
                "e": (1000.0, "kg/m^3"), "f": (9.81, "m/s^2"), "g_": (1.0, "N*m"), "h": (0.02, "s"),
                "i": (0.5, "rad"), "j": (1000.0, "m"), "k": (0.102, "m")}
    for name, (value, unit) in expected.items():
        assert values[name][0] == pytest.approx(value, rel=FOLD_RTOL), name
        assert values[name][1] == unit, name
    body = loaded.scene.bodies[0]
    assert list(body.pos) == pytest.approx([0.05, 0.002, 0.102], rel=FOLD_RTOL)
    assert body.mass == pytest.approx(0.01, rel=FOLD_RTOL)
    assert list(body.euler) == pytest.approx([math.pi / 6, 0.5, 0.0], rel=FOLD_RTOL)
    assert [d.code for d in loaded.diagnostics if d.is_error] == []


def test_expression_text_kept_and_bare_numbers_adapt():
    loaded = load("parameters:\n  n: 4\n  l: 'n * 0.1 m'\nbodies:\n  - {name: x, pos: [0, 0, 'l + 1']}\n")
    n, l = loaded.scene.parameters
    assert (n.value, n.unit, n.expression) == (4.0, "", "")
    assert (l.value, l.unit, l.expression) == (pytest.approx(0.4), "m", "n * 0.1 m")
    assert loaded.scene.bodies[0].pos[2] == pytest.approx(1.4)


def test_enum_case_insensitive_and_oneof_key():
    loaded = load("""
options: {precision: FLOAT64, friction_cone: Pyramidal}
bodies:
  - name: b
    colliders: [{plane: {}}, {sphere: {radius: 1}}, {plane: }]
joints:
  - {name: j, kind: Slide, child: b}
""")
    assert codes(loaded) == []
    scene = loaded.scene
    assert scene.options.precision == scene_pb2.FLOAT64
    assert scene.options.friction_cone == scene_pb2.PYRAMIDAL
    assert [c.WhichOneof("shape") for c in scene.bodies[0].colliders] == ["plane", "sphere", "plane"]
    assert scene.joints[0].kind == scene_pb2.SLIDE


def test_scalar_becomes_list_of_one():
    loaded = load("bodies: [{name: b}]\njoints: [{name: j, child: b}]\ninit:\n  - {joint: j, q: 0.3}\n")
    assert list(loaded.scene.init[0].q) == [0.3]


def test_parameters_list_form_with_doc():
    loaded = load("""
parameters:
  - {name: leg, value: 0.4 m, doc: thigh length}
  - name: hip
    value: "leg / 2"
bodies: [{name: b, pos: [0, 0, hip]}]
""")
    leg, hip = loaded.scene.parameters
    assert (leg.name, leg.value, leg.doc) == ("leg", pytest.approx(0.4), "thigh length")
    assert hip.value == pytest.approx(0.2) and hip.expression == "leg / 2"
    assert codes(loaded) == []


def test_parameters_mapping_long_form():
    loaded = load("parameters:\n  leg: {value: 0.4 m, doc: thigh}\nbodies: [{name: b, pos: [0, 0, leg]}]\n")
    assert loaded.scene.parameters[0].doc == "thigh"
    assert loaded.scene.parameters[0].value == pytest.approx(0.4)


def test_joint_kind_decides_rad_or_m():
    ok = load("""
bodies: [{name: b}]
joints:
  - {name: h, kind: hinge, child: b, range: [-30 deg, 30 deg], damping: 1 N*m*s/rad}
  - {name: s, kind: slide, child: b, range: [-5 cm, 5 cm], damping: 2 N*s/m}
actuators:
  - {name: a, joint: s, kind: position, kp: 100 N/m, force_range: [-1 N, 1 N]}
init:
  - {joint: h, q: 10 deg}
  - {joint: s, q: 1 cm}
""")
    assert [d.code for d in ok.diagnostics if d.is_error] == []
    assert list(ok.scene.joints[1].range) == pytest.approx([-0.05, 0.05])
    bad = load("""
bodies: [{name: b}]
joints:
  - {name: s, kind: slide, child: b, range: [-30 deg, 0.1]}
actuators:
  - {name: a, joint: s, kind: position, kp: 3 N*m/rad}
init:
  - {joint: s, q: 10 deg}
""")
    assert codes(bad) == ["E108", "E108", "E108"]


def test_free_joint_values_have_per_coordinate_units():
    loaded = load("""
bodies: [{name: b}]
joints: [{name: f, kind: free, child: b}]
init:
  - {joint: f, q: [1 cm, 0, 2 m, 1, 0, 0, 0], qd: [1 m/s, 0, 0, 0, 0, 90 deg/s]}
""")
    assert codes(loaded) == []
    assert loaded.scene.init[0].qd[5] == pytest.approx(math.pi / 2)
    bad = load("""
bodies: [{name: b}]
joints: [{name: f, kind: free, child: b}]
init:
  - {joint: f, q: [0, 0, 0, 1 m, 0, 0, 0]}
""")
    assert codes(bad) == ["E108"]


def test_expression_spans_point_inside_scalars():
    # plain, single-quoted, double-quoted (with an escape before the token), flow and block styles
    text = (
        "bodies:\n"
        "  - name: a\n"
        "    pos: [0, 0, 2 * lg]\n"              # line 3: plain scalar in a flow list
        "    mass: '2 * lg'\n"                   # line 4: single-quoted
        "    com: [0, 0, \"\\x31 * lg\"]\n"      # line 5: double-quoted with an escape (\x31 = '1')
        "    inertia:\n"
        "      - |\n"
        "        1 +\n"
        "        lg\n"                           # line 9: block literal, token on its 2nd line
    )
    loaded = load(text)
    spans = [(d.code, d.span.line, d.span.col, d.span.end_col) for d in loaded.diagnostics]
    assert ("E106", 3, 21, 22) in spans
    assert ("E106", 4, 16, 17) in spans
    assert ("E106", 5, 25, 26) in spans
    assert ("E106", 9, 9, 10) in spans


def test_unicode_names_and_columns():
    text = "bodies:\n  - name: 腕\n    pos: [0, 0, \"ü * 2\"]\n"
    loaded = load(text)
    assert at(loaded, "E106") == (3, 18)
    assert loaded.scene.bodies[0].name == "腕"


def test_unknown_keys_did_you_mean_and_oneof_hint():
    loaded = load("bodies:\n  - name: a\n    colliders:\n      - radius: 1\n        sphere: {radious: 2}\n"
                  "    mas: 3\n")
    messages = {d.message: d.hint for d in loaded.diagnostics}
    assert messages["unknown field 'radious' in Sphere"] == "did you mean 'radius'?"
    assert "sphere: {radius" in messages["unknown field 'radius' in Collider"]
    assert messages["unknown field 'mas' in Body"] == "did you mean 'mass'?"


def test_wrong_types_say_what_was_expected():
    loaded = load("""
name: 3
options: {timestep: [1, 2], substeps: true, precision: 2}
bodies:
  - name: a
    pos: {x: 1}
    colliders: {sphere: {radius: 1}}
contacts: {filter_parent: 'yes'}
""")
    messages = [d.message for d in loaded.diagnostics if d.code == "E102"]
    assert "expected a string, got a number (3)" in messages
    assert any(m.startswith("expected a number or an expression, got a list") for m in messages)
    assert "expected an integer, got a boolean (true)" in messages
    assert any(m.startswith("expected a name, one of: float32, float64") for m in messages)
    assert "expected a list of Collider mappings, got a mapping" in messages
    assert "expected true or false, got a string ('yes')" in messages
    assert len(messages) == 7  # pos: a mapping where numbers are expected


def test_failed_values_do_not_cascade():
    # the unreadable radius is reported once, not again as "radius must be > 0"
    loaded = load("bodies:\n  - name: a\n    colliders:\n      - sphere: {radius: 2 * x}\n")
    from scenec.compiler.check import check
    result = check("bodies:\n  - name: a\n    colliders:\n      - sphere: {radius: 2 * x}\n")
    assert codes(loaded) == ["E106"]
    assert [d.code for d in result.diagnostics] == ["E106"]


def test_message_source_map_names_the_path():
    message = scene_pb2.Scene()
    message.bodies.add(name="a").colliders.add().sphere.radius = 1
    loaded = load(message)
    span = loaded.source_map.span(("bodies", 0, "colliders", 0, "sphere", "radius"))
    assert span == Span("<scene>.bodies[0].colliders[0].sphere.radius", 0, 0)


def test_message_parameter_expressions_are_folded():
    message = scene_pb2.Scene()
    message.parameters.add(name="leg", value=0.4, unit="m")
    message.parameters.add(name="hip", expression="leg / 2 + 1 cm")
    message.parameters.add(name="bad", expression="hip + 1 kg")
    loaded = load(message)
    assert loaded.scene.parameters[1].value == pytest.approx(0.21)
    assert loaded.scene.parameters[1].unit == "m"
    assert [d.code for d in loaded.diagnostics] == ["E108"]
    assert loaded.diagnostics[0].span.file == "<scene>.parameters[2].expression"
    assert message.parameters[1].value == 0  # the caller's message is untouched


def test_source_map_nearest_ancestor():
    loaded = load("bodies:\n  - name: a\n    pos: [0, 0, 1]\n")
    assert loaded.source_map.span(("bodies", 0, "pos", 2)) == Span("<string>", 3, 17, 3, 17)
    assert loaded.source_map.span(("bodies", 0, "mass")).line == 2  # the body's mapping
    assert loaded.source_map.span(("joints", 4)).line == 1           # the document


def test_pbtxt_loads_with_spans(tmp_path):
    path = tmp_path / "s.pbtxt"
    path.write_text('name: "p"\nbodies {\n  name: "b"\n  pos: [0, 0, 1]\n  colliders { sphere { radius: 0.5 } }\n}\n'
                    'joints { name: "j" kind: SLIDE child: "b" axis: 0 axis: 0 axis: 1 }\n')
    loaded = load(path)
    assert loaded.diagnostics == ()
    assert loaded.scene.joints[0].kind == scene_pb2.SLIDE
    smap = loaded.source_map
    assert (smap.span(("bodies", 0, "pos", 2)).line, smap.span(("bodies", 0, "pos", 2)).col) == (4, 15)
    assert (smap.span(("bodies", 0, "colliders", 0, "sphere", "radius")).line,
            smap.span(("bodies", 0, "colliders", 0, "sphere", "radius")).col) == (5, 32)
    assert (smap.span(("joints", 0, "axis", 2)).line, smap.span(("joints", 0, "axis", 2)).col) == (7, 65)
    assert smap.span(("joints", 0, "child")).col == 40  # inside the quotes


@pytest.mark.parametrize("text,code,pos", [
    ('bodies {\n  name: "b"\n  nmae: "c"\n}\n', "E101", (3, 3)),
    ('joints { kind: hinge }\n', "E104", (1, 16)),
    ('bodies { colliders { sphere {} box {} } }\n', "E103", (1, 32)),
    ('name: "a"\nname: "b"\n', "E012", (2, 7)),
    ('bodies { name: "a" \n', "E005", (1, 16)),
])
def test_pbtxt_errors_are_located(tmp_path, text, code, pos):
    path = tmp_path / "s.pbtxt"
    path.write_text(text)
    loaded = load(path)
    assert [d.code for d in loaded.diagnostics] == [code]
    assert (loaded.diagnostics[0].span.line, loaded.diagnostics[0].span.col) == pos


def test_integers_and_unsigned_ranges():
    loaded = load("options: {substeps: '2 * 3', solver_iterations: 0x10}\n"
                  "bodies: [{name: b, colliders: [{sphere: {radius: 1}, group: 0xFFFFFFFF, mask: -1}]}]\n")
    assert loaded.scene.options.substeps == 6
    assert loaded.scene.options.solver_iterations == 16
    assert loaded.scene.bodies[0].colliders[0].group == 0xFFFFFFFF
    assert codes(loaded) == ["E110"]


def test_yaml_numbers_too_large_for_a_double_become_infinite():
    loaded = load("bodies: [{name: b, mass: " + "9" * 400 + "}]\n")
    assert math.isinf(loaded.scene.bodies[0].mass)


def test_parameter_errors_do_not_repeat_downstream():
    loaded = load("parameters:\n  a: 2 * zz\n  b: a * 2\nbodies: [{name: x, mass: b}]\n")
    assert codes(loaded) == ["E106"]


def test_pure_python_and_libyaml_parsers_agree(catalogue_dir, monkeypatch):
    """The reader uses libyaml when PyYAML has it; both must give the same trees and positions."""
    import yaml

    from scenec.schema import yaml_tree
    texts = [p.read_bytes().decode("utf-8", "replace") for p in sorted(catalogue_dir.glob("*.yaml"))]
    texts.append("bodies:\n  - name: 腕\n    pos: [0, 0, \"ü * 2\"]\n    mass: |\n      2 *\n      q\n")
    results = {}
    for loader in {yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)}:
        monkeypatch.setattr(yaml_tree, "_LOADER", loader)
        results[loader] = [[(d.code, d.span) for d in load(text).diagnostics] for text in texts]
    first, *others = results.values()
    for other in others:
        assert other == first
