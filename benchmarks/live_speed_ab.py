"""The coupled loop's speed against another checkout's, on a noisy machine: both loops in one
process, stepped frame by frame in turn (which goes first alternates), so load from elsewhere
hits both alike; and whether they simulate the same poses, bit for bit.

    python benchmarks/live_speed_ab.py OLD_CHECKOUT [--repeats 3]

OLD_CHECKOUT is a clone of the repository (its ``physmocap/`` and ``scenes/``), e.g. main's
worktree. Straight walk, assist mode, 10 s (600 frames) per repeat, on ``live_database()``
(each package builds its own). Prints, per repeat and as medians over repeats: frames/s (as
``LiveResult.report``: frames over the summed controller + physics time), latency median and
p99, controller and physics ms (medians).
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
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


def _maker(pkg: str):
    """A function making a fresh ``LivePlayback`` of ``pkg`` on the straight walk."""
    def m(name):
        return importlib.import_module(f"{pkg}.{name}")
    read_bvh = m("io.bvh").read_bvh
    folder = data_dir() / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("*walk*_00[1-6].bvh")) + sorted(folder.glob("*run*_00[1-2].bvh"))
    db = m("matching.database").build_database([read_bvh(f) for f in files],
                                               names=[f.stem for f in files], fps=60)
    feats = m("matching.features").compute_features(db)

    def make():
        src = m("matching.trajectory").load_input(
            m("scene")._resolve("straight_walk", "inputs", "input"))
        return m("playback.live").LivePlayback(m("matching.controller").Controller(db, feats, src))
    return make


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path, help="the other checkout")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        makers = {"old": _maker(_old_package(args.old, Path(tmp))), "new": _maker("physmocap")}
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


def _line(v) -> str:
    return "%.0f frames/s, latency %.2f ms median, %.2f p99; controller %.2f, physics %.2f ms" \
        % tuple(v)


if __name__ == "__main__":
    main()
