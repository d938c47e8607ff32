"""Balance feedback of fully physical playback (``physmocap.playback.balance``): the dynamics
model it predicts with, physical validity (no force on the root from outside), standing,
the feedback paths, the steadier reference feet, and the walking figures (measured; the
issue's 20 s target is not met)."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.motion import Motion
from physmocap.playback import Tracker, TrackingSettings, track
from physmocap.playback.balance import DRIVES, BalanceSettings
from physmocap.playback.track import level_feet
from physmocap.scene import load_body


@pytest.fixture(scope="module")
def body():
    return load_body()


def settings(**kw) -> TrackingSettings:
    return TrackingSettings(balance=True, balance_gains=BalanceSettings(**kw))


def standing(body, seconds=1.0, fps=60.0):
    F = int(seconds * fps)
    return Motion(body.skeleton, fps, np.tile(body.skeleton.offsets[0], (F, 1)),
                  quat.identity((F, len(body))))


def test_mass_matrix_predicts_the_simulation(body):
    """The controller's own joint-space mass matrix predicts PyBullet's accelerations under
    random joint torques in a random pose (the stable PD's prediction rests on it; PyBullet's
    ``calculateMassMatrix`` ignores inertias set by ``changeDynamics``)."""
    rng = np.random.default_rng(2)
    J = len(body)
    with Tracker(body, "physical", TrackingSettings(balance=True, gravity=0.0)) as tr:
        b, ch = tr.balance, tr.char
        ch.reset(np.array([0.0, 0.0, 2.0]), quat.from_scaled_axis(rng.normal(0, 0.4, (J, 3))))
        X, R, C, V, W, q, w = b.state()
        M, fg = b.mass_matrix(X, R, C)
        assert M.shape == (6 + 3 * (J - 1),) * 2 and np.allclose(M, M.T)
        assert np.all(np.linalg.eigvalsh(M) > 0)
        tau = rng.normal(0.0, 2.0, (J - 1, 3))
        rhs = fg.copy()
        rhs[6:] += tau.ravel()
        acc = np.linalg.solve(M, rhs)
        ch.p.setJointMotorControlMultiDofArray(ch.body, ch.links, ch.p.TORQUE_CONTROL,
                                               forces=tau.tolist(), physicsClientId=ch.client)
        ch.p.stepSimulation(physicsClientId=ch.client)
        X2, R2, C2, V2, W2, q2, w2 = b.state()
    meas = w2[1:] / tr.timestep                      # from rest: dv / dt
    pred = acc[6:].reshape(J - 1, 3)
    assert np.linalg.norm(meas - pred) < 1e-4 * np.linalg.norm(meas)
    np.testing.assert_allclose(V2[0] / tr.timestep, acc[:3], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("drive", DRIVES)
def test_no_external_force_on_the_body(body, drive, monkeypatch):
    """Physically valid: in physical mode nothing pushes the body from outside."""
    import pybullet

    def forbidden(*a, **k):
        raise AssertionError("external force in physical mode")

    monkeypatch.setattr(pybullet, "applyExternalForce", forbidden)
    monkeypatch.setattr(pybullet, "applyExternalTorque", forbidden)
    r = track(standing(body, 0.5), body, "physical", settings(drive=drive))
    assert r.report()["root_assist_force_max_n"] == 0.0


@pytest.mark.parametrize("drive", DRIVES)
def test_standing_holds_on_its_own_legs(body, drive):
    """A standing reference, 3 s, no assist: both feet stay on the floor, the joints within a
    few millimetres (measured 1-2 mm with either drive)."""
    r = track(standing(body, 3.0), body, "physical", settings(drive=drive))
    rep = r.report()
    assert rep["falls"] == [] and rep["tracking_error_m"] < 0.01
    assert r.contacts[10:].all()


def test_limp_body_still_falls(body):
    """Balance feedback cannot hold a body whose joints have no torque."""
    limp = TrackingSettings(balance=True, joint_max_torque=0.0, joint_min_torque=0.0)
    r = track(standing(body, 2.0), body, "physical", limp)
    assert r.falls and r.motion.gpos[-1, body.index("Head"), 2] < 0.6


def test_foot_placement_moves_the_swing_foot(body):
    """The swing leg's feedback is wired: an extra step width puts the demo walk's first swing
    foot (the left, swinging 0.1-0.35 s) further out to its side than without."""
    from physmocap.demo import make_demo_capture
    _, truth = make_demo_capture()
    ref = Motion(truth.skeleton, truth.fps, truth.root_pos[:48], truth.lrot[:48])
    left = body.index("LeftFoot")
    y = []
    for width in (0.0, 0.1):
        r = track(ref, body, "physical", settings(step_width=width, place_cd=0.0,
                                                   place_cv=0.0, place_cd_lat=0.0,
                                                   place_cv_lat=0.0))
        y.append(r.motion.gpos[-1, left, 1] - r.motion.gpos[-1, 0, 1])
    assert y[1] - y[0] > 0.03                      # measured 6.6 cm


def test_constant_twist_feet_do_not_spin(body):
    """The demo walk's retargeted feet: twisted frame by frame (``level_feet``), the swinging
    foot's sole normal turns several radians within a few frames; one twist for the clip
    (``constant=True``) keeps it to the leg's own motion."""
    from physmocap.demo import make_demo_capture
    _, truth = make_demo_capture()
    foot = body.index("LeftFoot")
    up = np.array([0.0, 0.0, 1.0])
    speed = []
    for constant in (False, True):
        m = level_feet(truth, body, constant=constant)
        n = quat.rotate(m.grot[:, foot], np.broadcast_to(up, (m.n_frames, 3)))
        ang = np.arccos(np.clip(np.sum(n[1:] * n[:-1], -1), -1, 1)) * m.fps
        speed.append(float(ang.max()))
    assert speed[0] > 40.0 and speed[1] < 15.0      # rad/s (measured 161 / 7)


def test_settings_errors():
    with pytest.raises(ValueError, match="known: torque, motors"):
        BalanceSettings(drive="puppet")


def test_demo_walk_figures_measured(body):
    """The demo walk, 4 s, fully physical with and without balance feedback: the time of the
    first fall is printed (pytest -s). Measured: every variant falls within 1.4-2.0 s (the
    issue's target, no fall in 20 s, is missed); the body stays up at least its first second
    and the fall is detected."""
    from physmocap.demo import make_demo_capture
    _, truth = make_demo_capture()
    for name, s in (("motors, no feedback", TrackingSettings()),
                    ("torque drive", settings()), ("motors drive", settings(drive="motors"))):
        r = track(truth, body, "physical", s, loops=3)
        first = r.falls[0]["time_s"] if r.falls else None
        print(name, "first fall", first, "s of", round(r.motion.duration, 2))
        assert first is None or first > 1.0
