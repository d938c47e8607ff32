"""What was wrong with a capture and what the solve did about it: the ``damage`` section of the
solve report.

Raw optical captures have gaps (occlusions), markers never seen, stretches where every marker is
lost, labels swapped between two markers and ghosts (a stray reflection taking a label for a
frame or two). The solver copes with each (a missing sample has no spring; a far-off sample's
spring is redescending, so it hardly pulls), but the user must be told which markers and which
frames, and what was done:

* ``ignored``: a marker never seen in the take (no spring; its segment is posed by the others),
  and non-finite samples (read as missing);
* ``bridged``: gaps of a marker (the solved body gives its position; the cleaned C3D is filled
  from it) and frames where no marker is seen (pose interpolated between the frames around it,
  or held at the ends of the take);
* ``flagged as swap``: two markers both far from their landmarks over the same frames, each near
  the other's landmark (springs weakened);
* ``flagged as ghost``: a marker that jumps far from its landmark for a short burst (at most
  ``GHOST_S``) and back, which no swap explains; other disagreements (longer, or drifting off
  gradually as a poorly seen segment does) are ``flagged as outlier``.

Frame ranges are ``[start, stop)`` 0-based indices into the capture.
"""
from __future__ import annotations

import numpy as np

from .. import quat

__all__ = ["intervals", "damage_report", "bridge_blackouts", "GHOST_S", "MAX_LISTED"]

#: s; a far-off burst at most this long is a ghost, a longer one an outlier.
GHOST_S = 0.1
#: intervals listed per marker (the count is always complete).
MAX_LISTED = 20


def intervals(mask: np.ndarray) -> list[list[int]]:
    """``[[start, stop), …]`` of the True runs of a 1-D bool array."""
    m = np.asarray(mask, bool).astype(np.int8)
    edges = np.diff(np.concatenate([[0], m, [0]]))
    return [[int(a), int(b)] for a, b in zip(np.flatnonzero(edges == 1),
                                             np.flatnonzero(edges == -1))]


def bridge_blackouts(root: np.ndarray, lrot: np.ndarray, seen: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """Fill frames where no marker is seen: slerp/lerp between the solved frames around each
    blackout; hold the nearest solved frame at the ends of the take.

    Args:
        root: ``(F, 3)`` m; ``lrot``: ``(F, J, 4)`` xyzw; ``seen``: ``(F,)`` bool, a marker seen.
    Returns:
        new ``root``, ``lrot`` (copies) and one report entry per blackout.
    """
    root, lrot = np.array(root, float), np.array(lrot, float)
    F = len(seen)
    out = []
    if not np.any(seen):
        return root, lrot, out
    for a, b in intervals(~np.asarray(seen, bool)):
        if a > 0 and b < F:
            w = (np.arange(a, b) - (a - 1)) / (b - (a - 1))           # (n,) in (0, 1)
            root[a:b] = (1 - w)[:, None] * root[a - 1] + w[:, None] * root[b]
            q0 = np.broadcast_to(lrot[a - 1], lrot[a:b].shape)
            q1 = np.broadcast_to(lrot[b], lrot[a:b].shape)
            lrot[a:b] = quat.slerp(q0, q1, np.broadcast_to(w[:, None], (b - a, lrot.shape[1])))
            how = "bridged (interpolated)"
        else:
            src = b if a == 0 else a - 1
            root[a:b], lrot[a:b] = root[src], lrot[src]
            how = "bridged (held)"
        out.append({"frames": [a, b], "seconds": None, "action": how})
    return root, lrot, out


def _listed(iv: list) -> list:
    return iv[:MAX_LISTED]


def damage_report(labels, pos: np.ndarray, solved: np.ndarray, far: np.ndarray, fps: float,
                  outlier_distance: float, blackouts: list[dict] | None = None,
                  nonfinite: int = 0) -> dict:
    """The ``damage`` section of a solve report.

    Args:
        labels: ``(M,)`` marker names (columns of the arrays).
        pos: ``(F, M, 3)`` m, captured markers (NaN = missing); ``solved``: ``(F, M, 3)`` m, the
            solved body's landmarks; ``far``: ``(F, M)`` bool, samples beyond
            ``outlier_distance`` (m) from their landmark at equilibrium.
        fps: capture rate (Hz); ``blackouts``: from ``bridge_blackouts``;
        nonfinite: samples the reader found infinite and read as missing.
    """
    labels = list(labels)
    F, M = pos.shape[:2]
    missing = np.isnan(pos).any(axis=-1)
    never = missing.all(axis=0)
    rep: dict = {
        "markers_never_seen": [{"marker": labels[m], "action": "ignored"}
                               for m in np.flatnonzero(never)],
        "gaps": [],
        "blackouts": [],
        "swaps": [],
        "ghosts": [],
        "outliers": [],
        "nonfinite_samples": {"count": int(nonfinite),
                              "action": "ignored (read as missing)"} if nonfinite else None,
    }
    for m in np.flatnonzero(missing.any(axis=0) & ~never):
        iv = intervals(missing[:, m])
        rep["gaps"].append({"marker": labels[m], "frames": int(missing[:, m].sum()),
                            "intervals": _listed(iv), "n_intervals": len(iv),
                            "action": "bridged"})
    for b in blackouts or []:
        a, z = b["frames"]
        rep["blackouts"].append({**b, "seconds": round((z - a) / fps, 4)})

    # Swaps: two markers far off over overlapping frames, each near the other's landmark.
    far = np.asarray(far, bool) & ~missing
    claimed = np.zeros_like(far)
    near = 2.0 * outlier_distance
    rows = np.flatnonzero(far.any(axis=0))
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            both = far[:, a] & far[:, b]
            if not both.any():
                continue
            d_ab = np.linalg.norm(pos[:, a] - solved[:, b], axis=-1)
            d_ba = np.linalg.norm(pos[:, b] - solved[:, a], axis=-1)
            crossed = both & (d_ab < near) & (d_ba < near)
            for s, e in intervals(crossed):
                rep["swaps"].append({"markers": [labels[a], labels[b]], "frames": [s, e],
                                     "seconds": round((e - s) / fps, 4),
                                     "action": "flagged as swap"})
                claimed[s:e, a] = claimed[s:e, b] = True
    # Ghosts and outliers: the rest of the far-off samples, per marker and run. A ghost is a
    # short burst the marker jumps into and out of: seen and close just before and just after,
    # and its offset from the body changes by more than ``2 x outlier_distance`` at both ends.
    # A poor fit (few markers left on a segment) drifts off gradually: an outlier, not a ghost.
    inlier = ~missing & ~far
    for m in np.flatnonzero((far & ~claimed).any(axis=0)):
        for s, e in intervals(far[:, m] & ~claimed[:, m]):
            # Offsets from the body only around the run (a long take needs no (F, M, 3) copy).
            a, z = max(s - 1, 0), min(e + 1, F)
            off = pos[a:z, m] - solved[a:z, m]
            dist = np.linalg.norm(off[s - a:e - a], axis=-1)
            entry = {"marker": labels[m], "frames": [s, e], "seconds": round((e - s) / fps, 4),
                     "distance_mm_max": round(1000 * float(np.nanmax(dist)), 1)}
            jump = (s > 0 and e < F and inlier[s - 1, m] and inlier[e, m]
                    and np.linalg.norm(off[s - a] - off[0]) > 2 * outlier_distance
                    and np.linalg.norm(off[e - 1 - a] - off[z - 1 - a]) > 2 * outlier_distance)
            if jump and (e - s) / fps <= GHOST_S:
                rep["ghosts"].append({**entry, "action": "flagged as ghost"})
            else:
                rep["outliers"].append({**entry, "action": "flagged as outlier"})
    rep["summary"] = {
        "markers_never_seen": len(rep["markers_never_seen"]),
        "gap_samples": int(missing[:, ~never].sum()),
        "blackout_frames": int(sum(b["frames"][1] - b["frames"][0] for b in rep["blackouts"])),
        "swaps": len(rep["swaps"]), "ghosts": len(rep["ghosts"]),
        "outliers": len(rep["outliers"]), "nonfinite_samples": int(nonfinite),
    }
    return rep
