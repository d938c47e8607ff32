"""Can a body stand on this reference's feet? Support figures of a kinematic reference.

Fully physical playback (``track(..., mode="physical")``) needs a reference a body on its own
legs could perform. Three properties of the reference decide much of it, measured here on the
simulated body's own foot boxes (``character.foot_box``):

* ``com_offset``: in single stance, how far the centre of mass (ground projection) sits from
  the stance sole's centre line, across the sole, toward the swing side. Standing still needs it
  inside the sole's half-width, with margin: the effective half-width PyBullet's contact solver
  holds is smaller than the box's (``benchmarks/physical_diagnosis.py``: 2-2.5 cm of 4.5 cm at
  10 solver iterations);
* ``sole_roll``: how far a planted sole leans across onto one edge. Tracked by a stiff ankle,
  the body stands on that edge and its centre of pressure sits there, pushing the body the
  other way;
* ``slide``: how fast a planted sole moves over the floor. A simulated foot held by friction
  cannot follow it (the demo walk's source clip moves a planted foot 9 cm sideways in 33 ms).

``support(motion, body)`` gives them per frame; ``support_summary`` in a few numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quat
from ..errors import ShapeError, require_numbers
from ..motion import Motion
from ..scene import BodyTemplate
from .character import foot_box, foot_joints, segment_centres
from .reference import sole_points

__all__ = ["Support", "support", "support_summary"]

_X = np.array([1.0, 0.0, 0.0])
_Y = np.array([0.0, 1.0, 0.0])


@dataclass(frozen=True)
class Support:
    """Per-frame support figures of a reference (``F`` frames; feet ordered left, right).

    Attributes:
        planted: ``(F, 2)`` bool, the foot's lowest sole point within ``contact_height`` of
            the floor and its ankle within ``ankle_height`` of its standing height (a toe
            brushing the floor mid-swing is not planted).
        com_offset: ``(F,)`` m, in single stance (one foot planted): the centre of mass's
            offset from the stance sole's centre line across the sole, positive toward the
            swing foot; NaN in double stance or flight.
        sole_roll: ``(F, 2)`` deg, a planted sole's lean across (about its long axis); NaN
            when not planted.
        slide: ``(F, 2)`` m/s, horizontal speed of a sole's centre planted in this frame and
            the previous one; 0 otherwise.
        half_width: m, half the width of the simulated sole.
    """

    planted: np.ndarray
    com_offset: np.ndarray
    sole_roll: np.ndarray
    slide: np.ndarray
    half_width: float


def support(motion: Motion, body: BodyTemplate, contact_height: float = 0.02,
            ankle_height: float = 0.03) -> Support:
    """The support figures of ``motion`` (on ``body``'s skeleton) for ``body``'s feet.

    Args:
        motion: the reference, on ``body.skeleton``.
        body: the simulated body template (its masses place the centre of mass).
        contact_height, ankle_height: m, the planted rule (``Support.planted``).
    """
    require_numbers("support", contact_height=contact_height, ankle_height=ankle_height)
    if not motion.skeleton.same_structure(body.skeleton):
        raise ShapeError(f"support: the motion's skeleton ({len(motion.skeleton)} joints) is not "
                         f"the body template {body.name!r}; retarget it first")
    gpos, grot = motion.gpos, motion.grot
    F = motion.n_frames
    m = np.asarray(body.mass, float)
    ctr = segment_centres(body)
    com = np.einsum("j,fjk->fk", m, gpos + quat.rotate(grot, np.broadcast_to(ctr, gpos.shape)))
    com /= m.sum()
    sk = body.skeleton
    ankles = [next(j for j in side if sk.names[j].endswith("Foot")) for side in foot_joints(body)]
    rest = sk.rest_positions()
    planted = np.zeros((F, 2), bool)
    roll = np.full((F, 2), np.nan)
    slide = np.zeros((F, 2))
    centre = np.zeros((F, 2, 3))
    lateral = np.zeros((F, 2, 3))
    sj, spts = sole_points(body)                          # the foot boxes' bottom corners
    corners = np.broadcast_to(spts, (F,) + spts.shape)
    sole_z = (gpos[:, sj] + quat.rotate(grot[:, sj], corners))[..., 2]      # (F, K)
    half_width = max(float(foot_box(body, j)[0][1]) for side in foot_joints(body) for j in side)
    for sd, side in enumerate(foot_joints(body)):
        low = sole_z[:, np.isin(sj, side)].min(axis=1)
        a = ankles[sd]
        standing = float(rest[a, 2])          # the rest pose stands its soles on z = 0
        planted[:, sd] = (low < contact_height) & (gpos[:, a, 2] < standing + ankle_height)
        half, c = foot_box(body, a)
        centre[:, sd] = gpos[:, a] + quat.rotate(grot[:, a], np.broadcast_to(
            c - np.array([0.0, 0.0, half[2]]), (F, 3)))
        ly = quat.rotate(grot[:, a], np.broadcast_to(_Y, (F, 3)))
        r = np.degrees(np.arcsin(np.clip(ly[:, 2], -1.0, 1.0)))
        roll[:, sd] = np.where(planted[:, sd], r, np.nan)
        fx = quat.rotate(grot[:, a], np.broadcast_to(_X, (F, 3)))
        fx[:, 2] = 0.0
        fx /= np.maximum(np.linalg.norm(fx, axis=-1, keepdims=True), 1e-9)
        lateral[:, sd] = np.stack([-fx[:, 1], fx[:, 0], np.zeros(F)], axis=-1)   # the foot's left
        if F > 1:
            v = np.linalg.norm(np.diff(centre[:, sd, :2], axis=0), axis=-1) * motion.fps
            both = planted[1:, sd] & planted[:-1, sd]
            slide[1:, sd] = np.where(both, v, 0.0)
    offset = np.full(F, np.nan)
    for sd in (0, 1):
        single = planted[:, sd] & ~planted[:, 1 - sd]
        toward_swing = -1.0 if sd == 0 else 1.0      # the right foot is the left foot's right
        d = np.sum((com - centre[:, sd]) * lateral[:, sd], axis=-1) * toward_swing
        offset[single] = d[single]
    return Support(planted, offset, roll, slide, half_width)


def support_summary(s: Support) -> dict:
    """A few numbers of ``Support``: single-stance frames, the centre of mass's offset from the
    stance sole's centre line (median and 90th percentile, m), the sole's half-width (m), the
    largest planted-sole roll (deg), the largest planted-sole slide (m/s) and its frame."""
    off = s.com_offset[np.isfinite(s.com_offset)]
    roll = np.abs(s.sole_roll[np.isfinite(s.sole_roll)])
    f = int(np.argmax(s.slide.max(axis=1))) if s.slide.size else 0
    return {
        "single_stance_frames": int(len(off)),
        "com_offset_median_m": float(np.median(off)) if len(off) else float("nan"),
        "com_offset_p90_m": float(np.percentile(off, 90)) if len(off) else float("nan"),
        "sole_half_width_m": s.half_width,
        "sole_roll_max_deg": float(roll.max()) if len(roll) else 0.0,
        "slide_max_m_s": float(s.slide.max()) if s.slide.size else 0.0,
        "slide_max_frame": f,
    }
