"""The pose database of motion matching (Eq. 3.1-3.10 of the thesis excerpt, after Holden's
``generate_database.py``), in physmocap's conventions: metres, Z up, xyzw quaternions.

All clips are resampled to one rate and concatenated frames-first into a struct of arrays;
``range_starts[c]:range_stops[c]`` is clip ``c``. A virtual root, the *simulation bone*, is added
as joint 0: the hips projected onto the floor (Eq. 3.4) with a yaw-only rotation that looks along
the hips' horizontal forward direction (Eq. 3.5-3.6). Its frame faces **+X** with **+Y** to the
character's left and +Z up (Unity's LookRotation with +Z forward becomes a plain yaw here; no
handedness flip is needed because our world is right-handed). The hips are then stored relative to
the simulation bone (Eq. 3.7-3.8), every other joint keeps its local rotation and its bone offset.

Velocities are central differences (Holden) of the *local* positions and rotations: for the
simulation bone that is its world velocity; for the hips, the velocity relative to the simulation
bone in its frame; angular velocities are ``to_scaled_axis(q[t+1] q[t]^-1) * fps`` averaged with
the backward difference, i.e. expressed in the parent's frame (the world for the simulation bone).
"""
from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping, Sequence

import numpy as np

from .. import quat
from .._arrays import frozen
from ..conventions import UP
from ..errors import (FileFormatError, SettingsError, ShapeError, UnknownNameError,
                      bad_number, known_list, require_counts, require_flags, require_numbers,
                      require_path, require_type)
from ..motion import Motion
from ..skeleton import Skeleton

__all__ = [
    "PoseDatabase", "build_database", "save_database", "load_database", "resample",
    "resampled_length",
    "standing_clip", "mirror_motion", "mirror_names", "find_joint", "tags_from_name", "SIM_ROOT",
    "FOOT_NAMES", "TOE_NAMES",
]

#: Name of the virtual root (joint 0 of every ``PoseDatabase``), as in Holden's code.
SIM_ROOT = "Simulation"
#: Format tag and version stored in every saved database.
FORMAT = "physmocap.PoseDatabase"
VERSION = 2     # 2: the source files' up axis (``up``)
MAX_FPS = 1000.0    # database rate, frames/s: optical capture rarely exceeds it

#: Common toe / foot joint names, tried in order (CMU, Mixamo, Bandai-Namco, games105, HumanBodyBones).
TOE_NAMES = {
    "left": ("LeftToes", "LeftToeBase", "LeftToe", "Toes_L", "Toe_L", "lToeJoint", "LeftToe_End",
             "l_toe", "LeftFoot", "Foot_L", "LeftAnkle", "lAnkle", "l_ankle"),
    "right": ("RightToes", "RightToeBase", "RightToe", "Toes_R", "Toe_R", "rToeJoint",
              "RightToe_End", "r_toe", "RightFoot", "Foot_R", "RightAnkle", "rAnkle", "r_ankle"),
}
FOOT_NAMES = {
    "left": ("LeftFoot", "Foot_L", "LeftAnkle", "lAnkle", "l_ankle", "LeftToeBase", "LeftToe",
             "LeftToes", "Toes_L", "lToeJoint"),
    "right": ("RightFoot", "Foot_R", "RightAnkle", "rAnkle", "r_ankle", "RightToeBase", "RightToe",
              "RightToes", "Toes_R", "rToeJoint"),
}

# Reflection of the world across its x-z plane (y -> -y): the sagittal plane of a character
# facing +X. Any vertical plane would do; this one keeps a +X-facing clip facing +X.
_MIRROR_WORLD = np.diag([1.0, -1.0, 1.0])


def _ro(a):
    """``a`` read-only, with the buffer it views (np.load returns reshaped views)."""
    a = np.asarray(a)
    b = a
    while isinstance(b, np.ndarray):
        b.setflags(write=False)
        b = b.base
    return a


# --------------------------------------------------------------------------------------------
# The data type
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PoseDatabase:
    """All clips as one struct of arrays, frames first; arrays are read-only.

    Attributes:
        names: ``(J+1,)`` joint names; ``names[0] == "Simulation"`` (the virtual root), then the
            clips' joints (``names[1]`` is their root, the hips).
        parents: ``(J+1,)`` int, ``parents[j] < j``, ``-1`` for the simulation bone.
        offsets: ``(J+1, 3)`` m, bone offsets of the first clip's skeleton (zero for the
            simulation bone; the hips' entry is the skeleton's root rest offset).
        end_sites: ``(J+1, 3)`` m, End Site offsets (NaN where none), for exports.
        fps: frames per second of every clip.
        lpos: ``(N, J+1, 3)`` m local positions. Joint 0: world position of the simulation bone
            (z = 0); joint 1: hips relative to it, in its frame; others: the clip's bone offsets.
        lrot: ``(N, J+1, 4)`` xyzw local rotations. Joint 0: world yaw of the simulation bone
            (its +X is the character's forward); joint 1: hips relative to it; others: local.
        lvel: ``(N, J+1, 3)`` m/s, time derivative of ``lpos`` (central differences per clip).
        lang: ``(N, J+1, 3)`` rad/s, angular velocity of ``lrot`` in the parent's frame.
        contacts: ``(N, 2)`` bool, left / right foot on the ground.
        range_starts, range_stops: ``(C,)`` int, clip ``c`` is frames ``[start, stop)``.
        clip_names: ``(C,)`` names (mirrored clips end in ``":mirror"``).
        mirrored: ``(C,)`` bool.
        tags: read-only mapping tag -> ``(N,)`` bool frame mask.
        contact_joints: the two joint names used for ``contacts`` (left, right).
        up: the up axis of the source files (``"y"`` for most BVH): their rest pose, which
            rest-pose retargeting aligns, has the root turned by that axis' conversion.
    """

    names: tuple
    parents: np.ndarray
    offsets: np.ndarray
    fps: float
    lpos: np.ndarray
    lrot: np.ndarray
    lvel: np.ndarray
    lang: np.ndarray
    contacts: np.ndarray
    range_starts: np.ndarray
    range_stops: np.ndarray
    clip_names: tuple
    mirrored: np.ndarray
    tags: Mapping = field(default_factory=dict)
    end_sites: np.ndarray | None = None
    contact_joints: tuple = ("", "")
    up: str = "z"

    def __post_init__(self):
        names = tuple(str(n) for n in self.names)
        J1 = len(names)
        if J1 < 2 or names[0] != SIM_ROOT:
            raise ShapeError(f"PoseDatabase.names must start with {SIM_ROOT!r} and hold the "
                             f"skeleton's joints after it")
        if len(set(names)) != J1:
            raise ShapeError("PoseDatabase.names must be unique")
        parents = frozen(self.parents, int, (J1,), "parents")
        if parents[0] != -1 or np.any(parents[1:] < 0) or np.any(parents[1:] >= np.arange(1, J1)):
            raise ShapeError("parents must satisfy parents[0] == -1 and 0 <= parents[j] < j")
        fps = float(self.fps)
        if not np.isfinite(fps) or fps <= 0:
            raise ShapeError(f"fps must be a positive number, got {self.fps!r}")
        lpos = frozen(self.lpos, float, (None, J1, 3), "lpos")
        N = lpos.shape[0]
        arrays = {
            "offsets": frozen(self.offsets, float, (J1, 3), "offsets"),
            "lrot": frozen(self.lrot, float, (N, J1, 4), "lrot"),
            "lvel": frozen(self.lvel, float, (N, J1, 3), "lvel"),
            "lang": frozen(self.lang, float, (N, J1, 3), "lang"),
            "contacts": frozen(self.contacts, bool, (N, 2), "contacts"),
        }
        starts = frozen(self.range_starts, int, (None,), "range_starts")
        C = starts.shape[0]
        stops = frozen(self.range_stops, int, (C,), "range_stops")
        if C == 0 or starts[0] != 0 or stops[-1] != N or np.any(stops <= starts) \
                or np.any(starts[1:] != stops[:-1]):
            raise ShapeError("clip ranges must be non-empty, contiguous and cover all frames")
        clip_names = tuple(str(n) for n in self.clip_names)
        if len(clip_names) != C:
            raise ShapeError(f"clip_names: expected {C} names, got {len(clip_names)}")
        mirrored = frozen(self.mirrored, bool, (C,), "mirrored")
        ends = np.full((J1, 3), np.nan) if self.end_sites is None else self.end_sites
        tags = {}
        for k, v in dict(self.tags).items():
            tags[str(k)] = frozen(v, bool, (N,), f"tags[{k!r}]")
        cj = tuple(str(n) for n in self.contact_joints)
        if len(cj) != 2:
            raise ShapeError("contact_joints must name two joints (left, right)")
        for k, v in arrays.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "fps", fps)
        object.__setattr__(self, "lpos", lpos)
        object.__setattr__(self, "range_starts", starts)
        object.__setattr__(self, "range_stops", stops)
        object.__setattr__(self, "clip_names", clip_names)
        object.__setattr__(self, "mirrored", mirrored)
        object.__setattr__(self, "end_sites", frozen(ends, float, (J1, 3), "end_sites"))
        object.__setattr__(self, "tags", MappingProxyType(tags))
        object.__setattr__(self, "contact_joints", cj)

    # -- sizes and look-ups -------------------------------------------------------------------
    @property
    def n_frames(self) -> int:
        return self.lpos.shape[0]

    def __len__(self) -> int:
        return self.n_frames

    @property
    def n_clips(self) -> int:
        return len(self.clip_names)

    @property
    def n_joints(self) -> int:
        """Joints including the simulation bone (J+1)."""
        return len(self.names)

    @property
    def skeleton(self) -> Skeleton:
        """The tree with the simulation bone as its root (offsets of the first clip)."""
        return Skeleton(self.names, self.parents, self.offsets, self.end_sites)

    def index(self, name: str) -> int:
        """Index of joint ``name``; ``UnknownNameError`` listing the known names otherwise."""
        return self.skeleton.index(name)

    def clip_index(self, frame) -> np.ndarray | int:
        """Clip holding each frame (``int`` for a scalar frame)."""
        c = np.searchsorted(self.range_stops, frame, side="right")
        return int(c) if np.ndim(c) == 0 else c

    def clip_slice(self, clip: int | str) -> slice:
        """Frames of one clip by index or name."""
        if isinstance(clip, str):
            if clip not in self.clip_names:
                raise UnknownNameError(
                    f"unknown clip {clip!r}; known: {known_list(self.clip_names)}")
            clip = self.clip_names.index(clip)
        return slice(int(self.range_starts[clip]), int(self.range_stops[clip]))

    def tag_mask(self, tag: str) -> np.ndarray:
        """``(N,)`` bool frames carrying ``tag``; ``UnknownNameError`` listing the tags otherwise."""
        if tag not in self.tags:
            raise UnknownNameError(f"unknown tag {tag!r}; known: {known_list(sorted(self.tags))}")
        return self.tags[tag]

    # -- world space ----------------------------------------------------------------------------
    def world_root(self, start: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Hips world position ``(F, 3)`` m and rotation ``(F, 4)`` xyzw of frames ``[start, stop)``."""
        sl = slice(start, self.n_frames if stop is None else stop)
        p, r = self.lpos[sl, 0], self.lrot[sl, 0]
        return p + quat.rotate(r, self.lpos[sl, 1]), quat.mul(r, self.lrot[sl, 1])

    def global_positions(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """``(F, J+1, 3)`` m world positions of frames ``[start, stop)``, using the stored
        per-frame offsets (exact for every clip, mirrored ones included)."""
        sl = slice(start, self.n_frames if stop is None else stop)
        return _fk_lpos(self.parents, self.lpos[sl], self.lrot[sl])[0]

    def to_motion(self, start: int = 0, stop: int | None = None) -> Motion:
        """Frames ``[start, stop)`` as a ``Motion`` on the clips' skeleton (simulation bone
        dropped, hips back in the world). Bone offsets are those stored at frame ``start``, so
        a range inside one clip reproduces that clip exactly."""
        stop = self.n_frames if stop is None else int(stop)
        start = int(start)
        if not 0 <= start < stop <= self.n_frames:
            raise ShapeError(f"to_motion: range [{start}, {stop}) is not inside 0..{self.n_frames}")
        offsets = np.array(self.lpos[start, 1:])
        offsets[0] = self.offsets[1]
        sk = Skeleton(self.names[1:], self.parents[1:] - 1, offsets, self.end_sites[1:])
        root_pos, root_rot = self.world_root(start, stop)
        lrot = np.array(self.lrot[start:stop, 1:])
        lrot[:, 0] = root_rot
        clips = sorted({self.clip_names[c] for c in np.atleast_1d(
            self.clip_index(np.array([start, stop - 1])))})
        return Motion(sk, self.fps, root_pos, quat.normalize(lrot),
                      {"source": "PoseDatabase", "clips": ", ".join(clips), "frames": (start, stop)})


def _fk_lpos(parents, lpos, lrot):
    """FK with per-frame local offsets: ``gpos (F, J, 3)``, ``grot (F, J, 4)``."""
    F, J = lrot.shape[:2]
    gpos = np.empty((F, J, 3))
    grot = np.empty((F, J, 4))
    gpos[:, 0], grot[:, 0] = lpos[:, 0], lrot[:, 0]
    for j in range(1, J):
        p = parents[j]
        grot[:, j] = quat.mul(grot[:, p], lrot[:, j])
        gpos[:, j] = gpos[:, p] + quat.rotate(grot[:, p], lpos[:, j])
    return gpos, grot


# --------------------------------------------------------------------------------------------
# Names: joints by role, left/right mirror partners, tags from file names
# --------------------------------------------------------------------------------------------

def find_joint(names: Sequence[str], candidates: Sequence[str], what: str = "joint") -> str:
    """The first of ``candidates`` present in ``names`` (exact, then case-insensitive)."""
    names = list(names)
    for c in candidates:
        if c in names:
            return c
    lower = {n.lower(): n for n in names}
    for c in candidates:
        if c.lower() in lower:
            return lower[c.lower()]
    raise UnknownNameError(f"no {what} found (tried {', '.join(candidates[:6])}, …); "
                           f"known: {known_list(names, 40)}")


# (pattern, replacement) pairs tried in order; a partner is accepted only if it exists.
_SIDE_RULES = [
    (r"Left", "Right"), (r"Right", "Left"), (r"left", "right"), (r"right", "left"),
    (r"LEFT", "RIGHT"), (r"RIGHT", "LEFT"),
    (r"_L$", "_R"), (r"_R$", "_L"), (r"_l$", "_r"), (r"_r$", "_l"),
    (r"\.L$", ".R"), (r"\.R$", ".L"), (r"\.l$", ".r"), (r"\.r$", ".l"),
    (r"^L(?=[A-Z_])", "R"), (r"^R(?=[A-Z_])", "L"),
    (r"^l(?=[A-Z_])", "r"), (r"^r(?=[A-Z_])", "l"),
    (r"^l(?=[a-z])", "r"), (r"^r(?=[a-z])", "l"),
]


def mirror_names(names: Sequence[str]) -> np.ndarray:
    """``(J,)`` index of each joint's left/right partner (itself for centre joints).

    Understands ``Left*/Right*``, ``*_L/*_R``, ``*.L``, ``L*/R*`` (``LHipJoint``) and
    ``l*/r*`` (``lHip``, ``lhand``) when the partner exists.
    """
    names = list(names)
    idx = {n: i for i, n in enumerate(names)}
    out = np.arange(len(names))
    for i, n in enumerate(names):
        for pat, rep in _SIDE_RULES:
            m = re.sub(pat, rep, n, count=1)
            if m != n and m in idx:
                out[i] = idx[m]
                break
    # must be an involution; otherwise treat the odd ones as centre joints
    bad = out[out] != np.arange(len(names))
    out[bad] = np.flatnonzero(bad)
    return out


def tags_from_name(name: str) -> set[str]:
    """Tags parsed from a clip name: ``dataset-2_walk-turn-left_normal_001`` ->
    ``{walk-turn-left, walk, turn-left, normal}``; tokens holding digits are dropped."""
    stem = Path(str(name)).stem.lower()
    out: set[str] = set()
    for tok in re.split(r"[_\s]+", stem):
        if not tok or any(ch.isdigit() for ch in tok):
            continue
        out.add(tok)
        if "-" in tok:
            head, rest = tok.split("-", 1)
            out.update({head, rest} - {""})
    return out


def _swap_side_tag(tag: str) -> str:
    return re.sub(r"left|right", lambda m: "right" if m.group(0) == "left" else "left", tag)


# --------------------------------------------------------------------------------------------
# Resampling and mirroring of a Motion
# --------------------------------------------------------------------------------------------

def resampled_length(motion: Motion, fps: float) -> int:
    """Frames ``resample(motion, fps)`` returns (without resampling)."""
    if motion.n_frames < 2 or abs(motion.fps - float(fps)) <= 1e-9 * float(fps):
        return motion.n_frames
    return int(np.floor(motion.duration * float(fps) + 1e-6)) + 1


def resample(motion: Motion, fps: float) -> Motion:
    """``motion`` at ``fps``: root positions interpolated linearly, rotations by slerp.

    Frame ``k`` is at time ``k / fps``; the last frame is the last whole one within the
    clip's duration, so source frames at shared times are kept (to rounding).
    """
    fps = float(fps)
    if not np.isfinite(fps) or fps <= 0:
        raise ShapeError(f"fps must be a positive number, got {fps!r}")
    if motion.n_frames < 2 or abs(motion.fps - fps) <= 1e-9 * fps:
        return motion if motion.fps == fps else Motion(motion.skeleton, fps, motion.root_pos,
                                                        motion.lrot, motion.meta)
    n = resampled_length(motion, fps)
    t = np.arange(n) * (motion.fps / fps)              # source frame index (float)
    i0 = np.minimum(np.floor(t + 1e-9).astype(int), motion.n_frames - 2)
    a = t - i0
    lrot = quat.unroll(motion.lrot, axis=0)
    rp = motion.root_pos
    root = rp[i0] + (rp[i0 + 1] - rp[i0]) * a[:, None]
    rot = quat.slerp(lrot[i0], lrot[i0 + 1], np.broadcast_to(a[:, None], lrot[i0].shape[:2]))
    return Motion(motion.skeleton, fps, root, rot, {**motion.meta, "resampled_from": motion.fps})


def standing_clip(motion: Motion, frame: int = 0, seconds: float = 3.0) -> Motion:
    """Frame ``frame`` of ``motion`` held still for ``seconds`` s (at ``motion.fps``): a
    standing clip for a database whose captures never stand.

    Motion matching can only stop where its database stands. Without a standing frame a
    character whose input stops keeps playing walking frames, its root held near the
    simulation object by the clamp: it rocks and its planted feet slide (the benchmarks' 20
    Bandai-Namco walks and runs: 5 of 6936 frames slower than 0.15 m/s; standing, the
    reference's feet in contact slid at 0.20 m/s, ``benchmarks/physical_diagnosis.py
    live_stands``). Pick a frame with both feet planted, e.g. the first of a walk that starts
    from standing.
    """
    n = motion.n_frames
    if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)) or not 0 <= frame < n:
        raise SettingsError(f"standing_clip: frame must be a frame index 0..{n - 1}, got "
                            f"{frame!r}")
    if bad_number(seconds, positive=True) or seconds * motion.fps < 1:
        raise SettingsError(f"standing_clip: seconds must be a duration of at least one frame "
                            f"(>= {1 / motion.fps:.3g} s), got {seconds!r}")
    k = int(round(seconds * motion.fps)) + 1
    return Motion(motion.skeleton, motion.fps, np.repeat(motion.root_pos[frame:frame + 1], k, 0),
                  np.repeat(motion.lrot[frame:frame + 1], k, 0),
                  {**motion.meta, "held_frame": int(frame)})


def _signed_perms() -> np.ndarray:
    """The 24 signed permutation matrices with determinant -1 (axis-aligned reflections)."""
    import itertools
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            m = np.zeros((3, 3))
            m[np.arange(3), perm] = signs
            if np.linalg.det(m) < 0:
                out.append(m)
    return np.array(out)


def _mirror_frames(motions: Sequence[Motion], mirror_idx: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-joint local reflections ``S (J, 3, 3)`` for mirroring, and the worst offset misfit (m).

    A mirrored global rotation is ``G'_j = M_world G_m(j) S_j``: ``S_j`` (det -1) turns the
    partner's local frame into this joint's. Rigs with per-joint orientations (Maya-style, as
    Bandai-Namco's, where the left and right limbs' local axes differ) need one per joint. It is
    chosen among the axis-aligned reflections so that ``S_p^T off_m(c) == off_c`` for the
    children (bone offsets match), ties broken by the motion itself: the mirrored joint's mean
    local rotation should resemble the original's (a knee bends the same way on both sides).
    """
    sk = motions[0].skeleton
    J = len(sk)
    cands = _signed_perms()
    # mean local rotation matrix of every joint over all frames of all motions
    mean_R = np.zeros((J, 3, 3))
    total = 0
    for m in motions:
        mean_R += quat.to_matrix(m.lrot).sum(axis=0)
        total += m.n_frames
    mean_R /= max(total, 1)
    offs = sk.offsets
    S = np.zeros((J, 3, 3))
    worst = 0.0
    for j in range(J):
        kids = sk.children(j)
        a_vecs = [offs[c] for c in kids]                 # this joint's child offsets
        b_vecs = [offs[mirror_idx[c]] for c in kids]     # partner's corresponding offsets
        if not np.isnan(sk.end_sites[j, 0]) and not np.isnan(sk.end_sites[mirror_idx[j], 0]):
            a_vecs.append(sk.end_sites[j])
            b_vecs.append(sk.end_sites[mirror_idx[j]])
        scores = []
        for cand in cands:
            # offsets: off_c should equal S_j^T off_m(c)
            err = max((float(np.linalg.norm(cand.T @ b - a)) for a, b in zip(a_vecs, b_vecs)),
                      default=0.0)
            if j == 0:
                rot_err = 0.0
            else:
                p = sk.parents[j]
                mirrored_mean = S[p].T @ mean_R[mirror_idx[j]] @ cand
                rot_err = float(np.linalg.norm(mirrored_mean - mean_R[j]))
            scores.append((err, rot_err))
        errs = np.array([s[0] for s in scores])
        rots = np.array([s[1] for s in scores])
        ok = errs <= errs.min() + 1e-3 + 0.02 * max((np.linalg.norm(a) for a in a_vecs), default=0)
        best = np.flatnonzero(ok)[np.argmin(rots[ok])]
        S[j] = cands[best]
        worst = max(worst, float(errs[best]))
    return S, worst


def mirror_motion(motion: Motion, S: np.ndarray | None = None,
                  mirror_idx: np.ndarray | None = None) -> Motion:
    """``motion`` mirrored across the world's x-z plane (y -> -y) with left and right swapped.

    World positions are exactly mirrored: ``gpos'[:, j] = diag(1,-1,1) gpos[:, partner(j)]``.
    Bone offsets become the mirror of the partner's, so the result's skeleton may differ from the
    input's by the rig's own asymmetry (sub-millimetre on Bandai-Namco). ``S`` are the per-joint
    local reflections of ``_mirror_frames`` (computed from ``motion`` when omitted).
    """
    sk = motion.skeleton
    if mirror_idx is None:
        mirror_idx = mirror_names(sk.names)
    if S is None:
        S = _mirror_frames([motion], mirror_idx)[0]
    Mw = _MIRROR_WORLD
    R = quat.to_matrix(motion.lrot[:, mirror_idx])             # (F, J, 3, 3) partners' rotations
    out = np.empty_like(R)
    out[:, 0] = Mw @ R[:, 0] @ S[0]
    for j in range(1, len(sk)):
        p = sk.parents[j]
        out[:, j] = S[p].T @ R[:, j] @ S[j]
    offsets = np.array(sk.offsets)
    ends = np.array(sk.end_sites)
    for j in range(1, len(sk)):
        offsets[j] = S[sk.parents[j]].T @ sk.offsets[mirror_idx[j]]
    for j in range(len(sk)):
        if not np.isnan(sk.end_sites[mirror_idx[j], 0]):
            ends[j] = S[j].T @ sk.end_sites[mirror_idx[j]]
    offsets[0] = Mw @ sk.offsets[0]
    msk = Skeleton(sk.names, sk.parents, offsets, ends)
    lrot = quat.unroll(quat.from_matrix(out), axis=0)
    return Motion(msk, motion.fps, motion.root_pos @ Mw.T, lrot, {**motion.meta, "mirrored": True})


# --------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------

def _central_diff(x: np.ndarray, fps: float) -> np.ndarray:
    """Central differences over axis 0 (one-sided at the ends)."""
    v = np.zeros_like(x)
    if len(x) < 2:
        return v
    d = np.diff(x, axis=0) * fps
    v[1:-1] = 0.5 * (d[1:] + d[:-1])
    v[0], v[-1] = d[0], d[-1]
    return v


def _angular_central_diff(q: np.ndarray, fps: float) -> np.ndarray:
    """Angular velocity (rad/s) of rotations ``q (F, ..., 4)``, in the frame they are expressed in."""
    w = np.zeros(q.shape[:-1] + (3,))
    if len(q) < 2:
        return w
    d = quat.to_scaled_axis(quat.mul(q[1:], quat.conj(q[:-1]))) * fps
    w[1:-1] = 0.5 * (d[1:] + d[:-1])
    w[0], w[-1] = d[0], d[-1]
    return w


def _savgol(x: np.ndarray, window_s: float, fps: float, order: int = 1) -> np.ndarray:
    """Savitzky-Golay smoothing over ``window_s`` seconds (shrunk for short clips).

    Order 1 (a moving straight-line fit): a moving average inside the clip, exact on ramps (a
    turn at a constant rate is not flattened) and unbiased at the clip's ends. Holden's order 3
    passes the pelvis' +-9 degree yaw sway of walking (period about 1.2 s) almost untouched.
    """
    from scipy.signal import savgol_filter

    w = int(round(window_s * fps)) | 1
    w = min(w, len(x) if len(x) % 2 else len(x) - 1)
    if window_s <= 0 or w <= order + 1:
        return x
    return savgol_filter(x, w, order, axis=0, mode="interp")


def _leg_roots(sk: Skeleton, left_end: str, right_end: str) -> tuple[int, int]:
    """The first joint below the hips on each leg that sits away from the hips at rest."""
    rest = sk.rest_positions()

    def first(j: int) -> int:
        chain = []
        while j > 0:
            chain.append(j)
            j = sk.parents[j]
        for c in reversed(chain):
            if np.linalg.norm(rest[c] - rest[0]) > 1e-4:
                return c
        return chain[-1] if chain else 0
    return first(sk.index(left_end)), first(sk.index(right_end))


def _hips_forward_local(motions: Sequence[Motion], legs: tuple[int, int] | None) -> np.ndarray:
    """The hips' local axis (unit, hips frame) that points forward (Eq. 3.6's ``fw``).

    Forward in the world is ``cross(left_hip - right_hip, up)`` (right-handed, Z up: with left
    = +Y, cross(+Y, +Z) = +X); averaged in the hips' frame over all frames of all clips so every
    clip of one skeleton uses the same axis. Without identifiable legs, the horizontal direction
    of travel stands in.
    """
    acc = np.zeros(3)
    for m in motions:
        g_hips = m.grot[:, 0]
        if legs is not None:
            lat = m.gpos[:, legs[0]] - m.gpos[:, legs[1]]
            fwd = np.cross(lat, UP)
            w = np.ones(len(fwd))
        else:
            fwd = _central_diff(m.root_pos, m.fps)
            fwd[:, 2] = 0.0
            w = np.linalg.norm(fwd, axis=-1)
        n = np.linalg.norm(fwd, axis=-1, keepdims=True)
        fwd = np.where(n > 1e-9, fwd / np.maximum(n, 1e-9), 0.0)
        acc += np.sum(quat.inv_rotate(g_hips, fwd) * w[:, None], axis=0)
    n = np.linalg.norm(acc)
    if n < 1e-9:
        raise ShapeError("cannot tell which way the hips face: no left/right legs found and "
                         "the clips do not travel")
    return acc / n


def _median_filter_bool(c: np.ndarray, radius: int) -> np.ndarray:
    from scipy.ndimage import median_filter

    if radius <= 0:
        return c
    return median_filter(c.astype(np.uint8), size=(2 * radius + 1,) + (1,) * (c.ndim - 1),
                         mode="nearest").astype(bool)


def build_database(motions: Sequence[Motion], names: Sequence[str] | None = None,
                   fps: float = 60.0, mirror: bool = False,
                   tags: Mapping[str, Sequence[str]] | None = None,
                   contact_joints: tuple[str, str] = ("LeftToes", "RightToes"),
                   contact_speed: float = 0.15, contact_radius: int = 3,
                   progress: Callable[[str, int, int], None] | None = None,
                   position_window: float = 0.5, yaw_window: float = 1.0) -> PoseDatabase:
    """Concatenate clips into a ``PoseDatabase`` with a simulation bone (Eq. 3.1-3.10).

    Args:
        motions: clips sharing one skeleton structure (same joint names and parents).
        names: clip names; default: the stem of ``meta['path']`` or ``clip<i>``.
        fps: database rate, at most ``MAX_FPS``; every clip is resampled to it (any input
            rate).
        mirror: also add each clip mirrored (left/right swapped), right after it.
        tags: clip name -> tags; default: parsed from the clip names (``tags_from_name``).
            Mirrored clips get their source's tags with ``left`` and ``right`` swapped.
        contact_joints: left and right contact joints; common toe/foot names are tried when
            these are missing.
        contact_speed: m/s, a contact joint slower than this is on the ground.
        contact_radius: frames, radius of the median filter cleaning the contact flags (a
            window of ``2 r + 1`` frames, a majority vote). 3 gives a 7-frame window like
            Holden's ``size=6``; the thesis' "radius 6" (13 frames at 60 fps) erases the short
            stance phases of running (4 % / 0 % contact on Bandai-Namco runs instead of 11 %).
        progress: ``progress(stage, done, total)`` callback.
        position_window: seconds of smoothing (moving line fit) of the simulation bone's
            position, so the pelvis' side-to-side sway is not taken for steering; 0 = the
            projected hips exactly (Eq. 3.4). Holden smooths over 0.5 s too.
        yaw_window: seconds of smoothing of its unwrapped yaw, so the pelvis' yaw sway of
            walking does not turn the character (Holden: 1 s).
    Raises:
        ShapeError: no clips, clips with other skeletons, a clip shorter than two frames.
        UnknownNameError: contact joints not found; a ``tags`` key naming no clip.
    """
    if isinstance(motions, Motion):     # (iterable by frame: it became one-frame clips)
        raise ShapeError("build_database needs a list of motions, got one Motion; pass "
                         "[motion]")
    motions = list(motions)
    if not motions:
        raise ShapeError("build_database needs at least one motion")
    # (a NaN or negative contact speed gave a database with no foot contact at all)
    require_numbers("build_database", ("fps", "contact_speed"), fps=fps,
                    contact_speed=contact_speed, position_window=position_window,
                    yaw_window=yaw_window)
    require_counts("build_database", ("contact_radius",), contact_radius=contact_radius)
    require_flags("build_database", mirror=mirror)      # ('no' doubled the database)
    fps = float(fps)
    if fps > MAX_FPS:   # (1e9 asked numpy for 346 TiB and blamed the memory)
        raise ShapeError(f"fps must be at most {MAX_FPS:g} (a database rate above the display's "
                         f"adds frames, not motion), got {fps:g}")
    for i, m in enumerate(motions):     # (before the first's skeleton is read)
        require_type(f"build_database: motion {i}", m, Motion, "read_bvh(PATH)")
    sk = motions[0].skeleton
    for i, m in enumerate(motions):
        if not m.skeleton.same_structure(sk):
            raise ShapeError(f"motion {i} ({m.meta.get('path', '?')}) has another skeleton "
                             f"(joints/parents differ from motion 0); retarget it first")
    if SIM_ROOT in sk.names:
        raise ShapeError(f"the skeleton already has a joint named {SIM_ROOT!r}")
    if names is None:
        names = [Path(str(m.meta["path"])).stem if m.meta.get("path") else f"clip{i}"
                 for i, m in enumerate(motions)]
    names = [str(n) for n in names]
    if len(names) != len(motions):
        raise ShapeError(f"names: {len(names)} names for {len(motions)} motions")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ShapeError(f"duplicate clip names: {', '.join(dup)}")
    if tags is not None:
        unknown = [k for k in tags if k not in names]
        if unknown:
            raise UnknownNameError(f"tags name unknown clips {', '.join(unknown[:5])}; "
                                   f"known: {known_list(names)}")
        clip_tags = {n: {str(t) for t in tags.get(n, ())} for n in names}
    else:
        clip_tags = {n: tags_from_name(n) for n in names}

    for m, name in zip(motions, names):
        # before anything reads a frame: a clip without frames has no hips to face
        n = resampled_length(m, fps)
        if n < 2:
            raise ShapeError(f"clip {name!r} has {n} frame(s) at {fps:g} fps; at least 2 are "
                             f"needed", m.meta.get("path"))

    # contact joints and legs (for the hips' forward axis)
    left = find_joint(sk.names, (contact_joints[0],) + TOE_NAMES["left"], "left contact joint")
    right = find_joint(sk.names, (contact_joints[1],) + TOE_NAMES["right"], "right contact joint")
    jl, jr = sk.index(left), sk.index(right)
    try:
        legs = _leg_roots(sk, left, right)
        if legs[0] == legs[1]:
            legs = None
    except UnknownNameError:
        legs = None
    f_local = _hips_forward_local(motions, legs)

    mirror_idx = S = None
    if mirror:
        mirror_idx = mirror_names(sk.names)
        S, _ = _mirror_frames(motions, mirror_idx)

    J1 = len(sk) + 1
    clip_names, mirrored_flags, clip_tag_list, lengths = [], [], [], []
    jobs = [(m, n, False) for m, n in zip(motions, names)]
    if mirror:
        jobs = [job for m, n in zip(motions, names) for job in ((m, n, False), (m, n, True))]
    # The output arrays are allocated once at their final size and filled clip by clip: a
    # million-frame build then holds the database plus one clip's temporaries, not the clip
    # pieces and their concatenation side by side.
    sizes = [resampled_length(m, fps) for m, _, _ in jobs]
    N = int(sum(sizes))
    out = {"lpos": np.empty((N, J1, 3)), "lrot": np.empty((N, J1, 4)),
           "lvel": np.empty((N, J1, 3)), "lang": np.empty((N, J1, 3)),
           "contacts": np.empty((N, 2), bool)}
    at = 0
    for k, (m, name, is_mirror) in enumerate(jobs):
        if is_mirror:
            m = mirror_motion(m, S, mirror_idx)
            fwd_local = S[0].T @ f_local
        else:
            fwd_local = f_local
        m = resample(m, fps)
        if m is jobs[k][0]:
            # not resampled: a copy, so the FK caches below stay ours, not on the caller's clip
            m = Motion(m.skeleton, m.fps, m.root_pos, m.lrot, m.meta)
        F = m.n_frames
        hips_pos, hips_rot = m.root_pos, m.grot[:, 0]
        # Eq. 3.4: the hips projected onto the floor (z = 0)
        sim_pos = np.array(hips_pos)
        sim_pos[:, 2] = 0.0
        sim_pos[:, :2] = _savgol(sim_pos[:, :2], position_window, fps)
        # Eq. 3.5-3.6: yaw of the hips' forward axis, projected onto the floor, unwrapped
        f = quat.rotate(hips_rot, fwd_local)
        yaw = np.unwrap(np.arctan2(f[:, 1], f[:, 0]))
        yaw = _savgol(yaw, yaw_window, fps)
        sim_rot = quat.from_axis_angle(np.broadcast_to(UP, (F, 3)), yaw)
        # Eq. 3.7-3.8: hips relative to the simulation bone
        lpos = np.empty((F, J1, 3))
        lrot = np.empty((F, J1, 4))
        lpos[:, 0] = sim_pos
        lrot[:, 0] = sim_rot
        lpos[:, 1] = quat.inv_rotate(sim_rot, hips_pos - sim_pos)
        lrot[:, 1] = quat.mul(quat.conj(sim_rot), hips_rot)
        lpos[:, 2:] = m.skeleton.offsets[1:]
        lrot[:, 2:] = m.lrot[:, 1:]
        lrot = quat.unroll(quat.normalize(lrot), axis=0)
        # Eq. 3.9-3.10 (central differences, as Holden)
        lvel = _central_diff(lpos, fps)
        lang = _angular_central_diff(lrot, fps)
        # contacts: contact joints slow in the world, cleaned by a median filter
        speed = np.linalg.norm(_central_diff(m.gpos[:, [jl, jr]], fps), axis=-1)
        contacts = _median_filter_bool(speed < contact_speed, int(contact_radius))
        for key, val in (("lpos", lpos), ("lrot", lrot), ("lvel", lvel), ("lang", lang),
                         ("contacts", contacts)):
            out[key][at:at + F] = val
        at += F
        clip_names.append(f"{name}:mirror" if is_mirror else name)
        mirrored_flags.append(is_mirror)
        t = clip_tags[name]
        clip_tag_list.append({_swap_side_tag(x) for x in t} if is_mirror else set(t))
        lengths.append(F)
        if progress is not None:
            progress("database", k + 1, len(jobs))

    stops = np.cumsum(lengths)
    starts = stops - np.asarray(lengths)
    assert at == N, (at, N)     # resampled_length agrees with resample
    tag_masks = {}
    for tag in sorted(set().union(*clip_tag_list)):
        mask = np.zeros(N, bool)
        for c, ts in enumerate(clip_tag_list):
            if tag in ts:
                mask[starts[c]:stops[c]] = True
        tag_masks[tag] = mask
    offsets = np.vstack([np.zeros((1, 3)), sk.offsets])
    ends = np.vstack([np.full((1, 3), np.nan), sk.end_sites])

    for a in out.values():
        a.setflags(write=False)       # handed over read-only: PoseDatabase keeps them as they are
    arrays = out
    return PoseDatabase(
        names=(SIM_ROOT,) + sk.names, parents=np.concatenate([[-1], sk.parents + 1]),
        offsets=offsets, fps=fps, **arrays,
        range_starts=starts, range_stops=stops, clip_names=clip_names,
        mirrored=np.array(mirrored_flags), tags=tag_masks, end_sites=ends,
        contact_joints=(left, right), up=str(motions[0].meta.get("up") or "z"))


# --------------------------------------------------------------------------------------------
# Saving and loading
# --------------------------------------------------------------------------------------------

_ARRAYS = ("parents", "offsets", "end_sites", "lpos", "lrot", "lvel", "lang", "contacts",
           "range_starts", "range_stops", "mirrored")


def save_database(db: PoseDatabase, path) -> None:
    """Write ``db`` to ``path`` as ``.npz`` (no pickles), atomically."""
    from ..io.atomic import atomic_path

    require_type("save_database", db, PoseDatabase, "build_database(motions)")
    tag_names = sorted(db.tags)
    payload = {k: np.asarray(getattr(db, k)) for k in _ARRAYS}
    payload.update(
        format=np.array(FORMAT), version=np.array(VERSION), fps=np.array(db.fps),
        names=np.array(db.names, dtype=str), clip_names=np.array(db.clip_names, dtype=str),
        contact_joints=np.array(db.contact_joints, dtype=str), up=np.array(db.up),
        tag_names=np.array(tag_names, dtype=str),
        tag_masks=(np.stack([db.tags[t] for t in tag_names]) if tag_names
                   else np.zeros((0, db.n_frames), bool)))
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:   # a file object: np.savez would append ".npz" to a name
            np.savez(fh, **payload)


def load_database(path) -> PoseDatabase:
    """Read a database written by ``save_database``. Raises ``FileFormatError`` on a missing,
    corrupt, foreign or wrong-version file."""
    require_path("load_database", path)
    path = Path(path)
    if not path.is_file():
        raise FileFormatError("no such file", path)
    if not zipfile.is_zipfile(path):   # numpy's own message would speak of pickles
        raise FileFormatError("not a pose database (an .npz archive); build one with 'physmocap "
                              "mm build'", path)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: _ro(z[k]) for k in z.files}   # read-only: PoseDatabase takes them as is
    except MemoryError:
        raise FileFormatError("an array in the file is larger than memory; the file is corrupt",
                              path) from None
    except Exception as exc:  # noqa: BLE001  zipfile, zlib, numpy's header parser (tokenize) …
        raise FileFormatError(f"not a readable .npz pose database ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''})", path) from None
    try:
        return _database_from(data, path)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
        # fields of the wrong kind (a string where a number belongs, a 0-d array, …)
        raise FileFormatError(f"inconsistent pose database ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''})", path) from None


def _database_from(data: dict, path) -> PoseDatabase:
    if "format" not in data or str(data["format"]) != FORMAT:
        raise FileFormatError(f"not a {FORMAT} file", path)
    version = int(data.get("version", -1))
    if version != VERSION:
        raise FileFormatError(f"pose database version {version}; this physmocap reads version "
                              f"{VERSION} (rebuild it with build_database)", path)
    need = _ARRAYS + ("fps", "names", "clip_names", "contact_joints", "tag_names", "tag_masks",
                      "up")
    missing = [k for k in need if k not in data]
    if missing:
        raise FileFormatError(f"pose database lacks {', '.join(missing)}", path)
    tag_names = [str(t) for t in data["tag_names"]]
    masks = data["tag_masks"]
    if masks.shape[0] != len(tag_names):
        raise FileFormatError("tag_names and tag_masks disagree", path)
    try:
        return PoseDatabase(
            names=tuple(str(n) for n in data["names"]), fps=float(data["fps"]),
            clip_names=tuple(str(n) for n in data["clip_names"]),
            contact_joints=tuple(str(n) for n in data["contact_joints"]), up=str(data["up"]),
            tags={t: masks[i] for i, t in enumerate(tag_names)},
            **{k: data[k] for k in _ARRAYS})
    except ShapeError as exc:
        raise FileFormatError(f"inconsistent pose database: {exc.reason}", path) from None
