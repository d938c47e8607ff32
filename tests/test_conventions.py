import numpy as np
import pytest

from physmocap import UnitError
from physmocap.conventions import (
    LENGTH_UNITS, canonical_unit, infer_length_unit, unit_scale, up_to_zup_matrix, UP_AXES)


@pytest.mark.parametrize("text, scale", [
    ("mm", 1e-3), ("MM", 1e-3), (" mm\x00", 1e-3), ("millimetres", 1e-3), ("Millimeters", 1e-3),
    ("cm", 1e-2), ("m", 1.0), ("meters", 1.0), ("in", 0.0254), ("cmu", 0.0254 / 0.45)])
def test_unit_scale(text, scale):
    assert unit_scale(text) == pytest.approx(scale)


def test_unknown_unit_lists_known():
    with pytest.raises(UnitError, match="known: m, cm, mm"):
        unit_scale("furlong")
    assert canonical_unit("Millimeters") == "mm"


@pytest.mark.parametrize("unit", ["m", "cm", "mm", "cmu"])
def test_infer_unit(unit):
    assert infer_length_unit(1.6 / LENGTH_UNITS[unit]) == unit
    with pytest.raises(UnitError):
        infer_length_unit(float("nan"))


@pytest.mark.parametrize("up", UP_AXES)
def test_up_matrices_are_rotations_that_map_up_to_z(up):
    R = up_to_zup_matrix(up)
    assert np.allclose(R @ R.T, np.eye(3)) and np.isclose(np.linalg.det(R), 1.0)
    axis = np.zeros(3)
    axis["xyz".index(up[-1])] = -1.0 if up.startswith("-") else 1.0
    assert np.allclose(R @ axis, [0, 0, 1])


def test_unknown_up():
    with pytest.raises(UnitError, match="known"):
        up_to_zup_matrix("w")
