"""Peer engines for `scenec bench --compare`: the same scene, as MJCF, in MuJoCo, MJX and Brax.

Where it sits: compiler/, beside cmd_bench.py, which calls `run_peer` for each scene, batch size and
engine named in `--compare`, and prints our simulated-seconds-per-wall-second as a ratio to each. The
model each engine runs is `export_mjcf.to_mjcf` of the compiled scene (same bodies, joints, actuators,
and the same collider pairs, listed as `<pair>`), at our physics substep h = timestep / substeps, for
`steps × substeps` physics steps with random controls in each actuator's range held for a control
step, from the scene's initial state, so every engine simulates the same seconds. With `settle` (the
bench's `--settle N`) each engine first runs every environment N control steps of random controls,
untimed, and is timed from the states its own physics reached: a scene that falls (Humanoid) is then
timed lying on the floor, as MuJoCo's contact counts show (`mujoco_contact_counts`).

Engines (ENGINES):
- mujoco: MuJoCo's C engine on all cores, `mujoco.rollout.rollout` with one MjData per thread (a
  thread pool per call: with `persistent_pool=True`, a later XLA CPU computation in the same process
  never finished, mujoco 4.0.0 with jax 0.10.2), PGS with our iteration count (as exported). The
  batch is run in chunks so that the state trajectory it returns stays under ROLLOUT_BYTES. Its
  work per step depends on the state (contacts past its broadphase, constraint rows in its PGS),
  ours does not, so the result also gives MuJoCo's mean contacts and constraint rows a step over the
  timed rollouts (`mujoco_contact_counts`, the first CONTACT_SAMPLE environments replayed): Humanoid
  falls for its first ten control steps with none, and over 20 control steps MuJoCo ran 1.6-1.7 times
  as fast as over 400, where the body lies on the floor with about 2.7 (2026-12-07).
- mjx: `mujoco.mjx` (package mujoco-mjx), `jax.vmap(mjx.step)` under jit, with the solver options of
  Brax's and MuJoCo Playground's Ant (Newton, iterations 1, ls_iterations 4). mjx-ours: the same with
  our iteration count (fairer when a scene relies on more solver work).
- brax-generalized, brax-positional, brax-spring (`brax` means the three): `brax.io.mjcf.loads` of the
  XML (Newton solver in the XML: Brax loads the model through MJX, which has no PGS; pyramidal
  friction cone, the only one Brax accepts, whatever the scene's), then the
  pipeline's `init`/`step` vmapped and jitted. Brax's own defaults for everything the XML does not say
  (Baumgarte factors, collide scale, ...).
Each engine runs in a fresh Python process (`run_peer`), so engines share no threads or caches with
us or each other (a mujoco.rollout thread pool and an XLA CPU computation in one process have been
seen to hang), and one that hangs is stopped after a timeout. The JAX engines run under the XLA flags
our step runs under (the user's and scenec's CPU defaults, runtime/__init__.py), which make them faster
too (Ant at batch 1024, two runs of `scenec bench --compare` ten minutes apart on one machine: Brax
positional 32,057 physics steps/s under XLA's own defaults, 58,788 under scenec's; MJX 15,940 and
26,935), plus PEER_XLA_FLAGS (CPU only); the result lists them under "xla_flags". On an accelerator
the JAX engines run with JAX_DEFAULT_MATMUL_PRECISION=highest (`peer_env`, listed under
"matmul_precision"), unless the user set it: jax's default on a GPU computes float32 products in
TF32, and MJX's Newton solver then diverged (H200, batch 16,384: 15,867 of 16,384 Ant and 14,887 of
16,384 Humanoid environments non-finite; MuJoCo Playground reports the same on Ampere GPUs). Our
step has no matrix products (runtime/math.py writes them out), so both sides then compute in
float32. Each result states the
engine's timestep, solver and iterations, its compile time (jit + XLA, or 0 for MuJoCo), physics steps
per second and simulated seconds per wall second (median of `repeats` timed runs after a warm-up), and
how many environments ended non-finite.

An engine that is not installed gives one line saying so (`pip install 'scenec[bench]'`), never an
error. mujoco-mjx and brax install beside our pinned jax 0.10.2 (checked: mujoco-mjx 3.17.0, brax
0.14.2, mujoco 4.0.0), in a separate environment from the test one.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import statistics
import time

import numpy as np

# name -> (module that must import, what the result calls the engine)
ENGINES = {
    "mujoco": "mujoco",
    "mjx": "mujoco.mjx",
    "mjx-ours": "mujoco.mjx",
    "brax-generalized": "brax.generalized.pipeline",
    "brax-positional": "brax.positional.pipeline",
    "brax-spring": "brax.spring.pipeline",
}
ALIASES = {"brax": ("brax-generalized", "brax-positional", "brax-spring")}
INSTALL_HINT = "pip install 'scenec[bench]' (mujoco-mjx, brax)"
# Solver options of Brax's Ant environment (and MuJoCo Playground's locomotion envs) for MJX.
MJX_ITERATIONS, MJX_LS_ITERATIONS = 1, 4
# Largest state trajectory one mujoco.rollout call returns (batch chunk × nstep × nstate float64).
ROLLOUT_BYTES = 256 << 20
CONTACT_SAMPLE = 16       # environments replayed for MuJoCo's contact counts (mujoco_contact_counts)
# Seconds one engine may take at one point (compile and all timed runs) before it is stopped.
PEER_TIMEOUT_S = 600.0
# XLA flags the JAX engines run with. With XLA's concurrency-optimised CPU scheduler (jaxlib 0.10.2),
# MJX's rollout at batch 512 or 1024 hung in its first run in 9 of 10 tries on a 2-core machine
# (every thread idle, the result never ready; the one that ran shared the machine with another run).
# With it off, 8 of 8 ran (Ant and Humanoid, compile 9-17 s).
PEER_XLA_FLAGS = ("--xla_cpu_enable_concurrency_optimized_scheduler=false",)


def parse_engines(text: str) -> list[str]:
    """`mujoco,mjx,brax` → engine names (aliases expanded, order kept, no repeats); ValueError for an
    unknown name."""
    out: list[str] = []
    for word in (w.strip().lower() for w in text.split(",")):
        if not word:
            continue
        names = ALIASES.get(word, (word,))
        for n in names:
            if n not in ENGINES:
                known = ", ".join(list(ENGINES) + list(ALIASES))
                raise ValueError(f"unknown engine '{word}' (known: {known})")
            if n not in out:
                out.append(n)
    return out


def missing(engine: str) -> str | None:
    """Why the engine cannot run here (one line), or None when it imports. mujoco-mjx prints "Failed
    to import warp: ..." and "Failed to import mujoco_warp: ..." when it is imported without NVIDIA
    Warp (its optional GPU backend, which no engine here uses): those lines are dropped, anything
    else the import prints is passed on."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            importlib.import_module(ENGINES[engine])
    except Exception as e:          # ImportError, or a package broken against this jax
        first = str(e).splitlines()[0] if str(e) else ""
        return f"{engine}: not installed ({type(e).__name__}: {first}); {INSTALL_HINT}"
    finally:
        for line in printed.getvalue().splitlines():
            if not re.match(r"Failed to import (mujoco_)?warp: ", line):
                print(line)
    return None


def exports(model) -> dict:
    """The MJCF each engine loads, by key: "PGS" (as exported: MuJoCo), "Newton" (MJX), "brax"
    (Newton, pyramidal cone, no joint refs; None, with the reason under "brax_error", when the scene
    cannot be written so). Raises export_mjcf.ExportError when the scene cannot be written at all."""
    from .export_mjcf import ExportError, to_mjcf

    # Without a frictional contact the cone changes nothing, and MJX 3.17 fails on an elliptic cone
    # with no frictional contact ("Indexer must have integer or boolean type": cartpole, reacher, UR5e).
    frictional = bool(np.any(np.asarray(model.pair_friction) > 0))
    out = {"PGS": to_mjcf(model),
           "Newton": to_mjcf(model, solver="Newton", cone=None if frictional else "pyramidal")}
    try:
        out["brax"] = to_mjcf(model, solver="Newton", cone="pyramidal", joint_refs=False)
    except ExportError as e:
        out["brax"], out["brax_error"] = None, str(e)
    return out


def run_peer(engine: str, model, xml: dict, batch: int, steps: int, repeats: int, seed: int = 0,
             timeout: float = PEER_TIMEOUT_S, settle: int = 0) -> dict:
    """Time one engine on one scene at one batch size, in a fresh Python process (so that engines
    share no threads, caches or memory with us or each other, and a peer that hangs is stopped
    after `timeout` seconds). `xml` is `exports(model)`. With `settle` > 0 the engine first runs
    every environment that many control steps of random controls, untimed, and its timed runs start
    from the states it reached (`settle_steps` in the result). Returns the figures (module
    docstring); raises RuntimeError when the engine fails, TimeoutError when it gives no result in
    time."""
    import json
    import subprocess
    import sys
    import tempfile

    if engine.startswith("brax") and xml.get("brax") is None:
        raise RuntimeError(f"no MJCF Brax loads: {xml.get('brax_error')}")
    spec = {"engine": engine, "xml": xml, "batch": batch, "steps": steps, "repeats": repeats,
            "seed": seed, "settle": int(settle), "substeps": int(model.substeps),
            "solver_iterations": int(model.solver_iterations),
            "q0": np.asarray(model.q0, np.float64).tolist(), "qd0": np.asarray(model.qd0, np.float64).tolist()}
    env = peer_env(engine)
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="scenec-peer-") as f:
        json.dump(spec, f)
        f.flush()
        try:
            done = subprocess.run([sys.executable, "-m", "scenec.compiler.bench_peers", f.name],
                                  capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"no result after {timeout:g} s (stopped)") from None
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(_error_line(done.stderr) or f"exit status {done.returncode}")
    return {**json.loads(lines[-1]), "xla_flags": env["XLA_FLAGS"],
            "matmul_precision": env.get("JAX_DEFAULT_MATMUL_PRECISION", "default")}


def _error_line(stderr: str) -> str:
    """The line of a failed peer's stderr that says what went wrong: the last one that names an
    exception ("ValueError: …"), else the last non-empty line. (JAX ends its tracebacks with a note
    on how it filtered them, which says nothing about the error.)"""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    named = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b:?", ln)]
    return (named or lines or [""])[-1]


def peer_env(engine: str) -> dict:
    """The environment of a peer's process: ours, with `peer_xla_flags`, and for a JAX engine on an
    accelerator float32 matrix products at full precision unless the user chose (module docstring)."""
    from scenec.runtime import cpu_backend_expected

    env = dict(os.environ, XLA_FLAGS=peer_xla_flags(engine))
    if engine != "mujoco" and not cpu_backend_expected():
        env.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
    return env


def peer_xla_flags(engine: str) -> str:
    """XLA_FLAGS for a peer's process: this process's (the user's and scenec's defaults), and for the
    JAX engines PEER_XLA_FLAGS where those do not set the same flags."""
    from scenec.runtime import cpu_backend_expected  # (importing it sets scenec's defaults, as for our step)

    current = os.environ.get("XLA_FLAGS", "")
    flags = current.split()
    if engine != "mujoco" and cpu_backend_expected():
        flags += [f for f in PEER_XLA_FLAGS if f.split("=")[0] not in current]
    return " ".join(flags)


def _run_here(spec: dict) -> dict:
    """The engine's run in this process (what `run_peer`'s subprocess does)."""
    import types

    model = types.SimpleNamespace(substeps=spec["substeps"], solver_iterations=spec["solver_iterations"],
                                  q0=np.asarray(spec["q0"]), qd0=np.asarray(spec["qd0"]))
    engine = spec["engine"]
    runner = {"mujoco": _mujoco, "mjx": _mjx, "mjx-ours": _mjx}.get(engine, _brax)
    return {**runner(engine, model, spec["xml"], spec["batch"], spec["steps"], spec["repeats"], spec["seed"],
                     spec.get("settle", 0)), "settle_steps": spec.get("settle", 0)}


def main(argv=None) -> int:
    """`python -m scenec.compiler.bench_peers SPEC.json`: run one peer, print its figures as JSON."""
    import json
    import sys
    import warnings

    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        spec = json.load(f)
    warnings.simplefilter("ignore")       # Brax warns that it is unmaintained on every load
    print(json.dumps(_run_here(spec)), flush=True)
    return 0


def _figures(engine: str, h: float, batch: int, nstep: int, times: list[float], **extra) -> dict:
    med = statistics.median(times)
    return {"engine": engine, "timestep": h, "batch": batch, "physics_steps": nstep,
            "physics_steps_per_s": batch * nstep / med,
            "physics_steps_per_s_range": [batch * nstep / max(times), batch * nstep / min(times)],
            "sim_s_per_wall_s": batch * nstep * h / med, **extra}


def _controls(rng, lo, hi, batch: int, steps: int, substeps: int) -> np.ndarray:
    """(batch, steps·substeps, nu) uniform controls, each held for a control step."""
    u = rng.uniform(lo, hi, size=(batch, steps, len(lo)))
    return np.repeat(u, substeps, axis=1)


def settle_key(seed: int) -> int:
    """The seed of the random controls that settle the environments before the timed runs (apart
    from the timed runs' seeds, seed + 1 … seed + repeats)."""
    return seed + 1_000_003


def ctrl_bounds(mj):
    """Control ranges of an MjModel; unlimited actuators draw from [−1, 1] (as `scenec run`)."""
    lo = np.where(mj.actuator_ctrllimited == 1, mj.actuator_ctrlrange[:, 0], -1.0)
    hi = np.where(mj.actuator_ctrllimited == 1, mj.actuator_ctrlrange[:, 1], 1.0)
    return lo, hi


# ----------------------------------------------------------------------------------------------- MuJoCo


def _initial_states(mj, qpos0, qvel0, d):
    """(batch, nstate) MuJoCo full physics states of `d` with each environment's qpos, qvel, time 0."""
    import mujoco

    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    init = np.empty((qpos0.shape[0], mujoco.mj_stateSize(mj, spec)))
    for i in range(qpos0.shape[0]):
        d.qpos[:], d.qvel[:] = qpos0[i], qvel0[i]
        d.time = 0.0
        mujoco.mj_getState(mj, d, init[i], spec)
    return init


def mujoco_rollout(mj, qpos0, qvel0, control, nthread: int | None = None, datas=None, out=None):
    """Final qpos (batch, nq) of MuJoCo rollouts from (qpos0, qvel0) ((batch, nq), (batch, nv)) under
    `control` ((batch, nstep, nu)), on `nthread` threads (`rollout_states`)."""
    import mujoco

    datas = datas or [mujoco.MjData(mj) for _ in range(nthread or os.cpu_count() or 1)]
    final = rollout_states(mj, _initial_states(mj, qpos0, qvel0, datas[0]), control, nthread, datas, out)
    return final[:, 1:1 + mj.nq]                  # FULLPHYSICS = time, qpos, qvel, act, ...


def rollout_states(mj, init, control, nthread: int | None = None, datas=None, out=None):
    """Final full physics states (batch, nstate) of MuJoCo rollouts from the full physics states
    `init` under `control` ((batch, nstep, nu)), on `nthread` threads, in batch chunks of at most
    ROLLOUT_BYTES of returned states. `datas`/`out` reuse MjData per thread and the state buffer
    between calls (`out` where it holds as many steps)."""
    import mujoco
    from mujoco import rollout

    nstate = mujoco.mj_stateSize(mj, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    batch, nstep = control.shape[0], control.shape[1]
    nthread = nthread or os.cpu_count() or 1
    datas = datas or [mujoco.MjData(mj) for _ in range(nthread)]
    chunk = max(1, min(batch, ROLLOUT_BYTES // max(1, nstep * nstate * 8)))
    if out is None or out.shape[0] < chunk or out.shape[1] != nstep:
        out = np.empty((chunk, nstep, nstate))
    final = np.empty((batch, nstate))
    for start in range(0, batch, chunk):
        stop = min(batch, start + chunk)
        n = stop - start
        rollout.rollout(mj, datas, init[start:stop], control[start:stop], nstep=nstep,
                        state=out[:n])
        final[start:stop] = out[:n, -1]
    return final


def mujoco_contact_counts(mj, qpos0, qvel0, control, init=None, restart=None):
    """MuJoCo's active contacts and constraint rows (`ncon`, `nefc`) after each step of the rollouts
    `mujoco_rollout` runs from the same states under the same controls, (batch, nstep) each, on one
    thread (from the full physics states `init` where given, else from qpos0, qvel0). MuJoCo's work
    in a step grows with them (the pairs past its broadphase go through their narrow phase, its PGS
    sweeps nefc rows), where ours is the same in every step (every candidate pair, the contact
    budget's slots), so they say which regime a timed run measured. With `restart` ((batch, nstep)
    bool), an environment is put back to its starting state after each step it marks (the runs of
    tools/bench_resets.py)."""
    import mujoco

    d = mujoco.MjData(mj)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    if init is None:
        init = _initial_states(mj, qpos0, qvel0, d)
    ncon = np.zeros(control.shape[:2], np.int32)
    nefc = np.zeros_like(ncon)
    for i in range(control.shape[0]):
        mujoco.mj_setState(mj, d, init[i], spec)
        for t in range(control.shape[1]):
            d.ctrl[:] = control[i, t]
            mujoco.mj_step(mj, d)
            ncon[i, t], nefc[i, t] = d.ncon, d.nefc
            if restart is not None and restart[i, t]:
                mujoco.mj_setState(mj, d, init[i], spec)
    return ncon, nefc


def _mujoco(engine, model, xml, batch, steps, repeats, seed, settle=0):
    import mujoco

    mj = mujoco.MjModel.from_xml_string(xml["PGS"])
    data = mujoco.MjData(mj)
    mujoco.mj_resetDataKeyframe(mj, data, mj.key("init").id)
    qpos0 = np.broadcast_to(data.qpos, (batch, mj.nq))
    qvel0 = np.broadcast_to(data.qvel, (batch, mj.nv))
    nthread = os.cpu_count() or 1
    datas = [mujoco.MjData(mj) for _ in range(nthread)]
    nstep = steps * model.substeps
    rng = np.random.default_rng(seed)
    lo, hi = ctrl_bounds(mj)
    control = _controls(rng, lo, hi, batch, steps, model.substeps)
    init = _initial_states(mj, qpos0, qvel0, datas[0])
    if settle:                                   # untimed: the states the timed runs start from
        init = rollout_states(mj, init, _controls(np.random.default_rng(settle_key(seed)), lo, hi, batch,
                                                  settle, model.substeps), nthread, datas)
    nstate = mujoco.mj_stateSize(mj, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    out = np.empty((max(1, min(batch, ROLLOUT_BYTES // max(1, nstep * nstate * 8))), nstep, nstate))
    rollout_states(mj, init, control, nthread, datas, out)                   # warm-up: pool, caches
    times, final = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        final = rollout_states(mj, init, control, nthread, datas, out)
        times.append(time.perf_counter() - t)
    # MuJoCo resets an environment whose state goes bad (and warns) instead of carrying NaNs on:
    # its "nonfinite" is 0 by construction, its warnings count the resets over all runs.
    bad = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
           mujoco.mjtWarning.mjWARN_BADQACC)
    resets = sum(int(d.warning[int(w)].number) for d in datas for w in bad)
    # which regime the timed runs were in: MuJoCo's contacts and constraint rows a step, replayed for
    # the first CONTACT_SAMPLE environments (their counts do not depend on the threads)
    ncon, nefc = mujoco_contact_counts(mj, None, None, control[:CONTACT_SAMPLE], init=init[:CONTACT_SAMPLE])
    return _figures(engine, float(mj.opt.timestep), batch, nstep, times, compile_s=0.0,
                    solver="PGS", iterations=int(mj.opt.iterations), threads=nthread,
                    nonfinite=int(np.sum(~np.all(np.isfinite(final[:, 1:1 + mj.nq]), axis=1))),
                    resets=resets, contacts_per_step=float(ncon.mean()),
                    constraint_rows_per_step=float(nefc.mean()), counted_envs=int(ncon.shape[0]))


# ----------------------------------------------------------------------------------------------- MJX


def _mjx(engine, model, xml, batch, steps, repeats, seed, settle=0):
    import jax
    import jax.numpy as jnp
    import mujoco
    from mujoco import mjx

    mj = mujoco.MjModel.from_xml_string(xml["Newton"])
    mj.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    mj.opt.iterations = MJX_ITERATIONS if engine == "mjx" else int(model.solver_iterations)
    mj.opt.ls_iterations = MJX_LS_ITERATIONS
    data = mujoco.MjData(mj)
    mujoco.mj_resetDataKeyframe(mj, data, mj.key("init").id)
    mx = mjx.put_model(mj)
    d0 = mjx.make_data(mx).replace(qpos=jnp.asarray(data.qpos, jnp.float32),
                                   qvel=jnp.asarray(data.qvel, jnp.float32))
    d0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), d0)
    lo, hi = (jnp.asarray(x, jnp.float32) for x in ctrl_bounds(mj))
    substeps = model.substeps
    step = jax.vmap(mjx.step, in_axes=(None, 0))

    def run(key, d, n):
        def control_step(i, d):
            u = jax.random.uniform(jax.random.fold_in(key, i), (batch, mj.nu), jnp.float32, lo, hi)
            d = d.replace(ctrl=u)
            d, _ = jax.lax.scan(lambda d, _: (step(mx, d), None), d, None, length=substeps)
            return d

        return jax.lax.fori_loop(0, n, control_step, d)

    return _time_jax(engine, run, d0, lambda d: d.qpos, batch, steps, substeps, repeats, seed, settle,
                     float(mj.opt.timestep), solver="Newton", iterations=int(mj.opt.iterations),
                     ls_iterations=int(mj.opt.ls_iterations))


def _time_jax(engine, run, s0, positions, batch, steps, substeps, repeats, seed, settle, h, **extra) -> dict:
    """Compile `run(key, state, n)` (n control steps from `state`, the number of steps an argument, so
    one program both settles and is timed), settle `s0` for `settle` control steps untimed, warm up,
    and time `repeats` runs of `steps` control steps from the settled states."""
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(seed)
    n = jnp.int32(steps)
    t0 = time.perf_counter()
    compiled = jax.jit(run).lower(key, s0, n).compile()
    compile_s = time.perf_counter() - t0
    if settle:
        s0 = jax.block_until_ready(compiled(jax.random.PRNGKey(settle_key(seed)), s0, jnp.int32(settle)))
    jax.block_until_ready(compiled(key, s0, n))                              # warm-up
    times, q = [], None
    for r in range(repeats):
        t = time.perf_counter()
        q = positions(jax.block_until_ready(compiled(jax.random.PRNGKey(seed + r + 1), s0, n)))
        times.append(time.perf_counter() - t)
    q = np.asarray(q)
    return _figures(engine, h, batch, steps * substeps, times, compile_s=compile_s,
                    nonfinite=int(np.sum(~np.all(np.isfinite(q.reshape(batch, -1)), axis=1))), **extra)


# ----------------------------------------------------------------------------------------------- Brax


def _brax(engine, model, xml, batch, steps, repeats, seed, settle=0):
    import warnings

    import jax
    import jax.numpy as jnp
    from brax.io import mjcf

    pipeline = importlib.import_module(ENGINES[engine])
    with warnings.catch_warnings():           # Brax warns on every load that it is unmaintained
        warnings.simplefilter("ignore")
        sys = mjcf.loads(xml["brax"])
    q0 = jnp.asarray(np.asarray(model.q0), jnp.float32)
    qd0 = jnp.asarray(np.asarray(model.qd0), jnp.float32)
    lo = jnp.asarray(np.where(np.isfinite(sys.actuator.ctrl_range[:, 0]), sys.actuator.ctrl_range[:, 0], -1.0))
    hi = jnp.asarray(np.where(np.isfinite(sys.actuator.ctrl_range[:, 1]), sys.actuator.ctrl_range[:, 1], 1.0))
    nu = sys.act_size()
    substeps = model.substeps
    init = jax.jit(jax.vmap(lambda q, qd: pipeline.init(sys, q, qd)))
    step = jax.vmap(lambda s, u: pipeline.step(sys, s, u))
    s0 = init(jnp.broadcast_to(q0, (batch,) + q0.shape), jnp.broadcast_to(qd0, (batch,) + qd0.shape))

    def run(key, s, n):
        def control_step(i, s):
            u = jax.random.uniform(jax.random.fold_in(key, i), (batch, nu), jnp.float32, lo, hi)
            s, _ = jax.lax.scan(lambda s, _: (step(s, u), None), s, None, length=substeps)
            return s

        return jax.lax.fori_loop(0, n, control_step, s)

    return _time_jax(engine, run, s0, lambda s: s.q, batch, steps, substeps, repeats, seed, settle,
                     float(sys.opt.timestep), solver=f"{engine.split('-')[1]} (Brax's, pyramidal cone)",
                     iterations=int(sys.solver_iterations))


if __name__ == "__main__":
    raise SystemExit(main())
