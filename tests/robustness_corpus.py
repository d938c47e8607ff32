"""The robustness corpus: damaged copies of one real capture, written as C3D files and solved
like any capture. Shared by ``tests/test_robustness.py`` and ``benchmarks/robustness.py``.

Source: the first ``FRAMES`` frames (2.5 s) of CMU ``02_01.c3d`` (walk, 41 markers, 120 Hz).
Each case damages it in one way and says what the solve must report (or which error it must
raise). Files are written with ezc3d directly (not ``write_c3d``), so damage that physmocap's own
types refuse (infinite coordinates, a zero frame rate, a wrong unit) reaches the reader as it
would from a broken exporter.
"""
from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SOURCE = "c3d/cmu/02_01.c3d"
FRAMES = 300
SEED = 7


@dataclass
class Case:
    """One damaged capture: ``pos`` ``(F, M, 3)`` in the file's unit, ``fps`` written to the
    file, ``unit`` declared in POINT:UNITS, and what is expected."""

    name: str
    labels: tuple
    pos: np.ndarray
    fps: float
    unit: str = "mm"
    error: str | None = None          # expected error class name, None = solves
    expect: dict = field(default_factory=dict)
    frames: slice = field(default_factory=lambda: slice(None))  # baseline frames to compare


def load_source(data_dir: Path):
    """``(labels, pos (F, M, 3) mm, fps)`` of the undamaged source."""
    from physmocap.io.c3d import read_c3d

    t = read_c3d(data_dir / SOURCE)
    return t.labels, t.pos[:FRAMES] * 1000.0, t.fps


def make_cases(data_dir: Path) -> list[Case]:
    labels, pos, fps = load_source(data_dir)
    F, M = pos.shape[:2]
    rng = np.random.default_rng(SEED)
    L = list(labels)
    cases = [Case("undamaged", labels, pos.copy(), fps)]

    for frac in (0.10, 0.30, 0.60):
        p = pos.copy()
        p[rng.random((F, M)) < frac] = np.nan
        cases.append(Case(f"drop {int(frac * 100)} %", labels, p, fps,
                          expect={"gaps": M}))
    p = pos.copy()
    gone = ["LELB", "RTHI"]
    p[:, [L.index(g) for g in gone]] = np.nan
    cases.append(Case("markers never seen", labels, p, fps, expect={"never": gone}))

    p = pos.copy()
    a, b = int(fps), 2 * int(fps)                   # one second, every marker
    p[a:b] = np.nan
    cases.append(Case("all markers lost 1 s", labels, p, fps, expect={"blackout": [a, b]}))

    p = pos.copy()
    s, e = 100, 100 + int(0.5 * fps)                # half a second
    i, j = L.index("LKNE"), L.index("LSHN")
    p[s:e, [i, j]] = p[s:e, [j, i]]
    cases.append(Case("LKNE/LSHN swapped 0.5 s", labels, p, fps,
                      expect={"swap": (["LKNE", "LSHN"], [s, e])}))

    p = pos.copy()
    g = L.index("RWRA")
    p[150, g] += np.array([300.0, 400.0, 0.0])      # 0.5 m away for one frame
    cases.append(Case("ghost RWRA 0.5 m 1 frame", labels, p, fps,
                      expect={"ghost": ("RWRA", [150, 151])}))

    p = pos.copy()
    flat = rng.choice(F * M, size=60, replace=False)
    fr, mk = np.unravel_index(flat, (F, M))
    p[fr[:30], mk[:30]] = np.nan                      # NaN with a valid residual
    p[fr[30:], mk[30:], rng.integers(0, 3, 30)] = np.inf * rng.choice([-1, 1], 30)
    cases.append(Case("NaN and inf coordinates", labels, p, fps,
                      expect={"nonfinite": 30, "gap_samples": 60}))

    cases.append(Case("metres declared as mm", labels, pos / 1000.0, fps, unit="mm",
                      error="UnitError"))
    cases.append(Case("frame rate 0", labels, pos.copy(), 0.0, error="FileFormatError"))
    cases.append(Case("frame rate 10x too low", labels, pos.copy(), fps / 10))
    cases.append(Case("1 frame", labels, pos[:1].copy(), fps, frames=slice(0, 1)))
    cases.append(Case("no known marker set", tuple(f"M{k:02d}" for k in range(M)), pos.copy(),
                      fps, error="UnknownNameError"))
    return cases


def write_case(case: Case, path: Path) -> Path:
    """Write ``case`` as a C3D with ezc3d (float storage, residual -1 where NaN)."""
    import ezc3d

    F, M = case.pos.shape[:2]
    pts = np.ones((4, M, F))
    pts[:3] = np.transpose(case.pos, (2, 1, 0))
    res = np.zeros((1, M, F))
    dropped = np.isnan(case.pos).all(axis=-1).T        # (M, F)
    # the 'NaN with a valid residual' samples: only some coordinates NaN -> keep residual 0
    res[0] = np.where(dropped, -1.0, 0.0)
    # ezc3d refuses to write a zero rate: write a sentinel rate and patch its bytes after.
    sentinel = 12345.5
    c = ezc3d.c3d()
    c["parameters"]["POINT"]["RATE"]["value"] = [float(case.fps) if case.fps > 0 else sentinel]
    c["parameters"]["POINT"]["LABELS"]["value"] = tuple(case.labels)
    c["parameters"]["POINT"]["UNITS"]["value"] = [case.unit]
    c["data"]["points"] = pts
    c["data"]["meta_points"] = {"residuals": res,
                                "camera_masks": np.zeros((7, M, F), dtype=bool)}
    c.write(str(path))
    if case.fps <= 0:
        raw = path.read_bytes()
        assert raw.count(struct.pack("<f", sentinel)) >= 2     # header, POINT:RATE (, …)
        path.write_bytes(raw.replace(struct.pack("<f", sentinel), struct.pack("<f", case.fps)))
    return path


def solve_file(path: Path):
    """Read and solve like ``physmocap solve``: ``(result, None)`` or ``(None, error)``."""
    from physmocap.errors import PhysmocapError
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import load_body, pick_markerset
    from physmocap.solver.pipeline import solve_capture

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = read_c3d(path)
            try:
                spec = pick_markerset(t.labels)
            except PhysmocapError as exc:     # as ``physmocap solve`` does: name the file
                raise type(exc)(exc.reason, path) from None
            return solve_capture(t, spec, load_body()), None
    except PhysmocapError as exc:
        return None, exc


def joint_angle_error_deg(a, b) -> np.ndarray:
    """``(F, J)`` degrees between the local joint rotations of two motions (same joints)."""
    d = np.abs(np.sum(np.asarray(a.lrot) * np.asarray(b.lrot), axis=-1))
    return np.degrees(2.0 * np.arccos(np.clip(d, 0.0, 1.0)))


def named_damage(rep: dict) -> str:
    """A short text of what the report's ``damage`` names."""
    d = rep["damage"]
    out = []
    if d["markers_never_seen"]:
        out.append("ignored " + "+".join(x["marker"] for x in d["markers_never_seen"]))
    if d["gaps"]:
        out.append(f"bridged {d['summary']['gap_samples']} samples / {len(d['gaps'])} markers")
    for b in d["blackouts"]:
        out.append(f"{b['action']} fr {b['frames'][0]}-{b['frames'][1]}")
    for s in d["swaps"]:
        out.append(f"swap {'/'.join(s['markers'])} fr {s['frames'][0]}-{s['frames'][1]}")
    for g in d["ghosts"]:
        out.append(f"ghost {g['marker']} fr {g['frames'][0]}-{g['frames'][1]}")
    if d["outliers"]:
        out.append(f"{len(d['outliers'])} outlier runs")
    if d["nonfinite_samples"]:
        out.append(f"{d['nonfinite_samples']['count']} non-finite ignored")
    rate = d.get("frame_rate")
    if rate and not rate["plausible"]:
        out.append(f"frame rate flagged ({rate['stride_hz']} strides/s at "
                   f"{rate['declared_hz']:g} Hz: too {'low' if 'too low' in rate['action'] else 'high'})")
    return "; ".join(out) or "none"
