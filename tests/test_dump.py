"""schema/dump.py: the YAML writer.

Round trips through two independent readers: the project's loader (`scenec.schema.load`) and a
small descriptor-driven reader written here on top of `yaml.safe_load` (so a writer bug cannot hide
behind a matching loader bug). Plus: exact numbers, quoting, determinism, comment placement.
"""

from __future__ import annotations

import math
import pathlib

import pytest
import yaml
from google.protobuf import descriptor as _d
from hypothesis import given, settings, strategies as st

from scenec.schema import load, scene_pb2
from scenec.schema.dump import dump_yaml, format_number, format_string

REPO = pathlib.Path(__file__).resolve().parents[1]
SCENES = sorted((REPO / "scenes").glob("*.yaml"))


def from_plain(data, msg):
    """Fill `msg` from plain YAML data by the descriptor: enum words, oneof keys, lists."""
    for key, value in data.items():
        fd = msg.DESCRIPTOR.fields_by_name[key]
        repeated = fd.is_repeated
        if fd.type == _d.FieldDescriptor.TYPE_MESSAGE:
            if repeated:
                for item in value:
                    from_plain(item, getattr(msg, key).add())
            else:
                getattr(msg, key).SetInParent()
                from_plain(value, getattr(msg, key))
        elif fd.type == _d.FieldDescriptor.TYPE_ENUM:
            setattr(msg, key, fd.enum_type.values_by_name[value.upper()].number)
        elif repeated:
            getattr(msg, key).extend(value)
        else:
            setattr(msg, key, value)
    return msg


def reread(text: str) -> scene_pb2.Scene:
    data = yaml.safe_load(text)
    params = data.pop("parameters", None)
    scene = from_plain(data, scene_pb2.Scene())
    if params:
        for name, value in params.items():
            scene.parameters.add(name=name, value=value)
    return scene


def tricky_scene() -> scene_pb2.Scene:
    s = scene_pb2.Scene(name="tricky: yes")
    s.options.timestep = 0.1 + 0.2            # 0.30000000000000004, kept exact
    s.options.gravity.extend([0.0, -0.0, -9.81])
    s.options.friction = 1.0                  # set to its default: still written (presence)
    s.options.precision = scene_pb2.FLOAT64
    s.options.friction_cone = scene_pb2.PYRAMIDAL
    s.options.density = 1e20
    ground = s.bodies.add(name="$ Ground")
    ground.colliders.add().plane.SetInParent()  # an empty oneof message: `plane: {}`
    b = s.bodies.add(name="Körper 1", pos=[1e-5, 5e-324, 123456789.125], mass=2.5)
    b.inertia.extend([1 / 3, 2 / 3, 1.0, 0.0, -1e-300, 0.1])
    c = b.colliders.add(name="yes", density=1000.0)
    c.capsule.radius, c.capsule.half_length = 0.04, 0.1
    c.group, c.mask = 4294967295, 0
    mesh = s.meshes.add(name="tetra")
    mesh.vertices.extend([float(i) / 7 for i in range(60)])
    mesh.faces.extend(range(60))
    s.bodies.add(name="null").colliders.add().mesh.mesh = "tetra"
    s.joints.add(name="hinge", kind=scene_pb2.HINGE, child="Körper 1", axis=[0, 1, 0],
                 range=[-math.pi / 2, math.pi / 2], doc='a "quoted" doc\nover two lines')
    s.joints.add(name="weld", kind=scene_pb2.FIXED, parent="Körper 1", child="null")
    s.actuators.add(name="m", joint="hinge", gear=1.0, ctrl_range=[-1, 1])
    s.contacts.filter_parent = False
    s.contacts.exclude.add(first="leg_*", second="[*]")
    kf = s.keyframes.add(name="k", time=0.5)
    kf.joints.add(joint="hinge", q=[0.25], qd=[-1.5])
    s.task.observations.add(name="h", expr="body_pos('Körper 1')[2] > 0.5")
    s.task.episode_length = 1000
    hf = s.heightfields.add(name="hills", nrow=3, ncol=4, size_x=1.5, size_y=2)
    hf.elevation.extend([0.1 * i for i in range(12)])
    return s


def imported_scenes():
    from scenec.compiler.importers import import_file

    out = []
    data = pathlib.Path("/work/shared/data/brax-v1")
    for p in sorted(data.glob("*.pbtxt")) if data.is_dir() else []:
        out.append(import_file(p, out_dir=p.parent))
    return out


def test_tricky_scene_round_trips_through_both_readers():
    s = tricky_scene()
    text = dump_yaml(s)
    assert reread(text) == s
    loaded = load(text)
    assert not [d for d in loaded.diagnostics if d.is_error], loaded.diagnostics
    assert loaded.scene == s


@pytest.mark.parametrize("path", SCENES, ids=[p.stem for p in SCENES])
def test_shipped_scenes_round_trip(path):
    scene = load(path).scene
    text = dump_yaml(scene)
    again = load(text)
    assert not [d for d in again.diagnostics if d.is_error]
    assert again.scene == scene


def test_imported_scenes_round_trip():
    results = imported_scenes()
    if not results:
        pytest.skip("Brax v1 configs not found")
    for r in results:
        text = dump_yaml(r.scene, r.notes, "header")
        assert load(text).scene == r.scene, r.scene.name
        assert reread(text) == r.scene, r.scene.name


def test_dump_is_deterministic():
    s = tricky_scene()
    copy = scene_pb2.Scene.FromString(s.SerializeToString())
    assert dump_yaml(s) == dump_yaml(copy) == dump_yaml(s)


def test_layout():
    text = dump_yaml(tricky_scene())
    lines = text.splitlines()
    assert "  timestep: 0.30000000000000004" in lines
    assert "  gravity: [0, -0.0, -9.81]" in lines
    assert "  friction: 1" in lines and "  precision: float64" in lines
    assert "      - {plane: {}}" in lines
    assert '  - name: "Körper 1"' in lines
    assert "    pos: [1.0e-05, 5.0e-324, 123456789.125]" in lines
    i = lines.index("  - name: weld")  # joints (and bodies) are blocks, however short
    assert lines[i + 1:i + 4] == ["    kind: fixed", '    parent: "Körper 1"', '    child: "null"']
    assert "  - {name: m, kind: motor, joint: hinge, gear: 1, ctrl_range: [-1, 1]}" in lines
    assert '    doc: "a \\"quoted\\" doc\\nover two lines"' in lines
    assert "  density: 1.0e+20" in lines
    # defaults are left out: no zero damping, no default-valued enum other than joint/actuator kind
    assert "damping" not in text and "restitution" not in text
    # a long vector wraps inside the flow sequence, within the line width
    assert max(len(line) for line in lines) <= 100
    start = next(i for i, line in enumerate(lines) if line.startswith("    vertices: ["))
    assert lines[start + 1].startswith("      ") and not lines[start].endswith("]")


def test_notes_become_comments_above_their_entries():
    s = tricky_scene()
    notes = {
        ("options",): "from MuJoCo",
        ("bodies", 1): "a body note",
        ("bodies", 1, "colliders", 0): "converted from a cylinder\nsecond line",
        ("joints", 1): "welded",
        ("meshes", 9): "an entry that does not exist",
    }
    lines = dump_yaml(s, notes, header="Imported from x.xml").splitlines()
    assert lines[0] == "# Imported from x.xml"

    def after(comment):
        i = lines.index(comment)
        return lines[i + 1]

    assert after("# from MuJoCo") == "options:"
    assert after("  # a body note") == '  - name: "Körper 1"'
    assert after("      # converted from a cylinder") == "      # second line"
    assert after("      # second line").startswith("      - name: \"yes\"")
    assert after("  # welded") == "  - name: weld"
    assert "#   meshes.9: an entry that does not exist" in lines  # not lost: in the header


def test_parameters_use_the_loaders_forms():
    s = scene_pb2.Scene()
    s.parameters.add(name="leg", value=0.4)
    text = dump_yaml(s)
    assert "parameters:\n  leg: 0.4\n" in text
    s.parameters.add(name="hip", value=0.2, doc="half the leg")
    text = dump_yaml(s)
    assert '  - {name: hip, value: 0.2, doc: half the leg}' in text


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False))
def test_numbers_are_exact_and_read_as_floats(x):
    text = format_number(x)
    back = yaml.safe_load(text)
    assert isinstance(back, (int, float)) and float(back) == x
    assert math.copysign(1.0, float(back)) == math.copysign(1.0, x)
    if not x.is_integer() and math.isfinite(x):
        assert text.replace(".0e", "e") == repr(x)  # the shortest round-trip form


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_strings_read_back_unchanged(s):
    assert yaml.safe_load(f"k: {format_string(s)}")["k"] == s
    assert yaml.safe_load(f"[{format_string(s)}]")[0] == s
