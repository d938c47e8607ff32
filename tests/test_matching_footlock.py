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


def test_bad_lock_settings_are_one_settings_error():
    m = sliding_stance()
    contacts = np.ones((m.n_frames, 2), bool)
    for blend in (-1, 2.5, float("nan")):                  # all three ran before
        with pytest.raises(SettingsError, match="lock_feet: blend must be a whole number"):
            lock_feet(m, ("LeftFoot", "RightFoot"), contacts, blend=blend)
    with pytest.raises(SettingsError, match="lock_feet: max_slide must be a finite number"):
        lock_feet(m, ("LeftFoot", "RightFoot"), contacts, max_slide=float("nan"))
