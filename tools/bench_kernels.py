"""Cost of each collision kernel: XLA FLOPs for one pair, and microseconds per pair under vmap.

Usage: python tools/bench_kernels.py [--batch 4096] [--repeats 20] [--kernels box_box,plane_box]
       python tools/bench_kernels.py --select [--repeats 20]

For every kernel in `collision.KERNELS` it builds `batch` random pairs near contact (meshes: random
12-point hulls padded to 16 vertices, 32 faces, 48 edges; height field: a 33 x 33 grid of 0.25 m
cells, with a window sized for the partner: 4 x 4 cells for spheres, 8 x 8 for capsules and boxes), compiles
`jit(vmap(kernel))`, and reports the best of `repeats` timed runs divided by the batch, the FLOPs XLA
estimates for one pair (`cost_analysis()` of the unbatched kernel), the compile time, and the contact
rows. Kernels in `collision.BATCHED` are also timed as the runtime calls them, once on all pairs with
x, y, z first and the batch last ("batched us"; "-" for the others, which the runtime vmaps). Not a
test: figures depend on the machine.

`--select` instead times the solver's choice of each environment's k nearest rows of n
(constraints._smallest) against `lax.top_k` on the same keys, for the sizes of the shipped scenes'
budgets (Ant: 8 of 25 contacts; Humanoid: 16 of 189 contacts, 8 of 17 limits) and two others, in tiles
of 128 environments with the batch last, as the step runs them, on one device.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial import ConvexHull

from scenec.runtime import collision, collision_data
from scenec.runtime.collision_table import PAIRS, Shape


def _rotations(rng, n):
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], axis=1)


def _hull(rng, npoint=12):
    pts = rng.normal(size=(npoint, 3)) * 0.3
    h = ConvexHull(pts)
    v = pts[h.vertices]
    return v, ConvexHull(v).simplices


# Height-field window reach per partner: the partners' largest bounding radius here (sphere r <= 0.3;
# capsule half length <= 0.4 plus r <= 0.2; box half diagonal <= 0.4 sqrt 3) plus 5 cm.
_REACH = {Shape.SPHERE: 0.35, Shape.CAPSULE: 0.65, Shape.BOX: 0.75}


def _geoms(shape: Shape, n: int, rng, near, partner: Shape | None = None):
    """n geoms of one shape, batched; `near` (n, 3) positions to put them at."""
    mat = _rotations(rng, n)
    mesh = hfield = None
    if shape == Shape.PLANE:
        size = np.tile([5.0, 5.0, 0.0], (n, 1))
        mat = np.tile(np.eye(3), (n, 1, 1))
    elif shape == Shape.SPHERE:
        size = np.stack([rng.uniform(0.1, 0.3, n), np.zeros(n), np.zeros(n)], -1)
    elif shape == Shape.CAPSULE:
        size = np.stack([rng.uniform(0.05, 0.2, n), rng.uniform(0.1, 0.4, n), np.zeros(n)], -1)
    elif shape == Shape.BOX:
        size = rng.uniform(0.1, 0.4, (n, 3))
    elif shape == Shape.MESH:
        size = np.zeros((n, 3))
        v, f = _hull(rng)
        budget = dict(vertex_budget=16, face_budget=32, edge_budget=48)
        data = collision_data.convex_mesh_data(v, f, **budget)
        mesh = jax.tree.map(lambda x: jnp.asarray(np.broadcast_to(x, (n,) + x.shape), jnp.float32), data)
    else:
        size = np.tile([4.0, 4.0, 0.0], (n, 1))
        mat = np.tile(np.eye(3), (n, 1, 1))
        elev = 0.1 * rng.normal(size=(33, 33))
        data = collision_data.heightfield_data(elev, 4.0, 4.0, reach=_REACH[partner])
        hfield = jax.tree.map(lambda x: jnp.asarray(np.broadcast_to(x, (n,) + x.shape)), data)
        hfield = hfield._replace(padded_elevation=hfield.padded_elevation.astype(jnp.float32))
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return collision.Geom(f32(near), f32(mat), f32(size), mesh, hfield)


def _pairs(a: Shape, b: Shape, n: int, seed: int):
    rng = np.random.default_rng(seed)
    ground = a in (Shape.PLANE, Shape.HEIGHTFIELD)
    p1 = np.zeros((n, 3)) if ground else rng.normal(size=(n, 3)) * 0.05
    offset = rng.normal(size=(n, 3))
    offset /= np.linalg.norm(offset, axis=1, keepdims=True)
    p2 = p1 + offset * rng.uniform(0.1, 0.6, (n, 1))
    if ground:
        p2 = np.concatenate([rng.uniform(-1, 1, (n, 2)), rng.uniform(0.0, 0.4, (n, 1))], -1)
    return _geoms(a, n, rng, p1, partner=b), _geoms(b, n, rng, p2)


def _one(g):
    return jax.tree.map(lambda x: x[0], g)


def bench(name: str, a: Shape, b: Shape, batch: int, repeats: int) -> dict:
    kernel = collision.KERNELS[name]
    g1, g2 = _pairs(a, b, batch, seed=int(a) * 10 + int(b))
    cost = jax.jit(kernel).lower(_one(g1), _one(g2)).compile().cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0]
    flops = float(cost.get("flops", float("nan"))) if cost else float("nan")
    f = jax.jit(jax.vmap(kernel))
    t0 = time.perf_counter()
    out = f(g1, g2)
    jax.block_until_ready(out)
    compile_s = time.perf_counter() - t0
    best = min(_timed(f, g1, g2) for _ in range(repeats))
    active = float(np.mean(np.sum(np.asarray(out.active), axis=1)))
    batched = float("nan")
    if name in collision.BATCHED:
        first = lambda g: g._replace(pos=g.pos.T, mat=jnp.moveaxis(g.mat, 0, -1), size=g.size.T)  # noqa: E731
        h1, h2 = first(g1), first(g2)
        fb = jax.jit(kernel)
        jax.block_until_ready(fb(h1, h2))
        batched = min(_timed(fb, h1, h2) for _ in range(repeats))
    return {"kernel": name, "ncon": out.dist.shape[1], "flops": flops, "us_per_pair": 1e6 * best / batch,
            "batched_us_per_pair": 1e6 * batched / batch, "compile_s": compile_s, "mean_active": active}


def _timed(f, *args):
    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    return time.perf_counter() - t0


SELECT_SIZES = ((17, 8), (25, 8), (64, 16), (189, 16), (400, 16))   # (n rows, k chosen)


def bench_select(repeats: int, tiles: int = 200, tile: int = 128) -> list[dict]:
    from scenec.runtime.constraints import _smallest

    out = []
    for n, k in SELECT_SIZES:
        key = jax.random.normal(jax.random.PRNGKey(n), (tiles, n, tile))
        ours = jax.jit(lambda x, k=k: jax.lax.map(lambda y: _smallest(y, k), x))
        sort = jax.jit(lambda x, k=k: jax.lax.map(lambda y: jax.lax.top_k(-y.T, k)[1].T, x))
        assert np.array_equal(np.asarray(ours(key)), np.asarray(sort(key))), (n, k)
        per_env = {name: 1e9 * min(_timed(f, key) for _ in range(repeats)) / (tiles * tile)
                   for name, f in (("smallest", ours), ("top_k", sort))}
        out.append({"n": n, "k": k, **per_env})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--kernels", default="", help="comma-separated kernel names (default: all)")
    parser.add_argument("--select", action="store_true", help="time the k-nearest-rows choice instead")
    args = parser.parse_args(argv)
    if args.select:
        print(f"jax {jax.__version__} on {jax.devices()[0].platform}; ns per environment, best of {args.repeats}")
        print(f"{'n':>4s} {'k':>3s} {'_smallest':>10s} {'top_k':>8s} {'top_k / _smallest':>18s}")
        for r in bench_select(args.repeats):
            print(f"{r['n']:4d} {r['k']:3d} {r['smallest']:10.1f} {r['top_k']:8.1f} {r['top_k'] / r['smallest']:18.2f}")
        return
    wanted = set(filter(None, args.kernels.split(",")))
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; batch {args.batch}")
    print(f"{'kernel':22s} {'ncon':>4s} {'flops/pair':>11s} {'us/pair':>9s} {'batched us':>10s} {'compile s':>9s} "
          f"{'active':>6s}")
    for (a, b), info in PAIRS.items():
        if wanted and info.kernel not in wanted:
            continue
        r = bench(info.kernel, a, b, args.batch, args.repeats)
        fast = r["batched_us_per_pair"]
        print(f"{r['kernel']:22s} {r['ncon']:4d} {r['flops']:11.0f} {r['us_per_pair']:9.3f} "
              f"{'-' if np.isnan(fast) else f'{fast:.3f}':>10s} {r['compile_s']:9.2f} {r['mean_active']:6.2f}")


if __name__ == "__main__":
    main()
