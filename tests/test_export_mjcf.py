"""`compiler/export_mjcf.py`: shipped scenes written as MJCF, loaded in MuJoCo, compared with ours.

The oracle is MuJoCo on the exported XML. What must agree, and why to these tolerances:
- counts and layout: nq, nv, nu, and every joint's qpos/dof address (exact: our q is MuJoCo's qpos);
- body masses (relative MASS_TOL: the XML carries our float32 values with 9 digits, so only float32's
  own rounding separates them);
- world body poses at q0 and at a random q (POSE_TOL, m and quaternion components: one float32
  forward-kinematics pass down a chain of ≤ 5 bodies, ~1e-7 per operation on metre-sized values);
- the joint-space mass matrix at q0 and at a random q (MuJoCo's mj_fullM, armature included, vs ours
  from runtime.dynamics.mass_matrix): |ΔM| ≤ M_TOL·max|M|. Ours is float32: a composite-inertia sum
  over the subtree and products of motion subspaces, ~1e-6 relative; 1e-4 still catches a wrong
  inertia, com, axis or anchor (those change entries by percent);
- a contact-free trajectory (cartpole, double pendulum; MuJoCo confirms no constraint row is ever
  active): Q_TOL as in tests/test_dynamics_mujoco.py, float32 rounding over a few hundred steps;
- a contact trajectory (a box dropped on a plane): the resting height. The engines solve contacts
  differently (module docstring of export_mjcf.py), so only the outcome is compared: both must land
  the box on its face, at the height its half size gives, within REST_TOL (ours sinks
  g·(τζ)² ≈ 0.25 mm at the default softness, MuJoCo's d = 0.99 impedance ~μm; 2 mm tells a box
  resting on its face from one stuck in or above the plane).
An imported MJCF model (tests/mujoco_models.py) exported again keeps MuJoCo's masses and mass matrix
of the original XML (the same tolerances).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

from scenec.compiler import api  # noqa: E402
from scenec.compiler.export_mjcf import ExportError, to_mjcf  # noqa: E402
from scenec.compiler.importers import import_file  # noqa: E402
from scenec.runtime import dynamics, kinematics  # noqa: E402

import mujoco_models  # noqa: E402
from mujoco_oracle import NQ, mujoco_rollout, scenec_rollout  # noqa: E402

SCENES_DIR = pathlib.Path(__file__).resolve().parent.parent / "scenes"
SCENES = ("pendulum", "double_pendulum", "cartpole", "ant", "humanoid", "box_on_plane", "grasp")

MASS_TOL = 1e-6
POSE_TOL = 2e-5
M_TOL = 1e-4
Q_TOL = 1e-3
REST_TOL = 2e-3
STEPS = 300
MIN_FREE_STEPS = 20   # control steps compared at the least before a joint limit ends the comparison

_COMPILED: dict = {}


def compiled(name):
    if name not in _COMPILED:
        _COMPILED[name] = api.compile(SCENES_DIR / f"{name}.yaml", measure_jit=False)
    return _COMPILED[name]


def load(xml: str):
    mj = mujoco.MjModel.from_xml_string(xml)
    return mj, mujoco.MjData(mj)


@jax.jit
def our_kinematics(model, q):
    """World body positions (nbody, 3), orientations (nbody, 4) and the (nv, nv) joint-space inertia
    with armature at q (nq,): the matrix the step inverts, without the h·damping term that only the
    integrator adds. One jitted function, so each scene compiles once."""
    f = kinematics.forward_kinematics(model, q[:, None])
    mass = dynamics.mass_matrix(model, f, dynamics.body_inertias(model, f), model.dof_armature)
    return f.xpos[..., 0], f.xquat[..., 0], mass[:, :, 0]


def random_q(model, rng) -> np.ndarray:
    """A configuration inside every joint range: hinge/slide uniform in the range (or ±1), ball and
    free quaternions uniform on the sphere, free positions within a metre."""
    q = np.asarray(model.q0, np.float64).copy()
    rng_lo, rng_hi = np.asarray(model.jnt_range, np.float64).T
    for j in range(model.njnt):
        a, kind = int(model.jnt_qpos_adr[j]), int(model.jnt_kind[j])
        if kind in (0, 1):
            lo, hi = (rng_lo[j], rng_hi[j]) if bool(model.jnt_limited[j]) else (-1.0, 1.0)
            q[a] = rng.uniform(lo, hi)
        else:
            quat = rng.normal(size=4)
            q[a + NQ[kind] - 4:a + NQ[kind]] = quat / np.linalg.norm(quat)
            if kind == 3:
                q[a:a + 3] = rng.uniform(-1, 1, 3)
    return q


def quat_close(a, b) -> float:
    """Largest component difference of two unit quaternions, sign-blind (q and −q are one rotation)."""
    return float(min(np.abs(a - b).max(), np.abs(a + b).max()))


@pytest.mark.parametrize("name, refs", [(n, True) for n in SCENES] + [("grasp", False), ("hopper", False)])
def test_exported_scene_matches_ours_in_mujoco(name, refs):
    # refs=False: every joint's ref folded into its body's pose (Brax's export): the same poses at
    # every q, with no `ref` written (grasp's fingers have hinge refs, hopper's root a slide ref)
    model = compiled(name).model
    xml = to_mjcf(compiled(name), joint_refs=refs)
    if not refs:
        assert np.any(np.asarray(model.jnt_reference) != 0) and " ref=" not in xml
    mj, data = load(xml)
    assert (mj.nq, mj.nv, mj.nu) == (model.nq, model.nv, model.nu)
    for j, jname in enumerate(model.jnt_names):
        mjj = mj.joint(jname)
        assert int(mjj.qposadr[0]) == int(model.jnt_qpos_adr[j]), jname
        assert int(mjj.dofadr[0]) == int(model.jnt_dof_adr[j]), jname
    masses = np.asarray(model.body_mass, np.float64)
    for b, bname in enumerate(model.body_names[1:], start=1):
        assert mj.body(bname).mass[0] == pytest.approx(masses[b], rel=MASS_TOL), bname

    rng = np.random.default_rng(3)
    for q in (np.asarray(model.q0, np.float64), random_q(model, rng)):
        data.qpos[:] = q
        mujoco.mj_forward(mj, data)
        xpos, xquat, mine = (np.asarray(x, np.float64)
                             for x in our_kinematics(model, jnp.asarray(q, model.q0.dtype)))
        for b, bname in enumerate(model.body_names[1:], start=1):
            mb = mj.body(bname).id
            assert np.abs(data.xpos[mb] - xpos[b]).max() <= POSE_TOL, bname
            assert quat_close(data.xquat[mb], xquat[b]) <= POSE_TOL, bname
        full = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, full)
        assert np.abs(full - mine).max() <= M_TOL * np.abs(full).max(), np.abs(full - mine).max()


TWO_JOINTS = """
name: two_joints
bodies:
  - name: carriage
    mass: 1 kg
    colliders: [{sphere: {radius: 0.1}}]
joints:
  - {name: first, kind: KIND1, parent: world, child: carriage, axis: [1, 0, 0], anchor: [0, 0.2, 0]}
  - {name: second, kind: KIND2, parent: world, child: carriage, axis: [0, 0, 1], reference: 0.3}
"""


def test_joint_refs_fold_only_past_joints_that_commute():
    # a slide's ref moves past an earlier slide (translations commute) ...
    both_slides = TWO_JOINTS.replace("KIND1", "slide").replace("KIND2", "slide")
    model = api.compile(both_slides, measure_jit=False).model
    mj, data = load(to_mjcf(model, joint_refs=False))
    data.qpos[:] = [0.4, -0.7]
    mujoco.mj_kinematics(mj, data)
    xpos = np.asarray(our_kinematics(model, jnp.asarray([0.4, -0.7], model.q0.dtype))[0], np.float64)
    assert np.abs(data.xpos[mj.body("carriage").id] - xpos[1]).max() <= POSE_TOL
    # ... but not past a hinge about another axis: refused, with the joints named
    hinge_first = TWO_JOINTS.replace("KIND1", "hinge").replace("KIND2", "slide")
    with pytest.raises(ExportError, match="'second'.*'first'.*carriage"):
        to_mjcf(api.compile(hinge_first, measure_jit=False), joint_refs=False)
    to_mjcf(api.compile(hinge_first, measure_jit=False))          # with refs it is fine


@pytest.mark.parametrize("name", ("cartpole", "double_pendulum"))
def test_contact_free_trajectory_matches(name):
    model = compiled(name).model
    mj, data = load(to_mjcf(compiled(name)))
    mujoco.mj_resetDataKeyframe(mj, data, mj.key("init").id)
    q0, qd0 = data.qpos.copy(), data.qvel.copy()
    # small sinusoidal controls: the cart moves, the pole stays within its range
    t = np.arange(STEPS)[:, None] * float(model.timestep)
    ctrl = 0.05 * np.sin(2 * np.pi * 0.7 * t + np.arange(model.nu)[None])
    # until a limit becomes active in MuJoCo (the cart-pole's pole falls to its stop after ~1 s)
    qpos = mujoco_rollout(mj, data, ctrl, substeps=model.substeps, until_constrained=True)
    assert len(qpos) >= MIN_FREE_STEPS
    q, _ = scenec_rollout(model, q0, qd0, ctrl[:len(qpos)])
    err = np.abs(q - qpos) / np.maximum(1.0, np.abs(qpos))
    assert err.max() <= Q_TOL, err.max()
    assert np.ptp(qpos, axis=0).max() > 0.05     # it moved


def test_box_lands_on_plane_in_both_engines():
    model = compiled("box_on_plane").model
    xml = to_mjcf(compiled("box_on_plane"))
    assert xml.count("<pair ") == 1 and 'contype="0"' in xml
    mj, data = load(xml)
    mujoco.mj_resetDataKeyframe(mj, data, mj.key("init").id)
    q0, qd0 = data.qpos.copy(), data.qvel.copy()
    steps = 400                                        # 0.8 s: a 5 cm drop, then rest
    ctrl = np.zeros((steps, 0))
    qpos = mujoco_rollout(mj, data, ctrl, substeps=model.substeps)
    q, _ = scenec_rollout(model, q0, qd0, ctrl)
    half = float(np.asarray(model.geom_size)[list(model.geom_names).index("box/0"), 2])
    assert data.ncon >= 4                              # MuJoCo found the face's corners
    for z in (qpos[-1, 2], q[-1, 2]):
        assert abs(z - half) <= REST_TOL, (qpos[-1, 2], q[-1, 2])


def test_imported_mjcf_round_trips(tmp_path):
    """MJCF → scene → compiled → MJCF: MuJoCo sees the masses and mass matrix of the original."""
    xml = mujoco_models.PUBLIC["ant"]
    result = import_file(mujoco_models.write(tmp_path, "ant", xml))
    assert not [d for d in result.diagnostics if d.is_error]
    model = api.compile(result.scene, measure_jit=False).model
    orig, orig_data = load(xml)
    back, back_data = load(to_mjcf(model))
    assert (back.nq, back.nv, back.nu) == (orig.nq, orig.nv, orig.nu)
    # bodies welded to their parent (the Ant's leg roots) are fused into it by the compiler, so
    # compare the subtree masses of the bodies both models have (fusion leaves them unchanged)
    common = [orig.body(b).name for b in range(1, orig.nbody) if orig.body(b).name in model.body_names]
    assert len(common) >= 9
    for name in common:
        assert back.body(name).subtreemass[0] == pytest.approx(orig.body(name).subtreemass[0],
                                                                rel=MASS_TOL), name
    rng = np.random.default_rng(5)
    for q in (orig.qpos0.copy(), random_q(model, rng)):
        for mj, data in ((orig, orig_data), (back, back_data)):
            data.qpos[:] = q
            mujoco.mj_forward(mj, data)
        m1, m2 = np.zeros((orig.nv, orig.nv)), np.zeros((orig.nv, orig.nv))
        mujoco.mj_fullM(orig, orig_data, m1)
        mujoco.mj_fullM(back, back_data, m2)
        assert np.abs(m1 - m2).max() <= M_TOL * np.abs(m1).max()


def test_mesh_and_height_field_colliders_export():
    """Hulls go inline as <mesh vertex>, grids as <hfield elevation>; MuJoCo's surface heights are
    ours (its normalised elevation times size_z, plus the geom's offset)."""
    yaml = """
name: terrain
heightfields:
  - {name: ramp, size_x: 1, size_y: 1, nrow: 3, ncol: 4, elevation: [0, 0, 0, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5, 0.5]}
meshes:
  - {name: tet, vertices: [0, 0, 0, 0.2, 0, 0, 0, 0.2, 0, 0, 0, 0.2], faces: [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3]}
bodies:
  - {name: ground, colliders: [{heightfield: {heightfield: ramp}}]}
  - {name: rock, pos: [0, 0, 1], colliders: [{mesh: {mesh: tet}}]}      # static: no pair with the grid
"""
    model = api.compile(yaml, measure_jit=False).model
    mj, data = load(to_mjcf(model))
    hf = mj.hfield_data.reshape(3, 4) * mj.hfield_size[0, 2]
    grid = np.asarray(model.geom_hfield[0].padded_elevation)[1:-1, 1:-1]
    ours = grid - grid.min()
    offset = mj.geom_pos[mj.geom("ground.0").id, 2] if mj.ngeom else 0.0
    assert np.allclose(hf + offset, grid, atol=1e-6)
    assert np.allclose(np.sort(hf.reshape(-1)), np.sort(ours.reshape(-1)), atol=1e-6)
    assert mj.nmesh == 1 and mj.mesh_vertnum[0] == 4


def test_refuses_a_mesh_without_hull_data():
    import dataclasses

    model = compiled("pendulum").model
    broken = dataclasses.replace(model, geom_shape=type(model.geom_shape)([5]), geom_mesh=(None,))
    with pytest.raises(ExportError, match="no hull data"):
        to_mjcf(broken)


def test_cli_writes_the_xml_and_reports_user_errors(tmp_path, capsys):
    from scenec.compiler.cli import main

    out = tmp_path / "pendulum.xml"
    assert main(["export", str(SCENES_DIR / "pendulum.yaml"), "-o", str(out)]) == 0
    mj, _ = load(out.read_text())
    assert mj.nq == 1 and mj.nu == 1
    assert main(["export", str(SCENES_DIR / "pendulum.yaml"), "-o", str(tmp_path / "no" / "x.xml")]) == 2
    assert "cannot write" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "missing.yaml")]) == 2
    assert "Traceback" not in capsys.readouterr().err
    # --no-joint-refs: what Brax loads (hopper's root slide has ref 1.25)
    hopper = tmp_path / "hopper.xml"
    assert main(["export", str(SCENES_DIR / "hopper.yaml"), "--no-joint-refs", "-o", str(hopper)]) == 0
    assert " ref=" not in hopper.read_text() and load(hopper.read_text())[0].nq == 6
