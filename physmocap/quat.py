"""Batched quaternion maths on ``(..., 4)`` arrays in xyzw order (scalar last).

Every function broadcasts over leading axes, so one call handles all frames and joints.
Unit quaternions are assumed where rotations are meant; ``normalize`` makes them so.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "identity", "normalize", "mul", "conj", "inv", "rotate", "inv_rotate", "abs_w",
    "from_axis_angle", "to_scaled_axis", "from_scaled_axis", "angle", "slerp",
    "between", "to_matrix", "from_matrix", "from_wxyz", "to_wxyz", "unroll",
]


def identity(shape: tuple[int, ...] = ()) -> np.ndarray:
    """Identity rotations, shape ``shape + (4,)``."""
    q = np.zeros(tuple(shape) + (4,))
    q[..., 3] = 1.0
    return q


def normalize(q: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """``q / |q|``; shape ``(..., 4)``."""
    q = np.asarray(q, dtype=float)
    if q.shape == (4,):                      # one quaternion: plain floats, bit for bit
        return np.array(normalize_t(q.tolist(), eps))
    return q / np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), eps)


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` (apply ``b`` first, then ``a``); ``(..., 4)`` broadcast."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape == b.shape == (4,):
        # one pair (the balance controller's legs, every physics step): plain floats, bit
        # for bit (``test_quat``), at a fraction of numpy's per-call overhead
        return np.array(mul_t(a.tolist(), b.tolist()))
    # Components by indexing (not moveaxis): this runs per frame in the controller and per
    # sub-step in the solver, where small-array overhead dominates.
    ax, ay, az, aw = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bx, by, bz, bw = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 1] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 2] = aw * bz + ax * by - ay * bx + az * bw
    out[..., 3] = aw * bw - ax * bx - ay * by - az * bz
    return out


def conj(q: np.ndarray) -> np.ndarray:
    """Conjugate ``(-x, -y, -z, w)``; the inverse of a unit quaternion."""
    q = np.asarray(q, dtype=float)
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def inv(q: np.ndarray) -> np.ndarray:
    """Inverse of any non-zero quaternion, ``conj(q) / |q|^2``."""
    q = np.asarray(q, dtype=float)
    return conj(q) / np.sum(q * q, axis=-1, keepdims=True)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v (..., 3)`` by unit quaternions ``q (..., 4)``: ``q v q^-1``."""
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    if q.shape == (4,) and v.shape == (3,):      # one vector: plain floats, bit for bit
        return np.array(rotate_exact_t(q.tolist(), v.tolist()))
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    vx, vy, vz = v[..., 0], v[..., 1], v[..., 2]
    # v + w t + u x t with t = 2 u x v (written out: np.cross is slow on small arrays,
    # and this runs every solver sub-step).
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    out = np.empty(np.broadcast_shapes(q.shape[:-1], v.shape[:-1]) + (3,))
    out[..., 0] = vx + w * tx + (y * tz - z * ty)
    out[..., 1] = vy + w * ty + (z * tx - x * tz)
    out[..., 2] = vz + w * tz + (x * ty - y * tx)
    return out


def inv_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate ``v`` by the inverse of unit ``q``."""
    return rotate(conj(q), v)


def abs_w(q: np.ndarray) -> np.ndarray:
    """The same rotation with a non-negative scalar part (q and -q are one rotation)."""
    q = np.asarray(q, dtype=float)
    return np.where(q[..., 3:4] < 0.0, -q, q)


def from_axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotation of ``angle (...)`` radians about unit ``axis (..., 3)``."""
    axis = np.asarray(axis, dtype=float)
    half = 0.5 * np.asarray(angle, dtype=float)[..., None]
    return np.concatenate([axis * np.sin(half), np.cos(half) * np.ones_like(axis[..., :1])], axis=-1)


def from_scaled_axis(v: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """Exponential map: rotation vector ``v (..., 3)`` (axis times angle, rad) to a quaternion."""
    v = np.asarray(v, dtype=float)
    theta = np.linalg.norm(v, axis=-1, keepdims=True)
    half = 0.5 * theta
    # sin(x/2)/x tends to 1/2 - x^2/48 near zero: avoids 0/0 for tiny rotations.
    k = np.where(theta < eps, 0.5 - theta ** 2 / 48.0, np.sin(half) / np.maximum(theta, eps))
    return np.concatenate([v * k, np.cos(half)], axis=-1)


def to_scaled_axis(q: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """Logarithm map: unit quaternion ``(..., 4)`` to rotation vector ``(..., 3)`` with angle <= pi."""
    q = abs_w(q)
    s = np.linalg.norm(q[..., :3], axis=-1, keepdims=True)
    theta = 2.0 * np.arctan2(s, q[..., 3:4])
    k = np.where(s < eps, 2.0 + theta ** 2 / 12.0, theta / np.maximum(s, eps))
    return q[..., :3] * k


def angle(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Geodesic angle (rad, in [0, pi]) of ``a``, or between ``a`` and ``b``; shape ``(...)``."""
    q = a if b is None else mul(conj(b), a)
    q = np.asarray(q, dtype=float)
    return 2.0 * np.arctan2(np.linalg.norm(q[..., :3], axis=-1), np.abs(q[..., 3]))


def slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """Spherical interpolation from ``a`` (t=0) to ``b`` (t=1) along the shorter arc."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    t = np.asarray(t, dtype=float)[..., None]
    d = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(d < 0.0, -b, b)  # shorter arc
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    sin_t = np.sin(theta)
    near = sin_t < 1e-6  # nearly equal: linear interpolation is exact to rounding
    wa = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / np.where(near, 1.0, sin_t))
    wb = np.where(near, t, np.sin(t * theta) / np.where(near, 1.0, sin_t))
    return normalize(wa * a + wb * b)


def between(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Shortest rotation taking direction ``u (..., 3)`` to direction ``v (..., 3)``."""
    u = np.asarray(u, dtype=float)
    v = np.asarray(v, dtype=float)
    if u.shape == v.shape == (3,):
        q = between_t(u.tolist(), v.tolist())
        if q is not None:                        # one pair, not opposite: bit for bit
            return np.array(q)
    u = u / np.linalg.norm(u, axis=-1, keepdims=True)
    v = v / np.linalg.norm(v, axis=-1, keepdims=True)
    c = np.cross(u, v)
    w = 1.0 + np.sum(u * v, axis=-1, keepdims=True)
    # Opposite vectors: any axis orthogonal to u works; pick one that is not parallel to u.
    opposite = w[..., 0] < 1e-9
    if np.any(opposite):
        alt = np.where(np.abs(u[..., :1]) < 0.9, np.array([1.0, 0, 0]), np.array([0.0, 1, 0]))
        c = np.where(opposite[..., None], np.cross(u, alt), c)
        w = np.where(opposite[..., None], 0.0, w)
    return normalize(np.concatenate([c, w], axis=-1))


def to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` of unit quaternions ``(..., 4)``."""
    x, y, z, w = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], axis=-2)


def from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternions ``(..., 4)`` of rotation matrices ``(..., 3, 3)`` (w >= 0)."""
    from scipy.spatial.transform import Rotation

    m = np.asarray(m, dtype=float)
    q = Rotation.from_matrix(m.reshape(-1, 3, 3)).as_quat()
    return abs_w(q.reshape(m.shape[:-2] + (4,)))


def from_wxyz(q: np.ndarray) -> np.ndarray:
    """Reorder ``(..., 4)`` from wxyz (scalar first, as Unity/Holden code) to xyzw."""
    return np.roll(np.asarray(q, dtype=float), -1, axis=-1)


def to_wxyz(q: np.ndarray) -> np.ndarray:
    """Reorder ``(..., 4)`` from xyzw to wxyz."""
    return np.roll(np.asarray(q, dtype=float), 1, axis=-1)


def unroll(q: np.ndarray, axis: int = 0) -> np.ndarray:
    """Flip signs along ``axis`` (time) so consecutive quaternions lie in one hemisphere.

    Needed before differencing or filtering rotations over frames: q and -q are one rotation,
    but their difference is not small.
    """
    q = np.moveaxis(np.array(q, dtype=float), axis, 0)
    if len(q) > 1:
        d = np.sum(q[1:] * q[:-1], axis=-1)
        # Cumulative parity of sign flips: flip frame k if an odd number of flips precede it.
        flips = np.cumsum(d < 0.0, axis=0) % 2 == 1
        q[1:] = np.where(flips[..., None], -q[1:], q[1:])
    return np.moveaxis(q, 0, axis)


# --- one quaternion as a tuple of floats ------------------------------------------------------
# Per-frame loops over a skeleton (the live playback loop) call these hundreds of times a frame;
# on single (4,) arrays numpy's per-call overhead is ~20x the arithmetic.

def mul_t(a, b) -> tuple:
    """``mul`` for one pair of quaternions given as 4-sequences; returns a tuple."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def rotate_t(q, v) -> tuple:
    """``rotate`` for one unit quaternion and one 3-vector (sequences); returns a tuple."""
    x, y, z, w = q
    tx, ty, tz = 2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])
    return (v[0] + w * tx + y * tz - z * ty, v[1] + w * ty + z * tx - x * tz,
            v[2] + w * tz + x * ty - y * tx)


def conj_t(q) -> tuple:
    """``conj`` for one quaternion (a 4-sequence); returns a tuple."""
    return (-q[0], -q[1], -q[2], q[3])


# The tuple versions below return bit for bit what their array versions return (tests compare
# them on random input): the same operations in the same order (numpy sums a last axis of 3-4
# elements left to right), and numpy's own ``arccos`` / ``arctan2`` (on AVX-512 they differ
# from ``math``'s in the last bit). The live loop's physics sub-steps run on them: a last-bit
# change there grows into a different simulation.

def norm_t(v) -> float:
    """``np.linalg.norm(v, axis=-1)`` of one 3- or 4-sequence (left-to-right sum)."""
    s = v[0] * v[0]
    for x in v[1:]:
        s = s + x * x
    return math.sqrt(s)


def normalize_t(q, eps: float = 1e-12) -> tuple:
    """``normalize`` of one quaternion (a 4-sequence); returns a tuple."""
    n = max(norm_t(q), eps)
    return (q[0] / n, q[1] / n, q[2] / n, q[3] / n)


def to_scaled_axis_t(q, eps: float = 1e-8) -> tuple:
    """``to_scaled_axis`` of one quaternion (a 4-sequence); returns a 3-tuple."""
    x, y, z, w = (-q[0], -q[1], -q[2], -q[3]) if q[3] < 0.0 else q
    s = math.sqrt((x * x + y * y) + z * z)
    theta = 2.0 * float(np.arctan2(s, w))
    k = 2.0 + theta * theta / 12.0 if s < eps else theta / max(s, eps)
    return (x * k, y * k, z * k)


def rotate_exact_t(q, v) -> tuple:
    """``rotate`` of one vector by one unit quaternion (sequences), in its grouping
    (``v + w t + (u x t)``; ``rotate_t`` groups the last sum otherwise); returns a tuple."""
    x, y, z, w = q
    tx, ty = 2.0 * (y * v[2] - z * v[1]), 2.0 * (z * v[0] - x * v[2])
    tz = 2.0 * (x * v[1] - y * v[0])
    return (v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz),
            v[2] + w * tz + (x * ty - y * tx))


def between_t(u, v) -> tuple | None:
    """``between`` of one pair of 3-sequences, in its operations' order (``np.cross`` is
    ``a1 b2 - a2 b1``, ...); None for (nearly) opposite directions, which ``between`` turns
    about an axis of its choosing, and for a zero vector (numpy's 0 / 0 is NaN, Python's
    raises)."""
    nu, nv = norm_t(u), norm_t(v)
    if nu == 0.0 or nv == 0.0:
        return None
    u0, u1, u2 = u[0] / nu, u[1] / nu, u[2] / nu
    v0, v1, v2 = v[0] / nv, v[1] / nv, v[2] / nv
    w = 1.0 + ((u0 * v0 + u1 * v1) + u2 * v2)
    if not w >= 1e-9:           # opposite (or NaN): ``between``'s own branch
        return None
    return normalize_t((u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0, w))


def slerp_t(a, b, t: float) -> tuple:
    """``slerp`` of one pair of quaternions (4-sequences) at one ``t``; returns a tuple."""
    d = ((a[0] * b[0] + a[1] * b[1]) + a[2] * b[2]) + a[3] * b[3]
    if d < 0.0:
        b = (-b[0], -b[1], -b[2], -b[3])
    d = abs(d)
    theta = float(np.arccos(min(max(d, -1.0), 1.0)))
    sin_t = math.sin(theta)
    if sin_t < 1e-6:
        wa, wb = 1.0 - t, t
    else:
        wa, wb = math.sin((1.0 - t) * theta) / sin_t, math.sin(t * theta) / sin_t
    return normalize_t((wa * a[0] + wb * b[0], wa * a[1] + wb * b[1],
                        wa * a[2] + wb * b[2], wa * a[3] + wb * b[3]))
