"""Rest-pose retargeting onto a second skeleton."""
import numpy as np
import pytest

from physmocap import Skeleton, UnknownNameError
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


def test_unmappable_root_is_an_error():
    src = read_deepmimic(pybullet_motion_path("humanoid3d_walk.txt"))
    other = Skeleton(["Pelvis", "Knee"], [-1, 0], [[0, 0, 1], [0, 0, -0.5]])
    with pytest.raises(UnknownNameError, match="root"):
        retarget(src, other)
