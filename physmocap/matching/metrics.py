"""Figures of a motion-matched (or any) motion: how well it follows its input, and how clean it is.
"""
from __future__ import annotations

import numpy as np

from ..errors import require_numbers
from ..motion import Motion
from .coverage import run_coverage
from .trajectory import yaw_of

__all__ = ["foot_skate_mm", "database_figures", "jitter", "polyline_distance", "intended_path",
           "facing_error_deg", "facing_error_series", "intended_line",
           "path_distance_series", "run_report"]


def foot_skate_mm(motion: Motion, feet: tuple[str, str], contacts: np.ndarray) -> float:
    """Mean horizontal travel (mm per frame) of the two ``feet`` joints while in contact.

    ``contacts``: ``(F, 2)`` bool (left, right), e.g. the matched database frames' contacts.
    """
    g = motion.gpos
    steps = []
    for k, name in enumerate(feet):
        p = g[:, motion.skeleton.index(name), :2]
        both = contacts[1:, k] & contacts[:-1, k]
        steps.append(np.linalg.norm(np.diff(p, axis=0), axis=-1)[both])
    s = np.concatenate(steps)
    return float(1000.0 * s.mean()) if s.size else 0.0


def database_figures(db) -> tuple[float, float | None]:
    """``(foot skate mm per frame, jitter m/s^3)`` of a ``PoseDatabase``'s own clips, clip by
    clip (no jumps at clip seams), weighted by their frames: what a motion played from it
    could reach. The skate is of its contact joints while labelled in contact; the jitter is
    ``None`` when no clip has the 4 frames a third difference needs."""
    feet = tuple(db.contact_joints)
    skate, jit, n_skate, n_jit = [], [], [], []
    for a, b in zip(db.range_starts, db.range_stops):
        clip = db.to_motion(int(a), int(b))            # >= 2 frames (``build_database``)
        skate.append(foot_skate_mm(clip, feet, np.array(db.contacts[a:b])))
        n_skate.append(b - a)
        if b - a >= 4:
            jit.append(jitter(clip))
            n_jit.append(b - a)
    return (float(np.average(skate, weights=n_skate)),
            float(np.average(jit, weights=n_jit)) if jit else None)


def jitter(motion: Motion) -> float:
    """Mean norm of the third time difference of all joint positions (m/s^3): jerk, which
    inertialization should keep near that of the source clips."""
    g = motion.gpos
    if len(g) < 4:
        return 0.0
    d3 = np.diff(g, n=3, axis=0) * motion.fps ** 3
    return float(np.linalg.norm(d3, axis=-1).mean())


def polyline_distance(points: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Horizontal distance ``(F,)`` of ``points (F, 2+)`` to the polyline ``line (L, 2+)``."""
    p = np.asarray(points, float)[:, None, :2]
    a = np.asarray(line, float)[None, :-1, :2]
    b = np.asarray(line, float)[None, 1:, :2]
    ab = b - a
    t = np.clip(np.sum((p - a) * ab, -1) / np.maximum(np.sum(ab * ab, -1), 1e-12), 0.0, 1.0)
    d = np.linalg.norm(p - (a + t[..., None] * ab), axis=-1)
    return d.min(axis=1)


def intended_path(start: np.ndarray, desired_vel: np.ndarray, dt: float) -> np.ndarray:
    """The path a joystick asked for: desired velocities ``(F, 3)`` integrated from ``start``."""
    require_numbers("intended_path", ("dt",), dt=dt)
    return np.asarray(start, float)[:2] + np.cumsum(np.asarray(desired_vel)[:, :2] * dt, axis=0)


def facing_error_series(root_rot: np.ndarray, desired_rot: np.ndarray, fps: float,
                        turn_rate_deg: float = 90.0, settle_s: float = 1.0
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Per frame: the angle (deg) between the character's and the desired facing ``(F,)``, and
    whether the frame is outside sharp turns ``(F,)`` bool.

    A frame counts as inside a sharp turn if the desired facing turned faster than
    ``turn_rate_deg``/s within the previous ``settle_s`` seconds.
    """
    require_numbers("facing_error_deg", ("fps",), fps=fps, turn_rate_deg=turn_rate_deg,
                    settle_s=settle_s)
    ya, yd = yaw_of(root_rot), np.unwrap(yaw_of(desired_rot))
    err = np.degrees(np.abs(np.angle(np.exp(1j * (ya - yd)))))
    rate = np.degrees(np.abs(np.gradient(yd) * fps)) if len(yd) > 1 else np.zeros(len(yd))
    sharp = rate > turn_rate_deg
    k = int(round(settle_s * fps))
    recent = np.convolve(sharp.astype(float), np.ones(k + 1), mode="full")[:len(sharp)] > 0
    return err, ~recent


def facing_error_deg(root_rot: np.ndarray, desired_rot: np.ndarray, fps: float,
                     turn_rate_deg: float = 90.0, settle_s: float = 1.0) -> tuple[float, float]:
    """Mean angle (deg) between the character's and the desired facing, outside sharp turns
    (``facing_error_series``). Returns (mean error outside, fraction of frames outside)."""
    err, keep = facing_error_series(root_rot, desired_rot, fps, turn_rate_deg, settle_s)
    return (float(err[keep].mean()) if keep.any() else float("nan"), float(keep.mean()))


def intended_line(source, record, dt: float) -> tuple[str, np.ndarray]:
    """What the character was asked to follow, as a polyline ``(L, 2+)`` (m), and its kind:
    a path's points (closed: the first again at the end), a head-mounted display's
    positions, or the joystick's desired velocities integrated from the first root."""
    if hasattr(source, "path_distance"):
        pts = np.asarray(source.points, float)
        return "path", np.vstack([pts, pts[:1]]) if getattr(source, "closed", False) else pts
    if hasattr(source, "pos") and hasattr(source, "times"):      # a head-mounted display
        return "head track", np.asarray(source.pos, float)
    return "integrated joystick velocity", intended_path(np.array(record.root_pos)[0],
                                                         np.array(record.desired_vel), dt)


def path_distance_series(source, record, dt: float, line: np.ndarray | None = None
                         ) -> np.ndarray:
    """Horizontal distance (m) ``(F,)`` of the character's root from what it was asked to
    follow (``intended_line``; ``line``: its polyline, where the caller has it), every
    frame."""
    root = np.array(record.root_pos)
    if hasattr(source, "path_distance"):
        return np.array([source.path_distance(p) for p in root])
    if line is None:
        line = intended_line(source, record, dt)[1]
    return polyline_distance(root, line) if len(line) > 1 else np.zeros(len(root))


def run_report(db, motion: Motion, record, source) -> dict:
    """The JSON figures of a controller run (``physmocap mm run --report``).

    Args:
        db: the ``PoseDatabase``; ``motion``: the output; ``record``: the controller's
            ``ControllerRecord``; ``source``: its input (a path, a head track or a joystick).
    """
    dt = 1.0 / db.fps
    settle = int(round(1.0 / dt))
    kind, line = intended_line(source, record, dt)
    dist = path_distance_series(source, record, dt, line)[settle:]     # after the first second
    face, frac = facing_error_deg(np.array(record.root_rot), np.array(record.desired_rot),
                                  1.0 / dt)
    feet = tuple(n for n in db.contact_joints)
    contacts = np.array(record.contacts)
    db_skate, db_jitter = database_figures(db)
    search = np.array(record.search_seconds)
    return {
        "frames": motion.n_frames, "fps": motion.fps,
        # None: a run of 1 s or less ends before the path is measured
        "trajectory_error_m": round(float(dist.mean()), 4) if dist.size else None,
        "trajectory_error_max_m": round(float(dist.max()), 4) if dist.size else None,
        "intended_path": kind,
        "facing_error_deg": round(face, 2), "facing_frames_outside_turns": round(frac, 3),
        "foot_skate_mm": round(foot_skate_mm(motion, feet, contacts), 3),
        "foot_skate_mm_database": round(db_skate, 3),
        "jitter": round(jitter(motion), 2),
        "jitter_database": None if db_jitter is None else round(db_jitter, 2),
        "transitions": record.transitions,
        "searches": int(search.size),
        "search_us": round(float(np.median(search) * 1e6), 1) if search.size else None,
        # speeds the input asked for that no clip keeps, turns faster than any clip keeps:
        # where the feet slide (``coverage``)
        **run_coverage(db, record, dt),
    }
