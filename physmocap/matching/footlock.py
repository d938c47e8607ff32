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


def _weights(contact: np.ndarray, blend: int) -> tuple[np.ndarray, np.ndarray]:
    """Lock weight ``(F,)`` in [0, 1] (1 in contact, eased over ``blend`` frames around) and the
    index ``(F,)`` of the frame whose position each frame is locked to (-1: none)."""
    F = len(contact)
    lock_frame = np.full(F, -1)
    w = np.zeros(F)
    f = np.arange(F)
    for a, b in intervals(contact):
        lo, hi = max(0, a - blend), min(F, b + blend)
        lock_frame[lo:hi] = np.where(lock_frame[lo:hi] < 0, a, lock_frame[lo:hi])
        d = np.where(f[lo:hi] < a, a - f[lo:hi], np.where(f[lo:hi] >= b, f[lo:hi] - b + 1, 0))
        x = np.clip(1.0 - d / max(blend, 1), 0.0, 1.0)
        w[lo:hi] = np.maximum(w[lo:hi], x * x * (3.0 - 2.0 * x))     # smoothstep
    return w, lock_frame


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
        w, lock = _weights(np.asarray(contacts)[:, side], blend)
        has = lock >= 0
        target = gpos[:, f].copy()
        locked = gpos[np.maximum(lock, 0), f]
        far = np.linalg.norm(locked - gpos[:, f], axis=-1) > max_slide
        w = np.where(has & ~far, w, 0.0)
        target = target + w[:, None] * (locked - target)
        # the foot keeps its world rotation
        lrot[:, h], lrot[:, k], lrot[:, f] = two_bone_ik_local(
            gpos[:, h], gpos[:, k], gpos[:, f], target, grot[:, sk.parents[h]], grot[:, h],
            grot[:, k], grot[:, f])
        # later chains see the corrected rotations
        new = Motion(sk, motion.fps, motion.root_pos, quat.normalize(lrot), dict(motion.meta))
        gpos, grot = np.array(new.gpos), np.array(new.grot)
    return Motion(sk, motion.fps, motion.root_pos, quat.normalize(lrot),
                  {**dict(motion.meta), "feet_locked": True})
