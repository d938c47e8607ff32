"""Critically damped springs in exact (analytic) form, parameterised by a halflife.

Every spring here solves ``x'' = k (g - x) + c (g' - x')`` with critical damping ``c^2 = 4 k``,
written with the rate ``y = c / 2`` (``k = y^2``), the thesis' Eq. 3.26 with ``w = y``. The exact
solution (Eq. 3.27-3.28) with ``e = x - g``::

    e(t) = (j0 + j1 t) exp(-y t),   j0 = e(0),   j1 = e'(0) + y j0

so a step of any length ``dt`` is exact and unconditionally stable, and predicting the future is
one evaluation per time (no sub-stepping). Ported from D. Holden's ``spring.h`` (Motion-Matching,
"Spring-It-On") with two deliberate differences:

* **The halflife is honest.** After ``halflife`` seconds a spring released at rest (zero velocity)
  has covered exactly half the distance to its goal: ``(1 + u) exp(-u) = 1/2`` gives
  ``y = HALFLIFE_RATE / halflife`` with ``HALFLIFE_RATE = 1.67835``. Holden uses
  ``y = 2 ln 2 / halflife`` (he calls the name "not completely honest": 0.597 of the distance
  remains after one of his halflives). To reuse a constant tuned for his code, pass
  ``from_holden_halflife(h)`` (about ``1.21 h``).
* **A goal velocity moves the goal.** In ``critical_spring`` the goal travels at ``v_goal``
  during the step (``g(t) = x_goal + v_goal t``), so the spring converges onto the moving goal
  with velocity ``v_goal``. Holden holds the goal still for the step and settles at
  ``g + 2 v_goal / y`` with zero velocity. Both solve the same equation; only the assumption
  about the goal during ``dt`` differs. With ``v_goal = 0`` they coincide (``simple_spring``).

Units: positions in metres (or any unit; springs are linear), velocities per second, ``halflife``
and ``dt`` in seconds (``halflife > 0``; ``dt`` may be an array). Rotations are unit quaternions
``(..., 4)`` xyzw with angular velocities ``(..., 3)`` rad/s as world-frame rotation vectors
(exact for rotation about a fixed axis, as in Holden's quaternion springs).

Broadcasting: vector springs broadcast ``halflife`` and ``dt`` against ``x`` elementwise (numpy
rules: a per-item halflife for ``x (N, 3)`` is ``(N, 1)``). Rotation springs broadcast them against
the batch shape ``q.shape[:-1]``. Pure functions: inputs are never modified.
"""
from __future__ import annotations

import math

import numpy as np

from . import quat
from .errors import ShapeError

__all__ = [
    "HALFLIFE_RATE", "halflife_to_damping", "damping_to_halflife", "from_holden_halflife",
    "critical_spring", "simple_spring", "decay_spring",
    "simple_spring_rotation", "decay_spring_rotation",
    "character_update", "character_predict", "facing_predict",
]

#: ``u`` solving ``(1 + u) exp(-u) = 1/2``: the rate ``y = u / halflife`` makes a spring released
#: at rest halve its distance to the goal in exactly one halflife.
HALFLIFE_RATE = 1.6783469900166605


def _halflife(h) -> np.ndarray:
    if type(h) is float:            # the per-frame controller's case: skip numpy's overhead
        if not (0.0 < h < np.inf):
            raise ShapeError(f"halflife must be finite and > 0 seconds, got {h!r}")
        return h
    h = np.asarray(h, dtype=float)
    if not np.all(h > 0) or not np.all(np.isfinite(h)):
        bad = h.min() if h.size else h
        raise ShapeError(f"halflife must be finite and > 0 seconds, got {bad!r}")
    return h


def _rate(halflife) -> np.ndarray:
    """Rate ``y`` (1/s) of a halflife (s)."""
    return HALFLIFE_RATE / _halflife(halflife)


def _last(a, n: int, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim == 0 or a.shape[-1] != n:
        raise ShapeError(f"{name}: expected shape (..., {n}), got {a.shape}")
    return a


def halflife_to_damping(halflife):
    """Damping ``c`` (1/s) of ``x'' = k (g - x) - c x'`` (critical: ``k = c^2 / 4``) whose
    spring released at rest halves its distance to the goal in ``halflife`` seconds."""
    return 2.0 * _rate(halflife)


def damping_to_halflife(damping):
    """Inverse of ``halflife_to_damping``: seconds for damping ``c > 0`` (1/s)."""
    d = np.asarray(damping, dtype=float)
    if not np.all(d > 0):
        raise ShapeError("damping must be > 0")
    return 2.0 * HALFLIFE_RATE / d


def from_holden_halflife(halflife):
    """The halflife (s) here giving the same spring as ``halflife`` in Holden's ``spring.h``."""
    return _halflife(halflife) * HALFLIFE_RATE / (2.0 * np.log(2.0))


def critical_spring(x, v, x_goal, v_goal, halflife, dt):
    """Critically damped spring toward a goal moving at constant velocity, exact over ``dt``.

    Args:
        x, v: position ``(...)`` (any trailing vector axis) and velocity (units/s).
        x_goal, v_goal: goal position at the start of the step and its velocity (units/s);
            the goal is at ``x_goal + v_goal * dt`` at the end of the step.
        halflife: s (> 0); dt: s.

    Returns:
        ``(x, v)`` after ``dt``: ``x -> goal`` and ``v -> v_goal`` without overshoot.
    """
    x, v, x_goal, v_goal = (np.asarray(a, dtype=float) for a in (x, v, x_goal, v_goal))
    y = _rate(halflife)
    dt = np.asarray(dt, dtype=float)
    j0 = x - x_goal
    j1 = (v - v_goal) + j0 * y
    e = np.exp(-y * dt)
    return (x_goal + v_goal * dt + e * (j0 + j1 * dt),
            v_goal + e * ((v - v_goal) - j1 * y * dt))


def simple_spring(x, v, x_goal, halflife, dt):
    """Critically damped spring toward a still goal ``x_goal``; ``(x, v)`` after ``dt`` s.
    The thesis' Eq. 3.27-3.28. Shapes as ``critical_spring``."""
    x, v, x_goal = (np.asarray(a, dtype=float) for a in (x, v, x_goal))
    y = _rate(halflife)
    dt = np.asarray(dt, dtype=float)
    j0 = x - x_goal
    j1 = v + j0 * y
    e = np.exp(-y * dt)
    return x_goal + e * (j0 + j1 * dt), e * (v - j1 * y * dt)


def decay_spring(x, v, halflife, dt):
    """Critically damped decay of an offset ``x`` (velocity ``v``) toward zero; ``(x, v)`` after
    ``dt`` s. Used for inertialization offsets. With ``v = 0`` the offset halves in ``halflife``."""
    x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
    y = _rate(halflife)
    dt = np.asarray(dt, dtype=float)
    j1 = v + x * y
    e = np.exp(-y * dt)
    return e * (x + j1 * dt), e * (v - j1 * y * dt)


def _batch(a) -> np.ndarray:
    """``a`` with a trailing axis so it broadcasts against ``(..., 3)`` rotation vectors."""
    return np.asarray(a, dtype=float)[..., None]


def _same_hemisphere(q, ref):
    """``q`` with its sign flipped where it disagrees with ``ref`` (continuity of sign)."""
    return np.where(np.sum(q * ref, axis=-1, keepdims=True) < 0.0, -q, q)


def simple_spring_rotation(q, w, q_goal, halflife, dt):
    """Critically damped rotation spring toward ``q_goal``, exact about a fixed axis.

    Args:
        q: unit quaternions ``(..., 4)`` xyzw; w: angular velocity ``(..., 3)`` rad/s (world).
        q_goal: goal rotations ``(..., 4)``; halflife, dt: s, broadcast against ``q.shape[:-1]``.

    Returns:
        ``(q, w)`` after ``dt``; ``q`` keeps the sign hemisphere of the input.
    """
    q = _last(q, 4, "q")
    w = _last(w, 3, "w")
    q_goal = _last(q_goal, 4, "q_goal")
    if q.shape == q_goal.shape == (4,) and w.shape == (3,) and type(halflife) is float \
            and np.ndim(dt) == 0:
        return _spring_rotation_one(q, w, q_goal, _rate(halflife), float(dt))
    y = _batch(_rate(halflife))
    dt = _batch(dt)
    j0 = quat.to_scaled_axis(quat.mul(q, quat.conj(q_goal)))  # shortest arc (abs_w inside)
    j1 = w + j0 * y
    e = np.exp(-y * dt)
    out = quat.mul(quat.from_scaled_axis(e * (j0 + j1 * dt)), q_goal)
    return _same_hemisphere(quat.normalize(out), q), e * (w - j1 * y * dt)


def _spring_rotation_one(q, w, q_goal, y: float, dt: float):
    """``simple_spring_rotation`` of one rotation in plain floats (the controller's every frame,
    where numpy's per-call overhead on (4,) arrays is ~10x the arithmetic): the same operations
    in the same order, numpy's ``exp`` (``quat``'s tuple helpers), bit for bit."""
    q, w, g = q.tolist(), w.tolist(), q_goal.tolist()
    j0 = quat.to_scaled_axis_t(quat.mul_t(q, quat.conj_t(g)))
    j1 = [w[i] + j0[i] * y for i in range(3)]
    e = float(np.exp(-y * dt))
    v = [e * (j0[i] + j1[i] * dt) for i in range(3)]
    theta = quat.norm_t(v)                                       # ``quat.from_scaled_axis``
    half = 0.5 * theta
    k = 0.5 - theta * theta / 48.0 if theta < 1e-8 else math.sin(half) / max(theta, 1e-8)
    out = quat.normalize_t(quat.mul_t((v[0] * k, v[1] * k, v[2] * k, math.cos(half)), g))
    if ((out[0] * q[0] + out[1] * q[1]) + out[2] * q[2]) + out[3] * q[3] < 0.0:
        out = (-out[0], -out[1], -out[2], -out[3])               # ``_same_hemisphere``
    return np.array(out), np.array([e * (w[i] - j1[i] * y * dt) for i in range(3)])


def decay_spring_rotation(q_offset, w, halflife, dt):
    """Critically damped decay of a rotation offset ``(..., 4)`` toward identity, with angular
    velocity ``w (..., 3)`` rad/s; ``(q_offset, w)`` after ``dt`` s."""
    q_offset = _last(q_offset, 4, "q_offset")
    w = _last(w, 3, "w")
    y = _batch(_rate(halflife))
    dt = _batch(dt)
    j0 = quat.to_scaled_axis(q_offset)
    j1 = w + j0 * y
    e = np.exp(-y * dt)
    return quat.from_scaled_axis(e * (j0 + j1 * dt)), e * (w - j1 * y * dt)


def character_update(pos, vel, acc, desired_vel, halflife, dt):
    """Move a simulated character whose velocity follows ``desired_vel`` on a critical spring.

    The spring's "position" is the character velocity, its "velocity" the acceleration; the
    position is the exact time integral (Holden's ``spring_character_update``; thesis Sec. 3.3.1).

    Args:
        pos, vel, acc: ``(..., 3)`` m, m/s, m/s^2; desired_vel: ``(..., 3)`` m/s, held constant.
        halflife, dt: s, broadcast elementwise (a scalar, or ``(..., 1)``).

    Returns:
        ``(pos, vel, acc)`` after ``dt``.
    """
    pos, vel, acc, q = (np.asarray(a, dtype=float) for a in (pos, vel, acc, desired_vel))
    y = _rate(halflife)
    dt = np.asarray(dt, dtype=float)
    j0 = vel - q
    j1 = acc + j0 * y
    e = np.exp(-y * dt)
    # integral of (j0 + j1 s) exp(-y s) over [0, dt]
    new_pos = pos + q * dt + j0 * (1.0 - e) / y + j1 * (1.0 - e * (1.0 + y * dt)) / (y * y)
    return new_pos, q + e * (j0 + j1 * dt), e * (acc - j1 * y * dt)


def character_predict(pos, vel, acc, desired_vel, halflife, dts):
    """``character_update`` evaluated at each future time ``dts (T,)`` s from the same state.

    Returns ``(pos, vel, acc)``, each ``(T, ..., 3)``: the predicted trajectory if the desired
    velocity stays as it is (Holden's ``spring_character_predict``).
    """
    pos = _last(pos, 3, "pos")
    dts = np.asarray(dts, dtype=float)
    if dts.ndim != 1:
        raise ShapeError(f"dts: expected shape (T,), got {dts.shape}")
    t = dts.reshape((-1,) + (1,) * pos.ndim)
    return character_update(pos, vel, acc, desired_vel, halflife, t)


def facing_predict(q, w, desired_q, halflife, dts):
    """Rotation twin of ``character_predict``: the facing ``q (..., 4)`` with angular velocity
    ``w (..., 3)`` rad/s on a critical spring toward ``desired_q``, at each time ``dts (T,)`` s.

    Returns ``(q, w)`` of shapes ``(T, ..., 4)`` and ``(T, ..., 3)``.
    """
    q = _last(q, 4, "q")
    dts = np.asarray(dts, dtype=float)
    if dts.ndim != 1:
        raise ShapeError(f"dts: expected shape (T,), got {dts.shape}")
    t = dts.reshape((-1,) + (1,) * (q.ndim - 1))
    h = np.asarray(halflife, dtype=float)
    return simple_spring_rotation(q[None], np.asarray(w, dtype=float)[None], desired_q, h, t)
