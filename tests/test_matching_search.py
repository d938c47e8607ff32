"""Feature search: the accelerated index returns exactly the brute-force frame (ties to the lowest
index), with exclusion windows, tags, valid masks, the best-cost shortcut and batches -- for both
backends, the compiled one (numba) and the pure-numpy fallback."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physmocap.errors import ShapeError, UnknownNameError
from physmocap.matching import search as search_mod
from physmocap.matching.search import SearchIndex, brute_force

D = 27

try:
    import numba  # noqa: F401
    BACKENDS = ("numba", "numpy")
except ImportError:          # the package works without numba; its tests then run numpy only
    BACKENDS = ("numpy",)
needs_numba = pytest.mark.skipif("numba" not in BACKENDS, reason="numba not installed")


def structured_db(n: int, d: int = D, seed: int = 0):
    """Smooth random walks per clip plus a gait-like oscillation, normalised per feature; the last
    20 frames of each clip are invalid (no full future trajectory)."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(200, 1500, size=n // 200 + 2)
    stops = np.minimum(np.cumsum(lens), n)
    stops = np.unique(stops[stops > 0])
    stops[-1] = n
    starts = np.r_[0, stops[:-1]]
    parts = []
    mix = rng.normal(size=(6, d))
    for a, b in zip(starts, stops):
        t = np.arange(b - a) / 60.0
        walk = np.cumsum(rng.normal(size=(b - a, 4)) * 0.05, axis=0) + rng.normal(size=4)
        gait = np.sin(2 * np.pi * rng.uniform(0.8, 2.5) * t[:, None] + rng.uniform(0, 6, 2))
        parts.append(np.c_[walk, gait] @ mix + 0.05 * rng.normal(size=(b - a, d)))
    X = np.concatenate(parts)
    X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
    valid = np.ones(n, bool)
    for b in stops:
        valid[max(0, b - 20):b] = False
    return X, starts, stops, valid


def window_mask(n, starts, stops, current, radius):
    """``(Q, N)`` bool: the exclusion window of each query (same clip, |i - current| <= radius)."""
    ex = np.zeros((len(current), n), bool)
    clip = np.searchsorted(stops, current, side="right")
    for k, (c, ci) in enumerate(zip(current, clip)):
        if c >= 0:
            ex[k, max(c - radius, starts[ci]):min(c + radius, stops[ci] - 1) + 1] = True
    return ex


@pytest.fixture(scope="module")
def db():
    X, starts, stops, valid = structured_db(20_000)
    rng = np.random.default_rng(7)
    tags = {"walk": np.zeros(len(X), bool), "run": np.zeros(len(X), bool)}
    for a, b in zip(starts, stops):            # whole clips carry a tag, as in a labelled database
        tags["walk" if rng.random() < 0.6 else "run"][a:b] = True
    tags["turn"] = rng.random(len(X)) < 0.1     # a sparse, scattered tag
    index = {b: SearchIndex(X, valid, starts, stops, tags, backend=b) for b in BACKENDS}
    return X, starts, stops, valid, tags, index


def queries(X, valid, n, rng):
    """Half real-like (database rows + N(0, 0.1-0.5)), a quarter uniform, a quarter far away."""
    rows = rng.choice(np.flatnonzero(valid), n // 2)
    sig = rng.uniform(0.1, 0.5, size=(n // 2, 1))
    real = X[rows] + sig * rng.normal(size=(n // 2, X.shape[1]))
    uni = rng.uniform(-2.5, 2.5, size=(n // 4, X.shape[1]))
    far = rng.normal(size=(n - n // 2 - n // 4, X.shape[1])) * 4
    return np.concatenate([real, uni, far]), rows


def test_index_equals_brute_force_10000_queries(db):
    X, starts, stops, valid, tags, indexes = db
    rng = np.random.default_rng(1)
    Q, _ = queries(X, valid, 10_000, rng)
    i_bf, c_bf = brute_force(X, Q, valid)
    for backend, index in indexes.items():
        assert index.backend == backend
        i_idx, c_idx = index.search_batch(Q)
        np.testing.assert_array_equal(i_idx, i_bf)
        np.testing.assert_array_equal(c_idx, c_bf)     # bit-identical float64 costs
        assert valid[i_idx].all()
    if "numba" in indexes:                              # the single-query kernel too
        one = indexes["numba"]
        for k in range(0, len(Q), 5):
            assert one.search(Q[k]) == (i_bf[k], c_bf[k])


def test_exclusion_window_tags_and_best_cost_batched(db):
    X, starts, stops, valid, tags, indexes = db
    rng = np.random.default_rng(2)
    Q, rows = queries(X, valid, 1_000, rng)
    current = np.full(len(Q), -1)
    current[: len(rows)] = rows                 # real-like queries come from their current frame
    hit = current >= 0
    ex20 = window_mask(len(X), starts, stops, current, 20)
    cases = []                                  # (search_batch kwargs, brute-force reference)
    for radius in (0, 20):
        ex = ex20 if radius == 20 else window_mask(len(X), starts, stops, current, radius)
        cases.append((dict(current=current, exclude_radius=radius),
                      brute_force(X, Q, valid, exclude=ex)))
    for name in ("walk", "run", "turn"):
        cases.append((dict(tag=name, current=current, exclude_radius=20),
                      brute_force(X, Q, valid & tags[name], exclude=ex20)))
    # best-cost shortcut: the cost of carrying on from the current frame
    cur_cost = np.where(hit, ((X[np.maximum(current, 0)] - Q) ** 2).sum(1), 5.0)
    i_bf, c_bf = cases[1][1]
    better = c_bf < cur_cost
    for backend, index in indexes.items():
        for kw, (i_bf, c_bf) in cases:
            i_idx, c_idx = index.search_batch(Q, **kw)
            np.testing.assert_array_equal(i_idx, i_bf, err_msg=f"{backend} {kw.keys()}")
            np.testing.assert_array_equal(c_idx, c_bf)
            got = hit & (i_idx >= 0)
            assert np.all(np.abs(i_idx[got] - current[got]) > kw["exclude_radius"])
            if "tag" in kw:
                assert tags[kw["tag"]][i_idx].all()
        i_bf, c_bf = cases[1][1]
        i_idx, c_idx = index.search_batch(Q, current=current, exclude_radius=20,
                                          best_cost=cur_cost)
        np.testing.assert_array_equal(i_idx[better], i_bf[better])
        np.testing.assert_array_equal(i_idx[~better], -1)
        np.testing.assert_array_equal(c_idx[~better], cur_cost[~better])


@pytest.mark.parametrize("backend", BACKENDS)
def test_single_query_matches_batch(db, backend):
    X, starts, stops, valid, tags, index = db
    index = index[backend]
    rng = np.random.default_rng(3)
    Q, rows = queries(X, valid, 40, rng)
    bi, bc = index.search_batch(Q, current=np.r_[rows, np.full(len(Q) - len(rows), -1)],
                                exclude_radius=10)
    for k in range(len(Q)):
        # numpy and Python ints alike
        cur = (int(rows[k]) if k % 2 else rows[k]) if k < len(rows) else None
        i, c = index.search(Q[k], current=cur, exclude_radius=10)
        assert (i, c) == (bi[k], bc[k])
        assert isinstance(i, int) and isinstance(c, float)
    i, c = brute_force(X, Q[0], valid)
    assert isinstance(i, int) and i == index.search(Q[0])[0]
    # read-only and unaligned queries (numba's fast entry point is compiled for neither)
    ro = Q[1].copy()
    ro.setflags(write=False)
    buf = np.empty(Q.shape[1] * 8 + 1, np.uint8)
    odd = np.frombuffer(buf.data, np.float64, Q.shape[1], offset=1)
    assert not odd.flags.aligned
    odd[:] = Q[1]
    i_bf, c_bf = brute_force(X, Q[1], valid)
    assert index.search(ro) == index.search(odd) == index.search(Q[1]) == (i_bf, c_bf)
    # the controller's call: one query, its current frame excluded, warm-started with the cost
    # of carrying on (float32 query rows, as numpy would hand them over, must work too)
    for k in range(len(rows)):
        cur = int(rows[k])
        own = float(((X[cur].astype(np.float64) - Q[k]) ** 2).sum())
        ex = window_mask(len(X), starts, stops, [cur], 20)
        i_bf, c_bf = brute_force(X, Q[k], valid, exclude=ex[0])
        got = index.search(Q[k].astype(np.float32 if k % 2 else np.float64), current=cur,
                           exclude_radius=20, best_cost=own)
        if k % 2 == 0:
            assert got == ((i_bf, c_bf) if c_bf < own else (-1, own))
        else:
            assert got[0] == -1 or valid[got[0]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_exclusion_window_stays_in_its_clip(backend):
    # two clips of identical frames: excluding around frame 1 of clip 0 must not touch clip 1
    X = np.repeat(np.arange(4, dtype=np.float32)[:, None], 2, axis=1)
    X = np.concatenate([X, X])
    index = SearchIndex(X, np.ones(8, bool), [0, 4], [4, 8], leaf=2, branch=2, top=1,
                        backend=backend)
    assert index.search(X[1], current=1, exclude_radius=10) == (5, 0.0)
    assert index.search(X[1]) == (1, 0.0)          # ties go to the lowest index
    assert index.search(X[1], current=1) == (5, 0.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nothing_eligible_gives_minus_one(backend):
    X = np.zeros((5, 3), np.float32)
    valid = np.zeros(5, bool)
    valid[2] = True
    index = SearchIndex(X, valid, [0], [5], {"none": np.zeros(5, bool)}, backend=backend)
    assert index.search(np.zeros(3), current=2) == (-1, np.inf)
    assert index.search(np.zeros(3), tag="none") == (-1, np.inf)
    assert index.search(np.zeros(3), best_cost=0.0) == (-1, 0.0)   # strictly better only
    assert index.search(np.ones(3), best_cost=3.5) == (2, 3.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_memory_is_about_the_features(db, backend):
    X, starts, stops, valid, tags, _ = db
    index = SearchIndex(X, valid, starts, stops, backend=backend)
    # the float32 features are kept twice (as given and reordered); boxes and maps add < 40 %
    # (numba: leaves of 4 frames instead of 16, their float32 lo/hi boxes alone are X / 2 and the
    # levels above them X / 6, and the reordered rows and boxes padded to a multiple of 8
    # columns, 32 / 27 here: < 1 + 1.9 * 32 / 27)
    pad = -(-X.shape[1] // 8) * 8 / X.shape[1]
    assert index.nbytes < (2.4 if backend == "numpy" else 1 + 1.9 * pad) * X.nbytes


# ---- properties on small hostile databases (ties, duplicates, one clip, one valid frame) ------

@st.composite
def small_db(draw):
    n = draw(st.integers(1, 60))
    d = draw(st.integers(1, 4))
    vals = st.integers(-2, 2)                  # few distinct values: many exact ties/duplicates
    X = np.array(draw(st.lists(st.lists(vals, min_size=d, max_size=d), min_size=n, max_size=n)),
                 np.float32).reshape(n, d) * 0.5
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=4)))) if n > 1 else []
    starts = np.array([0] + cuts)
    stops = np.array(cuts + [n])
    mode = draw(st.sampled_from(["all", "random", "one"]))
    if mode == "all":
        valid = np.ones(n, bool)
    elif mode == "one":
        valid = np.zeros(n, bool)
        valid[draw(st.integers(0, n - 1))] = True
    else:
        valid = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        valid[draw(st.integers(0, n - 1))] = True
    nq = draw(st.integers(1, 6))
    Q = np.array(draw(st.lists(st.lists(st.integers(-5, 5), min_size=d, max_size=d),
                               min_size=nq, max_size=nq)), float).reshape(nq, d) * 0.5
    current = np.array(draw(st.lists(st.integers(-1, n - 1), min_size=nq, max_size=nq)))
    radius = draw(st.integers(0, 3))
    best = draw(st.sampled_from([np.inf, 0.0, 0.75, 2.0]))
    shape = draw(st.sampled_from([(16, 4, 64), (1, 2, 1), (2, 3, 2), (3, 2, 1)]))
    return X, starts, stops, valid, Q, current, radius, best, shape


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_db())
def test_property_index_equals_brute_force(case):
    X, starts, stops, valid, Q, current, radius, best, (leaf, branch, top) = case
    i_bf, c_bf = brute_force(X, Q, valid)
    ex = window_mask(len(X), starts, stops, current, radius)
    i_bx, c_bx = brute_force(X, Q, valid, exclude=ex)
    beat = c_bx < best
    for backend in BACKENDS:
        index = SearchIndex(X, valid, starts, stops, leaf=leaf, branch=branch, top=top,
                            backend=backend)
        i_idx, c_idx = index.search_batch(Q)
        np.testing.assert_array_equal(i_idx, i_bf)
        np.testing.assert_array_equal(c_idx, c_bf)
        i_idx, c_idx = index.search_batch(Q, current=current, exclude_radius=radius,
                                          best_cost=best)
        np.testing.assert_array_equal(i_idx, np.where(beat, i_bx, -1))
        np.testing.assert_array_equal(c_idx, np.where(beat, c_bx, best))
        for k in range(len(Q)):                 # the single-query path (its own kernel)
            got = index.search(Q[k], current=int(current[k]), exclude_radius=radius,
                               best_cost=best)
            assert got == ((i_bx[k], c_bx[k]) if beat[k] else (-1, best))


def test_near_ties_at_float32_resolution():
    # frames a few float32 ulps apart and float64 queries between them: the float32 bounds of
    # the compiled index round the query, their margins must still keep every frame that wins
    rng = np.random.default_rng(11)
    base = rng.normal(size=6).astype(np.float32) * 3
    ulp = np.spacing(base)
    X = (base + rng.integers(-3, 4, size=(400, 6)) * ulp).astype(np.float32)
    Q = base + rng.uniform(-3.5, 3.5, size=(2000, 6)) * ulp.astype(np.float64)
    starts, stops = np.array([0, 150]), np.array([150, 400])
    valid = np.ones(400, bool)
    i_bf, c_bf = brute_force(X, Q, valid)
    for backend in BACKENDS:
        index = SearchIndex(X, valid, starts, stops, backend=backend, leaf=4, branch=2, top=2)
        i_idx, c_idx = index.search_batch(Q)
        np.testing.assert_array_equal(i_idx, i_bf)
        np.testing.assert_array_equal(c_idx, c_bf)
        assert [index.search(q) for q in Q[:300]] == list(zip(i_bf[:300], c_bf[:300]))


def test_rotated_bounds_stay_exact_with_wide_scales():
    # the compiled index bounds in the principal axes: features whose scales span 1e-3..1e4, mixed
    # by a random rotation, rounded to float32, duplicated within a few ulps, queried a few ulps
    # from a frame. The float32 rows of the rotation then err by more than those ulps; the
    # bound's allowance for that (`ey`) must keep every frame that wins (without it, measured:
    # ~1500 of 30 000 answers wrong)
    for seed in range(10):
        rng = np.random.default_rng(seed)
        m, _ = np.linalg.qr(rng.normal(size=(6, 6)))
        base = (rng.normal(size=(60, 6)) * [1e4, 30, 1, 0.1, 1e-3, 1e-3]) @ m.T
        X = np.repeat(base, 5, axis=0)
        X = (X + rng.integers(-2, 3, size=X.shape) * np.spacing(X.astype(np.float32)))
        X = X.astype(np.float32)
        rows = rng.integers(0, len(X), 3000)
        Q = X[rows].astype(np.float64) + rng.uniform(-3, 3, size=(3000, 6)) * np.spacing(X[rows])
        valid = np.ones(len(X), bool)
        i_bf, c_bf = brute_force(X, Q, valid)
        for backend in BACKENDS:
            index = SearchIndex(X, valid, [0, 150], [150, 300], backend=backend, leaf=4,
                                branch=2, top=2)
            i_idx, c_idx = index.search_batch(Q)
            np.testing.assert_array_equal(i_idx, i_bf)
            np.testing.assert_array_equal(c_idx, c_bf)
            assert [index.search(q) for q in Q[:200]] == list(zip(i_bf[:200], c_bf[:200]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_keeps_its_own_copy_of_the_features(backend):
    # the compiled search reads frames' rows at query time: changing (or freezing) the caller's
    # array afterwards must not change the answers
    X, starts, stops, valid = structured_db(2000)
    q = X[100].astype(np.float64) + 0.01
    index = SearchIndex(X, valid, starts, stops, backend=backend)
    before = index.search(q)
    X[:] = 0.0
    assert index.search(q) == before
    X2, *_ = structured_db(2000)
    X2.setflags(write=False)
    assert SearchIndex(X2, valid, starts, stops, backend=backend).search(q) == before


# ---- the compiled backend: exact costs, selection, fallback ------------------------------------

@needs_numba
def test_numba_cost_is_numpys_pairwise_sum():
    # the decisive cost must equal _cost_rows bit for bit, for any D (numpy's pairwise summation
    # switches strategy at 8 and recurses above 128 terms)
    search_mod._numba_kernels()
    rng = np.random.default_rng(5)
    for d in (*range(1, 40), 64, 127, 128, 129, 200, 300, 517):
        X = (rng.normal(size=(50, d)) * rng.uniform(0.01, 100, size=d)).astype(np.float32)
        q = rng.normal(size=d) * 3
        ref = search_mod._cost_rows(X, q)
        got = np.array([search_mod._nb_cost(X[i], q) for i in range(len(X))])
        np.testing.assert_array_equal(got, ref)


@needs_numba
def test_prefetch_compiles_and_changes_nothing():
    # the kernels prefetch the boxes and rows they will read next; that must compile here (else
    # the search silently loses its cold-cache speed-up) and must not change any value
    search_mod._numba_kernels()
    made = search_mod._prefetch_intrinsic(numba)
    pf = search_mod._nb_prefetch                  # what the kernels were compiled with
    assert made is not None and type(pf) is type(made)   # the intrinsic, not the no-op fallback

    @numba.njit
    def touch(a):
        for e in range(0, a.size, 16):
            pf(a, e)
        return a.sum()
    a = np.arange(100, dtype=np.float32).reshape(10, 10)
    before = a.copy()
    assert touch(a) == before.sum()
    np.testing.assert_array_equal(a, before)
    with pytest.raises(numba.TypingError):         # strided views have no flat index
        touch(a[:, ::2])


_ONE_CPU_SCRIPT = """
import os, threading, numpy as np
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from physmocap.matching.search import SearchIndex, brute_force
out = {}
def work():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    ok = rng.random(3000) > 0.1
    q = X[:50] + 0.1 * rng.normal(size=(50, 6))
    index = SearchIndex(X, ok, [0, 1000], [1000, 3000])
    out["same"] = all(np.array_equal(a, b) for a, b in
                      zip(index.search_batch(q), brute_force(X, q, ok)))
t = threading.Thread(target=work)
t.start()
t.join()
print("same" if out["same"] else "DIFFERENT")
"""


@needs_numba
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_one_cpu_batch_search_from_a_thread_exits():
    # on one CPU the batch kernel runs serially: numba's TBB pool, first started outside the
    # main thread, hung the process at exit (after the last test passed, in CI pinned to a CPU)
    r = subprocess.run([sys.executable, "-c", _ONE_CPU_SCRIPT], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "same"


@needs_numba
def test_backend_selection_and_fallback(monkeypatch):
    X = np.random.default_rng(0).normal(size=(300, 5)).astype(np.float32)
    ok = np.ones(300, bool)
    assert SearchIndex(X, ok, [0], [300]).backend == "numba"          # auto picks numba
    assert SearchIndex(X, ok, [0], [300], backend="numpy").backend == "numpy"
    # compiled at construction (warm-up): the first query runs no compilation
    one, many, entry = search_mod._NB_STATE["kernels"]
    assert one.signatures and many.signatures
    assert entry is not None        # the single query skips the dispatcher (numba >= 0.68)
    with pytest.raises(UnknownNameError, match="unknown backend 'gpu'"):
        SearchIndex(X, ok, [0], [300], backend="gpu")
    # numba missing: auto falls back to numpy (same answers), an explicit request says why
    monkeypatch.setattr(search_mod, "_NB_STATE", {"error": "ImportError: No module named 'numba'"})
    index = SearchIndex(X, ok, [0], [300])
    assert index.backend == "numpy"
    assert index.search(X[7]) == (7, 0.0)
    with pytest.raises(ImportError, match="numba is unavailable.*No module named"):
        SearchIndex(X, ok, [0], [300], backend="numba")


# ---- error paths --------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_errors(backend):
    X = np.zeros((10, 3), np.float32)
    ok = np.ones(10, bool)
    with pytest.raises(ShapeError, match="shape"):
        SearchIndex(np.zeros(10), ok, [0], [10])
    with pytest.raises(ShapeError, match="numeric"):
        SearchIndex(np.zeros((10, 3), object), ok, [0], [10])
    bad = X.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ShapeError, match="NaN.*frame 4"):
        SearchIndex(bad, ok, [0], [10])
    with pytest.raises(ShapeError, match="no valid frame"):
        SearchIndex(X, np.zeros(10, bool), [0], [10])
    with pytest.raises(ShapeError, match="bool"):
        SearchIndex(X, np.ones(10), [0], [10])
    with pytest.raises(ShapeError, match=r"\(10,\)"):
        SearchIndex(X, np.ones(9, bool), [0], [9])
    with pytest.raises(ShapeError, match="tile"):
        SearchIndex(X, ok, [0, 6], [5, 10])
    with pytest.raises(ShapeError, match="integer"):
        SearchIndex(X, ok, [0.0], [10.0])
    with pytest.raises(ShapeError, match="tag 'walk'"):
        SearchIndex(X, ok, [0], [10], {"walk": np.ones(10)})
    index = SearchIndex(X, ok, [0, 5], [5, 10], {"walk": ok, "run": ~ok}, backend=backend)
    with pytest.raises(UnknownNameError, match="unknown tag 'jump'; known: walk, run"):
        index.search(np.zeros(3), tag="jump")
    with pytest.raises(ShapeError, match=r"\(3,\) or \(Q, 3\)"):
        index.search_batch(np.zeros((2, 4)))
    with pytest.raises(ShapeError, match="single query"):
        index.search(np.zeros((1, 3)))
    with pytest.raises(ShapeError, match="NaN"):
        index.search(np.array([0.0, np.nan, 0.0]))
    with pytest.raises(ShapeError, match="NaN"):
        index.search(np.array([0.0, np.inf, 0.0], np.float32))
    with pytest.raises(ShapeError, match="numeric"):
        index.search(np.array(["a", "b", "c"]))
    with pytest.raises(ShapeError, match=r"\(3,\)"):
        index.search(np.zeros(4))
    with pytest.raises(ShapeError, match="exclude_radius must be >= 0"):
        index.search(np.zeros(3), exclude_radius=-1)
    for leaf, branch, top in ((0, 4, 8), (4, 1, 8), (4, 4, 0)):
        with pytest.raises(ShapeError, match="need leaf >= 1, branch >= 2, top >= 1"):
            SearchIndex(X, ok, [0], [10], leaf=leaf, branch=branch, top=top, backend=backend)
    with pytest.raises(ShapeError, match="best_cost"):
        index.search(np.zeros(3), best_cost=np.nan)
    with pytest.raises(ShapeError, match="best_cost"):
        index.search_batch(np.zeros((2, 3)), best_cost=[1.0, 2.0, 3.0])
    with pytest.raises(ShapeError, match="current"):
        index.search(np.zeros(3), current=10)
    with pytest.raises(ShapeError, match="current"):
        index.search_batch(np.zeros((2, 3)), current=[1])
    with pytest.raises(ShapeError, match="exclude_radius"):
        index.search(np.zeros(3), current=1, exclude_radius=-1)
    for bad_current in (True, np.bool_(True), 1.0, "1"):
        with pytest.raises(ShapeError, match="current must be None or"):
            index.search(np.zeros(3), current=bad_current)
    with pytest.raises(ShapeError, match="exclude"):
        brute_force(X, np.zeros(3), ok, exclude=np.ones(3, bool))
    with pytest.raises(ShapeError, match="NaN"):
        brute_force(bad, np.zeros(3), ok)
