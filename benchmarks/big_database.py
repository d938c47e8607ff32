"""Motion-matching databases of a million frames: build, save, load and feature memory and time.

The 145 Bandai-Namco clips (12.1 min, 43 560 frames at 60 fps) are tiled (the same clips listed
again under new names) until the database holds ``--frames`` frames. Each stage runs in its own
child process, so ``ru_maxrss`` is that stage's peak:

* build: read the clips, ``build_database`` (tiled), ``save_database``;
* load: ``load_database`` alone (what ``physmocap mm run`` does first);
* load + features: ``load_database`` then ``compute_features`` (the search's matrix).

The budget checked is stated per stage as bytes per frame of the database arrays it must hold
(``PoseDatabase`` arrays: lpos, lrot, lvel, lang, contacts) plus a fixed 400 MB for the
interpreter and libraries.

    python benchmarks/big_database.py [--frames 1000000]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import data_dir, peak_mb

FIXED_MB = 400.0          # interpreter, numpy, scipy (measured: ~100 MB; generous)
BUDGET_X = {"build": 1.5, "load": 1.2, "features": 2.0}   # x the database arrays


def child(stage: str, frames: int, path: str) -> None:
    from physmocap.matching.database import build_database, load_database, save_database

    t0 = time.perf_counter()
    out: dict = {"stage": stage}
    if stage == "build":
        from physmocap.io.bvh import read_bvh
        files = sorted((data_dir() / "bvh/bandai-namco/ds2_normal_locomotion").glob("*.bvh"))
        clips = [read_bvh(f) for f in files]
        per_copy = sum(int(round(m.duration * 60)) + 1 for m in clips)
        reps = -(-frames // per_copy)
        motions = clips * reps
        names = [f"{f.stem}#{r}" for r in range(reps) for f in files]
        db = build_database(motions, names=names, fps=60.0)
        save_database(db, path)
        out["file_mb"] = Path(path).stat().st_size / 2**20
    else:
        db = load_database(path)
        if stage == "features":
            from physmocap.matching.features import compute_features
            feats = compute_features(db)
            out["features_mb"] = feats.X.nbytes / 2**20
    out["seconds"] = time.perf_counter() - t0
    out["frames"] = db.n_frames
    out["arrays_mb"] = sum(getattr(db, k).nbytes for k in
                           ("lpos", "lrot", "lvel", "lang", "contacts")) / 2**20
    out["peak_mb"] = peak_mb()
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2])
        return
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "big.npz")
        print(f"{'stage':<9} {'frames':>9} {'seconds':>8} {'peak MB':>8} {'arrays MB':>9} "
              f"{'budget MB':>9}")
        for stage in ("build", "load", "features"):
            r = subprocess.run([sys.executable, __file__, "--child", stage, str(args.frames),
                                path], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{stage:<9} failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
                ok = False
                break
            d = json.loads(r.stdout.strip().splitlines()[-1])
            budget = FIXED_MB + BUDGET_X[stage] * d["arrays_mb"]
            ok &= d["peak_mb"] <= budget
            extra = "".join(f", {k} {d[k]:.0f} MB" for k in ("file_mb", "features_mb") if k in d)
            print(f"{stage:<9} {d['frames']:9d} {d['seconds']:8.1f} {d['peak_mb']:8.0f} "
                  f"{d['arrays_mb']:9.0f} {budget:9.0f}"
                  f"{'' if d['peak_mb'] <= budget else '  OVER BUDGET'}{extra}", flush=True)
    print("within budget" if ok else "NOT within budget")


if __name__ == "__main__":
    main()
