"""Contact-free dynamics against MuJoCo.

Two comparisons, both with MuJoCo's Euler integrator at the same physics step as scenec and scenec
in float32 (the shipped precision):

1. MJCF mechanisms written here (tests/mujoco_models.py: pendulums with hinge, slide and ball
   joints, a cart-pole, the Reacher arm) imported with `scenec.compiler.importers.import_file` and
   compiled: q over 1000 steps matches MuJoCo's qpos.
2. The hand-written library scenes (scenes/*.yaml) against the public MuJoCo models they were
   written from, lifted into the air so nothing touches: the same masses, inertias, joint frames,
   armature, damping, springs and gears give the same motion under the same actions.

Joint limits and contacts are soft constraints in both engines but solved differently, so the
trajectories are chosen to stay clear of them: MuJoCo checks at every step that no constraint row is
active (`mujoco_rollout(check_free=True)`) for the mechanisms, and the library scenes are compared up
to the first step at which one becomes active (`until_constrained=True`; a pole falls over, a limb
swings out), which must come after at least MIN_FLIGHT_STEPS control steps.
"""

from __future__ import annotations

import pathlib

import mujoco
import numpy as np
import pytest

from scenec.compiler import api
from scenec.compiler.importers import import_file

import mujoco_models
from mujoco_oracle import NQ, coordinate_map, load_mujoco, mujoco_rollout, scenec_rollout

SCENES_DIR = pathlib.Path(__file__).resolve().parent.parent / "scenes"

# |q - qpos| <= TOL * max(1, |qpos|) at every step. Both engines compute the same semi-implicit Euler
# step (the lead checked agreement to 1e-15 in float64 on such chains), so the gap is float32
# round-off: ~1e-7 relative per operation, accumulated over 1000 steps of a smooth, mildly sensitive
# trajectory. We measured at most 2e-6 on these models; 1e-3 is the bound, and any modelling
# error (a wrong inertia, axis, anchor, armature or gear) shows up orders of magnitude above it.
TOL = 1e-3
STEPS = 1000

# Fraction of each actuator's half range used by the test's sinusoidal controls: strong enough to
# move the mechanism, weak enough to keep it off its joint limits (checked by MuJoCo every step).
CTRL_SCALE = {"reacher": 0.02, "ant": 0.005, "walker2d": 0.02, "humanoid": 0.02}
DEFAULT_CTRL_SCALE = 0.2


def sinusoidal_ctrl(ctrl_range: np.ndarray, steps: int, dt: float, scale: float) -> np.ndarray:
    """(steps, nu) controls: each actuator a sine at 0.7 Hz with its own phase, around its range's
    midpoint, `scale` times its half range."""
    if len(ctrl_range) == 0:
        return np.zeros((steps, 0))
    lo, hi = ctrl_range[:, 0], ctrl_range[:, 1]
    t = np.arange(steps)[:, None] * dt
    phase = np.arange(len(lo))[None, :]
    return 0.5 * (lo + hi) + scale * 0.5 * (hi - lo) * np.sin(2 * np.pi * 0.7 * t + phase)


def assert_close(q, qpos, names, tol=TOL):
    err = np.abs(q - qpos) / np.maximum(1.0, np.abs(qpos))
    step, coord = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= tol, (f"q[{coord}] ({names[coord]}) differs from MuJoCo by {err.max():.2e} "
                              f"(relative) at step {step}: {q[step, coord]} vs {qpos[step, coord]}")


def coordinate_names(model) -> list[str]:
    """The joint each q coordinate belongs to (for messages)."""
    names = []
    for j, n in enumerate(model.jnt_names):
        names += [n] * NQ[int(model.jnt_kind[j])]
    return names


@pytest.mark.parametrize("name", sorted(mujoco_models.CONTACT_FREE))
def test_imported_mechanism_matches_mujoco(name, tmp_path):
    xml = mujoco_models.CONTACT_FREE[name]
    result = import_file(mujoco_models.write(tmp_path, name, xml))
    errors = [d for d in result.diagnostics if d.is_error]
    assert not errors, errors
    compiled = api.compile(result.scene, measure_jit=False)
    model = compiled.model
    assert model.dtype == "float32"

    mj, data = load_mujoco(xml)
    assert model.substeps == 1 and float(model.timestep) == pytest.approx(mj.opt.timestep, rel=1e-6)
    cmap = coordinate_map(model, mj)
    if mj.nkey:
        mujoco.mj_resetDataKeyframe(mj, data, 0)
    q0, qd0 = data.qpos[cmap.qpos].copy(), data.qvel[cmap.qvel].copy()

    mj_ctrl = sinusoidal_ctrl(mj.actuator_ctrlrange, STEPS, mj.opt.timestep,
                              CTRL_SCALE.get(name, DEFAULT_CTRL_SCALE))
    qpos = mujoco_rollout(mj, data, mj_ctrl, check_free=True)[:, cmap.qpos]
    q, _ = scenec_rollout(model, q0, qd0, mj_ctrl[:, cmap.ctrl])
    assert_close(q, qpos, coordinate_names(model))
    # the trajectory really moves: a test of a mechanism at rest would prove little
    assert np.ptp(qpos, axis=0).max() > 0.1


# --- the hand-written library scenes against the public models ---------------------------------------

# scene file -> (public MJCF, the root joints that carry the body's height: lifted so nothing touches)
LIBRARY = {
    "humanoid": ("humanoid", "root"),
    "ant": ("ant", "root"),
    "half_cheetah": ("half_cheetah", "rootz"),
    "hopper": ("hopper", "rootz"),
    "walker2d": ("walker2d", "rootz"),
    "reacher": ("reacher", None),
    "cartpole": ("inverted_pendulum", None),
}
LIFT = 100.0           # m: raise the body this far above the floor (it falls 44 m in 3 s)
FLIGHT_STEPS = 60      # control steps (0.5 to 3 s depending on the scene)
# The comparison runs until a joint first reaches a limit in MuJoCo (a pole falls over, a limb swings
# out); at least this many control steps must come before, or the test says nothing.
MIN_FLIGHT_STEPS = 10
# Joint-limit margin of the random initial pose: a fraction of each range kept free at both ends.
RANGE_MARGIN = 0.3


def random_free_state(model, mj, cmap, rng):
    """A state of the scenec model (q0, qd0) inside every joint range (away from its ends), lifted."""
    q = mj.qpos0[cmap.qpos].copy()
    qd = rng.uniform(-0.1, 0.1, model.nv)
    rng_lo = np.asarray(model.jnt_range)[:, 0]
    rng_hi = np.asarray(model.jnt_range)[:, 1]
    for j in range(model.njnt):
        a = int(model.jnt_qpos_adr[j])
        kind = int(model.jnt_kind[j])
        if kind in (0, 1) and bool(model.jnt_limited[j]):
            width = rng_hi[j] - rng_lo[j]
            lo, hi = rng_lo[j] + RANGE_MARGIN * width, rng_hi[j] - RANGE_MARGIN * width
            q[a] = np.clip(q[a] + rng.uniform(-0.1, 0.1), lo, hi)
        elif kind in (0, 1):
            q[a] += rng.uniform(-0.1, 0.1)
        assert NQ[kind] in (1, 7), "the library scenes have no ball joints"
    return q, qd


# Humanoid (14 s) with the slow checks; the others stay in the default run (its settling against MuJoCo
# too: test_mujoco_contacts.py)
@pytest.mark.parametrize("scene", [pytest.param(s, marks=pytest.mark.slow) if s == "humanoid" else s
                                   for s in sorted(LIBRARY)])
def test_library_scene_matches_public_model_in_flight(scene):
    public, lift_joint = LIBRARY[scene]
    compiled = api.compile(SCENES_DIR / f"{scene}.yaml", measure_jit=False)
    model = compiled.model
    mj, data = load_mujoco(mujoco_models.PUBLIC[public], zero_margin=True,
                           total_mass=mujoco_models.TOTAL_MASS.get(public))
    # scenec's physics step (control step / substeps) is the public model's timestep
    assert float(model.timestep) / model.substeps == pytest.approx(mj.opt.timestep, rel=1e-6)
    cmap = coordinate_map(model, mj)
    assert model.nu == mj.nu

    rng = np.random.default_rng(7)
    q0, qd0 = random_free_state(model, mj, cmap, rng)
    if lift_joint is not None:
        j = model.jnt_names.index(lift_joint)
        a = int(model.jnt_qpos_adr[j]) + (2 if int(model.jnt_kind[j]) == 3 else 0)
        q0[a] += LIFT
    data.qpos[cmap.qpos] = q0
    data.qvel[cmap.qvel] = qd0
    mujoco.mj_forward(mj, data)

    mj_ctrl = sinusoidal_ctrl(mj.actuator_ctrlrange, FLIGHT_STEPS, float(model.timestep),
                              CTRL_SCALE.get(scene, DEFAULT_CTRL_SCALE))
    qpos = mujoco_rollout(mj, data, mj_ctrl, substeps=model.substeps, until_constrained=True)
    n = len(qpos)
    assert n >= MIN_FLIGHT_STEPS, f"a MuJoCo constraint became active at control step {n}"
    q, final = scenec_rollout(model, q0, qd0, mj_ctrl[:n, cmap.ctrl])
    assert_close(q, qpos[:, cmap.qpos], coordinate_names(model))
    assert not np.any(np.asarray(final.contact_force)), "scenec found a contact in flight"
