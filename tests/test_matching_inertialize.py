"""Inertialization: no jump at the transition frame, offsets decay away, pure and frozen state."""
import dataclasses

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import ShapeError
from physmocap.matching import inertialize as ine

J = 23


def rand_rot(rng, n=J):
    return quat.normalize(rng.normal(size=(n, 4)))


def test_position_transition_is_continuous(rng):
    off_p, off_v = rng.normal(size=(J, 3)) * 0.1, rng.normal(size=(J, 3))
    src_p, src_v = rng.normal(size=(J, 3)), rng.normal(size=(J, 3))
    dst_p, dst_v = rng.normal(size=(J, 3)), rng.normal(size=(J, 3))
    shown_p, shown_v = src_p + off_p, src_v + off_v
    new_p, new_v = ine.transition(off_p, off_v, src_p, src_v, dst_p, dst_v)
    out_p, out_v, p2, v2 = ine.update(new_p, new_v, dst_p, dst_v, 0.1, 0.0)
    assert np.max(np.abs(out_p - shown_p)) <= 1e-6 and np.max(np.abs(out_v - shown_v)) <= 1e-6
    assert np.allclose(p2, new_p) and np.allclose(v2, new_v)  # dt = 0 changes nothing
    # inputs untouched (pure)
    assert np.allclose(off_p + src_p, shown_p)


def test_offsets_decay_after_five_halflives(rng):
    off_p = rng.normal(size=(J, 3))
    h = 0.15
    _, _, p, v = ine.update(off_p, np.zeros((J, 3)), np.zeros((J, 3)), np.zeros((J, 3)), h, 5 * h)
    assert np.all(np.linalg.norm(p, axis=1) <= 0.005 * np.linalg.norm(off_p, axis=1))
    _, _, p, _ = ine.update(off_p, np.zeros((J, 3)), 0, 0, h, h)
    assert np.allclose(p, 0.5 * off_p)  # the halflife's meaning
    r = rand_rot(rng)
    _, _, r5, w5 = ine.update_rotation(r, np.zeros((J, 3)), quat.identity((J,)), np.zeros((J, 3)),
                                       h, 5 * h)
    assert np.all(quat.angle(r5) <= 0.005 * quat.angle(r) + 1e-12)
    assert np.all(np.linalg.norm(w5, axis=1) < 0.1)


def test_rotation_transition_is_continuous(rng):
    off_r, off_w = rand_rot(rng), rng.normal(size=(J, 3))
    src_r, src_w = rand_rot(rng), rng.normal(size=(J, 3))
    dst_r, dst_w = rand_rot(rng), rng.normal(size=(J, 3))
    shown_r = quat.mul(off_r, src_r)
    shown_w = off_w + quat.rotate(off_r, src_w)
    new_r, new_w = ine.transition_rotation(off_r, off_w, src_r, src_w, dst_r, dst_w)
    assert np.all(new_r[:, 3] >= 0)
    out_r, out_w, _, _ = ine.update_rotation(new_r, new_w, dst_r, dst_w, 0.1, 0.0)
    assert np.max(quat.angle(out_r, shown_r)) <= 1e-6
    assert np.max(np.abs(out_w - shown_w)) <= 1e-6
    assert np.all(np.sum(out_r * dst_r, axis=1) >= 0)  # sign follows the playing rotation


def clip(t, phase, rate):
    """A smooth clip: positions, velocities, rotations, angular velocities at times t (F,)."""
    t = np.asarray(t)[:, None]
    pos = np.concatenate([np.sin(rate * t + phase), np.cos(rate * t + phase), 0.5 * t], 1)
    vel = np.concatenate([rate * np.cos(rate * t + phase), -rate * np.sin(rate * t + phase),
                          0.5 + 0 * t], 1)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    ang = rate * t[:, 0] + phase
    rot = quat.from_axis_angle(np.broadcast_to(axis, (len(t), 3)), ang)
    angv = np.broadcast_to(axis * rate, (len(t), 3))
    return pos, vel, rot, angv


def test_playback_through_a_jump_has_no_step():
    """Play clip A, jump to clip B: the raw jump is spread over frames (no single big step)."""
    fps, h = 60.0, 0.1
    dt = 1 / fps
    t = np.arange(120) * dt
    A, B = clip(t, 0.0, 2.0), clip(t, 2.0, 2.5)
    state = ine.InertializeState.zeros(1)
    shown_p, shown_r = [], []
    for f in range(120):
        src = [a[f:f + 1] for a in A]
        if f == 60:  # jump: source = what A would have played now, destination = B
            state = ine.transition_pose(state, *src, *[b[f:f + 1] for b in B])
        cur = src if f < 60 else [b[f:f + 1] for b in B]
        p, v, r, w, state = ine.inertialize_pose(state, *cur, h, 0.0 if f == 60 else dt)
        shown_p.append(p[0])
        shown_r.append(r[0])
    shown_p, shown_r = np.array(shown_p), np.array(shown_r)
    step_p = np.linalg.norm(np.diff(shown_p, axis=0), axis=1)
    step_r = quat.angle(shown_r[1:], shown_r[:-1])
    raw_jump = np.linalg.norm(A[0][60] - B[0][60])
    assert raw_jump > 0.5
    # the transition frame shows exactly what clip A would have shown (offsets not yet decayed)
    assert np.linalg.norm(shown_p[60] - A[0][60]) <= 1e-6
    assert quat.angle(shown_r[60], A[2][60]) <= 1e-6
    # the offset decays over ~a halflife, so no frame carries more than a small part of the jump
    raw_angle = quat.angle(A[2][60], B[2][60])
    assert np.max(step_p) < 0.15 * raw_jump
    assert np.max(step_r) < 0.15 * raw_angle
    # five halflives later the output is clip B
    f = 60 + int(5 * h * fps) + 1
    assert np.linalg.norm(shown_p[f] - B[0][f]) < 0.01 * raw_jump


def test_state_and_pose_helpers(rng):
    s = ine.InertializeState.zeros(J)
    assert len(s) == J and np.allclose(s.off_rot[:, 3], 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.off_pos = np.ones((J, 3))
    with pytest.raises(ValueError):
        s.off_pos[0, 0] = 1.0  # read-only
    pose_a = [rng.normal(size=(J, 3)), rng.normal(size=(J, 3)), rand_rot(rng),
              rng.normal(size=(J, 3))]
    pose_b = [rng.normal(size=(J, 3)), rng.normal(size=(J, 3)), rand_rot(rng),
              rng.normal(size=(J, 3))]
    s2 = ine.transition_pose(s, *pose_a, *pose_b)
    hs = rng.uniform(0.05, 0.3, J)  # per-joint halflife
    p, v, r, w, s3 = ine.inertialize_pose(s2, *pose_b, hs, 1 / 30)
    rp, rv, op, ov = ine.update(s2.off_pos, s2.off_vel, pose_b[0], pose_b[1], hs[:, None], 1 / 30)
    rr, rw, orr, ow = ine.update_rotation(s2.off_rot, s2.off_ang, pose_b[2], pose_b[3], hs, 1 / 30)
    assert np.allclose(p, rp) and np.allclose(v, rv) and np.allclose(r, rr) and np.allclose(w, rw)
    assert np.allclose(s3.off_pos, op) and np.allclose(s3.off_rot, orr)
    assert np.allclose(s2.off_pos, pose_a[0] - pose_b[0])  # s2 unchanged by the update


def test_state_errors():
    with pytest.raises(ShapeError, match="off_pos"):
        ine.InertializeState(np.zeros((2, 3)), np.zeros((3, 3)), quat.identity((3,)),
                             np.zeros((3, 3)))
    with pytest.raises(ShapeError, match="off_rot"):
        ine.InertializeState(np.zeros((3, 3)), np.zeros((3, 3)), np.zeros((3, 3)),
                             np.zeros((3, 3)))
    with pytest.raises(ShapeError):
        ine.InertializeState.zeros(0)
    s = ine.InertializeState.zeros(2)
    with pytest.raises(ShapeError, match="lrot"):
        ine.inertialize_pose(s, np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((3, 4)),
                             np.zeros((2, 3)), 0.1, 0.01)
