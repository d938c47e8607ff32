"""``benchmarks/physical_diagnosis.py``'s made inputs: mirrored (the same task turning the other
way), the sharp turns rounded (``stadium_path``) and the envelope's tasks (``envelope``); its
``--set`` (``STEPPING``'s gains changed, ``stepping_settings``); ``solved_loop``'s count of frames
with no reference foot planted (``_no_foot_planted``); ``solved_cycles``' table."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from physmocap import quat
from physmocap.matching.trajectory import Joystick, load_input
from physmocap.scene import _resolve

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import physical_diagnosis  # noqa: E402
from physical_diagnosis import (  # noqa: E402
    PREDICTIVE_ENVELOPE_TASKS, PREDICTIVE_KEPT_TASKS, PREDICTIVE_TURNS_300, _envelope_input,
    _mirrored_input, _no_foot_planted, _plot_envelope, _predictive_jobs, _task_input,
    _turned_input, stadium_path, stepping_settings)

from physmocap.playback.balance import STEPPING, BalanceSettings  # noqa: E402
from physmocap.playback.track import TrackingSettings  # noqa: E402

M = np.array([1.0, -1.0, 1.0])


def _mirror_q(q):
    """The rotation ``M R M`` of ``q`` (M = diag(1, -1, 1)), by matrices."""
    R = quat.to_matrix(np.asarray(q, float))
    return quat.from_matrix(np.diag(M) @ R @ np.diag(M))


def _input(name):
    if name == "stick":     # sideways and turning: the shipped joystick scenes push only ahead
        return Joystick(np.array([0.0, 4.0, 8.0]), np.array([[0.0, 1.0], [0.7, 0.3], [-0.5, -0.2]]),
                        np.zeros(3, bool), right=np.array([[0.0, 0.0], [0.0, 0.0], [0.6, 0.4]]),
                        camera_yaw=0.4)
    return load_input(_resolve(name, "inputs", "input"))


@pytest.mark.parametrize("name", ["figure_eight", "sharp_turns", "head_circle", "stick"])
def test_mirrored_input_asks_for_the_mirrored_motion(name):
    """At mirrored positions and facings, the mirrored input asks for the mirror of what the
    input asks for: velocity y -> -y, facing ``M R M`` (a joystick's camera turned by
    ``_turned_input`` to the mirrored heading, as ``live_headings`` does)."""
    src = _input(name)
    mir = _mirrored_input(src)
    if isinstance(src, Joystick):
        mir = _turned_input(mir, -src.camera_yaw)
        mir = dataclasses.replace(mir, initial_yaw=-src.initial_yaw)
    rng = np.random.default_rng(0)
    for t in np.linspace(0.0, 12.0, 9):
        pos = np.array([*rng.uniform(-3, 3, 2), 0.0])
        rot = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), rng.uniform(-np.pi, np.pi))
        v, r = src.desired(t, pos, rot)
        vm, rm = mir.desired(t, pos * M, _mirror_q(rot))
        np.testing.assert_allclose(vm, np.asarray(v) * M, atol=1e-9)
        assert abs(float(np.dot(rm, _mirror_q(r)))) == pytest.approx(1.0, abs=1e-9)


def test_mirroring_twice_is_the_input():
    src = load_input(_resolve("head_circle", "inputs", "input"))
    twice = _mirrored_input(_mirrored_input(src))
    np.testing.assert_array_equal(twice.pos, src.pos)
    np.testing.assert_allclose(twice.rot, src.rot, atol=1e-15)


def test_not_an_input_is_a_type_error():
    with pytest.raises(TypeError, match="not an input source: str"):
        _mirrored_input("figure_eight")


def test_stadium_path_of_radius_0_is_the_sharp_turns():
    ship, made = _input("sharp_turns"), stadium_path(0.0)
    assert np.array_equal(made.points, ship.points)
    assert (made.speed, made.closed) == (ship.speed, ship.closed)


@pytest.mark.parametrize("r", [0.5, 1.0])
def test_stadium_path_turns_on_half_circles(r):
    """Two 5 m straights 2r apart; every other way-point on a half circle of radius r about
    (5, r) or (0, r); the path as long as its straights and its two 8-segment arcs."""
    path = stadium_path(r)
    pts = path.points
    on_far = np.isclose(np.hypot(pts[:, 0] - 5.0, pts[:, 1] - r), r)
    on_near = np.isclose(np.hypot(pts[:, 0], pts[:, 1] - r), r)
    assert np.all(on_far | on_near)
    assert np.all(pts[on_far & ~on_near, 0] >= 5.0) and np.all(pts[on_near & ~on_far, 0] <= 0.0)
    chord = 2 * r * np.sin(np.pi / 16)
    assert path.length == pytest.approx(10.0 + 16 * chord)
    assert path.closed and path.speed == 1.1


@pytest.mark.parametrize("speed", [0.5, 1.3])
def test_envelope_tasks_ask_for_their_speed(speed):
    """The straight task asks for ``speed`` m/s straight ahead (+x) however the character
    faces; a rounded one is the stadium path at that speed."""
    walk = _envelope_input(speed, np.inf)
    rot = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), 0.3)
    v, r = walk.desired(2.0, np.zeros(3), None)
    np.testing.assert_allclose(v, [speed, 0.0, 0.0], atol=1e-12)
    v, _ = walk.desired(2.0, np.zeros(3), rot)
    assert np.linalg.norm(v) == pytest.approx(speed) and v[0] > 0
    path = _envelope_input(speed, 0.75)
    assert path.speed == speed
    assert np.array_equal(path.points, stadium_path(0.75, speed=speed).points)


def test_predictive_tasks_are_the_envelope_walks_and_the_scenes():
    """``live_predictive``'s ``straight@V`` is ``envelope``'s straight walk at V m/s (the
    envelope's predictive tasks ask for 0.5 and 1.5 m/s); another name is its input scene."""
    for (name, _), speed in zip(PREDICTIVE_ENVELOPE_TASKS, (0.5, 1.5)):
        v, _ = _task_input(name).desired(2.0, np.zeros(3), None)
        np.testing.assert_allclose(v, [speed, 0.0, 0.0], atol=1e-12)
    turns = _task_input("sharp_turns")
    assert np.array_equal(turns.points, _input("sharp_turns").points)


def test_predictive_jobs_play_a_recorded_head_once():
    """``kept_predictive``'s runs: each input at each heading, but a recorded head (the head
    circle, either way) once, as recorded."""
    jobs = _predictive_jobs(PREDICTIVE_KEPT_TASKS, (0.0, 2.0, 4.0), 100.0)
    heads = [j for j in jobs if j[0] == "head_circle"]
    assert heads == [("head_circle", False, 0.0, 100.0), ("head_circle", True, 0.0, 100.0)]
    assert [j[2] for j in jobs if j[0] == "run"] == [0.0, 2.0, 4.0]
    assert len(jobs) == 4 * 3 + 2
    # a task with its own headings: those, not the call's
    assert _predictive_jobs(PREDICTIVE_TURNS_300, (3.0,), 300.0) == [
        ("sharp_turns", False, 0.0, 300.0)] + [
        ("sharp_turns", True, y, 300.0) for y in (0.7, 2.0, 5.0)]


def _fake_predictive_cell(args):
    """A ``_predictive_cell`` row at once (module level: the process pool pickles it by name);
    the later headings end first."""
    import time
    name, mirror, yaw, budget = args
    time.sleep(0.2 * (5 - yaw))
    yaw = -yaw if mirror else yaw
    return (name, mirror, yaw, 5.4, None if abs(yaw) == 2.0 else 9.0 + yaw, 0, (1.0, 2.0),
            dict(simulated_per_played=30.0, backtracks=0, complete=True), 1.0)


def test_live_predictive_prints_each_run_and_then_the_table_in_job_order(monkeypatch,
                                                                          capsys):
    """Each run's line as it ends (whatever the order), then per task its runs in heading
    order; mirrored runs report their negated heading."""
    monkeypatch.setattr(physical_diagnosis, "_predictive_cell", _fake_predictive_cell)
    physical_diagnosis.live_predictive(PREDICTIVE_TURNS_300, budget=300.0, workers=2)
    out = capsys.readouterr().out
    assert out.count("  run ") == 4 and "sharp_turns mirrored at -5.0 rad" in out
    assert "predictive up 20 s in 0 of 1 (down: 9.00)" in out
    assert "predictive up 20 s in 1 of 3 (down: 8.30 never 4.00)" in out


def test_envelope_picture(tmp_path, monkeypatch):
    """``out/envelope.png`` is written (atomically, under the working folder) for any grid."""
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    speeds, radii = (0.5, 1.1), (np.inf, 0.5, 0.0)
    cells = {(v, r): (k % 7, 0.4) for k, (v, r) in enumerate((v, r) for v in speeds for r in radii)}
    path = _plot_envelope(cells, speeds, radii)
    assert path == "out/envelope.png"
    assert (tmp_path / path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_set_changes_stepping_and_the_tracking_settings(monkeypatch):
    """A ``BalanceSettings`` name changes ``STEPPING`` (``friction``, in both, too), any other
    a ``TrackingSettings`` field; without ``--set`` the settings are ``STEPPING``'s."""
    assert stepping_settings() == TrackingSettings(balance=True, balance_gains=STEPPING)
    monkeypatch.setattr(physical_diagnosis, "_CHANGES",
                        {"ik_kz": 0.34, "friction": 1.0, "joint_max_torque": 189})
    s = stepping_settings()
    assert s.balance_gains == dataclasses.replace(STEPPING, ik_kz=0.34, friction=1.0)
    assert s.joint_max_torque == 189 and s.friction == TrackingSettings().friction
    assert s.balance


def test_set_values_parse():
    from _common import field_change
    both = (BalanceSettings, TrackingSettings)
    assert field_change("ik_kz=0.34", both, "") == ("ik_kz", 0.34)
    assert field_change(" joint_max_torque = 189 ", both, "") == ("joint_max_torque", 189)
    assert field_change("swing_keep=false", both, "") == ("swing_keep", False)
    assert field_change("stance_yaw=0.5", both, "") == ("stance_yaw", 0.5)    # default None


@pytest.mark.parametrize("args, match", [
    (["--set"], "--set needs NAME=VALUE, e.g. --set ik_kz=0.3"),
    (["live_turns", "--set", "ik_kz"], "'ik_kz': expected NAME=VALUE with NAME a BalanceSettings"),
    (["--set", "no_such=1"], "'no_such=1': expected NAME=VALUE with NAME a BalanceSettings or "
                             "TrackingSettings field that holds a number or true/false, e.g. "
                             "ik_kz=0.3"),
    (["--set", "kp=1"], "'kp=1': expected NAME=VALUE"),            # a tuple of gains
    (["--set", "ik_kz=high"], "'ik_kz=high': the value must be a number, true or false"),
    (["--set", "plan_s=-1"], "--set: BalanceSettings: plan_s must be a number of seconds >= 0"),
    (["--set", "joint_max_torque=-5"], "TrackingSettings: joint_max_torque must be a finite"),
    (["no_such_part"], "no part 'no_such_part'; usage: physical_diagnosis.py [numerics"),
])
def test_bad_command_line_is_one_line(args, match):
    """Refused before anything runs: a non-zero exit, one line, no traceback."""
    r = subprocess.run([sys.executable, str(BENCH / "physical_diagnosis.py"), *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0]
    assert r.stdout == ""


def test_a_run_with_set_says_so_first(monkeypatch, capsys):
    """Every part prints "STEPPING"; with ``--set`` the run's first line names the changes."""
    monkeypatch.setattr(physical_diagnosis, "_CHANGES", {})
    monkeypatch.setattr(physical_diagnosis, "numerics", lambda: print("ran"))  # no simulation
    physical_diagnosis.main(["numerics", "--set", "ik_kz=0.34", "--set", "joint_max_torque=189"])
    assert capsys.readouterr().out.splitlines() == [
        "STEPPING / TrackingSettings changed by --set: ik_kz=0.34, joint_max_torque=189", "ran"]


def test_no_foot_planted_follows_steppings_rule():
    """``solved_loop``'s figure: a body standing in its rest pose has both feet planted (0 %);
    raised above ``contact_height`` it has none (100 %); gliding faster than ``plant_speed``
    none, slower both; the rule's thresholds are ``STEPPING``'s own."""
    from physmocap.motion import Motion
    from physmocap.scene import load_body
    body = load_body()
    F, fps = 30, 60.0

    def motion(lift=0.0, speed=0.0):
        root = np.tile(body.skeleton.offsets[0], (F, 1)) + [0.0, 0.0, lift]
        root[:, 0] += speed * np.arange(F) / fps
        return Motion(body.skeleton, fps, root, quat.identity((F, len(body))))

    g = STEPPING
    assert _no_foot_planted(motion(), body, g) == 0.0
    assert _no_foot_planted(motion(lift=g.contact_height + 0.01), body, g) == 100.0
    assert _no_foot_planted(motion(lift=g.contact_height - 0.01), body, g) == 0.0
    assert _no_foot_planted(motion(speed=1.2 * g.plant_speed), body, g) == 100.0
    assert _no_foot_planted(motion(speed=0.8 * g.plant_speed), body, g) == 0.0


def _fake_cycle_cell(job):
    """A ``_cycle_cell`` row at once: walk "a" up everywhere, "b" down at 3 + yaw s, going
    backward before it at the headings under 2 rad."""
    name, yaw = job
    if name == "a":
        return name, yaw, None, None, None
    return name, yaw, 3.0 + yaw, -0.5 if yaw < 2.0 else 0.8, 1.1


def test_solved_cycles_counts_the_walks_up_and_going_backward(monkeypatch, capsys):
    """Per walk: up of the twelve headings, each fall time in heading order, and how many
    falls came with the body going backward along its reference's path."""
    monkeypatch.setattr(physical_diagnosis, "_solved_walks", lambda on_template: {"a": 0, "b": 0})
    monkeypatch.setattr(physical_diagnosis, "_cycle_cell", _fake_cycle_cell)
    physical_diagnosis.solved_cycles(workers=2)
    out = capsys.readouterr().out
    assert "a" in out and "up 12 of 12; - - - - - - - - - - - -" in out
    assert "up 0 of 12; 3.00 3.70 5.00 6.00 7.00 8.00 4.00 4.50" in out
    assert "backward in 4 of 12" in out and "-0.50/1.10" in out
    assert "the subject's body" in out and "--set: none" in out
