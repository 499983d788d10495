"""compiler/validate.py beyond the one-case-per-code catalogue: boundaries, combinations, messages
built in Python, mesh files, and that every problem of a scene is reported in one run."""

from __future__ import annotations

import math

import pytest

from scenec.compiler.check import check
from scenec.compiler.validate import INERTIA_TRIANGLE_RTOL, validate
from scenec.schema import load, scene_pb2

TETRAHEDRON_OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def codes(source, **kw):
    """What loading and validation report (the analysis passes' own checks, such as E503 for a
    moving body without mass, have their tests in test_pruning/test_catalogue)."""
    return [d.code for d in check(source, **kw).diagnostics if not d.code.startswith("E5")]


def test_shipped_scenes_check_clean(scene_paths):
    for path in scene_paths:
        result = check(path)
        assert result.ok and result.diagnostics == (), (path, result.diagnostics)


def test_all_problems_in_one_run():
    text = """
bodies:
  - {name: a, mass: -1}
  - {name: a}
  - {name: b, inertia: [1, 1, 5]}
joints:
  - {name: j, child: c}
  - {name: k, kind: slide, child: b, range: [1, 0]}
actuators:
  - {name: m, joint: jj}
options: {timestep: 0, solver_iterations: 5000}
"""
    assert sorted(codes(text)) == sorted(
        ["E301", "E201", "E303", "E203", "E304", "E212", "E311", "E311"])


def test_inertia_full_matrix_and_triangle_tolerance():
    # a thin disk: Izz = Ixx + Iyy exactly, written with rounding well inside the tolerance
    assert codes("bodies: [{name: d, inertia: [0.25, 0.25, 0.50001]}]") == []
    too_far = 0.5 * (1 + 10 * INERTIA_TRIANGLE_RTOL)
    assert codes(f"bodies: [{{name: d, inertia: [0.25, 0.25, {too_far!r}]}}]") == ["E303"]
    # a rotated box's full tensor (positive definite, physical)
    assert codes("bodies: [{name: r, inertia: [2, 2, 1, 0.5, 0, 0]}]") == []
    assert codes("bodies: [{name: r, inertia: [1, 1, 1, 0, 0, 0, 0]}]") == ["E114"]


def test_forest_rules():
    ok = """
bodies: [{name: a}, {name: b}, {name: c}]
joints:
  - {name: j1, kind: hinge, child: a}
  - {name: j2, kind: hinge, child: a, axis: [1, 0, 0]}
  - {name: j3, kind: slide, parent: a, child: b}
  - {name: j4, kind: fixed, parent: b, child: c}
"""
    assert codes(ok) == []
    cycle = """
bodies: [{name: a}, {name: b}, {name: c}]
joints:
  - {name: j1, parent: c, child: a}
  - {name: j2, parent: a, child: b}
  - {name: j3, parent: b, child: c}
"""
    result = check(cycle)
    assert [d.code for d in result.diagnostics] == ["E208"]
    assert "(parents: a -> c -> b -> a)" in result.diagnostics[0].message


def test_collider_default_names_resolve_in_pairs():
    text = """
bodies:
  - name: a
    colliders: [{sphere: {radius: 1}}, {sphere: {radius: 1}, name: tip}]
  - name: b
    colliders: [{box: {half_size: [1, 1, 1]}}]
contacts:
  pairs: [{first: a/0, second: b/0}, {first: tip, second: b/0}]
  exclude: [{first: "a*", second: world}]
"""
    assert codes(text) == []
    assert codes(text.replace("a/0, second", "a/1, second")) == ["E216"]


def test_duplicate_names_across_kinds_are_fine_within_kind_not():
    text = "bodies: [{name: x}]\njoints: [{name: x, child: x}]\n"
    assert codes(text) == []
    assert codes("bodies: [{name: x, colliders: [{name: c, sphere: {radius: 1}}, "
                 "{name: c, sphere: {radius: 1}}]}]") == ["E201"]


def test_joint_values():
    text = """
bodies: [{name: a}, {name: b}]
joints:
  - {name: f, kind: free, child: a}
  - {name: s, kind: ball, child: b, range: [0, 30 deg]}
init:
  - {joint: f, q: [0, 0, 1, 1, 0, 0, 0], qd: [0, 0, 0, 0, 0, 1]}
  - {joint: s, q: [1, 0, 0, 0]}
keyframes:
  - name: k
    joints:
      - {joint: f, q: [0, 0, 1, 1, 0, 0], qd: [0, 0, 0]}
      - {joint: s, q: [0.7071, 0.7071, 0, 0]}
"""
    result = check(text)
    assert [d.code for d in result.diagnostics] == ["E312", "E312", "W301"]
    assert result.ok is False
    assert "rotated by 1.571 rad" in result.diagnostics[2].message


def test_message_built_scene_is_validated_with_path_spans():
    scene = scene_pb2.Scene()
    scene.bodies.add(name="a").colliders.add().sphere.radius = -1
    scene.joints.add(name="j", child="a", parent="nowhere")
    scene.bodies[0].pos.extend([0, 0, math.nan])
    diagnostics = validate(load(scene))
    found = {(d.code, d.span.file) for d in diagnostics}
    assert ("E310", "<scene>.bodies[0].colliders[0].sphere.radius") in found
    assert ("E204", "<scene>.joints[0].parent") in found
    assert ("E117", "<scene>.bodies[0].pos[2]") in found


def test_fatal_documents_are_not_validated():
    loaded = load("bodies: [")
    assert [d.code for d in loaded.diagnostics] == ["E004"]
    assert validate(loaded) == []


def test_mesh_files(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "tet.obj").write_text(TETRAHEDRON_OBJ)
    scene = tmp_path / "scene.yaml"
    scene.write_text("meshes: [{name: tet, file: meshes/tet.obj, scale: [2, 2, 2]}]\n"
                     "bodies: [{name: a, colliders: [{mesh: {mesh: tet}}]}]\n")
    assert codes(scene) == []
    outside = tmp_path / "inner"
    outside.mkdir()
    scene2 = outside / "scene.yaml"
    scene2.write_text("meshes: [{name: tet, file: ../meshes/tet.obj}]\n"
                      "bodies: [{name: a, colliders: [{mesh: {mesh: tet}}]}]\n")
    assert codes(scene2) == ["E403"]
    assert codes(scene2, allow_outside=True) == []
    scene2.write_text(scene2.read_text().replace("tet.obj", "tot.obj"))
    result = check(scene2, allow_outside=True)
    assert [d.code for d in result.diagnostics] == ["E402"]
    assert result.diagnostics[0].hint == "did you mean 'tet.obj'?"


def test_inline_mesh_rules():
    base = "bodies: [{name: a, colliders: [{mesh: {mesh: m}}]}]\nmeshes: [{name: m, %s}]\n"
    assert codes(base % "vertices: [0,0,0, 1,0,0, 0,1,0, 0,0,1], faces: [0,1,2, 0,1,3, 0,2,3, 1,2,3]") == []
    assert codes(base % "vertices: [0,0,0, 1,0,0, 0,1,0, 1,1,0], faces: [0,1,2]") == ["E405"]
    assert codes(base % "vertices: [0,0,0, 1,0,0, 0,1,0, 0,0,1]") == ["E401"]
    assert codes(base % "file: x.obj, faces: [0, 1, 2]") == ["E401"]
    assert codes(base % "vertices: [0,0,0, 1,0,0, 0,1,0, 0,0,1], faces: [0,1,2], scale: [1, 0, 1]") == ["E310"]


def test_intervals_boundaries():
    assert codes("options: {restitution: 1, friction: 0, solver_iterations: 1000}") == []
    assert codes("options: {restitution: 1.01}") == ["E311"]
    assert codes("options: {friction: -0.1}") == ["E311"]
    assert codes("options: {contact_damping_ratio: 0}") == ["E311"]
    assert codes("bodies: [{name: a, colliders: [{sphere: {radius: 1}, restitution: -1}]}]") == ["E311"]


def test_actuator_rules():
    base = "bodies: [{name: a}]\njoints: [{name: j, kind: slide, child: a}]\nactuators: [%s]\n"
    assert codes(base % "{name: m, joint: j, kind: position, kp: 10, kv: 1}") == []
    assert codes(base % "{name: m, joint: j, kind: velocity}") == ["E309"]
    assert codes(base % "{name: m, joint: j, kind: position, kp: 10, kv: -1}") == ["E311"]
    assert codes(base % "{name: m, joint: j, kind: general, gain: [1, 2, 3, 4]}") == ["E114"]
    assert codes(base % "{name: m, joint: j, force_range: [2, 2]}") == ["E307"]


def test_absurd_and_non_finite_numbers():
    assert codes("bodies: [{name: a, pos: [0, 0, 1e9]}]") == []
    assert codes("bodies: [{name: a, pos: [0, 0, -1.1e9]}]") == ["E118"]
    assert codes("bodies: [{name: a, pos: [.inf, 0, 0]}]") == ["E117"]
    assert codes("bodies: [{name: a, mass: -.inf}]") == ["E117"]


@pytest.mark.parametrize("text,code", [
    ("bodies: [{pos: [0, 0, 1]}]", "E119"),
    ("joints: [{name: j}]", "E119"),
    ("bodies: [{name: a, colliders: [{friction: 1}]}]", "E119"),
    ("bodies: [{name: a, colliders: [{box: {}}]}]", "E119"),
    ("bodies: [{name: a, quat: [0, 0, 0, 0]}]", "E116"),
    ("bodies: [{name: a, euler: [0, 0, 0], quat: [1, 0, 0, 0]}]", "E115"),
])
def test_single_problems(text, code):
    assert codes(text) == [code]


@pytest.mark.skipif("fromto" not in scene_pb2.Capsule.DESCRIPTOR.fields_by_name,
                    reason="scene.proto has no Capsule.fromto")
def test_capsule_fromto_excludes_pose_and_half_length():
    base = "bodies: [{name: a, colliders: [{capsule: {radius: 0.1, %s}%s}]}]"
    assert codes(base % ("fromto: [0, 0, 0, 0, 0, 1 m]", "")) == []
    assert codes(base % ("fromto: [0, 0, 0, 0, 0, 1], half_length: 1", "")) == ["E115"]
    assert codes(base % ("fromto: [0, 0, 0, 0, 0, 1]", ", pos: [0, 0, 1]")) == ["E115"]
    assert codes(base % ("fromto: [0, 0, 0, 1]", "")) == ["E114"]
