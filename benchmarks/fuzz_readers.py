"""Coverage-guided fuzzing (atheris / libFuzzer) of everything physmocap reads from disk: C3D,
BVH, scene files (marker sets, bodies, environments, input scenes; TOML and JSON) and pose
databases (.npz). Each target may raise ``PhysmocapError`` and nothing else: any other
exception, a crash of the process, a hang (``-timeout``) or memory beyond ``-rss_limit_mb`` is a
finding, and libFuzzer saves the input as ``crash-*`` / ``timeout-*`` / ``oom-*`` in the
working folder.

Seeds: small real files from ``../shared/data`` and the shipped scenes (copied into a temporary
corpus folder; the shared data are only read).

    pip install atheris
    python benchmarks/fuzz_readers.py bvh --seconds 240
    python benchmarks/fuzz_readers.py c3d --seconds 240
    python benchmarks/fuzz_readers.py scene --seconds 120
    python benchmarks/fuzz_readers.py npz --seconds 120

Every 5000 inputs (and at exit, when libFuzzer lets atexit run) it prints the inputs tried and
how many raised PhysmocapError; libFuzzer's own last line says "Done N runs in S second(s)".
"""
from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from _common import ROOT, data_dir

import atheris  # noqa: E402  (optional: pip install atheris)

# Instrument physmocap only (numpy, scipy and ezc3d are not ours to fuzz, and slow to hook).
import numpy  # noqa: E402,F401  (imported before the hook: not instrumented)
import scipy.spatial.transform  # noqa: E402,F401

with atheris.instrument_imports(include=["physmocap"]):
    from physmocap.errors import PhysmocapError
    from physmocap.io import bvh as _bvh
    from physmocap.io import c3d as _c3d
    from physmocap.matching import database as _db
    from physmocap.matching import trajectory as _traj
    from physmocap import scene as _scene

STATS = {"inputs": 0, "physmocap_errors": 0}
WORK = Path(tempfile.mkdtemp(prefix="physmocap-fuzz-"))


def _file(data: bytes, suffix: str) -> Path:
    p = WORK / f"input{suffix}"
    p.write_bytes(data)
    return p


def target_bvh(data: bytes) -> None:
    _bvh.loads_bvh(data.decode("utf-8", errors="replace"))


def target_c3d(data: bytes) -> None:
    _c3d.read_c3d(_file(data, ".c3d"), points="all")


def target_scene(data: bytes) -> None:
    if len(data) < 2:
        return
    # first byte: which loader; second: TOML or JSON; the rest: the file
    loader = [_scene.load_markerset, _scene.load_body, _scene.load_environment,
              _traj.load_input][data[0] % 4]
    loader(_file(data[2:], ".json" if data[1] % 2 else ".toml"))


def target_npz(data: bytes) -> None:
    _db.load_database(_file(data, ".npz"))


def seeds(target: str, folder: Path) -> None:
    d = data_dir()
    if target == "bvh":
        for f in sorted((d / "bvh/games105").glob("*.bvh"))[:2]:
            lines = f.read_text().splitlines()
            m = lines.index("MOTION")
            (folder / f.name).write_text("\n".join(lines[:m + 6]) + "\n")   # 3 frames
        (folder / "crlf.bvh").write_bytes((folder / f.name).read_bytes().replace(b"\n", b"\r\n"))
    elif target == "c3d":
        shutil.copy(d / "c3d-odd/PiG_Calibration-FlatFoot-One.c3d", folder)
        import numpy as np
        from physmocap.io.c3d import write_c3d
        from physmocap.markers import MarkerTrajectories
        pos = np.random.default_rng(0).normal(size=(4, 3, 3))
        pos[1, 2] = np.nan
        write_c3d(MarkerTrajectories(("LFHD", "C7", "LTOE"), 100.0, pos), folder / "tiny.c3d")
    elif target == "scene":
        import json
        from physmocap.scene import _read
        for k, sub in enumerate(["markersets/cmu41.toml", "bodies/humanoid.toml",
                                 "environments/bar.toml", "inputs/figure_eight.toml"]):
            # the target reads the first byte as the loader, the second as the format
            src = ROOT / "scenes" / sub
            (folder / f"seed{k}").write_bytes(bytes([k, 0]) + src.read_bytes())
            (folder / f"seed{k}j").write_bytes(bytes([k, 1]) + json.dumps(_read(src)).encode())
    elif target == "npz":
        import numpy as np
        from physmocap.io.bvh import read_bvh
        from physmocap.matching.database import build_database, save_database
        m = read_bvh(sorted((d / "bvh/games105").glob("*.bvh"))[0])
        save_database(build_database([m[:20]], names=["seed"]), folder / "db.npz")
        np.savez(folder / "plain.npz", a=np.arange(3))


TARGETS = {"bvh": target_bvh, "c3d": target_c3d, "scene": target_scene, "npz": target_npz}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target", choices=sorted(TARGETS))
    ap.add_argument("--seconds", type=int, default=120)
    ap.add_argument("--rss-mb", type=int, default=2048)
    args, rest = ap.parse_known_args()
    _c3d.CHILD_TIMEOUT = 20.0          # the lenient child parser: a hang costs 20 s, not 60
    fn = TARGETS[args.target]

    def one(data: bytes) -> None:
        STATS["inputs"] += 1
        if STATS["inputs"] % 5000 == 0:
            report()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fn(data)
            except PhysmocapError:
                STATS["physmocap_errors"] += 1

    corpus = WORK / "corpus"
    corpus.mkdir()
    seeds(args.target, corpus)

    def report() -> None:
        print(f"fuzz {args.target}: {STATS['inputs']} inputs tried, {STATS['physmocap_errors']} "
              f"raised PhysmocapError, findings (crash-*/timeout-*/oom-* files): "
              f"{len([f for f in os.listdir('.') if f.split('-')[0] in ('crash', 'timeout', 'oom')])}",
              flush=True)

    atexit.register(report)   # libFuzzer may end the process without running it: see "Done N runs"
    atheris.Setup([sys.argv[0], f"-max_total_time={args.seconds}", f"-rss_limit_mb={args.rss_mb}",
                   "-timeout=60", "-max_len=65536", str(corpus), *rest], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
