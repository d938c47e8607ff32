"""``inspect`` and ``convert``: what a file holds, and a portable BVH of it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import PhysmocapError
from .common import load_any, refuse_misnamed, refuse_overwrite


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
    from ..matching.coverage import covered_ranges, fastest_kept_turn
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
        # (read markers only: the file's virtual points are counted by the reader; counted
        # here they were always 0)
        "markers": int(np.sum(~t.is_virtual)),
        "virtual_points": int(t.meta.get("n_virtual", np.sum(t.is_virtual))),
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
        from ..matching.coverage import ranges_text
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


def cmd_inspect(args) -> int:
    if Path(args.file).suffix.lower() == ".npz":
        from ..matching.database import load_database
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
    from ..io.bvh import write_bvh

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
