"""The notebooks in notebooks/ run top to bottom (a broken notebook fails the build)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import find_data_dir

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_four_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == ["01_solve_a_capture", "02_motion_matching",
                                           "03_physical_playback", "04_live_avatars"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat") if not os.environ.get("CI") else \
        __import__("nbformat")
    from nbclient import NotebookClient

    # The kernel inherits this environment: the shared data (if any), and one BLAS thread (on
    # a busy 2-core machine OpenBLAS threads slow the solve several times). Plots use the
    # kernel's inline backend (images in the outputs), so MPLBACKEND must not force another.
    data_dir = find_data_dir()
    if data_dir is None and os.environ.get("CI"):
        pytest.fail("shared data folder not found (../shared/data or $PHYSMOCAP_DATA)")
    if data_dir is not None:            # else the notebooks use the embedded default
        monkeypatch.setenv("PHYSMOCAP_DATA", str(data_dir))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    images = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                 if "image/png" in o.get("data", {}))
    assert images >= 2, f"{path.name} drew {images} plots"
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
