"""Do the asked-speed and fast-turn warnings (``matching.coverage``) say where the feet slide?

    python benchmarks/speed_coverage.py [--seconds 10]

On the live benchmarks' database (``_common.live_database``, with its standing clip): the speeds
its clips keep for a second, then a straight joystick walk at each speed of the fully physical
envelope (0.5-1.75 m/s, ``physical_diagnosis.py envelope``), motion-matched (``mm run``'s
controller, no foot lock): how long the input asked for a speed no clip keeps (the warning's
figure), and how far the matched frames' feet labelled in contact slide (foot skate, mm per
frame, beside the database's own clips). Then every shipped input scene, 20 s: how long the
character turned faster than any clip keeps for a second (the turn warning's figure), and the
matched feet's skate in those frames and in the rest. Kinematic only: a few seconds in all.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _common import live_database

from physmocap.matching.controller import Controller, run_controller
from physmocap.matching.coverage import (asked_speeds, covered_ranges, fast_turns,
                                         fastest_kept_turn, ranges_text, run_turn_rates,
                                         turn_limit)
from physmocap.matching.metrics import database_figures, foot_skate_mm
from physmocap.matching.trajectory import Joystick, load_input

SPEEDS = (0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.75)
INPUTS = ("straight_walk", "stop_and_go", "figure_eight", "sharp_turns", "run", "head_circle")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    db, feats = live_database(stand=True)
    project = Path(__file__).resolve().parents[1]
    feet = tuple(db.contact_joints)
    print(f"live database, {db.n_frames} frames: its clips keep "
          f"{ranges_text(covered_ranges(db))} for 1 s; "
          f"its clips' own foot skate {database_figures(db)[0]:.2f} mm/frame")
    print(f"{'asked (m/s)':>11} | {'uncovered (s)':>13} | {'warned':>6} | foot skate (mm/frame)")
    for v in SPEEDS:
        stick = Joystick(times=np.array([0.0]), stick=np.array([[0.0, 1.0]]),
                         run=np.array([False]), walk_speeds=(v, v, v))
        motion, record = run_controller(Controller(db, feats, stick), args.seconds)
        rep = asked_speeds(db, record.desired_vel, 1.0 / db.fps)
        skate = foot_skate_mm(motion, feet, np.array(record.contacts))
        print(f"{v:>11.2f} | {rep['uncovered_s']:>13.1f} | "
              f"{'yes' if rep['warning'] else 'no':>6} | {skate:.2f}")
    keeps = fastest_kept_turn(db)
    print(f"\nits clips keep turns up to {keeps:.2f} rad/s for 1 s (warned past "
          f"{turn_limit(keeps):.2f})")
    print(f"{'input':>13} | {'too fast (s)':>12} | {'fastest (rad/s)':>15} | {'warned':>6} | "
          "skate too fast / rest (mm/frame)")
    for name in INPUTS:
        src = load_input(project / "scenes" / "inputs" / f"{name}.toml")
        motion, record = run_controller(Controller(db, feats, src), 20.0)
        fast = run_turn_rates(record.root_rot, 1.0 / db.fps) > turn_limit(keeps)
        rep = fast_turns(db, record.root_rot, 1.0 / db.fps)
        contacts = np.array(record.contacts)
        skate = [_skate(motion, feet, contacts, sel) for sel in (fast, ~fast)]
        print(f"{name:>13} | {rep['too_fast_s']:>12.2f} | {rep['max_rad_s']:>15.2f} | "
              f"{'yes' if rep['warning'] else 'no':>6} | {skate[0]:.2f} / {skate[1]:.2f}")


def _skate(motion, feet, contacts: np.ndarray, sel: np.ndarray) -> float:
    """``foot_skate_mm`` over the frame pairs both in ``sel (F,)`` (NaN where there are none,
    where ``foot_skate_mm`` says 0)."""
    c = contacts & sel[:, None]
    return foot_skate_mm(motion, feet, c) if (c[1:] & c[:-1]).any() else float("nan")


if __name__ == "__main__":
    main()
