"""``benchmarks/avatar_eval.py``'s ``--set NAME=VALUE``: values parsed, bad ones one line."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
from avatar_eval import settings_arg  # noqa: E402


def test_set_values_parse():
    assert settings_arg("reach_lead=0.01") == ("reach_lead", 0.01)
    assert settings_arg(" solver_iterations = 30 ") == ("solver_iterations", 30)
    assert settings_arg("reach_every_step=False") == ("reach_every_step", False)


@pytest.mark.parametrize("text, match", [
    ("reach_lead", "expected NAME=VALUE"),
    ("no_such_field=1", "expected NAME=VALUE with NAME a TrackingSettings field"),
    ("reach_lead=fast", "the value must be a number, true or false"),
])
def test_bad_set_is_an_argument_error(text, match):
    with pytest.raises(argparse.ArgumentTypeError, match=match):
        settings_arg(text)


@pytest.mark.parametrize("arg, match", [
    ("reach_lead=fast", "argument --set: 'reach_lead=fast': the value must be a number"),
    ("reach_lead=-1", "--set: TrackingSettings: reach_lead must be a finite number >= 0"),
])
def test_bad_set_on_the_command_line_is_one_line(arg, match):
    """Refused before any data is read: exit 2, the usage and one error line."""
    r = subprocess.run([sys.executable, str(BENCH / "avatar_eval.py"), "--physics", "--set", arg],
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
