"""Three-point avatar: a full body from a head-mounted display and two hand controllers.

Per frame, causal (only samples up to the current time are used), step by step as the
controller:

1. **Body motion from the three points.** ``HeadTrajectory`` turns the head's recent horizontal
   motion into a desired velocity and facing: the direction of the head's velocity while walking
   forward, the head's mean heading while standing or side-stepping (so looking around does not
   turn the body). The controller's simulation object is put where the user is (the tracked
   head on the floor minus the database's typical head offset), so the spring-predicted
   trajectory (thesis Eq. 3.27-3.28) starts at the user and never drifts away. The search
   query is the trajectory (half weight: a head's next second is hard to predict) plus the
   *three-point features* (``point_features``): head height, velocity and tilt, both wrists
   relative to the head and their velocities, all in the tracked head's yaw frame, so they do
   not depend on where the avatar believes the body faces. Their arm swing and head sway tell
   the gait phase; the earlier query (trajectory plus the head's velocity in the character's
   frame) left 3 of the 15 ``--offset 0`` held-out clips stepping about half a cycle out of
   phase (lower-body error 0.19-0.35 m). The search runs every 5 frames; the pose is
   inertialized; the first frame is the one nearest the track's first sample.
   **Facing alignment**: the character's facing is then turned (halflife ``align_halflife``)
   toward the facing that puts the shown pose's head yaw on the tracked head's, as long as that
   facing agrees with the head's motion (``align_fade``); a user walking one way while looking
   another keeps facing the way they walk.
2. **Root offset.** The whole body is moved so its head is exactly at the tracked head. The legs
   absorb the vertical part (the feet stay at the animation's height, two-bone IK) and a foot in
   contact stays where it touched down (a causal foot lock that eases out after lift-off).
3. **Arms.** Analytic two-bone IK from the upper arm to the wrist puts each wrist on its
   controller (elbow pole below, a little behind and outward of the shoulder); the hands take
   the controllers' orientations and the head the HMD's.

The tracked hand point is the wrist joint (the end of the upper-arm/forearm chain). Device
frames follow ``physmocap.tracking``: x forward, y left, z up, identity in the skeleton's rest
pose stood upright (``rest_frame``).

Measured (``python benchmarks/avatar_eval.py --offset 5``, 14 held-out Bandai-Namco clips):
mean per-joint error 0.024 m (lower body 0.044 m) against the naive baseline's 0.040 m
(0.081 m), jitter 1015 against 9769 m/s^3 (the truth's: 907); before the three-point features,
the alignment and the start frame: 0.051 m, jitter 1018. With the controllers held still
(``--still-hands``: no arm swing to read) the lower body is 0.054 m against the naive 0.081 m.

``naive_avatar`` is the baseline the evaluation compares with: every frame, the database pose
nearest by the head alone (height, velocity in the head's frame, tilt), facing from the head's
yaw, no trajectory and no transitions; placement, legs and arms exactly as above.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from .. import quat
from ..errors import (SettingsError, ShapeError, UnknownNameError, bad_number, known_list,
                      require_counts, require_flags, require_fractions, require_numbers,
                      require_type)
from ..ik import two_bone_ik_local
from ..motion import Motion
from ..skeleton import Skeleton
from ..tracking import ThreePointTrack
from .controller import Controller, ControllerSettings, output_skeleton
from .database import PoseDatabase, build_database, find_joint, resample, resampled_length
from .features import (ExtraFeature, FeatureDatabase, FeatureSpec, compute_features,
                       valid_mask)
from .metrics import foot_skate_mm, jitter
from .retarget import HUMANOID_NAME_MAP, retarget, root_scale, scale_points
from .search import SearchIndex
from .trajectory import HeadTrajectory, facing_from_yaw, yaw_of

__all__ = ["find_tracked_joints", "rest_frame", "extract_track", "AvatarSettings", "Avatar",
           "AvatarRecord", "run_avatar", "avatar_on_body", "controllers_on_body", "naive_avatar",
           "lower_body_joints", "avatar_report", "HEAD_NAMES", "HAND_NAMES", "avatar_feature_spec",
           "avatar_features", "truth_joints", "check_truth", "truth_errors",
           "truth_figures", "hand_errors"]

#: Candidate names (after ``HUMANOID_NAME_MAP``) of the head and of the wrists, tried in order.
HEAD_NAMES = ("Head", "torso_head", "head_joint", "HeadTop")
HAND_NAMES = {
    "left": ("LeftHand", "LeftWrist", "lWrist", "l_wrist", "Wrist_L", "LeftHandWrist", "lhand"),
    "right": ("RightHand", "RightWrist", "rWrist", "r_wrist", "Wrist_R", "RightHandWrist",
              "rhand"),
}
_X, _Z = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])


# --------------------------------------------------------------------------------------------
# tracked joints and device frames

def _pick(skeleton: Skeleton, candidates, what: str) -> int:
    canon = [HUMANOID_NAME_MAP.get(n, n) for n in skeleton.names]
    for c in candidates:
        for names in (canon, list(skeleton.names)):
            if c in names:
                return names.index(c)
    for c in candidates:                       # then case-insensitive
        for names in (canon, list(skeleton.names)):
            low = [n.lower() for n in names]
            if c.lower() in low:
                return low.index(c.lower())
    raise UnknownNameError(f"no {what} joint found (tried {', '.join(candidates)}); "
                           f"known: {known_list(skeleton.names, 40)}")


def find_tracked_joints(skeleton: Skeleton) -> tuple[int, int, int]:
    """Indices of the head, left wrist and right wrist (CMU, Bandai-Namco, games105 and
    HumanBodyBones names through ``retarget.HUMANOID_NAME_MAP``); ``UnknownNameError`` if one
    is missing or a wrist lacks an upper-arm/forearm chain above it."""
    h = _pick(skeleton, HEAD_NAMES, "head")
    hands = tuple(_pick(skeleton, HAND_NAMES[s], f"{s} hand (wrist)") for s in ("left", "right"))
    for side, j in zip(("left", "right"), hands):
        p = skeleton.parents[j]
        if p <= 0 or skeleton.parents[p] <= 0:
            raise UnknownNameError(f"the {side} hand {skeleton.names[j]!r} needs an upper arm and "
                                   f"a forearm above it (two-bone chain)")
    if len({h, *hands}) != 3:
        raise UnknownNameError("head and hands must be three different joints")
    return h, hands[0], hands[1]


def rest_frame(skeleton: Skeleton, joints: tuple[int, int, int] | None = None) -> np.ndarray:
    """The body frame of the skeleton's rest pose (every local rotation identity) as a rotation
    ``(4,)`` xyzw: its columns are the rest forward, left (left wrist minus right wrist) and up
    (root to head) directions. A joint's device orientation is ``grot[j] · rest_frame``: it is
    the identity when the rest pose stands upright facing +X."""
    h, lh, rh = find_tracked_joints(skeleton) if joints is None else joints
    g = skeleton.rest_positions()
    up = g[h] - g[0]
    left = g[lh] - g[rh]
    if np.linalg.norm(up) < 1e-6 or np.linalg.norm(left) < 1e-6:
        raise ShapeError("rest_frame: the rest pose has the head on the root or both hands "
                         "at one place; cannot tell up and left")
    up = up / np.linalg.norm(up)
    left = left - np.dot(left, up) * up
    if np.linalg.norm(left) < 1e-6:
        raise ShapeError("rest_frame: the hands lie above one another in the rest pose")
    left = left / np.linalg.norm(left)
    fwd = np.cross(left, up)
    return quat.normalize(quat.from_matrix(np.column_stack([fwd, left, up])))


def extract_track(motion: Motion) -> ThreePointTrack:
    """Head and wrists of ``motion`` as a tracking recording (times from 0 at the motion's
    rate), e.g. to use a held-out clip as ground truth."""
    require_type("extract_track", motion, Motion, "read_bvh(PATH)")
    joints = find_tracked_joints(motion.skeleton)
    if motion.n_frames < 2:
        raise ShapeError(f"the clip has {motion.n_frames} frame(s); a tracking recording needs "
                         f"at least 2", motion.meta.get("path"))
    R = rest_frame(motion.skeleton, joints)
    idx = list(joints)
    return ThreePointTrack(np.arange(motion.n_frames) / motion.fps, motion.gpos[:, idx],
                           quat.mul(motion.grot[:, idx], R))


# --------------------------------------------------------------------------------------------
# settings, record, per-frame FK

@dataclass(frozen=True)
class AvatarSettings:
    """Avatar constants (s, m, frames).

    Attributes:
        controller: the motion-matching controller's settings.
        window, stand_speed, turn_speeds: ``HeadTrajectory``'s (velocity window s, standing dead
            band m/s, speeds over which the facing turns from head heading to walking direction).
        sim_pull: fraction (0..1) of the way the simulation object is moved to the user's
            position each frame (1: it is the user).
        foot_lock: keep feet in contact where they touched down.
        lock_blend: frames over which a released foot eases back to the animation.
        max_slide: m; a lock further than this from the animated foot slides toward it at
            ``slide_speed`` m/s (no jump); a lock out of the leg's reach is dragged along.
        pole: ``(forward, outward, up)`` elbow pole direction in the body frame, per arm.
        clavicle_deg: degrees a clavicle may turn so its arm reaches a far controller (0: off).
        head_span: frames of the backward difference for the naive baseline's head velocity.
        align_halflife: s; the character's facing is turned toward the one that puts the shown
            pose's head yaw on the tracked head's yaw, by the part of the difference that
            decays in this halflife each frame (0: off). The controller still clamps it within
            ``clamp_angle`` of the facing from the head's motion.
        align_fade: ``(lo, hi)`` degrees; the alignment is full while the facing it asks for
            lies within ``lo`` of the simulation's facing (from the head's motion) and fades
            to none at ``hi`` (a user walking one way while looking another keeps facing the
            way they walk).
    """

    controller: ControllerSettings = ControllerSettings(search_every=5, sim_halflife=0.15,
                                                       sim_rot_halflife=0.15)
    window: float = 0.3
    stand_speed: float = 0.1
    turn_speeds: tuple = (0.2, 0.6)
    sim_pull: float = 1.0
    foot_lock: bool = True
    lock_blend: int = 6
    max_slide: float = 0.25
    slide_speed: float = 0.5
    pole: tuple = (-0.3, 0.6, -1.0)
    clavicle_deg: float = 30.0
    head_span: int = 6
    align_halflife: float = 0.3
    align_fade: tuple = (30.0, 50.0)

    def __post_init__(self):
        # one clear line for a bad value when the settings are made, not frames into a run
        if not isinstance(self.controller, ControllerSettings):
            raise SettingsError(f"AvatarSettings: controller must be ControllerSettings, got "
                                f"{type(self.controller).__name__}")
        require_numbers("AvatarSettings", ("window",), **{n: getattr(self, n) for n in (
            "window", "stand_speed", "max_slide", "slide_speed", "clavicle_deg",
            "align_halflife")})
        require_fractions("AvatarSettings", sim_pull=self.sim_pull)
        require_counts("AvatarSettings", ("lock_blend",), lock_blend=self.lock_blend,
                       head_span=self.head_span)                            # frames
        require_flags("AvatarSettings", foot_lock=self.foot_lock)
        for name in ("turn_speeds", "align_fade"):
            v = getattr(self, name)
            if not (isinstance(v, (tuple, list)) and len(v) == 2
                    and not any(bad_number(x) for x in v) and v[0] < v[1]):
                raise SettingsError(f"AvatarSettings: {name} must be (lo, hi) with "
                                    f"0 <= lo < hi, got {v!r}")
        pole = np.asarray(self.pole, dtype=float) if isinstance(self.pole, (tuple, list)) \
            else np.zeros(0)
        if pole.shape != (3,) or not np.all(np.isfinite(pole)) or not np.any(pole):
            raise SettingsError(f"AvatarSettings: pole must be a non-zero (forward, outward, "
                                f"up) direction, got {self.pole!r}")


@dataclass
class AvatarRecord:
    """Per frame (lists of length F): what the avatar did, for reports."""

    contacts: list = field(default_factory=list)        # (2,) bool, the shown pose's contacts
    frame: list = field(default_factory=list)           # matched database frame
    hand_target: list = field(default_factory=list)     # (2, 3) m controller positions
    root_offset: list = field(default_factory=list)     # (3,) m body moved to meet the head
    foot_target: list = field(default_factory=list)     # (2, 3) m contact joints' targets
    seconds: list = field(default_factory=list)         # wall time of the whole frame
    transitions: int = 0


def _fk(parents, offsets, lrot, root_pos):
    """One frame's FK with 3x3 matrices (a plain loop over ~20 joints of tiny products is
    several times faster than per-joint quaternion calls): ``gpos (J, 3)``, ``grot (J, 4)``."""
    L = quat.to_matrix(lrot)
    J = len(parents)
    G, gpos = np.empty((J, 3, 3)), np.empty((J, 3))
    G[0], gpos[0] = L[0], root_pos
    for j in range(1, J):
        p = parents[j]
        G[j] = G[p] @ L[j]
        gpos[j] = gpos[p] + G[p] @ offsets[j]
    return gpos, quat.from_matrix(G)


def _smoothstep(x):
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


class _Placer:
    """Steps 2-3 of the module docstring on the database's output skeleton (stateful: the
    foot locks)."""

    def __init__(self, db: PoseDatabase, settings: AvatarSettings):
        self.s = settings
        self.fps = db.fps
        self.sk = output_skeleton(db)
        self.parents = np.array(self.sk.parents)
        self.offsets = np.array(self.sk.offsets)
        self.head, lh, rh = find_tracked_joints(self.sk)
        self.R = rest_frame(self.sk, (self.head, lh, rh))
        self.hands = np.array([lh, rh])
        legs = []
        for name in db.contact_joints:
            j = self.sk.index(name)
            f = int(self.parents[j]) if "toe" in name.lower() else j
            k = int(self.parents[f])
            legs.append((int(self.parents[k]), k, f))
        arms = [(int(self.parents[self.parents[c]]), int(self.parents[c]), int(c))
                for c in (lh, rh)]
        # chains 0, 1: left and right leg; 2, 3: left and right arm (one batched IK call)
        self.A, self.B, self.C = (np.array([ch[i] for ch in legs + arms]) for i in range(3))
        self.feet = self.C[:2]
        self.toes = np.array([self.sk.index(n) for n in db.contact_joints])
        # a clavicle that carries only its arm may help it reach (see ``_clavicles``)
        self.clav = [int(self.parents[a]) if self.parents[a] > 0 and
                     self.sk.children(int(self.parents[a])) == [int(a)] else -1
                     for a in self.A[2:]]
        self.arm_len = (np.linalg.norm(self.offsets[self.B[2:]], axis=-1)
                        + np.linalg.norm(self.offsets[self.C[2:]], axis=-1))
        self.lock = [None, None]        # locked foot position while in contact
        self.last = [None, None]        # the foot target shown last frame
        self.leg_len = (np.linalg.norm(self.offsets[self.B[:2]], axis=-1)
                        + np.linalg.norm(self.offsets[self.C[:2]], axis=-1))
        self.ease = [0.0, 0.0]          # 1 -> 0 after lift-off
        self.ease_from = [None, None]

    def place(self, root_pos, root_rot, hips_lpos, lrot, pos, rot, contacts, rec: AvatarRecord):
        """Body from a database pose (``lrot (J, 4)``, joint 0 = hips relative to the character
        root ``root_pos (3,)``/``root_rot (4,)`` at ``hips_lpos (3,)``) and tracked points
        ``pos (3, 3)``, ``rot (3, 4)``; returns the hips' world position and local rotations."""
        s = self.s
        lr = np.array(lrot)
        hips = root_pos + quat.rotate(root_rot, hips_lpos)
        lr[0] = quat.mul(root_rot, lrot[0])
        gpos, grot = _fk(self.parents, self.offsets, lr, hips)
        # root offset: the head meets the tracked head; the legs take up the vertical part
        off = pos[0] - gpos[self.head]
        toes_anim = gpos[self.toes] + np.array([off[0], off[1], 0.0])
        foot_vec = gpos[self.toes] - gpos[self.feet]     # kept: feet keep their world rotation
        hips = hips + off
        gpos = gpos + off
        if s.foot_lock:      # the contact joints (toes) are held; the ankles follow the foot
            for side in (0, 1):
                toes_anim[side] = self._lock(side, toes_anim[side], bool(contacts[side]),
                                             gpos[self.A[side]] + foot_vec[side])
        targets = np.concatenate([toes_anim - foot_vec, pos[1:]])
        self._clavicles(gpos, grot, lr, targets[2:])
        A, B, C = gpos[self.A], gpos[self.B], gpos[self.C]
        # poles: legs keep their current bend; elbows below, behind and outward (body frame)
        ac = (C[:2] - A[:2]) / np.linalg.norm(C[:2] - A[:2], axis=-1, keepdims=True)
        leg_pole = (B[:2] - A[:2]) - np.sum((B[:2] - A[:2]) * ac, -1, keepdims=True) * ac
        fwd, out, up = s.pole
        arm_pole = quat.rotate(root_rot, np.array([[fwd, out, up], [fwd, -out, up]]))
        # feet keep their world rotation; hands and head take the devices'
        g_end = np.concatenate([grot[self.feet], quat.mul(rot[1:], quat.conj(self.R))])
        lr[self.A], lr[self.B], lr[self.C] = two_bone_ik_local(
            A, B, C, targets, grot[self.parents[self.A]], grot[self.A], grot[self.B], g_end,
            np.concatenate([leg_pole, arm_pole]))
        lr[self.head] = quat.mul(quat.conj(grot[self.parents[self.head]]),
                                 quat.mul(rot[0], quat.conj(self.R)))
        rec.hand_target.append(np.array(pos[1:]))
        rec.foot_target.append(toes_anim.copy())
        rec.root_offset.append(off)
        rec.contacts.append(np.array(contacts, bool))
        return hips, quat.normalize(lr)

    def _clavicles(self, gpos, grot, lr, targets) -> None:
        """Turn a clavicle (at most ``settings.clavicle_deg``) just enough that its arm can
        reach a controller beyond the arm's length; updates ``gpos``, ``grot``, ``lr`` in place.
        Closed form: turning the shoulder point about the clavicle root toward the target by
        ``theta`` gives ``d^2 = |v|^2 + |w|^2 - 2 |v| |w| cos(phi - theta)``."""
        max_turn = np.radians(self.s.clavicle_deg)
        for side, k in enumerate(self.clav):
            a = self.A[2 + side]
            reach = self.arm_len[side] - 1e-3
            if k < 0 or max_turn <= 0 or np.linalg.norm(targets[side] - gpos[a]) <= reach:
                continue
            P = gpos[k]
            v, w = gpos[a] - P, targets[side] - P
            nv, nw = np.linalg.norm(v), np.linalg.norm(w)
            axis = np.cross(v, w)
            if nv < 1e-6 or np.linalg.norm(axis) < 1e-9:
                continue
            phi = np.arccos(np.clip(np.dot(v, w) / (nv * nw), -1.0, 1.0))
            c = (nv * nv + nw * nw - reach * reach) / (2.0 * nv * nw)
            theta = phi if c >= 1.0 else phi - np.arccos(max(c, -1.0))
            theta = float(np.clip(theta, 0.0, max_turn))
            Q = quat.from_axis_angle(axis / np.linalg.norm(axis), theta)
            grot[k] = quat.mul(Q, grot[k])
            lr[k] = quat.mul(quat.conj(grot[self.parents[k]]), grot[k])
            for j in (a, self.B[2 + side], self.C[2 + side]):
                gpos[j] = P + quat.rotate(Q, gpos[j] - P)
                grot[j] = quat.mul(Q, grot[j])

    def _lock(self, side: int, target: np.ndarray, contact: bool, hip: np.ndarray
              ) -> np.ndarray:
        """Where the contact joint (toe) goes this frame: held while in contact (from where it
        was shown last, so touch-down does not jump), sliding at a bounded speed when the lock is
        too far from the animation, dragged along when the leg cannot reach it, eased back to
        the animation after lift-off. ``target``: its animated position; ``hip``: the leg's
        root plus the foot vector (so ``lock - hip`` is the ankle's reach)."""
        s = self.s
        last = self.last[side]
        if contact:
            lock = self.lock[side]
            if lock is None:
                near = last is not None and np.linalg.norm(last - target) < s.max_slide
                lock = (last if near else target).copy()
            gap = target - lock
            if np.linalg.norm(gap) > s.max_slide:
                step = s.slide_speed / self.fps
                lock = lock + gap * min(1.0, step / max(np.linalg.norm(gap), 1e-12))
            # out of the leg's reach: dragged horizontally just enough to be reachable
            r = 0.995 * self.leg_len[side]
            rel = lock - hip
            if np.linalg.norm(rel) > r:
                horiz = np.hypot(rel[0], rel[1])
                allowed = np.sqrt(max(r * r - rel[2] * rel[2], 0.0))
                lock = lock.copy()
                lock[:2] = hip[:2] + rel[:2] * (allowed / max(horiz, 1e-12))
            self.lock[side] = out = lock
        else:
            if self.lock[side] is not None:            # lift-off: ease back to the animation
                self.ease_from[side], self.lock[side] = self.lock[side], None
                self.ease[side] = 1.0
            out = target
            if self.ease[side] > 0:
                self.ease[side] = max(self.ease[side] - 1.0 / max(s.lock_blend, 1), 0.0)
                w = _smoothstep(self.ease[side])
                out = target + w * (self.ease_from[side] - target)
        self.last[side] = out.copy()
        return out


def _rel_track(track: ThreePointTrack) -> ThreePointTrack:
    """The same track with times starting at 0."""
    return ThreePointTrack(track.times - track.times[0], track.pos, track.rot)


def _typical_head_offset(db: PoseDatabase, head: int) -> np.ndarray:
    """Median head position ``(3,)`` m in the character (simulation bone) frame."""
    g = db.global_positions()[:, head]
    rel = quat.inv_rotate(db.lrot[:, 0], g - db.lpos[:, 0])
    return np.median(rel, axis=0)


# --------------------------------------------------------------------------------------------
# the avatar

#: Feature groups of the three tracked points (``point_features``) and their dimensions.
POINT_GROUPS = {"tp_head": 6, "tp_hands": 6, "tp_hands_vel": 6}
#: s, the backward difference of the three points' velocities (causal, as live).
POINT_SPAN = 0.1
#: The avatar's built-in feature weights: the trajectory at half weight (``beta_r``), since a
#: head's future second is hard to predict (the spring prediction misses the held-out clips'
#: root 0.36 m on average one second ahead).
AVATAR_SPEC = FeatureSpec(beta_r=0.5)
#: Default weights of the ``POINT_GROUPS`` (chosen on the ``--offset 0`` and ``3`` splits of
#: ``benchmarks/avatar_eval.py``). The head dominates: hands at weight 2 were as accurate with
#: swinging arms but misled the gait when the controllers are held still (``--still-hands``,
#: offset 0: lower-body error 0.099 m, worse than the naive baseline's 0.080; now 0.052).
POINT_WEIGHTS = {"tp_head": 6.0, "tp_hands": 1.0, "tp_hands_vel": 1.0}


def avatar_feature_spec(db: PoseDatabase, head_weight: float = 4.0, frames=(0,),
                        base: FeatureSpec = FeatureSpec()) -> FeatureSpec:
    """``base`` plus the head's velocity in character space now and at past ``frames`` (<= 0,
    database frames; group ``head_vel``): the live query fills it from the tracked head, so the
    search also matches the gait phase the head's bob and sway reveal. ``head_weight`` 0 leaves
    the group out."""
    require_numbers("avatar_feature_spec", head_weight=head_weight)   # -1 was "off", NaN a crash
    if head_weight <= 0:
        return base
    frames = tuple(int(k) for k in frames)
    if not frames or any(k > 0 for k in frames):
        raise ShapeError(f"avatar head features: frames must be <= 0 (the future of a live "
                         f"head is unknown), got {frames}")
    sk = output_skeleton(db)
    head = sk.names[find_tracked_joints(sk)[0]]
    return replace(base, extra=tuple(base.extra) + (
        ExtraFeature(head, "velocity", frames, float(head_weight), "head_vel"),))


def avatar_features(db: PoseDatabase, head_weight: float = 0.0, frames=(0,),
                    per_axis: bool = True, points: dict | None = POINT_WEIGHTS,
                    base: FeatureSpec = AVATAR_SPEC) -> FeatureDatabase:
    """``compute_features`` with ``avatar_feature_spec``. ``per_axis``: the head group is
    normalised per axis instead of by its mean spread (Holden's rule): the forward speed varies
    from standing to running by metres per second and would drown the few tenths of a metre
    per second of sideways sway and vertical bob that tell the left step from the right.
    ``points``: weights of the ``POINT_GROUPS`` (three-point features in the head's frame; a
    missing group or weight 0 leaves it out)."""
    feats = compute_features(db, avatar_feature_spec(db, head_weight, frames, base))
    if head_weight > 0 and per_axis:
        sl = feats.groups["head_vel"]
        raw = feats.denormalize(np.asarray(feats.X[:, sl], float), "head_vel")
        scale = np.array(feats.scale)
        scale[sl] = np.maximum(raw.std(axis=0), 1e-6) / float(head_weight)
        X = np.array(feats.X)
        X[:, sl] = (raw - feats.offset[sl]) / scale[sl]
        feats = replace(feats, X=X, scale=scale)
    if points:
        unknown = sorted(set(points) - set(POINT_GROUPS))
        if unknown:
            raise UnknownNameError(f"avatar point features: unknown group(s) "
                                   f"{', '.join(unknown)}; known: {', '.join(POINT_GROUPS)}")
        feats = _add_point_features(feats, db, points)
    return feats


def point_features(pos: np.ndarray, head_rot: np.ndarray, pos_back: np.ndarray,
                   dt_back: np.ndarray) -> np.ndarray:
    """Raw three-point features ``(F, 18)`` in the head's yaw frame (so they do not depend on
    where the avatar thinks the body faces): ``tp_head`` head height, head velocity (3), z of
    the head device's forward and left axes (tilt); ``tp_hands`` both wrists relative to the
    head (2 x 3); ``tp_hands_vel`` both wrists' world velocities (2 x 3).

    Args:
        pos: ``(F, 3, 3)`` m head, left and right wrist; head_rot: ``(F, 4)`` xyzw device.
        pos_back: ``(F, 3, 3)`` the same points ``dt_back (F,)`` s earlier (velocities are
            backward differences: a live head has no future).
    """
    pos, pos_back = np.asarray(pos, float), np.asarray(pos_back, float)
    yawq = facing_from_yaw(yaw_of(head_rot))[:, None]
    vel = (pos - pos_back) / np.maximum(np.asarray(dt_back, float), 1e-9)[:, None, None]
    vloc = quat.inv_rotate(yawq, vel)                                        # (F, 3, 3)
    hands = quat.inv_rotate(yawq, pos[:, 1:] - pos[:, :1])                  # (F, 2, 3)
    fz = quat.rotate(head_rot, _X)[:, 2]
    lz = quat.rotate(head_rot, np.array([0.0, 1.0, 0.0]))[:, 2]
    F = len(pos)
    return np.column_stack([pos[:, 0, 2], vloc[:, 0], fz, lz, hands.reshape(F, 6),
                            vloc[:, 1:].reshape(F, 6)])


def _database_points(db: PoseDatabase) -> np.ndarray:
    """``point_features`` of every database frame (backward differences over ``POINT_SPAN``,
    not crossing a clip's start, exactly as the live track is sampled)."""
    sk = output_skeleton(db)
    joints = find_tracked_joints(sk)
    idx = [j + 1 for j in joints]                    # database indices (after the sim bone)
    g = db.global_positions()[:, idx]
    dev = quat.mul(_global_rotation(db, idx[0]), rest_frame(sk, joints))
    span = max(int(round(POINT_SPAN * db.fps)), 1)
    i = np.arange(db.n_frames)
    starts = np.asarray(db.range_starts)
    clip_start = starts[np.searchsorted(starts, i, side="right") - 1]
    back = np.maximum(i - span, clip_start)
    return point_features(g, dev, g[back], np.maximum(i - back, 1) / db.fps)


def _add_point_features(feats: FeatureDatabase, db: PoseDatabase, weights: dict
                        ) -> FeatureDatabase:
    """``feats`` with the ``POINT_GROUPS`` appended, each dimension normalised by its own
    spread over the database divided by its group's weight (weight 0: left out)."""
    raw = _database_points(db)
    X, offset, scale = [np.asarray(feats.X)], [feats.offset], [feats.scale]
    wts, names, groups = [feats.weights], list(feats.names), dict(feats.groups)
    start, D = 0, feats.n_features
    for g, n in POINT_GROUPS.items():
        w = float(weights.get(g, 0.0))
        if w < 0 or not np.isfinite(w):
            raise ShapeError(f"avatar point feature weight {g}: must be finite and >= 0, got {w}")
        if w > 0:
            r = raw[:, start:start + n]
            mu, sd = r.mean(axis=0), np.maximum(r.std(axis=0), 1e-6) / w
            X.append(((r - mu) / sd).astype(np.float32))
            offset.append(mu)
            scale.append(sd)
            wts.append(np.full(n, w))
            names += [f"{g}.{k}" for k in range(n)]
            groups[g] = slice(D, D + n)
            D += n
        start += n
    return replace(feats, X=np.concatenate(X, axis=1), offset=np.concatenate(offset),
                   scale=np.concatenate(scale), weights=np.concatenate(wts), names=tuple(names),
                   groups=groups)


class _HeadController(Controller):
    """The controller with the live head velocity in the query (when the features have a
    ``head_vel`` group); ``head_vel`` ``(K, 3)`` m/s world, at the group's frames, is set by
    the avatar every frame."""

    head_vel: np.ndarray | None = None
    points: np.ndarray | None = None          # (18,) raw ``point_features`` of the live track

    def _query(self, traj_pos, traj_rot):
        q = super()._query(traj_pos, traj_rot)
        f = self.features
        if self.head_vel is not None and "head_vel" in f.groups:
            q[f.groups["head_vel"]] = f.normalize(
                quat.inv_rotate(self.root_rot, self.head_vel).ravel(), "head_vel")
        if self.points is not None:
            start = 0
            for g, n in POINT_GROUPS.items():
                if g in f.groups:
                    q[f.groups[g]] = f.normalize(self.points[start:start + n], g)
                start += n
        return q


class Avatar:
    """One three-point avatar driven by motion matching, stepped frame by frame.

    Args:
        db, features: pose and feature databases (``compute_features(db)``).
        track: the head and hands; output frame ``k`` is at ``track.times[0] + k / db.fps``.
        settings: ``AvatarSettings``; index: a prebuilt ``SearchIndex`` (optional).
    """

    def __init__(self, db: PoseDatabase, features: FeatureDatabase, track: ThreePointTrack,
                 settings: AvatarSettings = AvatarSettings(), index: SearchIndex | None = None):
        require_type("Avatar", track, ThreePointTrack, "read_tracking(PATH), extract_track")
        self.s = settings
        self.track = _rel_track(track)
        self.placer = _Placer(db, settings)
        self.skeleton = self.placer.sk
        self.source = HeadTrajectory(self.track.times, self.track.pos[:, 0], self.track.rot[:, 0],
                                     forward=(1.0, 0.0, 0.0), window=settings.window,
                                     stand_speed=settings.stand_speed,
                                     turn_speeds=settings.turn_speeds)
        self.head_offset = _typical_head_offset(db, self.placer.head + 1)
        yaw0 = self.source.heading(0.0)
        head = [e for e in features.spec.extra if e.name == "head_vel"]
        self.head_frames = np.array(head[0].frames if head else (), float)
        if np.any(self.head_frames > 0):
            raise ShapeError("avatar: the head_vel feature looks into the future")
        self.ctrl = _HeadController(db, features, self.source, settings.controller, index,
                                    start_frame=self._start_frame(db, features),
                                    start_pos=self._user(self.track.pos[0, 0], yaw0),
                                    start_yaw=yaw0)
        self.dt = 1.0 / db.fps
        chain, j = [], self.placer.head
        while j > 0:
            chain.append(j)
            j = int(self.placer.parents[j])
        self.head_chain = chain[::-1]                   # hips' children down to the head
        self.use_points = any(g in features.groups for g in POINT_GROUPS)
        self.span = max(int(round(POINT_SPAN * db.fps)), 1)
        self.t = 0.0
        self.record = AvatarRecord()

    def _start_frame(self, db: PoseDatabase, features: FeatureDatabase) -> int | None:
        """The searchable frame nearest to the track's first sample by the three-point
        features alone (``None`` without them: the controller's default), so the first second
        does not blend out of an arbitrary pose."""
        groups = [g for g in POINT_GROUPS if g in features.groups]
        if not groups:
            return None
        pos, rot = self.track.sample(0.0)
        raw = point_features(pos[None], rot[None, 0], pos[None], np.ones(1))[0]
        cols, q, start = [], [], 0
        for g, n in POINT_GROUPS.items():
            if g in features.groups:
                cols.append(np.arange(features.groups[g].start, features.groups[g].stop))
                q.append(features.normalize(raw[start:start + n], g))
            start += n
        cols = np.concatenate(cols)
        d = np.sum((np.asarray(features.X[:, cols], float) - np.concatenate(q)) ** 2, axis=1)
        d[~valid_mask(db, features.spec)] = np.inf
        return int(np.argmin(d))

    def _user(self, head: np.ndarray, yaw: float) -> np.ndarray:
        """Where the user's character root stands: the head on the floor minus the typical
        head offset turned by ``yaw``."""
        p = head - quat.rotate(facing_from_yaw(yaw), self.head_offset)
        p[2] = 0.0
        return p

    def _align(self, root_rot, lrot, head_dev):
        """The character facing ``(4,)`` turned toward the tracked head's yaw minus the shown
        pose's head yaw relative to the character (``settings.align_halflife``)."""
        g = lrot[0]
        for j in self.head_chain:
            g = quat.mul(g, lrot[j])
        rel = float(yaw_of(quat.mul(g, self.placer.R)))
        cur = float(yaw_of(root_rot))
        target = float(yaw_of(head_dev)) - rel
        gap = (target - cur + np.pi) % (2 * np.pi) - np.pi
        off = abs((target - float(yaw_of(self.ctrl.sim_rot)) + np.pi) % (2 * np.pi) - np.pi)
        lo, hi = np.radians(self.s.align_fade)
        k = (1.0 - 0.5 ** (self.dt / self.s.align_halflife)) * (
            1.0 - _smoothstep((off - lo) / max(hi - lo, 1e-9)))
        return facing_from_yaw(cur + k * gap)

    def step(self):
        """Advance one frame; returns ``(hips world position (3,), local rotations (J, 4))`` on
        ``self.skeleton`` (the hips' rotation is global)."""
        t0 = time.perf_counter()
        pos, rot = self.track.sample(self.t)
        c = self.ctrl
        # causal head velocity (the database's is a central difference: one frame of lag)
        if len(self.head_frames):
            t = self.t + self.head_frames * self.dt
            p = self.track.sample(np.concatenate([t, t - 2 * self.dt]))[0][:, 0]
            c.head_vel = (p[:len(t)] - p[len(t):]) / (2 * self.dt)
        if self.use_points:
            t_back = max(self.t - self.span * self.dt, 0.0)
            pb, _ = self.track.sample(t_back)
            c.points = point_features(pos[None], rot[None, 0], pb[None],
                                      np.array([max(self.t - t_back, self.dt)]))[0]
        user = self._user(pos[0], float(yaw_of(c.sim_rot)))
        c.sim_pos = c.sim_pos + self.s.sim_pull * (user - c.sim_pos)
        root_pos, root_rot, lpos, lrot = c.step()
        if self.s.align_halflife > 0:
            root_rot = c.root_rot = self._align(root_rot, lrot, rot[0])
        contacts = c.record.contacts[-1]
        hips, lr = self.placer.place(root_pos, root_rot, lpos[0], lrot, pos, rot, contacts,
                                     self.record)
        self.record.frame.append(c.frame)
        self.record.transitions = c.record.transitions
        self.t += self.dt
        self.record.seconds.append(time.perf_counter() - t0)
        return hips, lr


def run_avatar(avatar: Avatar, n_frames: int | None = None, progress=None
               ) -> tuple[Motion, AvatarRecord]:
    """Play the whole track (or ``n_frames``); the output ``Motion`` (hips root, world, Z up)."""
    if n_frames is not None:
        require_counts("run_avatar", n_frames=n_frames)
    n = int(np.floor(avatar.track.duration / avatar.dt + 1e-6)) + 1 if n_frames is None \
        else int(n_frames)
    sk = avatar.skeleton
    root, lrot = np.empty((n, 3)), np.empty((n, len(sk), 4))
    for i in range(n):
        root[i], lrot[i] = avatar.step()
        if progress is not None and (i % 60 == 0 or i == n - 1):
            progress("avatar", i + 1, n)
    return Motion(sk, 1.0 / avatar.dt, root, quat.normalize(lrot),
                  {"source": "three-point avatar", "up": avatar.ctrl.db.up}), avatar.record


def controllers_on_body(motion: Motion, record: AvatarRecord, skeleton: Skeleton) -> np.ndarray:
    """``(F, 2, 3)`` m: the left and right controllers of the avatar's ``motion`` carried into
    the world of its retargeting onto ``skeleton`` (``root_scale``, ``scale_points``: a
    similarity about the floor), one row per frame of ``motion``; NaN past the record."""
    ratio, floor = root_scale(motion, skeleton)
    out = np.full((motion.n_frames, 2, 3), np.nan)
    n = min(len(record.hand_target), motion.n_frames)
    if n:
        out[:n] = scale_points(np.asarray(record.hand_target[:n], float), ratio, floor)
    return out


def avatar_on_body(motion: Motion, record: AvatarRecord, skeleton: Skeleton) -> Motion:
    """The avatar's ``motion`` retargeted onto ``skeleton`` (another body: ``retarget``), its
    arms bent again so the wrists reach the controllers carried into the retargeted world
    (``controllers_on_body``): retargeting by joint angles alone keeps the capture's arm pose
    on the body's arm lengths, and the wrists miss the controllers (the humanoid's by 7.3 cm
    on average, ``benchmarks/avatar_eval.py --physics``). Each elbow keeps its current bend
    plane, each hand its world rotation; a controller out of reach is pointed at. Returns the
    ``Motion`` on ``skeleton`` (``F`` frames, as ``motion``)."""
    out = retarget(motion, skeleton)
    n = min(len(record.hand_target), out.n_frames)
    if n == 0:
        return out
    targets = controllers_on_body(motion, record, skeleton)[:n]                # (n, 2, 3)
    par = np.asarray(skeleton.parents)
    C = np.array(find_tracked_joints(skeleton)[1:])
    B = par[C]
    A = par[B]
    gpos, grot = out.gpos[:n], out.grot[:n]
    lrot = np.array(out.lrot)
    lrot[:n, A], lrot[:n, B], lrot[:n, C] = two_bone_ik_local(
        gpos[:, A], gpos[:, B], gpos[:, C], targets, grot[:, par[A]], grot[:, A], grot[:, B],
        grot[:, C])
    return Motion(skeleton, out.fps, out.root_pos, quat.normalize(lrot), dict(out.meta))


# --------------------------------------------------------------------------------------------
# the naive baseline

def _head_features(head_pos: np.ndarray, head_rot: np.ndarray, span: int, fps: float,
                   starts: np.ndarray) -> np.ndarray:
    """``(F, 6)``: head height, head velocity (backward difference over ``span`` frames, not
    crossing ``starts``) in the head's yaw frame, and the z of the device's forward and left
    axes (tilt). ``head_rot`` are device orientations."""
    F = len(head_pos)
    idx = np.arange(F)
    clip_start = starts[np.searchsorted(starts, idx, side="right") - 1]
    back = np.maximum(idx - span, clip_start)
    dt = np.maximum(idx - back, 1) / fps
    vel = (head_pos - head_pos[back]) / dt[:, None]
    yaw = yaw_of(head_rot)
    vloc = quat.inv_rotate(facing_from_yaw(yaw), vel)
    fz = quat.rotate(head_rot, _X)[:, 2]
    lz = quat.rotate(head_rot, np.array([0.0, 1.0, 0.0]))[:, 2]
    return np.column_stack([head_pos[:, 2], vloc, fz, lz])


def naive_avatar(db: PoseDatabase, track: ThreePointTrack,
                 settings: AvatarSettings = AvatarSettings()) -> tuple[Motion, AvatarRecord]:
    """The baseline: every frame the database pose nearest by the head alone (``_head_features``
    normalised by the database's spread, exact nearest neighbour), the body facing the head's
    yaw minus that pose's head-to-body yaw; no trajectory, no inertialization. Placement, legs,
    arms and head as ``Avatar``."""
    from scipy.spatial import cKDTree

    placer = _Placer(db, settings)
    h = placer.head + 1                              # database index (after the sim bone)
    g = db.global_positions()
    grot_head = _global_rotation(db, h)
    dev = quat.mul(grot_head, placer.R)
    span = settings.head_span
    X = _head_features(g[:, h], dev, span, db.fps, np.asarray(db.range_starts))
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd = np.where(sd > 1e-9, sd, 1.0)
    tree = cKDTree((X - mu) / sd)
    rel_yaw = yaw_of(dev) - yaw_of(db.lrot[:, 0])    # head yaw relative to the body's

    tr = _rel_track(track)
    n = int(np.floor(tr.duration * db.fps + 1e-6)) + 1
    pos, rot = tr.sample(np.arange(n) / db.fps)
    Q = _head_features(pos[:, 0], rot[:, 0], span, db.fps, np.array([0]))
    rec = AvatarRecord()
    t0 = time.perf_counter()
    _, best = tree.query((Q - mu) / sd)
    t_search = (time.perf_counter() - t0) / n
    sk = placer.sk
    root, lrot = np.empty((n, 3)), np.empty((n, len(sk), 4))
    for i in range(n):
        t1 = time.perf_counter()
        f = int(best[i])
        yaw = float(yaw_of(rot[i, 0])) - rel_yaw[f]
        root_pos = np.array([pos[i, 0, 0], pos[i, 0, 1], 0.0])
        root[i], lrot[i] = placer.place(root_pos, facing_from_yaw(yaw), db.lpos[f, 1],
                                        db.lrot[f, 1:], pos[i], rot[i], db.contacts[f], rec)
        rec.frame.append(f)
        rec.seconds.append(time.perf_counter() - t1 + t_search)
    rec.transitions = int(np.sum(np.diff(best) != 1))
    return Motion(sk, db.fps, root, quat.normalize(lrot), {"source": "naive head baseline", "up": db.up}), rec


def _global_rotation(db: PoseDatabase, j: int) -> np.ndarray:
    """``(N, 4)`` world rotation of database joint ``j`` (the simulation bone is joint 0)."""
    chain = []
    while j >= 0:
        chain.append(j)
        j = int(db.parents[j])
    g = np.array(db.lrot[:, chain[-1]])
    for k in reversed(chain[:-1]):
        g = quat.mul(g, db.lrot[:, k])
    return g


# --------------------------------------------------------------------------------------------
# figures

def lower_body_joints(skeleton: Skeleton, feet: tuple[str, str]) -> list[int]:
    """The root (hips) and both legs: every joint on the path from the root to a foot joint,
    and everything below those (toes), excluding the root's other subtrees."""
    keep = {0}
    for name in feet:
        j = skeleton.index(name)
        while j > 0:
            keep.add(j)
            j = int(skeleton.parents[j])
    changed = True
    while changed:
        changed = False
        for j in range(1, len(skeleton)):
            if j not in keep and int(skeleton.parents[j]) in keep - {0}:
                keep.add(j)
                changed = True
    return sorted(keep)


def _match_joints(out: Skeleton, truth: Skeleton) -> tuple[list[int], list[int]]:
    canon_t = {HUMANOID_NAME_MAP.get(n, n): i for i, n in enumerate(truth.names)}
    a, b = [], []
    for i, n in enumerate(out.names):
        if n in truth.names:
            a.append(i)
            b.append(truth.names.index(n))
        elif HUMANOID_NAME_MAP.get(n, n) in canon_t:
            a.append(i)
            b.append(canon_t[HUMANOID_NAME_MAP.get(n, n)])
    return a, b


def truth_joints(out: Skeleton, truth: Skeleton) -> tuple[list[int], list[int]]:
    """The avatar's joints ``out`` and ``truth``'s that match by name (or ``HUMANOID_NAME_MAP``
    name), as two index lists; ``UnknownNameError`` naming the truth's joints when none does.
    ``avatar`` checks it before the run (``output_skeleton(db)``), not after it."""
    a, b = _match_joints(out, truth)
    if not a:
        raise UnknownNameError("avatar_report: no joint of the output matches a truth joint; "
                               f"truth joints: {known_list(truth.names)}")
    return a, b


def check_truth(db: PoseDatabase, truth: Motion) -> None:
    """What ``avatar_report`` needs of ``truth``, checked before a run rather than after it: a
    joint matching the avatar's (``truth_joints``) and 2 frames at the database's rate."""
    truth_joints(output_skeleton(db), truth.skeleton)
    n = resampled_length(truth, db.fps)          # the report resamples it; here a count
    if n < 2:
        raise ShapeError(f"the truth has {n} frame(s) at the database's {db.fps:g} fps; "
                         f"avatar_report needs at least 2")


def hand_errors(motion: Motion, record: AvatarRecord) -> tuple[np.ndarray, np.ndarray]:
    """Per frame, each wrist's distance (m) from its controller ``(F, 2)`` (left, right), and
    whether the controller was reachable ``(F, 2)`` bool: within the arm's span (upper arm
    and forearm) of the upper-arm joint."""
    sk = motion.skeleton
    hands = list(find_tracked_joints(sk)[1:])
    upper = [int(sk.parents[sk.parents[c]]) for c in hands]
    g = motion.gpos
    hand_err = np.linalg.norm(g[:, hands] - np.array(record.hand_target), axis=-1)   # (F, 2)
    l1 = np.linalg.norm(sk.offsets[[int(sk.parents[c]) for c in hands]], axis=-1)
    l2 = np.linalg.norm(sk.offsets[hands], axis=-1)
    d = np.linalg.norm(np.array(record.hand_target) - g[:, upper], axis=-1)
    return hand_err, (d <= l1 + l2 - 1e-4) & (d >= np.abs(l1 - l2) + 1e-4)


def truth_errors(db: PoseDatabase, motion: Motion, truth: Motion,
                 world: tuple[float, float] | None = None
                 ) -> tuple[np.ndarray, np.ndarray, Motion]:
    """Per frame and joint, the avatar's distance (m) from the truth ``(n, K)``, over the K
    joints the two share (``truth_joints``) and the n frames both have at the avatar's rate;
    which of those joints are hips and legs ``(K,)`` bool; and the truth at that rate.
    ``world``: ``(ratio, floor)`` of a retargeting (``root_scale``) when ``motion`` is on
    another body (the simulated one): the truth is carried into that world first."""
    tr = resample(truth, motion.fps)
    n = min(tr.n_frames, motion.n_frames)
    a, b = truth_joints(motion.skeleton, tr.skeleton)
    want = tr.gpos[:n, b] if world is None else scale_points(tr.gpos[:n, b], *world)
    err = np.linalg.norm(motion.gpos[:n, a] - want, axis=-1)                  # (n, K)
    # (the simulated body's toes have their own names: found by role)
    feet = _truth_feet(motion.skeleton, tuple(db.contact_joints))
    low = set(lower_body_joints(motion.skeleton, feet))
    return err, np.array([i in low for i in a]), tr


def truth_figures(db: PoseDatabase, motion: Motion, truth: Motion,
                  until_s: float | None = None,
                  world: tuple[float, float] | None = None) -> dict:
    """``mpjpe_m``, ``lower_body_error_m``, ``upper_body_error_m`` (m, means over frames and
    joints), ``joints_compared``, ``frames_compared`` of ``motion`` against ``truth``
    (``truth_errors``, ``world`` as there); with ``until_s`` (a fall's start, s) the same over
    the frames up to it as ``until_first_fall``."""
    err, is_low, _ = truth_errors(db, motion, truth, world)
    out = _error_figures(err, is_low)
    if until_s is not None:
        out["until_first_fall"] = _error_figures(
            err[:max(1, int(np.floor(until_s * motion.fps)) + 1)], is_low)
    return out


def _error_figures(err: np.ndarray, is_low: np.ndarray) -> dict:
    """``truth_figures``' means of ``err (n, K)`` m, all joints, the ``is_low`` ones and the
    rest."""
    def mean(x):
        return round(float(x.mean()), 4) if x.size else None
    return {"mpjpe_m": mean(err), "lower_body_error_m": mean(err[:, is_low]),
            "upper_body_error_m": mean(err[:, ~is_low]), "joints_compared": len(is_low),
            "frames_compared": len(err)}


def avatar_report(db: PoseDatabase, motion: Motion, record: AvatarRecord,
                  truth: Motion | None = None) -> dict:
    """JSON figures of an avatar run (``record`` holds one entry per frame of ``motion``).

    With ``truth`` (a motion whose head and hands made the track, on the same time base,
    starting at the track's first sample): position errors in world space (after the root placement;
    joints matched by name, or by ``HUMANOID_NAME_MAP`` name), ``mpjpe_m`` over all matched
    joints, ``lower_body_error_m`` over hips and legs, the truth's own foot skate and jitter at
    the database rate. Always: ``hand_error_m`` (wrists to controllers), reachability, foot
    skate (contacts of the shown database frames), jitter, and ``latency_ms``: the wall time
    of each frame's update (sampling, search, blending, placement, IK), not a device's
    end-to-end latency."""
    feet = tuple(db.contact_joints)
    contacts = np.array(record.contacts)
    hand_err, reach = hand_errors(motion, record)
    ms = 1000.0 * np.array(record.seconds)
    rep = {
        "frames": motion.n_frames, "fps": motion.fps,
        "hand_error_m": round(float(hand_err.mean()), 5),
        "hand_error_reachable_max_m": round(float(hand_err[reach].max()), 6) if reach.any()
        else None,
        "hand_reachable_fraction": round(float(reach.mean()), 4),
        "foot_skate_mm": round(foot_skate_mm(motion, feet, contacts), 3),
        "jitter": round(jitter(motion), 2),
        "latency_ms": {"median": round(float(np.median(ms)), 3),
                       "p99": round(float(np.percentile(ms, 99)), 3)},
        "root_offset_m": round(float(np.linalg.norm(np.array(record.root_offset), axis=-1)
                                     .mean()), 4),
        "transitions": int(record.transitions),
    }
    if truth is not None:
        # (first: no joint shared, said so; then its feet)
        err, is_low, tr = truth_errors(db, motion, truth)
        rep.update(_error_figures(err, is_low))
        t_db = build_database([tr], names=["truth"], fps=motion.fps,
                              contact_joints=_truth_feet(tr.skeleton, feet))
        rep.update({
            "truth_foot_skate_mm": round(foot_skate_mm(tr, tuple(t_db.contact_joints),
                                                       np.array(t_db.contacts)), 3),
            "truth_jitter": round(jitter(tr), 2),
        })
    return rep


def _truth_feet(sk: Skeleton, feet: tuple[str, str]) -> tuple[str, str]:
    """The truth's contact joints: the output's names if present, else found by role."""
    if all(f in sk.names for f in feet):
        return feet
    from .database import TOE_NAMES
    return (find_joint(sk.names, TOE_NAMES["left"], "left toe"),
            find_joint(sk.names, TOE_NAMES["right"], "right toe"))
