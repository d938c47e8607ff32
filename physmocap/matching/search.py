"""Nearest-feature search for motion matching (Eq. 3.14-3.16 of the thesis excerpt).

The features ``X (N, D)`` arrive already normalised and weighted (the betas of Eq. 3.16 are folded
into the columns), so the matching cost is the plain squared Euclidean distance
``cost(i) = sum_k (X[i, k] - q[k])**2``.

Two searches return the *same* frame on every query:

- :func:`brute_force`: the reference, vectorised numpy in chunks.
- :class:`SearchIndex`: an exact bounding-box hierarchy, after orangeduck/Motion-Matching's
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
    """``(n, 2, D)`` float32 centre and half-width of boxes, the half-width rounded up so that
    ``[c - h, c + h]`` still contains ``[lo, hi]``."""
    c = (0.5 * (lo.astype(np.float64) + hi)).astype(np.float32)
    h = np.maximum(hi.astype(np.float64) - c, c - lo.astype(np.float64))
    h = np.nextafter(h.astype(np.float32), np.float32(np.inf))
    return np.ascontiguousarray(np.stack([c, h], axis=-2))


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


class SearchIndex:
    """Exact nearest-feature search over a motion database, built once.

    Args:
        X: ``(N, D)`` features, normalised and weighted, finite (stored as float32).
        valid: ``(N,) bool`` frames that may be returned; at least one.
        range_starts, range_stops: ``(C,)`` clip ranges (stops exclusive) tiling ``[0, N)``.
        tags: optional ``{name: (N,) bool}``; ``tag=name`` restricts a search to those frames.
        leaf: frames per leaf box (Holden uses 16).
        branch: children per inner box (16 -> 64 frames with the default 4, as in Holden's code).
        top: at most this many boxes at the top level.

    The index for a tag is built the first time that tag is searched (or by :meth:`prepare`).
    """

    def __init__(self, X, valid, range_starts, range_stops, tags: Mapping | None = None, *,
                 leaf: int = 16, branch: int = 4, top: int = 64):
        X = _check_features(X)
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
        if leaf < 1 or branch < 2 or top < 1:
            raise ShapeError("SearchIndex: need leaf >= 1, branch >= 2, top >= 1")
        self._tags: dict[str, np.ndarray] = {}
        for name, m in (tags or {}).items():
            self._tags[str(name)] = _check_mask(m, n, f"tag {name!r}").copy()
        self.n_frames, self.n_features = n, d
        self.range_starts = starts.astype(np.int64)
        self.range_stops = stops.astype(np.int64)
        self._clip = np.repeat(np.arange(starts.size), stops - starts)
        self._X = X
        self._valid = valid.copy()
        self._opts = (leaf, branch, top)
        self._trees: dict[str | None, _Tree] = {}
        self._tree(None)

    # -- construction --------------------------------------------------------------------------
    @property
    def tag_names(self) -> tuple[str, ...]:
        return tuple(self._tags)

    def _tree(self, tag: str | None) -> _Tree:
        t = self._trees.get(tag)
        if t is None:
            if tag is None:
                m = self._valid
            else:
                if tag not in self._tags:
                    raise UnknownNameError(f"search: unknown tag {tag!r}; known: "
                                           f"{known_list(self._tags) or '(no tags)'}")
                m = self._valid & self._tags[tag]
            t = _Tree(self._X, np.flatnonzero(m), self._clip, *self._opts)
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
        q = np.asarray(query)
        if q.ndim != 1:
            raise ShapeError(f"search: a single query has shape ({self.n_features},), got "
                             f"{q.shape}; use search_batch for (Q, D)")
        i, c = self.search_batch(q[None], current=None if current is None else [current],
                                 exclude_radius=exclude_radius, tag=tag, best_cost=best_cost)
        return int(i[0]), float(c[0])

    def search_batch(self, queries, *, current=None, exclude_radius: int = 0,
                     tag: str | None = None, best_cost=np.inf, pair_budget: int = 1 << 16,
                     query_chunk: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """Best frames for ``(Q, D)`` queries (e.g. one per character) in one vectorised walk.

        Args:
            queries: ``(Q, D)``.
            current: ``None`` or ``(Q,)`` int frame of each query's character (``-1`` = none).
            exclude_radius: frames of the same clip within this many frames of ``current`` are
                skipped (``0``: the current frame only).
            tag: only frames with this tag (``UnknownNameError`` lists the known tags).
            best_cost: scalar or ``(Q,)``; only frames with a strictly lower cost are returned.
            pair_budget: about how many frame costs are evaluated per step (memory bound).
            query_chunk: queries walked together (amortises numpy's per-call cost; larger
                batches spill the temporaries out of cache).
        Returns:
            ``idx (Q,) int64`` and ``cost (Q,) float64``; ``-1`` with ``best_cost`` where no
            eligible frame beats it.
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
            ex_a = np.where(has, np.maximum(cur - r, self.range_starts[c]), 1)
            ex_b = np.where(has, np.minimum(cur + r, self.range_stops[c] - 1), 0)
        tree = self._tree(tag)
        idx = np.empty(nq, np.int64)
        cost = np.empty(nq)
        # a few queries at a time: the walk's temporaries then stay in cache (measured at
        # 100k frames: 16-64 queries per step are ~2x faster per query than 2000 at once)
        step = max(1, int(query_chunk))
        for a in range(0, nq, step):
            sl = slice(a, a + step)
            idx[sl], cost[sl] = tree.search(q[sl], limit[sl], ex_a[sl], ex_b[sl], int(pair_budget))
        none = idx < 0
        cost[none] = limit[none]
        return idx, cost
