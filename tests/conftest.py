"""Shared fixtures. Real data comes from ``../shared/data`` through the one fixture ``data_dir``.

In CI (``CI`` set) a missing data folder is an error, never a skip.
"""
from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def find_data_dir() -> Path | None:
    env = os.environ.get("PHYSMOCAP_DATA")
    candidates = [Path(env)] if env else []
    candidates += [ROOT.parent / "shared" / "data", ROOT / ".." / "shared" / "data"]
    for c in candidates:
        if (c / "README.md").is_file():
            return c.resolve()
    return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``../shared/data`` (or ``$PHYSMOCAP_DATA``)."""
    d = find_data_dir()
    if d is None:
        if os.environ.get("CI"):
            pytest.fail("shared data folder not found (../shared/data or $PHYSMOCAP_DATA)")
        pytest.skip("shared data folder not found")
    return d


@pytest.fixture(scope="session")
def cmu_01_01(data_dir) -> tuple:
    """CMU 01_01 as the solver sees it before calibration: the trajectories, the default body,
    its marker set bound to the capture's labels and the markers' positions ``(F, M, 3)`` m in
    that set's order (the body's prior is left to the test: it may patch what shapes it)."""
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import load_body, pick_markerset

    t = read_c3d(data_dir / "c3d/cmu/01_01.c3d")
    body = load_body()
    ms0 = pick_markerset(t.labels).bind(body.skeleton, labels=t.labels)
    return t, body, ms0, t.select(ms0.names).pos


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def project_root() -> Path:
    """The repository root (for shipped scenes)."""
    return ROOT


@pytest.fixture(scope="session")
def demo_solve(tmp_path_factory) -> dict:
    """The embedded demo capture solved once by ``physmocap solve --report --report-html``;
    paths of the capture, BVH, JSON report and HTML report (shared by the report tests)."""
    from physmocap.cli import main
    from physmocap.demo import make_demo_capture
    from physmocap.io.c3d import write_c3d

    d = tmp_path_factory.mktemp("demo_solve")
    capture, _ = make_demo_capture()
    paths = {"c3d": d / "capture.c3d", "bvh": d / "solved.bvh", "json": d / "report.json",
             "html": d / "report.html"}
    write_c3d(capture, paths["c3d"])
    code = main(["solve", str(paths["c3d"]), "-o", str(paths["bvh"]), "--report",
                 str(paths["json"]), "--report-html", str(paths["html"]), "-q"])
    assert code == 0
    return paths


def planted_sole_pitch(motion, side: str) -> float:
    """deg, the median pitch of a foot's sole (rest +X) over its ankle's planted frames
    (``planted_frames``): > 0 toes up."""
    from physmocap import quat
    from physmocap.matching.retarget import planted_frames
    j = motion.skeleton.index(side + "Foot")
    planted = planted_frames(motion.gpos[:, j], motion.fps)
    assert planted.sum() > 30
    fx = quat.rotate(motion.grot[planted, j], np.array([1.0, 0.0, 0.0]))
    return float(np.degrees(np.median(np.arcsin(np.clip(fx[:, 2], -1.0, 1.0)))))


def long_legged(skeleton, k_legs: float = 1.1, k_root: float = 0.95):
    """``skeleton`` as calibration leaves a long-legged subject: every bone offset (and end
    site) scaled by ``k_legs``, the root's rest offset by ``k_root`` (its feet below z = 0)."""
    from physmocap.skeleton import Skeleton
    off = np.array(skeleton.offsets) * k_legs
    off[0] = skeleton.offsets[0] * k_root
    return Skeleton(skeleton.names, skeleton.parents, off, skeleton.end_sites * k_legs)


#: a Bandai-Namco walk (60 fps) several playback tests use
WALK_001 = "bvh/bandai-namco/ds2_normal_locomotion/dataset-2_walk_normal_001.bvh"


def page_images(html: str) -> list[bytes]:
    """The PNG figures embedded in a report page (``report.html.report_page``), decoded."""
    return [base64.b64decode(s) for s in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]


def page_beside_reports(code: int, out: str, output, report, page) -> str:
    """What a command run with ``-o output --report report --report-html page`` must show: exit
    0, the three files named in its "wrote" line, the JSON report naming the page. Returns
    the page's HTML."""
    import json
    assert code == 0 and f"wrote {output}, {report}, {page}" in out
    assert json.loads(report.read_text())["report_html"] == str(page)
    return page.read_text()
