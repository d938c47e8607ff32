"""What the commands share: reading any supported file, refusing outputs that would
overwrite an input or be misnamed, the reports' writing and argparse's number types."""
from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path

from ..errors import PhysmocapError, bad_number


def load_any(path: Path, unit: str | None = None, up: str | None = None):
    """Read a BVH, C3D or DeepMimic clip; returns a ``Motion`` or ``MarkerTrajectories``."""
    suffix = path.suffix.lower()
    if suffix == ".bvh":
        from ..io.bvh import read_bvh
        return read_bvh(path, unit=unit, up=up or "y")
    if suffix == ".c3d":
        from ..io.c3d import read_c3d
        return read_c3d(path, up=up)
    if suffix in (".txt", ".json"):
        from ..io.deepmimic import read_deepmimic
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
    """Inputs are never modified: an output path naming an input file is an error. So is an
    output that could not be written (a missing or read-only folder): said now, not after
    the minutes of work that would have filled it."""
    from ..io.atomic import check_writable
    ins = [Path(p) for p in inputs if p is not None and Path(p).is_file()]
    for out in (Path(o) for o in outputs if o is not None):
        if out.exists() and any(os.path.samefile(out, i) for i in ins):
            raise PhysmocapError("output would overwrite an input file; choose another name", out)
        check_writable(out)


def _scene_files(name, kind: str) -> list:
    """The files a shipped scene name (or a path) of ``kind`` (``inputs``, ``environments``,
    ``markersets``, ``bodies``) reads, for ``refuse_overwrite``: a shipped scene is an input
    too, and so is the recording a head input scene names (``trajectory.input_files``). Empty
    where the name does not resolve (that error comes where the scene is loaded)."""
    from ..matching.trajectory import input_files
    from ..scene import _resolve
    if name is None:
        return []
    try:
        path = _resolve(name, kind, kind)
    except PhysmocapError:
        return []
    return input_files(path) if kind == "inputs" else [path]


def _has_plots() -> bool:
    """Whether matplotlib (the 'report' extra) is installed."""
    import importlib.util
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):      # a stub in sys.modules (None) or a broken install
        return False


def _fps_text(fps: float) -> str:
    """Frames per second: whole above 10, else two decimals (a search plays a few a second)."""
    return f"{fps:.0f}" if fps >= 10 else f"{fps:.2f}"


def _need_plots(args) -> None:
    """``--report-html`` needs matplotlib: said before a long run (a solve, a playback), not
    after it."""
    if args.report_html:
        from ..report._mpl import pyplot
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
    from ..io.atomic import atomic_write_text
    if args.report_html:
        rep["report_html"] = str(args.report_html)
    if args.report:
        atomic_write_text(args.report, json.dumps(rep, indent=2, default=float) + "\n")
    if args.report_html:
        write_page(rep)


def _print_wrote(args) -> None:
    print(f"  wrote {args.output}" + "".join(f", {p}" for p in (args.report, args.report_html)
                                             if p))


def _maybe(x, fmt: str) -> str:
    """``x`` formatted, or ``n/a`` for a figure a report could not measure (``None``)."""
    return "n/a" if x is None else format(x, fmt)


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
    try:
        n = int(text)
    except ValueError:      # (else argparse names this function: "invalid _positive_int")
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n
