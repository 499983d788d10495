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

`--xla` adds a second count beside it: the same operations in XLA's optimised module of that tile (each
instruction inside each fused computation, one per element of its shape, a reduction one per element
of its input, a dot two per multiply-add), every computation weighted by how often it runs (a while
loop's body by the trip count XLA recorded for it, a conditional's branches as often as the
conditional), keyed by the same scopes through each instruction's op_name. Where the optimised module
does more than the jaxpr asks, XLA has fused a producer into several consumers and computes it again
in each (or into a loop over its reuse). Humanoid (2026-12-07): 1,403k asked, 1,755k done (×1.25); the
mass matrix 337k → 528k (the elimination's scan, two steps per turn, becomes one pass per turn in
which the first step's pivot row and column are computed again for every entry), collide 115k → 210k
(each collider's pose computed again inside every pair group's gather of it), forces ×1.8, the
choice ×1.4, kinematics ×1.3; the solver's iterations and J·M⁻¹ ×1.00. Ant 336k → 415k (×1.23).
Gathers, slices and copies count nothing here either, and selects and compares count as the jaxpr's
do, so the two columns agree where XLA changes nothing.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys

import numpy as np
from profile_scopes import scope_of   # the same stage keys as the thunk profile's

from scenec.compiler.hlo_cost import _BRANCHES, _CALL, _TRIP, _WHILE, _computations   # module parts

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

    from scenec.runtime import step as rstep

    jaxpr = jax.make_jaxpr(lambda q, qd, u: rstep._advance(m, q, qd, u))(*_tile(m, batch))
    total = count(jaxpr)
    return collections.Counter({k: v / batch for k, v in total.items()})


def _tile(m, batch: int):
    """q, qd and controls (batch last) of `batch` environments at the model's initial state."""
    import jax.numpy as jnp

    from scenec.runtime import step as rstep

    s0 = rstep.init(m)
    q = jnp.broadcast_to(s0.q[:, None], (m.nq, batch))
    return q, jnp.broadcast_to(s0.qd[:, None], (m.nv, batch)), jnp.zeros((m.nu, batch), q.dtype)


# HLO opcodes counted like the jaxpr's ARITHMETIC (one per output element) and REDUCTIONS (one per input
# element); `dot` two per multiply-add.
HLO_ELEMENTWISE = frozenset((
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "negate", "abs", "sign",
    "sqrt", "rsqrt", "cbrt", "exponential", "exponential-minus-one", "log", "log-plus-one", "sine",
    "cosine", "tan", "tanh", "atan2", "logistic", "power", "floor", "ceil", "round-nearest-afz",
    "round-nearest-even", "select", "clamp", "compare", "and", "or", "not", "xor", "erf", "is-finite"))
HLO_REDUCTIONS = frozenset(("reduce", "reduce-window"))
_INSTR = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = (\w+)\[([\d,]*)\]\S* ([\w\-]+)\((.*)$")
_OPERAND = re.compile(r"%([\w.\-]+)")
_CONDITION = re.compile(r"condition=%([\w.\-]+)")
_FUSED = re.compile(r"\bfusion\(.*?calls=%([\w.\-]+)")
_APPLIES = re.compile(r" (?:reduce|reduce-window|sort|scatter|map|select-and-scatter|all-reduce|reduce-scatter)\(")


def _elements(dims: str) -> int:
    return int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1


def computation_weights(comps: dict, entry: str) -> dict:
    """How often each computation of an optimised module runs per run of its entry: a while loop's
    body `known_trip_count` times (its condition once more), fused computations, called computations
    and a conditional's branches as often as the instruction that names them. The computations a
    reduction applies (its adder) are left out: the reduction counts its own operations."""
    weight = collections.defaultdict(float)
    weight[entry] = 1.0
    order, i = [entry], 0
    while i < len(order):
        name = order[i]
        i += 1
        for line in comps[name]:
            if _APPLIES.search(line):
                continue
            w, subs = weight[name], []
            loop = _WHILE.search(line)
            if loop:
                trip = _TRIP.search(line)
                n = int(trip.group(1)) if trip else 1
                subs = [(loop.group(1), w * n), (_CONDITION.search(line).group(1), w * (n + 1))]
            for called in (_CALL.search(line), _FUSED.search(line)):
                if called:
                    subs.append((called.group(1), w))
            branches = _BRANCHES.search(line)
            if branches:
                names = branches.group(1).split(",") if branches.group(1) else branches.group(2, 3)
                subs += [(b.strip().lstrip("%"), w) for b in names]
            for sub, ws in subs:
                if sub in comps:
                    if sub not in weight:
                        order.append(sub)
                    weight[sub] += ws
    return weight


def optimised_count(text: str) -> collections.Counter:
    """Operations per scope key of an optimised HLO module's text (`compiled.as_text()`), each
    computation weighted by `computation_weights`."""
    comps, entry = _computations(text)
    weight = computation_weights(comps, entry)
    out = collections.Counter()
    for name, lines in comps.items():
        w = weight.get(name, 0.0)
        if not w:
            continue
        dims = {}                                    # each array instruction's dimensions
        for line in lines:
            m = _INSTR.match(line)
            if m:
                dims[m.group(1)] = [int(d) for d in m.group(3).split(",") if d]
        for line in lines:
            m = _INSTR.match(line)
            if not m:
                continue
            op = m.group(4)
            if op in HLO_ELEMENTWISE:
                n = _elements(m.group(3))
            elif op in HLO_REDUCTIONS:
                operand = _OPERAND.search(m.group(5))
                n = int(np.prod(dims.get(operand.group(1), [0]))) if operand else 0
            elif op == "dot":
                operand = _OPERAND.search(m.group(5))
                lhs = dims.get(operand.group(1)) if operand else None
                contract = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line)
                k = int(np.prod([lhs[int(i)] for i in contract.group(1).split(",") if i])) if lhs and contract else 1
                n = 2 * k * _elements(m.group(3)) if lhs is not None else 0
            else:
                continue
            op_name = re.search(r'op_name="([^"]*)"', line)
            key = scope_of(op_name.group(1)) if op_name else "(no scope)"
            out[key] += w * n
    return out


def optimised_step_flops(m, batch: int = 64) -> collections.Counter:
    """`optimised_count` of XLA's optimised module of `_advance` on one tile of `batch` environments
    (jitted on one device, as `step_flops` traces it), per environment and control step."""
    import jax

    from scenec.runtime import step as rstep

    text = jax.jit(lambda q, qd, u: rstep._advance(m, q, qd, u)).lower(*_tile(m, batch)).compile().as_text()
    return collections.Counter({k: v / batch for k, v in optimised_count(text).items()})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scene")
    parser.add_argument("--batch", type=int, default=64, help="environments in the traced tile")
    parser.add_argument("--xla", action="store_true",
                        help="beside each stage, the operations XLA's optimised module does for it")
    args = parser.parse_args(argv)
    import scenec.runtime  # noqa: F401  (the XLA flags, before jax starts)
    from scenec.compiler import api

    m = api.compile(args.scene, measure_jit=False).model
    flops = step_flops(m, args.batch)
    total = sum(flops.values())
    print(f"{args.scene}: {total / 1e3:,.1f} kFLOP per environment and control step ({m.substeps} substeps)")
    if not args.xla:
        for key, v in flops.most_common():
            print(f"  {key:32s} {v / 1e3:10.1f} k  {100 * v / total:5.1f}%")
        return 0
    done = optimised_step_flops(m, args.batch)
    print(f"  {'stage':32s} {'asked':>10s}   {'share':>5s}  {'XLA does':>10s}  {'ratio':>6s}")
    for key in sorted(set(flops) | set(done), key=lambda k: -max(flops.get(k, 0), done.get(k, 0))):
        a, d = flops.get(key, 0.0), done.get(key, 0.0)
        ratio = f"×{d / a:.2f}" if a else "-"
        print(f"  {key:32s} {a / 1e3:10.1f} k {100 * a / total:5.1f}%  {d / 1e3:10.1f} k  {ratio:>6s}")
    print(f"  {'total':32s} {total / 1e3:10.1f} k {100.0:5.1f}%  {sum(done.values()) / 1e3:10.1f} k  "
          f"×{sum(done.values()) / total:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
