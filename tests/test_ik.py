import numpy as np
from scipy.spatial.transform import Rotation

from physmocap import quat
from physmocap.ik import two_bone_ik


def chain(rng, n):
    a = rng.normal(size=(n, 3))
    b = a + rng.normal(size=(n, 3)) * 0.4
    c = b + rng.normal(size=(n, 3)) * 0.4
    ga = Rotation.random(n, random_state=1).as_quat()
    gb = Rotation.random(n, random_state=2).as_quat()
    return a, b, c, ga, gb


def test_reaches_reachable_targets_and_keeps_bone_lengths(rng):
    a, b, c, ga, gb = chain(rng, 500)
    lab, lbc = np.linalg.norm(b - a, axis=-1), np.linalg.norm(c - b, axis=-1)
    d = rng.normal(size=(500, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    r = np.abs(lab - lbc) + (lab + lbc - np.abs(lab - lbc)) * rng.uniform(0.05, 0.95, 500)
    t = a + d * r[:, None]
    ga2, gb2, b2 = two_bone_ik(a, b, c, t, ga, gb)
    # the new end, carried by the new rotations, lands on the target
    c_local = quat.inv_rotate(gb, c - b)
    c2 = b2 + quat.rotate(gb2, c_local)
    assert np.abs(c2 - t).max() < 1e-6
    assert np.allclose(np.linalg.norm(b2 - a, axis=-1), lab)
    # the middle joint moved with the root's rotation
    assert np.allclose(a + quat.rotate(ga2, quat.inv_rotate(ga, b - a)), b2, atol=1e-9)


def test_unreachable_target_stretches_toward_it(rng):
    a, b, c, ga, gb = chain(rng, 50)
    far = a + (c - a) * 10.0
    _, gb2, b2 = two_bone_ik(a, b, c, far, ga, gb)
    c2 = b2 + quat.rotate(gb2, quat.inv_rotate(gb, c - b))
    u = (far - a) / np.linalg.norm(far - a, axis=-1, keepdims=True)
    v = (c2 - a) / np.linalg.norm(c2 - a, axis=-1, keepdims=True)
    assert np.all(np.sum(u * v, -1) > 0.999)


def test_bends_toward_the_pole(rng):
    a = np.zeros((1, 3)); b = np.array([[0.0, 0.0, -0.4]]); c = np.array([[0.0, 0.0, -0.8]])
    g = quat.identity((1,))
    t = np.array([[0.0, 0.0, -0.6]])
    _, _, b2 = two_bone_ik(a, b, c, t, g, g, pole=np.array([[1.0, 0.0, 0.0]]))
    assert b2[0, 0] > 0.1          # the knee goes forward (+x), toward the pole


def test_a_straight_chain_reaches_off_its_line(rng):
    """A straight chain (no bend plane: the pole falls back on the chain's direction) reaches
    targets off its line: a straight arm asked to reach before the chest once fell 15.5 cm
    short, its fallback pole not square to the reach line."""
    n = 200
    a = rng.normal(size=(n, 3))
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    b, c = a + 0.3 * d, a + 0.55 * d                  # upper arm 0.3 m, forearm 0.25 m
    g = quat.identity((n,))
    e = rng.normal(size=(n, 3))
    e /= np.linalg.norm(e, axis=-1, keepdims=True)
    t = a + e * rng.uniform(0.1, 0.5, (n, 1))         # anywhere within reach
    ga2, gb2, b2 = two_bone_ik(a, b, c, t, g, g)
    c2 = b2 + quat.rotate(gb2, quat.inv_rotate(g, c - b))
    assert np.abs(c2 - t).max() < 1e-6
    assert np.allclose(np.linalg.norm(b2 - a, axis=-1), 0.3)


def test_local_rotations_compose_to_the_solved_chain(rng):
    """``two_bone_ik_local``: under the parent's world rotation the local rotations give back
    ``two_bone_ik``'s world rotations, and the end's world rotation is ``g_end``."""
    from physmocap.ik import two_bone_ik_local
    from scipy.spatial.transform import Rotation
    n = 50
    a, b, c, ga, gb = chain(rng, n)
    t = a + (c - a) * 0.8
    gp = Rotation.random(n, random_state=3).as_quat()
    ge = Rotation.random(n, random_state=4).as_quat()
    la, lb, lc = two_bone_ik_local(a, b, c, t, gp, ga, gb, ge)
    ga2, gb2, _ = two_bone_ik(a, b, c, t, ga, gb)
    wa = quat.mul(gp, la)
    wb = quat.mul(wa, lb)
    assert np.all(quat.angle(wa, ga2) < 1e-6) and np.all(quat.angle(wb, gb2) < 1e-6)
    assert np.all(quat.angle(quat.mul(wb, lc), ge) < 1e-6)


def test_one_chain_in_floats_is_the_batched_solver_bit_for_bit(rng):
    from physmocap.ik import two_bone_ik_t
    n = 400
    a, b, c, ga, gb = chain(rng, n)
    targets = [c + np.array([0.0, 0.0, 0.01]),                  # a small lift (SwingLift)
               rng.normal(size=(n, 3)) * 2.0,                   # reachable or not
               a + (c - a) * rng.uniform(0.1, 1.5, (n, 1))]     # along the reach line
    straight = a + (c - a) * 0.5                                # a straight chain: no plane
    for tgt in targets:
        for bb in (b, straight):
            batched = two_bone_ik(a, bb, c, tgt, ga, gb)
            for i in range(n):
                one = two_bone_ik_t(tuple(a[i]), tuple(bb[i]), tuple(c[i]), tuple(tgt[i]),
                                    tuple(ga[i]), tuple(gb[i]))
                for x, y in zip(batched, one):
                    assert np.array_equal(x[i], y), (i, x[i], y)
