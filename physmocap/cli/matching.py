"""``mm build`` and ``mm run``: a motion-matching database, and a character driven by an
input scene."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import PhysmocapError, SettingsError, bad_number
from .common import (_maybe, _need_plots, _scene_files, _warn_coverage, _write_reports,
                     refuse_misnamed, refuse_overwrite)


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
    from ..io.bvh import read_bvh
    from ..matching.database import build_database, save_database, standing_clip
    from ..progress import Progress

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
        from ..matching.coverage import COVER_S, covered_ranges, ranges_text
        print(f"  speeds its clips keep for {COVER_S:g} s: {ranges_text(covered_ranges(db))} "
              "(a run asking for others slides its feet, and says so)")
    return 0


def _scene_controller(database, input_scene, duration, settings=None):
    """``(db, controller, scene path, duration s)`` for ``mm run`` and ``play DB.npz``: the
    database, an input scene (a path or a shipped name) and its ``[run] duration`` unless given."""
    from ..matching.controller import Controller, ControllerSettings
    from ..matching.database import load_database
    from ..matching.features import compute_features
    from ..matching.trajectory import load_input
    from ..scene import _read, _resolve

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

    from ..io.bvh import write_bvh
    from ..matching.controller import ControllerSettings, run_controller
    from ..matching.metrics import run_report
    from ..progress import Progress

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
        from ..matching.footlock import lock_feet
        motion = lock_feet(motion, tuple(db.contact_joints), np.array(record.contacts))
    write_bvh(motion, args.output)
    rep = run_report(db, motion, record, source)
    rep.update(input=str(scene_path), database=str(args.database), output=str(args.output),
               update_ms=round(1000 * seconds / max(motion.n_frames, 1), 3),
               foot_lock=not args.no_foot_lock)
    _warn_coverage(rep)

    def write_page(r):
        from ..report.mm_html import write_mm_report
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
