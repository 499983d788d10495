"""Time jax spends tracing and lowering the step, with Python's garbage collector paused during the
trace (as `step` does: runtime/step.py `gc_paused`) and with it running: each measurement in a fresh
process, as a user's first compile runs, the two variants alternating.

    python tools/bench_trace.py scenes/ant.yaml scenes/humanoid.yaml [--batch 1024] [--repeats 5]

Each process compiles the scene, makes the initial state, and times `jax.jit(step).trace(...)` and
`.lower()` once at the batch given. Reported: the median and the spread over the repeats of each, and
the ratio of the medians of their sum (a collection the pause avoids in the trace may instead run
during the lowering). XLA's own compile is not included (it does not run Python). In one long-lived
process the gain can vanish: what a collection costs depends on how many objects are young when the
trace starts. Not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time


def _once(path: str, batch: int, paused: bool) -> dict:
    import scenec.runtime  # noqa: F401  (the XLA flags, before jax starts)
    import jax
    import jax.numpy as jnp

    from scenec.compiler import api
    from scenec.runtime import step as rstep

    m = api.compile(path, measure_jit=False).model
    state = rstep.init(m)
    state = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
    action = jnp.zeros((batch, m.nu), state.q.dtype)
    jax.clear_caches()                       # a trace of this process's own, not a cached one
    saved = rstep.gc_paused
    if not paused:
        rstep.gc_paused = contextlib.nullcontext
    try:
        t0 = time.perf_counter()
        traced = jax.jit(rstep.step).trace(m, state, action)
        t1 = time.perf_counter()
        traced.lower()
        t2 = time.perf_counter()
    finally:
        rstep.gc_paused = saved
    return {"trace_s": t1 - t0, "lower_s": t2 - t1}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenes", nargs="+")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--one", choices=("paused", "running"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(_once(args.scenes[0], args.batch, args.one == "paused")))
        return 0

    for path in args.scenes:
        runs = {"paused": [], "running": []}
        for _ in range(args.repeats):
            for name in runs:
                out = subprocess.run([sys.executable, __file__, path, "--batch", str(args.batch), "--one", name],
                                     capture_output=True, text=True, check=True)
                runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"{path} (batch {args.batch}, {args.repeats} fresh processes each)")
        for name, rs in runs.items():
            tr, lo = [r["trace_s"] for r in rs], [r["lower_s"] for r in rs]
            print(f"  gc {name:8s} trace median {statistics.median(tr):.3f} s ({min(tr):.3f}-{max(tr):.3f});"
                  f"  lower median {statistics.median(lo):.3f} s ({min(lo):.3f}-{max(lo):.3f})")
        # A collection the pause avoids may only move into the lowering, so the sum is the figure.
        total = {name: statistics.median(r["trace_s"] + r["lower_s"] for r in rs) for name, rs in runs.items()}
        print(f"  trace + lower median: paused {total['paused']:.3f} s, running {total['running']:.3f} s;"
              f" running / paused {total['running'] / total['paused']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
