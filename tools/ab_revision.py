"""The step of an earlier revision against the working tree's, in one process: compile time, run speed
interleaved, and how far one step's results differ.

    python tools/ab_revision.py scenes/ant.yaml scenes/humanoid.yaml --base HEAD~1 [--rounds 11]

`runtime/` at `--base` (a git revision of this repository) is extracted into a temporary folder and
imported as a package of its own beside `scenec.runtime` (the runtime imports only itself, jax and
numpy, so both load in one process). Each scene is loaded once, by the working tree's compiler, and
both steps run that model; a base whose Model differs in fields the step reads fails with its own
error.

Per scene and revision:
- compile: `scenec run`'s rollout (`--steps` control steps of `--batch` environments in one jitted
  scan) lowered and compiled cold (the persistent cache is off, jax's caches cleared before each),
  twice per revision in the order base, work, work, base, so jax's one-time warm-up falls on neither
  side; the mean of the two;
- one step: both steps from the same 64 states (a few base steps of random actions in, so that
  contacts and limits are engaged), and per environment the largest difference of q, qd and the
  contact forces relative to that output's largest magnitude: float32 rounding (1e-7..1e-5) where
  only the order of the arithmetic moved. A few environments may differ by more with no error on
  either side: a contact or limit row whose distance lands within rounding of 0 is rigid on one side
  (C > 0, speculative) and soft on the other (C <= 0), and the soft row lets 1/(1 + a2) of the
  approach velocity through (constraints.py). Ant, seed 7, one environment of 64: a limit row at
  C = 0.0 against 6e-8, qd differing by 0.12 m/s after the step;
- speed: `--rounds` rounds, each timing one call of either rollout (after an untimed call) in turn,
  physics steps per second; the figure to read is the median of the per-round ratios work / base,
  with their range: a drift of the machine's speed falls on both sides of a round alike.
Not a test: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pathlib
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BASE_PACKAGE = "_scenec_base_runtime"


def extract_runtime(revision: str, folder: pathlib.Path) -> None:
    """runtime/ at `revision` as folder/BASE_PACKAGE."""
    archive = folder / "runtime.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", revision, "runtime"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    (folder / "runtime").rename(folder / BASE_PACKAGE)


def compile_cold(rstep, model, batch: int, steps: int):
    """`scenec run`'s rollout with `rstep`'s step, lowered and compiled with jax's caches cleared:
    (the compiled rollout, seconds)."""
    import jax

    from scenec.compiler.cmd_run import rollout_fn

    jax.clear_caches()
    t = time.perf_counter()
    run = rollout_fn(model, batch, steps, rstep).lower(jax.random.PRNGKey(0)).compile()
    return run, time.perf_counter() - t


def one_step_difference(base, work, model, batch: int = 64) -> dict:
    """One step's q, qd and contact forces from the same states by both steps: per environment the
    largest difference relative to the output's largest magnitude over the batch; the median and the
    largest over environments, and how many environments differ by more than 1e-3."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    s = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), base.init(model))
    u = jax.random.uniform(jax.random.PRNGKey(7), (batch, model.nu), minval=-1.0, maxval=1.0)
    step_b = jax.jit(lambda s, u: base.step(model, s, u))
    for _ in range(5):
        s = step_b(s, u)
    a, b = step_b(s, u), jax.jit(lambda s, u: work.step(model, s, u))(s, u)
    out = {}
    for name in ("q", "qd", "contact_force"):
        x, y = (np.asarray(getattr(r, name)).reshape(batch, -1) for r in (a, b))
        per_env = np.abs(x - y).max(axis=1) / (np.abs(x).max() + 1e-30)
        out[name] = (float(np.median(per_env)), float(per_env.max()), int((per_env > 1e-3).sum()))
    return out


def compare(scene: str, base, work, args) -> dict:
    import jax

    from scenec.compiler.cmd_run import load_model

    model, code = load_model(scene)
    if model is None:
        raise SystemExit(code)
    times = {"base": [], "work": []}
    runs = {}
    for side in ("base", "work", "work", "base"):
        runs[side], seconds = compile_cold(base if side == "base" else work, model, args.batch, args.steps)
        times[side].append(seconds)
    diff = one_step_difference(base, work, model)
    physics = args.batch * args.steps * model.substeps
    rates = {"base": [], "work": []}
    for r in range(args.rounds):
        for side in ("base", "work"):
            jax.block_until_ready(runs[side](jax.random.PRNGKey(r)))
            t = time.perf_counter()
            jax.block_until_ready(runs[side](jax.random.PRNGKey(r + 1000)))
            rates[side].append(physics / (time.perf_counter() - t))
    ratios = [w / b for w, b in zip(rates["work"], rates["base"])]
    return {"compile_s": {k: statistics.mean(v) for k, v in times.items()},
            "steps_per_s": {k: statistics.median(v) for k, v in rates.items()},
            "ratio": statistics.median(ratios), "ratio_range": [min(ratios), max(ratios)], "difference": diff}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="+")
    parser.add_argument("--base", required=True, help="a git revision of this repository")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=20, help="control steps per rollout call")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args(argv)

    os.environ["SCENEC_CACHE_DIR"] = "off"
    import scenec.runtime  # noqa: F401  (the XLA flags, before jax starts)
    from scenec.runtime import step as work

    with tempfile.TemporaryDirectory() as tmp:
        try:
            extract_runtime(args.base, pathlib.Path(tmp))
        except subprocess.CalledProcessError:
            print(f"ab_revision: cannot read runtime/ at {args.base!r}", file=sys.stderr)
            return 2
        sys.path.insert(0, tmp)
        base = importlib.import_module(f"{BASE_PACKAGE}.step")
        print(f"base {args.base} against the working tree; batch {args.batch}, {args.steps} control steps "
              f"per call, {args.rounds} rounds")
        for scene in args.scenes:
            r = compare(scene, base, work, args)
            c, s, d = r["compile_s"], r["steps_per_s"], r["difference"]
            print(f"{pathlib.Path(scene).stem}: rollout compile {c['base']:.2f} -> {c['work']:.2f} s; "
                  f"{s['base']:,.0f} -> {s['work']:,.0f} physics steps/s, work/base x{r['ratio']:.3f} "
                  f"(rounds {r['ratio_range'][0]:.3f}-{r['ratio_range'][1]:.3f}); one step's relative difference "
                  f"per environment (median, largest, environments over 1e-3 of 64): "
                  + ", ".join(f"{k} {v[0]:.0e} {v[1]:.0e} {v[2]}" for k, v in d.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
