"""Which collider pairs of a scene may touch, by the contact rules alone: pure Python, no geometry.

Where it sits: a reference for the importers' tests (an imported MJCF must filter exactly as MuJoCo
does) and a building block the compiler's pruning pass can reuse for its rule-based predicates.
It reads only the Scene message: bodies, colliders, joints and `contacts`.

The rules, in the order they are applied (MuJoCo's, from the "Collision detection" section of the
MuJoCo documentation, transposed to scenec's names):
1. An explicit pair (`contacts.pairs`) is always kept, whatever the other rules say.
2. Colliders on bodies fused into one rigid piece never touch: bodies joined by `fixed` joints,
   and all bodies that are no joint's child, which are welded to the world ("both static").
   MuJoCo calls these weld bodies; its filter compares weld bodies, not bodies.
3. Parent filtering (`contacts.filter_parent`, default true): the rigid pieces of a joint's parent
   and child do not touch, unless one of them is the world.
4. Excluded body pairs (`contacts.exclude`, fnmatch patterns, either order) never touch.
5. When `contacts.include` is non-empty, only the body pairs it lists may touch.
6. Two colliders may touch when (group1 & mask2) || (group2 & mask1) (defaults 1 and 1).
"""

from __future__ import annotations

import dataclasses
import fnmatch

FIXED = 4  # scene_pb2.FIXED, without importing the generated module's enum here


@dataclasses.dataclass(frozen=True)
class Verdict:
    first: str       # collider name ("<body>/<index>" when unnamed)
    second: str
    kept: bool
    reason: str      # why: explicit_pair, same_body, both_static, fused, parent_child, excluded,
                     # not_included, masks_disjoint, or candidate


def collider_names(scene) -> list[tuple[str, str, object]]:
    """(collider name, body name, collider message) for every collider, in scene order."""
    out = []
    for body in scene.bodies:
        for i, col in enumerate(body.colliders):
            out.append((col.name or f"{body.name}/{i}", body.name, col))
    return out


def weld_roots(scene) -> tuple[dict[str, str], dict[str, str]]:
    """(rigid piece of each body, parent piece of each piece).

    A piece is named by its root body; "world" for everything welded to the world. The parent
    piece of a piece is the piece of the parent of the joint(s) that move its root."""
    parent_of: dict[str, str] = {}
    fixed: dict[str, bool] = {}
    for j in scene.joints:
        parent_of[j.child] = j.parent or "world"
        fixed[j.child] = fixed.get(j.child, True) and j.kind == FIXED

    def root(body: str, depth: int = 0) -> str:
        if body == "world" or depth > len(scene.bodies) + 1:
            return "world"
        if body not in parent_of:
            return "world"  # no joint's child: welded to the world
        if fixed.get(body, False):
            return root(parent_of[body], depth + 1)
        return body

    piece = {b.name: root(b.name) for b in scene.bodies}
    piece_parent = {}
    for p in set(piece.values()):
        piece_parent[p] = "world" if p == "world" else root(parent_of.get(p, "world"))
    return piece, piece_parent


def _match(pair, a: str, b: str) -> bool:
    return ((fnmatch.fnmatchcase(a, pair.first) and fnmatch.fnmatchcase(b, pair.second))
            or (fnmatch.fnmatchcase(b, pair.first) and fnmatch.fnmatchcase(a, pair.second)))


def pair_verdicts(scene) -> list[Verdict]:
    """A verdict for every two colliders on different bodies, plus every explicit pair."""
    cols = collider_names(scene)
    piece, piece_parent = weld_roots(scene)
    rules = scene.contacts
    filter_parent = rules.filter_parent if rules.HasField("filter_parent") else True
    explicit = {frozenset((p.first, p.second)) for p in rules.pairs}
    out = []
    for i in range(len(cols)):
        for k in range(i + 1, len(cols)):
            n1, b1, c1 = cols[i]
            n2, b2, c2 = cols[k]
            key = frozenset((n1, n2))
            if key in explicit:
                out.append(Verdict(n1, n2, True, "explicit_pair"))
                continue
            if b1 == b2:
                out.append(Verdict(n1, n2, False, "same_body"))
                continue
            w1, w2 = piece[b1], piece[b2]
            if w1 == w2:
                out.append(Verdict(n1, n2, False, "both_static" if w1 == "world" else "fused"))
                continue
            if filter_parent and w1 != "world" and w2 != "world" and (
                    piece_parent[w1] == w2 or piece_parent[w2] == w1):
                out.append(Verdict(n1, n2, False, "parent_child"))
                continue
            if any(_match(p, b1, b2) for p in rules.exclude):
                out.append(Verdict(n1, n2, False, "excluded"))
                continue
            if len(rules.include) and not any(_match(p, b1, b2) for p in rules.include):
                out.append(Verdict(n1, n2, False, "not_included"))
                continue
            g1 = c1.group if c1.HasField("group") else 1
            m1 = c1.mask if c1.HasField("mask") else 1
            g2 = c2.group if c2.HasField("group") else 1
            m2 = c2.mask if c2.HasField("mask") else 1
            if not ((g1 & m2) or (g2 & m1)):
                out.append(Verdict(n1, n2, False, "masks_disjoint"))
                continue
            out.append(Verdict(n1, n2, True, "candidate"))
    # explicit pairs between colliders of one body are kept too (MuJoCo allows them)
    seen = {frozenset((v.first, v.second)) for v in out}
    for p in rules.pairs:
        if frozenset((p.first, p.second)) not in seen:
            out.append(Verdict(p.first, p.second, True, "explicit_pair"))
    return out


def candidate_pairs(scene) -> set[frozenset]:
    """The collider pairs that may touch, each as a frozenset of two collider names."""
    return {frozenset((v.first, v.second)) for v in pair_verdicts(scene) if v.kept}
