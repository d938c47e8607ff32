"""The ``physmocap`` command. Nothing imports this module.

Exit codes: 0 success, 1 bad input (one line on stderr, no traceback), 2 usage error.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .errors import PhysmocapError, SettingsError, bad_number

EXAMPLES = {
    "solve": "physmocap solve walk.c3d -o walk.bvh --report walk.json\n"
             "  physmocap solve walk.c3d -o walk.bvh --static static.c3d --markerset cmu41 "
             "--c3d-out clean.c3d",
    "inspect": "physmocap inspect capture.c3d\n  physmocap inspect walk.bvh --json",
    "convert": "physmocap convert walk.bvh -o out.bvh --out-unit m --order XYZ\n"
               "  physmocap convert humanoid3d_walk.txt -o walk.bvh",
    "demo": "physmocap demo -o out/demo",
    "report": "physmocap report walk.json -o walk.html   # reads the BVH and C3D the report names\n"
              "  physmocap report out/*.json              # one page beside each report",
    "view": "physmocap view walk.bvh --markers walk.c3d -o walk_view.html",
    "render": "physmocap render walk.bvh --markers walk.c3d -o walk.gif --fps 25",
    "play": "physmocap play walk.bvh -o simulated.bvh --report play.json --mode assist\n"
            "  physmocap play walk.bvh -o sim.bvh --mode physical --balance stepping --loop 20 "
            "--report-html play.html\n"
            "  physmocap play db.npz --input straight_walk --physics -o sim.bvh --report play.json",
    "batch": "physmocap batch ../shared/data/c3d -o solved/ --workers 2\n"
             "  physmocap batch captures/ -o solved/ --scheduler tcp://10.0.0.5:8786",
    "mm build": "physmocap mm build ../shared/data/bvh/bandai-namco/ds2_normal_locomotion -o db.npz",
    "avatar": "physmocap avatar extract held_out.bvh -o track.csv\n"
              "  physmocap avatar db.npz --tracking track.csv -o avatar.bvh --truth held_out.bvh "
              "--report avatar.json",
    "mm run": "physmocap mm run db.npz --input scenes/inputs/figure_eight.toml -o fig8.bvh "
              "--report fig8.json",
}


# --- loading any supported file ---------------------------------------------------------------

def load_any(path: Path, unit: str | None = None, up: str | None = None):
    """Read a BVH, C3D or DeepMimic clip; returns a ``Motion`` or ``MarkerTrajectories``."""
    suffix = path.suffix.lower()
    if suffix == ".bvh":
        from .io.bvh import read_bvh
        return read_bvh(path, unit=unit, up=up or "y")
    if suffix == ".c3d":
        from .io.c3d import read_c3d
        return read_c3d(path, up=up)
    if suffix in (".txt", ".json"):
        from .io.deepmimic import read_deepmimic
        return read_deepmimic(path)
    raise PhysmocapError(f"unknown file type {suffix or '(none)'!r}; physmocap reads .bvh, .c3d "
                         f"and DeepMimic .txt clips (and inspect reads mm build's .npz)", path)


def refuse_misnamed(**outputs) -> None:
    """Outputs carry their format's suffix (``option=(path, ".bvh")``, ``output``: the command's
    output): physmocap reads files back by their suffix, and a BVH written as ``x.c3d`` was
    read later as a broken C3D. After ``refuse_overwrite``, whose message says more."""
    kinds = {".bvh": "a BVH", ".json": "JSON", ".html": "an HTML page", ".c3d": "a C3D",
             ".npz": "a database (.npz)", ".csv": "a tracking CSV"}
    for option, (path, suffix) in outputs.items():
        if path is not None and Path(path).suffix.lower() != suffix:
            flag = "the output" if option == "output" else "--" + option.replace("_", "-")
            raise PhysmocapError(f"{flag} is {kinds[suffix]}; name it {suffix}", path)


def refuse_overwrite(inputs, outputs) -> None:
    """Inputs are never modified: an output path naming an input file is an error."""
    ins = [Path(p) for p in inputs if p is not None and Path(p).is_file()]
    for out in (Path(o) for o in outputs if o is not None):
        if out.exists() and any(os.path.samefile(out, i) for i in ins):
            raise PhysmocapError("output would overwrite an input file; choose another name", out)


def _scene_files(name, kind: str) -> list:
    """The files a shipped scene name (or a path) of ``kind`` (``inputs``, ``environments``,
    ``markersets``, ``bodies``) reads, for ``refuse_overwrite``: a shipped scene is an input
    too, and so is the recording a head input scene names (``trajectory.input_files``). Empty
    where the name does not resolve (that error comes where the scene is loaded)."""
    from .matching.trajectory import input_files
    from .scene import _resolve
    if name is None:
        return []
    try:
        path = _resolve(name, kind, kind)
    except PhysmocapError:
        return []
    return input_files(path) if kind == "inputs" else [path]


# --- summaries --------------------------------------------------------------------------------

def summarize_motion(m) -> dict:
    gpos = m.gpos
    height = gpos[..., 2]
    travel = float(np.linalg.norm(m.root_pos[-1, :2] - m.root_pos[0, :2])) if m.n_frames else 0.0
    return {
        "kind": "motion", "path": m.meta.get("path", ""), "format": m.meta.get("format", ""),
        "joints": len(m.skeleton), "root": m.skeleton.names[0],
        "joint_names": list(m.skeleton.names),
        "fps": m.fps, "frames": m.n_frames, "duration_s": round(m.duration, 4),
        "unit": m.meta.get("unit"), "unit_inferred": bool(m.meta.get("unit_inferred", False)),
        "up": m.meta.get("up"), "rotation_orders": list(m.meta.get("rotation_orders", [])),
        "dropped_root": m.meta.get("dropped_root"),
        "root_travel_m": round(travel, 4),
        "height_range_m": [round(float(np.min(height)), 4), round(float(np.max(height)), 4)]
        if m.n_frames else None,
    }


def summarize_database(db, path) -> dict:
    """A motion-matching database (``mm build``'s ``.npz``): its clips, rate and joints, and
    what a run can ask of it without sliding feet (``matching.coverage``)."""
    from .matching.coverage import covered_ranges, fastest_kept_turn
    lengths = np.asarray(db.range_stops) - np.asarray(db.range_starts)
    return {
        "kind": "database", "path": str(path), "format": "npz",
        "frames": int(db.n_frames), "fps": float(db.fps),
        "duration_s": round(db.n_frames / db.fps, 4),
        "clips": len(db.clip_names), "mirrored_clips": int(np.sum(db.mirrored)),
        "clip_names": list(db.clip_names),
        "clip_seconds": [round(float(n) / db.fps, 3) for n in lengths],
        "joints": len(db.names) - 1, "contact_joints": list(db.contact_joints),
        "tags": sorted(db.tags), "up": db.up,
        "speeds_kept_m_s": [[round(a, 2), round(b, 2)] for a, b in covered_ranges(db)],
        "fastest_kept_turn_rad_s": round(fastest_kept_turn(db), 2),
    }


def summarize_markers(t) -> dict:
    gaps = t.gap_frames()
    F = t.n_frames
    return {
        "kind": "markers", "path": t.meta.get("path", ""), "format": "c3d",
        "markers": int(np.sum(~t.is_virtual)), "virtual_points": int(np.sum(t.is_virtual)),
        "labels": list(t.labels), "subject": t.subject,
        "fps": t.fps, "frames": F, "duration_s": round(t.duration, 4),
        "unit": t.meta.get("unit"), "unit_source": t.meta.get("unit_source"),
        "up": t.meta.get("up"), "up_source": t.meta.get("up_source"),
        "missing_fraction": round(float(t.missing().mean()), 5) if F and t.labels else 0.0,
        "gap_frames": gaps,
    }


def _print_summary(s: dict) -> None:
    p = print
    p(f"{s['path']}")
    if s["kind"] == "database":
        from .matching.coverage import ranges_text
        p(f"  clips      {s['clips']} ({s['mirrored_clips']} mirrored), "
          f"{s['joints']} joints, feet {' and '.join(s['contact_joints'])}, up axis of its "
          f"files {s['up']}")
        p(f"  timing     {s['frames']} frames at {s['fps']:g} fps = {s['duration_s']:.2f} s")
        p(f"  tags       {', '.join(s['tags']) or 'none'}")
        p(f"  keeps      speeds {ranges_text(s['speeds_kept_m_s'])}, turns up to "
          f"{s['fastest_kept_turn_rad_s']:.2f} rad/s, each for a second (a run asking for "
          "other speeds or faster turns slides its feet)")
    elif s["kind"] == "motion":
        unit = f"{s['unit']}{' (inferred)' if s['unit_inferred'] else ''}"
        p(f"  skeleton   {s['joints']} joints, root {s['root']}"
          + (f" (static '{s['dropped_root']}' folded in)" if s["dropped_root"] else ""))
        p(f"  timing     {s['frames']} frames at {s['fps']:g} fps = {s['duration_s']:.2f} s")
        p(f"  file       {s['format']}, unit {unit}, up axis {s['up']}"
          + (f", rotation orders {'/'.join(s['rotation_orders'])}" if s["rotation_orders"] else ""))
        if s["height_range_m"]:
            lo, hi = s["height_range_m"]
            p(f"  body       joint heights {lo:.2f} .. {hi:.2f} m (Z up), "
              f"root travels {s['root_travel_m']:.2f} m")
    else:
        p(f"  markers    {s['markers']} physical" + (f", {s['virtual_points']} virtual/model "
          "points" if s["virtual_points"] else "") + (f", subject {s['subject']}" if s["subject"]
                                                       else ""))
        p(f"  timing     {s['frames']} frames at {s['fps']:g} Hz = {s['duration_s']:.2f} s")
        p(f"  file       c3d, unit {s['unit']} ({s['unit_source']}), up axis {s['up']} "
          f"({s['up_source']})")
        p(f"  gaps       {100 * s['missing_fraction']:.1f} % of samples missing")
        worst = sorted(((v, k) for k, v in s["gap_frames"].items() if v), reverse=True)[:8]
        for v, k in worst:
            p(f"             {k:<10} {v} frames missing")


# --- commands ---------------------------------------------------------------------------------

def cmd_inspect(args) -> int:
    if Path(args.file).suffix.lower() == ".npz":
        from .matching.database import load_database
        if args.unit or args.up:
            args.parser.error("--unit and --up describe a BVH or C3D; a database is in metres, "
                              "Z up")
        s = summarize_database(load_database(args.file), args.file)
    else:
        obj = load_any(Path(args.file), unit=args.unit, up=args.up)
        s = summarize_motion(obj) if hasattr(obj, "skeleton") else summarize_markers(obj)
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        _print_summary(s)
    return 0


def cmd_convert(args) -> int:
    from .io.bvh import write_bvh

    if (args.output is None) == (args.output_pos is None):
        args.parser.error("give the output once: convert IN.bvh -o OUT.bvh")
    output = args.output or args.output_pos
    refuse_overwrite([args.input], [output])
    refuse_misnamed(output=(output, ".bvh"))
    obj = load_any(Path(args.input), unit=args.in_unit, up=args.in_up)
    if not hasattr(obj, "skeleton"):
        raise PhysmocapError("convert writes skeletal motion; a C3D holds markers (the solver "
                             "turns markers into motion)", args.input)
    write_bvh(obj, output, unit=args.out_unit, up=args.out_up, order=args.order)
    if not args.quiet:
        print(f"wrote {output} ({obj.n_frames} frames, {len(obj.skeleton)} joints, "
              f"{args.out_unit}, {args.out_up}-up, {args.order})")
    return 0


def _load_capture(path, up):
    from .io.c3d import read_c3d
    if Path(path).suffix.lower() != ".c3d":
        raise PhysmocapError("the solver reads C3D captures (.c3d)", path)
    return read_c3d(path, up=up)


def solve_and_write(markers, output: Path, markerset: str = "auto", body_name: str = "humanoid",
                    static=None, report_path: Path | None = None, c3d_out: Path | None = None,
                    quiet: bool = False, scene: str | None = None,
                    report_html: Path | None = None) -> dict:
    """Solve ``markers`` and write BVH (+ report, cleaned C3D, HTML report); returns the report."""
    from .io.bvh import write_bvh
    from .io.c3d import write_c3d
    from .io.atomic import atomic_write_text
    from .progress import Progress
    from .scene import load_body, load_environment, load_markerset, pick_markerset
    from .solver.checkpoint import partial_folder
    from .solver.pipeline import cleaned_markers, solve_capture

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
    write_bvh(result.motion, output)
    report = dict(result.report)
    report.update(markerset=spec.name, body=body.name, output=str(output),
                  static=static.meta.get("path") if static is not None else None)
    if c3d_out is not None:
        write_c3d(cleaned_markers(result, markers.fps, markers.subject), c3d_out)
        report["c3d_out"] = str(c3d_out)
    if report_path is not None:
        atomic_write_text(report_path, json.dumps(report, indent=2) + "\n")
    if report_html is not None:
        from .report.solve_html import write_solve_report
        from .report.trace import trace_from_result
        write_solve_report(trace_from_result(result, body), report, report_html)
        report["report_html"] = str(report_html)
    shutil.rmtree(partial, ignore_errors=True)
    return report


def _damage_lines(d: dict | None) -> list[str]:
    """What was wrong with the capture, in a few lines (the JSON report has every interval)."""
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
            out.append(f"{kind}: {who} frames {e['frames'][0]}-{e['frames'][1] - 1} "
                       f"({e['action']})")
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
          f"{rep['frames_over_40mm']} frames with an inlier marker over 40 mm")
    skate = rep["foot_skate_mm"]
    print(f"  foot plants {sum(rep['foot_plant_frames'].values())} marker-frames, skate "
          f"mean {skate['mean']:.2f} mm/frame (max {skate['max']:.2f})")
    if rep["outlier_frames"]:
        worst = sorted(rep["outlier_frames"].items(), key=lambda kv: -kv[1])[:6]
        print("  outliers (spring weakened): " + ", ".join(f"{k} {v} fr" for k, v in worst))
    for name, h in rep.get("hand_holds", {}).items():
        print(f"  hold {name}: {h['frames']} frames, palm {h['error_mm_mean']:.1f} mm from the "
              f"object (max {h['error_mm_max']:.1f})")
    for line in _damage_lines(rep.get("damage")):
        print("  " + line)
    if rep["joint_limit_hits"]:
        print("  frames outside template joint ranges: " + ", ".join(f"{k} {v} fr" for k, v in
                                                 rep["joint_limit_hits"].items()))
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
    from .demo import make_demo_capture
    from .io.bvh import write_bvh
    from .io.c3d import read_c3d, write_c3d

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    capture, truth = make_demo_capture(args.clip)
    c3d_path = out / "capture.c3d"
    write_c3d(capture, c3d_path)
    write_bvh(truth, out / "truth.bvh")
    markers = read_c3d(c3d_path)
    # the page of plots with the 'report' extra (matplotlib); the viewer needs nothing more
    page = out / "report.html" if _has_plots() else None
    rep = solve_and_write(markers, out / "solved.bvh", "auto", "humanoid", None,
                          out / "report.json", out / "clean.c3d", args.quiet, report_html=page)
    from .io.bvh import read_bvh
    from .report.viewer import write_viewer
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


def _has_plots() -> bool:
    """Whether matplotlib (the 'report' extra) is installed."""
    import importlib.util
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):      # a stub in sys.modules (None) or a broken install
        return False


def cmd_report(args) -> int:
    """HTML solve reports rebuilt from what ``solve`` wrote (JSON report + the BVH and C3D)."""
    from .report.solve_html import write_solve_report
    from .report.trace import solve_files, trace_from_files

    reports = [Path(r) for r in args.reports]
    if len(reports) > 1 and (args.output or args.bvh or args.c3d):
        raise PhysmocapError("-o, --bvh and --c3d take one report; with several, each page is "
                             "written beside its report (.html)")
    for r in reports:
        out = Path(args.output) if args.output else r.with_suffix(".html")
        refuse_overwrite([r, args.bvh, args.c3d], [out])
        trace, rep = trace_from_files(r, bvh=args.bvh, c3d=args.c3d)
        # nor the BVH and C3D the report names (read by now; the page must not replace them)
        refuse_overwrite(solve_files(r, rep, args.bvh, args.c3d), [out])
        refuse_misnamed(output=(out, ".html"))
        write_solve_report(trace, rep, out)
        if not args.quiet:
            print(f"wrote {out} ({trace.n_frames} frames, {len(trace.labels)} markers)")
    return 0


def _load_motion(path, unit):
    obj = load_any(Path(path), unit=unit)
    if not hasattr(obj, "skeleton"):
        raise PhysmocapError("expected skeletal motion (BVH or DeepMimic clip); pass a C3D with "
                             "--markers", path)
    return obj


def _load_markers(path):
    if path is None:
        return None
    from .io.c3d import read_c3d
    if Path(path).suffix.lower() != ".c3d":
        raise PhysmocapError("--markers takes a C3D capture (.c3d)", path)
    return read_c3d(path)


def cmd_view(args) -> int:
    from .report.viewer import write_viewer

    refuse_overwrite([args.motion, args.markers], [args.output])
    refuse_misnamed(output=(args.output, ".html"))
    motion = _load_motion(args.motion, args.unit)
    markers = _load_markers(args.markers)
    write_viewer(motion, args.output, markers)
    if not args.quiet:
        print(f"wrote {args.output} ({motion.n_frames} frames at {motion.fps:g} fps"
              + (f", {len(markers.labels)} markers" if markers is not None else "")
              + "); open it in a browser (works offline)")
    return 0


def cmd_render(args) -> int:
    from .progress import Progress
    from .report.render import render_motion

    refuse_overwrite([args.motion, args.markers], [args.output])
    motion = _load_motion(args.motion, args.unit)
    markers = _load_markers(args.markers)
    n = render_motion(motion, args.output, markers, fps=args.fps,
                      progress=Progress(not args.quiet))
    if not args.quiet:
        print(f"wrote {args.output} ({n} frames at {min(args.fps, motion.fps):g} fps)")
    return 0


def _bvh_files(paths) -> list[Path]:
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.rglob("*.bvh"))
        elif p.suffix.lower() == ".bvh":
            files.append(p)
        else:
            raise PhysmocapError("not a BVH file or a folder of them", p)
    if not files:
        raise PhysmocapError(f"no BVH clips found in {', '.join(map(str, paths))}")
    return files


def _stand_arg(text: str) -> tuple[Path, int]:
    """``CLIP.bvh[:FRAME]`` of ``mm build --stand``: the clip and its frame (default 0)."""
    m = re.fullmatch(r"(.+?)(?::(\d+))?", text)
    path, frame = Path(m.group(1)), int(m.group(2) or 0)
    if path.suffix.lower() != ".bvh":
        raise SettingsError(f"--stand takes CLIP.bvh or CLIP.bvh:FRAME (a frame index >= 0), "
                            f"got {text!r}")
    return path, frame


def cmd_mm_build(args) -> int:
    from .io.bvh import read_bvh
    from .matching.database import build_database, save_database, standing_clip
    from .progress import Progress

    files = _bvh_files(args.clips)
    stand = None if args.stand is None else _stand_arg(args.stand)[0]
    refuse_overwrite(files + [stand], [args.output])
    refuse_misnamed(output=(args.output, ".npz"))
    prog = Progress(not args.quiet)
    motions = []
    for i, f in enumerate(files):
        motions.append(read_bvh(f, unit=args.unit))
        prog("read", i + 1, len(files))
    names = [f.stem for f in files]
    if args.stand is not None:
        # motion matching stops only where its database stands: without a standing clip a
        # character whose input stops plays walking frames clamped in place, feet sliding
        path, frame = _stand_arg(args.stand)
        src = motions[files.index(path)] if path in files else read_bvh(path, unit=args.unit)
        try:
            motions.append(standing_clip(src, frame))
        except SettingsError as e:
            raise SettingsError("--stand: " + e.reason.removeprefix("standing_clip: "), path) \
                from None
        names.append("stand")
    db = build_database(motions, names=names, fps=args.fps, mirror=args.mirror)
    save_database(db, args.output)
    if not args.quiet:
        print(f"wrote {args.output}: {db.n_frames} frames ({db.n_frames / db.fps:.0f} s at "
              f"{db.fps:g} fps) from {len(files)} clips{' + mirrors' if args.mirror else ''}"
              f"{' + a standing clip' if args.stand is not None else ''}, "
              f"{len(db.names) - 1} joints, tags: {', '.join(sorted(db.tags)) or 'none'}")
        # what a run can ask of it without sliding feet (``matching.coverage``)
        from .matching.coverage import COVER_S, covered_ranges, ranges_text
        print(f"  speeds its clips keep for {COVER_S:g} s: {ranges_text(covered_ranges(db))} "
              "(a run asking for others slides its feet, and says so)")
    return 0


def _scene_controller(database, input_scene, duration, settings=None):
    """``(db, controller, scene path, duration s)`` for ``mm run`` and ``play DB.npz``: the
    database, an input scene (a path or a shipped name) and its ``[run] duration`` unless given."""
    from .matching.controller import Controller, ControllerSettings
    from .matching.database import load_database
    from .matching.features import compute_features
    from .matching.trajectory import load_input
    from .scene import _read, _resolve

    scene_path = _resolve(input_scene, "inputs", "input scene")   # cheap: before a big database
    db = load_database(database)
    if duration is None:
        duration = _read(scene_path).get("run", {}).get("duration", 10.0)
        if bad_number(duration, positive=True):
            raise PhysmocapError(f"[run] duration must be a number of seconds > 0, got "
                                 f"{duration!r}", scene_path)
        duration = float(duration)
    ctrl = Controller(db, compute_features(db), load_input(scene_path),
                      settings or ControllerSettings())
    return db, ctrl, scene_path, duration


def cmd_mm_run(args) -> int:
    import time as _time

    from .io.bvh import write_bvh
    from .matching.controller import ControllerSettings, run_controller
    from .matching.metrics import run_report
    from .progress import Progress

    refuse_overwrite([args.database, *_scene_files(args.input, "inputs")],
                     [args.output, args.report, args.report_html])
    refuse_misnamed(output=(args.output, ".bvh"), report=(args.report, ".json"),
                    report_html=(args.report_html, ".html"))
    _need_plots(args)
    db, ctrl, scene_path, duration = _scene_controller(
        args.database, args.input, args.duration,
        ControllerSettings(search_every=args.search_every))
    source = ctrl.source
    t0 = _time.perf_counter()
    motion, record = run_controller(ctrl, duration, progress=Progress(not args.quiet))
    seconds = _time.perf_counter() - t0
    if not args.no_foot_lock:
        from .matching.footlock import lock_feet
        motion = lock_feet(motion, tuple(db.contact_joints), np.array(record.contacts))
    write_bvh(motion, args.output)
    rep = run_report(db, motion, record, source)
    rep.update(input=str(scene_path), database=str(args.database), output=str(args.output),
               update_ms=round(1000 * seconds / max(motion.n_frames, 1), 3),
               foot_lock=not args.no_foot_lock)
    _warn_coverage(rep)

    def write_page(r):
        from .report.mm_html import write_mm_report
        write_mm_report(db, motion, record, source, r, args.report_html)
    _write_reports(args, rep, write_page)
    if not args.quiet:
        print(f"{scene_path}: {motion.n_frames} frames ({duration:g} s), {rep['transitions']} "
              f"transitions, {rep['update_ms']:.2f} ms per frame (search {rep['search_us']} us)")
        print(f"  root to intended path {_maybe(rep['trajectory_error_m'], '.3f')} m mean after "
              f"1 s (max {_maybe(rep['trajectory_error_max_m'], '.3f')}); facing error "
              f"{rep['facing_error_deg']:.1f} deg outside sharp turns")
        print(f"  foot skate {rep['foot_skate_mm']:.2f} mm/frame (database clips "
              f"{rep['foot_skate_mm_database']:.2f}); jitter {rep['jitter']:.1f} m/s^3 "
              f"(database {_maybe(rep['jitter_database'], '.1f')})")
        print(f"  wrote {args.output}" + "".join(f", {p}" for p in (args.report,
                                                                      args.report_html) if p))
    return 0


def cmd_play(args) -> int:
    """Physical playback of a fixed motion (BVH or DeepMimic clip) on the simulated body."""
    from .io.bvh import write_bvh
    from .playback.track import track_any
    from .progress import Progress
    from .scene import load_environment

    if Path(args.motion).suffix.lower() == ".npz":
        return _play_live(args)
    if args.input:
        raise PhysmocapError("--input drives a motion-matching database (DB.npz); a fixed "
                             "motion plays as it is", args.motion)
    inputs = [args.motion, *_scene_files(args.scene, "environments")]
    refuse_overwrite(inputs, [args.output, args.report, args.report_html])
    refuse_misnamed(output=(args.output, ".bvh"), report=(args.report, ".json"),
                    report_html=(args.report_html, ".html"))
    _need_plots(args)
    motion = load_any(Path(args.motion), unit=args.unit)
    if not hasattr(motion, "skeleton"):
        raise PhysmocapError("play needs skeletal motion (a BVH or clip), not markers",
                             args.motion)
    env = load_environment(args.scene) if args.scene else None
    loop = None
    if args.loop is not None:
        motion, loop = _looped(motion, args.loop, args.motion)
    settings, plan = _play_settings(args), None
    if args.predict:
        from .playback.predictive import track_predictive
        predict, checkpoint = _predict_checkpoint(args, inputs, (args.loop, args.unit),
                                                        settings)
        with _dropped_if_unused(checkpoint):
            result, plan = track_predictive(motion, settings=settings, predict=predict,
                                            environment=env, progress=Progress(not args.quiet),
                                            checkpoint=checkpoint)
        _print_resumed(args, plan, 1.0 / motion.fps)
    else:
        result = track_any(motion, mode=args.mode, settings=settings,
                           progress=Progress(not args.quiet), environment=env)
    write_bvh(result.motion, args.output)
    rep = _with_plan(result.report(), plan)
    rep.update(source=str(args.motion), output=str(args.output))
    if loop is not None:
        rep["loop"] = loop
    _write_play_reports(args, result, rep)
    if not args.quiet:
        print(f"{args.motion}: {rep.get('frames', motion.n_frames)} frames, mode {args.mode}")
        if loop is not None:
            print(f"  looped: frames {loop['start']}-{loop['stop']} ({loop['cycle_s']:.2f} s, "
                  f"seam {100 * loop['seam_m']:.1f} cm) repeated to {loop['seconds']:.1f} s")
        print(f"  {_tracking_text(rep)}; root assist "
              f"{rep['root_assist_force_mean_n']:.0f} N mean, {rep['root_assist_force_max_n']:.0f} "
              f"max; penetration {rep['penetration_max_mm']:.1f} mm; falls: "
              f"{_falls_text(rep['falls'])}; {_fps_text(rep['frames_per_second'])} frames/s")
        _print_physical(rep)
        _print_predictive(rep)
        _print_holds(rep)
        _print_wrote(args)
    if plan is not None:
        checkpoint.remove()
    return 0


def _fps_text(fps: float) -> str:
    """Frames per second: whole above 10, else two decimals (a search plays a few a second)."""
    return f"{fps:.0f}" if fps >= 10 else f"{fps:.2f}"


def _need_plots(args) -> None:
    """``--report-html`` needs matplotlib: said before a long run (a solve, a playback), not
    after it."""
    if args.report_html:
        from .report._mpl import pyplot
        pyplot()


def _warn_coverage(rep: dict) -> None:
    """A warning line each when the input asked for speeds the database does not keep, or the
    character turned faster than its clips do (``matching.coverage``): the run's feet slide
    there, and a fully physical body may fall."""
    for key in ("asked_speeds", "turns"):
        if rep.get(key, {}).get("warning"):
            warnings.warn(rep[key]["warning"])


def _write_reports(args, rep: dict, write_page) -> None:
    """A command's JSON report and HTML page (``--report``, ``--report-html``), atomically;
    ``write_page(rep)`` writes the page (after ``rep`` names it)."""
    from .io.atomic import atomic_write_text
    if args.report_html:
        rep["report_html"] = str(args.report_html)
    if args.report:
        atomic_write_text(args.report, json.dumps(rep, indent=2, default=float) + "\n")
    if args.report_html:
        write_page(rep)


def _write_play_reports(args, result, rep: dict, page=None) -> None:
    """``play``'s (and the simulated avatar's) reports (``_write_reports``): the page of the
    simulated ``result`` shows ``page(rep)`` (default: ``rep``)."""
    def write_page(r):
        from .report.play_html import write_play_report
        write_play_report(result, r if page is None else page(r), args.report_html)
    _write_reports(args, rep, write_page)


def _print_wrote(args) -> None:
    print(f"  wrote {args.output}" + "".join(f", {p}" for p in (args.report, args.report_html)
                                             if p))


def _looped(motion, seconds: float, path) -> tuple:
    """``motion``'s most closed gait cycle (``playback.reference.walk_cycle``), its seam spread
    over it (``close_cycle``), repeated until it lasts ``seconds``, and what was looped (for the
    report; ``seam_m``: the mismatch spread)."""
    from .playback.reference import close_cycle, loop_motion, walk_cycle
    if not (seconds > 0 and np.isfinite(seconds)):
        raise PhysmocapError(f"--loop must be a number of seconds > 0, got {seconds}", path)
    try:
        i, j, seam = walk_cycle(motion)
    except PhysmocapError as e:
        raise PhysmocapError(f"--loop: {e.reason}", path) from None
    loops = max(1, int(np.ceil(seconds * motion.fps / (j - i) - 1e-9)))
    looped = loop_motion(close_cycle(motion[i:j + 1]), loops)
    return looped, {"start": i, "stop": j, "cycle_s": (j - i) / motion.fps, "seam_m": seam,
                    "loops": loops, "seconds": (looped.n_frames - 1) / motion.fps}


def _maybe(x, fmt: str) -> str:
    """``x`` formatted, or ``n/a`` for a figure a report could not measure (``None``)."""
    return "n/a" if x is None else format(x, fmt)


def _tracking_text(rep: dict) -> str:
    """The mean tracking error, and, after a fall, the mean until it began."""
    text = f"tracking error {rep['tracking_error_m']:.3f} m"
    if rep["falls"] and rep.get("tracking_error_upright_m") is not None:
        text += f" ({rep['tracking_error_upright_m']:.3f} m until the first fall)"
    return text


def _print_physical(rep: dict) -> None:
    """Fully physical: how well the body moved like its reference wherever it was (the pose
    error) and how far it walked beside it (assist mode carries the body along its
    reference's path, so there these add nothing to the tracking error)."""
    w = rep.get("walked_m")
    if rep.get("mode") != "physical" or not w:
        return
    until = f" until the first fall began at {w['until_s']:.2f} s" if rep["falls"] else ""
    pose = rep.get("pose_error_m")
    pose = "" if pose is None else f"pose error {pose:.3f} m (joints about the root); "
    print(f"  {pose}walked {w['body']:.1f} m, its reference {w['reference']:.1f} m{until}")


def _falls_text(falls: list) -> str:
    """``falls`` of a playback report in words: ``"none"`` or the count and the first fall's
    start and reason (a user looking at a fallen body wants when it went down, not only that),
    and how many times the body was put back on its feet (``--recover``)."""
    if not falls:
        return "none"
    first = falls[0]
    back = sum("recovered_s" in f for f in falls)
    return (f"{len(falls)} (the first from {first['since_s']:.2f} s, {first['reason']}"
            + (f"; put back on its feet {back} time{'s' if back > 1 else ''}" if back else "")
            + ")")


def _print_holds(rep: dict) -> None:
    """The ``holds`` of a playback report, one line each."""
    for h in rep.get("holds", []):
        err = ("never held" if h["palm_error_mm_mean"] is None else
               f"palm {h['palm_error_mm_mean']:.1f} mm mean, {h['palm_error_mm_max']:.1f} max "
               f"from the object")
        print(f"  hold {h['hand']} {h['start_s']:g}-{h['stop_s']:g} s: {h['frames']} frames, {err}")


def _predict_arguments(sp, needs: str) -> None:
    """``--predict``, ``--predict-budget`` and ``--predict-workers`` of ``play`` and ``avatar``
    (``needs``: the options it needs, in words)."""
    sp.add_argument("--predict", action="store_true",
                    help=f"{needs}: the body chooses its gains every 0.25 s by simulating 1 s "
                    "ahead; the output is the chain of committed steps (fully physical; "
                    "offline: tens of frames simulated per frame played; a stopped run "
                    "resumes; playback/predictive.py)")
    sp.add_argument("--predict-budget", type=_positive_float, metavar="FRAMES",
                    help="with --predict: the most frames simulated per frame played (default "
                    "100); past it the rest plays with the last gains and the report says "
                    "incomplete")
    sp.add_argument("--predict-workers", type=_positive_int, metavar="N",
                    help="with --predict: play the look-aheads in N processes (forks; Linux); "
                    "the same result, sooner on N cores (default 1)")


_RECOVER_HELP = ("a body that fell is put back on its feet, at rest in its reference's pose, "
                 "SECONDS after the fall was detected (placed, not simulated; every fall is "
                 "still counted, and the report says when each was put back)")


def _play_settings(args):
    """``TrackingSettings`` of ``play``: ``--balance stepping`` gives a fully physical body the
    stepping balance controller (``playback.balance.STEPPING``); ``--recover`` puts a fallen
    body back on its feet."""
    from dataclasses import replace

    from .playback.track import balance_settings
    if args.balance == "stepping" and args.mode != "physical":
        args.parser.error("--balance stepping needs --mode physical")
    for opt in ("predict_budget", "predict_workers"):
        if getattr(args, opt, None) is not None and not args.predict:
            args.parser.error(f"--{opt.replace('_', '-')} is the --predict search's: it needs "
                              "--predict")
    if getattr(args, "predict", False) and args.balance != "stepping":
        args.parser.error("--predict chooses --balance stepping's gains: it needs --mode "
                          "physical --balance stepping")
    return replace(balance_settings(args.balance), recover_s=args.recover)


def _play_live(args) -> int:
    """``play DB.npz --input SCENE``: motion matching and the simulation in one loop."""
    from .io.bvh import write_bvh
    from .playback.live import run_live
    from .progress import Progress
    from .scene import load_environment

    if not args.input:
        raise PhysmocapError("playing a database needs an input scene: --input NAME (shipped: "
                             "straight_walk, stop_and_go, figure_eight, sharp_turns, run, "
                             "head_circle) or a file", args.motion)
    if args.loop is not None:
        raise PhysmocapError("--loop repeats a fixed motion's gait cycle; a live input runs "
                             "for its scene's duration (or --duration)", args.motion)
    # every file the run reads (a shipped scene is an input too)
    inputs = [args.motion, *_scene_files(args.input, "inputs"),
              *_scene_files(args.scene, "environments")]
    refuse_overwrite(inputs, [args.output, args.report, args.report_html])
    refuse_misnamed(output=(args.output, ".bvh"), report=(args.report, ".json"),
                    report_html=(args.report_html, ".html"))
    _need_plots(args)
    db, ctrl, scene_path, duration = _scene_controller(args.motion, args.input, args.duration)
    env = load_environment(args.scene) if args.scene else None
    settings, plan = _play_settings(args), None
    if args.predict:
        from .playback.predictive import run_predictive
        predict, checkpoint = _predict_checkpoint(args, inputs, duration, settings)
        with _dropped_if_unused(checkpoint):
            live, plan = run_predictive(ctrl, duration, settings=settings, predict=predict,
                                        environment=env, progress=Progress(not args.quiet),
                                        checkpoint=checkpoint)
        _print_resumed(args, plan, ctrl.dt)
    else:
        live = run_live(ctrl, duration, mode=args.mode, settings=settings,
                        progress=Progress(not args.quiet), environment=env)
    write_bvh(live.result.motion, args.output)
    rep = _with_plan(live.report(), plan)
    rep.update(database=str(args.motion), input=str(scene_path), output=str(args.output))
    # the controller's last frames are the reference's (its first placed the body)
    from .matching.coverage import run_coverage
    rep.update(run_coverage(db, ctrl.record, ctrl.dt, frames=rep["frames"]))
    _warn_coverage(rep)
    _write_play_reports(args, live.result, rep)
    if not args.quiet:
        print(f"{scene_path}: {rep['frames']} frames ({duration:g} s) motion-matched and "
              f"simulated, mode {args.mode}")
        print(f"  {_tracking_text(rep)}; root assist "
              f"{rep['root_assist_force_mean_n']:.0f} N mean, {rep['root_assist_force_max_n']:.0f} "
              f"max; penetration {rep['penetration_max_mm']:.1f} mm; falls: "
              f"{_falls_text(rep['falls'])}")
        _print_physical(rep)
        # where the reference slides its planted feet, a fully physical body cannot follow
        print(f"  the reference's feet in contact slide {rep['reference_foot_skate_mm']:.1f} "
              f"mm/frame (the database's clips: {rep['reference_foot_skate_mm_database']:.1f})")
        print(f"  {_fps_text(rep['frames_per_second'])} frames/s; latency "
              f"{rep['latency_ms']['median']:.1f} ms median, {rep['latency_ms']['p99']:.1f} ms "
              "p99 per frame")
        _print_predictive(rep)
        _print_holds(rep)
        _print_wrote(args)
    if plan is not None:
        checkpoint.remove()
    return 0


def _predict_key(files: list, what, settings, predict) -> str:
    """``job_key`` of a ``--predict`` run: what its result depends on (the program's version,
    the bytes of the ``files`` it reads, ``what`` else (a live run's duration; a fixed
    motion's loop and unit; the avatar's unit and head weight) and every setting)."""
    from . import __version__
    from .solver.checkpoint import job_key
    return job_key(__version__, what, repr(settings), repr(predict),
                   *(np.frombuffer(Path(f).read_bytes(), np.uint8) for f in files))


def _predict_checkpoint(args, files: list, what, settings) -> tuple:
    """``(PredictSettings, Checkpoint)`` of a ``--predict`` run writing ``args.output``: a
    stopped search goes on from its last decision stored in ``.OUT.bvh.partial`` (kept until
    the outputs are written), keyed by the bytes of the ``files`` it reads, ``what`` (the rest
    of the job: duration, loop, …) and the settings."""
    from dataclasses import replace

    from .playback.predictive import PredictSettings
    from .solver.checkpoint import Checkpoint, partial_folder
    predict = PredictSettings(workers=args.predict_workers or 1)
    if args.predict_budget is not None:
        predict = replace(predict, budget=args.predict_budget)
    # the workers change how soon, not what: a stopped search resumes with any number
    return predict, Checkpoint(partial_folder(args.output),
                               _predict_key(files, what, settings, replace(predict, workers=1)))


@contextmanager
def _dropped_if_unused(checkpoint):
    """A ``--predict`` job that fails or is stopped before its first decision is stored
    leaves no ``.OUT.partial`` behind (``Checkpoint.drop_if_unused``)."""
    try:
        yield
    except BaseException:
        checkpoint.drop_if_unused()
        raise


def _print_resumed(args, plan, dt: float) -> None:
    """Where a resumed ``--predict`` search went on from (``dt``: s per frame)."""
    from .solver.checkpoint import partial_folder
    if plan.resumed_at is not None and not args.quiet:
        print(f"resumed from {partial_folder(args.output)} at {plan.resumed_at * dt:.2f} s "
              "(the search cannot go back before it)")


def _with_plan(rep: dict, plan) -> dict:
    """A playback report with a ``--predict`` search's ``plan`` (if any) as ``predictive``:
    the run's speed is the search's, the committed steps alone are a small part of it."""
    if plan is not None:
        rep["predictive"] = dict(plan.report(),
                                 committed_frames_per_second=rep["frames_per_second"])
        rep["frames_per_second"] = rep["predictive"]["frames_per_second"]
    return rep


def _print_predictive(rep: dict) -> None:
    """The ``predictive`` section of a playback report, if any, in words."""
    pr = rep.get("predictive")
    if pr is None:
        return
    print(f"  predictive: the committed steps above; the search simulated "
          f"{pr['simulated_per_played']:.0f} frames per frame played in "
          f"{pr['search_seconds']:.0f} s (the committed steps alone "
          f"{pr['committed_frames_per_second']:.0f} frames/s"
          + ("; the latency above is theirs" if "latency_ms" in rep else "")
          + f"), {pr['decisions']} gain "
          f"switches, {pr['backtracks']} dead ends" + (
              "" if pr["complete"] else f"; incomplete: searched {pr['frames_planned']} "
              f"frames within its budget (--predict-budget {pr['budget']:g})"))


_AVATAR_RUN_OPTIONS = ("tracking", "truth", "report", "report_html", "head_weight", "physics",
                       "mode", "balance", "recover", "predict", "predict_budget",
                       "predict_workers")


def cmd_avatar(args) -> int:
    """``avatar extract CLIP -o TRACK.csv`` or ``avatar DB.npz --tracking TRACK.csv -o OUT.bvh``."""
    from .io.bvh import write_bvh
    from .io.tracking import read_tracking, write_tracking
    from .matching import avatar as av
    from .progress import Progress

    if args.inputs[0] == "extract":
        if len(args.inputs) != 2:
            args.parser.error("avatar extract takes one clip: avatar extract CLIP.bvh -o TRACK.csv")
        # an option of the avatar's run would be ignored here: say so rather than drop it
        for dest in _AVATAR_RUN_OPTIONS:
            if getattr(args, dest) != args.parser.get_default(dest):
                args.parser.error(f"--{dest.replace('_', '-')} is for 'avatar DB.npz --tracking "
                                  "TRACK.csv'; avatar extract writes the tracking file only")
        refuse_overwrite([args.inputs[1]], [args.output])
        refuse_misnamed(output=(args.output, ".csv"))
        motion = load_any(Path(args.inputs[1]), unit=args.unit)
        if not hasattr(motion, "skeleton"):
            raise PhysmocapError("extract needs skeletal motion (a BVH or clip), not markers",
                                 args.inputs[1])
        try:
            track = av.extract_track(motion)
        except PhysmocapError as exc:
            raise PhysmocapError(exc.reason, args.inputs[1]) from None
        names = [motion.skeleton.names[j] for j in av.find_tracked_joints(motion.skeleton)]
        write_tracking(track, args.output, comment=f"extracted from {args.inputs[1]} (joints "
                       f"{', '.join(names)}; {motion.fps:g} fps)")
        if not args.quiet:
            print(f"wrote {args.output}: {track.n_samples} samples ({track.duration:.2f} s) of "
                  f"head {names[0]}, hands {names[1]}, {names[2]}")
        return 0
    if len(args.inputs) != 1:
        args.parser.error("give one database: avatar DB.npz --tracking TRACK.csv -o OUT.bvh")
    if not args.tracking:
        args.parser.error("avatar DB.npz needs --tracking TRACK.csv")
    from .io.bvh import read_bvh
    from .matching.database import load_database

    settings = _play_settings(args)      # before the long run: --balance needs --mode physical
    if args.recover is not None and not args.physics:
        args.parser.error("--recover puts the simulated avatar back on its feet: add --physics")
    if args.predict and not args.physics:
        args.parser.error("--predict searches the simulated avatar's balance: add --physics "
                          "--mode physical --balance stepping")
    if args.mode != "assist" and not args.physics:
        args.parser.error(f"--mode {args.mode} is the simulated avatar's: add --physics")
    refuse_overwrite([args.inputs[0], args.tracking, args.truth],
                     [args.output, args.report, args.report_html])
    refuse_misnamed(output=(args.output, ".bvh"), report=(args.report, ".json"),
                    report_html=(args.report_html, ".html"))
    _need_plots(args)
    track = read_tracking(args.tracking)
    truth = read_bvh(args.truth, unit=args.unit) if args.truth else None
    db = load_database(args.inputs[0])
    if truth is not None:
        # a truth sharing no joint with the avatar, or too short, fails now, not after the run
        try:
            av.check_truth(db, truth)
        except PhysmocapError as exc:
            raise PhysmocapError(exc.reason, args.truth) from None
    feats = av.avatar_features(db, args.head_weight)
    avatar = av.Avatar(db, feats, track)
    motion, record = av.run_avatar(avatar, progress=Progress(not args.quiet))
    physics = plan = None
    if args.physics:
        # the avatar's motion on the simulated body: retargeted, its arms reaching the
        # controllers again, then tracked with gravity and ground contact, the arms bent every
        # frame for the simulated chest so the hands reach the controllers (``ArmReach``)
        from .playback.track import track_any
        from .scene import load_body
        body = load_body()
        on_body = av.avatar_on_body(motion, record, body.skeleton)
        hands = av.controllers_on_body(motion, record, body.skeleton)
        if args.predict:
            from .playback.predictive import track_predictive
            predict, checkpoint = _predict_checkpoint(
                args, [args.inputs[0], args.tracking], (args.unit, args.head_weight), settings)
            with _dropped_if_unused(checkpoint):
                physics, plan = track_predictive(on_body, body, settings=settings,
                                                 predict=predict,
                                                 progress=Progress(not args.quiet),
                                                 checkpoint=checkpoint, hand_targets=hands)
            _print_resumed(args, plan, 1.0 / motion.fps)
        else:
            physics = track_any(on_body, body, mode=args.mode, settings=settings,
                                progress=Progress(not args.quiet), hand_targets=hands)
        write_bvh(physics.motion, args.output)
    else:
        write_bvh(motion, args.output)
    try:
        rep = av.avatar_report(db, motion, record, truth)
    except PhysmocapError as exc:
        raise PhysmocapError(exc.reason, args.truth) from None
    rep.update(tracking=str(args.tracking), database=str(args.inputs[0]),
               output=str(args.output), truth=args.truth, head_weight=args.head_weight)
    from .matching.coverage import run_coverage
    # the speeds and turns the headset asked of motion matching (its controller steps once a
    # frame)
    rep.update(run_coverage(db, avatar.ctrl.record, 1.0 / db.fps))
    _warn_coverage(rep)
    if physics is not None:
        rep["physics"] = dict(_with_plan(physics.report(), plan), balance=args.balance)
        # the simulated avatar's page; the avatar's own figures folded in beside its physics
        _write_play_reports(args, physics, rep, page=lambda r: dict(
            r["physics"], input=str(args.tracking), database=str(args.inputs[0]),
            output=str(args.output), avatar={k: v for k, v in r.items() if k != "physics"}))
    else:
        def write_page(r):
            from .report.avatar_html import write_avatar_report
            write_avatar_report(db, motion, record, track, r, args.report_html, truth)
        _write_reports(args, rep, write_page)
    if not args.quiet:
        lat = rep["latency_ms"]
        print(f"{args.tracking}: {motion.n_frames} frames at {motion.fps:g} fps, "
              f"{rep['transitions']} transitions, latency {lat['median']:.2f} ms median, "
              f"{lat['p99']:.2f} ms p99 per frame")
        print(f"  hands {1000 * rep['hand_error_m']:.1f} mm from the controllers (reachable in "
              f"{100 * rep['hand_reachable_fraction']:.0f} % of frames)")
        if truth is not None:
            print(f"  against {args.truth}: joints {rep['mpjpe_m']:.3f} m, lower body "
                  f"{rep['lower_body_error_m']:.3f} m")
        print(f"  foot skate {rep['foot_skate_mm']:.2f} mm/frame, jitter {rep['jitter']:.0f} "
              f"m/s^3")
        if physics is not None:
            ph = rep["physics"]
            print(f"  simulated ({args.mode}): {_tracking_text(ph)}, root "
                  f"assist {ph['root_assist_force_mean_n']:.0f} N mean, penetration "
                  f"{ph['penetration_max_mm']:.1f} mm max, falls: {_falls_text(ph['falls'])}")
            _print_physical(ph)
            h = ph["hands"]
            if h["hand_error_reachable_m"] is not None:
                print(f"  simulated hands {1000 * h['hand_error_reachable_m']:.1f} mm from the "
                      f"controllers when reachable, {100 * h['within_tolerance_fraction']:.0f} % "
                      f"of those frames within {1000 * h['tolerance_m']:.0f} mm")
            _print_predictive(ph)
        _print_wrote(args)
    if plan is not None:
        checkpoint.remove()
    return 0


def cmd_batch(args) -> int:
    """Solve a capture library (every .c3d under a folder); resumable; local or on Dask."""
    from .batch import BatchSettings, format_summary, run_batch
    from .progress import Progress

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


def _finite(positive: bool):
    """An argparse type: a finite number > 0 (``positive``: seconds, frames per second) or
    >= 0. NaN, inf and 0 are usage errors, not a traceback from the loop they would size."""
    def parse(text: str) -> float:
        v = float(text)
        if bad_number(v, positive):
            raise argparse.ArgumentTypeError(f"must be a finite number "
                                             f"{'> 0' if positive else '>= 0'}, got {text}")
        return v
    return parse


_positive_float, _non_negative_float = _finite(True), _finite(False)


def _positive_int(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).splitlines())




# --- argument parsing -------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="physmocap", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Optical motion capture to clean skeletal motion.",
        epilog="examples:\n  " + "\n  ".join(EXAMPLES.values()))
    p.add_argument("--version", action="version", version=_version())
    _verbosity(p, False)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def add(name, func, help_):
        sp = sub.add_parser(name, help=help_, description=help_,
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="example:\n  " + EXAMPLES[name])
        sp.set_defaults(func=func)
        _verbosity(sp, argparse.SUPPRESS)
        return sp

    sp = add("inspect", cmd_inspect, "summarise a C3D, BVH or DeepMimic clip, or a motion-matching "
             "database (the speeds and turns its clips keep)")
    sp.add_argument("file")
    sp.set_defaults(parser=sp)
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--unit", help="BVH length unit (m, cm, mm, in, cmu); default: inferred")
    sp.add_argument("--up", help="file's up axis (x, y, z, -y…); default: y for BVH, "
                                 "detected for C3D")

    sp = add("convert", cmd_convert, "convert skeletal motion to a portable BVH")
    sp.add_argument("input", help="BVH or DeepMimic clip")
    sp.add_argument("output_pos", nargs="?", metavar="OUTPUT",
                    help="output BVH (or give it with -o, like every other command)")
    sp.add_argument("-o", "--output", help="output BVH")
    # --unit / --up name the INPUT's unit and axis, as in every other command
    sp.add_argument("--unit", "--in-unit", dest="in_unit",
                    help="input BVH length unit; default: inferred")
    sp.add_argument("--up", "--in-up", dest="in_up", help="input up axis; default: y")
    sp.add_argument("--out-unit", default="cm", help="output unit (default cm)")
    sp.add_argument("--out-up", default="y", help="output up axis (default y)")
    sp.add_argument("--order", default="ZXY", help="output rotation order (default ZXY)")
    sp.set_defaults(parser=sp)

    sp = add("solve", cmd_solve, "solve a C3D capture with the physical marker solver")
    sp.add_argument("capture", help="motion trial (.c3d)")
    sp.add_argument("-o", "--output", required=True, help="output BVH")
    sp.add_argument("--static", help="static calibration trial of the same subject (.c3d)")
    sp.add_argument("--markerset", default="auto", help="auto (default), a shipped name "
                    "(cmu41, plugin_gait_fullbody) or a marker-set file")
    sp.add_argument("--body", default="humanoid", help="body template name or file")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--c3d-out", help="cleaned C3D: gap-filled markers + solved joint centres")
    sp.add_argument("--up", help="capture's up axis if detection should be overridden")
    sp.add_argument("--scene", help="environment with hand holds (shipped name or TOML/JSON file)")
    sp.add_argument("--report-html", help="HTML report with plots (needs the 'report' extra)")

    sp = add("report", cmd_report, "HTML solve report(s) from solve's JSON report, BVH and C3D")
    sp.add_argument("reports", nargs="+", help="JSON report(s) written by 'physmocap solve'")
    sp.add_argument("-o", "--output", help="HTML page (default: the report's name with .html)")
    sp.add_argument("--bvh", help="solved BVH (default: the report's 'output')")
    sp.add_argument("--c3d", help="capture (default: the report's 'source')")

    sp = add("view", cmd_view, "write a self-contained HTML page that plays a motion in 3D")
    sp.add_argument("motion", help="BVH or DeepMimic clip")
    sp.add_argument("--markers", help="C3D capture to draw with the skeleton")
    sp.add_argument("-o", "--output", required=True, help="HTML page")
    sp.add_argument("--unit", help="BVH length unit (default: inferred)")

    sp = add("render", cmd_render, "render a motion to a GIF or MP4 (offline, matplotlib)")
    sp.add_argument("motion", help="BVH or DeepMimic clip")
    sp.add_argument("--markers", help="C3D capture to draw with the skeleton")
    sp.add_argument("-o", "--output", required=True, help="output .gif or .mp4 (needs ffmpeg)")
    sp.add_argument("--fps", type=_positive_float, default=30.0,
                    help="frames per second (default 30)")
    sp.add_argument("--unit", help="BVH length unit (default: inferred)")

    sp = add("play", cmd_play, "physical playback: the simulated body follows a motion, or a "
             "motion-matching database driven live by an input scene")
    sp.add_argument("motion", help="BVH or DeepMimic clip (retargeted to the humanoid body), or "
                    "a motion-matching database DB.npz with --input")
    sp.add_argument("--input", help="input scene for a database (shipped name or TOML file)")
    sp.add_argument("--duration", type=_positive_float,
                    help="seconds (default: the scene's [run] duration)")
    sp.add_argument("--physics", action="store_true",
                    help="accepted for symmetry with 'avatar --physics': play always simulates")
    sp.add_argument("-o", "--output", required=True, help="simulated motion (BVH)")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--report-html", help="HTML report with plots: paths, tracking, root "
                    "assist, feet, key frames (needs the 'report' extra)")
    sp.add_argument("--mode", choices=("assist", "physical"), default="assist",
                    help="assist: bounded root force and torque; physical: none (may fall)")
    sp.add_argument("--balance", choices=("none", "stepping"), default="none",
                    help="with --mode physical: stepping = balance feedback that keeps a walk "
                    "up (foot placement, leg IK, compliant joints); none = PD tracking only")
    _predict_arguments(sp, "with --mode physical --balance stepping")
    sp.add_argument("--scene", help="scene objects and hand holds (shipped environment name "
                    "or TOML/JSON file, as 'solve --scene')")
    sp.add_argument("--loop", type=float, metavar="SECONDS",
                    help="a walk played longer than captured: its most closed gait cycle "
                    "(0.8-2 s), its seam spread over it, repeated until it lasts SECONDS")
    sp.add_argument("--recover", type=_non_negative_float, metavar="SECONDS", help=_RECOVER_HELP)
    sp.set_defaults(parser=sp)
    sp.add_argument("--unit", help="BVH length unit (default: inferred)")

    sp = add("batch", cmd_batch, "solve every capture in a folder (resumable; local or Dask)")
    sp.epilog = ("static trials: a file whose name has the word static, calibration, calib or cal "
                 "(words split at\n  non-alphanumerics and letter/digit changes) is a static "
                 "trial. A motion trial uses the static\n  trial in its folder with the same "
                 "other words (ignoring motion/dynamic/trial), else the\n  folder's only static "
                 "trial, else none. A physmocap_batch.toml in INPUT overrides this:\n"
                 "    exclude = [\"odd/*.c3d\"]\n    [static]\n"
                 "    \"s1/walk.c3d\" = \"s1/tpose.c3d\"   # \"\" = no static trial\n"
                 "resume: takes whose outputs are complete and up to date (done-stamp: input "
                 "hash, settings)\n  are skipped; so are takes that failed on the same input "
                 "(--force retries).\n" + sp.epilog)
    sp.add_argument("input", help="folder searched recursively for .c3d captures")
    sp.add_argument("-o", "--output", required=True, help="output folder (mirrors the input tree)")
    sp.add_argument("--workers", type=_positive_int, help="local worker processes (default: "
                    "CPU count)")
    sp.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler (tcp://host:8786); "
                    "workers must see the same paths; needs the 'cluster' extra")
    sp.add_argument("--manifest", help="static-trial manifest (default: INPUT/physmocap_batch"
                    ".toml if present)")
    sp.add_argument("--force", action="store_true", help="solve every take again")
    sp.add_argument("--markerset", default="auto", help="as for solve (default auto)")
    sp.add_argument("--body", default="humanoid", help="body template name or file")
    sp.add_argument("--up", help="captures' up axis if detection should be overridden")
    sp.add_argument("--c3d-out", action="store_true", help="also write TAKE.clean.c3d")
    sp = add("avatar", cmd_avatar, "three-point avatar: a full body from a head-mounted display "
             "and two hand controllers (motion matching + arm IK)")
    sp.add_argument("inputs", nargs="+", metavar="DB.npz | extract CLIP.bvh",
                    help="a database from 'physmocap mm build', or 'extract' and a clip whose "
                         "head and wrists become a tracking file")
    sp.add_argument("-o", "--output", required=True, help="output BVH (avatar) or CSV (extract)")
    sp.add_argument("--tracking", help="three-point tracking CSV (schema: scenes/README.md)")
    sp.add_argument("--truth", help="the clip the tracking came from: report errors against it")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--report-html", help="HTML report with plots: paths, errors against the "
                    "truth, hands to controllers, latency, clips, feet; with --physics play's "
                    "report of the simulated avatar (needs the 'report' extra)")
    sp.add_argument("--head-weight", type=_non_negative_float, default=0.0,
                    help="weight of the character-frame head-velocity feature in the search "
                         "(default 0: the head's and hands' features in the head's frame do "
                         "its work)")
    sp.add_argument("--unit", help="BVH length unit of the clip/truth (default: inferred)")
    sp.add_argument("--physics", action="store_true",
                    help="track the avatar with the simulated body; the output is the simulation "
                         "and the report gains a 'physics' section")
    sp.add_argument("--mode", choices=("assist", "physical"), default="assist",
                    help="with --physics: root assist or fully physical (see play)")
    sp.add_argument("--balance", choices=("none", "stepping"), default="none",
                    help="with --physics --mode physical: balance feedback (see play)")
    sp.add_argument("--recover", type=_non_negative_float, metavar="SECONDS",
                    help="with --physics: " + _RECOVER_HELP)
    _predict_arguments(sp, "with --physics --mode physical --balance stepping")
    sp.usage = ("physmocap avatar DB.npz --tracking TRACK.csv -o OUT.bvh [--truth CLIP.bvh] "
                "[--report R.json]\n       physmocap avatar extract CLIP.bvh -o TRACK.csv")
    sp.set_defaults(parser=sp)

    mm = sub.add_parser("mm", help="motion matching: build a database, run a controller",
                        description="motion matching: build a database, run a controller",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="examples:\n  " + EXAMPLES["mm build"] + "\n  "
                        + EXAMPLES["mm run"])
    _verbosity(mm, argparse.SUPPRESS)
    mm_sub = mm.add_subparsers(dest="mm_command", metavar="SUBCOMMAND", required=True)

    def add_mm(name, func, help_):
        sp = mm_sub.add_parser(name, help=help_, description=help_,
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog="example:\n  " + EXAMPLES["mm " + name])
        sp.set_defaults(func=func)
        _verbosity(sp, argparse.SUPPRESS)
        return sp

    sp = add_mm("build", cmd_mm_build, "build a pose database from BVH clips")
    sp.add_argument("clips", nargs="+", help="BVH files or folders of them")
    sp.add_argument("-o", "--output", required=True, help="database file (.npz)")
    sp.add_argument("--fps", type=float, default=60.0, help="database rate (default 60)")
    sp.add_argument("--mirror", action="store_true", help="add mirrored copies of every clip")
    sp.add_argument("--unit", help="BVH length unit (default: inferred per file)")
    sp.add_argument("--stand", metavar="CLIP.bvh[:FRAME]",
                    help="add a standing clip: frame FRAME (default 0) of CLIP held still 3 s, "
                         "for clips that never stand (without one the character cannot stop: "
                         "it walks in place, its feet sliding)")

    sp = add_mm("run", cmd_mm_run, "drive a character with an input scene")
    sp.add_argument("database", help="database from 'physmocap mm build'")
    sp.add_argument("--input", required=True,
                    help="input scene: a shipped name (figure_eight, straight_walk, …) or a file")
    sp.add_argument("-o", "--output", required=True, help="output BVH")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--duration", type=_positive_float,
                    help="seconds (default: the scene's [run])")
    sp.add_argument("--search-every", type=_positive_int, default=10,
                    help="frames between searches")
    sp.add_argument("--report-html", help="HTML report with plots: paths, speed and facing, "
                    "the clips played, the feet (needs the 'report' extra)")
    sp.add_argument("--no-foot-lock", action="store_true",
                    help="skip foot locking (two-bone IK pins feet in contact)")

    sp = add("demo", cmd_demo, "run the main job on a clip that pybullet_data ships")
    sp.add_argument("-o", "--output", default="out/demo", help="output folder (default out/demo)")
    sp.add_argument("--clip", default="humanoid3d_walk.txt", help="pybullet_data motion clip")
    return p


def _verbosity(parser, default) -> None:
    """-q/-v, accepted before and after the command; a command's own flags default to SUPPRESS
    so that they do not reset a global ``physmocap -q CMD``."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", default=default,
                   help="print nothing on success (errors and warnings still go to stderr)")
    g.add_argument("-v", "--verbose", action="store_true", default=default,
                   help="say more (inferred units, each finished take…)")


def _version() -> str:
    from . import __version__
    return f"physmocap {__version__}"


_AXIS_OPTIONS = ("--up", "--in-up", "--out-up")


def _negative_axes(argv: list[str]) -> list[str]:
    """``--up -z`` as ``--up=-z``: argparse takes a value starting with '-' for an option and
    would say only "expected one argument" for an axis the help lists."""
    out = []
    for tok in argv:
        if out and out[-1] in _AXIS_OPTIONS and tok.lower() in ("-x", "-y", "-z"):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_negative_axes(sys.argv[1:] if argv is None else list(argv)))
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="physmocap: %(message)s")
    # Warnings (an inferred unit, a detected up axis) as one line each, no source echo.
    warnings.showwarning = lambda msg, *a, **k: print(f"physmocap: warning: {msg}",
                                                      file=sys.stderr)
    # SIGTERM (a batch system, `kill`) unwinds like Ctrl-C, so atomic writers remove their
    # temporary files and leave the old output in place; the default action would not.
    import signal
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread (main() called from a worker): leave it alone
        previous = None
    try:
        return args.func(args)
    except PhysmocapError as exc:
        print(f"physmocap: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except OSError as exc:      # a file the library did not open itself (permissions, disk full)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"physmocap: error: {where}{exc.strerror or _one_line(exc)}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # numpy says how much it asked for: a --duration of 1e9 s
        print(f"physmocap: error: not enough memory ({_one_line(exc) or 'MemoryError'}); ask "
              "for less (a shorter --duration, a smaller input)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("physmocap: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print("physmocap: terminated", file=sys.stderr)
        return 143
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class _Terminated(BaseException):
    """SIGTERM, raised where the main thread is, so ``finally`` blocks run."""


def _terminate(signum, frame):
    raise _Terminated()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
