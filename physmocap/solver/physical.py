"""The physical marker solver (Zordan & Van Der Horst, SCA 2003).

A fixed-limb-length body in PyBullet (gravity off) is pulled by virtual springs from landmarks on
its segments toward the captured markers; resistive damping keeps it from flailing; the posture
where the springs balance — the equilibrium — is the frame's answer. Joint limits are the
simulator's; foot plants and hand holds are stiff extra springs pinning a body point to a place.

Why it converges in a few sub-steps: for solving, each segment's mass and inertia are set from the
springs attached to it (mass = sum of stiffness x h^2, inertia = sum of stiffness x r^2 x h^2) and
all velocities are removed after each sub-step (a fully damped, quasi-static body). Every segment
then responds to its springs with one time constant h, so the simulation is a well-preconditioned
descent on the spring energy. That energy's minimum is the weighted least-squares marker fit, so
without constraints the equilibrium is the kinematic optimum. Real anthropometric masses are used
for physical playback, not here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import quat
from .._arrays import intervals
from ..errors import (SettingsError, ShapeError, require_counts, require_flags,
                      require_fractions, require_numbers)
from ..markers import MarkerSet
from ..motion import Motion
from ..skeleton import Skeleton
from .body import JointSpec, PhysicsBody, _segment_vectors

__all__ = ["PhysicalSettings", "PhysicalResult", "solve_physical", "landmarks", "plant_anchors",
           "plant_weights", "anchor_weights"]


@dataclass(frozen=True)
class PhysicalSettings:
    """Solver constants (SI units).

    Attributes:
        stiffness: N/m of a marker spring of weight 1.
        outlier_distance: m; beyond it a spring's pull falls off as 1/distance (its peak is
            ``stiffness * outlier_distance``), so a ghost or swapped marker cannot tear the pose.
        substeps: most sub-steps per frame; ``min_substeps`` always run.
        tol: m, equilibrium when no landmark moved more than this in the last sub-step.
        timestep: s per sub-step (solver time, unrelated to the capture rate).
        keep: fraction of velocity kept from one sub-step to the next (0 = quasi-static).
        mass_floor: virtual mass of a segment with no marker, as a fraction of one spring's.
        plant_stiffness: N/m of the spring pinning a planted foot or held hand. (PyBullet's
            hard point constraints were tried instead: with velocities damped every sub-step
            they converge slowly and skated 2x more.)
        plant_ramp: s over which a plant's spring takes hold after it starts, and lets go
            before it ends (``plant_weights``). A heel and a toe planted together pull the foot
            a little apart: switched on or off at once, the other one jumped up to 3.3 mm in a
            frame. Longer ramps move the foot more within the plant (0.03-0.08 s: up to 3.2
            mm a frame in the real captures; 0.02: 1.8 at most).
        predict: warm-start each frame at constant velocity from the two previous equilibria.
        carry: share of the frame before's correction a frame's start carries when every frame
            starts from its own pose of a kinematic solve (``solve_physical``'s ``init``); 0:
            from that pose alone. Below 1, so that where no marker pins a direction the starts
            do not drift from the kinematic poses, and what a frame carried fades within a
            block's ``WARMUP`` frames.
        resist: stiffness of the resistive joint torques that hold each joint near its
            warm-start rotation, as a fraction of one marker spring at 10 cm (N·m/rad); small
            enough not to bias observed joints, enough to stop unobserved ones drifting.
        hinge_stiffness: torque stiffness (same unit) against a hinge joint's rotation off its
            axis: knees and elbows are hinge-like, yet markers may pull them slightly off.
        limit_stiffness: torque stiffness (same unit) past a joint limit (hinge angle range;
            ball swing cone and twist range).
        ball_limits: also enforce ball-joint swing/twist limits. Off by default: the template's
            twist zero is not calibrated per subject, so a real capture can sit outside the
            template's ball ranges while being anatomically fine; such frames are reported.
    """

    stiffness: float = 1000.0
    outlier_distance: float = 0.04
    substeps: int = 30
    min_substeps: int = 2
    tol: float = 2e-4
    timestep: float = 1.0 / 240.0
    keep: float = 0.3
    mass_floor: float = 0.05
    plant_stiffness: float = 50000.0
    plant_ramp: float = 0.02
    predict: bool = True
    carry: float = 0.9
    resist: float = 0.02
    hinge_stiffness: float = 2.0
    limit_stiffness: float = 10.0
    ball_limits: bool = False

    def __post_init__(self):
        # one clear line for a bad value when the settings are made, not inside PyBullet later
        positive = ("stiffness", "outlier_distance", "timestep", "mass_floor")
        require_numbers("PhysicalSettings", positive, **{n: getattr(self, n) for n in positive + (
            "tol", "plant_stiffness", "plant_ramp", "resist", "hinge_stiffness",
            "limit_stiffness")})
        require_fractions("PhysicalSettings", keep=self.keep, carry=self.carry)
        require_counts("PhysicalSettings", substeps=self.substeps, min_substeps=self.min_substeps)
        if self.min_substeps > self.substeps:
            raise SettingsError(f"PhysicalSettings: min_substeps ({self.min_substeps}) exceeds "
                                f"substeps ({self.substeps})")
        require_flags("PhysicalSettings", predict=self.predict, ball_limits=self.ball_limits)


@dataclass(frozen=True, eq=False)
class PhysicalResult:
    """What ``solve_physical`` returns.

    Attributes:
        motion: the solved ``Motion`` (one equilibrium per frame).
        residual: ``(F, M)`` m, marker-to-landmark distance at equilibrium (NaN where missing).
        substeps: ``(F,)`` sub-steps used per frame.
        clipped: ``(F, M)`` bool, markers beyond ``outlier_distance`` at equilibrium (outliers,
            ghosts, swaps): their springs were weakened.
        constraint_points: ``(F, K, 3)`` m, world position of each constrained body point.
        limit_hit: ``(F, J)`` bool, joints held at a limit (by the limit torque) at equilibrium.
    """

    motion: Motion
    residual: np.ndarray
    substeps: np.ndarray
    clipped: np.ndarray
    constraint_points: np.ndarray
    limit_hit: np.ndarray
    meta: dict = field(default_factory=dict)


#: frames per block where a whole take is transformed at once (bounds the temporaries).
BLOCK = 4096


def landmarks(gpos: np.ndarray, grot: np.ndarray, markerset: MarkerSet) -> np.ndarray:
    """World landmark positions ``(..., M, 3)`` from joint frames ``gpos (..., J, 3)``,
    ``grot (..., J, 4)``. Takes of frames ``(F, J, …)`` go in blocks of ``BLOCK`` frames, so a
    long take needs no temporaries beyond the output."""
    b = markerset.body
    if gpos.ndim == 3 and len(gpos) > BLOCK:
        out = np.empty(gpos.shape[:1] + (len(b), 3))
        for s in range(0, len(gpos), BLOCK):
            out[s:s + BLOCK] = landmarks(gpos[s:s + BLOCK], grot[s:s + BLOCK], markerset)
        return out
    return gpos[..., b, :] + quat.rotate(grot[..., b, :], markerset.offset)


def plant_anchors(points: np.ndarray, active: np.ndarray, floor: float | None = 0.0
                  ) -> np.ndarray:
    """Where each constraint pins its body point: one place per interval of activity.

    Args:
        points: ``(F, K, 3)`` m, observed positions of the constrained points (NaN allowed).
        active: ``(F, K)`` bool.
        floor: height (m) the anchor may not go below (a planted foot does not sink), or None.
    Returns:
        ``(F, K, 3)`` anchors (NaN where inactive): the median of the observed point over each
        interval, so a plant does not skate with marker noise.
    """
    F, K = active.shape
    out = np.full((F, K, 3), np.nan)
    for k in range(K):
        for a, b in intervals(active[:, k]):
            seg = points[a:b, k]
            if np.all(np.isnan(seg)):
                continue
            anchor = np.nanmedian(seg, axis=0)
            if floor is not None:
                anchor[2] = max(anchor[2], floor)
            out[a:b, k] = anchor
    return out


def plant_weights(active: np.ndarray, ramp: int) -> np.ndarray:
    """``(F, K)`` weights in [0, 1] of the constraint springs active ``(F, K)`` bool: within each
    interval of activity rising linearly over its first ``ramp`` frames and falling over its
    last ``ramp`` (an interval shorter than ``2 ramp`` frames peaks below 1), 0 outside."""
    require_counts("plant_weights", zero_ok=("ramp",), ramp=ramp)
    active = np.asarray(active, bool)
    if active.ndim != 2:
        raise ShapeError(f"plant_weights: active must be (F, K), got {active.shape}")
    F, K = active.shape
    w = np.zeros((F, K))
    for k in range(K):
        for a, b in intervals(active[:, k]):
            i = np.arange(a, b)
            w[a:b, k] = np.minimum(1.0, np.minimum(i - a + 1, b - i) / (ramp + 1.0))
    return w


def anchor_weights(anchors: np.ndarray, settings: PhysicalSettings, fps: float) -> np.ndarray:
    """``(F, K)`` default ``anchor_weight`` of anchors ``(F, K, 3)`` (NaN = inactive):
    ``plant_weights`` of their activity, ramped over ``settings.plant_ramp`` s."""
    return plant_weights(~np.isnan(anchors[..., 0]), round(settings.plant_ramp * fps))


def _marker_mass_properties(skeleton: Skeleton, markerset: MarkerSet, k: np.ndarray, h: float,
                            floor: float, k_unit: float) -> tuple[np.ndarray, np.ndarray]:
    """Virtual ``mass (J,)`` and ``inertia (J,)`` that make every segment respond to its springs
    with the time constant ``h`` (see the module docstring)."""
    J = len(skeleton)
    com = 0.5 * _segment_vectors(skeleton)
    com[0] = 0.0  # the base's inertial frame is at the root joint
    unit = k_unit * h * h
    mass = np.full(J, floor * unit)
    inertia = np.full(J, floor * unit * 0.01)
    np.add.at(mass, markerset.body, k * h * h)
    r = markerset.offset - com[markerset.body]
    np.add.at(inertia, markerset.body, k * h * h * np.sum(r * r, axis=-1))
    return mass, inertia


def _rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vectors of unit quaternions ``(n, 4)`` (fast path for small n; angle <= pi)."""
    w = q[:, 3]
    sign = np.where(w < 0.0, -1.0, 1.0)
    xyz = q[:, :3] * sign[:, None]
    s = np.sqrt(np.einsum("ij,ij->i", xyz, xyz))
    theta = 2.0 * np.arctan2(s, np.abs(w))
    k = np.where(s < 1e-8, 2.0, theta / np.maximum(s, 1e-12))
    return xyz * k[:, None]


def _conj_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """conj(a) * b for ``(n, 4)`` xyzw arrays."""
    ax, ay, az, aw = -a[:, 0], -a[:, 1], -a[:, 2], a[:, 3]
    bx, by, bz, bw = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    return np.column_stack([aw * bx + ax * bw + ay * bz - az * by,
                            aw * by - ax * bz + ay * bw + az * bx,
                            aw * bz + ax * by - ay * bx + az * bw,
                            aw * bw - ax * bx - ay * by - az * bz])


def joint_torques(q: np.ndarray, target: np.ndarray, hinge: np.ndarray, axis: np.ndarray,
                  limits: np.ndarray, twist_axis: np.ndarray, kp: float, kh: float, kl: float,
                  ball_limits: bool = False, twist_mid: np.ndarray | None = None) -> np.ndarray:
    """Resistive, hinge and limit torques ``(n, 3)`` N·m for joint rotations ``q (n, 4)``.

    ``target``: rotations the resistive term holds the joints near; ``hinge``: ``(n,)`` bool;
    ``axis``, ``limits``, ``twist_axis``, ``twist_mid`` (None: 0) as in ``JointSpec``. A
    rotation's axis is the same in parent and child frames, so the torques need no frame change.
    Runs every sub-step, hence the hand-written quaternion maths.
    """
    tau = -kp * _rotvec(_conj_mul(target, q))
    if np.any(hinge):
        h = np.flatnonzero(hinge)
        v = _rotvec(q[h])                                   # rotation from the rest pose
        a = axis[h]
        ang = np.einsum("ij,ij->i", v, a)
        lo, hi = limits[h, 0], limits[h, 1]
        over = np.where(ang < lo, ang - lo, np.where(ang > hi, ang - hi, 0.0))
        tau[h] -= kh * (v - ang[:, None] * a) + kl * over[:, None] * a
    if ball_limits and not np.all(hinge):
        b = np.flatnonzero(~hinge)
        mid = None if twist_mid is None else twist_mid[b]
        _, over_s, over_t, swing_v, swing = _swing_twist(q[b], twist_axis[b], limits[b], mid)
        tau[b] -= kl * (over_s[:, None] * swing_v / np.maximum(swing, 1e-9)[:, None]
                        + over_t[:, None] * twist_axis[b])
    return tau


def _swing_twist(q, t, limits, mid=None):
    """Twist angle about ``t`` and swing of ``q``, and how far each is past ``limits`` (the
    twist range is ``mid ± limits[:, 1]``; ``mid`` None: 0)."""
    tw = 2.0 * np.arctan2(np.einsum("ij,ij->i", q[:, :3], t), q[:, 3])
    twist_q = quat.from_axis_angle(t, tw)
    swing_v = quat.to_scaled_axis(quat.mul(q, quat.conj(twist_q)))
    swing = np.linalg.norm(swing_v, axis=-1)
    over_s = np.maximum(swing - limits[:, 0], 0.0)
    off = tw if mid is None else np.angle(np.exp(1j * (tw - mid)))     # wrapped to (-pi, pi]
    over_t = np.sign(off) * np.maximum(np.abs(off) - limits[:, 1], 0.0)
    return tw, over_s, over_t, swing_v, swing


def past_limits(q: np.ndarray, hinge: np.ndarray, axis: np.ndarray, limits: np.ndarray,
                twist_axis: np.ndarray, margin: float = np.radians(0.5),
                twist_mid: np.ndarray | None = None) -> np.ndarray:
    """``(n,)`` bool: joints at or past a limit (hinge range; ball swing cone or twist range
    ``twist_mid ± limits[:, 1]``)."""
    q = quat.abs_w(q)
    v = quat.to_scaled_axis(q)
    ang = np.sum(v * np.nan_to_num(axis), axis=-1)
    hinge_past = (ang < limits[:, 0] + margin) | (ang > limits[:, 1] - margin)
    _, over_s, over_t, _, _ = _swing_twist(q, twist_axis, limits - margin, twist_mid)
    return np.where(hinge, hinge_past, (over_s > 0) | (over_t != 0))


def solve_physical(skeleton: Skeleton, markerset: MarkerSet, pos: np.ndarray, fps: float,
                   init: Motion, spec: JointSpec | None = None,
                   settings: PhysicalSettings = PhysicalSettings(),
                   anchors: np.ndarray | None = None, anchor_rows: np.ndarray | None = None,
                   anchor_weight: np.ndarray | None = None, progress=None) -> PhysicalResult:
    """Solve every frame of ``pos (F, M, 3)`` (m, NaN = missing; columns = ``markerset.names``).

    Args:
        skeleton, markerset: the calibrated body and where each marker sits on it.
        fps: capture rate of ``pos``.
        init: starting pose. With one frame, frame 0 starts there and every later frame from the
            previous equilibrium (pure physical tracking). With ``F`` frames (e.g. the kinematic
            solve), every frame starts from its own initial pose, moved by ``settings.carry``
            of the correction the frame before's equilibrium made to its own where both see
            the same markers and constraints; the resistive torques hold each frame near its
            own initial pose.
        spec: joint kinds and limits (default: ball joints, no tight limits).
        anchors: ``(F, K, 3)`` m, where constraint ``k`` pins its point (NaN = inactive), from
            ``plant_anchors`` or a scene's hand holds; ``anchor_rows``: ``(K,)`` the marker
            (landmark) row of ``markerset`` that each constraint pins; ``anchor_weight``:
            ``(F, K)`` each spring's share of ``plant_stiffness`` (default: ``plant_weights``
            of the anchors' activity, ramped over ``settings.plant_ramp``). Give it when
            ``anchors`` are a slice of a longer take, so intervals cut at the slice's ends do
            not ramp there.
        progress: called as ``progress(frames_done)`` now and then.
    """
    pos = np.asarray(pos, dtype=float)
    F, M = pos.shape[:2]
    if pos.ndim != 3 or pos.shape != (F, len(markerset), 3):
        raise ShapeError(f"marker positions {pos.shape} do not fit a {len(markerset)}-marker set")
    if np.any(markerset.body >= len(skeleton)):
        raise ShapeError("marker set refers to joints the skeleton does not have")
    if not init.skeleton.same_structure(skeleton) or init.n_frames not in (1, F):
        raise ShapeError(f"init must be a 1- or {F}-frame motion of the same skeleton")
    if anchors is not None and (anchor_rows is None or anchors.shape != (F, len(anchor_rows), 3)):
        raise ShapeError("anchors must be (F, K, 3) with one anchor_rows entry per constraint")
    s = settings
    if anchors is not None:
        anchor_weight = np.asarray(anchor_weights(anchors, s, fps) if anchor_weight is None
                                   else anchor_weight, dtype=float)
        if anchor_weight.shape != anchors.shape[:2]:
            raise ShapeError(f"anchor_weight must be (F, K) = {anchors.shape[:2]}, got "
                             f"{anchor_weight.shape}")
        if not np.all((anchor_weight >= 0) & (anchor_weight <= 1)):     # (NaN fails too)
            raise ShapeError("anchor_weight must hold fractions 0..1 (each spring's share of "
                             "plant_stiffness)")
    present = ~np.isnan(pos).any(axis=-1)
    # (F,) frames that start from the frame before's correction: those seeing the same
    # markers, and held by the same constraints, as the one before
    carried = np.zeros(F, bool)
    if init.n_frames == F and s.carry > 0:
        carried[1:] = (present[1:] == present[:-1]).all(axis=1)
        if anchors is not None:
            held = ~np.isnan(anchors[..., 0])
            carried[1:] &= (held[1:] == held[:-1]).all(axis=1)
    k_all = s.stiffness * markerset.weight
    out_root = np.empty((F, 3))
    out_lrot = np.empty((F, len(skeleton), 4))
    residual = np.full((F, M), np.nan)
    clipped = np.zeros((F, M), bool)
    used = np.zeros(F, int)
    limit_hit = np.zeros((F, len(skeleton)), bool)
    K = 0 if anchors is None else anchors.shape[1]
    cpoints = np.full((F, K, 3), np.nan)
    with PhysicsBody(skeleton, spec, gravity=0.0, timestep=s.timestep,
                     hinge_as_ball=True) as body:
        jb = np.array(body.ball, int)
        js = body.spec
        is_hinge = np.array([js.kind[j] == "hinge" for j in jb], bool)
        lim = np.nan_to_num(js.limits[jb], nan=np.pi) if len(jb) else np.zeros((0, 2))
        lim = np.where(np.isfinite(lim), lim, np.pi)
        axis_b = np.nan_to_num(js.axis[jb]) if len(jb) else np.zeros((0, 3))
        twist_b = js.twist_axis[jb] if len(jb) else np.zeros((0, 3))
        mid_b = js.twist_mid[jb] if len(jb) else np.zeros(0)
        body.set_pose(init.root_pos[0], init.lrot[0])
        k_before = None
        k_rot = float(np.median(k_all)) * 0.1 ** 2          # one spring at 10 cm, N·m/rad
        kp, kh, kl = s.resist * k_rot, s.hinge_stiffness * k_rot, s.limit_stiffness * k_rot
        for f in range(F):
            # this frame's constraint springs: the active anchors, their marker rows, N/m each
            if anchors is None:
                cons, crow, kc = [], np.zeros(0, int), np.zeros((0, 1))
            else:
                cons = np.flatnonzero(~np.isnan(anchors[f, :, 0]))
                crow = anchor_rows[cons]
                kc = s.plant_stiffness * anchor_weight[f, cons, None]
            # The preconditioning masses follow the springs that pull this frame: the marker
            # springs seen, plus constraint springs (much stiffer) on their points.
            k_now = np.where(present[f], k_all, 0.0)
            np.add.at(k_now, crow, kc[:, 0])
            if k_before is None or np.any(k_now != k_before):
                k_before = k_now
                mass, inertia = _marker_mass_properties(
                    skeleton, markerset, k_now, s.timestep, s.mass_floor, float(np.median(k_all)))
                # Joint torque stiffness acts on the child segment: precondition for it too.
                inertia[jb] += (kp + np.where(is_hinge, kh, 0.0) + kl) * s.timestep ** 2
                body.set_mass_properties(mass, inertia)
            if init.n_frames == F and f > 0:
                if carried[f]:
                    # The same springs pull as in the frame before, so its equilibrium's
                    # offset from its initial pose fits this frame too: a stiff plant spring
                    # pulls a planted foot from the kinematic pose: cmu/01_01's steadily
                    # planted frames took 7.7 sub-steps a frame from there, 4.4 from here, and
                    # end nearer the equilibrium (the sub-steps stop once the landmarks barely
                    # move, not at it).
                    corr = quat.mul(quat.conj(init.lrot[f - 1]), out_lrot[f - 1])
                    body.set_pose(
                        init.root_pos[f] + s.carry * (out_root[f - 1] - init.root_pos[f - 1]),
                        quat.mul(init.lrot[f], quat.slerp(quat.identity(corr.shape[:1]), corr,
                                                          s.carry)))
                else:
                    body.set_pose(init.root_pos[f], init.lrot[f])
            elif f >= 2 and s.predict:
                # Warm start at constant velocity from the last two equilibria: markers move
                # smoothly, so this lands near the new equilibrium and saves sub-steps.
                body.set_pose(2.0 * out_root[f - 1] - out_root[f - 2],
                              quat.mul(out_lrot[f - 1],
                                       quat.mul(quat.conj(out_lrot[f - 2]), out_lrot[f - 1])))
            # Resistive torques pull toward the initial pose (or the pose predicted from the
            # equilibria before).
            if init.n_frames == F:
                ball_target = init.lrot[f, body.ball]
            else:
                ball_target = body.get_pose()[1][body.ball]
            idx = np.flatnonzero(present[f])
            target, joints, k = pos[f, idx], markerset.body[idx], k_all[idx, None]
            prev = None
            for sub in range(s.substeps):
                gpos, grot = body.joint_frames()
                lm = landmarks(gpos, grot, markerset)
                if prev is not None and sub >= s.min_substeps and \
                        np.max(np.abs(lm - prev)) < s.tol:
                    break
                prev = lm
                d = target - lm[idx]
                dist = np.sqrt(np.sum(d * d, axis=-1, keepdims=True))
                c = s.outlier_distance
                # Linear up to c, then decaying as c^2/dist: bounded, and redescending so a
                # far-off ghost hardly pulls at all.
                force = k * d * np.minimum(1.0, (c / np.maximum(dist, 1e-12)) ** 2)
                body.apply_forces(joints, lm[idx], force)
                if len(cons):
                    fc = kc * (anchors[f, cons] - lm[crow])
                    body.apply_forces(markerset.body[crow], lm[crow], fc)
                body.step()
                q = body.scale_velocities(s.keep)
                if len(jb):
                    body.set_joint_torques(joint_torques(q, ball_target, is_hinge, axis_b, lim,
                                                         twist_b, kp, kh, kl, s.ball_limits,
                                                         mid_b))
            else:  # ran out of sub-steps: measure the pose the last step left
                gpos, grot = body.joint_frames()
                lm = landmarks(gpos, grot, markerset)
            used[f] = sub + 1
            out_root[f], out_lrot[f] = body.get_pose()
            if len(jb):
                limit_hit[f, jb] = past_limits(out_lrot[f, jb], is_hinge, axis_b, lim, twist_b,
                                               twist_mid=mid_b)
            d = np.linalg.norm(pos[f] - lm, axis=-1)
            residual[f, idx] = d[idx]
            clipped[f, idx] = d[idx] > s.outlier_distance
            if K:
                cpoints[f] = lm[anchor_rows]
            if progress is not None and (f % 50 == 0 or f == F - 1):
                progress(f + 1)
    out_root.setflags(write=False)       # read-only: the Motion takes them without a copy
    out_lrot.setflags(write=False)
    motion = Motion(skeleton, fps, out_root, out_lrot, {"solver": "physical"})
    return PhysicalResult(motion, residual, used, clipped, cpoints, limit_hit)
