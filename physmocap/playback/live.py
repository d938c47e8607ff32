"""Live coupling: a motion-matching controller drives the simulated character, frame by frame.

Each frame, in one loop (``LivePlayback.step``):

1. ``matching.Controller.step`` gives the next kinematic pose on the database's skeleton;
2. ``FrameRetargeter`` maps it onto the body template (the simulated body's skeleton);
3. the pose is prepared the way ``track`` prepares a whole clip, but causally: the feet are
   unrolled about their bones (``level_feet``) and the root is moved vertically so that the
   lowest sole point of the feet in stance is on the floor (``StanceFloor``: slower than 0.5
   m/s in assist mode, 0.2 in physical mode: ``TrackingSettings.stance``; in assist mode a
   foot rising faster than 0.3 m/s, leaving the floor, is not in stance: ``stance_rise``), the
   offset smoothed by a one-pole filter (``ground_s``); in assist mode a swinging foot whose
   sole reaches below 1 cm is lifted (``SwingLift``, ``TrackingSettings.swing_clearance``);
4. ``Tracker.step`` simulates one frame toward it (PD joint motors, root assist or none).

In fully physical mode the controller may wait for the body (``LivePlayback`` options, off by
default): ``follow`` clamps its character root and simulation object toward the body's root
(the reference then stays at the body; ``Tracker.shift_reference`` keeps the move out of the
reference's velocities), ``speed_margin`` caps the input's desired speed at the body's own
plus a margin (the reference speeds up only as the body does). Measured
(``benchmarks/physical_diagnosis.py live_paced``, ``balance.STEPPING``, from standing): neither
is needed or helps. ``follow`` leaves the body's motion unchanged (``STEPPING`` sees the
reference only relative to the body); ``speed_margin`` 0.3-1.1 m/s puts the straight walk,
which stays up 20 s without it, down at 4.2 / 5.6 s for margins 0.3 / 0.6, and moves stop and
go's time down (4.47 s without) to 4.0-9.4 s, chaotically in the margin.

``run_live`` plays an input scene for a duration and returns a ``TrackResult`` (the same report
as ``track``: tracking error, root assist, penetration, foot skate, falls) plus per-frame
timings; ``physmocap play DB.npz --input NAME`` is its command line.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from .. import quat
from ..errors import SettingsError, bad_number, require_numbers, require_type
from ..motion import Motion
from ..scene import BodyTemplate, Environment, load_body
from .reference import FrameRetargeter, StanceFloor, SwingLift, sole_points, sole_sides
from .track import Closing, TrackingSettings, Tracker, TrackResult, measure

__all__ = ["LivePlayback", "LiveResult", "run_live", "LIVE_ASSIST_ITERATIONS"]

# PyBullet solver iterations of the live loop in assist mode when ``TrackingSettings`` leaves
# them unset (offline ``track`` keeps 50). The loop has one display frame for everything, and
# the solver's iterations are most of it (about 18 µs each per physics step, four steps per
# frame, on top of 0.3 ms). Measured on the six live inputs, 10 s each (``benchmarks/
# playback_speed.py iterations``): at 30 tracking is 0.02-0.15 cm worse than at 50 (run 2.70
# against 2.55 cm, every input within the 3 cm target) and the loop 1.3-1.5 times as fast
# (on a machine where 50 gives 87-105 frames/s: 116-142).
LIVE_ASSIST_ITERATIONS = 30


class _FrameFeet:
    """``level_feet`` and the lowest sole point for one frame, in plain floats: the per-frame
    path of the live loop, where numpy's per-call overhead on (4,) arrays dominates."""

    def __init__(self, body: BodyTemplate, steady: bool = False):
        from .character import foot_joints
        # ``steady``: filter each segment's twist, weighted by how well it is defined (the bone
        # near horizontal), instead of taking it frame by frame: while a bone points steeply
        # down the per-frame twist is ill-defined and a swinging foot spins about its bone
        # (``level_feet(constant=True)`` is the whole-clip version)
        self.steady = steady
        self._twist = {}
        sk = body.skeleton
        self.parents = [int(p) for p in sk.parents]
        seg = sk.segment_vectors()
        self.feet = []
        for side in foot_joints(body):
            for j in sorted(side):
                n = float(np.linalg.norm(seg[j]))
                if n > 1e-6:
                    self.feet.append((j, tuple(map(float, seg[j] / n))))
        joints, pts = sole_points(body)
        self.soles = [(int(j), tuple(map(float, p))) for j, p in zip(joints, pts)]
        # forward kinematics in tuples (``forward_kinematics_frame``'s arithmetic): once per
        # frame, then again only below each unrolled joint (it was redone whole per foot joint)
        self.offsets = sk.offsets.tolist()
        self.below = {}
        for j, _ in self.feet:
            kids = [j]
            for k in range(j + 1, len(self.parents)):
                if self.parents[k] in kids:
                    kids.append(k)
            self.below[j] = kids

    def _fk(self, q, x, g, joints) -> None:
        """World rotations ``g`` and positions ``x`` (lists of tuples, J) of ``joints`` (parents
        first) from local rotations ``q``, in place; the rest of ``x`` and ``g`` already hold."""
        par, off = self.parents, self.offsets
        for j in joints:
            p = par[j]
            g[j] = quat.mul_t(g[p], q[j])
            o = quat.rotate_t(g[p], off[j])
            x[j] = (x[p][0] + o[0], x[p][1] + o[1], x[p][2] + o[2])

    def __call__(self, root, lrot) -> tuple[np.ndarray, list, tuple]:
        """``lrot (J, 4)`` with feet and toes unrolled, the sole corners (``sole_points`` order,
        K lists of 3 floats, m, world), and the pose's world joint positions ``(J, 3)`` and
        rotations ``(J, 4)``."""
        lrot = np.array(lrot, float)
        q = [tuple(r) for r in lrot.tolist()]
        J = len(q)
        x, g = [None] * J, [None] * J
        g[0], x[0] = q[0], tuple(float(v) for v in root)
        self._fk(q, x, g, range(1, J))
        for j, seg in self.feet:
            gj = g[j]
            b = quat.rotate_t(gj, seg)
            n = quat.rotate_t(gj, (0.0, 0.0, 1.0))
            nb = n[0] * b[0] + n[1] * b[1] + n[2] * b[2]
            n_p = (n[0] - nb * b[0], n[1] - nb * b[1], n[2] - nb * b[2])
            u_p = (-b[2] * b[0], -b[2] * b[1], 1.0 - b[2] * b[2])
            cr = (n_p[1] * u_p[2] - n_p[2] * u_p[1], n_p[2] * u_p[0] - n_p[0] * u_p[2],
                  n_p[0] * u_p[1] - n_p[1] * u_p[0])
            ang = np.arctan2(b[0] * cr[0] + b[1] * cr[1] + b[2] * cr[2],
                             n_p[0] * u_p[0] + n_p[1] * u_p[1] + n_p[2] * u_p[2])
            if self.steady:
                prev = self._twist.get(j)
                if prev is not None:
                    wgt = (1.0 - b[2] * b[2]) ** 2
                    ang = prev + wgt * float(np.angle(np.exp(1j * (ang - prev))))
                self._twist[j] = ang
            sh, ch = np.sin(0.5 * ang), np.cos(0.5 * ang)
            g2 = quat.mul_t((b[0] * sh, b[1] * sh, b[2] * sh, ch), gj)
            lrot[j] = quat.mul_t(quat.conj_t(g[self.parents[j]]), g2)
            q[j] = tuple(lrot[j].tolist())
            self._fk(q, x, g, self.below[j])
        corners = []
        for j, p in self.soles:
            r = quat.rotate_t(g[j], p)
            corners.append([x[j][0] + r[0], x[j][1] + r[1], x[j][2] + r[2]])
        return quat.normalize(lrot), corners, (np.array(x), np.array(g))


class _BodyPaced:
    """An input source whose desired speed is at most the simulated body's speed along it
    (filtered, ``LivePlayback.speed_margin``) plus ``speed_margin`` m/s: the matched motion
    speeds up no faster than the body does (a gait initiation paced by the body)."""

    def __init__(self, source, live):
        self.source, self.live = source, live

    def __getattr__(self, name):
        return getattr(self.source, name)

    def desired(self, t, sim_pos, sim_rot):
        vel, rot = self.source.desired(t, sim_pos, sim_rot)
        vel = np.array(vel, float)
        n = float(np.linalg.norm(vel[:2]))
        if n < 1e-9:
            return vel, rot
        live = self.live
        # the body's speed along the desired direction (walking backward does not count),
        # in the database's units (the retargeter scales positions by ``ratio``)
        ahead = max(0.0, float(live._vel @ vel[:2]) / n)
        cap = (ahead + live.speed_margin) / live.retarget.ratio
        if n > cap:
            vel[:2] *= cap / n
        return vel, rot


def _hips_height(db) -> float:
    """m, the median height of the database's hips above its floor (the simulation bone)."""
    return float(np.median(db.lpos[:, 1, 2]))


def _database_motion(db) -> tuple:
    """``(lrot (F, J, 4), hips (F, 3) m, fps)``: the database's poses on its output skeleton
    (``output_skeleton``: the hips the root, in the world), as ``retarget.reference_pose``
    takes them."""
    hips, hips_rot = db.world_root()
    lrot = np.array(db.lrot[:, 1:])
    lrot[:, 0] = hips_rot
    return lrot, hips, float(db.fps)


def standing_frame(db) -> int:
    """The database frame to retarget from when its files' rest pose is not a standing pose:
    the first clip's first frame if it stands (hips within 5 % of the highest any clip start
    holds them above its lowest joint), else the clip start that holds them highest.

    Name order puts a crouched start first for many folders (Bandai-Namco's runs sort before its
    walks); retargeted from it, every pose bent its knees: measured on the benchmark's 20 clips
    in name order, the live straight walk tracked within 5.0 cm instead of 1.7 cm (assist) and
    was down at 1.1 s (fully physical, ``STEPPING``); from the most upright start, 1.8 cm and
    down at 1.9 s. A standing first clip keeps its own start: ``STEPPING``'s 20 s walks were
    measured from it, and are that fragile -- from the starts of two other walk clips (the most
    upright, the most typical) the straight walk was down at 2.0 / 2.3 s (measured while the
    frame's own feet were the reference's: the first clip's right foot on its toes stood every
    live right foot 43 deg toes up; ``retarget.planted_feet`` now levels them)."""
    from ..matching.controller import output_skeleton
    from ..skeleton import forward_kinematics
    starts = np.asarray(db.range_starts, int)
    lrot = np.asarray(db.lrot)[starts, 1:]
    gp, _ = forward_kinematics(output_skeleton(db), lrot, np.zeros((len(starts), 3)))
    h = gp[:, 0, 2] - gp[..., 2].min(axis=1)           # (C,) m, hips above the lowest joint
    return int(starts[0] if h[0] >= 0.95 * h.max() else starts[np.argmax(h)])


class LivePlayback(Closing):
    """One motion-matched, physically simulated character.

    Args:
        controller: a ``matching.Controller`` (its database, input source and settings).
        body: the simulated body template (default: the shipped ``humanoid``).
        mode: ``"assist"`` or ``"physical"`` (see ``Tracker``).
        settings: ``TrackingSettings``; unset solver iterations are ``LIVE_ASSIST_ITERATIONS``
            in assist mode (the frame budget), the mode's default otherwise.
        ground_s: s, time constant of the causal filter on the reference's floor offset.
        follow: m, or ``None`` (off): the most the reference's root may lead the simulated
            body's, horizontally; beyond it the controller's character root and simulation
            object are moved back (``follow_body``), so the matched motion waits for the body.
        speed_margin: m/s, or ``None`` (off): the input's desired speed is capped at the
            body's horizontal speed along it (filtered with time constant ``speed_filter_s``
            s) plus this margin, so the reference cannot run away from a body that has not
            yet got going (the live inputs start from standing).
        environment: scene objects and hand holds in the simulated world (world frame of the
            input scene; hold times in seconds from the first frame), see ``environment.py``.
        reference_frame: the database frame the retargeting's reference pose is taken from
            when the files' rest pose is not a standing pose (default: ``standing_frame``).
        start_at_rest: the body starts at rest in the first reference pose (``True``) or
            with the velocities from it to the next (``False``); ``None``: at rest when the
            controller starts with it (its clock at 0: a live input starts from standing),
            moving when it joins a controller already running. A controller given no
            ``start_frame`` that has not stepped is placed (``Controller.place``) in the
            reference frame and eases out of it (the frame may be walking: the live
            database's first clip, a left turn, at 0.4 m/s).
            Measured fully physical (``STEPPING``, six headings,
            ``benchmarks/physical_diagnosis.py live_mirrored``), the figure eight turned the
            other way with the body started moving: up 20 s in 0 of 6 (down at 0.9-2.0 s: a
            first landing of 3.5 body weights and a yaw push that set the body spinning). But
            a body at rest under a reference already walking falls (``live_start``: physics
            joining the straight walk 3 s in, down at 1.22 s at rest, up 20 s moving).
    """

    # frames ``step`` plays before the world is first stepped (the first places and steps)
    unstepped_frames = 0

    def __init__(self, controller, body: BodyTemplate | None = None, mode: str = "assist",
                 settings: TrackingSettings = TrackingSettings(), ground_s: float = 0.05,
                 follow: float | None = None, speed_margin: float | None = None,
                 speed_filter_s: float = 0.5, environment: Environment | None = None,
                 reference_frame: int | None = None, start_at_rest: bool | None = None):
        from ..matching.controller import output_skeleton
        _need_controller("LivePlayback", controller)
        # ('stepping' is the CLI's word for the settings STEPPING)
        require_type("LivePlayback: settings", settings, TrackingSettings,
                     "TrackingSettings(...) or playback.balance.STEPPING")
        if body is not None:
            require_type("LivePlayback: body", body, BodyTemplate, "load_body(NAME)")
        for name, v in (("follow", follow), ("speed_margin", speed_margin)):
            if v is not None and bad_number(v):
                raise SettingsError(f"LivePlayback: {name} must be None or a finite number "
                                    f">= 0, got {v!r}")
        if not (np.isfinite(speed_filter_s) and speed_filter_s > 0):
            raise SettingsError(f"LivePlayback: speed_filter_s must be > 0 s, got "
                                f"{speed_filter_s!r}")
        n = controller.db.n_frames
        if reference_frame is not None and (isinstance(reference_frame, bool) or not isinstance(
                reference_frame, (int, np.integer)) or not 0 <= reference_frame < n):
            raise SettingsError(f"LivePlayback: reference_frame must be None or a frame index "
                                f"0..{n - 1}, got {reference_frame!r}")
        if start_at_rest is not None and not isinstance(start_at_rest, bool):
            raise SettingsError(f"LivePlayback: start_at_rest must be None, True or False, got "
                                f"{start_at_rest!r}")
        if mode == "assist" and settings.solver_iterations is None:
            settings = replace(settings, solver_iterations=LIVE_ASSIST_ITERATIONS)
        self.ctrl = controller
        self.body = body or load_body()
        self.mode = mode
        self.settings = settings
        src = output_skeleton(controller.db)
        h_s = _hips_height(controller.db)
        h_t = float(self.body.skeleton.offsets[0, 2])
        # the database's rest pose is its source files' (up axis ``db.up``); where that is not a
        # standing pose, its most upright clip start is the reference (``standing_frame``,
        # ``retarget.reference_pose``)
        from ..matching.retarget import reference_pose
        db = controller.db
        k = standing_frame(db) if reference_frame is None else int(reference_frame)
        first = np.array(db.lrot[k, 1:])
        self.follow = follow
        self.speed_margin = speed_margin
        self.start_at_rest = (float(controller.t) == 0.0 if start_at_rest is None
                              else start_at_rest)
        # the body is placed in the first pose: a controller that has shown none starts in
        # frame k and eases out of it (k is the first searchable frame of the benchmarks' live
        # database: its figures are this start's). Measured on the figure eight and its
        # mirror, 28 headings each (``physical_diagnosis.py``'s ``HEADINGS_28``), up 20 s:
        # from k 26 and 24; shown as is, the first search's pick (a walk under way) 9 and 28;
        # eased out of k held still 21 and 28, and the straight walk at 0.7 m/s up in 2 of 6
        # headings, not 6 (``envelope``)
        if not controller.record.frame and not controller.start_shown:
            controller.place(k)
        self._vel = np.zeros(2)               # m/s, the body's filtered horizontal velocity
        self._speed_a = 1.0 - np.exp(-controller.dt / speed_filter_s)
        if speed_margin is not None:
            controller.source = _BodyPaced(controller.source, self)
        self.retarget = FrameRetargeter(
            src, self.body.skeleton, h_t / h_s if h_s > 1e-6 else 1.0, 0.0, up=db.up,
            source_rest=reference_pose(src, db.up, first, self.body.skeleton,
                                       motion=_database_motion(db)))
        self.tracker = Tracker(self.body, mode, settings, environment)
        self.dt = controller.dt
        self._feet = _FrameFeet(self.body, steady=mode == "physical")
        self._alpha = 1.0 - np.exp(-self.dt / ground_s) if ground_s > 0 else 1.0
        self._floor = StanceFloor(sole_sides(self.body), settings.stance(mode),
                                  settings.stance_height, self.dt, settings.rise(mode))
        self._offset = None
        self._started = False
        # ``precompute``'s poses, ``(root, lrot, ms)`` per frame, and how many were handed out
        self._cache, self._cache_at = None, 0
        cl = settings.clearance(mode)
        self._lift = SwingLift(self.body, cl) if cl > 0 else None

    # --- one frame ------------------------------------------------------------------------

    def reference_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Advance the controller one frame; the prepared reference on the body's skeleton:
        ``root_pos (3,)`` m and ``lrot (J, 4)`` xyzw (``lrot[0]`` is the root's world rotation).
        After ``precompute``, the next of the frames it computed (a copy), while any are left."""
        if self._cache is not None and self._cache_at < len(self._cache):
            root, lrot, _ = self._cache[self._cache_at]
            self._cache_at += 1
            return root.copy(), lrot.copy()
        rp, rr, lp, lr = self.ctrl.step()
        rr = rr.tolist()                  # one root: plain floats, bit for bit the array maths
        hips = rp + np.array(quat.rotate_exact_t(rr, lp[0].tolist()))
        lrot = np.array(lr)
        lrot[0] = quat.mul_t(rr, lr[0].tolist())
        root, trot = self.retarget(hips, lrot)
        trot, corners, fk = self._feet(root, trot)
        off = self._floor(corners)
        self._offset = off if self._offset is None else \
            self._offset + self._alpha * (off - self._offset)
        root = np.array(root, float)
        root[2] += self._offset
        if self._lift is not None:
            c = np.asarray(corners, float)
            c[:, 2] += self._offset
            trot = self._lift(trot, c, self._floor.speeds, *fk)
        return root, trot

    def precompute(self, frames: int) -> None:
        """Compute the reference's next ``frames`` poses now; ``reference_pose`` hands them
        out in turn (then goes on computing), each with the controller time it took. A
        predictive search plays every frame many times over from saved states, and the
        reference does not depend on the body: each frame is computed once, the same numbers
        as played live. Refused with ``follow`` or ``speed_margin``, which make the
        reference depend on the body."""
        if isinstance(frames, bool) or not isinstance(frames, (int, np.integer)) or frames < 0:
            raise SettingsError(f"LivePlayback.precompute: frames must be a whole number >= 0, "
                                f"got {frames!r}")
        if self.follow is not None or self.speed_margin is not None:
            raise SettingsError("LivePlayback.precompute: the reference follows the body "
                                "(follow, speed_margin); it cannot be computed ahead")
        cache = []
        for _ in range(frames):
            t0 = time.perf_counter()
            root, lrot = self.reference_pose()
            cache.append((root, lrot, 1e3 * (time.perf_counter() - t0)))
        self._cache, self._cache_at = cache, 0

    def _controller_ms(self, k0: int, t0: float, t1: float) -> float:
        """ms the reference of this frame took: measured (``t1 - t0``), plus, for the poses
        ``k0 ..`` handed out from ``precompute``'s cache, what computing them took."""
        ahead = 0.0 if self._cache is None else float(
            sum(ms for _, _, ms in self._cache[k0:self._cache_at]))
        return 1e3 * (t1 - t0) + ahead

    def step(self):
        """One frame: ``(reference (root (3,), lrot (J, 4)), simulated (root, lrot), info)``;
        ``info`` is the ``Tracker.step`` info plus ``controller_ms`` and ``physics_ms``."""
        if self.tracker.char.client is None:       # PyBullet disconnected: a TypeError below
            raise SettingsError("LivePlayback.step: the loop is closed (close() or the end of "
                                "its with block); make a new LivePlayback")
        k0 = self._cache_at
        t0 = time.perf_counter()
        ref = self.reference_pose()
        t1 = time.perf_counter()
        if not self._started:
            # the first pose places the body, at rest (``start_at_rest``) or with the next
            # pose's velocities
            nxt = self.reference_pose()
            moving = {} if self.start_at_rest else dict(
                next_pose=(nxt[0], nxt[1][0], nxt[1]), dt=self.dt)
            self.tracker.reset(ref[0], ref[1][0], ref[1], **moving)
            self._started = True
            ref = nxt
            t1 = time.perf_counter()
        rp, rr, lr, info = self.tracker.step(ref[0], ref[1][0], ref[1], self.dt)
        if self.follow is not None:
            self.follow_body(ref[0], rp)
        if self.speed_margin is not None:
            _, _, v, _ = self.tracker.char.base_state()
            self._vel += self._speed_a * (v[:2] - self._vel)
        t2 = time.perf_counter()
        info = dict(info, controller_ms=self._controller_ms(k0, t0, t1),
                    physics_ms=1e3 * (t2 - t1))
        return ref, (rp, lr), info

    def follow_body(self, ref_root, sim_root) -> None:
        """Clamp the controller toward the simulated body: where the reference's root
        ``ref_root (3,)`` leads the body's ``sim_root (3,)`` (m, world) by more than ``follow``
        horizontally, the controller's character root and simulation object move back by the
        excess (in the database's units), so the next reference starts where the body is."""
        e = np.asarray(ref_root[:2], float) - np.asarray(sim_root[:2], float)
        n = float(np.hypot(*e))
        if n <= self.follow:
            return
        back = np.zeros(3)
        back[:2] = e * ((n - self.follow) / n) / self.retarget.ratio
        self.ctrl.root_pos = self.ctrl.root_pos - back
        self.ctrl.sim_pos = self.ctrl.sim_pos - back
        self.tracker.shift_reference(-back * self.retarget.ratio)

    def close(self) -> None:
        self.tracker.close()


@dataclass(frozen=True, eq=False)
class LiveResult:
    """``track``'s result for the coupled loop, plus per-frame timings ``(F,)`` in ms, and
    how far the reference's feet slide while its matched frames label them in contact (mm per
    frame, on the body; ``database``: the database's own clips, scaled to the body). A
    reference asked for a speed its clips do not walk slides its planted feet (its root pulled
    along, its clip's feet not), and a fully physical body cannot follow that (``benchmarks/
    physical_diagnosis.py envelope``)."""

    result: TrackResult
    controller_ms: np.ndarray
    physics_ms: np.ndarray
    reference_skate_mm: float
    database_skate_mm: float

    def report(self) -> dict:
        rep = self.result.report()
        total = self.controller_ms + self.physics_ms
        rep.update(
            frames_per_second=float(len(total) / (total.sum() / 1e3)) if total.sum() > 0 else 0.0,
            latency_ms={"median": float(np.median(total)), "p99": float(np.percentile(total, 99))},
            controller_ms_median=float(np.median(self.controller_ms)),
            physics_ms_median=float(np.median(self.physics_ms)),
            reference_foot_skate_mm=self.reference_skate_mm,
            reference_foot_skate_mm_database=self.database_skate_mm)
        return rep


class _Frames:
    """What a live run records per frame, written by frame index (so a predictive search that
    goes back to an earlier frame writes over what it takes back), and measured at the end."""

    def __init__(self, n: int, J: int, holds: int):
        self.ref_root, self.ref_lrot = np.empty((n, 3)), np.empty((n, J, 4))
        self.sim_root, self.sim_lrot = np.empty((n, 3)), np.empty((n, J, 4))
        self.force, self.torque, self.pen = np.zeros(n), np.zeros(n), np.zeros(n)
        self.contacts = np.zeros((n, 2), bool)
        self.c_ms, self.p_ms = np.zeros(n), np.zeros(n)
        self.hold_err = np.full((n, holds), np.nan)

    def put(self, i: int, out) -> None:
        """Frame ``i`` from ``LivePlayback.step``'s return ``out``."""
        (rr, rl), (sr, sl), info = out
        self.ref_root[i], self.ref_lrot[i], self.sim_root[i], self.sim_lrot[i] = rr, rl, sr, sl
        self.force[i], self.torque[i] = info["assist_force_n"], info["assist_torque_nm"]
        self.pen[i], self.contacts[i] = info["penetration_m"], info["contacts"]
        self.c_ms[i], self.p_ms[i] = info["controller_ms"], info["physics_ms"]
        self.hold_err[i] = info["hold_error_m"]

    def result(self, ref: Motion, body: BodyTemplate, mode: str, falls: list, source: str,
               environment: Environment | None,
               hand_targets: np.ndarray | None = None) -> TrackResult:
        """``track.measure`` of the frames recorded against ``ref``; its speed theirs."""
        return measure(ref, self.sim_root, self.sim_lrot, body, mode, self.force, self.torque,
                       self.pen, self.contacts, falls,
                       float((self.c_ms + self.p_ms).sum() / 1e3), source=source,
                       environment=environment, hold_error_m=self.hold_err,
                       hand_targets=hand_targets)

    def measure(self, controller, body: BodyTemplate, mode: str, falls: list, ratio: float,
                environment: Environment | None) -> "LiveResult":
        fps = 1.0 / controller.dt
        ref = Motion(body.skeleton, fps, self.ref_root, quat.normalize(self.ref_lrot),
                     {"source": "motion matching"})
        skate, db_skate = _reference_skate(ref, body, controller, ratio)
        res = self.result(ref, body, mode, falls, f"live physics playback ({mode})",
                          environment)
        return LiveResult(res, self.c_ms, self.p_ms, skate, db_skate)


def _need_controller(where: str, controller) -> None:
    """A script passing something else gets one line, not an AttributeError from inside."""
    from ..matching.controller import Controller
    if not isinstance(controller, Controller):
        raise SettingsError(f"{where} needs a matching Controller (Controller(db, features, "
                            f"source)), got {type(controller).__name__}")


def run_live(controller, duration: float, body: BodyTemplate | None = None, mode: str = "assist",
             settings: TrackingSettings = TrackingSettings(), progress=None,
             environment: Environment | None = None) -> LiveResult:
    """Run the coupled loop for ``duration`` s; the simulated and reference motions, measured
    (``environment``: scene objects and hand holds, as ``LivePlayback``)."""
    require_numbers("run_live", ("duration",), duration=duration)            # s
    _need_controller("run_live", controller)
    body = body or load_body()
    n = max(2, int(round(duration / controller.dt)))
    rec = _Frames(n, len(body), len(environment.holds) if environment else 0)
    with LivePlayback(controller, body, mode, settings, environment=environment) as live:
        for i in range(n):
            rec.put(i, live.step())
            if progress is not None and (i % 60 == 0 or i == n - 1):
                progress("live playback", i + 1, n)
        falls = list(live.tracker.falls)
        ratio = live.retarget.ratio
    return rec.measure(controller, body, mode, falls, ratio, environment)


def _reference_skate(ref: Motion, body: BodyTemplate, controller, ratio: float):
    """``(mm per frame, the database's own)``: the horizontal travel of the reference's toes
    (``ref`` on the body) while the controller's matched frames label them in contact, and the
    same of the database's clips scaled by the retargeting ``ratio`` (body / database)."""
    from ..matching.metrics import database_figures, foot_skate_mm
    from .character import foot_joints
    names = body.skeleton.names
    toes = tuple(names[max(side)] for side in foot_joints(body))
    # the controller's last frames are the reference's (the first placed the body)
    contacts = np.array(controller.record.contacts[-ref.n_frames:], bool)
    return (foot_skate_mm(ref, toes, contacts),
            ratio * database_figures(controller.db)[0])
