"""The damage section of the solve report, on synthetic arrays (fast; the real corpus is in
test_robustness.py)."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import SettingsError
from physmocap.solver.damage import (GHOST_S, STRIDE_HZ, bridge_blackouts, damage_report,
                                     frame_rate_check, intervals)

C = 0.04  # outlier distance, m


def test_intervals():
    assert intervals([]) == []
    assert intervals([0, 1, 1, 0, 1]) == [[1, 3], [4, 5]]
    assert intervals(np.ones(3, bool)) == [[0, 3]]


def test_bridge_interpolates_inside_and_holds_at_the_ends(rng):
    F, J = 10, 3
    root = np.cumsum(np.ones((F, 3)), axis=0)
    lrot = quat.from_axis_angle(np.array([0, 0, 1.0]), np.linspace(0, 1, F))[:, None]
    lrot = np.repeat(lrot, J, axis=1)
    seen = np.ones(F, bool)
    seen[[0, 4, 5, 6, 9]] = False
    r, q, rep = bridge_blackouts(np.where(seen[:, None], root, 99.0),
                                 np.where(seen[:, None, None], lrot, [0, 0, 0, 1.0]), seen)
    assert [b["frames"] for b in rep] == [[0, 1], [4, 7], [9, 10]]
    assert [b["action"] for b in rep] == ["bridged (held)", "bridged (interpolated)",
                                          "bridged (held)"]
    np.testing.assert_allclose(r[4:7], root[4:7])                 # linear root is recovered
    np.testing.assert_allclose(np.abs(np.sum(q[4:7] * lrot[4:7], -1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(r[0], root[1])
    np.testing.assert_allclose(r[9], root[8])
    # nothing seen at all: unchanged, nothing to report
    r2, _, rep2 = bridge_blackouts(root, lrot, np.zeros(F, bool))
    assert rep2 == [] and np.array_equal(r2, root)


def _scene(F=100, M=4):
    """Markers exactly on their landmarks, moving slowly."""
    t = np.linspace(0, 1, F)[:, None, None]
    solved = np.arange(M)[None, :, None] * np.array([0.3, 0.0, 0.0]) + t * [0.5, 0.0, 0.0]
    return solved.copy(), solved


def _far(pos, solved):
    return np.nan_to_num(np.linalg.norm(pos - solved, axis=-1)) > C


def test_clean_capture_reports_nothing():
    pos, solved = _scene()
    d = damage_report("ABCD", pos, solved, _far(pos, solved), 100.0, C)
    assert d["summary"] == {"markers_never_seen": 0, "gap_samples": 0, "blackout_frames": 0,
                            "swaps": 0, "ghosts": 0, "outliers": 0, "nonfinite_samples": 0,
                            "frame_rate_suspect": False}
    assert d["nonfinite_samples"] is None and d["frame_rate"] is None


def test_gaps_never_seen_swap_ghost_outlier_named():
    pos, solved = _scene()
    pos[:, 3] = np.nan                                       # D never seen
    pos[10:15, 0] = np.nan                                   # A gap
    pos[20:40, [1, 2]] = pos[20:40, [2, 1]]                  # B/C swapped 0.2 s
    pos[60, 0] += [0.0, 0.5, 0.0]                            # A ghost, one frame
    pos[70:90, 1] += [0.0, 0.0, 0.06]                        # B off by 6 cm for 0.2 s
    d = damage_report("ABCD", pos, solved, _far(pos, solved), 100.0, C, nonfinite=3)
    assert d["markers_never_seen"] == [{"marker": "D", "action": "ignored"}]
    assert d["gaps"] == [{"marker": "A", "frames": 5, "intervals": [[10, 15]], "n_intervals": 1,
                          "action": "bridged"}]
    assert d["swaps"] == [{"markers": ["B", "C"], "frames": [20, 40], "seconds": 0.2,
                           "action": "flagged as swap"}]
    assert [(g["marker"], g["frames"]) for g in d["ghosts"]] == [("A", [60, 61])]
    assert d["ghosts"][0]["distance_mm_max"] == pytest.approx(500.0)
    assert [(o["marker"], o["frames"], o["action"]) for o in d["outliers"]] == \
        [("B", [70, 90], "flagged as outlier")]
    assert d["nonfinite_samples"]["count"] == 3
    assert d["summary"]["gap_samples"] == 5


def test_ghost_needs_a_jump_and_a_short_burst():
    pos, solved = _scene()
    # a gradual drift off (poorly fitted segment): far for 3 frames but no jump -> outlier
    pos[30:36, 0, 2] += np.array([0.02, 0.035, 0.045, 0.05, 0.045, 0.035])
    # a jump held longer than GHOST_S -> outlier
    n = int(GHOST_S * 100) + 2
    pos[50:50 + n, 2, 2] += 0.3
    d = damage_report("ABCD", pos, solved, _far(pos, solved), 100.0, C)
    assert d["ghosts"] == []
    assert {o["marker"] for o in d["outliers"]} == {"A", "C"}


def test_blockwise_landmarks_equal_whole_take(rng, monkeypatch):
    """Long takes are transformed in blocks (bounded temporaries): same numbers."""
    from physmocap.markers import MarkerSet
    from physmocap.scene import load_body
    from physmocap.solver import kinematic, physical

    sk = load_body().skeleton
    F, J = 4200, len(sk)       # over one block of marker_positions (4096)
    lrot = quat.normalize(rng.normal(size=(F, J, 4)))
    root = rng.normal(size=(F, 3))
    ms = MarkerSet(["a", "b", "c"], [0, 3, J - 1], rng.normal(size=(3, 3)))
    whole = kinematic.marker_positions(sk, ms, lrot, root)
    from physmocap.skeleton import forward_kinematics
    gpos, grot = forward_kinematics(sk, lrot, root)
    monkeypatch.setattr(physical, "BLOCK", 10**6)
    whole_lm = physical.landmarks(gpos, grot, ms)
    monkeypatch.setattr(physical, "BLOCK", 7)
    np.testing.assert_array_equal(physical.landmarks(gpos, grot, ms), whole_lm)
    np.testing.assert_allclose(whole_lm, whole, atol=1e-12)


def _walk(seconds: float, fps: float, stride_hz: float = 0.9, speed: float = 1.4):
    """Hips moving at ``speed`` m/s and two heels that alternately swing and rest (one stride
    per ``1 / stride_hz`` s), sampled at ``fps``."""
    t = np.arange(int(seconds * fps)) / fps
    hips = np.stack([speed * t, 0 * t, 0.9 + 0 * t], axis=1)
    feet = {}
    for side, phase in (("Left", 0.0), ("Right", 0.5)):
        u = (t * stride_hz + phase) % 1.0                 # stride phase
        k = np.floor(t * stride_hz + phase)
        # rest for 60 % of the stride, then swing two step lengths forward
        x = (k + np.clip((u - 0.6) / 0.4, 0, 1)) * speed / stride_hz
        feet[side] = np.stack([x, 0 * t + (0.1 if phase else -0.1), 0.05 + 0 * t], axis=1)
    return hips, feet


@pytest.mark.parametrize("factor, ok", [(1, True), (0.5, True), (2, True), (0.1, False),
                                        (0.25, False), (4, False), (10, False)])
def test_frame_rate_check_flags_rates_that_make_a_walk_inhuman(factor, ok):
    hips, feet = _walk(6.0, 120.0)
    c = frame_rate_check(hips, feet, 120.0 * factor)
    assert c["stride_hz"] == pytest.approx(0.9 * factor, rel=0.1)
    assert c["plausible"] is ok
    assert (c["action"] == "checked") is ok
    if not ok:
        assert ("too low" if factor < 1 else "too high") in c["action"]


def test_frame_rate_check_without_strides_judges_speed_only():
    t = np.arange(2400) / 120.0
    still = {"Left": np.zeros((2400, 3)), "Right": np.zeros((2400, 3))}
    hips = np.stack([1.0 * t, 0 * t, 0.9 + 0 * t], axis=1)
    c = frame_rate_check(hips, still, 120.0)
    assert c["stride_hz"] is None and c["plausible"]
    assert c["hip_speed_p95_m_s"] == pytest.approx(1.0, rel=1e-6)
    fast = frame_rate_check(hips, still, 120.0 * 20)            # 20 m/s
    assert not fast["plausible"] and "too high" in fast["action"]
    assert frame_rate_check(hips[:2], still, 120.0)["plausible"]     # too short to judge
    assert STRIDE_HZ[0] < 0.5 and STRIDE_HZ[1] > 2.5
    for fps in (0.0, float("nan")):           # 0 called any take plausible, NaN raised
        with pytest.raises(SettingsError, match="frame_rate_check: fps must be a finite"):
            frame_rate_check(hips, still, fps)


def test_frame_rate_check_ignores_feet_that_do_not_alternate(rng):
    """A badly damaged solve's jittering feet swing at random: no stride rate, no flag."""
    hips, feet = _walk(6.0, 120.0)
    jitter = {k: v + np.repeat(rng.normal(scale=0.1, size=(len(v) // 6, 3)), 6, axis=0)[:len(v)]
              for k, v in feet.items()}
    c = frame_rate_check(hips, jitter, 120.0)
    assert c["stride_hz"] is None and c["plausible"]
    same = {"Left": feet["Left"], "Right": feet["Left"] + [0.0, 0.2, 0.0]}   # hopping
    assert frame_rate_check(hips, same, 120.0)["stride_hz"] is None
