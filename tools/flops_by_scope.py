"""Where a step's arithmetic goes, by named scope: floating-point operations per environment and control
step, counted on the jaxpr of one tile of `step` (runtime/step.py `_advance`) before XLA sees it.

    python tools/flops_by_scope.py scenes/humanoid.yaml

Each line is a stage of the substep (the `jax.named_scope`s of step.py; inside the constraint stage its
named parts; keyed by tools/profile_scopes.py's `scope_of`, so the two tools' lines match), with its
thousands of operations per environment and control step and its share. A loop (`scan`) counts its body
once per turn; a `while` or `cond` counts its body or last branch once (the step's substep loop is a
scan; its cond on the counter runs the substep's branch on every turn but the last, whose frames-only
turn this count leaves out). Elementwise and comparison ops count one per output element, reductions one
per input element, `dot_general` two per multiply-add; gathers, slices, copies and other data movement
count nothing.

Beside XLA's own figure (`scenec bench`'s MFLOP/step, compiler/hlo_cost.py), which counts the optimised
program, this one counts what the code asks for, before XLA's fusion (which may compute some values
more than once) and simplification. It answers "which stage is arithmetic-heavy" (Humanoid:
Gauss–Jordan on the 23 × 24 mass matrix is 25% of the step's operations, the profile's 10% of its
time), not "how long it takes": read it with tools/profile_scopes.py and tools/ablate.py beside it.
"""

from __future__ import annotations

import argparse
import collections
import sys

import numpy as np
from profile_scopes import scope_of   # the same stage keys as the thunk profile's

ARITHMETIC = frozenset((
    "add", "sub", "mul", "div", "rem", "max", "min", "neg", "abs", "sign", "sqrt", "rsqrt", "cbrt", "exp",
    "exp2", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "asin", "acos", "atan", "atan2", "sinh",
    "cosh", "logistic", "pow", "integer_pow", "square", "floor", "ceil", "round", "select_n", "clamp",
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "xor", "erf", "erf_inv", "is_finite",
    "nextafter"))
REDUCTIONS = frozenset(("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
                        "argmin", "argmax", "cumsum", "cummax", "cummin"))


def _size(var) -> int:
    shape = getattr(var.aval, "shape", ())
    return int(np.prod(shape)) if shape else 1


def eqn_flops(eqn) -> int:
    """Operations of one jaxpr equation that is not a call or a loop (see the module docstring)."""
    name = eqn.primitive.name
    if name in ARITHMETIC:
        return _size(eqn.outvars[0])
    if name in REDUCTIONS:
        return max(_size(v) for v in eqn.invars)
    if name == "dot_general":
        (contract, _), _ = eqn.params["dimension_numbers"]
        k = int(np.prod([eqn.invars[0].aval.shape[i] for i in contract])) if contract else 1
        return 2 * k * _size(eqn.outvars[0])
    return 0


def count(jaxpr, weight: int = 1, stack: str = "", out=None) -> collections.Counter:
    """Operations per scope key of a (closed or open) jaxpr, loops weighted by their turns."""
    out = collections.Counter() if out is None else out
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        here = stack + "/" + str(eqn.source_info.name_stack)
        name, params = eqn.primitive.name, eqn.params
        if name == "scan":
            count(params["jaxpr"], weight * params["length"], here, out)
        elif name == "while":
            count(params["body_jaxpr"], weight, here, out)
        elif name == "cond":
            count(params["branches"][-1], weight, here, out)
        else:
            inner = next((params[k] for k in ("jaxpr", "call_jaxpr", "fun_jaxpr") if k in params), None)
            if inner is not None and hasattr(getattr(inner, "jaxpr", inner), "eqns"):
                count(inner, weight, here, out)
            else:
                out[scope_of(here + "/op")] += weight * eqn_flops(eqn)
    return out


def step_flops(m, batch: int = 64) -> collections.Counter:
    """Operations per environment and control step, by scope, of `_advance` on `batch` environments
    (one tile, the batch last) at the model's initial state."""
    import jax
    import jax.numpy as jnp

    from scenec.runtime import step as rstep

    s0 = rstep.init(m)
    q = jnp.broadcast_to(s0.q[:, None], (m.nq, batch))
    qd = jnp.broadcast_to(s0.qd[:, None], (m.nv, batch))
    u = jnp.zeros((m.nu, batch), q.dtype)
    jaxpr = jax.make_jaxpr(lambda q, qd, u: rstep._advance(m, q, qd, u))(q, qd, u)
    total = count(jaxpr)
    return collections.Counter({k: v / batch for k, v in total.items()})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene")
    parser.add_argument("--batch", type=int, default=64, help="environments in the traced tile")
    args = parser.parse_args(argv)
    from scenec.compiler import api

    m = api.compile(args.scene, measure_jit=False).model
    flops = step_flops(m, args.batch)
    total = sum(flops.values())
    print(f"{args.scene}: {total / 1e3:,.1f} kFLOP per environment and control step ({m.substeps} substeps)")
    for key, v in flops.most_common():
        print(f"  {key:32s} {v / 1e3:10.1f} k  {100 * v / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
