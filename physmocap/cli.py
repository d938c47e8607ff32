"""The ``physmocap`` command. Nothing imports this module.

Exit codes: 0 success, 1 bad input (one line on stderr, no traceback), 2 usage error.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .errors import PhysmocapError

EXAMPLES = {
    "inspect": "physmocap inspect capture.c3d\n  physmocap inspect walk.bvh --json",
    "convert": "physmocap convert walk.bvh out.bvh --unit cm\n"
               "  physmocap convert humanoid3d_walk.txt walk.bvh",
    "demo": "physmocap demo -o out/demo",
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

    obj = load_any(Path(args.input), unit=args.in_unit, up=args.in_up)
    if not hasattr(obj, "skeleton"):
        raise PhysmocapError("convert writes skeletal motion; a C3D holds markers (the solver "
                             "turns markers into motion)", args.input)
    write_bvh(obj, args.output, unit=args.unit, up=args.up, order=args.order)
    if not args.quiet:
        print(f"wrote {args.output} ({obj.n_frames} frames, {len(obj.skeleton)} joints, "
              f"{args.unit}, {args.up}-up, {args.order})")
    return 0


def cmd_demo(args) -> int:
    """Round-trip a real clip that pybullet_data ships, through our BVH writer and reader."""
    from .io.bvh import read_bvh, write_bvh
    from .io.deepmimic import pybullet_motion_path, read_deepmimic

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    src = pybullet_motion_path(args.clip)
    motion = read_deepmimic(src)
    bvh_path = out / (src.stem + ".bvh")
    write_bvh(motion, bvh_path)
    back = read_bvh(bvh_path, unit="cm")
    # The file lists joints depth first, so compare joint by name, not by index.
    idx = [back.skeleton.index(n) for n in motion.skeleton.names]
    err = float(np.abs(back.gpos[:, idx] - motion.gpos).max())
    summary = summarize_motion(back)
    summary.update(source=str(src), round_trip_max_error_m=err,
                   seconds=round(time.perf_counter() - t0, 3))
    from .io.atomic import atomic_write_text
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    if not args.quiet:
        print(f"source     {src}")
        _print_summary(summary)
        print(f"round trip max joint error {err:.2e} m (BVH written, read back)")
        print(f"result     {bvh_path}  and  {out / 'summary.json'}")
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
    try:
        return args.func(args)
    except PhysmocapError as exc:
        print(f"physmocap: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("physmocap: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
