"""Foot-plant detection from foot markers: low and slow, with hysteresis.

A plant starts when a foot marker is both near its lowest height and nearly still, and ends only
when it is clearly higher or faster (two thresholds each, so noise does not make plants flicker),
or has left the place where it was planted.
"""
from __future__ import annotations

import numpy as np

from .._arrays import intervals
from ..errors import ShapeError, require_counts, require_numbers

__all__ = ["detect_plants", "FOOT_MARKERS"]

#: Marker labels (CMU and Plug-in Gait) that define foot plants, per side.
FOOT_MARKERS = {"Left": ("LHEE", "LTOE", "LMT5", "LANK"), "Right": ("RHEE", "RTOE", "RMT5", "RANK")}


def _speed(pos: np.ndarray, fps: float) -> np.ndarray:
    """``(F, K)`` m/s over a span of about 1/30 s (a plain frame-to-frame difference lets 1 mm
    of marker noise read as 0.1 m/s at 120 Hz); NaN where a sample in the span is missing."""
    F = len(pos)
    if F < 2:
        return np.zeros(pos.shape[:2])
    k = max(1, int(round(fps / 60.0)))
    lo = np.clip(np.arange(F) - k, 0, F - 1)
    hi = np.clip(np.arange(F) + k, 0, F - 1)
    dt = (hi - lo) / fps
    return np.linalg.norm(pos[hi] - pos[lo], axis=-1) / dt[:, None]


def detect_plants(pos: np.ndarray, fps: float, height_on: float = 0.03, height_off: float = 0.05,
                  speed_on: float = 0.15, speed_off: float = 0.30, move_off: float = 0.015,
                  min_frames: int = 3) -> np.ndarray:
    """Plants of foot markers.

    Args:
        pos: ``(F, K, 3)`` m, foot-marker positions (NaN = missing), Z up.
        fps: capture rate.
        height_on, height_off: m above the marker's own lowest height (its 2nd percentile) under
            which a plant may start, and above which it ends.
        speed_on, speed_off: m/s under which a plant may start, above which it ends.
        move_off: m from where the plant started beyond which it ends. A heel peels off the
            floor slowly (0.15-0.2 m/s, a 5 cm rise over 0.2 s): by height and speed alone its
            plant outlasted the heel's lift-off, and pinned the solved heel 2-3 cm below its
            marker while the foot rolled over its toes.
        min_frames: shorter plants are dropped.
    Returns:
        ``(F, K)`` bool, True while the marker is planted. Missing samples are never planted.
    """
    require_numbers("detect_plants", ("fps", "move_off"), fps=fps, height_on=height_on,
                    height_off=height_off, speed_on=speed_on, speed_off=speed_off,
                    move_off=move_off)
    require_counts("detect_plants", min_frames=min_frames)
    pos = np.asarray(pos, dtype=float)
    if pos.ndim != 3 or pos.shape[-1] != 3:
        raise ShapeError(f"foot-marker positions must be (F, K, 3), got {pos.shape}")
    F, K = pos.shape[:2]
    out = np.zeros((F, K), bool)
    if F == 0:
        return out
    speed = _speed(pos, fps)
    with np.errstate(invalid="ignore"):
        low = np.nanpercentile(pos[..., 2], 2, axis=0) if np.any(~np.isnan(pos)) else np.zeros(K)
    h = pos[..., 2] - low
    on = (h < height_on) & (speed < speed_on)
    off = (h > height_off) | (speed > speed_off) | np.isnan(h) | np.isnan(speed)
    # Hysteresis is sequential by nature; it loops over frames once, on booleans only.
    # A plant that ended by moving off its place starts again only once the marker has been
    # off the floor or fast (not ``on``): one plant is one stay in one place. Else a heel
    # peeling off slowly, or a foot creeping, would be pinned in 1.5 cm stairs.
    state = np.zeros(K, bool)
    armed = np.ones(K, bool)
    start = np.zeros((K, 3))
    for f in range(F):
        with np.errstate(invalid="ignore"):
            moved = state & (np.linalg.norm(pos[f] - start, axis=-1) > move_off)
        armed = (armed | ~on[f]) & ~moved
        new = on[f] & ~state & armed
        state = np.where(state, ~off[f] & ~moved, new)
        start[new] = pos[f, new]
        out[f] = state
    # Drop plants shorter than min_frames.
    for k in range(K):
        for a, b in intervals(out[:, k]):
            if b - a < min_frames:
                out[a:b, k] = False
    return out
