"""`scenec bench --compare`'s stable-timestep rerun (compiler/cmd_bench.py `compare_point`): a peer
whose environments end non-finite runs again (MJX first with the scene's solver iterations at our
timestep) at half its timestep until it stays finite, and the ratio of that run is reported beside
the first.

No peer engine runs here: `run_peer` is replaced by a stand-in whose stability depends on the
timestep it is given (the exported MJCF's, read back), so the test checks the timesteps tried, which
run is taken as stable and its ratio, against figures worked out by hand."""

from __future__ import annotations

import dataclasses
import pathlib
import re

import pytest

from scenec.compiler import api, bench_peers, cmd_bench

PENDULUM = pathlib.Path(__file__).resolve().parent.parent / "scenes" / "pendulum.yaml"


def fake_peer(stable_below: float, calls: list, settles: list | None = None):
    """A peer that blows up (every environment non-finite) at timesteps of `stable_below` or more and
    simulates 1000 physics steps per second whatever its timestep; `settles` records each call's
    `settle`."""
    def run_peer(engine, model, xml, batch, steps, repeats, seed=0, timeout=0.0, settle=0):
        h = float(re.search(r'<option[^>]* timestep="([^"]+)"', xml["PGS"]).group(1))
        assert h == pytest.approx(float(model.timestep) / model.substeps)   # the export follows the model
        calls.append(h)
        if settles is not None:
            settles.append(settle)
        return {"engine": engine, "timestep": h, "solver": "PGS", "iterations": 1, "compile_s": 0.0,
                "physics_steps_per_s": 1000.0, "sim_s_per_wall_s": 1000.0 * h,
                "nonfinite": batch if h >= stable_below else 0}
    return run_peer


@pytest.fixture(scope="module")
def pendulum():
    return api.compile(PENDULUM, measure_jit=False).model


def test_an_unstable_peer_is_rerun_at_half_its_timestep_until_it_is_stable(pendulum, monkeypatch):
    h = float(pendulum.timestep) / pendulum.substeps
    calls = []
    monkeypatch.setattr(bench_peers, "run_peer", fake_peer(stable_below=0.3 * h, calls=calls))
    ours = {"batch": 4, "sim_s_per_wall_s": 2.0}
    (r,) = cmd_bench.compare_point(["mujoco"], pendulum, bench_peers.exports(pendulum), ours, 3, 1, 60.0,
                                   halvings=3)
    # h and h/2 blow up, h/4 is the first below 0.3 h; h/8 is never tried
    assert calls == pytest.approx([h, h / 2, h / 4])
    assert r["ratio"] == pytest.approx(2.0 / (1000 * h))
    assert r["stable"]["timestep"] == pytest.approx(h / 4) and r["stable"]["nonfinite"] == 0
    assert r["stable"]["ratio"] == pytest.approx(2.0 / (1000 * h / 4))


def test_the_reruns_settle_as_long_as_the_first_run(pendulum, monkeypatch):
    # `--settle N` counts control steps, which a halved timestep keeps (each is twice the physics
    # steps), so every rerun settles over the same simulated seconds as the first run.
    h = float(pendulum.timestep) / pendulum.substeps
    calls, settles = [], []
    monkeypatch.setattr(bench_peers, "run_peer", fake_peer(stable_below=0.3 * h, calls=calls, settles=settles))
    cmd_bench.compare_point(["mujoco"], pendulum, bench_peers.exports(pendulum),
                            {"batch": 4, "sim_s_per_wall_s": 2.0}, 3, 1, 60.0, halvings=3, settle=7)
    assert calls == pytest.approx([h, h / 2, h / 4]) and settles == [7, 7, 7]


def test_with_retiming_each_run_is_set_against_ours_just_before_and_just_after_it(pendulum, monkeypatch):
    # The machine drifts: ours, timed again after every peer run (2.0 sim s per wall s first, then
    # 3.0, 5.0, 9.0, 17.0, 33.0), is taken as the mean of the two timings that bracket each run. Two
    # engines, each unstable at h and stable at h/2, with a peer that fails between them (ours is
    # timed again after it too): the runs go h, h/2, (failure), h, h/2.
    h = float(pendulum.timestep) / pendulum.substeps
    calls, later = [], iter([3.0, 5.0, 9.0, 17.0, 33.0])
    works = fake_peer(stable_below=0.6 * h, calls=calls)

    def run_peer(engine, *args, **kwargs):
        if engine == "brax-spring":
            raise RuntimeError("no result")
        return works(engine, *args, **kwargs)

    monkeypatch.setattr(bench_peers, "run_peer", run_peer)
    first, failed, second = cmd_bench.compare_point(
        ["mujoco", "brax-spring", "mujoco"], pendulum, bench_peers.exports(pendulum),
        {"batch": 4, "sim_s_per_wall_s": 2.0}, 3, 1, 60.0, halvings=2, retime=lambda: next(later))
    assert calls == pytest.approx([h, h / 2, h, h / 2])
    assert first["ours_around"] == [2.0, 3.0] and first["ratio"] == pytest.approx(2.5 / (1000 * h))
    assert first["stable"]["ours_around"] == [3.0, 5.0]
    assert first["stable"]["ratio"] == pytest.approx(4.0 / (1000 * h / 2))
    assert "error" in failed and "ours_around" not in failed
    assert second["ours_around"] == [9.0, 17.0] and second["ratio"] == pytest.approx(13.0 / (1000 * h))
    assert second["stable"]["ours_around"] == [17.0, 33.0]
    assert second["stable"]["ratio"] == pytest.approx(25.0 / (1000 * h / 2))
    # without retiming (figures from an earlier run), every run is set against the one figure
    (r,) = cmd_bench.compare_point(["mujoco"], pendulum, bench_peers.exports(pendulum),
                                   {"batch": 4, "sim_s_per_wall_s": 2.0}, 3, 1, 60.0)
    assert "ours_around" not in r and r["ratio"] == pytest.approx(2.0 / (1000 * h))


def test_a_peer_never_stable_within_the_halvings_says_how_far_it_was_tried(pendulum, monkeypatch):
    h = float(pendulum.timestep) / pendulum.substeps
    calls = []
    monkeypatch.setattr(bench_peers, "run_peer", fake_peer(stable_below=0.1 * h, calls=calls))
    (r,) = cmd_bench.compare_point(["mujoco"], pendulum, bench_peers.exports(pendulum),
                                   {"batch": 4, "sim_s_per_wall_s": 2.0}, 3, 1, 60.0, halvings=2)
    assert calls == pytest.approx([h, h / 2, h / 4])
    assert r["stable"] is None and r["stable_tried_down_to"] == pytest.approx(h / 4)


def test_a_stable_peer_or_halvings_off_runs_once(pendulum, monkeypatch):
    h = float(pendulum.timestep) / pendulum.substeps
    for stable_below, halvings in ((2 * h, 2), (0.1 * h, 0)):
        calls = []
        monkeypatch.setattr(bench_peers, "run_peer", fake_peer(stable_below, calls))
        (r,) = cmd_bench.compare_point(["mujoco"], pendulum, bench_peers.exports(pendulum),
                                       {"batch": 4, "sim_s_per_wall_s": 2.0}, 3, 1, 60.0, halvings=halvings)
        assert calls == pytest.approx([h]) and "stable" not in r


def engine_peer(h0: float, stable: set, calls: list):
    """A peer that stays finite only for the (engine, h0 / timestep) in `stable`, and records each
    (engine, h0 / timestep) it is asked for."""
    def run_peer(engine, model, xml, batch, steps, repeats, seed=0, timeout=0.0, settle=0):
        h = float(re.search(r'<option[^>]* timestep="([^"]+)"', xml["PGS"]).group(1))
        key = (engine, round(h0 / h))
        calls.append(key)
        return {"engine": engine, "timestep": h, "solver": "Newton", "iterations": 1, "compile_s": 0.0,
                "physics_steps_per_s": 1000.0, "sim_s_per_wall_s": 1000.0 * h,
                "nonfinite": 0 if key in stable else batch}
    return run_peer


@pytest.mark.parametrize("stable, tried, taken", [
    # Brax's MJX options blow up, the scene's iteration count at our timestep holds: no halving
    ({("mjx-ours", 1)}, [("mjx", 1), ("mjx-ours", 1)], ("mjx-ours", 1)),
    # neither holds at ours: the variant with more solver work is then halved
    ({("mjx-ours", 2)}, [("mjx", 1), ("mjx-ours", 1), ("mjx-ours", 2)], ("mjx-ours", 2)),
    # nothing holds: the variant at ours and both halvings, then none taken
    (set(), [("mjx", 1), ("mjx-ours", 1), ("mjx-ours", 2), ("mjx-ours", 4)], None),
])
def test_unstable_mjx_first_gets_more_solver_work_at_our_timestep(pendulum, stable, tried, taken, monkeypatch):
    assert pendulum.solver_iterations > bench_peers.MJX_ITERATIONS      # 4 against Brax's 1
    h = float(pendulum.timestep) / pendulum.substeps
    calls = []
    monkeypatch.setattr(bench_peers, "run_peer", engine_peer(h, stable, calls))
    (r,) = cmd_bench.compare_point(["mjx"], pendulum, bench_peers.exports(pendulum),
                                   {"batch": 4, "sim_s_per_wall_s": 2.0}, 3, 1, 60.0, halvings=2)
    assert calls == tried
    assert r["engine"] == "mjx" and r["ratio"] == pytest.approx(2.0 / (1000 * h))
    if taken is None:
        assert r["stable"] is None and r["stable_tried_down_to"] == pytest.approx(h / 4)
    else:
        engine, div = taken
        assert r["stable"]["engine"] == engine and r["stable"]["timestep"] == pytest.approx(h / div)
        assert r["stable"]["ratio"] == pytest.approx(2.0 / (1000 * h / div))


def test_mjx_at_the_engines_own_iteration_count_is_only_halved(pendulum, monkeypatch):
    """A scene that iterates no more than Brax's MJX options has no variant with more solver work."""
    model = dataclasses.replace(pendulum, solver_iterations=bench_peers.MJX_ITERATIONS)
    h = float(model.timestep) / model.substeps
    calls = []
    monkeypatch.setattr(bench_peers, "run_peer", engine_peer(h, {("mjx", 2)}, calls))
    (r,) = cmd_bench.compare_point(["mjx"], model, bench_peers.exports(model),
                                   {"batch": 4, "sim_s_per_wall_s": 2.0}, 3, 1, 60.0, halvings=2)
    assert calls == [("mjx", 1), ("mjx", 2)] and r["stable"]["engine"] == "mjx"


def test_negative_halvings_is_a_usage_error(capsys):
    from scenec.compiler.cli import main

    assert main(["bench", str(PENDULUM), "--stable-halvings", "-1"]) == 2
    assert "--stable-halvings" in capsys.readouterr().err
