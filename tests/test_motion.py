import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from physmocap import Motion, ShapeError, Skeleton


@pytest.fixture
def motion():
    sk = Skeleton(["root", "a", "b"], [-1, 0, 1], [[0, 0, 1], [0, 0, 0.5], [0.3, 0, 0]])
    F = 10
    lrot = Rotation.random(F * 3, random_state=0).as_quat().reshape(F, 3, 4)
    return Motion(sk, 30, np.arange(F * 3.0).reshape(F, 3), lrot, {"path": "x"})


def test_basic_properties(motion):
    assert motion.n_frames == 10
    assert motion.duration == pytest.approx(9 / 30)
    assert motion.gpos.shape == (10, 3, 3) and motion.grot.shape == (10, 3, 4)
    assert np.allclose(motion.gpos[:, 0], motion.root_pos)
    assert not motion.gpos.flags.writeable and not motion.lrot.flags.writeable
    with pytest.raises(TypeError):
        motion.meta["path"] = "y"


def test_slicing(motion):
    sub = motion[2:5]
    assert sub.n_frames == 3
    assert np.allclose(sub.gpos, motion.gpos[2:5])
    assert motion[[0, 9]].n_frames == 2


@pytest.mark.parametrize("change, msg", [
    (dict(fps=0), "fps"), (dict(fps=float("nan")), "fps"),
    (dict(lrot=np.zeros((10, 3, 4))), "unit"),
    (dict(root_pos=np.zeros((9, 3))), "shape"),
    (dict(lrot=np.zeros((10, 2, 4))), "shape"),
    (dict(root_pos=np.full((10, 3), np.inf)), "finite"),
    (dict(skeleton=("Hips", "Spine")), "Motion.skeleton must be a Skeleton"),
    (dict(root_pos=[["a", "b", "c"]] * 10), "root_pos: cannot convert to float64 array"),
])
def test_invalid(motion, change, msg):
    kw = dict(skeleton=motion.skeleton, fps=motion.fps, root_pos=motion.root_pos, lrot=motion.lrot)
    kw.update(change)
    with pytest.raises(ShapeError, match=msg):
        Motion(**kw)


def test_with_skeleton(motion):
    longer = motion.skeleton.scaled(2.0)
    m2 = motion.with_skeleton(longer)
    d = np.linalg.norm(m2.gpos[:, 2] - m2.gpos[:, 1], axis=-1)
    assert np.allclose(d, 0.6)
    other = Skeleton(["x"], [-1], [[0, 0, 0]])
    with pytest.raises(ShapeError):
        motion.with_skeleton(other)


def test_unrolled_is_continuous(motion):
    q = motion.lrot_unrolled()
    assert np.all(np.abs(np.sum(q * motion.lrot, -1)) > 1 - 1e-12)


def test_turned_rest_moves_nothing(motion):
    """Joint frames turned by an axis turn (or any rotation): every joint's world position the
    same, the offsets turned, the root's rest offset kept; turned back, the original."""
    C = Rotation.from_euler("x", 90, degrees=True).as_matrix()
    t = motion.turned_rest(C)
    np.testing.assert_allclose(t.gpos, motion.gpos, atol=1e-12)
    np.testing.assert_allclose(t.skeleton.offsets[1:], motion.skeleton.offsets[1:] @ C.T)
    np.testing.assert_array_equal(t.skeleton.offsets[0], motion.skeleton.offsets[0])
    back = t.turned_rest(C.T)
    np.testing.assert_allclose(np.abs((back.lrot * motion.lrot).sum(-1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(back.skeleton.offsets, motion.skeleton.offsets, atol=1e-15)
    assert motion.turned_rest(np.eye(3)) is motion


def test_a_slice_with_a_step_divides_the_rate(motion):
    """``motion[::2]`` kept the rate: half the frames played twice as fast, and write_bvh
    wrote that rate (a fixture meant as "every 2nd frame, 60 Hz" was at 120)."""
    half = motion[::2]
    assert half.fps == motion.fps / 2
    assert half.duration == pytest.approx(motion.duration, abs=1 / motion.fps)
    np.testing.assert_array_equal(half.root_pos, motion.root_pos[::2])
    assert motion[1::3].fps == motion.fps / 3 and motion[::-1].fps == motion.fps
    assert motion[2:10].fps == motion.fps and motion[[0, 5, 9]].fps == motion.fps  # (no step to know)


def test_nearly_unit_quaternions_are_normalised(motion):
    """Accepted within 1e-3 of unit length but used as given: forward kinematics stretched a
    bone by 1 % (a plain lerp of two rotations)."""
    lrot = np.array(motion.lrot) * 1.0009
    m = Motion(motion.skeleton, motion.fps, motion.root_pos, lrot)
    np.testing.assert_allclose(np.linalg.norm(m.lrot, axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(m.gpos, motion.gpos, atol=1e-9)
    exact = Motion(motion.skeleton, motion.fps, motion.root_pos, motion.lrot)
    np.testing.assert_array_equal(exact.lrot, motion.lrot)      # unit ones: bit for bit
