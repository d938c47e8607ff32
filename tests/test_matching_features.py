"""Feature database: the 27 locomotion features, normalisation, weights, extras, valid frames."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import ShapeError, UnknownNameError
from physmocap.io.bvh import read_bvh
from physmocap.matching.database import build_database
from physmocap.matching.features import (ExtraFeature, FeatureDatabase, FeatureSpec,
                                         compute_features, query_from, raw_features,
                                         trajectory_frames, valid_mask)
from physmocap.motion import Motion
from physmocap.skeleton import Skeleton

BANDAI = "bvh/bandai-namco/ds2_normal_locomotion"
GROUPS = ["lfoot_pos", "rfoot_pos", "lfoot_vel", "rfoot_vel", "hip_vel", "traj_pos", "traj_dir"]


@pytest.fixture(scope="module")
def db(data_dir):
    files = sorted((data_dir / BANDAI).glob("*.bvh"))[::15]
    return build_database([read_bvh(f) for f in files], fps=60.0)


@pytest.fixture(scope="module")
def feats(db):
    return compute_features(db)


def test_shapes_names_and_groups(db, feats):
    assert feats.X.shape == (db.n_frames, 27) and feats.X.dtype == np.float32
    assert not feats.X.flags.writeable
    assert list(feats.groups) == GROUPS
    sizes = [feats.groups[g].stop - feats.groups[g].start for g in GROUPS]
    assert sizes == [3, 3, 3, 3, 3, 6, 6]
    assert feats.names[0] == "lfoot_pos.x" and feats.names[-1] == "traj_dir+60.y"
    assert feats.trajectory_frames == (20, 40, 60)
    assert trajectory_frames(FeatureSpec(), 30.0) == (10, 20, 30)
    with pytest.raises(UnknownNameError, match="known: lfoot_pos"):
        feats.group("head_pos")


def test_groups_are_centred_with_the_weight_as_scale(feats):
    w = {"traj_dir": 1.5}
    for g in GROUPS:
        x = feats.X[:, feats.groups[g]].astype(float)
        assert np.allclose(x.mean(axis=0), 0.0, atol=1e-4), g
        assert abs(x.std(axis=0).mean() - w.get(g, 1.0)) < 1e-4, g
        assert np.all(feats.weights[feats.groups[g]] == w.get(g, 1.0))


def test_sliders_scale_pose_and_trajectory_groups(db, feats):
    f2 = compute_features(db, FeatureSpec(beta_q=0.5, beta_r=2.0))
    for g in GROUPS:
        k = 2.0 if g.startswith("traj") else 0.5
        sl = feats.groups[g]
        assert np.allclose(f2.X[:, sl], k * feats.X[:, sl], rtol=1e-5, atol=1e-5), g
    # a zero weight switches a group off without breaking denormalize
    f0 = compute_features(db, FeatureSpec(beta_r=0.0))
    assert np.all(f0.X[:, f0.groups["traj_pos"]] == 0)
    assert np.allclose(f0.denormalize(f0.X[5]), np.r_[
        raw_features(db)[0][5, :15], f0.offset[15:]], atol=1e-5)


def test_features_are_in_character_space(db, feats):
    raw, _, groups = raw_features(db)
    assert np.allclose(feats.denormalize(feats.X), raw, atol=1e-4)
    assert np.allclose(feats.normalize(raw), feats.X, atol=1e-4)
    # feet: left foot on the left (+Y), right foot on the right, near the floor
    lf, rf = raw[:, groups["lfoot_pos"]], raw[:, groups["rfoot_pos"]]
    assert np.median(lf[:, 1]) > 0.03 and np.median(rf[:, 1]) < -0.03
    assert 0.0 < np.median(lf[:, 2]) < 0.2
    # hips velocity: moving forward
    assert np.median(raw[:, groups["hip_vel"]][:, 0]) > 0.5
    # frame 0's feature equals the planted-foot velocity computed by hand
    g = db.global_positions(0, 3)
    j = db.index("Foot_L")
    v = (g[2, j] - g[0, j]) * db.fps / 2
    assert np.allclose(raw[1, groups["lfoot_vel"]], quat.inv_rotate(db.lrot[1, 0], v))


def test_straight_walk_trajectory_points_forward(db):
    raw, _, groups = raw_features(db)
    valid = valid_mask(db)
    straight = [c for c, n in enumerate(db.clip_names) if "_walk_normal" in n]
    assert straight
    for c in straight:
        sl = db.clip_slice(c)
        ok = valid[sl]
        tp = raw[sl][ok][:, groups["traj_pos"]].reshape(-1, 3, 2)
        td = raw[sl][ok][:, groups["traj_dir"]].reshape(-1, 3, 2)
        # further ahead is further forward, little sideways drift, facing forward
        assert np.all(np.median(tp[:, :, 0], axis=0) > [0.2, 0.4, 0.6])
        assert np.all(np.diff(np.median(tp[:, :, 0], axis=0)) > 0)
        assert np.all(np.abs(np.median(tp[:, :, 1], axis=0)) < 0.15)
        assert np.median(td[:, :, 0]) > 0.95
    # the direction features are unit vectors
    td = raw[:, groups["traj_dir"]].reshape(-1, 3, 2)
    assert np.allclose(np.linalg.norm(td, axis=-1), 1.0, atol=1e-9)


def test_turn_clips_bend_the_trajectory_the_right_way(db):
    raw, _, groups = raw_features(db)
    valid = valid_mask(db)
    for tag, sign in (("turn-left", 1.0), ("turn-right", -1.0)):
        m = db.tags[tag] & valid
        assert m.any()
        side = raw[m][:, groups["traj_dir"]][:, -1]          # y of the 1 s ahead direction
        assert np.median(sign * side) > 0.0, tag


def test_valid_mask_excludes_the_last_second_of_each_clip(db):
    v = valid_mask(db)
    for c in range(db.n_clips):
        sl = db.clip_slice(c)
        assert np.all(v[sl][:-60]) and not np.any(v[sl][-60:])
    spec = FeatureSpec(extra=[{"joint": "Hand_L", "frames": [-10, 0]}])
    v2 = valid_mask(db, spec)
    for c in range(db.n_clips):
        sl = db.clip_slice(c)
        assert not np.any(v2[sl][:10]) and np.all(v2[sl][10:-60])


def test_future_past_the_clip_end_clamps_to_its_last_frame(db):
    raw, _, groups = raw_features(db)
    last = db.range_stops[0] - 1
    tp = raw[last, groups["traj_pos"]]
    assert np.allclose(tp, 0.0) and np.allclose(raw[last, groups["traj_dir"]], [1, 0] * 3)
    # 30 frames before the end: the 40- and 60-frame samples both sit on the last frame
    f = last - 30
    tp = raw[f, groups["traj_pos"]].reshape(3, 2)
    assert np.allclose(tp[1], tp[2]) and not np.allclose(tp[0], tp[1])


def test_extra_features(db, feats):
    spec = FeatureSpec(extra=[{"joint": "Hand_L", "quantity": "position", "frames": [0, 20]},
                              ExtraFeature("Hand_R", "velocity", weight=2.0)])
    f = compute_features(db, spec)
    assert f.X.shape == (db.n_frames, 27 + 6 + 3)
    assert list(f.groups)[-2:] == ["Hand_L_pos", "Hand_R_vel"]
    assert f.names[27:30] == ("Hand_L_pos+0.x", "Hand_L_pos+0.y", "Hand_L_pos+0.z")
    x = f.X[:, f.groups["Hand_R_vel"]].astype(float)
    assert abs(x.std(axis=0).mean() - 2.0) < 1e-4
    assert np.allclose(f.X[:, :27], feats.X, atol=1e-6)          # built-ins unchanged
    raw, _, groups = raw_features(db, spec)
    # position at frame 0 relative to the character; the left hand is on the left
    assert np.median(raw[:, groups["Hand_L_pos"]][:, 1]) > 0.1
    with pytest.raises(UnknownNameError, match="unknown joint 'LeftHand'; known: Hips"):
        compute_features(db, FeatureSpec(extra=[{"joint": "LeftHand"}]))
    with pytest.raises(ShapeError, match="unknown quantity 'rotation'"):
        FeatureSpec(extra=[{"joint": "Hand_L", "quantity": "rotation"}])
    with pytest.raises(ShapeError, match="unknown key"):
        FeatureSpec(extra=[{"joint": "Hand_L", "weigth": 1.0}])
    with pytest.raises(ShapeError, match="frames"):
        FeatureSpec(extra=[{"joint": "Hand_L", "frames": [0.5]}])
    with pytest.raises(ShapeError, match="already used"):
        compute_features(db, FeatureSpec(extra=[{"joint": "Hand_L", "name": "traj_pos"}]))
    with pytest.raises(ShapeError, match="beta_d"):
        FeatureSpec(beta_d=-1.0)


def _standing():
    names = ["Hips", "LeftUpLeg", "LeftFoot", "LeftToes", "RightUpLeg", "RightFoot",
             "RightToes"]
    offsets = np.array([[0, 0, 0.9], [0, 0.1, 0], [0, 0, -0.8], [0.1, 0, -0.05],
                        [0, -0.1, 0], [0, 0, -0.8], [0.1, 0, -0.05]])
    sk = Skeleton(names, [-1, 0, 1, 2, 0, 4, 5], offsets)
    F = 90
    return Motion(sk, 60.0, np.tile([0.0, 0.0, 0.9], (F, 1)), quat.identity((F, len(names))))


def test_zero_spread_group_raises_shape_error_naming_it():
    db = build_database([_standing()])
    with pytest.raises(ShapeError, match="'lfoot_pos'.*no spread"):
        compute_features(db)
    # weights of zero switch the flat groups off, but a weighted flat one still fails
    off = dict(beta_l=0.0, beta_v=0.0, beta_d=0.0)
    with pytest.raises(ShapeError, match="'traj_pos'"):
        compute_features(db, FeatureSpec(**off))
    f = compute_features(db, FeatureSpec(**off, beta_p=0.0))
    assert np.all(f.X == 0)


def test_query_from_and_normalize_helpers(db, feats):
    q = query_from(feats, db, 100)
    assert q.shape == (27,) and np.array_equal(q, feats.X[100])
    q[:] = 0                                     # a writable copy
    assert feats.X[100].any()
    raw, _, groups = raw_features(db)
    part = feats.normalize(raw[100, groups["traj_pos"]], group="traj_pos")
    assert np.allclose(part, feats.X[100, groups["traj_pos"]], atol=1e-5)
    assert np.allclose(feats.denormalize(part, "traj_pos"), raw[100, groups["traj_pos"]])
    with pytest.raises(ShapeError, match="expected 6"):
        feats.normalize(np.zeros(5), group="traj_pos")
    with pytest.raises(ShapeError, match="outside"):
        query_from(feats, db, db.n_frames)
    other = build_database([_standing()])
    with pytest.raises(ShapeError, match="do not belong"):
        query_from(feats, other, 0)


@pytest.mark.parametrize("make, match", [
    (lambda: ExtraFeature(""), "'joint' must be a joint name"),
    (lambda: ExtraFeature(3), "'joint' must be a joint name"),
    (lambda: ExtraFeature("Hand_L", frames="soon"), "frames must be integers"),
    (lambda: ExtraFeature("Hand_L", frames=[]), "non-empty list of integers"),
    (lambda: ExtraFeature("Hand_L", weight=-1.0), "weight must be >= 0"),
    (lambda: ExtraFeature("Hand_L", weight=float("nan")), "weight must be >= 0"),
    (lambda: ExtraFeature.from_dict({"frames": [0]}), "'joint' is required"),
    (lambda: FeatureSpec(beta_v="fast"), "beta_v must be a number"),
    (lambda: FeatureSpec(beta_r=float("inf")), "beta_r must be finite and >= 0"),
    (lambda: FeatureSpec(trajectory_times=(0.33, 0.0)), "trajectory_times must be positive"),
    (lambda: FeatureSpec(trajectory_times=()), "trajectory_times must be positive"),
    (lambda: FeatureSpec(feet=("LeftFoot",)), "feet must name two joints"),
    (lambda: FeatureDatabase(np.zeros((4, 3)), np.zeros(3), np.ones(3), np.ones(3), ("a", "b"),
                             {}, FeatureSpec(), 60.0, (20,)), "expected 3 names, got 2"),
    (lambda: FeatureDatabase(np.zeros((4, 3)), np.zeros(3), np.ones(3), np.ones(3),
                             ("a", "b", "c"), {"g": slice(1, 5)}, FeatureSpec(), 60.0, (20,)),
     r"groups\['g'\] must be a slice inside 0..3"),
    (lambda: raw_features("db.npz"), "raw_features needs a PoseDatabase"),
])
def test_bad_feature_settings_are_one_shape_error(make, match):
    with pytest.raises(ShapeError, match=match) as e:
        make()
    assert "\n" not in str(e.value)


def test_a_database_without_feet_names_them():
    names = ["Hips", "Spine", "Head"]
    sk = Skeleton(names, [-1, 0, 1], np.array([[0, 0, 0.9], [0, 0, 0.3], [0, 0, 0.3]]))
    F = 30
    walk = Motion(sk, 60.0, np.cumsum(np.tile([0.02, 0.0, 0.0], (F, 1)), axis=0) + [0, 0, 0.9],
                  quat.identity((F, 3)))
    db = build_database([walk], contact_joints=("Hips", "Hips"))
    with pytest.raises(UnknownNameError, match="features: .*left foot"):
        raw_features(db)
