"""The per-frame record of a solve that the HTML report draws (the JSON report holds totals only).

``trace_from_result`` takes it from a ``SolveResult`` in the same process (``solve
--report-html``); ``trace_from_files`` rebuilds it from what ``solve`` wrote (the JSON report, the
BVH it names and the C3D it names), so ``physmocap report`` needs no sidecar file. The rebuilt
trace matches the in-process one: the BVH holds the solved pose, the JSON the calibrated marker
offsets, and plants and limit hits are recomputed with the solver's own functions.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import quat
from ..errors import FileFormatError, PhysmocapError
from ..markers import MarkerSet
from ..motion import Motion

__all__ = ["SolveTrace", "trace_from_result", "trace_from_files", "solve_files", "joint_angles",
           "limit_hits", "fit_marker_offsets", "ANGLE_JOINTS"]

#: Joints whose angles the report plots, per group (humanoid body names).
ANGLE_JOINTS = {
    "hips": ("LeftUpperLeg", "RightUpperLeg"),
    "knees": ("LeftLowerLeg", "RightLowerLeg"),
    "ankles": ("LeftFoot", "RightFoot"),
    "shoulders": ("LeftUpperArm", "RightUpperArm"),
    "elbows": ("LeftLowerArm", "RightLowerArm"),
}


@dataclass(frozen=True, eq=False)
class SolveTrace:
    """Per-frame arrays of one solve (F frames, M markers, K foot markers, J joints).

    Attributes:
        motion: the solved motion; ``labels``: marker names ``(M,)``; ``fps``: Hz.
        pos: ``(F, M, 3)`` m captured markers (NaN = gap); ``solved``: ``(F, M, 3)`` m, the
            body's landmarks; ``residual``: ``(F, M)`` m (NaN in gaps); ``outliers``: ``(F, M)``
            bool, springs weakened (beyond the outlier distance).
        plants: ``(F, K)`` bool with ``plant_labels`` ``(K,)``.
        limit_hit: ``(F, J)`` bool, joints at a template limit.
        angles: ``{joint: (F, 3) deg}`` hinge angle in column 0 for hinges (other columns NaN),
            else the rotation vector (parent frame) in degrees.
    """

    motion: Motion
    labels: tuple
    fps: float
    pos: np.ndarray
    solved: np.ndarray
    residual: np.ndarray
    outliers: np.ndarray
    plants: np.ndarray
    plant_labels: tuple
    limit_hit: np.ndarray
    angles: dict

    @property
    def n_frames(self) -> int:
        return len(self.pos)


def _body():
    from ..scene import load_body
    return load_body()


def joint_angles(motion: Motion, body=None) -> dict:
    """``{joint: (F, 3)}`` degrees for the joints of ``ANGLE_JOINTS`` that ``motion`` has.

    Hinges (knees, elbows in the humanoid template) give their signed angle about the hinge
    axis in column 0 (flexion positive, as the template's limits are); ball joints give the
    rotation vector of the local rotation (parent frame, x/y/z), which is small-angle exact and
    has no Euler gimbal flips.
    """
    body = body or _body()
    out = {}
    names = motion.skeleton.names
    for joints in ANGLE_JOINTS.values():
        for name in joints:
            if name not in names:
                continue
            v = np.degrees(quat.to_scaled_axis(quat.abs_w(motion.lrot[:, names.index(name)])))
            if name in body.names and body.joint_type[body.names.index(name)] == "hinge":
                axis = np.asarray(body.axis[body.names.index(name)], float)
                a = np.full_like(v, np.nan)
                a[:, 0] = v @ axis
                v = a
            out[name] = v
    return out


def limit_hits(motion: Motion, body=None) -> np.ndarray:
    """``(F, J)`` bool: joints at or past the body template's limits, as the solver flags them
    (``solver.pipeline.limit_hits``)."""
    from ..solver.pipeline import limit_hits as hits
    return hits(motion, body or _body())


def fit_marker_offsets(motion: Motion, pos: np.ndarray, body: np.ndarray) -> np.ndarray:
    """``(M, 3)`` m: each marker's offset in its segment's frame, the least-squares fit over all
    frames where it is seen (the median, so swaps and ghosts do not drag it)."""
    gpos, grot = motion.gpos[:, body], motion.grot[:, body]         # (F, M, 3), (F, M, 4)
    local = quat.inv_rotate(grot, pos - gpos)           # NaN where missing
    with np.errstate(all="ignore"):
        off = np.nanmedian(local, axis=0) if np.any(~np.isnan(local)) else np.zeros((len(body), 3))
    return np.nan_to_num(off)


def _plants(labels, pos, fps):
    from ..solver.contacts import detect_plants
    from ..solver.pipeline import _foot_rows

    rows, plant_labels = _foot_rows(tuple(labels))
    planted = detect_plants(pos[:, rows], fps) if len(rows) else np.zeros((len(pos), 0), bool)
    return rows, plant_labels, planted


def trace_from_result(result, body=None) -> SolveTrace:
    """The trace of an in-process ``SolveResult``."""
    F, J = result.motion.lrot.shape[:2]
    hit = result.limit_hit if result.limit_hit is not None else limit_hits(result.motion, body)
    return SolveTrace(result.motion, tuple(result.labels), result.motion.fps, result.pos,
                      result.solved_markers, result.residual, result.outliers, result.plants,
                      tuple(result.plant_labels), hit, joint_angles(result.motion, body))


def solve_files(report_path, rep: dict, bvh=None, c3d=None) -> tuple[Path, Path]:
    """The BVH and C3D a ``solve`` report ``rep`` (read from ``report_path``) names, or
    ``bvh`` / ``c3d`` where given: relative paths in the report are tried as given, then beside
    the report. ``PhysmocapError`` naming the report if one is missing."""
    report_path = Path(report_path)

    def locate(given, key, what):
        if given is not None:
            return Path(given)
        p = Path(rep.get(key) or "")
        if not str(p) or str(p).startswith("demo:"):
            raise PhysmocapError(f"the report names no {what} file; pass it with --{what}",
                                 report_path)
        for c in (p, report_path.parent / p, report_path.parent / p.name):
            if c.is_file():
                return c
        raise PhysmocapError(f"{what} file {p} named by the report not found; pass it with "
                             f"--{what}", report_path)

    return locate(bvh, "output", "bvh"), locate(c3d, "source", "c3d")


_NUMBER = (int, float)
_NONE = type(None)
#: The kinds of a ``solve`` report's fields this page reads (an edited report with ``null`` or
#: a string where a list or table goes raised a TypeError deep in the page).
_REPORT_KINDS = {
    "markers": (list,), "output": (str,), "source": (str,), "markerset": (str,),
    "body": (str,), "up": (str, _NONE), "static": (str, _NONE), "c3d_out": (str, _NONE),
    "frames": (int,), "first_frame": (int,), "fps": _NUMBER, "resumed": (list,),
    "marker_max_mm": (*_NUMBER, _NONE),
    **{k: _NUMBER for k in (
        "marker_rms_mm", "marker_rms_all_mm", "kinematic_rms_mm", "kinematic_rms_all_mm",
        "frames_over_40mm", "frames_over_40mm_all", "frames_over_40mm_unexplained",
        "substeps_median", "solve_seconds",
        "frames_per_second")},
    **{k: (dict,) for k in (
        "per_marker_rms_mm", "per_marker_rms_all_mm", "gap_frames", "outlier_frames",
        "foot_plant_frames",
        "foot_skate_mm", "joint_limit_hits", "calibration", "seconds", "hand_holds",
        "toes_bent", "damage", "plug_in_gait_segments")},
}
_KIND_NAMES = {list: "a list", str: "a string", int: "a number", float: "a number",
               dict: "a table", _NONE: "null"}


def _check_report(rep: dict, path) -> None:
    """``FileFormatError`` (one line) naming the first field of a ``solve`` report that is not
    of its kind, or a marker label that is not a string."""
    for key, kinds in _REPORT_KINDS.items():
        if key not in rep:
            continue
        v = rep[key]
        if not isinstance(v, kinds) or isinstance(v, bool):
            want = " or ".join(dict.fromkeys(_KIND_NAMES[k] for k in kinds))
            raise FileFormatError(f"not a valid 'physmocap solve' report: {key!r} must be "
                                  f"{want}, got {json.dumps(v)[:40]}; write it again with "
                                  f"physmocap solve --report", path)
    skate = rep.get("foot_skate_mm", {"mean": 0, "max": 0})
    if not all(isinstance(skate.get(k), _NUMBER) for k in ("mean", "max")):
        raise FileFormatError("not a valid 'physmocap solve' report: 'foot_skate_mm' must give "
                              "'mean' and 'max' numbers", path)
    if not all(isinstance(m, str) for m in rep["markers"]):
        raise FileFormatError("not a valid 'physmocap solve' report: 'markers' must list "
                              "marker labels (strings)", path)


def trace_from_files(report_path, bvh=None, c3d=None, outlier_distance: float = 0.04,
                     ) -> tuple[SolveTrace, dict]:
    """Rebuild the trace from a ``solve`` JSON report and the BVH and C3D it names.

    ``bvh`` and ``c3d`` override the paths in the report (relative paths in the report are
    tried as given, then beside the report). Returns the trace and the report dict.
    """
    from ..io.bvh import read_bvh
    from ..io.c3d import read_c3d
    from ..solver.physical import landmarks

    report_path = Path(report_path)
    try:
        rep = json.loads(report_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FileFormatError(f"cannot read: {exc.strerror or exc}", report_path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FileFormatError(f"not a JSON report: {exc}", report_path) from None
    if not isinstance(rep, dict) or "markers" not in rep or "output" not in rep:
        raise FileFormatError("not a 'physmocap solve' report (no 'markers'/'output')",
                              report_path)
    _check_report(rep, report_path)

    bvh_path, c3d_path = solve_files(report_path, rep, bvh, c3d)
    motion = read_bvh(bvh_path, unit="cm")       # solve writes cm, Y up (its default)
    # back in the template's joint frames (the file stands its rest along Y; ``rest_turn``):
    # the marker offsets, limits and hinge axes below are in them
    motion = motion.in_frames_of(_body().skeleton)
    # with the up axis the solve read it with (a solve told ``--up`` against the file's own)
    markers = read_c3d(c3d_path, up=rep.get("up"))
    labels = tuple(rep["markers"])
    missing = [l for l in labels if l not in markers.labels]
    if missing:
        raise PhysmocapError(f"capture lacks markers the report used: {', '.join(missing[:8])}",
                             c3d_path)
    pos = markers.select(labels).pos
    if len(pos) != motion.n_frames:
        raise PhysmocapError(f"capture has {len(pos)} frames, the solved BVH {bvh_path} has "
                             f"{motion.n_frames}: not the same take", c3d_path)
    names = motion.skeleton.names
    offs = rep.get("calibration", {}).get("marker_offsets_m")
    if offs and all(l in offs and offs[l][0] in names for l in labels):
        body = np.array([names.index(offs[l][0]) for l in labels])
        offset = np.array([offs[l][1:] for l in labels], float)
    else:
        # An older report without offsets: bind the marker set and fit the offsets.
        from ..scene import load_markerset
        ms = load_markerset(rep.get("markerset", "cmu41")).bind(motion.skeleton, labels=labels)
        body = ms.body
        offset = fit_marker_offsets(motion, pos, body)
    ms = MarkerSet(labels, body, offset)
    solved = landmarks(motion.gpos, motion.grot, ms)
    residual = np.linalg.norm(pos - solved, axis=-1)
    with np.errstate(invalid="ignore"):
        outliers = residual > outlier_distance
    _, plant_labels, planted = _plants(labels, pos, markers.fps)
    trace = SolveTrace(motion, labels, markers.fps, pos, solved, residual, outliers, planted,
                       plant_labels, limit_hits(motion), joint_angles(motion))
    return trace, rep
