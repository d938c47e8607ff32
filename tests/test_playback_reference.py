"""The reference made fit for the simulated body (``physmocap.playback.reference``): levelled
and pitched feet, grounding (whole clip and stance by stance), the swing lift, per-frame
retargeting; and how ``track`` prepares its reference per mode."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.motion import Motion
from physmocap.playback import FrameRetargeter, TrackingSettings, track
from physmocap.errors import SettingsError, ShapeError
from physmocap.playback.reference import (StanceFloor, SwingLift, close_cycle, ground_motion,
                                          level_feet, loop_motion, sole_points, sole_sides,
                                          walk_cycle)
from physmocap.scene import load_body

from conftest import WALK_001


@pytest.fixture(scope="module")
def body():
    return load_body()


def _sole_frame(body):
    """The feet's corner indices and ``frame(zl, zr, xl, xr)``: sole corners ``(K, 3)`` with
    each foot's corners at one height and one forward position (m)."""
    sides = sole_sides(body)
    L, R = sides

    def frame(zl, zr, xl, xr):
        c = np.zeros((len(L) + len(R), 3))
        c[L, 2], c[R, 2] = zl, zr
        c[L, 0], c[R, 0] = xl, xr
        return c
    return sides, frame


def test_stance_floor_holds_through_flight(body):
    sides, frame = _sole_frame(body)
    dt = 1 / 60
    fl = StanceFloor(sides, 0.5, 0.06, dt)
    assert fl(frame(0.03, 0.20, 0.0, 0.0)) == pytest.approx(-0.03)      # first frame: lowest
    assert fl(frame(0.03, 0.20, 0.0, 0.05)) == pytest.approx(-0.03)     # left foot planted
    # flight: both feet move 3 m/s; the lower one, 1 cm up, does not pull the body down
    assert fl(frame(0.01, 0.12, 0.05, 0.10)) == pytest.approx(-0.03)
    # a slow foot at the top of its back swing (9 cm above the floor) is not a stance foot
    assert fl(frame(0.04, 0.12, 0.10, 0.10)) == pytest.approx(-0.03)
    # the right foot lands (slow, near the floor): it is the floor now
    assert fl(frame(0.10, 0.05, 0.15, 0.105)) == pytest.approx(-0.05)
    # without a stance speed: the lowest corner of every frame (physical mode's rule)
    old = StanceFloor(sides, None, 0.06, dt)
    old(frame(0.03, 0.20, 0.0, 0.0))
    assert old(frame(0.01, 0.12, 0.05, 0.10)) == pytest.approx(-0.01)


def test_stance_floor_a_leaving_foot_is_not_in_stance(body):
    """A run's pushing-off foot is slow horizontally and near the floor as it leaves it; with
    ``rise`` it does not count (it lowered the live run's reference 4 cm for a whole flight)."""
    sides, frame = _sole_frame(body)
    dt = 1 / 60
    for rise, want in ((None, -0.03), (0.3, 0.0)):
        fl = StanceFloor(sides, 0.5, 0.06, dt, rise=rise)
        assert fl(frame(0.0, 0.20, 0.0, 0.0)) == pytest.approx(0.0)      # left foot planted
        # it pushes off: 3 cm up in a frame (1.8 m/s), 3 mm forward; the right foot swings
        assert fl(frame(0.03, 0.15, 0.003, 0.05)) == pytest.approx(want)
    # a planted foot rising slowly (0.18 m/s: the floor under a retargeted sole) still counts
    fl = StanceFloor(sides, 0.5, 0.06, dt, rise=0.3)
    fl(frame(0.0, 0.20, 0.0, 0.0))
    assert fl(frame(0.003, 0.15, 0.0, 0.05)) == pytest.approx(-0.003)


def test_frame_retargeter_matches_retarget(body, data_dir):
    from physmocap.io.bvh import read_bvh
    from physmocap.matching.retarget import retarget
    src = read_bvh(data_dir / WALK_001)
    whole = retarget(src, body.skeleton)            # Bandai names: HUMANOID_NAME_MAP
    fr = FrameRetargeter.from_motion(src, body.skeleton)
    for f in (0, 50, 200):
        rp, lr = fr(src.root_pos[f], src.lrot[f])
        assert np.allclose(rp, whole.root_pos[f], atol=1e-9)
        assert np.all(quat.angle(lr, whole.lrot[f]) < 1e-6)


def test_level_feet_unrolls_feet_and_toes(body):
    """A foot and a toe segment rolled upside down about their own bones come back sole-down."""
    sk = body.skeleton
    lrot = quat.identity((2, len(body)))
    seg = sk.segment_vectors()
    for name in ("LeftFoot", "RightToes"):
        j = sk.index(name)
        lrot[:, j] = quat.from_axis_angle(seg[j] / np.linalg.norm(seg[j]), np.pi * 0.9)
    m = Motion(sk, 60.0, np.tile(sk.offsets[0], (2, 1)), lrot)
    out = level_feet(m, body)
    up = np.array([0.0, 0.0, 1.0])
    for name in ("LeftFoot", "LeftToes", "RightFoot", "RightToes"):
        j = sk.index(name)
        assert quat.rotate(out.grot[0, j], up)[2] > 0.99, name
        np.testing.assert_allclose(out.gpos[0, j], m.gpos[0, j], atol=1e-9)


def _sole_pitch(m, j):
    """deg per frame: how far segment ``j``'s sole (rest +X) points up out of the floor."""
    x = quat.rotate(m.grot[:, j], np.array([1.0, 0.0, 0.0]))
    return np.degrees(np.arcsin(np.clip(x[:, 2], -1.0, 1.0)))


def pitched_feet(body, F=60, planted=-10.0, lifted=-40.0, rise=0.1):
    """A standing body, its left foot pitched ``planted`` deg (toes down < 0) about its own
    sideways axis; the last third of the frames the whole body raised ``rise`` m (not planted),
    that foot pitched ``lifted`` deg there. The right foot stays level."""
    sk = body.skeleton
    lrot = quat.identity((F, len(body)))
    lift = np.arange(F) >= 2 * F // 3
    ang = np.radians(np.where(lift, lifted, planted))
    y = np.array([0.0, 1.0, 0.0])
    lrot[:, sk.index("LeftFoot")] = quat.from_axis_angle(np.broadcast_to(y, (F, 3)), -ang)
    root = np.tile(sk.offsets[0], (F, 1))
    root[lift, 2] += rise
    return Motion(sk, 60.0, root, lrot), lift


def test_level_feet_flat_planted_levels_planted_soles(body):
    """``flat_planted`` turns each foot by one pitch for the clip, the one that levels its
    planted frames; the rest keep their pitch relative to it, a level foot is left alone and
    the ankles do not move."""
    m, lift = pitched_feet(body)
    L, R = body.index("LeftFoot"), body.index("RightFoot")
    np.testing.assert_allclose(_sole_pitch(m, L)[~lift], -10.0, atol=1e-6)
    out = level_feet(m, body, constant=True, flat_planted=True)
    np.testing.assert_allclose(_sole_pitch(out, L)[~lift], 0.0, atol=1e-6)
    np.testing.assert_allclose(_sole_pitch(out, L)[lift], -30.0, atol=1e-6)
    np.testing.assert_allclose(_sole_pitch(out, R), 0.0, atol=1e-6)
    np.testing.assert_allclose(out.gpos[:, L], m.gpos[:, L], atol=1e-9)
    # toes follow their foot (their own rotation unchanged)
    T = body.index("LeftToes")
    np.testing.assert_allclose(out.lrot[:, T], m.lrot[:, T], atol=1e-9)
    # off: the pitch stays
    off = level_feet(m, body, constant=True)
    np.testing.assert_allclose(_sole_pitch(off, L)[~lift], -10.0, atol=1e-6)


def test_level_feet_flat_planted_needs_a_planted_frame(body):
    """A foot never planted (always moving faster than 0.3 m/s) keeps its pitch."""
    m, _ = pitched_feet(body, lifted=-10.0, rise=0.0)
    root = np.array(m.root_pos)
    root[:, 0] += np.arange(m.n_frames) / m.fps * 1.0          # 1 m/s forward
    m = Motion(m.skeleton, m.fps, root, m.lrot)
    out = level_feet(m, body, constant=True, flat_planted=True)
    np.testing.assert_allclose(_sole_pitch(out, body.index("LeftFoot")), -10.0, atol=1e-6)


def test_track_levels_planted_soles_in_physical_mode_only(body):
    """``TrackingSettings.flat_planted`` (default on): the physical reference's planted sole is
    level; the assist mode's reference and ``flat_planted=False`` keep the pitch."""
    m, lift = pitched_feet(body, F=12, planted=-8.0, lifted=-8.0, rise=0.0)
    L = body.index("LeftFoot")
    phys = track(m, body, "physical").reference
    np.testing.assert_allclose(_sole_pitch(phys, L), 0.0, atol=1e-6)
    for ref in (track(m, body, "assist").reference,
                track(m, body, "physical", TrackingSettings(flat_planted=False)).reference):
        np.testing.assert_allclose(_sole_pitch(ref, L), -8.0, atol=0.5)


def test_ground_motion_by_the_still_feet(body):
    """``still_speed``: the still foot stands on the floor though a moving one reaches 3 cm
    lower; without it (or with no foot still) the lowest sole point does."""
    import dataclasses
    sk = body.skeleton
    off = np.array(sk.offsets)
    off[sk.index("RightLowerLeg"), 2] -= 0.03          # the right leg 3 cm longer
    sk2 = dataclasses.replace(sk, offsets=off)
    F = 30
    lrot = quat.identity((F, len(body)))
    # the right leg turned about the vertical, 6 rad/s: its sole corners sweep the floor
    lrot[:, sk.index("RightUpperLeg")] = quat.from_axis_angle(
        np.broadcast_to(np.array([0.0, 0.0, 1.0]), (F, 3)), np.linspace(0.0, 3.0, F))
    m = Motion(sk2, 60.0, np.tile(sk.offsets[0], (F, 1)), lrot)
    joints, pts = sole_points(body)
    right = np.isin(joints, [sk.index("RightFoot"), sk.index("RightToes")])

    def lows(m):
        z = (m.gpos[:, joints] + quat.rotate(m.grot[:, joints], pts))[..., 2]
        return z[:, ~right].min(axis=1), z[:, right].min(axis=1)

    left, rgt = lows(ground_motion(m, body, smooth_s=0.0, still_speed=0.2))
    np.testing.assert_allclose(left, 0.0, atol=1e-9)
    np.testing.assert_allclose(rgt, -0.03, atol=1e-6)
    left, rgt = lows(ground_motion(m, body, smooth_s=0.0))
    np.testing.assert_allclose(rgt, 0.0, atol=1e-9)
    np.testing.assert_allclose(left, 0.03, atol=1e-6)
    # no foot still (the body sliding at 1 m/s): the lowest sole point, as without
    root = np.tile(sk.offsets[0], (F, 1)) + np.arange(F)[:, None] / 60.0 * [1.0, 0.0, 0.0]
    mv = Motion(sk2, 60.0, root, lrot)
    np.testing.assert_allclose(ground_motion(mv, body, smooth_s=0.0, still_speed=0.2).root_pos,
                               ground_motion(mv, body, smooth_s=0.0).root_pos, atol=1e-12)


def test_track_grounds_the_physical_reference_by_its_still_feet(body):
    """``TrackingSettings.ground_still`` (default 0.2 m/s), physical mode only: the left foot
    stands still, the right one points its toes 20 deg down and sweeps them about (below the
    left sole): grounded by the still left foot, its ankle at standing height."""
    sk = body.skeleton
    F = 12
    lrot = quat.identity((F, len(body)))
    lrot[:, sk.index("RightUpperLeg")] = quat.from_axis_angle(
        np.broadcast_to(np.array([0.0, 0.0, 1.0]), (F, 3)), np.linspace(0.0, 1.2, F))
    lrot[:, sk.index("RightFoot")] = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]),
                                                          np.radians(20.0))
    m = Motion(sk, 60.0, np.tile(sk.offsets[0], (F, 1)), lrot)
    L = sk.index("LeftFoot")
    rest = float(sk.rest_positions()[L, 2])
    z = {k: track(m, body, mode, TrackingSettings(flat_planted=False, ground_still=g)
                  ).reference.gpos[:, L, 2]
         for k, mode, g in (("still", "physical", 0.2), ("lowest", "physical", 0.0),
                            ("assist", "assist", 0.2))}
    np.testing.assert_allclose(z["still"], rest, atol=1e-6)
    assert np.all(z["lowest"] > rest + 0.03)
    np.testing.assert_allclose(z["assist"], z["lowest"], atol=1e-6)


def test_swing_lift_raises_a_swinging_foot_below_the_clearance(body):
    """``SwingLift``: a foot whose slowest sole corner moves fast and whose sole is below the
    clearance has its ankle raised by the shortfall (at most twice the clearance); a slow
    foot (planted, or pushing off about its toe) and the first frame are left alone."""
    from physmocap.skeleton import forward_kinematics_frame
    sk = body.skeleton
    root = sk.offsets[0].copy()
    lrot = quat.identity((len(sk),))
    for side in ("Left", "Right"):                  # knees a little bent, as when walking
        lrot[sk.index(side + "LowerLeg")] = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), 0.3)
    joints, pts = sole_points(body)
    x, g = forward_kinematics_frame(sk, lrot, root)
    corners = x[joints] + quat.rotate(g[joints], pts)
    left, right = sole_sides(body)
    ankle = sk.index("LeftFoot"), sk.index("RightFoot")
    dt = 1.0 / 60
    for depth, speed, want in ((0.005, 1.2, 0.015), (0.05, 1.2, 0.02), (0.005, 0.3, 0.0),
                               (0.005, 0.75, 0.0075)):
        lift = SwingLift(body, 0.01)
        c0 = corners.copy()
        assert np.array_equal(lift(lrot, c0, None, x, g), lrot)    # no speed yet
        c1 = c0.copy()
        c1[left, 0] += speed * dt                                  # the left foot swings
        c1[left, 2] += -depth - c1[left, 2].min()                  # its sole below the floor
        v = np.hypot(*(c1[:, :2] - c0[:, :2]).T) / dt              # as StanceFloor.speeds
        out = lift(lrot, c1, v, x, g)
        y, _ = forward_kinematics_frame(sk, out, root)
        assert y[ankle[0], 2] - x[ankle[0], 2] == pytest.approx(want, abs=1e-6)
        assert np.allclose(y[ankle[0], :2], x[ankle[0], :2], atol=1e-6)   # straight up
        assert np.allclose(y[ankle[1]], x[ankle[1]])               # the still foot stays


def _periodic_walk(body, period: int, frames: int, fps: float = 60.0, speed: float = 1.2,
                   phase: float = 0.3) -> Motion:
    """A synthetic walk: every joint swings with one period (``period`` frames) about its own
    axis, the root moves ahead at ``speed`` m/s and bobs with half the period."""
    t = np.arange(frames)
    J = len(body)
    rng = np.random.default_rng(3)
    axes = rng.normal(size=(J, 3))
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    ang = 0.3 * np.sin(2 * np.pi * t[:, None] / period + phase + rng.uniform(0, 6, J))
    lrot = quat.from_axis_angle(np.broadcast_to(axes, (frames, J, 3)), ang)
    lrot[:, 0] = quat.identity((frames,))
    root = np.zeros((frames, 3))
    root[:, 0] = speed * t / fps
    root[:, 2] = 0.95 + 0.02 * np.cos(4 * np.pi * t / period)
    return Motion(body.skeleton, fps, root, quat.normalize(lrot))


def test_walk_cycle_finds_the_period_of_a_periodic_walk(body):
    for period in (55, 67):
        m = _periodic_walk(body, period, 200)
        start, stop, seam = walk_cycle(m)
        assert stop - start == period
        assert seam < 1e-9
        # looped, the cycle continues the walk: the seam frames coincide with the clip's own
        looped = loop_motion(m[start:stop + 1], 3)
        assert np.allclose(looped.lrot[period + 5], m.lrot[start + 5])
        assert np.allclose(looped.root_pos[period + 5, :2] - looped.root_pos[period, :2],
                           m.root_pos[start + 5, :2] - m.root_pos[start, :2])


def test_walk_cycle_counts_the_root_velocity(body):
    """A pose met again at another speed is not the same state: the root's velocity in the
    heading frame, times ``velocity_s``, is one more point of the mismatch."""
    m = _periodic_walk(body, 60, 200)
    t = np.arange(200) / m.fps
    root = m.root_pos.copy()
    root[:, 0] = 0.5 * t + 0.3 * t ** 2            # speeding up at 0.6 m/s²
    acc = Motion(m.skeleton, m.fps, root, m.lrot)
    assert walk_cycle(acc, velocity_s=0.0)[2] < 1e-9          # the same poses every 60 frames
    start, stop, seam = walk_cycle(acc, max_s=1.2)
    assert stop - start == 60
    # the velocity differs by 0.6 m/s² x 1 s: 0.1 s x 0.6 m/s as one of J + 1 points
    assert seam == pytest.approx(0.1 * 0.6 / np.sqrt(len(body) + 1), rel=0.02)


def _turning_cycle(body, extra: int = 4) -> Motion:
    """A cycle of the synthetic walk cut ``extra`` frames past its period (a seam to close),
    its root turning 0.4 rad and tilting as it goes."""
    m = _periodic_walk(body, 60, 200)
    cyc = m[10:10 + 60 + extra + 1]
    F = cyc.n_frames
    lrot = np.array(cyc.lrot)
    z = np.array([0.0, 0.0, 1.0])
    turn = quat.from_axis_angle(np.broadcast_to(z, (F, 3)), np.linspace(0.0, 0.4, F))
    tilt = quat.from_axis_angle(np.broadcast_to([1.0, 0.0, 0.0], (F, 3)),
                                0.05 * np.sin(np.linspace(0.0, 5.0, F)))
    lrot[:, 0] = quat.mul(turn, tilt)
    return Motion(cyc.skeleton, cyc.fps, cyc.root_pos, lrot)


def test_close_cycle_ends_on_its_first_pose(body):
    """``close_cycle``: the last frame takes the first frame's joint rotations, root tilt and
    height; the first frame, the root's horizontal path and the last frame's yaw stay; each
    frame moves by its share of the seam, no more."""
    from physmocap.matching.trajectory import yaw_of
    cyc = _turning_cycle(body)
    before = (cyc.lrot.copy(), cyc.root_pos.copy())
    out = close_cycle(cyc)
    F = cyc.n_frames
    assert np.array_equal(cyc.lrot, before[0]) and np.array_equal(cyc.root_pos, before[1])
    gap = quat.angle(cyc.lrot[-1, 1:], cyc.lrot[0, 1:])
    assert gap.max() > 0.05                                    # there was a seam to close
    assert np.allclose(out.lrot[0], cyc.lrot[0]) and np.allclose(out.root_pos[0], cyc.root_pos[0])
    assert quat.angle(out.lrot[-1, 1:], cyc.lrot[0, 1:]).max() < 1e-9
    dyaw = float(yaw_of(cyc.lrot[-1, 0])) - float(yaw_of(cyc.lrot[0, 0]))
    turned = quat.mul(quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), dyaw), cyc.lrot[0, 0])
    assert float(quat.angle(out.lrot[-1, 0], turned)) < 1e-9
    assert float(yaw_of(out.lrot[-1, 0])) == pytest.approx(float(yaw_of(cyc.lrot[-1, 0])))
    assert out.root_pos[-1, 2] == pytest.approx(cyc.root_pos[0, 2])
    assert np.array_equal(out.root_pos[:, :2], cyc.root_pos[:, :2])
    share = np.arange(F)[:, None] / (F - 1) * gap[None]
    assert np.all(quat.angle(out.lrot[:, 1:], cyc.lrot[:, 1:]) <= share + 1e-9)
    assert out.fps == cyc.fps and out.skeleton is cyc.skeleton


def test_closed_cycle_loops_without_a_jump(body):
    """Looped, an unclosed cycle jumps at each seam; closed, no joint moves further from one
    frame to the next across the seam than it does within the cycle."""
    cyc = _turning_cycle(body)

    def steps(m):                                  # (F - 1,) m: largest joint move per frame
        return np.linalg.norm(np.diff(m.gpos, axis=0), axis=-1).max(axis=-1)

    n = cyc.n_frames - 1
    for m, seam_ok in ((cyc, False), (close_cycle(cyc), True)):
        d = steps(loop_motion(m, 3))
        inside, seam = d[:n - 1].max(), d[n - 1:n + 1].max()
        assert (seam <= 1.05 * inside) == seam_ok, (seam, inside)
    with pytest.raises(ShapeError, match="close_cycle"):
        close_cycle(cyc[:1])


def test_walk_cycle_errors(body):
    m = _periodic_walk(body, 60, 40)                      # 0.67 s: no 0.8 s cycle fits
    with pytest.raises(ShapeError, match="no cycle"):
        walk_cycle(m)
    assert walk_cycle(m, min_s=0.3, max_s=0.6)[2] >= 0
    for kw in (dict(min_s=float("nan")), dict(min_s=0.0), dict(max_s=-1.0),
               dict(velocity_s=float("inf"))):                  # NaN: a ValueError before
        with pytest.raises(SettingsError, match="walk_cycle: .* must be a finite number"):
            walk_cycle(m, **kw)


def test_reference_helpers_refuse_nan_and_negative_settings(body):
    m = _periodic_walk(body, 60, 40)
    for kw in (dict(smooth_s=float("nan")), dict(smooth_s=-0.1), dict(still_speed=-1.0)):
        with pytest.raises(SettingsError, match="ground_motion: .* must be a finite number"):
            ground_motion(m, body, **kw)
    for clearance in (float("nan"), -0.01):         # both ran before, the NaN one to NaN poses
        with pytest.raises(SettingsError, match="SwingLift: clearance must be a finite"):
            SwingLift(body, clearance)
