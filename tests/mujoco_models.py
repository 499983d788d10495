"""MJCF models shared by the MuJoCo comparison tests (test_mujoco_parity.py, test_mujoco_contacts.py).

Two families:
- small contact-free mechanisms written for these tests: pendulums with hinge, slide and ball joints,
  a cart-pole, the Reacher arm. Every geom has contype = conaffinity = 0, so neither engine computes a
  contact, and the ranges are wide enough that no limit is reached over a test's trajectory;
- the public MuJoCo models the scene library is built from (Gym/Gymnasium's Ant, HalfCheetah, Hopper,
  Walker2d, Humanoid, Reacher and InvertedPendulum), with their physical parameters as published and
  everything that only draws (lights, cameras, materials, textures, colours) left out. They keep
  their original integrator (RK4 for most); the tests switch MuJoCo to Euler after loading, because
  scenec integrates with semi-implicit Euler.

The strings are data; `write(tmp_path, name)` saves one as `<name>.xml` for the importer.
"""

from __future__ import annotations

import pathlib

# --- contact-free mechanisms ------------------------------------------------------------------------

# One 1 kg bob on a massless 0.8 m rod, hinged about y at the origin; damping makes the amplitude
# decay, so the test also checks MuJoCo's implicit treatment of joint damping in its Euler integrator.
PENDULUM = """
<mujoco model="pendulum">
  <option timestep="0.002" integrator="Euler"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="bob" pos="0 0 -0.8">
      <joint name="swing" type="hinge" pos="0 0 0.8" axis="0 1 0" damping="0.05"/>
      <geom type="sphere" size="0.05" mass="1"/>
    </body>
  </worldbody>
  <keyframe><key name="start" qpos="1.2"/></keyframe>
</mujoco>
"""

# Two capsule links (masses from density), the elbow axis tilted off the shoulder's so the motion is
# three-dimensional; a spring on the elbow, armature on both.
DOUBLE_PENDULUM = """
<mujoco model="double_pendulum">
  <option timestep="0.002" integrator="Euler"/>
  <default>
    <geom contype="0" conaffinity="0" density="800"/>
    <joint armature="0.002"/>
  </default>
  <worldbody>
    <body name="upper" pos="0 0 0">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.03"/>
      <body name="lower" pos="0 0 -0.5">
        <joint name="elbow" type="hinge" axis="0.3 1 0" stiffness="2" springref="0.2"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 -0.4" size="0.025"/>
      </body>
    </body>
  </worldbody>
  <keyframe><key name="start" qpos="0.9 -0.4" qvel="0 1.5"/></keyframe>
</mujoco>
"""

# Three links with explicit <inertial>s (off-axis centres of mass, full inertia tensors) and a
# tilted body frame, so the importer's inertial path and frame composition are exercised too.
TRIPLE_PENDULUM = """
<mujoco model="triple_pendulum">
  <option timestep="0.001" integrator="Euler"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="link1" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.01"/>
      <inertial pos="0.01 0 -0.2" mass="0.8" fullinertia="0.011 0.012 0.002 0.0005 0.0001 0.0002"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.02"/>
      <body name="link2" pos="0 0 -0.4" euler="0 0 20">
        <joint name="j2" type="hinge" axis="0 1 0" damping="0.01"/>
        <inertial pos="0 0.005 -0.15" mass="0.5" diaginertia="0.004 0.0042 0.0006"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02"/>
        <body name="link3" pos="0 0 -0.3">
          <joint name="j3" type="hinge" axis="1 0 0" damping="0.01"/>
          <inertial pos="0 0 -0.1" mass="0.3" diaginertia="0.001 0.001 0.0002"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02"/>
        </body>
      </body>
    </body>
  </worldbody>
  <keyframe><key name="start" qpos="0.5 -0.3 0.4"/></keyframe>
</mujoco>
"""

# A bob that swings on a hinge and slides along its own rod against a spring (an elastic pendulum):
# the slide joint's stiffness, spring reference and damping, and the hinge-slide coupling.
SLIDE_PENDULUM = """
<mujoco model="slide_pendulum">
  <option timestep="0.002" integrator="Euler"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="arm" pos="0 0 0">
      <joint name="swing" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.2"/>
      <body name="bob" pos="0 0 -0.6">
        <joint name="stretch" type="slide" axis="0 0 1" stiffness="60" springref="0.05" damping="0.2"/>
        <geom type="sphere" size="0.06" mass="1.5"/>
      </body>
    </body>
  </worldbody>
  <keyframe><key name="start" qpos="0.8 0.1" qvel="0.5 0"/></keyframe>
</mujoco>
"""

# A spherical pendulum on a ball joint, started with a sideways spin so it precesses; below it a
# second ball joint carries a box: quaternion integration and body-frame angular velocities.
BALL_PENDULUM = """
<mujoco model="ball_pendulum">
  <option timestep="0.002" integrator="Euler"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="rod" pos="0 0 0">
      <joint name="pivot" type="ball" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.03" density="700"/>
      <body name="box" pos="0 0 -0.5">
        <joint name="wrist" type="ball" armature="0.001"/>
        <geom type="box" pos="0.05 0 -0.1" size="0.04 0.06 0.1" density="900"/>
      </body>
    </body>
  </worldbody>
  <keyframe>
    <key name="start" qpos="0.955336489 0.295520207 0 0  0.980066578 0 0.198669331 0" qvel="0 0 2.5  1 0 -1"/>
  </keyframe>
</mujoco>
"""

# A cart on a rail with a pole on a hinge: Gym's InvertedPendulum (see INVERTED_PENDULUM below) with
# a driven cart, started off balance.
CARTPOLE = """
<mujoco model="cartpole">
  <option timestep="0.01" integrator="Euler"/>
  <default>
    <geom contype="0" conaffinity="0"/>
    <joint damping="1"/>
  </default>
  <worldbody>
    <body name="cart" pos="0 0 0">
      <joint name="slider" type="slide" axis="1 0 0"/>
      <geom type="capsule" quat="0.707 0 0.707 0" size="0.1 0.1"/>
      <body name="pole" pos="0 0 0">
        <joint name="hinge" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.001 0 0.6" size="0.049"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor name="slide" joint="slider" gear="100" ctrllimited="true" ctrlrange="-3 3"/></actuator>
  <keyframe><key name="start" qpos="0 0.3"/></keyframe>
</mujoco>
"""

# --- the public models -------------------------------------------------------------------------------

# Gym's InvertedPendulum (inverted_pendulum.xml): masses from the geoms at density 1000, joint damping
# 1, motor gear 100 with ctrl in [-3, 3], 0.02 s timestep, RK4.
INVERTED_PENDULUM = """
<mujoco model="inverted pendulum">
  <compiler inertiafromgeom="true"/>
  <default>
    <joint armature="0" damping="1" limited="true"/>
    <geom contype="0" friction="1 0.1 0.1"/>
    <motor ctrlrange="-3 3"/>
  </default>
  <option gravity="0 0 -9.81" integrator="RK4" timestep="0.02"/>
  <worldbody>
    <geom name="rail" pos="0 0 0" quat="0.707 0 0.707 0" size="0.02 1" type="capsule"/>
    <body name="cart" pos="0 0 0">
      <joint axis="1 0 0" limited="true" name="slider" pos="0 0 0" range="-1 1" type="slide"/>
      <geom name="cart" pos="0 0 0" quat="0.707 0 0.707 0" size="0.1 0.1" type="capsule"/>
      <body name="pole" pos="0 0 0">
        <joint axis="0 1 0" name="hinge" pos="0 0 0" range="-90 90" type="hinge"/>
        <geom fromto="0 0 0 0.001 0 0.6" name="cpole" size="0.049 0.3" type="capsule"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor ctrllimited="true" ctrlrange="-3 3" gear="100" joint="slider" name="slide"/>
  </actuator>
</mujoco>
"""

# Gym's Reacher (reacher.xml): a two-link arm in the horizontal plane, links of 0.1 m (capsules of
# radius 0.01, density 1000), armature 1 and damping 1, motors of gear 200, and a target on two slide
# joints. The arena walls and the root cylinder are world geoms that never collide (contype 0 on the
# arm) and carry no mass; they are left out.
REACHER = """
<mujoco model="reacher">
  <compiler angle="radian" inertiafromgeom="true"/>
  <default>
    <joint armature="1" damping="1" limited="true"/>
    <geom contype="0" conaffinity="0" friction="1 0.1 0.1"/>
  </default>
  <option gravity="0 0 -9.81" integrator="RK4" timestep="0.01"/>
  <worldbody>
    <body name="body0" pos="0 0 .01">
      <geom fromto="0 0 0 0.1 0 0" name="link0" size=".01" type="capsule"/>
      <joint axis="0 0 1" limited="false" name="joint0" pos="0 0 0" type="hinge"/>
      <body name="body1" pos="0.1 0 0">
        <joint axis="0 0 1" limited="true" name="joint1" pos="0 0 0" range="-3.0 3.0" type="hinge"/>
        <geom fromto="0 0 0 0.1 0 0" name="link1" size=".01" type="capsule"/>
        <body name="fingertip" pos="0.11 0 0">
          <geom name="fingertip" pos="0 0 0" size=".01" type="sphere"/>
        </body>
      </body>
    </body>
    <body name="target" pos=".1 -.1 .01">
      <joint armature="0" axis="1 0 0" damping="0" limited="true" name="target_x" pos="0 0 0"
             range="-.27 .27" ref=".1" stiffness="0" type="slide"/>
      <joint armature="0" axis="0 1 0" damping="0" limited="true" name="target_y" pos="0 0 0"
             range="-.27 .27" ref="-.1" stiffness="0" type="slide"/>
      <geom name="target" pos="0 0 0" size=".009" type="sphere"/>
    </body>
  </worldbody>
  <actuator>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" gear="200.0" joint="joint0"/>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" gear="200.0" joint="joint1"/>
  </actuator>
</mujoco>
"""

# Gym's Ant (ant.xml): sphere torso and capsule legs at density 5, armature 1, damping 1, geom margin
# 0.01, RK4 at 0.01 s; only the floor collides with the ant. The `init_qpos` of the original's
# <custom> section (torso at 0.55 m, ankles at ±1 rad) is the keyframe `init`.
ANT = """
<mujoco model="ant">
  <compiler angle="degree" coordinate="local" inertiafromgeom="true"/>
  <option integrator="RK4" timestep="0.01"/>
  <default>
    <joint armature="1" damping="1" limited="true"/>
    <geom conaffinity="0" condim="3" density="5.0" friction="1 0.5 0.5" margin="0.01"/>
  </default>
  <worldbody>
    <geom conaffinity="1" condim="3" name="floor" pos="0 0 0" size="40 40 40" type="plane"/>
    <body name="torso" pos="0 0 0.75">
      <geom name="torso_geom" pos="0 0 0" size="0.25" type="sphere"/>
      <joint armature="0" damping="0" limited="false" margin="0.01" name="root" pos="0 0 0" type="free"/>
      <body name="front_left_leg" pos="0 0 0">
        <geom fromto="0.0 0.0 0.0 0.2 0.2 0.0" name="aux_1_geom" size="0.08" type="capsule"/>
        <body name="aux_1" pos="0.2 0.2 0">
          <joint axis="0 0 1" name="hip_1" pos="0.0 0.0 0.0" range="-30 30" type="hinge"/>
          <geom fromto="0.0 0.0 0.0 0.2 0.2 0.0" name="left_leg_geom" size="0.08" type="capsule"/>
          <body name="front_left_foot" pos="0.2 0.2 0">
            <joint axis="-1 1 0" name="ankle_1" pos="0.0 0.0 0.0" range="30 70" type="hinge"/>
            <geom fromto="0.0 0.0 0.0 0.4 0.4 0.0" name="left_ankle_geom" size="0.08" type="capsule"/>
          </body>
        </body>
      </body>
      <body name="front_right_leg" pos="0 0 0">
        <geom fromto="0.0 0.0 0.0 -0.2 0.2 0.0" name="aux_2_geom" size="0.08" type="capsule"/>
        <body name="aux_2" pos="-0.2 0.2 0">
          <joint axis="0 0 1" name="hip_2" pos="0.0 0.0 0.0" range="-30 30" type="hinge"/>
          <geom fromto="0.0 0.0 0.0 -0.2 0.2 0.0" name="right_leg_geom" size="0.08" type="capsule"/>
          <body name="front_right_foot" pos="-0.2 0.2 0">
            <joint axis="1 1 0" name="ankle_2" pos="0.0 0.0 0.0" range="-70 -30" type="hinge"/>
            <geom fromto="0.0 0.0 0.0 -0.4 0.4 0.0" name="right_ankle_geom" size="0.08" type="capsule"/>
          </body>
        </body>
      </body>
      <body name="back_leg" pos="0 0 0">
        <geom fromto="0.0 0.0 0.0 -0.2 -0.2 0.0" name="aux_3_geom" size="0.08" type="capsule"/>
        <body name="aux_3" pos="-0.2 -0.2 0">
          <joint axis="0 0 1" name="hip_3" pos="0.0 0.0 0.0" range="-30 30" type="hinge"/>
          <geom fromto="0.0 0.0 0.0 -0.2 -0.2 0.0" name="back_leg_geom" size="0.08" type="capsule"/>
          <body name="left_back_foot" pos="-0.2 -0.2 0">
            <joint axis="-1 1 0" name="ankle_3" pos="0.0 0.0 0.0" range="-70 -30" type="hinge"/>
            <geom fromto="0.0 0.0 0.0 -0.4 -0.4 0.0" name="third_ankle_geom" size="0.08" type="capsule"/>
          </body>
        </body>
      </body>
      <body name="right_back_leg" pos="0 0 0">
        <geom fromto="0.0 0.0 0.0 0.2 -0.2 0.0" name="aux_4_geom" size="0.08" type="capsule"/>
        <body name="aux_4" pos="0.2 -0.2 0">
          <joint axis="0 0 1" name="hip_4" pos="0.0 0.0 0.0" range="-30 30" type="hinge"/>
          <geom fromto="0.0 0.0 0.0 0.2 -0.2 0.0" name="rightback_leg_geom" size="0.08" type="capsule"/>
          <body name="right_back_foot" pos="0.2 -0.2 0">
            <joint axis="1 1 0" name="ankle_4" pos="0.0 0.0 0.0" range="30 70" type="hinge"/>
            <geom fromto="0.0 0.0 0.0 0.4 -0.4 0.0" name="fourth_ankle_geom" size="0.08" type="capsule"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" joint="hip_4" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" joint="ankle_4" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" joint="hip_1" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" joint="ankle_1" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" joint="hip_2" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" joint="ankle_2" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" joint="hip_3" gear="150"/>
    <motor ctrllimited="true" ctrlrange="-1.0 1.0" joint="ankle_3" gear="150"/>
  </actuator>
  <keyframe>
    <key name="init" qpos="0 0 0.55 1 0 0 0  0 1 0 -1 0 -1 0 1"/>
  </keyframe>
</mujoco>
"""

# Gym's HalfCheetah (half_cheetah.xml): 8 capsules of radius 0.046 whose masses are scaled to 14 kg in
# total, joint stiffness/damping per joint, armature 0.1, friction 0.4, 0.01 s steps. The original
# scales the masses with <compiler settotalmass="14">, which MuJoCo now deprecates (it logs a warning
# to MUJOCO_LOG.TXT); the tests apply it after loading instead (TOTAL_MASS, mj_setTotalmass).
HALF_CHEETAH = """
<mujoco model="cheetah">
  <compiler angle="radian" coordinate="local" inertiafromgeom="true"/>
  <default>
    <joint armature=".1" damping=".01" limited="true" solimplimit="0 .8 .03" solreflimit=".02 1" stiffness="8"/>
    <geom conaffinity="0" condim="3" contype="1" friction=".4 .1 .1" solimp="0.0 0.8 0.01" solref="0.02 1"/>
    <motor ctrllimited="true" ctrlrange="-1 1"/>
  </default>
  <option gravity="0 0 -9.81" timestep="0.01"/>
  <worldbody>
    <geom conaffinity="1" condim="3" name="floor" pos="0 0 0" size="40 40 40" type="plane"/>
    <body name="torso" pos="0 0 .7">
      <joint armature="0" axis="1 0 0" damping="0" limited="false" name="rootx" pos="0 0 0" stiffness="0" type="slide"/>
      <joint armature="0" axis="0 0 1" damping="0" limited="false" name="rootz" pos="0 0 0" stiffness="0" type="slide"/>
      <joint armature="0" axis="0 1 0" damping="0" limited="false" name="rooty" pos="0 0 0" stiffness="0" type="hinge"/>
      <geom fromto="-.5 0 0 .5 0 0" name="torso" size="0.046" type="capsule"/>
      <geom axisangle="0 1 0 .87" name="head" pos=".6 0 .1" size="0.046 .15" type="capsule"/>
      <body name="bthigh" pos="-.5 0 0">
        <joint axis="0 1 0" damping="6" name="bthigh" pos="0 0 0" range="-.52 1.05" stiffness="240" type="hinge"/>
        <geom axisangle="0 1 0 -3.8" name="bthigh" pos=".1 0 -.13" size="0.046 .145" type="capsule"/>
        <body name="bshin" pos=".16 0 -.25">
          <joint axis="0 1 0" damping="4.5" name="bshin" pos="0 0 0" range="-.785 .785" stiffness="180" type="hinge"/>
          <geom axisangle="0 1 0 -2.03" name="bshin" pos="-.14 0 -.07" size="0.046 .15" type="capsule"/>
          <body name="bfoot" pos="-.28 0 -.14">
            <joint axis="0 1 0" damping="3" name="bfoot" pos="0 0 0" range="-.4 .785" stiffness="120" type="hinge"/>
            <geom axisangle="0 1 0 -.27" name="bfoot" pos=".03 0 -.097" size="0.046 .094" type="capsule"/>
          </body>
        </body>
      </body>
      <body name="fthigh" pos=".5 0 0">
        <joint axis="0 1 0" damping="4.5" name="fthigh" pos="0 0 0" range="-1 .7" stiffness="180" type="hinge"/>
        <geom axisangle="0 1 0 .52" name="fthigh" pos="-.07 0 -.12" size="0.046 .133" type="capsule"/>
        <body name="fshin" pos="-.14 0 -.24">
          <joint axis="0 1 0" damping="3" name="fshin" pos="0 0 0" range="-1.2 .87" stiffness="120" type="hinge"/>
          <geom axisangle="0 1 0 -.6" name="fshin" pos=".065 0 -.09" size="0.046 .106" type="capsule"/>
          <body name="ffoot" pos=".13 0 -.18">
            <joint axis="0 1 0" damping="1.5" name="ffoot" pos="0 0 0" range="-.5 .5" stiffness="60" type="hinge"/>
            <geom axisangle="0 1 0 -.6" name="ffoot" pos=".045 0 -.07" size="0.046 .07" type="capsule"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor gear="120" joint="bthigh" name="bthigh"/>
    <motor gear="90" joint="bshin" name="bshin"/>
    <motor gear="60" joint="bfoot" name="bfoot"/>
    <motor gear="120" joint="fthigh" name="fthigh"/>
    <motor gear="60" joint="fshin" name="fshin"/>
    <motor gear="30" joint="ffoot" name="ffoot"/>
  </actuator>
</mujoco>
"""

# Gymnasium's Hopper (hopper.xml, v4/v5): capsules at density 1000, armature 1, damping 1, frictionless
# self-contacts (condim 1), friction 0.9 (2 on the foot), 0.002 s steps, RK4.
HOPPER = """
<mujoco model="hopper">
  <compiler angle="radian" autolimits="true"/>
  <option integrator="RK4"/>
  <default>
    <joint limited="true" armature="1" damping="1"/>
    <geom condim="1" solimp="0.8 0.8 0.01 0.5 2" margin="0.001"/>
    <general ctrllimited="true" ctrlrange="-0.4 0.4"/>
  </default>
  <worldbody>
    <geom name="floor" size="20 20 0.125" type="plane" condim="3"/>
    <body name="torso" pos="0 0 1.25">
      <joint name="rootx" pos="0 0 -1.25" axis="1 0 0" limited="false" type="slide" armature="0" damping="0"/>
      <joint name="rootz" pos="0 0 -1.25" axis="0 0 1" limited="false" type="slide" ref="1.25" armature="0" damping="0"/>
      <joint name="rooty" pos="0 0 0" axis="0 1 0" limited="false" armature="0" damping="0"/>
      <geom name="torso_geom" size="0.05 0.2" type="capsule" friction="0.9 0.005 0.0001"/>
      <body name="thigh" pos="0 0 -0.2">
        <joint name="thigh_joint" pos="0 0 0" axis="0 -1 0" range="-2.61799 0"/>
        <geom name="thigh_geom" size="0.05 0.225" pos="0 0 -0.225" type="capsule" friction="0.9 0.005 0.0001"/>
        <body name="leg" pos="0 0 -0.7">
          <joint name="leg_joint" pos="0 0 0.25" axis="0 -1 0" range="-2.61799 0"/>
          <geom name="leg_geom" size="0.04 0.25" type="capsule" friction="0.9 0.005 0.0001"/>
          <body name="foot" pos="0.13 0 -0.35">
            <joint name="foot_joint" pos="-0.13 0 0.1" axis="0 -1 0" range="-0.785398 0.785398"/>
            <geom name="foot_geom" size="0.06 0.195" pos="-0.065 0 0.1" quat="0.707107 0 -0.707107 0" type="capsule" friction="2 0.005 0.0001"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general joint="thigh_joint" ctrlrange="-1 1" gear="200 0 0 0 0 0"/>
    <general joint="leg_joint" ctrlrange="-1 1" gear="200 0 0 0 0 0"/>
    <general joint="foot_joint" ctrlrange="-1 1" gear="200 0 0 0 0 0"/>
  </actuator>
</mujoco>
"""

# Gymnasium's Walker2d (walker2d.xml, v4): two legs like the Hopper's with a shorter foot, armature
# 0.01, damping 0.1, friction 0.9 (1.9 on the left foot), contype 1 / conaffinity 0 on the walker,
# 0.002 s steps, RK4.
WALKER2D = """
<mujoco model="walker2d">
  <compiler angle="radian" autolimits="true"/>
  <option integrator="RK4"/>
  <default>
    <joint limited="true" armature="0.01" damping="0.1"/>
    <geom conaffinity="0" friction="0.7 0.1 0.1"/>
  </default>
  <worldbody>
    <geom name="floor" size="40 40 40" type="plane" conaffinity="1"/>
    <body name="torso" pos="0 0 1.25">
      <joint name="rootx" pos="0 0 -1.25" axis="1 0 0" limited="false" type="slide" armature="0" damping="0"/>
      <joint name="rootz" pos="0 0 -1.25" axis="0 0 1" limited="false" type="slide" ref="1.25" armature="0" damping="0"/>
      <joint name="rooty" pos="0 0 0" axis="0 1 0" limited="false" armature="0" damping="0"/>
      <geom name="torso_geom" size="0.05 0.2" type="capsule" friction="0.9 0.1 0.1"/>
      <body name="thigh" pos="0 0 -0.2">
        <joint name="thigh_joint" pos="0 0 0" axis="0 -1 0" range="-2.61799 0"/>
        <geom name="thigh_geom" size="0.05 0.225" pos="0 0 -0.225" type="capsule" friction="0.9 0.1 0.1"/>
        <body name="leg" pos="0 0 -0.7">
          <joint name="leg_joint" pos="0 0 0.25" axis="0 -1 0" range="-2.61799 0"/>
          <geom name="leg_geom" size="0.04 0.25" type="capsule" friction="0.9 0.1 0.1"/>
          <body name="foot" pos="0.2 0 -0.35">
            <joint name="foot_joint" pos="-0.2 0 0.1" axis="0 -1 0" range="-0.785398 0.785398"/>
            <geom name="foot_geom" size="0.06 0.1" pos="-0.1 0 0.1" quat="0.707107 0 -0.707107 0" type="capsule" friction="0.9 0.1 0.1"/>
          </body>
        </body>
      </body>
      <body name="thigh_left" pos="0 0 -0.2">
        <joint name="thigh_left_joint" pos="0 0 0" axis="0 -1 0" range="-2.61799 0"/>
        <geom name="thigh_left_geom" size="0.05 0.225" pos="0 0 -0.225" type="capsule" friction="0.9 0.1 0.1"/>
        <body name="leg_left" pos="0 0 -0.7">
          <joint name="leg_left_joint" pos="0 0 0.25" axis="0 -1 0" range="-2.61799 0"/>
          <geom name="leg_left_geom" size="0.04 0.25" type="capsule" friction="0.9 0.1 0.1"/>
          <body name="foot_left" pos="0.2 0 -0.35">
            <joint name="foot_left_joint" pos="-0.2 0 0.1" axis="0 -1 0" range="-0.785398 0.785398"/>
            <geom name="foot_left_geom" size="0.06 0.1" pos="-0.1 0 0.1" quat="0.707107 0 -0.707107 0" type="capsule" friction="1.9 0.1 0.1"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general joint="thigh_joint" ctrlrange="-1 1" gear="100 0 0 0 0 0"/>
    <general joint="leg_joint" ctrlrange="-1 1" gear="100 0 0 0 0 0"/>
    <general joint="foot_joint" ctrlrange="-1 1" gear="100 0 0 0 0 0"/>
    <general joint="thigh_left_joint" ctrlrange="-1 1" gear="100 0 0 0 0 0"/>
    <general joint="leg_left_joint" ctrlrange="-1 1" gear="100 0 0 0 0 0"/>
    <general joint="foot_left_joint" ctrlrange="-1 1" gear="100 0 0 0 0 0"/>
  </actuator>
</mujoco>
"""

# Gymnasium's Humanoid (humanoid.xml, v4/v5): capsules and spheres at density 1000, per-joint armature,
# damping and stiffness, frictionless body-body contacts (condim 1, the floor has condim 3), geom
# margin 0.001, 0.003 s steps, RK4. The two fixed tendons of the original (hip-knee sums) carry no
# stiffness, damping, limit or actuator, so they change nothing in the dynamics and are left out.
HUMANOID = """
<mujoco model="humanoid">
  <compiler angle="degree" inertiafromgeom="true"/>
  <default>
    <joint armature="1" damping="1" limited="true"/>
    <geom conaffinity="1" condim="1" contype="1" margin="0.001"/>
    <motor ctrllimited="true" ctrlrange="-.4 .4"/>
  </default>
  <option integrator="RK4" iterations="50" solver="Newton" timestep="0.003"/>
  <worldbody>
    <geom condim="3" friction="1 .1 .1" name="floor" pos="0 0 0" size="20 20 0.125" type="plane"/>
    <body name="torso" pos="0 0 1.4">
      <joint armature="0" damping="0" limited="false" name="root" pos="0 0 0" stiffness="0" type="free"/>
      <geom fromto="0 -.07 0 0 .07 0" name="torso1" size="0.07" type="capsule"/>
      <geom name="head" pos="0 0 .19" size=".09" type="sphere"/>
      <geom fromto="-.01 -.06 -.12 -.01 .06 -.12" name="uwaist" size="0.06" type="capsule"/>
      <body name="lwaist" pos="-.01 0 -0.260" quat="1.000 0 -0.002 0">
        <geom fromto="0 -.06 0 0 .06 0" name="lwaist" size="0.06" type="capsule"/>
        <joint armature="0.02" axis="0 0 1" damping="5" name="abdomen_z" pos="0 0 0.065" range="-45 45" stiffness="20" type="hinge"/>
        <joint armature="0.02" axis="0 1 0" damping="5" name="abdomen_y" pos="0 0 0.065" range="-75 30" stiffness="10" type="hinge"/>
        <body name="pelvis" pos="0 0 -0.165" quat="1.000 0 -0.002 0">
          <joint armature="0.02" axis="1 0 0" damping="5" name="abdomen_x" pos="0 0 0.1" range="-35 35" stiffness="10" type="hinge"/>
          <geom fromto="-.02 -.07 0 -.02 .07 0" name="butt" size="0.09" type="capsule"/>
          <body name="right_thigh" pos="0 -0.1 -0.04">
            <joint armature="0.01" axis="1 0 0" damping="5" name="right_hip_x" pos="0 0 0" range="-25 5" stiffness="10" type="hinge"/>
            <joint armature="0.01" axis="0 0 1" damping="5" name="right_hip_z" pos="0 0 0" range="-60 35" stiffness="10" type="hinge"/>
            <joint armature="0.0080" axis="0 1 0" damping="5" name="right_hip_y" pos="0 0 0" range="-110 20" stiffness="20" type="hinge"/>
            <geom fromto="0 0 0 0 0.01 -.34" name="right_thigh1" size="0.06" type="capsule"/>
            <body name="right_shin" pos="0 0.01 -0.403">
              <joint armature="0.0060" axis="0 -1 0" name="right_knee" pos="0 0 .02" range="-160 -2" type="hinge"/>
              <geom fromto="0 0 0 0 0 -.3" name="right_shin1" size="0.049" type="capsule"/>
              <body name="right_foot" pos="0 0 -0.45">
                <geom name="right_foot" pos="0 0 0.1" size="0.075" type="sphere"/>
              </body>
            </body>
          </body>
          <body name="left_thigh" pos="0 0.1 -0.04">
            <joint armature="0.01" axis="-1 0 0" damping="5" name="left_hip_x" pos="0 0 0" range="-25 5" stiffness="10" type="hinge"/>
            <joint armature="0.01" axis="0 0 -1" damping="5" name="left_hip_z" pos="0 0 0" range="-60 35" stiffness="10" type="hinge"/>
            <joint armature="0.01" axis="0 1 0" damping="5" name="left_hip_y" pos="0 0 0" range="-110 20" stiffness="20" type="hinge"/>
            <geom fromto="0 0 0 0 -0.01 -.34" name="left_thigh1" size="0.06" type="capsule"/>
            <body name="left_shin" pos="0 -0.01 -0.403">
              <joint armature="0.0060" axis="0 -1 0" name="left_knee" pos="0 0 .02" range="-160 -2" stiffness="1" type="hinge"/>
              <geom fromto="0 0 0 0 0 -.3" name="left_shin1" size="0.049" type="capsule"/>
              <body name="left_foot" pos="0 0 -0.45">
                <geom name="left_foot" type="sphere" size="0.075" pos="0 0 0.1"/>
              </body>
            </body>
          </body>
        </body>
      </body>
      <body name="right_upper_arm" pos="0 -0.17 0.06">
        <joint armature="0.0068" axis="2 1 1" name="right_shoulder1" pos="0 0 0" range="-85 60" stiffness="1" type="hinge"/>
        <joint armature="0.0051" axis="0 -1 1" name="right_shoulder2" pos="0 0 0" range="-85 60" stiffness="1" type="hinge"/>
        <geom fromto="0 0 0 .16 -.16 -.16" name="right_uarm1" size="0.04 0.16" type="capsule"/>
        <body name="right_lower_arm" pos=".18 -.18 -.18">
          <joint armature="0.0028" axis="0 -1 1" name="right_elbow" pos="0 0 0" range="-90 50" stiffness="0" type="hinge"/>
          <geom fromto="0.01 0.01 0.01 .17 .17 .17" name="right_larm" size="0.031" type="capsule"/>
          <geom name="right_hand" pos=".18 .18 .18" size="0.04" type="sphere"/>
        </body>
      </body>
      <body name="left_upper_arm" pos="0 0.17 0.06">
        <joint armature="0.0068" axis="2 -1 1" name="left_shoulder1" pos="0 0 0" range="-60 85" stiffness="1" type="hinge"/>
        <joint armature="0.0051" axis="0 1 1" name="left_shoulder2" pos="0 0 0" range="-60 85" stiffness="1" type="hinge"/>
        <geom fromto="0 0 0 .16 .16 -.16" name="left_uarm1" size="0.04 0.16" type="capsule"/>
        <body name="left_lower_arm" pos=".18 .18 -.18">
          <joint armature="0.0028" axis="0 -1 -1" name="left_elbow" pos="0 0 0" range="-90 50" stiffness="0" type="hinge"/>
          <geom fromto="0.01 -0.01 0.01 .17 -.17 .17" name="left_larm" size="0.031" type="capsule"/>
          <geom name="left_hand" pos=".18 -.18 .18" size="0.04" type="sphere"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor gear="100" joint="abdomen_y" name="abdomen_y"/>
    <motor gear="100" joint="abdomen_z" name="abdomen_z"/>
    <motor gear="100" joint="abdomen_x" name="abdomen_x"/>
    <motor gear="100" joint="right_hip_x" name="right_hip_x"/>
    <motor gear="100" joint="right_hip_z" name="right_hip_z"/>
    <motor gear="300" joint="right_hip_y" name="right_hip_y"/>
    <motor gear="200" joint="right_knee" name="right_knee"/>
    <motor gear="100" joint="left_hip_x" name="left_hip_x"/>
    <motor gear="100" joint="left_hip_z" name="left_hip_z"/>
    <motor gear="300" joint="left_hip_y" name="left_hip_y"/>
    <motor gear="200" joint="left_knee" name="left_knee"/>
    <motor gear="25" joint="right_shoulder1" name="right_shoulder1"/>
    <motor gear="25" joint="right_shoulder2" name="right_shoulder2"/>
    <motor gear="25" joint="right_elbow" name="right_elbow"/>
    <motor gear="25" joint="left_shoulder1" name="left_shoulder1"/>
    <motor gear="25" joint="left_shoulder2" name="left_shoulder2"/>
    <motor gear="25" joint="left_elbow" name="left_elbow"/>
  </actuator>
</mujoco>
"""

# Total masses the originals set with <compiler settotalmass>, kg.
TOTAL_MASS = {"half_cheetah": 14.0}

CONTACT_FREE = {
    "pendulum": PENDULUM,
    "double_pendulum": DOUBLE_PENDULUM,
    "triple_pendulum": TRIPLE_PENDULUM,
    "slide_pendulum": SLIDE_PENDULUM,
    "ball_pendulum": BALL_PENDULUM,
    "cartpole": CARTPOLE,
    "reacher": REACHER,
}

PUBLIC = {
    "ant": ANT,
    "half_cheetah": HALF_CHEETAH,
    "hopper": HOPPER,
    "walker2d": WALKER2D,
    "humanoid": HUMANOID,
    "reacher": REACHER,
    "inverted_pendulum": INVERTED_PENDULUM,
}


def write(folder, name: str, text: str) -> pathlib.Path:
    """Save an MJCF string as `<folder>/<name>.xml` and return the path."""
    path = pathlib.Path(folder) / f"{name}.xml"
    path.write_text(text, encoding="utf-8")
    return path
