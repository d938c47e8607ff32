"""The kinematic three-point avatar's report (``avatar --report-html`` without ``--physics``):
self-contained, every figure drawn, with and without the truth, its figures the report's."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap.io.bvh import read_bvh
from physmocap.matching import avatar as av
from physmocap.matching.database import build_database
from conftest import page_images

PNG = b"\x89PNG\r\n\x1a\n"
ALWAYS = ("Paths", "Hands", "Latency", "Clips", "Feet")


@pytest.fixture(scope="module")
def run(data_dir):
    """An avatar of a held-out walk (2 s) on a database of three other walks."""
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("*walk*_00[1-3].bvh"))
    db = build_database([read_bvh(f) for f in files], names=[f.stem for f in files], fps=30)
    truth = read_bvh(folder / "dataset-2_walk_normal_010.bvh")[:240]          # 2 s at 120 fps
    track = av.extract_track(truth)
    motion, record = av.run_avatar(av.Avatar(db, av.avatar_features(db), track))
    return db, motion, record, track, truth


def test_page_with_the_truth(run):
    from physmocap.report.avatar_html import avatar_report_html

    db, motion, record, track, truth = run
    rep = dict(av.avatar_report(db, motion, record, truth), tracking="t.csv")
    html = avatar_report_html(db, motion, record, track, rep, truth)
    images = page_images(html)
    assert len(images) == len(ALWAYS) + 1 and all(i.startswith(PNG) for i in images)
    for name in ALWAYS + ("Against the truth",):
        assert f"<h2>{name}</h2>" in html
    assert "http://" not in html and "https://" not in html              # works offline
    assert f"{100 * rep['mpjpe_m']:.1f} cm mean over {rep['joints_compared']} joints" in html
    lat = rep["latency_ms"]
    assert f"{lat['median']:.2f} ms median, {lat['p99']:.2f} ms p99 per frame" in html


def test_page_without_the_truth(run):
    from physmocap.report.avatar_html import avatar_report_html

    db, motion, record, track, _ = run
    rep = av.avatar_report(db, motion, record)
    html = avatar_report_html(db, motion, record, track, rep)
    assert len(page_images(html)) == len(ALWAYS) and "Against the truth" not in html
    assert "joints against the truth" not in html


def test_the_series_drawn_are_the_reports(run):
    """The page's per-frame curves average to the JSON report's figures."""
    db, motion, record, _, truth = run
    rep = av.avatar_report(db, motion, record, truth)
    err, low, _ = av.truth_errors(db, motion, truth)
    assert err.shape == (rep["frames_compared"], rep["joints_compared"])
    assert round(float(err.mean()), 4) == rep["mpjpe_m"]
    assert round(float(err[:, low].mean()), 4) == rep["lower_body_error_m"]
    d, ok = av.hand_errors(motion, record)
    assert d.shape == ok.shape == (motion.n_frames, 2)
    assert round(float(d.mean()), 5) == rep["hand_error_m"]
    assert round(float(ok.mean()), 4) == rep["hand_reachable_fraction"]
    assert np.all(d[ok] < 0.01)                     # the arms' IK meets reachable controllers
