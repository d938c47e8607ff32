"""The simulated character's geometry follows the skeleton's forward kinematics."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import PhysmocapError
from physmocap.motion import Motion
from physmocap.playback.character import Character, foot_joints
from physmocap.scene import load_body
from physmocap.skeleton import Skeleton


def test_link_frames_match_forward_kinematics(rng):
    """Every link frame PyBullet reports after ``reset`` is the joint's FK position and rotation.

    A rotated inertial frame makes PyBullet apply spherical joint rotations in another frame;
    the identity pose cannot show it, a random pose does."""
    body = load_body()
    J = len(body)
    lrot = quat.from_scaled_axis(rng.normal(0.0, 0.5, (J, 3)))
    root = np.array([0.3, -0.2, 1.2])
    m = Motion(body.skeleton, 60.0, root[None], lrot[None])
    ch = Character(body)
    try:
        ch.reset(root, lrot)
        p = ch.p
        for j in range(1, J):
            st = p.getLinkState(ch.body, j - 1, computeForwardKinematics=1,
                                physicsClientId=ch.client)
            np.testing.assert_allclose(st[4], m.gpos[0, j], atol=1e-6, err_msg=body.names[j])
            assert abs(abs(float(np.dot(st[5], m.grot[0, j]))) - 1.0) < 1e-6, body.names[j]
    finally:
        ch.close()


def _spherical_motor(target, steps: int, force, **gains) -> np.ndarray:
    """One free rod on a spherical joint, no gravity, PyBullet's default 240 Hz step, its
    position motor asked for the Euler angles ``target`` (rad) with per-axis force limits
    ``force`` and ``gains`` (``positionGains``, ``velocityGains``, ``targetVelocities``, each
    for the one joint): its Euler angles (rad) after each of ``steps`` steps, ``(steps, 3)``."""
    import pybullet as p
    c = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, 0, physicsClientId=c)
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.05, 0.05, 0.2],
                                     physicsClientId=c)
        b = p.createMultiBody(
            0, -1, -1, [0, 0, 1], [0, 0, 0, 1], linkMasses=[5.0],
            linkCollisionShapeIndices=[col], linkVisualShapeIndices=[-1],
            linkPositions=[[0, 0, 0]], linkOrientations=[[0, 0, 0, 1]],
            linkInertialFramePositions=[[0, 0, -0.2]],
            linkInertialFrameOrientations=[[0, 0, 0, 1]], linkParentIndices=[0],
            linkJointTypes=[p.JOINT_SPHERICAL], linkJointAxis=[[0, 0, 1]], physicsClientId=c)
        p.setJointMotorControlMultiDofArray(
            b, [0], p.POSITION_CONTROL, targetPositions=[p.getQuaternionFromEuler(target)],
            forces=[list(force)], physicsClientId=c, **{k: [v] for k, v in gains.items()})
        out = []
        for _ in range(steps):
            p.stepSimulation(physicsClientId=c)
            out.append(p.getEulerFromQuaternion(p.getJointStateMultiDof(b, 0,
                                                                        physicsClientId=c)[0]))
        return np.array(out)
    finally:
        p.disconnect(c)


def _spherical_motor_reaches(force) -> np.ndarray:
    """The rod's Euler angles (rad) after 1 s, asked 0.5 rad about x and about z with
    per-axis force limits ``force`` (``_spherical_motor``)."""
    return _spherical_motor([0.5, 0, 0.5], 240, force, positionGains=0.25)[-1]


def test_spherical_motor_closes_kp_times_a_fifth_of_its_error_per_step():
    """PyBullet's spherical position motor asks for a joint velocity of ``kp * 0.2 * error /
    dt`` (0.2: PyBullet's default erp) and ignores the target velocity and the velocity gain:
    from rest, 0.5 rad off, one step closes 0.1 rad at ``kp`` 1 and 0.05 at 0.5, whatever the
    velocity terms; at 2.5 half the error closes each step (``TrackingSettings.reach_kp``).
    ``joint_lead`` and ``reach_ahead`` are built on this lag; a canary if PyBullet changes it."""
    def first(kp, **kw):
        # a force limit the rod never meets (5 kg, 0.4 m: 50 N·m saturates it)
        return _spherical_motor([0.5, 0, 0], 3, (1e5,) * 3, positionGains=kp, **kw)[:, 0]

    np.testing.assert_allclose(first(1.0), [0.1, 0.18, 0.244], atol=1e-3)
    np.testing.assert_allclose(first(0.5), [0.05, 0.095, 0.1355], atol=1e-3)
    np.testing.assert_allclose(first(1.0, velocityGains=0.0, targetVelocities=[5.0, 0, 0]),
                               first(1.0), atol=1e-9)
    np.testing.assert_allclose(first(1.0, velocityGains=5.0, targetVelocities=[-5.0, 0, 0]),
                               first(1.0), atol=1e-9)
    np.testing.assert_allclose(first(2.5), [0.25, 0.375, 0.4375], atol=1e-3)


def test_spherical_motor_force_limit_is_its_first_component():
    """PyBullet's spherical position motor limits all three axes by the first component of
    the joint's ``forces`` entry: the other two are ignored. So a per-axis cap (a stance hip's
    yaw limited to what the floor can hold, say) cannot be set through the motors, and
    ``Tracker`` and ``BalanceController`` give each joint one limit for its three axes. A
    canary: if PyBullet starts to honour per-axis limits, this fails."""
    np.testing.assert_allclose(_spherical_motor_reaches([50, 50, 50]), [0.5, 0, 0.5], atol=1e-3)
    # yaw "limited" to 0: reached all the same
    np.testing.assert_allclose(_spherical_motor_reaches([50, 50, 0]), [0.5, 0, 0.5], atol=1e-3)
    # the first component 0: no axis moves
    np.testing.assert_allclose(_spherical_motor_reaches([0, 50, 50]), [0, 0, 0], atol=1e-3)


def test_a_body_without_feet_is_named_with_its_joints():
    """Foot contacts need Left/Right ``*Foot`` or ``*Toes`` joints: one line listing what the
    body has."""
    body = load_body()
    sk = body.skeleton
    names = [n.replace("Foot", "Paw").replace("Toes", "Claw") for n in sk.names]
    pawed = replace(body, skeleton=Skeleton(names, sk.parents, sk.offsets, sk.end_sites),
                    name="pawed")
    with pytest.raises(PhysmocapError, match="body 'pawed' has no LeftFoot/RightFoot joints; "
                                             "foot contacts need them \\(joints: Hips, Spine"):
        foot_joints(pawed)
    assert foot_joints(body) == ([sk.index("LeftFoot"), sk.index("LeftToes")],
                                 [sk.index("RightFoot"), sk.index("RightToes")])
