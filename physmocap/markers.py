"""Marker data: ``MarkerTrajectories`` (what a capture saw) and ``MarkerSet`` (where markers sit)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from ._arrays import frozen
from .errors import ShapeError, UnknownNameError, known_list

__all__ = ["MarkerTrajectories", "MarkerSet"]


def _unique_names(names, what: str) -> tuple:
    names = tuple(str(n) for n in names)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ShapeError(f"duplicate {what} names: {', '.join(dup)}")
    return names


@dataclass(frozen=True, eq=False)
class MarkerTrajectories:
    """Captured 3D points over time, in the Z-up world.

    Attributes:
        labels: ``(M,)`` unique point labels, subject prefix removed.
        fps: frames per second (> 0).
        pos: ``(F, M, 3)`` m; NaN where the point was not seen.
        is_virtual: ``(M,)`` bool, True for model outputs and virtual points (joint centres,
            angles, segment frames) that are not physical markers.
        subject: the subject name from the file, or ``""``.
        meta: read-only provenance (file, unit, up axis, …).
        residual: ``(F, M)`` m (float32) or None, each sample's residual as a C3D keeps it:
            > 0 the reconstruction's residual, 0 computed (gap-filled, a solved joint
            centre), NaN unknown or missing.
    """

    labels: tuple
    fps: float
    pos: np.ndarray
    is_virtual: np.ndarray | None = None
    subject: str = ""
    meta: MappingProxyType = field(default_factory=dict)
    residual: np.ndarray | None = None

    def __post_init__(self):
        labels = _unique_names(self.labels, "marker")
        M = len(labels)
        fps = float(self.fps)
        if not np.isfinite(fps) or fps <= 0:
            raise ShapeError(f"fps must be a positive number, got {self.fps!r}")
        pos = frozen(self.pos, float, (None, M, 3), "pos")
        if np.any(np.isinf(pos)):
            raise ShapeError("marker positions must be finite or NaN (missing), not infinite")
        virt = np.zeros(M, bool) if self.is_virtual is None else self.is_virtual
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "fps", fps)
        object.__setattr__(self, "pos", pos)
        object.__setattr__(self, "is_virtual", frozen(virt, bool, (M,), "is_virtual"))
        if self.residual is not None:
            res = frozen(self.residual, np.float32, (pos.shape[0], M), "residual")
            if np.any(res < 0) or np.any(np.isinf(res)):
                raise ShapeError("residual must hold finite values >= 0 (m) or NaN (unknown)")
            object.__setattr__(self, "residual", res)
        object.__setattr__(self, "subject", str(self.subject))
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))

    @property
    def n_frames(self) -> int:
        return self.pos.shape[0]

    @property
    def duration(self) -> float:
        return max(self.n_frames - 1, 0) / self.fps

    def index(self, label: str) -> int:
        try:
            return self.labels.index(label)
        except ValueError:
            raise UnknownNameError(
                f"unknown marker {label!r}; known: {known_list(self.labels)}") from None

    def select(self, labels) -> "MarkerTrajectories":
        """Only the named points, in the given order."""
        idx = [self.index(l) for l in labels]
        if idx == list(range(len(self.labels))):
            return self                       # frozen: sharing is safe, and a long take is big
        pos = np.empty((self.n_frames, len(idx), 3))
        np.take(self.pos, idx, axis=1, out=pos, mode="clip")   # "raise" buffers a copy
        pos.setflags(write=False)             # read-only, owning: taken without a second copy
        return replace(self, labels=tuple(self.labels[i] for i in idx), pos=pos,
                       is_virtual=self.is_virtual[idx],
                       residual=None if self.residual is None else self.residual[:, idx])

    def markers_only(self) -> "MarkerTrajectories":
        """Physical markers only (virtual points dropped)."""
        return self.select([l for l, v in zip(self.labels, self.is_virtual) if not v])

    def missing(self) -> np.ndarray:
        """``(F, M)`` bool, True where a sample is missing."""
        return np.isnan(self.pos).any(axis=-1)

    def gap_frames(self) -> dict[str, int]:
        """Missing frames per label."""
        return dict(zip(self.labels, self.missing().sum(axis=0).tolist()))


@dataclass(frozen=True, eq=False)
class MarkerSet:
    """Where each marker sits on the body.

    Attributes:
        names: ``(M,)`` marker labels.
        body: ``(M,)`` int, index of the skeleton joint whose segment carries the marker.
        offset: ``(M, 3)`` m, marker position in that joint's frame.
        weight: ``(M,)`` relative spring weight (>= 0).
    """

    names: tuple
    body: np.ndarray
    offset: np.ndarray
    weight: np.ndarray | None = None

    def __post_init__(self):
        names = _unique_names(self.names, "marker")
        M = len(names)
        body = frozen(self.body, int, (M,), "body")
        offset = frozen(self.offset, float, (M, 3), "offset")
        weight = frozen(np.ones(M) if self.weight is None else self.weight, float, (M,), "weight")
        if np.any(body < 0) or np.any(weight < 0) or not np.all(np.isfinite(offset)):
            raise ShapeError("marker set: body indices and weights must be >= 0, offsets finite")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "weight", weight)

    def __len__(self) -> int:
        return len(self.names)

    def subset(self, rows) -> "MarkerSet":
        """The markers at ``rows`` (indices into ``names``), in that order."""
        rows = np.asarray(rows, int)
        return MarkerSet(tuple(self.names[i] for i in rows), self.body[rows], self.offset[rows],
                         self.weight[rows])
