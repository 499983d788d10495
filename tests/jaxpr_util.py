"""Walk a jaxpr and every sub-jaxpr (scan bodies, pjit calls, custom rules): test helper."""

from __future__ import annotations


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
