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
])
def test_bad_settings_are_one_settings_error(kw, match):
    pos, _ = stepping()
    kw = {"fps": 120.0, **kw}
    with pytest.raises(SettingsError, match="detect_plants: " + match):
        detect_plants(pos, **kw)
