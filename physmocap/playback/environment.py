"""Scene objects and hand holds in the simulation (``scenes/environments/*.toml``).

The same environment files that give the marker solver its hand holds (``solver.pipeline``) put
their objects into the playback world: a bar becomes a static capsule along its axis (its
radius) that the body collides with; a point object has no extent, so nothing to collide with.
A hand hold pins the holding hand's palm (half-way along the hand, as in the solver) to the
object with a point-to-point constraint while the hold lasts: to the point of a bar's axis
nearest to where the palm is when the hold begins, or to the point. The constraint's force is
bounded (``max_force``), so a reference that pulls the hand away strains it rather than
teleporting the body. While a hand holds an object, that hand does not collide with it (its
palm sits on the object's axis, inside the collision shape), nor after the release until it
is clear of the object: a hand set colliding while inside the bar was held there by the
contact (a released hand stayed 0.59 m from its reference with the 60 N·m arms of assist
mode; it came free only by flailing with 30 N·m).

PyBullet facts used here: a constraint's position on a link is relative to the link's centre of
mass (its inertial frame), not to its joint; ``createConstraint`` pins from the next step on.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from ..scene import Environment, HandHold, SceneObject
from .character import Character, _segment

__all__ = ["add_objects", "Holds", "nearest_on_object"]

_Z = np.array([0.0, 0.0, 1.0])


def add_objects(char: Character, objects) -> dict[str, int]:
    """Static collision bodies for scene ``objects`` (``SceneObject``) in ``char``'s world;
    ``{name: PyBullet body id}`` of those that have a shape (bars)."""
    p, c = char.p, char.client
    ids = {}
    for o in objects:
        if o.kind != "bar":
            continue
        a, b = np.asarray(o.start, float), np.asarray(o.end, float)
        axis = b - a
        length = float(np.linalg.norm(axis))
        q = quat.between(_Z, axis if length > 0 else _Z)     # handles (anti)parallel axes
        shape = p.createCollisionShape(p.GEOM_CAPSULE, radius=max(float(o.radius), 1e-3),
                                       height=max(length, 1e-3), physicsClientId=c)
        ids[o.name] = p.createMultiBody(0, shape, basePosition=[float(x) for x in 0.5 * (a + b)],
                                        baseOrientation=[float(x) for x in q],
                                        physicsClientId=c)
        p.changeDynamics(ids[o.name], -1, lateralFriction=0.9, physicsClientId=c)
    return ids


def nearest_on_object(obj: SceneObject, x) -> np.ndarray:
    """``(3,)`` m: the point of ``obj`` nearest to ``x (3,)``: on a bar's axis segment, or the
    point itself."""
    a = np.asarray(obj.start, float)
    if obj.kind != "bar":
        return a
    b = np.asarray(obj.end, float)
    ab = b - a
    den = float(ab @ ab)
    s = 0.0 if den == 0 else float(np.clip((np.asarray(x, float) - a) @ ab / den, 0.0, 1.0))
    return a + s * ab


class Holds:
    """The hand holds of an environment on one ``Character``, switched on and off by time.

    ``update(t)`` before each frame's physics steps pins the holds active at ``t`` seconds
    (``start <= t < stop``) and releases the others; ``errors()`` after them gives the distance
    (m) of each holding palm from its anchor, ``nan`` for holds not active.
    """

    def __init__(self, char: Character, env: Environment, objects: dict[str, int],
                 max_force: float = 2000.0):
        self.char, self.env, self.objects = char, env, objects
        self.max_force = float(max_force)
        names = char.body_template.names
        self.hand = [names.index(f"{h.hand}Hand") for h in env.holds]
        # the palm: half-way along the hand segment, in the hand's joint frame
        self.palm = [0.5 * _segment(char.body_template, j) for j in self.hand]
        self.anchor: list[np.ndarray | None] = [None] * len(env.holds)
        self._cid: list[int | None] = [None] * len(env.holds)
        self._inside: set[int] = set()      # released holds whose hand is not yet clear

    def _palm_world(self, k: int) -> np.ndarray:
        p, c = self.char.p, self.char.client
        st = p.getLinkState(self.char.body, self.hand[k] - 1, computeForwardKinematics=True,
                            physicsClientId=c)
        return np.asarray(st[4]) + quat.rotate(np.asarray(st[5]), self.palm[k])

    def _anchor(self, h: HandHold, palm: np.ndarray) -> np.ndarray:
        if h.object is None:
            return np.asarray(h.point, float)
        return nearest_on_object(self.env.object(h.object), palm)

    def _object_id(self, k: int) -> int | None:
        """PyBullet body of hold ``k``'s object (``None``: a point hold, or no shape)."""
        return self.objects.get(self.env.holds[k].object or "")

    def _collide(self, k: int, on: bool) -> None:
        oid = self._object_id(k)
        if oid is not None:
            self.char.p.setCollisionFilterPair(self.char.body, oid, self.hand[k] - 1, -1,
                                               int(on), physicsClientId=self.char.client)

    def _clear(self, k: int) -> bool:
        """Hand ``k``'s collision shape does not touch its hold's object."""
        oid = self._object_id(k)
        if oid is None:
            return True
        # closest points are computed whatever the collision filter says
        return not self.char.p.getClosestPoints(self.char.body, oid, 0.0, self.hand[k] - 1, -1,
                                                physicsClientId=self.char.client)

    def update(self, t: float) -> None:
        """Pin the holds active at ``t`` s, release the others."""
        p, c = self.char.p, self.char.client
        for k in [k for k in self._inside if self._clear(k)]:
            self._inside.discard(k)
            self._collide(k, True)
        for k, h in enumerate(self.env.holds):
            active = h.start <= t < h.stop
            if active and self._cid[k] is None:
                palm = self._palm_world(k)
                self.anchor[k] = self._anchor(h, palm)
                j = self.hand[k]
                # constraint positions on a link are relative to its centre of mass
                local = self.palm[k] - self.char.com_local[j]
                cid = p.createConstraint(self.char.body, j - 1, -1, -1, p.JOINT_POINT2POINT,
                                         [0, 0, 0], [float(x) for x in local],
                                         [float(x) for x in self.anchor[k]], physicsClientId=c)
                p.changeConstraint(cid, maxForce=self.max_force, physicsClientId=c)
                self._cid[k] = cid
                self._inside.discard(k)
                self._collide(k, False)
            elif not active and self._cid[k] is not None:
                self.release(k)

    def release(self, k: int) -> None:
        """Release hold ``k`` (no-op if it is not pinned)."""
        if self._cid[k] is None:
            return
        self.char.p.removeConstraint(self._cid[k], physicsClientId=self.char.client)
        self._cid[k] = None
        self.anchor[k] = None
        self._inside.add(k)          # collides again once clear of the object (``update``)

    def release_all(self) -> None:
        for k in range(len(self._cid)):
            self.release(k)

    def errors(self) -> np.ndarray:
        """``(H,)`` m: each pinned palm's distance from its anchor, ``nan`` when not held."""
        out = np.full(len(self._cid), np.nan)
        for k, cid in enumerate(self._cid):
            if cid is not None:
                out[k] = float(np.linalg.norm(self._palm_world(k) - self.anchor[k]))
        return out
