"""Analytic two-bone inverse kinematics (hip-knee-ankle, shoulder-elbow-wrist), batched.

Positions are solved first and rotations follow from them: the middle joint is placed in the
plane of the target and the current bend direction (the pole), at the distances the fixed bone
lengths allow; then the upper bone turns onto its new direction and the lower bone onto the
target, each by the shortest rotation, so no twist is added.
"""
from __future__ import annotations

import math

import numpy as np

from . import quat

__all__ = ["two_bone_ik", "two_bone_ik_local", "two_bone_ik_t"]


def _unit(v: np.ndarray, eps: float = 1e-9) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), eps)


def two_bone_ik(a: np.ndarray, b: np.ndarray, c: np.ndarray, target: np.ndarray,
                ga: np.ndarray, gb: np.ndarray, pole: np.ndarray | None = None,
                eps: float = 1e-4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bend a chain a-b-c so that c reaches ``target`` (or as close as the bones allow).

    Args:
        a, b, c: ``(..., 3)`` m, world positions of the root (hip), middle (knee) and end (ankle).
        target: ``(..., 3)`` m, where the end should go.
        ga, gb: ``(..., 4)`` xyzw, world rotations of the root and middle joints.
        pole: ``(..., 3)`` direction the middle joint should bend toward (default: the current
            bend, b minus its projection on the a-c line).
        eps: m; the reach is kept within (|ab| - |bc|, |ab| + |bc|) by this margin.
    Returns:
        new world rotations of a and b ``(..., 4)`` and the new middle position ``(..., 3)``.
    """
    lab = np.linalg.norm(b - a, axis=-1)
    lbc = np.linalg.norm(c - b, axis=-1)
    at = target - a
    lat = np.clip(np.linalg.norm(at, axis=-1), np.abs(lab - lbc) + eps, lab + lbc - eps)
    u = _unit(at)
    if pole is None:
        ac = _unit(c - a)
        pole = (b - a) - np.sum((b - a) * ac, -1, keepdims=True) * ac
    v = pole - np.sum(pole * u, -1, keepdims=True) * u
    # A pole along the reach line gives no plane (a straight chain): bend toward the chain's
    # current direction, made square to the reach line like any pole (unsquared, the middle
    # joint was placed off its circle and the end missed: a straight arm asked to reach 30 cm
    # ahead of its shoulder fell 15.5 cm short)
    w = _unit(b - a) - u
    w = w - np.sum(w * u, -1, keepdims=True) * u
    v = np.where(np.linalg.norm(v, axis=-1, keepdims=True) > 1e-9, v, w)
    v = _unit(v)
    cos_a = np.clip((lab ** 2 + lat ** 2 - lbc ** 2) / (2.0 * lab * lat), -1.0, 1.0)
    alpha = np.arccos(cos_a)[..., None]
    b_new = a + lab[..., None] * (np.cos(alpha) * u + np.sin(alpha) * v)
    turn_a = quat.between(b - a, b_new - a)
    ga_new = quat.mul(turn_a, ga)
    gb_moved = quat.mul(turn_a, gb)
    c_moved = b_new + quat.rotate(turn_a, c - b)
    turn_b = quat.between(c_moved - b_new, a + lat[..., None] * u - b_new)
    gb_new = quat.mul(turn_b, gb_moved)
    return quat.normalize(ga_new), quat.normalize(gb_new), b_new


def two_bone_ik_local(a: np.ndarray, b: np.ndarray, c: np.ndarray, target: np.ndarray,
                      g_parent: np.ndarray, ga: np.ndarray, gb: np.ndarray, g_end: np.ndarray,
                      pole: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``two_bone_ik`` as a skeleton wants it: the chain's new LOCAL rotations ``(..., 4)`` of
    the root (under its parent's world rotation ``g_parent``), the middle joint, and the end,
    whose world rotation becomes ``g_end`` (a foot or hand keeping its own, or a device's).
    Other arguments as ``two_bone_ik``."""
    ga2, gb2, _ = two_bone_ik(a, b, c, target, ga, gb, pole)
    return (quat.mul(quat.conj(g_parent), ga2), quat.mul(quat.conj(ga2), gb2),
            quat.mul(quat.conj(gb2), g_end))


# --- one chain in plain floats -------------------------------------------------------------
# The live loop lifts a swinging foot one frame at a time (``playback.reference.SwingLift``):
# for one chain numpy's per-call overhead is ~10x the arithmetic. ``two_bone_ik_t`` does
# ``two_bone_ik``'s operations in the same order (tests compare them bit for bit).

def _sub(p, q) -> tuple:
    return (p[0] - q[0], p[1] - q[1], p[2] - q[2])


def _dot(p, q) -> float:
    return (p[0] * q[0] + p[1] * q[1]) + p[2] * q[2]


def _unit_t(v, eps: float = 1e-9) -> tuple:
    n = max(math.sqrt(_dot(v, v)), eps)
    return (v[0] / n, v[1] / n, v[2] / n)


def _cross(p, q) -> tuple:
    return (p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0])


def _between_t(u, v) -> tuple:
    """``quat.between`` of one pair of directions."""
    nu, nv = math.sqrt(_dot(u, u)), math.sqrt(_dot(v, v))
    u = (u[0] / nu, u[1] / nu, u[2] / nu)
    v = (v[0] / nv, v[1] / nv, v[2] / nv)
    c = _cross(u, v)
    w = 1.0 + _dot(u, v)
    if w < 1e-9:
        c = _cross(u, (1.0, 0.0, 0.0) if abs(u[0]) < 0.9 else (0.0, 1.0, 0.0))
        w = 0.0
    return quat.normalize_t((c[0], c[1], c[2], w))


def two_bone_ik_t(a, b, c, target, ga, gb, eps: float = 1e-4) -> tuple:
    """``two_bone_ik`` of one chain (3- and 4-sequences, default pole): ``(ga, gb, b_new)``
    as tuples."""
    ba = _sub(b, a)
    lab = math.sqrt(_dot(ba, ba))
    cb = _sub(c, b)
    lbc = math.sqrt(_dot(cb, cb))
    at = _sub(target, a)
    lat = min(max(math.sqrt(_dot(at, at)), abs(lab - lbc) + eps), lab + lbc - eps)
    u = _unit_t(at)
    ac = _unit_t(_sub(c, a))
    d = _dot(ba, ac)
    pole = (ba[0] - d * ac[0], ba[1] - d * ac[1], ba[2] - d * ac[2])
    d = _dot(pole, u)
    v = (pole[0] - d * u[0], pole[1] - d * u[1], pole[2] - d * u[2])
    if not math.sqrt(_dot(v, v)) > 1e-9:
        w = _sub(_unit_t(ba), u)
        d = _dot(w, u)
        v = (w[0] - d * u[0], w[1] - d * u[1], w[2] - d * u[2])
    v = _unit_t(v)
    cos_a = min(max((lab ** 2 + lat ** 2 - lbc ** 2) / (2.0 * lab * lat), -1.0), 1.0)
    alpha = float(np.arccos(cos_a))
    ca, sa = math.cos(alpha), math.sin(alpha)
    b_new = tuple(a[i] + lab * (ca * u[i] + sa * v[i]) for i in range(3))
    turn_a = _between_t(ba, _sub(b_new, a))
    ga_new = quat.mul_t(turn_a, ga)
    gb_moved = quat.mul_t(turn_a, gb)
    r = quat.rotate_exact_t(turn_a, cb)
    c_moved = (b_new[0] + r[0], b_new[1] + r[1], b_new[2] + r[2])
    reach = tuple(a[i] + lat * u[i] - b_new[i] for i in range(3))
    turn_b = _between_t(_sub(c_moved, b_new), reach)
    gb_new = quat.mul_t(turn_b, gb_moved)
    return quat.normalize_t(ga_new), quat.normalize_t(gb_new), b_new
