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
from ..errors import UnknownNameError, known_list
from ..motion import Motion
from ..skeleton import Skeleton, forward_kinematics

__all__ = ["retarget", "HUMANOID_NAME_MAP"]

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
    """``(J, 3)`` unit direction of each joint's segment at rest (to its children's mean, or End
    Site), zero where a segment has no length."""
    out = np.zeros((len(sk), 3))
    for j in range(len(sk)):
        kids = sk.children(j)
        if kids:
            v = np.mean([sk.offsets[c] for c in kids], axis=0)
        elif not np.isnan(sk.end_sites[j, 0]):
            v = sk.end_sites[j]
        else:
            continue
        n = np.linalg.norm(v)
        if n > 1e-6:
            out[j] = v / n
    return out


def retarget(source: Motion, target: Skeleton, name_map: dict[str, str] | None = None,
             source_rest: np.ndarray | None = None) -> Motion:
    """Drive ``target`` with ``source``'s motion.

    Args:
        source: the motion to copy.
        target: the skeleton to animate; its rest pose has identity rotations.
        name_map: source joint name -> target joint name; names equal in both map themselves.
        source_rest: ``(J_s, 4)`` source local rotations of its rest pose (default identity).
    Returns:
        a ``Motion`` on ``target`` with the source's rate.
    """
    sk_s = source.skeleton
    mapping = {n: n for n in sk_s.names if n in target.names}
    for s_name, t_name in (name_map or HUMANOID_NAME_MAP).items():
        if s_name in sk_s.names and t_name in target.names:
            mapping[s_name] = t_name
    if target.names[0] not in mapping.values():
        raise UnknownNameError(f"retarget: the target root {target.names[0]!r} has no source joint"
                               f"; source joints: {known_list(sk_s.names)}")
    F = source.n_frames
    rest_s = quat.identity((1, len(sk_s))) if source_rest is None else source_rest[None]
    g_rest_s = forward_kinematics(sk_s, rest_s, np.zeros((1, 3)))[1][0]     # (J_s, 4)
    d_s = _rest_bone_dirs(sk_s)
    d_t = _rest_bone_dirs(target)
    # source rest bone directions in the world
    d_s_world = quat.rotate(g_rest_s, d_s)
    g_t = np.empty((F, len(target), 4))
    mapped = np.zeros(len(target), bool)
    for s_name, t_name in mapping.items():
        js, jt = sk_s.index(s_name), target.index(t_name)
        if np.any(d_t[jt]) and np.any(d_s_world[js]):
            c = quat.between(d_t[jt], quat.inv_rotate(g_rest_s[js], d_s_world[js]))
        else:
            c = quat.identity()
        g_t[:, jt] = quat.mul(quat.mul(source.grot[:, js], quat.conj(g_rest_s[js])),
                              quat.mul(g_rest_s[js], c))
        mapped[jt] = True
    lrot = quat.identity((F, len(target)))
    for j in range(len(target)):
        p = target.parents[j]
        if not mapped[j]:
            g_t[:, j] = g_t[:, p] if p >= 0 else quat.identity((F,))
            continue
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
