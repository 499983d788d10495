"""Collision pruning: each predicate on a minimal scene, the `unreachable` bound on cases that must be
pruned and must be kept, and a sampling check that no pruned pair can overlap.

References are independent of the pass: hand-derived verdicts for the small scenes, and for the
sampling test an exact capsule/sphere distance in numpy on body poses from the runtime's kinematics.
"""

from __future__ import annotations

import numpy as np
import pytest

from scenec.compiler import api


def verdicts(text: str) -> dict:
    a = api.analyse(text, verify_each=True)
    assert a.ir is not None and a.ir.pairs is not None, [d.message for d in a.diagnostics]
    return {frozenset((v.collider1, v.collider2)): v.reason for v in a.ir.pairs}


def pair(a, b):
    return frozenset((a, b))


BALL = "{sphere: {radius: 0.1}}"


def test_same_body():
    v = verdicts(f"""
bodies:
  - {{name: a, colliders: [{{name: a1, sphere: {{radius: 0.1}}}}, {{name: a2, pos: [0, 0, 1], sphere: {{radius: 0.1}}}}]}}
joints: [{{name: f, kind: free, child: a}}]
""")
    assert v == {pair("a1", "a2"): "same_body"}


def test_fused_bodies():
    v = verdicts(f"""
bodies:
  - {{name: a, colliders: [{{name: a1, sphere: {{radius: 0.1}}}}]}}
  - {{name: b, pos: [0, 0, 1], colliders: [{{name: b1, sphere: {{radius: 0.1}}}}]}}
joints: [{{name: f, kind: free, child: a}}, {{name: weld, kind: fixed, parent: a, child: b}}]
""")
    assert v == {pair("a1", "b1"): "fused"}


def test_both_static():
    v = verdicts(f"""
bodies:
  - {{name: floor, colliders: [{{name: p, plane: {{}}}}]}}
  - {{name: wall, colliders: [{{name: w, box: {{half_size: [1, 1, 1]}}}}]}}
""")
    assert v == {pair("p", "w"): "static"}


CHAIN = """
bodies:
  - {name: floor, colliders: [{name: ground, plane: {}}]}
  - {name: upper, pos: [0, 0, 1], colliders: [{name: u, capsule: {radius: 0.05, half_length: 0.2}}]}
  - {name: lower, pos: [0, 0, 0.5], colliders: [{name: l, capsule: {radius: 0.05, half_length: 0.2}}]}
joints:
  - {name: j1, kind: hinge, child: upper, anchor: [0, 0, 0.25], axis: [0, 1, 0]}
  - {name: j2, kind: hinge, parent: upper, child: lower, anchor: [0, 0, 0.25], axis: [0, 1, 0]}
"""


def test_parent_child_but_not_the_world():
    v = verdicts(CHAIN)
    assert v[pair("u", "l")] == "parent_child"
    assert v[pair("ground", "u")] == "kept"        # its parent is the world: MuJoCo keeps it too
    assert v[pair("ground", "l")] == "kept"


def test_filter_parent_off_keeps_parent_child():
    v = verdicts(CHAIN + "contacts: {filter_parent: false}\n")
    assert v[pair("u", "l")] == "kept"


def test_mask_bits():
    v = verdicts(CHAIN.replace("{name: u, ", "{name: u, group: 2, mask: 2, ").replace(
        "{name: l, ", "{name: l, group: 4, mask: 4, ") + "contacts: {filter_parent: false}\n")
    assert v[pair("u", "l")] == "mask"
    assert v[pair("ground", "u")] == "mask"        # ground: group 1, mask 1
    v = verdicts(CHAIN.replace("{name: u, ", "{name: u, group: 2, mask: 1, "))
    assert v[pair("ground", "u")] == "kept"        # ground's group 1 & u's mask 1: one way is enough


def test_exclude_and_include_rules():
    v = verdicts(CHAIN + 'contacts: {exclude: [{first: "floor", second: "low*"}]}\n')
    assert v[pair("ground", "l")] == "excluded" and v[pair("ground", "u")] == "kept"
    v = verdicts(CHAIN + 'contacts: {include: [{first: "upper", second: "floor"}]}\n')
    assert v[pair("ground", "u")] == "kept" and v[pair("ground", "l")] == "not_included"


def test_explicit_pair_overrides_filters():
    text = CHAIN.replace("{name: l, ", "{name: l, group: 0, mask: 0, ")
    assert verdicts(text)[pair("ground", "l")] == "mask"
    v = verdicts(text + 'contacts: {pairs: [{first: "ground", second: "l"}]}\n')
    assert v[pair("ground", "l")] == "explicit"


def test_no_kernel_is_an_error_not_a_silent_drop():
    a = api.analyse("""
heightfields: [{name: h, nrow: 2, ncol: 2, size_x: 1, size_y: 1, elevation: [0, 0, 0, 0]}]
meshes: [{name: t, vertices: [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1], faces: [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3]}]
bodies:
  - {name: ground, colliders: [{name: hf, heightfield: {heightfield: h}}]}
  - {name: rock, pos: [0, 0, 1], colliders: [{name: r, mesh: {mesh: t}}]}
joints: [{name: f, kind: free, child: rock}]
""")
    assert [d.code for d in a.diagnostics] == ["E510"]
    assert "heightfield-mesh" in a.diagnostics[0].message and a.diagnostics[0].hint


def two_pendulums(spacing: float, length: float, limit_deg: float | None) -> str:
    rng = f", range: [{-limit_deg} deg, {limit_deg} deg]" if limit_deg is not None else ""
    return f"""
bodies:
  - {{name: left, pos: [0, 0, {-length}], colliders: [{{name: lb, sphere: {{radius: 0.1}}}}]}}
  - {{name: right, pos: [{spacing}, 0, {-length}], colliders: [{{name: rb, sphere: {{radius: 0.1}}}}]}}
joints:
  - {{name: jl, kind: hinge, child: left, anchor: [0, 0, {length}], axis: [0, 1, 0]{rng}}}
  - {{name: jr, kind: hinge, child: right, anchor: [0, 0, {length}], axis: [0, 1, 0]{rng}}}
"""


def test_unreachable_pruned_when_limits_keep_them_apart():
    # Bobs 1 m below pivots 2.5 m apart, ±30°, widened by the pass's 60° slack to ±90°: the closest
    # they come is 2.5 − 2·sin 90° = 0.5 m > 0.2 m.
    from scenec.compiler.passes import separation

    assert separation.HINGE_SLACK == pytest.approx(np.radians(60.0))
    assert verdicts(two_pendulums(2.5, 1.0, 30))[pair("lb", "rb")] == "unreachable"
    # 2 m apart they would meet at ±90° (2 − 2 = 0 < 0.2 m), though not within the authored ±30°.
    assert verdicts(two_pendulums(2.0, 1.0, 30))[pair("lb", "rb")] == "kept"


def test_reachable_kept():
    # Unlimited hinges: both bobs sweep circles of radius 1 m around pivots 1.5 m apart; they can meet.
    assert verdicts(two_pendulums(1.5, 1.0, None))[pair("lb", "rb")] == "kept"
    # ±60°: each bob reaches sin 60° = 0.87 m sideways, so 2·0.87 > 1.5 − 0.2: they can meet.
    assert verdicts(two_pendulums(1.5, 1.0, 60))[pair("lb", "rb")] == "kept"


def test_free_joint_is_never_unreachable():
    text = two_pendulums(50.0, 1.0, 10).replace("kind: hinge, child: left", "kind: free, child: left")
    text = text.replace(", anchor: [0, 0, 1.0], axis: [0, 1, 0], range: [-10 deg, 10 deg]}\n  - {name: jr",
                        "}\n  - {name: jr", 1)
    assert verdicts(text)[pair("lb", "rb")] == "kept"


# --- sampling: pruned pairs never overlap --------------------------------------------------------

SPIDER = """
# A static hub with four two-link legs on limited hinges; every collider pair is a candidate.
contacts: {filter_parent: false}
bodies:
  - {name: hub, colliders: [{name: hub, sphere: {radius: 0.15}}]}
""" + "".join(f"""
  - {{name: thigh{k}, pos: [{0.3 * c:.4f}, {0.3 * s:.4f}, 0], colliders: [{{name: thigh{k}, capsule: {{radius: 0.04, fromto: [0, 0, 0, {0.3 * c:.4f}, {0.3 * s:.4f}, 0]}}}}]}}
  - {{name: shin{k}, pos: [{0.6 * c:.4f}, {0.6 * s:.4f}, 0], colliders: [{{name: shin{k}, capsule: {{radius: 0.04, fromto: [0, 0, 0, {0.4 * c:.4f}, {0.4 * s:.4f}, -0.1]}}}}]}}"""
    for k, (c, s) in enumerate([(1, 0), (0, 1), (-1, 0), (0, -1)])) + """
joints:
""" + "".join(f"""
  - {{name: hip{k}, parent: hub, child: thigh{k}, axis: [0, 0, 1], range: [-40 deg, 40 deg]}}
  - {{name: knee{k}, parent: thigh{k}, child: shin{k}, axis: [{-s}, {c}, 0], range: [-20 deg, 90 deg]}}"""
    for k, (c, s) in enumerate([(1, 0), (0, 1), (-1, 0), (0, -1)]))


def _segment_distance(p0, p1, q0, q1) -> float:
    """Exact distance between segments [p0, p1] and [q0, q1] (minimise over the unit square)."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e, f = d1 @ d1, d2 @ d2, d2 @ r
    c, b = d1 @ r, d1 @ d2
    candidates = []
    for s in (0.0, 1.0):   # edges of the square, then the interior stationary point
        candidates.append((s, np.clip((b * s + f) / e, 0, 1) if e > 0 else 0.0))
    for t in (0.0, 1.0):
        candidates.append((np.clip((b * t - c) / a, 0, 1) if a > 0 else 0.0, t))
    den = a * e - b * b
    if den > 1e-12:
        s = (b * f - c * e) / den
        t = (a * f - b * c) / den
        if 0 <= s <= 1 and 0 <= t <= 1:
            candidates.append((s, t))
    return min(float(np.linalg.norm(p0 + s * d1 - q0 - t * d2)) for s, t in candidates)


def _sampled_gaps(c, names, samples: int, seed: int = 1) -> dict:
    """The smallest gap (segment distance − radii) each named collider pair shows over `samples` joint
    configurations, poses from the runtime's kinematics: hinge and slide values drawn in their ranges
    widened by the pass's slack, a quarter of them with every joint at one end of that range (where
    reaches are longest); free joints at their initial pose."""
    import jax.numpy as jnp

    from scenec.compiler.passes import separation
    from scenec.runtime import kinematics
    from scenec.runtime.types import JointKind

    m = c.model
    rng = np.random.default_rng(seed)
    kind = np.asarray(m.jnt_kind.array)
    rng_lo, rng_hi = np.asarray(m.jnt_range, np.float64).T
    q = np.repeat(np.asarray(m.q0, np.float64)[None], samples, 0)
    corner = np.arange(samples) < samples // 4
    for j in np.flatnonzero((kind == JointKind.HINGE) | (kind == JointKind.SLIDE)):
        slack = (separation.HINGE_SLACK if kind[j] == JointKind.HINGE
                 else separation.SLIDE_SLACK * (rng_hi[j] - rng_lo[j]))
        lo, hi = rng_lo[j] - slack, rng_hi[j] + slack
        value = rng.uniform(lo, hi, samples)
        q[:, m.jnt_qpos_adr.array[j]] = np.where(corner, np.where(rng.random(samples) < 0.5, lo, hi), value)
    f = kinematics.forward_kinematics(m, jnp.asarray(q.T, jnp.float32))
    gpos, gmat = kinematics.geom_poses(m, f)
    gpos = np.moveaxis(np.asarray(gpos, np.float64), -1, 0)          # (S, ngeom, 3)
    gmat = np.moveaxis(np.asarray(gmat, np.float64), -1, 0)          # (S, ngeom, 3, 3)
    size = np.asarray(m.geom_size, np.float64)
    shape = np.asarray(m.geom_shape.array)
    index = {n: g for g, n in enumerate(m.geom_names)}

    def segment(sample, g):
        half = size[g, 1] if shape[g] == 3 else 0.0                  # capsule axis, sphere a point
        axis = gmat[sample, g][:, 2] * half
        return gpos[sample, g] - axis, gpos[sample, g] + axis, size[g, 0]

    gaps = {}
    for a, b in names:
        g1, g2 = index[a], index[b]
        gap = np.inf
        for k in range(samples):
            a0, a1, r1 = segment(k, g1)
            b0, b1, r2 = segment(k, g2)
            gap = min(gap, _segment_distance(a0, a1, b0, b1) - r1 - r2)
        gaps[(a, b)] = gap
    return gaps


def test_pruned_pairs_never_overlap_in_random_configurations():
    c = api.compile(SPIDER, measure_jit=False)
    pruned = [(v.collider1, v.collider2) for v in c.ir.pairs if v.reason == "unreachable"]
    assert len(pruned) >= 8, "the spider should let the pass prune non-neighbouring legs"
    gaps = _sampled_gaps(c, pruned, 3000)
    assert all(g > 0 for g in gaps.values()), {k: g for k, g in gaps.items() if g <= 0}


def test_humanoid_pruned_pairs_stay_apart_past_their_limits():
    # The shipped Humanoid: head–butt is proven apart by the branch-and-bound search alone (their
    # bounding balls overlap once the abdomen's ranges are widened). No sampled configuration, ranges
    # widened by the slack and their corners included, may bring a pruned pair together.
    c = api.compile("scenes/humanoid.yaml", measure_jit=False)
    pruned = [(v.collider1, v.collider2) for v in c.ir.pairs if v.reason == "unreachable"]
    assert ("head", "butt") in pruned
    gaps = _sampled_gaps(c, pruned, 2000)
    assert all(g > 0 for g in gaps.values()), {k: g for k, g in gaps.items() if g <= 0}


def test_segment_distance_matches_the_exhaustive_reference():
    from scenec.compiler.passes.separation import segment_distance

    rng = np.random.default_rng(3)
    n = 400
    p0, p1, q0, q1 = (rng.normal(size=(n, 3)) for _ in range(4))
    p1[:50] = p0[:50]                                  # points against segments
    q1[50:100] = q0[50:100]
    p1[100:120], q1[100:120] = p0[100:120], q0[100:120]     # two points
    q0[120:170] = p0[120:170] + [0.0, 0.3, 0.0]        # parallel segments, overlapping or not
    q1[120:170] = p1[120:170] + [0.0, 0.3, 0.0] + 0.5 * (p1[120:170] - p0[120:170]) * rng.uniform(-3, 3, (50, 1))
    got = segment_distance(p0, p1, q0, q1)
    want = np.array([_segment_distance(*(x[i] for x in (p0, p1, q0, q1))) for i in range(n)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def rods(axis: str) -> str:
    """Two 1 m rods (capsules of radius 0.05) hanging from unlimited hinges 0.5 m apart along x."""
    return f"""
bodies:
  - {{name: a, pos: [0, 0, -0.5], colliders: [{{name: ra, capsule: {{radius: 0.05, half_length: 0.5}}}}]}}
  - {{name: b, pos: [0.5, 0, -0.5], colliders: [{{name: rb, capsule: {{radius: 0.05, half_length: 0.5}}}}]}}
joints:
  - {{name: ja, kind: hinge, child: a, anchor: [0, 0, 0.5], axis: {axis}}}
  - {{name: jb, kind: hinge, child: b, anchor: [0, 0, 0.5], axis: {axis}}}
"""


def test_rods_swinging_in_parallel_planes_are_proven_apart():
    # Axes along x: each rod swings in its own plane x = 0 or x = 0.5, so they stay 0.5 m − 0.1 m
    # apart at every angle, although each one's swept bounding ball reaches the other (the ball test
    # alone keeps them).
    assert verdicts(rods("[1, 0, 0]"))[pair("ra", "rb")] == "unreachable"


def test_rods_swinging_towards_each_other_are_kept():
    # Axes along y: both swing in the plane y = 0 and cross (a at +30° and b at −30° from the vertical).
    assert verdicts(rods("[0, 1, 0]"))[pair("ra", "rb")] == "kept"
