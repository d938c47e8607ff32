"""Closed-loop arm IK (playback/reach.py): the reference's arms bent for the simulated body."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import SettingsError, ShapeError, UnknownNameError
from physmocap.motion import Motion
from physmocap.playback import Tracker, TrackingSettings, track
from physmocap.playback.reach import HANDS, ArmReach, reach_report
from physmocap.scene import load_body
from physmocap.skeleton import Skeleton, forward_kinematics_frame


@pytest.fixture(scope="module")
def body():
    return load_body()


def pose(body, seed=0, bend=0.3):
    """A standing pose with some bend in every joint: ``(root_pos (3,), lrot (J, 4))``."""
    rng = np.random.default_rng(seed)
    lrot = quat.normalize(quat.from_scaled_axis(rng.normal(0, bend, (len(body), 3))))
    lrot[0] = quat.from_scaled_axis(np.array([0.0, 0.0, rng.uniform(-3, 3)]))
    return body.skeleton.offsets[0] + rng.normal(0, 0.1, 3), lrot


def hands_of(body, root, lrot):
    x, _ = forward_kinematics_frame(body.skeleton, lrot, root)
    return x[[body.index(h) for h in HANDS]]


def near_target(body, root, lrot, rng):
    """Targets a few cm from the pose's own hands, drawn toward the shoulders: within reach."""
    x, _ = forward_kinematics_frame(body.skeleton, lrot, root)
    hands = x[[body.index(h) for h in HANDS]]
    shoulders = x[[body.index(h) for h in ("LeftUpperArm", "RightUpperArm")]]
    return hands + 0.2 * (shoulders - hands) + rng.normal(0, 0.02, (2, 3))


def test_bend_reaches_the_targets_on_the_reference_itself(body):
    """Simulated body = reference (no deviation): the bent reference's hands are on the
    targets; only the arm joints change."""
    rng = np.random.default_rng(1)
    arms = ArmReach(body.skeleton)
    for seed in range(5):
        root, lrot = pose(body, seed)
        t = near_target(body, root, lrot, rng)
        out = arms.bend((root, lrot), (root, lrot), (root, lrot), t)
        assert np.allclose(hands_of(body, root, out), t, atol=1e-6)
        moved = ~np.isclose(np.abs(np.sum(out * lrot, -1)), 1.0)               # (J,)
        arm_joints = set(arms.shoulders) | set(arms.elbows) | set(arms.hands)
        assert set(np.flatnonzero(moved)) <= arm_joints


def test_bend_carries_the_deviation_of_the_simulated_chest(body):
    """The simulated body off its reference by a rigid move and a different torso pose (its
    clavicles as the reference's): the reference's arms, bent, put the SIMULATED body's hands
    on the targets when its chest keeps its deviation (here the reference does not move over
    the frame: S1 = S0)."""
    rng = np.random.default_rng(2)
    arms = ArmReach(body.skeleton)
    for seed in range(5):
        root, lrot = pose(body, seed)
        sim_root, sim_lrot = pose(body, seed + 10)
        sim_lrot[arms.parents] = lrot[arms.parents]
        t = near_target(body, sim_root, sim_lrot, rng)
        arms.reset()                                      # a first frame: no change carried on
        out = arms.bend((sim_root, sim_lrot), (root, lrot), (root, lrot), t)
        # the simulated body with the bent arm joints: its hands land on the targets
        moved = np.concatenate([arms.shoulders, arms.elbows, arms.hands])
        sim_out = sim_lrot.copy()
        sim_out[moved] = out[moved]
        assert np.allclose(hands_of(body, sim_root, sim_out), t, atol=1e-6)
        # without the deviation the reference's own hands land there instead, not the body's
        arms.reset()
        plain = arms.bend((root, lrot), (root, lrot), (root, lrot), t)
        sim_plain = sim_lrot.copy()
        sim_plain[moved] = plain[moved]
        assert np.linalg.norm(hands_of(body, sim_root, sim_plain) - t, axis=-1).max() > 0.01


def test_bend_moves_with_the_reference_over_the_frame(body):
    """Reference and body moving together (the body 3 cm and 5 deg off the reference, both
    walking 2 cm forward in the frame): the deviation is kept in the shoulder's frame, so the
    targets are met at the frame's end, not where the body was at its start."""
    rng = np.random.default_rng(3)
    arms = ArmReach(body.skeleton)
    root0, lrot = pose(body, 4)
    off = quat.from_scaled_axis(np.array([0.0, 0.0, np.radians(5)]))
    sim_lrot = lrot.copy()
    sim_lrot[0] = quat.mul(off, lrot[0])
    sim_root0 = root0 + np.array([0.03, 0.0, 0.0])
    step = np.array([0.02, 0.01, 0.0])
    t = near_target(body, sim_root0 + step, sim_lrot, rng)
    out = arms.bend((sim_root0, sim_lrot), (root0, lrot), (root0 + step, lrot), t)
    moved = np.concatenate([arms.shoulders, arms.elbows, arms.hands])
    sim_out = sim_lrot.copy()
    sim_out[moved] = out[moved]
    assert np.allclose(hands_of(body, sim_root0 + step, sim_out), t, atol=1e-6)


def test_bend_chest_is_bend_given_the_simulated_chests(body):
    """``bend`` is ``bend_chest`` on the simulated body's chest frames; ``predict=False`` takes
    the deviation as it is (no change carried on) and leaves the memory of the last frame's."""
    rng = np.random.default_rng(5)
    arms = ArmReach(body.skeleton)
    for seed in range(3):
        root, lrot = pose(body, seed)
        sim_root, sim_lrot = pose(body, seed + 20)
        t = near_target(body, sim_root, sim_lrot, rng)
        x, g = forward_kinematics_frame(body.skeleton, sim_lrot, sim_root)
        chest = (x[arms.frames], g[arms.frames])
        arms.reset()
        want = arms.bend((sim_root, sim_lrot), (root, lrot), (root, lrot), t)
        arms.reset()
        assert np.allclose(arms.bend_chest(chest, (root, lrot), (root, lrot), t), want)
        # a remembered deviation (another body pose last frame) is carried on by bend...
        other = pose(body, seed + 40)
        arms.bend(other, (root, lrot), (root, lrot), t)
        last = tuple(np.copy(a) for a in arms._last)
        carried = arms.bend_chest(chest, (root, lrot), (root, lrot), t)
        assert not np.allclose(carried, want)
        # ...but not by a re-solve within the frame, which keeps the memory as it was
        arms._last = last
        now = arms.bend_chest(chest, (root, lrot), (root, lrot), t, predict=False)
        assert np.allclose(now, want)
        assert all(np.array_equal(a, b) for a, b in zip(arms._last, last))


def test_bend_chest_with_the_reference_s_kinematics_given_is_the_same(body):
    """``fk1`` (``ref1``'s forward kinematics, shared by a frame's re-solves) changes nothing,
    bit for bit, with or without the deviation carried on."""
    arms, again = ArmReach(body.skeleton), ArmReach(body.skeleton)
    rng = np.random.default_rng(3)
    for seed in range(6):
        sim, ref0, ref1 = pose(body, seed), pose(body, seed + 10), pose(body, seed + 20)
        t = near_target(body, *ref1, rng)
        fk1 = forward_kinematics_frame(body.skeleton, ref1[1], ref1[0])
        assert np.array_equal(arms.bend(sim, ref0, ref1, t), again.bend(sim, ref0, ref1, t,
                                                                        fk1=fk1))
        x, g = forward_kinematics_frame(body.skeleton, sim[1], sim[0])
        chest = (x[arms.frames], g[arms.frames])
        assert np.array_equal(arms.bend_chest(chest, ref0, ref1, t, predict=False),
                              again.bend_chest(chest, ref0, ref1, t, predict=False, fk1=fk1))


def swaying(body):
    """A standing reference swaying its trunk at 3 Hz for 2 s (the chest over 5 cm forward
    and back, 8 cm sideways), hand targets fixed before it: ``(ref, targets (F, 2, 3),
    frames to measure (the second second))``."""
    F, fps = 120, 60.0
    J = len(body)
    root = np.tile(body.skeleton.offsets[0], (F, 1))
    lrot = quat.identity((F, J))
    ph = 2 * np.pi * 3.0 * np.arange(F) / fps
    for j in (body.index("Spine"), body.index("Chest")):
        lrot[:, j] = quat.from_scaled_axis(np.stack([0.25 * np.sin(ph), 0.15 * np.cos(ph),
                                                     np.zeros(F)], -1))
    ref = Motion(body.skeleton, fps, root, lrot)
    still = Motion(body.skeleton, fps, root, quat.identity((F, J)))
    shoulders = still.gpos[:, [body.index(h) for h in ("LeftUpperArm", "RightUpperArm")]]
    t = shoulders + np.array([0.3, 0.0, -0.2])
    last = slice(F // 2, F)
    return ref, t, last


def sway_misses(body, on: TrackingSettings, off: TrackingSettings) -> tuple[float, float]:
    """The hands' mean distance (m) from their targets over ``swaying``'s second second, with
    ``on`` and with ``off``; without hand targets the two settings must simulate the same
    body, bit for bit (checked)."""
    ref, t, last = swaying(body)

    def run(settings, targets=t):
        return track(ref, body, settings=settings, hand_targets=targets).motion

    a, b = run(on, None), run(off, None)
    assert np.array_equal(a.lrot, b.lrot) and np.array_equal(a.root_pos, b.root_pos)
    return tuple(reach_report(body.skeleton, m.root_pos[last], m.lrot[last],
                              t[last])["hand_error_reachable_m"] for m in (run(on), run(off)))


def test_reach_every_step_follows_a_swaying_chest(body):
    """A standing reference swaying its trunk, the hands held at fixed points before it
    (``swaying``): the arms re-solved before every physics step from the simulated chest
    keep the hands nearer than once per frame from a carried-on deviation (1.9 against 25.7
    mm mean; 6.0 against 22.6 before ``reach_kp``, 18.5 against 23.5 before ``reach_ahead``);
    without hand targets the setting changes nothing, bit for bit."""
    every, once = sway_misses(body, TrackingSettings(), TrackingSettings(reach_every_step=False))
    assert every < once


def test_link_ahead_is_the_link_one_step_later(body):
    """``link_ahead`` carries a link's frame (its joint's, not its centre of mass) along its
    velocity: for a body flung through the air (1.5 m/s, turning at 3 rad/s) the chest
    predicted one physics step ahead is where the step puts it, within a tenth of the way
    it moved; ``ahead=0`` is the chest as it is, as the forward kinematics have it."""
    from physmocap.playback.track import link_ahead
    J = len(body)
    with Tracker(body) as tr:
        lrot = quat.identity((J,))
        tr.reset(body.skeleton.offsets[0] + [0, 0, 1.0], lrot[0], lrot)
        p, b, c = tr.p, tr.char.body, tr.char.client
        p.resetBaseVelocity(b, [1.0, 1.1, 0.3], [0.5, 2.0, 2.2], physicsClientId=c)
        q = body.index("Chest") - 1
        x0, g0 = link_ahead(p, b, q, 0.0, c)
        root, lr = tr.char.pose()
        xs, gs = forward_kinematics_frame(body.skeleton, lr, root)
        assert np.allclose(x0, xs[q + 1], atol=1e-6)
        assert np.allclose(np.abs(g0 @ gs[q + 1]), 1.0, atol=1e-6)
        x1, g1 = link_ahead(p, b, q, tr.timestep, c)
        p.stepSimulation(physicsClientId=c)
        x, g = link_ahead(p, b, q, 0.0, c)
        moved = np.linalg.norm(x - x0)
        assert moved > 0.005
        assert np.linalg.norm(x1 - x) < 0.1 * moved
        turned = 2 * np.arccos(min(abs(float(g @ g0)), 1.0))
        assert 2 * np.arccos(min(abs(float(g @ g1)), 1.0)) < 0.1 * turned


def test_reach_ahead_follows_a_swaying_chest_closer(body):
    """The swaying trunk again: arms bent for the chest carried half a frame (two physics
    steps) ahead along its velocity, where it is when the motors get there, keep the hands
    nearer than for the chest as it is (1.9 against 12.7 mm mean; 6.0 against 21.4 before
    ``reach_kp``); without targets the setting changes nothing, bit for bit."""
    ahead, now = sway_misses(body, TrackingSettings(), TrackingSettings(reach_ahead=0.0))
    assert ahead < now


def test_reaching_arms_and_clavicles_get_their_own_gain_and_torque_floor(body, monkeypatch):
    """While the hands reach for targets the arm joints and clavicles are driven at
    ``reach_kp`` with at least ``reach_min_torque`` per axis, also when re-aimed before each
    physics step (the rest of the body, and arms without a target, as before). Hands swung
    fast (targets circling 0.2 m around a point before each shoulder 3 times a second, 3.8
    m/s, as a run's hands move past the shoulder) stay on their targets, 90th percentile 2.6
    mm; at the 60 N·m of the body's floor the clavicles, at ``reach_kp``, cannot hold the
    swinging arms and are thrown (0.68 m; 9.1 mm when the clavicles were at ``joint_kp``)."""
    from physmocap.playback.reach import ArmReach
    F, fps = 120, 60.0
    J = len(body)
    arms = ArmReach(body.skeleton)
    held = set(np.concatenate([arms.joints.ravel(), arms.parents]).tolist())
    calls = []

    class Recording:
        """PyBullet, its motor calls' links and force limits recorded."""

        def __init__(self, p):
            self.p = p

        def __getattr__(self, name):
            return getattr(self.p, name)

        def setJointMotorControlMultiDofArray(self, b, links, mode, **kw):
            calls.append((list(links), kw["forces"], kw["positionGains"]))
            return self.p.setJointMotorControlMultiDofArray(b, links, mode, **kw)

    with Tracker(body) as tr:
        monkeypatch.setattr(tr, "p", Recording(tr.p))
        root, lrot = body.skeleton.offsets[0], quat.identity((J,))
        tr.reset(root, lrot[0], lrot)
        base, base_kp = np.array(tr._forces), list(tr._kp)
        floor, kp = tr.s.reach_min_torque, tr.s.reach_kp
        t = hands_of(body, root, lrot) + np.array([0.3, 0.0, -0.2])
        for reach in (t, np.array([t[0], [np.nan] * 3])):
            calls.clear()
            tr.step(root, lrot[0], lrot, 1 / 60, reach=reach)
            links, forces, gains = calls[0]
            forces = np.array(forces)
            live = arms.joints[0].tolist() + [int(arms.parents[0])] if np.isnan(reach[1]).any() \
                else held
            for j in range(1, J):
                want = np.maximum(base[j - 1], floor) if j in live else base[j - 1]
                assert np.array_equal(forces[j - 1], want), (body.names[j], forces[j - 1])
                assert gains[j - 1] == (kp if j in live else base_kp[j - 1]), body.names[j]
            for links, fs, gs in calls[1:]:                              # the re-solves
                assert sorted(j + 1 for j in links) == sorted(live)
                assert np.min(fs) >= floor and set(gs) == {kp}
    ph = 2 * np.pi * 3.0 * np.arange(F) / fps
    ref = Motion(body.skeleton, fps, np.tile(body.skeleton.offsets[0], (F, 1)),
                 quat.identity((F, J)))
    shoulders = ref.gpos[:, [body.index(h) for h in ("LeftUpperArm", "RightUpperArm")]]
    circle = 0.2 * np.stack([np.zeros(F), np.cos(ph), np.sin(ph)], -1)[:, None]
    t = shoulders + np.array([0.3, 0.0, -0.2]) + circle          # before the chest
    last = slice(F // 2, F)

    def p90(torque):
        m = track(ref, body, settings=TrackingSettings(reach_min_torque=torque),
                  hand_targets=t).motion
        return reach_report(body.skeleton, m.root_pos[last], m.lrot[last],
                            t[last])["hand_error_reachable_p90_m"]

    assert p90(TrackingSettings().reach_min_torque) < 0.005 < p90(60.0)


def test_reaching_arms_clavicles_hold_the_shoulders_of_a_bouncing_body(body):
    """A body bouncing as in a run (the root 8 cm up and down 4 times a second, assist mode),
    hands held still before it: each clavicle, which carries its shoulder, is driven like the
    arm below it (``reach_kp``, re-aimed every step), so it stays within 0.18 deg of the
    reference's and the hands within 1.2 mm of their targets (90th percentiles, the second
    second: 0.09 deg, 0.6 mm; with the clavicles at ``joint_kp`` toward the frame's
    reference, led, 0.26 deg and 1.9 mm)."""
    F, fps = 120, 60.0
    t = np.arange(F) / fps
    root = np.tile(body.skeleton.offsets[0], (F, 1))
    root[:, 2] += 0.08 * np.sin(2 * np.pi * 4.0 * t)
    ref = Motion(body.skeleton, fps, root, quat.identity((F, len(body))))
    shoulders = ref.gpos[:, [body.index(h) for h in ("LeftUpperArm", "RightUpperArm")]]
    targets = shoulders + np.array([0.3, 0.0, -0.2])
    last = slice(F // 2, F)
    m = track(ref, body, hand_targets=targets).motion
    clavicles = ArmReach(body.skeleton).parents
    off = np.degrees(np.linalg.norm(quat.to_scaled_axis(quat.abs_w(
        m.lrot[last][:, clavicles])), axis=-1))
    assert np.percentile(off, 90) < 0.18
    assert reach_report(body.skeleton, m.root_pos[last], m.lrot[last],
                        targets[last])["hand_error_reachable_p90_m"] < 0.0012


def test_bend_carries_on_the_change_of_the_deviation(body):
    """A simulated body turning away from a still reference by 2 deg a frame: with the change
    carried on in full (``extrapolate=1``) the second frame's bend puts the hands on the targets
    of the body as it will be (4 deg off); with none it misses them, and ``reset`` forgets
    the first frame."""
    rng = np.random.default_rng(5)
    root, lrot = pose(body, 6)

    def turned(deg):
        out = lrot.copy()
        out[0] = quat.mul(quat.from_scaled_axis(np.array([0.0, 0.0, np.radians(deg)])), lrot[0])
        return out

    t = near_target(body, root, turned(4.0), rng)
    for a, hits in ((1.0, True), (0.0, False), (None, False)):
        arms = ArmReach(body.skeleton, extrapolate=1.0 if a is None else a)
        moved = np.concatenate([arms.shoulders, arms.elbows, arms.hands])
        arms.bend((root, turned(0.0)), (root, lrot), (root, lrot), t)
        if a is None:
            arms.reset()
        out = arms.bend((root, turned(2.0)), (root, lrot), (root, lrot), t)
        body_then = turned(4.0)
        body_then[moved] = out[moved]
        miss = np.linalg.norm(hands_of(body, root, body_then) - t, axis=-1).max()
        assert (miss < 1e-6) == hits, (a, miss)
        if not hits:
            assert miss > 0.005


def test_bend_nan_rows_keep_the_reference_arm(body):
    arms = ArmReach(body.skeleton)
    root, lrot = pose(body, 0)
    t = near_target(body, root, lrot, np.random.default_rng(0))
    t[1] = np.nan
    out = arms.bend((root, lrot), (root, lrot), (root, lrot), t)
    right = [arms.shoulders[1], arms.elbows[1], arms.hands[1]]
    assert np.allclose(np.abs(np.sum(out[right] * lrot[right], -1)), 1.0)
    assert np.allclose(hands_of(body, root, out)[0], t[0], atol=1e-6)
    t[:] = np.nan
    assert np.allclose(arms.bend((root, lrot), (root, lrot), (root, lrot), t), lrot)


def test_a_reach_that_ends_lets_go_of_the_arm_under_the_torque_drive(body):
    """Fully physical with the balance controller's torque drive, a hand reaches for 0.25 s and
    then no more: its arm goes back toward the reference. The reaching motors were never
    switched off, and held the arm where the reach left it (upper arm / forearm / hand 28 /
    114 / 86° off the reference for the half second after; found by a review helper)."""
    names = body.names
    arm = [names.index(n) for n in ("LeftUpperArm", "LeftLowerArm", "LeftHand")]
    rest = body.skeleton.rest_positions()
    lrot = quat.identity((len(body),))
    root = np.array([0.0, 0.0, rest[0, 2] - rest[:, 2].min()])
    g = forward_kinematics_frame(body.skeleton, lrot, root)[0]
    reach = np.array([g[arm[0]] + [0.45, 0.0, 0.1], [np.nan] * 3])
    with Tracker(body, "physical", TrackingSettings(balance=True)) as tr:
        assert tr.balance.s.drive == "torque"
        tr.reset(root, lrot[0], lrot)
        off = []
        for f in range(45):
            _, _, lr, _ = tr.step(root, lrot[0], lrot, 1 / 60, reach=reach if f < 15 else None)
            off.append(np.degrees(np.linalg.norm(quat.to_scaled_axis(quat.abs_w(lr[arm])),
                                                 axis=-1)))
    assert off[14][1] > 60.0                     # the forearm bent to reach
    assert off[-1].max() < 10.0, off[-1]         # and let go: back near the reference


def test_arm_reach_errors(body):
    with pytest.raises(UnknownNameError, match="LeftHand, RightHand"):
        ArmReach(Skeleton(["Hips", "Spine"], np.array([-1, 0]), np.zeros((2, 3))))
    with pytest.raises(UnknownNameError, match="forearm"):
        ArmReach(Skeleton(["Hips", "LeftHand", "RightHand"], np.array([-1, 0, 0]),
                          np.ones((3, 3))))
    with pytest.raises(SettingsError, match="extrapolate must be within 0 and 1"):
        ArmReach(body.skeleton, extrapolate=-0.5)
    root, lrot = pose(body)
    with pytest.raises(ShapeError, match=r"targets must be \(2, 3\)"):
        ArmReach(body.skeleton).bend((root, lrot), (root, lrot), (root, lrot), np.zeros(3))


def test_reach_report(body):
    """The hands' own positions as targets: 0 error, all reachable; a target far away is
    unreachable and left out of the reachable figures; NaN rows are no targets."""
    F = 10
    root = np.tile(body.skeleton.offsets[0], (F, 1))
    lrot = quat.identity((F, len(body)))
    x, _ = forward_kinematics_frame(body.skeleton, lrot[0], root[0])
    t = np.tile(x[[body.index(h) for h in HANDS]], (F, 1, 1))
    rep = reach_report(body.skeleton, root, lrot, t)
    assert rep["hand_error_m"] < 1e-9 and rep["hand_reachable_fraction"] == 1.0
    assert rep["within_tolerance_fraction"] == 1.0
    t[:5, 0] += np.array([0.0, 0.0, 3.0])                 # 3 m above: out of reach
    toward = x[body.index("LeftUpperArm")] - x[body.index("LeftHand")]
    t[5:, 0] += 0.02 * toward / np.linalg.norm(toward)     # 2 cm nearer the shoulder
    t[:, 1] = np.nan
    rep = reach_report(body.skeleton, root, lrot, t)
    assert rep["hand_reachable_fraction"] == 0.5
    assert rep["hand_error_reachable_m"] == pytest.approx(0.02)
    assert rep["within_tolerance_fraction"] == 0.0
    assert rep["hand_error_m"] == pytest.approx((5 * 3.0 + 5 * 0.02) / 10)
    with pytest.raises(ShapeError, match="reach_report"):
        reach_report(body.skeleton, root, lrot, t[:, :1])
    for tol in (0.0, float("nan")):            # NaN counted every hand as a miss before
        with pytest.raises(SettingsError, match="reach_report: tolerance must be a finite"):
            reach_report(body.skeleton, root, lrot, t, tolerance=tol)


def test_track_with_hand_targets_reaches_them(body):
    """A standing body asked to hold its hands in front of its chest (a controller pose the
    reference's arms, straight out sideways, do not have): with ``hand_targets`` the simulated
    arms swing there and settle on the targets within 1 cm (a loop taken at the clavicle
    rang for the whole second); without, the hands stay where the reference's arms are."""
    F, fps = 120, 60.0
    root = np.tile(body.skeleton.offsets[0], (F, 1))
    lrot = quat.identity((F, len(body)))
    ref = Motion(body.skeleton, fps, root, lrot)
    shoulders = ref.gpos[:, [body.index(h) for h in ("LeftUpperArm", "RightUpperArm")]]
    fwd = quat.rotate(ref.lrot[0, 0], np.array([1.0, 0.0, 0.0]))
    t = shoulders + 0.3 * fwd + np.array([0.0, 0.0, -0.2])        # in front of the chest
    res = track(ref, body, hand_targets=t)
    assert res.report()["hands"]["hand_reachable_fraction"] == 1.0
    free = track(ref, body)
    assert "hands" not in free.report()
    last = slice(F // 2, F)                                       # the second second

    def settled(m):
        return reach_report(body.skeleton, m.root_pos[last], m.lrot[last], t[last])

    assert settled(res.motion)["hand_error_reachable_p90_m"] < 0.01
    assert settled(free.motion)["hand_error_m"] > 0.3


@pytest.mark.parametrize("every", [True, False])
def test_a_balancing_body_reaches_with_its_own_arm_gains(body, every):
    """Fully physical with ``STEPPING``, whose motors drive every joint compliant each physics
    step: the hands held in front of the chest still settle on their targets within 2 mm
    (the reaching arms' motors set again after the balance controller's, re-aimed or not;
    measured 1.2 mm; before, the arms hung at the balance's gain, 11 mm mean, p90 14 mm)."""
    from physmocap.playback.balance import STEPPING
    F, fps = 120, 60.0
    root = np.tile(body.skeleton.offsets[0], (F, 1))
    ref = Motion(body.skeleton, fps, root, quat.identity((F, len(body))))
    shoulders = ref.gpos[:, [body.index(h) for h in ("LeftUpperArm", "RightUpperArm")]]
    t = shoulders + np.array([0.3, 0.0, -0.2])                   # in front of the chest
    res = track(ref, body, mode="physical", hand_targets=t, settings=TrackingSettings(
        balance=True, balance_gains=STEPPING, reach_every_step=every))
    assert res.report()["falls"] == []
    last = slice(F // 2, F)                                       # the second second
    r = reach_report(body.skeleton, res.motion.root_pos[last], res.motion.lrot[last], t[last])
    assert r["hand_reachable_fraction"] == 1.0 and r["hand_error_reachable_p90_m"] < 0.002


def test_track_places_the_body_with_its_hands_on_the_first_targets(body):
    """The first frame (the body placed on the reference, not simulated) has its arms bent to
    the targets too (before, its hands were where the reference's were: here straight out
    sideways; on held-out avatar runs, grounded, 0.7-2.9 cm off), and the arms start with the
    bent poses' velocities, so the second frame is still on the targets. A NaN row leaves
    that arm as the reference has it."""
    F, fps = 30, 60.0
    root = np.tile(body.skeleton.offsets[0] + np.array([0.0, 0.0, 0.03]), (F, 1))
    ref = Motion(body.skeleton, fps, root, quat.identity((F, len(body))))
    shoulders = ref.gpos[:, [body.index(h) for h in ("LeftUpperArm", "RightUpperArm")]]
    fwd = quat.rotate(ref.lrot[0, 0], np.array([1.0, 0.0, 0.0]))
    t = shoulders + 0.3 * fwd + np.array([0.0, 0.0, -0.2])
    m = track(ref, body, hand_targets=t).motion
    assert abs(m.root_pos[0, 2] - root[0, 2]) > 0.005           # grounded: the root moved
    first = np.linalg.norm(hands_of(body, m.root_pos[0], m.lrot[0]) - t[0], axis=-1)
    assert first.max() < 1e-3
    # and the next frame starts from there: still within 1 cm
    assert np.linalg.norm(hands_of(body, m.root_pos[1], m.lrot[1]) - t[1], axis=-1).max() < 0.01
    # a NaN row: that hand placed as the reference has it
    t2 = t.copy()
    t2[:, 1] = np.nan
    m2 = track(ref, body, hand_targets=t2).motion
    free = track(ref, body).motion
    right = [body.index(h) for h in ("RightUpperArm", "RightLowerArm", "RightHand")]
    assert np.allclose(m2.lrot[0, right], free.lrot[0, right], atol=1e-6)
    assert np.linalg.norm(hands_of(body, m2.root_pos[0], m2.lrot[0])[0] - t[0, 0]) < 1e-3


def test_reaching_arms_aim_where_the_target_is_when_their_motors_get_there(body):
    """Hands following a target that circles before the chest at 1 turn/s. A spherical motor
    closes ``reach_kp`` x 0.2 of its error per physics step, so the arm trails its target by
    ``timestep / (0.2 reach_kp)``, one step past the step's own at 2.5: with the targets taken
    that far ahead (``reach_ahead``, 1/120 s) the hands stay within a millimetre (measured
    over the second second: 0.45 mm); with the targets of each step's start 5.3 mm; at
    ``reach_kp`` 1 the same look-ahead is too short (7.8 mm) and its own lag, 1/48 s, right
    again (0.47 mm)."""
    F, fps = 120, 60.0
    root = np.tile(body.skeleton.offsets[0], (F, 1))
    ref = Motion(body.skeleton, fps, root, quat.identity((F, len(body))))
    shoulders = ref.gpos[:, [body.index(h) for h in ("LeftUpperArm", "RightUpperArm")]]
    ph = 2 * np.pi * np.arange(F) / fps
    circle = 0.1 * np.stack([np.zeros(F), np.cos(ph), np.sin(ph)], -1)[:, None]
    t = shoulders + np.array([0.3, 0.0, -0.2]) + circle
    last = slice(F // 2, F)

    def err(**kw):
        m = track(ref, body, settings=TrackingSettings(**kw), hand_targets=t).motion
        return reach_report(body.skeleton, m.root_pos[last], m.lrot[last],
                            t[last])["hand_error_reachable_m"]

    default = err()
    assert default < 0.001
    assert default < 0.5 * min(err(reach_ahead=0.0), err(reach_kp=1.0))
    assert err(reach_kp=1.0, reach_ahead=TrackingSettings().timestep / 0.2) < 0.001


def test_track_hand_targets_errors(body):
    F = 30
    ref = Motion(body.skeleton, 60.0, np.tile(body.skeleton.offsets[0], (F, 1)),
                 quat.identity((F, len(body))))
    with pytest.raises(ShapeError, match=r"hand_targets must be \(30, 2, 3\)"):
        track(ref, body, hand_targets=np.zeros((F - 1, 2, 3)))
    with pytest.raises(SettingsError, match="loops must be 1"):
        track(ref, body, hand_targets=np.zeros((F, 2, 3)), loops=2)
    with Tracker(body) as tr:
        tr.reset(ref.root_pos[0], ref.lrot[0, 0], ref.lrot[0])
        with pytest.raises(ShapeError, match=r"ArmReach: targets must be \(2, 3\)"):
            tr.step(ref.root_pos[1], ref.lrot[1, 0], ref.lrot[1], 1 / 60, reach=np.zeros(3))
        with pytest.raises(ShapeError, match=r"reset: reach must be \(2, 3\), got \(3,\)"):
            tr.reset(ref.root_pos[0], ref.lrot[0, 0], ref.lrot[0], reach=np.zeros(3))
    # all-NaN targets: the arms follow the reference as without targets, bit for bit (a walk:
    # the motors' lead matters), and the report says there were none
    from physmocap.demo import make_demo_capture
    walk = make_demo_capture()[1]
    walk = Motion(walk.skeleton, walk.fps, walk.root_pos[:40], walk.lrot[:40])
    res = track(walk, body, hand_targets=np.full((40, 2, 3), np.nan))
    hands = res.report()["hands"]
    assert hands["hand_error_m"] is None and hands["hand_reachable_fraction"] == 0.0
    assert np.array_equal(res.motion.lrot, track(walk, body).motion.lrot)
