"""`scenec play SCENE --policy DIR`: roll out a trained policy, write its trajectory and return.

Where it sits: compiler/, a subcommand (cli.py) after `scenec train`. It loads `DIR/policy.npz`
(or a policy file given directly), runs the deterministic policy on the scene's task for one
episode (at most the episode length, or `--steps`) in `--envs` environments at once, as one jitted
`lax.scan`, prints each episode's return and length, and writes the body poses of the episode
as a trajectory file (runtime/trajectory.py) for `scenec view` / `scenec render`.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from .cmd_train import load_compiled, no_task


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scene", metavar="SCENE", help="the scene file (or generated module) the policy was trained on")
    parser.add_argument("--policy", required=True, metavar="DIR", help="a training folder or a policy.npz")
    parser.add_argument("--steps", type=int, default=None, help="steps to play (default: the episode length)")
    parser.add_argument("--envs", type=int, default=1, help="episodes played at once (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="trajectory file (default: trajectory.npz in the policy's folder)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parser.add_argument("--allow-outside", action="store_true")


def run(args: argparse.Namespace) -> int:
    policy_path = pathlib.Path(args.policy)
    if policy_path.is_dir():
        policy_path = policy_path / "policy.npz"
    if not policy_path.is_file():
        print(f"scenec play: no policy at {policy_path}", file=sys.stderr)
        return 2
    if args.envs < 1 or (args.steps is not None and args.steps < 1):
        print("scenec play: --envs and --steps must be positive", file=sys.stderr)
        return 2
    loaded, code = load_compiled(args.scene, args.allow_outside, "scenec play")
    if loaded is None:
        return code
    if loaded.task is None:
        return no_task(args.scene, "scenec play")

    import jax
    import jax.numpy as jnp
    import numpy as np

    from scenec.runtime import envs
    from scenec.runtime.train import checkpoint

    try:
        spec, params, stats, meta = checkpoint.load_policy(policy_path)
    except checkpoint.CheckpointError as e:
        print(f"scenec play: {e}", file=sys.stderr)
        return 2
    env = envs.from_model(loaded.model, loaded.task, auto_reset=False)
    if spec.observation_size != env.observation_size or spec.action_size != env.action_size:
        print(f"scenec play: the policy takes {spec.observation_size} observations and gives "
              f"{spec.action_size} actions; this scene's task has {env.observation_size} and "
              f"{env.action_size}: it was trained on another scene", file=sys.stderr)
        return 2
    if meta.get("scene_sha256") and meta["scene_sha256"] != loaded.sha256:
        print("scenec play: note: the scene changed since the policy was trained", file=sys.stderr)
    steps = args.steps or env.length
    act = checkpoint.policy_function(spec, params, stats)

    @jax.jit
    def play(key):
        states = jax.vmap(env.reset)(jax.random.split(key, args.envs))

        def one(carry, _):
            s, total, alive, length = carry
            s = jax.vmap(env.step)(s, jax.vmap(act)(s.obs))
            total = total + jnp.where(alive, s.reward, 0.0)
            length = length + alive.astype(jnp.int32)
            out = (s.pipeline_state, alive)
            alive = jnp.logical_and(alive, s.done == 0)
            return (s, total, alive, length), out

        zeros = jnp.zeros((args.envs,), jnp.float32)
        start = (states, zeros, jnp.ones((args.envs,), bool), jnp.zeros((args.envs,), jnp.int32))
        (_, total, _, length), (traj, alive) = jax.lax.scan(one, start, None, length=steps)
        first = jax.tree_util.tree_map(lambda x: x[None], states.pipeline_state)
        traj = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), first, traj)
        return total, length, traj

    total, length, traj = play(jax.random.PRNGKey(args.seed))
    total, length = np.asarray(total), np.asarray(length)
    frames = int(length.max()) + 1  # the initial state, then every step of the longest episode
    traj = jax.tree_util.tree_map(lambda x: np.asarray(x)[:frames], traj)
    out = pathlib.Path(args.out) if args.out else policy_path.with_name("trajectory.npz")
    written = _write_trajectory(loaded, traj, out)
    result = {"episode_return": [float(x) for x in total], "episode_length": [int(x) for x in length],
              "mean_return": float(total.mean()), "trajectory": str(out) if written else None}
    if args.json:
        print(json.dumps(result))
    else:
        for i, (r, n) in enumerate(zip(total, length)):
            print(f"episode {i}: return {r:.2f} over {n} steps")
        if written:
            print(f"trajectory: {out}")
    return 0


def _write_trajectory(loaded, traj, path: pathlib.Path) -> bool:
    """Through runtime/trajectory.py (the viewer's format); False when that module is missing."""
    try:
        from scenec.runtime import trajectory
    except ImportError:
        print("scenec play: runtime/trajectory.py is not available; no trajectory written",
              file=sys.stderr)
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    trajectory.save(trajectory.record(loaded.model, traj, loaded.sha256), path)
    return True
