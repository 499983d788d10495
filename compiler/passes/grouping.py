"""Pass `grouping`: batch the kept collider pairs by kernel.

Input: IR with `pairs` (pruning). Output: `SceneIR.groups`, one `PairGroupIR` per kernel in the
collision table's order, each pair in the kernel's argument order (shapes in the canonical order of
`collision_table.Shape`; for equal shapes, the collider declared first). The runtime runs one
vmapped kernel call per group, so the step's size grows with the number of distinct shape pairs, not
with the number of pairs. Pairs with a height field are grouped per height-field collider (their
grids and windows must stack).
"""

from __future__ import annotations

from scenec.runtime.collision_table import PAIRS, pair_info

from .. import ir


def run(scene: ir.SceneIR) -> ir.SceneIR:
    colliders = {c.name: c for b in scene.bodies for c in b.colliders}
    order = {c.name: i for i, c in enumerate(colliders.values())}
    by_kernel: dict[str, list] = {}
    for v in scene.pairs:
        if not v.kept:
            continue
        a, b = colliders[v.collider1], colliders[v.collider2]
        if (a.shape, order[a.name]) > (b.shape, order[b.name]):
            a, b = b, a
        info = pair_info(a.shape, b.shape)
        # A group's data must stack: height fields of different grids (or windows) cannot, so each
        # height-field collider gets its own groups (a is the height field in canonical order).
        key = (info.kernel, a.name if a.hfield is not None else "")
        by_kernel.setdefault(key, []).append((a.name, b.name))
    kernel_order = [info.kernel for info in PAIRS.values()]
    groups = tuple(
        ir.PairGroupIR(kernel=k, pairs=tuple(by_kernel[(k, h)]), ncon=_ncon(k))
        for k in kernel_order for (kk, h) in sorted(by_kernel) if kk == k)
    return scene.replace(groups=groups)


def _ncon(kernel: str) -> int:
    return next(info.ncon for info in PAIRS.values() if info.kernel == kernel)
