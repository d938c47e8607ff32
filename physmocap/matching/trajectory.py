"""Controller input: desired velocity and facing per frame, and the predicted future trajectory.

Three input sources share one method, ``desired(t, sim_pos=None, sim_rot=None) -> (vel (3,) m/s,
facing (4,) xyzw)`` at time ``t`` s (a scalar; call it once per frame). ``sim_pos``/``sim_rot`` are
the simulated character's position and rotation, used where a source needs them (the path
follower steers from ``sim_pos``; the joystick scales speeds in the ``sim_rot`` frame as Holden's
``desired_velocity_update``). Velocities are horizontal (z = 0); facings are rotations about +Z
whose forward axis is +X (the rest pose of ``scenes/bodies`` faces +X, left +Y, Z up).

* ``Joystick``: scripted keyframes of a gamepad (left stick, run button, optional right stick).
* ``PathFollower``: way-points followed at a speed (pure pursuit of a look-ahead point).
* ``HeadTrajectory``: a recorded HMD (positions and orientations over time).

``predict_trajectory`` turns the simulated character's state plus a desired velocity and facing
into the future positions and facings at the feature times (critically damped springs,
``spring.character_predict``/``facing_predict``; thesis Sec. 3.3.1). ``clamp_root`` keeps the
animated (virtual) root near the simulated one (thesis: root clamping with accuracy alpha).

Input scene files (TOML; ``load_input(path)``; times s, lengths m, speeds m/s, angles degrees)::

    [input]
    kind = "joystick"              # "joystick" | "path" | "head"
    camera_yaw = 0.0               # deg; stick up = this world heading (0: +X, 90: +Y)
    interpolation = "hold"         # "hold" (keys are held) or "linear" between keys
    walk_speeds = [1.75, 1.5, 1.25]  # forward, sideways, backward (optional, these defaults)
    run_speeds = [4.0, 3.0, 2.5]
    initial_yaw = 0.0              # deg; facing until a stick is first pushed (optional)
    [[key]]                        # one or more, t strictly increasing
    t = 0.0
    x = 0.0                        # left stick right, in [-1, 1]
    y = 1.0                        # left stick up (forward), in [-1, 1]
    run = false                    # optional, default false
    rx = 0.0                       # optional right stick: when pushed, the facing (strafe)
    ry = 0.0

    [input]
    kind = "path"
    points = [[0, 0], [5, 0], [5, 5], [0, 5]]   # m on the ground (x, y); 3 values: z ignored
    speed = 1.4
    closed = true                  # optional, default false
    lookahead = 0.75               # optional, m
    hint_weight = 0.1              # optional, 1/m (see PathFollower)

    [input]
    kind = "head"
    file = "head.csv"              # relative to the TOML file; header t,x,y,z,qx,qy,qz,qw
    # or inline: t = [...], pos = [[x, y, z], ...], rot = [[qx, qy, qz, qw], ...]
    up = "z"                       # optional: the recording's up axis (conventions.UP_AXES)
    forward = [1, 0, 0]            # optional: the HMD's forward axis in its own frame
    window = 0.5                   # optional, s: velocity / heading averaging window
    stand_speed = 0.1              # optional, m/s: dead band of a standing user
    turn_speeds = [0.2, 0.6]       # optional, m/s: facing blends from head heading to motion

A ``[meta]`` table (name, description, source, notes) is allowed, and a ``[run]`` table with
``duration`` (s) that the controller reads (``physmocap mm run``). Every problem raises one
``FileFormatError`` line naming the file and the place.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import quat
from .._arrays import frozen
from ..conventions import UP_AXES, up_to_zup_matrix
from ..errors import FileFormatError, PhysmocapError, ShapeError, UnitError, require_path
from ..spring import character_predict, facing_predict

__all__ = [
    "FORWARD", "Joystick", "PathFollower", "HeadTrajectory", "predict_trajectory",
    "clamp_root", "adjust_root_rotation", "clamp_root_rotation", "facing_from_yaw", "yaw_of",
    "load_input", "input_files",
    "FEATURE_TIMES",
]

#: The character's forward axis in its own frame (rest pose faces +X, Z up).
FORWARD = np.array([1.0, 0.0, 0.0])
#: The usual trajectory feature times (s ahead), as ``features.FeatureSpec.trajectory_times``.
FEATURE_TIMES = (0.333, 0.666, 1.0)
_Z = np.array([0.0, 0.0, 1.0])


# --------------------------------------------------------------------------------------------
# small helpers

def facing_from_yaw(yaw) -> np.ndarray:
    """Rotations ``(..., 4)`` about +Z by ``yaw (...)`` rad (forward +X turns to (cos, sin, 0))."""
    yaw = np.asarray(yaw, dtype=float)
    return quat.from_axis_angle(np.broadcast_to(_Z, yaw.shape + (3,)), yaw)


def yaw_of(q) -> np.ndarray:
    """Heading ``(...)`` rad of rotations ``(..., 4)``: the angle of their forward axis projected
    on the ground, measured from +X toward +Y."""
    f = quat.rotate(q, FORWARD)
    return np.arctan2(f[..., 1], f[..., 0])


def _wrap(a):
    return (np.asarray(a, dtype=float) + np.pi) % (2.0 * np.pi) - np.pi


def _smoothstep(x):
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _xy(p, name: str) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.ndim == 0 or p.shape[-1] not in (2, 3):
        raise ShapeError(f"{name}: expected shape (..., 2) or (..., 3), got {p.shape}")
    return p[..., :2]


def _time(t) -> float:
    t = float(t)
    if not math.isfinite(t):
        raise ShapeError(f"time must be finite, got {t}")
    return t


# --------------------------------------------------------------------------------------------
# joystick

_WALK = (1.75, 1.5, 1.25)
_RUN = (4.0, 3.0, 2.5)
_DEAD = 0.01  # stick magnitude below which a stick counts as released


@dataclass(frozen=True, eq=False)
class Joystick:
    """A scripted gamepad: keyframes of the left stick, run button and right stick.

    Attributes:
        times: ``(K,)`` s, strictly increasing; before ``times[0]`` the first key applies.
        stick: ``(K, 2)`` left stick (x right, y up), magnitude clipped to 1.
        run: ``(K,)`` bool, run button (speeds from ``run_speeds`` instead of ``walk_speeds``).
        right: ``(K, 2)`` right stick; when pushed (> 0.01) it sets the facing (strafing).
        camera_yaw: rad, world heading of "stick up" (0: +X).
        walk_speeds, run_speeds: ``(forward, sideways, backward)`` m/s at full stick.
        interpolation: ``"hold"`` (a key holds until the next) or ``"linear"``.
        initial_yaw: rad, the facing before the stick is ever pushed (when ``sim_rot`` is not
            given).

    ``desired``: the stick turns into a world direction through ``camera_yaw``; the facing is the
    right stick's direction if pushed, else the left stick's direction if pushed, else the last
    facing a key gave. (Holden's ``desired_rotation_update`` takes the velocity's direction;
    the two differ by a few degrees while the character faces away from the stick, where the
    forward and side speeds differ: 3.9 degrees with the stick full right and the character
    turned 0.5 rad from it.) The velocity is the stick scaled by forward/side/back speeds
    in the frame of ``sim_rot`` (Holden's ``desired_velocity_update``) or, without ``sim_rot``,
    of the desired facing (then a forward walk is exactly ``forward`` m/s).
    """

    times: np.ndarray
    stick: np.ndarray
    run: np.ndarray
    right: np.ndarray | None = None
    camera_yaw: float = 0.0
    walk_speeds: tuple = _WALK
    run_speeds: tuple = _RUN
    interpolation: str = "hold"
    initial_yaw: float = 0.0

    def __post_init__(self):
        times = frozen(self.times, float, (None,), "Joystick.times")
        K = len(times)
        if K < 1 or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
            raise ShapeError("Joystick.times: need >= 1 finite, strictly increasing times")
        stick = np.asarray(self.stick, dtype=float)
        if stick.shape != (K, 2) or not np.all(np.isfinite(stick)):
            raise ShapeError(f"Joystick.stick: expected finite shape ({K}, 2)")
        right = np.zeros((K, 2)) if self.right is None else np.asarray(self.right, dtype=float)
        if right.shape != (K, 2) or not np.all(np.isfinite(right)):
            raise ShapeError(f"Joystick.right: expected finite shape ({K}, 2)")
        for name in ("walk_speeds", "run_speeds"):
            s = tuple(float(v) for v in getattr(self, name))
            if len(s) != 3 or not all(math.isfinite(v) and v >= 0 for v in s):
                raise ShapeError(f"Joystick.{name}: need (forward, side, back) speeds >= 0 m/s")
            object.__setattr__(self, name, s)
        if self.interpolation not in ("hold", "linear"):
            raise ShapeError(f"Joystick.interpolation: unknown {self.interpolation!r}; "
                             f"known: hold, linear")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "stick", frozen(_clip_unit(stick), float, (K, 2), "stick"))
        object.__setattr__(self, "right", frozen(_clip_unit(right), float, (K, 2), "right"))
        object.__setattr__(self, "run", frozen(self.run, bool, (K,), "Joystick.run"))
        if not math.isfinite(float(self.camera_yaw)):   # (NaN reached the search as a cost)
            raise ShapeError(f"Joystick.camera_yaw must be a finite angle in rad, got "
                             f"{self.camera_yaw!r}")
        object.__setattr__(self, "camera_yaw", float(self.camera_yaw))
        object.__setattr__(self, "initial_yaw", float(self.initial_yaw))

    @classmethod
    def from_keys(cls, keys, **kwargs) -> "Joystick":
        """From ``[(t, x, y, run), ...]`` or ``[(t, x, y, run, rx, ry), ...]`` rows."""
        rows = [tuple(k) for k in keys]
        if not rows or any(len(r) not in (4, 6) for r in rows):
            raise ShapeError("Joystick.from_keys: rows must be (t, x, y, run[, rx, ry])")
        right = [(r[4], r[5]) if len(r) == 6 else (0.0, 0.0) for r in rows]
        return cls([r[0] for r in rows], [(r[1], r[2]) for r in rows],
                   [bool(r[3]) for r in rows], right, **kwargs)

    def _world(self, s) -> np.ndarray:
        """Stick ``(..., 2)`` to a horizontal world vector ``(..., 3)``: up = camera heading,
        right = 90 degrees clockwise of it."""
        c, n = math.cos(self.camera_yaw), math.sin(self.camera_yaw)
        x, y = s[..., 0], s[..., 1]
        return np.stack([y * c + x * n, y * n - x * c, np.zeros_like(x)], axis=-1)

    def _at(self, t: float):
        k = max(int(np.searchsorted(self.times, t, side="right")) - 1, 0)
        stick, right = self.stick[k], self.right[k]
        if self.interpolation == "linear" and k + 1 < len(self.times) and t > self.times[k]:
            a = (t - self.times[k]) / (self.times[k + 1] - self.times[k])
            stick = (1 - a) * stick + a * self.stick[k + 1]
            right = (1 - a) * right + a * self.right[k + 1]
        return k, stick, right, bool(self.run[k])

    def _key_yaw(self, k: int) -> float | None:
        """Facing (rad) a key gives, or None if both sticks are released."""
        for s in (self.right[k], self.stick[k]):
            if np.hypot(*s) > _DEAD:
                w = self._world(s)
                return math.atan2(w[1], w[0])
        return None

    def desired(self, t, sim_pos=None, sim_rot=None):
        """Desired ``(velocity (3,) m/s, facing (4,) xyzw)`` at time ``t`` s."""
        t = _time(t)
        k, stick, right, run = self._at(t)
        g = self._world(stick)
        if np.hypot(*right) > _DEAD:
            w = self._world(right)
            yaw = math.atan2(w[1], w[0])
        elif np.hypot(*stick) > _DEAD:
            yaw = math.atan2(g[1], g[0])
        else:
            yaw = next((y for y in (self._key_yaw(j) for j in range(k, -1, -1)) if y is not None),
                       None)
            if yaw is None:
                yaw = float(yaw_of(sim_rot)) if sim_rot is not None else self.initial_yaw
        ref = float(yaw_of(sim_rot)) if sim_rot is not None else yaw
        fwd, side, back = self.run_speeds if run else self.walk_speeds
        c, s = math.cos(ref), math.sin(ref)
        lf, ll = g[0] * c + g[1] * s, -g[0] * s + g[1] * c  # local forward, local left
        lf *= fwd if lf > 0 else back
        ll *= side
        vel = np.array([lf * c - ll * s, lf * s + ll * c, 0.0])
        return vel, facing_from_yaw(yaw)


def _clip_unit(s: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(s, axis=-1, keepdims=True)
    return np.where(n > 1.0, s / np.maximum(n, 1e-12), s)


# --------------------------------------------------------------------------------------------
# path follower

@dataclass(frozen=True, eq=False)
class PathFollower:
    """Way-points on the ground followed at ``speed`` m/s by pure pursuit.

    Attributes:
        points: ``(N, 2)`` m (x, y), N >= 2 (a ``(N, 3)`` input drops z).
        speed: m/s (> 0). closed: join the last point back to the first.
        lookahead: m (> 0), how far along the path ahead of the character the steering target is.
        hint_weight: 1/m, how strongly the schedule ``s = speed t`` disambiguates which part of
            the path the character is on where the path passes close to itself (a figure eight's
            crossing, the two legs of a hairpin): the projection minimises
            ``distance^2 + (hint_weight * (s - speed t))^2``. The character should stay within a
            few metres of that schedule (it does when it can walk at ``speed``).

    ``desired(t, sim_pos)``: project ``sim_pos`` on the path (near the schedule), steer at full
    ``speed`` toward the point ``lookahead`` further along; an open path slows down linearly over
    the last ``lookahead`` and stops at its end. Without ``sim_pos`` the character is assumed on
    schedule. The facing is the velocity's direction (the path's direction when nearly stopped).
    """

    points: np.ndarray
    speed: float
    closed: bool = False
    lookahead: float = 0.75
    hint_weight: float = 0.1
    _a: np.ndarray = field(init=False, repr=False)
    _d: np.ndarray = field(init=False, repr=False)
    _len: np.ndarray = field(init=False, repr=False)
    _s0: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        pts = np.asarray(self.points, dtype=float)
        if pts.ndim != 2 or pts.shape[1] not in (2, 3) or len(pts) < 2:
            raise ShapeError(f"PathFollower.points: expected (N >= 2, 2 or 3), got {pts.shape}")
        pts = frozen(pts[:, :2], float, (None, 2), "points")
        if not np.all(np.isfinite(pts)):
            raise ShapeError("PathFollower.points must be finite")
        for name in ("speed", "lookahead", "hint_weight"):
            v = float(getattr(self, name))
            if not (math.isfinite(v) and (v > 0 or (name == "hint_weight" and v == 0))):
                raise ShapeError(f"PathFollower.{name} must be > 0, got {v}")
            object.__setattr__(self, name, v)
        closed = bool(self.closed)
        ends = np.concatenate([pts, pts[:1]]) if closed else pts
        a, d = ends[:-1], np.diff(ends, axis=0)
        length = np.linalg.norm(d, axis=1)
        keep = length > 1e-9  # repeated points
        a, d, length = a[keep], d[keep], length[keep]
        if not len(a):
            raise ShapeError("PathFollower.points: the path has zero length")
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "closed", closed)
        object.__setattr__(self, "_a", a)
        object.__setattr__(self, "_d", d)
        object.__setattr__(self, "_len", length)
        object.__setattr__(self, "_s0", np.concatenate([[0.0], np.cumsum(length)[:-1]]))

    @property
    def length(self) -> float:
        """Path length (m), including the closing segment of a closed path."""
        return float(self._len.sum())

    def _wrap_s(self, s):
        s = np.asarray(s, dtype=float)
        return s % self.length if self.closed else np.clip(s, 0.0, self.length)

    def point_at(self, s):
        """Position ``(..., 2)`` m and unit tangent ``(..., 2)`` at arc length ``s (...)`` m
        (wrapped on a closed path, clipped on an open one)."""
        s = self._wrap_s(s)
        i = np.clip(np.searchsorted(self._s0, s, side="right") - 1, 0, len(self._a) - 1)
        u = (s - self._s0[i]) / self._len[i]
        return self._a[i] + u[..., None] * self._d[i], self._d[i] / self._len[i][..., None]

    def _closest(self, p):
        """Per segment: arc length ``(..., S)`` and squared distance ``(..., S)`` of the closest
        point to ``p (..., 2)``."""
        rel = p[..., None, :] - self._a
        u = np.clip(np.sum(rel * self._d, axis=-1) / self._len ** 2, 0.0, 1.0)
        diff = rel - u[..., None] * self._d
        return self._s0 + u * self._len, np.sum(diff * diff, axis=-1)

    def path_distance(self, p) -> np.ndarray:
        """Horizontal distance (m) ``(...)`` from points ``(..., 2 or 3)`` to the path."""
        _, d2 = self._closest(_xy(p, "path_distance: p"))
        return np.sqrt(d2.min(axis=-1))

    def project(self, p, s_hint=None):
        """Arc length ``s (...)`` m of the path point nearest to ``p (..., 2 or 3)``, preferring
        points near ``s_hint`` m (see ``hint_weight``); returns ``(s, distance)``."""
        s, d2 = self._closest(_xy(p, "project: p"))
        cost = d2
        if s_hint is not None:
            ds = s - np.asarray(s_hint, dtype=float)[..., None]
            if self.closed:
                ds = (ds + 0.5 * self.length) % self.length - 0.5 * self.length
            cost = d2 + (self.hint_weight * ds) ** 2
        i = np.argmin(cost, axis=-1)[..., None]
        return (np.take_along_axis(s, i, -1)[..., 0],
                np.sqrt(np.take_along_axis(d2, i, -1)[..., 0]))

    def desired(self, t, sim_pos=None, sim_rot=None):
        """Desired ``(velocity (3,) m/s, facing (4,) xyzw)`` at time ``t`` s."""
        t = _time(t)
        schedule = float(self._wrap_s(self.speed * t))
        if sim_pos is None:
            s = schedule
            pos = self.point_at(s)[0]
        else:
            pos = _xy(sim_pos, "sim_pos")
            s = float(self.project(pos, schedule)[0])
        ahead = s + self.lookahead
        target, tangent = self.point_at(ahead)
        to = target - pos
        dist = float(np.hypot(*to))
        speed = self.speed
        if not self.closed and ahead >= self.length:  # arrive: slow to a stop at the end
            speed *= min(1.0, dist / self.lookahead)
        vel = np.zeros(3)
        if dist > 1e-9:
            vel[:2] = speed * to / dist
        if speed > 0.2 * self.speed and dist > 1e-9:
            yaw = math.atan2(to[1], to[0])
        else:
            yaw = math.atan2(tangent[1], tangent[0])
        return vel, facing_from_yaw(yaw)


# --------------------------------------------------------------------------------------------
# head-mounted display

@dataclass(frozen=True, eq=False)
class HeadTrajectory:
    """A recorded head (HMD) driving the avatar: it walks where the head goes.

    Attributes:
        times: ``(T,)`` s, strictly increasing, T >= 2.
        pos: ``(T, 3)`` m, head positions in the world (Z up).
        rot: ``(T, 4)`` xyzw, head orientations (device frame to world).
        forward: ``(3,)`` the device's forward axis in its own frame (default +X).
        window: s (> 0), averaging window of the head's velocity and heading. A boxcar: 0.5 s
            cancels the forward pulsing at a 2 Hz step rate; lateral sway at the stride rate
            (about 1 Hz) is attenuated, not removed. Longer windows are smoother and lag more
            (the lag is window / 2).
        stand_speed: m/s; below it the desired velocity is zero, ramping to the full measured
            velocity at twice this speed (so a standing user's head jitter does not walk).
        turn_speeds: ``(lo, hi)`` m/s; the facing blends from the head's heading (below ``lo``)
            to the direction of motion (above ``hi``).

    ``desired(t)``: velocity = horizontal head displacement over the last ``window`` s divided by
    ``window`` (the recording is taken as still before its start), after the standing dead band.
    Facing = the head's mean heading over the window, turned toward the direction of motion by
    ``smoothstep(speed)`` times ``smoothstep(alignment)``: alignment is 1 when the motion is within
    45 degrees of the heading and 0 beyond 90 degrees, so walking forward faces where one walks
    (looking around does not turn the body) while side steps and walking backward keep facing
    the head's heading. Uses only samples up to ``t`` (causal, as live).
    """

    times: np.ndarray
    pos: np.ndarray
    rot: np.ndarray
    forward: tuple = (1.0, 0.0, 0.0)
    window: float = 0.5
    stand_speed: float = 0.1
    turn_speeds: tuple = (0.2, 0.6)
    _cum: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        times = frozen(self.times, float, (None,), "HeadTrajectory.times")
        T = len(times)
        if T < 2 or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
            raise ShapeError("HeadTrajectory.times: need >= 2 finite, strictly increasing times")
        pos = frozen(self.pos, float, (T, 3), "HeadTrajectory.pos")
        rot = np.asarray(self.rot, dtype=float)
        if rot.shape != (T, 4) or not np.all(np.isfinite(rot)) or np.any(
                np.linalg.norm(rot, axis=-1) < 1e-6):
            raise ShapeError(f"HeadTrajectory.rot: expected finite non-zero shape ({T}, 4), "
                             f"got {rot.shape}")
        if not np.all(np.isfinite(pos)):
            raise ShapeError("HeadTrajectory.pos must be finite")
        fwd = np.asarray(self.forward, dtype=float)
        if fwd.shape != (3,) or not np.linalg.norm(fwd) > 0:
            raise ShapeError("HeadTrajectory.forward: expected a non-zero (3,) axis")
        for name in ("window", "stand_speed"):
            v = float(getattr(self, name))
            if not (math.isfinite(v) and (v > 0 or (name == "stand_speed" and v == 0))):
                raise ShapeError(f"HeadTrajectory.{name} must be > 0, got {v}")
            object.__setattr__(self, name, v)
        lo, hi = (float(v) for v in self.turn_speeds)
        if not (0 <= lo < hi):
            raise ShapeError("HeadTrajectory.turn_speeds: need 0 <= lo < hi m/s")
        rot = frozen(quat.normalize(rot), float, (T, 4), "rot")
        head = quat.rotate(rot, fwd / np.linalg.norm(fwd))[:, :2]
        head = head / np.maximum(np.linalg.norm(head, axis=-1, keepdims=True), 1e-9)
        # running integral of the heading vector: window means by two interpolations
        cum = np.concatenate([[[0.0, 0.0]], np.cumsum(
            0.5 * (head[1:] + head[:-1]) * np.diff(times)[:, None], axis=0)])
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "pos", pos)
        object.__setattr__(self, "rot", rot)
        object.__setattr__(self, "forward", tuple(fwd))
        object.__setattr__(self, "turn_speeds", (lo, hi))
        object.__setattr__(self, "_cum", frozen(cum, float, (T, 2), "cum"))

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0])

    def _interp(self, a, t):
        return np.array([np.interp(t, self.times, a[:, i]) for i in range(a.shape[1])])

    def velocity(self, t) -> np.ndarray:
        """Smoothed horizontal head velocity ``(3,)`` m/s at ``t`` (before the dead band)."""
        t = _time(t)
        v = (self._interp(self.pos, t) - self._interp(self.pos, t - self.window)) / self.window
        v[2] = 0.0
        return v

    def heading(self, t) -> float:
        """Mean head heading (rad) over the window ending at ``t``."""
        t = _time(t)
        t0 = max(t - self.window, self.times[0])
        t1 = min(max(t, self.times[0]), self.times[-1])
        if t1 - t0 > 1e-9:
            m = (self._interp(self._cum, t1) - self._interp(self._cum, t0)) / (t1 - t0)
        else:
            m = quat.rotate(self.rot[0 if t <= self.times[0] else -1], np.array(self.forward))
        return math.atan2(m[1], m[0])

    def desired(self, t, sim_pos=None, sim_rot=None):
        """Desired ``(velocity (3,) m/s, facing (4,) xyzw)`` at time ``t`` s."""
        v = self.velocity(t)
        speed = float(np.hypot(v[0], v[1]))
        if self.stand_speed > 0:
            v = v * _smoothstep((speed - self.stand_speed) / self.stand_speed)
        yaw_h = self.heading(t)
        lo, hi = self.turn_speeds
        yaw = yaw_h
        if speed > 1e-9:
            d = float(_wrap(math.atan2(v[1], v[0]) - yaw_h)) if np.any(v) else 0.0
            w = _smoothstep((speed - lo) / (hi - lo)) * _smoothstep(math.cos(d) / math.sqrt(0.5))
            yaw = yaw_h + float(w) * d
        return v, facing_from_yaw(yaw)


# --------------------------------------------------------------------------------------------
# prediction and root clamping

def predict_trajectory(sim_pos, sim_vel, sim_acc, sim_rot, sim_angvel, desired_vel, desired_rot,
                       halflife_pos, halflife_rot, times=FEATURE_TIMES):
    """Future positions and facings of the simulated character if the input stays as it is.

    Args:
        sim_pos, sim_vel, sim_acc: ``(..., 3)`` m, m/s, m/s^2 of the simulated character.
        sim_rot: ``(..., 4)`` xyzw facing; sim_angvel: ``(..., 3)`` rad/s.
        desired_vel: ``(..., 3)`` m/s; desired_rot: ``(..., 4)`` xyzw (from a source's ``desired``).
        halflife_pos, halflife_rot: s (> 0): how quickly velocity and facing follow the input.
        times: ``(K,)`` s ahead (default ``FEATURE_TIMES``: 1/3, 2/3, 1).

    Returns:
        ``(positions (K, ..., 3) m, rotations (K, ..., 4) xyzw)``; project positions on the ground
        and make them local to the character for trajectory features.
    """
    times = np.asarray(times, dtype=float)
    pos, _, _ = character_predict(sim_pos, sim_vel, sim_acc, desired_vel, halflife_pos, times)
    rot, _ = facing_predict(sim_rot, sim_angvel, desired_rot, halflife_rot, times)
    return pos, rot


def clamp_root(sim_pos, char_pos, max_distance=0.1, char_vel=None, dt=0.0, ratio=0.5):
    """The animated (virtual) root position corrected toward the simulated one.

    Two steps, in this order, on full 3-D vectors (both roots normally lie on the ground):

    1. Only if ``char_vel`` is given: move ``char_pos`` straight toward ``sim_pos`` by at most
       ``ratio * |char_vel| * dt`` m (never past it). The correction is proportional to the
       animation's own speed, so a standing character is never slid (foot sliding hides in motion).
    2. Thesis root clamping: if ``|char - sim| > max_distance`` (alpha, m), put the root on the
       sphere of radius ``max_distance`` around ``sim_pos`` along the same direction,
       ``sim + alpha (char - sim) / |char - sim|``; otherwise leave it.

    Args:
        sim_pos, char_pos: ``(..., 3)`` m; char_vel: ``(..., 3)`` m/s or None; dt: s;
        max_distance: m (>= 0); ratio: dimensionless (>= 0).

    Returns:
        The corrected root position ``(..., 3)``; always within ``max_distance`` of ``sim_pos``.
    """
    sim = np.asarray(sim_pos, dtype=float)
    char = np.asarray(char_pos, dtype=float)
    if not (float(max_distance) >= 0 and float(ratio) >= 0):         # NaN too: no clamp at all
        raise ShapeError("clamp_root: max_distance and ratio must be >= 0")
    diff = char - sim
    dist = np.linalg.norm(diff, axis=-1, keepdims=True)
    if char_vel is not None:
        step = float(ratio) * np.linalg.norm(np.asarray(char_vel, dtype=float), axis=-1,
                                             keepdims=True) * float(dt)
        dist_new = np.maximum(dist - step, 0.0)
        diff = diff * np.where(dist > 0, dist_new / np.maximum(dist, 1e-300), 0.0)
        dist = dist_new
    alpha = float(max_distance)
    scale = np.where(dist > alpha, alpha / np.maximum(dist, 1e-300), 1.0)
    return sim + diff * scale


def adjust_root_rotation(sim_rot, char_rot, halflife, dt, max_step=np.inf):
    """The facing twin of ``clamp_root`` step 1: ``char_rot (..., 4)`` turned toward ``sim_rot``
    by the part of their difference that a decay of ``halflife`` s removes in ``dt`` s, but by
    at most ``max_step`` rad (``(...)`` or scalar) this frame (Holden's and MMVR's
    "adjustment", ``damp_adjustment_exact``). Without it the character turns only where its
    database turns; a database without the matching turn would leave it behind until the
    ``clamp_root_rotation`` limit."""
    one = isinstance(max_step, (float, int)) and np.shape(sim_rot) == np.shape(char_rot) == (4,)
    if (float(halflife) <= 0 or float(dt) < 0
            or (max_step < 0 if one else np.any(np.asarray(max_step) < 0))):
        raise ShapeError("adjust_root_rotation: halflife must be > 0, dt and max_step >= 0")
    factor = 1.0 - math.exp(-math.log(2.0) * float(dt) / float(halflife))
    if one:
        return _adjust_one(sim_rot, char_rot, factor, float(max_step))
    char = quat.normalize(char_rot)
    diff = quat.to_scaled_axis(quat.mul(quat.normalize(sim_rot), quat.conj(char)))  # world
    step = diff * factor
    n = np.linalg.norm(step, axis=-1, keepdims=True)
    lim = np.asarray(max_step, dtype=float)[..., None]
    step = step * np.where(n > lim, lim / np.maximum(n, 1e-300), 1.0)
    return quat.normalize(quat.mul(quat.from_scaled_axis(step), char))


def _adjust_one(sim_rot, char_rot, factor: float, max_step: float) -> np.ndarray:
    """``adjust_root_rotation`` of one character on Python floats: the controller calls it every
    frame, where numpy's per-call overhead on (4,) arrays is ~20x the arithmetic."""
    def unit(q):
        a, b, c, d = q.tolist() if isinstance(q, np.ndarray) else (float(v) for v in q)
        n = max(math.sqrt(a * a + b * b + c * c + d * d), 1e-12)
        return (a / n, b / n, c / n, d / n)
    char = unit(char_rot)
    x, y, z, w = quat.mul_t(unit(sim_rot), quat.conj_t(char))
    if w < 0:                                          # shortest arc
        x, y, z, w = -x, -y, -z, -w
    s = math.sqrt(x * x + y * y + z * z)
    angle = 2.0 * math.atan2(s, w)
    step = factor * angle
    if step > max_step:
        step = max_step
    if s < 1e-12 or step <= 0.0:
        return np.array(char)
    h = 0.5 * step
    k = math.sin(h) / s
    return np.array(unit(quat.mul_t((x * k, y * k, z * k, math.cos(h)), char)))


def clamp_root_rotation(sim_rot, char_rot, max_angle):
    """The facing twin of ``clamp_root`` step 2: ``char_rot (..., 4)`` turned toward ``sim_rot``
    until it is within ``max_angle`` rad of it (unchanged when already within)."""
    max_angle = float(max_angle)
    if not max_angle >= 0:                                   # NaN too: it clamped nothing
        raise ShapeError("clamp_root_rotation: max_angle must be >= 0")
    if np.shape(sim_rot) == np.shape(char_rot) == (4,):
        # one root (the controller's every frame), in plain floats: ``normalize`` and ``angle``
        # bit for bit (``quat``'s tuple helpers); within already, no slerp
        sim = quat.normalize_t(np.asarray(sim_rot, float).tolist())
        char = quat.normalize_t(np.asarray(char_rot, float).tolist())
        x, y, z, w = quat.mul_t(quat.conj_t(sim), char)
        if not 2.0 * float(np.arctan2(quat.norm_t((x, y, z)), abs(w))) > max_angle:
            return np.array(char)
    sim = quat.normalize(sim_rot)
    char = quat.normalize(char_rot)
    ang = quat.angle(char, sim)
    t = np.where(ang > max_angle, max_angle / np.maximum(ang, 1e-300), 1.0)
    out = quat.slerp(sim, char, t)
    return np.where((ang > max_angle)[..., None], out, char)


# --------------------------------------------------------------------------------------------
# loading input scenes

_INPUT_KEYS = {
    "joystick": {"kind", "camera_yaw", "interpolation", "walk_speeds", "run_speeds",
                 "initial_yaw"},
    "path": {"kind", "points", "speed", "closed", "lookahead", "hint_weight"},
    "head": {"kind", "file", "t", "pos", "rot", "up", "forward", "window", "stand_speed",
             "turn_speeds"},
}
_KEY_KEYS = {"t", "x", "y", "run", "rx", "ry"}
_HEAD_COLUMNS = ["t", "x", "y", "z", "qx", "qy", "qz", "qw"]


def _recording(path: Path, name: str) -> Path:
    """The recording a head input scene at ``path`` names (``[input] file``): beside it."""
    return path.parent / name


def input_files(path) -> list[Path]:
    """The files the input scene at ``path`` reads: itself and, for a head input, the
    recording it names (so that no output is written over either). A scene that cannot be
    read reads no recording (``load_input`` says what is wrong with it)."""
    from ..scene import _read

    path = Path(path)
    try:
        data = _read(path)
    except PhysmocapError:
        return [path]
    inp = data.get("input") if isinstance(data, dict) else None
    rec = inp.get("file") if isinstance(inp, dict) else None
    return [path] + ([_recording(path, rec)] if isinstance(rec, str) else [])


def load_input(path):
    """An input source (``Joystick``, ``PathFollower`` or ``HeadTrajectory``) from a TOML file
    following the schema in this module's docstring, or a shipped input scene by name
    (``"straight_walk"``, as ``physmocap mm run --input`` takes it: the relative path
    ``scenes/inputs/...`` worked only from the repository's folder). Raises
    ``FileFormatError`` naming the file, ``UnknownNameError`` for an unknown name."""
    from ..scene import _Checker, _read, _resolve  # the shared TOML reader and field checks

    require_path("load_input", path)
    path = _resolve(path, "inputs", "input")
    data = _read(path)
    ck = _Checker(path)
    kind_list = ", ".join(_INPUT_KEYS)
    allowed_top = {"meta", "input", "key", "run"}  # [run]: read by the controller (duration)
    ck.keys(data, allowed_top, ("input",), "")
    ck.meta(data)
    inp = data["input"]
    if not isinstance(inp, dict):
        ck.fail("[input]", "must be a table")
    kind = ck.string(inp.get("kind"), "[input]", "kind")
    if kind not in _INPUT_KEYS:
        ck.fail("[input]", f"unknown kind {kind!r}; known: {kind_list}")
    if kind != "joystick" and "key" in data:
        ck.fail("[[key]]", f"keys belong to kind = \"joystick\", not {kind!r}")
    try:
        if kind == "joystick":
            return _load_joystick(inp, data.get("key"), ck)
        if kind == "path":
            return _load_path(inp, ck)
        return _load_head(inp, ck, path)
    except (ShapeError, UnitError) as exc:  # value problems found by the constructors
        raise FileFormatError(exc.reason, path) from None


def _speeds(ck, inp, key, default):
    if key not in inp:
        return default
    v = ck.vector(inp[key], 3, "[input]", key)
    if any(s < 0 for s in v):
        ck.fail("[input]", f"{key} must be >= 0 m/s")
    return tuple(v)


def _load_joystick(inp, keys, ck) -> Joystick:
    where = "[input]"
    ck.keys(inp, _INPUT_KEYS["joystick"], ("kind",), where)
    if not isinstance(keys, list) or not keys:
        ck.fail("[[key]]", "a joystick needs at least one [[key]] table")
    rows = []
    for i, k in enumerate(keys):
        w = f"[[key]] #{i + 1}"
        ck.keys(k, _KEY_KEYS, ("t", "x", "y"), w)
        t = ck.number(k["t"], w, "t")
        if rows and t <= rows[-1][0]:
            ck.fail(w, f"t must increase from key to key, got {t:g} after {rows[-1][0]:g}")
        vals = [ck.number(k.get(n, 0.0), w, n, lo=-1.0, hi=1.0) for n in ("x", "y", "rx", "ry")]
        run = ck.boolean(k.get("run", False), w, "run")
        rows.append((t, vals[0], vals[1], run, vals[2], vals[3]))
    interp = ck.string(inp.get("interpolation", "hold"), where, "interpolation")
    if interp not in ("hold", "linear"):
        ck.fail(where, f"interpolation must be 'hold' or 'linear', got {interp!r}")
    return Joystick.from_keys(
        rows, camera_yaw=math.radians(ck.number(inp.get("camera_yaw", 0.0), where, "camera_yaw")),
        initial_yaw=math.radians(ck.number(inp.get("initial_yaw", 0.0), where, "initial_yaw")),
        walk_speeds=_speeds(ck, inp, "walk_speeds", _WALK),
        run_speeds=_speeds(ck, inp, "run_speeds", _RUN), interpolation=interp)


def _load_path(inp, ck) -> PathFollower:
    where = "[input]"
    ck.keys(inp, _INPUT_KEYS["path"], ("kind", "points", "speed"), where)
    pts = inp["points"]
    if not isinstance(pts, list) or len(pts) < 2:
        ck.fail(where, "points must be a list of >= 2 [x, y] points")
    n = len(pts[0]) if isinstance(pts[0], list) else 0
    if n not in (2, 3):
        ck.fail(where, "points must be [x, y] (or [x, y, z]) lists of numbers")
    points = [ck.vector(p, n, where, f"points[{i}]") for i, p in enumerate(pts)]
    kw = {}
    if "closed" in inp:
        kw["closed"] = ck.boolean(inp["closed"], where, "closed")
    for key in ("lookahead", "hint_weight"):
        if key in inp:
            kw[key] = ck.number(inp[key], where, key, lo=0, lo_open=True)
    return PathFollower(points, ck.number(inp["speed"], where, "speed", lo=0, lo_open=True), **kw)


def _load_head(inp, ck, path: Path) -> HeadTrajectory:
    where = "[input]"
    ck.keys(inp, _INPUT_KEYS["head"], ("kind",), where)
    inline = [k for k in ("t", "pos", "rot") if k in inp]
    if "file" in inp and inline:
        ck.fail(where, "give either file or inline t/pos/rot, not both")
    if "file" in inp:
        t, pos, rot = _read_head_csv(_recording(path, ck.string(inp["file"], where, "file")), ck)
    elif len(inline) == 3:
        t = inp["t"]
        if not isinstance(t, list) or len(t) < 2:
            ck.fail(where, "t must be a list of >= 2 times (s)")
        t = [ck.number(v, where, "t") for v in t]
        pos, rot = inp["pos"], inp["rot"]
        for key, val, n in (("pos", pos, 3), ("rot", rot, 4)):
            if not isinstance(val, list) or len(val) != len(t):
                ck.fail(where, f"{key} must be a list of {len(t)} rows (one per time)")
        pos = [ck.vector(p, 3, where, "pos") for p in pos]
        rot = [ck.vector(q, 4, where, "rot") for q in rot]
        t, pos, rot = np.array(t), np.array(pos), np.array(rot)
    else:
        ck.fail(where, "a head input needs file = \"...csv\" or inline t, pos and rot")
    up = ck.string(inp.get("up", "z"), where, "up").lower()
    if up not in UP_AXES:
        ck.fail(where, f"unknown up axis {up!r}; known: {', '.join(UP_AXES)}")
    R = up_to_zup_matrix(up)
    pos = pos @ R.T
    rot = quat.mul(quat.from_matrix(R), rot)  # device frame -> Z-up world
    kw = {}
    if "forward" in inp:
        kw["forward"] = tuple(ck.vector(inp["forward"], 3, where, "forward"))
    for key in ("window", "stand_speed"):
        if key in inp:
            kw[key] = ck.number(inp[key], where, key, lo=0, lo_open=(key == "window"))
    if "turn_speeds" in inp:
        kw["turn_speeds"] = tuple(ck.vector(inp["turn_speeds"], 2, where, "turn_speeds"))
    return HeadTrajectory(t, pos, rot, **kw)


def _read_head_csv(file: Path, ck):
    if not file.is_file():
        ck.fail("[input]", f"head file {str(file)!r} not found")
    try:
        with open(file, encoding="utf-8") as fh:
            header = [h.strip().lower() for h in fh.readline().split(",")]
            if header != _HEAD_COLUMNS:
                raise FileFormatError(f"header must be {','.join(_HEAD_COLUMNS)}", file)
            a = np.loadtxt(fh, delimiter=",", ndmin=2)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise FileFormatError(f"cannot read head CSV: {exc}", file) from None
    if a.shape[1] != 8 or len(a) < 2 or not np.all(np.isfinite(a)):
        raise FileFormatError("need >= 2 rows of 8 finite numbers", file)
    return a[:, 0], a[:, 1:4], a[:, 4:8]
