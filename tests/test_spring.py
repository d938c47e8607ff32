"""Critically damped springs against their ODE (fine RK4), their halflife meaning and each other."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from physmocap import quat, spring
from physmocap.errors import ShapeError

N = 64


def rk4(f, state, T, h=1e-3):
    """Integrate ``state' = f(t, state)`` from 0 to T (T a multiple of h) with classic RK4."""
    t = 0.0
    for _ in range(int(round(T / h))):
        k1 = f(t, state)
        k2 = f(t + h / 2, [s + h / 2 * k for s, k in zip(state, k1)])
        k3 = f(t + h / 2, [s + h / 2 * k for s, k in zip(state, k2)])
        k4 = f(t + h, [s + h * k for s, k in zip(state, k3)])
        state = [s + h / 6 * (a + 2 * b + 2 * c + d)
                 for s, a, b, c, d in zip(state, k1, k2, k3, k4)]
        t += h
    return state


@pytest.fixture
def batch(rng):
    return dict(x=rng.normal(size=(N, 3)), v=rng.normal(size=(N, 3)) * 2,
                g=rng.normal(size=(N, 3)), q=rng.normal(size=(N, 3)),
                h=rng.uniform(0.05, 0.6, size=(N, 1)))


def test_critical_spring_matches_ode_with_moving_goal(batch):
    x, v, g, q, h = batch["x"], batch["v"], batch["g"], batch["q"], batch["h"]
    c = spring.halflife_to_damping(h)
    k = c * c / 4  # critical

    def f(t, s):
        return [s[1], k * (g + q * t - s[0]) + c * (q - s[1])]

    T = 0.5
    xr, vr = rk4(f, [x, v], T)
    xs, vs = spring.critical_spring(x, v, g, q, h, T)
    assert np.allclose(xs, xr, atol=1e-9) and np.allclose(vs, vr, atol=1e-8)


def test_simple_and_decay_match_ode(batch):
    x, v, g, h = batch["x"], batch["v"], batch["g"], batch["h"]
    c = spring.halflife_to_damping(h)
    k = c * c / 4
    T = 0.3
    xr, vr = rk4(lambda t, s: [s[1], k * (g - s[0]) - c * s[1]], [x, v], T)
    xs, vs = spring.simple_spring(x, v, g, h, T)
    assert np.allclose(xs, xr, atol=1e-9) and np.allclose(vs, vr, atol=1e-8)
    xr, vr = rk4(lambda t, s: [s[1], -k * s[0] - c * s[1]], [x, v], T)
    xd, vd = spring.decay_spring(x, v, h, T)
    assert np.allclose(xd, xr, atol=1e-9) and np.allclose(vd, vr, atol=1e-8)
    # the three agree where their goals agree
    assert np.allclose(spring.simple_spring(x, v, 0 * g, h, T)[0], xd)
    assert np.allclose(spring.critical_spring(x, v, g, 0 * g, h, T)[0], xs)


def test_thesis_form_eq_3_27(batch):
    """Eq. 3.27-3.28 with w = the spring's rate."""
    x, v, g, h = batch["x"], batch["v"], batch["g"], batch["h"]
    w = spring.halflife_to_damping(h) / 2
    dt = 0.1
    ref_x = g + ((x - g) + (v + w * (x - g)) * dt) * np.exp(-w * dt)
    ref_v = (v - (v + w * (x - g)) * w * dt) * np.exp(-w * dt)
    xs, vs = spring.simple_spring(x, v, g, h, dt)
    assert np.allclose(xs, ref_x) and np.allclose(vs, ref_v)


@pytest.mark.parametrize("halflife", [0.05, 0.2, 1.0, 3.0])
def test_halflife_halves_the_offset(halflife):
    x, _ = spring.decay_spring(np.array([2.0, -1.0]), 0.0, halflife, halflife)
    assert np.allclose(x, [1.0, -0.5], atol=1e-12)
    x, _ = spring.simple_spring(0.0, 0.0, 4.0, halflife, halflife)  # released at rest
    assert np.isclose(x, 2.0)
    x, _ = spring.decay_spring(1.0, 0.0, halflife, 5 * halflife)
    assert abs(x) < 0.01  # ~0 after 5 halflives (0.0035)


def test_damping_conversions():
    h = np.array([0.1, 0.27, 1.0])
    assert np.allclose(spring.damping_to_halflife(spring.halflife_to_damping(h)), h)
    # Holden's y = 2 ln 2 / h is our rate at from_holden_halflife(h)
    hh = spring.from_holden_halflife(h)
    assert np.allclose(spring.halflife_to_damping(hh) / 2, 2 * np.log(2) / h)


def test_goal_velocity_tracking(rng):
    x, v = rng.normal(size=(N, 3)), rng.normal(size=(N, 3))
    g, q = rng.normal(size=(N, 3)), rng.normal(size=(N, 3))
    h, T = 0.2, 3.0
    xs, vs = spring.critical_spring(x, v, g, q, h, T)
    assert np.allclose(vs, q, atol=1e-4) and np.allclose(xs, g + q * T, atol=1e-4)
    # frame by frame with the goal advanced each frame: the same as one exact step
    dt = 1 / 60
    xf, vf = x, v
    for i in range(180):
        xf, vf = spring.critical_spring(xf, vf, g + q * i * dt, q, h, dt)
    assert np.allclose(xf, xs, atol=1e-9) and np.allclose(vf, vs, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.floats(-5, 5), st.floats(-5, 5), st.floats(-5, 5), st.floats(0.02, 2.0),
       st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_steps_compose(x, v, g, h, a, b):
    """Exact: a step of a + b s is a step of a then one of b. Critical: no overshoot."""
    x2, v2 = spring.simple_spring(*spring.simple_spring(x, v, g, h, a), g, h, b)
    x1, v1 = spring.simple_spring(x, v, g, h, a + b)
    assert np.isclose(x1, x2, atol=1e-9) and np.isclose(v1, v2, atol=1e-8)
    if v == 0.0:  # released at rest: monotone toward the goal, never past it
        xs = spring.simple_spring(x, 0.0, g, h, np.linspace(0, 5, 50))[0]
        assert np.all(np.sign(xs - g) * np.sign(x - g) >= 0)


def test_rotation_spring_about_fixed_axis_is_scalar_spring(rng):
    axis = rng.normal(size=(N, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    goal = quat.normalize(rng.normal(size=(N, 4)))
    a0, w0 = rng.uniform(-2.5, 2.5, N), rng.normal(size=N)
    h, dt = rng.uniform(0.05, 0.5, N), 0.15
    q0 = quat.mul(quat.from_axis_angle(axis, a0), goal)
    q1, w1 = spring.simple_spring_rotation(q0, axis * w0[:, None], goal, h, dt)
    a1, wr = spring.simple_spring(a0, w0, 0.0, h, dt)
    ref = quat.mul(quat.from_axis_angle(axis, a1), goal)
    assert np.allclose(np.abs(np.sum(q1 * ref, axis=1)), 1.0, atol=1e-10)
    assert np.allclose(w1, axis * wr[:, None], atol=1e-10)
    # q and -q are one goal; the output keeps the input's hemisphere
    q2, _ = spring.simple_spring_rotation(q0, axis * w0[:, None], -goal, h, dt)
    assert np.allclose(q2, q1, atol=1e-10)
    assert np.all(np.sum(q1 * q0, axis=1) >= 0)


def test_rotation_spring_converges_and_decay_halves(rng):
    q = quat.normalize(rng.normal(size=(N, 4)))
    goal = quat.normalize(rng.normal(size=(N, 4)))
    qs, ws = spring.simple_spring_rotation(q, rng.normal(size=(N, 3)), goal, 0.1, 2.0)
    assert np.all(quat.angle(qs, goal) < 1e-4) and np.allclose(ws, 0, atol=1e-3)
    off = quat.normalize(rng.normal(size=(N, 4)))
    d, _ = spring.decay_spring_rotation(off, np.zeros((N, 3)), 0.3, 0.3)
    assert np.allclose(quat.angle(d), 0.5 * quat.angle(off), atol=1e-9)


def test_character_update_matches_ode(batch):
    p, v, a, q, h = batch["g"], batch["v"], batch["x"], batch["q"], batch["h"]
    c = spring.halflife_to_damping(h)
    k = c * c / 4
    T = 0.4
    pr, vr, ar = rk4(lambda t, s: [s[1], s[2], k * (q - s[1]) - c * s[2]], [p, v, a], T)
    ps, vs, as_ = spring.character_update(p, v, a, q, h, T)
    assert np.allclose(ps, pr, atol=1e-9) and np.allclose(vs, vr, atol=1e-9)
    assert np.allclose(as_, ar, atol=1e-8)


def test_character_predict_shapes_and_consistency(batch):
    p, v, a, q = batch["g"], batch["v"], batch["x"], batch["q"]
    times = np.array([0.0, 1 / 3, 2 / 3, 1.0])
    P, V, A = spring.character_predict(p, v, a, q, 0.25, times)
    assert P.shape == V.shape == A.shape == (4, N, 3)
    assert np.allclose(P[0], p) and np.allclose(V[0], v)
    for i, t in enumerate(times):
        assert np.allclose(P[i], spring.character_update(p, v, a, q, 0.25, t)[0])
    # long after, the character moves at the desired velocity
    P, V, _ = spring.character_predict(p, v, a, q, 0.1, [5.0, 6.0])
    assert np.allclose(V, q, atol=1e-9) and np.allclose(P[1] - P[0], q, atol=1e-9)


def test_facing_predict(rng):
    q = quat.normalize(rng.normal(size=(5, 4)))
    w = rng.normal(size=(5, 3))
    goal = quat.normalize(rng.normal(size=(5, 4)))
    times = [0.0, 0.5, 1.0]
    Q, W = spring.facing_predict(q, w, goal, 0.3, times)
    assert Q.shape == (3, 5, 4) and W.shape == (3, 5, 3)
    assert np.allclose(np.abs(np.sum(Q[0] * q, axis=-1)), 1.0)
    for i, t in enumerate(times):
        qi, wi = spring.simple_spring_rotation(q, w, goal, 0.3, t)
        assert np.allclose(Q[i], qi) and np.allclose(W[i], wi)


def test_errors():
    with pytest.raises(ShapeError, match="halflife"):
        spring.simple_spring(0.0, 0.0, 1.0, 0.0, 0.1)
    with pytest.raises(ShapeError, match="halflife"):
        spring.decay_spring(0.0, 0.0, np.array([0.1, -1.0]), 0.1)
    with pytest.raises(ShapeError, match="damping"):
        spring.damping_to_halflife(0.0)
    with pytest.raises(ShapeError, match=r"\(\.\.\., 4\)"):
        spring.simple_spring_rotation(np.zeros(3), np.zeros(3), quat.identity(), 0.1, 0.1)
    with pytest.raises(ShapeError, match=r"\(T,\)"):
        spring.character_predict(np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3), 0.1,
                                 np.zeros((2, 2)))
    with pytest.raises(ShapeError, match=r"dts: expected shape \(T,\)"):
        spring.facing_predict(quat.identity(), np.zeros(3), quat.identity(), 0.1,
                              np.zeros((2, 2)))


def test_one_rotation_spring_is_the_batched_one_bit_for_bit():
    # one rotation takes a plain-float path (the controller's every frame): it must give what
    # the batched arithmetic gives, to the last bit
    rng = np.random.default_rng(7)
    for i in range(2000):
        q, g = quat.normalize(rng.normal(size=(2, 4)))
        if i % 4 == 0:
            g = quat.normalize(q + rng.normal(size=4) * 1e-10)       # tiny rotation to the goal
        w = rng.normal(size=3) * (3.0 if i % 3 else 1e-12)
        h, dt = float(rng.uniform(0.05, 1.0)), float(rng.choice([1 / 60, 0.0, 0.5]))
        one = spring.simple_spring_rotation(q, w, g, h, dt)
        batch = spring.simple_spring_rotation(q[None], w[None], g[None], np.array([h]), dt)
        assert np.array_equal(one[0], batch[0][0]) and np.array_equal(one[1], batch[1][0])
