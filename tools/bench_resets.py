"""Ours against MuJoCo's C engine in the regime an RL run's first iterations put them in: random
actions, and every environment whose task ends starts again from the scene's initial state.

    python tools/bench_resets.py scenes/humanoid.yaml --batch 1024 --steps 200 --repeats 3

MuJoCo's work per step follows the contacts it finds and ours is the same in every step, so the ratio
depends on the states a run passes through (`scenec bench --settle` times one regime at a time).
Training resets environments as their episodes end: under random actions Humanoid's episodes end
after a few dozen control steps, as it falls. This times that mix.

The reset schedule is ours: one rollout of `--steps` control steps under uniform random controls,
in which each environment is put back to the initial state (no reset noise) after every control
step where the scene's task says its episode ends (or its state is non-finite). Both engines are
then timed over `--steps` control steps with that schedule, each on its own physics and random
controls: the same environments start again after the same control steps, so both spend the run in
the same mix of episode phases. Ours runs the schedule inside one jitted scan (`rollout`); MuJoCo
(`mujoco.rollout` on every core, the model `scenec bench --compare mujoco` exports) one call per
control step, with the states of the environments that end put back between calls. Each figure is
the median of `--repeats` timed runs after a warm-up; ours is timed again after MuJoCo, and the ratio
is to the mean of our two timings (as `scenec bench`). Beside the reset runs, both engines' runs
without resets: ours in the same scan, MuJoCo both in one call and in one call per control step
(what the calls themselves cost). MuJoCo's contacts a step are counted by replaying the first 16
environments' reset runs on one thread (bench_peers.mujoco_contact_counts).

Needs the `bench` extra (mujoco). Not a test: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


def schedule(model, task, batch: int, steps: int, seed: int = 0) -> np.ndarray:
    """(steps, batch) bool: whether each environment ends its episode at each control step (and so
    starts again from the initial state), from our rollout under uniform random controls. A task's
    targets stay where they start (drawn once per environment)."""
    import jax
    import jax.numpy as jnp

    from scenec.compiler.cmd_run import control_bounds, restarted
    from scenec.runtime import step as rstep
    from scenec.runtime import task as rtask

    lo, hi = control_bounds(model)
    init = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), rstep.init(model))
    targets = jax.vmap(lambda k: rtask.initial_targets(task, init.q.dtype, k))(
        jax.random.split(jax.random.PRNGKey(seed + 7), batch))

    def ends(before, after, u, tg):
        prev = rtask.View(model, before, u, tg)
        return rtask.terminated(task, rtask.View(model, after, u, tg, prev))

    def body(states, k):
        u = jax.random.uniform(k, (batch, model.nu), states.q.dtype, lo, hi)
        new = rstep.step(model, states, u)
        done = jax.vmap(ends)(states, new, u, targets) | ~jnp.all(jnp.isfinite(new.q), axis=-1)
        return restarted(done, init, new), done

    run = jax.jit(lambda key: jax.lax.scan(body, init, jax.random.split(key, steps))[1])
    return np.asarray(run(jax.random.PRNGKey(seed)))


def rollout(model, batch: int, steps: int):
    """Jitted (key, resets (steps, batch)) → (final states, non-finite count): `scenec run`'s rollout
    (cmd_run._rollout), each environment put back to the initial state after the control steps
    `resets` marks."""
    import jax
    import jax.numpy as jnp

    from scenec.compiler.cmd_run import _rollout
    from scenec.runtime import step as rstep

    def run(key, resets):
        states = _rollout(rstep, model, batch, steps, key, batch, 0, resets=resets)
        return states, jnp.sum(~jnp.all(jnp.isfinite(states.q), axis=-1))

    return jax.jit(run)


def time_ours(model, batch: int, steps: int, repeats: int, resets: np.ndarray):
    """A function that times our rollout with `resets` (and without, all False): {"resets": sim s
    per wall s, "plain": ..., "nonfinite": ...}."""
    import jax

    run = rollout(model, batch, steps)
    marks = {"resets": jax.numpy.asarray(resets), "plain": jax.numpy.zeros_like(jax.numpy.asarray(resets))}
    for m in marks.values():
        jax.block_until_ready(run(jax.random.PRNGKey(0), m))     # one program for both: one compile

    def timed() -> dict:
        out = {}
        for name, m in marks.items():
            times, bad = [], 0
            for r in range(repeats):
                t = time.perf_counter()
                _, n = jax.block_until_ready(run(jax.random.PRNGKey(r + 1), m))
                times.append(time.perf_counter() - t)
                bad = max(bad, int(n))
            out[name] = batch * steps * float(model.timestep) / statistics.median(times)
            out[f"{name}_nonfinite"] = bad
        return out

    return timed


def time_mujoco(model, batch: int, steps: int, repeats: int, resets: np.ndarray, seed: int = 0) -> dict:
    """MuJoCo's sim s per wall s with the reset schedule (one `mujoco.rollout` call per control step),
    and without resets, per control step and in one call; its contacts and constraint rows a step in
    the reset runs of the first CONTACT_SAMPLE environments."""
    import mujoco

    from scenec.compiler.bench_peers import (CONTACT_SAMPLE, _controls, _initial_states, ctrl_bounds, exports,
                                             mujoco_contact_counts, rollout_states)

    mj = mujoco.MjModel.from_xml_string(exports(model)["PGS"])
    data = mujoco.MjData(mj)
    mujoco.mj_resetDataKeyframe(mj, data, mj.key("init").id)
    nthread = os.cpu_count() or 1
    datas = [mujoco.MjData(mj) for _ in range(nthread)]
    sub = model.substeps
    lo, hi = ctrl_bounds(mj)
    control = _controls(np.random.default_rng(seed), lo, hi, batch, steps, sub)
    init = _initial_states(mj, np.broadcast_to(data.qpos, (batch, mj.nq)),
                           np.broadcast_to(data.qvel, (batch, mj.nv)), datas[0])
    out = np.empty((batch, sub, init.shape[1]))

    def per_step(marks):
        state = init.copy()
        for t in range(steps):
            state = rollout_states(mj, state, control[:, t * sub:(t + 1) * sub], nthread, datas, out)
            state[marks[t]] = init[marks[t]]
        return state

    def one_call():
        return rollout_states(mj, init, control, nthread, datas)

    none = np.zeros_like(resets)
    runs = {"resets": lambda: per_step(resets), "plain_per_step": lambda: per_step(none), "plain": one_call}
    figures = {}
    for name, fn in runs.items():
        fn()                                                       # warm-up
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        figures[name] = batch * steps * sub * float(mj.opt.timestep) / statistics.median(times)
    sample = min(batch, CONTACT_SAMPLE)
    restart = np.zeros((sample, steps * sub), bool)
    restart[:, sub - 1::sub] = resets[:, :sample].T          # after a control step's last physics step
    ncon, nefc = mujoco_contact_counts(mj, None, None, control[:sample], init=init[:sample], restart=restart)
    figures.update(contacts_per_step=float(ncon.mean()), constraint_rows_per_step=float(nefc.mean()),
                   threads=nthread,
                   timestep=float(mj.opt.timestep), iterations=int(mj.opt.iterations))
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="+")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=200, help="control steps per timed run (default 200)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    if min(args.batch, args.steps, args.repeats) < 1:
        print("bench_resets: --batch, --steps and --repeats must be at least 1", file=sys.stderr)
        return 2
    try:
        import mujoco  # noqa: F401
    except ImportError:
        print("bench_resets: needs mujoco (pip install -e '.[bench]')", file=sys.stderr)
        return 2
    from scenec.compiler.cmd_train import load_compiled

    results = []
    for path in args.scenes:
        loaded, code = load_compiled(path, command="bench_resets")
        if loaded is None:
            return code
        model, task = loaded.model, loaded.task
        if task is None or not task.termination:
            print(f"bench_resets: {path} has no task with a termination, so nothing resets "
                  "(`scenec bench` times it)", file=sys.stderr)
            return 2
        marks = schedule(model, task, args.batch, args.steps)
        ends = int(marks.sum())
        lengths = _episode_lengths(marks)
        print(f"{model.name}: batch {args.batch}, {args.steps} control steps of {float(model.timestep):g} s, "
              f"{ends} episode ends in our schedule ({ends / args.batch:.1f} per environment; completed "
              f"episodes' lengths p10/p50/p90 {_pct(lengths)} control steps)", flush=True)
        ours_timer = time_ours(model, args.batch, args.steps, args.repeats, marks)
        before = ours_timer()
        mj = time_mujoco(model, args.batch, args.steps, args.repeats, marks)
        after = ours_timer()
        ours = {k: (before[k] + after[k]) / 2 for k in ("resets", "plain")}
        row = {"scene": model.name, "source": path, "batch": args.batch, "steps": args.steps,
               "episode_ends": ends, "episode_length_percentiles": _pct(lengths),
               "ours_before": before, "ours_after": after, "mujoco": mj,
               "ratio_resets": ours["resets"] / mj["resets"], "ratio_plain": ours["plain"] / mj["plain"],
               "ratio_plain_per_step": ours["plain"] / mj["plain_per_step"]}
        results.append(row)
        print(f"  ours    sim s/wall s: with resets {before['resets']:,.1f} and {after['resets']:,.1f} "
              f"(before and after MuJoCo), without {before['plain']:,.1f} and {after['plain']:,.1f}"
              + (f"; non-finite {before['resets_nonfinite']}" if before["resets_nonfinite"] else ""))
        print(f"  MuJoCo  sim s/wall s: with resets {mj['resets']:,.1f} (one call per control step), "
              f"without {mj['plain_per_step']:,.1f} (per control step) and {mj['plain']:,.1f} (one call); "
              f"{mj['contacts_per_step']:.2f} contacts and {mj['constraint_rows_per_step']:.1f} rows a step "
              f"with resets; h {mj['timestep']:g} s, PGS {mj['iterations']} it, {mj['threads']} threads")
        print(f"  ours x{row['ratio_resets']:.2f} MuJoCo C with resets; without: x{row['ratio_plain']:.2f} "
              f"(one call), x{row['ratio_plain_per_step']:.2f} (per control step)", flush=True)
        if args.json:
            from scenec.runtime.io import atomic_write_bytes

            atomic_write_bytes(args.json, (json.dumps(results, indent=2) + "\n").encode())
    return 0


def _episode_lengths(marks: np.ndarray) -> list[int]:
    """Lengths in control steps of the episodes that end within the schedule (from the run's start or
    the previous end)."""
    out = []
    for env in marks.T:
        last = -1
        for t in np.flatnonzero(env):
            out.append(int(t - last))
            last = t
    return out


def _pct(lengths: list[int]) -> list:
    return [int(np.percentile(lengths, p)) for p in (10, 50, 90)] if lengths else []


if __name__ == "__main__":
    sys.exit(main())
