"""Does the asked-speed warning (``matching.coverage``) say where the feet slide?

    python benchmarks/speed_coverage.py [--seconds 10]

On the live benchmarks' database (``_common.live_database``, with its standing clip): the speeds
its clips keep for a second, then a straight joystick walk at each speed of the fully physical
envelope (0.5-1.75 m/s, ``physical_diagnosis.py envelope``), motion-matched (``mm run``'s
controller, no foot lock): how long the input asked for a speed no clip keeps (the warning's
figure), and how far the matched frames' feet labelled in contact slide (foot skate, mm per
frame, beside the database's own clips). Kinematic only: a few seconds in all.
"""
from __future__ import annotations

import argparse

import numpy as np
from _common import live_database

from physmocap.matching.controller import Controller, run_controller
from physmocap.matching.coverage import asked_speeds, ranges_text
from physmocap.matching.metrics import database_figures, foot_skate_mm
from physmocap.matching.trajectory import Joystick

SPEEDS = (0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.75)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    db, feats = live_database(stand=True)
    feet = tuple(db.contact_joints)
    keeps = asked_speeds(db, np.zeros((1, 3)), 1.0 / db.fps)["database_speeds_m_s"]
    print(f"live database, {db.n_frames} frames: its clips keep {ranges_text(keeps)} for 1 s; "
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


if __name__ == "__main__":
    main()
