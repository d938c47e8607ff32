"""How far solved segments turn from another solver's segments over a take.

Two solvers (ours and Plug-in Gait, say) give each segment its own frame: their axes are chosen
differently (Plug-in Gait's foot points its Z from toe to heel), and they sit a few degrees
apart (a thigh's twist, set by a wand marker there and by a knee axis here). What tells whether
the two *move* alike is the rotation between the two frames over time: a rigid pair keeps it
fixed. So ``segment_agreement`` takes out one fixed rotation per segment (the mean, projected
onto the rotations) and reports what is left, split into a twist about the segment's long axis
and a swing of that axis. Evaluation only: nothing here feeds a solve.

``pig_agreement`` does it for every segment of a capture that holds Plug-in Gait's own solve
(Vicon Nexus writes its segment frames as points: ``PELO``/``PELA``/``PELL``/``PELP`` and so
on), so ``solve`` can say how its segments move against the file's own model.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from ..errors import PhysmocapError, ShapeError

__all__ = ["frames_from_points", "segment_agreement", "pig_agreement", "capture_pig_agreement",
           "PIG_SEGMENTS"]

#: bytes: a capture whose points (all of them, as float64 x, y, z) would take more is not read
#: again for the comparison (an hour at 100 Hz with Plug-in Gait's 193 points: 1.7 GB).
PIG_READ_BYTES = 500_000_000

#: Plug-in Gait's segments (the 3-letter prefix of their O/A/L/P points), the body template's
#: segment for each, and its long axis in the template's rest frame (Z up, X forward, the left
#: arm along +Y).
PIG_SEGMENTS = [("PEL", "Hips", "z"), ("TRX", "Chest", "z"), ("HED", "Head", "z")] + [
    (s + p, side + ours, ax) for s, side in (("L", "Left"), ("R", "Right"))
    for p, ours, ax in (("CL", "Shoulder", "y"), ("HU", "UpperArm", "y"), ("RA", "LowerArm", "y"),
                        ("HN", "Hand", "y"), ("FE", "UpperLeg", "z"), ("TI", "LowerLeg", "z"),
                        ("FO", "Foot", "x"), ("TO", "Toes", "x"))]


def _nearest_rotation(m: np.ndarray) -> np.ndarray:
    """The rotation ``(..., 3, 3)`` nearest each ``m`` (SVD, determinant +1)."""
    u, _, vt = np.linalg.svd(m)
    d = np.ones(m.shape[:-1])
    d[..., 2] = np.sign(np.linalg.det(u @ vt))
    return (u * d[..., None, :]) @ vt


def frames_from_points(origin, anterior, lateral, proximal) -> np.ndarray:
    """Segment frames ``(F, 3, 3)`` (columns: X, Y, Z in the world) from a Plug-in Gait style
    origin and three axis end points, each ``(F, 3)`` m (``PELO``, ``PELA``, ``PELL``,
    ``PELP``: X toward A, Y toward L, Z toward P), made exactly orthonormal. A frame with a
    missing (NaN) point is NaN."""
    pts = [np.asarray(p, dtype=float) for p in (origin, anterior, lateral, proximal)]
    if any(p.ndim != 2 or p.shape[1] != 3 or p.shape != pts[0].shape for p in pts):
        raise ShapeError("frames_from_points: origin and axis points must be (F, 3) arrays "
                         f"of one shape, got {[p.shape for p in pts]}")
    m = np.stack([p - pts[0] for p in pts[1:]], axis=-1)            # (F, 3, 3), axes as columns
    bad = ~np.isfinite(m).all((1, 2))
    m[bad] = np.eye(3)
    r = _nearest_rotation(m)
    r[bad] = np.nan
    return r


def _angle_deg(r: np.ndarray) -> np.ndarray:
    """Rotation angle (deg) of rotation matrices ``(..., 3, 3)``."""
    c = (np.trace(r, axis1=-2, axis2=-1) - 1.0) / 2.0
    return np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))


def _axis_permutation(r: np.ndarray) -> np.ndarray:
    """The signed axis permutation nearest a rotation ``(3, 3)``: the two frames' naming of
    their axes, told apart from the angle they really sit apart."""
    p = np.zeros((3, 3))
    rows = np.argmax(np.abs(r), axis=0)
    p[rows, np.arange(3)] = np.sign(r[rows, np.arange(3)])
    if len(set(rows)) < 3 or np.linalg.det(p) < 0:      # no clean naming: keep the rotation
        return np.eye(3)
    return p


def segment_agreement(ours: np.ndarray, ref: np.ndarray, axis) -> dict:
    """How one segment's solved frames ``ours`` and a reference's ``ref`` (both ``(F, 3, 3)``,
    columns = axes in the world; NaN frames of ``ref`` are skipped) turn apart over a take.

    ``axis``: the segment's long axis in our frame ``(3,)`` (a thigh's +Z), about which the
    residual's twist is measured. Returns degrees:

    - ``offset_deg``: the fixed rotation between the two frames, less the renaming of axes
      nearest it (a foot frame whose Z runs along the sole is renamed, not 90° off);
    - ``residual_median_deg``, ``residual_p95_deg``: the rotation left each frame once the
      fixed one is taken out (0 for two frames rigidly attached to one segment);
    - ``twist_median_deg``, ``swing_median_deg``: the residual's turn about ``axis`` and the
      turn of ``axis`` itself (medians of their sizes);
    - ``frames``: frames compared.
    """
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    if ours.ndim != 3 or ours.shape[1:] != (3, 3) or ref.shape != ours.shape:
        raise ShapeError(f"segment_agreement: ours and ref must be (F, 3, 3) of one shape, got "
                         f"{ours.shape} and {ref.shape}")
    a = np.asarray(axis, dtype=float)
    if a.shape != (3,) or not np.isfinite(a).all() or np.linalg.norm(a) < 1e-9:
        raise ShapeError(f"segment_agreement: axis must be a non-zero (3,) vector, got {axis!r}")
    a = a / np.linalg.norm(a)
    ok = np.isfinite(ref).all((1, 2)) & np.isfinite(ours).all((1, 2))
    if not ok.any():
        raise ShapeError("segment_agreement: no frame where both frames are known")
    m = np.swapaxes(ours[ok], 1, 2) @ ref[ok]          # the reference's frame in ours, per frame
    fixed = _nearest_rotation(m.mean(0))
    resid = m @ fixed.T                                 # our frame -> the reference's, in ours
    # twist about the axis: the rotation's component about it (swing-twist split)
    q = quat.from_matrix(resid)
    twist = np.degrees(2.0 * np.arctan2(np.abs(q[:, :3] @ a), q[:, 3]))
    swing = np.degrees(np.arccos(np.clip(np.einsum("fij,j,i->f", resid, a, a), -1.0, 1.0)))
    ang = _angle_deg(resid)
    return {
        "offset_deg": float(_angle_deg(fixed @ _axis_permutation(fixed).T)),
        "residual_median_deg": float(np.median(ang)),
        "residual_p95_deg": float(np.percentile(ang, 95)),
        "twist_median_deg": float(np.median(twist)),
        "swing_median_deg": float(np.median(swing)),
        "frames": int(ok.sum()),
    }


def pig_agreement(motion, points) -> dict:
    """``segment_agreement`` of each segment of ``motion`` (a solve with the body template's
    names) against the Plug-in Gait segment frames found in ``points`` (a
    ``MarkerTrajectories`` read with ``points="all"``, in the capture's world, same frames):
    ``{prefix: {"segment": name, **agreement}}`` for every ``PIG_SEGMENTS`` entry whose four
    points and whose segment both exist; ``{}`` when the file holds no Plug-in Gait solve."""
    labels = set(points.labels)
    names = set(motion.skeleton.names)
    if points.n_frames != motion.n_frames:
        raise ShapeError(f"pig_agreement: {points.n_frames} frames of points for a "
                         f"{motion.n_frames}-frame motion")
    rot = None
    out = {}
    for key, ours, ax in PIG_SEGMENTS:
        if ours not in names or not all(key + c in labels for c in "OALP"):
            continue
        ref = frames_from_points(*(points.pos[:, points.index(key + c)] for c in "OALP"))
        if not np.isfinite(ref).all((1, 2)).any():
            continue
        if rot is None:
            rot = quat.to_matrix(motion.grot)
        a = segment_agreement(rot[:, motion.skeleton.index(ours)], ref,
                              np.eye(3)["xyz".index(ax)])
        out[key] = {"segment": ours, **a}
    return out


def capture_pig_agreement(markers, motion) -> dict:
    """``pig_agreement`` of ``motion``, the solve of ``markers`` (as ``read_c3d`` read them),
    against the Plug-in Gait solve the capture's file holds (Vicon Nexus stores its segment
    frames as points), degrees rounded to 0.01, for a solve's report. ``{}``: the file holds
    none, no longer reads as the capture did, or is too big to read whole again
    (``PIG_READ_BYTES``): it never fails a solve."""
    from ..io.c3d import read_c3d
    path = markers.meta.get("path")
    if not path or not markers.meta.get("n_virtual"):
        return {}
    if markers.meta.get("n_points_in_file", 0) * markers.n_frames * 24 > PIG_READ_BYTES:
        return {}
    try:
        points = read_c3d(path, up=markers.meta.get("up"), points="all")
        if points.n_frames != motion.n_frames:
            return {}
        found = pig_agreement(motion, points)
    except (PhysmocapError, OSError, MemoryError):
        return {}
    return {k: {n: round(v, 2) if isinstance(v, float) else v for n, v in a.items()}
            for k, a in found.items()}
