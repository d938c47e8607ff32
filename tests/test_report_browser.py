"""The viewer and the solve report in a real headless browser (Debian's chromium).

Pages are opened from file:// URLs with chromium's network services off; any console error,
uncaught exception or failed load fails the test. Screenshots are kept for people to look at in
``$PHYSMOCAP_SCREENS`` (default /tmp/physmocap_screens): viewer.png and report.png.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from _chromium import Browser, non_background_fraction

from physmocap.cli import main
from physmocap.io.bvh import read_bvh

SCREENS = Path(os.environ.get("PHYSMOCAP_SCREENS", "/tmp/physmocap_screens"))


@pytest.fixture(scope="module")
def browser():
    with Browser(1000, 700) as b:
        yield b


def _bone_pixels(png_path) -> int:
    """Pixels in the viewer's bone colours (left #b03030, right #3050b0)."""
    from PIL import Image
    a = np.asarray(Image.open(png_path).convert("RGB")).astype(int)
    n = 0
    for c in ((0xb0, 0x30, 0x30), (0x30, 0x50, 0xb0)):
        n += int((np.abs(a - c).max(axis=-1) < 40).sum())
    return n


def test_viewer_plays_in_a_browser(browser, demo_solve, tmp_path):
    page_path = tmp_path / "view.html"
    assert main(["view", str(demo_solve["bvh"]), "--markers", str(demo_solve["c3d"]),
                 "-o", str(page_path), "-q"]) == 0
    page = browser.open(page_path.as_uri())
    frame = lambda: int(page.eval("document.getElementById('frame').dataset.frame"))
    assert frame() == 0 and page.eval("document.getElementById('play').textContent") == "Play"
    page.pump(0.3)
    assert frame() == 0                                     # paused: nothing moves
    page.eval("document.getElementById('play').click()")
    page.pump(0.5)
    f1 = frame()
    page.pump(0.3)
    f2 = frame()
    assert 0 < f1 < f2                                      # the counter advances while playing
    page.eval("document.getElementById('play').click()")   # pause, then scrub
    page.eval("const s = document.getElementById('scrub'); s.value = '100';"
              "s.dispatchEvent(new Event('input'))")
    assert frame() == 100
    last = read_bvh(demo_solve["bvh"]).n_frames - 1
    assert f"frame 100 / {last}" in page.eval("document.getElementById('frame').textContent")
    shot = page.screenshot(SCREENS / "viewer.png")
    assert shot.startswith(b"\x89PNG")
    assert non_background_fraction(SCREENS / "viewer.png") > 0.01
    assert _bone_pixels(SCREENS / "viewer.png") > 300      # the skeleton is drawn, not only a grid
    # Orbit by mouse drag changes the picture.
    before = (SCREENS / "viewer.png").read_bytes()
    for kind, x in (("mousePressed", 500), ("mouseMoved", 600), ("mouseReleased", 600)):
        page.call("Input.dispatchMouseEvent", type=kind, x=x, y=300, button="left",
                  buttons=1 if kind != "mouseReleased" else 0, clickCount=1)
    after = page.screenshot(tmp_path / "orbit.png")
    assert after != before
    assert page.errors == []
    page.close()


def test_solve_report_renders_in_a_browser(browser, demo_solve):
    page = browser.open(demo_solve["html"].as_uri())
    n, loaded = page.eval("[document.images.length, Array.from(document.images).every("
                          "i => i.complete && i.naturalWidth > 300)]")
    assert n == 7 and loaded
    page.screenshot(SCREENS / "report.png", full_page=True)
    assert non_background_fraction(SCREENS / "report.png") > 0.05
    assert page.errors == []
    page.close()
