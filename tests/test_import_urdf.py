"""URDF importer against MuJoCo, which compiles URDF files directly (`MjModel.from_xml_path`).

The test URDFs carry MuJoCo's own `<mujoco><compiler fusestatic="false"/></mujoco>` extension so
that MuJoCo keeps every link as a body (by default it fuses links on fixed joints).
"""

from __future__ import annotations

import numpy as np
import pytest

from scenec.compiler.importers import exit_code, import_file
from scenec.schema import scene_pb2

from import_reference import TOL, assert_inertials, assert_kinematics

mujoco = pytest.importorskip("mujoco")

ARM = """<?xml version="1.0"?>
<robot name="arm">
  <mujoco><compiler fusestatic="false" discardvisual="true"/></mujoco>
  <material name="grey"><color rgba="0.5 0.5 0.5 1"/></material>
  <link name="base">
    <inertial><origin xyz="0 0 0.1" rpy="0.1 0.2 0.3"/><mass value="3"/>
      <inertia ixx="0.2" iyy="0.25" izz="0.3" ixy="0.01" ixz="0.02" iyz="0.03"/></inertial>
    <collision><origin xyz="0 0 0.1"/><geometry><box size="0.2 0.3 0.1"/></geometry></collision>
    <visual><geometry><box size="0.2 0.3 0.1"/></geometry><material name="grey"/></visual>
  </link>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.2" rpy="1.5707963267948966 0 0"/><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
  <link name="hand">
    <inertial><origin xyz="0.01 0 0" rpy="0 0 0.5"/><mass value="0.5"/>
      <inertia ixx="0.01" iyy="0.02" izz="0.025" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="tip">
    <inertial><mass value="0.1"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="wheel">
    <inertial><mass value="0.2"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/>
    <origin xyz="0.1 0 0.2" rpy="0.3 -0.4 0.5"/><axis xyz="0 1 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/><dynamics damping="0.5" friction="0.1"/>
  </joint>
  <joint name="wrist" type="prismatic">
    <parent link="arm"/><child link="hand"/>
    <origin xyz="0 0 0.4" rpy="0 1.2 0"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.1" effort="5" velocity="1"/>
  </joint>
  <joint name="tip_joint" type="fixed">
    <parent link="hand"/><child link="tip"/><origin xyz="0.05 0 0" rpy="0 0 1"/>
  </joint>
  <joint name="spin" type="continuous">
    <parent link="tip"/><child link="wheel"/><origin xyz="0 0.1 0" rpy="-0.5 0 0"/>
  </joint>
  <transmission name="t"><type>transmission_interface/SimpleTransmission</type></transmission>
</robot>
"""


def compile_both(tmp_path, text, name="robot", **kwargs):
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    result = import_file(path, **kwargs)
    assert not [d for d in result.diagnostics if d.is_error], result.diagnostics
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    return result, model, data


def test_link_poses_joint_axes_and_inertials_match_mujoco(tmp_path):
    result, model, data = compile_both(tmp_path, ARM)
    assert_kinematics(result.scene, model, data)
    assert assert_inertials(result.scene, model) == 5


def test_joint_kinds_limits_and_docs(tmp_path):
    result, model, _ = compile_both(tmp_path, ARM)
    joints = {j.name: j for j in result.scene.joints}
    assert joints["shoulder"].kind == scene_pb2.HINGE and list(joints["shoulder"].range) == [-1, 1]
    assert joints["wrist"].kind == scene_pb2.SLIDE and list(joints["wrist"].range) == [0, 0.1]
    assert joints["spin"].kind == scene_pb2.HINGE and not len(joints["spin"].range)
    assert joints["tip_joint"].kind == scene_pb2.FIXED
    assert joints["shoulder"].damping == 0.5
    assert "effort limit 10 N*m" in joints["shoulder"].doc and "friction 0.1" in joints["shoulder"].doc
    for jid in range(model.njnt):
        j = joints[model.joint(jid).name]
        if model.jnt_limited[jid]:
            np.testing.assert_allclose(j.range, model.jnt_range[jid], atol=TOL)
    codes = sorted(d.code for d in result.diagnostics)
    assert codes == ["W701", "W701", "W701", "W704"]  # mujoco block, transmission, visual; friction
    assert ("bodies", 0) in result.notes  # the root link is static


def test_collision_geometry_matches_mujoco(tmp_path):
    result, model, data = compile_both(tmp_path, ARM)
    from scenec.compiler.importers import frames

    bodies = {b.name: b for b in result.scene.bodies}
    for g in range(model.ngeom):
        body = bodies[model.body(model.geom_bodyid[g]).name]
        col = body.colliders[g - model.body_geomadr[model.geom_bodyid[g]]]
        pos = np.array(body.pos) if len(body.pos) else np.zeros(3)
        quat = np.array(body.quat) if len(body.quat) else frames.IDENTITY
        cpos = np.array(col.pos) if len(col.pos) else np.zeros(3)
        np.testing.assert_allclose(pos + frames.rotate(quat, cpos), data.geom_xpos[g], atol=TOL)
        cquat = np.array(col.quat) if len(col.quat) else frames.IDENTITY
        np.testing.assert_allclose(frames.quat_to_mat(frames.quat_mul(quat, cquat)),
                                   data.geom_xmat[g].reshape(3, 3), atol=TOL)
        if col.WhichOneof("shape") == "box":
            np.testing.assert_allclose(col.box.half_size, model.geom_size[g], atol=TOL)


def test_floating_base_and_cylinders(tmp_path):
    text = """<robot name="rover">
      <mujoco><compiler fusestatic="false"/></mujoco>
      <link name="world"/>
      <link name="chassis">
        <inertial><mass value="4"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
        <collision><geometry><cylinder radius="0.1" length="0.6"/></geometry></collision>
      </link>
      <joint name="float" type="floating"><parent link="world"/><child link="chassis"/>
        <origin xyz="0 0 0.5"/></joint>
    </robot>"""
    path = tmp_path / "rover.urdf"
    path.write_text(text)
    refused = import_file(path)
    assert [d.code for d in refused.diagnostics if d.is_error] == ["E707"]
    assert exit_code(refused.diagnostics) == 1
    result, model, data = compile_both(tmp_path, text, "rover", convert_cylinders=True)
    j = result.scene.joints[0]
    assert (j.kind, j.parent, j.child) == (scene_pb2.FREE, "world", "chassis")
    assert [b.name for b in result.scene.bodies] == ["chassis"]  # the "world" link is the world
    cap = result.scene.bodies[0].colliders[0].capsule
    assert (cap.radius, cap.half_length) == (0.1, pytest.approx(0.2))
    assert_kinematics(result.scene, model, data)


def test_package_mesh_paths_resolve(tmp_path):
    import trimesh

    pkg = tmp_path / "my_robot"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "urdf").mkdir()
    trimesh.creation.icosphere(subdivisions=1, radius=0.1).export(pkg / "meshes" / "ball.stl")
    (pkg / "urdf" / "r.urdf").write_text("""<robot name="r"><link name="l">
      <collision><geometry><mesh filename="package://my_robot/meshes/ball.stl" scale="2 2 2"/>
      </geometry></collision></link></robot>""")
    result = import_file(pkg / "urdf" / "r.urdf", out_dir=pkg)
    assert not result.diagnostics or all(not d.is_error for d in result.diagnostics)
    mesh = result.scene.meshes[0]
    assert mesh.file == "meshes/ball.stl" and list(mesh.scale) == [2, 2, 2]
    assert result.scene.bodies[0].colliders[0].mesh.mesh == mesh.name


@pytest.mark.parametrize("body,code,line", [
    ('<link name="a"/><link name="b"/><joint name="j" type="planar"><parent link="a"/>'
     '<child link="b"/></joint>', "E710", 2),
    ('<link name="a"/><joint name="j" type="fixed"><parent link="a"/><child link="zz"/></joint>',
     "E706", 2),
    ('<link name="a"/><link name="a"/>', "E715", 2),
    ('<link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/>'
     '<child link="b"/><limit lower="x" upper="1"/></joint>', "E704", 2),
    ('<link name="a"><collision><geometry><mesh filename="nope.stl"/></geometry></collision></link>',
     "E712", 2),
])
def test_errors(tmp_path, body, code, line):
    path = tmp_path / "bad.urdf"
    path.write_text(f'<robot name="r">\n{body}\n</robot>\n')
    result = import_file(path)
    errors = [(d.code, d.span.line) for d in result.diagnostics if d.is_error]
    assert errors == [(code, line)], result.diagnostics


def test_joint_cycle_is_reported(tmp_path):
    path = tmp_path / "cycle.urdf"
    path.write_text("""<robot name="r"><link name="a"/><link name="b"/>
      <joint name="j1" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="j2" type="fixed"><parent link="b"/><child link="a"/></joint></robot>""")
    assert [d.code for d in import_file(path).diagnostics if d.is_error] == ["E716"]
