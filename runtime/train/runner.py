"""The training loop around a learner: jitted iterations, progress, evaluation, checkpoints, resume.

Where it sits: runtime/train, behind `scenec train` (compiler/cmd_train.py) and the benchmark scripts
(tools/train_*.py). The learner's `iteration` (rollout + update) is one jitted call, compiled before
the first iteration together with the initial state, and the evaluation lowered with them and
compiled in the background while the first iterations run (`compiled_programs`); this
loop only calls it, logs its metrics (`metrics.jsonl`), evaluates the deterministic policy every
`eval_every` iterations (a separate jitted rollout with its own keys, so evaluation never changes
training), writes `checkpoint.npz` atomically every `checkpoint_seconds` and when interrupted, and
saves the final `policy.npz`. `resume=True` continues from `checkpoint.npz` bit for bit.

Output folder: checkpoint.npz, metrics.jsonl (one JSON object per iteration), policy.npz, run.json.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import math
import os
import pathlib
import sys
import time

import jax
import numpy as np

from .. import step as rstep
from . import checkpoint, rollout
from .apg import APG, APGConfig
from .es import ES, ESConfig
from .ppo import PPO, PPOConfig

LEARNERS = {"ppo": (PPO, PPOConfig), "es": (ES, ESConfig), "apg": (APG, APGConfig)}
# the config field that holds the number of parallel environments, per learner
BATCH_FIELD = {"ppo": "num_envs", "es": "population", "apg": "num_envs"}


def make_learner(algo: str, env, num_envs: int | None = None, overrides: dict | None = None):
    """A learner by name; `num_envs` sets its batch; `overrides` sets config fields (strings are
    converted to the field's type)."""
    if algo not in LEARNERS:
        raise ValueError(f"unknown algorithm {algo!r}; one of {', '.join(LEARNERS)}")
    cls, config_cls = LEARNERS[algo]
    config = config_cls()
    values = dict(overrides or {})
    if num_envs is not None:
        values[BATCH_FIELD[algo]] = num_envs
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    converted = {}
    for name, value in values.items():
        if name not in fields:
            raise ValueError(f"{algo} has no setting {name!r}; settings: {', '.join(fields)}")
        converted[name] = _convert(getattr(config, name), value, name)
    return cls(env, dataclasses.replace(config, **converted))


def _convert(default, value, name):
    if not isinstance(value, str):
        return value
    try:
        if isinstance(default, bool):
            return value.lower() in ("1", "true", "yes")
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, tuple):
            return tuple(int(v) for v in value.replace("x", ",").split(",") if v)
    except ValueError:
        raise ValueError(f"setting {name}: cannot read {value!r} as {type(default).__name__}") from None
    return value


def config_json(learner) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(learner.config).items()}


@dataclasses.dataclass
class Result:
    iterations: int
    env_steps: int
    wall_s: float
    last_episode_return: float | None
    last_eval_return: float | None
    interrupted: bool
    state: object


class Progress:
    """One status line on a terminal (redrawn), or a line every `every_s` seconds otherwise."""

    def __init__(self, total_steps: int, stream=None, enabled: bool = True, every_s: float = 10.0,
                 deadline: float | None = None):
        self.total = total_steps
        self.deadline = deadline  # time.monotonic() when a time limit ends the run
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every_s = every_s
        self.last_print = -math.inf

    def update(self, steps: int, rate: float, episode_return, eval_return, final: bool = False):
        if not self.enabled:
            return
        now = time.monotonic()
        if not (self.tty or final or now - self.last_print >= self.every_s):
            return
        self.last_print = now
        frac = min(1.0, steps / max(self.total, 1))
        bar = "#" * int(20 * frac) + "." * (20 - int(20 * frac))
        left = (self.total - steps) / rate if rate > 0 else math.inf
        if self.deadline is not None:
            left = min(left, max(0.0, self.deadline - now))
        parts = [f"[{bar}] {100 * frac:5.1f}% {_si(steps)}/{_si(self.total)} steps",
                 f"{rate:,.0f} steps/s"]
        if episode_return is not None:
            parts.append(f"episode reward {episode_return:.1f}")
        if eval_return is not None:
            parts.append(f"eval {eval_return:.1f}")
        if not final:
            parts.append(f"left {_duration(left)}")
        line = "  ".join(parts)
        if self.tty:
            self.stream.write("\r" + line.ljust(110) + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _si(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:.0f}"


def _duration(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _scalars(metrics: dict) -> dict:
    return {k: float(np.asarray(v)) for k, v in metrics.items()}


def train(learner, *, total_steps: int, out_dir, seed: int = 0, resume: bool = False,
          eval_every: int = 10, eval_envs: int = 16, eval_length: int | None = None,
          checkpoint_seconds: float = 60.0, progress: bool = True, meta: dict | None = None,
          max_iterations: int | None = None, time_limit_s: float | None = None, stream=None) -> Result:
    """Train `learner` for `total_steps` environment steps (rounded up to whole iterations), writing
    into `out_dir`. `time_limit_s` ends the run after that much wall-clock time (this call's, from
    its start, compilation included) as if the steps were done: evaluation, policy saved.
    `max_iterations` stops early as an interruption would (used by tests)."""
    start = time.monotonic()               # the time limit counts from here: compilation included
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path, log_path, policy_path = out / "checkpoint.npz", out / "metrics.jsonl", out / "policy.npz"
    run_meta = {"algo": learner.name, "config": config_json(learner), "seed": int(seed), **(meta or {})}
    per_iter = learner.env_steps_per_iteration
    total_iters = max(1, -(-int(total_steps) // per_iter))
    env = learner.env
    length = eval_length or getattr(env, "length", None) or 1000

    key = jax.random.PRNGKey(seed)
    wall_before = 0.0
    if resume:
        if not ckpt_path.exists():
            raise checkpoint.CheckpointError(f"{ckpt_path}: no checkpoint to resume from")
        saved = checkpoint.read_meta(ckpt_path)
        for field in ("algo", "config", "seed"):
            if saved.get(field) != json.loads(json.dumps(run_meta[field])):
                raise checkpoint.CheckpointError(
                    f"{ckpt_path}: the checkpoint's {field} ({saved.get(field)}) differs from this "
                    f"run's ({run_meta[field]}); resume with the same settings")
        # the state's structure without computing it: the checkpoint fills in the values
        state, saved = checkpoint.load_checkpoint(ckpt_path, jax.eval_shape(learner.init, key))
        wall_before = float(saved.get("wall_s", 0.0))
        _truncate_log(log_path, int(saved["iteration"]))
    programs = compiled_programs(learner, eval_envs, length, init=not resume, evaluate=bool(eval_every))
    if not resume:
        state = programs["init"](key)
        log_path.write_text("")
    (out / "run.json").write_text(json.dumps(dict(run_meta, total_steps=int(total_steps),
                                                  env_steps_per_iteration=per_iter), indent=2) + "\n")

    placement = _placement(learner)
    if placement is not None:
        state = jax.device_put(state, placement)
    iteration_fn = programs["iteration"]
    eval_fn = programs.get("eval")
    eval_key = jax.random.PRNGKey(seed + 1_000_003)

    bar = Progress(total_iters * per_iter, stream, progress,
                   deadline=None if time_limit_s is None else start + time_limit_s)
    last_ckpt = start
    done_iters = int(np.asarray(state["iteration"]))
    last_return = last_eval = None
    rate_window: list[tuple[float, int]] = []
    rate = 0.0
    interrupted = False

    def wall() -> float:
        return wall_before + time.monotonic() - start

    last_eval_iter = -1

    def run_eval() -> dict:
        nonlocal last_eval, last_eval_iter
        params, stats = learner.policy_of(state)
        ev = _scalars(ready(eval_fn)(params, stats, jax.random.fold_in(eval_key, done_iters)))
        last_eval, last_eval_iter = ev["eval_return"], done_iters
        return ev

    def final_eval():
        """An evaluation of the last iteration when the time limit ends the run between two."""
        record = {"iteration": done_iters, "env_steps": done_iters * per_iter, "wall_s": round(wall(), 3),
                  "final": True}
        record.update(run_eval())
        log.write(json.dumps(record) + "\n")
        log.flush()

    def write_checkpoint():
        checkpoint.save_checkpoint(ckpt_path, state, dict(run_meta, iteration=done_iters,
                                                          env_steps=done_iters * per_iter, wall_s=wall()))

    with open(log_path, "a", encoding="utf-8") as log:
        try:
            while done_iters < total_iters:
                if max_iterations is not None and done_iters >= max_iterations:
                    interrupted = True
                    break
                if time_limit_s is not None and time.monotonic() - start >= time_limit_s:
                    if eval_every and last_eval_iter != done_iters:
                        final_eval()
                    break
                new_state, metrics = iteration_fn(state)
                metrics = _scalars(metrics)
                state = new_state
                done_iters += 1
                record = {"iteration": done_iters, "env_steps": done_iters * per_iter,
                          "wall_s": round(wall(), 3)}
                if metrics.get("episodes", 0) > 0:
                    last_return = metrics["episode_return_sum"] / metrics["episodes"]
                    record["episode_return"] = last_return
                    record["episode_length"] = metrics["episode_length_sum"] / metrics["episodes"]
                if eval_every and (done_iters % eval_every == 0 or done_iters == total_iters):
                    record.update(run_eval())
                record.update({k: v for k, v in metrics.items()
                               if k not in ("episode_return_sum", "episode_length_sum")})
                log.write(json.dumps(record) + "\n")
                log.flush()
                now = time.monotonic()
                # The rate comes from the last iterations only: the first one includes compilation.
                rate_window.append((now, done_iters))
                rate_window = rate_window[-20:]
                if len(rate_window) > 1:
                    (t0, i0), (t1, i1) = rate_window[0], rate_window[-1]
                    rate = (i1 - i0) * per_iter / max(t1 - t0, 1e-9)
                    bar.update(done_iters * per_iter, rate, last_return, last_eval)
                if now - last_ckpt >= checkpoint_seconds:
                    write_checkpoint()
                    last_ckpt = now
        except KeyboardInterrupt:
            interrupted = True
    write_checkpoint()
    bar.update(done_iters * per_iter, rate, last_return, last_eval, final=True)
    params, stats = learner.policy_of(state)
    if not interrupted:
        checkpoint.save_policy(policy_path, learner.spec, params, stats,
                               dict(run_meta, iteration=done_iters, env_steps=done_iters * per_iter))
    return Result(done_iters, done_iters * per_iter, wall(), last_return, last_eval, interrupted, state)


def jitted_init(learner):
    cache = learner.__dict__.setdefault("_jitted", {})
    if "init" not in cache:
        cache["init"] = jax.jit(learner.init)
    return cache["init"]


def _placement(learner):
    """Where the state lies between iterations (step.carry_sharding for the learner's batch, when its
    environments go through the step's batch path, which splits them over the host's devices): the
    first iteration's input is put there and every iteration returns it there, so the iteration
    compiles once, not twice."""
    if not learner.splits_batch:
        return None
    return rstep.carry_sharding(learner.env.model, getattr(learner.config, BATCH_FIELD[learner.name]))


def jitted_iteration(learner):
    """The learner's jitted iteration, made once per learner (a resumed run in the same process, or
    a second call of `train`, does not compile it again); its state comes out where `_placement` says."""
    cache = learner.__dict__.setdefault("_jitted", {})
    if "iteration" not in cache:
        placement = _placement(learner)
        cache["iteration"] = (jax.jit(learner.iteration) if placement is None
                              else jax.jit(learner.iteration, out_shardings=placement))
    return cache["iteration"]


def compiled_programs(learner, eval_envs: int, length: int, init: bool = True, evaluate: bool = True) -> dict:
    """The run's programs, compiled: "iteration", and "init" and "eval" where asked for; each once per
    learner (and evaluation size), kept for later runs in the same process (a resume). "eval" comes
    as a `concurrent.futures.Future` of the compiled program while its compile is still running
    (`ready` waits for it).

    Init and the iteration are lowered one after the other (Python: the trace) and each handed to XLA
    on a thread of its own as soon as it is lowered, so that XLA compiles one while jax traces the
    next and the compiles overlap: XLA spends much of a compile in single-threaded passes, leaving a
    core idle. Ant PPO, cold (`SCENEC_CACHE_DIR=off`, /tmp A/B script, two runs each): XLA of init,
    iteration and evaluation one after the other 8.4–9.2 s, on three threads 7.1–7.4 s; the whole
    100k-step `scenec train scenes/ant.yaml --algo ppo` 19.3–19.6 s before, 17.5–18.3 s after. Init is
    lowered first: its short trace lets its compile run beside the iteration's long one. The
    evaluation, first needed after `eval_every` iterations, is lowered with them (in the calling
    thread, whose jax settings then hold for it too) and compiled on a thread of its own that nobody
    waits for before the first iteration. `scenec train scenes/ant.yaml --steps 30000` (evaluation
    every 10 iterations), cold, its first iteration logged at 7.07–7.10 s → 5.68–5.90 s, the tenth
    (the first evaluation) 7.32 → 6.03–6.22 s, the thirtieth 8.43 → 7.93–8.15 s. (Traced on its
    thread as well: the first at 6.05–6.30 s. Compiled only once the iteration had: the first at
    5.78–6.08 s, but the thirtieth at 9.66–10.15 s, its compile beside the iterations.)

    The iteration is compiled for a state where `_placement` puts it, the evaluation for the policy
    taken from that state; the state's shapes come from `jax.eval_shape` of `learner.init`, so a
    resumed state (checkpoint.load_checkpoint checks each leaf's shape and dtype against the same)
    fits the same program."""
    cache = learner.__dict__.setdefault("_compiled", {})
    key = jax.random.PRNGKey(0)
    placement = _placement(learner)       # part of each key: a compiled program takes no other
    wanted = (([("init",)] if init else []) + [("iteration", placement)]
              + ([("eval", eval_envs, length, placement)] if evaluate else []))
    missing = [name for name in wanted if name not in cache]
    if missing:
        def placed(tree):
            return tree if placement is None else jax.tree_util.tree_map(
                lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=placement), tree)

        abstract = jax.eval_shape(learner.init, key)

        pool = concurrent.futures.ThreadPoolExecutor(len(missing))
        futures = {}
        for name in missing:
            if name[0] == "iteration":
                futures[name] = pool.submit(jitted_iteration(learner).lower(placed(abstract)).compile)
            elif name[0] == "eval":
                # lowered here, where the caller's jax settings hold (a context such as
                # jax.experimental.enable_x64 is the calling thread's), compiled unwaited for
                policy = placed(jax.eval_shape(learner.policy_of, abstract))
                cache[name] = pool.submit(jitted_evaluation(learner, eval_envs, length).lower(*policy, key).compile)
            else:
                futures[name] = pool.submit(jitted_init(learner).lower(key).compile)
        try:
            for name, future in futures.items():
                cache[name] = future.result()
        finally:
            pool.shutdown(wait=False)
    return {name[0]: cache[name] for name in wanted}


def ready(program):
    """A program from `compiled_programs`, waited for if its compile is still running."""
    return program.result() if isinstance(program, concurrent.futures.Future) else program


def jitted_evaluation(learner, num_envs: int, length: int):
    """evaluate(params, stats, key) -> metrics of the deterministic policy, jitted once per size."""
    cache = learner.__dict__.setdefault("_jitted", {})
    key = ("eval", num_envs, length)
    if key not in cache:
        env, spec = learner.env, learner.spec
        cache[key] = jax.jit(lambda params, stats, k: rollout.evaluate(env, spec, params, stats, k,
                                                                         num_envs, length))
    return cache[key]


def _truncate_log(path: pathlib.Path, iteration: int) -> None:
    """Keep the log lines up to the checkpoint's iteration (later ones are redone by the resume)."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            if json.loads(line)["iteration"] <= iteration:
                kept.append(line)
        except (ValueError, KeyError):
            break
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    os.replace(tmp, path)
