"""Long takes: peak memory and speed of the whole solve (``solve_capture``) against take length.

A long capture is made by tiling CMU 01_01 (22.9 s at 120 Hz, jumps and turns) end to end, each
tile shifted so the subject carries on from where the last one ended (no teleport). Every length
runs in its own child process, so ``ru_maxrss`` is that solve's peak. The script prints, per
length: frames, solve frames/s, peak RSS, RSS before the solve (input built), and the bytes of
the unavoidable per-frame arrays (input markers, output motion) so growth can be judged.

    python benchmarks/long_take.py --minutes 1 2 5 [--extrapolate 60]
    python benchmarks/long_take.py --cli --minutes 1 10 60     # through a C3D file and the CLI
    python benchmarks/long_take.py --cli --c3d-out --minutes 3   # ... writing the cleaned C3D too
    python benchmarks/long_take.py --cli --report-html --minutes 3   # ... and the HTML report
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import data_dir, peak_mb


def tiled_capture(minutes: float):
    """``MarkerTrajectories`` of ``minutes`` made from CMU 01_01 tiles (m, Z up)."""
    from physmocap.io.c3d import read_c3d
    from physmocap.markers import MarkerTrajectories

    t = read_c3d(data_dir() / "c3d/cmu/01_01.c3d")
    t = t.select([l for l in t.labels if l != "RBAC-1"])
    n = int(round(minutes * 60 * t.fps))
    reps = -(-n // t.n_frames)
    # Each tile continues horizontally from where the last one ended.
    centre = np.nanmean(t.pos, axis=1)                               # (F, 3)
    ok = np.flatnonzero(~np.isnan(centre[:, 0]))
    step = centre[ok[-1]] - centre[ok[0]]
    step[2] = 0.0
    pos = np.empty((reps * t.n_frames, len(t.labels), 3))
    for r in range(reps):
        pos[r * t.n_frames:(r + 1) * t.n_frames] = t.pos + r * step
    return MarkerTrajectories(t.labels, t.fps, pos[:n], subject=t.subject,
                              meta={"path": f"01_01 tiled to {minutes:g} min"})


def child(minutes: float) -> None:
    from physmocap.scene import load_body, pick_markerset
    from physmocap.solver.pipeline import solve_capture

    cap = tiled_capture(minutes)
    body = load_body()
    spec = pick_markerset(cap.labels)
    rss_before = peak_mb()
    t0 = time.perf_counter()
    res = solve_capture(cap, spec, body)
    dt = time.perf_counter() - t0
    peak = peak_mb()
    F = cap.n_frames
    # every array the result holds, each counted once (res.pos may be the input itself)
    arrays = [res.motion.lrot, res.motion.root_pos, res.kinematic.lrot, res.kinematic.root_pos,
              res.pos, res.solved_markers, res.residual, res.outliers, res.plants, res.limit_hit]
    seen, result = [cap.pos], 0
    for a in arrays:
        if not any(np.shares_memory(a, b) for b in seen):
            result += a.nbytes
            seen.append(a)
    print(json.dumps({"minutes": minutes, "frames": F, "seconds": dt, "fps": F / dt,
                      "peak_mb": peak, "before_mb": rss_before,
                      "input_mb": cap.pos.nbytes / 2**20, "result_mb": result / 2**20,
                      "marker_rms_mm": res.report["marker_rms_mm"],
                      "substeps": res.report["substeps_median"],
                      "timings": res.report["seconds"]}))


_NAMES = {"c3d-out": "clean.c3d", "report-html": "report.html"}


def via_cli(minutes: float, workdir: Path, extra: tuple[str, ...] = ()) -> dict:
    """The user's path: the tiled take written as a C3D, then ``physmocap solve`` on it (read,
    solve, BVH and JSON report written; ``extra`` of ``c3d-out``, ``report-html``: the cleaned
    C3D, the HTML report too) in its own process; its peak RSS from ``wait4``."""
    c3d = workdir / f"take_{minutes:g}min.c3d"
    # The C3D is written by another process: Linux counts a child's RSS before its exec (this
    # process's, after writing gigabytes) into the child's ru_maxrss, so this one stays small.
    subprocess.run([sys.executable, __file__, "--write-c3d", str(minutes), str(c3d)], check=True)
    frames, in_mb = json.loads(c3d.with_suffix(".json").read_text()).values()
    bvh, rep = workdir / "out.bvh", workdir / "out.json"
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "physmocap", "solve", str(c3d), "-o", str(bvh),
                             "--report", str(rep)]
                            + [a for e in extra for a in (f"--{e}", str(workdir / _NAMES[e]))],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"physmocap solve failed on the {minutes:g}-minute take:\n{out[-2000:]}")
    r = json.loads(rep.read_text())
    return {"minutes": minutes, "frames": frames, "read_frames": r["frames"], "seconds": dt,
            "fps": frames / dt, "peak_mb": usage.ru_maxrss / 1024, "input_mb": in_mb,
            "c3d_mb": c3d.stat().st_size / 2**20, "bvh_mb": bvh.stat().st_size / 2**20,
            "marker_rms_mm": r["marker_rms_mm"], "substeps": r["substeps_median"],
            "timings": r["seconds"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, nargs="+", default=[1, 2, 5])
    ap.add_argument("--extrapolate", type=float, default=60.0)
    ap.add_argument("--cli", action="store_true",
                    help="write each take as a C3D and run `physmocap solve` on it instead")
    ap.add_argument("--c3d-out", action="store_true",
                    help="with --cli: the solve writes the cleaned C3D too")
    ap.add_argument("--report-html", action="store_true",
                    help="with --cli: the solve writes its HTML report too")
    ap.add_argument("--child", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--write-c3d", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child)
        return
    if args.write_c3d:
        from physmocap.io.c3d import write_c3d
        cap = tiled_capture(float(args.write_c3d[0]))
        path = Path(args.write_c3d[1])
        write_c3d(cap, path)
        path.with_suffix(".json").write_text(json.dumps(
            {"frames": cap.n_frames, "input_mb": cap.pos.nbytes / 2**20}))
        return
    if args.cli:
        print(f"{'minutes':>7} {'frames':>8} {'read':>8} {'frames/s':>9} {'peak MB':>8} "
              f"{'input MB':>8} {'C3D MB':>7} {'BVH MB':>7} {'RMS mm':>6}  stage seconds")
        with tempfile.TemporaryDirectory(prefix="physmocap-long-") as tmp:
            for m in args.minutes:
                r = via_cli(m, Path(tmp), tuple(e for e, on in (("c3d-out", args.c3d_out), (
                    "report-html", args.report_html)) if on))
                print(f"{m:7g} {r['frames']:8d} {r['read_frames']:8d} {r['fps']:9.0f} "
                      f"{r['peak_mb']:8.0f} {r['input_mb']:8.1f} {r['c3d_mb']:7.1f} "
                      f"{r['bvh_mb']:7.1f} {r['marker_rms_mm']:6.2f}  "
                      f"{r['substeps']:g} sub-steps  "
                      + " ".join(f"{k} {v:.0f}" for k, v in r["timings"].items()), flush=True)
        return
    rows = []
    print(f"{'minutes':>7} {'frames':>8} {'frames/s':>9} {'peak MB':>8} {'before':>7} "
          f"{'input MB':>8} {'result MB':>9} {'excess MB':>9}  stage seconds")
    for m in args.minutes:
        out = subprocess.run([sys.executable, __file__, "--child", str(m)], capture_output=True,
                             text=True)
        if out.returncode != 0:
            print(f"{m:7g} failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(r)
        # excess: peak beyond the input (held before the solve) and the result's arrays
        r["excess_mb"] = r["peak_mb"] - r["before_mb"] - r["result_mb"]
        print(f"{m:7g} {r['frames']:8d} {r['fps']:9.0f} {r['peak_mb']:8.0f} {r['before_mb']:7.0f} "
              f"{r['input_mb']:8.1f} {r['result_mb']:9.1f} {r['excess_mb']:9.1f}  "
              f"RMS {r.get('marker_rms_mm', float('nan')):.2f} mm, {r.get('substeps', 0):g} "
              f"sub-steps  "
              + " ".join(f"{k} {v:.0f}" for k, v in r["timings"].items()), flush=True)
    if len(rows) >= 2:
        f = np.array([r["frames"] for r in rows], float)
        peak = np.array([r["peak_mb"] for r in rows])
        slope, icpt = np.polyfit(f, peak, 1)
        ex_slope = np.polyfit(f, [r["excess_mb"] for r in rows], 1)[0]
        res_pf = (rows[-1]["result_mb"] + rows[-1]["input_mb"]) / rows[-1]["frames"]
        F = args.extrapolate * 60 * 120
        fps = np.median([r["fps"] for r in rows])
        print(f"peak RSS grows {slope * 2**20:.0f} bytes/frame, of which the input and the "
              f"returned arrays hold {res_pf * 2**20:.0f}; the rest grows "
              f"{ex_slope * 2**20:.0f} bytes/frame. A {args.extrapolate:g}-minute take "
              f"({F:.0f} frames at 120 Hz) extrapolates to {icpt + slope * F:.0f} MB peak and "
              f"{F / fps / 60:.0f} min of solving at the median {fps:.0f} frames/s")


if __name__ == "__main__":
    main()
