"""Skeleton validation and batched forward kinematics against a loop over single frames."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from physmocap import Skeleton, ShapeError, UnknownNameError, forward_kinematics, quat


def chain(J=6):
    parents = [-1] + [int(p) for p in np.random.default_rng(0).integers(0, np.arange(1, J))]
    offsets = np.random.default_rng(1).normal(size=(J, 3))
    return Skeleton([f"j{i}" for i in range(J)], parents, offsets)


def fk_single_frame(sk, lrot, root):
    """Reference FK with scipy, one frame, matrices."""
    R = [None] * len(sk)
    P = [None] * len(sk)
    for j in range(len(sk)):
        r = Rotation.from_quat(lrot[j])
        if sk.parents[j] < 0:
            R[j], P[j] = r, root
        else:
            p = sk.parents[j]
            R[j] = R[p] * r
            P[j] = P[p] + R[p].apply(np.array(sk.offsets[j]))
    return np.array(P), np.array([x.as_quat() for x in R])


def test_fk_matches_per_frame_reference(rng):
    sk = chain(9)
    F = 40
    lrot = Rotation.random(F * 9, random_state=3).as_quat().reshape(F, 9, 4)
    root = rng.normal(size=(F, 3))
    gpos, grot = forward_kinematics(sk, lrot, root)
    for f in range(0, F, 7):
        p, r = fk_single_frame(sk, lrot[f], root[f])
        assert np.allclose(gpos[f], p)
        assert np.allclose(np.abs(np.sum(grot[f] * r, -1)), 1.0)


def test_fk_keeps_bone_lengths(rng):
    sk = chain(9)
    lrot = Rotation.random(20 * 9, random_state=4).as_quat().reshape(20, 9, 4)
    gpos, _ = forward_kinematics(sk, lrot, np.zeros((20, 3)))
    d = np.linalg.norm(gpos[:, 1:] - gpos[:, sk.parents[1:]], axis=-1)
    assert np.allclose(d, sk.bone_lengths()[1:])


def test_rest_positions_sum_offsets():
    sk = Skeleton(["a", "b", "c"], [-1, 0, 1], [[1, 2, 3], [0, 0, 1], [1, 0, 0]])
    assert np.allclose(sk.rest_positions(), [[1, 2, 3], [1, 2, 4], [2, 2, 4]])


@pytest.mark.parametrize("kw, msg", [
    (dict(names=["a", "a"], parents=[-1, 0], offsets=np.zeros((2, 3))), "duplicate"),
    (dict(names=["a", "b"], parents=[-1, 1], offsets=np.zeros((2, 3))), "parents"),
    (dict(names=["a", "b"], parents=[0, 0], offsets=np.zeros((2, 3))), "parents"),
    (dict(names=["a", "b"], parents=[-1, 0], offsets=np.zeros((3, 3))), "shape"),
    (dict(names=["a", "b"], parents=[-1, 0], offsets=[[0, 0, 0], [np.nan, 0, 0]]), "finite"),
    (dict(names=[], parents=[], offsets=np.zeros((0, 3))), "at least one"),
])
def test_invalid_skeletons(kw, msg):
    with pytest.raises(ShapeError, match=msg):
        Skeleton(**kw)


def test_arrays_are_read_only():
    sk = chain()
    with pytest.raises(ValueError):
        sk.offsets[0, 0] = 1.0


def test_unknown_joint_lists_names():
    sk = chain(3)
    with pytest.raises(UnknownNameError, match="known: j0, j1, j2"):
        sk.index("LeftFoot")


def test_fk_shape_error():
    sk = chain(3)
    with pytest.raises(ShapeError):
        forward_kinematics(sk, quat.identity((2, 4)), np.zeros((2, 3)))


def test_forward_kinematics_frame_equals_batched(rng):
    from physmocap import quat
    from physmocap.skeleton import forward_kinematics_frame
    from physmocap.scene import load_body
    sk = load_body().skeleton
    lrot = quat.from_scaled_axis(rng.normal(0.0, 0.7, (len(sk), 3)))
    root = np.array([0.2, -0.1, 0.9])
    gp, gr = forward_kinematics(sk, lrot[None], root[None])
    p1, r1 = forward_kinematics_frame(sk, lrot, root)
    np.testing.assert_allclose(p1, gp[0], atol=1e-12)
    np.testing.assert_allclose(r1, gr[0], atol=1e-12)
    with pytest.raises(ShapeError):
        forward_kinematics_frame(sk, lrot[:-1], root)


def test_forward_kinematics_chain_is_the_frame_s_bit_for_bit(rng):
    """Some joints' world transforms from their chains alone: exactly the whole frame's rows
    (a joint listed twice, the root, a leaf, in any order)."""
    from physmocap.scene import load_body
    from physmocap.skeleton import forward_kinematics_chain, forward_kinematics_frame
    sk = load_body().skeleton
    for _ in range(20):
        lrot = quat.normalize(rng.normal(size=(len(sk), 4)))
        root = rng.normal(size=3)
        x, g = forward_kinematics_frame(sk, lrot, root)
        js = [int(j) for j in rng.integers(0, len(sk), 4)] + [0, len(sk) - 1, 2]
        xc, gc = forward_kinematics_chain(sk, lrot, root, js)
        assert xc.shape == (len(js), 3) and gc.shape == (len(js), 4)
        assert np.array_equal(xc, x[js]) and np.array_equal(gc, g[js])


def test_rest_turn_finds_the_axis_turn():
    """``rest_turn``: the axis turn between a skeleton's frames and another's of the same joints
    (other limb lengths too); the identity for the same frames, for no joints in common, and
    for rests that differ by more than an axis turn."""
    from physmocap.scene import load_body
    from physmocap.skeleton import rest_turn
    sk = load_body().skeleton
    C = Rotation.from_euler("x", -90, degrees=True).as_matrix()
    for turn in (C, Rotation.from_euler("z", 180, degrees=True).as_matrix()):
        turned = sk.scaled(1.1).turned(turn)
        np.testing.assert_array_equal(rest_turn(turned, sk), np.round(turn.T) + 0.0)
        np.testing.assert_array_equal(rest_turn(sk, turned), np.round(turn) + 0.0)
    np.testing.assert_array_equal(rest_turn(sk, sk), np.eye(3))
    other = Skeleton(["a", "b"], [-1, 0], [[0, 0, 1], [0, 0, 0.5]])
    np.testing.assert_array_equal(rest_turn(other, sk), np.eye(3))
    half = sk.turned(Rotation.from_euler("x", 45, degrees=True).as_matrix())
    np.testing.assert_array_equal(rest_turn(half, sk), np.eye(3))
