"""Foot locking pins feet in contact without changing limb lengths or foot orientation."""
import numpy as np
import pytest

from physmocap import Motion, quat
from physmocap.errors import SettingsError
from physmocap.matching import metrics
from physmocap.matching.footlock import lock_feet
from physmocap.scene import load_body


def sliding_stance(F=60, step=0.003):
    """The template standing still while its root slides ``step`` m per frame: feet skate."""
    sk = load_body().skeleton
    lrot = quat.identity((F, len(sk)))
    # bend the knees a little so the legs can reach back
    for knee in ("LeftLowerLeg", "RightLowerLeg"):
        lrot[:, sk.index(knee)] = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), 0.4)
    root = np.column_stack([np.arange(F) * step, np.zeros(F), np.full(F, 0.9)])
    return Motion(sk, 60.0, root, lrot)


def test_locking_stops_the_slide_and_keeps_the_body():
    m = sliding_stance()
    contacts = np.zeros((m.n_frames, 2), bool)
    contacts[10:40] = True
    feet = ("LeftToes", "RightToes")
    before = metrics.foot_skate_mm(m, feet, contacts)
    out = lock_feet(m, feet, contacts, blend=4)
    after = metrics.foot_skate_mm(out, feet, contacts)
    assert before > 2.9 and after < 0.3, (before, after)      # 3 mm/frame -> pinned
    sk = m.skeleton
    # fixed limb lengths (FK of the same skeleton) and foot orientations kept
    f = sk.index("LeftFoot")
    assert np.allclose(np.abs(np.sum(out.grot[:, f] * m.grot[:, f], -1)), 1.0, atol=1e-9)
    # untouched outside the locks (and their easing)
    assert np.allclose(out.gpos[:5], m.gpos[:5]) and np.allclose(out.gpos[-10:], m.gpos[-10:])


def test_a_lock_that_would_stretch_too_far_is_released():
    m = sliding_stance(F=80, step=0.01)
    contacts = np.ones((80, 2), bool)                    # "in contact" while sliding 0.8 m
    out = lock_feet(m, ("LeftToes", "RightToes"), contacts, max_slide=0.25)
    f = m.skeleton.index("LeftFoot")
    gap = np.linalg.norm(out.gpos[:, f] - m.gpos[:, f], axis=-1)
    assert gap.max() < 0.26
    # let go over the blend's frames, not in one: the foot jumped 0.25 m in a frame
    step = np.linalg.norm(np.diff(out.gpos[:, f], axis=0), axis=-1)
    assert 0.04 < step.max() < 0.1, step.max()


def test_bad_lock_settings_are_one_settings_error():
    m = sliding_stance()
    contacts = np.ones((m.n_frames, 2), bool)
    for blend in (-1, 2.5, float("nan")):                  # all three ran before
        with pytest.raises(SettingsError, match="lock_feet: blend must be a whole number"):
            lock_feet(m, ("LeftFoot", "RightFoot"), contacts, blend=blend)
    with pytest.raises(SettingsError, match="lock_feet: max_slide must be a finite number"):
        lock_feet(m, ("LeftFoot", "RightFoot"), contacts, max_slide=float("nan"))


def test_two_plants_close_together_hand_over_smoothly():
    """A gap shorter than two blends: the ease into the second plant kept the first plant's
    position and jumped to the new one a frame before contact (0.23 m on the sharp turns)."""
    m = sliding_stance(F=60, step=0.003)
    contacts = np.zeros((60, 2), bool)
    contacts[10:25] = contacts[31:40] = True             # 6 frames apart, blend 5
    out = lock_feet(m, ("LeftToes", "RightToes"), contacts, blend=5)
    f = m.skeleton.index("LeftFoot")
    step = np.linalg.norm(np.diff(out.gpos[:, f], axis=0), axis=-1)
    assert np.allclose(step[10:24], 0.0, atol=1e-6) and np.allclose(step[31:39], 0, atol=1e-6)
    # the plants are 21 x 3 mm apart: handed over across the gap's 7 steps, none of them
    # over 2.5 x the even share (before: most of it in the last)
    assert step[24:31].max() < 2.5 * 0.063 / 7, step[20:35].round(4)
