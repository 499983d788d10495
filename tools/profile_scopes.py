"""Where a step's device time goes, by named scope: a profile of `scenec run`'s rollout with each XLA
thunk's time charged to the scope of the code it came from.

    python tools/profile_scopes.py scenes/humanoid.yaml --batch 1024

The step's stages run under `jax.named_scope` (step.py: kinematics, velocities, inertia, forces,
mass_matrix, constraints, integration, outputs); the constraint stage names its parts (collide,
select, jacobians, rows_times_minv, limit_rows, iterations). Each line is a scope's share of the thunk
time summed over all devices, and its thunk count per control step.

The last line is the time XLA's worker threads are busy, and how much of it the thunks above fill; the
rest is the thunk executor between them (dispatch, loop control) and the profiler's own cost, which
the shares leave out (Humanoid at batch 1024: 68% in thunks).

Under runtime/__init__.py's default small-loop threshold the loops XLA compiles as single kernels are
traced op by op inside, with the profiler's cost on each op: Humanoid at batch 1024 showed 100 ms of
busy workers per control step where the unprofiled run takes about 46 ms. The tool says so when the
threshold is set; `SCENEC_SMALL_LOOPS=0 python tools/profile_scopes.py ...` gives the thunk picture
(each loop body a sequence of thunks), which is what these shares describe.

`--thunks SCOPE` lists after the table the longest thunks of the scopes whose key starts with SCOPE
(e.g. `constraints/collide`), each with its time and count per control step and the shape it writes:
which fusions of a stage take its time (Humanoid's collide, 2026-12-06: the gathers of the colliders'
3×3 rotations for each pair group were a quarter of it, before the step gathered only their third
column).

Read the shares with tools/ablate.py beside them: a thunk profile charges loop control and the
profiler's own cost per thunk to the thunks themselves, so work made of many small thunks (the
solver's iterations) looks larger here than what switching it off saves.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import re
import sys
import tempfile

# Scope path pieces that say how, not where: loops, calls, the device split, jitted helpers.
_PLUMBING = re.compile(r"^(while|body|cond|closed_call|shard_map|jit\(.*\)|pjit)$")


def scope_of(op_name: str) -> str:
    """'jit(run)/while/body/…/constraints/while/body/…/add' → 'constraints/iterations'-style keys: the
    step's stage, and inside the constraint stage its named part (or 'other')."""
    parts = [p for p in op_name.split("/")[:-1] if not _PLUMBING.match(p)]
    stages = ("kinematics", "velocities", "inertia", "forces", "mass_matrix", "constraints", "integration",
              "outputs")
    for i, p in enumerate(parts):
        if p in stages:
            if p != "constraints":
                return p
            rest = parts[i + 1:]
            return "constraints/" + (rest[0] if rest else "other")
    if "_uniform" in op_name or "random" in op_name:
        return "(the rollout's random actions)"
    return "(loops, tiles, device split)"


def covered(intervals) -> float:
    """Total length of the union of (start, end) intervals."""
    total, start, end = 0.0, None, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    return total + (end - start if end is not None else 0.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=5, help="control steps per profiled call")
    parser.add_argument("--calls", type=int, default=3, help="profiled calls")
    parser.add_argument("--thunks", metavar="SCOPE", help="list the longest thunks of the scopes starting so")
    args = parser.parse_args(argv)

    import jax

    from scenec.compiler import api
    from scenec.compiler.cmd_run import rollout_fn
    from scenec.runtime import small_loops_set

    if small_loops_set():
        print("profile_scopes: the small-loop threshold is set (runtime/__init__.py): single-kernel loops "
              "are traced op by op and look slower than they run; SCENEC_SMALL_LOOPS=0 profiles the "
              "thunk picture", file=sys.stderr)
    model = api.compile(args.scene, measure_jit=False).model
    compiled = rollout_fn(model, args.batch, args.steps).lower(jax.random.PRNGKey(0)).compile()
    op_name, shape, loops = instructions(compiled.as_text())
    jax.block_until_ready(compiled(jax.random.PRNGKey(0)))           # warm up outside the profile
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d):
            for i in range(args.calls):
                jax.block_until_ready(compiled(jax.random.PRNGKey(i)))
        files = glob.glob(f"{d}/**/*.trace.json.gz", recursive=True)
        if not files:
            print("profile_scopes: the profiler wrote no trace", file=sys.stderr)
            return 1
        events = json.load(gzip.open(files[0]))["traceEvents"]
    time, count = collections.Counter(), collections.Counter()
    thunk_time, thunk_count = collections.Counter(), collections.Counter()
    for e in events:
        name = e.get("name", "")
        if e.get("ph") != "X" or name not in op_name or name in loops:   # a loop's or cond's time is its body's
            continue
        key = scope_of(op_name[name])
        time[key] += e["dur"]
        count[key] += 1
        if args.thunks and key.startswith(args.thunks):
            thunk_time[name] += e["dur"]
            thunk_count[name] += 1
    total = sum(time.values())
    per_step = args.calls * args.steps
    print(f"{args.scene}: batch {args.batch}, {per_step} control steps profiled; thunk time per control step "
          f"{total / per_step / 1000:.1f} ms (all devices), {sum(count.values()) / per_step:,.0f} thunks")
    for key, t in time.most_common():
        print(f"  {key:32s} {100 * t / total:5.1f}%  {count[key] / per_step:8,.0f} thunks")
    # The shares above are of leaf-thunk time. XLA's worker threads also spend time between thunks
    # (the executor: dispatch, loop control), which the shares leave out.
    workers = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
               and "Eigen" in e.get("args", {}).get("name", "")}
    by_thread = {}
    for e in events:
        if e.get("ph") == "X" and (e["pid"], e["tid"]) in workers:
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    if by_thread:
        busy = sum(covered([(e["ts"], e["ts"] + e["dur"]) for e in evs]) for evs in by_thread.values())
        leaf = sum(covered([(e["ts"], e["ts"] + e["dur"]) for e in evs
                            if e.get("name") in op_name and e.get("name") not in loops])
                   for evs in by_thread.values())
        print(f"  (XLA's worker threads: busy {busy / per_step / 1000:.1f} ms per control step, "
              f"{100 * leaf / busy:.0f}% of it in the thunks above, the rest between them)")
    if args.thunks:
        print(f"the longest thunks of {args.thunks!r}: {sum(thunk_time.values()) / per_step / 1000:.2f} ms and "
              f"{sum(thunk_count.values()) / per_step:,.0f} thunks per control step (ms and count per control step)")
        for name, t in thunk_time.most_common(20):
            print(f"  {t / per_step / 1000:7.3f} ms {thunk_count[name] / per_step:6.0f}  {name:36s} {shape[name]}")
    return 0


def instructions(hlo_text: str):
    """From an optimised HLO module's text: each instruction's op_name (the jax scope path it came
    from) and result shape, by instruction name, and the names of its loops and conditionals."""
    op_name, shape, loops = {}, {}, set()
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = (.*?) ([\w-]+)\(.*?op_name=\"([^\"]*)\"", line)
        if m:
            op_name[m.group(1)], shape[m.group(1)] = m.group(4), m.group(2)
            if m.group(3) in ("while", "conditional"):
                loops.add(m.group(1))
    return op_name, shape, loops


if __name__ == "__main__":
    sys.exit(main())
