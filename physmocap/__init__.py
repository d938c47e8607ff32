"""physmocap: raw optical motion capture to clean, physically plausible skeletal motion."""
from __future__ import annotations

from .errors import PhysmocapError, FileFormatError, UnitError, ShapeError, UnknownNameError
from .skeleton import Skeleton, forward_kinematics
from .motion import Motion
from .markers import MarkerTrajectories, MarkerSet

__version__ = "0.1.0"

__all__ = [
    "PhysmocapError", "FileFormatError", "UnitError", "ShapeError", "UnknownNameError",
    "Skeleton", "forward_kinematics", "Motion", "MarkerTrajectories", "MarkerSet",
    "__version__",
]
