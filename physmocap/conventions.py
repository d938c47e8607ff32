"""The project's conventions, defined here and nowhere else.

* SI units inside: metres, seconds, radians. File units are converted at the file boundary.
* World frame: right-handed, **Z up** (as C3D labs and PyBullet). BVH files are usually Y up.
* Quaternions are ``(..., 4)`` arrays in **xyzw** order (scalar last), as scipy and PyBullet use.
* ``fps`` is a float attribute of the data; nothing assumes a fixed rate.
"""
from __future__ import annotations

import numpy as np

from .errors import UnitError

__all__ = [
    "UP", "QUAT_ORDER", "LENGTH_UNITS", "unit_scale", "infer_length_unit",
    "up_to_zup_matrix", "UP_AXES", "snap_fps", "canonical_unit",
]

#: World up axis (unit vector) of every array inside physmocap.
UP = np.array([0.0, 0.0, 1.0])
#: Quaternion component order of every ``(..., 4)`` array inside physmocap.
QUAT_ORDER = "xyzw"

#: Metres per file unit. ``cmu`` is the CMU BVH unit (1/0.45 inch).
LENGTH_UNITS: dict[str, float] = {
    "m": 1.0,
    "cm": 0.01,
    "mm": 0.001,
    "in": 0.0254,
    "ft": 0.3048,
    "cmu": 0.0254 / 0.45,
}

# Odd spellings met in real files (C3D POINT:UNITS is free text).
_UNIT_ALIASES = {
    "meter": "m", "meters": "m", "metre": "m", "metres": "m",
    "centimeter": "cm", "centimeters": "cm", "centimetre": "cm", "centimetres": "cm",
    "millimeter": "mm", "millimeters": "mm", "millimetre": "mm", "millimetres": "mm",
    "inch": "in", "inches": "in", "feet": "ft", "foot": "ft",
}


def unit_scale(unit: str) -> float:
    """Metres per ``unit``. Accepts the names of ``LENGTH_UNITS`` and common spellings
    (``'MM'``, ``'millimetres'``, ``' mm\\x00'``). Raises ``UnitError`` for anything else."""
    key = str(unit).strip().strip("\x00").strip().lower()
    key = _UNIT_ALIASES.get(key, key)
    if key not in LENGTH_UNITS:
        raise UnitError(
            f"unknown length unit {unit!r}; known: {', '.join(LENGTH_UNITS)}")
    return LENGTH_UNITS[key]


def canonical_unit(unit: str) -> str:
    """The ``LENGTH_UNITS`` key for ``unit`` (``'Millimeters'`` -> ``'mm'``)."""
    scale = unit_scale(unit)
    return next(k for k, v in LENGTH_UNITS.items() if v == scale)


def infer_length_unit(extent: float, typical_m: float = 1.7,
                      candidates: tuple[str, ...] = ("m", "cm", "mm", "cmu", "in")) -> str:
    """The unit in which a body ``extent`` (file units) is closest to ``typical_m`` metres
    on a log scale. Used only when a file does not say its unit."""
    if not np.isfinite(extent) or extent <= 0:
        raise UnitError("cannot infer the length unit: the data has no finite extent")
    errs = [abs(np.log(extent * LENGTH_UNITS[u] / typical_m)) for u in candidates]
    return candidates[int(np.argmin(errs))]


def snap_fps(fps: float) -> float:
    """A rate computed from a rounded frame time, snapped to a whole rate when within rounding
    (1/0.0083333 -> 120.0; 1/0.016667 -> 60.0); 29.97 stays 29.97."""
    whole = float(round(fps))
    if whole > 0 and abs(fps - whole) <= 1e-4 * fps:
        return whole
    return float(fps)


#: Up axes a file may use, as signed axis names.
UP_AXES = ("x", "y", "z", "-x", "-y", "-z")


def up_to_zup_matrix(up: str) -> np.ndarray:
    """Proper rotation (3, 3) taking a right-handed frame whose up axis is ``up`` to the Z-up world.

    ``'y'`` is a +90 degree turn about X: (x, y, z) -> (x, -z, y), so a Y-up file's forward +Z
    becomes -Y. The result is always a rotation (det +1), never a mirror.
    """
    up = str(up).strip().lower()
    if up not in UP_AXES:
        raise UnitError(f"unknown up axis {up!r}; known: {', '.join(UP_AXES)}")
    rots = {
        "z": np.eye(3),
        "y": np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]),
        "x": np.array([[0.0, 0, -1], [0, 1, 0], [1, 0, 0]]),
        "-z": np.array([[1.0, 0, 0], [0, -1, 0], [0, 0, -1]]),
        "-y": np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]]),
        "-x": np.array([[0.0, 0, 1], [0, 1, 0], [-1, 0, 0]]),
    }
    return rots[up]
