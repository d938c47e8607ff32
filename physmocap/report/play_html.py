"""The playback report: one self-contained HTML page per ``physmocap play`` run, figures embedded.

Figures (time in seconds on every horizontal axis but the first's):
  paths      the simulated body's root and its reference's, from above, how far each walked;
             where each fall began, where the body was put back on its feet (``recover_s``)
  tracking   joint-position tracking error, and the head's height, body against reference
  assist     the root assist's force and torque (assist mode; none in physical mode)
  feet       foot contacts from the simulation, deepest ground penetration, foot skate
  keyframes  stills of the simulated body beside its reference pose (and where a fall began)
  hands      each hand's distance from its controller (a three-point avatar's run only)

A fully physical body that lags its reference walks metres behind it, so the stills draw the
reference's pose moved horizontally onto the body (its distance in the title): the poses are
what is compared there; the paths show where each went.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..io.atomic import atomic_write_text
from ._mpl import frame_still, plot_bones, pyplot
from .html import asked_speeds_text, fast_turns_text, report_page, report_value

if TYPE_CHECKING:                       # the figures need only its arrays
    from ..playback.track import TrackResult

__all__ = ["play_report_html", "write_play_report", "key_frames"]

_BODY, _REF, _FALL, _BACK = "#1f77b4", "#888888", "#d62728", "#2ca02c"


def _time(res: TrackResult) -> np.ndarray:
    return np.arange(res.motion.n_frames) / res.motion.fps


def _fall_frames(res: TrackResult) -> list[int]:
    """The frame where each fall began (its ``since_s``), within the take."""
    F = res.motion.n_frames
    return [min(max(int(round(f["since_s"] * res.motion.fps)), 0), F - 1) for f in res.falls]


def _recovery_frames(res: TrackResult) -> list[int]:
    """The first frame after each time the body was put back on its feet (``recover_s``): the
    frame, next to its ``recovered_s``, to which the root jumped furthest (a run's clock may
    lead its frames' times by a frame: the live loop's first frame is already simulated)."""
    F, root = res.motion.n_frames, res.motion.root_pos
    jump = np.r_[0.0, np.linalg.norm(np.diff(root, axis=0), axis=1)]
    out = []
    for f in res.falls:
        if "recovered_s" in f:
            k = int(round(f["recovered_s"] * res.motion.fps))
            near = np.arange(max(k - 1, 1), min(k + 3, F))
            if len(near):
                out.append(int(near[np.argmax(jump[near])]))
    return out


def _time_axes(res: TrackResult, *axes) -> None:
    """Each time axis gridded, with each fall on it: a dashed line where it began, a solid one
    where it was detected (the rule's ``fall_seconds`` later, or at once for a body flung
    away), a dotted one where the body was put back on its feet (``recover_s``)."""
    for ax in axes:
        for k, f in enumerate(res.falls):
            ax.axvline(f["since_s"], color=_FALL, ls="--", lw=1,
                       label="fall began / detected" if k == 0 else None)
            ax.axvline(f["time_s"], color=_FALL, lw=1)
            if "recovered_s" in f:
                ax.axvline(f["recovered_s"], color=_BACK, ls=":", lw=1.5,
                           label="put back on its feet" if k == 0 else None)
        ax.grid(alpha=0.3)


def _head(res: TrackResult) -> int:
    names = res.motion.skeleton.names
    return names.index("Head") if "Head" in names else len(names) - 1


def fig_paths(res: TrackResult):
    plt = pyplot()
    sim, ref = res.motion.root_pos[:, :2], res.reference.root_pos[:, :2]
    fig, ax = plt.subplots(figsize=(7.5, 7.5))
    ax.plot(*ref.T, "--", color=_REF, lw=1.5, label="reference")
    # a body put back on its feet (``recover_s``) was placed, not walked there: no line between
    back = _recovery_frames(res)
    ax.plot(*np.insert(sim, back, np.nan, axis=0).T, color=_BODY, lw=1.5, label="simulated body")
    for k, i in enumerate(back):
        ax.plot(*sim[i], "^", color=_BACK, ms=9, label="put back on its feet" if k == 0 else None)
    # a dot each second, so that the two can be compared in time as well as in place
    sec = slice(0, None, max(1, int(round(res.motion.fps))))
    ax.plot(*ref[sec].T, ".", color=_REF, ms=5)
    ax.plot(*sim[sec].T, ".", color=_BODY, ms=5)
    ax.plot(*ref[0], "o", color=_REF, ms=8, mfc="none")
    ax.plot(*sim[0], "o", color=_BODY, ms=8, mfc="none", label="start")
    for k, i in enumerate(_fall_frames(res)):
        ax.plot(*sim[i], "x", color=_FALL, ms=11, mew=2.5, label="fall began" if k == 0 else None)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    w = res.walked()
    until = " until the first fall" if res.falls else ""
    ax.set_title(f"root from above (a dot each second; o = start): body {w['body']:.1f} m, "
                 f"reference {w['reference']:.1f} m{until}", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def fig_tracking(res: TrackResult):
    plt = pyplot()
    t = _time(res)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(12, 5.5), sharex=True)
    a1.plot(t, 100.0 * res.tracking_error_m, color=_BODY, lw=1)
    a1.set_ylabel("tracking error (cm)")
    a1.set_title(f"mean joint-position distance, simulated vs reference: mean "
                 f"{100 * res.tracking_error_m.mean():.1f} cm, max "
                 f"{100 * res.tracking_error_m.max():.1f} cm")
    h = _head(res)
    a2.plot(t, res.reference.gpos[:, h, 2], "--", color=_REF, lw=1, label="reference")
    a2.plot(t, res.motion.gpos[:, h, 2], color=_BODY, lw=1, label="simulated body")
    a2.set_ylabel(f"{res.motion.skeleton.names[h]} height (m)")
    a2.set_xlabel("time (s)")
    _time_axes(res, a1, a2)
    a2.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def fig_assist(res: TrackResult):
    plt = pyplot()
    t = _time(res)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(12, 4.5), sharex=True)
    a1.plot(t, res.assist_force_n, color="#9467bd", lw=1)
    a1.set_ylabel("force (N)")
    a2.plot(t, res.assist_torque_nm, color="#8c564b", lw=1)
    a2.set_ylabel("torque (N·m)")
    a2.set_xlabel("time (s)")
    if res.mode == "physical":
        a1.set_title("physical mode: no root assist; the body stands on its own legs")
    else:
        a1.set_title(f"root assist: force mean {res.assist_force_n.mean():.0f} N, max "
                     f"{res.assist_force_n.max():.0f} N; torque mean "
                     f"{res.assist_torque_nm.mean():.0f} N·m, max "
                     f"{res.assist_torque_nm.max():.0f}")
    _time_axes(res, a1, a2)
    fig.tight_layout()
    return fig


def fig_feet(res: TrackResult):
    plt = pyplot()
    from matplotlib.colors import ListedColormap
    t = _time(res)
    T = res.motion.n_frames / res.motion.fps
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(12, 6), sharex=True,
                                     gridspec_kw={"height_ratios": (1, 2, 2)})
    a1.imshow(res.contacts.T.astype(int), aspect="auto", interpolation="nearest", vmin=0,
              vmax=1, cmap=ListedColormap(["#f7f7f7", "#31a354"]),
              extent=(0.0, T, 1.5, -0.5))
    a1.set_yticks((0, 1), ("left", "right"))
    a1.set_title("foot on the floor, from the simulation (green)")
    a2.plot(t, res.penetration_mm, color="#e6550d", lw=1)
    a2.set_ylabel("penetration (mm)")
    a2.set_title(f"deepest ground penetration: max {res.penetration_mm.max():.1f} mm")
    skate = res.foot_skate_mm()
    both = np.zeros(len(t), bool)
    both[1:] = (res.contacts[1:] & res.contacts[:-1]).any(axis=1)
    a3.plot(t, np.where(both, skate, np.nan), color="#636363", lw=1)
    a3.set_ylabel("skate (mm/frame)")
    a3.set_title(f"foot skate while in contact: mean {skate[both].mean() if both.any() else 0:.2f}"
                 f" mm/frame")
    a3.set_xlabel("time (s)")
    _time_axes(res, a2, a3)
    fig.tight_layout()
    return fig


def fig_hands(res: TrackResult, tolerance: float = 0.01):
    """Each hand's distance from the point it reached for (``res.hand_targets``), solid where
    the controller is within the arm's reach, faint where it is not; the ``tolerance`` m line."""
    from ..playback.reach import hand_distances
    plt = pyplot()
    t = _time(res)
    d, _, ok = hand_distances(res.motion.skeleton, res.motion.root_pos, res.motion.lrot,
                              res.hand_targets)
    fig, ax = plt.subplots(figsize=(12, 3.8))
    draw_hand_distances(ax, t, d, ok, tolerance, "hand")
    _time_axes(res, ax)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def draw_hand_distances(ax, t: np.ndarray, d: np.ndarray, ok: np.ndarray, tolerance: float,
                        what: str) -> None:
    """Each ``what``'s (hand, wrist) distance ``d (F, 2)`` m from its controller over time
    ``t (F,)`` s on ``ax``: solid where reachable (``ok (F, 2)``), faint where not; the
    ``tolerance`` line and, in the title, the reachable share within it."""
    # (not red: red marks the falls)
    for k, (side, colour) in enumerate((("left", "#2ca02c"), ("right", "#ff7f0e"))):
        ax.plot(t, 100.0 * d[:, k], color=colour, lw=0.8, alpha=0.3)
        ax.plot(t, np.where(ok[:, k], 100.0 * d[:, k], np.nan), color=colour, lw=1.2,
                label=f"{side} {what}")
    ax.axhline(100.0 * tolerance, color="k", ls=":", lw=1, label=f"{100 * tolerance:g} cm")
    within = float(np.mean(d[ok] <= tolerance)) if ok.any() else float("nan")
    ax.set_title(f"{what} to controller (cm); faint: out of the arm's reach. Reachable "
                 f"{what}-frames within {100 * tolerance:g} cm: {100 * within:.1f} %")
    ax.set_ylabel("distance (cm)")
    ax.set_xlabel("time (s)")


def key_frames(res: TrackResult, n: int = 4) -> list[int]:
    """Up to ``n`` frames to show as stills: evenly spaced ones, and the frame where the first
    fall began in place of the last of them."""
    F = res.motion.n_frames
    even = [int(round(x)) for x in np.linspace(0, F - 1, n + 1)[:-1] + (F - 1) / (2 * n)]
    falls = _fall_frames(res)
    return sorted(set((even[: n - 1] + falls[:1]) if falls else even))


def fig_keyframes(res: TrackResult, frames: list[int]):
    plt = pyplot()
    sk = res.motion.skeleton
    sim, ref = res.motion.gpos, res.reference.gpos
    fall = set(_fall_frames(res)[:1])
    fig = plt.figure(figsize=(3.4 * len(frames), 4.6))
    for i, f in enumerate(frames):
        ax = fig.add_subplot(1, len(frames), i + 1, projection="3d")
        g = sim[f]
        shift = np.zeros(3)
        shift[:2] = g[0, :2] - ref[f, 0, :2]           # the reference's pose onto the body
        r = ref[f] + shift
        plot_bones(ax, sk.parents, r, color=_REF, lw=2, ls="--")
        plot_bones(ax, sk.parents, g, color=_BODY, lw=2)
        frame_still(ax, np.concatenate([g, r]))
        ax.set_title(f"{'fall began, ' if f in fall else ''}{f / res.motion.fps:.2f} s\n"
                     f"error {100 * res.tracking_error_m[f]:.1f} cm; reference "
                     f"{float(np.hypot(*shift[:2])):.2f} m away", fontsize=9)
    fig.suptitle("simulated body (blue) and its reference pose (grey, dashed, moved "
                 "horizontally onto the body)", fontsize=9)
    fig.tight_layout()
    return fig


def _walked_text(rep: dict) -> str | None:
    w = rep.get("walked_m")
    if not w:
        return None
    return (f"body {w['body']:.1f} m, reference {w['reference']:.1f} m"
            + (f" (until the first fall began, {w['until_s']:.2f} s)" if rep.get("falls") else ""))


def _search_text(rep: dict) -> str | None:
    """A ``--predict`` search (``rep["predictive"]``, ``Plan.report()``) in a line."""
    pr = rep.get("predictive")
    if not pr:
        return None
    # frames per second of the run (``duration_s``: first to last frame)
    fps = (rep["frames"] - 1) / rep["duration_s"] if rep.get("duration_s") else None
    done = ("complete" if pr["complete"] else
            f"ran out of its budget ({pr['budget']:g} frames simulated per frame played)"
            + (f" at {pr['frames_planned'] / fps:.2f} s; the rest played with the last gains"
               if fps else ""))
    sets = ", ".join(f"{k} {v}" for k, v in sorted(pr.get("sets_used", {}).items()))
    back = pr.get("resumed_at_frame")
    return (f"{done}: {pr['simulated_per_played']:g} frames simulated per frame played, "
            f"{pr['backtracks']} dead ends gone back from, {pr['decisions']} decisions "
            f"(gain sets: {sets})"
            + (f"; stopped and resumed at {back / fps:.2f} s" if back is not None and fps
               else ""))


def _summary_rows(rep: dict) -> list[tuple[str, str]]:
    g = report_value(rep)
    falls = rep.get("falls") or []
    lat = rep.get("latency_ms")
    rows = [("motion", g("source")), ("database", g("database")), ("input", g("input")),
            ("output", g("output")), ("mode", g("mode")),
            ("frames", f"{rep.get('frames')} ({rep.get('duration_s', 0):.2f} s)"),
            ("tracking error", g("tracking_error_m", "{:.3f} m mean")
             + (f" ({rep['tracking_error_upright_m']:.3f} m until the first fall)"
                if falls and rep.get("tracking_error_upright_m") is not None else "")),
            ("root assist force", f"{rep.get('root_assist_force_mean_n', 0):.0f} N mean, "
                                  f"{rep.get('root_assist_force_max_n', 0):.0f} N max"),
            ("root assist torque", f"{rep.get('root_assist_torque_mean_nm', 0):.0f} N·m mean, "
                                   f"{rep.get('root_assist_torque_max_nm', 0):.0f} N·m max"),
            ("penetration", g("penetration_max_mm", "{:.1f} mm max")),
            ("foot skate in contact", g("foot_skate_mm", "{:.2f} mm/frame")),
            ("pose error (joints about the root)",
             None if rep.get("pose_error_m") is None else
             f"{rep['pose_error_m']:.3f} m mean"
             + (" until the first fall" if falls else "")),
            ("walked (the root's path, a point a second)", _walked_text(rep)),
            ("falls", "none" if not falls else "; ".join(
                f"from {f['since_s']:.2f} s ({f['reason']}, detected at {f['time_s']:.2f} s"
                + (f", put back on its feet at {f['recovered_s']:.2f} s"
                   if "recovered_s" in f else "") + ")"
                for f in falls)),
            ("look-ahead search (--predict)", _search_text(rep)),
            ("reference's feet in contact slide", g("reference_foot_skate_mm", "{:.1f} mm/frame")),
            ("speeds asked that no clip keeps", asked_speeds_text(rep.get("asked_speeds"))),
            ("turns faster than any clip keeps", fast_turns_text(rep.get("turns"))),
            ("hands at reachable controllers", None if rep.get("hands") is None
             or rep["hands"].get("within_tolerance_fraction") is None else
             f"{100 * rep['hands']['within_tolerance_fraction']:.1f} % of hand-frames within "
             f"{1000 * rep['hands']['tolerance_m']:.0f} mm"),
            ("speed", g("frames_per_second", "{:.0f} frames/s")
             + (f"; latency {lat['median']:.1f} ms median, {lat['p99']:.1f} ms p99"
                if lat else ""))]
    return [(k, v) for k, v in rows if v is not None]


def play_report_html(res: TrackResult, report: dict, title: str | None = None) -> str:
    """The whole page as a string (figures embedded as base64 PNG; no external resources):
    ``res`` a ``TrackResult`` (``track``, ``run_live(...).result``), ``report`` its JSON report
    (``res.report()`` plus what the command adds)."""
    what = report.get("input") or report.get("source") or ""
    title = title or f"physmocap play report: {what}"
    sections = [
        ("Paths", fig_paths(res), "The root (hips) of the simulated body and of its reference, "
         "seen from above; a red cross where a fall began."),
        ("Tracking", fig_tracking(res), "Top: mean distance between the simulated and the "
         "reference joint positions. Bottom: the head's height; a fall is detected once it "
         "stays low (dashed red: where it began; solid: where it was detected)."),
        ("Root assist", fig_assist(res), "The bounded external force and torque that pull the "
         "body's root toward the reference in assist mode (none in physical mode)."),
        ("Feet", fig_feet(res), "Which feet touch the floor in the simulation, how deep the "
         "body sinks into it, and how far a foot in contact slides per frame."),
        ("Key frames", fig_keyframes(res, key_frames(res)), "Evenly spaced frames, and the "
         "frame where the first fall began."),
    ]
    if res.hand_targets is not None:
        sections.append(("Hands", fig_hands(res), "How far each simulated hand is from the "
                         "controller it reaches for (the three-point avatar's hands)."))
    return report_page(title, _summary_rows(report), sections, report)


def write_play_report(res: TrackResult, report: dict, path) -> None:
    """Write the report page to ``path`` atomically."""
    atomic_write_text(path, play_report_html(res, report))
