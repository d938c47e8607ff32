"""Rest-pose retargeting onto a second skeleton."""
import numpy as np
import pytest

from physmocap import Skeleton, UnknownNameError, quat
from physmocap.errors import SettingsError
from physmocap.io.bvh import read_bvh
from physmocap.io.deepmimic import pybullet_motion_path, read_deepmimic
from physmocap.matching.retarget import retarget
from physmocap.scene import load_body


def test_retarget_keeps_end_effector_paths_within_limb_ratio():
    src = read_deepmimic(pybullet_motion_path("humanoid3d_walk.txt"))
    body = load_body()
    out = retarget(src, body.skeleton)
    assert out.n_frames == src.n_frames and out.fps == src.fps
    ratio = body.skeleton.offsets[0, 2] / (np.median(src.gpos[:, 0, 2]) - src.gpos[..., 2].min())
    for name in ("LeftFoot", "RightFoot", "LeftHand", "RightHand"):
        a = src.gpos[:, src.skeleton.index(name)]
        b = out.gpos[:, body.skeleton.index(name)]
        # relative to the hips: the limb path scales with limb length, not more
        ra = a - src.gpos[:, 0]
        rb = b - out.gpos[:, 0]
        la = np.linalg.norm(ra, axis=-1).mean()
        lb = np.linalg.norm(rb, axis=-1).mean()
        assert 0.7 * ratio < lb / la < 1.3 * ratio, name
        # direction of each end effector from the hips is preserved (same pose)
        cos = np.sum(ra * rb, -1) / np.linalg.norm(ra, axis=-1) / np.linalg.norm(rb, axis=-1)
        assert np.median(cos) > 0.9, name


def test_retarget_cmu_names(data_dir):
    src = read_bvh(data_dir / "bvh/cmu/131_01.bvh")
    out = retarget(src, load_body().skeleton)
    travel_s = np.linalg.norm(src.root_pos[-1, :2] - src.root_pos[0, :2])
    travel_t = np.linalg.norm(out.root_pos[-1, :2] - out.root_pos[0, :2])
    assert travel_t > 0.5 * travel_s


#: limb bones as (from, to) joints: a rig's names (after its side prefix), the humanoid's
_LIMBS = ((("Hip", "Knee"), ("UpperLeg", "LowerLeg")), (("Knee", "Ankle"), ("LowerLeg", "Foot")),
          (("Shoulder", "Elbow"), ("UpperArm", "LowerArm")),
          (("Elbow", "Wrist"), ("LowerArm", "Hand")))


def _limb_pairs(left: str, right: str) -> list:
    """``_LIMBS`` of both sides, the source's joints prefixed ``left`` / ``right``."""
    return [((p + s0, p + s1), (side + t0, side + t1))
            for p, side in ((left, "Left"), (right, "Right")) for (s0, s1), (t0, t1) in _LIMBS]


def _assert_bones_follow(src, out, body, pairs) -> None:
    """Each retargeted bone ``(t0, t1)`` points where the source's ``(s0, s1)`` does, within
    18 deg in every frame."""
    for (s0, s1), (t0, t1) in pairs:
        a = src.gpos[:, src.skeleton.index(s1)] - src.gpos[:, src.skeleton.index(s0)]
        b = out.gpos[:, body.skeleton.index(t1)] - out.gpos[:, body.skeleton.index(t0)]
        cos = np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        assert cos.min() > 0.95, (s0, s1, cos.min())


def test_cmu_3dsmax_names_map_to_humanoid_bones(data_dir):
    """CMU 131 as cgspeed's 3ds-Max conversion names it: ``LeftShoulder`` is the upper arm,
    ``LeftCollar`` the clavicle, the legs ``LeftHip`` / ``LeftKnee`` / ``LeftAnkle``. By equal
    names alone the humerus drove the body's clavicle and the legs and arms stood still."""
    src = read_bvh(data_dir / "bvh/cmu/131_01.bvh")
    body = load_body()
    out = retarget(src, body.skeleton)
    _assert_bones_follow(src, out, body, _limb_pairs("Left", "Right"))
    for side in ("Left", "Right"):
        # the clavicle turns as the source's collar does, not as its upper arm swings
        j = body.skeleton.index(side + "Shoulder")
        turn = np.degrees(quat.angle(out.lrot[:, j], out.lrot[:1, j]))
        assert turn.max() < 20, (side, turn.max())


def test_games105_names_map_to_humanoid_bones(data_dir):
    """The GAMES-105 rig (``RootJoint``, ``lHip``, ``lShoulder``, ``torso_head``): without its
    map retargeting raised (no joint for the root). Each limb bone, and the neck, points where
    the source's does in every frame."""
    src = read_bvh(data_dir / "bvh/games105/lab2_motion_material_walk_forward.bvh")
    body = load_body()
    out = retarget(src, body.skeleton)
    _assert_bones_follow(src, out, body, _limb_pairs("l", "r")
                         + [(("lowerback_torso", "torso_head"), ("Chest", "Neck"))])


def test_unmappable_root_is_an_error():
    src = read_deepmimic(pybullet_motion_path("humanoid3d_walk.txt"))
    other = Skeleton(["Pelvis", "Knee"], [-1, 0], [[0, 0, 1], [0, 0, -0.5]])
    with pytest.raises(UnknownNameError, match="root"):
        retarget(src, other)


def test_bandai_names_map_to_humanoid_bones(data_dir):
    src = read_bvh(data_dir / "bvh/bandai-namco/ds2_normal_locomotion/dataset-2_walk_normal_001.bvh")
    body = load_body()
    out = retarget(src, body.skeleton)
    # the legs move (mapped), not frozen at rest: the feet swing relative to the hips
    for side, s in (("Left", "L"), ("Right", "R")):
        a = src.gpos[:, src.skeleton.index(f"Foot_{s}")] - src.gpos[:, 0]
        b = out.gpos[:, body.skeleton.index(f"{side}Foot")] - out.gpos[:, 0]
        cos = np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        assert np.median(cos) > 0.9


def test_zero_length_toes_keep_their_place_on_the_foot(data_dir):
    """Bandai-Namco toes end in a zero-length end site, so the toe bone has no direction of its
    own; the retargeted toes must point the way the foot points (not backwards or up)."""
    from physmocap import quat
    src = read_bvh(data_dir / "bvh/bandai-namco/ds2_normal_locomotion/dataset-2_walk_normal_001.bvh")
    sk = load_body().skeleton
    out = retarget(src, sk)
    seg = sk.segment_vectors()
    for side in ("Left", "Right"):
        foot, toes = sk.index(side + "Foot"), sk.index(side + "Toes")
        n = out.n_frames
        d_foot = quat.rotate(out.grot[:, foot], np.broadcast_to(seg[foot], (n, 3)))
        d_toes = quat.rotate(out.grot[:, toes], np.broadcast_to(seg[toes], (n, 3)))
        cos = np.sum(d_foot[:, :2] * d_toes[:, :2], -1) / (
            np.linalg.norm(d_foot[:, :2], axis=-1) * np.linalg.norm(d_toes[:, :2], axis=-1))
        assert np.median(cos) > np.cos(np.radians(30)), side


@pytest.mark.parametrize("clip", ["bvh/bandai-namco/ds2_normal_locomotion/dataset-2_walk_normal_001.bvh",
                                  "bvh/cmu/16_57.bvh"])
def test_pelvis_chest_and_feet_face_the_way_the_body_walks(data_dir, clip):
    """Bone directions alone leave each bone's roll to chance (Bandai-Namco's rest pose is not a
    standing pose): the retargeted pelvis, chest and feet must face the walking direction."""
    from physmocap import quat
    src = read_bvh(data_dir / clip)
    sk = load_body().skeleton
    out = retarget(src, sk)
    v = np.gradient(out.root_pos[:, :2], axis=0)
    moving = np.linalg.norm(v, axis=-1) * out.fps > 0.5
    assert moving.sum() > 30
    walk = v[moving] / np.linalg.norm(v[moving], axis=-1, keepdims=True)
    x = np.array([1.0, 0.0, 0.0])
    for name in ("Hips", "Chest", "LeftFoot", "RightFoot"):
        f = quat.rotate(out.grot[moving, sk.index(name)], np.broadcast_to(x, (moving.sum(), 3)))
        f = f[:, :2] / np.linalg.norm(f[:, :2], axis=-1, keepdims=True)
        assert np.median(np.sum(f * walk, -1)) > np.cos(np.radians(35)), name
    # and the left hip is on the body's left
    left = out.gpos[moving, sk.index("LeftUpperLeg"), :2] - out.gpos[moving, 0, :2]
    assert np.median(walk[:, 0] * left[:, 1] - walk[:, 1] * left[:, 0]) > 0


def test_planted_frames_are_low_and_slow():
    from physmocap.matching.retarget import planted_frames
    t = np.arange(120) / 60.0
    # a foot that stands for 0.5 s, then swings (fast, and up to 10 cm high), then stands
    x = np.zeros((120, 3))
    x[30:90, 0] = np.linspace(0.0, 0.8, 60)          # 0.8 m in 1 s: 0.8 m/s
    x[90:, 0] = 0.8
    x[30:90, 2] = 0.1 * np.sin(np.pi * (t[30:90] - 0.5))
    x[5:10, 2] = 0.02                                # low enough, still: planted
    p = planted_frames(x, 60.0)
    assert p[:30].all() and p[91:].all() and not p[31:90].any()
    assert planted_frames(x[:1], 60.0).tolist() == [True]      # one frame: no speed
    for kw in (dict(fps=0.0), dict(height=float("nan")), dict(speed=-1.0)):
        kw = {"fps": 60.0, **kw}
        with pytest.raises(SettingsError, match="planted_frames: .* must be a finite number"):
            planted_frames(x, **kw)


def test_a_first_frame_on_its_toes_does_not_tilt_the_planted_foot(data_dir):
    """Bandai-Namco's rest pose is not a standing pose, so a frame of the clip is the reference
    pose, and ``corrections`` makes its feet flat on the target. walk-turn-left_001 starts with
    its right foot on its toes (ankle-to-toe bone 80 deg down; 40 while planted): without
    ``planted_feet`` every planted right foot stood 40 deg toes up on its heel."""
    from conftest import planted_sole_pitch
    from physmocap.matching.retarget import reference_pose
    path = "bvh/bandai-namco/ds2_normal_locomotion/dataset-2_walk-turn-left_normal_001.bvh"
    src = read_bvh(data_dir / path)
    sk = load_body().skeleton
    out = retarget(src, sk)
    pitch = {s: planted_sole_pitch(out, s) for s in ("Left", "Right")}
    assert all(abs(p) < 8.0 for p in pitch.values()), pitch
    assert abs(pitch["Left"] - pitch["Right"]) < 5.0, pitch
    # the frame alone, as before: the right foot stands on its heel
    first = reference_pose(src.skeleton, src.meta.get("up") or "z", src.lrot[0], sk)
    old = retarget(src, sk, source_rest=first)
    assert planted_sole_pitch(old, "Right") > 25.0


def test_planted_feet_needs_both_hips_and_a_planted_frame():
    """No heading without both hips, no mean without a planted frame: the pose is left as is."""
    from physmocap import quat
    from physmocap.matching.retarget import planted_feet
    sk = Skeleton(["Hips", "LeftFoot"], np.array([-1, 0]), np.array([[0, 0, 1.0], [0, 0, -1.0]]))
    pose = quat.normalize(np.array([[0, 0, 0, 1.0], [0.1, 0, 0, 1.0]]))
    lrot = np.broadcast_to(pose, (10, 2, 4))
    root = np.zeros((10, 3))
    out = planted_feet(sk, pose, lrot, root, 60.0, {"Hips": 0, "LeftFoot": 1})
    assert np.array_equal(out, pose)


def test_scale_points_needs_a_ratio_and_a_floor():
    from physmocap.matching.retarget import scale_points
    assert np.allclose(scale_points([[1.0, 2.0, 1.1]], 2.0, 0.1), [[2.0, 4.0, 2.0]])
    for ratio, floor in ((float("nan"), 0.0), (0.0, 0.0), (1.0, float("inf"))):
        with pytest.raises(SettingsError, match="scale_points: (ratio|floor) must be"):
            scale_points([[1.0, 2.0, 1.1]], ratio, floor)
