"""Motion matching (pose and feature databases, search, inertialization, controller) and
retargeting. Pure numpy: nothing here imports PyBullet."""
from .retarget import retarget, HUMANOID_NAME_MAP

__all__ = ["retarget", "HUMANOID_NAME_MAP"]
