"""Balance feedback of fully physical playback (``physmocap.playback.balance``): the dynamics
model it predicts with, physical validity (no force on the root from outside), standing on two
legs and on one, the feedback paths, the steadier reference feet, the stepping options (and
recovery steps), and the walking figures (measured; the issue's 20 s target is met by
``STEPPING`` on the demo walk and on the live straight walk, ``tests/test_playback_live.py``,
not on stopping)."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import SettingsError
from physmocap.motion import Motion
from physmocap.playback import Tracker, TrackingSettings, track
from physmocap.playback.balance import DRIVES, BalanceSettings
from physmocap.playback.reference import level_feet
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
    with pytest.raises(SettingsError, match="known: torque, motors"):
        BalanceSettings(drive="puppet")


def one_leg(body, offset: float):
    """Root ``(3,)`` and ``lrot (J, 4)``: standing on the right foot, the left thigh lifted, the
    whole body rolled about the right ankle until the centre of mass sits ``offset`` m from the
    ankle line toward the left (the sole reaches 4.5 cm)."""
    from physmocap.playback.character import segment_centres
    from physmocap.skeleton import forward_kinematics_frame
    sk, J, i = body.skeleton, len(body), body.index
    X, Y = np.array([1.0, 0, 0]), np.array([0, 1.0, 0])
    m = np.asarray(body.mass)
    x0, _ = forward_kinematics_frame(sk, quat.identity((J,)), sk.offsets[0])

    def pose(lean):
        lr = quat.identity((J,))
        lr[0] = quat.from_axis_angle(X, lean)
        lr[i("RightUpperLeg")] = quat.from_axis_angle(X, -lean)
        lr[i("LeftUpperLeg")] = quat.mul(quat.from_axis_angle(X, -lean),
                                         quat.from_axis_angle(Y, -0.35))
        lr[i("LeftLowerLeg")] = quat.from_axis_angle(Y, 0.7)
        lr[i("LeftFoot")] = quat.from_axis_angle(Y, -0.35)
        x, _ = forward_kinematics_frame(sk, lr, np.zeros(3))
        root = x0[i("RightFoot")] - x[i("RightFoot")]
        x, g = forward_kinematics_frame(sk, lr, root)
        c = m @ (x + quat.rotate(g, segment_centres(body))) / m.sum()
        return root, lr, float(c[1] - x[i("RightFoot"), 1])

    lo, hi = -0.3, 0.6
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if pose(mid)[2] > offset else (lo, mid)
    return pose(0.5 * (lo + hi))[:2]


def stands_on_one_leg(body, offset, s, seconds=5.0) -> bool:
    root, lrot = one_leg(body, offset)
    with Tracker(body, "physical", s) as tr:
        tr.reset(root, lrot[0], lrot)
        for _ in range(int(seconds * 60)):
            info = tr.step(root, lrot[0], lrot, 1 / 60)[3]
            if info["contacts"][0] or not info["contacts"][1]:
                return False
    return True


def test_one_leg_stance_and_solver_iterations(body):
    """Standing 5 s on one foot (no feedback): with the centre of mass 2 cm from the ankle line
    the body holds; at 3 cm (inside the 4.5 cm sole) it rolls over the sole's edge at the
    default 10 solver iterations and holds at 100: the contact solver's effective sole is
    narrower than the box (measured: holds up to 2.0 cm at 10, 3.5 cm at 100 iterations)."""
    assert stands_on_one_leg(body, 0.02, TrackingSettings())
    assert not stands_on_one_leg(body, 0.03, TrackingSettings())
    assert stands_on_one_leg(body, 0.03, TrackingSettings(solver_iterations=100))


def walk_start(body, seconds: float):
    """The first ``seconds`` of the demo walk looped to 20 s, prepared as ``track(...,
    loops=16)`` prepares it (feet levelled with one twist for the whole loop, grounded): the
    same frames as the benchmark's 20 s run. (Levelled over a shorter loop, the feet turn a
    little differently, and the first fall with ``STEPPING`` moves from 3.7 to 2.8 s.)"""
    from physmocap.demo import make_demo_capture
    from physmocap.playback.reference import ground_motion, loop_motion
    _, walk = make_demo_capture()
    m = ground_motion(level_feet(loop_motion(walk, 16), body, constant=True), body)
    return m[:int(seconds * m.fps)]


def prepared(**kw) -> TrackingSettings:
    return TrackingSettings(level_feet=False, ground_reference=False, **kw)


def test_stepping_first_step_lands_without_a_trip(body):
    """Without feedback the demo walk's first swing foot touches the floor 0.1 s before the
    reference plants it (its toes, pointed at the floor) and the stiff leg throws the body into
    the air (34 frames with no foot down in the first second). ``STEPPING`` (level swing sole,
    clearance, touchdown switch, compliant motors) lands it at the reference's time, feet down
    throughout (measured: first touch 0.358 / 0.508 s; 34 / 1 frames airborne)."""
    from physmocap.playback.balance import STEPPING
    ref = walk_start(body, 1.0)
    out = {}
    for name, s in (("plain", prepared()),
                    ("stepping", prepared(balance=True, balance_gains=STEPPING))):
        r = track(ref, body, "physical", s)
        t = np.arange(r.motion.n_frames) / r.motion.fps
        first = t[(t > 0.15) & r.contacts[:, 0]][0]
        out[name] = (first, int(np.sum(~r.contacts.any(axis=1))))
    assert out["plain"][0] < 0.40 and out["plain"][1] > 10
    assert out["stepping"][0] > 0.44 and out["stepping"][1] <= 3


def test_stepping_walks_without_falling(body):
    """The demo walk's first 8 s, fully physical: without feedback the head is below 1 m by
    1.0 s and the fall is reported at 1.56 s; with ``STEPPING`` the body walks on, upright (head
    above 1.3 m; measured 1.41 m), 5 m or more along its reference's path (measured 7.18 of
    8.92 m), feet at most 1 cm into the floor (measured 3.5 mm). The benchmark's 20 s loop: no
    fall (``python benchmarks/playback_speed.py clips``)."""
    from physmocap.playback.balance import STEPPING
    ref = walk_start(body, 8.0)
    head = body.index("Head")
    plain = track(ref, body, "physical", prepared())
    step = track(ref, body, "physical", prepared(balance=True, balance_gains=STEPPING))
    t = np.arange(ref.n_frames) / ref.fps
    assert plain.motion.gpos[t < 1.0, head, 2].min() < 1.0 and plain.falls
    assert step.falls == []
    assert step.motion.gpos[:, head, 2].min() > 1.3
    assert np.linalg.norm(step.motion.root_pos[-1, :2] - step.motion.root_pos[0, :2]) > 5.0
    assert step.report()["penetration_max_mm"] < 10


def test_demo_walk_figures_measured(body):
    """The demo walk, 4 s, fully physical with and without balance feedback: the time of the
    first fall is printed (pytest -s). Measured: these variants fall within 1.4-2.0 s (the
    issue's target, no fall in 20 s, is missed without ``STEPPING``); the body stays up
    at least its first second and the fall is detected."""
    from physmocap.demo import make_demo_capture
    _, truth = make_demo_capture()
    for name, s in (("motors, no feedback", TrackingSettings()),
                    ("torque drive", settings()), ("motors drive", settings(drive="motors"))):
        r = track(truth, body, "physical", s, loops=3)
        first = r.falls[0]["time_s"] if r.falls else None
        print(name, "first fall", first, "s of", round(r.motion.duration, 2))
        assert first is None or first > 1.0


def _pushed(body, v, **kw):
    """A standing reference, the body started at ``v (3,)`` m/s (a reference that stopped
    dead under a moving body), 5 s with ``STEPPING`` changed by ``kw``: did it fall, the side
    of its first recovery step (0 left, 1 right, ``None``), and its root's horizontal speed at
    the end (m/s)."""
    import dataclasses

    from physmocap.playback.balance import STEPPING
    J = len(body)
    root, lrot = np.array(body.skeleton.offsets[0], float), quat.identity((J,))
    s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(STEPPING, **kw))
    first = None
    with Tracker(body, "physical", s) as tr:
        tr.reset(root, lrot[0], lrot, dt=1 / 60,
                 next_pose=(root + np.asarray(v, float) / 60, lrot[0], lrot))
        for _ in range(300):
            tr.step(root, lrot[0], lrot, 1 / 60)
            if first is None and tr.balance._rec is not None:
                first = tr.balance._rec
        _, _, vel, _ = tr.char.base_state()
        return bool(tr.falls), first, float(np.hypot(*vel[:2]))


def test_recovery_steps_stop_a_pushed_standing_body(body):
    """A standing reference gives no step to take: a body moving forward or to its right at
    0.6 m/s falls unless it takes recovery steps (``recover_dist``); with ``STEPPING``'s it
    comes to rest within 5 s (measured 0.00 / 0.00 m/s; ``benchmarks/physical_diagnosis.py
    pushes`` for more pushes: forward at 0.8 m/s it falls)."""
    for v in ((0.6, 0.0, 0.0), (0.0, -0.6, 0.0)):
        assert _pushed(body, v, recover_dist=0.0)[0]
        fell, _, speed = _pushed(body, v)
        assert not fell and speed < 0.1


def test_unloaded_planted_foot_is_held_down(body):
    """``hold_feet``: with the motors stiffened on a standing reference (``stiff_kp`` 1, as
    ``STEPPING`` had them until the stand clip) and without it, a foot that bounced off the
    floor follows the reference's joint angles from a tilting pelvis, and the body pushed
    forward and to its left at 0.3 + 0.3 m/s, or backward at 0.3 m/s, falls; with it, it
    stays up (before ``recover_hold``: pushed to its left at 0.4 m/s; the live stop and go
    without it: down in 2 of 6 headings, ``benchmarks/RESULTS.md``). On ``STEPPING``'s
    compliant motors neither push falls, with or without it (measured)."""
    for v in ((0.3, 0.3, 0.0), (-0.3, 0.0, 0.0)):
        assert _pushed(body, v, hold_feet=0.0, stiff_kp=1.0)[0]
        assert not _pushed(body, v, stiff_kp=1.0)[0]
        assert not _pushed(body, v)[0]


def test_recovery_step_by_the_side_the_body_goes(body):
    """``recover_choose``: pushed to its right, the body steps first with its right foot and
    stays up; choosing the foot carrying less, it stepped with its left (across under the
    body) and fell."""
    fell, first, _ = _pushed(body, (0.0, -0.6, 0.0))
    assert first == 1 and not fell
    fell, first, _ = _pushed(body, (0.0, -0.6, 0.0), recover_choose=False)
    assert first == 0 and fell


def test_a_recovery_steps_stance_leg_only_brakes(body):
    """``recover_hold``: pushed to its left at 0.6 m/s, the body stays up and comes to rest
    (measured 0.00 m/s); with the stance leg of each recovery step moving the centre of mass
    to the reference's place over that foot, it falls."""
    fell, _, speed = _pushed(body, (0.0, 0.6, 0.0))
    assert not fell and speed < 0.1
    assert _pushed(body, (0.0, 0.6, 0.0), recover_hold=False)[0]


@pytest.mark.parametrize("speed", [-0.1, float("inf"), float("nan"), "slow", True])
def test_recovery_gate_must_be_a_speed(speed):
    with pytest.raises(SettingsError, match="recover_ref_speed"):
        BalanceSettings(drive="motors", recover_ref_speed=speed)


@pytest.mark.parametrize("wait", [-0.1, float("inf"), float("nan"), "long", True])
def test_swing_wait_must_be_a_number_of_seconds(wait):
    with pytest.raises(SettingsError, match="swing_wait"):
        BalanceSettings(drive="motors", swing_wait=wait)


@pytest.mark.parametrize("plan_s", [-0.01, float("inf"), float("nan"), "fast"])
def test_plan_interval_must_be_a_number_of_seconds(plan_s):
    with pytest.raises(SettingsError, match="plan_s"):
        BalanceSettings(drive="motors", plan_s=plan_s)


def test_motors_are_planned_every_plan_s(body, monkeypatch):
    """``plan_s``: the motors' targets are made every ``plan_s`` of simulated time (1/120 s:
    twice per 60 Hz frame of four physics steps), 0: once per reference frame; planned every
    frame's length, the simulation is the same bit for bit as once per frame."""
    import dataclasses

    from physmocap.playback.balance import STEPPING, BalanceController
    calls = []
    plan = BalanceController.plan
    monkeypatch.setattr(BalanceController, "plan",
                        lambda self, dt: calls.append(dt) or plan(self, dt))
    J = len(body)
    root, lrot = np.array(body.skeleton.offsets[0], float), quat.identity((J,))
    ends = {}
    for plan_s in (1 / 120, 0.0, 1 / 60):
        calls.clear()
        s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(STEPPING,
                                                                             plan_s=plan_s))
        with Tracker(body, "physical", s) as tr:
            tr.reset(root, lrot[0], lrot, dt=1 / 60)
            for _ in range(30):
                tr.step(root, lrot[0], lrot, 1 / 60)
            ends[plan_s] = np.array(tr.char.base_state()[0])
        assert len(calls) == {1 / 120: 60, 0.0: 30, 1 / 60: 30}[plan_s]
    assert np.array_equal(ends[0.0], ends[1 / 60])


@pytest.fixture(scope="module")
def walk_02_01(body, data_dir):
    """The solved CMU 02_01 walk (2.9 s, 1.2 m/s) on ``body``."""
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import pick_markerset
    from physmocap.solver.pipeline import solve_capture
    t = read_c3d(data_dir / "c3d/cmu/02_01.c3d")
    return solve_capture(t, pick_markerset(t.labels), body).motion


def test_no_recovery_step_in_a_walking_references_double_support(body, walk_02_01,
                                                                  monkeypatch):
    """``recover_ref_speed``: the solved CMU 02_01 walk (1.2 m/s) keeps both feet down about
    0.1 s per step, longer than ``recover_wait``; without the speed gate a lagging body took
    recovery steps there, with its reference still walking. With ``STEPPING``'s gate none
    starts while the reference's centre of mass moves at 0.3 m/s or more."""
    import dataclasses

    from physmocap.playback.balance import STEPPING, BalanceController
    walk = walk_02_01
    starts = []
    recovery = BalanceController._recovery

    def spy(self, swing, up, feet, X, com, vcom):
        before = self._rec
        out = recovery(self, swing, up, feet, X, com, vcom)
        if before is None and self._rec is not None:
            starts.append(float(np.hypot(*self.ref["vcom"][:2])))
        return out

    monkeypatch.setattr(BalanceController, "_recovery", spy)
    speeds = {}
    for gate in (0.0, STEPPING.recover_ref_speed):
        starts.clear()
        s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(
            STEPPING, recover_ref_speed=gate))
        track(walk, body, "physical", s)
        speeds[gate] = list(starts)
    assert STEPPING.recover_ref_speed == 0.3
    assert any(v >= 0.3 for v in speeds[0.0])
    assert all(v < 0.3 for v in speeds[0.3])


def test_a_late_swing_foot_comes_down_before_the_other_lifts(body, walk_02_01):
    """``swing_wait``: the body on the solved 02_01 walk lags its reference and lands late; on
    the reference's timing it lifted its stance foot with the other still in the air, frames
    with no foot on the floor (after the first frames: the body starts a few millimetres up).
    With ``STEPPING``'s 0.1 s fewer: 4 -> 2 since the solve holds the clavicles' twist (6 -> 4
    before, on the subject's body standing on its feet, ``scene.standing``; 9 -> 2 before that,
    on feet 0.6 cm shallower; 12 -> 1 before the seam was closed)."""
    import dataclasses

    from physmocap.playback.balance import STEPPING
    flight = {}
    for wait in (0.0, STEPPING.swing_wait):
        s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(
            STEPPING, swing_wait=wait))
        res = track(walk_02_01, body, "physical", s)
        assert not res.falls
        flight[wait] = int(np.sum(~res.contacts[5:].any(axis=1)))
    assert STEPPING.swing_wait == 0.1
    assert flight[0.1] < flight[0.0] and flight[0.1] <= 4, flight


@pytest.mark.parametrize("height", [-0.01, float("inf"), float("nan"), "low", True])
def test_contact_fallback_must_be_a_height(height):
    with pytest.raises(SettingsError, match="contact_fallback"):
        BalanceSettings(drive="motors", contact_fallback=height)


def test_a_planted_reference_foot_that_rises_a_little_stays_planted(body):
    """``contact_fallback``: a standing reference whose feet then rise 3 cm (above
    ``contact_height``, neither planted by the rule) keeps one foot on the floor with
    ``STEPPING``'s 3.5 cm, none without it; none if they rise 4 cm, move faster than
    ``plant_speed``, or were not planted the frame before (a landing foot)."""
    import dataclasses

    from physmocap.playback.balance import STEPPING
    J = len(body)
    lrot = quat.identity((J,))
    stand = np.array(body.skeleton.offsets[0], float)

    def planted(fallback, lift, speed=0.0, before=0.0):
        s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(
            STEPPING, contact_fallback=fallback))
        with Tracker(body, "physical", s) as tr:
            bc = tr.balance
            bc.set_reference(stand + [0.0, 0.0, before], lrot[0], lrot, np.zeros(3),
                             np.zeros((J, 3)), 0.0)
            bc.set_reference(stand + [speed / 60, 0.0, lift], lrot[0], lrot, np.zeros(3),
                             np.zeros((J, 3)), 1 / 60)
            return int(bc.ref["on"].sum())

    assert STEPPING.contact_fallback == 0.035
    assert planted(0.0, 0.0) == 2                      # standing: both feet on the floor
    assert planted(0.0, 0.03) == 0 and planted(0.035, 0.03) == 1
    assert planted(0.035, 0.04) == 0
    assert planted(0.035, 0.03, speed=2.0) == 0        # both feet faster than plant_speed
    assert planted(0.035, 0.03, before=0.03) == 0      # neither was planted


@pytest.mark.parametrize("name", ["fast_speed", "fast_plant_speed", "fast_filter_s"])
@pytest.mark.parametrize("value", [-0.1, float("inf"), float("nan"), "fast", True])
def test_fast_plant_rule_values_must_be_numbers(name, value):
    with pytest.raises(SettingsError, match=name):
        BalanceSettings(drive="motors", **{name: value})


def test_a_fast_reference_plants_its_faster_feet(body):
    """``fast_speed``: a standing pose carried along the floor at 1.4 m/s (its feet low,
    faster than ``plant_speed`` 1.0) has no foot planted at first; once its speed, filtered
    over ``fast_filter_s`` (here 1 s), passes ``fast_speed`` (here 1.35; about 3.3 s), the
    feet slower than ``fast_plant_speed`` (1.44) are planted. At 1.3 m/s, or with the rule
    off, never. (A rigid pose's feet move at its speed: ``STEPPING``'s own 1.45 m/s would
    leave them faster than 1.44.)"""
    import dataclasses

    from physmocap.playback.balance import STEPPING
    J = len(body)
    lrot = quat.identity((J,))
    stand = np.array(body.skeleton.offsets[0], float)

    def planted(speed, fast_speed=1.35, seconds=5.0):
        s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(
            STEPPING, fast_speed=fast_speed, fast_filter_s=1.0))
        on = []
        with Tracker(body, "physical", s) as tr:
            bc = tr.balance
            for k in range(int(seconds * 60) + 1):
                bc.set_reference(stand + [speed * k / 60, 0.0, 0.0], lrot[0], lrot,
                                 np.zeros(3), np.zeros((J, 3)), 1 / 60 if k else 0.0)
                on.append(int(bc.ref["on"].sum()))
        return np.array(on[1:])

    assert (STEPPING.fast_speed, STEPPING.fast_plant_speed, STEPPING.fast_filter_s) == (
        1.45, 1.44, 0.5)
    fast = planted(1.4)
    first = int(np.argmax(fast > 0))
    assert fast[:first].sum() == 0 and np.all(fast[first:] == 2)
    assert 3.0 < first / 60 < 3.6
    assert planted(1.3).sum() == 0 and planted(1.4, fast_speed=0.0).sum() == 0


@pytest.mark.parametrize("band", [None, 0.0, "stepping"])
def test_a_stance_foot_keeps_its_own_heading(body, band):
    """``stance_yaw``: a body standing at heading 0 under a reference turned 30 degrees about
    its vertical: the stance legs' IK puts each planted foot at its simulated heading, or
    ``stance_yaw`` short of it toward the reference's (``STEPPING``: 15 degrees; the hip
    takes the twist); off (``None``), at the reference's heading."""
    import dataclasses

    from physmocap.matching.trajectory import yaw_of
    from physmocap.playback.balance import STEPPING
    band = STEPPING.stance_yaw if band == "stepping" else band
    J = len(body)
    lrot = quat.identity((J,))
    stand = np.array(body.skeleton.offsets[0], float)
    turn = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), np.radians(30.0))
    s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(STEPPING,
                                                                         stance_yaw=band))
    wrap = lambda a: float(np.angle(np.exp(1j * a)))                          # noqa: E731
    with Tracker(body, "physical", s) as tr:
        tr.reset(stand, lrot[0], lrot)
        for _ in range(10):                            # settle onto both feet
            tr.step(stand, lrot[0], lrot, 1 / 60)
        bc = tr.balance
        bc.set_reference(stand, turn, lrot, np.zeros(3), np.zeros((J, 3)), 1 / 60)
        (X, R, *_), wts, swing, target, _ = bc.plan(1 / 60)
        assert not swing and (wts > 0).all()
        for hip, knee, ankle in bc.chains:
            world = quat.mul(quat.mul(quat.mul(turn, target[hip]), target[knee]),
                             target[ankle])
            ref, sim = yaw_of(bc.ref["g"][ankle]), yaw_of(R[ankle])
            d = wrap(sim - ref)
            assert abs(d) > np.radians(25.0)           # the feet stand near 0, not at 30 deg
            want = ref if band is None else ref + np.sign(d) * max(0.0, abs(d) - band)
            assert abs(wrap(yaw_of(world) - want)) < np.radians(0.5)


@pytest.mark.parametrize("band", [-0.1, float("inf"), float("nan"), "wide", True])
def test_stance_yaw_must_be_an_angle(band):
    with pytest.raises(SettingsError, match="stance_yaw must be None"):
        BalanceSettings(drive="motors", stance_yaw=band)


def test_stepping_follows_a_captured_u_turn(body, data_dir):
    """``STEPPING`` on the last 2.7 s of Bandai-Namco walk-turn-right 004, a captured U-turn (the
    hips turn about 190 degrees, at up to 260 degrees/s over 0.5 s, as the walk slows to 0.4
    m/s): the body stays up and ends facing within 45 degrees of its reference, having turned
    with it (``benchmarks/physical_diagnosis.py turn_clips``: up through it from 3, 4, 4.5 and
    5 s in). The live sharp turns' motion-matched reference, which turns about as fast, still
    puts the body down: its feet slide (``benchmarks/RESULTS.md``)."""
    from physmocap.io.bvh import read_bvh
    from physmocap.matching.database import resample
    from physmocap.matching.retarget import retarget
    from physmocap.matching.trajectory import yaw_of
    from physmocap.playback.balance import STEPPING
    src = read_bvh(data_dir / "bvh/bandai-namco/ds2_normal_locomotion/"
                   "dataset-2_walk-turn-right_normal_004.bvh")
    ref = resample(retarget(src, body.skeleton), 60.0)[270:]
    res = track(ref, body, "physical", TrackingSettings(balance=True, balance_gains=STEPPING))
    head = body.index("Head")
    assert not res.falls and res.motion.gpos[:, head, 2].min() > 1.2
    turn = np.unwrap(yaw_of(res.reference.lrot[:, 0]))
    sim = np.unwrap(yaw_of(res.motion.lrot[:, 0]))
    assert abs(turn[-1] - turn[0]) > np.radians(150.0)         # the reference turns round
    assert abs(np.angle(np.exp(1j * (sim[-1] - turn[-1])))) < np.radians(45.0)


def _leg_lifted(bc, lrot: np.ndarray, side: int) -> np.ndarray:
    """``lrot (J, 4)`` with leg ``side``'s knee bent 70 degrees and its hip 35 (the foot well
    off the floor)."""
    hip, knee, _ = bc.chains[side]
    lift = np.array(lrot)
    lift[knee] = quat.from_axis_angle(bc.knee_axis, np.radians(70.0))
    lift[hip] = quat.from_axis_angle(bc.knee_axis, np.radians(-35.0))
    return lift


@pytest.mark.parametrize("keep", [False, True])
def test_a_late_swing_goes_on_through_frames_with_no_reference_foot_down(body, keep):
    """``swing_keep``: a body whose right foot is swinging (its reference lifted it 0.25 s
    ago) while its reference shows no foot planted for a frame (raised 6 cm, above
    ``contact_fallback``, as the motion-matched references' sliding feet do) goes on swinging
    that foot down to land (``STEPPING``); without it the swing is dropped and the foot left
    to the reference's joint angles."""
    import dataclasses

    from physmocap.playback.balance import STEPPING
    J = len(body)
    lrot = quat.identity((J,))
    stand = np.array(body.skeleton.offsets[0], float)
    s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(STEPPING,
                                                                         swing_keep=keep))
    with Tracker(body, "physical", s) as tr:
        tr.reset(stand, lrot[0], lrot)
        for _ in range(10):                            # settle onto both feet
            tr.step(stand, lrot[0], lrot, 1 / 60)
        bc = tr.balance
        lift = _leg_lifted(bc, lrot, 1)
        for _ in range(15):                            # the reference lifts its right foot
            tr.step(stand, lift[0], lift, 1 / 60)
        assert bc._last_swing == [1]
        bc.set_reference(stand + [0.0, 0.0, 0.06], lrot[0], lrot, np.zeros(3),
                         np.zeros((J, 3)), 1 / 60)
        assert not bc.ref["on"].any()
        _, wts, swing, _, _ = bc.plan(1 / 60)
        assert wts[0] > 0 and wts[1] == 0              # on the left foot, the right in the air
        assert swing == ([1] if keep else [])
    assert STEPPING.swing_keep


@pytest.mark.parametrize("keep", [False, True])
def test_a_recovery_step_in_the_air_lands_before_the_other_foot_lifts(body, keep):
    """``swing_keep``: a standing body pushed forward at 0.6 m/s takes a recovery step; while
    that foot is in the air its reference lifts the other one (the foot the body stands on).
    With ``STEPPING`` the recovery step goes on and lands first; without ``swing_keep`` the
    body lifts its only stance foot (seen in the live sharp turns, ``benchmarks/RESULTS.md``)."""
    import dataclasses

    from physmocap.playback.balance import STEPPING
    J = len(body)
    root, lrot = np.array(body.skeleton.offsets[0], float), quat.identity((J,))
    s = TrackingSettings(balance=True, balance_gains=dataclasses.replace(STEPPING,
                                                                         swing_keep=keep))
    with Tracker(body, "physical", s) as tr:
        tr.reset(root, lrot[0], lrot, dt=1 / 60,
                 next_pose=(root + np.array([0.6, 0.0, 0.0]) / 60, lrot[0], lrot))
        bc = tr.balance
        for _ in range(120):
            tr.step(root, lrot[0], lrot, 1 / 60)
            rec = bc._rec
            if rec is not None and not tr.char.foot_loads()[0][rec]:
                break
        assert rec is not None and bc._rec_t < STEPPING.recover_s
        lift = _leg_lifted(bc, lrot, 1 - rec)
        bc.set_reference(root, lift[0], lift, np.zeros(3), np.zeros((J, 3)), 1 / 60)
        assert bc.ref["on"][rec] and not bc.ref["on"][1 - rec]
        _, _, swing, _, _ = bc.plan(1 / 60)
        assert swing == ([rec] if keep else [1 - rec])
