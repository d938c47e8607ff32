"""Retargeting by rest pose (Eq. 3.20-3.23 of the thesis excerpt, in world space).

For every target joint mapped to a source joint, the target's global rotation is the source's
global rotation times a constant correction that turns the target's rest bone onto the source's
rest bone:  G_t(f) = G_s(f) · G_s(rest)^-1 · C,  with C taking the target's rest bone direction to
the source's. Unmapped target joints keep their rest rotation relative to their parent. Local
rotations follow from G_t(parent)^-1 · G_t(joint). The root trajectory is scaled by the ratio of
hip heights, so a shorter character takes shorter steps.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from .._arrays import step_speed
from ..conventions import up_to_zup_matrix
from ..errors import SettingsError, UnknownNameError, known_list, require_numbers, require_type
from ..motion import Motion
from ..skeleton import Skeleton, forward_kinematics

__all__ = ["retarget", "corrections", "reference_pose", "planted_feet", "planted_frames",
           "root_scale", "scale_points", "HUMANOID_NAME_MAP", "CMU_3DSMAX_NAME_MAP",
           "GAMES105_NAME_MAP", "default_name_map"]

#: Common source joint names -> HumanBodyBones (extend as needed).
HUMANOID_NAME_MAP = {
    # DeepMimic clips (physmocap.io.deepmimic already uses HumanBodyBones names)
    # CMU BVH
    "LeftUpLeg": "LeftUpperLeg", "LeftLeg": "LeftLowerLeg", "LeftToeBase": "LeftToes",
    "RightUpLeg": "RightUpperLeg", "RightLeg": "RightLowerLeg", "RightToeBase": "RightToes",
    "LeftArm": "LeftUpperArm", "LeftForeArm": "LeftLowerArm",
    "RightArm": "RightUpperArm", "RightForeArm": "RightLowerArm",
    "Spine1": "Chest",
}
# Bandai-Namco (``UpperLeg_L``) and similar ``<Bone>_L`` / ``<Bone>_R`` rigs.
HUMANOID_NAME_MAP.update({f"{bone}_{s}": f"{side}{bone}"
                          for bone in ("Shoulder", "UpperArm", "LowerArm", "Hand", "UpperLeg",
                                       "LowerLeg", "Foot", "Toes")
                          for s, side in (("L", "Left"), ("R", "Right"))})


#: CMU BVH as cgspeed's 3ds-Max conversion names it (``LeftCollar``, ``LeftShoulder``,
#: ``LeftElbow``, ``LeftWrist``; ``LeftHip``, ``LeftKnee``, ``LeftAnkle``, ``LeftToe``;
#: ``lowerback``, ``Chest``, ``Chest2``): its ``LeftShoulder`` is the shoulder joint, the upper
#: arm's, and ``LeftCollar`` the clavicle. By equal names alone its humerus drove the body's
#: clavicle and its legs and arms drove nothing (they stood still). Chosen by
#: ``default_name_map`` when the source has a ``*Collar`` joint.
CMU_3DSMAX_NAME_MAP = {"lowerback": "Spine", "Chest2": "Chest"}


def _sided(sides: tuple, pairs: tuple) -> dict[str, str]:
    """``{prefix + source: side + target}`` for each ``(prefix, side)`` of ``sides`` and each
    ``(source, target)`` of ``pairs``."""
    return {f"{p}{src}": f"{side}{dst}" for p, side in sides for src, dst in pairs}


#: a limb's joints as both rigs here name them (by the joint) and as the body does (by the bone)
_JOINT_LIMBS = (("Shoulder", "UpperArm"), ("Elbow", "LowerArm"), ("Wrist", "Hand"),
                ("Hip", "UpperLeg"), ("Knee", "LowerLeg"), ("Ankle", "Foot"))
CMU_3DSMAX_NAME_MAP.update(_sided((("Left", "Left"), ("Right", "Right")),
                                  (("Collar", "Shoulder"), ("Toe", "Toes")) + _JOINT_LIMBS))


#: The GAMES-105 course's rig (``RootJoint``, ``lHip`` / ``lKnee`` / ``lAnkle`` / ``lToeJoint``,
#: ``pelvis_lowerback``, ``lowerback_torso``, ``torso_head``, ``lTorso_Clavicle`` / ``lShoulder``
#: / ``lElbow`` / ``lWrist``): it has no neck joint, so ``torso_head`` turns the neck and the head
#: follows it. Without the map its clips could not be retargeted (no joint for the root).
GAMES105_NAME_MAP = {"RootJoint": "Hips", "pelvis_lowerback": "Spine",
                     "lowerback_torso": "Chest", "torso_head": "Neck"}
GAMES105_NAME_MAP.update(_sided((("l", "Left"), ("r", "Right")),
                               (("Torso_Clavicle", "Shoulder"), ("ToeJoint", "Toes"))
                               + _JOINT_LIMBS))


def default_name_map(source_names) -> dict[str, str]:
    """The name map for a source skeleton: ``CMU_3DSMAX_NAME_MAP`` for a rig with ``LeftCollar``
    or ``RightCollar`` (its ``LeftShoulder`` is the upper arm), ``GAMES105_NAME_MAP`` for one
    with ``RootJoint`` and ``lHip``, else ``HUMANOID_NAME_MAP``."""
    names = set(source_names)
    if {"LeftCollar", "RightCollar"} & names:
        return CMU_3DSMAX_NAME_MAP
    if {"RootJoint", "lHip"} <= names:
        return GAMES105_NAME_MAP
    return HUMANOID_NAME_MAP


#: Target joints aligned by the body's frame, not by their bone, in the reference pose.
_FLAT_IN_REFERENCE = ("LeftFoot", "RightFoot")


def _rest_bone_dirs(sk: Skeleton) -> np.ndarray:
    """``(J, 3)`` unit direction of each joint's segment at rest, zero where it has no length."""
    seg = sk.segment_vectors()
    n = np.linalg.norm(seg, axis=-1, keepdims=True)
    return np.where(n > 1e-6, seg / np.maximum(n, 1e-12), 0.0)


def _basis(d: np.ndarray, s: np.ndarray) -> np.ndarray | None:
    """``(3, 3)`` orthonormal columns ``[d, s_perp, d x s_perp]``; ``None`` if degenerate."""
    s = s - (s @ d) * d
    n = np.linalg.norm(s)
    if n < 1e-6:
        return None
    s = s / n
    return np.column_stack([d, s, np.cross(d, s)])


def _body_axes(gpos: np.ndarray, idx: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """Lateral (left hip -> right hip) and forward unit axes ``(3,), (3,)`` of a pose, from the
    joints ``idx`` names (HumanBodyBones -> index); ``None`` if a landmark is missing."""
    need = ("LeftUpperLeg", "RightUpperLeg", "Hips")
    if any(idx.get(n, -1) < 0 for n in need):
        return None
    top = next((idx[n] for n in ("Head", "Neck", "Chest", "Spine") if idx.get(n, -1) >= 0), -1)
    if top < 0:
        return None
    lat = gpos[idx["RightUpperLeg"]] - gpos[idx["LeftUpperLeg"]]
    up = gpos[top] - gpos[idx["Hips"]]
    fwd = np.cross(up, lat)
    if np.linalg.norm(lat) < 1e-6 or np.linalg.norm(fwd) < 1e-6:
        return None
    return lat / np.linalg.norm(lat), fwd / np.linalg.norm(fwd)


def _upright(gpos: np.ndarray, idx: dict) -> bool:
    """A usable reference pose: head above hips, both feet below the hips (Z up). ``True`` when
    a landmark is missing (nothing to tell by)."""
    names = ("Hips", "Head", "LeftFoot", "RightFoot")
    if min(idx.get(n, -1) for n in names) < 0:
        return True
    hips, head = gpos[idx["Hips"]], gpos[idx["Head"]]
    up = head - hips
    h = np.linalg.norm(up)
    return bool(up[2] > 0.7 * h and all(gpos[idx[n]][2] < hips[2] - 0.3 * h
                                        for n in ("LeftFoot", "RightFoot")))


def joint_map(source: Skeleton, target: Skeleton, name_map: dict[str, str] | None = None
              ) -> np.ndarray:
    """``(J_t,)`` int: the source joint driving each target joint (-1 = none), by ``name_map``
    (default ``default_name_map``) and, for the joints it leaves, by equal names. Raises if the
    target root has none."""
    mapped = {s: t for s, t in (name_map or default_name_map(source.names)).items()
              if s in source.names and t in target.names}
    claimed = set(mapped.values())
    # a name the map moves (CMU 3ds-Max's LeftShoulder) or a target it gives another source
    # joint (its Chest) is not also taken by equal names
    mapping = {n: n for n in source.names
               if n in target.names and n not in mapped and n not in claimed}
    mapping.update(mapped)
    if target.names[0] not in mapping.values():
        raise UnknownNameError(f"retarget: the target root {target.names[0]!r} has no source joint"
                               f"; source joints: {known_list(source.names)}")
    src_index = np.full(len(target), -1)
    for s_name, t_name in mapping.items():
        src_index[target.index(t_name)] = source.index(s_name)
    return src_index


def corrections(source: Skeleton, target: Skeleton, name_map: dict[str, str] | None = None,
                up: str = "z", source_rest: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per target joint: the source joint that drives it (``(J_t,)``, -1 = none) and the constant
    ``P (J_t, 4)`` with ``G_t(f) = G_s(f) · P`` (``P = G_s(ref)^-1 · C``, C turning the target's
    rest frame of the bone onto the source's in its reference pose, in the world).

    C aligns two directions per bone: the bone itself and the body's lateral axis (left hip to
    right hip; the forward axis for bones along it, such as T-pose arms). One direction alone
    leaves the roll about the bone to chance: the pelvis, chest and feet then face wherever the
    shortest rotation happens to turn them (90 degrees off on Bandai-Namco clips).

    ``up``: the source file's up axis (its rest pose has the root turned by that conversion);
    ``source_rest``: ``(J_s, 4)`` local rotations of the source's reference pose instead of the
    file's rest pose (needed when that is not a standing pose: see ``retarget``).
    """
    src_index = joint_map(source, target, name_map)
    if source_rest is None:
        # The file's rest pose (every rotation identity *in the file*) has, in our Z-up world,
        # the root turned by the up-axis conversion the reader applied.
        rest = quat.identity((1, len(source)))
        rest[0, 0] = quat.from_matrix(up_to_zup_matrix(up or "z"))
    else:
        rest = np.asarray(source_rest, float)[None]
    gp_s, g_rest = (x[0] for x in forward_kinematics(source, rest, np.zeros((1, 3))))
    d_s_world = quat.rotate(g_rest, _rest_bone_dirs(source))
    d_t = _rest_bone_dirs(target)
    gp_t = target.rest_positions()
    t_idx = {n: i for i, n in enumerate(target.names)}
    s_idx = {n: int(src_index[i]) for n, i in t_idx.items()}
    axes_t, axes_s = _body_axes(gp_t, t_idx), _body_axes(gp_s, s_idx)
    pre = quat.identity((len(target),))
    undefined = []
    for jt in range(len(target)):
        js = src_index[jt]
        if js < 0:
            continue
        if not (np.any(d_t[jt]) and np.any(d_s_world[js])):
            undefined.append((js, jt))
            continue
        c = None
        if axes_t is not None and axes_s is not None and target.names[jt] in _FLAT_IN_REFERENCE:
            # Feet: flat in the reference pose means flat on the target, whatever pitch the
            # source's ankle-to-toe bone has (Bandai-Namco's is 38 degrees, the template's 18): a
            # foot aligned by its bone stands on its toes, and a simulated body on a flat foot
            # then leans back by the difference.
            c = quat.from_matrix(_basis(axes_s[1], axes_s[0]) @ _basis(axes_t[1], axes_t[0]).T)
        elif axes_t is not None and axes_s is not None:
            k = 1 if abs(d_t[jt] @ axes_t[0]) > 0.8 else 0      # lateral, or forward if along it
            bt, bs = _basis(d_t[jt], axes_t[k]), _basis(d_s_world[js], axes_s[k])
            if bt is not None and bs is not None:
                c = quat.from_matrix(bs @ bt.T)
        if c is None:
            # Aligning in the source joint's own frame instead would add the source rest
            # frame's rotation (a Y-up file's 90 degrees) as a roll about the bone.
            c = quat.between(d_t[jt], d_s_world[js])
        pre[jt] = quat.mul(quat.conj(g_rest[js]), c)
    # A bone without a direction (a leaf whose end site has zero length, e.g. Bandai-Namco's
    # toes) takes its parent's alignment: it stays as it sits on its parent in both poses.
    for js, jt in sorted(undefined, key=lambda x: x[1]):
        pt = target.parents[jt]
        if pt >= 0 and src_index[pt] >= 0:
            pre[jt] = quat.mul(quat.mul(quat.conj(g_rest[js]), g_rest[src_index[pt]]), pre[pt])
        elif axes_t is not None and axes_s is not None:
            # a root with no single bone (CMU's hips branch three ways): the body's frame itself
            c = quat.from_matrix(_basis(axes_s[1], axes_s[0]) @ _basis(axes_t[1], axes_t[0]).T)
            pre[jt] = quat.mul(quat.conj(g_rest[js]), c)
        else:
            pre[jt] = quat.conj(g_rest[js])
    return src_index, pre


def reference_pose(skeleton: Skeleton, up: str, first_pose: np.ndarray, target: Skeleton,
                   name_map: dict[str, str] | None = None, motion: tuple | None = None
                   ) -> np.ndarray | None:
    """``(J_s, 4)`` local rotations of the source pose that ``corrections`` aligns: ``None``
    (the file's rest pose) when that is a standing pose, else ``first_pose`` (a frame of the
    motion; e.g. Bandai-Namco files, whose rest pose spreads the legs along the spine's axis).

    ``motion``: ``(lrot (F, J_s, 4), root_pos (F, 3) m, fps)`` of the source (Z up), or
    ``None``. Given, the feet and toes of ``first_pose`` take the orientation they have on
    average while planted in it (``planted_feet``): ``corrections`` makes the reference pose's
    feet flat on the target, and a first frame that stands one foot on its toes (Bandai-Namco
    ``walk-turn-left_001``: the right ankle-to-toe bone 80 degrees down, 40 while planted)
    would otherwise stand that foot on its heel, 40 degrees toes up, in every frame."""
    rest = quat.identity((1, len(skeleton)))
    rest[0, 0] = quat.from_matrix(up_to_zup_matrix(up or "z"))
    gp = forward_kinematics(skeleton, rest, np.zeros((1, 3)))[0][0]
    src_index = joint_map(skeleton, target, name_map)
    idx = {n: int(src_index[i]) for i, n in enumerate(target.names)}
    if _upright(gp, idx):
        return None
    pose = np.array(first_pose, float)
    if motion is not None:
        pose = planted_feet(skeleton, pose, *motion, idx)
    return pose


def _headings(gpos: np.ndarray, idx: dict) -> np.ndarray | None:
    """``(..., 4)`` the body's heading (a rotation about Z) from its hips' lateral axis in
    positions ``gpos (..., J, 3)``; ``None`` without both hips."""
    if min(idx.get(n, -1) for n in ("LeftUpperLeg", "RightUpperLeg")) < 0:
        return None
    lat = gpos[..., idx["LeftUpperLeg"], :] - gpos[..., idx["RightUpperLeg"], :]   # to the left
    yaw = np.arctan2(-lat[..., 0], lat[..., 1])                # forward = lat x Z
    return quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), yaw)


def planted_frames(x: np.ndarray, fps: float, height: float = 0.03, speed: float = 0.3
                   ) -> np.ndarray:
    """``(F,)`` bool: the frames where a foot joint at ``x (F, 3)`` m (Z up) is planted: within
    ``height`` m of its lowest (5th percentile) height and moving slower than ``speed`` m/s
    horizontally (the first frame takes the second's speed)."""
    require_numbers("planted_frames", ("fps",), fps=fps, height=height, speed=speed)
    x = np.asarray(x, float)
    sp = step_speed(np.diff(x[:, :2], axis=0), fps)
    return (x[:, 2] < np.percentile(x[:, 2], 5) + height) & (sp < speed)


def planted_feet(skeleton: Skeleton, pose: np.ndarray, lrot: np.ndarray, root_pos: np.ndarray,
                 fps: float, idx: dict, height: float = 0.03, speed: float = 0.3
                 ) -> np.ndarray:
    """``pose (J_s, 4)`` with each foot and toe joint (``idx``: HumanBodyBones -> source index)
    turned, relative to the pose's heading, to the mean orientation it has relative to the
    body's heading in the motion's planted frames (``lrot (F, J_s, 4)``, ``root_pos (F, 3)``
    m, ``fps``; Z up; ``planted_frames`` of the foot joint). A foot planted in no frame is
    left as is."""
    gp, gr = forward_kinematics(skeleton, np.asarray(lrot, float), np.asarray(root_pos, float))
    head = _headings(gp, idx)
    if head is None or len(gp) < 2:
        return pose
    pose = np.array(pose, float)
    for side in ("Left", "Right"):
        jf = idx.get(side + "Foot", -1)
        if jf < 0:
            continue
        planted = planted_frames(gp[:, jf], fps, height, speed)
        if not planted.any():
            continue
        for j in (jf, idx.get(side + "Toes", -1)):
            if j < 0:
                continue
            rel = quat.mul(quat.conj(head[planted]), gr[planted, j])
            rel = rel * np.where(rel @ rel[0] < 0, -1.0, 1.0)[:, None]     # one hemisphere
            mean = quat.normalize(rel.mean(axis=0))
            gp0, gr0 = (a[0] for a in forward_kinematics(skeleton, pose[None],
                                                            np.zeros((1, 3))))
            want = quat.mul(_headings(gp0, idx), mean)
            par = skeleton.parents[j]
            pose[j] = want if par < 0 else quat.mul(quat.conj(gr0[par]), want)
    return quat.normalize(pose)


def root_scale(source: Motion, target: Skeleton) -> tuple[float, float]:
    """How ``retarget`` carries the source's world onto the target: the ratio of hip heights
    above the floor (leg lengths; 1 when the target's root offset is not above its origin) and
    the source's floor (m, its lowest joint over the take). See ``scale_points``."""
    floor = float(np.min(source.gpos[..., 2]))
    h_s = float(np.median(source.gpos[:, 0, 2])) - floor
    h_t = target.offsets[0, 2] if target.offsets[0, 2] > 0 else h_s
    return (float(h_t / h_s) if h_s > 1e-6 else 1.0), floor


def scale_points(p: np.ndarray, ratio: float, floor: float) -> np.ndarray:
    """``(..., 3)`` m source-world points in the retargeted world: scaled by ``ratio`` about
    the floor below the origin (``root_scale``)."""
    require_numbers("scale_points", ("ratio",), ratio=ratio)
    if not np.isfinite(floor):
        raise SettingsError(f"scale_points: floor must be a finite height in m, got {floor!r}")
    p = np.asarray(p, float)
    return np.concatenate([p[..., :2] * ratio, (p[..., 2:] - floor) * ratio], axis=-1)


def retarget(source: Motion, target: Skeleton, name_map: dict[str, str] | None = None,
             source_rest: np.ndarray | None = None) -> Motion:
    """Drive ``target`` with ``source``'s motion.

    Args:
        source: the motion to copy.
        target: the skeleton to animate; its rest pose has identity rotations.
        name_map: source joint name -> target joint name; names equal in both map themselves.
        source_rest: ``(J_s, 4)`` source local rotations of its reference pose (default:
            ``reference_pose``: the file's rest pose if it is a standing pose, else frame 0).
    Returns:
        a ``Motion`` on ``target`` with the source's rate.
    """
    require_type("retarget", source, Motion, "read_bvh(PATH)")
    require_type("retarget: target", target, Skeleton, "load_body().skeleton")
    if source_rest is None:
        source_rest = reference_pose(source.skeleton, source.meta.get("up") or "z",
                                     source.lrot[0], target, name_map,
                                     motion=(source.lrot, source.root_pos, source.fps))
    src_index, pre = corrections(source.skeleton, target, name_map,
                                 source.meta.get("up") or "z", source_rest)
    F = source.n_frames
    g_t = np.empty((F, len(target), 4))
    lrot = quat.identity((F, len(target)))
    for j in range(len(target)):
        p = target.parents[j]
        js = src_index[j]
        if js < 0:
            g_t[:, j] = g_t[:, p] if p >= 0 else quat.identity((F,))
            continue
        g_t[:, j] = quat.mul(source.grot[:, js], pre[j])
        lrot[:, j] = g_t[:, j] if p < 0 else quat.mul(quat.conj(g_t[:, p]), g_t[:, j])
    ratio, floor = root_scale(source, target)
    root = scale_points(source.root_pos, ratio, floor)
    return Motion(target, source.fps, root, quat.normalize(lrot),
                  {"retargeted_from": source.meta.get("path", "")})
