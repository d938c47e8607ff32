"""``solver/compare.py``: two solvers' frames of one segment, compared over a take; and the
Plug-in Gait walk's solved segments against the frames Plug-in Gait stored in the file."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import ShapeError
from physmocap.solver.compare import frames_from_points, segment_agreement

Z = np.array([0.0, 0.0, 1.0])


def rot(axis, deg) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` about ``axis`` by ``deg`` (scalar or ``(F,)``)."""
    deg = np.asarray(deg, dtype=float)
    ax = np.asarray(axis, dtype=float)
    ax = np.broadcast_to(ax / np.linalg.norm(ax), deg.shape + (3,))
    return quat.to_matrix(quat.from_axis_angle(ax, np.radians(deg)))


@pytest.fixture
def ours(rng):
    """A segment turning about over 200 frames (world frames of it, (200, 3, 3))."""
    return quat.to_matrix(quat.from_scaled_axis(rng.normal(scale=0.6, size=(200, 3))))


def test_two_frames_rigid_on_one_segment_agree_all_through(ours):
    fixed = rot([1.0, 2.0, 0.5], 25.0)
    a = segment_agreement(ours, ours @ fixed, Z)
    assert a["offset_deg"] == pytest.approx(25.0, abs=1e-6)
    assert a["residual_p95_deg"] < 1e-5 and a["frames"] == 200


def test_axes_named_otherwise_are_not_an_offset(ours):
    """A frame whose Z runs along X (Plug-in Gait's foot) is renamed, not 90° off: only the
    7° it sits beyond the renaming count."""
    rename = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    a = segment_agreement(ours, ours @ rot(Z, 7.0) @ rename, Z)
    assert a["offset_deg"] == pytest.approx(7.0, abs=1e-6)


def test_what_moves_apart_is_split_into_twist_and_swing(ours):
    wobble = 6.0 * np.sin(np.linspace(0.0, 6 * np.pi, len(ours)))
    twist = segment_agreement(ours, ours @ rot(Z, wobble), Z)
    swing = segment_agreement(ours, ours @ rot([1.0, 0.0, 0.0], wobble), Z)
    assert twist["twist_median_deg"] == pytest.approx(np.median(np.abs(wobble)), abs=0.05)
    assert twist["swing_median_deg"] < 1e-3
    assert swing["swing_median_deg"] == pytest.approx(np.median(np.abs(wobble)), abs=0.05)
    assert swing["twist_median_deg"] < 1e-3
    assert twist["residual_p95_deg"] == pytest.approx(np.percentile(np.abs(wobble), 95),
                                                      abs=0.05)


def test_missing_reference_frames_are_skipped(ours):
    ref = ours @ rot(Z, 10.0)
    ref[50:80] = np.nan
    a = segment_agreement(ours, ref, Z)
    assert a["frames"] == 170 and a["residual_p95_deg"] < 1e-5


def test_frames_from_points_are_rotations_and_follow_their_points(rng):
    o = rng.normal(size=(30, 3))
    true = quat.to_matrix(quat.from_scaled_axis(rng.normal(size=(30, 3))))
    # axis points 10 cm out along each axis, with 1 mm of noise (not quite orthogonal)
    a, l, p = (o + 0.1 * true[:, :, i] + rng.normal(scale=1e-3, size=(30, 3)) for i in range(3))
    l[4] = np.nan
    r = frames_from_points(o, a, l, p)
    assert np.isnan(r[4]).all()
    ok = np.ones(30, bool)
    ok[4] = False
    assert np.allclose(r[ok] @ np.swapaxes(r[ok], 1, 2), np.eye(3), atol=1e-9)
    assert np.allclose(np.linalg.det(r[ok]), 1.0)
    assert np.degrees(quat.angle(quat.from_matrix(r[ok]), quat.from_matrix(true[ok]))).max() < 2


@pytest.mark.parametrize("call, match", [
    (lambda: segment_agreement(np.eye(3), np.eye(3), Z), r"must be \(F, 3, 3\)"),
    (lambda: segment_agreement(np.tile(np.eye(3), (4, 1, 1)), np.tile(np.eye(3), (5, 1, 1)), Z),
     r"must be \(F, 3, 3\) of one shape"),
    (lambda: segment_agreement(np.tile(np.eye(3), (4, 1, 1)), np.tile(np.eye(3), (4, 1, 1)),
                               np.zeros(3)), "axis must be a non-zero"),
    (lambda: segment_agreement(np.tile(np.eye(3), (4, 1, 1)), np.full((4, 3, 3), np.nan), Z),
     "no frame where both"),
    (lambda: frames_from_points(np.zeros((4, 3)), np.zeros((4, 3)), np.zeros((4, 3)),
                                np.zeros((5, 3))), "of one shape"),
])
def test_bad_input_is_one_shape_error(call, match):
    with pytest.raises(ShapeError, match=match):
        call()


def test_pig_agreement_takes_only_what_the_file_holds(data_dir):
    """A capture without Plug-in Gait's frames gives nothing; points of other frames are one
    error, not a wrong comparison."""
    from physmocap.io.c3d import read_c3d
    from physmocap.motion import Motion
    from physmocap.scene import load_body
    from physmocap.solver.compare import pig_agreement

    cmu = read_c3d(data_dir / "c3d/cmu/16_57.c3d", points="all")    # Vicon centres, no frames
    sk = load_body().skeleton
    still = Motion(sk, cmu.fps, np.zeros((cmu.n_frames, 3)),
                   np.tile([0.0, 0.0, 0.0, 1.0], (cmu.n_frames, len(sk), 1)))
    assert pig_agreement(still, cmu) == {}
    with pytest.raises(ShapeError, match="pig_agreement: 268 frames of points for a 10-frame"):
        pig_agreement(still[:10], cmu)


def test_a_captures_plug_in_gait_comparison_never_fails_a_solve(data_dir, tmp_path,
                                                                monkeypatch):
    """It reads the capture's file again: a file gone, one of other frames or one too big to
    read whole again leaves it out."""
    import shutil
    from physmocap.solver import compare
    from physmocap.solver.compare import capture_pig_agreement
    from physmocap.io.c3d import read_c3d
    from physmocap.motion import Motion
    from physmocap.scene import load_body

    src = tmp_path / "w.c3d"
    shutil.copy(data_dir / "c3d/pig/PiG_Motion-FlatFoot-Full.c3d", src)
    t = read_c3d(src)
    sk = load_body().skeleton
    still = Motion(sk, t.fps, np.zeros((t.n_frames, 3)),
                   np.tile([0.0, 0.0, 0.0, 1.0], (t.n_frames, len(sk), 1)))
    assert set(capture_pig_agreement(t, still)) >= {"PEL", "LFE", "RHN"}
    assert capture_pig_agreement(t, still[:10]) == {}           # other frames
    monkeypatch.setattr(compare, "PIG_READ_BYTES", 1000)
    assert capture_pig_agreement(t, still) == {}                # too big to read again
    monkeypatch.undo()
    src.unlink()
    assert capture_pig_agreement(t, still) == {}                # the file gone


def test_the_plug_in_gait_walk_moves_like_plug_in_gaits_own_segments(data_dir):
    """The walk solved with its static trial, against the segment frames Plug-in Gait stored in
    the same file (never an input). The pelvis swung away from Plug-in Gait's by 8.5° (p95)
    while a heel's plant outlasted its lift-off (``detect_plants``' ``move_off``); the head is
    level like Plug-in Gait's, whose head offset comes from the static trial."""
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import load_body, pick_markerset
    from physmocap.solver.pipeline import solve_capture

    pig = data_dir / "c3d/pig"
    t = read_c3d(pig / "PiG_Motion-FlatFoot-Full.c3d")
    res = solve_capture(t, pick_markerset(t.labels), load_body(),
                        static=read_c3d(pig / "PiG_Calibration-FlatFoot-Full.c3d"))
    allp = read_c3d(pig / "PiG_Motion-FlatFoot-Full.c3d", points="all", up="z")
    rot_ = quat.to_matrix(res.motion.grot)

    def agree(key, ours, axis=Z):
        ref = frames_from_points(*(allp.pos[:, allp.index(key + c)] for c in "OALP"))
        return segment_agreement(rot_[:, res.motion.skeleton.index(ours)], ref, axis)

    pelvis = agree("PEL", "Hips")
    assert pelvis["residual_p95_deg"] < 5.0 and pelvis["offset_deg"] < 2.0
    head = agree("HED", "Head")
    assert head["offset_deg"] < 2.0 and head["residual_p95_deg"] < 2.0
    for side in "LR":
        name = "Left" if side == "L" else "Right"
        for key, ours in (("FE", "UpperLeg"), ("TI", "LowerLeg")):
            assert agree(side + key, name + ours)["residual_median_deg"] < 5.0, side + key
