"""Solvers that turn marker positions into skeletal motion.

``kinematic``: a damped-least-squares (Levenberg–Marquardt) reference solver, batched over
frames. ``synthetic``: marker data generated from a known motion, for tests and benchmarks.
"""
from .kinematic import (KinematicResult, default_free_joints, marker_jacobian, marker_positions,
                        observable_joints, solve_kinematic)
from .synthetic import joint_angle_error_deg, place_markers, synthesize

__all__ = [
    "KinematicResult", "solve_kinematic", "marker_positions", "marker_jacobian",
    "default_free_joints", "observable_joints",
    "place_markers", "synthesize", "joint_angle_error_deg",
]
