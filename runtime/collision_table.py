"""Which collider shape pairs have a contact kernel, and how many contact rows each produces.

Where it sits: one table read by both ends of the pipeline. The compiler's collision-pruning pass
prunes a pair with "no kernel for the shape pair" when `pair_info` returns None (and puts `suggest`
in the diagnostic's hint), and sizes the contact buffers from `ncon`; `scenec check` reads it without
jax. The runtime calls `collision.KERNELS[info.kernel]` on colliders in the canonical order (the
smaller `Shape` first). A test checks that this table and `collision.KERNELS` agree.

No jax here (numpy-only `collision_data` is fine).
"""

from __future__ import annotations

import enum
import math
from typing import NamedTuple

from .collision_data import FACE_VERTEX_BUDGET


class Shape(enum.IntEnum):
    """Collider shapes in canonical order: a kernel takes the smaller one first."""

    PLANE = 0
    HEIGHTFIELD = 1
    SPHERE = 2
    CAPSULE = 3
    BOX = 4
    MESH = 5


class PairInfo(NamedTuple):
    kernel: str   # name in collision.KERNELS, "<shape>_<shape>" in canonical order
    ncon: int     # contact rows the kernel returns (some may be inactive)
    note: str     # what the rows are, and which results are exact


# Contact rows per kernel: enough for resting contact to be stable (a face needs at least three
# points around its centre of pressure, a line contact two), no more, because the solver's cost
# grows with rows.
_S = Shape
PAIRS: dict[tuple[Shape, Shape], PairInfo] = {
    (_S.PLANE, _S.SPHERE): PairInfo("plane_sphere", 1, "exact"),
    (_S.PLANE, _S.CAPSULE): PairInfo("plane_capsule", 2, "the two cap centres; exact"),
    (_S.PLANE, _S.BOX): PairInfo("plane_box", 4, "corners of the box face facing the plane; exact deepest"),
    (_S.PLANE, _S.MESH): PairInfo("plane_mesh", 1 + FACE_VERTEX_BUDGET,
                                  "deepest vertex and the incident face's corners; exact deepest"),
    (_S.HEIGHTFIELD, _S.SPHERE): PairInfo("heightfield_sphere", 4,
                                          "four nearest terrain faces, ridges or peaks; exact above the terrain"),
    (_S.HEIGHTFIELD, _S.CAPSULE): PairInfo("heightfield_capsule", 4,
                                           "both caps and the two best segment candidates; exact above the terrain"),
    (_S.HEIGHTFIELD, _S.BOX): PairInfo("heightfield_box", 8,
                                       "four deepest corners and four terrain peaks deepest in the box; "
                                       "misses box-edge against terrain-edge contacts, never too close"),
    (_S.SPHERE, _S.SPHERE): PairInfo("sphere_sphere", 1, "exact"),
    (_S.SPHERE, _S.CAPSULE): PairInfo("sphere_capsule", 1, "exact"),
    (_S.SPHERE, _S.BOX): PairInfo("sphere_box", 1, "exact"),
    (_S.SPHERE, _S.MESH): PairInfo("sphere_mesh", 1, "exact"),
    (_S.CAPSULE, _S.CAPSULE): PairInfo("capsule_capsule", 2, "exact; two rows when the axes are parallel"),
    (_S.CAPSULE, _S.BOX): PairInfo("capsule_box", 2, "exact; two rows when the capsule lies along a face"),
    (_S.CAPSULE, _S.MESH): PairInfo("capsule_mesh", 2, "exact; two rows when the capsule lies along a face"),
    (_S.BOX, _S.BOX): PairInfo("box_box", 8, "SAT + face clipping; depth exact up to the face preference"),
    (_S.BOX, _S.MESH): PairInfo("box_mesh", 5, "SAT + face clipping, deepest and four spread points; "
                                               "depth exact up to the face preference"),
    (_S.MESH, _S.MESH): PairInfo("mesh_mesh", 5, "SAT + face clipping, deepest and four spread points; "
                                                 "depth exact up to the face preference"),
}
del _S

# Why the other pairs have no kernel, and what to do instead (the hint of the "no kernel" diagnostic).
_SUGGESTIONS: dict[tuple[Shape, Shape], str] = {
    (Shape.PLANE, Shape.PLANE):
        "planes are infinite ground; two of them never need contacts: make both static or remove one",
    (Shape.PLANE, Shape.HEIGHTFIELD):
        "a plane and a height field are both terrain; make both static (static pairs are never checked)",
    (Shape.HEIGHTFIELD, Shape.HEIGHTFIELD):
        "height fields are terrain; make both static (static pairs are never checked)",
    (Shape.HEIGHTFIELD, Shape.MESH):
        "use a box, capsule or sphere instead of the mesh (or several of them) to touch a height field",
}

# Padding budgets. Meshes that share a kernel are padded to common budgets chosen per scene from the
# largest hull, rounded up with `round_budget` so that similar scenes share compiled shapes. Hulls
# above the limits are rejected by the compiler: the mesh kernels' cost grows with the product of the
# two hulls' edge counts, and a hull with 64 vertices already makes mesh_mesh slow.
MESH_VERTEX_LIMIT = 64
MESH_FACE_LIMIT = 2 * MESH_VERTEX_LIMIT - 4    # Euler: a triangulated hull with V vertices has 2V - 4 faces
MESH_EDGE_LIMIT = 3 * MESH_VERTEX_LIMIT - 6    # ... and 3V - 6 edges
BUDGET_STEP = 8                                # budgets are multiples of this
FACE_VERTICES = FACE_VERTEX_BUDGET             # vertices per clipping polygon (see collision_data)
# Height-field windows: at most this many cells along x and along y around a collider (the kernels
# examine 2 * wx * wy triangles). A larger reach needs a coarser grid.
HEIGHTFIELD_WINDOW_LIMIT = 16


def round_budget(n: int) -> int:
    """The budget for `n` entries: the next multiple of BUDGET_STEP (at least one step)."""
    return max(BUDGET_STEP, BUDGET_STEP * math.ceil(n / BUDGET_STEP))


def pair_info(a: Shape | int, b: Shape | int) -> PairInfo | None:
    """The kernel for two shapes in either order (kernels take them in canonical order), or None."""
    a, b = Shape(a), Shape(b)
    return PAIRS.get((a, b) if a <= b else (b, a))


def suggest(a: Shape | int, b: Shape | int) -> str:
    """What to do about a shape pair with no kernel; "" when the pair has one."""
    a, b = sorted((Shape(a), Shape(b)))
    if (a, b) in PAIRS:
        return ""
    return _SUGGESTIONS[(a, b)]
