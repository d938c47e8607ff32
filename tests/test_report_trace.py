"""The per-frame solve record: rebuilt from files it must reproduce the solve's own figures."""
from __future__ import annotations

import json

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import FileFormatError, PhysmocapError
from physmocap.motion import Motion
from physmocap.report.solve_html import foot_skate
from physmocap.report.trace import (fit_marker_offsets, joint_angles, limit_hits,
                                    trace_from_files)
from physmocap.scene import load_body


def test_rebuilt_trace_reproduces_the_reports_figures(demo_solve):
    """`physmocap report` recomputes from BVH + C3D; its arrays give the figures `solve` printed."""
    tr, rep = trace_from_files(demo_solve["json"])
    assert tr.n_frames == rep["frames"] and tr.labels == tuple(rep["markers"])
    rms = np.sqrt(np.nanmean(tr.residual ** 2, axis=0)) * 1000
    want = np.array([rep["per_marker_rms_all_mm"][l] for l in tr.labels])
    # The offsets are stored to 0.01 mm and the BVH to 1e-6 cm: agreement to 0.05 mm.
    np.testing.assert_allclose(rms, want, atol=0.05)
    # per marker as overall, without the outliers: the swapped knee's RMS was its outliers'
    inlier = np.where(tr.outliers, np.nan, tr.residual)
    rms_in = np.sqrt(np.nanmean(inlier ** 2, axis=0)) * 1000
    np.testing.assert_allclose(rms_in, [rep["per_marker_rms_mm"][l] for l in tr.labels],
                               atol=0.05)
    knee = tr.labels.index("LKNE")
    assert rep["per_marker_rms_all_mm"]["LKNE"] > 5 * rep["per_marker_rms_mm"]["LKNE"]
    assert rms_in[knee] < 10
    # frames with a marker over 40 mm: the swap's are explained, so fewer are left unexplained
    over = (np.nan_to_num(tr.residual) > 0.040).any(axis=1).sum()
    assert rep["frames_over_40mm_all"] == over > 0
    assert 0 <= rep["frames_over_40mm_unexplained"] < over
    assert {l: int(n) for l, n in zip(tr.labels, tr.outliers.sum(0)) if n} == rep["outlier_frames"]
    assert dict(zip(tr.plant_labels, map(int, tr.plants.sum(0)))) == rep["foot_plant_frames"]
    names = tr.motion.skeleton.names
    assert {names[j]: int(n) for j, n in enumerate(tr.limit_hit.sum(0)) if n} \
        == rep["joint_limit_hits"]
    step, both = foot_skate(tr)
    assert step[both].mean() == pytest.approx(rep["foot_skate_mm"]["mean"], abs=0.01)
    assert step[both].max() == pytest.approx(rep["foot_skate_mm"]["max"], abs=0.01)
    gaps = np.isnan(tr.pos).any(-1).sum(0)
    assert dict(zip(tr.labels, map(int, gaps))) == rep["gap_frames"]


def test_a_solve_told_its_up_axis_is_traced_with_it(demo_solve, tmp_path):
    """A capture whose file names the wrong vertical (Z; its subject stands along Y), solved
    with ``--up y``: ``report`` reads it with the solve's axis (kept in the report's ``up``),
    not the file's, and reproduces the solve's residuals (it read the subject lying down)."""
    from physmocap.cli import main
    from physmocap.io.c3d import read_c3d, write_c3d
    from physmocap.markers import MarkerTrajectories
    cap = read_c3d(demo_solve["c3d"])
    to_y = np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])            # z -> y
    yup = MarkerTrajectories(cap.labels, cap.fps, cap.pos @ to_y.T, cap.is_virtual,
                             meta={"first_frame": 50})      # (and a take that began at 50)
    write_c3d(yup, tmp_path / "yup.c3d")             # (write_c3d declares +Z: wrong here)
    code = main(["solve", str(tmp_path / "yup.c3d"), "-o", str(tmp_path / "s.bvh"), "--up", "y",
                 "--report", str(tmp_path / "r.json"), "-q"])
    assert code == 0
    tr, rep = trace_from_files(tmp_path / "r.json")
    assert rep["up"] == "y" and rep["first_frame"] == 50
    rms = np.sqrt(np.nanmean(tr.residual ** 2, axis=0)) * 1000
    want = np.array([rep["per_marker_rms_all_mm"][l] for l in tr.labels])
    np.testing.assert_allclose(rms, want, atol=0.05)


@pytest.mark.parametrize("key, value", [("markers", None), ("markers", [1, 2]),
                                        ("calibration", "x"), ("foot_skate_mm", {}),
                                        ("frames", "x"), ("source", 3), ("marker_rms_mm", None),
                                        ("joint_limit_hits", [])])
def test_an_edited_report_of_wrong_kinds_is_one_line(demo_solve, tmp_path, key, value):
    """A report field of the wrong kind (``null``, a string where a table goes, …): one
    ``FileFormatError`` naming the field (a TypeError or KeyError deep in the page before;
    found by a CLI probe helper)."""
    rep = json.loads(demo_solve["json"].read_text())
    rep[key] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rep))
    with pytest.raises(FileFormatError, match=f"not a valid 'physmocap solve' report: '{key}'"):
        trace_from_files(bad)


def _rest(body, F=3):
    J = len(body.names)
    return Motion(body.skeleton, 60.0, np.tile([0, 0, 1.0], (F, 1)),
                  np.tile(quat.identity(), (F, J, 1)))


def test_hinge_angle_is_signed_flexion_and_limits_flag_overflexion():
    body = load_body()
    m = _rest(body)
    lrot = np.array(m.lrot)
    knee = body.names.index("LeftLowerLeg")
    axis = np.asarray(body.axis[knee])
    lrot[:, knee] = quat.from_axis_angle(axis, np.radians([30.0, 140.0, 170.0]))
    m = Motion(body.skeleton, 60.0, m.root_pos, lrot)
    a = joint_angles(m, body)
    np.testing.assert_allclose(a["LeftLowerLeg"][:, 0], [30.0, 140.0, 170.0], atol=1e-6)
    assert np.isnan(a["LeftLowerLeg"][:, 1:]).all()
    assert a["LeftUpperLeg"].shape == (3, 3) and np.allclose(a["LeftUpperLeg"], 0.0)
    hit = limit_hits(m, body)[:, knee]
    assert hit.tolist() == [False, False, True]            # template knee range 0..150 deg


def test_the_wrist_twist_range_runs_from_the_rest_to_full_pronation():
    """The template's wrist twists -10..170° about the left forearm (pronation +), -170..10°
    about the right: a hanging hand (90°) is inside, the rest pose too, supination past the
    rest and pronation past 170° are not."""
    body = load_body()
    m = _rest(body, F=5)
    lrot = np.array(m.lrot)
    for side, sign in (("Left", 1), ("Right", -1)):
        j = body.names.index(side + "Hand")
        bone = np.array([0.0, sign, 0.0])               # the forearm's axis, rest frame
        lrot[:, j] = quat.from_axis_angle(bone, sign * np.radians([0, 90, 165, -20, 178]))
    m = Motion(body.skeleton, 60.0, m.root_pos, lrot)
    hit = limit_hits(m, body)
    for side in ("Left", "Right"):
        assert hit[:, body.names.index(side + "Hand")].tolist() == [False, False, False, True,
                                                                     True]


def test_fit_marker_offsets_recovers_offsets_despite_a_swap(rng):
    from physmocap.demo import make_demo_capture
    from physmocap.scene import load_markerset
    from physmocap.solver.physical import landmarks

    _, truth = make_demo_capture()
    body = load_body()
    ms = load_markerset("cmu41").bind(body.skeleton)
    pos = landmarks(truth.gpos, truth.grot, ms)
    pos[rng.random(pos.shape[:2]) < 0.1] = np.nan
    pos[:30, [0, 1]] = pos[:30, [1, 0]]                       # a swap for 20 % of the take
    off = fit_marker_offsets(truth, pos, ms.body)
    assert np.abs(off - ms.offset).max() < 1e-9


def test_trace_from_files_errors(demo_solve, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(FileFormatError, match="not a JSON report"):
        trace_from_files(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"kind": "motion"}))
    with pytest.raises(FileFormatError, match="not a 'physmocap solve' report"):
        trace_from_files(other)
    with pytest.raises(FileFormatError, match="cannot read"):
        trace_from_files(tmp_path / "missing.json")
    rep = json.loads(demo_solve["json"].read_text())
    rep["output"] = str(tmp_path / "gone.bvh")
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(rep))
    with pytest.raises(PhysmocapError, match="--bvh"):
        trace_from_files(moved)
    from physmocap.io.bvh import read_bvh, write_bvh
    short = tmp_path / "short.bvh"
    write_bvh(read_bvh(demo_solve["bvh"], unit="cm")[:50], short)
    with pytest.raises(PhysmocapError, match="not the same take"):
        trace_from_files(demo_solve["json"], bvh=short)
    rep["source"] = "demo:spoiled walk"               # the demo's capture has no file
    (tmp_path / "demo.json").write_text(json.dumps(rep))
    with pytest.raises(PhysmocapError, match="names no c3d file; pass it with --c3d"):
        trace_from_files(tmp_path / "demo.json", bvh=demo_solve["bvh"])
    from physmocap.io.c3d import read_c3d, write_c3d
    mk = read_c3d(demo_solve["c3d"])
    fewer = tmp_path / "fewer.c3d"
    write_c3d(mk.select(mk.labels[1:]), fewer)
    with pytest.raises(PhysmocapError, match=f"fewer.c3d: capture lacks markers the report "
                                             f"used: {mk.labels[0]}"):
        trace_from_files(demo_solve["json"], c3d=fewer)


def test_an_older_report_without_offsets_fits_them(demo_solve, tmp_path):
    """Reports written before the offsets were kept: the marker set is bound and the offsets
    fitted to the take (median), close to the calibrated ones."""
    rep = json.loads(demo_solve["json"].read_text())
    del rep["calibration"]["marker_offsets_m"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(rep))
    tr, _ = trace_from_files(old)
    rms = np.sqrt(np.nanmean(np.where(tr.outliers, np.nan, tr.residual) ** 2, axis=0)) * 1000
    want = np.array([rep["per_marker_rms_mm"][l] for l in tr.labels])
    ok = ~np.isin(tr.labels, list(rep["outlier_frames"]))       # the swapped pair aside
    assert np.abs(rms - want)[ok].max() < 0.5                 # 0.18 mm measured
