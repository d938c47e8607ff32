"""Analytic two-bone inverse kinematics (hip-knee-ankle, shoulder-elbow-wrist), batched.

Positions are solved first and rotations follow from them: the middle joint is placed in the
plane of the target and the current bend direction (the pole), at the distances the fixed bone
lengths allow; then the upper bone turns onto its new direction and the lower bone onto the
target, each by the shortest rotation, so no twist is added.
"""
from __future__ import annotations

import numpy as np

from . import quat

__all__ = ["two_bone_ik"]


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
    # A pole along the reach line gives no plane: keep the current knee side as well as we can.
    v = np.where(np.linalg.norm(v, axis=-1, keepdims=True) > 1e-9, v, _unit(b - a) - u)
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
