"""The feature database of motion matching (Eq. 3.11-3.16 of the thesis excerpt, after Holden's
``database.h``): one normalised, weighted feature vector per frame of a ``PoseDatabase``.

The 27 locomotion features, all in *character space* (the simulation bone's frame: +X forward,
+Y left, +Z up):

* ``lfoot_pos``, ``rfoot_pos`` (3 each): foot positions relative to the simulation bone.
* ``lfoot_vel``, ``rfoot_vel``, ``hip_vel`` (3 each): *world* velocities expressed in the current
  character frame (as Holden: a planted foot has zero velocity; the thesis' "finite difference of
  z^l" would give the hips a velocity near zero and is not what is meant).
* ``traj_pos`` (2 x 3): future floor positions of the simulation bone 0.333, 0.666 and 1.0 s ahead,
  relative to the current one, in its frame (Eq. 3.12).
* ``traj_dir`` (2 x 3): its future forward directions in the current frame (Eq. 3.13).

Frames whose future runs past their clip's end look at the clip's last frame instead (Holden);
``valid_mask`` tells a search which frames have their whole future inside the clip.

Each group is normalised on its own: ``offset`` = per-dimension mean, ``scale`` = the group's
standard deviations averaged over its dimensions, divided by the group's weight (Holden). The
squared distance between normalised vectors therefore weighs a group by ``weight**2``; the
thesis' beta (Eq. 3.15-3.16) multiplies squared distances, so ``beta_thesis = weight**2``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

from .. import quat
from .._arrays import frozen
from ..errors import ShapeError, UnknownNameError, known_list
from .database import FOOT_NAMES, PoseDatabase, _fk_lpos, find_joint

__all__ = [
    "FeatureSpec", "ExtraFeature", "FeatureDatabase", "compute_features", "raw_features",
    "valid_mask", "query_from", "trajectory_frames",
]

_QUANTITIES = ("position", "velocity")


@dataclass(frozen=True)
class ExtraFeature:
    """A user-defined feature: one joint's position or velocity in character space.

    Attributes:
        joint: joint name in the database.
        quantity: ``"position"`` (relative to the simulation bone) or ``"velocity"`` (world
            velocity), both in the frame of the simulation bone at the current frame.
        frames: frame offsets from the current frame (``[0]`` = now; ``[20, 40]`` = future);
            clamped to the clip.
        weight: group weight.
        name: group name (default ``"<joint>_pos"`` / ``"<joint>_vel"``).
    """

    joint: str
    quantity: str = "position"
    frames: tuple = (0,)
    weight: float = 1.0
    name: str = ""

    def __post_init__(self):
        if not isinstance(self.joint, str) or not self.joint:
            raise ShapeError(f"extra feature: 'joint' must be a joint name, got {self.joint!r}")
        if self.quantity not in _QUANTITIES:
            raise ShapeError(f"extra feature {self.joint!r}: unknown quantity {self.quantity!r}; "
                             f"known: {', '.join(_QUANTITIES)}")
        try:
            frames = tuple(int(f) for f in np.atleast_1d(self.frames))
        except (TypeError, ValueError):
            raise ShapeError(f"extra feature {self.joint!r}: frames must be integers, "
                             f"got {self.frames!r}") from None
        if not frames or any(f != g for f, g in zip(frames, np.atleast_1d(self.frames))):
            raise ShapeError(f"extra feature {self.joint!r}: frames must be a non-empty list "
                             f"of integers, got {self.frames!r}")
        w = float(self.weight)
        if not np.isfinite(w) or w < 0:
            raise ShapeError(f"extra feature {self.joint!r}: weight must be >= 0, got {self.weight!r}")
        object.__setattr__(self, "frames", frames)
        object.__setattr__(self, "weight", w)
        if not self.name:
            object.__setattr__(self, "name",
                               f"{self.joint}_{'pos' if self.quantity == 'position' else 'vel'}")

    @classmethod
    def from_dict(cls, d: Mapping) -> "ExtraFeature":
        known = {"joint", "quantity", "frames", "weight", "name"}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ShapeError(f"extra feature: unknown key(s) {', '.join(unknown)}; "
                             f"known: {', '.join(sorted(known))}")
        if "joint" not in d:
            raise ShapeError("extra feature: 'joint' is required")
        return cls(**dict(d))


@dataclass(frozen=True)
class FeatureSpec:
    """Which features, and how much each counts.

    Attributes:
        beta_v: weight of the hip velocity.
        beta_l: weight of the foot positions and velocities.
        beta_p: weight of the trajectory positions.
        beta_d: weight of the trajectory directions.
        beta_q: quality slider, multiplies the pose features (v, l and the extras).
        beta_r: responsiveness slider, multiplies the trajectory features (p, d).
        trajectory_times: seconds ahead of the trajectory samples (frames at the database rate:
            20/40/60 at 60 fps).
        feet: left and right foot joints (common names are tried when these are missing).
        extra: user features, ``ExtraFeature`` or dicts such as
            ``{"joint": "LeftHand", "quantity": "velocity", "frames": [0], "weight": 1.0}``.
    """

    beta_v: float = 1.0
    beta_l: float = 1.0
    beta_p: float = 1.0
    beta_d: float = 1.5
    beta_q: float = 1.0
    beta_r: float = 1.0
    trajectory_times: tuple = (0.333, 0.666, 1.0)
    feet: tuple = ("LeftFoot", "RightFoot")
    extra: tuple = field(default=())

    def __post_init__(self):
        for k in ("beta_v", "beta_l", "beta_p", "beta_d", "beta_q", "beta_r"):
            v = getattr(self, k)
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ShapeError(f"FeatureSpec.{k} must be a number, got {v!r}") from None
            if not np.isfinite(v) or v < 0:
                raise ShapeError(f"FeatureSpec.{k} must be finite and >= 0, got {v!r}")
            object.__setattr__(self, k, v)
        times = tuple(float(t) for t in np.atleast_1d(self.trajectory_times))
        if not times or any(not np.isfinite(t) or t <= 0 for t in times):
            raise ShapeError(f"FeatureSpec.trajectory_times must be positive seconds, "
                             f"got {self.trajectory_times!r}")
        if len(tuple(self.feet)) != 2:
            raise ShapeError("FeatureSpec.feet must name two joints (left, right)")
        extra = tuple(e if isinstance(e, ExtraFeature) else ExtraFeature.from_dict(e)
                      for e in self.extra)
        object.__setattr__(self, "trajectory_times", times)
        object.__setattr__(self, "feet", tuple(str(f) for f in self.feet))
        object.__setattr__(self, "extra", extra)

    def group_weights(self) -> dict[str, float]:
        """Weight of each built-in and extra group (sliders applied)."""
        w = {
            "lfoot_pos": self.beta_q * self.beta_l, "rfoot_pos": self.beta_q * self.beta_l,
            "lfoot_vel": self.beta_q * self.beta_l, "rfoot_vel": self.beta_q * self.beta_l,
            "hip_vel": self.beta_q * self.beta_v,
            "traj_pos": self.beta_r * self.beta_p, "traj_dir": self.beta_r * self.beta_d,
        }
        for e in self.extra:
            if e.name in w:
                raise ShapeError(f"extra feature name {e.name!r} is already used; give it a "
                                 f"'name'")
            w[e.name] = self.beta_q * e.weight
        return w


def trajectory_frames(spec: FeatureSpec, fps: float) -> tuple[int, ...]:
    """The trajectory offsets of ``spec`` in frames at ``fps`` (at least 1 each)."""
    return tuple(max(1, int(round(t * fps))) for t in spec.trajectory_times)


@dataclass(frozen=True, eq=False)
class FeatureDatabase:
    """Normalised, weighted features of every frame of a ``PoseDatabase``; arrays read-only.

    Attributes:
        X: ``(N, D)`` float32, ``(raw - offset) / scale``.
        offset: ``(D,)`` per-dimension mean of the raw features.
        scale: ``(D,)`` the group's mean standard deviation divided by its weight
            (``inf`` for a weight of zero: that group is all zeros).
        weights: ``(D,)`` each dimension's group weight.
        names: ``(D,)`` e.g. ``"lfoot_pos.x"``, ``"traj_pos+20.y"``.
        groups: read-only mapping group name -> ``slice`` of the dimensions.
        spec: the ``FeatureSpec`` used.
        fps: the database rate; ``trajectory_frames`` the trajectory offsets in frames.
    """

    X: np.ndarray
    offset: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    names: tuple
    groups: Mapping
    spec: FeatureSpec
    fps: float
    trajectory_frames: tuple

    def __post_init__(self):
        X = frozen(self.X, np.float32, (None, None), "X")
        D = X.shape[1]
        names = tuple(str(n) for n in self.names)
        if len(names) != D:
            raise ShapeError(f"names: expected {D} names, got {len(names)}")
        for k in ("offset", "scale", "weights"):
            object.__setattr__(self, k, frozen(getattr(self, k), float, (D,), k))
        groups = {str(k): v for k, v in dict(self.groups).items()}
        for k, v in groups.items():
            if not isinstance(v, slice) or not 0 <= v.start < v.stop <= D:
                raise ShapeError(f"groups[{k!r}] must be a slice inside 0..{D}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "groups", MappingProxyType(groups))
        object.__setattr__(self, "trajectory_frames", tuple(int(f) for f in self.trajectory_frames))

    @property
    def n_frames(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    def group(self, name: str) -> slice:
        """Slice of group ``name``; ``UnknownNameError`` listing the groups otherwise."""
        if name not in self.groups:
            raise UnknownNameError(f"unknown feature group {name!r}; known: "
                                   f"{known_list(self.groups)}")
        return self.groups[name]

    def _sl(self, group: str | None, n: int) -> slice:
        sl = slice(0, self.n_features) if group is None else self.group(group)
        if n != sl.stop - sl.start:
            what = "all features" if group is None else f"group {group!r}"
            raise ShapeError(f"{what}: expected {sl.stop - sl.start} values in the last axis, "
                             f"got {n}")
        return sl

    def normalize(self, raw: np.ndarray, group: str | None = None) -> np.ndarray:
        """Raw features ``(..., D)`` (or ``(..., d)`` of one ``group``) to normalised ones."""
        raw = np.asarray(raw, dtype=float)
        sl = self._sl(group, raw.shape[-1])
        return (raw - self.offset[sl]) / self.scale[sl]

    def denormalize(self, x: np.ndarray, group: str | None = None) -> np.ndarray:
        """Inverse of ``normalize``; a zero-weight group comes back as its mean."""
        x = np.asarray(x, dtype=float)
        sl = self._sl(group, x.shape[-1])
        scale = self.scale[sl]
        finite = np.isfinite(scale)
        return np.where(finite, x * np.where(finite, scale, 0.0), 0.0) + self.offset[sl]


# --------------------------------------------------------------------------------------------

def _clip_bounds(db: PoseDatabase) -> tuple[np.ndarray, np.ndarray]:
    """``(N,)`` start and (exclusive) stop of each frame's clip."""
    lengths = db.range_stops - db.range_starts
    return np.repeat(db.range_starts, lengths), np.repeat(db.range_stops, lengths)


def _clip_central_diff(x: np.ndarray, starts: np.ndarray, stops: np.ndarray, fps: float):
    """Central differences over axis 0 that never cross a clip boundary."""
    N = len(x)
    i = np.arange(N)
    nxt = np.minimum(i + 1, stops - 1)
    prv = np.maximum(i - 1, starts)
    span = (nxt - prv).astype(float)
    return (x[nxt] - x[prv]) * (fps / span).reshape((N,) + (1,) * (x.ndim - 1))


def valid_mask(db: PoseDatabase, spec: FeatureSpec = FeatureSpec()) -> np.ndarray:
    """``(N,)`` bool: frames whose trajectory (and extra) samples all lie inside their clip,
    the frames a search should consider (the last 60 of each clip are excluded at 60 fps)."""
    ahead = max(trajectory_frames(spec, db.fps))
    behind = 0
    for e in spec.extra:
        ahead = max(ahead, max(e.frames))
        behind = max(behind, -min(e.frames))
    starts, stops = _clip_bounds(db)
    i = np.arange(db.n_frames)
    return (i + ahead <= stops - 1) & (i - behind >= starts)


def raw_features(db: PoseDatabase, spec: FeatureSpec = FeatureSpec()
                 ) -> tuple[np.ndarray, tuple, dict]:
    """Un-normalised features: ``raw (N, D)``, ``names (D,)``, ``groups`` name -> slice."""
    if not isinstance(db, PoseDatabase):
        raise ShapeError("raw_features needs a PoseDatabase")
    names = db.names
    try:
        lfoot = db.index(find_joint(names[1:], (spec.feet[0],) + FOOT_NAMES["left"], "left foot"))
        rfoot = db.index(find_joint(names[1:], (spec.feet[1],) + FOOT_NAMES["right"],
                                    "right foot"))
    except UnknownNameError as exc:
        raise UnknownNameError(f"features: {exc}") from None
    for e in spec.extra:
        if e.joint not in names:
            raise UnknownNameError(f"extra feature: unknown joint {e.joint!r}; known: "
                                   f"{known_list(names[1:], 40)}")
    N = db.n_frames
    fps = db.fps
    starts, stops = _clip_bounds(db)
    i = np.arange(N)
    root_p, root_r = db.lpos[:, 0], db.lrot[:, 0]
    gpos = _fk_lpos(db.parents, db.lpos, db.lrot)[0]               # world
    gvel = _clip_central_diff(gpos, starts, stops, fps)           # world velocities

    def char_pos(j, idx):   # joint j at frames idx, relative to the sim bone at the current frame
        return quat.inv_rotate(root_r, gpos[idx, j] - root_p)

    def char_vel(j, idx):
        return quat.inv_rotate(root_r, gvel[idx, j])

    cols, out_names, groups = [], [], {}

    def add(group, values, labels):
        start = sum(c.shape[1] for c in cols)
        cols.append(values)
        out_names.extend(f"{group}{lab}" for lab in labels)
        groups[group] = slice(start, start + values.shape[1])

    xyz = [".x", ".y", ".z"]
    add("lfoot_pos", char_pos(lfoot, i), xyz)
    add("rfoot_pos", char_pos(rfoot, i), xyz)
    add("lfoot_vel", char_vel(lfoot, i), xyz)
    add("rfoot_vel", char_vel(rfoot, i), xyz)
    add("hip_vel", char_vel(1, i), xyz)
    tf = trajectory_frames(spec, fps)
    fut = [np.minimum(i + k, stops - 1) for k in tf]        # clamp to the clip's last frame
    tp = [quat.inv_rotate(root_r, root_p[idx] - root_p)[:, :2] for idx in fut]
    td = [quat.inv_rotate(root_r, quat.rotate(root_r[idx], [1.0, 0.0, 0.0]))[:, :2] for idx in fut]
    add("traj_pos", np.concatenate(tp, axis=1), [f"+{k}{a}" for k in tf for a in (".x", ".y")])
    add("traj_dir", np.concatenate(td, axis=1), [f"+{k}{a}" for k in tf for a in (".x", ".y")])
    for e in spec.extra:
        j = db.index(e.joint)
        vals, labels = [], []
        for k in e.frames:
            idx = np.clip(i + k, starts, stops - 1)
            vals.append(char_pos(j, idx) if e.quantity == "position" else char_vel(j, idx))
            labels += [f"{'+' if k >= 0 else ''}{k}{a}" for a in xyz]
        add(e.name, np.concatenate(vals, axis=1), labels)
    return np.concatenate(cols, axis=1), tuple(out_names), groups


def compute_features(db: PoseDatabase, spec: FeatureSpec = FeatureSpec()) -> FeatureDatabase:
    """The ``FeatureDatabase`` of ``db`` (see the module docstring).

    Raises:
        UnknownNameError: feet or an extra feature's joint not in the database.
        ShapeError: a weighted group with no spread over the database (its standard deviation
            is zero, so it cannot be normalised), named in the message.
    """
    raw, names, groups = raw_features(db, spec)
    weights = spec.group_weights()
    D = raw.shape[1]
    offset = raw.mean(axis=0)
    scale = np.ones(D)
    wvec = np.zeros(D)
    for g, sl in groups.items():
        w = weights[g]
        std = float(raw[:, sl].std(axis=0).mean())
        wvec[sl] = w
        if w == 0.0:
            scale[sl] = np.inf
            continue
        if not np.isfinite(std) or std < 1e-8:
            raise ShapeError(f"feature group {g!r} ({', '.join(names[sl][:3])}, …) has no spread "
                             f"over the database (std {std:.3g}); it cannot be normalised; give it "
                             f"weight 0 or add clips that vary it")
        scale[sl] = std / w
    X = ((raw - offset) / scale).astype(np.float32)
    return FeatureDatabase(X=X, offset=offset, scale=scale, weights=wvec, names=names,
                           groups=groups, spec=spec, fps=db.fps,
                           trajectory_frames=trajectory_frames(spec, db.fps))


def query_from(features: FeatureDatabase, db: PoseDatabase, frame: int) -> np.ndarray:
    """A writable copy ``(D,)`` of frame ``frame``'s normalised feature vector: the query a
    controller starts from before overwriting its trajectory groups."""
    if features.n_frames != db.n_frames:
        raise ShapeError(f"features ({features.n_frames} frames) do not belong to this database "
                         f"({db.n_frames} frames)")
    frame = int(frame)
    if not 0 <= frame < db.n_frames:
        raise ShapeError(f"frame {frame} is outside 0..{db.n_frames - 1}")
    return np.array(features.X[frame], dtype=np.float32)
