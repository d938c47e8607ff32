"""Writing a C3D: physmocap's own writer (``write_c3d``) beside ezc3d's, on the same take.

The take is CMU 01_01 tiled to ``--minutes`` (``long_take.tiled_capture``, 41 markers at 120
Hz). Each write runs in its own child process, so its peak RSS (``ru_maxrss``) is that write's
alone, beside the same child building the take and stopping there (``build only``). ezc3d is
driven as ``write_c3d`` drove it until 2026-12 (points, residuals and camera masks as whole-take
arrays). Prints the median of ``--repeats`` runs per writer, seconds and MB.

    python benchmarks/c3d_write.py --minutes 3 --repeats 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _ezc3d_write(m, path: Path) -> None:
    """The take written by ezc3d as ``write_c3d`` did before it wrote C3D itself."""
    import ezc3d
    import numpy as np
    F, M = m.pos.shape[:2]
    pts = np.ones((4, M, F))
    pts[:3] = np.transpose(m.pos, (2, 1, 0)) * 1000.0
    missing = np.isnan(pts[:3]).any(axis=0)
    pts[:3, missing] = np.nan
    res = np.zeros((1, M, F))
    res[0, missing] = -1.0
    c = ezc3d.c3d()
    point = c["parameters"]["POINT"]
    point["RATE"]["value"] = [float(m.fps)]
    point["LABELS"]["value"] = tuple(m.labels)
    point["UNITS"]["value"] = ["mm"]
    c["data"]["points"] = pts
    c["data"]["meta_points"] = {"residuals": res,
                                "camera_masks": np.zeros((7, M, F), dtype=bool)}
    c.write(str(path))


def child(writer: str, minutes: float, path: str) -> None:
    from _common import peak_mb
    from long_take import tiled_capture
    from physmocap.io.c3d import write_c3d
    m = tiled_capture(minutes)
    t0 = time.perf_counter()
    if writer == "physmocap":
        write_c3d(m, path)
    elif writer == "ezc3d":
        _ezc3d_write(m, Path(path))
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "peak_mb": peak_mb(),
                      "bytes": os.path.getsize(path) if writer != "build only" else 0}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], float(args.child[1]), args.child[2])
        return
    print(f"C3D of CMU 01_01 tiled to {args.minutes:g} min, median of {args.repeats} runs")
    print(f"{'writer':>12} {'seconds':>8} {'peak MB':>8} {'file MB':>8}")
    with tempfile.TemporaryDirectory(prefix="physmocap-c3d-") as tmp:
        for writer in ("build only", "physmocap", "ezc3d"):
            runs = []
            for _ in range(args.repeats):
                out = subprocess.run([sys.executable, __file__, "--child", writer,
                                      str(args.minutes), str(Path(tmp) / "w.c3d")],
                                     check=True, capture_output=True, text=True).stdout
                runs.append(json.loads(out.strip().splitlines()[-1]))
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(f"{writer:>12} {med['seconds']:8.2f} {med['peak_mb']:8.0f} "
                  f"{med['bytes'] / 2**20:8.1f}", flush=True)


if __name__ == "__main__":
    main()
