"""Vector, quaternion and spatial-algebra helpers for the traced step, batch axis last.

Where it sits: leaf module of `scenec.runtime`. Inside the step every array is laid out as
`(*entity axes, components, B)`: the batch of environments is the last (contiguous) axis, so every
operation is a vector operation across environments, which is what a CPU's SIMD units and a GPU's
threads want (a batch-first layout made XLA's CPU code 3–6× slower on these small per-environment
shapes; see tools/bench notes). A 3-vector is `(..., 3, B)`, a quaternion (w, x, y, z) `(..., 4, B)`,
a 3×3 matrix `(..., 3, 3, B)` (row, column), a spatial vector [angular; linear] `(..., 6, B)`.
Model constants have no batch axis; `c(x)` appends one so they broadcast.

Products are written out component by component (no `dot`/`matmul` on 3-vectors) so that XLA keeps them
inside elementwise fusions. The components are taken as `(..., 1, B)` slices (`part`) and joined with
one concatenation, with no reshape in between: each reshape is a step XLA's simplifier has to move out
of the way again (Ant: 6,146 → 5,320 StableHLO operations, XLA compile 2.45 → 2.27 s; same run speed).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def zeros_like_batch(shape, ref):
    """Zeros of `shape` with `ref`'s dtype that vary over the same manual mesh axes as `ref` (inside a
    caller's `shard_map`, a scan's initial carry must have the type its body returns)."""
    z = jnp.zeros(shape, ref.dtype)
    axes = tuple(sorted(jax.typeof(ref).manual_axis_type.varying))     # empty outside a shard_map
    return jax.lax.pcast(z, axes, to="varying") if axes else z


def place_rows(values, index, n):
    """An (n, ...) array whose row r is the sum of the rows values[i] with index[i] == r (zeros where
    none): a scatter-add with a static numpy index, built from slices and one concatenation, because
    XLA's CPU backend runs a scatter as a sequential loop of its own (Ant: 5% of the step)."""
    index = np.asarray(index, int)
    zero = jnp.zeros((1,) + values.shape[1:], values.dtype)
    pieces, r = [], 0
    while r < n:
        src = np.flatnonzero(index == r)
        if len(src) != 1:
            pieces.append(sum((values[i:i + 1] for i in src[1:]), values[src[0]:src[0] + 1]) if len(src) else zero)
            r += 1
            continue
        # a run of rows each fed by exactly one source, the sources consecutive: one slice
        start, length = int(src[0]), 1
        while r + length < n and list(np.flatnonzero(index == r + length)) == [start + length]:
            length += 1
        pieces.append(values[start:start + length])
        r += length
    return jnp.concatenate(pieces) if len(pieces) > 1 else pieces[0]


def by_halves(rows_of, n):
    """rows_of(slice(0, n)) (an array or a tuple of arrays with n rows), computed as its two halves
    joined along the first axis: so that XLA does not write the result over an operand.

    XLA's CPU backend writes an elementwise result over an operand of its shape that dies there. LLVM
    vectorizes the fused loop only behind a run-time check that its output overlaps none of its
    inputs, so an in-place result runs the loop's scalar copy: 2.4–2.6 µs against 0.8 µs for a contact
    block's velocity update (64 environments), and 19 µs for a 52-pair step of the capsules' closest
    points (`tools/profile_scopes.py`; the capsule kernels have since dropped that step). A loop that reads its operands through slices cannot write over
    them and takes a new buffer; the values are the same. Used for the limit sweep's and the
    straight-line contact sweep's velocity updates and the closest points of a segment and many edges
    (`collision._closest_segments`); against
    `python tools/ablate.py SCENE --repeats 9 in_place=1` (all of them in one piece again), batch 1024:
    Ant 1.05×, half_cheetah 1.06×, Humanoid 1.03×, grasp 1.05×."""
    if n < 2:
        return rows_of(slice(0, n))
    half = n // 2
    first, second = rows_of(slice(0, half)), rows_of(slice(half, n))
    return jax.tree_util.tree_map(lambda x, y: jnp.concatenate([x, y]), first, second)


def where(cond, x, y):
    """jnp.where(cond, x, y) written as one `lax.select_n` of operands broadcast to a common shape (and
    promoted to a common dtype as jnp.where promotes them: a Python number takes the array's).

    jnp.where is a jitted function: each call is a call of its own in the lowered module (a function in
    StableHLO that Shardy carries and XLA inlines again), 55 of them in Ant's step; the select is the
    same operation without the call, and the same gradient. Against jnp.where everywhere in the
    step, fresh processes in turn (`python tools/compile_phases.py`-style cold compiles): Ant's trace
    + XLA compile about 0.05 s shorter."""
    dtype = jnp.result_type(x, y)
    shape = jnp.broadcast_shapes(jnp.shape(cond), jnp.shape(x), jnp.shape(y))

    def spread(v, t):
        if isinstance(v, (bool, int, float)):
            return jax.lax.full(shape, v, t)
        v = jnp.asarray(v, t)
        return v if v.shape == shape else jnp.broadcast_to(v, shape)

    return jax.lax.select_n(spread(cond, jnp.bool_), spread(y, dtype), spread(x, dtype))


def take(x, index):
    """x[index] for a static numpy index into x's first axis, every entry in range: a slice where
    the index is a run of consecutive rows, else one gather. jnp's indexing with a numpy array adds
    the wrapping of negative entries (an add, a select and a broadcast of constants, folded only by
    XLA) to each gather."""
    index = np.asarray(index)
    if isinstance(x, np.ndarray) or not np.issubdtype(index.dtype, np.integer):
        return x[index]
    if index.ndim != 1:
        flat = take(x, index.reshape(-1))
        return flat.reshape(index.shape + flat.shape[1:])
    n = index.size
    if n and np.array_equal(index, index[0] + np.arange(n)):
        return jax.lax.slice_in_dim(x, int(index[0]), int(index[0]) + n)
    x = jnp.asarray(x)
    dims = jax.lax.GatherDimensionNumbers(offset_dims=tuple(range(1, x.ndim)), collapsed_slice_dims=(0,),
                                          start_index_map=(0,))
    return jax.lax.gather(x, jnp.asarray(index[:, None], jnp.int32), dims, (1,) + x.shape[1:],
                          indices_are_sorted=bool(np.all(np.diff(index) >= 0)),
                          unique_indices=len(set(index.tolist())) == n,
                          mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def clip(x, lo, hi):
    """jnp.clip(x, lo, hi) (the same maximum, then minimum) without its jitted call (see `where`)."""
    return jnp.minimum(hi, jnp.maximum(lo, x))


def total(terms):
    """The sum of a non-empty sequence of arrays, first to last: Python's `sum` starts from 0, one more
    operation (an add of a literal zero) in the traced program for each sum."""
    terms = list(terms)
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def c(x):
    """A model constant (no batch axis) made to broadcast against batch-last arrays."""
    return jnp.asarray(x)[..., None]


def part(v, i):
    """Component i of vectors `(..., n, B)`, kept as `(..., 1, B)`."""
    return jax.lax.slice_in_dim(v, i, i + 1, axis=v.ndim - 2)


def join(*parts):
    """Components `(..., 1, B)` joined into vectors `(..., n, B)`."""
    return jnp.concatenate(parts, axis=-2)


def dot(a, b):
    """(…, n, B) · (…, n, B) → (…, B)."""
    n = a.shape[-2]
    out = part(a, 0) * part(b, 0)
    for i in range(1, n):
        out = out + part(a, i) * part(b, i)
    return out[..., 0, :]


def cross(a, b):
    ax, ay, az = part(a, 0), part(a, 1), part(a, 2)
    bx, by, bz = part(b, 0), part(b, 1), part(b, 2)
    return join(ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx)


def safe_norm(v):
    """Euclidean norm over the component axis, with a finite gradient at zero (double `where`)."""
    sq = dot(v, v)
    nonzero = sq > 0
    return where(nonzero, jnp.sqrt(where(nonzero, sq, 1.0)), 0.0)


def normalize(v):
    n = safe_norm(v)[..., None, :]
    return v / where(n > 0, n, 1.0)


def matvec(m, v):
    """(…, 3, 3, B) @ (…, 3, B)."""
    return total(m[..., :, j, :] * part(v, j) for j in range(3))


def matmul(a, b):
    """(…, 3, 3, B) @ (…, 3, 3, B)."""
    return total(a[..., :, k:k + 1, :] * b[..., k:k + 1, :, :] for k in range(3))


def transpose(m):
    return jnp.swapaxes(m, -3, -2)


# ---------------------------------------------------------------------------------------- quaternions


def quat_mul(p, q):
    pw, px, py, pz = (part(p, i) for i in range(4))
    qw, qx, qy, qz = (part(q, i) for i in range(4))
    return join(pw * qw - px * qx - py * qy - pz * qz,
               pw * qx + px * qw + py * qz - pz * qy,
               pw * qy - px * qz + py * qw + pz * qx,
               pw * qz + px * qy - py * qx + pz * qw)


def quat_rotate(q, v):
    """Rotate v by unit quaternion q: v + 2w (u × v) + 2 u × (u × v)."""
    w = q[..., 0:1, :]
    u = q[..., 1:, :]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def quat_to_mat(q):
    """Rotation matrix of a unit quaternion; columns are the rotated x, y, z axes."""
    w, x, y, z = (part(q, i) for i in range(4))
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = [join(1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)),
            join(2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)),
            join(2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy))]
    return jnp.stack(rows, axis=-3)


def quat_z_axis(q):
    """The third column of `quat_to_mat(q)` (the rotated z axis) alone: where nothing else of the
    rotation is needed, XLA then computes only this column (collide's `constraints.collider_poses`).
    `quat_to_mat` keeps its own copy of these products: built as a stack of three columns, the third
    from this function, it added 74 instructions to Ant's optimised step (kinematics 1,090 → 1,164;
    `python tools/compile_phases.py scenes/ant.yaml`), run speed alike (×0.997, ×0.989)."""
    w, x, y, z = (part(q, i) for i in range(4))
    return join(2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y))


def axis_angle_quat(axis, angle):
    """Quaternion of a rotation by `angle` (…, B) about unit `axis` (…, 3, B or 1)."""
    half = 0.5 * angle
    return jnp.concatenate([jnp.cos(half)[..., None, :], axis * jnp.sin(half)[..., None, :]], axis=-2)


def quat_integrate(q, omega, dt):
    """q ⊗ exp(ω·dt/2) for a body-frame angular velocity ω (…, 3, B): exact for constant ω over dt."""
    angle = safe_norm(omega) * dt
    safe = where(angle > 0, angle, 1.0)
    axis = where((angle > 0)[..., None, :], omega * dt / safe[..., None, :], 0.0)
    return normalize(quat_mul(q, axis_angle_quat(axis, angle)))


# ------------------------------------------------------------------------------------- spatial algebra


def motion_cross_motion(v, m):
    """v ×ₘ m for spatial motion vectors [ω; v]: [ω × mω; ω × mv + v × mω]."""
    w, vl = v[..., :3, :], v[..., 3:, :]
    mw, mv = m[..., :3, :], m[..., 3:, :]
    return jnp.concatenate([cross(w, mw), cross(w, mv) + cross(vl, mw)], axis=-2)


def motion_cross_force(v, f):
    """v ×* f for a spatial force f = [n; f]: [ω × n + v × f; ω × f]."""
    w, vl = v[..., :3, :], v[..., 3:, :]
    fn, fl = f[..., :3, :], f[..., 3:, :]
    return jnp.concatenate([cross(w, fn) + cross(vl, fl), cross(w, fl)], axis=-2)


def inertia_apply(inert, v):
    """Spatial inertia (I about the reference point (…, 3, 3, B), h = m·c (…, 3, B), m (…, B)) times
    a motion vector v: [I·ω + h × v; m·v − h × ω], with c the com relative to the reference point."""
    rot, h, m = inert
    w, vl = v[..., :3, :], v[..., 3:, :]
    return jnp.concatenate([matvec(rot, w) + cross(h, vl), m[..., None, :] * vl - cross(h, w)], axis=-2)
