"""The ``physmocap`` command. Nothing imports this module.

Exit codes: 0 success, 1 bad input (one line on stderr, no traceback), 2 usage error.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from .errors import PhysmocapError

EXAMPLES = {
    "solve": "physmocap solve walk.c3d -o walk.bvh --report walk.json\n"
             "  physmocap solve walk.c3d -o walk.bvh --static static.c3d --markerset cmu41 "
             "--c3d-out clean.c3d",
    "inspect": "physmocap inspect capture.c3d\n  physmocap inspect walk.bvh --json",
    "convert": "physmocap convert walk.bvh out.bvh --unit cm\n"
               "  physmocap convert humanoid3d_walk.txt walk.bvh",
    "demo": "physmocap demo -o out/demo",
    "play": "physmocap play walk.bvh -o simulated.bvh --report play.json --mode assist",
    "mm build": "physmocap mm build ../shared/data/bvh/bandai-namco/ds2_normal_locomotion -o db.npz",
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
                         f"and DeepMimic .txt clips", path)


def refuse_overwrite(inputs, outputs) -> None:
    """Inputs are never modified: an output path naming an input file is an error."""
    ins = [Path(p) for p in inputs if p is not None and Path(p).is_file()]
    for out in (Path(o) for o in outputs if o is not None):
        if out.exists() and any(os.path.samefile(out, i) for i in ins):
            raise PhysmocapError("output would overwrite an input file; choose another name", out)


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
    if s["kind"] == "motion":
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
    obj = load_any(Path(args.file), unit=args.unit, up=args.up)
    s = summarize_motion(obj) if hasattr(obj, "skeleton") else summarize_markers(obj)
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        _print_summary(s)
    return 0


def cmd_convert(args) -> int:
    from .io.bvh import write_bvh

    refuse_overwrite([args.input], [args.output])
    obj = load_any(Path(args.input), unit=args.in_unit, up=args.in_up)
    if not hasattr(obj, "skeleton"):
        raise PhysmocapError("convert writes skeletal motion; a C3D holds markers (the solver "
                             "turns markers into motion)", args.input)
    write_bvh(obj, args.output, unit=args.unit, up=args.up, order=args.order)
    if not args.quiet:
        print(f"wrote {args.output} ({obj.n_frames} frames, {len(obj.skeleton)} joints, "
              f"{args.unit}, {args.up}-up, {args.order})")
    return 0


def _load_capture(path, up):
    from .io.c3d import read_c3d
    if Path(path).suffix.lower() != ".c3d":
        raise PhysmocapError("the solver reads C3D captures (.c3d)", path)
    return read_c3d(path, up=up)


def solve_and_write(markers, output: Path, markerset: str = "auto", body_name: str = "humanoid",
                    static=None, report_path: Path | None = None, c3d_out: Path | None = None,
                    quiet: bool = False, scene: str | None = None) -> dict:
    """Solve ``markers`` and write BVH (+ report, cleaned C3D); returns the report."""
    from .io.bvh import write_bvh
    from .io.c3d import write_c3d
    from .io.atomic import atomic_write_text
    from .progress import Progress
    from .scene import load_body, load_environment, load_markerset, pick_markerset
    from .solver.pipeline import cleaned_markers, solve_capture

    body = load_body(body_name)
    try:
        spec = pick_markerset(markers.labels) if markerset == "auto" else load_markerset(markerset)
    except PhysmocapError as exc:   # name the capture: "physmocap: error: FILE: …"
        if exc.path is not None:
            raise
        raise type(exc)(exc.reason, markers.meta.get("path") or "<capture>") from None
    env = load_environment(scene) if scene else None
    result = solve_capture(markers, spec, body, static=static, environment=env,
                           progress=Progress(not quiet))
    write_bvh(result.motion, output)
    report = dict(result.report)
    report.update(markerset=spec.name, body=body.name, output=str(output),
                  static=static.meta.get("path") if static is not None else None)
    if c3d_out is not None:
        write_c3d(cleaned_markers(result, markers.fps, markers.subject), c3d_out)
        report["c3d_out"] = str(c3d_out)
    if report_path is not None:
        atomic_write_text(report_path, json.dumps(report, indent=2) + "\n")
    return report


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
    if rep["joint_limit_hits"]:
        print("  frames outside template joint ranges: " + ", ".join(f"{k} {v} fr" for k, v in
                                                 rep["joint_limit_hits"].items()))
    print(f"  solved in {rep['solve_seconds']:.1f} s (physical {rep['frames_per_second']:.0f} "
          f"frames/s)")
    print(f"  wrote {rep['output']}" + (f", {rep['c3d_out']}" if rep.get("c3d_out") else ""))


def cmd_solve(args) -> int:
    refuse_overwrite([args.capture, args.static], [args.output, args.report, args.c3d_out])
    markers = _load_capture(args.capture, args.up)
    static = _load_capture(args.static, args.up) if args.static else None
    rep = solve_and_write(markers, Path(args.output), args.markerset, args.body, static,
                          Path(args.report) if args.report else None,
                          Path(args.c3d_out) if args.c3d_out else None, args.quiet, args.scene)
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
    rep = solve_and_write(markers, out / "solved.bvh", "auto", "humanoid", None,
                          out / "report.json", out / "clean.c3d", args.quiet)
    from .io.bvh import read_bvh
    solved = read_bvh(out / "solved.bvh", unit="cm")
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


def cmd_mm_build(args) -> int:
    from .io.bvh import read_bvh
    from .matching.database import build_database, save_database
    from .progress import Progress

    files = _bvh_files(args.clips)
    refuse_overwrite(files, [args.output])
    prog = Progress(not args.quiet)
    motions = []
    for i, f in enumerate(files):
        motions.append(read_bvh(f, unit=args.unit))
        prog("read", i + 1, len(files))
    db = build_database(motions, names=[f.stem for f in files], fps=args.fps, mirror=args.mirror)
    save_database(db, args.output)
    if not args.quiet:
        print(f"wrote {args.output}: {db.n_frames} frames ({db.n_frames / db.fps:.0f} s at "
              f"{db.fps:g} fps) from {len(files)} clips{' + mirrors' if args.mirror else ''}, "
              f"{len(db.names) - 1} joints, tags: {', '.join(sorted(db.tags)) or 'none'}")
    return 0


def cmd_mm_run(args) -> int:
    import time as _time

    from .io.atomic import atomic_write_text
    from .io.bvh import write_bvh
    from .matching.controller import Controller, ControllerSettings, run_controller
    from .matching.database import load_database
    from .matching.features import compute_features
    from .matching.metrics import run_report
    from .matching.trajectory import load_input
    from .progress import Progress
    from .scene import _read

    from .scene import _resolve
    refuse_overwrite([args.database], [args.output, args.report])
    db = load_database(args.database)
    feats = compute_features(db)
    scene_path = _resolve(args.input, "inputs", "input scene")    # a path or a shipped name
    source = load_input(scene_path)
    duration = args.duration or float(_read(scene_path).get("run", {}).get("duration", 10.0))
    ctrl = Controller(db, feats, source, ControllerSettings(search_every=args.search_every))
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
    if args.report:
        atomic_write_text(args.report, json.dumps(rep, indent=2) + "\n")
    if not args.quiet:
        print(f"{scene_path}: {motion.n_frames} frames ({duration:g} s), {rep['transitions']} "
              f"transitions, {rep['update_ms']:.2f} ms per frame (search {rep['search_us']} us)")
        print(f"  root to intended path {rep['trajectory_error_m']:.3f} m mean after 1 s "
              f"(max {rep['trajectory_error_max_m']:.3f}); facing error "
              f"{rep['facing_error_deg']:.1f} deg outside sharp turns")
        print(f"  foot skate {rep['foot_skate_mm']:.2f} mm/frame (database clips "
              f"{rep['foot_skate_mm_database']:.2f}); jitter {rep['jitter']:.1f} m/s^3 "
              f"(database {rep['jitter_database']:.1f})")
        print(f"  wrote {args.output}" + (f", {args.report}" if args.report else ""))
    return 0


def cmd_play(args) -> int:
    """Physical playback of a fixed motion (BVH or DeepMimic clip) on the simulated body."""
    from .io.atomic import atomic_write_text
    from .io.bvh import write_bvh
    from .matching.retarget import retarget
    from .playback.track import track
    from .progress import Progress
    from .scene import load_body

    if Path(args.motion).suffix.lower() == ".npz":
        raise PhysmocapError("playing a motion-matching database live is not built yet; run "
                             "'physmocap mm run' and play its BVH", args.motion)
    refuse_overwrite([args.motion], [args.output, args.report])
    motion = load_any(Path(args.motion), unit=args.unit)
    if not hasattr(motion, "skeleton"):
        raise PhysmocapError("play needs skeletal motion (a BVH or clip), not markers",
                             args.motion)
    body = load_body()
    if motion.skeleton.names != body.skeleton.names:
        motion = retarget(motion, body.skeleton)
    result = track(motion, body, mode=args.mode, progress=Progress(not args.quiet))
    write_bvh(result.motion, args.output)
    rep = result.report()
    rep.update(source=str(args.motion), output=str(args.output))
    if args.report:
        atomic_write_text(args.report, json.dumps(rep, indent=2, default=float) + "\n")
    if not args.quiet:
        print(f"{args.motion}: {rep.get('frames', motion.n_frames)} frames, mode {args.mode}")
        print(f"  tracking error {rep['tracking_error_m']:.3f} m; root assist "
              f"{rep['root_assist_force_mean_n']:.0f} N mean, {rep['root_assist_force_max_n']:.0f} "
              f"max; penetration {rep['penetration_max_mm']:.1f} mm; falls: "
              f"{len(rep['falls'])}; {rep['frames_per_second']:.0f} frames/s")
        print(f"  wrote {args.output}" + (f", {args.report}" if args.report else ""))
    return 0


# --- argument parsing -------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="physmocap", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Optical motion capture to clean skeletal motion.",
        epilog="examples:\n  " + "\n  ".join(EXAMPLES.values()))
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def add(name, func, help_):
        sp = sub.add_parser(name, help=help_, description=help_,
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="example:\n  " + EXAMPLES[name])
        sp.set_defaults(func=func)
        sp.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
        sp.add_argument("-v", "--verbose", action="store_true", help="say more (inferred units…)")
        return sp

    sp = add("inspect", cmd_inspect, "summarise a C3D, BVH or DeepMimic clip")
    sp.add_argument("file")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--unit", help="BVH length unit (m, cm, mm, in, cmu); default: inferred")
    sp.add_argument("--up", help="file's up axis (x, y, z, -y…); default: y for BVH, "
                                 "detected for C3D")

    sp = add("convert", cmd_convert, "convert skeletal motion to a portable BVH")
    sp.add_argument("input")
    sp.add_argument("output")
    sp.add_argument("--in-unit", help="input BVH unit; default: inferred")
    sp.add_argument("--in-up", help="input up axis; default: y")
    sp.add_argument("--unit", default="cm", help="output unit (default cm)")
    sp.add_argument("--up", default="y", help="output up axis (default y)")
    sp.add_argument("--order", default="ZXY", help="output rotation order (default ZXY)")

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

    sp = add("play", cmd_play, "physical playback: the simulated body follows a motion")
    sp.add_argument("motion", help="BVH or DeepMimic clip (retargeted to the humanoid body)")
    sp.add_argument("-o", "--output", required=True, help="simulated motion (BVH)")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--mode", choices=("assist", "physical"), default="assist",
                    help="assist: bounded root force and torque; physical: none (may fall)")
    sp.add_argument("--unit", help="BVH length unit (default: inferred)")

    mm = sub.add_parser("mm", help="motion matching: build a database, run a controller",
                        description="motion matching: build a database, run a controller")
    mm_sub = mm.add_subparsers(dest="mm_command", metavar="SUBCOMMAND", required=True)

    def add_mm(name, func, help_):
        sp = mm_sub.add_parser(name, help=help_, description=help_,
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog="example:\n  " + EXAMPLES["mm " + name])
        sp.set_defaults(func=func)
        sp.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
        sp.add_argument("-v", "--verbose", action="store_true", help="say more")
        return sp

    sp = add_mm("build", cmd_mm_build, "build a pose database from BVH clips")
    sp.add_argument("clips", nargs="+", help="BVH files or folders of them")
    sp.add_argument("-o", "--output", required=True, help="database file (.npz)")
    sp.add_argument("--fps", type=float, default=60.0, help="database rate (default 60)")
    sp.add_argument("--mirror", action="store_true", help="add mirrored copies of every clip")
    sp.add_argument("--unit", help="BVH length unit (default: inferred per file)")

    sp = add_mm("run", cmd_mm_run, "drive a character with an input scene")
    sp.add_argument("database", help="database from 'physmocap mm build'")
    sp.add_argument("--input", required=True,
                    help="input scene: a shipped name (figure_eight, straight_walk, …) or a file")
    sp.add_argument("-o", "--output", required=True, help="output BVH")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--duration", type=float, help="seconds (default: the scene's [run])")
    sp.add_argument("--search-every", type=int, default=10, help="frames between searches")
    sp.add_argument("--no-foot-lock", action="store_true",
                    help="skip foot locking (two-bone IK pins feet in contact)")

    sp = add("demo", cmd_demo, "run the main job on a clip that pybullet_data ships")
    sp.add_argument("-o", "--output", default="out/demo", help="output folder (default out/demo)")
    sp.add_argument("--clip", default="humanoid3d_walk.txt", help="pybullet_data motion clip")
    return p


def _version() -> str:
    from . import __version__
    return f"physmocap {__version__}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
        print(f"physmocap: error: {exc}", file=sys.stderr)
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
