"""``benchmarks/avatar_eval.py``: ``--set NAME=VALUE`` values parsed, bad ones one line; the
hands' misses binned by the controller's speed relative to the shoulder."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
from avatar_eval import misses_by_speed, settings_arg, shoulder_speed  # noqa: E402


def test_set_values_parse():
    assert settings_arg("reach_kp=2.5") == ("reach_kp", 2.5)
    assert settings_arg(" solver_iterations = 30 ") == ("solver_iterations", 30)
    assert settings_arg("reach_every_step=False") == ("reach_every_step", False)


@pytest.mark.parametrize("text, match", [
    ("reach_kp", "expected NAME=VALUE"),
    ("no_such_field=1", "expected NAME=VALUE with NAME a TrackingSettings field"),
    ("reach_kp=fast", "the value must be a number, true or false"),
])
def test_bad_set_is_an_argument_error(text, match):
    with pytest.raises(argparse.ArgumentTypeError, match=match):
        settings_arg(text)


@pytest.mark.parametrize("arg, match", [
    ("reach_kp=fast", "argument --set: 'reach_kp=fast': the value must be a number"),
    ("reach_kp=-1", "--set: TrackingSettings: reach_kp must be a finite number > 0"),
])
def test_bad_set_on_the_command_line_is_one_line(arg, match):
    """Refused before any data is read: exit 2, the usage and one error line."""
    r = subprocess.run([sys.executable, str(BENCH / "avatar_eval.py"), "--physics", "--set", arg],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert match in r.stderr.strip().splitlines()[-1]
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, match", [
    (["--predict-workers", "2"], "--predict-workers needs --predict"),
    (["--mode", "physical", "--balance", "stepping", "--predict", "--predict-workers", "0"],
     "--predict-workers: at least 1"),
])
def test_bad_predict_workers_is_one_line(args, match):
    """Workers without the search, or fewer than one: exit 2 and one line, before any data is
    read."""
    r = subprocess.run([sys.executable, str(BENCH / "avatar_eval.py"), "--physics", *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert match in r.stderr.strip().splitlines()[-1]
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, match", [
    (["--start", "-1"], "argument --start: '-1': expected seconds >= 0"),
    (["--start", "nan"], "argument --start: 'nan': expected seconds >= 0"),
    (["--start", "1e9"], "--start 1e+09: held-out clip dataset-2_run_normal_001 lasts only"),
    (["--only", "zzz"], "--only 'zzz': no held-out clip of this split has it in its name"),
])
def test_bad_start_or_only_is_one_line(args, match, data_dir):
    """A negative or non-finite start, one past a held-out clip's end, or ``--only`` matching
    no held-out clip: exit 2 and one error line, before the database is built."""
    import os
    env = dict(os.environ, PHYSMOCAP_DATA=str(data_dir))
    r = subprocess.run([sys.executable, str(BENCH / "avatar_eval.py"), "--physics", *args],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 2
    assert match in r.stderr.strip().splitlines()[-1]
    assert "Traceback" not in r.stderr


def test_shoulder_speed_is_the_target_s_speed_relative_to_the_shoulder():
    F, fps = 50, 60.0
    t = np.arange(F) / fps
    shoulders = np.zeros((F, 2, 3))
    shoulders[..., 0] = 3.0 * t[:, None]                    # the body runs at 3 m/s
    targets = shoulders.copy()
    targets[:, 0, 1] = 0.4 + 2.0 * t                        # the left hand 2 m/s sideways
    targets[:, 1, 2] = 0.3 * np.sin(2 * np.pi * t)          # the right swings up and down
    v = shoulder_speed(shoulders, targets, fps)
    assert v.shape == (F, 2)
    assert np.allclose(v[:, 0], 2.0)                        # the run itself does not count
    peak = 0.3 * 2 * np.pi
    assert v[:, 1].max() <= peak + 1e-9 and v[:, 1].max() > 0.98 * peak
    # shorter shoulders than targets (a fall cut the simulated motion): the common frames
    assert shoulder_speed(shoulders[:10], targets, fps).shape == (10, 2)
    assert shoulder_speed(shoulders[:1], targets, fps).shape == (1, 2)


def test_misses_by_speed_bins_the_reachable_wrist_frames():
    dist = np.array([[0.005, 0.02], [0.012, 0.002], [0.03, 0.004], [0.0, 0.5]])
    ok = np.array([[True, True], [True, True], [True, True], [True, False]])
    speed = np.array([[0.5, 0.5], [1.5, 3.5], [3.2, 9.0], [0.2, 3.0]])
    bins = misses_by_speed(dist, ok, speed)
    assert [b[:3] for b in bins] == [(0.0, 1.0, 3), (1.0, 2.0, 1), (2.0, 3.0, 0),
                                     (3.0, 4.0, 2), (4.0, np.inf, 1)]
    shares = [b[3] for b in bins]
    assert shares[0] == pytest.approx(1 / 3) and shares[1] == 1.0 and np.isnan(shares[2])
    assert shares[3] == 0.5 and shares[4] == 0.0            # the unreachable 0.5 m not counted
    assert misses_by_speed(dist, ok, speed, tolerance=0.05)[3][3] == 0.0
