"""Motion-matching search speed: physmocap's exact SearchIndex (numba backend, and the pure-numpy
fallback) against brute-force numpy and scipy's cKDTree, in one run, per query (median of N
passes), single queries and batches.

    python benchmarks/search_speed.py [--repeats 3] [--big 1000000] [--synthetic] [--no-mirror]

Databases: (1) about 12 minutes at 60 fps (~43 000 frames): real Bandai-Namco locomotion features
(physmocap.matching build_database + compute_features) when they build, else synthetic structured
data (the script says which); (2) 100 000 frames (the issue's target size): the 145 Bandai-Namco
clips plus their mirrors (``build_database(mirror=True)``: 86 874 frames at 60 fps) resampled at
70 fps (101 370 frames; real motion, sampled more densely), unless --no-mirror or --synthetic;
(3) a synthetic structured database of ``--big`` frames.
Queries: "real-like" = random valid database rows + N(0, sigma) in normalised units (a trajectory
edit), sigma 0.1 / 0.3 / 0.5; uniform in [-2, 2]^D; and "ctrl s=0.1": the controller's call -- a
real-like query with its row as the current frame, exclude_radius=20 and best_cost = the row's own
cost (cKDTree has no exclusion or bound: its columns are the plain search of the same queries).
"kd batch" is cKDTree's default one thread, "kd batch*" all cores (``workers=-1``), as the
SearchIndex batch (numba threads); the passes of all methods are interleaved, so a load change on
a shared machine hits every column alike.
Every method is checked against the reference on the timed queries (the index must return the same
frames and bit-identical costs; the tree the same costs to 1e-4).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import data_dir
from scipy.spatial import cKDTree

from physmocap.matching.search import SearchIndex, brute_force


def synthetic(n: int, d: int = 27, seed: int = 0):
    """Per clip (5-50 s): gait-like oscillations and slow random walks mixed into D correlated
    features plus a little noise, normalised; the last 60 frames of each clip are invalid."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(300, 3000, size=n // 300 + 2)
    stops = np.minimum(np.cumsum(lens), n)
    stops = np.unique(stops[stops > 0])
    stops[-1] = n
    starts = np.r_[0, stops[:-1]]
    mix = rng.normal(size=(8, d)).astype(np.float32)
    X = np.empty((n, d), np.float32)
    for a, b in zip(starts, stops):
        t = np.arange(b - a, dtype=np.float32) / 60
        gait = np.sin(2 * np.pi * rng.uniform(0.8, 2.5) * t[:, None] + rng.uniform(0, 6, 4))
        walk = np.cumsum(rng.normal(size=(b - a, 4)).astype(np.float32) * 0.05, axis=0)
        k = np.ones(30, np.float32) / 30
        walk = np.stack([np.convolve(w, k, mode="same") for w in walk.T], 1) + rng.normal(size=4)
        X[a:b] = np.c_[gait, walk] @ mix + 0.05 * rng.normal(size=(b - a, d))
    X -= X.mean(0)
    X /= X.std(0)
    valid = np.ones(n, bool)
    for b in stops:
        valid[max(0, b - 60):b] = False
    return X, starts, stops, valid


def real_features(target_frames: int, mirror: bool = False, fps: float = 60.0):
    """Bandai-Namco normal locomotion features, about ``target_frames`` frames at ``fps`` (half
    of them mirrored copies with ``mirror``)."""
    from physmocap.io.bvh import read_bvh
    from physmocap.matching import build_database, compute_features, valid_mask

    files = sorted((data_dir() / "bvh/bandai-namco/ds2_normal_locomotion").glob("*.bvh"))
    motions, frames = [], 0
    for f in files:
        m = read_bvh(f)
        motions.append(m)
        frames += m.n_frames * fps / m.fps * (2 if mirror else 1)
        if frames >= target_frames:
            break
    db = build_database(motions, fps=fps, mirror=mirror)
    # the database can hold fewer frames than the clips' count (resampling); top it up
    while db.n_frames < 0.97 * target_frames and len(motions) < len(files):
        extra = max(1, int(len(motions) * (target_frames / db.n_frames - 1)) + 1)
        motions += [read_bvh(f) for f in files[len(motions):len(motions) + extra]]
        db = build_database(motions, fps=fps, mirror=mirror)
    feats = compute_features(db)
    return (np.asarray(feats.X, np.float32), np.asarray(db.range_starts),
            np.asarray(db.range_stops), np.asarray(valid_mask(db, feats.spec)), len(motions))


def query_sets(X, valid, n, rng):
    rows = rng.choice(np.flatnonzero(valid), n)
    out = {f"real s={s}": (X[rows] + s * rng.normal(size=(n, X.shape[1])), None)
           for s in (0.1, 0.3, 0.5)}
    out["uniform"] = (rng.uniform(-2, 2, size=(n, X.shape[1])), None)
    Q = X[rows] + 0.1 * rng.normal(size=(n, X.shape[1]))
    own = ((X[rows].astype(np.float64) - Q) ** 2).sum(1)
    out["ctrl s=0.1"] = (Q, (rows, own))
    return out


def window(starts, stops, current, radius, n):
    """``(Q, N)`` bool exclusion windows (same clip, |i - current| <= radius)."""
    ex = np.zeros((len(current), n), bool)
    clip = np.searchsorted(stops, current, side="right")
    for k, (c, ci) in enumerate(zip(current, clip)):
        ex[k, max(c - radius, starts[ci]):min(c + radius, stops[ci] - 1) + 1] = True
    return ex


def interleaved(fns: dict, repeats: int) -> dict:
    """Median wall time (s) per function over ``repeats`` passes, each pass calling every
    function once in turn."""
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def bench(name, X, starts, stops, valid, n_batch, n_single, repeats, n_ref):
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    index = SearchIndex(X, valid, starts, stops)            # numba when installed
    t_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    index_np = SearchIndex(X, valid, starts, stops, backend="numpy")
    t_index_np = time.perf_counter() - t0
    rows = np.flatnonzero(valid)
    t0 = time.perf_counter()
    tree = cKDTree(X[rows])
    t_tree = time.perf_counter() - t0
    tree_mb = None
    try:
        import pickle
        tree_mb = len(pickle.dumps(tree)) / 1e6
    except Exception:  # noqa: BLE001 -- size is informative only
        pass
    print(f"\n== {name}: {X.shape[0]} frames x {X.shape[1]} features, {valid.sum()} valid, "
          f"{len(starts)} clips")
    print(f"build: SearchIndex[{index.backend}] {t_index:.2f} s, {index.nbytes / 1e6:.1f} MB; "
          f"SearchIndex[numpy] {t_index_np:.2f} s, {index_np.nbytes / 1e6:.1f} MB "
          f"(features {X.nbytes / 1e6:.1f} MB of each twice); cKDTree {t_tree:.2f} s"
          + (f", {tree_mb:.1f} MB pickled" if tree_mb else ""))
    hdr = (f"{'queries':<12}{'brute ref':>10}{'kd single':>10}{'kd batch':>9}{'kd batch*':>10}"
           f"{'idx single':>11}{'idx batch':>10}{'np single':>10}{'np batch':>9}"
           f"{'kd/idx single':>14}{'kd/idx batch':>13}{'kd*/idx batch':>14}{'bf/idx batch':>13}"
           f"  agree")
    print(f"us per query (median of {repeats} interleaved passes); batch = {n_batch} queries at "
          f"once, single = {n_single} one by one (np: a quarter of them); "
          f"idx = SearchIndex[{index.backend}], np = SearchIndex[numpy]")
    print(hdr)
    for qname, (Q, ctrl) in query_sets(X, valid, n_batch, rng).items():
        if ctrl is None:
            kw = [{} for _ in range(len(Q))]
            kwb = {}
        else:
            cur, own = ctrl
            kw = [dict(current=int(c), exclude_radius=20, best_cost=float(o))
                  for c, o in zip(cur, own)]
            kwb = dict(current=cur, exclude_radius=20, best_cost=own)
        Qs = Q[:n_single]
        Qr = Q[:n_ref]
        m_np = max(1, n_single // 4)

        def kd_single():
            for q in Qs:
                tree.query(q)

        def idx_single(ix, m):
            for q, k in zip(Qs[:m], kw):
                ix.search(q, **k)
        # (function, queries per call); the passes are interleaved (every method once per pass)
        # so that a load change on this shared machine hits every column alike
        runs = {"ref": (lambda: brute_force(X, Qr, valid), len(Qr)),
                "kds": (kd_single, len(Qs)), "kdb": (lambda: tree.query(Q), len(Q)),
                "kdp": (lambda: tree.query(Q, workers=-1), len(Q)),
                "ixs": (lambda: idx_single(index, n_single), len(Qs)),
                "ixb": (lambda: index.search_batch(Q, **kwb), len(Q)),
                "nps": (lambda: idx_single(index_np, m_np), m_np),
                "npb": (lambda: index_np.search_batch(Q, **kwb), len(Q))}
        t = interleaved({k: f for k, (f, _) in runs.items()}, repeats)
        t_ref, t_kds, t_kdb, t_kdp, t_ixs, t_ixb, t_nps, t_npb = (t[k] / runs[k][1] for k in runs)
        # correctness on the timed queries: both backends equal brute force exactly
        if ctrl is None:
            bi, bc = brute_force(X, Qr, valid)
            kr = {}
        else:
            bi, bc = brute_force(X, Qr, valid,
                                 exclude=window(starts, stops, cur[:n_ref], 20, len(X)))
            beat = bc < own[:n_ref]
            bi, bc = np.where(beat, bi, -1), np.where(beat, bc, own[:n_ref])
            kr = dict(current=cur[:n_ref], exclude_radius=20, best_cost=own[:n_ref])
        agree = True
        for ix in (index, index_np):
            ii, ic = ix.search_batch(Qr, **kr)
            agree &= np.array_equal(ii, bi) and np.array_equal(ic, bc)
        singles = [index.search(q, **k) for q, k in zip(Qr, kw)]
        agree &= singles == list(zip(bi.tolist(), bc.tolist()))
        if ctrl is None:
            kd_d, _ = tree.query(Qr)
            agree &= np.allclose(kd_d ** 2, bc, rtol=1e-4, atol=1e-5)
        print(f"{qname:<12}{t_ref * 1e6:>10.0f}{t_kds * 1e6:>10.0f}{t_kdb * 1e6:>9.0f}"
              f"{t_kdp * 1e6:>10.0f}"
              f"{t_ixs * 1e6:>11.1f}{t_ixb * 1e6:>10.1f}{t_nps * 1e6:>10.0f}{t_npb * 1e6:>9.0f}"
              f"{t_kds / t_ixs:>14.2f}{t_kdb / t_ixb:>13.2f}{t_kdp / t_ixb:>14.2f}"
              f"{t_ref / t_ixb:>13.0f}  "
              f"{'yes' if agree else 'NO'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--big", type=int, default=1_000_000, help="frames of the large database")
    ap.add_argument("--synthetic", action="store_true", help="skip the real features")
    ap.add_argument("--no-mirror", action="store_true",
                    help="skip the 100k-frame real database (Bandai-Namco + mirrors, 70 fps)")
    args = ap.parse_args()
    n12 = 43_000
    real = None
    if not args.synthetic:
        try:
            t0 = time.perf_counter()
            real = real_features(n12)
            print(f"real features: {real[4]} Bandai-Namco clips built in "
                  f"{time.perf_counter() - t0:.1f} s")
        except Exception as exc:  # noqa: BLE001 -- fall back to synthetic, and say so
            print(f"real features unavailable ({type(exc).__name__}: {exc}); using synthetic")
    if real is not None:
        bench("12 min, REAL Bandai-Namco ds2 locomotion features", *real[:4],
              n_batch=1000, n_single=100, repeats=args.repeats, n_ref=200)
    else:
        bench("12 min, SYNTHETIC structured features", *synthetic(n12),
              n_batch=1000, n_single=100, repeats=args.repeats, n_ref=200)
    if real is not None and not args.no_mirror:
        t0 = time.perf_counter()
        big_real = real_features(100_000, mirror=True, fps=70.0)
        print(f"\nreal features: {big_real[4]} Bandai-Namco clips + mirrors at 70 fps built in "
              f"{time.perf_counter() - t0:.1f} s")
        bench("100k frames, REAL Bandai-Namco ds2 locomotion, clips + mirrored clips at 70 fps",
              *big_real[:4],
              n_batch=1000, n_single=100, repeats=args.repeats, n_ref=100)
    bench(f"{args.big} frames, SYNTHETIC structured features", *synthetic(args.big),
          n_batch=200, n_single=20, repeats=args.repeats, n_ref=20)


if __name__ == "__main__":
    main()
