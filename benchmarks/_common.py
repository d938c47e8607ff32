"""Shared by the benchmark scripts: the data folder (same rule as the tests), medians and
this process's peak memory."""
from __future__ import annotations

import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import find_data_dir  # noqa: E402  (one rule for tests and benchmarks)


def data_dir() -> Path:
    d = find_data_dir()
    if d is None:
        sys.exit("benchmark: shared data folder not found (../shared/data or $PHYSMOCAP_DATA)")
    return d


def peak_mb() -> float:
    """This process's peak resident memory so far (MB; Linux's ``ru_maxrss`` in kB): run the
    work in a child process of its own to measure that work alone."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def capture_to_solve(name: str):
    """The shared data's ``c3d/NAME.c3d`` as the solver sees it before calibration: the
    trajectories, the default body, its marker set bound to the capture's labels, the markers'
    positions ``(F, M, 3)`` m in that set's order and the body's kinematic prior."""
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import load_body, pick_markerset
    from physmocap.solver.pipeline import kinematic_prior

    t = read_c3d(data_dir() / f"c3d/{name}.c3d")
    body = load_body()
    ms0 = pick_markerset(t.labels).bind(body.skeleton, labels=t.labels)
    return t, body, ms0, t.select(ms0.names).pos, kinematic_prior(body)


def median_time(fn, repeats: int) -> tuple[float, list[float]]:
    """Median wall time (s) of ``fn()`` over ``repeats`` runs, and all the times."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def live_database(stand: bool = False, extra: tuple = (), mirror: bool = False):
    """The live benchmarks' motion-matching database: Bandai-Namco ``ds2_normal_locomotion``
    walks 001-006 and runs 001-002 (20 clips) at 60 fps, and its features; ``stand``: and
    ``walk_normal_001``'s first frame held 3 s, clip ``"stand"`` (last; ``mm build --stand``):
    the 20 clips never stand, and without it a reference asked to stop walks in place
    (``physical_diagnosis.py live_stands``). The fully physical live inputs
    (``physical_diagnosis.py live_headings``, ``live_turns``) are measured with it. ``extra``:
    more clips of the same folder (file stems, after the 20); ``mirror``: every clip mirrored
    too (``mm build --mirror``); both for ``physical_diagnosis.py turn_database``."""
    from physmocap.io.bvh import read_bvh
    from physmocap.matching.database import build_database, standing_clip
    from physmocap.matching.features import compute_features

    folder = data_dir() / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("*walk*_00[1-6].bvh")) + sorted(folder.glob("*run*_00[1-2].bvh"))
    files += [folder / f"{stem}.bvh" for stem in extra]
    motions = [read_bvh(f) for f in files]
    names = [f.stem for f in files]
    if stand:
        motions.append(standing_clip(motions[names.index("dataset-2_walk_normal_001")], 0, 3.0))
        names.append("stand")
    db = build_database(motions, names=names, fps=60, mirror=mirror)
    return db, compute_features(db)


def field_change(text: str, classes: tuple, example: str) -> tuple[str, object]:
    """``NAME=VALUE`` as ``(name, value)``, NAME a field of one of the dataclasses ``classes``
    whose default is a number, true/false or None, VALUE true/false, an int or a float. Raises
    ``ValueError`` (one line, naming ``example``, a ``NAME=VALUE`` that works) otherwise."""
    import dataclasses
    name, eq, v = (x.strip() for x in text.partition("="))
    # a field holding a tuple, a name or other settings cannot take a number
    known = {f.name for c in classes for f in dataclasses.fields(c)
             if f.default is None or isinstance(f.default, (int, float))}
    if not eq or name not in known:
        raise ValueError(f"{text!r}: expected NAME=VALUE with NAME a "
                         f"{' or '.join(c.__name__ for c in classes)} field that holds a number or "
                         f"true/false, e.g. {example}")
    if v.lower() in ("true", "false"):
        return name, v.lower() == "true"
    try:
        return name, int(v) if v.lstrip("-").isdigit() else float(v)
    except ValueError:
        raise ValueError(f"{text!r}: the value must be a number, true or false") from None
