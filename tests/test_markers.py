import numpy as np
import pytest

from physmocap import MarkerSet, MarkerTrajectories, ShapeError, UnknownNameError


def traj():
    pos = np.zeros((4, 3, 3))
    pos[1, 2] = np.nan
    return MarkerTrajectories(["A", "B", "PEL0"], 100, pos, is_virtual=[False, False, True])


def test_select_and_markers_only():
    t = traj()
    assert t.markers_only().labels == ("A", "B")
    assert t.select(["PEL0", "A"]).pos.shape == (4, 2, 3)
    assert t.gap_frames() == {"A": 0, "B": 0, "PEL0": 1}
    assert t.missing().sum() == 1


def test_errors():
    with pytest.raises(UnknownNameError, match="known: A, B, PEL0"):
        traj().index("LFHD")
    with pytest.raises(ShapeError, match="duplicate"):
        MarkerTrajectories(["A", "A"], 100, np.zeros((1, 2, 3)))
    with pytest.raises(ShapeError, match="infinite"):
        MarkerTrajectories(["A"], 100, np.full((1, 1, 3), np.inf))
    with pytest.raises(ShapeError, match="fps"):
        MarkerTrajectories(["A"], -1, np.zeros((1, 1, 3)))
    with pytest.raises(ShapeError):
        MarkerSet(["A"], [-1], [[0, 0, 0]])
    with pytest.raises(ShapeError):
        MarkerSet(["A", "B"], [0], [[0, 0, 0]])


def test_markerset_defaults():
    ms = MarkerSet(["A", "B"], [0, 1], np.zeros((2, 3)))
    assert len(ms) == 2 and np.all(ms.weight == 1)


def test_select_shares_or_owns_its_data_and_subset_keeps_rows():
    """A long take's markers are its largest array: selecting every label in order is the same
    object, a reordering makes one read-only copy (no second one inside the type)."""
    pos = np.random.default_rng(0).normal(size=(50, 3, 3))
    t = MarkerTrajectories(("A", "B", "C"), 100.0, pos)
    assert t.select(["A", "B", "C"]) is t
    s = t.select(["C", "A"])
    assert s.labels == ("C", "A") and np.array_equal(s.pos, pos[:, [2, 0]])
    assert s.pos.base is None and not s.pos.flags.writeable
    ms = MarkerSet(("A", "B", "C"), [0, 1, 1], np.eye(3), [1.0, 2.0, 3.0])
    sub = ms.subset([2, 0])
    assert sub.names == ("C", "A") and list(sub.body) == [1, 0]
    assert np.array_equal(sub.offset, np.eye(3)[[2, 0]]) and list(sub.weight) == [3.0, 1.0]
