"""matplotlib, imported lazily with the file-only Agg backend (an optional extra: ``report``)."""
from __future__ import annotations

import numpy as np

from ..errors import PhysmocapError

__all__ = ["pyplot", "frame_still", "plot_bones"]


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed); a clear error if missing."""
    try:
        import matplotlib
    except ImportError:
        raise PhysmocapError("plots need matplotlib: pip install 'physmocap[report]'") from None
    # Agg renders to files only: reports are made on servers and CI with no display.
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def frame_still(ax, pts: np.ndarray) -> None:
    """A 3D still's axes around the points ``pts (N, 3)`` m: a cube that holds them all, the
    floor (z = 0) in view, seen from the front left, without tick labels."""
    c = pts.mean(axis=0)
    r = 0.5 * max(np.ptp(pts, axis=0).max(), 0.5)
    ax.set_xlim(c[0] - r, c[0] + r)
    ax.set_ylim(c[1] - r, c[1] + r)
    ax.set_zlim(max(c[2] - r, min(0.0, pts[:, 2].min())), max(c[2] - r, 0.0) + 2 * r)
    ax.set_box_aspect((1, 1, 1))
    ax.view_init(elev=12, azim=-60)
    ax.set_xticklabels([]); ax.set_yticklabels([]); ax.set_zticklabels([])


def plot_bones(ax, parents, pts: np.ndarray, **style) -> None:
    """A skeleton's bones on 3D axes: a line from each joint's parent to it, ``pts (J, 3)``
    m the joints' world positions, ``style`` matplotlib's line keywords."""
    for j, p in enumerate(parents):
        if p >= 0:
            ax.plot(*pts[[p, j]].T, **style)
