"""Toes no marker sees, bent at the ball by the floor.

Plug-in Gait puts its TOE marker on the second metatarsal head, on the foot: no marker is on the
toes, and the solve holds them at rest (``kinematic.FIXED_JOINT_WEIGHT``), rigid with the foot.
A real heel rises gradually while the ball stays on the floor and the toes bend at it; the rigid
toe instead swings its tip down, through the floor (the solved Plug-in Gait walk's toe tips went
2.8 / 3.7 cm under the lab floor, under it in 26-34 % of frames). The floor, not a marker, says
where such a toe is: ``floor_toes`` turns it up about the ball just enough that its tip is no
lower than where it is when the foot stands flat, and leaves every other frame and joint alone.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from ..errors import ShapeError, require_counts, require_numbers
from ..markers import MarkerSet
from ..motion import Motion
from .kinematic import marker_positions

__all__ = ["floor_toes", "free_toes", "standing_heights", "toe_tips", "bent_text"]

#: The most a toe is bent up from where the solve held it, rad (60 deg: about a standing
#: person's toe extension; past it a toe through the floor is the foot's error, not the toe's).
MAX_BEND = np.radians(60.0)

_BLOCK = 6000           # frames whose forward kinematics is held at once


def free_toes(names: tuple, marker_segments: np.ndarray) -> list[int]:
    """Indices of the ``*Toes`` joints among ``names`` that carry none of the markers
    (``marker_segments``: ``(M,)`` the joint each marker is on)."""
    on = set(int(b) for b in np.asarray(marker_segments).ravel())
    return [j for j, n in enumerate(names) if n.endswith("Toes") and j not in on]


def toe_tips(motion: Motion) -> dict[str, np.ndarray]:
    """Each ``*Toes`` joint's tip (its segment vector from the joint: the BVH end site),
    ``{name: (F, 3) m}``: a point on each toe for ``kinematic.marker_positions`` (blocked
    forward kinematics)."""
    sk = motion.skeleton
    toes = [j for j, n in enumerate(sk.names) if n.endswith("Toes")]
    if not toes:
        return {}
    tips = MarkerSet(tuple(sk.names[j] for j in toes), np.array(toes),
                     sk.segment_vectors()[toes], np.ones(len(toes)))
    p = marker_positions(sk, tips, motion.lrot, motion.root_pos)
    return {sk.names[j]: p[:, t] for t, j in enumerate(toes)}


def bent_text(toes_bent: dict) -> str:
    """The solve report's ``toes_bent`` (name -> its figures) as one phrase for a person:
    ``"LeftToes 201 fr, up to 50 deg, ..."`` ("" for none)."""
    return ", ".join(f"{k} {b['frames_over_1deg']} fr, up to {b['max_deg']:.0f} deg"
                     for k, b in toes_bent.items())


def standing_heights(toe_z: np.ndarray, planted: np.ndarray, min_frames: int = 10) -> np.ndarray:
    """``(T,)`` m, each toe joint's height while its foot stands: the median of ``toe_z``
    (``(F, T)`` m) over the frames ``planted`` (``(F, T)`` bool: its foot's forefoot marker
    planted); NaN where fewer than ``min_frames`` such frames (no floor known)."""
    require_counts("standing_heights", min_frames=min_frames)
    toe_z, planted = np.asarray(toe_z, float), np.asarray(planted, bool)
    if toe_z.ndim != 2 or planted.shape != toe_z.shape:
        raise ShapeError(f"standing_heights: toe heights must be (F, T) and plants of the same "
                         f"shape, got {toe_z.shape} and {planted.shape}")
    out = np.full(toe_z.shape[1], np.nan)
    for t in range(toe_z.shape[1]):
        z = toe_z[planted[:, t], t]
        z = z[np.isfinite(z)]
        if len(z) >= min_frames:
            out[t] = float(np.median(z))
    return out


def floor_toes(motion: Motion, toes: list[int], stand: np.ndarray,
               max_bend: float = MAX_BEND, axes: np.ndarray | None = None
               ) -> tuple[Motion, np.ndarray]:
    """``motion`` with each toe joint of ``toes`` turned up about its ball (its joint) by the
    least angle (at most ``max_bend`` rad) that lifts its tip (the skeleton's segment vector,
    the BVH end site) to at least where it is when the foot stands flat: ``stand`` (``(T,)`` m,
    the joint's standing height, NaN: left alone) plus the tip's rest height above the joint.
    Frames where the tip is already there are unchanged.

    ``axes``: ``(T, 3)`` each toe's hinge axis in its parent's rest frame (the body template's
    ``axis``), turned about in whichever sense lifts the tip; None: the horizontal axis across
    the toe.

    Returns the motion and ``(F, T)`` rad, each toe's bend in each frame (0: unchanged)."""
    require_numbers("floor_toes", max_bend=max_bend)
    stand = np.asarray(stand, float).reshape(-1)
    if len(stand) != len(toes):
        raise ShapeError(f"floor_toes: {len(toes)} toes but {len(stand)} standing heights")
    if axes is not None:
        axes = np.asarray(axes, float)
        if axes.shape != (len(toes), 3) or not np.all(np.linalg.norm(axes, axis=-1) > 1e-9):
            raise ShapeError(f"floor_toes: axes must be ({len(toes)}, 3), non-zero, got "
                             f"{axes.shape}")
        axes = axes / np.linalg.norm(axes, axis=-1, keepdims=True)
    sk = motion.skeleton
    # the root has no parent to bend against (index -1 would take the last joint for it)
    bad = [j for j in toes if not (isinstance(j, (int, np.integer)) and 0 < j < len(sk))]
    if bad:
        raise ShapeError(f"floor_toes: toes must be joint indices 1..{len(sk) - 1} (not the "
                         f"root), got {bad[0]!r}")
    F = motion.n_frames
    bend = np.zeros((F, len(toes)))
    if not toes or F == 0:
        return motion, bend
    lrot = np.array(motion.lrot)
    seg = sk.segment_vectors()
    # in blocks of frames: a long take's whole forward kinematics is not held at once
    for a0 in range(0, F, _BLOCK):
        part = motion[a0:a0 + _BLOCK]
        gpos, grot = part.gpos, part.grot
        n = part.n_frames
        for t, j in enumerate(toes):
            if not np.isfinite(stand[t]) or np.linalg.norm(seg[j]) < 1e-6:
                continue
            par = sk.parents[j]
            r = quat.rotate(grot[:, j], np.broadcast_to(seg[j], (n, 3)))  # joint -> tip, world
            need = stand[t] + seg[j, 2] - gpos[:, j, 2]                   # tip height wanted
            if axes is None:
                # the horizontal axis across the toe (a toe pointing straight down has none)
                a = np.stack([r[:, 1], -r[:, 0], np.zeros(n)], axis=-1)
                ok = np.linalg.norm(a, axis=-1) > 1e-6
            else:
                a = quat.rotate(grot[:, par], np.broadcast_to(axes[t], (n, 3)))
                ok = np.ones(n, bool)
            a = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
            # turned by theta about a, the tip's height is p + u cos(theta) + v sin(theta);
            # the sense with v >= 0 lifts it, up to its highest at theta = atan2(v, u)
            v = np.cross(a, r)[:, 2]
            a = np.where((v < 0)[:, None], -a, a)
            v = np.abs(v)
            p = np.sum(a * r, axis=-1) * a[:, 2]            # the part along a does not turn
            u = r[:, 2] - p
            R = np.hypot(u, v)
            top = np.arctan2(v, u)
            low = ok & (r[:, 2] < need) & (R > 1e-9)
            theta = top - np.arccos(np.clip((need - p) / np.maximum(R, 1e-12), -1.0, 1.0))
            theta = np.where(low, np.clip(theta, 0.0, max_bend), 0.0)
            g = quat.mul(quat.from_axis_angle(a, theta), grot[:, j])
            new = quat.normalize(quat.mul(quat.conj(grot[:, par]), g))
            on = theta > 0                  # a frame left alone keeps its rotation bit for bit
            lrot[a0:a0 + n, j][on] = new[on]
            bend[a0:a0 + n, t] = theta
    if not bend.any():
        return motion, bend
    return Motion(sk, motion.fps, motion.root_pos, lrot, motion.meta), bend
