"""`scenec bench --compare` (compiler/bench_peers.py): peer engines on the scene's exported MJCF.

Tiny runs (the pendulum, batch 2, 3 control steps through the CLI): the point is that the comparison
runs the same model, not how fast anything is (no timing assertions). The MuJoCo engine's batched
rollout (`mujoco.rollout` on all cores) must end where our step ends, from the same initial states
under the same controls, over ROLLOUT_STEPS steps (50 ms: long enough for the ±1 N·m controls to move
the 1 kg·m² bob by ~1e-3 rad at the ends of their range, checked against a zero-control rollout, so
a dropped or shifted control shows): |q − qpos| ≤ Q_TOL. Why 1e-5 rad: the two compute the same
semi-implicit Euler step of a contact-free pendulum (tests/test_dynamics_mujoco.py), ours in float32;
50 steps add float32 rounding of ~1e-6 rad at most.
"""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
pytest.importorskip("mujoco.rollout")

from scenec.compiler import api, bench_peers  # noqa: E402
from scenec.compiler.cli import main  # noqa: E402
from scenec.compiler.export_mjcf import to_mjcf  # noqa: E402
import scenec.runtime as scenec_runtime  # noqa: E402

from mujoco_oracle import scenec_rollout  # noqa: E402

SCENES_DIR = pathlib.Path(__file__).resolve().parent.parent / "scenes"
PENDULUM = str(SCENES_DIR / "pendulum.yaml")
Q_TOL = 1e-5
MOVED = 1e-4     # rad: the controls must move the final q by more than this (else the test is blind)
ROLLOUT_STEPS = 50


def test_mujoco_rollout_ends_where_our_step_ends():
    model = api.compile(PENDULUM, measure_jit=False).model
    mj = mujoco.MjModel.from_xml_string(to_mjcf(model))
    batch, steps = 2, ROLLOUT_STEPS
    qpos0 = np.array([[0.3], [-1.1]])
    qvel0 = np.array([[0.0], [2.0]])
    lo, hi = bench_peers.ctrl_bounds(mj)
    # one environment pushed at the top of the control range, the other at the bottom (random
    # controls would average out over so few steps)
    control = np.stack([np.broadcast_to(hi, (steps * model.substeps, model.nu)),
                        np.broadcast_to(lo, (steps * model.substeps, model.nu))])
    final = bench_peers.mujoco_rollout(mj, qpos0, qvel0, control, nthread=2)
    free = bench_peers.mujoco_rollout(mj, qpos0, qvel0, np.zeros_like(control), nthread=2)
    assert np.abs(final - free).max() > MOVED
    for i in range(batch):
        q, _ = scenec_rollout(model, qpos0[i], qvel0[i], control[i, ::model.substeps])
        assert np.abs(q[-1] - final[i]).max() <= Q_TOL, (q[-1], final[i])


FALL_SCENE = """
name: falling_sphere
options: {timestep: 0.002}
bodies:
  - name: ground
    colliders: [{plane: {}, friction: 1.0}]
  - name: ball
    pos: [0, 0, %r]
    colliders: [{sphere: {radius: 0.1 m}, friction: 1.0}]
    mass: 1 kg
joints:
  - {name: ball_free, kind: free, child: ball}
"""


def test_mujoco_contact_counts_follow_a_free_fall_to_the_floor(tmp_path):
    # A sphere of radius r released at rest with its lowest point d above a plane: MuJoCo's
    # semi-implicit Euler puts it at z_k = z0 − g·h²·k(k+1)/2 after k steps, and step t (from 1)
    # collides at z_{t−1}, so the first t* − 1 steps have no contact, t* = 1 + min{k : z_k < r},
    # and from step t* on one (a sphere on a plane is one contact; MuJoCo's default contact is
    # critically damped, so it does not bounce off). A sphere resting on the plane: one in every step.
    r, d, h, g = 0.1, 0.02, 0.002, 9.81
    path = tmp_path / "fall.yaml"
    path.write_text(FALL_SCENE % (r + d))
    model = api.compile(str(path), measure_jit=False).model
    mj = mujoco.MjModel.from_xml_string(to_mjcf(model))
    assert mj.opt.timestep == pytest.approx(h) and mj.opt.gravity[2] == pytest.approx(-g)
    data = mujoco.MjData(mj)
    mujoco.mj_resetDataKeyframe(mj, data, mj.key("init").id)
    k = np.arange(200)
    first = 1 + int(np.argmax(r + d - g * h * h * k * (k + 1) / 2 < r))
    steps = 2 * first + 20     # room for a second fall after a restart
    control = np.zeros((1, steps, mj.nu))
    ncon, nefc = bench_peers.mujoco_contact_counts(mj, data.qpos[None], data.qvel[None], control)
    assert ncon.shape == (1, steps) and 10 < first < 100
    assert np.all(ncon[0, :first - 1] == 0) and np.all(ncon[0, first - 1:] == 1), (first, ncon)
    assert np.all(nefc[0, :first - 1] == 0) and np.all(nefc[0, first - 1:] >= 1)
    # put back to the start after step first + 9: the fall repeats, no contact for first − 1 steps
    restart = np.zeros((1, steps), bool)
    restart[0, first + 9] = True
    ncon, _ = bench_peers.mujoco_contact_counts(mj, data.qpos[None], data.qvel[None], control, restart=restart)
    again = first + 10
    assert np.all(ncon[0, first - 1:again] == 1) and np.all(ncon[0, again:again + first - 1] == 0)
    assert np.all(ncon[0, again + first - 1:] == 1) and again + first - 1 < steps, (first, ncon)
    # resting on the floor (1 mm into it) from the start
    rest = data.qpos.copy()
    rest[2] = r - 1e-3
    ncon, _ = bench_peers.mujoco_contact_counts(mj, rest[None], data.qvel[None], control)
    assert np.all(ncon == 1)


def test_settle_times_every_engine_from_the_states_it_reached(tmp_path, capsys):
    # The falling sphere above: its first contact comes in step t* (33 steps of 2 ms). Timed
    # from the initial state over 10 steps MuJoCo counts no contact; after --settle t* + 5 steps it
    # counts one in every timed step, the sphere resting on the plane.
    r, d, h, g = 0.1, 0.02, 0.002, 9.81
    path = tmp_path / "fall.yaml"
    path.write_text(FALL_SCENE % (r + d))
    k = np.arange(200)
    first = 1 + int(np.argmax(r + d - g * h * h * k * (k + 1) / 2 < r))
    counts = {}
    for settle in (0, first + 5):
        out = tmp_path / f"settle{settle}.json"
        assert main(["bench", str(path), "--batch", "2", "--steps", "10", "--repeats", "1",
                     "--compare", "mujoco", "--settle", str(settle), "--json", str(out)]) == 0
        data = json.loads(out.read_text())
        (peer,) = data["scenes"][0]["points"][0]["peers"]
        assert data["settle_steps"] == peer["settle_steps"] == settle
        counts[settle] = peer["contacts_per_step"]
    assert counts == {0: 0.0, first + 5: 1.0}
    assert "timed from the states" in capsys.readouterr().out
    assert main(["bench", str(path), "--settle", "-1"]) == 2
    assert "--settle must be 0 or more" in capsys.readouterr().err


def test_our_settled_states_are_the_free_fall_of_semi_implicit_euler(tmp_path):
    # What `--settle N` gives our step before the timed runs: N control steps from the scene's
    # initial state. Still in the air (N = t* − 8, about 7 mm above the plane), the sphere is at
    # z_N = z0 − g·h²·N(N+1)/2, not moved in x and y, and every environment alike (the sphere has
    # no actuator). Z_TOL: float32 rounding of a 0.12 m height over 25 steps is ~1e-6 m.
    import jax
    import jax.numpy as jnp

    from scenec.compiler import cmd_bench
    from scenec.runtime import step as rstep

    r, z0, h, g, Z_TOL = 0.1, 0.12, 0.002, 9.81, 1e-5
    k = np.arange(200)
    n = int(np.argmax(z0 - g * h * h * k * (k + 1) / 2 < r)) - 7
    path = tmp_path / "fall.yaml"
    path.write_text(FALL_SCENE % z0)
    model = api.compile(str(path), measure_jit=False).model
    start = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (3,) + x.shape), rstep.init(model))
    settled = cmd_bench.settled_states(model, 3, n, start)
    q = np.asarray(settled.q)
    assert q[:, 2] == pytest.approx(z0 - g * h * h * n * (n + 1) / 2, abs=Z_TOL)
    assert np.abs(q[:, :2]).max() <= Z_TOL and q[:, 2].max() - q[:, 2].min() <= Z_TOL
    assert n == 25 and z0 - q[0, 2] > 0.01          # it did fall: 25 steps drop it 1.3 cm


def test_compare_json_has_the_peer_figures(tmp_path):
    out = tmp_path / "bench.json"
    assert main(["bench", PENDULUM, "--batch", "2", "--steps", "3", "--repeats", "1",
                 "--compare", "mujoco", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["machine"]["cpu_count"] >= 1 and len(data["machine"]["load_average"]) == 3
    point = data["scenes"][0]["points"][0]
    (peer,) = point["peers"]
    assert peer["engine"] == "mujoco" and peer["batch"] == 2
    assert peer["timestep"] == pytest.approx(0.001) and peer["solver"] == "PGS"
    assert peer["physics_steps"] == 3 and peer["nonfinite"] == 0
    # a pendulum has no contact: MuJoCo's contact count over the timed runs is 0, and ours solves none
    assert peer["contacts_per_step"] == 0 and peer["counted_envs"] == 2
    assert data["scenes"][0]["contacts_solved"] == data["scenes"][0]["contact_candidates"] == 0
    for field in ("physics_steps_per_s", "sim_s_per_wall_s", "compile_s", "ratio", "iterations"):
        assert field in peer
    # ours was timed again after the peer: the ratio is to the mean of ours before it and after it
    before, after = peer["ours_around"]
    assert before == point["sim_s_per_wall_s"] and after > 0
    assert peer["ratio"] == pytest.approx((before + after) / 2 / peer["sim_s_per_wall_s"])
    # the peer's process ran under the XLA flags our step runs under
    assert peer["xla_flags"] == bench_peers.peer_xla_flags("mujoco") == os.environ.get("XLA_FLAGS", "")


def test_ours_from_an_earlier_run_takes_its_figures_and_runs_only_the_peers(tmp_path, capsys):
    # The TPU path (tools/bench_tpu.sh): a first run measures ours, a second runs the peers against
    # those figures without measuring ours again. Its point must be the first file's, not a new one.
    ours, both = tmp_path / "ours.json", tmp_path / "both.json"
    assert main(["bench", PENDULUM, "--batch", "2,3", "--steps", "3", "--repeats", "1",
                 "--json", str(ours)]) == 0
    first = json.loads(ours.read_text())
    assert main(["bench", PENDULUM, "--batch", "3", "--steps", "3", "--repeats", "1",
                 "--compare", "mujoco", "--ours-from", str(ours), "--json", str(both)]) == 0
    data = json.loads(both.read_text())
    assert data["machine"] == first["machine"] and data["ours_from"] == str(ours) and data["complete"]
    point = data["scenes"][0]["points"][0]
    (peer,) = point.pop("peers")
    assert point == first["scenes"][0]["points"][1]            # batch 3's figures, unchanged
    assert peer["engine"] == "mujoco" and peer["batch"] == 3
    # ours is not run here, so not timed again: the ratio is to the earlier run's figure
    assert peer["ratio"] == pytest.approx(point["sim_s_per_wall_s"] / peer["sim_s_per_wall_s"])
    assert "ours_around" not in peer
    capsys.readouterr()
    # a batch the earlier run did not measure, or no peers to run, is a usage error
    assert main(["bench", PENDULUM, "--batch", "4", "--compare", "mujoco", "--ours-from", str(ours)]) == 2
    assert "no figures for pendulum at batch 4" in capsys.readouterr().err
    assert main(["bench", PENDULUM, "--batch", "2", "--ours-from", str(ours)]) == 2
    assert "name them with --compare" in capsys.readouterr().err
    # the peers must start where ours did: a --settle other than the earlier run's is a usage error
    assert main(["bench", PENDULUM, "--batch", "3", "--compare", "mujoco", "--ours-from", str(ours),
                 "--settle", "5"]) == 2
    assert "was measured with --settle 0" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert main(["bench", PENDULUM, "--compare", "mujoco", "--ours-from", str(tmp_path / "bad.json")]) == 2
    assert "not a `scenec bench --json` file" in capsys.readouterr().err


def test_on_a_tpu_jax_peers_beside_our_measurement_are_a_usage_error(tmp_path, monkeypatch, capsys):
    # A TPU is held by one process: peers that would open it while ours holds it are refused up front,
    # with the two-run recipe; MuJoCo (the CPU) and --ours-from (this process stays off the chip) pass.
    from scenec.compiler import cmd_bench

    monkeypatch.setattr(cmd_bench, "one_process_per_chip", lambda: True)
    out = tmp_path / "ours.json"
    assert main(["bench", PENDULUM, "--batch", "2", "--steps", "3", "--repeats", "1",
                 "--compare", "mujoco,mjx", "--json", str(out)]) == 2
    assert "--ours-from FILE" in capsys.readouterr().err and not out.exists()
    assert main(["bench", PENDULUM, "--batch", "2", "--steps", "3", "--repeats", "1",
                 "--compare", "mujoco", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["scenes"][0]["points"][0]["peers"][0]["engine"] == "mujoco"


def test_a_run_cut_short_during_a_peer_keeps_the_peers_it_finished(tmp_path, monkeypatch):
    # tools/bench_tpu.sh stops the bench at its deadline with SIGINT, often in the middle of a slow
    # peer's compile: the JSON must already hold our point and every peer that finished before it.
    monkeypatch.setitem(bench_peers.ENGINES, "brax-spring", "json")   # "installed", whatever is here
    real = bench_peers.run_peer

    def run_peer(engine, *args, **kwargs):
        if engine == "brax-spring":
            raise KeyboardInterrupt          # what SIGINT raises in the bench's process
        return real(engine, *args, **kwargs)

    monkeypatch.setattr(bench_peers, "run_peer", run_peer)
    out = tmp_path / "bench.json"
    assert main(["bench", PENDULUM, "--batch", "2", "--steps", "3", "--repeats", "1",
                 "--compare", "mujoco,brax-spring", "--json", str(out)]) == 130
    data = json.loads(out.read_text())
    assert not data["complete"]
    point = data["scenes"][0]["points"][0]
    assert point["batch"] == 2 and [p["engine"] for p in point["peers"]] == ["mujoco"]
    assert point["peers"][0]["ratio"] == pytest.approx(
        sum(point["peers"][0]["ours_around"]) / 2 / point["peers"][0]["sim_s_per_wall_s"])


def test_jax_peers_get_our_xla_flags_and_the_workaround(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert bench_peers.peer_xla_flags("mujoco") == "--xla_cpu_enable_fast_math=false"
    assert bench_peers.peer_xla_flags("mjx").split() == ["--xla_cpu_enable_fast_math=false",
                                                         *bench_peers.PEER_XLA_FLAGS]
    # a flag already set wins over the workaround's
    mine = "--xla_cpu_enable_concurrency_optimized_scheduler=true"
    monkeypatch.setenv("XLA_FLAGS", mine)
    assert bench_peers.peer_xla_flags("brax-spring") == mine


def test_on_an_accelerator_jax_peers_get_float32_products_and_no_cpu_flags(monkeypatch):
    # jax's GPU default computes float32 products in TF32, under which MJX's solver diverged (H200,
    # batch 16,384: 97% of Ant's environments non-finite); our step has no products, so the peers
    # get full float32 too, unless the user chose a precision. The CPU workaround flag stays out.
    monkeypatch.setattr(scenec_runtime, "cpu_backend_expected", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.delenv("JAX_DEFAULT_MATMUL_PRECISION", raising=False)
    assert bench_peers.peer_env("mjx")["JAX_DEFAULT_MATMUL_PRECISION"] == "highest"
    assert bench_peers.peer_env("brax-spring")["XLA_FLAGS"] == ""
    assert "JAX_DEFAULT_MATMUL_PRECISION" not in bench_peers.peer_env("mujoco")
    monkeypatch.setenv("JAX_DEFAULT_MATMUL_PRECISION", "tensorfloat32")
    assert bench_peers.peer_env("mjx")["JAX_DEFAULT_MATMUL_PRECISION"] == "tensorfloat32"
    monkeypatch.setattr(scenec_runtime, "cpu_backend_expected", lambda: True)
    monkeypatch.delenv("JAX_DEFAULT_MATMUL_PRECISION")
    assert "JAX_DEFAULT_MATMUL_PRECISION" not in bench_peers.peer_env("mjx")


def test_peer_exports_work_around_what_mjx_and_brax_refuse():
    scenes = pathlib.Path(__file__).resolve().parent.parent / "scenes"
    # no frictional contact: the cone changes nothing, and MJX 3.17 fails on an elliptic one
    cartpole = bench_peers.exports(api.compile(scenes / "cartpole.yaml", measure_jit=False).model)
    assert 'cone="pyramidal"' in cartpole["Newton"] and 'cone="elliptic"' in cartpole["PGS"]
    # Brax refuses joint refs: hopper's root slide has ref 1.25, folded into the torso's pose
    hopper = bench_peers.exports(api.compile(scenes / "hopper.yaml", measure_jit=False).model)
    assert ' ref="1.25"' in hopper["PGS"] and " ref=" not in hopper["brax"]


def test_a_failed_peer_is_reported_by_its_exception_line():
    # JAX ends a filtered traceback with a note on the filtering: the exception's line is the news
    stderr = ("Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\n"
              "ValueError: mjx does not support this geom pair\n--------------------\n"
              "For simplicity, JAX has removed its internal frames from the traceback of the following "
              "exception. Set JAX_TRACEBACK_FILTERING=off to include these.\n")
    assert bench_peers._error_line(stderr) == "ValueError: mjx does not support this geom pair"
    assert bench_peers._error_line("Killed\n\n") == "Killed"
    assert bench_peers._error_line("") == ""


def test_engines_not_installed_give_a_line_and_exit_0(tmp_path, monkeypatch, capsys):
    # point the MJX and Brax engines at a module that cannot exist, whatever is installed here
    for engine in ("mjx", "brax-generalized", "brax-positional", "brax-spring"):
        monkeypatch.setitem(bench_peers.ENGINES, engine, "scenec_no_such_module_for_tests")
    out = tmp_path / "bench.json"
    assert main(["bench", PENDULUM, "--batch", "2", "--steps", "3", "--repeats", "1",
                 "--compare", "mjx,brax", "--json", str(out)]) == 0
    err_out = capsys.readouterr().out
    assert "mjx: not installed" in err_out and "brax-spring: not installed" in err_out
    data = json.loads(out.read_text())
    assert set(data["peers_missing"]) == {"mjx", "brax-generalized", "brax-positional", "brax-spring"}
    assert data["scenes"][0]["points"][0]["peers"] == []


def test_mjx_lines_about_warp_are_dropped_and_other_import_output_kept(tmp_path, monkeypatch, capsys):
    # mujoco-mjx prints two lines about its optional GPU backend when imported without it
    (tmp_path / "scenec_fake_peer.py").write_text(
        "print('Failed to import warp: No module named warp')\n"
        "print('Failed to import mujoco_warp: No module named warp')\nprint('something else')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(bench_peers.ENGINES, "mjx", "scenec_fake_peer")
    assert bench_peers.missing("mjx") is None
    assert capsys.readouterr().out == "something else\n"


def test_unknown_engine_is_a_usage_error(capsys):
    assert main(["bench", PENDULUM, "--compare", "mujoco,physx"]) == 2
    assert "unknown engine 'physx'" in capsys.readouterr().err
    assert bench_peers.parse_engines("brax, mujoco,brax-spring") == [
        "brax-generalized", "brax-positional", "brax-spring", "mujoco"]
