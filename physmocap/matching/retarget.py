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
from ..conventions import up_to_zup_matrix
from ..errors import UnknownNameError, known_list
from ..motion import Motion
from ..skeleton import Skeleton, forward_kinematics

__all__ = ["retarget", "corrections", "HUMANOID_NAME_MAP"]

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


def _rest_bone_dirs(sk: Skeleton) -> np.ndarray:
    """``(J, 3)`` unit direction of each joint's segment at rest, zero where it has no length."""
    seg = sk.segment_vectors()
    n = np.linalg.norm(seg, axis=-1, keepdims=True)
    return np.where(n > 1e-6, seg / np.maximum(n, 1e-12), 0.0)


def corrections(source: Skeleton, target: Skeleton, name_map: dict[str, str] | None = None,
                up: str = "z", source_rest: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per target joint: the source joint that drives it (``(J_t,)``, -1 = none) and the constant
    ``P (J_t, 4)`` with ``G_t(f) = G_s(f) · P`` (``P = G_s(rest)^-1 · C``, C turning the target's
    rest bone onto the source's rest bone in the world).

    ``up``: the source file's up axis (its rest pose has the root turned by that conversion);
    ``source_rest``: ``(J_s, 4)`` explicit rest local rotations instead.
    """
    mapping = {n: n for n in source.names if n in target.names}
    for s_name, t_name in (name_map or HUMANOID_NAME_MAP).items():
        if s_name in source.names and t_name in target.names:
            mapping[s_name] = t_name
    if target.names[0] not in mapping.values():
        raise UnknownNameError(f"retarget: the target root {target.names[0]!r} has no source joint"
                               f"; source joints: {known_list(source.names)}")
    if source_rest is None:
        # The file's rest pose (every rotation identity *in the file*) has, in our Z-up world,
        # the root turned by the up-axis conversion the reader applied.
        rest = quat.identity((1, len(source)))
        rest[0, 0] = quat.from_matrix(up_to_zup_matrix(up or "z"))
    else:
        rest = np.asarray(source_rest, float)[None]
    g_rest = forward_kinematics(source, rest, np.zeros((1, 3)))[1][0]          # (J_s, 4)
    d_s_world = quat.rotate(g_rest, _rest_bone_dirs(source))
    d_t = _rest_bone_dirs(target)
    src_index = np.full(len(target), -1)
    pre = quat.identity((len(target),))
    undefined = []
    for s_name, t_name in mapping.items():
        js, jt = source.index(s_name), target.index(t_name)
        src_index[jt] = js
        if not (np.any(d_t[jt]) and np.any(d_s_world[js])):
            undefined.append((js, jt))
            continue
        # Aligning in the source joint's own frame instead would add the source rest frame's
        # rotation (a Y-up file's 90 degrees) as a roll about the bone.
        c = quat.between(d_t[jt], d_s_world[js])
        pre[jt] = quat.mul(quat.conj(g_rest[js]), c)
    # A bone without a direction (a leaf whose end site has zero length, e.g. Bandai-Namco's
    # toes) takes its parent's alignment: it stays as it sits on its parent in both rest poses.
    # (Aligning it to nothing would copy the source's rotation since its own rest pose, which for
    # a file whose rest pose is not a T-pose turns the toes backwards.)
    for js, jt in sorted(undefined, key=lambda x: x[1]):
        pt = target.parents[jt]
        if pt >= 0 and src_index[pt] >= 0:
            ps = src_index[pt]
            # G_t = G_s · P with G_s(rest) = g_rest[js]: keep the parent's rest offset
            pre[jt] = quat.mul(quat.mul(quat.conj(g_rest[js]), g_rest[ps]), pre[pt])
        else:
            pre[jt] = quat.conj(g_rest[js])
    return src_index, pre


def retarget(source: Motion, target: Skeleton, name_map: dict[str, str] | None = None,
             source_rest: np.ndarray | None = None) -> Motion:
    """Drive ``target`` with ``source``'s motion.

    Args:
        source: the motion to copy.
        target: the skeleton to animate; its rest pose has identity rotations.
        name_map: source joint name -> target joint name; names equal in both map themselves.
        source_rest: ``(J_s, 4)`` source local rotations of its rest pose (default: identity
            in the source file, i.e. the root turned by the up-axis conversion in ``meta['up']``).
    Returns:
        a ``Motion`` on ``target`` with the source's rate.
    """
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
    # Root trajectory scaled by hip height (leg length) ratio.
    root_s = source.root_pos
    h_s = np.median(source.gpos[:, 0, 2]) - np.min(source.gpos[..., 2])
    h_t = target.offsets[0, 2] if target.offsets[0, 2] > 0 else h_s
    ratio = h_t / h_s if h_s > 1e-6 else 1.0
    floor = np.min(source.gpos[..., 2])
    root = np.column_stack([root_s[:, :2] * ratio, (root_s[:, 2] - floor) * ratio])
    return Motion(target, source.fps, root, quat.normalize(lrot),
                  {"retargeted_from": source.meta.get("path", "")})
