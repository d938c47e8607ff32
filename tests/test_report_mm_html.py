"""The motion-matching report (``mm run --report-html``): self-contained, every figure drawn,
its figures the JSON report's, the CLI paths and errors."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from physmocap.cli import main
from physmocap.io.bvh import read_bvh
from physmocap.matching.controller import Controller, run_controller
from physmocap.matching.database import build_database, save_database
from physmocap.matching.features import compute_features
from physmocap.matching.metrics import path_distance_series, run_report
from physmocap.matching.trajectory import Joystick, PathFollower
from conftest import page_beside_reports, page_images

PNG = b"\x89PNG\r\n\x1a\n"
SECTIONS = ("Paths", "Following the input", "Clips", "Feet")


@pytest.fixture(scope="module")
def db(data_dir):
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("*walk*_00[1-3].bvh"))
    return build_database([read_bvh(f) for f in files], names=[f.stem for f in files], fps=30)


def test_transition_frames():
    from physmocap.report.mm_html import transition_frames

    # a clip playing on (+1), its last frame held (0), and two jumps (back and forward)
    frames = [10, 11, 12, 12, 12, 40, 41, 5, 6]
    assert transition_frames(frames).tolist() == [5, 7]
    assert transition_frames([3]).tolist() == [] and transition_frames([]).tolist() == []


def test_page_has_every_figure_and_the_reports_figures(db):
    from physmocap.report.mm_html import mm_report_html, transition_frames

    source = PathFollower(points=[(0, 0), (4, 0), (4, 3), (0, 3)], speed=1.1, closed=True)
    ctrl = Controller(db, compute_features(db), source)
    motion, record = run_controller(ctrl, 6.0)
    rep = dict(run_report(db, motion, record, source), input="square.toml")
    html = mm_report_html(db, motion, record, source, rep)
    images = page_images(html)
    assert len(images) == len(SECTIONS) and all(i.startswith(PNG) for i in images)
    for name in SECTIONS:
        assert f"<h2>{name}</h2>" in html
    assert "http://" not in html and "https://" not in html              # works offline
    assert f"{rep['trajectory_error_m']:.3f} m mean after the first second" in html
    assert f"transitions</td><td>{rep['transitions']}" in html
    # the ticks drawn are the jumps the controller counts (its first search, leaving a start
    # frame never shown, was counted too: one more than drawn in every shipped input)
    assert 0 < len(transition_frames(record.frame)) == rep["transitions"]
    # the distance drawn is the one the report averages (after the first second)
    dist = path_distance_series(source, record, 1.0 / db.fps)
    assert dist.shape == (motion.n_frames,)
    assert round(float(dist[int(db.fps):].mean()), 4) == rep["trajectory_error_m"]


def test_a_run_of_one_frame_gets_its_page(db):
    """The shortest run: no path figure in the report (null), every picture still drawn."""
    from physmocap.report.mm_html import mm_report_html

    source = Joystick(times=np.array([0.0]), stick=np.array([[0.0, 1.0]]), run=np.array([False]))
    motion, record = run_controller(Controller(db, compute_features(db), source), 0.01)
    assert motion.n_frames == 1
    rep = run_report(db, motion, record, source)
    assert rep["trajectory_error_m"] is None
    html = mm_report_html(db, motion, record, source, rep)
    assert len(page_images(html)) == len(SECTIONS) and "root from the asked path" not in html


def test_cli_writes_the_page(db, tmp_path, capsys):
    save_database(db, tmp_path / "db.npz")
    page, rep = tmp_path / "run.html", tmp_path / "run.json"
    code = main(["mm", "run", str(tmp_path / "db.npz"), "--input", "sharp_turns",
                 "--duration", "6", "-o", str(tmp_path / "o.bvh"), "--report", str(rep),
                 "--report-html", str(page)])
    html = page_beside_reports(code, capsys.readouterr().out, tmp_path / "o.bvh", rep, page)
    assert len(page_images(html)) == len(SECTIONS) and "sharp_turns" in html


def test_cli_page_errors(db, tmp_path, capsys, monkeypatch):
    save_database(db, tmp_path / "db.npz")
    argv = ["mm", "run", str(tmp_path / "db.npz"), "--input", "straight_walk", "-o",
            str(tmp_path / "o.bvh")]
    # named for another format: refused before the run
    code = main(argv + ["--report-html", str(tmp_path / "r.htm")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == [f"physmocap: error: {tmp_path}/r.htm: --report-html is an "
                                 "HTML page; name it .html"]
    # without matplotlib: said before the run, nothing written
    monkeypatch.setitem(sys.modules, "matplotlib", None)    # import fails as if not installed
    code = main(argv + ["--report-html", str(tmp_path / "r.html")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "physmocap[report]" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.npz"]


def test_speed_is_the_roots(db):
    """The speed drawn is the root's horizontal speed: a root moving 1 m/s along x reads 1."""
    from physmocap.report.mm_html import _speed

    pos = np.c_[np.arange(10) / 30.0, np.zeros(10), np.full(10, 0.9)]
    np.testing.assert_allclose(_speed(pos, 30.0), 1.0)
    assert _speed(pos[:1], 30.0).tolist() == [0.0]
