"""Synthetic marker data from a known motion, for testing and benchmarking solvers.

``place_markers`` puts markers rigidly on the skeleton's segments, ``synthesize`` produces the
world positions a capture would see (noise, dropouts, gaps), and ``joint_angle_error_deg``
compares a solved motion with the ground truth.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .. import quat
from ..errors import ShapeError, UnknownNameError, known_list
from ..markers import MarkerSet
from ..motion import Motion
from .kinematic import marker_positions

__all__ = ["place_markers", "synthesize", "joint_angle_error_deg"]


def _unit_perp(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors completing unit ``u`` to an orthonormal frame."""
    a = np.array([1.0, 0, 0]) if abs(u[0]) < 0.9 else np.array([0.0, 1, 0])
    e1 = np.cross(u, a)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(u, e1)


def place_markers(motion: Motion, per_segment: int = 3, rng: np.random.Generator | None = None,
                  skip: Iterable[str] = (), min_dist: float = 0.03, max_dist: float = 0.12
                  ) -> MarkerSet:
    """Markers rigidly attached to the skeleton's segments.

    A joint's segment is the body its rotation moves: the bone(s) from the joint to its
    children and End Site. Markers on a segment with a bone sit along it (15-85 % of its
    length; the mean direction of the bones when they agree, else the longest bone), pushed off
    the axis by ``min_dist``-``max_dist`` m in evenly spread directions around it, so no marker
    lies on the axis and three are never collinear. A segment with no bone of its own (a root whose
    children all start at its origin, a hand whose fingers do) gets a cluster at
    ``(min_dist + max_dist) / 2``-``max_dist`` m from the joint along orthogonal directions.

    Joints whose own bone has zero length (CMU helper joints ``LHipJoint``, ``LowerBack``,
    ``LeftShoulder``… that coincide with their parent; never the root) and joints named in
    ``skip`` carry no marker.

    Args:
        motion: only its skeleton is used.
        per_segment: markers per segment (>= 1).
        rng: random generator (default: a fixed seed).
        skip: joint names to leave bare.
        min_dist, max_dist: m, distance of each marker from the bone axis (or the joint).
    Returns:
        ``MarkerSet`` named ``<joint>_<k>``, weights 1, offsets in the joint's frame (m).
    """
    if per_segment < 1:
        raise ShapeError(f"per_segment must be >= 1, got {per_segment}")
    if not 0 < min_dist <= max_dist:
        raise ShapeError(f"need 0 < min_dist <= max_dist, got {min_dist}, {max_dist}")
    rng = np.random.default_rng(0) if rng is None else rng
    skel = motion.skeleton
    skip = set(skip)
    for name in skip:
        skel.index(name)  # UnknownNameError listing the known names
    lengths = skel.bone_lengths()
    names, body, offset = [], [], []
    for j, jname in enumerate(skel.names):
        if jname in skip or (j > 0 and lengths[j] < 1e-6):
            continue
        bones = [skel.offsets[c] for c in skel.children(j)]
        if np.all(np.isfinite(skel.end_sites[j])):
            bones.append(skel.end_sites[j])
        bones = [b for b in bones if np.linalg.norm(b) > 1e-6]
        if bones:
            lens = np.array([np.linalg.norm(b) for b in bones])
            dirs = np.array(bones) / lens[:, None]
            mean = dirs.mean(axis=0)
            if np.linalg.norm(mean) > 0.7:  # the bones agree: their mean direction and length
                u = mean / np.linalg.norm(mean)
                L = float(np.mean(np.array(bones) @ u))
            else:
                u, L = dirs[np.argmax(lens)], float(lens.max())
            e1, e2 = _unit_perp(u)
        phase = rng.uniform(0, 2 * np.pi)
        for k in range(per_segment):
            dist = rng.uniform(min_dist, max_dist)
            # Evenly spread azimuths (with jitter) keep the markers off one line.
            az = phase + 2 * np.pi * (k + rng.uniform(-0.15, 0.15)) / per_segment
            if bones:
                # Spread along the bone too so markers are not all in one cross-section.
                t = 0.15 + 0.7 * (k + 0.5) / per_segment + rng.uniform(-0.05, 0.05)
                off = t * L * u + dist * (np.cos(az) * e1 + np.sin(az) * e2)
            else:
                # Cluster: orthogonal directions of a random frame (then random ones), at the
                # far half of the distance range, so a short segment's orientation is well posed.
                if k == 0:
                    frame = quat.to_matrix(quat.normalize(rng.normal(size=4)))
                v = frame[:, k] if k < 3 else rng.normal(size=3)
                off = rng.uniform(0.5 * (min_dist + max_dist), max_dist) * v / np.linalg.norm(v)
            names.append(f"{jname}_{k}")
            body.append(j)
            offset.append(off)
    if not names:
        raise ShapeError("place_markers: no segment to put a marker on")
    return MarkerSet(tuple(names), np.array(body), np.array(offset))


def synthesize(motion: Motion, markerset: MarkerSet, noise_m: float = 0.002, drop: float = 0.0,
               rng: np.random.Generator | None = None,
               gaps: Sequence[tuple[Sequence[str], int, int]] = ()) -> np.ndarray:
    """World marker positions ``(F, M, 3)`` m a capture of ``motion`` would see.

    Args:
        motion: ground-truth motion.
        markerset: the markers (``body`` indices into ``motion.skeleton``).
        noise_m: m, standard deviation of the Gaussian noise on each axis (isotropic).
        drop: probability that any one sample (marker, frame) is missing, independently.
        rng: random generator (default: a fixed seed).
        gaps: ``(marker_names, start_frame, stop_frame)`` triples; those markers are NaN on
            frames ``start_frame <= f < stop_frame``.
    Returns:
        ``(F, M, 3)`` m, columns in ``markerset.names`` order, NaN = missing.
    """
    if not (noise_m >= 0 and 0 <= drop <= 1):             # NaN noise made every marker NaN
        raise ShapeError(f"need noise_m >= 0 and 0 <= drop <= 1, got {noise_m}, {drop}")
    rng = np.random.default_rng(0) if rng is None else rng
    pos = marker_positions(motion.skeleton, markerset, motion.lrot, motion.root_pos)
    if noise_m > 0:
        pos = pos + rng.normal(scale=noise_m, size=pos.shape)
    if drop > 0:
        pos[rng.random(pos.shape[:2]) < drop] = np.nan
    for names, start, stop in gaps:
        if isinstance(names, str):
            names = [names]
        idx = []
        for n in names:
            if n not in markerset.names:
                raise UnknownNameError(
                    f"unknown marker {n!r}; known: {known_list(markerset.names)}")
            idx.append(markerset.names.index(n))
        pos[int(start):int(stop), idx] = np.nan
    return pos


def joint_angle_error_deg(a: Motion, b: Motion, joints=None) -> np.ndarray:
    """Geodesic angle (degrees) between the local rotations of two motions, ``(F, J')``.

    Args:
        a, b: motions on skeletons of the same structure with the same number of frames.
        joints: ``None`` (all), joint names, indices, or a ``(J,)`` bool mask; selects and
            orders the columns.
    """
    if not a.skeleton.same_structure(b.skeleton):
        raise ShapeError("joint_angle_error_deg: the motions' skeletons differ in joints")
    if a.n_frames != b.n_frames:
        raise ShapeError(f"joint_angle_error_deg: {a.n_frames} frames vs {b.n_frames}")
    ang = np.degrees(quat.angle(a.lrot, b.lrot))
    if joints is None:
        return ang
    sel = np.asarray(joints)
    if sel.dtype == bool:
        if sel.shape != (len(a.skeleton),):
            raise ShapeError(f"joints mask: expected shape ({len(a.skeleton)},), got {sel.shape}")
        return ang[:, sel]
    idx = [a.skeleton.index(j) if isinstance(j, str) else int(j) for j in np.atleast_1d(joints)]
    return ang[:, idx]
