"""``matching.metrics``: the figures of the database's own clips (``database_figures``), which
``mm run`` and the live playback report beside their own."""
import numpy as np
import pytest

from physmocap.io.bvh import read_bvh
from physmocap.matching import metrics
from physmocap.matching.database import build_database


@pytest.fixture(scope="module")
def walk(data_dir):
    return read_bvh(data_dir / "bvh/bandai-namco/ds2_normal_locomotion/"
                    "dataset-2_walk_normal_001.bvh")


def test_database_figures_are_its_clips(walk):
    """One clip: its own foot skate (contact joints while labelled) and jitter; two clips:
    their frame-weighted mean; a walk's planted toes slide under a millimetre a frame."""
    one = build_database([walk], names=["a"], fps=60)
    clip = one.to_motion(int(one.range_starts[0]), int(one.range_stops[0]))
    skate, jit = metrics.database_figures(one)
    assert skate == pytest.approx(metrics.foot_skate_mm(clip, tuple(one.contact_joints),
                                                        np.array(one.contacts)))
    assert jit == pytest.approx(metrics.jitter(clip))
    assert 0 < skate < 1.0 and jit > 0
    short = build_database([walk, walk[:120]], names=["a", "b"], fps=60)
    n0, n1 = np.diff(np.stack([short.range_starts, short.range_stops]), axis=0)[0]
    part = short.to_motion(int(short.range_starts[1]), int(short.range_stops[1]))
    want = (n0 * skate + n1 * metrics.foot_skate_mm(
        part, tuple(short.contact_joints), np.array(short.contacts[short.range_starts[1]:])))
    assert metrics.database_figures(short)[0] == pytest.approx(want / (n0 + n1))


def test_database_figures_do_not_change_in_the_mirror(walk):
    """Mirrored clips (``mm build --mirror``) slide and jerk as much as the originals."""
    plain = metrics.database_figures(build_database([walk], names=["a"], fps=60))
    both = metrics.database_figures(build_database([walk], names=["a"], fps=60, mirror=True))
    np.testing.assert_allclose(both, plain, rtol=1e-6)


def test_database_figures_of_clips_too_short_for_jitter(walk):
    """Clips of 2-3 frames (``build_database`` takes them) have a skate but no third
    difference: the jitter is ``None``, not a division by zero."""
    db = build_database([walk[:3], walk[10:12]], names=["a", "b"], fps=walk.fps)   # not resampled
    assert np.diff(np.stack([db.range_starts, db.range_stops]), axis=0).max() < 4
    skate, jit = metrics.database_figures(db)
    assert np.isfinite(skate) and skate >= 0 and jit is None
