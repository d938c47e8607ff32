"""Support figures of a reference (``physmocap.playback.diagnose``): planted feet, the centre
of mass across the stance sole, sole roll and slide, on made-up poses with known answers and
on the demo walk, whose source clip has a measured flaw."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import SettingsError, ShapeError
from physmocap.motion import Motion
from physmocap.playback.diagnose import support, support_summary
from physmocap.playback.reference import ground_motion, level_feet
from physmocap.scene import load_body


@pytest.fixture(scope="module")
def body():
    return load_body()


def still(body, lrot, frames=30, fps=60.0):
    return Motion(body.skeleton, fps, np.tile(body.skeleton.offsets[0], (frames, 1)),
                  np.tile(lrot, (frames, 1, 1)))


def test_standing_is_double_support(body):
    """The rest pose: both soles flat on the floor, never single stance, no roll, no slide."""
    s = support(still(body, quat.identity((len(body),))), body)
    assert s.planted.all()
    assert np.isnan(s.com_offset).all()
    assert np.allclose(s.sole_roll, 0.0, atol=1e-6) and np.all(s.slide == 0.0)
    assert s.half_width == pytest.approx(0.045)
    rep = support_summary(s)
    assert rep["single_stance_frames"] == 0 and rep["slide_max_m_s"] == 0.0
    for kw in (dict(contact_height=float("nan")), dict(ankle_height=-0.01)):
        with pytest.raises(SettingsError, match="support: .* must be a finite number >= 0"):
            support(still(body, quat.identity((len(body),))), body, **kw)


def test_one_foot_up_puts_the_centre_of_mass_off_the_sole(body):
    """Upright on the right foot with the left thigh lifted: the centre of mass stays near the
    body's midline, the hip's 9 cm from the right sole's centre line toward the lifted foot."""
    lrot = quat.identity((len(body),))
    y = np.array([0.0, 1.0, 0.0])
    lrot[body.index("LeftUpperLeg")] = quat.from_axis_angle(y, -0.6)
    lrot[body.index("LeftLowerLeg")] = quat.from_axis_angle(y, 1.2)
    s = support(still(body, lrot), body)
    assert s.planted[:, 1].all() and not s.planted[:, 0].any()
    assert np.all((s.com_offset > 0.07) & (s.com_offset < 0.10))
    assert np.isnan(s.sole_roll[:, 0]).all()


def test_rolled_and_sliding_sole(body):
    """A right foot rolled 5° about its long axis reads 5°; a root moving 1 m/s with both feet
    down reads a 1 m/s slide."""
    lrot = quat.identity((len(body),))
    lrot[body.index("RightFoot")] = quat.from_axis_angle(np.array([1.0, 0.0, 0.0]),
                                                         np.radians(5.0))
    F, fps = 20, 60.0
    root = np.tile(body.skeleton.offsets[0], (F, 1)) + np.outer(np.arange(F) / fps, [1.0, 0, 0])
    m = Motion(body.skeleton, fps, root, np.tile(lrot, (F, 1, 1)))
    s = support(m, body)
    assert np.abs(s.sole_roll[:, 1]) == pytest.approx(5.0, abs=0.01)
    assert s.slide[1:, 0] == pytest.approx(1.0, abs=1e-6)


def test_demo_walk_support(body):
    """The demo walk as ``track`` prepares it: in single stance its centre of mass sits ~4 cm
    from the stance sole's centre line (the sole's half-width is 4.5 cm); its soles lean up to
    ~8° onto an edge; and its source clip moves the planted left foot 9 cm sideways in 33 ms at
    frames 73-76 (keyframe 18 -> 19 of humanoid3d_walk.txt, the root's yaw snapping 7°)."""
    from physmocap.demo import make_demo_capture
    _, walk = make_demo_capture()
    ref = ground_motion(level_feet(walk, body, constant=True), body)
    s = support(ref, body)
    rep = support_summary(s)
    assert 0.03 < rep["com_offset_median_m"] < rep["sole_half_width_m"]     # measured 3.8 cm
    assert rep["sole_roll_max_deg"] > 5.0                                    # measured 7.8°
    glitch = s.slide[73:77, 0]
    assert np.all(glitch > 2.0)                                              # measured 3.0 m/s
    assert np.median(s.slide[s.planted & np.roll(s.planted, 1, axis=0)]) < 0.3


def test_wrong_skeleton_rejected(body):
    from physmocap.skeleton import Skeleton
    sk = Skeleton(("Hips", "Head"), np.array([-1, 0]), np.array([[0, 0, 1.0], [0, 0, 0.5]]))
    m = Motion(sk, 30.0, np.zeros((2, 3)), quat.identity((2, 2)))
    with pytest.raises(ShapeError, match="retarget it first"):
        support(m, body)
