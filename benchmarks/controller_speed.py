"""Time of one motion-matching controller update, as the issue states it: search (every 10 frames,
amortised), inertialization, root update, and forward kinematics of the output pose.

    python benchmarks/controller_speed.py

Database: every Bandai-Namco locomotion clip in ``shared/data`` (43 k frames at 60 fps). Per input
scene, 10 s of play after a 1 s warm-up; median of 3 runs of ms per frame, for the controller alone
and with the output pose's FK (``forward_kinematics_frame``), beside the batched FK called on one
frame (the peer that per-frame code would otherwise use).
"""
from __future__ import annotations

import time

import numpy as np

from _common import data_dir

from physmocap import quat
from physmocap.io.bvh import read_bvh
from physmocap.matching.controller import Controller, output_skeleton
from physmocap.matching.database import build_database
from physmocap.matching.features import compute_features
from physmocap.matching.trajectory import load_input
from physmocap.scene import _resolve
from physmocap.skeleton import forward_kinematics, forward_kinematics_frame


def run(db, feats, src, fk) -> float:
    """ms per frame over 600 frames after a 60-frame warm-up."""
    sk = output_skeleton(db)
    c = Controller(db, feats, src)
    for _ in range(60):
        c.step()
    t0 = time.perf_counter()
    for _ in range(600):
        rp, rr, lp, lr = c.step()
        if fk is not None:
            lrot = np.array(lr)
            lrot[0] = quat.mul(rr, lr[0])
            fk(sk, lrot, rp + quat.rotate(rr, lp[0]))
    return (time.perf_counter() - t0) / 600 * 1e3


def main() -> None:
    files = sorted((data_dir() / "bvh/bandai-namco/ds2_normal_locomotion").glob("*.bvh"))
    db = build_database([read_bvh(f) for f in files], fps=60)
    feats = compute_features(db)
    batched = lambda sk, l, r: forward_kinematics(sk, l[None], r[None])  # noqa: E731
    print(f"database {db.n_frames} frames; ms per frame, median of 3 runs of 10 s")
    print(f"{'input':14s} {'controller':>10s} {'+ FK (frame)':>12s} {'+ FK (batched F=1)':>18s}")
    for name in ("straight_walk", "stop_and_go", "figure_eight", "sharp_turns", "run",
                 "head_circle"):
        src = load_input(_resolve(name, "inputs", "input"))
        cols = [np.median([run(db, feats, src, fk) for _ in range(3)])
                for fk in (None, forward_kinematics_frame, batched)]
        print(f"{name:14s} {cols[0]:10.3f} {cols[1]:12.3f} {cols[2]:18.3f}")


if __name__ == "__main__":
    main()
