"""``ThreePointTrack``: a VR user's head-mounted display and two hand controllers over time.

Each point has a position (m, world, Z up) and an orientation (xyzw, device frame to world). A
device frame is the body frame: x forward, y left, z up, so a user standing upright and looking
ahead with the controllers held level has identity orientations at all three points (for tracks
extracted from a skeleton: the orientations the joints have in the skeleton's rest pose turned
upright, see ``matching.avatar.rest_frame``). File format: ``io/tracking.py``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from ._arrays import frozen
from .errors import ShapeError

__all__ = ["ThreePointTrack", "POINTS"]

#: The tracked points, in the order of the ``(T, 3, …)`` arrays.
POINTS = ("head", "lhand", "rhand")


@dataclass(frozen=True, eq=False)
class ThreePointTrack:
    """Head and hands over time; arrays are read-only.

    Attributes:
        times: ``(T,)`` s, strictly increasing, T >= 2 (need not start at 0).
        pos: ``(T, 3, 3)`` m, positions of head, left hand, right hand (``POINTS`` order).
        rot: ``(T, 3, 4)`` xyzw unit quaternions, device frame to world.
    """

    times: np.ndarray
    pos: np.ndarray
    rot: np.ndarray

    def __post_init__(self):
        times = frozen(self.times, float, (None,), "ThreePointTrack.times")
        T = len(times)
        if T < 2 or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
            raise ShapeError("ThreePointTrack.times: need >= 2 finite, strictly increasing times")
        pos = frozen(self.pos, float, (T, 3, 3), "ThreePointTrack.pos")
        rot = np.asarray(frozen(self.rot, float, (T, 3, 4), "ThreePointTrack.rot"))
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(rot))):
            raise ShapeError("ThreePointTrack: positions and orientations must be finite")
        n = np.linalg.norm(rot, axis=-1)
        if np.any(n < 1e-6):
            t, k = np.argwhere(n < 1e-6)[0]
            raise ShapeError(f"ThreePointTrack.rot: zero quaternion ({POINTS[k]} at "
                             f"t = {times[t]:g} s)")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "pos", pos)
        object.__setattr__(self, "rot", frozen(quat.unroll(quat.normalize(rot), axis=0), float,
                                               (T, 3, 4), "rot"))

    @property
    def n_samples(self) -> int:
        return len(self.times)

    @property
    def duration(self) -> float:
        """Seconds from the first to the last sample."""
        return float(self.times[-1] - self.times[0])

    def sample(self, t) -> tuple[np.ndarray, np.ndarray]:
        """Positions ``(..., 3, 3)`` (linear) and orientations ``(..., 3, 4)`` (slerp) at times
        ``t (...)`` s; held constant outside the recording."""
        t = np.clip(np.asarray(t, dtype=float), self.times[0], self.times[-1])
        i = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, len(self.times) - 2)
        a = ((t - self.times[i]) / (self.times[i + 1] - self.times[i]))[..., None]
        pos = self.pos[i] + a[..., None] * (self.pos[i + 1] - self.pos[i])
        rot = quat.slerp(self.rot[i], self.rot[i + 1], np.broadcast_to(a, a.shape[:-1] + (3,)))
        return pos, rot
