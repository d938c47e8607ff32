"""The HTML playback report (``play --report-html``): self-contained, every figure present, the
falls named and shown, the CLI paths and errors."""
from __future__ import annotations

import dataclasses
import re
import sys

import numpy as np
import pytest

from physmocap import quat
from physmocap.cli import main
from physmocap.motion import Motion
from physmocap.playback import TrackingSettings, track
from physmocap.scene import load_body
from conftest import page_beside_reports, page_images

PNG = b"\x89PNG\r\n\x1a\n"
SECTIONS = ("Paths", "Tracking", "Root assist", "Feet", "Key frames")


def _standing(body, seconds: float) -> Motion:
    F = int(seconds * 60)
    return Motion(body.skeleton, 60.0, np.tile(body.skeleton.offsets[0], (F, 1)),
                  quat.identity((F, len(body))))


@pytest.fixture(scope="module")
def limp():
    """A fully physical body with no joint torque: it falls within 2 s."""
    body = load_body()
    res = track(_standing(body, 2.0), body, "physical",
                TrackingSettings(joint_max_torque=0.0, joint_min_torque=0.0))
    assert res.falls
    return res


def test_page_says_when_the_body_was_put_back():
    """``recover_s``: each fall's row says when the body was put back on its feet, and the
    paths break there (a body placed, not walked: ``_recovery_frames`` finds the jump)."""
    from physmocap.report.play_html import _recovery_frames, play_report_html

    body = load_body()
    res = track(_standing(body, 4.0), body, "physical",
                TrackingSettings(joint_max_torque=0.0, joint_min_torque=0.0, recover_s=0.5))
    back = [f for f in res.falls if "recovered_s" in f]
    assert back
    head = res.motion.gpos[:, body.index("Head"), 2]
    for k in _recovery_frames(res):
        assert head[k - 1] < 0.6 < 1.5 < head[k]         # the first frame standing again
    html = play_report_html(res, dict(res.report(), source="standing.bvh", output="sim.bvh"))
    for f in back:
        assert f"put back on its feet at {f['recovered_s']:.2f} s" in html
    assert len(page_images(html)) == len(SECTIONS)


def test_page_is_self_contained_and_names_the_fall(limp):
    from physmocap.report.play_html import play_report_html

    rep = dict(limp.report(), source="standing.bvh", output="sim.bvh")
    html = play_report_html(limp, rep)
    assert not re.search(r"(src|href)=\"(https?:|//)", html)       # nothing fetched
    assert "<script" not in html and "<link" not in html
    imgs = page_images(html)
    assert len(imgs) == len(SECTIONS) and all(i.startswith(PNG) and len(i) > 5000 for i in imgs)
    for heading in SECTIONS + ("JSON report",):
        assert f"<h2>{heading}</h2>" in html
    f = limp.falls[0]
    assert (f"from {f['since_s']:.2f} s ({f['reason']}, detected at {f['time_s']:.2f} s)"
            in html)
    assert "physmocap play report: standing.bvh" in html
    w = rep["walked_m"]
    assert (f"body {w['body']:.1f} m, reference {w['reference']:.1f} m (until the first fall "
            f"began, {w['until_s']:.2f} s)") in html
    assert f"{rep['pose_error_m']:.3f} m mean until the first fall" in html


def test_key_frames_show_where_the_first_fall_began(limp):
    from physmocap.report.play_html import key_frames

    F = limp.motion.n_frames
    frames = key_frames(limp)
    began = int(round(limp.falls[0]["since_s"] * limp.motion.fps))
    assert began in frames and 2 <= len(frames) <= 4
    assert frames == sorted(frames) and all(0 <= f < F for f in frames)
    even = key_frames(dataclasses.replace(limp, falls=[]))
    assert len(even) == 4 and even == sorted(even) and even[0] > 0 and even[-1] < F - 1
    assert np.all(np.diff(even) > F // 8)                             # spread over the take


def test_play_writes_the_page_beside_its_reports(tmp_path, capsys):
    from physmocap.io.deepmimic import pybullet_motion_path

    clip = str(pybullet_motion_path("humanoid3d_walk.txt"))
    page, rep = tmp_path / "play.html", tmp_path / "play.json"
    code = main(["play", clip, "-o", str(tmp_path / "sim.bvh"), "--report", str(rep),
                 "--report-html", str(page)])
    html = page_beside_reports(code, capsys.readouterr().out, tmp_path / "sim.bvh", rep, page)
    assert len(page_images(html)) == len(SECTIONS) and "falls</td><td>none" in html
    assert "N mean" in html and "assist" in html


def test_missing_matplotlib_is_said_before_the_run(tmp_path, capsys, monkeypatch):
    from physmocap.io.deepmimic import pybullet_motion_path

    monkeypatch.setitem(sys.modules, "matplotlib", None)    # import fails as if not installed
    clip = str(pybullet_motion_path("humanoid3d_walk.txt"))
    code = main(["play", clip, "-o", str(tmp_path / "sim.bvh"), "--report-html",
                 str(tmp_path / "p.html")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "physmocap[report]" in err[0]
    assert list(tmp_path.iterdir()) == []                   # nothing simulated, nothing written


@pytest.mark.parametrize("frames", [2, 3])
def test_a_take_of_a_few_frames_gets_its_page(frames):
    """The shortest takes ``track`` accepts: every figure drawn (no contact, no fall, the key
    frames the take has), not an error from an empty mean or a degenerate axis."""
    from physmocap.report.play_html import key_frames, play_report_html

    body = load_body()
    res = track(_standing(body, frames / 60.0), body, "assist")
    assert res.motion.n_frames == frames
    frames_shown = key_frames(res)
    assert frames_shown == sorted(set(frames_shown)) and set(frames_shown) <= set(range(frames))
    html = play_report_html(res, res.report())
    assert len(page_images(html)) == len(SECTIONS)


def test_summary_says_what_the_look_ahead_search_did():
    """``play --predict``'s report: the search's line, complete or out of budget (then when,
    from the run's frames and duration); no line without a search."""
    from physmocap.report.play_html import _search_text
    rep = {"frames": 1201, "duration_s": 20.0}
    assert _search_text(rep) is None
    pr = dict(complete=True, frames_planned=1201, budget=100.0, simulated_per_played=31.1,
              backtracks=0, decisions=80, sets_used={"own": 3, "random": 77})
    assert _search_text(dict(rep, predictive=pr)) == (
        "complete: 31.1 frames simulated per frame played, 0 dead ends gone back from, 80 "
        "decisions (gain sets: own 3, random 77)")
    pr.update(complete=False, frames_planned=600, budget=300.0, resumed_at_frame=301)
    text = _search_text(dict(rep, predictive=pr))
    assert text.startswith(
        "ran out of its budget (300 frames simulated per frame played) at 10.00 s; the rest "
        "played with the last gains: 31.1 frames")
    assert text.endswith("; stopped and resumed at 5.02 s")
