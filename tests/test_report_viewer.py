"""The viewer page: self-contained, carries the motion exactly, markers with residual lines."""
from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from physmocap.cli import main
from physmocap.errors import PhysmocapError
from physmocap.io.bvh import read_bvh
from physmocap.io.c3d import read_c3d
from physmocap.report.viewer import markers_on_motion, viewer_html


def _data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def _f32(s, shape):
    return np.frombuffer(base64.b64decode(s), "<f4").reshape(shape)


def test_viewer_page_embeds_the_motion(demo_solve):
    motion = read_bvh(demo_solve["bvh"], unit="cm")
    markers = read_c3d(demo_solve["c3d"])
    html = viewer_html(motion, markers)
    assert not re.search(r"(src|href)=\"(https?:|//)", html) and "<link" not in html
    assert "<script src" not in html
    d = _data(html)
    F, J = motion.n_frames, len(motion.skeleton)
    assert d["frames"] == F and d["parents"] == list(motion.skeleton.parents)
    np.testing.assert_allclose(_f32(d["joints"], (F, J, 3)), motion.gpos, atol=1e-6)
    M = len(d["labels"])
    assert M == 41 and "cmu41" in d["note"]
    pos = _f32(d["markers"], (F, M, 3))
    lm = _f32(d["landmarks"], (F, M, 3))
    r = np.linalg.norm(pos - lm, axis=-1)
    # The landmarks sit on the solved body: residuals like the solve's (the swap aside).
    assert np.nanmedian(r) < 0.005 and np.isnan(pos).any()


def test_markers_resampled_by_time_and_unfit_sets_have_no_lines(demo_solve, data_dir):
    motion = read_bvh(demo_solve["bvh"], unit="cm")
    markers = read_c3d(demo_solve["c3d"])
    half = motion.__class__(motion.skeleton, motion.fps / 2, motion.root_pos[::2],
                            motion.lrot[::2])
    pos, lm, labels, _ = markers_on_motion(half, markers)
    cols = [markers.labels.index(l) for l in labels]
    np.testing.assert_array_equal(pos, markers.pos[::2][:, cols])
    cmu = read_bvh(data_dir / "bvh/cmu/16_57.bvh")              # CMU joint names: no cmu41 bind
    pos, lm, labels, note = markers_on_motion(cmu, read_c3d(data_dir / "c3d/cmu/16_57.c3d"))
    assert lm is None and note.startswith("no residual lines") and pos.shape[0] == cmu.n_frames


def test_view_command_and_its_errors(demo_solve, tmp_path, capsys):
    out = tmp_path / "v.html"
    assert main(["view", str(demo_solve["bvh"]), "--markers", str(demo_solve["c3d"]),
                 "-o", str(out), "-q"]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    for args, pattern in [
        (["view", str(demo_solve["c3d"]), "-o", str(out)], "expected skeletal motion"),
        (["view", str(demo_solve["bvh"]), "--markers", str(demo_solve["bvh"]), "-o", str(out)],
         "--markers takes a C3D"),
        (["view", str(demo_solve["bvh"]), "-o", str(tmp_path / "no/dir/v.html")], "does not exist"),
    ]:
        code = main(args)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 1 and len(err) == 1 and pattern in err[0], err


def test_empty_motion_is_refused(demo_solve):
    motion = read_bvh(demo_solve["bvh"], unit="cm")
    with pytest.raises(PhysmocapError, match="no frames"):
        viewer_html(motion[:0])


def test_picture_commands_have_help_with_example():
    import subprocess
    import sys
    for cmd in ("report", "view", "render"):
        r = subprocess.run([sys.executable, "-m", "physmocap", cmd, "--help"],
                           capture_output=True, text=True)
        assert r.returncode == 0 and "example" in r.stdout


@pytest.mark.parametrize("name, side", [
    ("LeftUpLeg", 1), ("LHipJoint", 1), ("lKnee", 1), ("UpperLeg_L", 1), ("L_Knee", 1),
    ("RightArm", -1), ("RHipJoint", -1), ("rElbow", -1), ("Hand_R", -1), ("r_hip", -1),
    ("Hips", 0), ("Lumbar", 0), ("RootJoint", 0), ("L5", 0), ("lowerback_torso", 0)])
def test_joint_side_from_common_naming_habits(name, side):
    from physmocap.report.viewer import joint_side
    assert joint_side(name) == side
