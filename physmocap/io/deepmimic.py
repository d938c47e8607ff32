"""DeepMimic motion clips, as pybullet_data ships them (``data/motions/humanoid3d_*.txt``).

These are real motion-capture clips of the DeepMimic humanoid (Peng et al. 2018). Each frame is
``[duration, root xyz, root wxyz, chest wxyz, neck wxyz, right hip wxyz, right knee angle,
right ankle wxyz, right shoulder wxyz, right elbow angle, left hip …, left elbow angle]`` (44 numbers),
Y up, in the frame of ``pybullet_data/humanoid/humanoid.urdf`` loaded with ``globalScaling=0.25``.
The reader maps the body to HumanBodyBones joint names so the rest of physmocap can use it.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import quat
from ..conventions import snap_fps, up_to_zup_matrix
from ..errors import FileFormatError, ShapeError, bad_number
from ..motion import Motion
from ..skeleton import Skeleton

__all__ = ["read_deepmimic", "deepmimic_skeleton", "pybullet_motion_path"]

_S = 0.25  # DeepMimic loads humanoid.urdf with globalScaling=0.25

# name, parent, offset (urdf joint origin, Y up, metres after scaling), end site or None.
_JOINTS = [
    ("Hips", None, (0, 0, 0), None),
    ("Chest", "Hips", (0, 0.944604, 0), None),
    ("Neck", "Chest", (0, 0.895576, 0), (0, 1.11, 0)),          # top of the head sphere
    ("RightUpperLeg", "Hips", (0, 0, 0.339548), None),
    ("RightLowerLeg", "RightUpperLeg", (0, -1.686184, 0), None),
    ("RightFoot", "RightLowerLeg", (0, -1.639480, 0), (0.534, -0.2, 0)),  # toe tip of the box
    ("RightUpperArm", "Chest", (-0.096200, 0.974000, 0.732440), None),
    ("RightLowerArm", "RightUpperArm", (0, -1.099152, 0), None),
    ("RightHand", "RightLowerArm", (0, -1.035788, 0), (0, -0.16, 0)),
    ("LeftUpperLeg", "Hips", (0, 0, -0.339548), None),
    ("LeftLowerLeg", "LeftUpperLeg", (0, -1.686184, 0), None),
    ("LeftFoot", "LeftLowerLeg", (0, -1.639480, 0), (0.534, -0.2, 0)),
    ("LeftUpperArm", "Chest", (-0.096200, 0.974000, -0.732440), None),
    ("LeftLowerArm", "LeftUpperArm", (0, -1.099152, 0), None),
    ("LeftHand", "LeftLowerArm", (0, -1.035788, 0), (0, -0.16, 0)),
]
# Order of the rotations in a frame after the root, and which are 1-DoF hinges about local z.
_POSE = [("Chest", 4), ("Neck", 4), ("RightUpperLeg", 4), ("RightLowerLeg", 1), ("RightFoot", 4),
         ("RightUpperArm", 4), ("RightLowerArm", 1), ("LeftUpperLeg", 4), ("LeftLowerLeg", 1),
         ("LeftFoot", 4), ("LeftUpperArm", 4), ("LeftLowerArm", 1)]
_FRAME_LEN = 1 + 3 + 4 + sum(n for _, n in _POSE)


def deepmimic_skeleton() -> Skeleton:
    """The DeepMimic humanoid as a ``Skeleton`` (Y-up offsets, metres; root offset zero)."""
    names = [j[0] for j in _JOINTS]
    parents = [-1 if p is None else names.index(p) for _, p, _, _ in _JOINTS]
    offsets = np.array([o for _, _, o, _ in _JOINTS], float) * _S
    ends = np.array([(np.nan,) * 3 if e is None else e for *_, e in _JOINTS], float) * _S
    return Skeleton(names, parents, offsets, ends)


def pybullet_motion_path(name: str = "humanoid3d_walk.txt") -> Path:
    """Path of a clip shipped in ``pybullet_data/data/motions``."""
    import pybullet_data

    folder = Path(pybullet_data.getDataPath()) / "data" / "motions"
    path = folder / name
    if not path.is_file():
        known = sorted(p.name for p in folder.glob("humanoid3d_*.txt"))
        raise FileFormatError(f"no such pybullet_data clip; known: {', '.join(known)}", path)
    return path


def read_deepmimic(path, fps: float | None = None) -> Motion:
    """Read a DeepMimic clip into a Z-up ``Motion`` (metres, HumanBodyBones names).

    Frames in these clips may last different times (the first number of each row); the clip is
    resampled onto a uniform grid at ``fps`` (default: 1 / the median frame duration) by linear
    interpolation of positions and slerp of rotations.
    """
    path = Path(path)
    if fps is not None and bad_number(fps, positive=True):
        # 0 divided by zero and NaN broke numpy's arange, below
        raise ShapeError(f"fps must be a positive number, got {fps!r}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        frames = np.array(doc["Frames"], dtype=float)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FileFormatError(f"not a DeepMimic motion clip ({type(exc).__name__}: {exc})",
                              path) from None
    if frames.ndim != 2 or frames.shape[1] != _FRAME_LEN or len(frames) < 2:
        raise FileFormatError(f"expected rows of {_FRAME_LEN} numbers, got shape {frames.shape}",
                              path)
    if not np.all(np.isfinite(frames)) or np.any(frames[:-1, 0] <= 0):
        raise FileFormatError("frames hold non-finite values or non-positive durations", path)
    sk = deepmimic_skeleton()
    F, J = len(frames), len(sk)
    root_pos = frames[:, 1:4].copy()
    lrot = quat.identity((F, J))
    lrot[:, 0] = quat.from_wxyz(frames[:, 4:8])
    col = 8
    for name, n in _POSE:
        j = sk.index(name)
        if n == 4:
            lrot[:, j] = quat.from_wxyz(frames[:, col:col + 4])
        else:  # hinge about the joint's local z axis
            lrot[:, j] = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), frames[:, col])
        col += n
    lrot = quat.unroll(quat.normalize(lrot))

    # Resample on a uniform time grid.
    times = np.concatenate([[0.0], np.cumsum(frames[:-1, 0])])
    rate = snap_fps(1.0 / float(np.median(frames[:-1, 0]))) if fps is None else float(fps)
    # up to the last frame's time within half a frame: the files store frame lengths rounded
    # (0.033332 for 1/30), and a grid ending at times[-1] exactly lost the last frame (the
    # one closing a loop) in 12 of the 15 clips pybullet_data ships
    grid = np.arange(int(np.floor(times[-1] * rate + 0.5)) + 1) / rate
    grid = np.minimum(grid, times[-1])
    k = np.clip(np.searchsorted(times, grid, side="right") - 1, 0, F - 2)
    t = np.clip((grid - times[k]) / (times[k + 1] - times[k]), 0.0, 1.0)
    root_pos = root_pos[k] + t[:, None] * (root_pos[k + 1] - root_pos[k])
    lrot = quat.slerp(lrot[k], lrot[k + 1], np.broadcast_to(t[:, None], (len(grid), J)))

    R = up_to_zup_matrix("y")
    root_pos = root_pos @ R.T
    lrot[:, 0] = quat.mul(quat.from_matrix(R), lrot[:, 0])
    meta = {"path": str(path), "format": "deepmimic", "unit": "m", "up": "y",
            "loop": doc.get("Loop", "") if isinstance(doc, dict) else ""}
    return Motion(sk, rate, root_pos, lrot, meta)
