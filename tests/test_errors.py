"""``errors.py``: the number checks behind the one-line ``SettingsError``s."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap.errors import (PhysmocapError, SettingsError, ShapeError, bad_count, bad_number,
                              require_counts, require_flags, require_fractions,
                              require_numbers)


def test_bad_number_takes_numpy_scalars_and_refuses_bools_text_nan_and_inf():
    for good in (0, 0.5, np.float32(2.0), np.float64(1e9), np.int64(3)):
        assert not bad_number(good)
    for bad in (True, "1", None, float("nan"), float("inf"), -1e-12, np.float32("nan")):
        assert bad_number(bad)
    assert bad_number(0, positive=True) and not bad_number(1e-9, positive=True)


def test_require_numbers_names_the_first_bad_one():
    require_numbers("f", ("a",), a=1.0, b=0.0)
    with pytest.raises(SettingsError, match=r"^f: a must be a finite number > 0, got 0$"):
        require_numbers("f", ("a",), a=0, b=-1)
    with pytest.raises(SettingsError, match=r"^f: b must be a finite number >= 0, got nan$") as e:
        require_numbers("f", ("a",), a=1, b=float("nan"))
    assert isinstance(e.value, PhysmocapError) and isinstance(e.value, ValueError)


def test_bad_count_takes_whole_numbers_only():
    for good, least in ((1, 1), (0, 0), (np.int64(5), 1), (np.uint8(2), 2)):
        assert not bad_count(good, least)
    for bad, least in ((0, 1), (-1, 0), (True, 0), (2.0, 1), (float("nan"), 0), ("3", 1)):
        assert bad_count(bad, least)


def test_require_counts_names_the_first_bad_one():
    require_counts("f", ("b",), a=1, b=0)
    with pytest.raises(SettingsError, match=r"^f: a must be a whole number >= 1, got 0$"):
        require_counts("f", ("b",), a=0, b=0)
    with pytest.raises(SettingsError, match=r"^f: b must be a whole number >= 0, got 1.5$"):
        require_counts("f", ("b",), a=2, b=1.5)


def test_require_fractions_takes_0_to_1_only():
    require_fractions("f", a=0, b=1.0, c=np.float32(0.5))
    for bad in (1.5, -0.1, float("nan"), True):
        with pytest.raises(SettingsError, match=rf"^f: b must be a fraction 0..1, got {bad!r}$"):
            require_fractions("f", a=0.5, b=bad)


def test_require_flags_takes_bools_only():
    require_flags("f", a=True, b=False)
    for bad in (1, 0, "yes", None):
        with pytest.raises(SettingsError, match=rf"^f: b must be True or False, got {bad!r}$"):
            require_flags("f", a=True, b=bad)


def test_a_script_passing_the_wrong_object_gets_one_line(tmp_path):
    """A path, or another of physmocap's types, where a function wants a certain one: one
    ShapeError naming what it needs and how to get one (each was an AttributeError from inside)."""
    from physmocap.io.bvh import write_bvh
    from physmocap.io.c3d import write_c3d
    from physmocap.io.tracking import write_tracking
    from physmocap.matching import avatar as av
    from physmocap.matching.database import build_database, save_database
    from physmocap.markers import MarkerTrajectories
    from physmocap.matching.retarget import retarget
    from physmocap.playback import track
    from physmocap.scene import load_body, load_markerset
    from physmocap.solver.pipeline import solve_capture

    markers = MarkerTrajectories(("A",), 100.0, np.zeros((2, 1, 3)))

    cases = [(lambda: write_bvh("walk.bvh", tmp_path / "o.bvh"), "write_bvh needs a Motion"),
             (lambda: write_c3d("walk.bvh", tmp_path / "o.c3d"),
              "write_c3d needs a MarkerTrajectories"),
             (lambda: save_database("walk.bvh", tmp_path / "d.npz"),
              "save_database needs a PoseDatabase"),
             (lambda: build_database(["walk.bvh"]), "build_database: motion 0 needs a Motion"),
             (lambda: av.extract_track("walk.bvh"), "extract_track needs a Motion"),
             (lambda: write_tracking("t.csv", tmp_path / "t.csv"),
              "write_tracking needs a ThreePointTrack"),
             (lambda: track("walk.bvh"), "track needs a Motion"),
             (lambda: retarget("walk.bvh", load_body().skeleton), "retarget needs a Motion"),
             (lambda: solve_capture("walk.c3d", load_markerset("cmu41"), load_body()),
              "solve_capture needs a MarkerTrajectories"),
             (lambda: solve_capture(markers, "cmu41", load_body()),
              "solve_capture needs a MarkerSetSpec"),
             (lambda: solve_capture(markers, load_markerset("cmu41"), "humanoid"),
              "solve_capture needs a BodyTemplate")]
    for call, match in cases:
        with pytest.raises(ShapeError, match=match + r" \(.*\), got str"):
            call()
    assert list(tmp_path.iterdir()) == []


def test_an_output_path_that_is_a_folder_is_one_line(tmp_path):
    """Refused before anything is written (the rename failed after the whole output before)."""
    from physmocap.io.atomic import atomic_write_text
    (tmp_path / "out.bvh").mkdir()
    with pytest.raises(PhysmocapError, match="is a folder; name the output file"):
        atomic_write_text(tmp_path / "out.bvh", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["out.bvh"]


def test_an_unwritable_output_folder_is_named(tmp_path, monkeypatch):
    """The OSError named the temporary file (``.out.bvh.k2j3.bvh.tmp``), which nobody chose."""
    import tempfile

    from physmocap.io.atomic import atomic_write_text, check_writable

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".out.bvh.x.bvh.tmp"))
    monkeypatch.setattr(tempfile, "mkstemp", refused)      # (root may write a 0500 folder)
    for call in (check_writable, lambda p: atomic_write_text(p, "x")):
        with pytest.raises(PhysmocapError) as err:
            call(tmp_path / "out.bvh")
        assert str(err.value) == (f"{tmp_path / 'out.bvh'}: cannot write in folder {tmp_path} "
                                  "(Permission denied); choose another output folder")
    monkeypatch.undo()
    check_writable(tmp_path / "out.bvh")                # a writable folder: nothing left in it
    assert list(tmp_path.iterdir()) == []


def test_more_wrong_objects_are_one_line(tmp_path, data_dir):
    """A script's natural mistakes (found by an API probe): ``settings="stepping"`` (the CLI's
    word), a path for a motion or a database, a body by name, ``None`` for a path. Each was an
    AttributeError or TypeError from deep inside, ``solve_capture``'s after calibration."""
    from physmocap import Motion
    from physmocap.io.bvh import read_bvh
    from physmocap.io.c3d import read_c3d
    from physmocap.matching.controller import Controller
    from physmocap.matching.database import build_database, load_database
    from physmocap.matching.features import compute_features
    from physmocap.matching.trajectory import PathFollower, load_input
    from physmocap.markers import MarkerTrajectories
    from physmocap.playback.live import LivePlayback
    from physmocap.playback.track import track_any
    from physmocap.scene import load_body, load_markerset
    from physmocap.solver.pipeline import solve_capture

    walk = read_bvh(data_dir / "bvh/bandai-namco/ds2_normal_locomotion/"
                    "dataset-2_walk_normal_001.bvh")[:90]
    db = build_database([walk])
    feats = compute_features(db)
    path = PathFollower([[0.0, 0.0], [5.0, 0.0]], 1.0)
    ctrl = Controller(db, feats, path)
    markers = MarkerTrajectories(("A",), 100.0, np.zeros((2, 1, 3)))
    cases = [(lambda: track_any("walk.bvh"), "track_any needs a Motion"),
             (lambda: track_any(walk, body="humanoid"), "track_any: body needs a BodyTemplate"),
             (lambda: track_any(walk, settings="stepping"),
              "track_any: settings needs a TrackingSettings"),
             (lambda: LivePlayback(ctrl, mode="physical", settings="stepping"),
              "LivePlayback: settings needs a TrackingSettings"),
             (lambda: LivePlayback(ctrl, body="humanoid"),
              "LivePlayback: body needs a BodyTemplate"),
             (lambda: Controller("db.npz", feats, path), "Controller needs a PoseDatabase"),
             (lambda: Controller(db, "f", path), "Controller: features needs a FeatureDatabase"),
             (lambda: solve_capture(markers, load_markerset("cmu41"), load_body(),
                                    settings={}),
              "solve_capture: settings needs a PhysicalSettings")]
    for call, match in cases:
        with pytest.raises(ShapeError, match=match + r" \(.*\), got (str|dict)"):
            call()
    with pytest.raises(SettingsError, match="LivePlayback: follow must be None or a finite"):
        LivePlayback(ctrl, follow="1")
    for fn in (read_bvh, read_c3d, load_database, load_input):
        with pytest.raises(ShapeError, match=fn.__name__ + r" needs a file path .*got NoneType"):
            fn(None)
    for fps in ("abc", None, True):
        with pytest.raises(ShapeError, match="fps must be a positive number"):
            Motion(walk.skeleton, fps, walk.root_pos, walk.lrot)
    with pytest.raises(ShapeError, match="with_skeleton needs a skeleton"):
        walk.with_skeleton("x")
