"""The pass table and the IR verifier.

Where it sits: between `frontend.build` and `lower`. `PASSES` lists the analysis passes in the order
they run; each is a pure `run(ir) -> ir`. Adding a pass is adding a line. `run_passes` times each pass
(for report.json), stops at the first pass that reports errors, and, with `verify_each`, checks the
IR's invariants after every pass (tests always do; `scenec compile --verify-each` does too).
"""

from __future__ import annotations

import time

from scenec.schema.diagnostics import has_errors

from . import ir
from .passes import geometry, grouping, pruning, topology

PASSES = (
    ("geometry", geometry.run),   # hulls, volumes, mass properties of the authored bodies
    ("topology", topology.run),   # fuse welded bodies, order the forest, lay out q and qd
    ("pruning", pruning.run),     # keep or prune every collider pair, with a reason
    ("grouping", grouping.run),   # batch the kept pairs by kernel
)
PASS_NAMES = tuple(name for name, _ in PASSES)


class VerifyError(AssertionError):
    """An IR invariant broke: a compiler bug, not a user error."""


def run_passes(scene: ir.SceneIR, *, verify_each: bool = False, stop_after: str | None = None):
    if stop_after is not None and stop_after not in PASS_NAMES:
        raise ValueError(f"unknown pass {stop_after!r}; passes: {', '.join(PASS_NAMES)}")
    timings = list(scene.timings)
    for name, fn in PASSES:
        t0 = time.perf_counter()
        scene = fn(scene)
        timings.append((name, time.perf_counter() - t0))
        scene = scene.replace(timings=tuple(timings))
        if has_errors(scene.diagnostics):
            break
        if verify_each:
            verify(scene, name)
        if name == stop_after:
            break
    return scene


def verify(scene: ir.SceneIR, after: str) -> None:
    """Check the invariants that hold after pass `after`; raise VerifyError naming the broken one."""

    def need(cond, what):
        if not cond:
            raise VerifyError(f"after pass '{after}': {what}")

    done = PASS_NAMES[:PASS_NAMES.index(after) + 1]
    names = [b.name for b in scene.bodies]
    need(len(set(names)) == len(names), "body names are unique")
    if "geometry" in done:
        need(all(b.props is not None for b in scene.bodies), "every body has mass properties")
    if "topology" in done:
        t = scene.topology
        need(t is not None and tuple(names) == t.bodies, "bodies follow the topology's order")
        need(names[0] == "world" and t.parent[0] == -1, "the world is body 0")
        need(all(0 <= t.parent[i] < i for i in range(1, len(names))), "parents come before children")
        need(all(t.level[i] == t.level[t.parent[i]] + 1 for i in range(1, len(names))), "levels")
        need(len(t.dof_parent) == t.nv and all(p < d for d, p in enumerate(t.dof_parent)),
             "each dof's parent dof comes before it")
        runs = [b for k, b in enumerate(t.jnt_body) if k == 0 or t.jnt_body[k - 1] != b]
        need(len(runs) == len(set(runs)), "each body's joints are contiguous")
        colliders = [c.name for b in scene.bodies for c in b.colliders]
        need(len(set(colliders)) == len(colliders), "collider names are unique")
    if "pruning" in done:
        n = sum(len(b.colliders) for b in scene.bodies)
        need(len(scene.pairs) == n * (n - 1) // 2, "every collider pair has exactly one verdict")
        need(all(v.reason in pruning.REASONS for v in scene.pairs), "verdict reasons are known")
    if "grouping" in done:
        kept = {frozenset((v.collider1, v.collider2)) for v in scene.pairs if v.kept}
        grouped = [frozenset(p) for g in scene.groups for p in g.pairs]
        need(len(grouped) == len(set(grouped)) and set(grouped) == kept,
             "every kept pair is in exactly one group")
