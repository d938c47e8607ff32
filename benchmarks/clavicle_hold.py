"""The clavicles' twist hold (``CLAVICLE_TWIST_WEIGHT``) against a known truth: CMU BVH clips
retargeted onto the humanoid body (their clavicles move as CMU's skeleton moved them), the CMU
41-marker set placed on them with 2 mm noise, solved by the pipeline (calibration included) with
the hold and without it. Prints, per clip and setting: the truth's clavicle twist about its bone,
the mean joint-position error (all joints, the arms'; the arms' in the kinematic stage too),
median angle errors of the clavicles' and upper arms' local rotations and the upper arms' global
ones, the marker RMS and the joints at the template's limits.

    python benchmarks/clavicle_hold.py [--clips cmu/16_57 cmu/131_01] [--frames 1200]

The real captures' side (the PiG walk's clavicle frames against Plug-in Gait's) is in
``solve_real.py``.
"""
from __future__ import annotations

import argparse

import numpy as np

from _common import data_dir

ARMS = ("LeftUpperArm", "RightUpperArm", "LeftLowerArm", "RightLowerArm", "LeftHand",
        "RightHand")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", nargs="+",
                    default=["cmu/16_57", "cmu/131_01", "cmu/131_02", "cmu/131_03"])
    ap.add_argument("--frames", type=int, default=1200, help="at most this many frames a clip")
    args = ap.parse_args()

    from physmocap import quat
    from physmocap.io.bvh import read_bvh
    from physmocap.markers import MarkerTrajectories
    from physmocap.matching.retarget import retarget
    from physmocap.scene import load_body, load_markerset
    from physmocap.solver import pipeline
    from physmocap.solver.physical import _swing_twist, landmarks

    body = load_body()
    spec = pipeline.joint_spec_from_body(body)
    ms = load_markerset("cmu41").bind(body.skeleton)
    shipped = pipeline.CLAVICLE_TWIST_WEIGHT
    for clip in args.clips:
        src = read_bvh(data_dir() / f"bvh/{clip}.bvh")
        src = src[1:] if "16_57" in clip else src          # 16_57's frame 0 is a T-pose
        truth = retarget(src[:min(src.n_frames, args.frames)], body.skeleton)
        rng = np.random.default_rng(0)
        pos = landmarks(truth.gpos, truth.grot, ms)
        pos = pos + rng.normal(scale=0.002, size=pos.shape)
        cap = MarkerTrajectories(tuple(ms.names), truth.fps, pos, subject="synthetic",
                                 meta={"path": clip}, residual=np.full(pos.shape[:2], 0.002))
        F = truth.n_frames
        # the twist part of the swing-twist split the limits use (limits unused here)
        tw = [np.abs(np.degrees(_swing_twist(quat.abs_w(truth.lrot[:, body.index(n)]),
                                             np.tile(spec.twist_axis[body.index(n)], (F, 1)),
                                             np.zeros((F, 2)))[0]))
              for n in ("LeftShoulder", "RightShoulder")]
        print(f"{clip}: {truth.n_frames} frames at {truth.fps:g} Hz; the truth's clavicle twist "
              f"L / R median {np.median(tw[0]):.1f} / {np.median(tw[1]):.1f}°, p95 "
              f"{np.percentile(tw[0], 95):.1f} / {np.percentile(tw[1], 95):.1f}° (the template's "
              f"limit {np.degrees(body.limits[body.index('LeftShoulder')][1]):.0f}°)")
        arms = [body.index(n) for n in ARMS]
        for w in (0.0, shipped):
            pipeline.CLAVICLE_TWIST_WEIGHT = w
            try:
                res = pipeline.solve_capture(cap, load_markerset("cmu41"), body)
            finally:
                pipeline.CLAVICLE_TWIST_WEIGHT = shipped
            idx = [res.motion.skeleton.index(n) for n in body.names]

            def pos_err(m):
                return np.linalg.norm(m.gpos[:, idx] - truth.gpos, axis=-1) * 1000.0

            def ang(n, glob=False):
                a = res.motion.grot if glob else res.motion.lrot
                b = truth.grot if glob else truth.lrot
                return np.median(np.degrees(quat.angle(a[:, res.motion.skeleton.index(n)],
                                                       b[:, body.index(n)])))

            e, ek = pos_err(res.motion), pos_err(res.kinematic)
            hits = ", ".join(f"{k} {v}" for k, v in res.report["joint_limit_hits"].items()
                             if "Shoulder" in k or "Arm" in k)
            print(f"  {'held' if w else 'free'} ({w:g}): joints {e.mean():.1f} mm, arms "
                  f"{e[:, arms].mean():.1f} (kinematic {ek[:, arms].mean():.1f}); clavicle L / R "
                  f"{ang('LeftShoulder'):.1f} / {ang('RightShoulder'):.1f}°, upper arm "
                  f"{ang('LeftUpperArm'):.1f} / {ang('RightUpperArm'):.1f}°, upper arm global "
                  f"{ang('LeftUpperArm', True):.1f} / {ang('RightUpperArm', True):.1f}°; marker RMS "
                  f"{res.report['marker_rms_mm']:.2f} mm; at limits: {hits or 'none'}",
                  flush=True)


if __name__ == "__main__":
    main()
