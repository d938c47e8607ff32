"""io.c3d against every real C3D in ../shared/data (c3d/ and c3d-odd/) and crafted copies.

Expected values come from the C3D findings report (which corrects data/README.md: the PiG files
hold 35 physical markers, not 39; phasespace_sample has no parameters; Dance fails in ezc3d).
Crafted files are copies in ``tmp_path``; the shared data are only read.
"""
from __future__ import annotations

import hashlib
import struct
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physmocap.errors import (FileFormatError, PhysmocapError, ShapeError, UnitError,
                              UnknownNameError)
from physmocap.io import c3d as c3dmod
from physmocap.io.c3d import read_c3d, write_c3d
from physmocap.markers import MarkerTrajectories

ezc3d = pytest.importorskip("ezc3d")

# relative path -> (markers, all points, fps, unit, up, frames, first_frame)
GOOD = {
    "c3d/c3dorg/nexgen_test1_metres.c3d": (40, 40, 128.0, "m", "y", 721, 1),
    "c3d/cmu/01_01.c3d": (42, 42, 120.0, "mm", "z", 2751, 40),
    "c3d/cmu/02_01.c3d": (41, 41, 120.0, "mm", "z", 343, 50),
    "c3d/cmu/16_57.c3d": (41, 330, 120.0, "mm", "z", 268, 331),
    "c3d/pig/PiG_Calibration-FlatFoot-Full.c3d": (35, 137, 100.0, "mm", "z", 94, 30),
    "c3d/pig/PiG_Motion-FlatFoot-Full.c3d": (35, 193, 100.0, "mm", "z", 315, 148),
    "c3d-odd/Eb015pi.c3d": (26, 26, 50.0, "mm", "z", 450, 1),
    "c3d-odd/Eb015vr.c3d": (26, 26, 50.0, "mm", "z", 450, 1),
    "c3d-odd/TESTCPI.c3d": (26, 26, 50.0, "mm", "z", 450, 1),
    "c3d-odd/PiG_Calibration-FlatFoot-One.c3d": (35, 138, 100.0, "mm", "z", 1, 140),
    "c3d-odd/bigparlove.c3d": (33, 205, 200.0, "mm", "z", 323, 1),
    "c3d-odd/emgwl.c3d": (0, 0, 50.0, "mm", "z", 501, 0),
    "c3d-odd/giant.c3d": (29, 29, 50.0, "mm", "z", 355, 1),
    "c3d-odd/parameterOverflow.c3d": (45, 142, 100.0, "mm", "z", 101, 1),
}
# c3d-odd files that must raise FileFormatError, with a word the message must contain.
BAD = {
    "c3d-odd/Dance.c3d": "OFFSET parameter is not an INT",
    "c3d-odd/Eb015si.c3d": "MIPS",
    "c3d-odd/Empty.c3d": "file is empty",
    "c3d-odd/bad_parameter_section.c3d": "parameter section is corrupt",
    "c3d-odd/phasespace_sample.c3d": "has 3D data for 40 points but no POINT parameters",
}
HEAD = ["LFHD", "RFHD", "LBHD", "RBHD"]
FEET = ["LTOE", "RTOE", "LHEE", "RHEE"]


def quiet_read(path, **kw) -> MarkerTrajectories:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_c3d(path, **kw)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------- inventory

def test_every_data_file_has_an_expected_outcome(data_dir):
    found = {str(p.relative_to(data_dir)) for p in data_dir.glob("c3d/**/*.c3d")}
    found |= {str(p.relative_to(data_dir)) for p in data_dir.glob("c3d-odd/*.c3d")}
    assert found == set(GOOD) | set(BAD)


@pytest.mark.parametrize("rel", sorted(GOOD))
def test_reads_counts_rates_units(data_dir, rel):
    n_markers, n_all, fps, unit, up, frames, first = GOOD[rel]
    m = quiet_read(data_dir / rel)
    a = quiet_read(data_dir / rel, points="all")
    assert len(m.labels) == n_markers and not m.is_virtual.any()
    assert len(a.labels) == n_all and a.is_virtual.sum() == n_all - n_markers
    assert m.fps == fps and m.n_frames == frames and m.pos.shape == (frames, n_markers, 3)
    assert m.meta["unit"] == unit and m.meta["up"] == up
    assert m.meta["format"] == "c3d" and m.meta["path"] == str(data_dir / rel)
    assert m.meta["first_frame"] == first and m.meta["n_points_in_file"] == n_all
    assert not any(":" in l for l in a.labels)  # subject prefixes stripped
    valid = m.pos[~np.isnan(m.pos)]
    if valid.size:  # plausible positions in metres: a lab a few metres wide
        assert np.abs(valid).max() < 10.0
        assert np.nanmin(m.pos[..., 2]) > -0.1 and np.nanmax(m.pos[..., 2]) < 2.2


@pytest.mark.parametrize("rel", sorted(BAD))
def test_bad_files_raise_one_line(data_dir, rel):
    t0 = time.perf_counter()
    with pytest.raises(FileFormatError) as info:
        read_c3d(data_dir / rel)
    msg = str(info.value)
    assert BAD[rel] in msg and "\n" not in msg
    assert info.value.path == str(data_dir / rel) and msg.startswith(str(data_dir / rel))
    assert time.perf_counter() - t0 < 20


def test_inputs_unchanged_after_reading(data_dir):
    files = sorted(data_dir.glob("c3d/**/*.c3d")) + sorted(data_dir.glob("c3d-odd/*.c3d"))
    before = {p: sha256(p) for p in files}
    for p in files:
        try:
            quiet_read(p, points="all")
        except FileFormatError:
            pass
    assert {p: sha256(p) for p in files} == before


# ---------------------------------------------------------------------------------- contents

def test_eb015_integer_and_dec_float_agree(data_dir):
    pi = quiet_read(data_dir / "c3d-odd/Eb015pi.c3d")
    vr = quiet_read(data_dir / "c3d-odd/Eb015vr.c3d")
    cpi = quiet_read(data_dir / "c3d-odd/TESTCPI.c3d")
    assert pi.labels == vr.labels == cpi.labels
    assert np.array_equal(np.isnan(pi.pos), np.isnan(vr.pos))
    np.testing.assert_allclose(pi.pos, vr.pos, atol=1e-4, rtol=0)  # 0.1 mm
    assert np.array_equal(pi.pos, cpi.pos, equal_nan=True)
    assert 0.01 < np.isnan(pi.pos[..., 0]).mean() < 0.03  # 1.93 % missing
    assert vr.meta["processor"] == "dec" and pi.meta["processor"] == "intel"


def test_nexgen_is_y_up_and_rotated(data_dir):
    path = data_dir / "c3d/c3dorg/nexgen_test1_metres.c3d"
    with pytest.warns(UserWarning, match=r"nexgen_test1_metres\.c3d.*\+y"):
        m = read_c3d(path)
    assert m.meta["up"] == "y" and m.meta["up_source"] == "detected"
    assert m.meta["unit"] == "m" and m.meta["unit_source"] == "declared"
    z = m.pos[..., 2]
    d = m.pos[:, [m.index(l) for l in HEAD], 2].mean(1) - m.pos[:, [m.index(l) for l in FEET], 2].mean(1)
    assert np.all(d > 1.2)  # head above the feet in every frame
    assert np.nanmin(z) > -0.05 and 1.5 < np.nanmax(z) < 2.2
    raw = read_c3d(path, up="z")  # declared: no rotation, no warning
    assert raw.meta["up_source"] == "declared"
    R = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    np.testing.assert_allclose(m.pos, raw.pos @ R.T, atol=1e-12)
    assert np.isclose(np.linalg.det(R), 1.0)
    flipped = read_c3d(path, up="-y")
    np.testing.assert_allclose(flipped.pos[..., 2], -m.pos[..., 2], atol=1e-12)


def test_the_files_declared_up_axis_is_kept(data_dir, tmp_path):
    """``POINT:X_SCREEN`` / ``Y_SCREEN`` name the vertical: 02_01 (``+X`` / ``+Z``) with its
    subject laid down on the floor is read Z up (the marker cloud alone took its length for the
    vertical and stood it up), with one warning line; a file without a usable pair is judged by
    the cloud as before; a Y-up file that says so is turned to Z up."""
    import ezc3d
    m = quiet_read(data_dir / "c3d/cmu/02_01.c3d")
    assert m.meta["up"] == "z" and m.meta["up_source"] == "file"
    lie = np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]])          # z (height) -> x
    pos = (m.pos - np.nanmean(m.pos, axis=(0, 1))) @ lie.T + [0.0, 0.0, 0.4]
    laid = MarkerTrajectories(m.labels, m.fps, pos, m.is_virtual, m.subject)
    write_c3d(laid, tmp_path / "laid.c3d")
    with pytest.warns(UserWarning, match=r"laid\.c3d: the file declares \+z up.*stand along"):
        back = read_c3d(tmp_path / "laid.c3d")
    assert back.meta["up_source"] == "file"
    np.testing.assert_allclose(back.pos, pos, atol=1e-6, equal_nan=True)    # not turned
    c = ezc3d.c3d(str(tmp_path / "laid.c3d"))
    c.add_parameter("POINT", "X_SCREEN", ["+Z"])                   # the same axis twice
    c.write(str(tmp_path / "unsaid.c3d"))
    with pytest.warns(UserWarning, match="detected"):
        guessed = read_c3d(tmp_path / "unsaid.c3d")
    assert guessed.meta["up_source"] == "detected" and guessed.meta["up"] != "z"
    yup = MarkerTrajectories(m.labels, m.fps, m.pos @ np.array([[1.0, 0, 0], [0, 0, 1],
                                                                [0, -1, 0]]).T, m.is_virtual)
    write_c3d(yup, tmp_path / "yup.c3d")
    c = ezc3d.c3d(str(tmp_path / "yup.c3d"))
    c.add_parameter("POINT", "Y_SCREEN", ["+Y"])
    c.write(str(tmp_path / "yup.c3d"))
    turned = read_c3d(tmp_path / "yup.c3d")
    assert turned.meta["up"] == "y" and turned.meta["up_source"] == "file"
    np.testing.assert_allclose(turned.pos, m.pos, atol=1e-6, equal_nan=True)


def test_cmu_16_57_labels_subject_and_virtual_points(data_dir):
    a = quiet_read(data_dir / "c3d/cmu/16_57.c3d", points="all")
    assert a.subject == "Justin_Nancy" and len(set(a.labels)) == 330
    assert a.labels[:4] == ("LFHD", "RFHD", "LBHD", "RBHD")
    assert a.labels[255] == "LULN6" and a.labels[-1] == "RTB8"  # LABELS2 joined
    assert not a.is_virtual[:41].any() and a.is_virtual[41:].all()
    m = quiet_read(data_dir / "c3d/cmu/16_57.c3d")
    assert m.labels == a.labels[:41]
    np.testing.assert_array_equal(m.pos, a.pos[:, :41])


def test_pig_motion_markers_and_model_outputs(data_dir):
    a = quiet_read(data_dir / "c3d/pig/PiG_Motion-FlatFoot-Full.c3d", points="all")
    virt = {l for l, v in zip(a.labels, a.is_virtual) if v}
    assert {"LKneeAngles", "PELO", "PELA", "CentreOfMass", "CentreOfMassFloor",
            "LGroundReactionForce"} <= virt
    m = quiet_read(data_dir / "c3d/pig/PiG_Motion-FlatFoot-Full.c3d")
    assert "LFHD" in m.labels and "RBAK" in m.labels and m.subject == "BELT_C"
    assert 25 <= m.gap_frames()["LFHD"] <= 35  # the 30-frame gap


def test_missing_samples_are_nan(data_dir):
    po = quiet_read(data_dir / "c3d-odd/parameterOverflow.c3d")  # zeros with residual 0
    assert np.isnan(po.pos).all()
    cmu = quiet_read(data_dir / "c3d/cmu/01_01.c3d")  # residual -1
    assert 0.02 < np.isnan(cmu.pos[..., 0]).mean() < 0.03
    assert np.array_equal(np.isnan(cmu.pos).any(-1), np.isnan(cmu.pos).all(-1))


def test_giant_all_missing_unit_assumed_and_duplicates(data_dir):
    path = data_dir / "c3d-odd/giant.c3d"
    with pytest.warns(UserWarning) as rec:
        m = read_c3d(path)
    msgs = [str(w.message) for w in rec]
    assert any("giant.c3d" in s and "assuming mm" in s for s in msgs)
    assert any("giant.c3d" in s and "duplicate" in s for s in msgs)
    assert m.meta["unit_source"] == "assumed" and m.meta["up_source"] == "assumed"
    assert np.isnan(m.pos).all() and "100000_2" in m.labels and len(set(m.labels)) == 29


def test_analog_only_file(data_dir):
    m = read_c3d(data_dir / "c3d-odd/emgwl.c3d")
    assert m.pos.shape == (501, 0, 3) and m.meta["analog_only"] is True
    assert m.meta["analog_rate"] > 0


def test_dance_goes_through_the_lenient_child(data_dir, monkeypatch):
    called = []
    real = c3dmod._load_in_child
    monkeypatch.setattr(c3dmod, "_load_in_child", lambda *a: called.append(a) or real(*a))
    with pytest.raises(FileFormatError, match="both parsers: ValueError: OFFSET") as err:
        read_c3d(data_dir / "c3d-odd/Dance.c3d")
    assert called
    assert str(err.value).count("OFFSET parameter is not an INT") == 1  # said once, not twice


def test_lenient_child_transports_data_exactly(data_dir, monkeypatch):
    path = data_dir / "c3d/cmu/16_57.c3d"
    strict = quiet_read(path, points="all")

    def fail(p, lenient=False):
        raise OSError("pretend strict parsing failed")
    monkeypatch.setattr(c3dmod._c3d_child, "load", fail)
    child = quiet_read(path, points="all")
    assert child.meta["parser"] == "ezc3d-lenient-child"
    assert child.labels == strict.labels and child.subject == strict.subject
    np.testing.assert_array_equal(child.is_virtual, strict.is_virtual)
    assert np.array_equal(child.pos, strict.pos, equal_nan=True)


@pytest.mark.parametrize("code, match", [
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "crashed with signal"),
    ("import time; time.sleep(30)", "hung for"),
])
def test_child_crash_or_hang_is_a_file_format_error(data_dir, monkeypatch, code, match):
    if sys.platform.startswith("win") and "SIGSEGV" in code:
        pytest.skip("POSIX signals")
    monkeypatch.setattr(c3dmod, "_child_command", lambda p, out: [sys.executable, "-c", code])
    monkeypatch.setattr(c3dmod, "CHILD_TIMEOUT", 1.0)
    with pytest.raises(FileFormatError, match=match) as err:
        read_c3d(data_dir / "c3d-odd/Dance.c3d")
    assert "strict parser: ValueError: OFFSET" in str(err.value)  # the two reasons differ


# ---------------------------------------------------------------------------------- crafted headers

def _patched(src: Path, dst: Path, patches: dict[int, bytes], size: int | None = None) -> Path:
    b = bytearray(src.read_bytes() if size is None else src.read_bytes()[:size])
    for off, val in patches.items():
        b[off:off + len(val)] = val
    dst.write_bytes(bytes(b))
    return dst


@pytest.mark.parametrize("name, patches, size, match", [
    # 65535 points x 65535 frames (68 GB of data) declared in a 156 kB file
    ("huge.c3d", {2: struct.pack("<H", 65535), 8: struct.pack("<H", 65535)}, None, "header declares"),
    ("frames.c3d", {8: struct.pack("<H", 65535)}, None, "header declares"),
    ("truncated.c3d", {}, 100_000, "header declares"),
    ("short.c3d", {}, 300, "too short"),
    ("magic.c3d", {1: b"\x51"}, None, "not a C3D"),
    ("param.c3d", {0: b"\xff"}, 100_000, "parameter-section pointer"),
    ("param1.c3d", {0: b"\x01"}, None, "parameter-section pointer"),
    ("mips.c3d", {512 + 3: bytes([86])}, None, "MIPS"),
    ("proc.c3d", {512 + 3: bytes([99])}, None, "unknown processor"),
    ("pointer.c3d", {512 + 4 + 2 + 5: struct.pack("<H", 1)}, None,
     "record at byte 516 points backwards"),
    ("far.c3d", {512 + 4 + 2 + 5: struct.pack("<H", 0xFFF0)}, None,
     "record at byte 66043 runs into the data section or past the end"),
    ("range.c3d", {6: struct.pack("<HH", 500, 10)}, None, "frame range 500..10 is invalid"),
    ("datastart.c3d", {16: struct.pack("<H", 1)}, None, "data section at block 1"),
    # no points or analogs (no data to check), cut inside the first record (POINT, at byte 516)
    ("cut.c3d", {2: struct.pack("<HH", 0, 0)}, 525, "record at byte 516 runs into the data"),
    # ANALOG's group id (byte 547) made POINT's: ezc3d segfaults on a group defined twice
    ("twice.c3d", {547: struct.pack("b", -1)}, None, "group id 1 is defined twice"),
    # the first parameter's (POINT:DESCRIPTIONS, byte 623) data type, and its group id
    ("type.c3d", {639: struct.pack("b", 3)}, None, "byte 623 has unknown data type 3"),
    ("orphan.c3d", {624: struct.pack("b", 9)}, None, "parameter at byte 623 belongs to no group"),
])
def test_crafted_headers_fail_fast(data_dir, tmp_path, name, patches, size, match):
    src = data_dir / "c3d-odd/Eb015pi.c3d"
    path = _patched(src, tmp_path / name, patches, size)
    t0 = time.perf_counter()
    with pytest.raises(FileFormatError, match=match):
        read_c3d(path)
    assert time.perf_counter() - t0 < 2.0  # rejected before any parser allocates


def test_missing_file_and_bad_options(data_dir, tmp_path):
    with pytest.raises(FileFormatError, match="not found"):
        read_c3d(tmp_path / "nope.c3d")
    (tmp_path / "take.c3d").mkdir()
    with pytest.raises(FileFormatError, match="take.c3d: is a folder, not a C3D file"):
        read_c3d(tmp_path / "take.c3d")
    with pytest.raises(UnitError, match="unknown up axis"):
        read_c3d(data_dir / "c3d/cmu/02_01.c3d", up="w")
    with pytest.raises(UnknownNameError, match="markers, all"):
        read_c3d(data_dir / "c3d/cmu/02_01.c3d", points="virtual")


# ---------------------------------------------------------------------------------- writing

def _synthetic(rng, frames=20, m=5, virtual=True) -> MarkerTrajectories:
    pos = rng.uniform(-2.0, 2.0, (frames, m, 3))
    pos[rng.random((frames, m)) < 0.15] = np.nan
    virt = np.zeros(m, bool)
    if virtual:
        virt[-1] = True
    return MarkerTrajectories(labels=[f"M{i}" for i in range(m)], fps=240.0, pos=pos,
                              is_virtual=virt, subject="Ann")


def test_write_read_round_trip(rng, tmp_path):
    mk = _synthetic(rng)
    before = mk.pos.copy()
    path = tmp_path / "out.c3d"
    write_c3d(mk, path)
    assert np.array_equal(mk.pos, before, equal_nan=True)  # input untouched
    assert [p.name for p in tmp_path.iterdir()] == ["out.c3d"]  # no temporary left

    c = ezc3d.c3d(str(path))  # another reader sees the same data, NaN as residual -1
    pts = c["data"]["points"]
    res = c["data"]["meta_points"]["residuals"][0]
    assert c["parameters"]["POINT"]["UNITS"]["value"] == ["mm"]
    assert c["parameters"]["POINT"]["RATE"]["value"][0] == 240.0
    assert tuple(c["parameters"]["POINT"]["LABELS"]["value"]) == mk.labels
    miss = np.isnan(mk.pos).any(-1).T
    assert np.array_equal(res < 0, miss)
    np.testing.assert_allclose(pts[:3].transpose(2, 1, 0) / 1000, mk.pos, atol=1e-6)

    back = read_c3d(path, points="all", up="z")
    assert back.labels == mk.labels and back.fps == 240.0 and back.subject == "Ann"
    np.testing.assert_array_equal(back.is_virtual, mk.is_virtual)
    assert np.array_equal(np.isnan(back.pos), np.isnan(mk.pos))
    np.testing.assert_allclose(back.pos, mk.pos, atol=1e-6)
    assert read_c3d(path, up="z").labels == mk.labels[:-1]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames=st.integers(1, 30), m=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_round_trip_property(tmp_path, frames, m, seed):
    mk = _synthetic(np.random.default_rng(seed), frames, m, virtual=m > 1)
    path = tmp_path / "p.c3d"
    write_c3d(mk, path)
    back = read_c3d(path, points="all", up="z")
    assert back.labels == mk.labels and np.array_equal(back.is_virtual, mk.is_virtual)
    assert np.array_equal(np.isnan(back.pos), np.isnan(mk.pos))
    np.testing.assert_allclose(back.pos, mk.pos, atol=1e-6)


def test_real_file_round_trip_over_255_points(data_dir, tmp_path):
    a = quiet_read(data_dir / "c3d/cmu/16_57.c3d", points="all")
    path = tmp_path / "16_57.c3d"
    write_c3d(a, path)
    back = read_c3d(path, points="all")  # realistic data: detection finds +z, no warning
    assert back.meta["up"] == "z" and back.labels == a.labels
    np.testing.assert_array_equal(back.is_virtual, a.is_virtual)
    assert np.array_equal(np.isnan(back.pos), np.isnan(a.pos))
    np.testing.assert_allclose(back.pos, a.pos, atol=1e-6)
    write_c3d(a.markers_only(), path)  # overwrite in place
    assert len(read_c3d(path).labels) == 41


def test_write_into_missing_folder_fails_cleanly(rng, tmp_path):
    with pytest.raises(PhysmocapError, match="does not exist"):
        write_c3d(_synthetic(rng), tmp_path / "no" / "out.c3d")
    empty = MarkerTrajectories(labels=[], fps=100.0, pos=np.zeros((3, 0, 3)))
    with pytest.raises(ShapeError, match="without points"):
        write_c3d(empty, tmp_path / "empty.c3d")
    assert not (tmp_path / "empty.c3d").exists()


def test_written_file_as_another_reader_sees_it(rng, tmp_path):
    """What ezc3d reads of a written file: the header's words and the parameters readers rely
    on (float storage, its scale, rate, frame range, labels and their descriptions, units, the
    up axis, the virtual points, the subject, the empty analog and force-plate groups), and
    every sample, a missing one as residual -1."""
    mk = _synthetic(rng, frames=30, m=4)
    mk = MarkerTrajectories(mk.labels, mk.fps, mk.pos, mk.is_virtual, mk.subject,
                            {"first_frame": 12})
    path = tmp_path / "w.c3d"
    write_c3d(mk, path)
    assert path.stat().st_size % 512 == 0                       # whole blocks
    c = ezc3d.c3d(str(path))
    h, p = c["header"]["points"], c["parameters"]
    assert (h["size"], h["frame_rate"], h["first_frame"], h["last_frame"]) == (4, 240.0, 11, 40)
    point = {k: v["value"] for k, v in p["POINT"].items() if isinstance(v, dict) and "value" in v}
    assert point["SCALE"][0] == -1.0 and point["FRAMES"][0] == 30 and point["USED"][0] == 4
    assert point["DESCRIPTIONS"] == ["marker"] * 3 + ["virtual"]
    assert point["VIRTUAL"] == ["M3"] and point["UNITS"] == ["mm"]
    assert (point["X_SCREEN"], point["Y_SCREEN"]) == (["+X"], ["+Z"])
    assert p["SUBJECTS"]["NAMES"]["value"] == ["Ann"]
    assert p["ANALOG"]["USED"]["value"][0] == 0 and p["FORCE_PLATFORM"]["USED"]["value"][0] == 0
    pts = c["data"]["points"][:3].transpose(2, 1, 0)            # (F, M, 3) mm
    miss = np.isnan(mk.pos).any(-1)
    assert np.array_equal(c["data"]["meta_points"]["residuals"][0].T < 0, miss)
    assert np.isnan(pts[miss]).all()
    np.testing.assert_allclose(pts[~miss], mk.pos[~miss] * 1000.0, rtol=1e-6)


def test_writing_in_blocks_changes_no_byte(rng, tmp_path, monkeypatch):
    """A take is written a block of frames at a time (memory does not grow with it): the
    file is the same whatever the block."""
    from physmocap.io import _c3d_write
    mk = _synthetic(rng, frames=50, m=3)
    write_c3d(mk, tmp_path / "one.c3d")
    monkeypatch.setattr(_c3d_write, "BLOCK", 7)
    write_c3d(mk, tmp_path / "blocks.c3d")
    assert (tmp_path / "one.c3d").read_bytes() == (tmp_path / "blocks.c3d").read_bytes()


def test_over_255_points_split_labels_and_descriptions(tmp_path):
    """A parameter's dimension is one byte: 300 points go to LABELS / LABELS2 and
    DESCRIPTIONS / DESCRIPTIONS2 (ezc3d's writer left the descriptions out past 255)."""
    pos = np.full((2, 300, 3), 0.5)
    virt = np.arange(300) >= 290
    mk = MarkerTrajectories([f"P{i}" for i in range(300)], 100.0, pos, is_virtual=virt)
    write_c3d(mk, tmp_path / "many.c3d")
    p = ezc3d.c3d(str(tmp_path / "many.c3d"))["parameters"]["POINT"]
    assert len(p["LABELS"]["value"]) == 255 and len(p["LABELS2"]["value"]) == 45
    assert p["DESCRIPTIONS2"]["value"][-1] == "virtual" and p["DESCRIPTIONS"]["value"][0] == "marker"
    back = read_c3d(tmp_path / "many.c3d", points="all", up="z")
    assert back.labels == mk.labels and np.array_equal(back.is_virtual, virt)


def test_a_residual_past_the_residual_byte_is_kept_at_its_top(tmp_path):
    """The residual byte holds 255 mm at most: 300 mm is written as 255, not wrapped to 44."""
    pos = np.full((3, 1, 3), 0.5)
    res = np.array([[0.3], [0.0004], [0.01]])
    write_c3d(MarkerTrajectories(["A"], 100.0, pos, residual=res), tmp_path / "r.c3d")
    np.testing.assert_allclose(read_c3d(tmp_path / "r.c3d", up="z").residual[:, 0],
                               [0.255, 0.001, 0.010], atol=1e-9)


@pytest.mark.parametrize("labels, subject, match", [
    (["A" * 256], None, "label of more than 255 bytes"),
    (["A"], "S" * 300, "label of more than 255 bytes"),
    ([f"marker_number_{i:06d}" for i in range(12000)], None, "parameter section would take"),
])
def test_what_a_c3d_cannot_hold_is_refused(tmp_path, labels, subject, match):
    """One line, and no file (nor a temporary one) left behind."""
    mk = MarkerTrajectories(labels, 100.0, np.full((1, len(labels), 3), 0.5), subject=subject)
    with pytest.raises(ShapeError, match=match):
        write_c3d(mk, tmp_path / "x.c3d")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kwargs, frames, match", [
    ({"fps": 0.0}, None, "at 0.0 frames per second"),
    ({"fps": float("nan")}, None, "at nan frames per second"),
    ({"is_virtual": [True]}, None, r"is_virtual: expected shape \(2,\)"),
    ({}, lambda a, b: (np.zeros((b - a, 3, 3)), None), r"frames 0-5: expected positions"),
    ({}, lambda a, b: (np.zeros((b - a, 2, 3)), np.zeros((b - a, 3))), "and residuals"),
])
def test_frames_that_do_not_fit_are_refused(tmp_path, kwargs, frames, match):
    """``write_c3d_frames``' arguments and the blocks its ``frames`` gives: one line, no file."""
    from physmocap.io.c3d import write_c3d_frames
    args = {"fps": 100.0, **kwargs}
    frames = frames or (lambda a, b: (np.full((b - a, 2, 3), 0.5), None))
    with pytest.raises(ShapeError, match=match):
        write_c3d_frames(frames, 5, ["A", "B"], path=tmp_path / "x.c3d", **args)
    assert list(tmp_path.iterdir()) == []


def test_too_many_points_for_the_header_are_refused(tmp_path):
    mk = MarkerTrajectories([f"{i}" for i in range(65536)], 100.0, np.full((1, 65536, 3), 0.5))
    with pytest.raises(ShapeError, match="65536 points"):
        write_c3d(mk, tmp_path / "x.c3d")
    assert list(tmp_path.iterdir()) == []


def _blank_units(path: Path, new: bytes) -> None:
    b = bytearray(path.read_bytes())
    i = b.find(b"UNITS")  # first UNITS record is POINT:UNITS (one 2-char value 'mm')
    k = b.find(b"mm", i)
    assert 0 < k - i < 16
    b[k:k + 2] = new
    path.write_bytes(bytes(b))


@pytest.mark.parametrize("scale, new, unit, source", [
    (1.0, b"  ", "mm", "inferred"),
    (1e-3, b"  ", "m", "inferred"),
    (1.0, b"MM", "mm", "declared"),
])
def test_unit_inference_warns_with_file_name(data_dir, tmp_path, scale, new, unit, source):
    src = quiet_read(data_dir / "c3d/cmu/02_01.c3d")
    mk = MarkerTrajectories(labels=src.labels, fps=src.fps, pos=src.pos * scale)
    path = tmp_path / "nounit.c3d"
    write_c3d(mk, path)
    _blank_units(path, new)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        back = read_c3d(path)
    assert back.meta["unit"] == unit and back.meta["unit_source"] == source
    np.testing.assert_allclose(back.pos, src.pos, atol=1e-6)  # inferred unit undoes the scale
    unit_warnings = [str(w.message) for w in rec if "POINT:UNITS" in str(w.message)]
    if source == "inferred":
        assert len(unit_warnings) == 1 and "nounit.c3d" in unit_warnings[0]
        assert "\n" not in unit_warnings[0]
    else:
        assert not unit_warnings


def test_exact_origin_sample_reads_as_missing(tmp_path):
    pos = np.ones((3, 2, 3))
    pos[1, 0] = 0.0
    write_c3d(MarkerTrajectories(labels=["A", "B"], fps=100, pos=pos), tmp_path / "z.c3d")
    back = read_c3d(tmp_path / "z.c3d", up="z")
    assert np.isnan(back.pos[1, 0]).all() and np.isfinite(back.pos[[0, 2]]).all()


@pytest.mark.parametrize("first", ["A", "B"])
def test_two_subjects_of_one_size_name_the_first(tmp_path, first):
    """Labels of two subjects with as many markers each (``A:LFHD``, ``B:LFHD``): the subject
    is the first to appear, every run (it was chosen by the strings' hashes)."""
    import ezc3d
    other = "B" if first == "A" else "A"
    c = ezc3d.c3d()
    c["parameters"]["POINT"]["RATE"]["value"] = [100.0]
    c["parameters"]["POINT"]["LABELS"]["value"] = [f"{first}:LFHD", f"{first}:RFHD",
                                                   f"{other}:LFHD", f"{other}:RFHD"]
    c.add_parameter("POINT", "UNITS", ["mm"])
    pts = np.ones((4, 4, 5))
    pts[:3] = np.arange(1.0, 61.0).reshape(3, 4, 5) * 10.0
    c["data"]["points"] = pts
    c.write(str(tmp_path / "two.c3d"))
    m = read_c3d(tmp_path / "two.c3d", up="z")
    assert m.subject == first and list(m.labels[:2]) == ["LFHD", "RFHD"]


def test_first_frame_number_is_kept(rng, tmp_path):
    """The take's first frame number (``meta['first_frame']``) is written and read back, so a
    cleaned capture keeps the original's frame numbers (they began at 1)."""
    mk = _synthetic(rng)
    mk = MarkerTrajectories(mk.labels, mk.fps, mk.pos, mk.is_virtual, mk.subject,
                            {"first_frame": 331})
    write_c3d(mk, tmp_path / "f.c3d")
    back = read_c3d(tmp_path / "f.c3d", up="z", points="all")
    assert back.meta["first_frame"] == 331 and back.pos.shape == mk.pos.shape
    write_c3d(_synthetic(rng), tmp_path / "one.c3d")            # none given: frame 1
    assert read_c3d(tmp_path / "one.c3d", up="z").meta["first_frame"] == 1
    # past 65535 (a cleaned excerpt of a long take): the header's word cannot hold it, TRIAL
    # does (it was read back as 1)
    late = MarkerTrajectories(mk.labels, mk.fps, mk.pos, mk.is_virtual, mk.subject,
                              {"first_frame": 70_001})
    write_c3d(late, tmp_path / "late.c3d")
    back = read_c3d(tmp_path / "late.c3d", up="z", points="all")
    assert back.meta["first_frame"] == 70_001 and back.pos.shape == mk.pos.shape
    np.testing.assert_allclose(back.pos, mk.pos, atol=1e-6, equal_nan=True)


def test_a_take_of_no_frames_is_refused(rng, tmp_path):
    """One line (ezc3d raised a bare ZeroDivisionError), no file."""
    mk = _synthetic(rng)
    empty = MarkerTrajectories(mk.labels, mk.fps, mk.pos[:0], mk.is_virtual)
    with pytest.raises(ShapeError, match="0 frames"):
        write_c3d(empty, tmp_path / "e.c3d")
    assert not (tmp_path / "e.c3d").exists()


# ---------------------------------------------------------------------- takes over 65535 frames

def _long_take(F: int, markers: int = 32) -> MarkerTrajectories:
    # 32 markers: the data section passes 65535 blocks too (32 MB), where ezc3d's 16-bit
    # ROTATION:DATA_START wraps.
    rng = np.random.default_rng(3)
    pos = rng.normal(size=(F, markers, 3)).astype(np.float32) * 0.2 + [0.0, 0.0, 1.0]
    pos[70_000:70_010, 1] = np.nan            # a gap past the 16-bit frame limit
    return MarkerTrajectories(tuple(f"M{i}" for i in range(markers)), 120.0, pos)


def test_long_take_round_trip_keeps_every_frame(tmp_path):
    """ezc3d alone reads a take of more than 65535 frames (9 min at 120 Hz) as 65535 frames:
    the rest of the data section is read too, gaps and all."""
    m = _long_take(70_123)
    write_c3d(m, tmp_path / "long.c3d")
    back = read_c3d(tmp_path / "long.c3d", up="z")
    assert back.n_frames == 70_123
    assert np.array_equal(np.isnan(back.pos), np.isnan(m.pos))
    np.testing.assert_allclose(back.pos, m.pos, atol=1e-6, equal_nan=True)
    # one that starts at frame 50 (a cleaned capture keeps its numbers): every frame too
    m50 = MarkerTrajectories(m.labels, m.fps, m.pos, m.is_virtual, meta={"first_frame": 50})
    write_c3d(m50, tmp_path / "long50.c3d")
    back = read_c3d(tmp_path / "long50.c3d", up="z")
    assert back.n_frames == 70_123 and back.meta["first_frame"] == 50
    np.testing.assert_allclose(back.pos[-5:], m.pos[-5:], atol=1e-6, equal_nan=True)


def test_long_take_padding_is_not_read_as_frames(tmp_path):
    """Past 65535 frames ezc3d reads a file without ROTATION:DATA_START to its end, the last
    block's padding as frames (3 points: 48 bytes a frame, 4 frames of padding): the count
    is TRIAL's (it read 70 005 frames, the last four at the origin)."""
    m = _long_take(70_001, markers=3)
    for first in (1, 65_530):
        mk = MarkerTrajectories(m.labels, m.fps, m.pos, meta={"first_frame": first})
        write_c3d(mk, tmp_path / "long.c3d")
        back = read_c3d(tmp_path / "long.c3d", up="z")
        assert back.n_frames == 70_001 and back.meta["first_frame"] == first
        np.testing.assert_allclose(back.pos[-3:], m.pos[-3:], atol=1e-6)


def test_long_take_without_trial_parameters_counts_from_the_data(tmp_path):
    """A writer that states no length (plain ezc3d): the count comes from the data section,
    whose padding to a whole block is not read as frames."""
    F = 70_001
    c = ezc3d.c3d()
    c["parameters"]["POINT"]["RATE"]["value"] = [100.0]
    c["parameters"]["POINT"]["LABELS"]["value"] = ("A", "B")
    c["parameters"]["POINT"]["UNITS"]["value"] = ["mm"]
    pts = np.ones((4, 2, F))
    pts[:3] = np.arange(F)[None, None, :] % 1000 + 1.0
    c["data"]["points"] = pts
    c.write(str(tmp_path / "plain.c3d"))
    back = read_c3d(tmp_path / "plain.c3d", up="z")
    assert back.n_frames == F
    np.testing.assert_allclose(back.pos[-1, 0], (pts[:3, 0, -1]) / 1000.0)


def test_long_take_cut_short_is_refused(tmp_path):
    write_c3d(_long_take(70_123, markers=3), tmp_path / "long.c3d")
    raw = (tmp_path / "long.c3d").read_bytes()
    (tmp_path / "cut.c3d").write_bytes(raw[:-40_000])
    with pytest.raises(FileFormatError, match="truncated"):
        read_c3d(tmp_path / "cut.c3d", up="z")


@pytest.mark.parametrize("rel", [r for r, g in GOOD.items() if g[1] > 0])
def test_direct_frame_reader_matches_ezc3d(data_dir, rel):
    """The reader used past frame 65535 decodes real files (integer and float storage) exactly
    as ezc3d does, checked on their first frames."""
    path = data_dir / rel
    hdr = c3dmod._precheck(path)
    if hdr["processor"] != "intel":
        with pytest.raises(FileFormatError, match="Intel"):
            c3dmod._read_frames(path, hdr, 0, 1)
        return
    ref = c3dmod._c3d_child.load(str(path))
    n = min(ref["points"].shape[2], 50)
    pts, res = c3dmod._read_frames(path, hdr, 0, n)
    valid = ref["residuals"][:, :n] >= 0
    assert np.array_equal(res >= 0, valid)
    np.testing.assert_allclose(pts[:, valid], ref["points"][:, :, :n][:, valid], rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(res[valid], ref["residuals"][:, :n][valid], rtol=1e-6, atol=1e-6)


def test_subject_parameters(data_dir):
    """Plug-in Gait's subject measurements (PROCESSING group) come through as numbers in mm;
    a file without them has none."""
    m = read_c3d(data_dir / "c3d" / "pig" / "PiG_Calibration-FlatFoot-Full.c3d").meta
    p = m["subject_parameters"]
    assert (p["LKneeWidth"], p["RKneeWidth"], p["LAnkleWidth"], p["Height"]) == (
        105.0, 105.0, 55.0, 1505.0)
    assert all(isinstance(v, float) for v in p.values())
    assert "subject_parameters" not in read_c3d(data_dir / "c3d" / "cmu" / "16_57.c3d").meta


def test_residuals_are_read_and_written(data_dir, tmp_path):
    """Each sample's residual (m): > 0 measured, 0 computed, NaN missing. Written back in whole
    mm (the residual word's step), a measured sample at least 1 mm, so that it never reads as
    computed; all were written 0 before, every measured sample marked as computed."""
    m = read_c3d(data_dir / "c3d/cmu/02_01.c3d")
    r = m.residual
    assert r.shape == m.pos.shape[:2] and r.dtype == np.float32
    assert np.array_equal(np.isnan(r), np.isnan(m.pos).any(-1))
    assert 0.001 < np.nanmedian(r) < 0.02                       # millimetres, in metres
    sel = m.select(m.labels[3:1:-1])
    np.testing.assert_array_equal(sel.residual, r[:, [3, 2]])
    write_c3d(m, tmp_path / "rt.c3d")
    back = read_c3d(tmp_path / "rt.c3d")
    assert np.array_equal(np.isnan(back.residual), np.isnan(r))
    mm = r.astype(float) * 1000
    want = np.where(mm > 0, np.maximum(np.round(mm), 1), 0) / 1000   # whole mm, at least 1
    np.testing.assert_allclose(back.residual, want, atol=1e-6)
    assert np.array_equal(back.residual > 0, r > 0)                # measured stays measured
    tiny = MarkerTrajectories(m.labels, m.fps, m.pos, residual=np.where(np.isnan(r), np.nan,
                                                                          0.0002))
    write_c3d(tiny, tmp_path / "tiny.c3d")
    assert np.nanmin(read_c3d(tmp_path / "tiny.c3d").residual) == pytest.approx(0.001)


@pytest.mark.parametrize("residual, match", [
    (np.full((3, 2), 0.001), r"residual: expected shape \(4, 2\)"),
    (np.full((4, 2), -0.001), "residual must hold finite values >= 0"),
    (np.full((4, 2), np.inf), "residual must hold finite values >= 0"),
])
def test_bad_residuals_are_refused(residual, match):
    with pytest.raises(ShapeError, match=match):
        MarkerTrajectories(("a", "b"), 100.0, np.zeros((4, 2, 3)), residual=residual)
