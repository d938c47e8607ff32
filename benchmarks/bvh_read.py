"""Read all 145 Bandai-Namco clips with physmocap and with bvhio (pure-Python BVH reader, PyPI),
in one run, and print throughputs (median of N passes) and the ratio.

    python benchmarks/bvh_read.py [--repeats 3]

physmocap's figure includes everything ``read_bvh`` does: parse, Euler -> quaternions, re-rooting,
unit and axis conversion, and a validated ``Motion``. bvhio is timed twice: ``readAsBvh`` (parse to
its raw per-joint keyframes) and ``readAsHierarchy`` (its full joint objects with a pose per frame).
"""
from __future__ import annotations

import argparse

from _common import data_dir, median_time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-hierarchy", action="store_true", help="skip bvhio.readAsHierarchy")
    args = ap.parse_args()

    import bvhio

    from physmocap.io.bvh import read_bvh

    files = sorted((data_dir() / "bvh/bandai-namco/ds2_normal_locomotion").glob("*.bvh"))
    frames = sum(read_bvh(f).n_frames for f in files)
    mb = sum(f.stat().st_size for f in files) / 1e6
    print(f"{len(files)} clips, {frames} frames, {mb:.1f} MB; median of {args.repeats} passes")

    rows = []
    t_ours, _ = median_time(lambda: [read_bvh(f) for f in files], args.repeats)
    rows.append(("physmocap.read_bvh", t_ours))
    t_raw, _ = median_time(lambda: [bvhio.readAsBvh(str(f)) for f in files], args.repeats)
    rows.append(("bvhio.readAsBvh", t_raw))
    if not args.skip_hierarchy:
        t_h, _ = median_time(lambda: [bvhio.readAsHierarchy(str(f)) for f in files],
                             args.repeats)
        rows.append(("bvhio.readAsHierarchy", t_h))
    print(f"{'reader':<24}{'seconds':>9}{'clips/s':>10}{'frames/s':>12}{'vs physmocap':>14}")
    for name, t in rows:
        print(f"{name:<24}{t:9.3f}{len(files) / t:10.1f}{frames / t:12.0f}{t / t_ours:13.1f}x")
    print(f"ratio: physmocap is {t_raw / t_ours:.1f}x faster than bvhio.readAsBvh"
          + ("" if args.skip_hierarchy else f", {rows[2][1] / t_ours:.1f}x faster than "
             "bvhio.readAsHierarchy"))


if __name__ == "__main__":
    main()
