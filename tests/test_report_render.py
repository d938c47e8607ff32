"""Offline rendering to GIF (Pillow) and MP4 (ffmpeg, clear error without it)."""
from __future__ import annotations

import pytest

from physmocap.cli import main
from physmocap.errors import PhysmocapError
from physmocap.io.bvh import read_bvh
from physmocap.io.c3d import read_c3d
from physmocap.report.render import render_motion


def test_render_gif_has_one_frame_per_output_tick(demo_solve, tmp_path):
    from PIL import Image

    motion = read_bvh(demo_solve["bvh"], unit="cm")[:31]        # 0.25 s at 120 Hz
    out = tmp_path / "m.gif"
    n = render_motion(motion, out, read_c3d(demo_solve["c3d"]), fps=20)
    assert n == 6                                               # t = 0, 0.05, … 0.25 s
    with Image.open(out) as im:
        assert im.n_frames == n and im.size == (480, 480)
    assert not list(tmp_path.glob(".m.gif*"))                  # no temporary left behind


def test_render_errors(demo_solve, tmp_path, monkeypatch, capsys):
    motion = read_bvh(demo_solve["bvh"], unit="cm")
    with pytest.raises(PhysmocapError, match=".gif or .mp4"):
        render_motion(motion, tmp_path / "x.avi")
    with pytest.raises(PhysmocapError, match="motion has no frames"):
        render_motion(motion[:0], tmp_path / "x.gif")
    # a ZeroDivisionError at 0 before; Pillow's OverflowError below 0.01 (a GIF frame lasts
    # at most 655.35 s)
    for bad in (0, -5.0, float("nan"), float("inf"), 0.001, 1e-300):
        with pytest.raises(PhysmocapError, match="render: fps must be a finite number >= 0.01"):
            render_motion(motion, tmp_path / "x.gif", fps=bad)
    assert not (tmp_path / "x.gif").exists()
    from matplotlib import animation
    monkeypatch.setattr(animation.writers, "is_available", lambda name: False)
    code = main(["render", str(demo_solve["bvh"]), "-o", str(tmp_path / "x.mp4")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "ffmpeg" in err[0]
    assert not (tmp_path / "x.mp4").exists()
