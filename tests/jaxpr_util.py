"""Walk a jaxpr and every sub-jaxpr (scan bodies, pjit calls, custom rules): test helper."""

from __future__ import annotations

from jax.extend.core import Literal


def primitives(jaxpr) -> set[str]:
    """Names of every primitive in a (closed) jaxpr, nested ones included."""
    seen: set[str] = set()
    stack = [getattr(jaxpr, "jaxpr", jaxpr)]
    while stack:
        j = stack.pop()
        for eqn in j.eqns:
            seen.add(eqn.primitive.name)
            for value in eqn.params.values():
                for sub in value if isinstance(value, (list, tuple)) else (value,):
                    inner = getattr(sub, "jaxpr", None)
                    if inner is not None:
                        stack.append(getattr(inner, "jaxpr", inner) if hasattr(inner, "eqns") is False else inner)
                    elif hasattr(sub, "eqns"):
                        stack.append(sub)
    return seen


BRANCHING = frozenset({"cond", "switch", "while"})


def _sub_jaxprs(eqn):
    """The jaxprs an equation's parameters hold (open ones; a closed one's consts are its constvars)."""
    subs = []
    for value in eqn.params.values():
        for sub in value if isinstance(value, (list, tuple)) else (value,):
            if hasattr(sub, "eqns"):
                subs.append(sub)
            elif hasattr(getattr(sub, "jaxpr", None), "eqns"):
                subs.append(sub.jaxpr)
    return subs


def _walk(jaxpr, fixed_in):
    """Branches found in `jaxpr` whose choice is not fixed, and for each output whether it is fixed.

    A value is fixed when it is computed from literals and constants created inside the trace (an
    iota: a loop's counter) alone: the same in every environment and every call. The jaxpr's inputs
    are fixed as `fixed_in` says; its closed-over constants (the model's arrays) are not, nor is a
    loop's carry."""
    fixed = {v: f for v, f in zip(jaxpr.invars, fixed_in)}

    def known(a):
        return isinstance(a, Literal) or fixed.get(a, False)

    found: set[str] = set()
    for eqn in jaxpr.eqns:
        ins = [known(a) for a in eqn.invars]
        name = eqn.primitive.name
        if name == "cond":
            if not ins[0]:
                found.add("cond")
            outs = [True] * len(eqn.outvars)
            for branch in eqn.params["branches"]:
                sub, sub_out = _walk(branch.jaxpr, ins[1:])
                found |= sub
                outs = [a and b for a, b in zip(outs, sub_out)]
        elif name == "scan":
            nc, ncarry = eqn.params["num_consts"], eqn.params["num_carry"]
            sub, sub_out = _walk(eqn.params["jaxpr"].jaxpr, ins[:nc] + [False] * ncarry + ins[nc + ncarry:])
            found |= sub
            outs = [False] * ncarry + sub_out[ncarry:]
        else:
            if name in BRANCHING:
                found.add(name)
            subs = _sub_jaxprs(eqn)
            if len(subs) == 1 and len(subs[0].invars) == len(ins) and len(subs[0].outvars) == len(eqn.outvars):
                sub, outs = _walk(subs[0], ins)
                found |= sub
            else:
                for j in subs:
                    found |= _walk(j, [False] * len(j.invars))[0]
                outs = [all(ins) and not subs] * len(eqn.outvars)
        fixed.update(zip(eqn.outvars, outs))
    return found, [known(v) for v in jaxpr.outvars]


def data_dependent_branches(jaxpr) -> set[str]:
    """The branching primitives in a (closed) jaxpr, nested ones included, whose choice may depend on
    a value (the state, the action, the model's arrays; DESIGN.md: no data-dependent branches): every
    `while`, and every `cond` (`lax.cond` and `lax.switch`) but those whose index is fixed, computed
    from literals and loop counters alone, so that every environment takes the same branch (the
    last turn of the step's substep loop, step.py)."""
    j = getattr(jaxpr, "jaxpr", jaxpr)
    return _walk(j, [False] * len(j.invars))[0]
