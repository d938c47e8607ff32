"""Synthetic truth under heavy dropout: how much the joint-angle error grows outside a gap.

    python benchmarks/dropout.py [--seeds 2 3 4 5] [--per-segment 3 4]

CMU 16_57 (every 2nd frame, 60 Hz) with markers placed on the known skeleton (``per_segment``
per segment, 2 mm noise); then 30 % of the samples dropped at random and the left forearm's
markers gone for 1 s (frames 40-100). Printed: the mean joint-angle error (observable joints,
outside the gap and the 10 frames after it) of the clean and the damaged solve, and its growth
(issue target: at most 1 degree), for the three ways a frame's physical relaxation can start:

* ``pipeline``: the kinematic solve of that frame (``solve_capture``'s default,
  ``warm='kinematic'``, with the pipeline's ``TRACKING`` options: frame after frame, a segment
  seen by too few markers held toward the frame before); the physical equilibrium then equals
  the kinematic optimum;
* ``previous+v``: the previous equilibrium moved on at constant velocity (``warm='previous'``,
  ``PhysicalSettings.predict``; what ``tests/test_solver_physical.py`` checks);
* ``previous``: the previous equilibrium as it is (``predict=False``).
"""
from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from _common import data_dir
from test_solver_physical import observable

from physmocap import quat
from physmocap.io.bvh import read_bvh
from physmocap.solver.kinematic import solve_kinematic
from physmocap.solver.physical import PhysicalSettings, solve_physical
from physmocap.solver.pipeline import TRACKING
from physmocap.solver.synthetic import place_markers, synthesize

GAP = (40, 100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--per-segment", type=int, nargs="+", default=[3, 4])
    args = ap.parse_args()
    truth = read_bvh(data_dir() / "bvh/cmu/16_57.bvh")[1::2]
    outside = np.r_[0:GAP[0], GAP[1] + 10:truth.n_frames]
    print(f"{'markers/segment':>15} {'seed':>4} {'start':>11} {'clean deg':>9} {'damaged':>8} "
          f"{'growth':>7} {'substeps':>8}")
    for per in args.per_segment:
        markers = place_markers(truth, per_segment=per, rng=np.random.default_rng(0))
        obs = observable(truth.skeleton, markers)
        forearm = [n for n, b in zip(markers.names, markers.body)
                   if truth.skeleton.names[b] == "LeftForeArm"]
        clean = synthesize(truth, markers, noise_m=0.002, rng=np.random.default_rng(1))
        for seed in args.seeds:
            damaged = synthesize(truth, markers, noise_m=0.002, drop=0.3,
                                 rng=np.random.default_rng(seed), gaps=[(forearm, *GAP)])
            for start in ("pipeline", "previous+v", "previous"):
                err, steps = [], []
                for pos in (clean, damaged):
                    if start == "pipeline":
                        init = solve_kinematic(truth.skeleton, markers, pos, fps=truth.fps,
                                               max_marker_pull=0.04, **TRACKING).motion
                        s = PhysicalSettings()
                    else:
                        init = truth[:1]
                        s = dataclasses.replace(PhysicalSettings(),
                                                predict=start == "previous+v")
                    r = solve_physical(truth.skeleton, markers, pos, truth.fps, init=init,
                                       settings=s)
                    e = quat.angle(r.motion.lrot[outside][:, obs], truth.lrot[outside][:, obs])
                    err.append(np.degrees(e).mean())
                    steps.append(np.median(r.substeps))
                print(f"{per:>15} {seed:>4} {start:>11} {err[0]:>9.2f} {err[1]:>8.2f} "
                      f"{err[1] - err[0]:>+7.2f} {steps[1]:>8.0f}")


if __name__ == "__main__":
    main()
