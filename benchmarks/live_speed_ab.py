"""The coupled loop's speed against another checkout's, on a noisy machine: both loops in one
process, stepped frame by frame in turn (which goes first alternates), so load from elsewhere
hits both alike; and whether they simulate the same poses, bit for bit.

    python benchmarks/live_speed_ab.py OLD_CHECKOUT [--repeats 3] [--physical]
    python benchmarks/live_speed_ab.py OLD_CHECKOUT --predict SECONDS [--repeats 3] [--workers N]

OLD_CHECKOUT is a clone of the repository (its ``physmocap/`` and ``scenes/``), e.g. main's
worktree. Straight walk, assist mode (``--physical``: fully physical with ``STEPPING``, whose
balance controller runs every physics step), 10 s (600 frames) per repeat, on
``live_database()`` (each package builds its own). Prints, per repeat and as medians over
repeats: frames/s (as ``LiveResult.report``: frames over the summed controller + physics
time), latency median and p99, controller and physics ms (medians).

``--predict SECONDS``: the predictive search (``playback.predictive.run_predictive``, its
defaults) on the sharp turns for SECONDS, each package in turn (which goes first alternates):
wall seconds per run, frames simulated per frame played, and whether both searched the same
plan and simulated the same poses, bit for bit. ``--workers N``: and the new package's search
with its look-aheads in N processes (``PredictSettings.workers``), checked against its own.
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import data_dir


def _old_package(checkout: Path, tmp: Path) -> str:
    """Import name of ``checkout``'s package, copied as ``physmocap_old`` (it imports itself
    relatively only) with its ``scenes/`` beside it."""
    if not (checkout / "physmocap" / "__init__.py").is_file():
        sys.exit(f"live_speed_ab: {checkout} has no physmocap/ package")
    shutil.copytree(checkout / "physmocap", tmp / "physmocap_old",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "scenes").symlink_to((checkout / "scenes").resolve())
    sys.path.insert(0, str(tmp))
    return "physmocap_old"


def _live_database(m, stand: bool = False) -> tuple:
    """``(database, features)`` of ``_common.live_database`` built by the package whose
    modules ``m(name)`` imports (``stand``: with its standing clip)."""
    read_bvh = m("io.bvh").read_bvh
    folder = data_dir() / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("*walk*_00[1-6].bvh")) + sorted(folder.glob("*run*_00[1-2].bvh"))
    motions, names = [read_bvh(f) for f in files], [f.stem for f in files]
    if stand:
        first = motions[names.index("dataset-2_walk_normal_001")]
        motions.append(m("matching.database").standing_clip(first, 0, 3.0))
        names.append("stand")
    db = m("matching.database").build_database(motions, names=names, fps=60)
    return db, m("matching.features").compute_features(db)


def _maker(pkg: str, physical: bool = False):
    """A function making a fresh ``LivePlayback`` of ``pkg`` on the straight walk (assist, or
    fully physical with ``STEPPING``)."""
    def m(name):
        return importlib.import_module(f"{pkg}.{name}")
    db, feats = _live_database(m)
    mode, kw = "assist", {}
    if physical:
        kw = dict(settings=m("playback.track").TrackingSettings(
            balance=True, balance_gains=m("playback.balance").STEPPING))
        mode = "physical"

    def make():
        src = m("matching.trajectory").load_input(
            m("scene")._resolve("straight_walk", "inputs", "input"))
        return m("playback.live").LivePlayback(m("matching.controller").Controller(db, feats, src),
                                               mode=mode, **kw)
    return make


def _predictive(pkg: str, workers: int = 1):
    """A function running ``pkg``'s predictive search on the sharp turns for ``seconds``
    (``workers`` > 1: in that many processes): ``(wall s, root positions, local rotations,
    plan)``."""
    def m(name):
        return importlib.import_module(f"{pkg}.{name}")
    db, feats = _live_database(m, stand=True)
    settings = m("playback.track").TrackingSettings(
        balance=True, balance_gains=m("playback.balance").STEPPING)
    predictive = m("playback.predictive")

    def run(seconds: float):
        src = m("matching.trajectory").load_input(
            m("scene")._resolve("sharp_turns", "inputs", "input"))
        t0 = time.perf_counter()
        kw = {} if workers == 1 else dict(predict=predictive.PredictSettings(workers=workers))
        res, plan = predictive.run_predictive(m("matching.controller").Controller(db, feats, src),
                                              seconds, settings=settings, **kw)
        motion = res.result.motion
        return time.perf_counter() - t0, motion.root_pos, motion.lrot, plan
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path, help="the other checkout")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--physical", action="store_true",
                    help="fully physical with STEPPING instead of the root assist")
    ap.add_argument("--predict", type=float, metavar="SECONDS",
                    help="time the predictive search on the sharp turns for SECONDS instead")
    ap.add_argument("--workers", type=int, default=1,
                    help="with --predict: also the new search in this many processes")
    args = ap.parse_args()
    if args.predict is not None:
        return predict_ab(args.old, args.predict, args.repeats, args.workers)
    with tempfile.TemporaryDirectory() as tmp:
        makers = {"old": _maker(_old_package(args.old, Path(tmp)), args.physical),
                  "new": _maker("physmocap", args.physical)}
        rows = {k: [] for k in makers}
        for r in range(args.repeats):
            lives = {k: make() for k, make in makers.items()}
            ms = {k: np.zeros((600, 2)) for k in lives}
            sims = {k: [] for k in lives}
            for i in range(600):
                for k in (("old", "new") if i % 2 == 0 else ("new", "old")):
                    _, (root, lrot), info = lives[k].step()
                    ms[k][i] = info["controller_ms"], info["physics_ms"]
                    sims[k].append(np.concatenate([root, lrot.ravel()]))
            for live in lives.values():
                live.close()
            for k in lives:
                tot = ms[k].sum(axis=1)
                rows[k].append((600 / (tot.sum() / 1e3), np.median(tot), np.percentile(tot, 99),
                                *np.median(ms[k], axis=0)))
                print(f"repeat {r + 1} {k}: " + _line(rows[k][-1]), flush=True)
            same = np.array_equal(np.array(sims["old"]), np.array(sims["new"]))
            print(f"  simulated poses the same bit for bit: {same}", flush=True)
        for k in rows:
            print(f"median of {args.repeats} {k}: " + _line(np.median(rows[k], axis=0)))


def predict_ab(old: Path, seconds: float, repeats: int, workers: int = 1) -> None:
    """``--predict``: both packages' predictive searches in turn, ``repeats`` times (and the
    new one's in ``workers`` processes)."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"old": _predictive(_old_package(old, Path(tmp))), "new": _predictive("physmocap")}
        if workers > 1:
            runs[f"new x{workers}"] = _predictive("physmocap", workers)
        walls = {k: [] for k in runs}
        for run in runs.values():          # warm-up: imports, PyBullet, first allocations
            run(0.1)
        for r in range(repeats):
            out = {}
            for k in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
                out[k] = runs[k](seconds)
                walls[k].append(out[k][0])
                plan = out[k][3]
                print(f"repeat {r + 1} {k}: {out[k][0]:.1f} s, "
                      f"{plan.simulated_frames / plan.played:.1f} frames simulated per frame "
                      f"played", flush=True)
            (_, r0, q0, p0), (_, r1, q1, p1) = out["old"], out["new"]
            same = (p0.switches == p1.switches and np.array_equal(r0, r1)
                    and np.array_equal(q0, q1))
            print(f"  the same plan and poses, bit for bit: {same}", flush=True)
            for k in (k for k in out if k not in ("old", "new")):
                _, r2, q2, p2 = out[k]
                same = (p2.switches == p1.switches and np.array_equal(r1, r2)
                        and np.array_equal(q1, q2))
                print(f"  {k} the same as new, bit for bit: {same}", flush=True)
        for k in walls:
            print(f"median of {repeats} {k}: {np.median(walls[k]):.1f} s for {seconds:g} s")


def _line(v) -> str:
    return "%.0f frames/s, latency %.2f ms median, %.2f p99; controller %.2f, physics %.2f ms" \
        % tuple(v)


if __name__ == "__main__":
    main()
