"""Kinematic reference solver: synthetic ground truth from a real CMU motion (16_57, run/jog).

All 268 frames of 16_57 after the T-pose are used (frame 0 of the file is dropped); each solve
takes well under a second.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physmocap import quat
from physmocap.errors import ShapeError, UnknownNameError
from physmocap.io.bvh import read_bvh
from physmocap.markers import MarkerSet
from physmocap.motion import Motion
from physmocap.skeleton import Skeleton
from physmocap.solver import (default_free_joints, joint_angle_error_deg, marker_jacobian,
                              marker_positions, observable_joints, place_markers,
                              solve_kinematic, synthesize)
from physmocap.solver import kinematic as K

NOISE = 0.002


@pytest.fixture(scope="module")
def motion(data_dir) -> Motion:
    return read_bvh(data_dir / "bvh/cmu/16_57.bvh")[1:]  # frame 0 is the T-pose


@pytest.fixture(scope="module")
def markerset(motion) -> MarkerSet:
    return place_markers(motion, per_segment=3, rng=np.random.default_rng(7))


@pytest.fixture(scope="module")
def clean(motion, markerset):
    """Markers with 2 mm noise, the solve, and the error per observable joint."""
    pos = synthesize(motion, markerset, noise_m=NOISE, rng=np.random.default_rng(8))
    res = solve_kinematic(motion.skeleton, markerset, pos)
    err = joint_angle_error_deg(res.motion, motion, res.observable)
    return pos, res, err


# --------------------------------------------------------------------------- synthetic data


def test_place_markers_rigid_off_axis_non_collinear(motion, markerset):
    sk = motion.skeleton
    bodies = np.unique(markerset.body)
    lengths = sk.bone_lengths()
    assert 0 in bodies and np.all(lengths[bodies[1:]] > 0)  # helper joints carry none
    assert len(markerset) == 3 * len(bodies)
    for j in bodies:
        off = markerset.offset[markerset.body == j]
        d = np.linalg.norm(off, axis=1)
        assert np.all(d >= 0.03 - 1e-12)
        sv = np.linalg.svd(off - off.mean(0), compute_uv=False)
        assert sv[1] > 0.01, f"markers of {sk.names[j]} nearly collinear"
        for c in sk.children(j):  # not on the bone axis
            u = sk.offsets[c]
            if np.linalg.norm(u) > 0:
                u = u / np.linalg.norm(u)
                perp = np.linalg.norm(off - (off @ u)[:, None] * u, axis=1)
                assert np.all(perp > 0.02)
    ms2 = place_markers(motion, 2, np.random.default_rng(0), skip=("Head",))
    assert sk.index("Head") not in ms2.body
    with pytest.raises(UnknownNameError, match="known: Hips"):
        place_markers(motion, skip=("Nope",))


def test_synthesize_noise_drop_gaps(motion, markerset):
    exact = marker_positions(motion.skeleton, markerset, motion.lrot, motion.root_pos)
    pos = synthesize(motion, markerset, noise_m=0.0)
    np.testing.assert_allclose(pos, exact)
    name = markerset.names[5]
    pos = synthesize(motion, markerset, noise_m=NOISE, drop=0.3, rng=np.random.default_rng(1),
                     gaps=[([name], 10, 20)])
    miss = np.isnan(pos).any(-1)
    assert miss[10:20, 5].all() and abs(miss.mean() - 0.3) < 0.02
    d = (pos - exact)[~miss]
    assert abs(d.std() - NOISE) < 1e-4
    with pytest.raises(UnknownNameError, match="unknown marker 'XX'"):
        synthesize(motion, markerset, gaps=[(["XX"], 0, 1)])


def test_joint_angle_error(motion):
    assert np.all(joint_angle_error_deg(motion, motion) < 1e-5)
    turned = Motion(motion.skeleton, motion.fps, motion.root_pos,
                    quat.mul(motion.lrot, quat.from_axis_angle(np.array([0, 0, 1.0]),
                                                               np.radians(10.0))))
    e = joint_angle_error_deg(turned, motion, ["Hips", "LeftLeg"])
    assert e.shape == (motion.n_frames, 2)
    np.testing.assert_allclose(e, 10.0, atol=1e-6)
    with pytest.raises(ShapeError, match="30 frames vs 268"):
        joint_angle_error_deg(motion[:30], motion)
    other = Motion(Skeleton(["Hips", "Spine"], [-1, 0], np.zeros((2, 3))), motion.fps,
                   motion.root_pos, quat.identity((motion.n_frames, 2)))
    with pytest.raises(ShapeError, match="skeletons differ in joints"):
        joint_angle_error_deg(other, motion)
    with pytest.raises(ShapeError, match=r"joints mask: expected shape \(31,\)"):
        joint_angle_error_deg(motion, motion, np.ones(3, bool))


def test_synthetic_markers_refuse_bad_settings(motion, markerset):
    for kw in (dict(per_segment=0), dict(min_dist=0.0), dict(min_dist=0.2, max_dist=0.1),
               dict(min_dist=float("nan"))):
        with pytest.raises(ShapeError, match="per_segment must be|0 < min_dist <= max_dist"):
            place_markers(motion, **kw)
    with pytest.raises(ShapeError, match="no segment to put a marker on"):
        place_markers(motion, skip=motion.skeleton.names)
    for kw in (dict(noise_m=-0.001), dict(noise_m=float("nan")), dict(drop=1.5)):
        with pytest.raises(ShapeError, match="need noise_m >= 0 and 0 <= drop <= 1"):
            synthesize(motion, markerset, **kw)


# --------------------------------------------------------------------------- derivatives


def _perturbed(motion, rng, n=4, scale=0.5):
    idx = rng.choice(motion.n_frames, n, replace=False)
    lrot = quat.mul(motion.lrot[idx], quat.from_scaled_axis(
        rng.normal(scale=scale, size=motion.lrot[idx].shape[:-1] + (3,))))
    return lrot, motion.root_pos[idx] + rng.normal(scale=0.1, size=(n, 3))


def test_jacobian_matches_finite_differences(motion, markerset):
    rng = np.random.default_rng(3)
    sk = motion.skeleton
    lrot, root = _perturbed(motion, rng)
    free = default_free_joints(sk, markerset)
    free_idx = np.flatnonzero(free)
    Jac = marker_jacobian(sk, markerset, lrot, root, free)
    P = 3 + 3 * len(free_idx)
    assert Jac.shape == (4, 3 * len(markerset), P)
    num = np.empty_like(Jac)
    eps = 1e-6
    for p in range(P):
        d = np.zeros((len(lrot), P))
        d[:, p] = eps
        lp, rp = K._apply(lrot, root, d, free_idx)
        lm, rm = K._apply(lrot, root, -d, free_idx)
        num[:, :, p] = ((marker_positions(sk, markerset, lp, rp)
                         - marker_positions(sk, markerset, lm, rm)) / (2 * eps)).reshape(4, -1)
    np.testing.assert_allclose(Jac, num, atol=1e-8)
    # Rows of markers not downstream of a joint are exactly zero.
    sub = K._subtree_matrix(sk)
    c = int(np.flatnonzero(free_idx == sk.index("LeftForeArm"))[0])
    rows = np.flatnonzero(~sub[sk.index("LeftForeArm")][markerset.body])
    assert np.all(Jac[:, (3 * rows[:, None] + np.arange(3)).ravel(), 3 + 3 * c:6 + 3 * c] == 0)


def test_moment_normal_equations_equal_dense_product(motion, markerset):
    """The solver's closed-form J^T W J and J^T W r equal the dense products of the Jacobian."""
    rng = np.random.default_rng(4)
    sk = motion.skeleton
    lrot, root = _perturbed(motion, rng)
    free_idx = np.flatnonzero(default_free_joints(sk, markerset))
    stc = K._Structure(sk, markerset, free_idx)
    obs = marker_positions(sk, markerset, lrot, root) + rng.normal(scale=0.02,
                                                                    size=(4, len(markerset), 3))
    vis = rng.random((4, len(markerset))) > 0.3
    wm = rng.random((4, len(markerset))) * vis
    gpos, R, pm, r, _, w, _ = K._evaluate(stc, lrot, root, obs, vis, wm, 0.05)
    A, g = K._normal_equations(stc, w, pm, r, gpos)
    B = np.zeros((4, stc.P, stc.P))
    B[:, :3, :3] = np.eye(3)
    for c, j in enumerate(free_idx):
        B[:, 3 + 3 * c:6 + 3 * c, 3 + 3 * c:6 + 3 * c] = R[:, j]
    Jac = marker_jacobian(sk, markerset, lrot, root)
    W = np.repeat(w, 3, axis=1)
    dense_A = np.einsum("fri,fr,frj->fij", Jac, W, Jac)
    dense_g = np.einsum("fri,fr,fr->fi", Jac, W, r.reshape(4, -1))
    np.testing.assert_allclose(np.swapaxes(B, 1, 2) @ A @ B, dense_A, atol=1e-12)
    np.testing.assert_allclose((np.swapaxes(B, 1, 2) @ g[..., None])[..., 0], dense_g, atol=1e-14)


# --------------------------------------------------------------------------- accuracy


def test_clean_solve_accuracy_and_noise_floor(motion, markerset, clean):
    pos, res, err = clean
    sk = motion.skeleton
    assert res.motion.meta["solver"] == "kinematic" and res.motion.fps == 120.0
    assert res.converged.all()
    assert np.allclose(np.linalg.norm(res.motion.lrot, axis=-1), 1.0)
    assert res.observable.sum() >= 12 and res.observable[0]
    # Honest noise floor: the residual of the ground-truth pose (a perfect fit).
    truth = marker_positions(sk, markerset, motion.lrot, motion.root_pos)
    floor = np.sqrt(np.mean(np.sum((pos - truth) ** 2, -1)))
    rms = np.sqrt(np.nanmean(res.residual ** 2))
    assert floor == pytest.approx(NOISE * np.sqrt(3), rel=0.02)
    assert abs(rms - floor) < 0.001          # within 1 mm; below it, the fit absorbs some noise
    assert err.mean() <= 2.0
    # The error is the noise-limited optimum: starting at the truth ends in the same place.
    at_truth = solve_kinematic(sk, markerset, pos, init=motion)
    err_t = joint_angle_error_deg(at_truth.motion, motion, res.observable)
    assert abs(err.mean() - err_t.mean()) < 0.01


def test_zero_noise_full_clip_recovers_markers(motion, markerset):
    pos = synthesize(motion, markerset, noise_m=0.0)
    res = solve_kinematic(motion.skeleton, markerset, pos)
    assert np.max(res.residual) < 1e-6
    assert res.converged.all()


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 31 - 1), frame=st.integers(0, 267),
       scale=st.floats(0.0, 0.4))
def test_property_zero_noise_recovers_markers(motion, markerset, seed, frame, scale):
    """Markers from a known pose (a real frame with random joint offsets applied), solved from
    a pose perturbed by up to ``scale`` rad per joint, come back to < 1e-6 m."""
    rng = np.random.default_rng(seed)
    sk = motion.skeleton
    m = motion[frame]
    lrot = quat.mul(m.lrot, quat.from_scaled_axis(rng.normal(scale=0.2, size=(1, len(sk), 3))))
    truth = Motion(sk, 120.0, m.root_pos, lrot)
    pos = synthesize(truth, markerset, noise_m=0.0)
    start = quat.mul(lrot, quat.from_scaled_axis(rng.normal(scale=scale / 2, size=(1, len(sk), 3))))
    init = Motion(sk, 120.0, m.root_pos + rng.normal(scale=0.05, size=(1, 3)), start)
    res = solve_kinematic(sk, markerset, pos, init=init, iterations=100)
    assert np.max(res.residual) < 1e-6


# --------------------------------------------------------------------------- robustness


def test_dropout_and_forearm_gap(motion, markerset, clean):
    _, _, err_clean = clean
    sk = motion.skeleton
    fore = [n for n in markerset.names if n.startswith("LeftForeArm_")]
    g0, g1 = 60, 180  # 1 s at 120 fps
    drop = synthesize(motion, markerset, noise_m=NOISE, drop=0.3, rng=np.random.default_rng(8))
    gap = drop.copy()
    gap[g0:g1, [markerset.names.index(n) for n in fore]] = np.nan
    res_d = solve_kinematic(sk, markerset, drop)
    res_g = solve_kinematic(sk, markerset, gap)
    obs = res_g.observable
    assert np.all(np.isfinite(res_g.motion.lrot)) and np.all(np.isfinite(res_g.motion.root_pos))
    assert np.isnan(res_g.residual[g0:g1, markerset.names.index(fore[0])]).all()
    e_d = joint_angle_error_deg(res_d.motion, motion, obs)
    e_g = joint_angle_error_deg(res_g.motion, motion, obs)
    outside = np.ones(motion.n_frames, bool)
    outside[g0:g1] = False
    # The gap does not spoil the frames around it ...
    assert e_g[outside].mean() <= e_d[outside].mean() + 1.0
    # ... and 30 % dropout costs at most ~1.5 degrees over the clean solve (information lost).
    assert e_g[outside].mean() <= err_clean[outside].mean() + 1.5
    # No flips: no observable joint jumps between frames much more than the truth does.
    step = np.degrees(quat.angle(res_g.motion.lrot[1:], res_g.motion.lrot[:-1]))
    true_step = np.degrees(quat.angle(motion.lrot[1:], motion.lrot[:-1]))
    assert np.max((step - true_step)[:, obs]) < 60.0
    # Inside the gap the forearm is still held by the hand and upper arm.
    fa = list(np.flatnonzero(obs)).index(sk.index("LeftForeArm"))
    assert e_g[g0:g1, fa].mean() < 10.0


def test_hold_keeps_poorly_seen_segments_where_they_were(motion, markerset, clean):
    """``hold`` (the pipeline's ``TRACKING``): a take without gaps solves exactly as without it;
    with 30 % of the samples dropped the error grows less than frame by frame alone (measured
    at 120 Hz, 3 markers per segment: +1.30 deg alone, +0.03 deg held)."""
    from physmocap.solver.pipeline import TRACKING
    pos, res, err = clean
    held = solve_kinematic(motion.skeleton, markerset, pos, **TRACKING)
    assert np.array_equal(held.motion.lrot, res.motion.lrot)
    drop = synthesize(motion, markerset, noise_m=NOISE, drop=0.3, rng=np.random.default_rng(8))
    alone = joint_angle_error_deg(solve_kinematic(motion.skeleton, markerset, drop).motion,
                                  motion, res.observable).mean() - err.mean()
    with_hold = joint_angle_error_deg(
        solve_kinematic(motion.skeleton, markerset, drop, **TRACKING).motion, motion,
        res.observable).mean() - err.mean()
    print(f"error growth with 30 % dropped: {alone:.2f} deg alone, {with_hold:.2f} held")
    assert with_hold < alone - 0.3 and with_hold < 1.0


def test_ghost_marker_is_rejected(motion, markerset, clean):
    pos, res_clean, err_clean = clean
    sk = motion.skeleton
    k = 150
    gi = markerset.names.index("RightForeArm_1")
    ghost = pos.copy()
    ghost[k, gi] += np.array([0.3, 0.4, 0.0])  # 0.5 m away
    robust = solve_kinematic(sk, markerset, ghost, max_marker_pull=0.05)
    plain = solve_kinematic(sk, markerset, ghost)
    e_r = joint_angle_error_deg(robust.motion, motion, robust.observable)[k]
    e_p = joint_angle_error_deg(plain.motion, motion, plain.observable)[k]
    assert e_r.mean() < 3.0 and e_r.max() < 5.0
    assert e_p.mean() > e_r.mean() + 2.0  # plain least squares is torn by it
    assert robust.residual[k, gi] > 0.4 and robust.outlier[k, gi]
    assert robust.outlier.sum() <= 3  # barely anything else is flagged
    assert not plain.outlier.any()


def test_first_frame_with_missing_markers(motion, markerset, clean):
    pos, _, err_clean = clean
    p = pos.copy()
    p[0, ::4] = np.nan  # a quarter of the markers unseen in frame 0
    res = solve_kinematic(motion.skeleton, markerset, p)
    assert res.seed_frame == 0
    err = joint_angle_error_deg(res.motion, motion, res.observable)
    assert err.mean() <= err_clean.mean() + 0.2


def test_free_joints_hold_their_rotation(motion, markerset, clean):
    pos, _, _ = clean
    sk = motion.skeleton
    free = default_free_joints(sk, markerset)
    free[sk.index("LeftLeg")] = False
    res = solve_kinematic(sk, markerset, pos[:20], init=motion[:20], free_joints=free)
    np.testing.assert_allclose(res.motion.lrot[:, sk.index("LeftLeg")],
                               motion.lrot[:20, sk.index("LeftLeg")])
    # Leaves with no marker at or below them are not free by default.
    dfree = default_free_joints(sk, markerset)
    assert not dfree[sk.index("LThumb")] and dfree[sk.index("LHipJoint")]
    assert not observable_joints(sk, markerset)[sk.index("LHipJoint")]


def test_schedule_starts_from_solved_frames_and_batches_short_gaps():
    """``_schedule``: every frame starts from a frame solved in an earlier round, no further
    back than its kind allows; a take seeing every marker is chunked as before (``chunk``
    frames from the frame before them); scattered gaps no longer chain every frame."""
    F, seed = 400, 0
    rng = np.random.default_rng(3)
    complete = rng.random(F) > 0.3                  # 30 % of the frames miss a marker
    complete[200:260] = False                       # and a long run of them
    seen = np.ones(F, bool)
    seen[[50, 51, 230]] = False                     # frames seeing nothing
    complete &= seen
    for order in (np.arange(seed + 1, F), np.arange(F - 2, -1, -1)):
        s0 = order[0] - (order[1] - order[0])
        start, rounds = K._schedule(order, s0, complete, seen, 32, 1)
        rnd = {s0: 0, **dict(zip(order.tolist(), rounds.tolist()))}
        back = np.abs(order - start)
        assert all(rnd[int(s)] == r - 1 for s, r in zip(start, rounds))
        inc = ~complete[order] & seen[order]
        assert np.all(back[inc] == 1)               # chunk_incomplete 1: the frame before
        assert np.all(back[~seen[order]] == 1)      # seeing nothing: the frame before's pose
        comp = complete[order]
        assert np.all(back[comp] <= 32)
        assert np.all(complete[start[comp][:40]] | (start[comp][:40] == s0))  # not from gaps
        assert rounds.max() < 90                    # not one round per frame (399)
    everything = np.ones(F, bool)
    start, rounds = K._schedule(np.arange(1, F), 0, everything, everything, 32, 8)
    np.testing.assert_array_equal(start, (np.arange(1, F) - 1) // 32 * 32)
    np.testing.assert_array_equal(rounds, (np.arange(1, F) - 1) // 32 + 1)
    start, rounds = K._schedule(np.arange(1, F), 0, ~everything, everything, 32, 1)
    np.testing.assert_array_equal(start, np.arange(F - 1))


def test_scattered_gaps_solve_in_rounds_as_frame_by_frame(motion, markerset):
    """Short gaps all over the take (1 % of the samples dropped: 122 of 268 frames miss a
    marker) are solved in rounds, not frame after frame: 13 batches, 3-4x faster (measured),
    the same pose as the solve that chains every frame to the one before (``chunk=1``)."""
    from physmocap.solver.pipeline import TRACKING
    pos = synthesize(motion, markerset, noise_m=NOISE, drop=0.01, rng=np.random.default_rng(8))
    calls = {}
    res = {}
    for name, kw in (("rounds", TRACKING), ("chained", dict(TRACKING, chunk=1))):
        calls[name] = []
        res[name] = solve_kinematic(motion.skeleton, markerset, pos, **kw,
                                    progress=lambda d, n, c=calls[name]: c.append(d))
    assert len(calls["chained"]) == motion.n_frames and len(calls["rounds"]) < 30
    obs = res["chained"].observable
    diff = np.degrees(quat.angle(res["rounds"].motion.lrot, res["chained"].motion.lrot))
    assert diff[:, obs].max() < 0.05
    e = [joint_angle_error_deg(r.motion, motion, obs).mean() for r in res.values()]
    assert abs(e[0] - e[1]) < 0.01


def test_no_frame_holds_a_minimum_a_neighbour_improves_on(cmu_01_01, monkeypatch):
    """CMU 01_01, calibrated, the clavicles' twist left free (as on a body whose clavicles the
    prior does not know): solved from frames before it, a stretch of frames held the right
    shoulder twisted 78 deg the other way (a minimum up to 1.2 mm RMS worse) and then snapped
    back. Settled, no frame seeing every marker fits its markers better when solved again from
    either neighbour's pose (the measure here is the marker RMS, not the solver's cost)."""
    from physmocap.calibrate import calibrate
    from physmocap.solver import pipeline
    from physmocap.solver.pipeline import TRACKING, kinematic_prior

    monkeypatch.setattr(pipeline, "CLAVICLE_TWIST_WEIGHT", 0.0)
    t, body, ms0, pos = cmu_01_01
    prior = kinematic_prior(body)
    subj = calibrate(pos, t.fps, body.skeleton, ms0, kinematic_options=prior)
    sk, ms = subj.skeleton, subj.markerset
    complete = ~np.isnan(pos).any(axis=(1, 2))
    complete[[0, -1]] = False                          # each has one neighbour only

    def gain_from_neighbours(res):
        """(F,) m: how much lower each frame's RMS gets solved from a neighbour's pose."""
        m = res.motion
        gain = np.zeros(len(pos))
        for shift in (1, -1):
            start = Motion(sk, t.fps, np.roll(m.root_pos, -shift, 0), np.roll(m.lrot, -shift, 0))
            alt = solve_kinematic(sk, ms, pos, init=start, fps=t.fps, max_marker_pull=0.04,
                                  **prior)
            gain = np.maximum(gain, res.rms - alt.rms)
        return gain[complete]

    kw = dict(fps=t.fps, max_marker_pull=0.04, **prior, **TRACKING)
    settled = solve_kinematic(sk, ms, pos, **kw)
    assert gain_from_neighbours(settled).max() < 2e-4
    # the take still holds such a minimum for the unsettled solve (else this test tests nothing)
    assert gain_from_neighbours(solve_kinematic(sk, ms, pos, settle=False, **kw)).max() > 4e-4


def test_settling_in_blocks_is_the_whole_take_at_once(motion, markerset, clean, monkeypatch):
    """``_settle`` finds the sudden turns a block of frames at a time (an hour's take held
    (F, J, 4) temporaries of ~280 MB each at once): the same frames are tried, the same result.
    The trigger is lowered so that many frames are tried."""
    pos = clean[0]
    monkeypatch.setattr(K, "_JUMP_RATE", np.radians(60.0))
    tried = []
    real = K._lm
    monkeypatch.setattr(K, "_lm", lambda st, o, *a, **k: (tried.append(len(o)), real(st, o, *a,
                                                                                      **k))[1])
    whole = solve_kinematic(motion.skeleton, markerset, pos)
    n_whole = len(tried)
    monkeypatch.setattr(K, "_BLOCK", 7)
    blocked = solve_kinematic(motion.skeleton, markerset, pos)
    assert tried[:n_whole] == tried[n_whole:] and n_whole > 20
    np.testing.assert_array_equal(whole.motion.lrot, blocked.motion.lrot)


# --------------------------------------------------------------------------- error paths


def test_all_markers_missing_frame_keeps_previous_pose(motion, markerset, clean):
    pos, _, _ = clean
    p = pos[:40].copy()
    p[25] = np.nan
    p[0] = np.nan  # before the seed: takes the pose of the frame after it
    progress = []
    res = solve_kinematic(motion.skeleton, markerset, p, progress=lambda d, t: progress.append(d))
    assert res.seed_frame == 1
    np.testing.assert_array_equal(res.motion.lrot[25], res.motion.lrot[24])
    np.testing.assert_array_equal(res.motion.root_pos[25], res.motion.root_pos[24])
    np.testing.assert_array_equal(res.motion.lrot[0], res.motion.lrot[1])
    assert not res.converged[25] and res.iterations[25] == 0 and not res.converged[0]
    assert res.converged[[1, 24, 26]].all()
    assert np.isnan(res.residual[25]).all() and np.isnan(res.rms[25])
    assert progress[-1] == 40 and progress == sorted(progress)


def test_shape_errors(motion, markerset):
    sk = motion.skeleton
    M = len(markerset)
    with pytest.raises(ShapeError,
                       match=rf"pos: expected shape \(F, {M}, 3\).*got \(5, {M - 1}, 3\)"):
        solve_kinematic(sk, markerset, np.zeros((5, M - 1, 3)))
    with pytest.raises(ShapeError, match="expected shape"):
        solve_kinematic(sk, markerset, np.zeros((M, 3)))
    with pytest.raises(ShapeError, match="not infinite"):
        solve_kinematic(sk, markerset, np.full((2, M, 3), np.inf))
    with pytest.raises(ShapeError, match="no marker is visible"):
        solve_kinematic(sk, markerset, np.full((2, M, 3), np.nan))
    with pytest.raises(ShapeError, match="free_joints"):
        solve_kinematic(sk, markerset, np.zeros((2, M, 3)), free_joints=np.ones(3, bool))
    with pytest.raises(ShapeError, match="init has 268 frames, pos has 2"):
        solve_kinematic(sk, markerset, np.zeros((2, M, 3)), init=motion)
    with pytest.raises(ShapeError, match="hold must be a finite number"):
        solve_kinematic(sk, markerset, np.zeros((2, M, 3)), hold=-1.0)
    with pytest.raises(ShapeError, match="max_marker_pull"):
        solve_kinematic(sk, markerset, np.zeros((2, M, 3)), max_marker_pull=0.0)
    bad = MarkerSet(("a", "b"), np.array([0, len(sk)]), np.zeros((2, 3)))
    with pytest.raises(ShapeError, match=r"marker 'b' sits on body 31.*only 31 joints"):
        solve_kinematic(sk, bad, np.zeros((2, 2, 3)))
    with pytest.raises(ShapeError, match="pos: cannot convert to a float array"):
        solve_kinematic(sk, markerset, [[["x", "y", "z"]] * M] * 2)
    with pytest.raises(ShapeError, match="pos: no frames"):
        solve_kinematic(sk, markerset, np.zeros((0, M, 3)))
    for fps in (0.0, float("nan"), -120.0, "120"):
        with pytest.raises(ShapeError, match="fps must be a finite number > 0"):
            solve_kinematic(sk, markerset, np.zeros((2, M, 3)), fps=fps)
    for settle in ("no", 0, None):
        with pytest.raises(ShapeError, match="settle must be True or False"):
            solve_kinematic(sk, markerset, np.zeros((2, M, 3)), settle=settle)
    for kw in (dict(iterations=0), dict(chunk=0), dict(tol=float("nan"))):
        with pytest.raises(ShapeError, match="iterations, chunk and chunk_incomplete must be"):
            solve_kinematic(sk, markerset, np.zeros((2, M, 3)), **kw)
    with pytest.raises(ShapeError, match="init must be a Motion on a skeleton with the same"):
        solve_kinematic(sk, markerset, np.zeros((2, M, 3)), init=np.zeros((2, len(sk), 4)))
    with pytest.raises(ShapeError, match="marker set is empty"):
        solve_kinematic(sk, MarkerSet((), np.zeros(0, int), np.zeros((0, 3))),
                        np.zeros((2, 0, 3)))


# --------------------------------------------------------------------------- rotation prior


def _knee_hinge(motion):
    """``motion`` with LeftLeg's rotation replaced by a pure rotation about its dominant axis."""
    kn = motion.skeleton.index("LeftLeg")
    v = quat.to_scaled_axis(quat.unroll(motion.lrot[:, kn]))
    a = np.linalg.eigh(v.T @ v)[1][:, -1]
    lrot = motion.lrot.copy()
    lrot[:, kn] = quat.from_axis_angle(a, v @ a)
    return Motion(motion.skeleton, motion.fps, motion.root_pos, lrot), kn, a


def _off_axis_deg(lrot, a):
    v = quat.to_scaled_axis(lrot)
    return np.degrees(np.linalg.norm(v - np.outer(v @ a, a), axis=1))


def test_inverse_right_jacobian_matches_finite_differences():
    rng = np.random.default_rng(11)
    v = rng.normal(size=(6, 3))
    v *= (rng.uniform(0.0, 3.0, 6) / np.linalg.norm(v, axis=1))[:, None]
    v[0] = [1e-5, -2e-5, 0.0]                                  # the small-angle series
    Jr = K._inv_right_jacobian(v)
    q = quat.from_scaled_axis(v)
    eps = 1e-6
    for k in range(3):
        d = np.zeros(3)
        d[k] = eps
        num = (quat.to_scaled_axis(quat.mul(q, quat.from_scaled_axis(d)))
               - quat.to_scaled_axis(quat.mul(q, quat.from_scaled_axis(-d)))) / (2 * eps)
        np.testing.assert_allclose(Jr[:, :, k], num, atol=1e-7)


def test_hinge_prior_matrices():
    kind = ("free", "ball", "hinge", "hinge")
    axis = np.array([[np.nan] * 3, [np.nan] * 3, [0, 2.0, 0], [0, 0, -1.0]])
    W, c = K.hinge_prior(kind, axis, 0.02, 0.5, fixed=np.array([0, 0, 0, 1], bool))
    assert W.shape == (4, 3, 3) and c.shape == (4, 3) and not c.any()
    assert not W[:2].any()
    np.testing.assert_allclose(W[2], 0.02 * np.diag([1.0, 0.0, 1.0]))
    np.testing.assert_allclose(W[3], 0.5 * np.eye(3))       # fixed wins over hinge
    W, _ = K.hinge_prior(kind, axis)
    np.testing.assert_allclose(W[3], K.HINGE_OFF_AXIS_WEIGHT * np.diag([1.0, 1.0, 0.0]))
    with pytest.raises(ShapeError, match="axis must be"):
        K.hinge_prior(kind, axis[:3])
    with pytest.raises(ShapeError, match="hinge with axis"):
        K.hinge_prior(kind, np.zeros((4, 3)))
    with pytest.raises(ShapeError, match="weights must be >= 0"):
        K.hinge_prior(kind, axis, -1.0)
    with pytest.raises(ShapeError, match="fixed must be"):
        K.hinge_prior(kind, axis, fixed=np.ones(3, bool))


def test_zero_prior_is_the_unregularised_solve(motion, markerset, clean):
    pos, _, _ = clean
    sk = motion.skeleton
    J = len(sk)
    p = pos[:60].copy()
    p[10:20, 3] = np.nan                                      # incomplete-chunk path too
    plain = solve_kinematic(sk, markerset, p)
    zero = solve_kinematic(sk, markerset, p, rotation_prior=(np.zeros((J, 3, 3)),
                                                             np.ones((J, 3))))
    np.testing.assert_array_equal(zero.motion.lrot, plain.motion.lrot)
    np.testing.assert_array_equal(zero.motion.root_pos, plain.motion.root_pos)
    np.testing.assert_array_equal(zero.iterations, plain.iterations)


def test_hinge_prior_on_a_pure_hinge_knee(motion, markerset):
    """The left knee moves as a pure hinge and its shank carries one marker: the hinge prior
    keeps the solved knee on its axis (the plain solve wanders off it with the noise) and makes
    the knee and the pose overall no worse, at a marker RMS cost of a few micrometres."""
    truth, kn, a = _knee_hinge(motion)
    sk = motion.skeleton
    keep = [i for i, n in enumerate(markerset.names) if n not in ("LeftLeg_1", "LeftLeg_2")]
    ms = MarkerSet(tuple(markerset.names[i] for i in keep), markerset.body[keep],
                   markerset.offset[keep], markerset.weight[keep])
    pos = synthesize(truth, ms, noise_m=NOISE, rng=np.random.default_rng(8))
    kind = ["ball"] * len(sk)
    kind[0], kind[kn] = "free", "hinge"
    axis = np.full((len(sk), 3), np.nan)
    axis[kn] = a
    plain = solve_kinematic(sk, ms, pos)
    prior = solve_kinematic(sk, ms, pos, rotation_prior=K.hinge_prior(kind, axis))
    assert prior.converged.all()
    off_p = _off_axis_deg(plain.motion.lrot[:, kn], a)
    off_h = _off_axis_deg(prior.motion.lrot[:, kn], a)
    assert np.median(off_h) < 0.5 * np.median(off_p) and off_h.max() < 0.5 * off_p.max()
    assert np.median(off_h) < 1.0 and off_h.max() < 3.0
    obs = plain.observable.copy()
    obs[kn] = True
    e_p = joint_angle_error_deg(plain.motion, truth, obs)
    e_h = joint_angle_error_deg(prior.motion, truth, obs)
    col = int(np.flatnonzero(np.flatnonzero(obs) == kn)[0])
    assert e_h[:, col].mean() < e_p[:, col].mean()
    assert e_h.mean() <= e_p.mean() + 0.01
    rms_p = np.sqrt(np.nanmean(plain.residual ** 2))
    rms_h = np.sqrt(np.nanmean(prior.residual ** 2))
    assert rms_h - rms_p < 1e-4                                # < 0.1 mm


def _arm():
    """Root (three markers) and a 1 m bone along x ending in one marker; root held fixed."""
    from physmocap.skeleton import Skeleton
    sk = Skeleton(("root", "arm"), np.array([-1, 0]), np.array([[0, 0, 0], [0.2, 0, 0.0]]),
                  np.full((2, 3), np.nan))
    ms = MarkerSet(("r0", "r1", "r2", "tip"), np.array([0, 0, 0, 1]),
                   np.array([[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1], [1.0, 0, 0]]))
    return sk, ms


def test_lm_minimises_markers_plus_prior():
    """One marker pulls the arm to phi about z, the prior w (v_z - 0)^2 back. The root may only
    translate, by a quarter of the tip's miss (four unit-weight markers), so the marker cost at
    arm angle t is 3/4 |miss|^2 = 3 sin^2((t - phi) / 2): the solve must land on the minimum of
    that plus w t^2 (the solver's cost: squared marker distances + prior)."""
    from scipy.optimize import brentq
    sk, ms = _arm()
    phi, w = 0.8, 0.5
    truth = quat.identity((1, 2))
    truth[0, 1] = quat.from_axis_angle(np.array([0, 0, 1.0]), phi)
    pos = marker_positions(sk, ms, truth, np.zeros((1, 3)))
    W = np.zeros((2, 3, 3))
    W[1, 2, 2] = w
    c = np.zeros((2, 3))
    free = np.array([False, True])
    res = solve_kinematic(sk, ms, pos, rotation_prior=(W, c), free_joints=free, tol=1e-12,
                          iterations=100)
    t_star = brentq(lambda t: 1.5 * np.sin(t - phi) + 2 * w * t, 0.0, phi)
    v = quat.to_scaled_axis(res.motion.lrot[0, 1])
    np.testing.assert_allclose(v, [0, 0, t_star], atol=1e-7)
    assert res.converged[0]
    # The cost the LM compares: squared marker distances plus the prior, exactly.
    st_ = K._Structure(sk, ms, np.flatnonzero(free), K._check_prior((W, c), 2))
    vis = np.ones((1, 4), bool)
    lrot = res.motion.lrot
    cost = K._evaluate(st_, lrot, res.motion.root_pos, pos, vis, ms.weight[None], None)[4]
    expect = np.sum(res.residual ** 2) + w * v[2] ** 2
    np.testing.assert_allclose(cost, expect, rtol=1e-12)
    np.testing.assert_allclose(cost, 3 * np.sin((t_star - phi) / 2) ** 2 + w * t_star ** 2,
                               rtol=1e-9)
    # With a non-zero centre the prior alone fixes an axis the markers leave free: the twist
    # about the bone (x) goes to c_x, the marker stays put.
    W2 = np.zeros((2, 3, 3))
    W2[1, 0, 0] = 0.1
    c2 = np.zeros((2, 3))
    c2[1, 0] = 0.3
    res2 = solve_kinematic(sk, ms, pos, rotation_prior=(W2, c2), free_joints=free, tol=1e-12,
                           iterations=100)
    v2 = quat.to_scaled_axis(res2.motion.lrot[0, 1])
    np.testing.assert_allclose(quat.rotate(res2.motion.lrot[0, 1], [1.0, 0, 0]),
                               [np.cos(phi), np.sin(phi), 0], atol=1e-6)
    assert np.max(res2.residual) < 1e-6
    # v2 = rotation vector of R_z(phi) R_x(tw); its x component is 0.3 at the optimum.
    np.testing.assert_allclose(v2[0], 0.3, atol=1e-6)


def test_rotation_prior_shape_errors(motion, markerset):
    sk = motion.skeleton
    J = len(sk)
    pos = np.zeros((2, len(markerset), 3))
    W = np.zeros((J, 3, 3))
    c = np.zeros((J, 3))
    with pytest.raises(ShapeError, match=rf"expected W \({J}, 3, 3\) and c \({J}, 3\)"):
        solve_kinematic(sk, markerset, pos, rotation_prior=(W[:-1], c))
    with pytest.raises(ShapeError, match="rotation_prior: expected W"):
        solve_kinematic(sk, markerset, pos, rotation_prior=(W, c[:, :2]))
    with pytest.raises(ShapeError, match="expected a pair"):
        solve_kinematic(sk, markerset, pos, rotation_prior=W)
    bad = W.copy()
    bad[3, 0, 1] = 1.0
    with pytest.raises(ShapeError, match="symmetric"):
        solve_kinematic(sk, markerset, pos, rotation_prior=(bad, c))
    bad = W.copy()
    bad[3] = np.diag([1.0, -0.5, 1.0])
    with pytest.raises(ShapeError, match=r"positive semi-definite \(joint 3"):
        solve_kinematic(sk, markerset, pos, rotation_prior=(bad, c))
    bad = W.copy()
    bad[2, 1, 1] = np.nan
    with pytest.raises(ShapeError, match="finite"):
        solve_kinematic(sk, markerset, pos, rotation_prior=(bad, c))
