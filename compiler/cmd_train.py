"""`scenec train SCENE --algo ppo|es|apg --steps N --envs B --seed S --out DIR`: train a policy.

Where it sits: compiler/, a subcommand (cli.py) over runtime/train/runner.py. SCENE is a scene file
with a task (compiled in memory) or a generated `<scene>_step.py`. The run shows a progress line
(environment steps per second, episode reward, evaluation, time left), evaluates the deterministic
policy every `--eval-every` iterations, writes `DIR/checkpoint.npz` atomically every
`--checkpoint-every` seconds and on Ctrl-C, and saves `DIR/policy.npz` (the network and its
observation statistics) at the end. `--resume` continues an interrupted run from its checkpoint,
bit for bit; `--set name=value` changes a learner setting (docs/training.md lists them).
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys

ALGOS = ("ppo", "es", "apg")


@dataclasses.dataclass
class Loaded:
    model: object
    task: object           # runtime.task.TaskSpec or None
    sha256: str
    name: str


def load_compiled(path: str, allow_outside: bool = False, command: str = "scenec"):
    """A compiled scene from a scene file or a generated module: (Loaded, 0) or (None, exit code)."""
    if path.endswith(".py"):
        if not pathlib.Path(path).is_file():
            print(f"{command}: no such file: {path}", file=sys.stderr)
            return None, 2
        from scenec.runtime.io import load_module

        module = load_module(path)
        return Loaded(module.model, getattr(module, "task", None), module.SCENE_SHA256, module.model.name), 0
    from . import api
    from .cmd_common import print_diagnostics

    analysis = api.analyse(path, allow_outside=allow_outside)
    code = print_diagnostics(analysis.diagnostics, analysis.sources)
    if code:
        return None, code
    compiled = api.compile(path, allow_outside=allow_outside, measure_jit=False)
    return Loaded(compiled.model, compiled.task, compiled.report["sha256"], compiled.model.name), 0


def no_task(path: str, command: str) -> int:
    print(f"{command}: {path} has no task: add `task:` with observations and a reward "
          "(docs/tasks.md)", file=sys.stderr)
    return 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scene", metavar="SCENE", help="a scene file with a task, or a generated <scene>_step.py")
    parser.add_argument("--algo", choices=ALGOS, default="ppo", help="learner (default ppo)")
    parser.add_argument("--steps", type=float, default=1e6, help="environment steps to train for (default 1e6)")
    parser.add_argument("--envs", type=int, default=None,
                        help="environments run at once (PPO/APG batch, ES population; default: the learner's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for checkpoint, metrics and policy")
    parser.add_argument("--resume", action="store_true", help="continue from DIR/checkpoint.npz")
    parser.add_argument("--eval-every", type=int, default=10, metavar="K",
                        help="evaluate the deterministic policy every K iterations (0: never; default 10)")
    parser.add_argument("--eval-envs", type=int, default=16, metavar="E", help="episodes per evaluation (default 16)")
    parser.add_argument("--checkpoint-every", type=float, default=60.0, metavar="SECONDS",
                        help="seconds between checkpoints (default 60)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="stop after this much wall-clock time (the policy is saved as at the end)")
    parser.add_argument("--episode-length", type=int, default=None, help="override the task's episode length")
    parser.add_argument("--action-repeat", type=int, default=None, help="override the task's action repeat")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a learner setting, e.g. --set learning_rate=1e-3 (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument("--allow-outside", action="store_true")


def parse_settings(items) -> dict | None:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            return None
        out[name.strip()] = value.strip()
    return out


def run(args: argparse.Namespace) -> int:
    settings = parse_settings(args.set)
    if settings is None:
        print("scenec train: --set takes NAME=VALUE", file=sys.stderr)
        return 2
    if args.steps <= 0 or (args.envs is not None and args.envs < 1):
        print("scenec train: --steps and --envs must be positive", file=sys.stderr)
        return 2
    loaded, code = load_compiled(args.scene, args.allow_outside, "scenec train")
    if loaded is None:
        return code
    if loaded.task is None:
        return no_task(args.scene, "scenec train")

    from scenec.runtime import envs
    from scenec.runtime.train import checkpoint, runner

    try:
        env = envs.from_model(loaded.model, loaded.task, episode_length=args.episode_length,
                              action_repeat=args.action_repeat)
        learner = runner.make_learner(args.algo, env, args.envs, settings)
    except ValueError as e:
        print(f"scenec train: {e}", file=sys.stderr)
        return 2
    print(f"scenec train: {args.algo} on {loaded.name} ({env.observation_size} observations, "
          f"{env.action_size} actions), {learner.env_steps_per_iteration} env steps per iteration; "
          "the first iteration includes compilation", file=sys.stderr)
    try:
        result = runner.train(learner, total_steps=int(args.steps), out_dir=args.out, seed=args.seed,
                              resume=args.resume, eval_every=args.eval_every, eval_envs=args.eval_envs,
                              checkpoint_seconds=args.checkpoint_every, progress=not args.quiet,
                              time_limit_s=args.time_limit,
                              meta={"scene": loaded.name, "scene_sha256": loaded.sha256})
    except checkpoint.CheckpointError as e:
        print(f"scenec train: {e}", file=sys.stderr)
        return 2
    out = pathlib.Path(args.out)
    if result.interrupted:
        print(f"scenec train: interrupted after {result.env_steps} steps; checkpoint in "
              f"{out / 'checkpoint.npz'} (continue with --resume)", file=sys.stderr)
        return 130
    summary = f"{result.env_steps} steps in {result.wall_s:.0f} s"
    if result.last_episode_return is not None:
        summary += f", episode reward {result.last_episode_return:.2f}"
    if result.last_eval_return is not None:
        summary += f", evaluation {result.last_eval_return:.2f}"
    print(f"scenec train: {summary}; policy in {out / 'policy.npz'}", file=sys.stderr)
    return 0
