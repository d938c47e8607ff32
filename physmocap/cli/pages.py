"""``report``, ``view`` and ``render``: pages and pictures of solved motion."""
from __future__ import annotations

from pathlib import Path

from ..errors import PhysmocapError
from .common import load_any, refuse_misnamed, refuse_overwrite


def cmd_report(args) -> int:
    """HTML solve reports rebuilt from what ``solve`` wrote (JSON report + the BVH and C3D)."""
    from ..report.solve_html import write_solve_report
    from ..report.trace import solve_files, trace_from_files

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
    from ..io.c3d import read_c3d
    if Path(path).suffix.lower() != ".c3d":
        raise PhysmocapError("--markers takes a C3D capture (.c3d)", path)
    return read_c3d(path)


def cmd_view(args) -> int:
    from ..report.viewer import write_viewer

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
    from ..progress import Progress
    from ..report.render import output_fps, render_motion

    refuse_overwrite([args.motion, args.markers], [args.output])
    motion = _load_motion(args.motion, args.unit)
    markers = _load_markers(args.markers)
    n = render_motion(motion, args.output, markers, fps=args.fps,
                      progress=Progress(not args.quiet))
    if not args.quiet:
        print(f"wrote {args.output} ({n} frames at "
              f"{output_fps(args.output, args.fps, motion.fps):.4g} fps)")
    return 0
