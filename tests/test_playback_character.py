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
