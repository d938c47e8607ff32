"""Offline rendering of a motion (and markers) to GIF or MP4 with matplotlib, for papers/slides."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import PhysmocapError, bad_number
from ..io.atomic import atomic_path
from ..markers import MarkerTrajectories
from ..motion import Motion
from ._mpl import pyplot

__all__ = ["render_motion"]


def output_fps(path, fps: float, motion_fps: float) -> float:
    """The rate ``render_motion`` writes at: ``fps``, at most the motion's, and for a GIF the
    nearest 100 / n frames per second with n >= 2. A GIF keeps frame times in whole hundredths
    of a second (Pillow truncates: 30 fps became 0.03 s frames, 11 % fast; 60 fps 0.01 s, 67 %
    fast), and browsers slow frames under 0.02 s."""
    out = min(float(fps), float(motion_fps))
    if Path(path).suffix.lower() == ".gif":
        out = 100.0 / max(2, round(100.0 / out))
    return out


def render_motion(motion: Motion, path, markers: MarkerTrajectories | None = None,
                  fps: float = 30.0, size: tuple[float, float] = (6.0, 6.0), dpi: int = 80,
                  elev: float = 12.0, azim: float = -60.0, progress=None) -> int:
    """Render ``motion`` to ``path`` (.gif with Pillow, .mp4 with ffmpeg); returns frames written.

    Frames are taken at ``output_fps`` (``fps``, at most the motion's rate; a GIF's whole
    hundredths of a second) by nearest source frame; the camera
    follows the root horizontally. Markers, if given, are drawn with residual lines to the body
    when their marker set fits the skeleton (see ``viewer.markers_on_motion``).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise PhysmocapError("render writes .gif or .mp4", path)
    if motion.n_frames == 0:
        raise PhysmocapError("motion has no frames", motion.meta.get("path"))
    # (a GIF frame lasts at most 655.35 s: below 0.01 fps Pillow overflowed with a traceback)
    if bad_number(fps, positive=True) or fps < 0.01:
        raise PhysmocapError(f"render: fps must be a finite number >= 0.01, got {fps!r}")
    plt = pyplot()
    from matplotlib import animation
    out_fps = output_fps(path, fps, motion.fps)
    if suffix == ".mp4":
        if not animation.writers.is_available("ffmpeg"):
            raise PhysmocapError("writing .mp4 needs ffmpeg on PATH (apt-get install ffmpeg); "
                                 "or write a .gif", path)
        writer = animation.FFMpegWriter(fps=out_fps)
    else:
        # (PillowWriter saves int(1000 / fps) ms: a hair under the rate, so n hundredths
        # come out whole, not n - 0.001 truncated down)
        writer = animation.PillowWriter(fps=out_fps / (1.0 + 1e-9))
    n_out = max(1, int(np.floor(motion.duration * out_fps)) + 1) if motion.n_frames > 1 else 1
    src = np.clip(np.round(np.arange(n_out) / out_fps * motion.fps).astype(int), 0,
                  motion.n_frames - 1)
    gpos = motion.gpos
    parents = motion.skeleton.parents
    pos = lm = None
    if markers is not None:
        from .viewer import markers_on_motion
        pos, lm, _, _ = markers_on_motion(motion, markers)

    fig = plt.figure(figsize=size)
    ax = fig.add_subplot(projection="3d")
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.02, top=0.95)   # the body, not margins
    height = max(float(np.ptp(gpos[..., 2])), 0.5)
    r = 0.6 * height
    from .viewer import joint_side
    colour = {1: "#b03030", -1: "#3050b0", 0: "#303030"}
    bones = [ax.plot([], [], [], color=colour[joint_side(motion.skeleton.names[j])], lw=2.5)[0]
             for j in range(len(parents)) if parents[j] >= 0]
    pairs = [(parents[j], j) for j in range(len(parents)) if parents[j] >= 0]
    dots = ax.plot([], [], [], "s", color="#1f9fd0", ms=3)[0] if pos is not None else None
    res = ax.plot([], [], [], color="#ff8c00", lw=1.2)[0] if lm is not None else None
    ax.set_box_aspect((1, 1, 1))
    ax.view_init(elev=elev, azim=azim)
    title = ax.set_title("")
    try:
        with atomic_path(path, suffix=suffix) as tmp:
            with writer.saving(fig, str(tmp), dpi):
                for i, f in enumerate(src):
                    g = gpos[f]
                    for line, (p, j) in zip(bones, pairs):
                        line.set_data_3d(*g[[p, j]].T)
                    c = g[0]
                    ax.set_xlim(c[0] - r, c[0] + r)
                    ax.set_ylim(c[1] - r, c[1] + r)
                    ax.set_zlim(0.0, 2 * r)
                    if dots is not None:
                        dots.set_data_3d(*pos[f].T)
                    if res is not None:
                        # One polyline with NaN breaks: marker -> landmark for every marker.
                        seg = np.stack([pos[f], lm[f], np.full_like(lm[f], np.nan)], 1)
                        res.set_data_3d(*seg.reshape(-1, 3).T)
                    title.set_text(f"frame {f}  {f / motion.fps:.2f} s")
                    writer.grab_frame()
                    if progress is not None:
                        progress("render", i + 1, len(src))
    finally:
        plt.close(fig)
    return len(src)
