"""The robustness corpus as a table: each damaged copy of CMU 02_01 (first 2.5 s) is written as
a C3D, read and solved like ``physmocap solve``; the outcome, the damage the report names and
the joint-angle error against the solve of the undamaged capture (local joint rotations, median
and max over frames x joints, and the joint of the max).

    python benchmarks/robustness.py
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from _common import data_dir
from robustness_corpus import joint_angle_error_deg, make_cases, named_damage, solve_file, \
    write_case


def main() -> None:
    cases = make_cases(data_dir())
    base = None
    print(f"{'case':<26} {'outcome':<18} {'median°':>8} {'max°':>7}  {'worst joint':<14} "
          f"reported damage")
    with tempfile.TemporaryDirectory() as tmp:
        for k, c in enumerate(cases):
            t0 = time.perf_counter()
            res, exc = solve_file(write_case(c, Path(tmp) / f"case{k}.c3d"))
            dt = time.perf_counter() - t0
            if exc is not None:
                print(f"{c.name:<26} {type(exc).__name__:<18} {'-':>8} {'-':>7}  {'-':<14} "
                      f"{exc.reason}", flush=True)
                continue
            if base is None:
                base = res
            err = joint_angle_error_deg(res.motion, base.motion[c.frames])
            worst = res.motion.skeleton.names[int(np.unravel_index(np.argmax(err), err.shape)[1])]
            print(f"{c.name:<26} {'solved':<18} {np.median(err):8.2f} {err.max():7.1f}  "
                  f"{worst:<14} {named_damage(res.report)}  ({dt:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
