"""`scenec dump-jaxpr SCENE`: the jaxpr of the compiled step (one environment).

Where it sits: compiler/, a subcommand (cli.py). Shows what XLA receives: straight-line arithmetic,
`scan`s of fixed length for substeps and solver iterations, and no `cond` or `while`.
"""

from __future__ import annotations

import argparse

from .cmd_common import add_scene_arguments, print_diagnostics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scene_arguments(parser)
    parser.add_argument("--batch", type=int, default=0, help="show the vmapped step for this batch size")


def run(args: argparse.Namespace) -> int:
    from . import api

    analysis = api.analyse(args.scene, allow_outside=args.allow_outside)
    code = print_diagnostics(analysis.diagnostics, analysis.sources)
    if code:
        return code
    compiled = api.compile(args.scene, allow_outside=args.allow_outside, measure_jit=False)
    print(step_jaxpr(compiled.model, args.batch))
    return 0


def step_jaxpr(model, batch: int = 0):
    import jax
    import jax.numpy as jnp

    from scenec.runtime import step as rstep

    state = jax.jit(rstep.init)(model)
    action = jnp.zeros((model.nu,), state.q.dtype)
    fn = lambda s, a: rstep.step(model, s, a)  # noqa: E731
    if batch:
        state = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
        action = jnp.zeros((batch, model.nu), state.q.dtype)
        fn = jax.vmap(fn)
    return jax.make_jaxpr(fn)(state, action)
