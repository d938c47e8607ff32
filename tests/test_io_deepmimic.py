"""DeepMimic clips (``io/deepmimic.py``): the clips pybullet_data ships, and bad files."""
from __future__ import annotations

import json

import numpy as np
import pytest

from physmocap.errors import FileFormatError, ShapeError
from physmocap.io.deepmimic import deepmimic_skeleton, pybullet_motion_path, read_deepmimic


def test_the_shipped_walk_reads_as_a_z_up_walk():
    """The walk stands upright (head above hips above feet, Z up) and moves horizontally."""
    m = read_deepmimic(pybullet_motion_path("humanoid3d_walk.txt"))
    assert m.fps == pytest.approx(30.0, rel=0.02)
    g = m.gpos
    sk = m.skeleton
    head, hips, foot = sk.index("Neck"), sk.index("Hips"), sk.index("LeftFoot")
    assert np.all(g[:, head, 2] > g[:, hips, 2]) and np.all(g[:, hips, 2] > g[:, foot, 2])
    travel = g[-1, hips] - g[0, hips]
    assert np.hypot(travel[0], travel[1]) > 0.5 and abs(travel[2]) < 0.1


@pytest.mark.parametrize("name", ["humanoid3d_walk.txt", "humanoid3d_run.txt",
                                  "humanoid3d_kick.txt"])
def test_every_frame_is_kept(name):
    """The files store frame lengths rounded (0.033332 for 1/30): the last frame, the one that
    closes a loop, was lost (the walk read as 38 of its 39 frames, its root short by 4 cm)."""
    path = pybullet_motion_path(name)
    frames = np.array(json.loads(path.read_text())["Frames"])
    m = read_deepmimic(path)
    assert m.n_frames == len(frames)
    assert m.duration == pytest.approx(frames[:-1, 0].sum(), abs=1e-3)
    last = frames[-1, 1:4] @ np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]).T    # Y up -> Z up
    np.testing.assert_allclose(m.root_pos[-1], last, atol=1e-9)


def test_resampling_keeps_the_clip_and_its_duration():
    path = pybullet_motion_path("humanoid3d_walk.txt")
    a, b = read_deepmimic(path), read_deepmimic(path, fps=120.0)
    assert b.fps == 120.0 and b.duration == pytest.approx(a.duration, abs=1.0 / a.fps)
    # every fourth frame at 120 fps is a frame at 30 fps (same times), up to interpolation
    n = min(a.n_frames, (b.n_frames + 3) // 4)
    assert np.allclose(b.gpos[::4][:n], a.gpos[:n], atol=0.02)


def _text(path, text):
    path.write_text(text)
    return path


def _clip(path, frames):
    """A clip file at ``path`` holding ``frames`` (rows of numbers)."""
    return _text(path, json.dumps({"Loop": "wrap", "Frames": frames}))


def _frames(n=3):
    """The shipped walk's first ``n`` rows."""
    walk = json.loads(pybullet_motion_path("humanoid3d_walk.txt").read_text())["Frames"]
    return [list(r) for r in walk[:n]]


@pytest.mark.parametrize("make, match", [
    (lambda p: _text(p, "not json"), "not a DeepMimic motion clip"),
    (lambda p: _text(p, '{"Loop": "none"}'), "not a DeepMimic motion clip \\(KeyError"),
    (lambda p: _clip(p, [r[:-1] for r in _frames()]), "rows of 44 numbers"),
    (lambda p: _clip(p, _frames(1)), "rows of 44 numbers"),
    (lambda p: _clip(p, [r[:3] + [float("nan")] + r[4:] for r in _frames()]), "non-finite"),
    (lambda p: _clip(p, [[0.0] + r[1:] for r in _frames()]), "non-positive durations"),
])
def test_bad_clips_give_one_clear_error(tmp_path, make, match):
    path = make(tmp_path / "clip.txt")
    before = path.read_bytes()
    with pytest.raises(FileFormatError, match=match) as e:
        read_deepmimic(path)
    assert "clip.txt" in str(e.value) and "\n" not in str(e.value)
    assert path.read_bytes() == before


def test_missing_clip_and_bad_rate(tmp_path):
    with pytest.raises(FileFormatError, match="nope.txt: not a DeepMimic"):
        read_deepmimic(tmp_path / "nope.txt")
    with pytest.raises(FileFormatError, match="no such pybullet_data clip; known: .*_walk"):
        pybullet_motion_path("humanoid3d_moonwalk.txt")
    for fps in (0, -30.0, float("nan"), float("inf"), "30"):
        with pytest.raises(ShapeError, match="fps must be a positive number"):
            read_deepmimic(pybullet_motion_path(), fps=fps)


def test_skeleton_is_the_humanoid_tree():
    sk = deepmimic_skeleton()
    assert sk.names[0] == "Hips" and sk.parents[0] == -1
    assert len(sk) == 15 and all(0 <= p < j for j, p in enumerate(sk.parents) if j)
