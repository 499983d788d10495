"""Where the XLA compile of a scene's step goes: one cold compile of the jitted step at a batch (the
program whose compile time `scenec bench` reports), or with `--rollout` of `scenec run`'s rollout (the
jitted scan of steps that `tools/bench_flags.py` times), in a fresh process per scene, under jax's
profiler, split into XLA's own phases.

    python tools/compile_phases.py scenes/ant.yaml scenes/humanoid.yaml [--batch 1024] [--rollout]
    python tools/compile_phases.py scenes/ant.yaml --gspmd     # the same with XLA's older partitioner
    python tools/compile_phases.py scenes/ant.yaml --train ppo # a learner's training iteration

`--train ALGO` (ppo, apg or es) times the program `scenec train --algo ALGO` compiles for each
iteration (runtime/train/runner.py `jitted_iteration`, the learner's defaults, the environment of the
scene's task): the rollout, the task and auto-reset, and the update, placed as the runner places its
state. Ant, 2026-12-07: PPO trace + lower 1.1 s, XLA 3.3-3.4 s; APG (the gradient of 32 steps through the
physics) 5.0-5.3 s and 20.7-21.3 s with the step vmapped per environment on one device, and since
cfc3c89 (the batch through the step's batch path, split over the two devices) 6.8 s and 28.8 s, the
SPMD partitioner 4.1 s of it, in a slower state of the machine (the two forms side by side there:
XLA 20.0 against 24.2-25.1 s).

Per scene: jax's trace and lowering (Python), then XLA's compile as the wall time of its phases, read
from the profiler's spans (names as XLA's CPU compiler writes them in jaxlib 0.10; a phase it does not
write is left out):
- `spmd partitioner`: the device split inside a jitted program (`step` splits a batch over one XLA
  device per core with `shard_map`, runtime/step.py: the rollout's case); `of it, Shardy` is the
  Shardy partitioner's own pass, the round trip of the whole module through its MLIR dialect. The
  step as the bench compiles it (`jit_step`'s program) runs a split batch as replicas of one
  device's program (runtime/replicas.py), without this phase;
- `HLO passes`: XLA's optimisation of the module before and after layout assignment (fusion among
  them);
- `LLVM codegen`: the machine code of every fused kernel and single-kernel loop, on XLA's compile
  threads; `largest task` is the longest of its parallel tasks (one LLVM module each) and `tasks` their
  summed time (on 2 cores codegen's wall time is about half of that, or the largest task if longer);
- `rest`: the compile's wall time outside those (thunk emission, module splitting, checks).
Then the optimised module's size: HLO instructions and fusions (the figures codegen grows with), and
its instructions by stage of the step (those that carry a jax scope; keyed as
`tools/profile_scopes.py` keys its stages; Ant at batch 1024: the solver's iterations 850 of 4,416,
kinematics 803, the loops, tiles and device split 639, collide 383).

The profiler costs a little itself; read the phases as shares of the compile, with
`tools/bench_flags.py` for compile times without it. `--gspmd` sets `jax_use_shardy_partitioner` off in
the child (XLA warns that this partitioner is deprecated), to say what Shardy adds to the split. Not a
test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import re
import subprocess
import sys

from profile_scopes import covered, instructions, scope_of   # a union's length; HLO op_names by stage

ROOT = pathlib.Path(__file__).resolve().parent.parent

CODEGEN = "Codegen"
# (label, span name prefix) of the phases reported; a phase's spans count as the union of their intervals
PHASES = (("spmd partitioner", "spmd-partitioner"), ("of it, Shardy", "shardy-xla"),
          ("HLO passes", "HLO passes"), ("LLVM codegen", CODEGEN))
COMPILE = "PjRtCpuClient::Compile"


def phase_seconds(events) -> dict:
    """{label: seconds} of PHASES and COMPILE from a Chrome trace's complete ("X") events (dicts with
    name, ts and dur in µs), each phase the union of its spans' intervals on the timeline, so that a
    span nested in another of the same phase counts once, and "rest": the compile's wall time outside
    the top-level phases."""
    spans = [e for e in events if e.get("ph") == "X"]
    out = {}
    for label, prefix in PHASES + (("compile", COMPILE),):
        intervals = [(e["ts"], e["ts"] + e["dur"]) for e in spans if e["name"].startswith(prefix)]
        if intervals:
            out[label] = covered(intervals) / 1e6
    if "compile" in out:
        top = [(e["ts"], e["ts"] + e["dur"]) for e in spans
               if any(e["name"].startswith(p) for label, p in PHASES if label != "of it, Shardy")]
        out["rest"] = max(0.0, out["compile"] - covered(top) / 1e6)
    return out


def module_size(hlo_text: str) -> dict:
    """{"instructions", "fusions"} of an optimised HLO module's text."""
    return {"instructions": len(re.findall(r"^\s+(?:ROOT )?%?[\w.\-]+ = ", hlo_text, re.M)),
            "fusions": len(re.findall(r" fusion\(", hlo_text))}


def scope_sizes(hlo_text: str) -> dict:
    """{stage: instructions} of an optimised HLO module's text, for the instructions that name the jax
    scope they came from (op_name), keyed as tools/profile_scopes.py keys its stages, largest first:
    which stage's code XLA compiles most of."""
    return dict(collections.Counter(scope_of(name) for name in instructions(hlo_text)[0].values()).most_common())


def codegen_tasks(events) -> list:
    """Seconds of each task XLA's compile threads ran inside the codegen span, longest first."""
    spans = [e for e in events if e.get("ph") == "X"]
    codegen = [(e["ts"], e["ts"] + e["dur"]) for e in spans if e["name"].startswith(CODEGEN)]
    return sorted((e["dur"] / 1e6 for e in spans if e["name"] == "TaskDispatcher::dispatch"
                   and any(a <= e["ts"] and e["ts"] + e["dur"] <= b for a, b in codegen)), reverse=True)


def _iteration_lowering(scene: str, algo: str):
    """A function that lowers a learner's jitted iteration for the scene's task as the runner
    compiles it (the scene's analysis and the learner's set-up done first, outside the timing)."""
    import jax

    from scenec.compiler import api
    from scenec.runtime import envs
    from scenec.runtime.train import runner

    learner = runner.make_learner(algo, envs.load(api.compile(scene, measure_jit=False)))
    placement = runner._placement(learner)
    abstract = jax.eval_shape(learner.init, jax.random.PRNGKey(0))
    if placement is not None:
        abstract = jax.tree_util.tree_map(
            lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=placement), abstract)
    return lambda: runner.jitted_iteration(learner).lower(abstract)


def _step_lowering(scene: str, batch: int, steps: int, rollout: bool):
    """A function that lowers the step at `batch` as `scenec bench` compiles it
    (cmd_bench.bench_point), or with `rollout` `scenec run`'s rollout of `steps` control steps (the
    scene's analysis and the initial state made first, outside the timing)."""
    import jax
    import jax.numpy as jnp

    from scenec.compiler.cmd_run import load_model, rollout_fn
    from scenec.runtime import step as rstep

    model, code = load_model(scene)
    if model is None:
        raise SystemExit(code)
    if rollout:
        return lambda: rollout_fn(model, batch, steps).lower(jax.random.PRNGKey(0))
    state = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), jax.jit(rstep.init)(model))
    action = jnp.zeros((batch, model.nu), state.q.dtype)
    return lambda: rstep.lower_jit_step(model, state, action)


def measure(scene: str, batch: int, steps: int, rollout: bool, train: str | None = None) -> dict:
    """Trace, lower and compile the step (or the rollout, or a learner's iteration) in this process
    under the profiler; the phases and sizes."""
    import glob
    import gzip
    import tempfile
    import time

    import scenec.runtime  # noqa: F401  (the XLA flags, before jax starts)
    import jax

    lower = _iteration_lowering(scene, train) if train else _step_lowering(scene, batch, steps, rollout)
    t = time.perf_counter()
    lowered = lower()
    lower_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        with jax.profiler.trace(folder):
            compiled = lowered.compile()
        compile_s = time.perf_counter() - t
        traces = glob.glob(os.path.join(folder, "**", "*.trace.json.gz"), recursive=True)
        with gzip.open(traces[0], "rt") as f:
            events = json.load(f)["traceEvents"]
    tasks = codegen_tasks(events)
    text = compiled.as_text()
    return {"trace_lower_s": lower_s, "compile_wall_s": compile_s, "phases": phase_seconds(events),
            "codegen_tasks": len(tasks), "largest_task_s": tasks[0] if tasks else 0.0,
            "tasks_s": sum(tasks), **module_size(text), "by_scope": scope_sizes(text)}


def _child(scene: str, args) -> dict:
    env = dict(os.environ, SCENEC_CACHE_DIR="off")
    cmd = [sys.executable, __file__, "--child", scene, "--batch", str(args.batch), "--steps", str(args.steps)]
    cmd += ["--gspmd"] * args.gspmd + ["--rollout"] * args.rollout + (["--train", args.train] if args.train else [])
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout)
    if out.returncode != 0:
        raise SystemExit(f"compile_phases: {scene} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="+")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--rollout", action="store_true", help="compile `scenec run`'s rollout, not the step")
    parser.add_argument("--steps", type=int, default=10, help="control steps in the rollout's scan")
    parser.add_argument("--gspmd", action="store_true", help="partition with GSPMD instead of Shardy")
    parser.add_argument("--train", choices=("ppo", "apg", "es"),
                        help="compile this learner's training iteration (scenec train --algo), not the step")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if args.gspmd:
            import jax

            jax.config.update("jax_use_shardy_partitioner", False)
        print(json.dumps(measure(args.scenes[0], args.batch, args.steps, args.rollout, args.train)))
        return 0
    report = {}
    for scene in args.scenes:
        r = _child(scene, args)
        report[pathlib.Path(scene).stem] = r
        total = r["phases"].get("compile")
        what = (f"the {args.train} iteration of `scenec train`" if args.train
                else f"the rollout of {args.steps} control steps at batch {args.batch}" if args.rollout
                else f"the step at batch {args.batch}")
        print(f"{pathlib.Path(scene).stem}: {what}; trace + lower "
              f"{r['trace_lower_s']:.2f} s, XLA compile {r['compile_wall_s']:.2f} s under the profiler"
              f"{' (GSPMD)' if args.gspmd else ''}; {r['instructions']:,} HLO instructions, "
              f"{r['fusions']:,} fusions")
        for label, _ in PHASES + (("rest", None),):
            if label in r["phases"] and (label != "of it, Shardy" or "spmd partitioner" in r["phases"]):
                share = f"  {100 * r['phases'][label] / total:4.0f}%" if total else ""
                print(f"  {label:18s} {r['phases'][label]:6.2f} s{share}")
            if label == "LLVM codegen" and r["codegen_tasks"]:
                print(f"    {r['codegen_tasks']} tasks, {r['tasks_s']:.2f} s summed; largest task "
                      f"{r['largest_task_s']:.2f} s")
        if r.get("by_scope"):
            print("  HLO instructions by stage: " + ", ".join(f"{k} {v:,}" for k, v in r["by_scope"].items()))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
