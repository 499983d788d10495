"""Properties of every kernel: no cond/while in its jaxpr (alone, under vmap, differentiated), finite
gradients in ordinary and degenerate configurations, invariance under rigid motions, and symmetry
when the two colliders swap."""

from __future__ import annotations

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest

import collision_cases as K
import collision_reference as R
from scenec.runtime import collision, collision_data
from scenec.runtime.collision_table import Shape

# float32: distances after a rigid motion of metre-size scenes agree to a few 1e-7 m; points pass
# through two more rotations.
DIST_TOL = 1e-5
POS_TOL = 1e-4
PAIRS = K.all_pairs()
IDS = [p[2] for p in PAIRS]


@pytest.fixture(autouse=True)
def strict_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def primitives(jaxpr):
    """Names of all primitives in a jaxpr, recursing into sub-jaxprs (pjit, custom_jvp, scan, ...)."""
    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.primitive.name)
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    names += primitives(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    names += primitives(sub)
    return names


def kernel_loss(name):
    """A scalar of every output row, as a function of the two colliders' poses (and the rest); the
    contact rows come along as auxiliary output."""
    def f(pos1, mat1, pos2, mat2, g1, g2, w_pos, w_normal):
        c = collision.KERNELS[name](g1._replace(pos=pos1, mat=mat1), g2._replace(pos=pos2, mat=mat2))
        return jnp.sum(jnp.where(c.active, c.dist, 0.0)) + jnp.sum(
            jnp.where(c.active[:, None], c.pos * w_pos + c.normal * w_normal, 0.0)), c
    return f


def pose_grad(name):
    """((loss, contact rows), gradients with respect to both poses)."""
    return jax.value_and_grad(kernel_loss(name), argnums=(0, 1, 2, 3), has_aux=True)


@pytest.mark.parametrize("a,b,name,ncon", PAIRS, ids=IDS)
def test_branch_free(a, b, name, ncon):
    g1, g2 = example_pairs(a, b, 1)[0]
    kernel = collision.KERNELS[name]
    batch1, batch2 = K.stack([g1, g1]), K.stack([g2, g2])
    w = jnp.ones(3, jnp.float32)
    jaxprs = [jax.make_jaxpr(kernel)(g1, g2), jax.make_jaxpr(jax.vmap(kernel))(batch1, batch2),
              jax.make_jaxpr(pose_grad(name))(g1.pos, g1.mat, g2.pos, g2.mat, g1, g2, w, w)]
    for jx in jaxprs:
        names = set(primitives(jx.jaxpr))
        assert not names & {"cond", "while"}, names & {"cond", "while"}


# --- configurations, ordinary and degenerate -------------------------------------------------------

def cube_hull():
    return collision_data.box_mesh_triangles([0.3, 0.3, 0.3])


def example_pairs(a: Shape, b: Shape, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [K.example_pair(a, b, rng, gap=rng.uniform(-0.2, 0.2)) for _ in range(n)]


def degenerate_pairs(a: Shape, b: Shape):
    """Configurations where a naive kernel divides by zero or normalises a zero vector."""
    eye = np.eye(3)
    sizes = {Shape.SPHERE: [0.3, 0, 0], Shape.CAPSULE: [0.2, 0.3, 0], Shape.BOX: [0.3, 0.3, 0.3],
             Shape.MESH: [0, 0, 0]}
    half_height = {Shape.SPHERE: 0.3, Shape.CAPSULE: 0.5, Shape.BOX: 0.3, Shape.MESH: 0.3}
    mesh = K.mesh_data(*cube_hull())

    def g(shape, pos, mat=eye):
        return K.geom(pos, mat, sizes[shape], mesh=mesh if shape == Shape.MESH else None)

    if a == Shape.PLANE:
        plane = K.geom([0, 0, 0], eye, K.PLANE_SIZE)
        # Centre on the plane; resting exactly, axis-aligned (ties between corners and vertices).
        return [(plane, g(b, [0, 0, 0])), (plane, g(b, [0, 0, half_height[b]]))]
    if a == Shape.HEIGHTFIELD:
        flat = collision_data.heightfield_data(np.zeros((9, 9)), 2.0, 2.0, reach=1.2)   # as example_pair's
        hf = K.geom([0, 0, 0], eye, [2.0, 2.0, 0], hfield=flat)
        # Centre on a grid vertex on the surface; resting exactly on it.
        return [(hf, g(b, [0, 0, 0])), (hf, g(b, [0, 0, half_height[b]])), (hf, g(b, [0.5, 0.5, 0.1]))]
    lying = R.rotation_about([0, 1, 0], np.pi / 2)
    return [
        (g(a, [0, 0, 0]), g(b, [0, 0, 0])),                                  # coincident, aligned
        (g(a, [0.1, 0.2, 0.3], lying), g(b, [0.1, 0.2, 0.3], lying)),        # coincident, parallel axes
        (g(a, [0, 0, 0]), g(b, [0, 0, half_height[a] + half_height[b]])),    # touching face to face
        (g(a, [0, 0, 0], lying), g(b, [0.1, 0, 0.45], lying)),               # parallel, overlapping
    ]


@pytest.mark.parametrize("a,b,name,ncon", PAIRS, ids=IDS)
def test_gradients_are_finite(a, b, name, ncon):
    pairs = example_pairs(a, b, 4) + degenerate_pairs(a, b)
    g1, g2 = K.stack([p[0] for p in pairs]), K.stack([p[1] for p in pairs])
    rng = np.random.default_rng(0)
    w_pos = jnp.asarray(rng.normal(size=(len(pairs), 3)), jnp.float32)
    w_normal = jnp.asarray(rng.normal(size=(len(pairs), 3)), jnp.float32)
    args = (g1.pos, g1.mat, g2.pos, g2.mat, g1, g2, w_pos, w_normal)
    # Compiling the backward pass dominates this test; LLVM's optimisations do not change whether a
    # value is finite, and skipping them halves the compile time.
    lowered = jax.jit(jax.vmap(pose_grad(name))).lower(*args)
    (_, out), grad = lowered.compile({"xla_backend_optimization_level": 0})(*args)
    for leaf in jax.tree.leaves(grad):
        assert np.all(np.isfinite(np.asarray(leaf)))
    # The kernels' own outputs are finite there too.
    for x in (out.dist, out.pos, out.normal):
        assert np.all(np.isfinite(np.asarray(x)))


def moved(g: collision.Geom, rot, shift) -> collision.Geom:
    return g._replace(pos=jnp.asarray(rot @ np.asarray(g.pos) + shift, jnp.float32),
                      mat=jnp.asarray(rot @ np.asarray(g.mat), jnp.float32))


@pytest.mark.parametrize("a,b,name,ncon", PAIRS, ids=IDS)
def test_rigid_motion_moves_contacts_along(a, b, name, ncon):
    pairs = example_pairs(a, b, 8, seed=1)
    rng = np.random.default_rng(2)
    rot, shift = R.random_rotation(rng), rng.normal(size=3)
    out = K.run(name, pairs)
    out_m = K.run(name, [(moved(g1, rot, shift), moved(g2, rot, shift)) for g1, g2 in pairs])
    np.testing.assert_array_equal(out.active, out_m.active)
    act = out.active
    np.testing.assert_allclose(out_m.dist[act], out.dist[act], atol=DIST_TOL)
    np.testing.assert_allclose(out_m.pos[act], out.pos[act] @ rot.T + shift, atol=POS_TOL)
    np.testing.assert_allclose(out_m.normal[act], out.normal[act] @ rot.T, atol=POS_TOL)


SAME = [p for p in PAIRS if p[0] == p[1]]


@pytest.mark.parametrize("a,b,name,ncon", SAME, ids=[p[2] for p in SAME])
def test_swapping_colliders_flips_the_normal(a, b, name, ncon):
    pairs = example_pairs(a, b, 12, seed=3)
    out = K.run(name, pairs)
    out_s = K.run(name, [(g2, g1) for g1, g2 in pairs])
    d, d_s = K.min_active(out), K.min_active(out_s)
    # Hulls may settle a tie between axes differently in either order (FACE_PREFERENCE of the radius).
    tol = DIST_TOL + (2 * collision.FACE_PREFERENCE * 1.0 if a in (Shape.BOX, Shape.MESH) else 0.0)
    over = d < 0
    np.testing.assert_allclose(d_s[over], d[over], atol=tol)
    for i in np.flatnonzero(over):
        n = out.normal[i, np.argmin(np.where(out.active[i], out.dist[i], np.inf))]
        n_s = out_s.normal[i, np.argmin(np.where(out_s.active[i], out_s.dist[i], np.inf))]
        assert n @ n_s < -0.99
