"""`scenec bench SCENE... --batch 1,64,1024 --steps N`: how fast the compiled step runs, measured.

Where it sits: compiler/, a subcommand (cli.py); the benchmark harness of the performance work. For
each scene and batch size it reports the step's compile time (jax trace and XLA compile, separately,
of the program the generated step's first call compiles: runtime/step.py `lower_jit_step`),
physics steps per second and simulated seconds per wall-clock second (the median of `--repeats`
timed runs after a warm-up, with the spread), how many environments ended non-finite, the FLOPs
and bytes XLA's cost analysis counts for one control step of the batch (every loop weighted by its
trip count: hlo_cost.py), and what fraction of this machine's peak those FLOPs reach, the peak
being measured in the same process (a float32 matrix product), and memory: what XLA allocates for one
call of the step (its arguments, results and temporaries, `step MB`) and the process's peak resident
memory so far (`RSS MB`: everything, jax's runtime and the timed rollout included; batches are run in
the order given, so with ascending batches the last point's figure is the largest batch's). `--json
FILE` writes the same figures.

`--compare mujoco,mjx,brax` runs the same scene, exported as MJCF (export_mjcf.py), through peer
engines at each batch size (bench_peers.py: MuJoCo's C engine on all cores, MJX, Brax's generalized,
positional and spring pipelines), states their timestep and solver settings, and prints our simulated
seconds per wall second as a ratio to each (above 1: we are faster). A peer whose environments blow
up at our timestep is run again, MJX first with the scene's solver iterations at our timestep
(`MORE_SOLVER_WORK`), then at half the timestep, then a quarter (`--stable-halvings`), and its ratio
in the first run where it stays finite is printed below the first (`compare_point`). Engines that
are not installed get one line saying so. Example (tools/bench_gpu.sh runs the GPU
version, tools/bench_tpu.sh the TPU one):

    scenec bench scenes/ant.yaml --batch 1,1024 --steps 100 --compare mujoco,mjx,brax --json out.json

On a TPU, which one process holds at a time, the JAX peers cannot run beside our measurement (asked
to, the bench stops with exit status 2 and says how instead): a first run measures ours (`--json
ours.json`), a second takes those figures (`--ours-from ours.json`), stays on the CPU itself and runs
only the peers (tools/bench_tpu.sh).

Absolute numbers drift on shared machines; compare figures from one run (ratios), never across runs.
Within one run too: a comparison takes minutes to an hour, so ours is timed again after every peer's
run (the same compiled rollout from the same states), and each ratio is to the mean of our two
timings around that run (`ours_around` in the JSON, printed after the ratio; `_Ours`).
Compile times are cold: the on-disk compile cache (runtime/cache.py) is off here;
`python tools/bench_cache.py` measures what it saves.

`--settle N` times every engine from the states N control steps of random controls reach (untimed,
each engine on its own physics) instead of from the scene's initial state. MuJoCo's work per step
follows its contacts and ours does not, so the ratio depends on the states a run passes through: a
Humanoid falls untouched for its first ten control steps, then lies on the floor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenes", nargs="+", metavar="SCENE", help="scene files or generated <scene>_step.py")
    parser.add_argument("--batch", default="1,64,1024", help="comma-separated batch sizes (default 1,64,1024)")
    parser.add_argument("--steps", type=int, default=100, help="control steps per timed run (default 100)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per point (default 5)")
    parser.add_argument("--settle", type=int, default=0, metavar="N",
                        help="run every environment N control steps of random controls first, untimed, and "
                             "time from the states reached (each engine its own), e.g. a Humanoid lying on "
                             "the floor rather than falling (default 0: from the scene's initial state)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--compare", metavar="ENGINES",
                        help="also run peer engines on the scene's MJCF: comma-separated from mujoco, "
                             "mjx, mjx-ours, brax (= brax-generalized, brax-positional, brax-spring)")
    parser.add_argument("--peer-timeout", type=float, default=600.0, metavar="S",
                        help="seconds a peer engine may take at one point before it is stopped (default 600)")
    parser.add_argument("--stable-halvings", type=int, default=2, metavar="N",
                        help="a peer that ends with non-finite (or, MuJoCo, reset) environments runs again "
                             "(MJX first with the scene's solver iterations at our timestep) at half its "
                             "timestep, up to N times, until none does; its ratio in that stable run is "
                             "reported beside the one at ours (default 2; 0: off)")
    parser.add_argument("--ours-from", metavar="FILE",
                        help="take our figures from an earlier run's --json FILE (same scenes and batch "
                             "sizes) instead of measuring them, and run only the peers: for an accelerator "
                             "that one process holds at a time (a TPU), where the peers' processes cannot "
                             "open it while ours holds it (tools/bench_tpu.sh)")
    parser.add_argument("--allow-outside", action="store_true")


def machine_peak_gflops(seconds: float = 1.0) -> float:
    """float32 GFLOP/s of a 1024×1024 matrix product on this machine, now (the best of a few runs)."""
    import jax
    import jax.numpy as jnp

    n = 1024
    a = jnp.ones((n, n), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    best, t_end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        f(a).block_until_ready()
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t0) / 1e9)
    return best


def one_process_per_chip() -> bool:
    """Whether jax runs on an accelerator that one process holds at a time (a TPU: a second process
    that opens it stops with a libtpu lock-file error), so that peer engines on it cannot run while
    this process holds it."""
    import jax

    return jax.default_backend() == "tpu"


def bench_point(model, batch: int, steps: int, repeats: int, settle: int = 0,
                retimers: list | None = None) -> dict:
    """Our figures at one batch size. With `retimers` (a list), appends to it a function that times the
    same compiled rollout from the same states again and returns its sim s per wall s (the median of
    `repeats`): `compare_point` times ours again after each peer's run."""
    import jax
    import jax.numpy as jnp

    from scenec.runtime import step as rstep

    from .cmd_run import rollout_fn

    # The step alone, for compile times and XLA's cost analysis of one control step of the batch: the
    # program the generated step's first call compiles (`jit_step`; replicas.py where it splits).
    state = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), jax.jit(rstep.init)(model))
    action = jnp.zeros((batch, model.nu), state.q.dtype)
    t0 = time.perf_counter()
    lowered = rstep.lower_jit_step(model, state, action)
    t1 = time.perf_counter()
    executable = lowered.compile()
    t2 = time.perf_counter()
    # XLA's own cost_analysis() counts each loop body once; hlo_cost weights every loop (substeps,
    # solver iterations, constraint blocks, batch tiles) by its trip count.
    from .hlo_cost import loop_weighted_cost

    try:
        cost = loop_weighted_cost(executable)
    except Exception as e:  # noqa: BLE001  (it re-parses XLA's text through jaxlib internals)
        print(f"  (no FLOPs or bytes at batch {batch}: XLA's loop-weighted cost analysis failed with "
              f"{_first_line(e)})")
        cost = {}
    # A batch split over host devices compiles to one program per device on its share of the batch:
    # its cost counts that share, so the whole batch's is `shares` times it. (`devices`: the timed
    # rollout's split, a jitted loop's, which splits lighter batches than calls from Python do.)
    with rstep.calls_from_python():
        shares = len(rstep.split_devices(batch, model))
    devices = len(rstep.split_devices(batch, model))
    # The timed runs: `steps` control steps with random actions in one jitted scan, from the states
    # `settle` control steps reach (untimed) where asked.
    start = () if not settle else (settled_states(model, batch, settle, state),)
    run = rollout_fn(model, batch, steps, from_states=bool(settle)).lower(jax.random.PRNGKey(0), *start).compile()
    jax.block_until_ready(run(jax.random.PRNGKey(0), *start))         # warm-up

    def timed():
        times, bad = [], 0
        for r in range(repeats):
            t = time.perf_counter()
            out = jax.block_until_ready(run(jax.random.PRNGKey(r + 1), *start))
            times.append(time.perf_counter() - t)
            bad = max(bad, int(out[1]))
        return times, bad

    def sim_s_per_wall_s(times):
        return batch * steps * float(model.timestep) / statistics.median(times)

    times, bad = timed()
    if retimers is not None:
        retimers.append(lambda: sim_s_per_wall_s(timed()[0]))
    med = statistics.median(times)
    physics = batch * steps * model.substeps
    step_memory = _memory_bytes(executable)
    return {
        "batch": batch, "trace_s": t1 - t0, "xla_s": t2 - t1,
        "physics_steps_per_s": physics / med,
        "physics_steps_per_s_range": [physics / max(times), physics / min(times)],
        "sim_s_per_wall_s": sim_s_per_wall_s(times),
        "devices": devices, "nonfinite": bad, "cost_model": cost.get("cost_model"),
        "flops_per_control_step": shares * float(cost.get("flops", float("nan"))),
        "bytes_per_control_step": shares * float(cost.get("bytes accessed", float("nan"))),
        "seconds_per_control_step": med / steps,
        # A program split over host devices is one per device: XLA's figure is one device's share.
        "step_memory_bytes": shares * step_memory, "peak_rss_bytes": peak_rss_bytes(),
    }


def settled_states(model, batch: int, settle: int, states):
    """The batch of `states` after `settle` control steps of `scenec run`'s random controls (seeded
    apart from the timed runs', bench_peers.settle_key), for `--settle`."""
    import jax

    from .bench_peers import settle_key
    from .cmd_run import rollout_fn

    out, _ = rollout_fn(model, batch, settle, from_states=True)(jax.random.PRNGKey(settle_key(0)), states)
    return jax.block_until_ready(out)


def _memory_bytes(executable) -> float:
    """Bytes XLA allocates for one call of a compiled executable (arguments + results + temporaries,
    less the results that reuse an argument's buffer); NaN where the backend does not say."""
    try:
        m = executable.memory_analysis()
        return float(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
                     - m.alias_size_in_bytes)
    except Exception:  # noqa: BLE001  (None, or a backend without the analysis)
        return float("nan")


def peak_rss_bytes() -> float:
    """This process's peak resident set size so far (Linux reports kB, macOS bytes); NaN without
    the resource module (Windows)."""
    try:
        import resource
    except ImportError:
        return float("nan")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return float(peak if sys.platform == "darwin" else peak * 1024)


def unstable(peer: dict) -> bool:
    """Whether a peer's run went bad: environments that ended non-finite, or that MuJoCo reset."""
    return bool(peer.get("nonfinite") or peer.get("resets"))


def compare_point(engines: list[str], model, xml: dict, ours: dict, steps: int, repeats: int,
                  timeout: float, halvings: int = 0, out: list | None = None,
                  after_each=None, settle: int = 0, retime=None) -> list:
    """Run each peer engine at our point's batch size; print one line each; return their figures
    with `ratio` = our sim s per wall s over theirs, appended to `out` (a new list when None) as each
    peer finishes, with `after_each()` called then (the bench writes its JSON there, so a run cut
    short keeps the peers it finished).

    With `retime` (bench_point's `retimers`), ours is timed again after each peer's run, and that
    run's ratio is to the mean of ours just before it and just after it (`ours_around`, `_Ours`);
    without it, to the point's figure.

    A ratio against a peer whose environments blew up compares with arithmetic on NaNs, not with a
    simulation: the figure that counts is simulated seconds per wall second at a timestep where the
    scene is stable (Brax itself runs its spring and positional Ant at 5 ms, not 10). So a peer that
    went bad runs again, MJX first with more solver work at our timestep (`MORE_SOLVER_WORK`), then at
    half its timestep (twice the physics steps over the same simulated seconds, controls held for
    the same control steps), up to `halvings` times, until a run ends with every environment finite
    (`_stable_rerun`); that run is the peer's `stable` entry, with its own `ratio`. None when no run
    tried was stable (`stable_tried_down_to` says how far)."""
    from .bench_peers import run_peer

    out = [] if out is None else out
    clock = _Ours(ours["sim_s_per_wall_s"], retime)
    for engine in engines:
        try:
            r = run_peer(engine, model, xml, ours["batch"], steps, repeats, timeout=timeout, settle=settle)
        except Exception as e:   # a peer that fails on this model is reported, not fatal
            print(f"         vs {engine}: failed ({_first_line(e)})")
            r = {"engine": engine, "error": _first_line(e)}
            clock.skip()
        else:
            clock.rate(r)
            print(f"         vs {engine:<17} {_peer_line(r)}")
            if unstable(r) and halvings > 0:
                r.update(_stable_rerun(engine, model, ours, steps, repeats, timeout, halvings, settle, clock))
        out.append(r)
        if after_each is not None:
            after_each()
    return out


# A peer engine with a setting for more solver work tries it at our timestep before any halving
# (the comparison is at the same timestep): MJX at Brax's Ant options (Newton, 1 iteration,
# `mjx`) ends non-finite on the exported Ant at 10, 5 and 2.5 ms, and so does MuJoCo's C engine in
# float64 given the same options (12 of 32 Ant rollouts of 2 s at 5 ms), while with the scene's own
# iteration count (4: `mjx-ours`) both stay finite at 10 ms (256 and 32 rollouts of 4 s).
MORE_SOLVER_WORK = {"mjx": "mjx-ours"}


class _Ours:
    """Our sim s per wall s to set each peer's run against, in the order the runs finish. A shared
    machine's speed drifts (here, on 2026-12-07, the same Humanoid step ran 207k–233k physics steps/s
    in commands minutes apart), and a slow peer's run can end many minutes after ours was timed.
    With `retime`, ours is timed again after every peer's run, and that run's ratio is to the mean
    of ours timed just before it (the point's own figure, or the timing after the previous run) and
    just after it, both recorded in the run's `ours_around`: drift between the two timings moves
    both sides of the ratio alike. Without `retime` (figures of ours from an earlier run,
    `--ours-from`), every ratio is to the one figure."""

    def __init__(self, first: float, retime=None):
        self.last, self.retime = first, retime

    def rate(self, r: dict) -> None:
        ref = self.last
        if self.retime is not None:
            after = self.retime()
            r["ours_around"] = [self.last, after]
            ref, self.last = (self.last + after) / 2, after
        r["ratio"] = ref / r["sim_s_per_wall_s"]

    def skip(self) -> None:
        """After a peer's run that gave no figures (failed, timed out): time ours again, so that the
        next run is set against a timing taken just before it."""
        if self.retime is not None:
            self.last = self.retime()


def _stable_rerun(engine: str, model, ours: dict, steps: int, repeats: int, timeout: float,
                  halvings: int, settle: int, clock: _Ours) -> dict:
    """`compare_point`'s reruns of an unstable peer: first, for an engine in MORE_SOLVER_WORK, its
    variant with the scene's solver iterations at our timestep (when those are more than the engine's
    own), then that engine (or the variant) at h/2, h/4, …: {"stable": the first run with every
    environment finite, or None; "stable_tried_down_to": the finest timestep run; "stable_error": why
    a rerun failed, if one did}. A run's "engine" says which variant it was."""
    import dataclasses

    from .bench_peers import MJX_ITERATIONS, exports, run_peer

    variant = MORE_SOLVER_WORK.get(engine)
    if variant and int(model.solver_iterations) <= MJX_ITERATIONS:
        variant = None                    # the variant would run the same solver work again
    tries = ([(variant, 0)] if variant else []) + [(variant or engine, k) for k in range(1, halvings + 1)]
    found = {"stable": None}
    for name, k in tries:
        finer = dataclasses.replace(model, substeps=model.substeps * 2 ** k)
        try:
            s = run_peer(name, finer, exports(finer), ours["batch"], steps, repeats, timeout=timeout,
                         settle=settle)
        except Exception as e:   # noqa: BLE001  (reported like a failed peer; the first run is kept)
            print(f"           {'':<17} {name} at h/{2 ** k}: failed ({_first_line(e)})")
            clock.skip()
            return dict(found, stable_error=_first_line(e))
        clock.rate(s)
        found["stable_tried_down_to"] = s["timestep"]
        label = f"{name} " if name != engine else ""
        print(f"           {label:<17} {_peer_line(s)}" + ("" if unstable(s) else "  (stable)"))
        if not unstable(s):
            return dict(found, stable=s)
    return found


def _first_line(e: Exception) -> str:
    """'TypeName: first line of the message'."""
    msg = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {msg}"


def _peer_line(r: dict) -> str:
    its = f"{r['iterations']} it" + (f", ls {r['ls_iterations']}" if "ls_iterations" in r else "")
    if "contacts_per_step" in r:
        its += f" ({r['contacts_per_step']:.1f} contacts, {r['constraint_rows_per_step']:.1f} rows a step)"
    bad = (f", {r['nonfinite']} non-finite" if r.get("nonfinite") else "") + (
        f", {r['resets']} resets of bad states" if r.get("resets") else "")
    around = (f" (ours {r['ours_around'][0]:,.1f} before, {r['ours_around'][1]:,.1f} after)"
              if "ours_around" in r else "")
    return (f"h {r['timestep']:g} s, {r['solver']} {its}: "
            f"{r['physics_steps_per_s']:>12,.0f} steps/s {r['sim_s_per_wall_s']:>10,.1f} sim s/wall s, "
            f"compile {r['compile_s']:.1f} s{bad}  -> ours x{r['ratio']:.2f}{around}")


def run(args: argparse.Namespace) -> int:
    from scenec.runtime.constraints import solved_contacts

    from .cmd_run import load_model

    try:
        batches = [int(b) for b in args.batch.split(",") if b.strip()]
    except ValueError:
        print(f"scenec bench: --batch takes comma-separated integers, not {args.batch!r}", file=sys.stderr)
        return 2
    if not batches or min(batches) < 1 or args.steps < 1 or args.repeats < 1:
        print("scenec bench: batch sizes, --steps and --repeats must be at least 1", file=sys.stderr)
        return 2
    if args.settle < 0:
        print("scenec bench: --settle must be 0 or more", file=sys.stderr)
        return 2
    if args.stable_halvings < 0:
        print("scenec bench: --stable-halvings must be 0 or more", file=sys.stderr)
        return 2
    if args.ours_from and not args.compare:
        print("scenec bench: --ours-from runs only the peers: name them with --compare", file=sys.stderr)
        return 2
    engines = []
    if args.compare:
        from .bench_peers import missing, parse_engines

        try:
            engines = parse_engines(args.compare)
        except ValueError as e:
            print(f"scenec bench: --compare: {e}", file=sys.stderr)
            return 2
    import os

    import jax

    from scenec.runtime import cache

    earlier = None
    if args.ours_from:
        earlier = _read_ours(args.ours_from)
        if earlier is None:
            return 2
        if int(earlier.get("settle_steps", 0)) != args.settle:
            print(f"scenec bench: --ours-from {args.ours_from} was measured with --settle "
                  f"{earlier.get('settle_steps', 0)}: give the same --settle", file=sys.stderr)
            return 2
        # This process only builds models and exports MJCF: it stays off the accelerator, which the
        # peers' processes open (their environment is this process's, without this setting).
        jax.config.update("jax_platforms", "cpu")
    cache.disable()   # compile times here are cold compiles, even where the user has a JAX cache set up
    if earlier is None and any(e != "mujoco" for e in engines) and one_process_per_chip():
        print("scenec bench: a TPU is held by one process at a time, so the JAX peers' processes cannot "
              "open it beside this one: measure ours first (--json FILE, --compare mujoco at most), then "
              "the peers with --ours-from FILE --compare ... (tools/bench_tpu.sh runs both)", file=sys.stderr)
        return 2
    if earlier is not None:
        results = {"machine": earlier["machine"], "scenes": [], "complete": False,
                   "stable_halvings": args.stable_halvings, "settle_steps": args.settle,
                   "ours_from": args.ours_from}
        mach = earlier["machine"]
        peak = float(mach.get("peak_gflops_f32_matmul") or float("nan"))
        print(f"machine (our figures from {args.ours_from}): {mach['devices'][0] if mach.get('devices') else '?'}, "
              f"jax {mach.get('jax')}, peak {peak:,.1f} GFLOP/s, {mach.get('cpu_count')} CPUs")
    else:
        peak = machine_peak_gflops()
        load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
        results = {"machine": {"devices": [str(d) for d in jax.devices()], "jax": jax.__version__,
                               "peak_gflops_f32_matmul": peak, "cpu_count": os.cpu_count(),
                               "load_average": list(load)}, "scenes": [], "complete": False,
                   "stable_halvings": args.stable_halvings, "settle_steps": args.settle}
        print(f"machine: {jax.devices()[0].platform}, jax {jax.__version__}, "
              f"peak {peak:,.1f} GFLOP/s (float32 matmul, measured now), {os.cpu_count()} CPUs, "
              f"load {load[0]:.2f}")
    if args.settle:
        print(f"timed from the states {args.settle} control steps of random controls reach, each engine its own")
    if engines:
        absent = {e: missing(e) for e in engines}
        for line in filter(None, absent.values()):
            print(line)
        results["peers_missing"] = {e: why for e, why in absent.items() if why}
        engines = [e for e in engines if not absent[e]]
        from .bench_peers import peer_env

        jax_peers = [e for e in engines if e != "mujoco"]
        if jax_peers:
            env = peer_env(jax_peers[0])
            precision = env.get("JAX_DEFAULT_MATMUL_PRECISION")
            print(f"JAX peers run with XLA_FLAGS={env['XLA_FLAGS']!r}"
                  + (f", JAX_DEFAULT_MATMUL_PRECISION={precision}" if precision else ""))
    for path in args.scenes:
        model, code = load_model(path, args.allow_outside)
        if model is None:
            return code
        solved, candidates = solved_contacts(model)
        entry = {"scene": model.name, "source": path, "timestep": float(model.timestep),
                 "substeps": model.substeps, "contacts_solved": solved, "contact_candidates": candidates,
                 "points": []}
        xml = None
        if engines:
            from .bench_peers import exports
            from .export_mjcf import ExportError

            try:
                xml = exports(model)
            except ExportError as e:
                print(f"  no peer comparison for {model.name}: {e}")
        print(f"\n{model.name}: dt {float(model.timestep):g} s, {model.substeps} substep(s), nv {model.nv}"
              + (f", {solved} of {candidates} candidate contacts solved in every step" if candidates else ""))
        print(f"  {'batch':>6} {'trace s':>8} {'XLA s':>7} {'physics steps/s':>22} {'sim s/wall s':>13} "
              f"{'MFLOP/step':>11} {'MB/step':>8} {'% peak':>7} {'devices':>7} {'step MB':>8} {'RSS MB':>7}")
        for b in batches:
            retimers = []                  # filled by bench_point: ours timed again after each peer
            if earlier is not None:
                p = _earlier_point(earlier, model.name, b, args.ours_from)
                if p is None:
                    return 2
            else:
                p = bench_point(model, b, args.steps, args.repeats, args.settle, retimers)
                gflops = p["flops_per_control_step"] / p["seconds_per_control_step"] / 1e9
                p["fraction_of_peak"] = gflops / peak if peak else float("nan")
            entry["points"].append(p)
            lo, hi = p["physics_steps_per_s_range"]
            print(f"  {b:>6} {p['trace_s']:>8.2f} {p['xla_s']:>7.2f} {p['physics_steps_per_s']:>10,.0f} "
                  f"({lo:,.0f}–{hi:,.0f}) {p['sim_s_per_wall_s']:>13,.1f} "
                  f"{p['flops_per_control_step'] / 1e6:>11.2f} {p['bytes_per_control_step'] / 1e6:>8.2f} "
                  f"{100 * p['fraction_of_peak']:>6.2f}% {p['devices']:>7} {p['step_memory_bytes'] / 1e6:>8.1f} "
                  f"{p['peak_rss_bytes'] / 1e6:>7.0f}"
                  + (f"  ({p['nonfinite']} non-finite)" if p["nonfinite"] else ""))
            if args.compare:
                p["peers"] = []
                if xml:
                    compare_point(engines, model, xml, p, args.steps, args.repeats, args.peer_timeout,
                                  args.stable_halvings, out=p["peers"],
                                  after_each=lambda: write_json(args.json, results, entry), settle=args.settle,
                                  retime=retimers[0] if retimers else None)
            write_json(args.json, results, entry)      # after every point and every peer: a run cut
                                                       # short keeps them
        results["scenes"].append(entry)
    results["complete"] = True
    write_json(args.json, results)
    return 0


def _read_ours(path: str) -> dict | None:
    """An earlier run's --json document, or None after saying why it cannot be read."""
    try:
        with open(path) as f:
            doc = json.load(f)
        if not (isinstance(doc, dict) and isinstance(doc.get("scenes"), list) and "machine" in doc):
            raise ValueError("no 'scenes' list or 'machine' entry: not a `scenec bench --json` file")
    except (OSError, ValueError) as e:
        print(f"scenec bench: --ours-from {path}: {e}", file=sys.stderr)
        return None
    return doc


def _earlier_point(doc: dict, scene: str, batch: int, path: str) -> dict | None:
    """The point for (scene, batch) in an earlier run's document (its peers dropped), or None after
    saying that the file has none."""
    for entry in doc["scenes"]:
        if entry.get("scene") == scene:
            for p in entry.get("points", []):
                if p.get("batch") == batch:
                    return {k: v for k, v in p.items() if k != "peers"}
    print(f"scenec bench: --ours-from {path}: no figures for {scene} at batch {batch} "
          "(run it with the same scenes and --batch first)", file=sys.stderr)
    return None


def write_json(path: str | None, results: dict, current: dict | None = None) -> None:
    """Write the figures so far (with the scene being measured, when given) atomically."""
    if not path:
        return
    from scenec.runtime.io import atomic_write_bytes

    doc = dict(results, scenes=results["scenes"] + ([current] if current is not None else []))
    atomic_write_bytes(path, (json.dumps(doc, indent=2) + "\n").encode())
