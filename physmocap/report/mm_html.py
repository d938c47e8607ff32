"""The motion-matching report: one self-contained HTML page per ``physmocap mm run``.

Figures (time in seconds on every horizontal axis but the first's):
  paths      what the character was asked to follow (a path, a headset's positions, or the
             joystick's velocities integrated), its root, and the simulation object the input
             drives, from above; where the search jumped to another frame
  following  the root's distance from that line, its speed beside the asked speed and the
             speeds the database keeps (``matching.coverage``), and its facing error (frames
             in sharp turns shaded: the report leaves them out)
  clips      the database frame played, coloured by clip; each jump is a transition
  feet       the matched frames' foot contacts and the output's foot heights

The page answers what the JSON report's means cannot: *when* the character left its path,
*which* clip it was playing then, and whether a foot slid while labelled in contact.
"""
from __future__ import annotations

import numpy as np

from ..io.atomic import atomic_write_text
from ..matching.coverage import COVER_S, covered_ranges
from ..matching.metrics import facing_error_series, intended_line, path_distance_series
from ..motion import Motion
from ._mpl import pyplot
from .html import asked_speeds_text, fast_turns_text, report_page, report_value

__all__ = ["mm_report_html", "write_mm_report", "transition_frames", "root_path_from_above"]

_ROOT, _ASKED, _SIM = "#1f77b4", "#888888", "#ff7f0e"


def transition_frames(frames) -> np.ndarray:
    """Output frames ``(T,)`` at which the played database frame jumped (a transition): the
    matched frame is neither the one before nor the one after it (a clip's last frame is held)."""
    f = np.asarray(frames, int)
    step = np.diff(f)
    return np.flatnonzero((step != 1) & (step != 0)) + 1


def _speed(pos: np.ndarray, fps: float) -> np.ndarray:
    """Horizontal speed (m/s) ``(F,)`` of positions ``(F, 3)``, by central differences."""
    if len(pos) < 2:
        return np.zeros(len(pos))
    return np.linalg.norm(np.gradient(pos[:, :2], axis=0), axis=-1) * fps


def fig_paths(record, source, fps: float):
    plt = pyplot()
    kind, line = intended_line(source, record, 1.0 / fps)
    root, sim = np.array(record.root_pos), np.array(record.sim_pos)
    fig, ax = plt.subplots(figsize=(7.5, 7.5))
    ax.plot(line[:, 0], line[:, 1], "--", color=_ASKED, lw=1.5, label=f"asked ({kind})")
    ax.plot(sim[:, 0], sim[:, 1], color=_SIM, lw=1, alpha=0.8, label="simulation object")
    return root_path_from_above(fig, ax, root, "character root", _ROOT, fps, record.frame)


def root_path_from_above(fig, ax, root: np.ndarray, label: str, colour: str, fps: float,
                         frames):
    """The root's path ``root (F, 3)`` m on ``ax`` (from above, the figure's other lines drawn
    already): a dot each second, a tick at each transition of the played database
    ``frames (F,)``, the start; the axes finished. Returns ``fig``."""
    ax.plot(root[:, 0], root[:, 1], color=colour, lw=1.5, label=label)
    sec = slice(0, None, max(1, int(round(fps))))    # a dot each second: place and time
    ax.plot(root[sec, 0], root[sec, 1], ".", color=colour, ms=5)
    jumps = transition_frames(frames)
    ax.plot(root[jumps, 0], root[jumps, 1], "|", color="k", ms=7, alpha=0.6,
            label="transition")
    ax.plot(*root[0, :2], "o", color=colour, ms=8, mfc="none", label="start")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title("from above (a dot each second)", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _legend(ax) -> None:
    """A legend where something is labelled (matplotlib warns of an empty one)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", fontsize=8)


def _shade(ax, t: np.ndarray, mask: np.ndarray, label: str) -> None:
    """Shade the time spans where ``mask`` holds (one legend entry)."""
    if mask.any():
        ax.fill_between(t, 0, 1, where=mask, transform=ax.get_xaxis_transform(),
                        color="#cccccc", alpha=0.5, step="post", label=label, lw=0)


def fig_following(db, record, source, fps: float):
    plt = pyplot()
    dist = path_distance_series(source, record, 1.0 / fps)
    t = np.arange(len(dist)) / fps
    face, outside = facing_error_series(np.array(record.root_rot), np.array(record.desired_rot),
                                        fps)
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(12, 7), sharex=True)
    a1.plot(t, 100.0 * dist, color=_ROOT, lw=1)
    _shade(a1, t, t < 1.0, "first second (not in the report's mean)")
    a1.set_ylabel("root from asked (cm)")
    _legend(a1)
    asked = np.linalg.norm(np.array(record.desired_vel)[:, :2], axis=-1)
    root_speed = _speed(np.array(record.root_pos), fps)
    ranges = covered_ranges(db)
    top = 1.15 * max(float(asked.max()), float(root_speed.max()), 0.5)
    if ranges:   # the band nearest the asked speeds in view, however far (a slow walk's)
        v = float(np.median(asked))
        near = min(ranges, key=lambda r: max(r[0] - v, v - r[1], 0.0))
        top = max(top, min(near[1], near[0] + 0.5) + 0.1)
    for k, (lo, hi) in enumerate(r for r in ranges if r[0] < top):
        a2.axhspan(lo, min(hi, top), color="#2ca02c", alpha=0.12, lw=0,
                   label=f"speeds a clip keeps for {COVER_S:g} s" if k == 0 else None)
    a2.plot(t, asked, "--", color=_ASKED, lw=1, label="asked")
    a2.plot(t, root_speed, color=_ROOT, lw=1, label="character root")
    a2.set_ylim(0, top)
    a2.set_ylabel("speed (m/s)")
    _legend(a2)
    a3.plot(t, face, color=_ROOT, lw=1)
    _shade(a3, t, ~outside, "sharp turn (left out of the report's mean)")
    a3.set_ylabel("facing error (deg)")
    a3.set_xlabel("time (s)")
    _legend(a3)
    for ax in (a1, a2, a3):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def fig_clips(db, record, fps: float, most: int = 12):
    plt = pyplot()
    frame = np.asarray(record.frame, int)
    t = np.arange(len(frame)) / fps
    clip = np.asarray(db.clip_index(frame))
    fig, ax = plt.subplots(figsize=(12, 4.5))
    cmap = plt.get_cmap("tab20")
    used, counts = np.unique(clip, return_counts=True)
    order = used[np.argsort(-counts, kind="stable")]
    for k, c in enumerate(order):
        sel = clip == c
        name = str(db.clip_names[c]) if k < most else None
        ax.plot(t[sel], frame[sel], ".", ms=2.5, color=cmap(k % 20),
                label=None if name is None else f"{name} ({sel.mean():.0%})")
    for i in transition_frames(frame):
        ax.axvline(t[i], color="k", lw=0.5, alpha=0.25)
    ax.set_ylabel("database frame")
    ax.set_xlabel("time (s)")
    more = f"; {len(order) - most} more clips not named" if len(order) > most else ""
    ax.set_title(f"{len(order)} clips played (share of the run){more}", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, markerscale=4)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def fig_feet(db, motion: Motion, record):
    plt = pyplot()
    t = np.arange(motion.n_frames) / motion.fps
    contacts = np.asarray(record.contacts, bool)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(12, 4.5), sharex=True,
                                 gridspec_kw={"height_ratios": [1, 2]})
    colors = ("#2ca02c", "#d62728")
    for k, name in enumerate(db.contact_joints):
        a1.fill_between(t, 1.2 * k, 1.2 * k + contacts[:, k], step="post", alpha=0.6,
                        color=colors[k], lw=0)
        a2.plot(t, motion.gpos[:, motion.skeleton.index(name), 2], color=colors[k], lw=1,
                label=name)
    a1.set_yticks([0.5, 1.7])
    a1.set_yticklabels([f"{n} down" for n in db.contact_joints], fontsize=8)
    a1.set_title("contacts of the matched frames (what foot locking pins)", fontsize=10)
    a2.set_ylabel("height (m)")
    a2.set_xlabel("time (s)")
    a2.legend(loc="upper right", fontsize=8)
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _summary_rows(rep: dict) -> list[tuple[str, str]]:
    g = report_value(rep)
    rows = [("input", g("input")), ("database", g("database")), ("output", g("output")),
            ("frames", f"{rep.get('frames')} at {rep.get('fps', 0):g} fps"),
            ("root from the asked path", None if rep.get("trajectory_error_m") is None else
             f"{rep['trajectory_error_m']:.3f} m mean after the first second, "
             f"{rep['trajectory_error_max_m']:.3f} m max ({rep.get('intended_path')})"),
            ("facing error", g("facing_error_deg", "{:.1f} deg mean outside sharp turns")),
            ("transitions", g("transitions")),
            ("foot skate in contact", None if rep.get("foot_skate_mm") is None else
             f"{rep['foot_skate_mm']:.2f} mm/frame (the database's clips "
             f"{rep['foot_skate_mm_database']:.2f})"),
            ("jitter", g("jitter", "{:.1f} m/s³")),
            ("speeds asked that no clip keeps", asked_speeds_text(rep.get("asked_speeds"))),
            ("turns faster than any clip keeps", fast_turns_text(rep.get("turns"))),
            ("foot lock", g("foot_lock")),
            ("speed", None if rep.get("update_ms") is None else
             f"{rep['update_ms']:.2f} ms per frame; search {rep.get('search_us')} µs median")]
    return [(k, v) for k, v in rows if v is not None]


def mm_report_html(db, motion: Motion, record, source, report: dict,
                   title: str | None = None) -> str:
    """The whole page as a string (figures embedded; no external resources).

    Args:
        db: the ``PoseDatabase``; ``motion``: the output (after foot locking, if any);
            ``record``: the ``ControllerRecord``; ``source``: the input the controller
            followed; ``report``: its JSON report (``run_report`` plus what the command adds).
    """
    fps = float(db.fps)
    title = title or f"physmocap mm run report: {report.get('input', '')}"
    sections = [
        ("Paths", fig_paths(record, source, fps),
         "What the character was asked to follow, the simulation object that the input drives "
         "(the character is pulled toward it), and the character's root, seen from above; a "
         "tick where the search jumped to another database frame."),
        ("Following the input", fig_following(db, record, source, fps),
         "Top: the root's horizontal distance from the asked line. Middle: its speed beside "
         "the asked speed; green, the speeds one clip of the database keeps for a second "
         "(asked for another, the root is pulled along while the clip's feet keep their pace, "
         "and they slide). Bottom: the angle between the character's facing and the asked "
         "facing."),
        ("Clips", fig_clips(db, record, fps),
         "The database frame played each frame, coloured by clip: a rising run is a clip "
         "playing on, a jump is a transition (blended by inertialization; grey lines)."),
        ("Feet", fig_feet(db, motion, record),
         "Which feet the matched frames label in contact, and how high the output's feet are: "
         "a foot labelled down should be near the floor and still."),
    ]
    return report_page(title, _summary_rows(report), sections, report)


def write_mm_report(db, motion: Motion, record, source, report: dict, path) -> None:
    """Write the report page to ``path`` atomically."""
    atomic_write_text(path, mm_report_html(db, motion, record, source, report))
