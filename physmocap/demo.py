"""The embedded default: a marker capture synthesised from a real clip that pybullet_data ships.

A DeepMimic mocap clip (``humanoid3d_walk.txt``) is resampled to 120 Hz and retargeted onto the
humanoid body template; the CMU 41-marker set is placed on it; then the capture is spoiled the way
real ones are: 2 mm noise, random dropped samples, one marker hidden for a quarter second, and two
labels (LKNE and LSHN) swapped for half a second. Solving it shows the whole pipeline and, since
the truth is known, how far the solve lands from it.
"""
from __future__ import annotations

import numpy as np

from .markers import MarkerTrajectories
from .motion import Motion

__all__ = ["make_demo_capture", "SWAPPED", "HIDDEN"]

SWAPPED = ("LKNE", "LSHN")
HIDDEN = "LELB"


def make_demo_capture(clip: str = "humanoid3d_walk.txt", fps: float = 120.0,
                      noise_m: float = 0.002, drop: float = 0.03, seed: int = 0
                      ) -> tuple[MarkerTrajectories, Motion]:
    """The demo capture and its ground-truth motion.

    Returns:
        markers: ``MarkerTrajectories`` with the 41 CMU labels (m, Z up).
        truth: the motion the markers were made from (humanoid template skeleton).
    """
    from .io.deepmimic import pybullet_motion_path, read_deepmimic
    from .matching.retarget import retarget
    from .scene import load_body, load_markerset
    from .solver.physical import landmarks

    rng = np.random.default_rng(seed)
    src = read_deepmimic(pybullet_motion_path(clip), fps=fps)
    body = load_body()
    truth = retarget(src, body.skeleton)
    ms = load_markerset("cmu41").bind(body.skeleton)
    pos = landmarks(truth.gpos, truth.grot, ms)
    pos = pos + rng.normal(scale=noise_m, size=pos.shape)
    F = len(pos)
    pos[rng.random(pos.shape[:2]) < drop] = np.nan
    labels = list(ms.names)
    h = labels.index(HIDDEN)
    pos[F // 4:F // 4 + int(0.25 * fps), h] = np.nan
    a, b = labels.index(SWAPPED[0]), labels.index(SWAPPED[1])
    w = slice(F // 2, min(F, F // 2 + int(0.5 * fps)))
    pos[w, [a, b]] = pos[w, [b, a]]
    meta = {"path": f"demo:{clip}", "swapped": list(SWAPPED), "swap_frames": [w.start, w.stop],
            "hidden": HIDDEN}
    # each seen sample's residual: the noise it was spoiled with, as a capture states its own
    residual = np.where(np.isnan(pos).any(-1), np.nan, noise_m)
    return MarkerTrajectories(tuple(labels), fps, pos, subject="demo", meta=meta,
                              residual=residual), truth
