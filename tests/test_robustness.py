"""The robustness corpus (``robustness_corpus.py``): damaged copies of a real capture either solve
with the damage named in the report or stop with one clear ``PhysmocapError``.

Joint-angle bounds are against the solve of the undamaged capture (local joint rotations,
degrees); ``python benchmarks/robustness.py`` prints the whole table.
"""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import errors
from robustness_corpus import joint_angle_error_deg, make_cases, solve_file, write_case

NAMES = ["undamaged", "drop 10 %", "drop 30 %", "drop 60 %", "markers never seen",
         "all markers lost 1 s", "LKNE/LSHN swapped 0.5 s", "ghost RWRA 0.5 m 1 frame",
         "NaN and inf coordinates", "metres declared as mm", "frame rate 0",
         "frame rate 10x too low", "1 frame", "no known marker set"]


@pytest.fixture(scope="module")
def corpus(data_dir, tmp_path_factory):
    cases = {c.name: c for c in make_cases(data_dir)}
    assert list(cases) == NAMES
    return cases, tmp_path_factory.mktemp("corpus")


_solved: dict = {}


def solved(corpus, name):
    """Solve a case once per session (the undamaged one is every case's reference)."""
    if name not in _solved:
        cases, tmp = corpus
        c = cases[name]
        _solved[name] = (c, *solve_file(write_case(c, tmp / f"case{NAMES.index(name)}.c3d")))
    return _solved[name]


def angle_error(corpus, name):
    c, res, exc = solved(corpus, name)
    assert exc is None, f"{name}: {exc}"
    _, base, _ = solved(corpus, "undamaged")
    return res, joint_angle_error_deg(res.motion, base.motion[c.frames])


def test_undamaged_reports_no_damage(corpus):
    _, res, exc = solved(corpus, "undamaged")
    assert exc is None
    d = res.report["damage"]
    assert d["summary"] == {"markers_never_seen": 0, "gap_samples": 0, "blackout_frames": 0,
                            "swaps": 0, "ghosts": 0, "outliers": 0, "nonfinite_samples": 0,
                            "frame_rate_suspect": False}
    assert d["frame_rate"]["plausible"] and d["frame_rate"]["stride_hz"] is not None


@pytest.mark.parametrize("name, median_deg", [("drop 10 %", 2.0), ("drop 30 %", 6.0),
                                              ("drop 60 %", 30.0)])
def test_random_drops_are_bridged(corpus, name, median_deg):
    res, err = angle_error(corpus, name)
    c = solved(corpus, name)[0]
    d = res.report["damage"]
    missing = np.isnan(c.pos).any(-1)
    assert d["summary"]["gap_samples"] == missing.sum()
    assert {g["marker"] for g in d["gaps"]} == set(c.labels)       # every marker has gaps
    assert all(g["action"] == "bridged" for g in d["gaps"])
    assert np.median(err) < median_deg
    assert d["summary"]["swaps"] == 0


def test_markers_never_seen_are_ignored(corpus):
    res, err = angle_error(corpus, "markers never seen")
    d = res.report["damage"]
    assert d["markers_never_seen"] == [{"marker": "LELB", "action": "ignored"},
                                       {"marker": "RTHI", "action": "ignored"}]
    assert d["gaps"] == []
    assert np.median(err) < 1.5


def test_one_second_blackout_is_bridged_by_interpolation(corpus):
    res, err = angle_error(corpus, "all markers lost 1 s")
    d = res.report["damage"]
    assert d["blackouts"] == [{"frames": [120, 240], "seconds": 1.0,
                               "action": "bridged (interpolated)"}]
    # the root moves on through the blackout (not frozen at its last pose)
    root = res.motion.root_pos
    assert np.all(np.linalg.norm(np.diff(root[119:241, :2], axis=0), axis=-1) > 1e-4)
    assert np.median(err) < 2.0


def test_swap_is_detected_and_named(corpus):
    res, err = angle_error(corpus, "LKNE/LSHN swapped 0.5 s")
    d = res.report["damage"]
    assert len(d["swaps"]) == 1
    sw = d["swaps"][0]
    assert sw["markers"] == ["LKNE", "LSHN"] and sw["action"] == "flagged as swap"
    s, e = sw["frames"]
    assert abs(s - 100) <= 2 and abs(e - 160) <= 2            # the injected half second
    assert d["ghosts"] == [] and d["outliers"] == []
    assert np.median(err) < 1.0


def test_ghost_is_detected_and_named(corpus):
    res, err = angle_error(corpus, "ghost RWRA 0.5 m 1 frame")
    d = res.report["damage"]
    assert [(g["marker"], g["frames"], g["action"]) for g in d["ghosts"]] == \
        [("RWRA", [150, 151], "flagged as ghost")]
    assert d["ghosts"][0]["distance_mm_max"] > 400
    assert d["swaps"] == [] and d["outliers"] == []
    # only the ghost frame can differ from the undamaged solve
    assert np.max(np.delete(err, 150, axis=0)) < 0.5


def test_nan_and_inf_coordinates_are_ignored(corpus):
    res, err = angle_error(corpus, "NaN and inf coordinates")
    d = res.report["damage"]
    assert d["nonfinite_samples"] == {"count": 30, "action": "ignored (read as missing)"}
    assert d["summary"]["gap_samples"] == 60
    assert np.median(err) < 0.5


def test_wrong_frame_rate_solves_and_one_frame_solves(corpus):
    res, err = angle_error(corpus, "frame rate 10x too low")
    assert res.report["fps"] == pytest.approx(12.0)
    assert np.median(err) < 1.0
    # the walk now takes 0.1 strides/s: the report says the rate is wrong, and which way
    rate = res.report["damage"]["frame_rate"]
    assert not rate["plausible"] and "too low" in rate["action"]
    assert res.report["damage"]["summary"]["frame_rate_suspect"]
    res1, err1 = angle_error(corpus, "1 frame")
    assert res1.motion.n_frames == 1
    assert res1.report["damage"]["summary"]["gap_samples"] == 0


@pytest.mark.parametrize("name, cls, words", [
    ("metres declared as mm", errors.UnitError, "look like m"),
    ("frame rate 0", errors.FileFormatError, "frame rate"),
    ("no known marker set", errors.UnknownNameError, "marker set"),
])
def test_hopeless_captures_stop_with_one_clear_error(corpus, name, cls, words):
    _, res, exc = solved(corpus, name)
    assert res is None and type(exc) is cls
    msg = str(exc)
    assert "\n" not in msg and words in msg and msg.startswith(str(exc.path))
