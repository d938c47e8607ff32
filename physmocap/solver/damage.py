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

* ``flagged: frame rate``: a take whose declared rate makes the person move implausibly (see
  ``frame_rate_check``).

Frame ranges are ``[start, stop)`` 0-based indices into the capture.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from .._arrays import intervals
from ..errors import require_numbers

__all__ = ["intervals", "damage_report", "bridge_blackouts", "frame_rate_check", "GHOST_S",
           "MAX_LISTED", "STRIDE_HZ", "TOP_SPEED"]

#: s; a far-off burst at most this long is a ghost, a longer one an outlier.
GHOST_S = 0.1
#: intervals listed per marker (the count is always complete).
MAX_LISTED = 20
#: strides per second (one foot) of human walking and running, slowest stroll to sprint, with
#: margin: walking is ~0.9, running ~1.4, sprinting ~2.3.
STRIDE_HZ = (0.3, 3.0)
#: m/s; faster than any person runs (sprint record ~12.4): the hips cannot sustain it.
TOP_SPEED = 13.0


def frame_rate_check(hips: np.ndarray, feet: dict, fps: float) -> dict:
    """Does the declared frame rate make the person move like a person?

    A rate that is wrong by a factor k plays the take k times too fast or too slow, which no
    marker can show by itself. Two figures reveal it: the hips' sustained speed (95th
    percentile) against the fastest human run, and, when the person walks or runs, the stride
    rate, which lies in ``STRIDE_HZ`` for every human gait. Strides are counted scale-free: a
    foot swings while its horizontal speed is over a quarter of its own 95th percentile, and a
    swing counts when the foot travels at least 0.15 m, and the feet must alternate (the other
    foot swings once in the middle of at least 3 in 4 strides), as in every gait.

    Args:
        hips: ``(F, 3)`` m, the solved hips; ``feet``: ``{'Left': (F, 3), 'Right': (F, 3)}`` m,
            a solved point on each foot; ``fps``: the declared rate (Hz).
    Returns:
        ``{declared_hz, hip_speed_p95_m_s, stride_hz (None without 2+ strides per foot),
        plausible, action}``; ``action`` names the likely error when implausible.
    """
    require_numbers("frame_rate_check", ("fps",), fps=fps)      # 0 called any take plausible
    F = len(hips)
    out = {"declared_hz": float(fps), "hip_speed_p95_m_s": None, "stride_hz": None,
           "plausible": True, "action": "checked"}
    if F < 3:
        return out
    w = max(1, int(round(0.1 * fps)))          # speed over ~0.1 s: marker noise averages out
    v = np.linalg.norm(hips[w:, :2] - hips[:-w, :2], axis=-1) * fps / w
    out["hip_speed_p95_m_s"] = round(float(np.percentile(v, 95)), 3) if v.size else None
    rates, starts = [], []
    for p in feet.values():
        s = np.linalg.norm(np.diff(p[:, :2], axis=0), axis=-1)        # m per frame
        top = np.percentile(s, 95)
        if not top > 0:
            continue
        swings = [iv for iv in intervals(s > 0.25 * top) if s[iv[0]:iv[1]].sum() >= 0.15]
        starts.append(np.array([iv[0] for iv in swings]))
        if len(swings) >= 2:
            # strides per second from the spacing of the swings' starts
            rates.append((len(swings) - 1) / ((swings[-1][0] - swings[0][0]) / fps))
    # A gait alternates its feet: between two swings of one foot the other swings once, near
    # the middle. Swings that do not (a jittery solve of a badly damaged take, hops, a dance)
    # give no stride rate to judge the clock by.
    alternate = 0.0
    if len(starts) == 2 and len(starts[0]) >= 2:
        a, b = starts[0][:-1], starts[0][1:]
        lo, hi = a + 0.2 * (b - a), b - 0.2 * (b - a)
        inside = ((starts[1][None, :] > lo[:, None]) & (starts[1][None, :] < hi[:, None])).sum(1)
        alternate = float(np.mean(inside == 1))
    if len(rates) == len(feet) == 2 and alternate >= 0.75:
        out["stride_hz"] = round(float(np.median(rates)), 3)
    fast = out["hip_speed_p95_m_s"] is not None and out["hip_speed_p95_m_s"] > TOP_SPEED
    f = out["stride_hz"]
    if fast or (f is not None and f > STRIDE_HZ[1]):
        out["plausible"] = False
        out["action"] = ("flagged: the take plays faster than a person moves; the declared "
                         "frame rate is probably too high")
    elif f is not None and f < STRIDE_HZ[0]:
        out["plausible"] = False
        out["action"] = (f"flagged: {f:.2f} strides/s is slower than any human gait (0.5-2.5); "
                         f"the declared frame rate is probably too low, by about "
                         f"{0.9 / f:.0f}x for a walk")
    return out


def _close(iv: list[list[int]], hole: int) -> list[list[int]]:
    """Merge intervals separated by at most ``hole`` frames."""
    out: list[list[int]] = []
    for a, b in iv:
        if out and a - out[-1][1] <= hole:
            out[-1][1] = b
        else:
            out.append([a, b])
    return out


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
                  nonfinite: int = 0, frame_rate: dict | None = None) -> dict:
    """The ``damage`` section of a solve report.

    Args:
        labels: ``(M,)`` marker names (columns of the arrays).
        pos: ``(F, M, 3)`` m, captured markers (NaN = missing); ``solved``: ``(F, M, 3)`` m, the
            solved body's landmarks; ``far``: ``(F, M)`` bool, samples beyond
            ``outlier_distance`` (m) from their landmark at equilibrium.
        fps: capture rate (Hz); ``blackouts``: from ``bridge_blackouts``;
        nonfinite: samples the reader found infinite and read as missing.
        frame_rate: ``frame_rate_check``'s verdict, kept as ``frame_rate``.
    """
    require_numbers("damage_report", ("fps",), fps=fps, outlier_distance=outlier_distance)
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
        "frame_rate": frame_rate,
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
            # One swap flickers where the two markers pass near each other: holes of up to
            # 0.05 s inside it do not split it.
            for s, e in _close(intervals(crossed), max(1, int(round(0.05 * fps)))):
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
        "frame_rate_suspect": bool(frame_rate is not None and not frame_rate["plausible"]),
    }
    return rep
