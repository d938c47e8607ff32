"""``solve``, ``demo`` and ``batch``: the physical marker solver on captures."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from ..errors import PhysmocapError
from .common import _has_plots, _need_plots, _scene_files, refuse_misnamed, refuse_overwrite


def _load_capture(path, up):
    from ..io.c3d import read_c3d
    if Path(path).suffix.lower() != ".c3d":
        raise PhysmocapError("the solver reads C3D captures (.c3d)", path)
    return read_c3d(path, up=up)


def solve_and_write(markers, output: Path, markerset: str = "auto", body_name: str = "humanoid",
                    static=None, report_path: Path | None = None, c3d_out: Path | None = None,
                    quiet: bool = False, scene: str | None = None,
                    report_html: Path | None = None) -> dict:
    """Solve ``markers`` and write BVH (+ report, cleaned C3D, HTML report); returns the report."""
    from ..io.atomic import atomic_write_text
    from ..progress import Progress
    from ..scene import load_body, load_environment, load_markerset, pick_markerset
    from ..solver.checkpoint import partial_folder
    from ..solver.pipeline import solve_capture, write_outputs

    body = load_body(body_name)
    try:
        spec = pick_markerset(markers.labels) if markerset == "auto" else load_markerset(markerset)
    except PhysmocapError as exc:   # name the capture: "physmocap: error: FILE: …"
        if exc.path is not None:
            raise
        raise type(exc)(exc.reason, markers.meta.get("path") or "<capture>") from None
    env = load_environment(scene) if scene else None
    # Finished stages wait here until the outputs are written: a stopped solve resumes.
    partial = partial_folder(output)
    result = solve_capture(markers, spec, body, static=static, environment=env,
                           progress=Progress(not quiet), checkpoint=partial)
    if result.report["resumed"] and not quiet:
        blocks = sum(n.startswith("physical") for n in result.report["resumed"])
        print(f"resumed from {partial}: " + ", ".join(
            (["kinematic solve"] if "kinematic" in result.report["resumed"] else [])
            + ([f"{blocks} physical block(s)"] if blocks else [])))
    report = write_outputs(result, markers, spec.name, body.name, output,
                           static.meta.get("path") if static is not None else None, c3d_out)
    if report_path is not None:
        atomic_write_text(report_path, json.dumps(report, indent=2) + "\n")
    if report_html is not None:
        from ..report.solve_html import write_solve_report
        from ..report.trace import trace_from_result
        write_solve_report(trace_from_result(result, body), report, report_html)
        report["report_html"] = str(report_html)
    shutil.rmtree(partial, ignore_errors=True)
    return report


def _damage_lines(d: dict | None, first_frame: int = 1) -> list[str]:
    """What was wrong with the capture, in a few lines (the JSON report has every interval,
    as 0-based indices); frames numbered as the capture numbers them (``first_frame`` + index),
    so that they can be found in Nexus or Mokka."""
    if not d:
        return []
    s = d["summary"]
    out = []
    parts = [f"{n} {what}" for n, what in (
        (s["markers_never_seen"], "markers never seen (ignored)"),
        (s["gap_samples"], "gap samples (bridged)"),
        (s["blackout_frames"], "frames with no marker (interpolated)"),
        (s["nonfinite_samples"], "infinite samples (ignored)")) if n]
    if parts:
        out.append("damage: " + ", ".join(parts))
    for kind, key in (("swap", "swaps"), ("ghost", "ghosts")):
        for e in d[key][:3]:
            who = "/".join(e["markers"]) if "markers" in e else e["marker"]
            out.append(f"{kind}: {who} capture frames {first_frame + e['frames'][0]}-"
                       f"{first_frame + e['frames'][1] - 1} ({e['action']})")
        if len(d[key]) > 3:
            out.append(f"... {len(d[key]) - 3} more {key} in the report")
    if s.get("frame_rate_suspect"):
        out.append(f"frame rate {d['frame_rate']['declared_hz']:g} Hz: "
                   f"{d['frame_rate']['action']}")
    return out


def _print_solve(rep: dict) -> None:
    print(f"{rep['source']}: {rep['frames']} frames at {rep['fps']:g} Hz, "
          f"{len(rep['markers'])} markers ({rep['markerset']})")
    print(f"  marker RMS {rep['marker_rms_mm']:.1f} mm without outliers (kinematic optimum "
          f"{rep['kinematic_rms_mm']:.1f} mm), {rep['marker_rms_all_mm']:.1f} mm with them; "
          f"{rep['frames_over_40mm_all']} frames with a marker over 40 mm, "
          f"{rep['frames_over_40mm_unexplained']} of them not a swap or ghost")
    skate = rep["foot_skate_mm"]
    print(f"  foot plants {sum(rep['foot_plant_frames'].values())} marker-frames, skate "
          f"mean {skate['mean']:.2f} mm/frame (max {skate['max']:.2f})")
    if rep["outlier_frames"]:
        worst = sorted(rep["outlier_frames"].items(), key=lambda kv: -kv[1])[:6]
        print("  outliers (spring weakened): " + ", ".join(f"{k} {v} fr" for k, v in worst))
    for name, h in rep.get("hand_holds", {}).items():
        print(f"  hold {name}: {h['frames']} frames, palm {h['error_mm_mean']:.1f} mm from the "
              f"object (max {h['error_mm_max']:.1f})")
    for line in _damage_lines(rep.get("damage"), rep.get("first_frame", 1)):
        print("  " + line)
    pig = rep.get("plug_in_gait_segments")
    if pig:
        worst = max(pig.values(), key=lambda a: a["residual_median_deg"])
        pel = pig.get("PEL")
        # one fixed offset per segment taken out: what is left is how differently they move
        print(f"  against the file's own Plug-in Gait segments: "
              f"{min(a['residual_median_deg'] for a in pig.values()):.1f}-"
              f"{worst['residual_median_deg']:.1f} deg apart (median over the take; worst "
              f"{worst['segment']}" + (f", pelvis {pel['residual_median_deg']:.1f}" if pel else "")
              + f"; {len(pig)} segments in the report)")
    from ..solver.toes import bent_text
    bent = {k: b for k, b in rep.get("toes_bent", {}).items() if b["frames_over_1deg"]}
    if bent:
        # no marker on these toes: the floor set their angle, not the capture
        print("  toes bent at the ball by the floor (no marker on them): " + bent_text(bent))
    if rep["joint_limit_hits"]:
        # a hinge is held at its limit (a straight knee): "at", not only "outside"
        print("  frames at or past a template joint limit: " + ", ".join(
            f"{k} {v} fr" for k, v in rep["joint_limit_hits"].items()))
    print(f"  solved in {rep['solve_seconds']:.1f} s (physical {rep['frames_per_second']:.0f} "
          f"frames/s)")
    print(f"  wrote {rep['output']}" + (f", {rep['c3d_out']}" if rep.get("c3d_out") else "")
          + (f", {rep['report_html']}" if rep.get("report_html") else ""))


def cmd_solve(args) -> int:
    refuse_overwrite([args.capture, args.static, *_scene_files(args.scene, "environments"),
                      *_scene_files(args.body, "bodies"),
                      *_scene_files(args.markerset, "markersets")],
                     [args.output, args.report, args.c3d_out, args.report_html])
    refuse_misnamed(output=(args.output, ".bvh"), report=(args.report, ".json"),
                    c3d_out=(args.c3d_out, ".c3d"), report_html=(args.report_html, ".html"))
    _need_plots(args)
    markers = _load_capture(args.capture, args.up)
    static = _load_capture(args.static, args.up) if args.static else None
    rep = solve_and_write(markers, Path(args.output), args.markerset, args.body, static,
                          Path(args.report) if args.report else None,
                          Path(args.c3d_out) if args.c3d_out else None, args.quiet, args.scene,
                          Path(args.report_html) if args.report_html else None)
    if not args.quiet:
        _print_solve(rep)
        if args.report:
            print(f"  report {args.report}")
    return 0


def cmd_demo(args) -> int:
    """The main job on the embedded default: synthesise a spoiled capture from a pybullet_data
    clip, write it as C3D, read it back and solve it like any capture; compare with the truth."""
    from ..demo import make_demo_capture
    from ..io.bvh import write_bvh
    from ..io.c3d import read_c3d, write_c3d

    out = Path(args.output)
    capture, truth = make_demo_capture(args.clip)   # (a clip it lacks: no empty folder left)
    out.mkdir(parents=True, exist_ok=True)
    c3d_path = out / "capture.c3d"
    write_c3d(capture, c3d_path)
    write_bvh(truth, out / "truth.bvh")
    markers = read_c3d(c3d_path)
    # the page of plots with the 'report' extra (matplotlib); the viewer needs nothing more
    page = out / "report.html" if _has_plots() else None
    rep = solve_and_write(markers, out / "solved.bvh", "auto", "humanoid", None,
                          out / "report.json", out / "clean.c3d", args.quiet, report_html=page)
    from ..io.bvh import read_bvh
    from ..report.viewer import write_viewer
    solved = read_bvh(out / "solved.bvh", unit="cm")
    write_viewer(solved, out / "view.html", markers,
                 title="physmocap demo: the solved body and the capture's markers")
    idx = [solved.skeleton.index(n) for n in truth.skeleton.names]
    pos_err = np.linalg.norm(solved.gpos[:, idx] - truth.gpos, axis=-1)
    if not args.quiet:
        print(f"demo: {capture.meta['path']} -> {len(capture.labels)} CMU markers at "
              f"{capture.fps:g} Hz with 2 mm noise, gaps, {capture.meta['hidden']} hidden "
              f"0.25 s, {'/'.join(capture.meta['swapped'])} swapped 0.5 s")
        _print_solve(rep)
        swapped = [m for m in capture.meta["swapped"] if m in rep["outlier_frames"]]
        print(f"  swap detected on: {', '.join(swapped) or 'none'}")
        print(f"  against the truth: joint positions {1000 * pos_err.mean():.1f} mm mean, "
              f"{1000 * pos_err.max():.1f} mm max (different limb lengths are calibrated, "
              f"so this includes the calibration error)")
        print(f"result     {out / 'solved.bvh'}  {out / 'report.json'}  {out / 'clean.c3d'}")
        print(f"look       {out / 'view.html'} (the solved body with the markers and their "
              "residual lines; open it in a browser)")
        print(f"           {out / 'report.html'} (residuals, plants, joint angles, stills)"
              if page else "           for a page of plots too: pip install 'physmocap[report]'")
    return 0


def cmd_batch(args) -> int:
    """Solve a capture library (every .c3d under a folder); resumable; local or on Dask."""
    from ..batch import BatchSettings, format_summary, run_batch
    from ..progress import Progress

    # Scene files as absolute paths: a Dask worker does not share our working directory.
    scene = [str(Path(a).resolve()) if Path(a).is_file() else a for a in (args.markerset,
                                                                          args.body)]
    settings = BatchSettings(scene[0], scene[1], args.up, args.c3d_out)
    summary = run_batch(args.input, args.output, settings, workers=args.workers,
                        scheduler=args.scheduler, manifest=args.manifest, force=args.force,
                        progress=Progress(not args.quiet))
    if not args.quiet:
        print(format_summary(summary))
    if summary.failed:
        raise PhysmocapError(f"{len(summary.failed)} of {len(summary.rows)} takes failed "
                             f"(reasons in {Path(args.output) / 'summary.csv'})", args.input)
    return 0
