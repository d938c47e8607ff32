"""The motion-matching controller: input -> trajectory -> search -> inertialize -> pose, per frame.

One ``Controller`` drives one character, step by step (``step()`` returns the pose of the next
frame), so a researcher's script or the physics playback can run it in their own loop;
``run_controller`` plays a whole input scene and returns a ``Motion`` plus the per-frame record
the metrics need.

Per frame (after Holden's reference controller and the thesis, Sec. 3.3):

1. the input source gives a desired velocity and facing;
2. a critically damped spring *simulation* object moves toward them; its predicted future
   positions and facings (at the feature times) form the trajectory part of the query;
3. every ``search_every`` frames, or at once when the desired velocity changes sharply or the clip
   ends, the database is searched; if a better frame than the current one is found, the pose
   difference becomes an inertialization offset that decays with ``blend_halflife``;
4. the matched frame advances by one; the output pose is that frame plus the decaying offsets;
5. the character's root moves by the animation's own root velocity, then is pulled toward the
   simulation object (in proportion to its speed) and clamped within ``clamp_distance``; its
   facing is turned toward the simulation's (``turn_halflife``, at most as fast as the
   animation's own turning and speed allow) and clamped within ``clamp_angle``.

One deviation from Holden's controller, known and kept: the root's velocity and turning rate
are not inertialized (his ``inertialize_pose_transition`` carries bone 0 through the
transition too). At a transition the root moves at the new clip's rate at once: on the
145-clip Bandai-Namco database the figure eight's root yaw rate changes by 0.18 rad/s in a
transition frame on average (0.6 at most), against 0.01 in other frames (a review's
measurement, ``turn_halflife`` 0). The pose below the root is inertialized. Holden's way
was measured (thirty-eighth session, scratch: the root's velocity and turning rate offsets
decayed on the pose's spring): ``mm run`` on the 145-clip database moved little (skate within
0.03 mm/frame on five shipped inputs, 0.23 lower on the stop and go; jitter within 2.6 %), but
fully physical the live head circle fell at 1.9 s and the figure eight stayed up in 3 of 6
headings (up, and 6 of 6, as kept; ``benchmarks/RESULTS.md``).
"""
from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from .. import quat
from ..errors import SettingsError, ShapeError, require_counts, require_numbers, require_type
from ..motion import Motion
from ..skeleton import Skeleton
from ..spring import character_update, simple_spring_rotation
from .database import PoseDatabase
from .features import FeatureDatabase, valid_mask
from .inertialize import InertializeState, inertialize_pose, transition_pose
from .search import SearchIndex
from .trajectory import adjust_root_rotation, clamp_root, clamp_root_rotation, predict_trajectory

__all__ = ["ControllerSettings", "Controller", "ControllerRecord", "run_controller",
           "output_skeleton"]

_FORWARD = np.array([1.0, 0.0, 0.0])


@dataclass(frozen=True)
class ControllerSettings:
    """Controller constants (s, m, rad).

    Attributes:
        search_every: frames between searches (searches also happen on sharp input changes and
            at clip ends).
        sharp_change: m/s; a change of desired velocity this large since the last search forces
            a search.
        blend_halflife: s, inertialization offsets halve in this time.
        sim_halflife, sim_rot_halflife: s, the simulation object's velocity and facing springs.
        clamp_distance: m (alpha), the character root never strays further from the simulation.
        clamp_angle: rad, nor turns further from its facing.
        turn_halflife: s, the root's facing is turned toward the simulation's by the part of
            their difference that decays in this halflife each frame (Holden's and MMVR's
            rotation adjustment; ``0`` = only the clamp), at most by the rates below.
        turn_ratio: the turn correction may reach this fraction of the animation's own
            angular speed (Holden's "adjustment by velocity"), ...
        turn_radius: m, ... plus the animation's speed divided by this radius: a walking
            character may be bent onto a curve no tighter than this, while a standing one is
            never spun on its feet. It is what lets a database without curved walks follow a
            curving input (``inf``: no such allowance).
        sync_ratio: fraction of the character's speed by which the root is pulled toward the
            simulation each second (0 = only the clamp).
        exclude_radius: frames around the current one the search skips (no jumping in place).
        tag: only search frames with this tag (``None``: all).
    """

    search_every: int = 10
    sharp_change: float = 0.5
    blend_halflife: float = 0.1
    sim_halflife: float = 0.27
    sim_rot_halflife: float = 0.27
    clamp_distance: float = 0.1
    clamp_angle: float = np.radians(45.0)
    turn_halflife: float = 0.2
    turn_ratio: float = 0.5
    turn_radius: float = 1.0
    sync_ratio: float = 0.5
    exclude_radius: int = 20
    tag: str | None = None

    def __post_init__(self):
        # one clear line for a bad value here, not a spring's error or NaN poses frames later
        # (a NaN clamp was no clamp at all; ``search_every`` 0 never searched)
        require_counts("ControllerSettings", ("exclude_radius",), search_every=self.search_every,
                       exclude_radius=self.exclude_radius)                  # frames
        springs = ("blend_halflife", "sim_halflife", "sim_rot_halflife")       # > 0: springs'
        require_numbers("ControllerSettings", springs, **{n: getattr(self, n) for n in springs + (
            "sharp_change", "clamp_distance", "clamp_angle", "turn_halflife", "turn_ratio",
            "sync_ratio")})
        r = self.turn_radius
        if isinstance(r, bool) or not isinstance(r, numbers.Real) or not r > 0:   # inf: fine
            raise SettingsError(f"ControllerSettings: turn_radius must be > 0 m (inf: no "
                                f"allowance), got {r!r}")
        if self.tag is not None and not isinstance(self.tag, str):
            raise SettingsError(f"ControllerSettings: tag must be None or a tag name, got "
                                f"{self.tag!r}")


def output_skeleton(db: PoseDatabase) -> Skeleton:
    """The database's skeleton without the simulation bone (the hips are the root)."""
    parents = np.array(db.parents[1:]) - 1
    parents[0] = -1
    ends = None if db.end_sites is None else np.array(db.end_sites[1:])
    return Skeleton(db.names[1:], parents, np.array(db.offsets[1:]), ends)


@dataclass
class ControllerRecord:
    """What ``run_controller`` saw each frame (all ``(F, …)``, world frame, Z up)."""

    root_pos: list = field(default_factory=list)      # character root (simulation bone) (3,)
    root_rot: list = field(default_factory=list)      # (4,)
    sim_pos: list = field(default_factory=list)       # simulation object (3,)
    desired_vel: list = field(default_factory=list)   # (3,)
    desired_rot: list = field(default_factory=list)   # (4,)
    frame: list = field(default_factory=list)         # matched database frame
    contacts: list = field(default_factory=list)      # (2,) bool, of the matched frame
    search_seconds: list = field(default_factory=list)
    transitions: int = 0


class Controller:
    """One motion-matched character.

    Args:
        db, features: the pose and feature databases (``compute_features(db)``).
        source: an input source with ``desired(t, sim_pos, sim_rot) -> (vel (3,), rot (4,))``.
        settings: ``ControllerSettings``.
        index: a prebuilt ``SearchIndex`` (built here if ``None``).
        start_frame: database frame the character stands in at t = 0: its pose is blended
            out of at the first search (``place``). Default: none shown; the first searchable
            frame is the first search's current frame and the frame it picks is shown as is.
        start_pos, start_yaw: where the character stands at t = 0 (m, rad).
    """

    def __init__(self, db: PoseDatabase, features: FeatureDatabase, source,
                 settings: ControllerSettings = ControllerSettings(), index: SearchIndex | None = None,
                 start_frame: int | None = None, start_pos=(0.0, 0.0, 0.0), start_yaw: float = 0.0):
        require_type("Controller", db, PoseDatabase, "load_database(PATH)")
        require_type("Controller: features", features, FeatureDatabase,
                     "compute_features(db)")
        require_type("Controller: settings", settings, ControllerSettings,
                     "ControllerSettings(...)")
        if features.n_frames != db.n_frames:
            raise ShapeError("features do not belong to this database (frame counts differ)")
        # a script's mistakes, said here rather than as an AttributeError or IndexError (or NaN
        # poses) at the first step
        if not callable(getattr(source, "desired", None)):
            raise SettingsError(f"Controller: source must have desired(t, sim_pos, sim_rot) "
                                f"(Joystick, PathFollower, HeadTrajectory), got "
                                f"{type(source).__name__}")
        if start_frame is not None:
            _check_frame(db, "Controller", "start_frame", start_frame)
        pos = np.asarray(start_pos, float)
        yaw_ok = (isinstance(start_yaw, numbers.Real) and not isinstance(start_yaw, bool)
                  and np.isfinite(start_yaw))
        if pos.shape != (3,) or not np.all(np.isfinite(pos)) or not yaw_ok:
            raise SettingsError(f"Controller: start_pos must be 3 finite numbers (m) and "
                                f"start_yaw a finite angle (rad), got {start_pos!r}, "
                                f"{start_yaw!r}")
        self.db, self.features, self.source, self.s = db, features, source, settings
        self.valid = valid_mask(db, features.spec)
        self.index = index or SearchIndex(features.X, self.valid, db.range_starts, db.range_stops,
                                          db.tags)
        self.dt = 1.0 / db.fps
        self.t = 0.0
        J = len(db.names) - 1
        self.blend = InertializeState.zeros(J)
        yaw_q = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), start_yaw)
        self.root_pos = np.array(start_pos, float)
        self.root_rot = yaw_q
        self.sim_pos, self.sim_vel, self.sim_acc = self.root_pos.copy(), np.zeros(3), np.zeros(3)
        self.sim_rot, self.sim_ang = yaw_q.copy(), np.zeros(3)
        self.timer = 0
        self.last_search_vel = np.zeros(3)
        # the database's trajectory samples are whole frames ahead (``trajectory_frames``):
        # predicted at those times, not at the spec's (at 25 fps frames 8 / 17 / 25 are 0.32 /
        # 0.68 / 1.0 s for 0.333 / 0.666 / 1.0: a query off its own frame's features)
        self.traj_times = np.array(features.trajectory_frames, float) / features.fps
        self.record = ControllerRecord()
        self._start_in(int(np.flatnonzero(self.valid)[0]) if start_frame is None
                       else int(start_frame), shown=start_frame is not None)

    def place(self, frame: int) -> None:
        """Start in database frame ``frame``, its pose shown at t = 0 (a simulated body placed
        in it): the first search blends out of it. Only before the first ``step``."""
        if self.record.frame:
            raise SettingsError("Controller.place: the controller has already stepped; place "
                                "it before the first step")
        _check_frame(self.db, "Controller.place", "frame", frame)
        self._start_in(int(frame), shown=True)

    def _start_in(self, frame: int, shown: bool) -> None:
        """The start frame, its clip's end and pose; ``shown``: blended out of at the first
        search (else the search's pick is shown as is)."""
        self.frame = frame
        self.clip_stop = self._clip_stop(frame)
        self.pose = self._db_pose(frame)
        self.start_shown = shown

    # --- database access ------------------------------------------------------------------

    def _clip_stop(self, frame: int) -> int:
        c = int(np.searchsorted(self.db.range_stops, frame, side="right"))
        return int(self.db.range_stops[c])

    def _db_pose(self, f: int):
        """Local pose of frame ``f`` without the simulation bone: lpos, lvel, lrot, lang
        ``(J, …)``; joint 0 (the hips) relative to the simulation bone."""
        db = self.db
        return (np.array(db.lpos[f, 1:]), np.array(db.lvel[f, 1:]),
                np.array(db.lrot[f, 1:]), np.array(db.lang[f, 1:]))

    # --- query ----------------------------------------------------------------------------

    def _query(self, traj_pos: np.ndarray, traj_rot: np.ndarray) -> np.ndarray:
        """Current frame's pose features + the predicted trajectory, in character space."""
        f = self.features
        q = np.array(f.X[self.frame], dtype=np.float64)
        rel = quat.inv_rotate(self.root_rot, traj_pos - self.root_pos)[:, :2]     # (K, 2)
        dirs = quat.inv_rotate(self.root_rot, quat.rotate(traj_rot, _FORWARD))[:, :2]
        q[f.groups["traj_pos"]] = f.normalize(rel.ravel(), "traj_pos")
        q[f.groups["traj_dir"]] = f.normalize(dirs.ravel(), "traj_dir")
        return q

    # --- one frame ------------------------------------------------------------------------

    def step(self):
        """Advance one frame; returns ``(root_pos (3,), root_rot (4,), lpos (J,3), lrot (J,4))``:
        the character root (simulation bone) in the world and the local pose relative to it."""
        s, dt = self.s, self.dt
        desired_vel, desired_rot = _checked_desired(
            self.source, self.source.desired(self.t, self.sim_pos, self.sim_rot))

        # 1. search when due, when the input changed sharply, or at the clip's end
        end_near = self.frame + 1 >= self.clip_stop - 1
        sharp = np.linalg.norm(desired_vel - self.last_search_vel) > s.sharp_change
        if self.timer <= 0 or sharp or end_near:
            traj_pos, traj_rot = predict_trajectory(
                self.sim_pos, self.sim_vel, self.sim_acc, self.sim_rot, self.sim_ang,
                desired_vel, desired_rot, s.sim_halflife, s.sim_rot_halflife, self.traj_times)
            query = self._query(np.asarray(traj_pos), np.asarray(traj_rot))
            cur_cost = float(np.sum((self.features.X[self.frame] - query) ** 2))
            t0 = time.perf_counter()
            best, cost = self.index.search(
                query, current=self.frame, exclude_radius=s.exclude_radius, tag=s.tag,
                best_cost=np.inf if end_near or not self.valid[self.frame] else cur_cost)
            self.record.search_seconds.append(time.perf_counter() - t0)
            if best >= 0 and best != self.frame:
                # a start frame never shown (``start_shown``) is nothing to blend from: the
                # first frames moved out of an arbitrary pose at twice the database's pace for
                # 0.15 s. Nor is the first search a transition (the page draws none).
                if self.record.frame or self.start_shown:
                    src, dst = self._db_pose(self.frame), self._db_pose(best)
                    self.blend = transition_pose(self.blend, *src, *dst)
                self.record.transitions += bool(self.record.frame)
                self.frame = best
                self.clip_stop = self._clip_stop(best)
            self.timer = s.search_every
            self.last_search_vel = desired_vel

        # 2. advance the matched frame and blend
        prev = self.frame
        self.frame = min(self.frame + 1, self.clip_stop - 1)
        lpos, lvel, lrot, lang = self._db_pose(self.frame)
        lpos, lvel, lrot, lang, self.blend = inertialize_pose(
            self.blend, lpos, lvel, lrot, lang, s.blend_halflife, dt)
        self.pose = (lpos, lvel, lrot, lang)

        # 3. root motion from the animation (its own velocity, in its own frame); one root in
        # plain floats (``quat``'s tuple helpers: the array arithmetic bit for bit)
        db = self.db
        r0 = quat.conj_t(db.lrot[prev, 0].tolist())
        if self.frame != prev:
            v_local = np.array(quat.rotate_exact_t(
                r0, (db.lpos[self.frame, 0] - db.lpos[prev, 0]).tolist()))
        else:
            v_local = np.array(quat.rotate_exact_t(r0, db.lvel[prev, 0].tolist())) * dt
        dq = quat.mul_t(r0, db.lrot[self.frame, 0].tolist())
        rot = self.root_rot.tolist()
        self.root_pos = self.root_pos + np.array(quat.rotate_exact_t(rot, v_local.tolist()))
        self.root_rot = np.array(quat.normalize_t(quat.mul_t(rot, dq)))

        # 4. the simulation object follows the input
        self.sim_pos, self.sim_vel, self.sim_acc = character_update(
            self.sim_pos, self.sim_vel, self.sim_acc, desired_vel, s.sim_halflife, dt)
        self.sim_rot, self.sim_ang = simple_spring_rotation(
            self.sim_rot, self.sim_ang, desired_rot, s.sim_rot_halflife, dt)

        # 5. synchronise: pull the root toward the simulation and clamp it within alpha
        self.root_pos = clamp_root(self.sim_pos, self.root_pos, s.clamp_distance,
                                   char_vel=np.array(quat.rotate_exact_t(
                                       self.root_rot.tolist(), v_local.tolist())) / dt, dt=dt,
                                   ratio=s.sync_ratio)
        if s.turn_halflife > 0:
            speed = float(np.linalg.norm(v_local)) / dt
            max_turn = dt * (s.turn_ratio * float(np.linalg.norm(db.lang[self.frame, 0]))
                             + speed / s.turn_radius)
            self.root_rot = adjust_root_rotation(self.sim_rot, self.root_rot, s.turn_halflife,
                                                 dt, max_turn)
        self.root_rot = clamp_root_rotation(self.sim_rot, self.root_rot, s.clamp_angle)

        rec = self.record
        rec.root_pos.append(self.root_pos.copy())
        rec.root_rot.append(self.root_rot.copy())
        rec.sim_pos.append(self.sim_pos.copy())
        rec.desired_vel.append(desired_vel.copy())
        rec.desired_rot.append(desired_rot.copy())
        rec.frame.append(self.frame)
        rec.contacts.append(np.array(db.contacts[self.frame]))
        self.t += dt
        self.timer -= 1
        return self.root_pos, self.root_rot, lpos, lrot


def run_controller(controller: Controller, duration: float, progress=None
                   ) -> tuple[Motion, ControllerRecord]:
    """Play ``duration`` seconds; the output as a ``Motion`` (hips root, world, Z up)."""
    require_numbers("run_controller", ("duration",), duration=duration)      # s
    n = max(1, int(round(duration / controller.dt)))
    sk = output_skeleton(controller.db)
    root = np.empty((n, 3))
    lrot = np.empty((n, len(sk), 4))
    for i in range(n):
        rp, rr, lp, lr = controller.step()
        root[i] = rp + quat.rotate(rr, lp[0])           # hips in the world
        lrot[i] = lr
        lrot[i, 0] = quat.mul(rr, lr[0])
        if progress is not None and (i % 60 == 0 or i == n - 1):
            progress("controller", i + 1, n)
    return Motion(sk, controller.db.fps, root, quat.normalize(lrot),
                  {"source": "motion matching", "up": controller.db.up}), controller.record


def _check_frame(db: PoseDatabase, where: str, name: str, frame) -> None:
    """One-line ``SettingsError`` unless ``frame`` is a frame index of ``db``."""
    require_counts(where, (name,), **{name: frame})
    if frame >= db.n_frames:
        raise SettingsError(f"{where}: {name} must be a database frame 0..{db.n_frames - 1}, "
                            f"got {frame}")


def _checked_desired(source, out) -> tuple[np.ndarray, np.ndarray]:
    """An input source's ``desired(...)`` as ``(velocity (3,) m/s, facing (4,) xyzw)`` arrays,
    or a ``ShapeError`` naming the source: a speed given as a number lifted the character
    3.5 m, a wxyz identity (180 degrees about x as xyzw) turned it upside down below the floor."""
    what = f"{type(source).__name__}.desired"
    try:
        vel, rot = out
        vel, rot = np.asarray(vel, float), np.asarray(rot, float)
    except (TypeError, ValueError):
        raise ShapeError(f"{what} must return (velocity (3,) m/s, facing (4,) xyzw)") from None
    # (plain floats: this runs every frame, and numpy's reductions cost 29 us of it)
    if vel.shape != (3,) or not (all(map(math.isfinite, v := vel.tolist()))
                                 and abs(v[2]) <= 1e-6):
        raise ShapeError(f"{what}: the velocity must be finite, horizontal, shape (3,) m/s, "
                         f"got {np.array2string(vel, precision=3)}")
    if rot.shape != (4,) or not (all(map(math.isfinite, q := rot.tolist()))
                                 and abs(math.hypot(*q) - 1.0) <= 1e-3
                                 and math.hypot(q[0], q[1]) <= 1e-3):
        raise ShapeError(f"{what}: the facing must be a unit turn about +Z, xyzw (scalar last; "
                         f"matching.trajectory.facing_from_yaw), got "
                         f"{np.array2string(rot, precision=3)}")
    return vel, rot
