"""Motion matching (pose and feature databases, search, inertialization, trajectory, controller)
and retargeting. Pure numpy: nothing here imports PyBullet."""
from .database import (PoseDatabase, build_database, save_database, load_database, resample,
                       mirror_motion, mirror_names, tags_from_name, SIM_ROOT)
from .features import (FeatureSpec, ExtraFeature, FeatureDatabase, compute_features,
                       raw_features, valid_mask, query_from, trajectory_frames)
from .retarget import retarget, HUMANOID_NAME_MAP

__all__ = [
    "PoseDatabase", "build_database", "save_database", "load_database", "resample",
    "mirror_motion", "mirror_names", "tags_from_name", "SIM_ROOT",
    "FeatureSpec", "ExtraFeature", "FeatureDatabase", "compute_features", "raw_features",
    "valid_mask", "query_from", "trajectory_frames",
    "retarget", "HUMANOID_NAME_MAP",
]
