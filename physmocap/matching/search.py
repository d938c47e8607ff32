"""Nearest-feature search for motion matching (Eq. 3.14-3.16 of the thesis excerpt).

The features ``X (N, D)`` arrive already normalised and weighted (the betas of Eq. 3.16 are folded
into the columns), so the matching cost is the plain squared Euclidean distance
``cost(i) = sum_k (X[i, k] - q[k])**2``.

Two searches return the *same* frame on every query:

- :func:`brute_force`: the reference, vectorised numpy in chunks.
- :class:`SearchIndex`: an exact bounding-box hierarchy, compiled with numba when it is installed
  (``backend="auto"``; see "the compiled path" below), else the vectorised numpy walk described
  here, after orangeduck/Motion-Matching's
  ``database_search`` (axis-aligned boxes over blocks of 16 and 64 consecutive frames; a block is
  skipped when the squared distance to its box is already no better than the best cost so far).
  Differences from there, and why:

  * The leaves are still blocks of <= 16 consecutive frames of one clip (consecutive frames of
    smooth motion are close, so their boxes are small), but the levels above are built by grouping
    leaves that are close in feature space (median splits of the leaf centres, like a k-d tree),
    not consecutive in time: 1024 consecutive frames span most of feature space, so a time-ordered
    box that big prunes nothing.
  * numpy pays per call, not per element, so the walk is level-synchronous and batched: all the
    (query, node) pairs still alive at one level are tested in one vectorised step, for every
    query of a batch at once. The bound of each query tightens at every level with the exact cost
    of one representative frame per surviving node (Holden's early-out needs a good best cost
    early; there the scan order gives it, here the representatives do).

Costs are computed in float64 from the float32 features by one function (:func:`_cost_rows`), so
the index and the reference agree to the last bit and ties go to the lowest frame index in both.

Conventions shared by both searches:

- ``valid (N,) bool``: frames that may be returned (a full future trajectory ahead).
- exclusion window: with ``current`` set, frames ``i`` of the *same clip* as ``current`` with
  ``|i - current| <= exclude_radius`` are skipped (``exclude_radius=0`` skips the current frame
  only) -- the "do not jump to yourself" rule.
- ``best_cost``: Holden's shortcut. Pass the cost of carrying on from the current frame; a frame
  is returned only if its cost is strictly lower, otherwise the result is ``-1`` with
  ``best_cost`` itself. The same ``-1`` (with cost ``inf``) means no frame is eligible at all.
"""
from __future__ import annotations

import math
import os
from bisect import bisect_right
from collections.abc import Mapping

import numpy as np

from ..errors import ShapeError, UnknownNameError, known_list

__all__ = ["brute_force", "SearchIndex"]

#: relative error allowed for a float32 sum of D squares (D * 2**-24 is < 2e-6 for D < 30; the
#: margin is only ever used to keep more candidates, never fewer).
_EPS = 1e-5


# ----------------------------------------------------------------------------------------------
# shared helpers

def _cost_rows(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``(...)`` float64 squared distances of ``rows (..., D)`` float32 to ``q`` (broadcast).

    The one cost function of this module: every exact cost (reference, index, representatives)
    goes through it, so a frame's cost does not depend on which search computed it. The sum is
    a reduction over the last, contiguous axis of a float64 array: numpy sums each row pairwise in
    an order that depends on D only, not on the row's position or the number of rows.
    """
    d = np.asarray(rows, dtype=np.float64) - q       # float32 -> float64 is exact
    np.square(d, out=d)
    return np.add.reduce(d, axis=-1)


def _check_features(X) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ShapeError(f"search: features X must have shape (N, D) with N, D > 0, got {X.shape}")
    if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)):
        raise ShapeError(f"search: features X must be numeric, got dtype {X.dtype}")
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    if not np.isfinite(X32).all():
        bad = np.flatnonzero(~np.isfinite(X32).all(axis=1))
        raise ShapeError(f"search: features X contain NaN or inf in {bad.size} frame(s), first at "
                         f"frame {bad[0]}; features must be finite (fill or drop those frames)")
    return X32


def _check_mask(m, n: int, name: str) -> np.ndarray:
    m = np.asarray(m)
    if m.dtype != np.bool_:
        raise ShapeError(f"search: {name} must be a bool array, got dtype {m.dtype}")
    if m.shape != (n,):
        raise ShapeError(f"search: {name} must have shape ({n},), got {m.shape}")
    return m


def _check_queries(query, d: int) -> tuple[np.ndarray, bool]:
    """``(Q, D)`` float64 queries and whether a single ``(D,)`` query was given."""
    q = np.asarray(query)
    if not (np.issubdtype(q.dtype, np.floating) or np.issubdtype(q.dtype, np.integer)):
        raise ShapeError(f"search: query must be numeric, got dtype {q.dtype}")
    single = q.ndim == 1
    if single:
        q = q[None]
    if q.ndim != 2 or q.shape[1] != d:
        raise ShapeError(f"search: query must have shape ({d},) or (Q, {d}), "
                         f"got {np.asarray(query).shape}")
    q = np.ascontiguousarray(q, dtype=np.float64)
    if not np.isfinite(q).all():
        raise ShapeError("search: query contains NaN or inf")
    return q, single


def _lexmin(qid: np.ndarray, cost: np.ndarray, idx: np.ndarray, n_q: int,
            best_c: np.ndarray, best_i: np.ndarray) -> None:
    """Fold candidates ``(qid, cost, idx)`` into ``best_c/best_i`` in place: the lowest cost,
    ties to the lowest index."""
    if qid.size == 0:
        return
    order = np.lexsort((idx, cost, qid))
    qs = qid[order]
    first = np.ones(qs.size, bool)
    first[1:] = qs[1:] != qs[:-1]
    sel = order[first]
    q, c, i = qid[sel], cost[sel], idx[sel]
    better = (c < best_c[q]) | ((c == best_c[q]) & (i < best_i[q]))
    q, c, i = q[better], c[better], i[better]
    best_c[q] = c
    best_i[q] = i


# ----------------------------------------------------------------------------------------------
# reference

def brute_force(X, query, valid, exclude=None, chunk: int = 1 << 14):
    """Exact search by scanning every frame (the reference the index is tested against).

    Args:
        X: ``(N, D)`` float features (normalised and weighted).
        query: ``(D,)`` or ``(Q, D)``.
        valid: ``(N,) bool`` frames that may be returned.
        exclude: ``None``, ``(N,) bool`` (same for every query) or ``(Q, N) bool`` frames to skip.
        chunk: frames costed per step (small enough for the temporaries to stay in cache).
    Returns:
        ``idx (Q,) int64`` (``-1`` if no frame is eligible) and ``cost (Q,) float64`` (``inf``
        then); scalars for a single ``(D,)`` query. Ties go to the lowest index.
    """
    X = _check_features(X)
    n, d = X.shape
    valid = _check_mask(valid, n, "valid")
    q, single = _check_queries(query, d)
    nq = q.shape[0]
    if exclude is not None:
        exclude = np.asarray(exclude)
        if exclude.dtype != np.bool_ or exclude.shape not in ((n,), (nq, n)):
            raise ShapeError(f"brute_force: exclude must be bool of shape ({n},) or ({nq}, {n}), "
                             f"got {exclude.dtype} {exclude.shape}")
    cols = np.flatnonzero(valid if exclude is None or exclude.ndim == 2 else valid & ~exclude)
    best_i = np.full(nq, -1, np.int64)
    best_c = np.full(nq, np.inf)
    if cols.size == 0:
        return (int(best_i[0]), float(best_c[0])) if single else (best_i, best_c)
    fstep = max(1, min(chunk, cols.size))
    qstep = max(1, chunk // fstep)
    for f0 in range(0, cols.size, fstep):            # frames in chunks, in increasing index
        fc = cols[f0:f0 + fstep]
        Xv = X[fc].astype(np.float64)
        for a in range(0, nq, qstep):
            b = min(nq, a + qstep)
            c = _cost_rows(Xv[None], q[a:b, None])   # (b - a, frames): the canonical per-row sum
            if exclude is not None and exclude.ndim == 2:
                c[exclude[a:b][:, fc]] = np.inf
            j = np.argmin(c, axis=1)                  # first minimum = lowest index
            cj = c[np.arange(b - a), j]
            upd = cj < best_c[a:b]                    # strict: earlier chunks hold lower indices
            best_c[a:b][upd] = cj[upd]
            best_i[a:b][upd] = fc[j[upd]]
    best_i[~np.isfinite(best_c)] = -1
    return (int(best_i[0]), float(best_c[0])) if single else (best_i, best_c)


# ----------------------------------------------------------------------------------------------
# the index

class _Tree:
    """Box hierarchy over one subset of frames (all valid frames, or the valid frames of a tag).

    Frames are stored reordered (``Xs``) so that every node covers a contiguous range of rows;
    ``orig`` maps a row back to its frame index. Level 0 are the leaves (<= ``leaf`` consecutive
    frames of one clip); level k+1 groups ``branch`` consecutive nodes of level k. Boxes are
    stored as float32 centre and half-width ``(n, 2, D)`` (one gather per test).

    Bounds and the first pass over frames run in float32 (half the memory traffic of float64, no
    casts); every comparison goes through :meth:`_lower`/``_upper`` margins that cover float32
    rounding, so no frame that could win is ever dropped. The winners are then re-costed with
    :func:`_cost_rows` (float64), which decides -- so results equal :func:`brute_force` exactly.
    """

    def __init__(self, X: np.ndarray, rows: np.ndarray, clip: np.ndarray, leaf: int, branch: int,
                 top: int):
        n = rows.size
        self.n = n
        self.levels = []
        if n == 0:
            return
        # leaves: runs of consecutive frames within one clip, cut every `leaf` frames
        cut = np.flatnonzero((np.diff(rows) != 1) | (np.diff(clip[rows]) != 0)) + 1
        seg_a = np.r_[0, cut]
        seg_b = np.r_[cut, n]
        counts = -(-(seg_b - seg_a) // leaf)
        la = np.repeat(seg_a, counts) + leaf * (np.arange(counts.sum())
                                               - np.repeat(np.cumsum(counts) - counts, counts))
        lb = np.minimum(la + leaf, np.repeat(seg_b, counts))
        Xr = X[rows]
        lo = np.minimum.reduceat(Xr, la, axis=0)
        hi = np.maximum.reduceat(Xr, la, axis=0)
        # order the leaves so that spatially close leaves are adjacent (k-d order of the centres)
        lp = _kd_order(0.5 * (lo.astype(np.float64) + hi), branch)
        sizes = (lb - la)[lp]
        new_a = np.r_[0, np.cumsum(sizes)[:-1]]
        perm = np.repeat(la[lp] - new_a, sizes) + np.arange(n)
        self.orig = rows[perm].astype(np.int64)
        self.Xs = np.ascontiguousarray(Xr[perm])
        a, b = new_a, new_a + sizes
        lo, hi = lo[lp], hi[lp]
        # a level: (centre/half-width (n, 2, D) f32, row_start, row_stop, child_start, child_stop,
        #           representative row)
        levels = [(_centre_half(lo, hi), a, b, None, None, (a + b - 1) // 2)]
        while lo.shape[0] > top:
            cs = np.arange(0, lo.shape[0], branch)
            ce = np.minimum(cs + branch, lo.shape[0])
            lo = np.minimum.reduceat(lo, cs, axis=0)
            hi = np.maximum.reduceat(hi, cs, axis=0)
            a, b = a[cs], b[ce - 1]
            levels.append((_centre_half(lo, hi), a, b, cs, ce, (a + b - 1) // 2))
        self.levels = levels[::-1]                      # top first
        # largest |centre| + half-width per feature: scales the rounding margin of box bounds
        leaves = self.levels[-1][0]
        self.box_mag = np.abs(leaves[:, 0]).max(axis=0) + leaves[:, 1].max(axis=0)

    def nbytes(self) -> int:
        if self.n == 0:
            return 0
        tot = self.orig.nbytes + self.Xs.nbytes
        for lev in self.levels:
            tot += sum(x.nbytes for x in lev if x is not None)
        return tot

    # -- query ---------------------------------------------------------------------------------
    def search(self, q: np.ndarray, limit: np.ndarray, ex_a: np.ndarray, ex_b: np.ndarray,
               pair_budget: int) -> tuple[np.ndarray, np.ndarray]:
        """Best ``(idx, cost)`` per query with cost ``< limit`` (strict), ``-1``/``inf`` otherwise.

        ``q (Q, D)`` float64; ``ex_a/ex_b (Q,)``: frames ``ex_a <= i <= ex_b`` are excluded.
        """
        nq = q.shape[0]
        best_c = np.full(nq, np.inf)
        best_i = np.full(nq, np.iinfo(np.int64).max)
        if self.n == 0:
            return np.full(nq, -1, np.int64), best_c
        Xs, orig = self.Xs, self.orig
        q32 = q.astype(np.float32)
        # |true distance - distance computed in float32| <= d_f (frames) or d_b (boxes), plus a
        # relative float32 summation error covered by _EPS (distances are 1-Lipschitz in q).
        d_f = np.sqrt(np.einsum("ij,ij->i", q - q32, q - q32)) * (1 + _EPS)
        d_b = d_f + np.sqrt(np.einsum("ij,ij->i", np.abs(q32) + self.box_mag,
                                      np.abs(q32) + self.box_mag)) * 2.0 ** -20
        bound = limit.copy()        # true-scale upper bound on the best cost (inclusive)
        has_ex = bool(np.any(ex_a <= ex_b))

        def thr(d):                 # keep a float32 value v iff its lower bound <= bound
            return (np.sqrt(bound) + d) ** 2 / (1 - _EPS)

        def costs32(qid, row):      # float32 costs of frames, inf where excluded
            diff = Xs[row] - q32[qid]
            c = np.einsum("ij,ij->i", diff, diff)
            if has_ex:
                o = orig[row]
                c[(o >= ex_a[qid]) & (o <= ex_b[qid])] = np.inf
            return c

        def tighten(qid, c32):      # bound <- min(bound, upper bound of the true cost)
            up = (np.sqrt(c32.astype(np.float64) * (1 + _EPS)) + d_f[qid]) ** 2
            np.minimum.at(bound, qid, up)

        ch, ra, rb, _, _, rep = self.levels[0]
        ntop = ch.shape[0]
        qid = np.repeat(np.arange(nq), ntop)
        node = np.tile(np.arange(ntop), nq)
        lbd = _box_bound32(ch[None], q32[:, None]).reshape(-1)
        last = len(self.levels) - 1
        for li, (ch, ra, rb, cs, ce, rep) in enumerate(self.levels):
            if li > 0:
                lbd = _box_bound32(ch[node], q32[qid])
            keep = lbd <= thr(d_b)[qid]
            qid, node, lbd = qid[keep], node[keep], lbd[keep]
            if li < last:
                # tighten each query's bound with one real frame per live node, then prune again
                tighten(qid, costs32(qid, rep[node]))
                keep = lbd <= thr(d_b)[qid]
                qid, node = qid[keep], node[keep]
                cnt = ce[node] - cs[node]
                qid = np.repeat(qid, cnt)
                node = (np.repeat(cs[node] - np.r_[0, np.cumsum(cnt)[:-1]], cnt)
                        + np.arange(cnt.sum()))
                continue
            # leaves: most promising first, in chunks, pruning again before each chunk
            order = np.lexsort((lbd, qid)) if nq > 1 else np.argsort(lbd)
            qid, node, lbd = qid[order], node[order], lbd[order]
            first = np.ones(qid.size, bool)
            first[1:] = qid[1:] != qid[:-1]
            rest = ~first
            chunks = [np.flatnonzero(first)]            # every query's best leaf first
            if rest.any():
                ridx = np.flatnonzero(rest)
                ridx = ridx[np.argsort(lbd[ridx], kind="stable")]
                csum = np.cumsum(rb[node[ridx]] - ra[node[ridx]])
                cuts = np.searchsorted(csum, np.arange(pair_budget, csum[-1], pair_budget))
                chunks += np.split(ridx, np.unique(cuts))
            cand_q, cand_r = [], []
            for sel in chunks:
                cq, cn, cl = qid[sel], node[sel], lbd[sel]
                keep = cl <= thr(d_b)[cq]
                cq, cn = cq[keep], cn[keep]
                if cq.size == 0:
                    continue
                sz = rb[cn] - ra[cn]
                fq = np.repeat(cq, sz)
                frow = np.repeat(ra[cn] - np.r_[0, np.cumsum(sz)[:-1]], sz) + np.arange(sz.sum())
                fc = costs32(fq, frow)
                tighten(fq, fc)
                ok = fc <= thr(d_f)[fq]
                cand_q.append(fq[ok])
                cand_r.append(frow[ok])
            if not cand_q:
                break
            # survivors of the float32 pass: decide with the exact float64 cost
            fq = np.concatenate(cand_q)
            frow = np.concatenate(cand_r)
            ok = np.isfinite(costs32(fq, frow))
            fq, frow = fq[ok], frow[ok]
            fc = _cost_rows(Xs[frow], q[fq])
            ok = fc < limit[fq]
            _lexmin(fq[ok], fc[ok], orig[frow[ok]], nq, best_c, best_i)
        best_i[~np.isfinite(best_c)] = -1
        return best_i, best_c


def _centre_half(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``(n, 2, D)`` float32 centre and half-width of boxes, the half-width rounded up where
    float32 rounding would cut ``[lo, hi]``, so that ``[c - h, c + h]`` contains it (a flat side,
    ``lo == hi``, keeps ``h = 0``; no subnormal half-widths, which are slow in SIMD)."""
    c = (0.5 * (lo.astype(np.float64) + hi)).astype(np.float32)
    h = np.maximum(hi.astype(np.float64) - c, c - lo.astype(np.float64))   # exact in float64
    h32 = h.astype(np.float32)
    h32 = np.where(h32 < h, np.nextafter(h32, np.float32(np.inf)), h32)
    h32 = np.where((h32 > 0) & (h32 < 1e-30), np.float32(1e-30), h32)
    return np.ascontiguousarray(np.stack([c, h32], axis=-2))


def _box_bound32(ch: np.ndarray, q: np.ndarray) -> np.ndarray:
    """float32 squared distance from ``q (..., D)`` to boxes ``ch (..., 2, D)``."""
    g = np.abs(q - ch[..., 0, :])
    g -= ch[..., 1, :]
    np.maximum(g, 0, out=g)
    return np.einsum("...i,...i->...", g, g)


def _kd_order(c: np.ndarray, branch: int) -> np.ndarray:
    """Permutation of the points ``c (n, D)`` in k-d order: recursive median splits along the
    widest axis, split sizes rounded to powers of two so that aligned groups of ``branch``,
    ``branch**2``, ... consecutive points fall on one side of every split (tight group boxes)."""
    n = c.shape[0]
    out = np.arange(n)
    stack = [(0, n)]
    while stack:
        a, b = stack.pop()
        m = b - a
        if m <= branch:
            continue
        idx = out[a:b]
        pts = c[idx]
        ax = int(np.argmax(pts.max(axis=0) - pts.min(axis=0)))
        s = 1 << int(np.floor(np.log2(m / 2)))
        left = min(m - 1, max(s, s * int(round(m / 2 / s))))
        part = np.argpartition(pts[:, ax], left - 1) if left < m else np.arange(m)
        out[a:b] = idx[part]
        stack.append((a, a + left))
        stack.append((a + left, b))
    return out


# ----------------------------------------------------------------------------------------------
# the compiled path (numba)
#
# A compiled branch-and-bound over a box tree. Leaves are Holden's small boxes (database.h):
# blocks of `leaf` (4 by default here) consecutive frames of one clip, never across a clip boundary
# or a gap in the subset (all valid frames, or the valid frames of a tag). Above them the boxes
# group `branch` leaves that are close in feature space (k-d order of the leaf centres, as the numpy
# `_Tree`), not consecutive in time. Holden's literal layout -- a linear scan over time-ordered
# 64-frame boxes, then 16-frame boxes, then frames -- was measured first: 400-2500 us per query at
# 100k synthetic frames (the bound tightens too late: the first boxes of the scan are arbitrary).
# Here a query walks the tree depth first, children nearest box first, and skips every box whose
# squared distance (sum over features of max(lo - q, 0, q - hi)**2) already exceeds the best cost
# so far; the frames of a live leaf are pruned by a quick sum, then costed exactly. The valid/tag
# masks are the tree's subset; the exclusion window is a per-frame test;
# `best_cost` (the controller's cost of carrying on) is the initial bound, strict. A node that
# survives its bound has its children's boxes (or its rows) prefetched as it is pushed, so they
# arrive while nearer subtrees are walked: a single query usually finds the tree out of cache.
#
# Exactness: a frame's decisive cost is numpy's pairwise sum (`_nb_cost` reproduces `np.add.reduce`
# over a contiguous float64 row, same terms, same order) on the frame's own float32 row, so the
# costs are bit-identical to `_cost_rows`/`brute_force`. The box and quick frame bounds are float32
# sums in any order, taken in the subset's principal axes (a rotation: distances unchanged) on the
# rotated rows and query rounded to float32 (half the bytes and twice the SIMD lanes of float64:
# 1.7x faster at 87k frames with 4-frame leaves, which alone gave 1.4x over 8-frame ones); they
# prune only above `_nb_prune_threshold`, which covers the rounding of the rotated query and rows
# (triangle inequality), the rotation's norm and float32 rounding of the sum (relative
# (D + 3) 2**-23), so no frame that could win or tie is ever skipped. Ties go to the lowest frame
# index.
#
# The functions below are plain Python until `_numba_kernels()` compiles them (numba is imported on
# first use only, so `import physmocap.matching` does not pay for it).

_NB_NONFINITE = -2      # returned as the index by the kernels when the query is not finite
_F64 = np.dtype(np.float64)   # native float64: `is` compares faster than `==`


def _nb_cost_block(x, q, a, n):
    """numpy's pairwise_sum for n <= 128 (DOUBLE_pairwise_sum), terms (f64(x[i]) - q[i])**2."""
    if n < 8:
        res = 0.0
        for i in range(a, a + n):
            d = np.float64(x[i]) - q[i]
            res += d * d
        return res
    d = np.float64(x[a]) - q[a]
    r0 = d * d
    d = np.float64(x[a + 1]) - q[a + 1]
    r1 = d * d
    d = np.float64(x[a + 2]) - q[a + 2]
    r2 = d * d
    d = np.float64(x[a + 3]) - q[a + 3]
    r3 = d * d
    d = np.float64(x[a + 4]) - q[a + 4]
    r4 = d * d
    d = np.float64(x[a + 5]) - q[a + 5]
    r5 = d * d
    d = np.float64(x[a + 6]) - q[a + 6]
    r6 = d * d
    d = np.float64(x[a + 7]) - q[a + 7]
    r7 = d * d
    i = 8
    m = n - n % 8
    while i < m:
        b = a + i
        d = np.float64(x[b]) - q[b]
        r0 += d * d
        d = np.float64(x[b + 1]) - q[b + 1]
        r1 += d * d
        d = np.float64(x[b + 2]) - q[b + 2]
        r2 += d * d
        d = np.float64(x[b + 3]) - q[b + 3]
        r3 += d * d
        d = np.float64(x[b + 4]) - q[b + 4]
        r4 += d * d
        d = np.float64(x[b + 5]) - q[b + 5]
        r5 += d * d
        d = np.float64(x[b + 6]) - q[b + 6]
        r6 += d * d
        d = np.float64(x[b + 7]) - q[b + 7]
        r7 += d * d
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        d = np.float64(x[a + i]) - q[a + i]
        res += d * d
        i += 1
    return res


def _nb_cost(x, q):
    """``_cost_rows(x, q)`` for one row: numpy's pairwise sum, its recursion above 128 terms
    unrolled on an explicit stack (numba caches recursive functions poorly)."""
    n = q.shape[0]
    if n <= 128:
        return _nb_cost_block(x, q, 0, n)
    # post-order walk of the split tree: (start, length, state) frames, partial sums in `vals`
    st_a = np.empty(64, np.int64)
    st_n = np.empty(64, np.int64)
    st_s = np.zeros(64, np.int64)
    vals = np.empty(64)
    top = 0
    st_a[0] = 0
    st_n[0] = n
    st_s[0] = 0
    nv = 0
    while top >= 0:
        a, m = st_a[top], st_n[top]
        if m <= 128:
            vals[nv] = _nb_cost_block(x, q, a, m)
            nv += 1
            top -= 1
        elif st_s[top] == 0:                 # push the left half
            st_s[top] = 1
            m2 = m // 2
            m2 -= m2 % 8
            top += 1
            st_a[top], st_n[top], st_s[top] = a, m2, 0
        elif st_s[top] == 1:                 # then the right half
            st_s[top] = 2
            m2 = m // 2
            m2 -= m2 % 8
            top += 1
            st_a[top], st_n[top], st_s[top] = a + m2, m - m2, 0
        else:                                # both done: left + right
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            top -= 1
    return vals[0]


def _nb_box_bound(box, j, q32):
    """float32 squared distance from ``q32`` (the query rounded to float32) to box ``j``
    (``box (n, 2, D)`` centre/half-width; terms ``max(|q - c| - h, 0)**2``, one operation fewer
    than lo/hi: 1.06x faster per query). Compiled with reassociation, so the sum is vectorised in
    any order; float32 halves the memory traffic and doubles the SIMD width of the float64
    bound. Rounding: each term is within ``(1 + u)**2`` of the exact gap plus ``u h``
    (``u = 2**-24``; the cancellation in ``|q - c| - h``), so the bound of the whole vector errs
    by at most the relative factor in ``m32`` plus ``u |h|``, which :class:`_NumbaTree` adds to
    ``ey`` for its largest box (:func:`_nb_prune_threshold`)."""
    lb = np.float32(0.0)
    for k in range(q32.shape[0]):
        g = max(abs(q32[k] - box[j, 0, k]) - box[j, 1, k], np.float32(0.0))
        lb += g * g
    return lb


def _nb_frame_bound(Xs, r, q32):
    """float32 squared distance from ``q32`` to row ``r`` of ``Xs``, summed in any order
    (vectorised): for pruning only; the decisive cost is :func:`_nb_cost`."""
    s = np.float32(0.0)
    for k in range(q32.shape[0]):
        t = Xs[r, k] - q32[k]
        s += t * t
    return s


def _nb_prefetch(a, i):
    """Ask the CPU to load element ``i`` of the C-contiguous array ``a`` (flat index) into cache
    (no effect on any value). A plain Python no-op; :func:`_numba_kernels` swaps in the
    ``llvm.prefetch`` intrinsic of :func:`_prefetch_intrinsic`."""


_nb_prefetch_noop = _nb_prefetch     # the fallback when the intrinsic does not compile here


def _nb_prefetch_probe(a, i):
    """Compiled once (then loaded from numba's cache) to check that the intrinsic compiles."""
    _nb_prefetch(a, i)


def _prefetch_intrinsic(numba):
    """A numba intrinsic emitting ``llvm.prefetch`` (read, keep in all cache levels) for element
    ``i`` of a C-contiguous array, or ``None`` if this numba cannot define it."""
    try:
        from llvmlite import ir
        from numba.core import cgutils, types
        from numba.extending import intrinsic
    except ImportError:
        return None

    @intrinsic
    def prefetch(typingctx, arr, idx):
        if not (isinstance(arr, types.Array) and arr.layout == "C"
                and isinstance(idx, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            ptr = builder.gep(ary.data, [context.cast(builder, args[1], signature.args[1],
                                                      types.int64)])
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                "llvm.prefetch.p0")
            builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()
        return types.void(arr, idx), codegen
    return prefetch


def _nb_prune_threshold(best, sig, dq, m32):
    """The float32 bound above which a box or frame cannot reach cost ``best`` (float64).

    The bounds are taken in the rotated space of :class:`_NumbaTree`: a frame ``x`` at true
    distance ``sqrt(b)`` from the query ``q`` lies at most ``sig * sqrt(b)`` from it there
    (``sig >= ||rot||``, just above 1, also covering the float64 rounding of ``best``), and
    ``dq`` covers every rounding between the exact rotated points and the float32 ones the bounds
    read (query and rows; triangle inequality). Float32 rounding of the differences, squares and
    their sum in any order stays within ``m32 = 1 + 2 (D + 3) 2**-24``. So a float32 bound above
    ``(sig sqrt(best) + dq)**2 * m32`` proves that the frame's cost exceeds ``best``."""
    if best == np.inf:
        return np.inf
    r = math.sqrt(best) * sig + dq
    return r * r * m32


def _nb_search_one(Ys, X, orig, box, kid_a, kid_b, n_leaf, root_a, root_b, stack_size, rot_t,
                   mu, sig, ey, rot_err, q, limit, ex_a, ex_b, margin):
    """Best ``(frame, cost)`` of one query with cost ``< limit``; ``(-1, limit)`` if none,
    ``(_NB_NONFINITE, nan)`` if the query is not finite. Arguments: see :class:`_NumbaTree`."""
    d = q.shape[0]
    for k in range(d):
        if not np.isfinite(q[k]):
            return _NB_NONFINITE, np.nan
    if not limit > 0.0:                       # costs are >= 0: nothing is strictly lower
        return -1, limit
    # the query in the tree's rotated space (float64), then rounded to float32 for the bounds;
    # dq: that rounding, the float64 rotation's error and the rows' (ey), see _NumbaTree
    qc = np.empty(d)
    nqc = 0.0
    for k in range(d):
        qc[k] = q[k] - mu[k]
        nqc += qc[k] * qc[k]
    q32 = np.zeros(Ys.shape[1], np.float32)   # d padded with zero columns, as Ys and box
    dq = 0.0
    for j in range(d):
        y = 0.0
        for k in range(d):
            y += rot_t[j, k] * qc[k]
        q32[j] = np.float32(y)
        t = y - np.float64(q32[j])
        dq += t * t
    dq = (math.sqrt(dq) + rot_err * math.sqrt(nqc)) * margin + ey
    m32 = 1.0 + 2.0 * (Ys.shape[1] + 3) * 2.0 ** -24
    best = limit
    best_i = -1
    thr = _nb_prune_threshold(best, sig, dq, m32)
    st_node = np.empty(stack_size, np.int64)
    st_lb = np.empty(stack_size, np.float32)
    top = 0
    a, b = root_a, root_b
    while True:
        # push the live nodes a..b-1, the run kept sorted so that the nearest box pops first
        base = top
        for j in range(a, b):
            lb = _nb_box_bound(box, j, q32)
            if lb > thr:
                continue
            # a cold query waits on memory at each level: start loading this node's children
            # (or rows) now, while its siblings and the nearer subtrees are walked (1.1-1.15x
            # per query when the tree has left the cache, e.g. between unrelated work); one
            # prefetch per 64-byte line = 16 float32
            if j >= n_leaf:
                w = box.shape[1] * box.shape[2]
                for e in range(kid_a[j] * w, kid_b[j] * w, 16):
                    _nb_prefetch(box, e)
            else:
                for e in range(kid_a[j] * Ys.shape[1], kid_b[j] * Ys.shape[1], 16):
                    _nb_prefetch(Ys, e)
            p = top
            while p > base and st_lb[p - 1] < lb:
                st_lb[p] = st_lb[p - 1]
                st_node[p] = st_node[p - 1]
                p -= 1
            st_lb[p] = lb
            st_node[p] = j
            top += 1
        # pop until an inner node to open (leaves are scanned in place)
        a = -1
        while top > 0:
            top -= 1
            if st_lb[top] > thr:
                continue
            j = st_node[top]
            if j >= n_leaf:
                a, b = kid_a[j], kid_b[j]
                break
            for r in range(kid_a[j], kid_b[j]):
                o = orig[r]
                if o >= ex_a and o <= ex_b:
                    continue
                if _nb_frame_bound(Ys, r, q32) > thr:
                    continue
                c = _nb_cost(X[o], q)             # the frame's own float32 row, unrotated
                if c < best or (c == best and best_i >= 0 and o < best_i):
                    best = c
                    best_i = o
                    thr = _nb_prune_threshold(best, sig, dq, m32)
        if a < 0:
            break
    return best_i, best


def _nb_search_many(Ys, X, orig, box, kid_a, kid_b, n_leaf, root_a, root_b, stack_size, rot_t,
                    mu, sig, ey, rot_err, qs, limit, ex_a, ex_b, margin, out_i, out_c):
    for j in _prange(qs.shape[0]):
        i, c = _nb_search_one(Ys, X, orig, box, kid_a, kid_b, n_leaf, root_a, root_b, stack_size,
                              rot_t, mu, sig, ey, rot_err, qs[j], limit[j], ex_a[j], ex_b[j],
                              margin)
        out_i[j] = i
        out_c[j] = c


def _nb_search_serial(Ys, X, orig, box, kid_a, kid_b, n_leaf, root_a, root_b, stack_size,
                      rot_t, mu, sig, ey, rot_err, qs, limit, ex_a, ex_b, margin, out_i, out_c):
    """:func:`_nb_search_many` on the calling thread alone, for a process with one CPU: there
    numba's TBB threads gain nothing, and a process whose first parallel search ran outside the
    main thread hangs at exit (TBB 2021.8 waits for a worker it never started; numba #10556,
    oneTBB #2056; measured here with ``taskset -c 1``)."""
    for j in range(qs.shape[0]):
        out_i[j], out_c[j] = _nb_search_one(Ys, X, orig, box, kid_a, kid_b, n_leaf, root_a,
                                            root_b, stack_size, rot_t, mu, sig, ey, rot_err,
                                            qs[j], limit[j], ex_a[j], ex_b[j], margin)


def _one_cpu() -> bool:
    """Whether this process may run on one CPU only (its affinity mask)."""
    try:
        return len(os.sched_getaffinity(0)) <= 1
    except (AttributeError, OSError):        # no affinity on this platform (macOS, Windows)
        return (os.cpu_count() or 1) <= 1


_prange = range          # numba.prange once compiled
_NB_STATE: dict = {}     # "kernels": (one, many, entry) once compiled; "error": why numba is not


def _numba_kernels():
    """``(search_one, search_many, entry_point)`` compiled with numba (cached on disk,
    ``cache=True``; ``search_many`` parallel over the CPUs, or serial on one CPU), or ``None``
    when numba cannot be imported or compiled (the numpy index is used then)."""
    if "kernels" in _NB_STATE or "error" in _NB_STATE:
        return _NB_STATE.get("kernels")
    try:
        import numba
        g = globals()
        jit = numba.njit(cache=True, nogil=True, error_model="numpy")
        # helpers first: a kernel resolves the global names it calls when it is compiled
        # bounds: reassociation and contraction only (no nnan/ninf/arcp): a sum of non-negative
        # terms in another order, within the pruning margin
        fast = numba.njit(cache=True, nogil=True, error_model="numpy",
                          fastmath={"reassoc", "contract"})
        for name in ("_nb_box_bound", "_nb_frame_bound"):
            g[name] = fast(g[name])
        # prefetching is only a speed-up (1.1-1.15x on a cold cache): without it, same answers
        g["_nb_prefetch"] = _prefetch_intrinsic(numba)
        try:
            jit(_nb_prefetch_probe)(np.zeros(4), 1)
        except Exception:  # noqa: BLE001 -- e.g. another LLVM's intrinsic name
            g["_nb_prefetch"] = jit(_nb_prefetch_noop)
        for name in ("_nb_cost_block", "_nb_cost", "_nb_prune_threshold", "_nb_search_one"):
            g[name] = jit(g[name])
        if _one_cpu():
            many = g["_nb_search_serial"] = jit(g["_nb_search_serial"])
        else:
            g["_prange"] = numba.prange
            many = g["_nb_search_many"] = numba.njit(cache=True, nogil=True, parallel=True,
                                                     error_model="numpy")(g["_nb_search_many"])
        kernels = (g["_nb_search_one"], many)
        _warm_up(kernels)
        kernels += (_entry_point(numba, kernels[0]),)
    except Exception as exc:  # noqa: BLE001 -- any failure: fall back to numpy, remember why
        _NB_STATE["error"] = f"{type(exc).__name__}: {exc}"
        return None
    _NB_STATE["kernels"] = kernels
    return kernels


def _entry_point(numba, one):
    """The compiled single-query kernel for exactly the argument types ``SearchIndex.search``
    passes (a :class:`_NumbaTree`'s arrays, a writeable aligned C float64 query, Python scalars),
    called without the dispatcher: numba types every one of the 20 arguments on each call
    (about 5 us, as long as the search itself on a small database); the entry point skips that
    (about 2 us). ``None`` if numba's layout differs from what this expects (the dispatcher is
    used then)."""
    try:
        t = _NumbaTree(np.zeros((2, 1), np.float32), np.arange(2), np.zeros(2, np.int64), 1, 2, 1)
        args = (*t.arrays, np.zeros(1), 1.0, 1, 0, t.margin)
        sig = tuple(numba.typeof(a) for a in args)
        ep = one.overloads[sig].entry_point
        if not callable(ep) or ep(*args) != one(*args):
            return None
        return ep
    except Exception:  # noqa: BLE001 -- an internal numba detail: fall back to the dispatcher
        return None


def _warm_up(kernels) -> None:
    """Compile (or load from the disk cache) both kernels for the argument types used by
    :class:`_NumbaTree`, and check them against :func:`_cost_rows` on a small case."""
    one, many = kernels
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    t = _NumbaTree(X, np.arange(200), np.zeros(200, np.int64), 4, 2, 2)
    q = rng.normal(size=(5, 3))
    ref = _cost_rows(X[None], q[:, None])
    i, c = one(*t.arrays, q[0], np.inf, 1, 0, t.margin)
    out_i = np.empty(5, np.int64)
    out_c = np.empty(5)
    many(*t.arrays, q, np.full(5, np.inf), np.ones(5, np.int64), np.zeros(5, np.int64),
         t.margin, out_i, out_c)
    if (i != np.argmin(ref[0]) or c != ref[0].min()
            or not np.array_equal(out_i, np.argmin(ref, axis=1))
            or not np.array_equal(out_c, ref.min(axis=1))):
        raise RuntimeError("numba search disagrees with the numpy reference on the warm-up case")


class _NumbaTree:
    """Box tree over one subset of frames ``rows`` (sorted) for the compiled search.

    Leaves are blocks of <= ``leaf`` consecutive frames of one clip (Holden's small boxes); they
    are ordered by k-d splits of their centres and grouped ``branch`` at a time into boxes, level
    by level, up to at most ``top`` root boxes (as the numpy :class:`_Tree`). Frames are stored
    reordered so that each leaf is a contiguous run of rows.

    The boxes live in the subset's principal axes: ``Y = (X - mu) @ rot`` (``rot`` orthogonal,
    widest axis first). A rotation keeps every distance, and locomotion features are strongly
    correlated (3 of 27 axes hold 73 % of the variance at 100k real frames), so boxes aligned
    with those axes are tighter: 1.1-1.15x faster per near query (s = 0.1) at 100k real frames.
    The bounds read the rotated rows rounded to float32; ``ey`` bounds how far they lie from the
    exact rotated rows (float32 rounding plus float64 rotation error, ``rot_err |x - mu|``), and
    the decisive cost is always :func:`_nb_cost` on the frame's own unrotated row of ``X``.

    ``arrays`` = ``(Ys (n, Dp) f32, X (N, D) f32, orig (n,) i64, box (M, 2, Dp) f32 centre and
    half-width, kid_a (M,) i64, kid_b (M,) i64, n_leaf, root_a, root_b, stack_size, rot_t (D, D)
    f64 = rot.T, mu (D,) f64, sig, ey, rot_err)`` (``ey`` also holds the box bound's cancellation
    allowance, :func:`_nb_box_bound`): node ``j < n_leaf`` is a leaf holding rows
    ``kid_a[j]:kid_b[j]``; a node ``j >= n_leaf`` has the children nodes ``kid_a[j]:kid_b[j]``;
    the roots are nodes ``root_a:root_b``; ``orig`` maps a row back to its frame; ``Dp`` is ``D``
    padded with zero columns to a multiple of 8 (27 -> 32), so that the compiled bounds run in
    whole SIMD vectors (1.2x faster per query at 100k real frames; a padded term is exactly 0).
    """

    def __init__(self, X: np.ndarray, rows: np.ndarray, clip: np.ndarray, leaf: int,
                 branch: int, top: int):
        n = rows.size
        d = X.shape[1]
        self.n = n
        # relative reordering error allowed between a sequential and numpy's pairwise sum of
        # D + 1 non-negative float64 terms (each within (D + 1) 2**-53 of the exact sum)
        self.margin = 1.0 + 4.0 * (d + 2) * 2.0 ** -53
        rot, mu, sig, ey, rot_err, Y = _principal_axes(X, rows)
        dp = -(-d // 8) * 8
        if n == 0:
            self.arrays = (np.zeros((0, dp), np.float32), X, np.zeros(0, np.int64),
                           np.zeros((0, 2, dp), np.float32), np.zeros(0, np.int64),
                           np.zeros(0, np.int64), 0, 0, 0, 1, rot.T.copy(), mu, sig, ey, rot_err)
            return
        cut = np.flatnonzero((np.diff(rows) != 1) | (np.diff(clip[rows]) != 0)) + 1
        seg_a, seg_b = np.r_[0, cut], np.r_[cut, n]
        counts = -(-(seg_b - seg_a) // leaf)
        la = np.repeat(seg_a, counts) + leaf * (np.arange(counts.sum())
                                               - np.repeat(np.cumsum(counts) - counts, counts))
        lb = np.minimum(la + leaf, np.repeat(seg_b, counts))
        Yr = np.zeros((n, dp), np.float32)
        Yr[:, :d] = Y
        del Y
        lo = np.minimum.reduceat(Yr, la, axis=0)
        hi = np.maximum.reduceat(Yr, la, axis=0)
        lp = _kd_order(0.5 * (lo.astype(np.float64) + hi), branch)
        sizes = (lb - la)[lp]
        new_a = np.r_[0, np.cumsum(sizes)[:-1]]
        perm = np.repeat(la[lp] - new_a, sizes) + np.arange(n)
        orig = rows[perm].astype(np.int64)
        Ys = np.ascontiguousarray(Yr[perm])
        lo, hi = lo[lp], hi[lp]
        n_leaf = lo.shape[0]
        boxes_lo, boxes_hi = [lo], [hi]
        kid_a, kid_b = [new_a], [new_a + sizes]
        first, depth = 0, 0                       # node id of the current level's first node
        while lo.shape[0] > top:
            m = lo.shape[0]
            cs = np.arange(0, m, branch)
            ce = np.minimum(cs + branch, m)
            lo = np.minimum.reduceat(lo, cs, axis=0)
            hi = np.maximum.reduceat(hi, cs, axis=0)
            boxes_lo.append(lo)
            boxes_hi.append(hi)
            kid_a.append(first + cs)
            kid_b.append(first + ce)
            first += m
            depth += 1
        box = _centre_half(np.concatenate(boxes_lo), np.concatenate(boxes_hi))
        # the box bound's cancellation error (u |h|, see _nb_box_bound), 2u >= u (1 + u)
        ey += float(np.sqrt((box[:, 1].astype(np.float64) ** 2).sum(axis=1)).max()) * 2.0 ** -23
        self.arrays = (Ys, X, orig, box, np.concatenate(kid_a).astype(np.int64),
                       np.concatenate(kid_b).astype(np.int64), int(n_leaf), int(first),
                       int(box.shape[0]), int(lo.shape[0] + branch * (depth + 1) + 1),
                       rot.T.copy(), mu, sig, ey, rot_err)

    def nbytes(self) -> int:
        """Bytes of the tree's own arrays (not ``X``, which the index holds)."""
        return sum(a.nbytes for k, a in enumerate(self.arrays)
                   if isinstance(a, np.ndarray) and k != 1)


def _principal_axes(X: np.ndarray, rows: np.ndarray, chunk: int = 1 << 16):
    """Principal axes of ``X[rows]``, the rotated rows and the error bounds of the compiled search.

    Returns ``rot (D, D)`` float64 (columns: axes, widest first), ``mu (D,)``, ``sig`` (>= the
    norm of ``rot``, times the float64 rounding of a cost), ``ey`` (>= the distance between any
    row's exact rotation and its float32 one), ``rot_err`` (the float64 rotation of a vector
    ``v`` is within ``rot_err |v|`` of the exact one: ``gamma_(D+1) sqrt(D) sig`` doubled, for
    any summation order) and ``Y (n, D)`` float32: ``(X[rows] - mu) @ rot``, computed in float64
    in chunks of rows (a million frames would need 200 MB of float64 at once)."""
    d = X.shape[1]
    if rows.size == 0:
        return np.eye(d), np.zeros(d), 1.0, 0.0, 0.0, np.zeros((0, d), np.float32)
    s1 = np.zeros(d)
    for a in range(0, rows.size, chunk):
        s1 += X[rows[a:a + chunk]].sum(axis=0, dtype=np.float64)
    mu = s1 / rows.size
    scatter = np.zeros((d, d))
    for a in range(0, rows.size, chunk):
        c = X[rows[a:a + chunk]].astype(np.float64) - mu
        scatter += c.T @ c
    _, vec = np.linalg.eigh(scatter)
    rot = np.ascontiguousarray(vec[:, ::-1])
    # ||rot||_2**2 <= 1 + ||rot^T rot - I||_F; 1e-12 covers that sum's own rounding
    defect = float(np.linalg.norm(rot.T @ rot - np.eye(d)))
    sig = math.sqrt(1.0 + defect + 1e-12) * (1.0 + 2.0 * (d + 2) * 2.0 ** -53)
    rot_err = 2.0 * (d + 2) * 2.0 ** -53 * math.sqrt(d) * sig
    ey, far = 0.0, 0.0
    Y = np.empty((rows.size, d), np.float32)
    for a in range(0, rows.size, chunk):
        c = X[rows[a:a + chunk]].astype(np.float64) - mu
        y = c @ rot
        Y[a:a + chunk] = y
        ey = max(ey, float(np.sqrt(((y - Y[a:a + chunk]) ** 2).sum(axis=1)).max()))
        far = max(far, float(np.sqrt((c * c).sum(axis=1)).max()))
    return rot, mu, sig, (ey + rot_err * far) * (1.0 + 1e-9), rot_err, Y


def _grid_order(q: np.ndarray, mu: np.ndarray, rot_t: np.ndarray, axes: int = 3,
                bins: int = 8) -> np.ndarray:
    """Permutation of the queries ``q (Q, D)`` that puts near ones together: lexicographic
    order of their cells in a ``bins``-per-axis grid over the batch's range along the tree's
    first ``axes`` principal axes (as good as a k-d order of the queries, measured, at a
    thousandth of its cost)."""
    if q.shape[0] < 2:
        return np.arange(q.shape[0])
    y = (q - mu) @ rot_t[:axes].T
    lo = y.min(axis=0)
    span = y.max(axis=0) - lo
    cell = np.floor((y - lo) / np.where(span > 0, span, 1.0) * bins).astype(np.int64)
    np.clip(cell, 0, bins - 1, out=cell)
    return np.lexsort(cell.T[::-1])


class SearchIndex:
    """Exact nearest-feature search over a motion database, built once.

    Args:
        X: ``(N, D)`` features, normalised and weighted, finite (stored as float32).
        valid: ``(N,) bool`` frames that may be returned; at least one.
        range_starts, range_stops: ``(C,)`` clip ranges (stops exclusive) tiling ``[0, N)``.
        tags: optional ``{name: (N,) bool}``; ``tag=name`` restricts a search to those frames.
        leaf: frames per leaf box (consecutive frames of one clip); default 4 with numba, 16
            (Holden's small boxes) with numpy. Measured on the Bandai-Namco features (87k frames,
            float32 bounds), 4 is 1.2-1.3x faster than 8 with numba, and 2 no faster.
        branch: children per inner box (4: 16 -> 64 frames, as in Holden's code).
        top: at most this many boxes at the top level.
        backend: ``"numba"`` (compiled branch and bound over Holden's boxes, taken in the
            features' principal axes; needs the optional ``numba`` package), ``"numpy"`` (the
            vectorised k-d-ordered box walk) or ``"auto"``: numba
            when it imports and compiles, else numpy. Both return exactly the frames and costs
            of :func:`brute_force`. ``self.backend`` tells which one is in use.

    The index for a tag is built the first time that tag is searched (or by :meth:`prepare`).
    With numba the kernels are compiled (or loaded from numba's disk cache) when the first index
    is built, so the first query is as fast as the others.
    """

    def __init__(self, X, valid, range_starts, range_stops, tags: Mapping | None = None, *,
                 leaf: int | None = None, branch: int = 4, top: int = 64,
                 backend: str = "auto"):
        X32 = _check_features(X)
        # a private, writeable copy: the compiled search reads the frames' own rows at query time
        # (the user's array may change later, or be read-only, which numba types apart)
        X = X32.copy() if np.shares_memory(X32, np.asarray(X)) else X32
        n, d = X.shape
        valid = _check_mask(valid, n, "valid")
        if not valid.any():
            raise ShapeError("SearchIndex: no valid frame (valid is all False); nothing to search")
        starts = np.asarray(range_starts)
        stops = np.asarray(range_stops)
        if (starts.ndim != 1 or stops.shape != starts.shape or starts.size == 0
                or not np.issubdtype(starts.dtype, np.integer)
                or not np.issubdtype(stops.dtype, np.integer)):
            raise ShapeError(f"SearchIndex: range_starts/range_stops must be integer arrays of "
                             f"the same shape (C,), C > 0, got {starts.shape} {starts.dtype} "
                             f"and {stops.shape} {stops.dtype}")
        if (starts[0] != 0 or stops[-1] != n or np.any(stops <= starts)
                or np.any(starts[1:] != stops[:-1])):
            raise ShapeError(f"SearchIndex: clip ranges must tile [0, {n}) in order without gaps "
                             f"or empty clips")
        if backend not in ("auto", "numba", "numpy"):
            raise UnknownNameError(f"SearchIndex: unknown backend {backend!r}; known: "
                                   f"auto, numba, numpy")
        self._kernels = None if backend == "numpy" else _numba_kernels()
        if backend == "numba" and self._kernels is None:
            raise ImportError(f"SearchIndex: backend='numba' but numba is unavailable "
                              f"({_NB_STATE.get('error')}); install numba or use backend='auto'")
        self.backend = "numpy" if self._kernels is None else "numba"
        if leaf is None:
            leaf = 16 if self._kernels is None else 4
        if leaf < 1 or branch < 2 or top < 1:
            raise ShapeError("SearchIndex: need leaf >= 1, branch >= 2, top >= 1")
        self._tags: dict[str, np.ndarray] = {}
        for name, m in (tags or {}).items():
            self._tags[str(name)] = _check_mask(m, n, f"tag {name!r}").copy()
        self.n_frames, self.n_features = n, d
        self.range_starts = starts.astype(np.int64)
        self.range_stops = stops.astype(np.int64)
        self._clip = np.repeat(np.arange(starts.size), stops - starts)
        # Python lists for the single query's window: a list lookup and bisect cost a fraction
        # of numpy's scalar indexing (0.3 us less per controller query)
        self._bounds = (self.range_starts.tolist(), self.range_stops.tolist())
        self._X = X
        self._valid = valid.copy()
        self._opts = (leaf, branch, top)
        self._trees: dict[str | None, _Tree | _NumbaTree] = {}
        self._tree(None)

    # -- construction --------------------------------------------------------------------------
    @property
    def tag_names(self) -> tuple[str, ...]:
        return tuple(self._tags)

    def _tree(self, tag: str | None):
        t = self._trees.get(tag)
        if t is None:
            if tag is None:
                m = self._valid
            else:
                if tag not in self._tags:
                    raise UnknownNameError(f"search: unknown tag {tag!r}; known: "
                                           f"{known_list(self._tags) or '(no tags)'}")
                m = self._valid & self._tags[tag]
            leaf, branch, top = self._opts
            if self._kernels is None:
                t = _Tree(self._X, np.flatnonzero(m), self._clip, leaf, branch, top)
            else:
                t = _NumbaTree(self._X, np.flatnonzero(m), self._clip, leaf, branch, top)
            self._trees[tag] = t
        return t

    def prepare(self, *tags: str) -> None:
        """Build the per-tag indexes now rather than on first use (e.g. before a real-time loop)."""
        for t in tags:
            self._tree(t)

    @property
    def nbytes(self) -> int:
        """Bytes held by the index (the features it keeps plus every built tree)."""
        return (self._X.nbytes + self._valid.nbytes + self._clip.nbytes
                + sum(m.nbytes for m in self._tags.values())
                + sum(t.nbytes() for t in self._trees.values()))

    # -- queries -------------------------------------------------------------------------------
    def search(self, query, *, current: int | None = None, exclude_radius: int = 0,
               tag: str | None = None, best_cost: float = np.inf) -> tuple[int, float]:
        """Best frame for one ``(D,)`` query: ``(idx, cost)``; ``(-1, best_cost)`` if no eligible
        frame is strictly better than ``best_cost`` (``(-1, inf)`` if none is eligible)."""
        if self._kernels is None:
            q = np.asarray(query)
            if q.ndim != 1:
                raise ShapeError(f"search: a single query has shape ({self.n_features},), got "
                                 f"{q.shape}; use search_batch for (Q, D)")
            i, c = self.search_batch(q[None], current=None if current is None else [current],
                                     exclude_radius=exclude_radius, tag=tag, best_cost=best_cost)
            return int(i[0]), float(c[0])
        # compiled path: the checks of search_batch, on Python scalars (a few microseconds)
        q = np.asarray(query)
        if q.ndim != 1:
            raise ShapeError(f"search: a single query has shape ({self.n_features},), got "
                             f"{q.shape}; use search_batch for (Q, D)")
        f = q.flags                  # one flags object: each q.flags access builds a new one
        if q.dtype is not _F64 or not f.c_contiguous:
            q, _ = _check_queries(q, self.n_features)   # raises on bad dtype/shape/NaN
            q = q[0]
            f = q.flags
        elif q.shape[0] != self.n_features:
            raise ShapeError(f"search: query must have shape ({self.n_features},) or "
                             f"(Q, {self.n_features}), got {q.shape}")
        limit = float(best_cost)
        if limit != limit:
            raise ShapeError("search: best_cost must be a number or (1,) without NaN, got nan")
        ex_a, ex_b = 1, 0
        if current is not None:
            ex_a, ex_b = self._window(current, exclude_radius)
        elif int(exclude_radius) < 0:
            raise ShapeError(f"search: exclude_radius must be >= 0, got {exclude_radius}")
        t = self._trees.get(tag)
        if t is None:
            t = self._tree(tag)
        # the entry point is compiled for a writeable, aligned query (what _check_queries makes)
        one = self._kernels[2] if f.writeable and f.aligned else None
        i, c = (one or self._kernels[0])(*t.arrays, q, limit, ex_a, ex_b, t.margin)
        if i == _NB_NONFINITE:
            raise ShapeError("search: query contains NaN or inf")
        return int(i), float(c)

    def _window(self, current, exclude_radius) -> tuple[int, int]:
        """Exclusion window ``[ex_a, ex_b]`` of one current frame (``(1, 0)``: none)."""
        if type(current) is not int:     # a plain int skips isinstance's slow ABC checks
            if isinstance(current, (bool, np.bool_)) or not isinstance(current, (int, np.integer)):
                raise ShapeError(f"search: current must be None or an int frame, got {current!r}")
            current = int(current)
        r = exclude_radius if type(exclude_radius) is int else int(exclude_radius)
        if r < 0:
            raise ShapeError(f"search: exclude_radius must be >= 0, got {exclude_radius}")
        if current < -1 or current >= self.n_frames:
            raise ShapeError(f"search: current frames must be -1 or in [0, {self.n_frames})")
        if current < 0:
            return 1, 0
        starts, stops = self._bounds
        c = bisect_right(stops, current)            # the clip holding the current frame
        a, b = current - r, current + r
        return (a if a > starts[c] else starts[c]), (b if b < stops[c] else stops[c] - 1)

    def search_batch(self, queries, *, current=None, exclude_radius: int = 0,
                     tag: str | None = None, best_cost=np.inf, pair_budget: int = 1 << 16,
                     query_chunk: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """Best frames for ``(Q, D)`` queries (e.g. one per character).

        Args:
            queries: ``(Q, D)``.
            current: ``None`` or ``(Q,)`` int frame of each query's character (``-1`` = none).
            exclude_radius: frames of the same clip within this many frames of ``current`` are
                skipped (``0``: the current frame only).
            tag: only frames with this tag (``UnknownNameError`` lists the known tags).
            best_cost: scalar or ``(Q,)``; only frames with a strictly lower cost are returned.
            pair_budget: numpy index: about how many frame costs are evaluated per step.
            query_chunk: numpy index: queries walked together (amortises numpy's per-call cost;
                larger batches spill the temporaries out of cache).
        Returns:
            ``idx (Q,) int64`` and ``cost (Q,) float64``; ``-1`` with ``best_cost`` where no
            eligible frame beats it. With numba the queries run in parallel over the cores
            (serially when the process may use one CPU only: `_nb_search_serial`).
        """
        q, _ = _check_queries(queries, self.n_features)
        nq = q.shape[0]
        limit = np.asarray(best_cost, dtype=np.float64)
        if limit.ndim == 0:
            limit = np.full(nq, float(limit))
        if limit.shape != (nq,) or np.isnan(limit).any():
            raise ShapeError(f"search: best_cost must be a number or ({nq},) without NaN, "
                             f"got shape {limit.shape}")
        if int(exclude_radius) < 0:
            raise ShapeError(f"search: exclude_radius must be >= 0, got {exclude_radius}")
        ex_a = np.ones(nq, np.int64)
        ex_b = np.zeros(nq, np.int64)
        if current is not None:
            cur = np.asarray(current)
            if cur.shape != (nq,) or not np.issubdtype(cur.dtype, np.integer):
                raise ShapeError(f"search: current must be None or ({nq},) int, got "
                                 f"{cur.dtype} {cur.shape}")
            if np.any((cur < -1) | (cur >= self.n_frames)):
                raise ShapeError(f"search: current frames must be -1 or in [0, {self.n_frames})")
            has = cur >= 0
            c = self._clip[np.where(has, cur, 0)]
            r = int(exclude_radius)
            ex_a = np.where(has, np.maximum(cur - r, self.range_starts[c]), 1).astype(np.int64)
            ex_b = np.where(has, np.minimum(cur + r, self.range_stops[c] - 1), 0).astype(np.int64)
        tree = self._tree(tag)
        idx = np.empty(nq, np.int64)
        cost = np.empty(nq)
        if self._kernels is not None:
            # near queries in turn: each thread takes a run of queries that walk the same boxes,
            # which stay in cache (1.14x faster per query for 1000 real-like queries at 100k)
            o = _grid_order(q, tree.arrays[11], tree.arrays[10])
            self._kernels[1](*tree.arrays, q[o], np.ascontiguousarray(limit[o]), ex_a[o],
                             ex_b[o], tree.margin, idx, cost)
            idx[o], cost[o] = idx.copy(), cost.copy()
            return idx, cost
        # a few queries at a time: the walk's temporaries then stay in cache (measured at
        # 100k frames: 16-64 queries per step are ~2x faster per query than 2000 at once)
        step = max(1, int(query_chunk))
        for a in range(0, nq, step):
            sl = slice(a, a + step)
            idx[sl], cost[sl] = tree.search(q[sl], limit[sl], ex_a[sl], ex_b[sl], int(pair_budget))
        none = idx < 0
        cost[none] = limit[none]
        return idx, cost
