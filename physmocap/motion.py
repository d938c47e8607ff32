"""``Motion``: a skeleton animated over frames (root trajectory + local joint rotations)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType

import numpy as np

from . import quat
from ._arrays import frozen
from .errors import ShapeError
from .skeleton import Skeleton, forward_kinematics, rest_turn

__all__ = ["Motion"]


@dataclass(frozen=True, eq=False)
class Motion:
    """Skeletal motion; arrays are read-only, frames first.

    Attributes:
        skeleton: the fixed-limb-length tree.
        fps: frames per second (float, > 0).
        root_pos: ``(F, 3)`` m, world position of the root joint (Z up).
        lrot: ``(F, J, 4)`` xyzw, local rotation of each joint (the root's is global).
        meta: read-only mapping of provenance (source file, unit, up axis, …); not used in maths.
    """

    skeleton: Skeleton
    fps: float
    root_pos: np.ndarray
    lrot: np.ndarray
    meta: MappingProxyType = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.skeleton, Skeleton):
            raise ShapeError("Motion.skeleton must be a Skeleton")
        try:
            fps = float(self.fps)
        except (TypeError, ValueError):
            fps = float("nan")
        if not np.isfinite(fps) or fps <= 0 or isinstance(self.fps, (bool, str)):
            raise ShapeError(f"fps must be a positive number, got {self.fps!r}")
        J = len(self.skeleton)
        lrot = frozen(self.lrot, float, (None, J, 4), "lrot")
        F = lrot.shape[0]
        root_pos = frozen(self.root_pos, float, (F, 3), "root_pos")
        if not (np.all(np.isfinite(lrot)) and np.all(np.isfinite(root_pos))):
            raise ShapeError("motion arrays must be finite")
        norms = np.linalg.norm(lrot, axis=-1)
        off = np.max(np.abs(norms - 1.0)) if F else 0.0
        if off > 1e-3:
            raise ShapeError("lrot must hold unit quaternions (xyzw)")
        if off > 1e-12:     # nearly unit (a plain lerp): as given, FK stretched bones by 1 %
            lrot = frozen(lrot / norms[..., None], float, (F, J, 4), "lrot")
        object.__setattr__(self, "fps", fps)
        object.__setattr__(self, "lrot", lrot)
        object.__setattr__(self, "root_pos", root_pos)
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))

    @property
    def n_frames(self) -> int:
        return self.lrot.shape[0]

    @property
    def duration(self) -> float:
        """Seconds from the first to the last frame."""
        return max(self.n_frames - 1, 0) / self.fps

    @cached_property
    def _fk(self) -> tuple[np.ndarray, np.ndarray]:
        gpos, grot = forward_kinematics(self.skeleton, self.lrot, self.root_pos)
        gpos.setflags(write=False)
        grot.setflags(write=False)
        return gpos, grot

    @property
    def gpos(self) -> np.ndarray:
        """``(F, J, 3)`` m, global joint positions (computed once, then cached)."""
        return self._fk[0]

    @property
    def grot(self) -> np.ndarray:
        """``(F, J, 4)`` xyzw, global joint rotations (computed once, then cached)."""
        return self._fk[1]

    def __getitem__(self, frames) -> "Motion":
        """Frames by slice or index array: ``motion[10:20]``; a slice's step divides the rate
        (``motion[::2]`` keeps the motion's speed at half the frames per second)."""
        idx = np.arange(self.n_frames)[frames]
        idx = np.atleast_1d(idx)
        step = frames.step if isinstance(frames, slice) and frames.step else 1
        return replace(self, root_pos=self.root_pos[idx], lrot=self.lrot[idx],
                       fps=self.fps / abs(step))

    def with_skeleton(self, skeleton: Skeleton) -> "Motion":
        """The same rotations on another skeleton of the same structure (other limb lengths)."""
        if not isinstance(skeleton, Skeleton) or not skeleton.same_structure(self.skeleton):
            raise ShapeError("with_skeleton needs a skeleton with the same joints and parents")
        return replace(self, skeleton=skeleton)

    def turned_rest(self, C: np.ndarray) -> "Motion":
        """The same movement (every joint's world position the same) on the skeleton whose
        frames are turned by ``C (3, 3)`` (``Skeleton.turned``): each segment's world rotation
        ``G C^T``, so local rotations ``C q C^T`` and the root's ``q C^T``."""
        C = np.asarray(C, float)
        if np.allclose(C, np.eye(3)):
            return self
        c = quat.from_matrix(C)
        lrot = quat.mul(quat.mul(c, self.lrot), quat.conj(c))
        lrot[:, 0] = quat.mul(self.lrot[:, 0], quat.conj(c))
        return replace(self, skeleton=self.skeleton.turned(C), lrot=quat.normalize(lrot))

    def in_frames_of(self, skeleton: Skeleton) -> "Motion":
        """This motion on ``skeleton``'s joint frames (``turned_rest`` by ``rest_turn``): a
        body's motion written to a BVH (``write_bvh`` stands its rest up) and read back comes
        back to the body's frames; any other motion is itself."""
        return self.turned_rest(rest_turn(self.skeleton, skeleton))

    def lrot_unrolled(self) -> np.ndarray:
        """``(F, J, 4)`` local rotations with signs made continuous over time."""
        return quat.unroll(self.lrot, axis=0)
