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


@pytest.mark.parametrize("fps, frame_ms, n", [(30, 30, 9), (60, 20, 13), (25, 40, 7)])
def test_a_gif_plays_at_the_motions_speed(demo_solve, tmp_path, fps, frame_ms, n):
    """A GIF keeps frame times in hundredths of a second: asked for 30 fps it was written with
    0.03 s frames (11 % fast), for 60 fps with 0.01 s (67 % fast). Now frames are taken at the
    nearest rate a GIF keeps, at most 50 fps (33.3 for 30), so it lasts as the motion does."""
    from PIL import Image

    from physmocap.report.render import output_fps
    motion = read_bvh(demo_solve["bvh"], unit="cm")[:31]        # 0.25 s at 120 Hz
    out = tmp_path / "m.gif"
    assert render_motion(motion, out, fps=fps) == n
    assert output_fps(out, fps, motion.fps) == pytest.approx(1000 / frame_ms)
    with Image.open(out) as im:
        ms = []
        for k in range(im.n_frames):
            im.seek(k)
            ms.append(im.info["duration"])
    assert ms == [frame_ms] * n
    assert (n - 1) * frame_ms / 1000 == pytest.approx(motion.duration, abs=frame_ms / 1000)


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
