"""What the on-disk compile cache saves: the step's compile time, cold and read back, each in a fresh
process (the way a second `scenec run` or training run meets it).

    python tools/bench_cache.py [SCENE ...] [--batch 1024]

For each scene: jax trace time, XLA compile time with an empty cache (it writes the entry), then the
same in a new process that reads it, and the ratio. Uses a temporary cache folder, removed after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
from scenec.runtime import cache
cache.enable(sys.argv[3])
import jax, jax.numpy as jnp
from scenec.compiler import api
from scenec.runtime import step
m = api.compile(sys.argv[1], measure_jit=False).model
batch = int(sys.argv[2])
s = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), step.init(m))
t0 = time.perf_counter()
lowered = jax.jit(lambda s, a: step.step(m, s, a)).lower(s, jnp.zeros((batch, m.nu)))
t1 = time.perf_counter()
with cache.counting() as reads:
    lowered.compile()
t2 = time.perf_counter()
print(json.dumps({"trace_s": t1 - t0, "xla_s": t2 - t1, "cache_reads": reads.hits}))
"""


def measure(scene: str, batch: int, folder: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, scene, str(batch), folder], check=True,
                         capture_output=True, text=True, env={**os.environ, "SCENEC_CACHE_DIR": folder})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="*", default=[os.path.join(here, "..", "scenes", s)
                                                      for s in ("ant.yaml", "humanoid.yaml")])
    parser.add_argument("--batch", type=int, default=1024)
    args = parser.parse_args()
    print(f"{'scene':12s} {'batch':>6s} {'trace s':>8s} {'XLA cold s':>11s} {'XLA cached s':>13s} "
          f"{'cold ÷ cached':>14s} {'step ready, cold → cached':>27s}")
    for scene in args.scenes:
        with tempfile.TemporaryDirectory() as folder:
            cold = measure(scene, args.batch, folder)
            warm = measure(scene, args.batch, folder)
        if cold["cache_reads"] or not warm["cache_reads"]:
            print(f"{scene}: the second process did not read the cache ({cold}, {warm})", file=sys.stderr)
            return 1
        name = os.path.splitext(os.path.basename(scene))[0]
        print(f"{name:12s} {args.batch:6d} {cold['trace_s']:8.2f} {cold['xla_s']:11.2f} {warm['xla_s']:13.2f} "
              f"{cold['xla_s'] / warm['xla_s']:14.1f} "
              f"{cold['trace_s'] + cold['xla_s']:12.2f} → {warm['trace_s'] + warm['xla_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
