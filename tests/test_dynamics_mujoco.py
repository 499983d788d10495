"""Differential tests: contact-free models written twice — as scenec YAML and as MJCF — stepped side by
side with MuJoCo's Euler integrator at the same timestep.

The oracle is MuJoCo (PyPI `mujoco`), compiled from the MJCF text here. scenec runs in float32 (the
default precision): over 1000 steps the trajectories must agree to
    |q − qpos| ≤ Q_TOL · max(1, |qpos|)
with Q_TOL = 1e-3. Why 1e-3: in float64 the two agree to ~1e-14 (the same equations: composite rigid
bodies, recursive Newton–Euler, implicit joint damping, semi-implicit Euler), so what is left is float32
rounding (~6e-8 per operation) amplified over 1000 steps; we observe ≤ 2e-6, so 1e-3 leaves room
for other machines and XLA versions while still catching any modelling difference (those show at 1e-2+).
"""

from __future__ import annotations

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
jax = pytest.importorskip("jax")

from scenec.compiler import api  # noqa: E402

Q_TOL = 1e-3
F64_TOL = 1e-9     # float64 runs of the same models: only rounding separates the engines
STEPS = 1000

NO_CONTACT = 'contacts: {exclude: [{first: "*", second: "*"}]}\n'
MJ_HEAD = ('<mujoco><compiler angle="radian"/><option timestep="{dt}" integrator="{integrator}" '
           'gravity="0 0 -9.81"><flag contact="disable"/></option>')

CASES = {
    "hinge_pendulum": (
        """
options: {timestep: 0.002}
bodies:
  - {name: bob, pos: [0, 0, -0.8], colliders: [{sphere: {radius: 0.1}}]}
joints:
  - {name: swing, kind: hinge, child: bob, anchor: [0, 0, 0.8], axis: [0, 1, 0], damping: 0.05}
init: [{joint: swing, q: 1.2}]
""",
        """<worldbody><body pos="0 0 -0.8"><joint type="hinge" pos="0 0 0.8" axis="0 1 0" damping="0.05"/>
<geom type="sphere" size="0.1"/></body></worldbody></mujoco>""", 0.002, [1.2], None),
    "double_pendulum": (
        """
options: {timestep: 0.001}
bodies:
  - {name: a, pos: [0, 0, -0.25], colliders: [{capsule: {radius: 0.03, half_length: 0.22}}]}
  - {name: b, pos: [0, 0, -0.75], colliders: [{capsule: {radius: 0.03, half_length: 0.22}}]}
joints:
  - {name: j1, kind: hinge, child: a, anchor: [0, 0, 0.25], axis: [0, 1, 0]}
  - {name: j2, kind: hinge, parent: a, child: b, anchor: [0, 0, 0.25], axis: [0, 1, 0]}
init: [{joint: j1, q: 1.0}, {joint: j2, q: -0.5}]
""",
        """<worldbody><body pos="0 0 -0.25"><joint type="hinge" pos="0 0 0.25" axis="0 1 0"/>
<geom type="capsule" size="0.03 0.22"/>
<body pos="0 0 -0.5"><joint type="hinge" pos="0 0 0.25" axis="0 1 0"/><geom type="capsule" size="0.03 0.22"/>
</body></body></worldbody></mujoco>""", 0.001, [1.0, -0.5], None),
    "triple_hinge_slide_ball": (
        """
options: {timestep: 0.001}
bodies:
  - {name: a, pos: [0, 0, -0.5], colliders: [{capsule: {radius: 0.05, half_length: 0.2}}]}
  - {name: b, pos: [0, 0, -1.0], colliders: [{box: {half_size: [0.05, 0.1, 0.2]}}]}
  - name: c
    pos: [0.1, 0, -1.5]
    quat: [0.9, 0.1, 0.3, 0.2]
    colliders: [{sphere: {radius: 0.1}}, {pos: [0.1, 0, 0], capsule: {radius: 0.03, half_length: 0.1}}]
joints:
  - {name: j1, kind: hinge, child: a, anchor: [0, 0, 0.5], axis: [0, 1, 0.3], damping: 0.1, armature: 0.01, stiffness: 2}
  - {name: j2, kind: slide, parent: a, child: b, axis: [0.2, 0, 1], damping: 0.5, stiffness: 30}
  - {name: j3, kind: ball, parent: b, child: c, anchor: [-0.1, 0, 0.5], damping: 0.05, armature: 0.02}
actuators:
  - {name: m1, joint: j1, gear: 2, ctrl_range: [-1, 1]}
  - {name: p2, kind: position, joint: j2, kp: 40, kv: 2}
""",
        """<worldbody>
<body pos="0 0 -0.5"><joint name="j1" type="hinge" axis="0 1 0.3" pos="0 0 0.5" damping="0.1" armature="0.01" stiffness="2"/>
<geom type="capsule" size="0.05 0.2"/>
<body pos="0 0 -0.5"><joint name="j2" type="slide" axis="0.2 0 1" damping="0.5" stiffness="30"/><geom type="box" size="0.05 0.1 0.2"/>
<body pos="0.1 0 -0.5" quat="0.9 0.1 0.3 0.2"><joint name="j3" type="ball" pos="-0.1 0 0.5" damping="0.05" armature="0.02"/>
<geom type="sphere" size="0.1"/><geom type="capsule" size="0.03 0.1" pos="0.1 0 0"/></body></body></body>
</worldbody><actuator><motor joint="j1" gear="2" ctrlrange="-1 1"/><position joint="j2" kp="40" kv="2"/></actuator></mujoco>""",
        0.001, [0.4, 0.1, 0.9, 0.3, 0.1, 0.2], [0.7, 0.05]),
    "free_body_spinning": (
        """
options: {timestep: 0.001}
bodies:
  - name: f
    pos: [0, 0, 1]
    colliders: [{box: {half_size: [0.1, 0.2, 0.3]}}, {pos: [0.2, 0.1, 0], sphere: {radius: 0.1}}]
joints: [{name: free, kind: free, child: f}]
""",
        """<worldbody><body pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.2 0.3"/>
<geom type="sphere" size="0.1" pos="0.2 0.1 0"/></body></worldbody></mujoco>""", 0.001, None, None),
}

# A branched tree on a free base: q must follow MuJoCo's qpos layout (bodies depth-first) entry by
# entry, so the comparison below is index for index.
CASES["branched_free_base"] = (
    """
options: {timestep: 0.001}
bodies:
  - {name: torso, pos: [0, 0, 1], colliders: [{sphere: {radius: 0.2}}]}
  - {name: l_thigh, pos: [0.3, 0, 1], colliders: [{capsule: {radius: 0.04, fromto: [0, 0, 0, 0.2, 0, 0]}}]}
  - {name: l_shin, pos: [0.5, 0, 1], colliders: [{capsule: {radius: 0.04, fromto: [0, 0, 0, 0.2, 0, 0]}}]}
  - {name: r_thigh, pos: [-0.3, 0, 1], colliders: [{capsule: {radius: 0.04, fromto: [0, 0, 0, -0.2, 0, 0]}}]}
  - {name: r_shin, pos: [-0.5, 0, 1], colliders: [{capsule: {radius: 0.04, fromto: [0, 0, 0, -0.2, 0, 0]}}]}
joints:
  - {name: root, kind: free, child: torso}
  - {name: l_hip, parent: torso, child: l_thigh, axis: [0, 1, 0], damping: 0.1}
  - {name: l_knee, parent: l_thigh, child: l_shin, axis: [0, 1, 0], damping: 0.1}
  - {name: r_hip, parent: torso, child: r_thigh, axis: [0, 1, 0], damping: 0.1}
  - {name: r_knee, parent: r_thigh, child: r_shin, axis: [1, 0, 0], damping: 0.1}
""",
    """<worldbody><body pos="0 0 1"><freejoint/><geom type="sphere" size="0.2"/>
<body pos="0.3 0 0"><joint type="hinge" axis="0 1 0" damping="0.1"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.04"/>
<body pos="0.2 0 0"><joint type="hinge" axis="0 1 0" damping="0.1"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.04"/></body></body>
<body pos="-0.3 0 0"><joint type="hinge" axis="0 1 0" damping="0.1"/><geom type="capsule" fromto="0 0 0 -0.2 0 0" size="0.04"/>
<body pos="-0.2 0 0"><joint type="hinge" axis="1 0 0" damping="0.1"/><geom type="capsule" fromto="0 0 0 -0.2 0 0" size="0.04"/></body></body>
</body></worldbody></mujoco>""", 0.001, [0, 0, 1, 1, 0, 0, 0, 0.3, -0.4, 0.2, 0.5], None)

# The same double pendulum with both engines' 4th-order Runge–Kutta.
CASES["double_pendulum_rk4"] = (CASES["double_pendulum"][0].replace("options: {", "options: {integrator: rk4, "),
                                *CASES["double_pendulum"][1:])

INITIAL_QD = {"triple_hinge_slide_ball": [0.5, -0.2, 1, 2, -1], "free_body_spinning": [0.1, 0.2, 0.3, 3, 1, 2],
              "branched_free_base": [0.1, 0, 0.2, 0.5, -0.3, 0.2, 1.0, -0.5, 0.3, 0.8]}


def run_both(name: str, precision: str) -> float:
    """Step the case in both engines; the worst relative difference of q over the run."""
    yaml_text, mjcf, dt, q0, ctrl = CASES[name]
    text = NO_CONTACT + yaml_text.replace("options: {", f"options: {{precision: {precision}, ")
    compiled = api.compile(text, measure_jit=False)
    integrator = "RK4" if name.endswith("_rk4") else "Euler"
    model = mujoco.MjModel.from_xml_string(MJ_HEAD.format(dt=dt, integrator=integrator) + mjcf)
    data = mujoco.MjData(model)
    if q0 is not None:
        data.qpos[:] = q0
    if name in INITIAL_QD:
        data.qvel[:] = INITIAL_QD[name]
    u = np.zeros(compiled.model.nu) if ctrl is None else np.asarray(ctrl)
    data.ctrl[:] = u
    state = compiled.init(q=data.qpos.copy(), qd=data.qvel.copy())
    step = compiled.step
    worst = 0.0
    for _ in range(STEPS):
        state = step(state, u)
        mujoco.mj_step(model, data)
        q = np.asarray(state.q, np.float64)
        worst = max(worst, float(np.max(np.abs(q - data.qpos) / np.maximum(1.0, np.abs(data.qpos)))))
    return worst


def run_traced_anew(name):
    """run_both in float32 with jax's caches cleared before and after: the step is jitted once for
    every model of the same structure, so a test that patches the runtime needs a trace of its own."""
    import jax

    jax.clear_caches()
    try:
        return run_both(name, "float32")
    finally:
        jax.clear_caches()


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_matches_mujoco(name):
    assert run_both(name, "float32") <= Q_TOL


def test_float64_matches_mujoco_to_rounding():
    """The same equations: in float64 only rounding separates the engines. Runs in a subprocess
    because float64 needs JAX_ENABLE_X64 set before jax starts."""
    import os
    import subprocess
    import sys

    code = ("import sys, json, jax; sys.path.insert(0, %r); import test_dynamics_mujoco as t; "
            "from scenec.runtime import kinematics; "
            "worst = {n: t.run_both(n, 'float64') for n in ('triple_hinge_slide_ball', 'free_body_spinning')}; "
            "kinematics.LOOP_FROM = 1; jax.clear_caches(); "   # the looped walk (test_looped_walk_matches_mujoco)
            "worst['triple_hinge_slide_ball, looped walk'] = t.run_both('triple_hinge_slide_ball', 'float64'); "
            "print(json.dumps(worst))" % os.path.dirname(__file__))
    env = dict(os.environ, JAX_ENABLE_X64="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    import json
    worst = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(v <= F64_TOL for v in worst.values()), worst


@pytest.mark.parametrize("name", ["triple_hinge_slide_ball", "branched_free_base"])
def test_looped_walk_matches_mujoco(name, monkeypatch):
    """Forward kinematics as a scan over the walk's steps (what deep trees such as Humanoid and grasp
    get, kinematics.LOOP_FROM) on these shallow models: hinge, slide, ball and free joints, body
    rotations and off-origin anchors, in the step MuJoCo is compared with."""
    from scenec.runtime import kinematics

    looped = []
    walk_steps = kinematics._walk_steps

    def spy(m, p, q, with_joints):
        looped.append(with_joints)
        return walk_steps(m, p, q, with_joints)

    monkeypatch.setattr(kinematics, "LOOP_FROM", 1)
    monkeypatch.setattr(kinematics, "_walk_steps", spy)
    assert run_traced_anew(name) <= Q_TOL
    assert True in looped   # the substeps' kinematics took the looped walk


@pytest.mark.parametrize("name", ["triple_hinge_slide_ball", "branched_free_base"])
@pytest.mark.parametrize("pairs", [False, True])
def test_both_mass_matrix_forms_match_mujoco(name, pairs, monkeypatch):
    """dynamics.mass_matrix as the products of the ancestor pairs only, gathered (a CPU's default),
    and as the products over every entry, masked (a GPU's and a TPU's): each form in the step that
    MuJoCo is compared with, whatever this machine's backend."""
    from scenec.runtime import dynamics

    monkeypatch.setattr(dynamics, "PAIR_PRODUCTS", pairs)
    assert run_traced_anew(name) <= Q_TOL
