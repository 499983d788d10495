"""Where `scenec view` and `scenec render` get their model and frames from.

Where it sits: compiler/viewer, shared by cmd_view and cmd_render. A scene file is analysed (its
diagnostics printed as `scenec check` prints them) and compiled in memory; a generated
`<scene>_step.py` is loaded as users load it. The frames come from a trajectory file (refused when
it was recorded from another scene), from a short simulation (`--steps N`, zero or random actions,
E environments side by side), or are the initial pose alone.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import NamedTuple


class Source(NamedTuple):
    model: object
    sha256: str
    label: str          # how to name the scene in messages (its path)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The scene and trajectory arguments both commands take."""
    parser.add_argument("scene", metavar="SCENE", help="a scene file, or a generated <scene>_step.py")
    parser.add_argument("--trajectory", metavar="FILE",
                        help="a trajectory file (.npz, see docs/viewer.md) recorded from this scene")
    parser.add_argument("--steps", type=int, default=0, metavar="N",
                        help="without --trajectory: simulate N control steps from the initial state")
    parser.add_argument("--envs", type=int, default=1, metavar="E",
                        help="with --steps: environments simulated side by side (default 1)")
    parser.add_argument("--actions", choices=("zero", "random"), default="zero",
                        help="with --steps: zero controls, or uniform random ones inside each "
                             "actuator's control range (default zero)")
    parser.add_argument("--seed", type=int, default=0, help="with --actions random")
    parser.add_argument("--save-trajectory", metavar="FILE", help="also write the frames as a trajectory file")
    parser.add_argument("--allow-outside", action="store_true",
                        help="allow mesh files outside the scene's folder")


def write_file(path, data: bytes) -> None:
    """Write atomically (runtime.io), then give the file the permissions open() would have given
    it (the temporary file is created 0600)."""
    import os

    from scenec.runtime.io import atomic_write_bytes

    atomic_write_bytes(path, data)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


def error(command: str, message: str) -> int:
    print(f"scenec {command}: {message}", file=sys.stderr)
    return 2


def load_source(path: str, allow_outside: bool = False) -> tuple[Source | None, int]:
    """The model and the scene's sha256; (None, exit code) after printing why not."""
    if path.endswith(".py"):
        from scenec.runtime.io import load_module

        if not pathlib.Path(path).is_file():
            print(f"scenec: no such file: {path}", file=sys.stderr)
            return None, 2
        module = load_module(path)
        return Source(module.model, str(module.SCENE_SHA256), path), 0
    from .. import api
    from ..cmd_common import print_diagnostics

    analysis = api.analyse(path, allow_outside=allow_outside)
    code = print_diagnostics(analysis.diagnostics, analysis.sources)
    if code:
        return None, code
    compiled = api.compile(path, allow_outside=allow_outside, measure_jit=False)
    return Source(compiled.model, compiled.ir.source_hash, path), 0


def simulate(model, sha256: str, steps: int, envs: int = 1, actions: str = "zero", seed: int = 0,
             with_contacts: bool = True):
    """A Trajectory of steps + 1 frames (the initial state, then one per control step) of `envs`
    environments from the initial state, as one jitted `lax.scan` of the vmapped step."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from scenec.runtime import render, trajectory
    from scenec.runtime import step as rstep

    s0 = rstep.init(model)
    states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (envs,) + x.shape), s0)
    limited = np.asarray(model.actuator_ctrl_limited.array, bool)
    lo = jnp.where(limited, model.actuator_ctrl_range[:, 0], -1.0)
    hi = jnp.where(limited, model.actuator_ctrl_range[:, 1], 1.0)
    vstep = jax.vmap(lambda s, a: rstep.step(model, s, a))

    def body(s, key):
        if actions == "random":
            u = jax.random.uniform(key, (envs, model.nu), s.q.dtype, lo, hi)
        else:
            u = jnp.zeros((envs, model.nu), s.q.dtype)
        s = vstep(s, u)
        return s, s

    @jax.jit
    def rollout(key):
        _, seq = jax.lax.scan(body, states, jax.random.split(key, steps))
        return jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), states, seq)

    seq = rollout(jax.random.PRNGKey(seed))
    contact_pos = contact_active = None
    if with_contacts and model.pair_groups:
        flat = lambda a: a.reshape((-1,) + a.shape[2:])  # noqa: E731
        pos, act = jax.jit(jax.vmap(lambda p, q: render.contact_points(model, p, q)))(
            flat(seq.xpos), flat(seq.xquat))
        contact_pos = np.asarray(pos).reshape((steps + 1, envs) + pos.shape[1:])
        contact_active = np.asarray(act).reshape((steps + 1, envs) + act.shape[1:])
    bad = ~np.all(np.isfinite(np.asarray(seq.q)), axis=-1)
    if np.any(bad):
        first = int(np.argmax(np.any(bad, axis=1)))
        raise trajectory.TrajectoryError(f"the simulation diverged (non-finite state) at step {first}")
    return trajectory.record(model, seq, sha256, contact_pos, contact_active)


def initial(model, sha256: str):
    """A one-frame Trajectory of the initial state."""
    import numpy as np

    from scenec.runtime import trajectory
    from scenec.runtime import step as rstep

    s = rstep.init(model)
    return trajectory.make(sha256, model.name, model.body_names, [0.0], np.asarray(s.xpos)[None],
                           np.asarray(s.xquat)[None])


def obtain(command: str, args, source: Source):
    """The frames to show: (Trajectory, 0) or (None, exit code) after printing why not."""
    from scenec.runtime import trajectory

    model = source.model
    if args.steps < 0 or args.envs < 1:
        return None, error(command, "--steps must be at least 0 and --envs at least 1")
    if args.trajectory and args.steps:
        return None, error(command, "give either --trajectory or --steps, not both")
    try:
        if args.trajectory:
            traj = trajectory.load(args.trajectory, scene_sha256=source.sha256, scene_label=source.label,
                                   body_names=model.body_names)
        elif args.steps:
            traj = simulate(model, source.sha256, args.steps, args.envs, args.actions, args.seed)
        else:
            traj = initial(model, source.sha256)
    except trajectory.TrajectoryError as e:
        return None, error(command, str(e))
    if args.save_trajectory:
        try:
            trajectory.save(traj, args.save_trajectory)
        except OSError as e:
            return None, error(command, f"cannot write {args.save_trajectory}: {e.strerror or e}")
    return traj, 0
