"""The simulated character's geometry follows the skeleton's forward kinematics."""
from __future__ import annotations

import numpy as np

from physmocap import quat
from physmocap.motion import Motion
from physmocap.playback.character import Character
from physmocap.scene import load_body


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


def _spherical_motor_reaches(force) -> np.ndarray:
    """One free rod on a spherical joint, no gravity, its position motor asked 0.5 rad about x
    and about z with per-axis force limits ``force``: its Euler angles (rad) after 1 s."""
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
            b, [0], p.POSITION_CONTROL, targetPositions=[p.getQuaternionFromEuler([0.5, 0, 0.5])],
            positionGains=[0.25], forces=[list(force)], physicsClientId=c)
        for _ in range(240):
            p.stepSimulation(physicsClientId=c)
        return np.array(p.getEulerFromQuaternion(p.getJointStateMultiDof(b, 0,
                                                                         physicsClientId=c)[0]))
    finally:
        p.disconnect(c)


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
