"""Pictures of results: the HTML solve, motion-matching and playback reports, the HTML viewer and
offline rendering.

matplotlib (the optional ``report`` extra) is imported lazily, only when a figure is drawn.
"""
from .trace import SolveTrace, trace_from_files, trace_from_result
from .viewer import viewer_html, write_viewer

__all__ = ["SolveTrace", "trace_from_result", "trace_from_files", "viewer_html", "write_viewer",
           "solve_report_html", "write_solve_report", "render_motion"]


def __getattr__(name):
    # The plotting modules import matplotlib lazily anyway; this keeps `import physmocap.report`
    # light and free of the optional dependency.
    if name in ("solve_report_html", "write_solve_report"):
        from . import solve_html
        return getattr(solve_html, name)
    if name == "render_motion":
        from .render import render_motion
        return render_motion
    raise AttributeError(name)
