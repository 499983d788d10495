"""Small vector, quaternion and spatial-algebra helpers used by the traced step.

Where it sits: leaf module of `scenec.runtime`; everything here is jnp arithmetic on trailing component
axes (`(..., 3)` vectors, `(..., 4)` quaternions w, x, y, z, `(..., 3, 3)` matrices), so the same code
serves one environment and a batch. Products of 3-vectors are written as broadcasts and sums rather than
`dot`/`matmul` so that XLA keeps them inside elementwise fusions.

Spatial vectors are 6-vectors `[angular; linear]` expressed in a world-aligned frame at a reference point
(the kinematic tree's centre of mass at the start of the step), as in Featherstone's notation.
"""

from __future__ import annotations

import jax.numpy as jnp


def safe_norm(v, axis=-1, keepdims=False):
    """Euclidean norm whose gradient is finite at zero (the double-`where` trick)."""
    sq = jnp.sum(v * v, axis=axis, keepdims=True)
    nonzero = sq > 0
    safe_sq = jnp.where(nonzero, sq, 1.0)
    n = jnp.where(nonzero, jnp.sqrt(safe_sq), 0.0)
    return n if keepdims else jnp.squeeze(n, axis)


def normalize(v, axis=-1):
    n = safe_norm(v, axis=axis, keepdims=True)
    return v / jnp.where(n > 0, n, 1.0)


def cross(a, b):
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return jnp.stack([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx], axis=-1)


def dot(a, b):
    return jnp.sum(a * b, axis=-1)


def matvec(m, v):
    """(…, 3, 3) @ (…, 3)."""
    return jnp.sum(m * v[..., None, :], axis=-1)


def matTvec(m, v):
    """(…, 3, 3)ᵀ @ (…, 3)."""
    return jnp.sum(m * v[..., :, None], axis=-2)


def matmul(a, b):
    """(…, 3, 3) @ (…, 3, 3)."""
    return jnp.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


# ---------------------------------------------------------------------------------------- quaternions


def quat_mul(p, q):
    pw, px, py, pz = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    qw, qx, qy, qz = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return jnp.stack([
        pw * qw - px * qx - py * qy - pz * qz,
        pw * qx + px * qw + py * qz - pz * qy,
        pw * qy - px * qz + py * qw + pz * qx,
        pw * qz + px * qy - py * qx + pz * qw,
    ], axis=-1)


def quat_conj(q):
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def quat_rotate(q, v):
    """Rotate 3-vector v by unit quaternion q: v + 2w (u × v) + 2 u × (u × v)."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def quat_to_mat(q):
    """Rotation matrix of a unit quaternion; columns are the rotated x, y, z axes."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = [
        jnp.stack([1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)], axis=-1),
        jnp.stack([2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)], axis=-1),
        jnp.stack([2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)], axis=-1),
    ]
    return jnp.stack(rows, axis=-2)


def axis_angle_quat(axis, angle):
    """Quaternion of a rotation by `angle` (rad) about unit `axis`."""
    half = 0.5 * angle
    return jnp.concatenate([jnp.cos(half)[..., None], axis * jnp.sin(half)[..., None]], axis=-1)


def quat_integrate(q, omega_local, dt):
    """q ⊗ exp(ω dt / 2) for a body-frame angular velocity ω: exact for constant ω over dt."""
    angle = safe_norm(omega_local) * dt
    safe_angle = jnp.where(angle > 0, angle, 1.0)
    axis = omega_local * dt / safe_angle[..., None]
    axis = jnp.where((angle > 0)[..., None], axis, jnp.zeros_like(axis))
    dq = axis_angle_quat(axis, angle)
    return normalize(quat_mul(q, dq))


# ------------------------------------------------------------------------------------- spatial algebra


def motion_cross_motion(v, m):
    """v ×ₘ m for spatial motion vectors [ω; v]: [ω×mω; ω×mv + v×mω]."""
    w, vl = v[..., :3], v[..., 3:]
    mw, mv = m[..., :3], m[..., 3:]
    return jnp.concatenate([cross(w, mw), cross(w, mv) + cross(vl, mw)], axis=-1)


def motion_cross_force(v, f):
    """v ×* f for a spatial force f = [n; f]: [ω×n + v×f; ω×f]."""
    w, vl = v[..., :3], v[..., 3:]
    fn, fl = f[..., :3], f[..., 3:]
    return jnp.concatenate([cross(w, fn) + cross(vl, fl), cross(w, fl)], axis=-1)


def inertia_apply(inert, v):
    """Spatial inertia (packed as rot (…,3,3) about the reference point, h = m·c (…,3), m (…)) times v.

    With c the centre of mass relative to the reference point: f = [I ω + h × v; m v − h × ω].
    """
    rot, h, m = inert
    w, vl = v[..., :3], v[..., 3:]
    return jnp.concatenate([matvec(rot, w) + cross(h, vl), m[..., None] * vl - cross(h, w)], axis=-1)
