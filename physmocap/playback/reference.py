"""The kinematic reference a simulated body follows, made fit for it.

A motion retargeted by joint angles onto the body (``matching.retarget``) keeps its source's
feet: rolled on their sides, toes pointing into the floor, soles floating or sunk, swing toes
brushing the ground. ``track`` and the live loop (``live.LivePlayback``) prepare it here:

* ``level_feet``: each foot twisted about its own bone so its sole faces the floor (and, in
  physical mode, pitched so a planted sole is level);
* ``ground_motion`` (a whole clip) and ``StanceFloor`` (frame by frame, causal): the root moved
  vertically so the feet stand on the floor (the lowest sole point, or the still / stance feet);
* ``SwingLift`` / ``lift_swing``: a swinging foot that reaches below a clearance lifted;
* ``walk_cycle``, ``close_cycle`` and ``loop_motion``: the most closed gait cycle of a clip (a
  captured walk starts and ends in other poses), its remaining seam spread over it, repeated end
  to start for long physical tests;
* ``FrameRetargeter``: ``retarget`` one frame at a time, for a live controller on another
  skeleton;
* ``sole_points`` / ``sole_sides``: the foot boxes' bottom corners these rules measure.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from .._arrays import step_speed
from ..errors import ShapeError, require_counts, require_numbers
from ..motion import Motion
from ..scene import BodyTemplate
from ..skeleton import Skeleton
from .character import Character, foot_joints, leg_chains

__all__ = ["sole_points", "sole_sides", "level_feet", "ground_motion", "StanceFloor",
           "SwingLift", "lift_swing", "walk_cycle", "close_cycle", "loop_motion",
           "FrameRetargeter"]


def sole_points(body: BodyTemplate) -> tuple[np.ndarray, np.ndarray]:
    """Joint indices ``(K,)`` and points ``(K, 3)`` (in each joint's frame) of the foot
    collision boxes' bottom corners (see ``character.Character``)."""
    from .character import foot_box
    joints, pts = [], []
    for side in Character.feet_of(body):
        for j in side:
            half, ctr = foot_box(body, j)
            for sx in (-1, 1):
                for sy in (-1, 1):
                    joints.append(j)
                    pts.append([ctr[0] + sx * half[0], ctr[1] + sy * half[1], ctr[2] - half[2]])
    return np.array(joints), np.array(pts)


def sole_sides(body: BodyTemplate) -> list[np.ndarray]:
    """Indices into ``sole_points`` of the left and the right foot's corners."""
    joints, _ = sole_points(body)
    return [np.flatnonzero(np.isin(joints, side)) for side in foot_joints(body)]


def level_feet(motion: Motion, body: BodyTemplate, constant: bool = False,
               flat_planted: bool = False) -> Motion:
    """``motion`` with each foot segment (``*Foot``, then ``*Toes``) twisted about its own bone
    so that its sole normal (rest +Z) is as close to world up as the bone direction allows.

    ``retarget`` fixes bone directions only, so the roll about a foot or toe bone is whatever the
    source skeleton's axes made it: a toe segment rolled upside down lifts its collision box, and
    the simulated foot then stands on the box's edge.

    ``constant``: one twist per segment for the whole clip (the circular mean, weighted toward
    frames where the bone is near horizontal) instead of one per frame: while a bone points
    steeply down the per-frame twist is ill-defined, and the demo walk's swinging foot spun a
    full turn about its bone in 0.1 s (harmless with a root assist, a kick without one).

    ``flat_planted``: each ``*Foot`` also pitched about its own sideways axis by one angle for
    the whole clip, so that its sole is level (median) while the foot is planted
    (``_planted_pitch``). ``retarget`` copies the source's ankle -> toe bone direction; where
    the source rig's toe joint sits lower under its ankle than the body's, the body's planted
    sole points its toes at the floor (Bandai-Namco walks 001-006: up to 16 deg; the demo
    walk: 0.8 deg toes up; ``benchmarks/physical_diagnosis.py soles``): the reference stands
    on its toe tips, and a simulated stance foot following it stands on its toe box, the
    centre of pressure at the tip braking the body every step."""
    from .character import _segment
    lrot = np.array(motion.lrot)
    up = np.array([0.0, 0.0, 1.0])
    par = body.skeleton.parents
    for side in foot_joints(body):
        for j in sorted(side):                      # the foot before its toes
            grot = Motion(motion.skeleton, motion.fps, motion.root_pos, lrot).grot
            seg = _segment(body, j)
            if np.linalg.norm(seg) < 1e-6:
                continue
            seg = seg / np.linalg.norm(seg)
            g = grot[:, j]
            b = quat.rotate(g, np.broadcast_to(seg, (len(g), 3)))
            n = quat.rotate(g, np.broadcast_to(up, (len(g), 3)))
            n_p = n - np.sum(n * b, -1, keepdims=True) * b
            u_p = up - b * b[:, 2:3]
            ang = np.arctan2(np.sum(b * np.cross(n_p, u_p), -1), np.sum(n_p * u_p, -1))
            if constant:
                # one twist for the whole clip, the circular mean over the frames where the
                # bone is near horizontal (a foot flat on the floor): frame by frame, the
                # twist is ill-defined while the bone points steeply down (a swinging foot),
                # and the foot spins about its bone there
                wgt = (1.0 - b[:, 2] ** 2) ** 2
                ang = np.full(len(ang), np.arctan2(np.sum(wgt * np.sin(ang)),
                                                   np.sum(wgt * np.cos(ang))))
            g2 = quat.mul(quat.from_axis_angle(b, ang), g)
            if flat_planted and body.skeleton.names[j].endswith("Foot"):
                g2 = quat.mul(g2, _planted_pitch(motion, g2, j))
            lrot[:, j] = quat.mul(quat.conj(grot[:, par[j]]), g2)
    return Motion(motion.skeleton, motion.fps, motion.root_pos, quat.normalize(lrot),
                  dict(motion.meta, level_feet=True))


def _planted_pitch(motion: Motion, g: np.ndarray, j: int, speed: float = 0.3,
                   height: float = 0.03) -> np.ndarray:
    """``(4,)``: the local rotation about foot ``j``'s sideways axis (rest +Y) that levels its
    sole (rest +X) on the median planted frame; ``g (F, 4)`` the foot's world rotations.
    Planted: ``retarget.planted_frames`` of the ankle; the identity when no frame is."""
    from ..matching.retarget import planted_frames
    planted = planted_frames(motion.gpos[:, j], motion.fps, height, speed)
    if not planted.any():
        return quat.identity(())
    fx = quat.rotate(g[planted], np.array([1.0, 0.0, 0.0]))
    pitch = float(np.median(np.arcsin(np.clip(fx[:, 2], -1.0, 1.0))))
    # about +Y by the pitch: a sole pointing its toes down (pitch < 0) turns them up
    return quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), pitch)


def ground_motion(motion: Motion, body: BodyTemplate, smooth_s: float = 0.1,
                  still_speed: float = 0.0) -> Motion:
    """``motion`` with its root moved vertically so the lowest sole point is at z = 0 in each
    frame (the offset smoothed with a ``smooth_s`` moving average).

    ``still_speed`` > 0: in frames where a foot's lowest sole point moves slower than this (m/s,
    horizontally), the lowest still foot is put on the floor instead: a planted foot is on the
    floor, and a moving one may reach below it (a pushing-off toe retargeted onto other limb
    lengths: ``TrackingSettings.ground_still``)."""
    require_numbers("ground_motion", smooth_s=smooth_s, still_speed=still_speed)
    joints, pts = sole_points(body)
    P = motion.gpos[:, joints] + quat.rotate(motion.grot[:, joints], pts)
    z = P[..., 2]
    off = -z.min(axis=1)
    if still_speed > 0 and motion.n_frames > 1:
        f = np.arange(motion.n_frames)
        still = []                             # per foot: its lowest point's height if still
        for side in sole_sides(body):
            k = side[np.argmin(z[:, side], axis=1)]                # the foot's lowest point
            sp = step_speed(P[f[1:], k[1:], :2] - P[f[:-1], k[1:], :2], motion.fps)
            still.append(np.where(sp < still_speed, z[f, k], np.inf))
        low = np.min(still, axis=0)
        off = np.where(np.isfinite(low), -low, off)
    w = max(1, int(round(smooth_s * motion.fps)))
    if w > 1 and len(off) > w:
        pad = np.pad(off, (w // 2, w - 1 - w // 2), mode="edge")
        off = np.convolve(pad, np.ones(w) / w, mode="valid")
    root = np.array(motion.root_pos)
    root[:, 2] += off
    return Motion(motion.skeleton, motion.fps, root, motion.lrot,
                  dict(motion.meta, grounded=True))


class StanceFloor:
    """The reference's floor offset (m, added to the root's height) from its feet in stance,
    frame by frame (causal).

    Each call takes the sole corners ``(K, 3)`` m (``sole_points``, world) of one frame; a foot
    is in stance when its slowest corner moves slower than ``speed`` m/s horizontally (since
    the previous frame, ``dt`` s) and its lowest corner is within ``height`` m of the floor
    the current offset puts there (and, with ``rise``, its lowest corner rises slower than
    ``rise`` m/s: a foot leaving the floor is not on it). The offset puts the lowest stance
    corner on the floor; with no foot in stance (flight, or the first frame: the lowest corner
    of all) it is held. The height test keeps a swing foot slowing at the top of its back
    swing from counting. ``speed=None``: the lowest corner of every frame (no stance test).
    ``speeds``: ``(K,)`` m/s, each corner's horizontal speed at the last call (``None`` on the
    first), for ``SwingLift``.
    """

    def __init__(self, sides: list, speed: float | None, height: float, dt: float,
                 rise: float | None = None):
        self.sides = [list(map(int, s)) for s in sides]     # corner indices of each foot
        self.speed, self.height, self.dt = speed, float(height), float(dt)
        self.rise = None if rise is None else float(rise)
        self.offset = None
        self.speeds = None
        self._prev = None

    def __call__(self, corners) -> float:
        pts = np.asarray(corners, float)
        low = float(pts[:, 2].min())
        prev, self._prev = self._prev, pts
        v = self.speeds = None if prev is None else \
            np.hypot(*(pts[:, :2] - prev[:, :2]).T) / self.dt
        if self.speed is None or v is None or self.offset is None:
            self.offset = -low
            return self.offset
        zs = []                                   # the lowest corner of each foot in stance
        for s in self.sides:
            z = float(pts[s, 2].min())
            leaving = self.rise is not None and \
                (z - float(prev[s, 2].min())) / self.dt > self.rise
            if float(v[s].min()) < self.speed and z + self.offset < self.height and not leaving:
                zs.append(z)
        if zs:
            self.offset = -min(zs)
        return self.offset


class SwingLift:
    """Lifts a swinging reference foot whose sole reaches below ``clearance`` m, one frame at a
    time (``TrackingSettings.swing_clearance``). Swinging: the foot's slowest sole corner moves
    faster than ``speeds[0]`` m/s horizontally, fully from ``speeds[1]`` (a pushing-off foot
    turns about a still toe and is left alone). The ankle is raised by the shortfall, at most
    ``2 clearance``, by two-bone IK on the leg, the foot keeping its world rotation. The bound:
    in sharp turns the reference's feet slide faster than ``speeds`` while they carry it, sunk
    up to 5 cm into the floor; lifted by all of it, both hovered, and the simulated feet landed
    hard when they came down again."""

    def __init__(self, body: BodyTemplate, clearance: float, speeds: tuple = (0.5, 1.0)):
        require_numbers("SwingLift", clearance=clearance)
        self.sk, self.clearance, self.speeds = body.skeleton, float(clearance), speeds
        self.sides = sole_sides(body)
        self.chains = leg_chains(body)

    def __call__(self, lrot, corners, speeds, x, g) -> np.ndarray:
        """``lrot (J, 4)`` of a pose whose sole corners are ``corners (K, 3)`` m (``sole_points``
        order, world, grounded), moving ``speeds (K,)`` m/s horizontally (``None``: not known,
        no lift), with world joint positions ``x (J, 3)`` (at any height) and rotations
        ``g (J, 4)``: the pose's forward kinematics, which the caller already has."""
        from ..ik import two_bone_ik_t
        lrot = np.array(lrot, float)
        if speeds is None:
            return lrot
        pts = np.asarray(corners, float)
        for side, (h, k, a) in zip(self.sides, self.chains):
            w = (float(speeds[side].min()) - self.speeds[0]) / (self.speeds[1] - self.speeds[0])
            short = min(self.clearance - float(pts[side, 2].min()), 2.0 * self.clearance)
            lift = min(max(w, 0.0), 1.0) * max(0.0, short)
            if lift < 1e-4:
                continue
            # the legs are apart below the hips: one leg's IK leaves the other's FK valid
            # (one chain, one frame: plain floats, ``two_bone_ik``'s arithmetic; the ``+ 0.0``
            # is numpy's ``x + [0, 0, lift]``, which turns a -0.0 into 0.0)
            xa = x[a].tolist()
            ga, gb, _ = two_bone_ik_t(x[h].tolist(), x[k].tolist(), xa,
                                      (xa[0] + 0.0, xa[1] + 0.0, xa[2] + lift),
                                      g[h].tolist(), g[k].tolist())
            lrot[h] = quat.mul_t(quat.conj_t(g[self.sk.parents[h]].tolist()), ga)
            lrot[k] = quat.mul_t(quat.conj_t(ga), gb)
            lrot[a] = quat.mul_t(quat.conj_t(gb), g[a].tolist())
        return lrot


def lift_swing(motion: Motion, body: BodyTemplate, clearance: float) -> Motion:
    """``motion`` (grounded, on ``body``'s skeleton) with ``SwingLift`` applied frame by
    frame."""
    lift = SwingLift(body, clearance)
    joints, pts = sole_points(body)
    gpos, grot = motion.gpos, motion.grot
    P = gpos[:, joints] + quat.rotate(grot[:, joints], pts)
    step = P[1:, :, :2] - P[:-1, :, :2]
    V = [None] + list(np.hypot(step[..., 0], step[..., 1]) / (1.0 / motion.fps))
    lrot = np.array([lift(q, c, v, x, g)
                     for q, c, v, x, g in zip(motion.lrot, P, V, gpos, grot)])
    return Motion(motion.skeleton, motion.fps, motion.root_pos, quat.normalize(lrot),
                  dict(motion.meta, swing_lifted=clearance))


def walk_cycle(motion: Motion, min_s: float = 0.8, max_s: float = 2.0,
               velocity_s: float = 0.1) -> tuple[int, int, float]:
    """The frames ``(start, stop)`` of ``motion`` whose poses are most alike, ``stop - start``
    within ``min_s`` and ``max_s`` seconds apart: ``motion[start:stop + 1]`` is a gait cycle that
    ``loop_motion`` can repeat with the smallest seam. Returns also the seam's mismatch (m): the
    RMS over joints of the distance between the two frames' joint positions, each taken
    relative to the root in the root's heading frame, with the root's velocity in that frame
    times ``velocity_s`` s counted as one more point (a pose passed through at another speed
    is not the same state).

    A captured walk starts from standing and ends elsewhere; looped whole, its seam would put
    the last pose next to the first. Raises ``ShapeError`` if the clip is shorter than
    ``min_s`` (no cycle fits)."""
    require_numbers("walk_cycle", ("min_s", "max_s"), min_s=min_s, max_s=max_s,
                    velocity_s=velocity_s)
    from ..matching.trajectory import yaw_of  # pure numpy; no import cycle
    F, fps = motion.n_frames, float(motion.fps)
    lo, hi = int(np.ceil(min_s * fps)), min(int(np.floor(max_s * fps)), F - 1)
    if F < 3 or lo > hi:
        raise ShapeError(f"walk_cycle: a {F / fps:.2f} s clip holds no cycle of {min_s:g} s "
                         f"or more; loop the whole clip (loop_motion) or lower min_s")
    yaw = yaw_of(motion.lrot[:, 0])
    inv = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), -yaw)              # (F, 4)
    rel = quat.rotate(inv[:, None], motion.gpos - motion.root_pos[:, None])   # (F, J, 3)
    vel = np.gradient(motion.root_pos, axis=0) * fps
    pts = np.concatenate([rel, velocity_s * quat.rotate(inv, vel)[:, None]], axis=1)
    best = (np.inf, 0, lo)
    for lag in range(lo, hi + 1):
        d = np.sqrt(np.mean(np.sum((pts[lag:] - pts[:-lag]) ** 2, axis=-1), axis=-1))  # (F-lag,)
        i = int(np.argmin(d))
        if d[i] < best[0]:
            best = (float(d[i]), i, i + lag)
    return best[1], best[2], best[0]


def close_cycle(motion: Motion) -> Motion:
    """``motion`` (a gait cycle, ``walk_cycle``) bent so its last frame is its first frame's
    pose: every joint's local rotation, the root's tilt (its rotation with the yaw turned to the
    last frame's) and height. The mismatch is spread linearly over the frames (frame ``k`` of
    ``F - 1`` takes ``k / (F - 1)`` of it, as a rotation vector), so ``loop_motion`` repeats
    it without a jump; the first frame, the root's horizontal path and the last frame's yaw are
    unchanged.

    Unclosed, a seam of 1 cm (CMU 02_01's best cycle) moves a planted foot about 1 m/s for one
    frame each loop: the reference's foot is lifted for that frame (``BalanceSettings
    .plant_speed``) and its jump kicks the simulated body once a cycle."""
    from ..matching.trajectory import yaw_of  # pure numpy; no import cycle
    F = motion.n_frames
    if F < 2:
        raise ShapeError("close_cycle: a cycle needs at least 2 frames")
    lrot = np.array(motion.lrot)
    first = np.array(lrot[0])
    # the first root rotation turned about Z to the last one's yaw: the loop keeps the turn
    dyaw = float(yaw_of(lrot[-1, 0])) - float(yaw_of(first[0]))
    first[0] = quat.mul(quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), dyaw), first[0])
    gap = quat.to_scaled_axis(quat.mul(quat.conj(lrot[-1]), first))          # (J, 3) rad
    w = np.arange(F) / (F - 1)                                                # (F,)
    lrot = quat.normalize(quat.mul(lrot, quat.from_scaled_axis(w[:, None, None] * gap)))
    root = np.array(motion.root_pos)
    root[:, 2] += w * (root[0, 2] - root[-1, 2])
    return Motion(motion.skeleton, motion.fps, root, lrot, dict(motion.meta))


def loop_motion(motion: Motion, loops: int) -> Motion:
    """``motion`` played ``loops`` times, each repeat moved (horizontally, and turned about Z)
    so it starts where the previous one ended. Meant for walk cycles; the seam is not blended
    (``close_cycle`` closes it first)."""
    from ..matching.trajectory import yaw_of  # pure numpy; no import cycle
    require_counts("loop_motion", loops=loops)
    root = [motion.root_pos]
    lrot = [motion.lrot]
    end_pos, end_rot = motion.root_pos[-1].copy(), motion.lrot[-1, 0]
    for _ in range(loops - 1):
        dyaw = float(yaw_of(end_rot)) - float(yaw_of(motion.lrot[0, 0]))
        qz = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), dyaw)
        rel = motion.root_pos[1:] - motion.root_pos[0]
        rel[:, 2] = 0.0
        pos = quat.rotate(qz, rel) + np.array([end_pos[0], end_pos[1], 0.0])
        pos[:, 2] = motion.root_pos[1:, 2]
        lr = np.array(motion.lrot[1:])
        lr[:, 0] = quat.mul(qz, lr[:, 0])
        root.append(pos)
        lrot.append(lr)
        end_pos, end_rot = pos[-1], lr[-1, 0]
    return Motion(motion.skeleton, motion.fps, np.concatenate(root), np.concatenate(lrot),
                  dict(motion.meta, looped=loops))


# --------------------------------------------------------------------------------------------
# per-frame retargeting (for live coupling with a controller on another skeleton)

class FrameRetargeter:
    """``matching.retarget.retarget`` one frame at a time.

    The correction quaternions (source rest bone -> target rest bone) are computed once; each
    call maps a source pose ``(root_pos (3,), lrot (J_s, 4))`` to the target's
    ``(root_pos (3,), lrot (J_t, 4))``. The root is scaled by ``ratio`` about ``floor`` as
    ``retarget`` does (use ``from_motion`` to take both from a clip, as ``retarget`` would).
    """

    def __init__(self, source: Skeleton, target: Skeleton, ratio: float = 1.0,
                 floor: float = 0.0, name_map: dict | None = None, up: str = "z",
                 source_rest: np.ndarray | None = None):
        from ..matching.retarget import corrections
        self.src_index, self.pre = corrections(source, target, name_map, up, source_rest)
        self.source, self.target = source, target
        self.ratio, self.floor = float(ratio), float(floor)
        self._pre = [tuple(map(float, q)) for q in self.pre]

    @classmethod
    def from_motion(cls, motion: Motion, target: Skeleton, name_map: dict | None = None
                    ) -> "FrameRetargeter":
        from ..matching.retarget import reference_pose, root_scale
        up = motion.meta.get("up") or "z"
        ratio, floor = root_scale(motion, target)
        return cls(motion.skeleton, target, ratio, floor, name_map, up,
                   reference_pose(motion.skeleton, up, motion.lrot[0], target, name_map,
                                  motion=(motion.lrot, motion.root_pos, motion.fps)))

    def __call__(self, root_pos, lrot) -> tuple[np.ndarray, np.ndarray]:
        sk = self.source
        lrot = [tuple(q) for q in np.asarray(lrot, float).tolist()]
        gs = [lrot[0]] * len(lrot)
        for j in range(1, len(sk)):
            gs[j] = quat.mul_t(gs[sk.parents[j]], lrot[j])
        J = len(self.target)
        gt = [None] * J
        out = [(0.0, 0.0, 0.0, 1.0)] * J
        par = self.target.parents
        for j in range(J):
            js = self.src_index[j]
            if js >= 0:
                gt[j] = quat.mul_t(gs[js], self._pre[j])
                out[j] = gt[j] if par[j] < 0 else quat.mul_t(quat.conj_t(gt[par[j]]), gt[j])
            else:
                gt[j] = gt[par[j]] if par[j] >= 0 else (0.0, 0.0, 0.0, 1.0)
        r = np.asarray(root_pos, float)
        root = np.array([r[0] * self.ratio, r[1] * self.ratio, (r[2] - self.floor) * self.ratio])
        return root, quat.normalize(np.array(out))
