"""Does splitting the batch over several XLA host devices use the CPU's cores better than one device?

    python tools/bench_devices.py [SCENE] [--batch 1024] [--steps 10] [--repeats 3] [--devices 2]

Runs the same random-action rollout as `scenec bench` (compiler/cmd_run.rollout_fn: `steps` control
steps of `batch` environments in one jitted scan), first with SCENEC_HOST_DEVICES=1 (one XLA host
device: the step runs the whole batch there), then with SCENEC_HOST_DEVICES=`devices` (the step
splits the batch over them itself: runtime/step.py, `_split`), each in its own process so that the
XLA flag takes effect, and prints physics steps/s of each (best of `repeats`) and the ratio. Not a
test: figures depend on the machine and its load.

Why the step splits: on the 2-core machine one XLA CPU device gains nothing from its second thread on
scenec's step (taskset to one core runs it as fast or faster), while two devices each run half the
batch on their own core.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def measure(scene: str, batch: int, steps: int, repeats: int, devices: int) -> float:
    """Physics steps/s of the rollout on `devices` host devices (run in this process)."""
    import time

    import jax

    from scenec.compiler.cmd_run import load_model, rollout_fn

    model, code = load_model(scene)
    if model is None:
        raise SystemExit(code)
    if len(jax.devices()) != devices:
        raise SystemExit(f"jax sees {len(jax.devices())} devices, not {devices}")
    run = rollout_fn(model, batch, steps)
    keys = jax.random.PRNGKey(0)
    jax.block_until_ready(run(keys))                                  # compile and warm up
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(run(keys))
        best = max(best, batch * steps * model.substeps / (time.perf_counter() - t))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene", nargs="?", default=str(ROOT / "scenes" / "ant.yaml"))
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.scene, args.batch, args.steps, args.repeats, args.child)))
        return 0
    rates = {}
    for n in (1, args.devices):
        env = dict(os.environ, SCENEC_HOST_DEVICES=str(n))
        out = subprocess.run([sys.executable, __file__, args.scene, "--batch", str(args.batch), "--steps",
                              str(args.steps), "--repeats", str(args.repeats), "--child", str(n)],
                             env=env, capture_output=True, text=True, check=True)
        rates[n] = float(out.stdout.strip().splitlines()[-1])
        print(f"{n} device(s): {rates[n]:,.0f} physics steps/s", flush=True)
    print(f"ratio {args.devices} devices / 1: {rates[args.devices] / rates[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
