"""Three-point avatar: the tracking file format, extraction from BVH clips, the avatar (head
placement, facing, arm IK), the naive baseline, the report and the CLI.

Mirrors ``physmocap/tracking.py``, ``physmocap/io/tracking.py`` and
``physmocap/matching/avatar.py``.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from physmocap import quat
from physmocap.cli import main
from physmocap.errors import (FileFormatError, PhysmocapError, SettingsError, ShapeError,
                              UnknownNameError)
from physmocap.io.bvh import read_bvh
from physmocap.io.tracking import COLUMNS, read_tracking, write_tracking
from physmocap.matching.avatar import (POINT_GROUPS, Avatar, AvatarSettings, avatar_feature_spec,
                                       avatar_on_body,
                                       avatar_features, avatar_report, extract_track,
                                       find_tracked_joints, lower_body_joints, naive_avatar,
                                       rest_frame, run_avatar)
from physmocap.matching.database import build_database, resample, save_database
from physmocap.motion import Motion
from physmocap.playback.track import TrackingSettings
from physmocap.scene import load_body
from physmocap.skeleton import Skeleton
from physmocap.tracking import ThreePointTrack

BANDAI = "bvh/bandai-namco/ds2_normal_locomotion"
TRAIN = ["walk_normal_001", "walk_normal_002", "walk_normal_003", "walk-turn-left_normal_001",
         "walk-turn-right_normal_001", "run_normal_002", "run_normal_003"]


def _clip(data_dir, name):
    return data_dir / BANDAI / f"dataset-2_{name}.bvh"


@pytest.fixture(scope="module")
def small_db(data_dir):
    """A database of 7 Bandai-Namco clips (walks, turns, runs) and its avatar features."""
    motions = [read_bvh(_clip(data_dir, n)) for n in TRAIN]
    db = build_database(motions, names=TRAIN)
    return db, avatar_features(db)


@pytest.fixture(scope="module")
def held_out(data_dir):
    """A walk not in ``small_db``."""
    return read_bvh(_clip(data_dir, "walk_normal_010"))


def _random_track(rng, T=50):
    t = np.cumsum(rng.uniform(0.005, 0.05, T))
    pos = rng.normal(size=(T, 3, 3))
    rot = quat.normalize(rng.normal(size=(T, 3, 4)))
    return ThreePointTrack(t, pos, rot)


# --- the type and the file format ---------------------------------------------------------------

def test_round_trip(tmp_path, rng):
    track = _random_track(rng)
    path = tmp_path / "t.csv"
    write_tracking(track, path, comment="made\nby a test")
    text = path.read_text()
    assert text.startswith("# physmocap three-point tracking")
    assert "# made by a test" in text and ",".join(COLUMNS) in text
    back = read_tracking(path)
    np.testing.assert_allclose(back.times, track.times, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(back.pos, track.pos, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(back.rot, track.rot, atol=1e-8)


def test_sample_interpolates_and_holds(rng):
    track = _random_track(rng, 5)
    p, r = track.sample(track.times)
    np.testing.assert_allclose(p, track.pos, atol=1e-12)
    assert np.allclose(np.abs(np.sum(r * track.rot, -1)), 1.0)
    mid = 0.5 * (track.times[1] + track.times[2])
    np.testing.assert_allclose(track.sample(mid)[0], 0.5 * (track.pos[1] + track.pos[2]))
    np.testing.assert_allclose(track.sample(track.times[0] - 5)[0], track.pos[0])
    np.testing.assert_allclose(track.sample(track.times[-1] + 5)[0], track.pos[-1])
    assert track.sample(np.zeros((4, 2)))[0].shape == (4, 2, 3, 3)


def test_track_rejects_bad_arrays(rng):
    t = np.arange(3.0)
    with pytest.raises(ShapeError, match="increasing"):
        ThreePointTrack([0.0, 0.0, 1.0], np.zeros((3, 3, 3)), quat.identity((3, 3)))
    with pytest.raises(ShapeError, match="shape"):
        ThreePointTrack(t, np.zeros((3, 2, 3)), quat.identity((3, 3)))
    with pytest.raises(ShapeError, match="zero quaternion"):
        ThreePointTrack(t, np.zeros((3, 3, 3)), np.zeros((3, 3, 4)))
    with pytest.raises(ShapeError, match="finite"):
        ThreePointTrack(t, np.full((3, 3, 3), np.nan), quat.identity((3, 3)))


def _row(t, q0=(0, 0, 0, 1)):
    vals = [t] + [0.1, 0.2, 1.6, *q0] + [0.3, 0.2, 1.0, 0, 0, 0, 1] + [0.3, -0.2, 1.0, 0, 0, 0, 1]
    return ",".join(str(v) for v in vals)


HEADER = ",".join(COLUMNS)


@pytest.mark.parametrize("text, message", [
    ("", "empty tracking file"),
    ("# only a comment\n", "empty tracking file"),
    ("t,x,y,z,qx,qy,qz,qw\n0,0,0,0,0,0,0,1\n", "header must be the 22 columns"),
    (HEADER + "\n" + _row(0.0) + "\n", "need at least 2 samples"),
    (HEADER + "\n" + _row(0.0) + "\n" + _row(0.1)[:-2] + "\n", "line 3: 21 values"),
    (HEADER + "\n" + _row(0.0) + "\n" + _row(0.1).replace("1.6", "abc") + "\n",
     "line 3: not a number: 'abc'"),
    (HEADER + "\n" + _row(0.0) + "\n" + _row(0.1).replace("1.6", "nan") + "\n",
     "line 3: values must be finite"),
    (HEADER + "\n" + _row(0.5) + "\n" + _row(0.5) + "\n", "line 3: t = 0.5 does not increase"),
    (HEADER + "\n" + _row(0.0) + "\n" + _row(0.1, (0, 0, 0, 0)) + "\n",
     "line 3: head quaternion is zero"),
])
def test_bad_files_raise_one_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(FileFormatError) as exc:
        read_tracking(path)
    assert message in str(exc.value)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_bom_and_crlf_are_read(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (HEADER + "\r\n" + _row(0.0) + "\r\n" + _row(0.5)
                                          + "\r\n").encode())
    track = read_tracking(path)
    assert track.n_samples == 2 and track.pos[1, 0, 2] == 1.6


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(FileFormatError, match="no such tracking file"):
        read_tracking(tmp_path / "nope.csv")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00\x81" * 10)
    with pytest.raises(FileFormatError, match="cannot read"):
        read_tracking(tmp_path / "bin.csv")


# --- tracked joints and extraction --------------------------------------------------------------

@pytest.mark.parametrize("path, names", [
    ("bvh/cmu/16_57.bvh", ("Head", "LeftHand", "RightHand")),
    ("bvh/cmu/131_01.bvh", ("Head", "LeftWrist", "RightWrist")),
    (f"{BANDAI}/dataset-2_walk_normal_001.bvh", ("Head", "Hand_L", "Hand_R")),
    ("bvh/games105/lab2_motion_material_idle.bvh", ("torso_head", "lWrist", "rWrist")),
])
def test_extract_from_shared_bvh(data_dir, path, names):
    motion = read_bvh(data_dir / path)
    joints = find_tracked_joints(motion.skeleton)
    assert tuple(motion.skeleton.names[j] for j in joints) == names
    track = extract_track(motion)
    assert track.n_samples == motion.n_frames
    np.testing.assert_allclose(track.times, np.arange(motion.n_frames) / motion.fps)
    np.testing.assert_allclose(track.pos, motion.gpos[:, list(joints)])
    # device frames: the head's z axis points up (people stand upright) ...
    up = quat.rotate(track.rot[:, 0], np.array([0.0, 0.0, 1.0]))
    assert np.median(up[:, 2]) > 0.8
    # ... and the left controller is on the body's left of the right one (device y = left)
    left = quat.rotate(track.rot[:, 0], np.array([0.0, 1.0, 0.0]))
    side = np.sum((track.pos[:, 1] - track.pos[:, 2]) * left, axis=-1)
    assert np.median(side) > 0.1


def test_device_frame_is_identity_upright_at_rest(data_dir):
    motion = read_bvh(data_dir / BANDAI / "dataset-2_walk_normal_001.bvh")
    sk = motion.skeleton
    R = rest_frame(sk)
    lrot = quat.identity((1, len(sk)))
    lrot[0, 0] = quat.conj(R)                 # rest pose stood upright, facing +X
    rest = Motion(sk, 30.0, np.zeros((2, 3)), np.repeat(lrot, 2, axis=0))
    track = extract_track(rest)
    np.testing.assert_allclose(np.abs(track.rot[..., 3]), 1.0, atol=1e-9)
    g = rest.gpos[0]
    h, lh, rh = find_tracked_joints(sk)
    assert g[h, 2] > g[0, 2] and g[lh, 1] > g[rh, 1]      # head up, left hand on +Y


def test_head_forward_follows_a_straight_walk(data_dir):
    """The device forward axis of the head is the walking direction in a straight walk."""
    motion = read_bvh(data_dir / BANDAI / "dataset-2_walk_normal_001.bvh")
    track = extract_track(motion)
    fwd = quat.rotate(track.rot[:, 0], np.array([1.0, 0.0, 0.0]))[:, :2]
    vel = np.gradient(track.pos[:, 0, :2], axis=0)
    moving = np.linalg.norm(vel, axis=-1) * motion.fps > 0.8
    cos = np.sum(fwd * vel, -1) / np.linalg.norm(fwd, axis=-1) / np.linalg.norm(vel, axis=-1)
    assert moving.sum() > 30 and np.median(cos[moving]) > np.cos(np.radians(20))


def test_extract_errors_name_what_is_missing():
    sk = Skeleton(("Hips", "Spine", "Head"), [-1, 0, 1], np.array([[0, 0, 1.0], [0, 0, .3],
                                                                   [0, 0, .3]]))
    with pytest.raises(UnknownNameError, match="no left hand"):
        find_tracked_joints(sk)
    sk2 = Skeleton(("Hips", "Head", "LeftHand", "RightHand"), [-1, 0, 0, 0], np.ones((4, 3)))
    with pytest.raises(UnknownNameError, match="upper arm and a forearm"):
        find_tracked_joints(sk2)



def _arms(head, left_shoulder, right_shoulder):
    """Hips, a head at ``head`` and two arms hanging 0.25 + 0.25 m from the shoulders (rest
    offsets from the hips, m)."""
    names = ("Hips", "Head", "LeftArm", "LeftForeArm", "LeftHand", "RightArm", "RightForeArm",
             "RightHand")
    down = [0.0, 0.0, -0.25]
    offsets = np.array([[0, 0, 1.0], head, left_shoulder, down, down, right_shoulder, down, down])
    return Skeleton(names, [-1, 0, 0, 2, 3, 0, 5, 6], offsets)


def test_rest_frame_needs_an_up_and_a_left():
    assert np.allclose(rest_frame(_arms([0, 0, 0.6], [0, 0.2, 0.5], [0, -0.2, 0.5])),
                       [0, 0, 0, 1], atol=1e-9)              # upright, facing +X
    for sk in (_arms([0, 0, 0], [0, 0.2, 0.5], [0, -0.2, 0.5]),      # head on the root
               _arms([0, 0, 0.6], [0, 0, 0.5], [0, 0, 0.5])):         # both hands at one place
        with pytest.raises(ShapeError, match="cannot tell up and left"):
            rest_frame(sk)
    with pytest.raises(ShapeError, match="hands lie above one another"):
        rest_frame(_arms([0, 0, 0.6], [0, 0, 0.5], [0, 0, 0.2]))


def test_the_avatar_refuses_a_head_feature_from_the_future(small_db, held_out):
    """``avatar_features`` refuses future frames; a hand-made feature spec meets the same rule."""
    from physmocap.matching.controller import output_skeleton
    from physmocap.matching.features import ExtraFeature, FeatureSpec, compute_features
    db, _ = small_db
    sk = output_skeleton(db)
    head = sk.names[find_tracked_joints(sk)[0]]
    with pytest.raises(ShapeError, match="frames must be <= 0"):
        avatar_features(db, head_weight=1.0, frames=(0, 5))
    feats = compute_features(db, FeatureSpec(extra=[ExtraFeature(head, "velocity", (0, 5), 1.0,
                                                                 "head_vel")]))
    with pytest.raises(ShapeError, match="head_vel feature looks into the future"):
        Avatar(db, feats, extract_track(held_out))


# --- the avatar ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def avatar_run(small_db, held_out):
    db, feats = small_db
    track = extract_track(held_out)
    motion, rec = run_avatar(Avatar(db, feats, track))
    return db, track, motion, rec


def test_head_and_hands_meet_the_devices(avatar_run):
    db, track, motion, rec = avatar_run
    sk = motion.skeleton
    h, lh, rh = find_tracked_joints(sk)
    pos, rot = track.sample(np.arange(motion.n_frames) / motion.fps)
    # root offset: the head is exactly at the tracked head; it and the hands take the
    # devices' orientations
    np.testing.assert_allclose(motion.gpos[:, h], pos[:, 0], atol=1e-6)
    R = rest_frame(sk)
    dev = quat.mul(motion.grot[:, [h, lh, rh]], R)
    assert np.max(quat.angle(dev, rot)) < 1e-4
    rep = avatar_report(db, motion, rec, None)
    assert rep["hand_reachable_fraction"] > 0.5
    assert rep["hand_error_reachable_max_m"] < 0.01


def test_hands_within_1cm_whenever_reachable(small_db, held_out, rng):
    """Controllers moved up to 35 cm off the true wrists: every reachable one is met within
    1 cm; an unreachable one leaves the arm stretched toward it."""
    db, feats = small_db
    track = extract_track(held_out)
    pos = np.array(track.pos)
    pos[:, 1:] += rng.uniform(-0.35, 0.35, size=(len(pos), 2, 3))
    moved = ThreePointTrack(track.times, pos, track.rot)
    motion, rec = run_avatar(Avatar(db, feats, moved))
    sk = motion.skeleton
    hands = list(find_tracked_joints(sk)[1:])
    upper = [int(sk.parents[sk.parents[c]]) for c in hands]
    target = np.array(rec.hand_target)
    err = np.linalg.norm(motion.gpos[:, hands] - target, axis=-1)
    d = np.linalg.norm(target - motion.gpos[:, upper], axis=-1)
    span = (np.linalg.norm(sk.offsets[[int(sk.parents[c]) for c in hands]], axis=-1)
            + np.linalg.norm(sk.offsets[hands], axis=-1))
    reach = d <= span - 1e-4
    assert 0.2 < reach.mean() < 1.0            # both cases occur
    assert err[reach].max() < 0.01
    # unreachable: the wrist is at full stretch on the line to the controller
    far = ~reach
    np.testing.assert_allclose(err[far], (d - span)[far], atol=2e-3)
    rep = avatar_report(db, motion, rec)
    assert rep["hand_error_reachable_max_m"] < 0.01


def test_avatar_on_body_reaches_the_carried_controllers(avatar_run):
    """Retargeted onto the humanoid by joint angles alone, the avatar's wrists miss the
    controllers carried into the body's world (other arm proportions); ``avatar_on_body`` bends
    the arms again: every reachable controller within 1 cm, the rest of the body untouched."""
    from physmocap.matching.retarget import retarget, root_scale, scale_points
    _, _, motion, rec = avatar_run
    sk = load_body().skeleton
    plain = retarget(motion, sk)
    on = avatar_on_body(motion, rec, sk)
    target = scale_points(np.array(rec.hand_target), *root_scale(motion, sk))
    hands = list(find_tracked_joints(sk)[1:])
    upper = [int(sk.parents[sk.parents[c]]) for c in hands]
    span = (np.linalg.norm(sk.offsets[[int(sk.parents[c]) for c in hands]], axis=-1)
            + np.linalg.norm(sk.offsets[hands], axis=-1))
    d = np.linalg.norm(target - on.gpos[:, upper], axis=-1)
    reach = d <= span - 1e-3
    err = np.linalg.norm(on.gpos[:, hands] - target, axis=-1)
    before = np.linalg.norm(plain.gpos[:, hands] - target, axis=-1)
    # measured: 7.2 cm retargeted, 0.55 cm after, 35 % of wrist-frames reachable (the
    # humanoid's arm is short of the scaled capture's at full stretch)
    print("wrists to controllers, mean cm: retargeted", 100 * before.mean(), "reaching",
          100 * err.mean(), "; reachable", reach.mean())
    assert reach.mean() > 0.2 and err[reach].max() < 0.01
    # out of reach: the arm stretched on the line to the controller
    np.testing.assert_allclose(err[~reach], (d - span)[~reach], atol=2e-3)
    assert before.mean() > 0.03 and err.mean() < 0.25 * before.mean()
    # only the arms changed: the root, legs and spine are the retargeted motion's
    arms = set(hands) | {int(sk.parents[c]) for c in hands} | set(upper)
    rest = [j for j in range(len(sk)) if j not in arms]
    np.testing.assert_array_equal(on.root_pos, plain.root_pos)
    np.testing.assert_allclose(on.lrot[:, rest], plain.lrot[:, rest], atol=1e-12)
    # the hands keep their world rotation
    assert np.max(quat.angle(on.grot[:, hands], plain.grot[:, hands])) < 1e-6


def _synthetic_track(head_yaw_deg, speed, seconds=4.0, fps=60.0):
    """A head at 1.6 m moving along +X at ``speed`` m/s (2 Hz bob) and turned by
    ``head_yaw_deg``; controllers at the hips' sides."""
    t = np.arange(int(seconds * fps)) / fps
    head = np.column_stack([speed * t, 0.0 * t, 1.6 + 0.02 * np.sin(2 * np.pi * 2 * t)])
    yaw = np.radians(head_yaw_deg)
    q = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), np.full(len(t), yaw))
    side = np.array([0.0, 0.25, -0.6])
    pos = np.stack([head, head + side * [1, 1, 1], head + side * [1, -1, 1]], axis=1)
    rot = np.stack([q, q, q], axis=1)
    return ThreePointTrack(t, pos, rot)


def _body_yaw(motion):
    """Heading (deg) of the pelvis: perpendicular to the line between the hip joints."""
    sk = motion.skeleton
    left = motion.gpos[:, sk.index("UpperLeg_L")] - motion.gpos[:, sk.index("UpperLeg_R")]
    fwd = np.cross(left, [0.0, 0.0, 1.0])
    return np.degrees(np.arctan2(fwd[:, 1], fwd[:, 0]))


def test_facing_follows_the_heads_motion_not_its_yaw(small_db):
    """Walking along +X while looking 60 degrees to the left: the body faces +X. Standing
    with the head turned: the body turns to the head's heading."""
    db, feats = small_db
    walk, _ = run_avatar(Avatar(db, feats, _synthetic_track(60.0, 1.4)))
    yaw = _body_yaw(walk)[-120:]                       # the last 2 s
    assert abs(np.median(yaw)) < 25.0
    stand, _ = run_avatar(Avatar(db, feats, _synthetic_track(60.0, 0.0)))
    assert abs(np.median(_body_yaw(stand)[-60:]) - 60.0) < 25.0


def test_naive_baseline_places_the_same_way(small_db, held_out):
    db, _ = small_db
    track = extract_track(held_out)
    motion, rec = naive_avatar(db, track)
    h = find_tracked_joints(motion.skeleton)[0]
    pos, _ = track.sample(np.arange(motion.n_frames) / motion.fps)
    np.testing.assert_allclose(motion.gpos[:, h], pos[:, 0], atol=1e-6)
    rep = avatar_report(db, motion, rec, held_out)
    assert 0 < rep["mpjpe_m"] < 0.5 and rep["hand_error_reachable_max_m"] < 0.01


def test_report_against_truth(avatar_run, held_out):
    db, track, motion, rec = avatar_run
    rep = avatar_report(db, motion, rec, held_out)
    for key in ("mpjpe_m", "lower_body_error_m", "hand_error_m", "foot_skate_mm", "jitter",
                "truth_jitter", "truth_foot_skate_mm"):
        assert np.isfinite(rep[key]) and rep[key] >= 0, key
    assert set(rep["latency_ms"]) == {"median", "p99"}
    assert rep["joints_compared"] == len(motion.skeleton)
    assert rep["mpjpe_m"] < 0.3 and rep["hand_error_m"] < 0.05
    # the truth (at the avatar's rate) against itself: no error, so frames and joints align
    same = avatar_report(db, resample(held_out, motion.fps), rec, held_out)
    assert same["frames_compared"] == motion.n_frames and same["mpjpe_m"] < 1e-9


def _ankle_forward(motion):
    """Left ankle's forward position relative to the hips (m), in the pelvis' heading frame:
    the gait phase."""
    sk = motion.skeleton
    left = motion.gpos[:, sk.index("UpperLeg_L")] - motion.gpos[:, sk.index("UpperLeg_R")]
    yaw = np.arctan2(-left[:, 0], left[:, 1])
    rel = motion.gpos[:, sk.index("Foot_L")] - motion.gpos[:, 0]
    q = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), yaw)
    return quat.inv_rotate(q, rel)[:, 0]


def test_avatar_beats_the_naive_baseline_on_a_held_out_walk(avatar_run, held_out):
    """The held-out walk (not in the 7-clip database): the avatar's body and legs are closer
    to the truth than the head-only baseline's (0.020 vs 0.024 m, legs 0.038 vs 0.045 m), with
    far less jitter, and its legs step in phase with the truth's."""
    db, track, motion, rec = avatar_run
    ours = avatar_report(db, motion, rec, held_out)
    naive_motion, naive_rec = naive_avatar(db, track)
    naive = avatar_report(db, naive_motion, naive_rec, held_out)
    assert ours["mpjpe_m"] < 0.9 * naive["mpjpe_m"]
    assert ours["lower_body_error_m"] < 0.9 * naive["lower_body_error_m"]
    assert ours["jitter"] < 0.5 * naive["jitter"]
    truth = resample(held_out, motion.fps)
    n = min(truth.n_frames, motion.n_frames)
    phase = np.corrcoef(_ankle_forward(motion)[:n], _ankle_forward(truth)[:n])[0, 1]
    assert phase > 0.95


def test_controllers_held_still_do_not_mislead_the_legs(small_db, held_out):
    """The held-out walk with both controllers fixed in front of the body (no arm swing):
    the legs still follow the head better than the head-only baseline's."""
    db, feats = small_db
    track = extract_track(held_out)
    yaw = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]),
                               np.arctan2(*quat.rotate(track.rot[:, 0], [1.0, 0, 0])[:, 1::-1].T))
    pos = np.array(track.pos)
    for k, side in ((1, 0.2), (2, -0.2)):
        pos[:, k] = pos[:, 0] + quat.rotate(yaw, np.array([0.25, side, -0.45]))
    still = ThreePointTrack(track.times, pos, track.rot)
    ours = avatar_report(db, *run_avatar(Avatar(db, feats, still)), held_out)
    naive = avatar_report(db, *naive_avatar(db, still), held_out)
    assert ours["lower_body_error_m"] < naive["lower_body_error_m"]
    assert ours["hand_error_reachable_max_m"] < 0.01


def test_live_point_features_equal_the_databases(small_db):
    """Played on a track extracted from a database clip, the live three-point features of
    every frame are that frame's database features (same joints, frames, causal differences
    and head frame), and the avatar starts on a frame with exactly the first sample's."""
    db, feats = small_db
    sl = db.clip_slice(TRAIN[3])
    start = sl.start
    av = Avatar(db, feats, extract_track(db.to_motion(start, sl.stop)))
    groups = [g for g in POINT_GROUPS if g in feats.groups]
    assert groups == list(POINT_GROUPS)
    cols = np.concatenate([np.arange(feats.groups[g].start, feats.groups[g].stop)
                           for g in groups])
    X = np.asarray(feats.X, float)
    first = av.ctrl.frame
    assert np.linalg.norm(X[first, cols] - X[start, cols]) < 1e-5
    for k in range(30):
        av.step()
        live = np.concatenate([feats.normalize(
            av.ctrl.points[sum(list(POINT_GROUPS.values())[:i]):][:n], g)
            for i, (g, n) in enumerate(POINT_GROUPS.items())])
        np.testing.assert_allclose(live, X[start + k, cols], atol=1e-4)


def test_point_feature_errors(small_db):
    db, _ = small_db
    with pytest.raises(UnknownNameError, match="tp_feet"):
        avatar_features(db, points={"tp_feet": 1.0})
    with pytest.raises(ShapeError, match="tp_hands"):
        avatar_features(db, points={"tp_hands": -1.0})
    only_head = avatar_features(db, points={"tp_head": 1.0, "tp_hands": 0.0})
    assert "tp_head" in only_head.groups and "tp_hands" not in only_head.groups
    assert "tp_head" not in avatar_features(db, points={}).groups


def test_lower_body_joints(data_dir):
    sk = read_bvh(_clip(data_dir, "walk_normal_001")).skeleton
    names = {sk.names[j] for j in lower_body_joints(sk, ("Toes_L", "Toes_R"))}
    assert names == {"Hips", "UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L", "UpperLeg_R",
                     "LowerLeg_R", "Foot_R", "Toes_R"}


def test_feature_spec_errors(small_db):
    db, _ = small_db
    with pytest.raises(ShapeError, match="future"):
        avatar_feature_spec(db, 1.0, frames=(0, 5))
    assert avatar_feature_spec(db, 0.0).extra == ()
    assert avatar_feature_spec(db, 2.0).extra[0].name == "head_vel"


# --- the command line ---------------------------------------------------------------------------

def test_cli_end_to_end(tmp_path, data_dir, small_db, capsys):
    db, _ = small_db
    save_database(db, tmp_path / "db.npz")
    clip = _clip(data_dir, "walk-turn-left_normal_009")
    assert main(["avatar", "extract", str(clip), "-o", str(tmp_path / "t.csv"), "-q"]) == 0
    track = read_tracking(tmp_path / "t.csv")
    assert main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "t.csv"),
                 "-o", str(tmp_path / "a.bvh"), "--truth", str(clip),
                 "--report", str(tmp_path / "r.json"),
                 "--report-html", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert "hands" in out and "against" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    # the speeds the headset asked, one per frame (matching.coverage)
    assert 0.0 <= rep["asked_speeds"]["uncovered_s"] <= rep["frames"] / 60.0
    assert rep["asked_speeds"]["database_speeds_m_s"]
    # the kinematic avatar's page: every figure, the truth's among them, the report's figures
    html = (tmp_path / "r.html").read_text()
    assert rep["report_html"] == str(tmp_path / "r.html")
    assert html.count('src="data:image/png;base64,') == 6 and "<h2>Against the truth</h2>" in html
    assert f"{100 * rep['mpjpe_m']:.1f} cm mean over {rep['joints_compared']} joints" in html
    for key in ("mpjpe_m", "lower_body_error_m", "hand_error_m", "foot_skate_mm", "jitter"):
        assert np.isfinite(rep[key]), key
    assert rep["latency_ms"]["median"] > 0 and rep["latency_ms"]["p99"] >= \
        rep["latency_ms"]["median"]
    assert rep["hand_error_reachable_max_m"] < 0.01
    motion = read_bvh(tmp_path / "a.bvh")
    assert motion.n_frames == rep["frames"] == int(np.floor(track.duration * 60 + 1e-6)) + 1
    # a truth on a skeleton sharing no joint name: one line naming the truth file
    from physmocap.io.bvh import write_bvh
    from physmocap.io.deepmimic import pybullet_motion_path, read_deepmimic
    odd = read_deepmimic(pybullet_motion_path("humanoid3d_walk.txt"))
    odd = Motion(Skeleton([f"J{j}" for j in range(len(odd.skeleton))], odd.skeleton.parents,
                          odd.skeleton.offsets), odd.fps, odd.root_pos, odd.lrot)
    write_bvh(odd, tmp_path / "odd.bvh")
    capsys.readouterr()
    assert main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "t.csv"),
                 "-o", str(tmp_path / "b.bvh"), "--truth", str(tmp_path / "odd.bvh")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "odd.bvh: avatar_report: no joint of the output matches" in err[0]
    assert not (tmp_path / "b.bvh").exists()              # refused before the run, no output
    # a truth of one frame: one line, before the run too (after it, before)
    write_bvh(read_bvh(clip)[:1], tmp_path / "one.bvh")
    assert main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "t.csv"),
                 "-o", str(tmp_path / "b.bvh"), "--truth", str(tmp_path / "one.bvh")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"physmocap: error: {tmp_path / 'one.bvh'}: the truth has 1 frame(s) at the "
                   "database's 60 fps; avatar_report needs at least 2"], err
    assert not (tmp_path / "b.bvh").exists()


def test_cli_physics_tracks_the_avatar_on_the_simulated_body(tmp_path, data_dir, small_db,
                                                              capsys):
    db, _ = small_db
    save_database(db, tmp_path / "db.npz")
    clip = _clip(data_dir, "walk_normal_001")
    assert main(["avatar", "extract", str(clip), "-o", str(tmp_path / "t.csv"), "-q"]) == 0
    assert main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "t.csv"),
                 "-o", str(tmp_path / "sim.bvh"), "--physics", "--report",
                 str(tmp_path / "r.json"), "--report-html", str(tmp_path / "r.html"),
                 "--truth", str(clip)]) == 0
    out = capsys.readouterr().out
    assert "simulated (assist)" in out and "(before simulation): joints" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    ph = rep["physics"]
    # the output file is the simulated body's: its own figures against the truth, recomputed
    # here from the file (the top-level ones were all the report had, and describe the
    # avatar before simulation), the truth carried into the body's scaled world
    from physmocap.matching.avatar import truth_errors
    from physmocap.matching.retarget import root_scale
    sim, truth = read_bvh(tmp_path / "sim.bvh"), read_bvh(clip)
    assert main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "t.csv"),
                 "-o", str(tmp_path / "kin.bvh"), "-q"]) == 0        # the world's source
    world = root_scale(read_bvh(tmp_path / "kin.bvh"), load_body().skeleton)
    err, _, _ = truth_errors(db, sim, truth, world=world)
    t = ph["truth"]
    assert t["frames_compared"] == sim.n_frames and t["joints_compared"] == err.shape[1]
    assert t["mpjpe_m"] == pytest.approx(err.mean(), abs=2e-4)     # (the BVH's digits)
    assert 0.0 < t["mpjpe_m"] < 0.10 and "until_first_fall" not in t
    assert t["mpjpe_m"] != rep["mpjpe_m"]
    assert f"simulated against {clip}: joints {t['mpjpe_m']:.3f} m" in out
    assert ph["mode"] == "assist" and ph["balance"] == "none" and not ph["falls"]
    # a walking avatar on the body: the targets for assisted playback (3 cm, 1 cm)
    assert ph["tracking_error_m"] < 0.03 and ph["penetration_max_mm"] <= 10.0
    # the other figures: the root assist (bounded by its clamp; the legs carry part
    # of the weight), foot skate during the simulated contacts
    limit = TrackingSettings().assist_max_force
    assert 0 < ph["root_assist_force_mean_n"] <= ph["root_assist_force_max_n"] <= limit + 1e-6
    assert ph["root_assist_force_mean_n"] < 0.8 * 9.81 * load_body().total_mass
    assert 0 <= ph["foot_skate_mm"] < 30 and all(0.2 < c < 0.9 for c in ph["contact_fraction"])
    # the simulated hands on the controllers (the arms bent for the simulated chest every
    # frame: playback.reach.ArmReach): the 1 cm whenever reachable, as a mean and for
    # most frames (measured: 0.21 cm, 99 %; without the loop 2.4 cm, 9 %)
    hands = ph["hands"]
    assert hands["hand_reachable_fraction"] > 0.8
    assert hands["hand_error_reachable_m"] < 0.01 and hands["within_tolerance_fraction"] > 0.8
    sim = read_bvh(tmp_path / "sim.bvh")
    assert sim.skeleton.names[0] == "Hips" and "LeftUpperLeg" in sim.skeleton.names
    assert sim.n_frames == rep["frames"]
    # its page: play's figures and the hands' distance from the controllers, the same share
    # within 1 cm as the report, and the avatar's own figures folded in
    page = (tmp_path / "r.html").read_text()
    assert rep["report_html"] == str(tmp_path / "r.html")
    assert page.count("data:image/png") == 6 and "<h2>Hands</h2>" in page
    assert f"{100 * hands['within_tolerance_fraction']:.1f} % of hand-frames within 10 mm" in page
    assert f"&quot;transitions&quot;: {rep['transitions']}" in page       # escaped JSON


def test_cli_physics_predict(tmp_path, data_dir, small_db, capsys):
    """``avatar --physics --mode physical --balance stepping --predict``: the simulated avatar
    with its balance gains chosen by simulating ahead (``track_predictive``), the hands
    reaching for the controllers; the report's ``physics`` holds the search, and its
    checkpoint is gone once the outputs are written. 1.5 s of a held-out walk."""
    from physmocap.tracking import ThreePointTrack
    db, _ = small_db
    save_database(db, tmp_path / "db.npz")
    clip = _clip(data_dir, "walk_normal_010")
    assert main(["avatar", "extract", str(clip), "-o", str(tmp_path / "t.csv"), "-q"]) == 0
    t = read_tracking(tmp_path / "t.csv")
    k = int(np.searchsorted(t.times, t.times[0] + 1.5))
    write_tracking(ThreePointTrack(t.times[:k], t.pos[:k], t.rot[:k]), tmp_path / "s.csv")
    assert main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "s.csv"),
                 "-o", str(tmp_path / "sim.bvh"), "--physics", "--mode", "physical",
                 "--balance", "stepping", "--predict", "--report",
                 str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "simulated (physical)" in out and "predictive: the committed steps" in out
    ph = json.loads((tmp_path / "r.json").read_text())["physics"]
    pr = ph["predictive"]
    assert pr["complete"] and pr["frames_planned"] == ph["frames"] and pr["decisions"] >= 5
    assert ph["frames_per_second"] == pr["frames_per_second"] and ph["balance"] == "stepping"
    assert ph["falls"] == [] and ph["hands"]["hand_reachable_fraction"] > 0.5
    assert read_bvh(tmp_path / "sim.bvh").n_frames == ph["frames"]
    assert not (tmp_path / ".sim.bvh.partial").exists()


def test_cli_errors(tmp_path, small_db, capsys):
    db, _ = small_db
    save_database(db, tmp_path / "db.npz")
    # stepping balance is for a fully physical body: refused before any work
    with pytest.raises(SystemExit) as exc:
        main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "none.csv"),
              "-o", str(tmp_path / "a.bvh"), "--physics", "--balance", "stepping"])
    assert exc.value.code == 2
    assert "--balance stepping needs --mode physical" in capsys.readouterr().err
    # nor a simulated body whose balance to search
    with pytest.raises(SystemExit) as exc:
        main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "none.csv"),
              "-o", str(tmp_path / "a.bvh"), "--mode", "physical", "--balance", "stepping",
              "--predict"])
    assert exc.value.code == 2 and "--predict" in capsys.readouterr().err
    # nor is there a simulated body to put back on its feet
    with pytest.raises(SystemExit) as exc:
        main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(tmp_path / "none.csv"),
              "-o", str(tmp_path / "a.bvh"), "--recover", "1"])
    assert exc.value.code == 2 and "--recover" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "\n" + _row(0.0) + "\n")
    assert main(["avatar", str(tmp_path / "db.npz"), "--tracking", str(bad), "-o",
                 str(tmp_path / "a.bvh")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"physmocap: error: {bad}: need at least 2 samples, found 1"
    assert not (tmp_path / "a.bvh").exists()
    with pytest.raises(SystemExit) as exc:
        main(["avatar", str(tmp_path / "db.npz"), "-o", str(tmp_path / "a.bvh")])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["avatar", "extract", "-o", str(tmp_path / "t.csv")])
    assert exc.value.code == 2
    assert main(["avatar", "extract", str(tmp_path / "db.npz"), "-o",
                 str(tmp_path / "t.csv")]) == 1
    assert "unknown file type" in capsys.readouterr().err
    assert isinstance(FileFormatError("x"), PhysmocapError)


@pytest.mark.parametrize("field, value", [
    ("controller", {"search_every": 5}), ("window", 0.0), ("stand_speed", -0.1),
    ("max_slide", float("nan")), ("slide_speed", "fast"), ("clavicle_deg", float("inf")),
    ("align_halflife", -1.0), ("sim_pull", 1.5), ("lock_blend", -1), ("head_span", 0),
    ("head_span", 2.0), ("foot_lock", 1), ("turn_speeds", (0.6, 0.2)),
    ("align_fade", (30.0,)), ("pole", (0.0, 0.0, 0.0)), ("pole", "down"),
])
def test_bad_avatar_settings_are_one_settings_error(field, value):
    """Each is one line when the settings are made (before, none was checked), and the edges the
    docstring allows are accepted."""
    with pytest.raises(SettingsError, match=f"AvatarSettings: {field} must be") as e:
        AvatarSettings(**{field: value})
    assert "\n" not in str(e.value)
    assert AvatarSettings(sim_pull=0.0, lock_blend=0, clavicle_deg=0.0, align_halflife=0.0)


def test_a_truth_sharing_no_joint_with_the_avatar_is_named(avatar_run):
    db, _, motion, rec = avatar_run
    sk = Skeleton(("Pelvis", "Torso"), [-1, 0], np.array([[0, 0, 1.0], [0, 0, 0.3]]))
    F = motion.n_frames
    truth = Motion(sk, motion.fps, np.tile([0.0, 0.0, 1.0], (F, 1)), quat.identity((F, 2)))
    with pytest.raises(UnknownNameError, match="no joint of the output matches a truth joint; "
                                               "truth joints: Pelvis, Torso"):
        avatar_report(db, motion, rec, truth)


def test_a_head_weight_is_a_number_at_least_zero(small_db):
    """-1 was read as "off" like 0, NaN failed deep in the feature spec."""
    db, _ = small_db
    for bad in (-1.0, float("nan"), "4"):
        with pytest.raises(SettingsError, match="avatar_feature_spec: head_weight must be"):
            avatar_features(db, head_weight=bad)
