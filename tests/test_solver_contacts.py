import numpy as np
import pytest

from physmocap import ShapeError
from physmocap.errors import SettingsError
from physmocap.solver.contacts import detect_plants


def stepping(F=240, fps=120.0):
    """A marker that rests, lifts and moves, then rests again (with 1 mm noise)."""
    t = np.arange(F) / fps
    pos = np.zeros((F, 1, 3))
    swing = (t > 0.5) & (t < 1.0)
    phase = np.clip((t - 0.5) / 0.5, 0, 1)
    pos[:, 0, 0] = 0.6 * phase
    pos[:, 0, 2] = 0.05 + np.where(swing, 0.12 * np.sin(np.pi * phase), 0.0)
    pos += np.random.default_rng(0).normal(scale=0.001, size=pos.shape)
    return pos, swing


def test_plants_found_with_hysteresis():
    pos, swing = stepping()
    p = detect_plants(pos, 120.0)[:, 0]
    assert p[:50].all() and p[-50:].all()          # still at rest, start and end
    assert not p[70:110].any()                      # in the air
    # no flicker: exactly two plant intervals
    edges = np.diff(np.r_[0, p.astype(int), 0])
    assert (edges == 1).sum() == 2


def peeling(fps=120.0, speed=0.12):
    """A heel at rest for 0.5 s that then peels off the floor slowly (forward and up at
    ``speed`` m/s, under ``speed_on``: low and slow all the way), rests from 1 s to 1.5 s
    where it got to (6 cm on, 2 cm up), is lifted 10 cm and set down again from 1.5 s to 1.8 s,
    and rests to 2.3 s."""
    t = np.arange(int(2.3 * fps)) / fps
    travel = speed * np.clip(t - 0.5, 0.0, 0.5)                      # m along the peel
    pos = np.zeros((len(t), 1, 3))
    pos[:, 0, 0] = travel * 0.95
    pos[:, 0, 2] = 0.01 + travel * 0.3 + 0.1 * np.sin(np.pi * np.clip((t - 1.5) / 0.3, 0, 1))
    return pos


def test_a_heel_peeling_off_slowly_is_released_where_it_leaves_its_place():
    """By height and speed alone the plant lasted while the heel was low and slow (it pinned
    the solved heel 2-3 cm below its marker in the Plug-in Gait walk); now it ends once the
    heel is 1.5 cm from where it was planted. One plant is one stay in one place: the heel is
    planted again once it has been lifted and set down, not in 1.5 cm stairs as it moves on
    nor where it comes to rest without lifting."""
    fps = 120.0
    pos = peeling(fps)
    p = detect_plants(pos, fps)[:, 0]
    left = np.flatnonzero(np.linalg.norm(pos[:, 0] - pos[0, 0], axis=-1) > 0.015)[0]
    assert p[:left].all() and not p[left:int(1.5 * fps)].any()
    assert p[int(1.9 * fps):].all()      # set down after the lift: planted again
    old = detect_plants(pos, fps, move_off=1.0)[:, 0]
    assert old[:int(1.5 * fps)].all()    # the rule it replaces: never let go while low


def test_missing_samples_are_never_planted():
    pos, _ = stepping()
    pos[10:20] = np.nan
    p = detect_plants(pos, 120.0)[:, 0]
    assert not p[10:20].any()


def test_shapes():
    with pytest.raises(ShapeError):
        detect_plants(np.zeros((10, 3)), 120.0)
    assert detect_plants(np.zeros((0, 2, 3)), 120.0).shape == (0, 2)


@pytest.mark.parametrize("kw, match", [
    (dict(fps=float("nan")), "fps must be a finite number > 0"),      # a ValueError before
    (dict(fps=0.0), "fps must be a finite number > 0"),               # ran, dividing by zero
    (dict(height_on=-0.01), "height_on must be a finite number >= 0"),
    (dict(speed_off=float("inf")), "speed_off must be a finite number >= 0"),
    (dict(min_frames=0), "min_frames must be a whole number >= 1"),
    (dict(move_off=0.0), "move_off must be a finite number > 0"),
])
def test_bad_settings_are_one_settings_error(kw, match):
    pos, _ = stepping()
    kw = {"fps": 120.0, **kw}
    with pytest.raises(SettingsError, match="detect_plants: " + match):
        detect_plants(pos, **kw)
