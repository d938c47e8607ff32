"""The three-point avatar's report: one self-contained HTML page per ``physmocap avatar`` run
(the kinematic avatar; with ``--physics`` the simulated one gets play's page instead).

Figures (time in seconds on every horizontal axis but the first's):
  paths      the headset's path, the avatar's hips and, given the truth, the truth's, from above
  truth      with ``--truth``: the avatar's distance from the truth over time, all joints, hips
             and legs, the rest
  hands      each wrist's distance from its controller (faint where out of the arm's reach)
  latency    the wall time of each frame's update beside the 16 ms a 60 Hz display allows
  clips      the database frame played, coloured by clip (as ``mm run``'s page)
  feet       the shown frames' foot contacts and the avatar's foot heights
"""
from __future__ import annotations

import numpy as np

from ..io.atomic import atomic_write_text
from ..matching.avatar import hand_errors, truth_errors
from ..motion import Motion
from ._mpl import pyplot
from .html import asked_speeds_text, fast_turns_text, report_page, report_value
from .mm_html import fig_clips, fig_feet, root_path_from_above
from .play_html import draw_hand_distances

__all__ = ["avatar_report_html", "write_avatar_report"]

_AVATAR, _HEAD, _TRUTH = "#1f77b4", "#9467bd", "#888888"


def _time(motion: Motion) -> np.ndarray:
    return np.arange(motion.n_frames) / motion.fps


def fig_paths(motion: Motion, record, track, truth: Motion | None):
    plt = pyplot()
    hips = motion.root_pos
    fig, ax = plt.subplots(figsize=(7.5, 7.5))
    head = np.asarray(track.pos)[:, 0]
    ax.plot(head[:, 0], head[:, 1], color=_HEAD, lw=1, alpha=0.8, label="headset")
    if truth is not None:
        ax.plot(*truth.root_pos[:, :2].T, "--", color=_TRUTH, lw=1.5, label="truth's hips")
    return root_path_from_above(fig, ax, hips, "avatar's hips", _AVATAR, motion.fps,
                                record.frame)


def fig_truth(db, motion: Motion, truth: Motion):
    plt = pyplot()
    err, low, _ = truth_errors(db, motion, truth)
    t = np.arange(len(err)) / motion.fps
    fig, ax = plt.subplots(figsize=(12, 3.8))
    ax.plot(t, 100.0 * err.mean(axis=1), color="k", lw=1.2,
            label=f"all {err.shape[1]} joints compared")
    for sel, name, colour in ((low, "hips and legs", "#d62728"),
                              (~low, "spine, head and arms", "#2ca02c")):
        if sel.any():
            ax.plot(t, 100.0 * err[:, sel].mean(axis=1), color=colour, lw=1, label=name)
    ax.set_ylabel("distance (cm)")
    ax.set_xlabel("time (s)")
    ax.set_title("mean joint-position distance, avatar against the truth", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def fig_hands(motion: Motion, record, tolerance: float = 0.01):
    plt = pyplot()
    d, ok = hand_errors(motion, record)
    t = _time(motion)
    fig, ax = plt.subplots(figsize=(12, 3.8))
    draw_hand_distances(ax, t, d, ok, tolerance, "wrist")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def fig_latency(motion: Motion, record, budget_ms: float = 1000.0 / 60.0):
    plt = pyplot()
    ms = 1000.0 * np.asarray(record.seconds, float)
    t = _time(motion)[:len(ms)]
    fig, ax = plt.subplots(figsize=(12, 3.2))
    ax.plot(t, ms, color=_AVATAR, lw=0.8)
    med, p99 = float(np.median(ms)), float(np.percentile(ms, 99))
    ax.axhline(med, color=_AVATAR, ls="--", lw=1, label=f"median {med:.2f} ms")
    ax.axhline(p99, color="#ff7f0e", ls="--", lw=1, label=f"p99 {p99:.2f} ms")
    ax.axhline(budget_ms, color="#d62728", lw=1, label=f"a 60 Hz frame ({budget_ms:.1f} ms)")
    ax.set_ylim(0, max(budget_ms, float(ms.max())) * 1.1)
    ax.set_ylabel("update (ms)")
    ax.set_xlabel("time (s)")
    ax.set_title("wall time of each frame's update (sampling, search, blending, placement, IK)",
                 fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _summary_rows(rep: dict) -> list[tuple[str, str]]:
    g = report_value(rep)
    lat = rep.get("latency_ms")
    cm = "{:.1f} cm".format
    rows = [("tracking", g("tracking")), ("database", g("database")), ("truth", g("truth")),
            ("output", g("output")),
            ("frames", f"{rep.get('frames')} at {rep.get('fps', 0):g} fps"),
            ("joints against the truth", None if rep.get("mpjpe_m") is None else
             f"{cm(100 * rep['mpjpe_m'])} mean over {rep['joints_compared']} joints"
             + ("" if rep.get("lower_body_error_m") is None else
                f"; hips and legs {cm(100 * rep['lower_body_error_m'])}")),
            ("wrists to controllers", None if rep.get("hand_error_m") is None else
             f"{1000 * rep['hand_error_m']:.1f} mm mean; reachable in "
             f"{100 * rep['hand_reachable_fraction']:.0f} % of frames"),
            ("foot skate in contact", g("foot_skate_mm", "{:.2f} mm/frame")
             + (f" (the truth's {rep['truth_foot_skate_mm']:.2f})"
                if rep.get("truth_foot_skate_mm") is not None else "")),
            ("jitter", g("jitter", "{:.0f} m/s³")
             + (f" (the truth's {rep['truth_jitter']:.0f})"
                if rep.get("truth_jitter") is not None else "")),
            ("transitions", g("transitions")),
            ("speeds asked that no clip keeps", asked_speeds_text(rep.get("asked_speeds"))),
            ("turns faster than any clip keeps", fast_turns_text(rep.get("turns"))),
            ("latency", None if not lat else
             f"{lat['median']:.2f} ms median, {lat['p99']:.2f} ms p99 per frame")]
    return [(k, v) for k, v in rows if v is not None]


def avatar_report_html(db, motion: Motion, record, track, report: dict,
                       truth: Motion | None = None, title: str | None = None) -> str:
    """The whole page as a string (figures embedded; no external resources).

    Args:
        db: the ``PoseDatabase``; ``motion``, ``record``: ``run_avatar``'s output;
            ``track``: the ``ThreePointTrack`` it followed; ``report``: its JSON report
            (``avatar_report`` plus what the command adds); ``truth``: the clip the track was
            extracted from, if given.
    """
    title = title or f"physmocap avatar report: {report.get('tracking', '')}"
    sections = [("Paths", fig_paths(motion, record, track, truth),
                 "The headset's path, and the avatar's hips (and the truth's), seen from above; "
                 "a tick where the search jumped to another database frame.")]
    if truth is not None:
        sections.append(("Against the truth", fig_truth(db, motion, truth),
                         "How far the avatar's joints are from the clip the headset and "
                         "controllers came from: all joints compared, hips and legs (what the "
                         "three points do not show), and the rest."))
    sections += [
        ("Hands", fig_hands(motion, record),
         "How far each wrist is from its controller: the arms reach with two-bone IK, so a "
         "reachable controller should be met (the 1 cm line)."),
        ("Latency", fig_latency(motion, record),
         "The time each frame's update took on this machine, not a device's end-to-end "
         "latency."),
        ("Clips", fig_clips(db, record, motion.fps),
         "The database frame shown each frame, coloured by clip: a rising run is a clip "
         "playing on, a jump is a transition (grey lines)."),
        ("Feet", fig_feet(db, motion, record),
         "Which feet the shown frames label in contact (what the foot lock pins), and how high "
         "the avatar's feet are."),
    ]
    return report_page(title, _summary_rows(report), sections, report)


def write_avatar_report(db, motion: Motion, record, track, report: dict, path,
                        truth: Motion | None = None) -> None:
    """Write the report page to ``path`` atomically."""
    atomic_write_text(path, avatar_report_html(db, motion, record, track, report, truth))
