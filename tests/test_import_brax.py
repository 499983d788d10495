"""Brax v1 importer on the 16 original configs (/work/shared/data/brax-v1, see its README).

Independent references: counts and masses read from the config text by a brace walker written
here; the ant's reference pose computed by hand from the README's rules; Brax's joint rotation
rule (ref * R(a1, t1) * R(a2, t2) * R(a3, t3)) written out here and compared with scenec's chain of
hinges at random angles.
"""

from __future__ import annotations

import math
import pathlib
import re

import numpy as np
import pytest

from scenec.compiler.importers import exit_code, frames, import_file
from scenec.compiler.importers.brax_v1 import SCHEMA
from scenec.compiler.importers.pbtxt import parse
from scenec.schema import scene_pb2

DATA = pathlib.Path("/work/shared/data/brax-v1")
CONFIGS = sorted(DATA.glob("*.pbtxt")) if DATA.is_dir() else []
pytestmark = pytest.mark.skipif(not CONFIGS, reason=f"Brax v1 configs not found in {DATA}")

# Poses are composed in float64 from the config's numbers; 1e-9 is far above round-off.
TOL = 1e-9
# Action sizes of the original environments (README), which equal our actuator counts.
ACTION_SIZES = {"ant": 8, "half_cheetah": 6, "humanoid": 17, "reacher": 2, "fetch": 10, "ur5e": 6}


def top_level_blocks(text: str, name: str) -> list[str]:
    """The bodies of the top-level `name { ... }` blocks (comments stripped)."""
    text = re.sub(r"#[^\n]*", "", text)
    out, depth, i = [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0 and text.startswith(name, i) and not text[i - 1:i].isalnum() \
                and not text[i - 1:i] == "_":
            j = text.index("{", i)
            if re.fullmatch(r"\s*:?\s*", text[i + len(name):j]):
                k, d = j + 1, 1
                while d:
                    d += {"{": 1, "}": -1}.get(text[k], 0)
                    k += 1
                out.append(text[j + 1:k - 1])
                i = k
                continue
        i += 1
    return out


def scalar(block: str, field: str):
    """A field written at depth 0 of a block."""
    depth = 0
    for m in re.finditer(r"[{}]|\b" + field + r"\s*:\s*(\"[^\"]*\"|[-+.\w]+)", block):
        if m.group() == "{":
            depth += 1
        elif m.group() == "}":
            depth -= 1
        elif depth == 0:
            v = m.group(1)
            return v.strip('"') if v.startswith('"') else float(v)
    return None


@pytest.fixture(scope="module")
def imported():
    return {p.stem: import_file(p, out_dir=p.parent) for p in CONFIGS}


def test_there_are_sixteen_configs():
    assert len(CONFIGS) == 16


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_config_imports(path, imported):
    result = imported[path.stem]
    assert exit_code(result.diagnostics) == 0, [str(d) for d in result.diagnostics if d.is_error]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_bodies_joints_dofs_and_masses_match_the_config(path, imported):
    text = path.read_text()
    scene = imported[path.stem].scene
    bodies = top_level_blocks(text, "bodies")
    joints = top_level_blocks(text, "joints")
    assert [scalar(b, "name") for b in bodies] == [b.name for b in scene.bodies]
    by_name = {b.name: b for b in scene.bodies}
    for block in bodies:
        body = by_name[scalar(block, "name")]
        if body.HasField("mass"):
            assert body.mass == scalar(block, "mass")
    # each config joint becomes one hinge per angle limit, between the same two bodies
    dofs = 0
    for block in joints:
        n = len(top_level_blocks(block, "angle_limit"))
        pair = (scalar(block, "parent"), scalar(block, "child"))
        hinges = [j for j in scene.joints if (j.parent, j.child) == pair]
        assert len(hinges) == n and all(j.kind == scene_pb2.HINGE for j in hinges)
        dofs += n
    from_world = [j for j in scene.joints if j.parent == "world"]
    assert len(scene.joints) == dofs + len(from_world)
    if path.stem in ACTION_SIZES:
        assert len(scene.actuators) == ACTION_SIZES[path.stem]


def test_ant_reference_pose_by_hand(imported):
    """README: bodies placed by their joints at the limit midpoints, then the tree lifted so its
    lowest collider point touches z = 0.

    Leg 1: hip_1 (vertical axis, limits +-30, midpoint 0) puts 'Aux 1' at (0.2, 0.2) + (0.1, 0.1);
    ankle_1's axis is the joint frame's x turned 135 deg about z, a = (-1, 1, 0)/sqrt2, and its
    midpoint angle is 50 deg; the foot's child offset (-0.2, -0.2, 0) is perpendicular to a, so
    after the turn it is 0.2*sqrt2*(-u cos50 + z sin50) with u = (1, 1, 0)/sqrt2: the foot centre is
    at (0.4 + 0.2 cos50, 0.4 + 0.2 cos50, -0.2 sqrt2 sin50) before lifting. Its capsule (length
    0.7256854, radius 0.08) lies along the leg, whose half segment 0.7256854/2 - 0.08 = 0.2828427
    drops another 0.2828427 sin50, plus the radius: that is the lowest point of the ant, so the lift
    is 0.2 sqrt2 sin50 + 0.2828427 sin50 + 0.08."""
    scene = imported["ant"].scene
    bodies = {b.name: b for b in scene.bodies}
    s50, c50 = math.sin(math.radians(50)), math.cos(math.radians(50))
    half = 0.7256854176521301 / 2 - 0.08
    lift = 0.2 * math.sqrt(2) * s50 + half * s50 + 0.08
    np.testing.assert_allclose(bodies["$ Torso"].pos, [0, 0, lift], atol=TOL)
    foot = [0.4 + 0.2 * c50, 0.4 + 0.2 * c50, -0.2 * math.sqrt(2) * s50 + lift]
    np.testing.assert_allclose(bodies["$ Body 4"].pos, foot, atol=1e-8)  # 0.7256854 has 7 digits
    q = frames.axis_angle([-1, 1, 0], math.radians(50))
    assert 1 - abs(np.dot(bodies["$ Body 4"].quat, q)) < TOL
    assert not bodies["Ground"].pos and "Ground" not in {j.child for j in scene.joints}


def _brax_local_rotation(joint, angles):
    """Brax's child-in-parent rotation: ref * R(a1, t1) * R(a2, t2) * R(a3, t3), a_i the joint
    frame's axes (rotation: Euler degrees, intrinsic x-y'-z'')."""
    def quat_deg(v):
        x, y, z = (math.radians(v.get(k, 0.0)) if v is not None else 0.0 for k in "xyz")
        return frames.quat_mul(frames.quat_mul(frames.axis_angle([1, 0, 0], x),
                                               frames.axis_angle([0, 1, 0], y)),
                               frames.axis_angle([0, 0, 1], z))
    rot = quat_deg(joint.get("rotation"))
    q = quat_deg(joint.get("reference_rotation"))
    for i, t in enumerate(angles):
        q = frames.quat_mul(q, frames.axis_angle(frames.rotate(rot, np.eye(3)[i]), t))
    return q


@pytest.mark.parametrize("name", ["humanoid", "humanoid_standup", "grasp", "fetch"])
def test_hinge_chains_reproduce_brax_rotations(name, imported):
    """At any joint angles, scenec's hinges (each turning the child about its axis, in order, from
    the reference pose) rotate the child exactly as Brax's rule does."""
    cfg = parse((DATA / f"{name}.pbtxt").read_text(), name, SCHEMA, "Config")
    fields = cfg.fields
    cfg_joints = fields["joints"].value
    scene = imported[name].scene
    bodies = {b.name: b for b in scene.bodies}
    rng = np.random.default_rng(3)
    for cj in cfg_joints:
        hinges = [j for j in scene.joints if (j.parent, j.child) == (cj.get("parent"), cj.get("child"))]
        if len(hinges) < 2:
            continue
        parent_q = np.array(bodies[cj.get("parent")].quat or frames.IDENTITY)
        child_q = np.array(bodies[cj.get("child")].quat or frames.IDENTITY)
        for _ in range(5):
            angles = [rng.uniform(j.range[0], j.range[1]) for j in hinges]
            want = frames.quat_mul(parent_q, _brax_local_rotation(cj, angles))
            got = child_q
            for j, t in zip(hinges, angles):
                got = frames.quat_mul(got, frames.axis_angle(list(j.axis) or [0, 0, 1], t - j.reference))
            assert 1 - abs(np.dot(got, want)) < TOL, cj.get("name")


def test_frozen_flags_become_root_joints(imported):
    hopper = imported["hopper"].scene
    root = [(j.name, j.kind) for j in hopper.joints if j.parent == "world"]
    assert root == [("torso_slide_x", scene_pb2.SLIDE), ("torso_slide_z", scene_pb2.SLIDE),
                    ("torso_hinge_y", scene_pb2.HINGE)]
    pendulum = imported["inverted_pendulum"].scene
    assert [(j.name, j.kind) for j in pendulum.joints if j.parent == "world"] == \
        [("cart_slide_x", scene_pb2.SLIDE)]
    # the thruster on the sliding cart is the environment's one action
    assert [(a.name, a.joint, a.gear) for a in pendulum.actuators] == [("thruster", "cart_slide_x", 100)]
    # the ant's torso is free; its ground is static
    ant = imported["ant"].scene
    assert [(j.child, j.kind) for j in ant.joints if j.parent == "world"] == [("$ Torso", scene_pb2.FREE)]


def test_collide_include_and_capsule_ends(imported):
    ant = imported["ant"].scene
    assert [(p.first, p.second) for p in ant.contacts.include][:2] == [("$ Torso", "Ground"),
                                                                      ("$ Body 4", "Ground")]
    foot = next(b for b in ant.bodies if b.name == "$ Body 4")
    assert foot.colliders[0].WhichOneof("shape") == "sphere"
    # an empty collide_include: nothing collides
    acrobot = imported["acrobot"].scene
    assert all(c.group == 0 and c.mask == 0 for b in acrobot.bodies for c in b.colliders)
    assert all(c.HasField("group") for b in acrobot.bodies for c in b.colliders)


def test_options(imported):
    ant = imported["ant"].scene.options
    assert (ant.timestep, ant.substeps, list(ant.gravity), ant.friction) == (0.05, 10, [0, 0, -9.8], 1.0)
    pusher = imported["pusher"].scene.options
    assert list(pusher.gravity) == [0, 0, 0]  # Brax's gravity is zero unless given


@pytest.mark.parametrize("text,code,line,col", [
    ("bodies {\n  name: \"a\"\n", "E713", 3, 1),
    ("bodies { nme: \"a\" }\n", "E714", 1, 10),
    ("bodies { name: 3 }\n", "E714", 1, 16),
    ('bodies { name: "a" }\njoints { name: "j" parent: "a" child: "b" }\n', "E706", 2, 32),
])
def test_config_errors_are_located(tmp_path, text, code, line, col):
    path = tmp_path / "bad.pbtxt"
    path.write_text(text)
    result = import_file(path)
    assert [(d.code, d.span.line, d.span.col) for d in result.diagnostics if d.is_error] == \
        [(code, line, col)]
    assert exit_code(result.diagnostics) == 2
