"""The ``Skeleton`` (fixed limb lengths) and batched forward kinematics."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from ._arrays import frozen
from .errors import ShapeError, UnknownNameError, known_list

__all__ = ["Skeleton", "forward_kinematics", "forward_kinematics_frame",
           "forward_kinematics_chain"]


@dataclass(frozen=True, eq=False)
class Skeleton:
    """A kinematic tree with fixed bone offsets.

    Attributes:
        names: ``(J,)`` joint names, unique.
        parents: ``(J,)`` int, ``parents[j] < j``; the root (index 0) has ``-1``.
        offsets: ``(J, 3)`` m, each joint's position in its parent's frame. ``offsets[0]`` is the
            root's rest offset, kept for file round trips; forward kinematics places the root at
            the motion's ``root_pos`` instead.
        end_sites: ``(J, 3)`` m, the BVH End Site offset of each joint, NaN where it has none.
    """

    names: tuple
    parents: np.ndarray
    offsets: np.ndarray
    end_sites: np.ndarray | None = None

    def __post_init__(self):
        names = tuple(str(n) for n in self.names)
        J = len(names)
        if J == 0:
            raise ShapeError("a skeleton needs at least one joint")
        if len(set(names)) != J:
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ShapeError(f"duplicate joint names: {', '.join(dup)}")
        parents = frozen(self.parents, int, (J,), "parents")
        if parents[0] != -1 or np.any(parents[1:] < 0) or np.any(parents[1:] >= np.arange(1, J)):
            raise ShapeError("parents must satisfy parents[0] == -1 and 0 <= parents[j] < j")
        offsets = frozen(self.offsets, float, (J, 3), "offsets")
        if not np.all(np.isfinite(offsets)):
            raise ShapeError("offsets must be finite")
        ends = np.full((J, 3), np.nan) if self.end_sites is None else self.end_sites
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "end_sites", frozen(ends, float, (J, 3), "end_sites"))

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """Index of joint ``name``; ``UnknownNameError`` listing the known names otherwise."""
        try:
            return self.names.index(name)
        except ValueError:
            raise UnknownNameError(
                f"unknown joint {name!r}; known: {known_list(self.names)}") from None

    def children(self, j: int) -> list[int]:
        """Indices of the joints whose parent is ``j``."""
        return [int(c) for c in np.flatnonzero(self.parents == j)]

    def segment_vectors(self) -> np.ndarray:
        """``(J, 3)`` m, each joint's segment in its own frame at rest: toward the mean of its
        children's offsets, else its End Site, else zero (a leaf with no End Site)."""
        seg = np.zeros((len(self), 3))
        for j in range(len(self)):
            kids = self.children(j)
            if kids:
                seg[j] = np.mean(self.offsets[kids], axis=0)
            elif not np.isnan(self.end_sites[j, 0]):
                seg[j] = self.end_sites[j]
        return seg

    def bone_lengths(self) -> np.ndarray:
        """``(J,)`` m, length of the bone from each joint's parent to it (0 for the root)."""
        lengths = np.linalg.norm(self.offsets, axis=-1)
        lengths[0] = 0.0
        return lengths

    def scaled(self, factor: float) -> "Skeleton":
        """The same tree with every offset multiplied by ``factor``."""
        return Skeleton(self.names, self.parents, self.offsets * factor, self.end_sites * factor)

    def rest_positions(self) -> np.ndarray:
        """``(J, 3)`` m, joint positions with every rotation at identity and the root at its offset."""
        gpos, _ = forward_kinematics(self, quat.identity((1, len(self))), self.offsets[:1])
        return gpos[0]

    def same_structure(self, other: "Skeleton") -> bool:
        """True when names and parents match (offsets may differ)."""
        return self.names == other.names and np.array_equal(self.parents, other.parents)

    def turned(self, C: np.ndarray) -> "Skeleton":
        """The same tree with every joint's frame turned: non-root offsets and End Sites
        become ``C @ offset`` (``C (3, 3)`` a rotation); the root's offset (in the world) is
        kept. ``Motion.turned_rest`` turns a motion's rotations with it."""
        C = np.asarray(C, float)
        offsets = self.offsets @ C.T
        offsets[0] = self.offsets[0]
        return Skeleton(self.names, self.parents, offsets, self.end_sites @ C.T)


def rest_turn(skeleton: Skeleton, to: Skeleton) -> np.ndarray:
    """``(3, 3)``: the axis turn (one of the 24 rotations that permute axes, with signs) that
    best takes ``skeleton``'s rest frames to ``to``'s (``to.offsets[j] ≈ C @
    skeleton.offsets[j]`` over the joints both have, by name, with the same parent), or the
    identity when no such turn fits (no joints in common, or the rests differ by more than an
    axis turn: a 30° fit error). E.g. a template-body motion written to a Y-up BVH with an
    upright rest (``write_bvh``) and read back: the turn back to the template's frames."""
    pairs = []
    for j in range(1, len(skeleton)):
        name, par = skeleton.names[j], skeleton.names[skeleton.parents[j]]
        if name in to.names:
            k = to.names.index(name)
            if to.parents[k] >= 0 and to.names[to.parents[k]] == par:
                pairs.append((skeleton.offsets[j], to.offsets[k]))
    if not pairs:
        return np.eye(3)
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    H = a.T @ b                                          # Kabsch: b ≈ C a
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0
    C = Vt.T @ np.diag([1.0, 1.0, d]) @ U.T
    snap = np.round(C)
    ok = (np.abs(snap).sum(axis=0) == 1).all() and (np.abs(snap).sum(axis=1) == 1).all() \
        and np.isclose(np.linalg.det(snap), 1.0)
    # the fit's own rotation within 30° of the axis turn: cos of the angle between them
    if ok and (np.trace(snap.T @ C) - 1.0) / 2.0 > np.cos(np.radians(30.0)):
        return snap + 0.0                                # (no -0.0)
    return np.eye(3)


def forward_kinematics(skeleton: Skeleton, lrot: np.ndarray, root_pos: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Global joint positions and rotations for every frame at once.

    Args:
        skeleton: the tree; ``offsets[1:]`` are used, the root sits at ``root_pos``.
        lrot: ``(F, J, 4)`` xyzw local rotations (the root's is global).
        root_pos: ``(F, 3)`` m, root positions in the world.
    Returns:
        ``gpos (F, J, 3)`` m and ``grot (F, J, 4)`` xyzw.
    """
    lrot = np.asarray(lrot, dtype=float)
    root_pos = np.asarray(root_pos, dtype=float)
    F, J = lrot.shape[:2]
    if lrot.shape != (F, len(skeleton), 4) or root_pos.shape != (F, 3):
        raise ShapeError(f"forward_kinematics: lrot {lrot.shape} / root_pos {root_pos.shape} "
                         f"do not fit a {len(skeleton)}-joint skeleton")
    gpos = np.empty((F, J, 3))
    grot = np.empty((F, J, 4))
    gpos[:, 0] = root_pos
    grot[:, 0] = lrot[:, 0]
    # Loop over joints (parents come first), vectorised over frames.
    for j in range(1, J):
        p = skeleton.parents[j]
        grot[:, j] = quat.mul(grot[:, p], lrot[:, j])
        gpos[:, j] = gpos[:, p] + quat.rotate(grot[:, p], skeleton.offsets[j])
    return gpos, grot


def forward_kinematics_frame(skeleton: Skeleton, lrot, root_pos) -> tuple[np.ndarray, np.ndarray]:
    """``forward_kinematics`` of one frame: ``lrot (J, 4)``, ``root_pos (3,)`` -> ``gpos (J, 3)``,
    ``grot (J, 4)``. Plain floats inside: for one frame, numpy's per-call overhead costs ~6x the
    arithmetic (a per-frame controller or playback loop)."""
    lrot = np.asarray(lrot, dtype=float)
    J = len(skeleton)
    if lrot.shape != (J, 4) or np.shape(root_pos) != (3,):
        raise ShapeError(f"forward_kinematics_frame: lrot {lrot.shape} / root_pos "
                         f"{np.shape(root_pos)} do not fit a {J}-joint skeleton")
    x, g = _walk(skeleton, lrot, root_pos, range(J))
    return np.array([x[j] for j in range(J)]), np.array([g[j] for j in range(J)])


def _walk(skeleton: Skeleton, lrot: np.ndarray, root_pos, joints) -> tuple[dict, dict]:
    """World positions and rotations (tuples) of ``joints``, keyed by joint, given the root
    first and parents before their children: one frame's forward kinematics in plain floats."""
    q, off, par = lrot.tolist(), skeleton.offsets.tolist(), skeleton.parents.tolist()
    x, g = {}, {}
    for j in joints:
        if j == 0:
            g[0], x[0] = tuple(q[0]), tuple(float(v) for v in root_pos)
            continue
        p = par[j]
        g[j] = quat.mul_t(g[p], q[j])
        o = quat.rotate_t(g[p], off[j])
        x[j] = (x[p][0] + o[0], x[p][1] + o[1], x[p][2] + o[2])
    return x, g


def forward_kinematics_chain(skeleton: Skeleton, lrot, root_pos, joints
                             ) -> tuple[np.ndarray, np.ndarray]:
    """``forward_kinematics_frame`` of some joints only: ``joints (K,)`` -> ``gpos (K, 3)``,
    ``grot (K, 4)``, from their chains up to the root alone, the same arithmetic bit for bit
    (a chest three joints up from the root, not the 21 joints of a body, every physics step
    of ``playback.reach``)."""
    par = skeleton.parents.tolist()
    js = np.asarray(joints).tolist()
    need = set()
    for j in js:
        while j >= 0 and j not in need:
            need.add(j)
            j = par[j]
    # parents come before their children in the joint order
    x, g = _walk(skeleton, np.asarray(lrot, dtype=float), root_pos, sorted(need))
    return np.array([x[j] for j in js]), np.array([g[j] for j in js])
