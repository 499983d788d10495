"""`scenec optimize SCENE --horizon H`: optimise an open-loop action sequence by gradients.

Where it sits: compiler/, a subcommand (cli.py) over runtime/train/trajopt.py. Two objectives:
`--body NAME --target X,Y,Z` brings a body's origin to a point at the last step (no task needed);
`--reward` (the default when the scene has a task) maximises the task's return over the horizon.
Writes DIR/actions.npy (horizon, nu), DIR/trajectory.npz (for `scenec view`) and DIR/optimize.json
(objective before and after, the loss curve), and prints the objective before and after.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from .cmd_train import load_compiled


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scene", metavar="SCENE", help="a scene file or a generated <scene>_step.py")
    parser.add_argument("--horizon", type=int, required=True, help="control steps of the action sequence")
    parser.add_argument("--iterations", type=int, default=200, help="gradient steps (default 200)")
    parser.add_argument("--lr", type=float, default=0.05, help="Adam learning rate (default 0.05)")
    parser.add_argument("--body", default=None, help="body to bring to --target")
    parser.add_argument("--target", default=None, metavar="X,Y,Z", help="world point for --body, m")
    parser.add_argument("--reward", action="store_true", help="maximise the task's return")
    parser.add_argument("--control-cost", type=float, default=1e-3,
                        help="weight of mean(action²) with --target (default 1e-3)")
    parser.add_argument("--seed", type=int, default=0, help="reset key with --reward")
    parser.add_argument("--out", default="optimize_out", metavar="DIR", help="output folder (default optimize_out)")
    parser.add_argument("--allow-outside", action="store_true")


def _point(text: str):
    try:
        values = [float(v) for v in text.replace(" ", "").split(",")]
    except ValueError:
        return None
    return values if len(values) == 3 else None


def run(args: argparse.Namespace) -> int:
    if args.horizon < 1 or args.iterations < 1:
        print("scenec optimize: --horizon and --iterations must be positive", file=sys.stderr)
        return 2
    target_mode = args.body is not None or args.target is not None
    if target_mode and (args.body is None or args.target is None):
        print("scenec optimize: --body and --target go together", file=sys.stderr)
        return 2
    if target_mode and args.reward:
        print("scenec optimize: choose --body/--target or --reward", file=sys.stderr)
        return 2
    point = _point(args.target) if target_mode else None
    if target_mode and point is None:
        print(f"scenec optimize: --target takes three numbers X,Y,Z, not {args.target!r}", file=sys.stderr)
        return 2
    loaded, code = load_compiled(args.scene, args.allow_outside, "scenec optimize")
    if loaded is None:
        return code
    model = loaded.model
    if model.nu == 0:
        print("scenec optimize: the scene has no actuators to optimise", file=sys.stderr)
        return 1
    if target_mode and args.body not in model.body_names:
        from scenec.schema.names import did_you_mean

        hint = did_you_mean(args.body, model.body_names[1:])
        print(f"scenec optimize: no moving body named {args.body!r}" + (f"; {hint}" if hint else ""),
              file=sys.stderr)
        return 2
    if not target_mode and loaded.task is None:
        print(f"scenec optimize: {args.scene} has no task; give --body NAME --target X,Y,Z",
              file=sys.stderr)
        return 1

    import jax
    import numpy as np

    from scenec.runtime import envs
    from scenec.runtime.train import trajopt

    config = trajopt.TrajOptConfig(horizon=args.horizon, iterations=args.iterations,
                                   learning_rate=args.lr, control_cost=args.control_cost)
    if target_mode:
        loss, rollout = trajopt.target_objective(model, model.body_names.index(args.body), point,
                                                 args.control_cost)
        what = f"squared distance of {args.body} to {point} (+ control cost)"
        sign = 1.0
    else:
        env = envs.TaskEnv(model, loaded.task)
        loss, rollout = trajopt.reward_objective(env, jax.random.PRNGKey(args.seed))
        what = "task return"
        sign = -1.0
    loss_jit = jax.jit(loss)
    u0 = np.zeros((args.horizon, model.nu), np.float32)
    before = float(loss_jit(u0))
    print(f"scenec optimize: {what}: {sign * before:.4f} with zero actions", file=sys.stderr)

    def report(i, value):
        print(f"  iteration {i}: {sign * value:.4f}", file=sys.stderr)

    u, history = trajopt.optimize(loss, model.nu, config, on_progress=report)
    after = float(loss_jit(u))
    actions = np.asarray(trajopt.squash_function(model)(u))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "actions.npy", actions)
    states = jax.jit(rollout)(u)
    from .cmd_play import _write_trajectory

    start = jax.tree_util.tree_map(lambda x: np.asarray(x)[None], _initial(model, loaded, target_mode, args.seed))
    traj = jax.tree_util.tree_map(lambda a, b: np.concatenate([a, np.asarray(b)]), start, states)
    _write_trajectory(loaded, traj, out / "trajectory.npz")
    summary = {"objective": what, "before": sign * before, "after": sign * after,
               "horizon": args.horizon, "iterations": args.iterations,
               "curve": [sign * v for _, v in history]}
    if target_mode:
        summary["final_position"] = [float(x) for x in np.asarray(states.xpos[-1, model.body_names.index(args.body)])]
        summary["target"] = point
    (out / "optimize.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"scenec optimize: {what}: {sign * before:.4f} -> {sign * after:.4f}; actions in "
          f"{out / 'actions.npy'}", file=sys.stderr)
    return 0


def _initial(model, loaded, target_mode: bool, seed: int):
    """The rollout's first state (the frame before the first action)."""
    import jax

    from scenec.runtime import envs
    from scenec.runtime import step as rstep

    if target_mode:
        return rstep.init(model)
    return envs.TaskEnv(model, loaded.task).reset(jax.random.PRNGKey(seed)).pipeline_state
