"""Hostile files: whatever bytes physmocap is given to read (C3D, BVH, scene TOML/JSON, input
scenes, pose-database .npz), it raises ``PhysmocapError`` or returns data: no other exception,
no crash, no hang, memory bounded, and nothing it loads can run code (no pickle).

The coverage-guided counterpart (atheris) is ``benchmarks/fuzz_readers.py``. Crafted files live
in ``tmp_path``; the shared data are only read.
"""
from __future__ import annotations

import json
import re
import struct
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physmocap import scene
from physmocap.errors import FileFormatError, PhysmocapError
from physmocap.io import c3d as c3dmod
from physmocap.io.bvh import loads_bvh
from physmocap.io.c3d import read_c3d, write_c3d
from physmocap.markers import MarkerTrajectories
from physmocap.matching import database, trajectory

ROOT = Path(__file__).resolve().parents[1]
SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                  HealthCheck.too_slow])


def _only_physmocap_errors(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*a, **k)
        except PhysmocapError as exc:
            assert "\n" not in str(exc)        # one line
            return exc


# ------------------------------------------------------------------------------------- C3D

@pytest.fixture(scope="module")
def c3d_seeds(data_dir, tmp_path_factory):
    """A small real file (a single-frame Plug-in Gait trial) and a tiny written one."""
    d = tmp_path_factory.mktemp("seeds")
    pos = np.random.default_rng(1).normal(size=(5, 3, 3))
    pos[2, 1] = np.nan
    write_c3d(MarkerTrajectories(("LFHD", "C7", "LTOE"), 100.0, pos), d / "tiny.c3d")
    return [(data_dir / "c3d-odd/PiG_Calibration-FlatFoot-One.c3d").read_bytes(),
            (d / "tiny.c3d").read_bytes()]


@settings(max_examples=30, **SLOW)
@given(seed=st.integers(0, 1), edits=st.lists(
    st.tuples(st.integers(0, 4095), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.one_of(st.none(), st.integers(0, 30000)))
def test_c3d_byte_mutations(c3d_seeds, tmp_path, monkeypatch, seed, edits, cut):
    """Random bytes in the header and parameter section (where parsers go wrong), and cuts."""
    monkeypatch.setattr(c3dmod, "CHILD_TIMEOUT", 20.0)
    b = bytearray(c3d_seeds[seed])
    for off, val in edits:
        if off < len(b):
            b[off] = val
    p = tmp_path / "m.c3d"
    p.write_bytes(bytes(b[:cut]) if cut is not None else bytes(b))
    out = _only_physmocap_errors(read_c3d, p, points="all")
    assert isinstance(out, (MarkerTrajectories, PhysmocapError))


def _peak_bytes(call, match: str) -> int:
    """Peak Python allocation while ``call()`` raises a ``FileFormatError`` matching ``match``."""
    tracemalloc.start()
    try:
        with pytest.raises(FileFormatError, match=match):
            call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_c3d_header_claiming_huge_data_allocates_nothing(c3d_seeds, tmp_path):
    """65535 frames x 65535 points (the header's maximum, 68 GB) in a tiny file: refused after
    reading a few kB, before any parser allocates."""
    b = bytearray(c3d_seeds[1])
    b[2:4] = struct.pack("<H", 65535)            # points
    b[8:10] = struct.pack("<H", 65535)           # last frame
    p = tmp_path / "huge.c3d"
    p.write_bytes(bytes(b))
    assert _peak_bytes(lambda: read_c3d(p), "header declares") < 2 * 2**20


# ------------------------------------------------------------------------------------- BVH

SMALL_BVH = """HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT Spine
  {
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 10 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.0333333
0 90 0 0 0 0 0 0 0
1 90 0 10 0 0 5 0 0
"""


@pytest.mark.parametrize("frames", ["1000000000", "99999999999999999999"])
def test_bvh_claiming_a_billion_frames_allocates_nothing(frames):
    text = SMALL_BVH.replace("Frames: 2", f"Frames: {frames}")
    assert _peak_bytes(lambda: loads_bvh(text), "truncated") < 2 * 2**20


@settings(max_examples=150, deadline=2000)
@given(edits=st.lists(st.tuples(st.integers(0, len(SMALL_BVH)), st.binary(max_size=4)),
                      max_size=6))
def test_bvh_byte_mutations(edits):
    b = bytearray(SMALL_BVH.encode())
    for off, val in edits:
        b[off:off + len(val)] = val
    out = _only_physmocap_errors(loads_bvh, b.decode("utf-8", errors="replace"))
    if not isinstance(out, PhysmocapError):
        assert np.all(np.isfinite(out.lrot)) and np.all(np.isfinite(out.root_pos))


# ------------------------------------------------------------------------- scenes and inputs

LOADERS = [scene.load_markerset, scene.load_body, scene.load_environment, trajectory.load_input]
SHIPPED = ["markersets/cmu41.toml", "bodies/humanoid.toml", "environments/bar.toml",
           "inputs/figure_eight.toml"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8))
json_values = st.recursive(scalars, lambda c: st.one_of(
    st.lists(c, max_size=4), st.dictionaries(st.sampled_from(
        ["meta", "markers", "joint", "name", "parent", "type", "offset", "segment", "weight",
         "axis", "limits", "mass", "radius", "input", "kind", "key", "object", "hold", "t",
         "points", "x"]) | st.text(max_size=4), c, max_size=5)), max_leaves=25)


@settings(max_examples=120, **SLOW)
@given(kind=st.integers(0, 3), doc=json_values)
def test_scene_loaders_on_random_json(tmp_path_factory, kind, doc):
    p = tmp_path_factory.mktemp("s") / "x.json"
    p.write_text(json.dumps(doc, allow_nan=True))
    _only_physmocap_errors(LOADERS[kind], p)


@settings(max_examples=120, **SLOW)
@given(kind=st.integers(0, 3), edits=st.lists(
    st.tuples(st.integers(0, 3000), st.text(alphabet="[]{}=\"'.,#0123456789ex-+ \n", max_size=3)),
    min_size=1, max_size=5))
def test_shipped_scenes_mutated(tmp_path_factory, kind, edits):
    text = (ROOT / "scenes" / SHIPPED[kind]).read_text()
    for off, val in edits:
        off = off % (len(text) + 1)
        text = text[:off] + val + text[off + len(val):]
    p = tmp_path_factory.mktemp("s") / "x.toml"
    p.write_text(text)
    _only_physmocap_errors(LOADERS[kind], p)


# --------------------------------------------------------------------------- npz: no pickle

class _Evil:
    """Unpickling this would create a file: proof that code ran."""

    def __init__(self, flag):
        self.flag = flag

    def __reduce__(self):
        return (Path.touch, (Path(self.flag),))


def test_object_array_npz_is_refused_and_runs_nothing(tmp_path):
    flag = tmp_path / "pwned"
    arr = np.empty(1, dtype=object)
    arr[0] = _Evil(str(flag))
    p = tmp_path / "evil.npz"
    with open(p, "wb") as fh:
        np.savez(fh, format=np.array(database.FORMAT), version=np.array(database.VERSION),
                 names=arr, info=arr)
    with pytest.raises(FileFormatError, match="not a readable"):
        database.load_database(p)
    assert not flag.exists()
    # the lenient C3D child's transport refuses it too
    from physmocap.io import _c3d_child
    with pytest.raises(ValueError, match="allow_pickle"):
        _c3d_child.load_npz(str(p))
    assert not flag.exists()


def test_every_np_load_refuses_pickles():
    """Source scan: each ``np.load(`` in the package and its tools passes allow_pickle=False."""
    calls = []
    for folder in ("physmocap", "benchmarks", "tests"):
        for f in (ROOT / folder).rglob("*.py"):
            text = f.read_text()
            for m in re.finditer(r"np\.load\((?:[^()]|\([^()]*\))*\)", text):
                calls.append((f.name, m.group(0)))
    assert calls                                              # the scan finds the loaders
    bad = [c for c in calls if "allow_pickle=False" not in c[1]]
    assert bad == []
    lib = [c for c in calls if not c[0].startswith("test_")]
    assert {c[0] for c in lib} >= {"database.py", "_c3d_child.py"}


# ------------------------------------------------- C3D findings of the fuzzers (regressions)

def _record(b: bytes, name: bytes) -> int:
    """Byte offset of the first parameter record called ``name``."""
    return b.index(name, 512) - 2


@pytest.mark.parametrize("what, edit, match", [
    # each of these made ezc3d's *strict* parser segfault the process (found by fuzzing)
    ("170 dimensions", lambda b, i, n: b.__setitem__(i + 2 + n + 3, 170), "dimensions"),
    ("description length -1", lambda b, i, n: b.__setitem__(i + 2 + n + 6, 255),
     "description length"),
    ("parameter turned group", lambda b, i, n: b.__setitem__(i + 1, 256 - 110),
     "description length"),
    ("empty POINT:DATA_START", lambda b, i, n: b.__setitem__(slice(i + 2 + n + 3, i + 2 + n + 5),
                                                             bytes([1, 0])), "has no value"),
])
def test_c3d_parameter_sections_that_crashed_ezc3d(c3d_seeds, tmp_path, what, edit, match):
    b = bytearray(c3d_seeds[1])
    name = {"empty POINT:DATA_START": b"DATA_START",
            "parameter turned group": b"LABELS"}.get(what, b"USED")
    edit(b, _record(b, name), len(name))
    p = tmp_path / "x.c3d"
    p.write_bytes(bytes(b))
    with pytest.raises(FileFormatError, match=match):
        read_c3d(p)


def test_c3d_parser_crash_or_hang_cannot_take_the_process_down(c3d_seeds, tmp_path,
                                                               monkeypatch):
    """Whatever the pre-check misses: ezc3d's strict parse runs in a fork; a segfault or a hang
    there is a FileFormatError here."""
    import os
    import signal
    import time

    p = tmp_path / "ok.c3d"
    p.write_bytes(c3d_seeds[1])
    monkeypatch.setattr(c3dmod._c3d_child, "load",
                        lambda *a, **k: os.kill(os.getpid(), signal.SIGSEGV))
    with pytest.raises(FileFormatError, match="crashed .signal 11"):
        read_c3d(p)
    monkeypatch.setattr(c3dmod._c3d_child, "load", lambda *a, **k: time.sleep(30))
    monkeypatch.setattr(c3dmod, "CHILD_TIMEOUT", 1.0)
    t0 = time.perf_counter()
    with pytest.raises(FileFormatError, match="hung"):
        read_c3d(p)
    assert time.perf_counter() - t0 < 10


def _npz_with_member(path: Path, member: bytes) -> Path:
    import zipfile
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("format.npy", member)
    return path


@pytest.mark.parametrize("what", ["unclosed header", "encrypted flag"])
def test_npz_findings_of_the_fuzzer(tmp_path, what):
    """Fuzzing load_database found numpy's header parser raising tokenize.TokenError and
    zipfile raising RuntimeError (an 'encrypted' member): both are FileFormatError now."""
    p = tmp_path / "x.npz"
    if what == "unclosed header":
        header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,"
        _npz_with_member(p, b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)
    else:
        np.savez(p, format=np.zeros(3))
        b = bytearray(p.read_bytes())
        for sig in (b"PK\x03\x04", b"PK\x01\x02"):       # set 'encrypted' in both headers
            i = b.index(sig)
            flag = 6 if sig == b"PK\x03\x04" else 8
            b[i + flag] |= 1
        p.write_bytes(bytes(b))
    with pytest.raises(FileFormatError, match="not a readable"):
        database.load_database(p)


@settings(max_examples=60, deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), min_size=1,
                      max_size=6), cut=st.one_of(st.none(), st.integers(0, 2000)))
def test_npz_byte_mutations(tmp_path_factory, edits, cut):
    d = tmp_path_factory.mktemp("npz")
    p = d / "x.npz"
    np.savez(p, format=np.array(database.FORMAT), version=np.array(database.VERSION),
             fps=np.array(60.0), names=np.array(["Simulation", "Hips"]))
    b = bytearray(p.read_bytes())
    for off, val in edits:
        b[off % len(b)] = val
    p.write_bytes(bytes(b[:cut]) if cut is not None else bytes(b))
    assert isinstance(_only_physmocap_errors(database.load_database, p), PhysmocapError)
