"""Toes no marker sees, bent at the ball by the floor.

Plug-in Gait puts its TOE marker on the second metatarsal head, on the foot: no marker is on the
toes, and the solve holds them at rest (``kinematic.FIXED_JOINT_WEIGHT``), rigid with the foot.
A real heel rises gradually while the ball stays on the floor and the toes bend at it; the rigid
toe instead swings its tip down, through the floor (the solved Plug-in Gait walk's toe tips went
2.9 / 3.7 cm under the lab floor, under it in 26-34 % of frames). The floor, not a marker, says
where such a toe is: ``floor_toes`` turns it up about the ball just enough that its tip is no
lower than where it is when the foot stands flat, and leaves every other frame and joint alone.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from ..errors import ShapeError, require_numbers
from ..motion import Motion

__all__ = ["floor_toes", "free_toes", "standing_heights"]

#: The most a toe is bent up from where the solve held it, rad (60 deg: about a standing
#: person's toe extension; past it a toe through the floor is the foot's error, not the toe's).
MAX_BEND = np.radians(60.0)

_BLOCK = 6000           # frames whose forward kinematics is held at once


def free_toes(names: tuple, marker_segments: np.ndarray) -> list[int]:
    """Indices of the ``*Toes`` joints among ``names`` that carry none of the markers
    (``marker_segments``: ``(M,)`` the joint each marker is on)."""
    on = set(int(b) for b in np.asarray(marker_segments).ravel())
    return [j for j, n in enumerate(names) if n.endswith("Toes") and j not in on]


def standing_heights(toe_z: np.ndarray, planted: np.ndarray, min_frames: int = 10) -> np.ndarray:
    """``(T,)`` m, each toe joint's height while its foot stands: the median of ``toe_z``
    (``(F, T)`` m) over the frames ``planted`` (``(F, T)`` bool: its foot's forefoot marker
    planted); NaN where fewer than ``min_frames`` such frames (no floor known)."""
    toe_z, planted = np.asarray(toe_z, float), np.asarray(planted, bool)
    if toe_z.ndim != 2 or planted.shape != toe_z.shape:
        raise ShapeError(f"toe heights (F, T) and plants of the same shape needed, got "
                         f"{toe_z.shape} and {planted.shape}")
    out = np.full(toe_z.shape[1], np.nan)
    for t in range(toe_z.shape[1]):
        z = toe_z[planted[:, t], t]
        z = z[np.isfinite(z)]
        if len(z) >= min_frames:
            out[t] = float(np.median(z))
    return out


def floor_toes(motion: Motion, toes: list[int], stand: np.ndarray,
               max_bend: float = MAX_BEND) -> tuple[Motion, np.ndarray]:
    """``motion`` with each toe joint of ``toes`` turned up about its ball (its joint), about
    the horizontal axis across it, by the least angle (at most ``max_bend`` rad) that lifts its
    tip (the skeleton's segment vector, the BVH end site) to at least where it is when the foot
    stands flat: ``stand`` (``(T,)`` m, the joint's standing height, NaN: left alone) plus the
    tip's rest height above the joint. Frames where the tip is already there are unchanged.

    Returns the motion and ``(F, T)`` rad, each toe's bend in each frame (0: unchanged)."""
    require_numbers("floor_toes", max_bend=max_bend)
    stand = np.asarray(stand, float).reshape(-1)
    if len(stand) != len(toes):
        raise ShapeError(f"floor_toes: {len(toes)} toes but {len(stand)} standing heights")
    sk = motion.skeleton
    F = motion.n_frames
    bend = np.zeros((F, len(toes)))
    if not toes or F == 0:
        return motion, bend
    lrot = np.array(motion.lrot)
    seg = sk.segment_vectors()
    # in blocks of frames: a long take's whole forward kinematics is not held at once
    for a in range(0, F, _BLOCK):
        part = motion[a:a + _BLOCK]
        gpos, grot = part.gpos, part.grot
        n = part.n_frames
        for t, j in enumerate(toes):
            if not np.isfinite(stand[t]) or np.linalg.norm(seg[j]) < 1e-6:
                continue
            r = quat.rotate(grot[:, j], np.broadcast_to(seg[j], (n, 3)))  # joint -> tip, world
            need = stand[t] + seg[j, 2] - gpos[:, j, 2]                   # tip height wanted
            rh = np.hypot(r[:, 0], r[:, 1])
            low = (r[:, 2] < need) & (rh > 1e-6)
            # the tip turns in the vertical plane through it: from pitch phi to asin(need / |r|)
            phi = np.arctan2(r[:, 2], rh)
            want = np.arcsin(np.clip(need / np.maximum(np.linalg.norm(r, axis=-1), 1e-9),
                                     -1.0, 1.0))
            theta = np.where(low, np.clip(want - phi, 0.0, max_bend), 0.0)
            # the axis to the toe's right (forward x up): a positive turn about it lifts the tip
            right = np.stack([r[:, 1], -r[:, 0], np.zeros(n)], axis=-1) / \
                np.maximum(rh, 1e-9)[:, None]
            g = quat.mul(quat.from_axis_angle(right, theta), grot[:, j])
            new = quat.normalize(quat.mul(quat.conj(grot[:, sk.parents[j]]), g))
            on = theta > 0                  # a frame left alone keeps its rotation bit for bit
            lrot[a:a + n, j][on] = new[on]
            bend[a:a + n, t] = theta
    if not bend.any():
        return motion, bend
    return Motion(sk, motion.fps, motion.root_pos, lrot, motion.meta), bend
