"""Which speeds a database keeps (``matching.coverage``): one clip must keep a speed for a second
to cover it; a clip passing through it, or two short clips, do not."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from physmocap import quat
from physmocap.cli import main
from physmocap.errors import PhysmocapError
from physmocap.matching.coverage import (COVER_S, _clip_starts, asked_speeds, covered_ranges,
                                         database_speeds, database_turn_rates, fast_turns,
                                         fastest_kept_turn, longest_stretch, uncovered_summary)
from physmocap.matching.database import build_database, save_database
from physmocap.motion import Motion
from physmocap.skeleton import Skeleton

FPS = 30.0


def _clip(x: np.ndarray, name: str, turn: float = 0.0) -> Motion:
    """A tiny biped whose hips move along +X through ``x (F,)`` m, facing +X, turning on the
    spot at ``turn`` rad/s."""
    names = ["Hips", "LeftUpLeg", "LeftFoot", "LeftToes", "RightUpLeg", "RightFoot",
             "RightToes", "Spine"]
    parents = [-1, 0, 1, 2, 0, 4, 5, 0]
    offsets = [[0, 0, 0.9], [0, 0.1, 0], [0, 0, -0.8], [0.1, 0, -0.05],
               [0, -0.1, 0], [0, 0, -0.8], [0.1, 0, -0.05], [0, 0, 0.2]]
    F = len(x)
    root = np.column_stack([x, np.zeros(F), np.full(F, 0.9)])
    lrot = quat.identity((F, len(names)))
    lrot[:, 0] = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), turn * np.arange(F) / FPS)
    return Motion(Skeleton(names, parents, np.array(offsets, float)), FPS, root, lrot,
                  {"path": f"{name}.bvh"})


def _db(*clips):
    return build_database(list(clips), names=[f"c{i}" for i in range(len(clips))], fps=FPS)


def _steady(speed: float, seconds: float) -> np.ndarray:
    return speed * np.arange(int(seconds * FPS)) / FPS


def _ramp(top: float, seconds: float) -> np.ndarray:
    """From standing to ``top`` m/s at a constant acceleration (a walk start)."""
    t = np.arange(int(seconds * FPS)) / FPS
    return 0.5 * (top / seconds) * t ** 2


def test_database_speeds_of_a_steady_clip():
    db = _db(_clip(_steady(1.2, 3.0), "walk"))
    np.testing.assert_allclose(database_speeds(db), 1.2, atol=1e-6)


def test_one_clip_must_keep_a_speed():
    # a steady walk at 1.0 m/s; a walk start passing through 0.5 m/s; two short clips at 2 m/s
    db = _db(_clip(_steady(1.0, 3.0), "walk"), _clip(_ramp(1.0, 2.0), "start"),
             _clip(_steady(2.0, 0.7), "a"), _clip(_steady(2.0, 0.7), "b"))
    s, starts = database_speeds(db), _clip_starts(db)
    got = longest_stretch(s, starts, db.fps, [1.0, 0.5, 2.0, 3.0])
    assert got[0] >= 2.9                           # the steady clip, whole
    assert got[1] < COVER_S                        # passed through, not kept
    assert 0.5 <= got[2] < COVER_S                 # 0.7 s twice: no clip keeps it for 1 s
    assert got[3] == 0.0
    # the same speed asked again is measured once and given back for each frame
    np.testing.assert_array_equal(longest_stretch(s, starts, db.fps, [1.0, 1.0, 0.5]),
                                  got[[0, 0, 1]])
    assert longest_stretch(s, starts, db.fps, []).shape == (0,)
    ranges = covered_ranges(db)
    assert len(ranges) == 1 and ranges[0][0] <= 0.9 and 1.1 <= ranges[0][1] < 1.2


def test_summary_and_warning():
    db = _db(_clip(_steady(1.0, 3.0), "walk"), _clip(_ramp(1.0, 2.0), "start"))
    dt = 1.0 / FPS
    ok = uncovered_summary(db, np.full(60, 1.05), dt)
    assert ok["uncovered_s"] == 0.0 and ok["uncovered_speed_range_m_s"] is None
    assert ok["warning"] is None and ok["text"] == ""
    slow = uncovered_summary(db, np.r_[np.full(30, 1.0), np.full(45, 0.5)], dt)
    assert slow["uncovered_s"] == pytest.approx(1.5)
    assert slow["uncovered_speed_range_m_s"] == [0.5, 0.5]
    assert slow["warning"] == slow["text"]
    assert "for 1.5 s the input asks 0.50 m/s, a speed no clip of the database keeps" in \
        slow["text"] and re.search(r"keep 0\.9\d-1\.1\d m/s", slow["text"])
    # two asked speeds 0.01 m/s apart are a range (0.29 - 0.28 < 0.01 in floating point: the
    # text said 0.28 m/s alone)
    near = uncovered_summary(db, np.r_[np.full(30, 0.28), np.full(30, 0.29)], dt)
    assert near["uncovered_speed_range_m_s"] == [0.28, 0.29]
    assert "the input asks 0.28-0.29 m/s," in near["text"]
    # a moment between speeds (under COVER_S) is said in the text, not warned of
    brief = uncovered_summary(db, np.r_[np.full(30, 1.0), np.full(15, 0.5)], dt)
    assert brief["uncovered_s"] == pytest.approx(0.5) and brief["warning"] is None
    # asked to stand without a standing clip: the hint names mm build --stand
    still = uncovered_summary(db, np.zeros(60), dt)
    assert "mm build --stand" in still["warning"]
    # the report's form: speeds from desired velocities, no text
    rep = asked_speeds(db, np.tile([0.0, 0.5, 0.0], (45, 1)), dt)
    assert set(rep) == {"uncovered_s", "uncovered_speed_range_m_s", "database_speeds_m_s",
                        "warning"}
    json.dumps(rep)
    with pytest.raises(PhysmocapError):
        uncovered_summary(db, np.zeros(3), float("nan"))
    with pytest.raises(PhysmocapError, match=r"needs a PoseDatabase \(.*\), got str"):
        database_speeds("db.npz")


def test_turns_faster_than_any_clip_keeps():
    """Only faster turns count (a wide curve is followed without sliding); a second of them
    is warned of."""
    db = _db(_clip(_steady(1.0, 3.0), "walk"), _clip(_steady(1.0, 3.0), "turn", turn=0.5))
    np.testing.assert_allclose(database_turn_rates(db)[db.clip_slice(1)], 0.5, atol=0.05)
    assert fastest_kept_turn(db) == pytest.approx(0.5, abs=0.05)
    t = np.arange(90) / FPS
    spin = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), 2.0 * t)       # 2 rad/s, 3 s
    fast = fast_turns(db, spin, 1.0 / FPS)
    assert fast["too_fast_s"] >= 2.0 and fast["max_rad_s"] == pytest.approx(2.0, abs=0.01)
    assert fast["database_keeps_rad_s"] == pytest.approx(0.5, abs=0.05)
    assert "turned faster than any clip of the database turns for 1 s (up to 2.00 rad/s" in \
        fast["warning"]
    for rate in (0.5, 0.2, 0.0):                    # as fast as a clip, or slower: no warning
        calm = fast_turns(db, quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), rate * t),
                          1.0 / FPS)
        assert calm["too_fast_s"] == 0.0 and calm["warning"] is None
    brief = np.concatenate([spin[:15], np.repeat(spin[14:15], 75, axis=0)])   # 0.5 s of it
    assert fast_turns(db, brief, 1.0 / FPS)["warning"] is None
    assert fast_turns(db, spin[:1], 1.0 / FPS)["too_fast_s"] == 0.0


def test_mm_run_warns_of_a_speed_the_database_does_not_keep(data_dir, tmp_path, capsys):
    """One warning line on stderr, the figures in the report; none for a covered speed
    (three Bandai-Namco walks, 1.0-1.2 m/s)."""
    from physmocap.io.bvh import read_bvh
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("dataset-2_walk*_00[1-3].bvh"))
    save_database(build_database([read_bvh(f) for f in files], names=[f.stem for f in files],
                                 fps=30), tmp_path / "db.npz")
    scene = ("[run]\nduration = 3.0\n[input]\nkind = \"joystick\"\nwalk_speeds = [{s}, {s}, {s}]"
             "\n[[key]]\nt = 0.0\nx = 0.0\ny = 1.0\n")
    for speed, warned in ((0.5, True), (1.1, False)):
        (tmp_path / f"in{speed}.toml").write_text(scene.format(s=speed))
        code = main(["mm", "run", str(tmp_path / "db.npz"), "--input",
                     str(tmp_path / f"in{speed}.toml"), "-o", str(tmp_path / f"o{speed}.bvh"),
                     "--report", str(tmp_path / f"r{speed}.json"), "-q"])
        err = capsys.readouterr().err
        rep = json.loads((tmp_path / f"r{speed}.json").read_text())["asked_speeds"]
        assert code == 0
        if warned:
            assert err.count("\n") == 1 and err.startswith("physmocap: warning: for ")
            assert "asks 0.50 m/s" in err and rep["warning"] in err
            assert rep["uncovered_speed_range_m_s"] == [0.5, 0.5]
        else:
            assert err == "" and rep["uncovered_s"] == 0.0 and rep["warning"] is None
    # the shipped sharp turns: reversals faster than any of the walks turns
    code = main(["mm", "run", str(tmp_path / "db.npz"), "--input", "sharp_turns", "-o",
                 str(tmp_path / "st.bvh"), "--report", str(tmp_path / "st.json"), "-q"])
    err = capsys.readouterr().err
    turns = json.loads((tmp_path / "st.json").read_text())["turns"]
    assert code == 0 and turns["warning"] and turns["warning"] in err
    assert turns["max_rad_s"] > 2.0 > turns["database_keeps_rad_s"]


def test_play_reports_the_asked_speeds_too(data_dir, tmp_path, capsys):
    """The live loop (``play DB.npz --input``): the same figures and warning, of the frames
    played (the controller's first frame placed the body)."""
    from physmocap.io.bvh import read_bvh
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("dataset-2_walk*_00[1-3].bvh"))
    save_database(build_database([read_bvh(f) for f in files], names=[f.stem for f in files],
                                 fps=30), tmp_path / "db.npz")
    (tmp_path / "slow.toml").write_text(
        "[run]\nduration = 1.0\n[input]\nkind = \"joystick\"\nwalk_speeds = [0.5, 0.5, 0.5]"
        "\n[[key]]\nt = 0.0\nx = 0.0\ny = 1.0\n")
    code = main(["play", str(tmp_path / "db.npz"), "--input", str(tmp_path / "slow.toml"),
                 "-o", str(tmp_path / "o.bvh"), "--report", str(tmp_path / "r.json"),
                 "--report-html", str(tmp_path / "r.html"), "-q"])
    err = capsys.readouterr().err
    rep = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and err.count("\n") == 1 and "asks 0.50 m/s" in err
    assert rep["asked_speeds"]["uncovered_s"] == pytest.approx(rep["frames"] / 30.0)
    # the playback page lists them too
    assert re.search(r"speeds asked that no clip keeps</td><td>\d\.\d s at 0\.50 m/s \(the",
                     (tmp_path / "r.html").read_text())
