"""Shared fixtures. Real data comes from ``../shared/data`` through the one fixture ``data_dir``.

In CI (``CI`` set) a missing data folder is an error, never a skip.
"""
from __future__ import annotations

import os
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


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def project_root() -> Path:
    """The repository root (for shipped scenes)."""
    return ROOT
