"""Does the subject, and the take's kinematic solve, hang on how the calibration is started?
Calibrates one capture with its settings nudged (the first pose solve's iteration cap, the
number of calibration frames, the stride of the first poses), solves the whole take with each
subject as the pipeline does, and prints, per subject: calibration seconds and RMS, the take's
marker RMS over all samples, frames with a marker over 40 mm, and which markers are (those
over 40 mm in more than 10 frames, with their frame counts). Two columns, in the same run: the kinematic solve as shipped (a frame seeing every
marker starts at most ``CHUNK_SECONDS`` back) and as before (32 frames back, whatever the
frame rate, in the calibration's first poses too).

    python benchmarks/calibration_robustness.py [--capture cmu/01_01]

The row "first poses 40 iterations", column "before", is the code before both changes (but for
settling and the clavicles' twist hold, which came later and run in both columns).
CMU 01_01 has one known fault, the head marker RFHD knocked off for ~90 frames: those frames
are over 40 mm whatever the subject.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from _common import capture_to_solve

#: (label, first pose iteration cap, calibration frames, max_pose_frames)
NUDGES = [("as shipped", None, 60, 1500)] + \
    [(f"first poses {n} iterations", n, 60, 1500) for n in (15, 20, 30, 40)] + \
    [(f"{n} calibration frames", None, n, 1500) for n in (50, 80)] + \
    [(f"first poses <= {n} frames", None, 60, n) for n in (300, 500, 750)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capture", default="cmu/01_01")
    args = ap.parse_args()

    import physmocap.calibrate as cal
    import physmocap.solver.kinematic as kin
    from physmocap.solver.pipeline import TRACKING

    t, body, ms0, pos, prior = capture_to_solve(args.capture)
    shipped = kin.solve_kinematic
    first_cap = cal.FIRST_POSE_ITERATIONS

    def before(*a, **k):
        """The solve as before CHUNK_SECONDS: 32 frames back at any frame rate."""
        k.setdefault("chunk", 32)
        return shipped(*a, **k)

    print(f"{args.capture}: {t.n_frames} frames at {t.fps:g} Hz, {len(ms0)} markers; "
          f"first pose cap as shipped {first_cap}; columns: calibration s / its RMS mm | take's "
          f"RMS mm (all samples) / frames over 40 mm / markers over it (frames)")
    print(f"{'subject':28s} {'as shipped (' + format(kin.CHUNK_SECONDS, 'g') + ' s back)':46s} "
          f"before (32 frames back)")
    for label, cap, n_frames, max_pose in NUDGES:
        cells = []
        for solve in (shipped, before):
            kin.solve_kinematic = solve          # calibrate() imports it from the module
            cal.FIRST_POSE_ITERATIONS = first_cap if cap is None else cap
            try:
                t0 = time.perf_counter()
                subj = cal.calibrate(pos, t.fps, body.skeleton, ms0, n_frames=n_frames,
                                     max_pose_frames=max_pose, kinematic_options=prior)
                t_cal = time.perf_counter() - t0
                res = solve(subj.skeleton, subj.markerset, pos, fps=t.fps, max_marker_pull=0.04,
                            **prior, **TRACKING)
            finally:
                kin.solve_kinematic, cal.FIRST_POSE_ITERATIONS = shipped, first_cap
            far = np.nan_to_num(res.residual) > 0.04                      # (F, M)
            n = far.sum(axis=0)
            who = " ".join(f"{ms0.names[m]} {n[m]}" for m in np.argsort(-n) if n[m] > 10)
            cells.append(f"{t_cal:5.1f} / {subj.rms_m * 1000:4.2f} | "
                         f"{1000 * np.sqrt(np.nanmean(res.residual ** 2)):5.2f} / "
                         f"{int(far.any(axis=1).sum()):4d} / {who or '-'}")
        print(f"{label:28s} {cells[0]:46s} {cells[1]}", flush=True)


if __name__ == "__main__":
    main()
