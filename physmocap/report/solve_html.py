"""The solve report: one self-contained HTML page per take, with matplotlib figures embedded.

Figures (time in seconds on every horizontal axis):
  residuals   marker residual per marker over time (heat map, mm)
  carried     gaps and outliers: where the body's landmark, not the capture, carried a marker
  plants      foot-plant timeline per foot marker
  angles      hips, knees, ankles, shoulders, elbows over time (deg)
  feet        foot-marker height and skate (horizontal travel per frame while planted)
  limits      frames where a joint sat at a template limit
  keyframes   stills of the solved body with captured markers and residual lines
"""
from __future__ import annotations

import warnings

import numpy as np

from ..io.atomic import atomic_write_text
from ..solver.toes import bent_text, toe_tips
from ._mpl import frame_still, plot_bones, pyplot
from .html import report_page, report_value
from .trace import ANGLE_JOINTS, SolveTrace

__all__ = ["solve_report_html", "write_solve_report", "key_frames"]

#: Residual colour scale top (mm): the solver's outlier distance, so saturated = outlier.
RESIDUAL_TOP_MM = 40.0


#: Columns a time-by-row picture is drawn from at most: over twice the ~1000 pixels it is drawn
#: on. matplotlib turns a whole take's frames into RGBA arrays before it scales them down (143
#: MB more for a 3-minute take's page, a solve that peaked at 252 MB without it).
MAX_COLUMNS = 2000


def _columns(a: np.ndarray, how: str) -> tuple[np.ndarray, int]:
    """``a (F, rows)`` over time in at most ``MAX_COLUMNS`` columns of ``k`` frames each and
    ``k``: each column the frames' ``how``, ``"max"`` (NaN only where all are, so an outlier
    or a hit in a column shows) or ``"majority"`` (of 0 / 1). A take of ``MAX_COLUMNS``
    frames or fewer comes back as it is (``k`` 1)."""
    F = len(a)
    k = -(-F // MAX_COLUMNS)
    if k <= 1:
        return np.asarray(a, float), 1
    pad = np.full((-F % k,) + a.shape[1:], np.nan)
    b = np.concatenate([np.asarray(a, float), pad]).reshape(-1, k, *a.shape[1:])
    with warnings.catch_warnings():         # all-NaN columns are gaps: NaN, said by the colour
        warnings.simplefilter("ignore", RuntimeWarning)
        return (np.nanmax(b, axis=1) if how == "max" else np.round(np.nanmean(b, axis=1))), k


def _timeline(ax, tr: SolveTrace, a: np.ndarray, how: str, **style):
    """``imshow`` of ``a (F, rows)``, rows down and time in seconds across (``_columns``)."""
    b, k = _columns(a, how)
    im = ax.imshow(b.T, aspect="auto", interpolation="nearest",
                   extent=(0.0, len(b) * k / tr.fps, a.shape[1] - 0.5, -0.5), **style)
    ax.set_xlim(0.0, tr.n_frames / tr.fps)      # (the last column may hold fewer frames)
    return im


def fig_residuals(tr: SolveTrace):
    plt = pyplot()
    M = len(tr.labels)
    fig, ax = plt.subplots(figsize=(12, 0.16 * M + 1.6))
    cmap = plt.get_cmap("magma").with_extremes(bad="#9ecae1")      # gaps in light blue
    im = _timeline(ax, tr, 1000.0 * tr.residual, "max", cmap=cmap, vmin=0.0,
                   vmax=RESIDUAL_TOP_MM)
    ax.set_yticks(range(M), tr.labels, fontsize=6)
    ax.set_xlabel("time (s)")
    ax.set_title("marker residual (mm); light blue = gap")
    fig.colorbar(im, ax=ax, pad=0.01, label=f"mm (≥ {RESIDUAL_TOP_MM:g} = outlier)")
    fig.tight_layout()
    return fig


def fig_carried(tr: SolveTrace):
    plt = pyplot()
    from matplotlib.colors import ListedColormap
    M = len(tr.labels)
    state = np.zeros(tr.residual.shape, int)             # 0 fitted by the capture
    state[np.isnan(tr.pos).any(-1)] = 1                  # 1 gap: the body's landmark fills it
    state[tr.outliers & (state == 0)] = 2                # 2 outlier: spring weakened
    fig, ax = plt.subplots(figsize=(12, 0.16 * M + 1.6))
    # an outlier in a column over a gap over a fit (a long take's columns hold several frames)
    _timeline(ax, tr, state, "max", vmin=0, vmax=2,
              cmap=ListedColormap(["#f0f0f0", "#3182bd", "#de2d26"]))
    ax.set_yticks(range(M), tr.labels, fontsize=6)
    ax.set_xlabel("time (s)")
    gaps, outl = int((state == 1).sum()), int((state == 2).sum())
    ax.set_title(f"where the body carried the solve: blue = gap ({gaps} samples), "
                 f"red = outlier ({outl} samples)")
    fig.tight_layout()
    return fig


def fig_plants(tr: SolveTrace):
    plt = pyplot()
    from matplotlib.colors import ListedColormap
    K = len(tr.plant_labels)
    fig, ax = plt.subplots(figsize=(12, 0.3 * max(K, 1) + 1.4))
    if K:
        # planted where most of a column's frames are: the steps stay apart
        _timeline(ax, tr, tr.plants, "majority", vmin=0, vmax=1,
                  cmap=ListedColormap(["#f7f7f7", "#31a354"]))
        ax.set_yticks(range(K), tr.plant_labels)
    else:
        ax.text(0.5, 0.5, "no heel/toe markers: no plants detected", ha="center",
                transform=ax.transAxes)
    ax.set_xlabel("time (s)")
    ax.set_title("foot plants (green = planted and pinned)")
    fig.tight_layout()
    return fig


def fig_angles(tr: SolveTrace):
    plt = pyplot()
    t = np.arange(tr.n_frames) / tr.fps
    groups = [(g, [j for j in js if j in tr.angles]) for g, js in ANGLE_JOINTS.items()]
    groups = [(g, js) for g, js in groups if js]
    fig, axes = plt.subplots(max(len(groups), 1), 1, figsize=(12, 2.0 * max(len(groups), 1) + 0.6),
                             sharex=True, squeeze=False)
    colours = ("#d62728", "#2ca02c", "#1f77b4")
    for ax, (group, joints) in zip(axes[:, 0], groups):
        for joint in joints:
            a = tr.angles[joint]
            style = "-" if joint.startswith("Left") else "--"
            side = "L" if joint.startswith("Left") else "R"
            if np.all(np.isnan(a[:, 1:])):
                ax.plot(t, a[:, 0], style, color="k", lw=1, label=f"{side} flexion")
            else:
                for c in range(3):
                    ax.plot(t, a[:, c], style, color=colours[c], lw=1, label=f"{side} {'xyz'[c]}")
            j = tr.motion.skeleton.names.index(joint)
            hit = tr.limit_hit[:, j]
            if hit.any():
                ax.plot(t[hit], np.zeros(hit.sum()), "|", color="orange", ms=8)
        ax.set_ylabel(f"{group} (deg)")
        ax.legend(loc="upper right", fontsize=7, ncol=6)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle("joint angles: hinges as flexion; ball joints as rotation vector x/y/z in the "
                 "parent frame (solid left, dashed right; orange ticks = at a limit)", fontsize=10)
    fig.tight_layout()
    return fig


def foot_skate(tr: SolveTrace) -> tuple[np.ndarray, np.ndarray]:
    """``(F-1, K)`` mm horizontal travel per frame of the solved foot points, and ``(F-1, K)``
    bool, planted on both frames (where it counts as skate)."""
    rows = [tr.labels.index(l) for l in tr.plant_labels]
    p = tr.solved[:, rows, :2]
    step = 1000.0 * np.linalg.norm(np.diff(p, axis=0), axis=-1)
    return step, tr.plants[1:] & tr.plants[:-1]


def fig_feet(tr: SolveTrace):
    plt = pyplot()
    t = np.arange(tr.n_frames) / tr.fps
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(12, 5), sharex=True)
    rows = [tr.labels.index(l) for l in tr.plant_labels]
    step, both = foot_skate(tr)
    for k, (label, r) in enumerate(zip(tr.plant_labels, rows)):
        line, = a1.plot(t, 1000.0 * tr.solved[:, r, 2], lw=1, label=label)
        h = np.where(tr.plants[:, k], 1000.0 * tr.solved[:, r, 2], np.nan)
        a1.plot(t, h, lw=4, alpha=0.35, color=line.get_color())
        a2.plot(t[1:], np.where(both[:, k], step[:, k], np.nan), lw=1, color=line.get_color(),
                label=label)
    # the toe tips (BVH end sites) against the lab floor: a toe no marker is on was bent
    # by the floor (solver/toes.py); a marked one is where its marker put it
    for name, p in toe_tips(tr.motion).items():
        a1.plot(t, 1000.0 * p[:, 2], "--", lw=1, color="0.35" if "Left" in name else "0.6",
                label=f"{name} tip")
    a1.axhline(0.0, color="k", lw=0.8)
    a1.set_ylabel("height (mm)")
    a1.set_title("solved foot markers: height (thick = planted); dashed: toe tips; "
                 "black: the lab floor (z = 0)")
    a1.legend(fontsize=7, ncol=4, loc="upper right")
    a2.set_ylabel("skate (mm/frame)")
    skate = step[both]
    a2.set_title(f"skate while planted: mean {skate.mean() if skate.size else 0:.2f}, "
                 f"max {skate.max() if skate.size else 0:.2f} mm/frame")
    a2.set_xlabel("time (s)")
    for a in (a1, a2):
        a.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def fig_limits(tr: SolveTrace):
    plt = pyplot()
    from matplotlib.colors import ListedColormap
    names = tr.motion.skeleton.names
    hit_j = np.flatnonzero(tr.limit_hit.any(axis=0))
    fig, ax = plt.subplots(figsize=(12, 0.25 * max(len(hit_j), 2) + 1.4))
    if len(hit_j):
        _timeline(ax, tr, tr.limit_hit[:, hit_j], "max", vmin=0, vmax=1,
                  cmap=ListedColormap(["#f7f7f7", "#e6550d"]))
        ax.set_yticks(range(len(hit_j)),
                      [f"{names[j]} ({int(tr.limit_hit[:, j].sum())} fr)" for j in hit_j],
                      fontsize=8)
        ax.set_title("frames at a template joint limit")
    else:
        ax.text(0.5, 0.5, "no frame at a template joint limit", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_yticks([])
        ax.set_xlim(0, tr.n_frames / tr.fps)
    ax.set_xlabel("time (s)")
    fig.tight_layout()
    return fig


def fig_plug_in_gait(segments: dict):
    """A bar per segment: how far it moves from the capture's own Plug-in Gait solve (the
    report's ``plug_in_gait_segments``), median and 95th percentile."""
    plt = pyplot()
    names = [a["segment"] for a in segments.values()]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(12, 3.2))
    ax.bar(x - 0.2, [a["residual_median_deg"] for a in segments.values()], 0.4, label="median")
    ax.bar(x + 0.2, [a["residual_p95_deg"] for a in segments.values()], 0.4,
           label="95th percentile")
    ax.set_xticks(x, names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("deg apart over the take")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def key_frames(tr: SolveTrace, n: int = 4) -> list[int]:
    """``n`` frames to show as stills: evenly spaced ones plus the worst residual frame."""
    F = tr.n_frames
    even = [int(round(x)) for x in np.linspace(0, F - 1, n + 1)[:-1] + (F - 1) / (2 * n)]
    r = np.nan_to_num(np.where(tr.outliers, np.nan, tr.residual))
    worst = int(np.argmax(r.max(axis=1))) if F else 0
    frames = sorted(set(even[: n - 1] + [worst]))
    return frames


def fig_keyframes(tr: SolveTrace, frames: list[int], first_frame: int = 1):
    """Stills of ``frames`` (0-based indices), titled with the capture's own frame numbers
    (``first_frame`` + index, as Nexus or Mokka shows them)."""
    plt = pyplot()
    sk = tr.motion.skeleton
    gpos = tr.motion.gpos
    fig = plt.figure(figsize=(3.4 * len(frames), 4.6))
    for i, f in enumerate(frames):
        ax = fig.add_subplot(1, len(frames), i + 1, projection="3d")
        g = gpos[f]
        plot_bones(ax, sk.parents, g, color="#333", lw=2)
        seen = ~np.isnan(tr.pos[f]).any(-1)
        out = tr.outliers[f] & seen
        fit = seen & ~out
        ax.scatter(*tr.pos[f, fit].T, s=8, color="#1f77b4", depthshade=False)
        ax.scatter(*tr.pos[f, out].T, s=14, color="#d62728", depthshade=False)
        ax.scatter(*tr.solved[f, ~seen].T, s=10, color="#9ecae1", marker="x", depthshade=False)
        for m in np.flatnonzero(seen):
            ax.plot(*np.stack([tr.pos[f, m], tr.solved[f, m]]).T, color="#d62728", lw=0.8)
        frame_still(ax, g)
        rr = tr.residual[f, fit]
        ax.set_title(f"frame {first_frame + f} ({f / tr.fps:.2f} s)\nmax residual "
                     f"{1000 * rr.max() if rr.size else 0:.1f} mm", fontsize=9)
    fig.suptitle("solved body (grey), captured markers (blue; red = outlier), residual lines "
                 "(red), gap-filled landmarks (x)", fontsize=9)
    fig.tight_layout()
    return fig


def _over_40mm(rep: dict) -> str | None:
    """``"N (K)"``: frames with a marker over 40 mm, and of them those the damage report does
    not explain; a report from before ``frames_over_40mm_unexplained`` gives what it has."""
    if "frames_over_40mm_unexplained" in rep:
        return f"{rep.get('frames_over_40mm_all')} ({rep['frames_over_40mm_unexplained']})"
    return None if "frames_over_40mm_all" not in rep else str(rep["frames_over_40mm_all"])


def _summary_rows(rep: dict) -> list[tuple[str, str]]:
    g = report_value(rep)
    rows = [("source", g("source")), ("output", g("output")),
            ("frames", f"{rep.get('frames')} at {rep.get('fps', 0):g} Hz"),
            ("marker set", g("markerset")),
            ("marker RMS (inliers / all)",
             f"{rep.get('marker_rms_mm', float('nan')):.2f} / "
             f"{rep.get('marker_rms_all_mm', float('nan')):.2f} mm"),
            ("kinematic optimum RMS", g("kinematic_rms_mm", "{:.2f} mm")),
            ("max residual", g("marker_max_mm", "{:.1f} mm")),
            ("frames with a marker over 40 mm (not a swap or ghost)", _over_40mm(rep)),
            ("foot skate while planted",
             "mean {mean:.2f}, max {max:.2f} mm/frame".format(**rep["foot_skate_mm"])
             if "foot_skate_mm" in rep else None),
            ("outliers", ", ".join(f"{k} {v} fr" for k, v in
                                   sorted(rep.get("outlier_frames", {}).items(),
                                          key=lambda kv: -kv[1])) or "none"),
            ("joint-limit frames", ", ".join(f"{k} {v}" for k, v in
                                             rep.get("joint_limit_hits", {}).items()) or "none"),
            # toes no marker is on: their angle is the floor's (solver/toes.py), not a capture's
            ("toes bent by the floor", (bent_text(rep["toes_bent"]) or "none")
             if "toes_bent" in rep else None),
            ("solve time", g("solve_seconds", "{:.1f} s"))]
    return [(k, v) for k, v in rows if v is not None]


def solve_report_html(trace: SolveTrace, report: dict, title: str | None = None) -> str:
    """The whole page as a string (figures embedded as base64 PNG; no external resources)."""
    title = title or f"physmocap solve report: {report.get('source', '')}"
    frames = key_frames(trace)
    sections = [
        ("Marker residuals", fig_residuals(trace),
         "Distance from each captured marker to its landmark on the solved body, per frame."),
        ("Gaps and where the body carried the solve", fig_carried(trace),
         "Blue: the marker is missing, the solved body's landmark fills it (written to the "
         "cleaned C3D). Red: the marker is far off its landmark (swap, ghost): its spring is "
         "weakened and the body holds the pose."),
        ("Foot plants", fig_plants(trace), "Heel and toe markers detected planted (low and "
         "slow, until higher, faster or 1.5 cm from where they were planted); planted feet are "
         "pinned by stiff springs."),
        ("Joint angles", fig_angles(trace), "Local joint rotations of the solved body."),
        ("Foot height and skate", fig_feet(trace), "Skate: horizontal travel of a solved foot "
         "landmark between two planted frames."),
        ("Joint-limit hits", fig_limits(trace), "Frames where the solved pose sits at the body "
         "template's joint range."),
    ]
    if report.get("plug_in_gait_segments"):
        sections.append(("Against Plug-in Gait", fig_plug_in_gait(
            report["plug_in_gait_segments"]), "Each solved segment against the segment frame of "
            "the Plug-in Gait solve the capture holds, once the one fixed rotation between the "
            "two is taken out (they name their axes differently): how differently they move."))
    sections.append(("Key frames", fig_keyframes(trace, frames, report.get("first_frame", 1)),
                     "Evenly spaced frames plus "
                     "the frame with the largest inlier residual."))
    return report_page(title, _summary_rows(report), sections, report)


def write_solve_report(trace: SolveTrace, report: dict, path) -> None:
    """Write the report page to ``path`` atomically."""
    atomic_write_text(path, solve_report_html(trace, report))
