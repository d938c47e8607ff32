"""Quaternion maths as properties, against scipy's Rotation (xyzw) on seeded random batches."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from physmocap import quat

N = 500


@pytest.fixture
def qs(rng):
    return Rotation.random(N, random_state=1).as_quat(), Rotation.random(N, random_state=2).as_quat()


def same_rotation(a, b, atol=1e-10):
    """q and -q are one rotation."""
    d = np.abs(np.sum(a * b, axis=-1))
    return np.allclose(d, 1.0, atol=atol)


def test_mul_matches_scipy(qs):
    a, b = qs
    ref = (Rotation.from_quat(a) * Rotation.from_quat(b)).as_quat()
    assert same_rotation(quat.mul(a, b), ref)


def test_inverse_gives_identity(qs):
    a, _ = qs
    assert same_rotation(quat.mul(a, quat.inv(a)), quat.identity((N,)))
    assert same_rotation(quat.mul(quat.conj(a), a), quat.identity((N,)))
    # inv works for non-unit quaternions too
    s = 3.0 * a
    assert np.allclose(quat.mul(s, quat.inv(s)), quat.identity((N,)))


def test_rotate_matches_scipy(qs, rng):
    a, _ = qs
    v = rng.normal(size=(N, 3))
    assert np.allclose(quat.rotate(a, v), Rotation.from_quat(a).apply(v))
    assert np.allclose(quat.inv_rotate(a, quat.rotate(a, v)), v)


def test_broadcasting(qs):
    a, b = qs
    out = quat.mul(a[:, None, :], b[None, :10, :])
    assert out.shape == (N, 10, 4)
    assert np.allclose(out[7, 3], quat.mul(a[7], b[3]))


def test_matrix_round_trip(qs):
    a, _ = qs
    m = quat.to_matrix(a)
    assert np.allclose(m, Rotation.from_quat(a).as_matrix())
    assert same_rotation(quat.from_matrix(m), a)


def test_scaled_axis_exp_log(qs, rng):
    a, _ = qs
    v = quat.to_scaled_axis(a)
    assert np.all(np.linalg.norm(v, axis=-1) <= np.pi + 1e-12)
    assert np.allclose(v, Rotation.from_quat(quat.abs_w(a)).as_rotvec())
    assert same_rotation(quat.from_scaled_axis(v), a)
    tiny = rng.normal(size=(N, 3)) * 1e-10
    assert np.allclose(quat.to_scaled_axis(quat.from_scaled_axis(tiny)), tiny, atol=1e-18)


def test_angle_matches_scipy(qs):
    a, b = qs
    ref = (Rotation.from_quat(b).inv() * Rotation.from_quat(a)).magnitude()
    assert np.allclose(quat.angle(a, b), ref)


def test_slerp_matches_scipy_and_endpoints(qs, rng):
    from scipy.spatial.transform import Slerp

    a, b = qs
    t = rng.uniform(size=N)
    out = quat.slerp(a, b, t)
    for i in range(0, N, 50):
        ref = Slerp([0, 1], Rotation.from_quat([a[i], b[i]]))(t[i]).as_quat()
        assert same_rotation(out[i], ref)
    assert same_rotation(quat.slerp(a, b, 0.0), a)
    assert same_rotation(quat.slerp(a, b, 1.0), b)
    assert same_rotation(quat.slerp(a, a, 0.3), a)        # equal inputs: no 0/0
    # constant angular speed: half-way is half the angle
    assert np.allclose(quat.angle(quat.slerp(a, b, 0.5), a), 0.5 * quat.angle(a, b))


def test_between(rng):
    u = rng.normal(size=(N, 3))
    v = rng.normal(size=(N, 3))
    q = quat.between(u, v)
    r = quat.rotate(q, u / np.linalg.norm(u, axis=-1, keepdims=True))
    assert np.allclose(r, v / np.linalg.norm(v, axis=-1, keepdims=True))
    # opposite vectors
    q = quat.between(np.array([[1.0, 0, 0], [0, 0, 1]]), np.array([[-1.0, 0, 0], [0, 0, -1]]))
    assert np.allclose(quat.rotate(q, [[1.0, 0, 0], [0, 0, 1]]), [[-1, 0, 0], [0, 0, -1]])


def test_wxyz_conversion(qs):
    a, _ = qs
    w = quat.to_wxyz(a)
    assert np.allclose(w[:, 0], a[:, 3])
    assert np.allclose(quat.from_wxyz(w), a)


def test_unroll_makes_signs_continuous(qs, rng):
    a, _ = qs
    path = quat.slerp(a[0], a[1], np.linspace(0, 1, 100))
    flipped = path * rng.choice([-1.0, 1.0], size=(100, 1))
    un = quat.unroll(flipped)
    assert np.all(np.sum(un[1:] * un[:-1], axis=-1) > 0)
    assert same_rotation(un, path)


def test_tuple_versions_are_the_array_versions_bit_for_bit(qs, rng):
    # the live loop's physics sub-steps run on the tuple versions: a last-bit difference there
    # grows into a different simulation, so equal means equal, not close
    a, b = qs
    b = b.copy()
    b[:50] = quat.normalize(a[:50] + rng.normal(size=(50, 4)) * 1e-9)    # slerp's near branch
    b[50:100] = -b[50:100]                                              # the other hemisphere
    t = rng.uniform(0.0, 1.0, N)
    t[:20] = 0.25
    raw = rng.normal(size=(N, 4)) * rng.uniform(0.1, 10.0, (N, 1))    # not unit
    raw[:50, :3] *= 1e-10                                               # tiny rotations
    for i in range(N):
        assert np.array_equal(quat.slerp(a[i], b[i], t[i]),
                              quat.slerp_t(tuple(a[i]), tuple(b[i]), float(t[i])))
        assert np.array_equal(quat.to_scaled_axis(raw[i]), quat.to_scaled_axis_t(tuple(raw[i])))
        assert np.array_equal(quat.normalize(raw[i]), quat.normalize_t(tuple(raw[i])))
        assert quat.norm_t(tuple(raw[i, :3])) == np.linalg.norm(raw[i, :3], axis=-1)
        assert np.array_equal(quat.mul(a[i], quat.conj(b[i])),
                              quat.mul_t(tuple(a[i]), quat.conj_t(tuple(b[i]))))
    assert isinstance(quat.slerp_t(a[0], b[0], 0.5), tuple)


def test_rotate_exact_t_is_rotate_bit_for_bit(qs, rng):
    v = rng.normal(size=(N, 3)) * 5.0
    out = quat.rotate(qs[0], v)
    for i in range(N):
        assert np.array_equal(out[i], quat.rotate_exact_t(tuple(qs[0][i]), tuple(v[i])))


def test_one_pair_is_a_batch_of_one_bit_for_bit(qs, rng):
    """``mul``, ``rotate``, ``normalize`` and ``between`` take plain floats for a single pair
    (the balance controller calls them every physics step): the same bits as the batch."""
    a, b = qs
    v = rng.normal(size=(N, 3)) * rng.uniform(0.01, 10.0, (N, 1))
    u = rng.normal(size=(N, 3)) * rng.uniform(0.01, 10.0, (N, 1))
    u[:50] = -v[:50] * 2.0 + rng.normal(size=(50, 3)) * 1e-7     # (nearly) opposite
    u[50:60] = v[50:60] * 3.0                                      # parallel
    raw = rng.normal(size=(N, 4)) * rng.uniform(1e-3, 10.0, (N, 1))
    for name, args in (("mul", (a, b)), ("rotate", (a, v)), ("between", (u, v)),
                       ("normalize", (raw,))):
        f = getattr(quat, name)
        batch = f(*args)
        for i in range(N):
            one = f(*(x[i] for x in args))
            assert one.shape == batch[i].shape and np.array_equal(one, batch[i]), (name, i)
    # exactly opposite: the batch's own branch, a half turn about an axis normal to u
    q = quat.between(np.array([0.0, 0.0, 2.0]), np.array([0.0, 0.0, -1.0]))
    assert np.array_equal(q, quat.between(np.array([[0.0, 0.0, 2.0]]),
                                          np.array([[0.0, 0.0, -1.0]]))[0])
    assert abs(q[3]) < 1e-12 and abs(q[2]) < 1e-12
    # a zero vector: NaN, as the batch gives it, not Python's ZeroDivisionError
    with np.errstate(invalid="ignore", divide="ignore"):
        for u, v in ((np.zeros(3), np.ones(3)), (np.ones(3), np.zeros(3))):
            assert np.array_equal(quat.between(u, v), quat.between(u[None], v[None])[0],
                                  equal_nan=True)
            assert np.isnan(quat.between(u, v)).all()
