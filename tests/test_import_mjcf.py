"""MJCF importer against MuJoCo's own compiled model of the same XML.

For each model written below, MuJoCo (installed from PyPI) compiles the file and runs
mj_kinematics at qpos0; the imported scene must give the same world poses of bodies and geoms,
joint anchors and axes, masses and inertias, joint/actuator parameters, keyframes and the same set
of geom pairs that may collide (see import_reference.py for how each side is computed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from scenec.compiler.importers import exit_code, filtering, frames, import_file
from scenec.schema import scene_pb2

from import_reference import (
    TOL, assert_inertials, assert_kinematics, body_pose, derived_mass_and_com, geom_names,
    mujoco_body_names, mujoco_rule_pairs,
)

mujoco = pytest.importorskip("mujoco")

# Every frame attribute, nested defaults with childclass, frames, several joints on one body,
# inertials with quat and fullinertia, geoms without inertial (density and mass), fromto capsules,
# a box from fromto, an unnamed body, a ball joint, a slide joint inside a rotated frame.
FRAMES = """
<mujoco model="frames">
  <compiler angle="degree" eulerseq="zyx"/>
  <option timestep="0.005" gravity="0.1 0 -9.7"/>
  <default>
    <geom density="500" rgba="1 0 0 1" friction="0.8"/>
    <default class="leg">
      <joint damping="2" range="-30 60" axis="0 1 0" armature="0.01"/>
      <geom type="capsule" size="0.05" contype="2" conaffinity="3"/>
      <default class="shin">
        <joint stiffness="5" springref="12" ref="-4"/>
        <geom size="0.04" friction="0.6 0.01 0.001"/>
      </default>
    </default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <geom name="bump" type="box" pos="1 0 0" euler="0 0 30" size="0.1 0.2 0.3"/>
    <body name="torso" pos="0 0 1" euler="10 20 30">
      <freejoint name="root"/>
      <geom name="torso_geom" type="box" size="0.2 0.1 0.05"/>
      <geom name="head" type="sphere" size="0.09" pos="0 0 0.2" mass="2.5"/>
      <frame pos="0.1 0 0" axisangle="0 0 1 90">
        <body name="thigh" pos="0.2 0 0" xyaxes="0 1 0 -1 0 0" childclass="leg">
          <joint name="hip"/>
          <joint name="hip2" axis="1 0 0" ref="10"/>
          <geom name="thigh_geom" fromto="0 0 0 0 0 -0.4"/>
          <body name="shin" pos="0 0 -0.4" zaxis="0 1 1" childclass="shin">
            <inertial pos="0.01 0.02 -0.1" quat="0.9 0.1 0.2 0.3" mass="2" diaginertia="0.1 0.2 0.25"/>
            <joint name="knee" type="hinge" pos="0 0 0.05"/>
            <geom name="shin_geom" fromto="0 0 0 0 0.1 -0.3"/>
            <site name="s1"/>
            <body pos="0 0 -0.3" quat="0 1 0 0">
              <geom name="foot_geom" type="sphere" size="0.06" class="leg"/>
              <body name="toe" pos="0.1 0 0" euler="0 90 0">
                <inertial pos="0 0 0.01" mass="0.3" fullinertia="0.01 0.02 0.025 0.001 -0.002 0.003"/>
                <joint name="toe_ball" type="ball" range="0 40"/>
                <geom name="toe_geom" type="box" fromto="0 0 0 0.1 0.05 0" size="0.02 0.01"/>
              </body>
            </body>
          </body>
        </body>
      </frame>
      <body name="slider" pos="-0.3 0 0">
        <frame euler="0 0 45" pos="0 0.1 0">
          <joint name="slide" type="slide" axis="1 0 0" range="-0.1 0.2" pos="0.01 0 0"/>
        </frame>
        <geom name="slider_geom" type="capsule" size="0.03 0.05" axisangle="1 1 0 60"/>
      </body>
    </body>
  </worldbody>
  <contact>
    <exclude body1="torso" body2="shin"/>
    <pair geom1="floor" geom2="foot_geom" friction="0.5"/>
  </contact>
  <actuator>
    <motor joint="hip" gear="100" ctrlrange="-1 1"/>
    <position name="knee_servo" joint="knee" kp="50" kv="2" gear="3" forcerange="-40 40"/>
    <velocity joint="slide" kv="7" ctrlrange="-2 2" ctrllimited="true"/>
    <general joint="hip2" gaintype="fixed" gainprm="4" biastype="affine" biasprm="1 -2 -0.5"
             ctrlrange="0 1"/>
  </actuator>
  <keyframe>
    <key name="bent" qpos="0 0 1 1 0 0 0 0.1 0.2 0.3 0.9 0 0.1 0.2 0.05" qvel="0 0 0 0 0 0 1 2 3 0.1 0.2 0.3 0.4"/>
    <key qpos="0 0 2 0 1 0 0 -0.1 0 0 1 0 0 0 0"/>
  </keyframe>
</mujoco>
"""

# compiler angle="radian", default eulerseq, orientation from quat and euler in radians.
RADIAN = """
<mujoco model="radian">
  <compiler angle="radian"/>
  <worldbody>
    <body name="a" pos="0.1 0.2 0.3" euler="0.3 -0.2 1.1">
      <joint name="ja" range="-1.2 0.7" ref="0.25"/>
      <geom type="sphere" size="0.1"/>
      <body name="b" pos="0 0 -0.5" axisangle="0 1 0 0.7" quat="1 0 0 0">
        <joint name="jb" axis="1 1 0" springref="0.3" stiffness="3"/>
        <geom type="capsule" size="0.05 0.2" euler="1.5707963267948966 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
""".replace(' quat="1 0 0 0"', "")

# A humanoid of my own making: free torso, two-hinge abdomen, three-hinge hips, knees, arms.
HUMANOID = """
<mujoco model="little_humanoid">
  <option timestep="0.003" iterations="20"/>
  <default>
    <joint limited="true" damping="1" armature="0.02"/>
    <geom type="capsule" condim="3" friction="0.9" rgba="0.8 0.6 0.4 1"/>
    <default class="limb">
      <geom size="0.045" contype="1" conaffinity="1"/>
      <default class="small">
        <geom size="0.03"/>
        <joint damping="0.2"/>
      </default>
    </default>
  </default>
  <worldbody>
    <geom name="ground" type="plane" size="20 20 1" contype="1" conaffinity="1"/>
    <body name="torso" pos="0 0 1.3">
      <freejoint name="torso_free"/>
      <geom name="chest" fromto="0 -0.08 0 0 0.08 0" size="0.08"/>
      <geom name="head" type="sphere" pos="0 0 0.2" size="0.1"/>
      <body name="belly" pos="0 0 -0.28" childclass="limb">
        <joint name="belly_z" axis="0 0 1" range="-40 40"/>
        <joint name="belly_y" axis="0 1 0" range="-70 20"/>
        <geom name="belly" fromto="0 -0.07 0 0 0.07 0" size="0.07"/>
        <body name="pelvis" pos="0 0 -0.16" quat="1 0 -0.1 0">
          <joint name="pelvis_x" axis="1 0 0" range="-30 30" pos="0 0 0.1"/>
          <geom name="butt" fromto="-0.02 -0.08 0 -0.02 0.08 0" size="0.09"/>
          <body name="thigh_r" pos="0 -0.1 -0.04">
            <joint name="hip_rx" axis="1 0 0" range="-25 5"/>
            <joint name="hip_rz" axis="0 0 1" range="-60 35"/>
            <joint name="hip_ry" axis="0 1 0" range="-110 20"/>
            <geom name="thigh_r" fromto="0 0 0 0 0.01 -0.34" size="0.06"/>
            <body name="shin_r" pos="0 0.01 -0.4">
              <joint name="knee_r" axis="0 -1 0" range="-160 -2" pos="0 0 0.02"/>
              <geom name="shin_r" fromto="0 0 0 0 0 -0.3"/>
              <body name="foot_r" pos="0 0 -0.39">
                <geom name="foot_r" type="sphere" size="0.075" pos="0 0 0.1"/>
              </body>
            </body>
          </body>
          <body name="thigh_l" pos="0 0.1 -0.04">
            <joint name="hip_lx" axis="-1 0 0" range="-25 5"/>
            <joint name="hip_lz" axis="0 0 -1" range="-60 35"/>
            <joint name="hip_ly" axis="0 1 0" range="-110 20"/>
            <geom name="thigh_l" fromto="0 0 0 0 -0.01 -0.34" size="0.06"/>
            <body name="shin_l" pos="0 -0.01 -0.4">
              <joint name="knee_l" axis="0 -1 0" range="-160 -2" pos="0 0 0.02"/>
              <geom name="shin_l" fromto="0 0 0 0 0 -0.3"/>
              <body name="foot_l" pos="0 0 -0.39">
                <geom name="foot_l" type="sphere" size="0.075" pos="0 0 0.1"/>
              </body>
            </body>
          </body>
        </body>
      </body>
      <body name="upper_arm_r" pos="0 -0.17 0.06" childclass="small">
        <joint name="shoulder_r1" axis="2 1 1" range="-85 60"/>
        <joint name="shoulder_r2" axis="0 -1 1" range="-85 60"/>
        <geom name="upper_arm_r" fromto="0 0 0 0.16 -0.16 -0.16" size="0.04"/>
        <body name="lower_arm_r" pos="0.18 -0.18 -0.18">
          <joint name="elbow_r" axis="0 -1 1" range="-90 50"/>
          <geom name="lower_arm_r" fromto="0.01 0.01 0.01 0.17 0.17 0.17"/>
          <geom name="hand_r" type="sphere" pos="0.18 0.18 0.18" size="0.04"/>
        </body>
      </body>
      <body name="upper_arm_l" pos="0 0.17 0.06" childclass="small">
        <joint name="shoulder_l1" axis="2 -1 1" range="-60 85"/>
        <joint name="shoulder_l2" axis="0 1 1" range="-60 85"/>
        <geom name="upper_arm_l" fromto="0 0 0 0.16 0.16 -0.16" size="0.04"/>
        <body name="lower_arm_l" pos="0.18 0.18 -0.18">
          <joint name="elbow_l" axis="0 -1 -1" range="-90 50"/>
          <geom name="lower_arm_l" fromto="0.01 -0.01 0.01 0.17 -0.17 0.17"/>
          <geom name="hand_l" type="sphere" pos="0.18 -0.18 0.18" size="0.04"/>
        </body>
      </body>
    </body>
  </worldbody>
  <contact>
    <exclude body1="belly" body2="thigh_r"/>
    <exclude body1="belly" body2="thigh_l"/>
  </contact>
  <actuator>
    <motor name="belly_y" gear="100" joint="belly_y" ctrlrange="-0.4 0.4"/>
    <motor name="hip_ry" gear="300" joint="hip_ry" ctrlrange="-0.4 0.4"/>
    <motor name="knee_r" gear="200" joint="knee_r" ctrlrange="-0.4 0.4"/>
    <motor name="hip_ly" gear="300" joint="hip_ly" ctrlrange="-0.4 0.4"/>
    <motor name="knee_l" gear="200" joint="knee_l" ctrlrange="-0.4 0.4"/>
    <motor name="elbow_r" gear="25" joint="elbow_r" ctrlrange="-0.4 0.4"/>
  </actuator>
  <keyframe>
    <key name="squat" qpos="0 0 1.1 1 0 0 0 0 0.3 0 0 0 -0.8 -1.2 0 0 -0.8 -1.2 0.1 0.1 -0.5 0.1 0.1 -0.5"/>
  </keyframe>
</mujoco>
"""

# An ant of my own making: a ball torso, four legs whose hips and ankles are in separate bodies.
ANT = """
<mujoco model="little_ant">
  <compiler angle="degree" inertiafromgeom="true"/>
  <option timestep="0.01"/>
  <default>
    <joint limited="true" armature="1" damping="1"/>
    <geom condim="3" density="5" friction="1 0.5 0.5" margin="0.01" rgba="0.8 0.6 0.4 1"/>
  </default>
  <worldbody>
    <geom conaffinity="1" condim="3" name="floor" pos="0 0 0" size="40 40 40" type="plane"/>
    <body name="torso" pos="0 0 0.75">
      <geom name="torso_geom" pos="0 0 0" size="0.25" type="sphere"/>
      <joint name="root" type="free" armature="0" damping="0" limited="false"/>
      <body name="front_left_leg" pos="0 0 0">
        <geom fromto="0 0 0 0.2 0.2 0" name="aux_1_geom" size="0.08" type="capsule"/>
        <body name="aux_1" pos="0.2 0.2 0">
          <joint axis="0 0 1" name="hip_1" pos="0 0 0" range="-30 30" type="hinge"/>
          <geom fromto="0 0 0 0.2 0.2 0" name="left_leg_geom" size="0.08" type="capsule"/>
          <body pos="0.2 0.2 0" name="left_ankle">
            <joint axis="-1 1 0" name="ankle_1" pos="0 0 0" range="30 70" type="hinge"/>
            <geom fromto="0 0 0 0.4 0.4 0" name="left_ankle_geom" size="0.08" type="capsule"/>
          </body>
        </body>
      </body>
      <body name="back_right_leg" pos="0 0 0">
        <geom fromto="0 0 0 0.2 -0.2 0" name="aux_4_geom" size="0.08" type="capsule"/>
        <body name="aux_4" pos="0.2 -0.2 0">
          <joint axis="0 0 1" name="hip_4" pos="0 0 0" range="-30 30" type="hinge"/>
          <geom fromto="0 0 0 0.2 -0.2 0" name="rightback_leg_geom" size="0.08" type="capsule"/>
          <body pos="0.2 -0.2 0" name="right_back_ankle">
            <joint axis="1 1 0" name="ankle_4" pos="0 0 0" range="30 70" type="hinge"/>
            <geom fromto="0 0 0 0.4 -0.4 0" name="fourth_ankle_geom" size="0.08" type="capsule"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor ctrllimited="true" ctrlrange="-1 1" joint="hip_4" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1 1" joint="ankle_4" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1 1" joint="hip_1" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1 1" joint="ankle_1" gear="150"/>
  </actuator>
</mujoco>
"""

# Collision filtering: contype/conaffinity bits, welded bodies, a static body, parent filtering
# (and the world exception), an exclude, explicit pairs (one between filtered geoms).
FILTER = """
<mujoco model="filter">
  <worldbody>
    <geom name="ground" type="plane" size="3 3 0.1"/>
    <geom name="wall" type="box" pos="0 2 0.5" size="1 0.1 0.5" contype="2" conaffinity="2"/>
    <body name="shelf" pos="1 1 1">
      <geom name="shelf_top" type="box" size="0.3 0.3 0.02"/>
    </body>
    <body name="a" pos="0 0 1">
      <joint name="ja" type="hinge"/>
      <geom name="a1" type="sphere" size="0.1"/>
      <geom name="a2" type="sphere" size="0.1" pos="0.1 0 0" contype="4" conaffinity="4"/>
      <body name="a_welded" pos="0 0 0.3">
        <geom name="aw" type="sphere" size="0.1"/>
        <body name="b" pos="0 0 0.3">
          <joint name="jb" type="slide"/>
          <geom name="b1" type="capsule" size="0.05 0.1"/>
          <geom type="sphere" size="0.05" contype="0" conaffinity="2"/>
          <body name="c" pos="0 0 0.3">
            <joint name="jc" type="ball"/>
            <geom name="c1" type="box" size="0.1 0.1 0.1" contype="3" conaffinity="0"/>
          </body>
        </body>
      </body>
    </body>
    <body name="free" pos="2 0 1">
      <freejoint/>
      <geom name="f1" type="sphere" size="0.2"/>
      <geom name="f2" type="sphere" size="0.2" pos="0.1 0 0" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <contact>
    <exclude body1="free" body2="c"/>
    <pair geom1="a1" geom2="b1"/>
    <pair geom1="f2" geom2="ground" friction="0.3"/>
  </contact>
</mujoco>
"""

MODELS = {"frames": FRAMES, "radian": RADIAN, "humanoid": HUMANOID, "ant": ANT, "filter": FILTER}


def compile_both(tmp_path, xml: str, name: str = "model", **kwargs):
    path = tmp_path / f"{name}.xml"
    path.write_text(xml)
    result = import_file(path, **kwargs)
    assert not [d for d in result.diagnostics if d.is_error], result.diagnostics
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    return result, model, data


@pytest.fixture(params=sorted(MODELS))
def imported(request, tmp_path):
    return compile_both(tmp_path, MODELS[request.param], request.param)


def test_body_and_joint_poses_match_mujoco(imported):
    result, model, data = imported
    assert_kinematics(result.scene, model, data)


def test_inertials_match_mujoco(imported):
    result, model, _ = imported
    n = assert_inertials(result.scene, model)
    if result.scene.name == "frames":
        assert n == 2  # shin (diaginertia with quat) and toe (fullinertia)


def test_geoms_match_mujoco(imported):
    """World pose, size, friction, contact bits of every geom."""
    result, model, data = imported
    scene = result.scene
    bodies = {b.name: b for b in scene.bodies}
    names = mujoco_body_names(scene, model)
    world = next((b for b in scene.bodies if b.name.startswith("world_geoms")), None)
    for g in range(model.ngeom):
        bid = model.geom_bodyid[g]
        body = bodies[names[bid]] if bid else world
        col = body.colliders[g - model.body_geomadr[bid]]
        pos, quat = body_pose(body)
        cpos = np.array(col.pos) if len(col.pos) else np.zeros(3)
        cquat = np.array(col.quat) if len(col.quat) else frames.IDENTITY
        np.testing.assert_allclose(pos + frames.rotate(quat, cpos), data.geom_xpos[g], atol=TOL)
        rot = frames.quat_to_mat(frames.quat_mul(quat, cquat))
        mj_rot = data.geom_xmat[g].reshape(3, 3)
        shape = col.WhichOneof("shape")
        if shape in ("capsule", "sphere"):
            # symmetric about z (spheres: about everything): MuJoCo's frame may turn about z
            np.testing.assert_allclose(rot[:, 2], mj_rot[:, 2], atol=TOL) if shape == "capsule" else None
        else:
            np.testing.assert_allclose(rot, mj_rot, atol=TOL)
        size = model.geom_size[g]
        if shape == "sphere":
            assert abs(col.sphere.radius - size[0]) < TOL
        elif shape == "capsule":
            np.testing.assert_allclose([col.capsule.radius, col.capsule.half_length], size[:2], atol=TOL)
        elif shape == "box":
            np.testing.assert_allclose(col.box.half_size, size, atol=TOL)
        friction = col.friction if col.HasField("friction") else 1.0
        assert abs(friction - model.geom_friction[g][0]) < TOL
        assert (col.group if col.HasField("group") else 1) == model.geom_contype[g]
        assert (col.mask if col.HasField("mask") else 1) == model.geom_conaffinity[g]


def test_derived_masses_match_mujoco(imported):
    """Bodies without <inertial> (or with inertiafromgeom="true"): the mass and centre of mass
    the compiler derives from the colliders' densities are MuJoCo's."""
    result, model, _ = imported
    scene = result.scene
    bodies = {b.name: b for b in scene.bodies}
    checked = 0
    for i, name in mujoco_body_names(scene, model).items():
        b = bodies[name]
        if b.HasField("mass") or not b.colliders:
            continue
        mass, com = derived_mass_and_com(b, scene)
        assert mass == pytest.approx(model.body_mass[i], rel=TOL), name
        np.testing.assert_allclose(com, model.body_ipos[i], atol=TOL, err_msg=name)
        checked += 1
    assert checked > 0


def test_joint_parameters_match_mujoco(imported):
    result, model, _ = imported
    moving = [j for j in result.scene.joints if j.kind != scene_pb2.FIXED]
    for jid, j in enumerate(moving):
        assert model.joint(jid).name in ("", j.name)
        dof = model.jnt_dofadr[jid]
        limited = bool(model.jnt_limited[jid])
        assert limited == bool(len(j.range)), j.name
        if limited:
            np.testing.assert_allclose(j.range, model.jnt_range[jid], atol=TOL, err_msg=j.name)
        assert abs(j.damping - model.dof_damping[dof]) < TOL
        assert abs(j.armature - model.dof_armature[dof]) < TOL
        assert abs(j.stiffness - model.jnt_stiffness[jid]) < TOL
        if j.kind in (scene_pb2.HINGE, scene_pb2.SLIDE):
            qadr = model.jnt_qposadr[jid]
            assert abs(j.reference - model.qpos0[qadr]) < TOL, j.name
            if j.stiffness:  # the spring's rest position matters only with a spring
                spring = j.spring_reference if j.HasField("spring_reference") else j.reference
                assert abs(spring - model.qpos_spring[qadr]) < TOL, j.name


def test_actuators_match_mujoco(imported):
    """Gear, ranges and MuJoCo's gain/bias parameters of every actuator (scene.proto's kinds are
    MuJoCo's affine actuator with length = gear * q)."""
    result, model, _ = imported
    assert len(result.scene.actuators) == model.nu
    for k, a in enumerate(result.scene.actuators):
        assert model.actuator_trnid[k][0] == model.joint(a.joint).id
        gear = a.gear if a.HasField("gear") else 1.0
        assert abs(gear - model.actuator_gear[k][0]) < TOL
        if model.actuator_ctrllimited[k]:
            np.testing.assert_allclose(a.ctrl_range, model.actuator_ctrlrange[k], atol=TOL)
        else:
            assert not len(a.ctrl_range)
        if model.actuator_forcelimited[k]:
            np.testing.assert_allclose(a.force_range, model.actuator_forcerange[k], atol=TOL)
        else:
            assert not len(a.force_range)
        gain = {scene_pb2.MOTOR: 1.0, scene_pb2.POSITION: a.kp, scene_pb2.VELOCITY: a.kv,
                scene_pb2.GENERAL: a.gain[0] if len(a.gain) else 1.0}[a.kind]
        bias = {scene_pb2.MOTOR: [0, 0, 0], scene_pb2.POSITION: [0, -a.kp, -a.kv],
                scene_pb2.VELOCITY: [0, 0, -a.kv],
                scene_pb2.GENERAL: list(a.bias) + [0.0] * (3 - len(a.bias))}[a.kind]
        assert abs(gain - model.actuator_gainprm[k][0]) < TOL, a.name
        np.testing.assert_allclose(bias, model.actuator_biasprm[k][:3], atol=TOL, err_msg=a.name)


def test_keyframes_match_mujoco(imported):
    result, model, _ = imported
    assert len(result.scene.keyframes) == model.nkey
    moving = [j for j in result.scene.joints if j.kind != scene_pb2.FIXED]
    for k, kf in enumerate(result.scene.keyframes):
        assert [jv.joint for jv in kf.joints] == [j.name for j in moving]
        qpos = [x for jv in kf.joints for x in jv.q]
        np.testing.assert_allclose(qpos, model.key_qpos[k], atol=TOL)
        sizes = {scene_pb2.HINGE: 1, scene_pb2.SLIDE: 1, scene_pb2.BALL: 3, scene_pb2.FREE: 6}
        qvel = []
        for j, jv in zip(moving, kf.joints):
            qvel.extend(list(jv.qd) or [0.0] * sizes[j.kind])
        np.testing.assert_allclose(qvel, model.key_qvel[k], atol=TOL)


def test_collision_filter_matches_mujoco_rules(imported):
    result, model, _ = imported
    ours = filtering.candidate_pairs(result.scene)
    theirs = mujoco_rule_pairs(result.scene, model)
    assert ours == theirs, (sorted(map(sorted, ours - theirs)), sorted(map(sorted, theirs - ours)))


def test_filterparent_disabled(tmp_path):
    xml = FILTER.replace("<worldbody>", '<option><flag filterparent="disable"/></option><worldbody>')
    result, model, _ = compile_both(tmp_path, xml)
    assert result.scene.contacts.filter_parent is False
    assert filtering.candidate_pairs(result.scene) == mujoco_rule_pairs(result.scene, model)


def test_rule_pairs_are_the_pairs_mujoco_collides(tmp_path):
    """The documented rules are what MuJoCo does: with every geom a sphere at the same point (so
    every broadphase test passes), mj_collision finds exactly the rule pairs."""
    import re

    xml = re.sub(r'type="\w+"( pos="[^"]*")? size="[^"]*"', 'type="sphere" size="0.5"', FILTER)
    xml = re.sub(r' pos="[^"]*"', "", xml)
    assert "plane" not in xml and "box" not in xml
    result, model, data = compile_both(tmp_path, xml)
    mujoco.mj_forward(model, data)
    names = geom_names(result.scene, model)
    found = {frozenset((names[c.geom1], names[c.geom2])) for c in data.contact[:data.ncon]}
    assert found == mujoco_rule_pairs(result.scene, model)
    assert found == filtering.candidate_pairs(result.scene)


def test_options_and_names(tmp_path):
    result, model, _ = compile_both(tmp_path, FRAMES)
    o = result.scene.options
    assert o.timestep == model.opt.timestep
    np.testing.assert_allclose(o.gravity, model.opt.gravity, atol=TOL)
    assert o.friction_cone == scene_pb2.PYRAMIDAL
    assert o.contact_time_constant == 0.02 and o.limit_time_constant == 0.02
    # the unnamed body is named after its MuJoCo id; world geoms live on a static body
    assert "body4" in {b.name for b in result.scene.bodies}
    assert result.scene.bodies[0].name == "world_geoms"
    assert not any(j.child == "world_geoms" for j in result.scene.joints)
    # a body with no joint is welded to its parent
    weld = [j for j in result.scene.joints if j.kind == scene_pb2.FIXED]
    assert [(j.parent, j.child) for j in weld] == [("shin", "body4")]
    # the site was dropped with a located note, and the YAML comment says so
    notes = [d for d in result.diagnostics if d.code == "W701"]
    assert notes and notes[0].span.line == FRAMES.splitlines().index(
        next(line for line in FRAMES.splitlines() if "<site" in line)) + 1
    shin = [i for i, b in enumerate(result.scene.bodies) if b.name == "shin"][0]
    assert "site 's1'" in result.notes[("bodies", shin)]
    assert result.scene.contacts.exclude[0].first == "torso"
    assert result.scene.contacts.pairs[0].friction == 0.5


def test_exclude_names_are_escaped(tmp_path):
    xml = """<mujoco><worldbody>
      <body name="leg*[1]"><joint/><geom size="0.1"/></body>
      <body name="leg?"><joint/><geom size="0.1"/></body>
    </worldbody><contact><exclude body1="leg*[1]" body2="leg?"/></contact></mujoco>"""
    result, model, _ = compile_both(tmp_path, xml)
    ex = result.scene.contacts.exclude[0]
    assert (ex.first, ex.second) == ("leg[*][[]1]", "leg[?]")
    assert filtering.candidate_pairs(result.scene) == mujoco_rule_pairs(result.scene, model) == set()


def test_cylinder_conversion_keeps_mujoco_mass(tmp_path):
    xml = """<mujoco><worldbody><body name="wheel"><freejoint/>
      <geom name="c" type="cylinder" size="0.2 0.5" density="300"/>
      <geom name="d" type="cylinder" fromto="0 0 0 0 0.1 0" size="0.3" mass="2"/>
    </body></worldbody></mujoco>"""
    path = tmp_path / "cyl.xml"
    path.write_text(xml)
    refused = import_file(path)
    errors = [d for d in refused.diagnostics if d.is_error]
    assert [d.code for d in errors] == ["E707", "E707"] and exit_code(refused.diagnostics) == 1
    assert errors[0].span.line == 2 and "capsule" in errors[0].hint
    result, model, _ = compile_both(tmp_path, xml, "cyl", convert_cylinders=True)
    body = result.scene.bodies[0]
    caps = [c.capsule for c in body.colliders]
    assert [(c.radius, c.half_length) for c in caps] == [(0.2, 0.3), (0.3, 0.0)]
    mass, _ = derived_mass_and_com(body, result.scene)
    assert mass == pytest.approx(model.body_mass[1], rel=TOL)
    assert ("bodies", 0, "colliders", 0) in result.notes


def test_mesh_assets(tmp_path):
    """An inline tetrahedron with a mass, and a mesh file (inside the output folder: a relative
    path; outside it: inline vertices and a note)."""
    import trimesh

    meshdir = tmp_path / "assets"
    meshdir.mkdir()
    trimesh.creation.box(extents=(0.2, 0.4, 0.6)).export(meshdir / "block.stl")
    xml = """<mujoco><compiler meshdir="assets"/>
      <asset>
        <mesh name="tet" vertex="0 0 0  0.3 0 0  0 0.3 0  0 0 0.3"/>
        <mesh file="block.stl" scale="1 2 1"/>
      </asset>
      <worldbody>
        <body name="m"><freejoint/><geom type="mesh" mesh="tet" mass="1.5"/></body>
        <body name="n" pos="1 0 0"><freejoint/><geom type="mesh" mesh="block" density="700"/></body>
      </worldbody></mujoco>"""
    result, model, data = compile_both(tmp_path, xml)
    meshes = {m.name: m for m in result.scene.meshes}
    assert meshes["block"].file == "assets/block.stl" and list(meshes["block"].scale) == [1, 2, 1]
    assert len(meshes["tet"].vertices) == 12 and len(meshes["tet"].faces) == 12
    for i, b in ((1, result.scene.bodies[0]), (2, result.scene.bodies[1])):
        mass, _ = derived_mass_and_com(b, result.scene, base_dir=tmp_path)
        assert mass == pytest.approx(model.body_mass[i], rel=TOL)
    elsewhere = tmp_path / "out"
    outside = import_file(tmp_path / "model.xml", out_dir=elsewhere)
    block = {m.name: m for m in outside.scene.meshes}["block"]
    assert not block.file and len(block.vertices) == 8 * 3
    assert any(d.code == "W708" for d in outside.diagnostics)


def test_heightfield_elevation_is_mujocos(tmp_path):
    xml = """<mujoco><asset>
      <hfield name="terrain" nrow="3" ncol="4" size="2 1.5 0.8 0.1"
              elevation="1 2 3 4  2 3 4 5  0 1 1 9"/>
    </asset><worldbody><geom type="hfield" hfield="terrain"/></worldbody></mujoco>"""
    result, model, _ = compile_both(tmp_path, xml)
    hf = result.scene.heightfields[0]
    assert (hf.nrow, hf.ncol, hf.size_x, hf.size_y) == (3, 4, 2.0, 1.5)
    np.testing.assert_allclose(hf.elevation, model.hfield_data * model.hfield_size[0][2], atol=TOL)
    assert result.scene.bodies[0].colliders[0].heightfield.heightfield == "terrain"


def test_include(tmp_path):
    (tmp_path / "legs.xml").write_text(
        '<mujoco><body name="leg" pos="0 0 -0.5"><joint name="hip"/>'
        '<geom type="capsule" size="0.05 0.2"/></body></mujoco>')
    xml = ('<mujoco><worldbody><body name="torso" pos="0 0 1"><freejoint/>'
           '<geom size="0.1"/><include file="legs.xml"/></body></worldbody></mujoco>')
    result, model, data = compile_both(tmp_path, xml)
    assert [b.name for b in result.scene.bodies] == ["torso", "leg"]
    assert_kinematics(result.scene, model, data)


@pytest.mark.parametrize("snippet,code,line,col", [
    ("<worldbody><bodyy/></worldbody>", "E702", 2, 12),
    ('<worldbody><geom size="0.1" frction="1"/></worldbody>', "E703", 2, 29),
    ('<worldbody><geom size="0.1 abc"/></worldbody>', "E704", 2, 18),
    ('<worldbody><geom type="mesh" mesh="nope"/></worldbody>', "E706", 2, 30),
    ('<worldbody><geom type="ellipsoid" size="1 2 3"/></worldbody>', "E707", 2, 18),
    ("<tendon/>", "E708", 2, 1),
    ('<worldbody><body><joint name="j"/><geom size="1"/></body></worldbody>'
     '<actuator><muscle joint="j"/></actuator>', "E709", 2, 80),
    ('<compiler coordinate="global"/>', "E711", 2, 11),
    ('<asset><mesh file="missing.stl"/></asset>', "E712", 2, 14),
])
def test_errors_are_located(tmp_path, snippet, code, line, col):
    path = tmp_path / "bad.xml"
    path.write_text(f"<mujoco>\n{snippet}\n</mujoco>\n")
    result = import_file(path)
    got = [(d.code, d.span.line, d.span.col) for d in result.diagnostics if d.is_error]
    assert got == [(code, line, col)], result.diagnostics


def test_unknown_element_suggests_a_fix(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text("<mujoco><worldbody><bodyy/></worldbody></mujoco>")
    d = import_file(path).diagnostics[0]
    assert d.code == "E702" and d.hint == "did you mean <body>?"


def test_defaults_resolve_like_mujoco(tmp_path):
    """Class attributes reach elements through `class`, `childclass` and nesting."""
    result, model, _ = compile_both(tmp_path, FRAMES)
    cols = {c.name: c for b in result.scene.bodies for c in b.colliders if c.name}
    for g in range(model.ngeom):
        name = model.geom(g).name
        c = cols[name]
        assert (c.friction if c.HasField("friction") else 1.0) == pytest.approx(model.geom_friction[g][0])
        np.testing.assert_allclose(c.rgba or [0.5, 0.5, 0.5, 1], model.geom_rgba[g], atol=1e-7)
    assert math.isclose(result.scene.joints[3].stiffness, 5.0)  # knee: from class "shin"


def test_non_convex_mesh_keeps_mujocos_mass(tmp_path):
    """MuJoCo weighs a closed mesh by its enclosed volume; scenec's compiler by its convex hull
    (the shape contacts use). An L-shaped prism (volume 3, hull 3.5) gets a scaled density."""
    import trimesh

    pts = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float) * 0.1
    tris = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 5]])
    trimesh.creation.extrude_triangulation(pts, tris, 0.1).export(tmp_path / "ell.stl")
    xml = """<mujoco><asset><mesh file="ell.stl"/></asset><worldbody>
      <body name="ell"><freejoint/><geom type="mesh" mesh="ell" density="800"/></body>
    </worldbody></mujoco>"""
    result, model, _ = compile_both(tmp_path, xml)
    col = result.scene.bodies[0].colliders[0]
    assert col.density == pytest.approx(800 * 3.0 / 3.5, rel=TOL)
    mass, _ = derived_mass_and_com(result.scene.bodies[0], result.scene, base_dir=tmp_path)
    assert mass == pytest.approx(model.body_mass[1], rel=TOL)
    assert any(d.code == "W705" for d in result.diagnostics)
