"""The Python API: `analyse` (no jax) and `compile` (in memory; `scenec compile` adds `emit`).

Where it sits: the front door of the compiler. `analyse` runs load → validate → front end → passes and
returns every diagnostic; `check`, `explain-pairs` and `dump-ir` use it without importing jax.
`compile` adds lowering and returns a `Compiled` whose `step` is jitted, plus the report that
`report.json` holds.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import time

from scenec.schema import load
from scenec.schema.diagnostics import SceneError, has_errors

from . import frontend, ir, pipeline
from .task import compile_task, with_task_diagnostics
from .validate import validate


@dataclasses.dataclass(frozen=True)
class Analysis:
    loaded: object               # schema.Loaded
    ir: ir.SceneIR | None        # None when the scene could not be built
    diagnostics: tuple
    sources: dict

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def analyse(source, *, allow_outside: bool = False, verify_each: bool = False,
            stop_after: str | None = None) -> Analysis:
    """Load, validate and analyse a scene (no jax). Diagnostics are collected, never raised."""
    t0 = time.perf_counter()
    loaded = load(source, allow_outside=allow_outside)
    diags = list(loaded.diagnostics)
    if not loaded.source_map.fatal:
        # Validation skips what the loader already reported, so a file's problems come in one run.
        diags += validate(loaded)
        # Task expressions (compiler/task): parsed and type-checked against the scene's names.
        diags = with_task_diagnostics(loaded, diags)
    if has_errors(diags):
        return Analysis(loaded, None, tuple(diags), loaded.sources)
    scene = frontend.build(loaded)
    scene = scene.replace(timings=(("load+validate+frontend", time.perf_counter() - t0),))
    if not has_errors(scene.diagnostics):
        scene = pipeline.run_passes(scene, verify_each=verify_each, stop_after=stop_after)
    return Analysis(loaded, scene, tuple(diags) + scene.diagnostics, loaded.sources)


def frontend_only(source, *, allow_outside: bool = False) -> ir.SceneIR:
    """The IR as the front end builds it, before any pass (for `dump-ir --after frontend`)."""
    return frontend.build(load(source, allow_outside=allow_outside))


@dataclasses.dataclass(frozen=True)
class Compiled:
    """A compiled scene in memory: `model`, `init()`, jitted `step(state, action)`, and the report."""

    model: object
    ir: ir.SceneIR
    report: dict
    diagnostics: tuple = ()
    task: object = None          # runtime.task.TaskSpec when the scene has a task (compiler/task)

    def init(self, q=None, qd=None):
        """The initial state (jitted: forward kinematics op by op would be slow)."""
        return _jitted_init()(self.model, q, qd)

    @property
    def step(self):
        return _jitted_step(self.model)

    def env(self, **options):
        """The task's environment (scenec.runtime.envs.from_model; options such as episode_length,
        auto_reset, batch), or None when the scene has no task."""
        if self.task is None:
            return None
        from scenec.runtime import envs

        return envs.from_model(self.model, self.task, **options)


@functools.cache
def _jitted_init():
    """runtime.step's `init`, jitted once and shared by every model (structure is static)."""
    import jax

    from scenec.runtime import step as rstep

    return jax.jit(rstep.init)


def _jitted_step(model):
    """runtime.step's `jit_step` bound to `model` (a loop of calls compiles once)."""
    from scenec.runtime import step as rstep

    return functools.partial(rstep.jit_step, model)


def compile(source, *, allow_outside: bool = False, verify_each: bool = False,
            measure_jit: bool = True) -> Compiled:
    """Compile a scene (a path, YAML text or a `scene_pb2.Scene`). Raises `SceneError` with every
    diagnostic when the scene has errors. With `measure_jit`, the report includes the time jax takes
    to trace the step and XLA to compile it (for one environment)."""
    analysis = analyse(source, allow_outside=allow_outside, verify_each=verify_each)
    if not analysis.ok:
        raise SceneError(analysis.diagnostics, analysis.sources)
    from .lower import lower

    if analysis.ir.options.precision == "float64":
        import jax

        if not jax.config.jax_enable_x64:
            raise SceneError([ir.diag(
                "E520", "the scene asks for float64 precision, but JAX is running in 32-bit mode",
                analysis.ir.options.span,
                "set JAX_ENABLE_X64=1 in the environment (or call jax.config.update('jax_enable_x64', "
                "True)) before compiling, or use precision: float32")], analysis.sources)
    t0 = time.perf_counter()
    model = lower(analysis.ir)
    lower_s = time.perf_counter() - t0
    task = compile_task(analysis.loaded, analysis.ir, model)
    report = build_report(analysis.ir, model, lower_s)
    if measure_jit:
        report["jit"] = measure_compile(model)
    return Compiled(model=model, ir=analysis.ir, report=report, diagnostics=analysis.diagnostics,
                    task=task)


def measure_compile(model, batch: int | None = None) -> dict:
    """Seconds spent tracing/lowering the step and compiling it with XLA (batch None: one env)."""
    import jax
    import jax.numpy as jnp

    from scenec.runtime import step as rstep

    state = _jitted_init()(model, None, None)
    action = jnp.zeros((model.nu,), state.q.dtype)
    fn = rstep.step
    if batch is not None:  # step takes a batch of states directly
        state = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
        action = jnp.zeros((batch, model.nu), state.q.dtype)
    t0 = time.perf_counter()
    lowered = jax.jit(fn).lower(model, state, action)
    t1 = time.perf_counter()
    lowered.compile()
    t2 = time.perf_counter()
    return {"trace_s": round(t1 - t0, 4), "xla_s": round(t2 - t1, 4), "batch": batch or 1}


def _budgeted(budget: int, rows: int) -> int:
    """Rows the solver visits of `rows` candidates under a budget (0: no budget)."""
    return min(budget, rows) if budget > 0 else rows


def build_report(scene: ir.SceneIR, model, lower_s: float) -> dict:
    verdicts = scene.pairs or ()
    by_reason = collections.Counter(v.reason for v in verdicts)
    contacts = sum(len(g.pairs) * g.ncon for g in scene.groups or ())
    return {
        "scene": scene.name,
        "source": scene.source,
        "sha256": scene.source_hash,
        "passes": [{"name": n, "seconds": round(s, 6)} for n, s in scene.timings]
                  + [{"name": "lower", "seconds": round(lower_s, 6)}],
        "counts": {"nbody": model.nbody, "njnt": model.njnt, "nq": model.nq, "nv": model.nv,
                   "nu": model.nu, "ngeom": model.ngeom},
        "pairs": {"candidates": len(verdicts), "kept": sum(v.kept for v in verdicts),
                  "by_reason": dict(sorted(by_reason.items()))},
        "groups": [{"kernel": g.kernel, "pairs": len(g.pairs), "ncon": g.ncon} for g in scene.groups or ()],
        "contacts_per_step": contacts,
        # rows the solver visits per environment (the budgets; 0 in the scene: all of them)
        "contacts_solved": _budgeted(model.contact_budget, contacts),
        "limits_solved": _budgeted(model.limit_budget, sum(bool(x) for x in model.jnt_limited)),
        "fused": {b.name: list(b.fused) for b in scene.bodies if b.fused},
        "options": {"timestep": scene.options.timestep, "substeps": scene.options.substeps,
                    "solver_iterations": scene.options.solver_iterations,
                    "precision": scene.options.precision},
    }
