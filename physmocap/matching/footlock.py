"""Foot locking: while a foot is in contact it stays where it touched down (two-bone IK on the
leg), easing in and out over a few frames. Applied to a finished ``Motion`` (vectorised over
frames), e.g. the controller's output, to remove the sliding that root synchronisation and
blending cause.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from .._arrays import intervals
from ..errors import require_counts, require_numbers
from ..ik import two_bone_ik_local
from ..motion import Motion

__all__ = ["lock_feet"]


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _lock_target(foot: np.ndarray, contact: np.ndarray, blend: int,
                 max_slide: float) -> np.ndarray:
    """``(F, 3)`` m, where the locked foot goes: ``foot`` (the animated foot, ``(F, 3)``) pulled
    toward each plant (its position where the contact began) by that plant's weight, 1 in
    contact and eased over ``blend`` frames around it, never past the neighbouring plants'
    contacts. Between two plants closer than ``2 blend`` frames the two pulls mix (weights
    summing past 1 are scaled to 1): the ease into a plant kept the plant before's position
    and jumped to the new one a frame before contact (0.23 m on the sharp turns). A plant
    further than ``max_slide`` from the animated foot is let go over ``blend`` frames from
    the first such frame: dropped at once, the foot jumped back in one frame."""
    F = len(foot)
    pull, total = np.zeros((F, 3)), np.zeros(F)
    iv = intervals(contact)
    for i, (a, b) in enumerate(iv):
        lo = max(a - blend, iv[i - 1][1] if i else 0, 0)
        hi = min(b + blend, iv[i + 1][0] if i + 1 < len(iv) else F, F)
        f = np.arange(lo, hi)
        w = _smoothstep(1.0 - np.where(f < a, a - f, np.where(f >= b, f - b + 1, 0))
                        / max(blend, 1))
        off = foot[a] - foot[lo:hi]
        far = np.flatnonzero(np.linalg.norm(off, axis=-1) > max_slide)
        if far.size:
            w = w * np.where(f >= f[far[0]],
                             _smoothstep(1.0 - (f - f[far[0]] + 1) / max(blend, 1)), 1.0)
        pull[lo:hi] += w[:, None] * off
        total[lo:hi] += w
    return foot + pull / np.maximum(total, 1.0)[:, None]


def lock_feet(motion: Motion, feet: tuple[str, str], contacts: np.ndarray, blend: int = 5,
              max_slide: float = 0.25) -> Motion:
    """Pin each foot joint where it touched down while ``contacts`` says it is in contact.

    Args:
        motion: the motion (its skeleton must have hip-knee-foot chains above ``feet``).
        feet: the two joints whose contact is given (toes or feet); the lock holds the foot
            (ankle) above a toe joint, or the joint itself if it is a foot.
        contacts: ``(F, 2)`` bool, left/right in contact.
        blend: frames over which a lock eases in and out.
        max_slide: m; a lock further than this from the animated foot is let go (the animation
            has moved on, e.g. a new clip after a transition).
    """
    require_counts("lock_feet", ("blend",), blend=blend)                     # frames
    require_numbers("lock_feet", max_slide=max_slide)
    sk = motion.skeleton
    gpos, grot = (np.array(x) for x in (motion.gpos, motion.grot))
    lrot = np.array(motion.lrot)
    for side, name in enumerate(feet):
        j = sk.index(name)
        f = int(sk.parents[j]) if "toe" in name.lower() else j
        k, h = int(sk.parents[f]), int(sk.parents[sk.parents[f]])
        if min(f, k, h) <= 0:
            continue
        target = _lock_target(gpos[:, f], np.asarray(contacts)[:, side], blend, max_slide)
        # the foot keeps its world rotation
        lrot[:, h], lrot[:, k], lrot[:, f] = two_bone_ik_local(
            gpos[:, h], gpos[:, k], gpos[:, f], target, grot[:, sk.parents[h]], grot[:, h],
            grot[:, k], grot[:, f])
        # later chains see the corrected rotations
        new = Motion(sk, motion.fps, motion.root_pos, quat.normalize(lrot), dict(motion.meta))
        gpos, grot = np.array(new.gpos), np.array(new.grot)
    return Motion(sk, motion.fps, motion.root_pos, quat.normalize(lrot),
                  {**dict(motion.meta), "feet_locked": True})
