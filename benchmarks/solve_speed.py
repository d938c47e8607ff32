"""Frames per second of the physical solve and of the kinematic reference on CMU 01_01
(22.9 s at 120 Hz), single process, median of N runs. The subject is calibrated once, outside
the timing; both solvers then solve every frame of the take.

    python benchmarks/solve_speed.py [--repeats 3] [--capture cmu/01_01] [--drop 0.01]

The row "as the pipeline (foot plants)" solves as ``physmocap solve`` does: planted heels and
toes pinned by stiff springs, which nearly doubled the sub-steps a frame while every frame
started from its kinematic pose alone (the row below it: ``PhysicalSettings(carry=0)``, as
before).

``--drop P`` removes that fraction of the marker samples at random (seed 0) after calibration:
short gaps scattered over the take, as in a raw capture. The row "each frame from the one
before" is the pipeline's kinematic solve with every frame started from the one before
(``chunk=1``), which is how frames missing a marker were solved before ``_schedule`` solved
them in rounds. The row "not settled" leaves every frame in the minimum its start led it to
(``settle=False``); the line under the table says what settling moved.
"""
from __future__ import annotations

import argparse

import numpy as np

from _common import capture_to_solve, median_time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--capture", default="cmu/01_01")
    ap.add_argument("--drop", type=float, default=0.0, help="fraction of samples removed")
    args = ap.parse_args()

    from physmocap import quat
    from physmocap.calibrate import calibrate
    from physmocap.solver.kinematic import solve_kinematic
    from physmocap.solver.physical import PhysicalSettings, solve_physical
    from physmocap.solver.pipeline import TRACKING, _foot_rows, foot_plants, joint_spec_from_body

    t, body, ms0, pos, prior = capture_to_solve(args.capture)
    subj = calibrate(pos, t.fps, body.skeleton, ms0, kinematic_options=prior)
    sk, ms = subj.skeleton, subj.markerset
    F = t.n_frames
    if args.drop > 0:
        pos = pos.copy()
        pos[np.random.default_rng(0).random(pos.shape[:2]) < args.drop] = np.nan
    missing = int(np.isnan(pos).any(axis=-1).any(axis=1).sum())
    print(f"{args.capture}: {F} frames at {t.fps:g} Hz ({F / t.fps:.1f} s), {len(ms)} markers, "
          f"{len(sk)} joints, {missing} frames missing a marker; median of {args.repeats} runs")

    kin = {}
    t_kin, _ = median_time(lambda: kin.update(r=solve_kinematic(
        sk, ms, pos, fps=t.fps, max_marker_pull=0.04, **prior)), args.repeats)
    t_kin_p, _ = median_time(lambda: kin.update(p=solve_kinematic(
        sk, ms, pos, fps=t.fps, max_marker_pull=0.04, **prior, **TRACKING)), args.repeats)
    t_kin_u, _ = median_time(lambda: kin.update(u=solve_kinematic(
        sk, ms, pos, fps=t.fps, max_marker_pull=0.04, **prior, **TRACKING, settle=False)),
        args.repeats)
    t_kin_c, _ = median_time(lambda: kin.update(c=solve_kinematic(
        sk, ms, pos, fps=t.fps, max_marker_pull=0.04, **prior, **{**TRACKING, "chunk": 1})),
        args.repeats)
    jspec = joint_spec_from_body(body, sk)
    phys = {}
    t_phys, _ = median_time(lambda: phys.update(r=solve_physical(
        sk, ms, pos, t.fps, init=kin["r"].motion, spec=jspec)), args.repeats)
    # as `physmocap solve` runs it: planted heels and toes pinned by stiff springs, from the
    # pipeline's kinematic solve
    rows, _ = _foot_rows(ms.names)
    _, anchors = foot_plants(ms, pos, t.fps, kin["p"].motion, rows)
    plants = dict(init=kin["p"].motion, spec=jspec, anchors=anchors, anchor_rows=rows)
    t_plant, _ = median_time(lambda: phys.update(a=solve_physical(sk, ms, pos, t.fps, **plants)),
                             args.repeats)
    t_alone, _ = median_time(lambda: phys.update(z=solve_physical(
        sk, ms, pos, t.fps, settings=PhysicalSettings(carry=0.0), **plants)), args.repeats)
    t_track, _ = median_time(lambda: phys.update(p=solve_physical(
        sk, ms, pos, t.fps, init=kin["r"].motion[:1], spec=jspec)), 1)
    rms = lambda r: 1000 * float(np.sqrt(np.nanmean(r ** 2)))  # noqa: E731
    rows = [("kinematic (LM, batched)", t_kin, rms(kin["r"].residual)),
            ("kinematic, as the pipeline (TRACKING)", t_kin_p, rms(kin["p"].residual)),
            ("  not settled (settle=False)", t_kin_u, rms(kin["u"].residual)),
            ("  each frame from the one before", t_kin_c, rms(kin["c"].residual)),
            ("physical, kinematic start each frame", t_phys, rms(phys["r"].residual)),
            ("physical, as the pipeline (foot plants)", t_plant, rms(phys["a"].residual)),
            ("  from its kinematic pose alone", t_alone, rms(phys["z"].residual)),
            ("physical, pure tracking (1 run)", t_track, rms(phys["p"].residual))]
    print(f"{'solver':<40}{'seconds':>9}{'frames/s':>10}{'x real time':>13}{'RMS mm':>9}")
    for name, sec, r in rows:
        print(f"{name:<40}{sec:9.2f}{F / sec:10.0f}{F / sec / t.fps:13.1f}{r:9.2f}")
    gain = 1000 * (kin["u"].rms - kin["p"].rms)
    moved = np.degrees(quat.angle(kin["u"].motion.lrot, kin["p"].motion.lrot)).max(axis=1)
    print(f"settled against not: {np.sum(moved > 1.0)} frames moved more than 1 deg (a joint up "
          f"to {moved.max():.0f} deg), RMS lower by over 0.3 mm in {np.sum(gain > 0.3)} frames "
          f"(up to {np.nanmax(gain):.2f} mm), higher by over 0.3 mm in {np.sum(gain < -0.3)}")
    print("reference (from the issue, same machine class): OpenSim 4.6 IK ~17 frames/s at "
          "13-14 mm RMS")


if __name__ == "__main__":
    main()
