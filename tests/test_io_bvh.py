"""BVH reading and writing: every shared file, round trips, conversions and hostile input."""
from __future__ import annotations

import hashlib
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from physmocap import FileFormatError, Motion, PhysmocapError, Skeleton, quat
from physmocap.io.bvh import loads_bvh, read_bvh, write_bvh

# (relative path glob, joints after re-rooting, fps, unit inferred)
FAMILIES = {
    "cmu/16_57.bvh": (31, 120.0, "cmu"),
    "cmu/131_0*.bvh": (31, 120.0, "cmu"),
    "bandai-namco/ds2_normal_locomotion/*.bvh": (21, 30.0, "cm"),
    "games105/*.bvh": (20, None, "m"),
}


def bvh_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "bvh").rglob("*.bvh"))


def test_every_family_reads_with_expected_shape(data_dir):
    for pattern, (joints, fps, unit) in FAMILIES.items():
        files = sorted((data_dir / "bvh").glob(pattern))
        assert files, pattern
        for f in files[:12]:
            m = read_bvh(f)
            assert len(m.skeleton) == joints, f
            assert fps is None or m.fps == fps, f
            assert m.meta["unit"] == unit and m.meta["unit_inferred"], f
            assert m.n_frames > 10


def test_bandai_root_motion_moves_to_hips(data_dir):
    f = data_dir / "bvh/bandai-namco/ds2_normal_locomotion/dataset-2_walk_normal_001.bvh"
    m = read_bvh(f)
    assert m.meta["dropped_root"] == "joint_Root"
    assert m.skeleton.names[0] == "Hips"
    travel = np.linalg.norm(m.root_pos[-1, :2] - m.root_pos[0, :2])
    assert travel > 1.0                               # a walk covers metres
    assert 0.7 < np.median(m.root_pos[:, 2]) < 1.1    # hips height in metres, Z up
    # without re-rooting, a translating non-root joint cannot be a fixed-limb skeleton
    with pytest.raises(FileFormatError, match="'Hips' changes its translation"):
        read_bvh(f, reroot=False)


def test_games105_hierarchy_orders_agree_by_name(data_dir):
    """The six files list branches in different orders; by name they are one skeleton."""
    ref = None
    for f in sorted((data_dir / "bvh/games105").glob("*.bvh")):
        sk = read_bvh(f).skeleton
        table = {n: (sk.names[p] if p >= 0 else None, tuple(np.round(o, 6)))
                 for n, p, o in zip(sk.names, sk.parents, sk.offsets)}
        if ref is None:
            ref = table
        assert table == ref, f


def test_z_up_heads_above_feet(data_dir):
    for f in bvh_files(data_dir)[::10]:
        m = read_bvh(f)
        names = [n.lower() for n in m.skeleton.names]
        head = next(i for i, n in enumerate(names) if "head" in n)
        foot = next(i for i, n in enumerate(names) if "foot" in n or "ankle" in n)
        up = m.gpos[:, head, 2] - m.gpos[:, foot, 2]
        assert np.median(up) > 0.8, f


def test_round_trip_every_file_within_a_micrometre(data_dir, tmp_path):
    worst = 0.0
    for f in bvh_files(data_dir):
        m = read_bvh(f)
        out = tmp_path / "rt.bvh"
        write_bvh(m, out)
        m2 = read_bvh(out, unit="cm")
        assert m2.skeleton.names == m.skeleton.names
        assert m2.fps == m.fps and m2.n_frames == m.n_frames
        worst = max(worst, float(np.abs(m2.gpos - m.gpos).max()))
        assert np.allclose(m2.skeleton.offsets, m.skeleton.offsets, atol=1e-8)
    assert worst < 1e-6, worst


def _written_angles(path: Path, n_frames: int) -> np.ndarray:
    """The rotation channels of a file ``write_bvh`` wrote (root: after its 3 positions)."""
    rows = path.read_text().split("Frame Time:")[1].splitlines()[1:]
    vals = np.array([[float(v) for v in r.split()] for r in rows[:n_frames]])
    return vals[:, 3:].reshape(n_frames, -1, 3)


def test_written_file_is_portable_flavour(data_dir, tmp_path):
    m = read_bvh(data_dir / "bvh/cmu/131_01.bvh")
    out = tmp_path / "o.bvh"
    write_bvh(m, out, order="ZXY")
    lines = out.read_text().splitlines()
    chans = [l.split() for l in lines if l.strip().startswith("CHANNELS")]
    assert chans[0] == ["CHANNELS", "6", "Xposition", "Yposition", "Zposition",
                        "Zrotation", "Xrotation", "Yrotation"]
    assert all(c == ["CHANNELS", "3", "Zrotation", "Xrotation", "Yrotation"] for c in chans[1:])
    ft = next(l for l in lines if l.startswith("Frame Time"))
    assert float(ft.split(":")[1]) == pytest.approx(1 / 120, rel=1e-9)
    for order in ("XYZ", "YZX"):  # any fixed order reads back to the same motion
        write_bvh(m, out, order=order)
        assert np.abs(read_bvh(out, unit="cm").gpos - m.gpos).max() < 1e-6


@pytest.mark.parametrize("unit", ["m", "cm", "mm", "in", "ft"])
def test_every_unit_write_bvh_writes_is_inferred_back(data_dir, tmp_path, unit):
    """Written in feet, a file was read back in CMU units, the body 0.24 m tall, silently."""
    m = read_bvh(data_dir / "bvh/cmu/131_01.bvh")
    write_bvh(m, tmp_path / "o.bvh", unit=unit)
    back = read_bvh(tmp_path / "o.bvh")
    assert back.meta["unit"] == unit
    assert np.abs(back.gpos - m.gpos).max() < 1e-5


def test_reading_never_modifies_input(data_dir):
    f = data_dir / "bvh/cmu/16_57.bvh"
    h = hashlib.sha256(f.read_bytes()).hexdigest()
    read_bvh(f)
    assert hashlib.sha256(f.read_bytes()).hexdigest() == h


SMALL = """HIERARCHY
ROOT Hips
{
\tOFFSET 0 0 0
\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
\tJOINT Spine
\t{
\t\tOFFSET 0 10 0
\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\tEnd Site
\t\t{
\t\t\tOFFSET 0 50 0
\t\t}
\t}
\tJOINT Leg
\t{
\t\tOFFSET 10 -5 0
\t\tCHANNELS 3 Xrotation Yrotation Zrotation
\t\tJOINT Shin
\t\t{
\t\t\tOFFSET 0 -45 0
\t\t\tCHANNELS 1 Xrotation
\t\t\tEnd Site
\t\t\t{
\t\t\t\tOFFSET 0 -45 0
\t\t\t}
\t\t}
\t}
}
MOTION
Frames: 2
Frame Time: 0.0333333
0 90 0 0 0 0 0 0 0 0 0 0 0
1.0e1 90 0 90 0 0 30 0 0 0 0 0 45
"""


def test_small_file_semantics():
    m = loads_bvh(SMALL, unit="cm")
    assert m.fps == 30.0 and len(m.skeleton) == 4
    # Y-up file: the root at file (0, 90, 0) cm is 0.9 m up in Z.
    assert np.allclose(m.root_pos[0], [0, 0, 0.9])
    assert np.allclose(m.gpos[0, 1], [0, 0, 1.0])             # Spine 10 cm above
    assert np.allclose(m.gpos[0, 3], [0.1, 0, 0.4])           # Shin at 90-5-45 cm
    # Frame 1: root turned 90 degrees about file Z (= world -Y); Spine's +Y offset turns to -X.
    assert np.allclose(m.gpos[1, 1], [0.1 - 0.1, 0, 0.9], atol=1e-9)
    assert np.allclose(m.skeleton.end_sites[1], [0, 0.5, 0])
    crlf = loads_bvh(SMALL.replace("\n", "\r\n"), unit="cm")
    assert np.allclose(crlf.gpos, m.gpos)
    cr = loads_bvh(SMALL.replace("\n", "\r"), unit="cm")          # old Mac line ends
    assert np.allclose(cr.gpos, m.gpos)
    named = loads_bvh(SMALL.replace("End Site", "End Site Tip", 1), unit="cm")
    assert np.allclose(named.gpos, m.gpos)      # a name after End Site is ignored


def test_position_channels_replace_offset():
    text = SMALL.replace("CHANNELS 3 Zrotation Xrotation Yrotation",
                         "CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation")
    text = text.replace("0 90 0 0 0 0 0 0 0 0 0 0 0", "0 90 0 0 0 0 0 10 0 0 0 0 0 0 0 0")
    text = text.replace("1.0e1 90 0 90 0 0 30 0 0 0 0 0 45",
                        "1.0e1 90 0 90 0 0 0 10 0 30 0 0 0 0 0 45")
    m = loads_bvh(text, unit="cm")
    assert np.allclose(m.skeleton.offsets[1], [0, 0.1, 0])
    moving = text.replace("0 90 0 0 0 0 0 10 0", "0 90 0 0 0 0 0 12 0")
    with pytest.raises(FileFormatError, match="changes its translation"):
        loads_bvh(moving, unit="cm")
    # no frames: a joint's translation channels leave it its header offset (an IndexError on
    # the empty frames before, and every command that read such a file failed with it)
    empty = loads_bvh(_hier(text) + "MOTION\nFrames: 0\nFrame Time: 0.0333333\n", unit="cm")
    assert empty.n_frames == 0 and np.allclose(empty.skeleton.offsets[1], [0, 0.1, 0])


def _hier(text: str) -> str:
    """The hierarchy part of a BVH text (up to ``MOTION``)."""
    return text[:text.index("MOTION")]


def _motion(text: str) -> str:
    return text[text.index("MOTION"):]


@pytest.mark.parametrize("mutate, msg", [
    (lambda t: t.replace("MOTION", "MOTON"), "no MOTION"),
    (lambda t: t.replace("HIERARCHY", "HIERARCHI"), "HIERARCHY"),
    (lambda t: t[:t.index("Frame Time")], "Frames"),
    (lambda t: t.replace("Frames: 2", "Frames: 3"), "truncated or a CHANNELS"),
    (lambda t: t.replace("Frames: 2", "Frames: two"), "whole number"),
    (lambda t: t.replace("Frame Time: 0.0333333", "Frame Time: 0"), "positive"),
    (lambda t: t.replace("0 0 45", "0 0 abc"), "not a number"),
    (lambda t: t.replace("0 0 45", "0 0 nan"), "NaN"),
    (lambda t: t.replace("0 0 45", "0 0 1e308"), r"frame 1, channel 12\), beyond"),
    (lambda t: t.replace("1.0e1 90", "-2e9 90"), r"frame 1, channel 0\), beyond"),
    (lambda t: t.replace("OFFSET 0 10 0", "OFFSET 0 1e308 0"), "OFFSET: '1e308' is not a finite"),
    (lambda t: t.replace("OFFSET 0 50 0", "OFFSET 0 inf 0"), "OFFSET: 'inf' is not a finite"),
    (lambda t: t.replace("OFFSET 0 10 0", "OFFSET 0 nan 0"), "OFFSET: 'nan' is not a finite"),
    (lambda t: t.replace("CHANNELS 1 Xrotation", "CHANNELS 1 Wrotation"), "unknown channel"),
    (lambda t: t.replace("CHANNELS 1 Xrotation", "CHANNELS 9 Xrotation"), "0..6"),
    (lambda t: t.replace("OFFSET 0 10 0", "OFFSET 0 x 0"), "OFFSET"),
    (lambda t: t.replace("JOINT Leg", "JOINT Spine"), "duplicate"),
    (lambda t: t[:t.rindex("}")] + "\nMOTION\nFrames: 0\nFrame Time: 1\n", "not closed"),
    (lambda t: t.replace("ROOT Hips", "ROOT Hips }"), "unbalanced|unexpected|outside"),
    (lambda t: _hier(t)[:_hier(t).index("OFFSET 0 10 0") + 11] + "\n" + _motion(t),
     "ends inside OFFSET; the file is truncated"),
    (lambda t: _hier(t) + "ROOT B\n{\nOFFSET 0 0 0\n}\n" + _motion(t), "more than one ROOT"),
    (lambda t: _hier(t) + "JOINT B\n{\nOFFSET 0 0 0\n}\n" + _motion(t), "JOINT outside"),
    (lambda t: _hier(t) + "End Site\n{\nOFFSET 0 0 0\n}\n" + _motion(t), "End Site outside"),
    (lambda t: t.replace("JOINT Spine\n\t{", "JOINT Spine\n\t{ {"), "'{' without a ROOT"),
    (lambda t: t.replace("HIERARCHY\n", "HIERARCHY\nOFFSET 0 0 0\n"), "OFFSET outside a joint"),
    (lambda t: t.replace("OFFSET 0 50 0", "OFFSET 0 50 0 CHANNELS 1 Xrotation"),
     "CHANNELS outside a joint"),
    (lambda t: "HIERARCHY\n" + _motion(t), "no ROOT joint"),
    (lambda t: t.replace("\t\tOFFSET 0 10 0\n", ""), "joint 'Spine' has no OFFSET"),
    (lambda t: "HIERARCHY\nROOT r\n{\nOFFSET 0 0 0\n" + "JOINT j\n{\nOFFSET 0 1 0\n}\n" * 10_000
     + "}\n" + _motion(t), "more than 10000 joints"),
])
def test_bad_input_gives_one_clear_error(mutate, msg):
    with pytest.raises(FileFormatError, match=msg) as e:
        loads_bvh(mutate(SMALL), unit="cm")
    assert "\n" not in str(e.value)


def test_file_errors(tmp_path):
    with pytest.raises(FileFormatError, match="cannot read"):
        read_bvh(tmp_path / "nope.bvh")
    (tmp_path / "empty.bvh").write_text("")
    with pytest.raises(FileFormatError, match="empty"):
        read_bvh(tmp_path / "empty.bvh")
    (tmp_path / "bin.bvh").write_bytes(b"\x00\x01HIERARCHY")
    with pytest.raises(FileFormatError, match="binary"):
        read_bvh(tmp_path / "bin.bvh")
    with pytest.raises(PhysmocapError, match="unknown length unit"):
        loads_bvh(SMALL, unit="furlong")
    flat = re.sub(r"OFFSET [-0-9. ]+", "OFFSET 0 0 0", SMALL)      # no extent to infer a unit from
    (tmp_path / "flat.bvh").write_text(flat)
    with pytest.raises(FileFormatError, match="flat.bvh: cannot infer the length unit"):
        read_bvh(tmp_path / "flat.bvh")


def test_write_refuses_a_rotation_order_that_is_not_xyz(tmp_path):
    with pytest.raises(PhysmocapError, match="'XYY' must be a permutation of XYZ"):
        write_bvh(loads_bvh(SMALL, unit="cm"), tmp_path / "o.bvh", order="xyy")
    for bad in (-1, 16, 2.5, float("nan")):        # numpy's format ValueError before
        with pytest.raises(PhysmocapError, match="decimals must be a whole number 0..15"):
            write_bvh(loads_bvh(SMALL, unit="cm"), tmp_path / "o.bvh", decimals=bad)
    assert not (tmp_path / "o.bvh").exists()


def test_writer_is_atomic_and_checks_names(tmp_path):
    m = loads_bvh(SMALL, unit="cm")
    out = tmp_path / "o.bvh"
    out.write_text("old")
    bad = Motion(Skeleton(["a b", "c"], [-1, 0], m.skeleton.offsets[:2]), 30,
                 m.root_pos, m.lrot[:, :2])
    with pytest.raises(PhysmocapError, match="cannot be written"):
        write_bvh(bad, out)
    assert out.read_text() == "old"
    with pytest.raises(PhysmocapError, match="output folder"):
        write_bvh(m, tmp_path / "missing" / "o.bvh")
    assert [p.name for p in tmp_path.iterdir()] == ["o.bvh"]   # no temporary left behind


def test_non_ascii_joint_names_round_trip(tmp_path):
    """A joint name the reader took (UTF-8, e.g. ``Hüfte``) is written back (UTF-8, as Blender
    reads it): writing it raised a bare UnicodeEncodeError."""
    m = loads_bvh(SMALL.replace("Spine", "Hüfte"), unit="cm")
    write_bvh(m, tmp_path / "u.bvh")
    back = read_bvh(tmp_path / "u.bvh", unit="cm")
    assert "Hüfte" in back.skeleton.names
    assert np.abs(back.gpos - m.gpos).max() < 1e-6


def test_deep_chain_round_trips(tmp_path):
    J = 1500  # deeper than Python's recursion limit
    sk = Skeleton([f"j{i}" for i in range(J)], np.arange(J) - 1, np.tile([0, 0.001, 0], (J, 1)))
    m = Motion(sk, 60, np.zeros((2, 3)), quat.identity((2, J)))
    write_bvh(m, tmp_path / "deep.bvh")
    m2 = read_bvh(tmp_path / "deep.bvh", unit="cm")
    assert np.abs(m2.gpos - m.gpos).max() < 1e-6


def test_long_motion_written_in_blocks_round_trips(tmp_path):
    """Frames are formatted in blocks straight into the file: block edges lose nothing."""
    from physmocap.io import bvh as bvhmod
    rng = np.random.default_rng(5)
    F = 2 * bvhmod._WRITE_BLOCK + 7
    sk = Skeleton(["Hips", "Spine", "Head"], [-1, 0, 1], [[0, 0, 1], [0, 0, 0.2], [0, 0, 0.3]])
    m = Motion(sk, 120, rng.normal(size=(F, 3)), quat.normalize(rng.normal(size=(F, 3, 4))))
    write_bvh(m, tmp_path / "long.bvh")
    m2 = read_bvh(tmp_path / "long.bvh", unit="cm")
    assert m2.n_frames == F
    assert np.abs(m2.gpos - m.gpos).max() < 1e-6


def test_a_body_motion_is_written_with_an_upright_rest(tmp_path):
    """A motion on the body template (Z up: a solve's, a match's, a playback's) is written with
    its rest pose standing along the file's up axis, its root's angles small in an upright
    frame (not at -90°, where the other two are undefined); read back and turned to the
    template's frames (``rest_turn``) it is the motion written. A file read and written again
    keeps its own frames (its offsets as read)."""
    from physmocap.scene import load_body
    from physmocap.skeleton import rest_turn
    sk = load_body().skeleton
    F = 20
    yaw = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), np.linspace(0.0, 1.0, F))
    lrot = quat.identity((F, len(sk)))
    lrot[:, 0] = yaw
    lrot[:, sk.index("LeftLowerLeg")] = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), 0.5)
    m = Motion(sk, 60, np.tile([0.0, 0.0, 0.95], (F, 1)), lrot)
    out = tmp_path / "body.bvh"
    write_bvh(m, out)
    back = read_bvh(out, unit="cm")
    rest = back.skeleton.rest_positions()
    rest = rest - rest[0]                        # the file's offsets summed: file axes, Y up
    assert rest[sk.index("Head"), 1] > 0.4 and rest[sk.index("LeftFoot"), 1] < -0.7
    assert rest[sk.index("LeftHand"), 0] > 0.5   # the T-pose's left arm to +X: facing +Z
    assert np.abs(rest[:, 2]).max() < 0.2        # no joint far along the facing
    root = _written_angles(out, F)[:, 0]         # Z, X, Y: the root turns about Y only
    assert np.abs(root[:, :2]).max() < 1e-5 and np.ptp(root[:, 2]) > 50.0
    np.testing.assert_allclose(back.gpos, m.gpos, atol=1e-6)
    C = rest_turn(back.skeleton, sk)
    assert not np.allclose(C, np.eye(3))
    same = back.turned_rest(C)
    np.testing.assert_allclose(same.skeleton.offsets, sk.offsets, atol=1e-8)
    np.testing.assert_allclose(np.abs((same.lrot * m.lrot).sum(-1)), 1.0, atol=1e-9)
    write_bvh(back, tmp_path / "again.bvh")
    again = read_bvh(tmp_path / "again.bvh", unit="cm")
    np.testing.assert_allclose(again.skeleton.offsets, back.skeleton.offsets, atol=1e-8)
@pytest.mark.parametrize("order", ["ZXY", "XYZ", "YZX"])
def test_written_angles_are_continuous(tmp_path, order):
    """A root turning three times round and a knee flexing to 150° (past the 90° where a middle
    Euler angle turns back) are written without a jump between frames: a tool that interpolates
    the curves turns them the short way; every frame keeps its rotation. Over block edges
    too."""
    from physmocap.io import bvh as bvhmod
    F = bvhmod._WRITE_BLOCK + 300
    t = np.linspace(0.0, 1.0, F)
    sk = Skeleton(["Hips", "Knee"], [-1, 0], [[0, 0, 1], [0, 0, -0.4]])
    lrot = np.empty((F, 2, 4))
    lrot[:, 0] = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), 6 * np.pi * t)
    # the knee flexes about the axis that is the middle of ``order`` in the file (its x, y, z
    # are the template's y, z, x: ``upright_turn``)
    file_axis = {"X": [0, 1.0, 0], "Y": [0, 0, 1.0], "Z": [1.0, 0, 0]}[order[1]]
    lrot[:, 1] = quat.from_axis_angle(np.array(file_axis), np.radians(150.0) * np.sin(np.pi * t))
    m = Motion(sk, 120, np.zeros((F, 3)), lrot)
    out = tmp_path / "turn.bvh"
    write_bvh(m, out, order=order)
    ang = _written_angles(out, F)
    step = np.abs(np.diff(ang, axis=0)).max()
    # 1080° over F frames is 0.26° a frame, the knee at most 0.12°; the rounding 1e-6
    assert step < 0.5, step
    assert np.ptp(ang[:, 0]) > 1000.0              # the root's turn is written as it goes
    assert np.abs(ang[:, 1]).max() > 149.0         # the knee's 150°, not 30° and a flip
    m2 = read_bvh(out, unit="cm")
    assert np.abs(m2.gpos - m.gpos).max() < 1e-6


def test_continuous_euler_keeps_each_rotation(rng):
    """Random rotations of many joints: each frame's angles still give its rotation, and
    given the frame before (``prev``) the first frame is chosen near it."""
    from scipy.spatial.transform import Rotation

    from physmocap.io.bvh import continuous_euler
    q = quat.normalize(rng.normal(size=(50, 7, 4)))
    e = Rotation.from_quat(q.reshape(-1, 4)).as_euler("ZXY", degrees=True).reshape(50, 7, 3)
    prev = e[0] + 720.0
    for c in (continuous_euler(e), continuous_euler(e, prev)):
        back = Rotation.from_euler("ZXY", c.reshape(-1, 3), degrees=True).as_quat()
        assert np.allclose(np.abs((back.reshape(50, 7, 4) * q).sum(-1)), 1.0, atol=1e-9)
    assert np.allclose(continuous_euler(e, prev)[0], prev)


# --- hostile input: anything goes in, only PhysmocapError comes out ---------------------------

TOKENS = ["HIERARCHY", "ROOT", "JOINT", "End", "Site", "{", "}", "OFFSET", "CHANNELS", "MOTION",
          "Frames:", "Frame", "Time:", "Xposition", "Zrotation", "Yrotation", "3", "6", "0", "-1",
          "1e308", "nan", "inf", "99999999999999", "a", "\n", "\r\n", "\t"]


def _only_physmocap_errors(text: str) -> None:
    """A hostile text reads, or fails with one line of ``PhysmocapError``; and no numpy
    warning on the way (an OFFSET of 1e308 overflowed in the bone lengths' squares)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            loads_bvh(text)
        except PhysmocapError as e:
            assert "\n" not in str(e)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(0, len(SMALL)))
def test_truncated_files(cut):
    _only_physmocap_errors(SMALL[:cut])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.sampled_from(TOKENS)), max_size=6))
def test_token_mutations(edits):
    toks = SMALL.split(" ")
    for pos, tok in edits:
        toks[pos % len(toks)] = tok
    _only_physmocap_errors(" ".join(toks))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=80))
def test_token_soup(toks):
    _only_physmocap_errors(" ".join(["HIERARCHY"] + toks))


@settings(max_examples=100, deadline=None)
@given(frames=st.integers(0, 10**12), chans=st.integers(-3, 12), depth=st.integers(1, 3000))
def test_absurd_counts_and_deep_hierarchies(frames, chans, depth):
    head = "HIERARCHY\n" + "".join(
        f"{'ROOT' if i == 0 else 'JOINT'} j{i}\n{{\nOFFSET 0 1 0\nCHANNELS {chans} "
        + " ".join(["Xrotation"] * max(chans, 0)) + "\n" for i in range(depth))
    text = head + "}\n" * depth + f"MOTION\nFrames: {frames}\nFrame Time: 0.01\n" + "0 " * 10
    _only_physmocap_errors(text)


@pytest.mark.parametrize("order", ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "ZX", "Y"])
def test_euler_matches_scipy_intrinsic(order, rng):
    from scipy.spatial.transform import Rotation

    from physmocap.io.bvh import _euler_to_quat

    deg = rng.uniform(-400, 400, size=(200, len(order)))
    ref = Rotation.from_euler(order, deg, degrees=True).as_quat()
    q = _euler_to_quat(order, deg)
    assert np.allclose(np.abs(np.sum(q * ref, -1)), 1.0)


def test_cmu_16_57_bvh_matches_the_c3d_joint_centres(data_dir):
    """CMU's BVH of 16_57 against the Vicon joint centres stored in the C3D of the same take.

    Proves units (1/0.45 inch), axes, Euler order (ZYX) and FK together. The CMU pipeline turned
    the lab's horizontal axes by exactly 90 degrees about the vertical: a fixed, stated transform
    (BVH z -> lab x), not a fit. BVH frame 0 is a T-pose; frames 1..268 are the C3D's 268 frames.
    """
    from physmocap.io.c3d import read_c3d

    centres = read_c3d(data_dir / "c3d/cmu/16_57.c3d", points="all")
    m = read_bvh(data_dir / "bvh/cmu/16_57.bvh")
    assert m.meta["unit"] == "cmu" and m.n_frames == centres.n_frames + 1
    turn = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    gpos = m.gpos[1:] @ turn.T
    pairs = {"LHJ0": "LeftUpLeg", "RHJ0": "RightUpLeg", "LFE0": "LeftLeg", "RFE0": "RightLeg",
             "LTI0": "LeftFoot", "RTI0": "RightFoot"}
    for c3d_name, joint in pairs.items():
        d = np.linalg.norm(centres.pos[:, centres.index(c3d_name)]
                           - gpos[:, m.skeleton.index(joint)], axis=-1)
        assert not np.isnan(d).any()
        assert d.max() < 0.005, (c3d_name, d.max())   # measured: 0.1 mm (int16 quantisation)
