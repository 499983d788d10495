"""tools/bench_resets.py: the reset schedule comes from the scene's task on our physics, and the timed
rollout puts each environment back to the initial state where the schedule says, checked against the
closed form of a free fall under semi-implicit Euler."""

import pathlib

import jax
import numpy as np
import pytest

from scenec.compiler import api

from conftest import load_tool

ROOT = pathlib.Path(__file__).resolve().parent.parent
# float32 positions after a few dozen steps of 2 ms: well under a micrometre from the closed form
Z_TOL = 1e-5

DROP = """
name: drop
options: {timestep: 0.002}
bodies:
  - name: ball
    pos: [0, 0, %r]
    colliders: [{sphere: {radius: 0.1 m}}]
    mass: 1 kg
joints:
  - {name: ball_free, kind: free, child: ball}
task:
  observations:
    - {name: height, expr: "body.ball.pos.z"}
  reward:
    - {name: alive, expr: "1"}
  termination:
    - {name: low, expr: "body.ball.pos.z < %r"}
"""


@pytest.fixture(scope="module")
def drop(tmp_path_factory):
    z0, z1 = 1.0, 0.99
    path = tmp_path_factory.mktemp("drop") / "drop.yaml"
    path.write_text(DROP % (z0, z1))
    return api.compile(str(path), measure_jit=False), z0, z1


def test_a_falling_ball_ends_its_episode_every_k_steps(drop):
    # z after n steps of h from rest: z0 − g·h²·n(n+1)/2 (semi-implicit Euler). The episode ends in
    # the first step whose result is below z1, step k = min{n : z_n < z1}, and after the reset the
    # same fall repeats: the ends fall on steps k, 2k, 3k (counting from 1).
    compiled, z0, z1 = drop
    g, h = 9.81, 0.002
    n = np.arange(1, 200)
    k = int(n[np.argmax(z0 - g * h * h * n * (n + 1) / 2 < z1)])
    tool = load_tool("bench_resets")
    steps = 3 * k + 2
    marks = tool.schedule(compiled.model, compiled.task, 2, steps)
    expected = (np.arange(1, steps + 1) % k == 0)
    assert 5 < k < 100 and marks.shape == (steps, 2)
    assert np.array_equal(marks, np.stack([expected, expected], axis=1))
    # the timed rollout with that schedule: the last reset after step 3k, two steps of fall since
    states, bad = tool.rollout(compiled.model, 2, steps)(jax.random.PRNGKey(1), marks)
    assert int(bad) == 0
    assert np.asarray(states.q)[:, 2] == pytest.approx(z0 - g * h * h * 3, abs=Z_TOL)
    # without resets it falls all the way
    states, _ = tool.rollout(compiled.model, 2, steps)(jax.random.PRNGKey(1), np.zeros_like(marks))
    assert np.asarray(states.q)[:, 2] == pytest.approx(z0 - g * h * h * steps * (steps + 1) / 2, abs=Z_TOL)


def test_episode_lengths_count_from_the_start_and_each_end():
    tool = load_tool("bench_resets")
    marks = np.zeros((10, 2), bool)
    marks[[2, 6], 0] = True          # ends after steps 3 and 7: lengths 3, 4
    marks[9, 1] = True               # one episode of 10
    assert sorted(tool._episode_lengths(marks)) == [3, 4, 10]


def test_a_scene_without_termination_is_a_usage_error(capsys):
    pytest.importorskip("mujoco")
    tool = load_tool("bench_resets")
    assert tool.main([str(ROOT / "scenes" / "pendulum.yaml"), "--steps", "2"]) == 2
    assert "no task with a termination" in capsys.readouterr().err
