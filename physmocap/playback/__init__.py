"""Physical playback: a simulated PyBullet character follows a kinematic ``Motion``
(PD joint motors, gravity, ground contact; optional bounded root assist)."""
from .balance import BalanceSettings
from .character import Character
from .reference import FrameRetargeter, ground_motion, level_feet, loop_motion, walk_cycle
from .track import MODES, Tracker, TrackingSettings, TrackResult, track, track_any
from .live import LivePlayback, LiveResult, run_live
from .predictive import PredictSettings, run_predictive

__all__ = ["BalanceSettings", "Character", "MODES", "FrameRetargeter", "Tracker",
           "TrackingSettings", "TrackResult", "ground_motion", "level_feet", "loop_motion",
           "walk_cycle", "track", "track_any", "LivePlayback", "LiveResult", "run_live",
           "PredictSettings", "run_predictive"]
