"""The simulated character: a body template as a PyBullet multibody with collision shapes,
on a ground plane, in its own DIRECT client.

Differences from ``solver.body.PhysicsBody`` (which is a marker-driven body without collisions):

* every segment has a collision shape: a capsule from its joint to the segment end (template
  radius), boxes for the feet and toes (so a foot stands flat), a sphere where a segment has no
  length (the pelvis: a capsule across the hip joints);
* all joints below the root are PyBullet *spherical* joints, hinges included: a hinge is tracked
  by its (one-axis) target rotation, so one ``setJointMotorControlMultiDofArray`` call drives the
  whole body (the call is the per-frame cost that matters);
* inertia of each segment is that of a solid capsule (axis along the segment), in an inertial
  frame aligned with the segment.

The PyBullet facts of ``solver/body.py`` hold here too: the base's inertial frame is at the root
joint (so ``resetBasePositionAndOrientation`` places the root joint), a link frame is its joint,
default motors must be switched off, external forces last one ``stepSimulation``.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from ..errors import PhysmocapError
from ..scene import BodyTemplate
from ..solver.body import import_pybullet

__all__ = ["Character", "foot_joints", "leg_chains", "foot_box", "segment_centres"]

_Z = np.array([0.0, 0.0, 1.0])


def foot_joints(body: BodyTemplate) -> tuple[list[int], list[int]]:
    """Joint indices of the (left, right) foot segments: ``*Foot`` and ``*Toes``."""
    left = [j for j, n in enumerate(body.names) if n.startswith("Left") and
            (n.endswith("Foot") or n.endswith("Toes"))]
    right = [j for j, n in enumerate(body.names) if n.startswith("Right") and
             (n.endswith("Foot") or n.endswith("Toes"))]
    if not left or not right:
        raise PhysmocapError(f"body {body.name!r} has no LeftFoot/RightFoot joints; foot "
                             f"contacts need them (joints: {', '.join(body.names)})")
    return left, right


def leg_chains(body: BodyTemplate) -> list[tuple[int, int, int]]:
    """``(hip, knee, ankle)`` joint indices of the (left, right) legs, up from each ``*Foot``."""
    par = body.skeleton.parents
    chains = []
    for side in foot_joints(body):
        ankle = [j for j in side if body.names[j].endswith("Foot")][0]
        knee = int(par[ankle])
        chains.append((int(par[knee]), knee, ankle))
    return chains


def foot_box(body: BodyTemplate, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Half extents ``(3,)`` and centre ``(3,)`` (joint frame, m) of the collision box of foot
    segment ``j`` (a ``*Foot``: heel 5 cm behind the ankle to the toe joint, sole at the floor
    in the rest pose; a ``*Toes``: toe joint to toe tip, sole at the floor)."""
    sk = body.skeleton
    seg = _segment(body, j)
    h = float(sk.rest_positions()[j, 2])
    if sk.names[j].endswith("Toes"):
        x1 = float(seg[0]) if np.linalg.norm(seg) > 0 else 0.06
        return np.array([0.5 * x1, 0.045, 0.5 * h]), np.array([0.5 * x1, 0.0, -0.5 * h])
    x0, x1 = -0.05, float(seg[0])
    z0, z1 = -h, float(seg[2]) + 0.02
    return (np.array([0.5 * (x1 - x0), 0.045, 0.5 * (z1 - z0)]),
            np.array([0.5 * (x0 + x1), 0.0, 0.5 * (z0 + z1)]))


def segment_centres(body: BodyTemplate) -> np.ndarray:
    """``(J, 3)`` m, each segment's centre of mass in its joint frame, as ``Character`` builds
    it: a foot box's centre, the joint itself for the pelvis and length-less segments, else the
    middle of the segment."""
    feet = sum(foot_joints(body), [])
    out = np.zeros((len(body.skeleton), 3))
    for j in range(len(out)):
        if j in feet:
            out[j] = foot_box(body, j)[1]
        elif not _point_like(body, j):
            out[j] = 0.5 * _segment(body, j)
    return out


def _point_like(body: BodyTemplate, j: int) -> bool:
    """The pelvis, or a segment shorter than 2 cm: shaped around its joint, not along it."""
    return j == 0 or float(np.linalg.norm(_segment(body, j))) < 0.02


def _segment(body: BodyTemplate, j: int) -> np.ndarray:
    """``(3,)`` m, the segment's extent in its joint frame (``Skeleton.segment_vectors``)."""
    return body.skeleton.segment_vectors()[j]


class Character:
    """A body template in a PyBullet world with gravity and a ground plane at z = 0.

    Link ``j - 1`` is joint ``j``; the base is the root.
    """

    def __init__(self, body: BodyTemplate, timestep: float = 1.0 / 240.0, gravity: float = 9.81,
                 friction: float = 0.9, solver_iterations: int = 10, min_inertia: float = 0.0):
        p = import_pybullet()
        self.p, self.body_template = p, body
        self.client = c = p.connect(p.DIRECT)
        if c < 0:
            raise PhysmocapError("could not start a PyBullet physics client")
        p.setGravity(0, 0, -gravity, physicsClientId=c)
        p.setTimeStep(timestep, physicsClientId=c)
        p.setPhysicsEngineParameter(numSolverIterations=solver_iterations, physicsClientId=c)
        self.timestep = timestep
        plane_shape = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=c)
        self.ground = p.createMultiBody(0, plane_shape, physicsClientId=c)
        p.changeDynamics(self.ground, -1, lateralFriction=friction, physicsClientId=c)

        sk = body.skeleton
        J = len(sk)
        self.J = J
        shapes, inertial_pos, inertial_orn, inertia = [], [], [], []
        left, right = foot_joints(body)
        self.feet = (left, right)
        centres = segment_centres(body)
        for j in range(J):
            seg = _segment(body, j)
            r = float(body.radius[j])
            L = float(np.linalg.norm(seg))
            m = float(body.mass[j])
            if j in left + right:
                half, ctr = foot_box(body, j)
                s = p.createCollisionShape(p.GEOM_BOX, halfExtents=list(half),
                                           collisionFramePosition=list(ctr), physicsClientId=c)
                a, b, cc = (2 * x for x in half)
                I = [m * (b * b + cc * cc) / 12, m * (a * a + cc * cc) / 12, m * (a * a + b * b) / 12]
            elif _point_like(body, j):
                # the pelvis (children around it) or a segment without length: a capsule across
                # its children if they spread sideways, else a sphere
                kids = sk.children(j)
                spread = max((abs(sk.offsets[k][1]) for k in kids), default=0.0)
                if spread > 0.03:
                    s = p.createCollisionShape(
                        p.GEOM_CAPSULE, radius=r, height=2 * spread,
                        collisionFrameOrientation=list(quat.from_axis_angle(
                            np.array([1.0, 0, 0]), np.pi / 2)), physicsClientId=c)
                else:
                    s = p.createCollisionShape(p.GEOM_SPHERE, radius=r, physicsClientId=c)
                I = [0.4 * m * r * r] * 3
            else:
                d = seg / L
                q = quat.between(_Z, d) if abs(d[2]) < 1 - 1e-9 else \
                    (quat.identity() if d[2] > 0 else quat.from_axis_angle(np.array([1.0, 0, 0]), np.pi))
                # capsule along the segment, its ends rounding off at the joints
                hgt = max(L - 2 * r, 0.01) if L > 2 * r else 0.01
                s = p.createCollisionShape(p.GEOM_CAPSULE, radius=min(r, 0.5 * L), height=hgt,
                                           collisionFramePosition=list(0.5 * seg),
                                           collisionFrameOrientation=list(q), physicsClientId=c)
                # The inertial frame must stay aligned with the link frame: PyBullet applies a
                # spherical joint's rotation in the child's inertial frame, so a rotated inertial
                # frame silently changes what every joint quaternion means (the body's shape no
                # longer follows the reference). The capsule's tensor is rotated into the link
                # frame instead and its diagonal kept (the products of inertia are dropped).
                Ia = m * (3 * r * r + L * L) / 12
                R = quat.to_matrix(np.asarray(q, float))
                I = list(np.diag(R @ np.diag([Ia, Ia, 0.5 * m * r * r]) @ R.T))
            shapes.append(s)
            inertial_pos.append([float(x) for x in centres[j]])     # ``segment_centres``
            inertial_orn.append([0.0, 0.0, 0.0, 1.0])
            inertia.append([max(float(x), min_inertia) for x in I])
        mass = [float(m) for m in body.mass]
        # each segment's centre of mass (m, in its joint frame) and principal inertia (kg·m²,
        # joint-frame axes): what a torque-level controller needs (``balance.py``)
        self.com_local = np.array(inertial_pos, float)
        self.inertia = np.array(inertia, float)
        self.body = p.createMultiBody(
            baseMass=mass[0], baseCollisionShapeIndex=shapes[0], baseVisualShapeIndex=-1,
            basePosition=[0, 0, 1], baseOrientation=[0, 0, 0, 1],
            baseInertialFramePosition=[0, 0, 0],  # COM at the root joint: see module docstring
            linkMasses=mass[1:], linkCollisionShapeIndices=shapes[1:],
            linkVisualShapeIndices=[-1] * (J - 1),
            linkPositions=[list(map(float, o)) for o in sk.offsets[1:]],
            linkOrientations=[[0, 0, 0, 1]] * (J - 1),
            linkInertialFramePositions=inertial_pos[1:],
            linkInertialFrameOrientations=inertial_orn[1:],
            linkParentIndices=[int(q) for q in sk.parents[1:]],
            linkJointTypes=[p.JOINT_SPHERICAL] * (J - 1),
            linkJointAxis=[[0, 0, 1]] * (J - 1), physicsClientId=c)
        b = self.body
        # inertia of each segment (the base's about its joint); damping off
        p.changeDynamics(b, -1, linearDamping=0.0, angularDamping=0.0, physicsClientId=c)
        for j in range(J):
            p.changeDynamics(b, j - 1, localInertiaDiagonal=inertia[j], lateralFriction=friction,
                             physicsClientId=c)
        self.links = list(range(J - 1))
        self.motors_off(self.links)             # PyBullet's default spherical motors
        self.foot_links = tuple(set(j - 1 for j in side) for side in self.feet)

    def motors_off(self, links: list) -> None:
        """The spherical motors of ``links`` (link indices) switched off (force 0), so that
        joint torques alone drive those joints."""
        n = len(links)
        self.p.setJointMotorControlMultiDofArray(
            self.body, links, self.p.POSITION_CONTROL, targetPositions=[[0, 0, 0, 1]] * n,
            forces=[[0, 0, 0]] * n, physicsClientId=self.client)

    @staticmethod
    def feet_of(body: BodyTemplate):
        return foot_joints(body)

    # --- state ----------------------------------------------------------------------------

    def reset(self, root_pos, lrot, root_vel=None, root_ang=None, joint_ang=None) -> None:
        """Place the body: ``root_pos (3,)`` m, ``lrot (J, 4)`` xyzw; world root velocity
        ``root_vel (3,)`` m/s and angular velocity ``root_ang (3,)`` rad/s; joint angular
        velocities ``joint_ang (J, 3)`` rad/s in each joint's own (child) frame."""
        p, b, c = self.p, self.body, self.client
        p.resetBasePositionAndOrientation(b, [float(x) for x in root_pos],
                                          [float(x) for x in lrot[0]], physicsClientId=c)
        v = [0.0] * 3 if root_vel is None else [float(x) for x in root_vel]
        w = [0.0] * 3 if root_ang is None else [float(x) for x in root_ang]
        p.resetBaseVelocity(b, v, w, physicsClientId=c)
        ja = np.zeros((self.J, 3)) if joint_ang is None else np.asarray(joint_ang, float)
        p.resetJointStatesMultiDof(b, self.links, targetValues=lrot[1:].tolist(),
                                   targetVelocities=ja[1:].tolist(), physicsClientId=c)

    def base_state(self):
        """Root ``pos (3,)``, ``rot (4,)``, world ``vel (3,)``, ``ang (3,)``."""
        p, b, c = self.p, self.body, self.client
        pos, orn = p.getBasePositionAndOrientation(b, physicsClientId=c)
        v, w = p.getBaseVelocity(b, physicsClientId=c)
        return np.array(pos), np.array(orn), np.array(v), np.array(w)

    def pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Root ``pos (3,)`` m and ``lrot (J, 4)`` xyzw now."""
        p, b, c = self.p, self.body, self.client
        pos, orn = p.getBasePositionAndOrientation(b, physicsClientId=c)
        st = p.getJointStatesMultiDof(b, self.links, physicsClientId=c)
        lrot = np.empty((self.J, 4))
        lrot[0] = orn
        lrot[1:] = [s[0] for s in st]
        return np.array(pos), quat.normalize(lrot)

    def contacts(self) -> tuple[np.ndarray, float]:
        """``(2,)`` bool: left/right foot segments touching the ground; and the deepest ground
        penetration (m, >= 0) of any contact point of the body."""
        p = self.p
        pts = p.getContactPoints(self.body, self.ground, physicsClientId=self.client)
        feet, pen, _ = self._contacts(pts)
        return feet, pen

    def foot_loads(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``contacts()`` plus ``(2,)`` N, the summed normal force on each foot's contacts
        (from the last ``stepSimulation``)."""
        pts = self.p.getContactPoints(self.body, self.ground, physicsClientId=self.client)
        feet, pen, load = self._contacts(pts)
        return feet, load, pen

    def _contacts(self, pts):
        feet = np.zeros(2, bool)
        load = np.zeros(2)
        pen = 0.0
        left, right = self.foot_links
        for cp in pts:
            link, dist = cp[3], cp[8]
            if dist < -pen:
                pen = -dist
            if link in left:
                feet[0] = True
                load[0] += cp[9]
            elif link in right:
                feet[1] = True
                load[1] += cp[9]
        return feet, pen, load

    def close(self) -> None:
        if self.client is not None and self.p.isConnected(self.client):
            self.p.disconnect(self.client)
        self.client = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
