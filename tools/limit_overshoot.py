"""How far a scene's hinges and slides pass the ends of their ranges in random-action rollouts: the
figure behind compiler/passes/separation.py's `HINGE_SLACK` (scenec's joint limits are soft).

    python tools/limit_overshoot.py scenes/humanoid.yaml [--batch 256] [--steps 400] [--seeds 0 1]

Per seed: `batch` environments from the scene's initial state, `steps` control steps of actions drawn
uniformly in the control range (a new draw each step), and for every limited hinge or slide the most
it went past either end of its range over all environments and steps (degrees for hinges, metres for
slides; 0 or less: it never left its range). 2026-12-06, 256 × 400 steps: walker2d 47.9° (its feet,
seeds 0 and 1), Humanoid 22.3° and 22.9° (seeds 0 and 1, falling and lying on the floor under random
actions), half_cheetah 8.3°, hopper 5.4°, Ant 1.1° (seed 0).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def overshoot(model, step, batch: int, steps: int, seed: int):
    """(names, kinds, (njoint,) largest distance past either end) for the model's limited hinges and
    slides, radians or metres, over a random-action rollout (see the module docstring)."""
    import jax
    import jax.numpy as jnp

    from scenec.runtime import step as rstep
    from scenec.runtime.types import JointKind

    kind = np.asarray(model.jnt_kind.array)
    limited = np.asarray(model.jnt_limited.array).astype(bool)
    joints = np.flatnonzero(limited & ((kind == JointKind.HINGE) | (kind == JointKind.SLIDE)))
    adr = np.asarray(model.jnt_qpos_adr.array)[joints]
    lo, hi = (np.asarray(model.jnt_range)[joints, k] for k in (0, 1))
    clo, chi = model.actuator_ctrl_range[:, 0], model.actuator_ctrl_range[:, 1]

    def body(state, key):
        action = jax.random.uniform(key, (batch, model.nu), minval=clo, maxval=chi)
        state = step(state, action)
        q = state.q[:, adr]
        return state, jnp.max(jnp.maximum(q - hi, lo - q), axis=0)

    state = rstep.init(model, jnp.broadcast_to(model.q0, (batch, model.nq)))
    _, past = jax.jit(lambda s, k: jax.lax.scan(body, s, jax.random.split(k, steps)))(
        state, jax.random.PRNGKey(seed))
    return [model.jnt_names[j] for j in joints], kind[joints], np.asarray(past).max(axis=0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args(argv)

    from scenec.compiler import api
    from scenec.runtime.types import JointKind

    compiled = api.compile(args.scene, measure_jit=False)
    for seed in args.seeds:
        names, kinds, past = overshoot(compiled.model, compiled.step, args.batch, args.steps, seed)
        if not len(names):
            print(f"{args.scene}: no limited hinge or slide")
            return 0
        hinge = kinds == JointKind.HINGE
        shown = np.where(hinge, np.degrees(past), past)
        head = f"{args.scene}, seed {seed}, {args.batch} × {args.steps} control steps"
        if hinge.any():
            worst = int(np.argmax(np.where(hinge, shown, -np.inf)))
            head += f": most past an end {shown[worst]:.1f}° ({names[worst]})"
        print(head)
        for n, h, s in zip(names, hinge, shown):
            print(f"  {n:24s} {s:8.2f} {'deg' if h else 'm'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
