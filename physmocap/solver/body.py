"""A PyBullet articulated body built from a ``Skeleton``: one link per joint, fixed limb lengths.

PyBullet facts this module relies on (checked in ``tests/test_solver_body.py``):

* ``createMultiBody`` link positions are relative to the parent's *link* frame, but
  ``resetBasePositionAndOrientation`` and ``getBasePositionAndOrientation`` use the base's
  centre of mass. The base's inertial frame is therefore put at the root joint, so both agree.
* A link's frame is its joint: ``getLinkStates(...)[4:6]`` is the joint's world pose, and a
  spherical joint's state is the child's rotation in its parent's frame (xyzw), i.e. ``lrot``.
* Default joint motors must be switched off (they hold joints still); the resistive controller
  here is PyBullet's own joint PD motor with zero position gain, i.e. pure damping.
* External forces are cleared after every ``stepSimulation``: re-apply them every sub-step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quat
from ..errors import PhysmocapError
from ..skeleton import Skeleton

__all__ = ["JointSpec", "PhysicsBody", "default_joint_spec", "import_pybullet"]


def _flush_c_stdio() -> None:
    try:
        import ctypes
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to ask: the banner may show, no harm
        pass


def import_pybullet():
    """``import pybullet`` without the build-time banner it prints on stderr (it would break
    the CLI's rule of one clear line per problem, and interleave with progress lines)."""
    import sys
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    import os
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            import pybullet
            _flush_c_stdio()  # in case the banner sits in a C stdio buffer
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return pybullet


@dataclass(frozen=True)
class JointSpec:
    """Per-joint physical properties (all arrays ``(J, …)``, root at index 0).

    Attributes:
        kind: ``'free'`` (root), ``'ball'`` or ``'hinge'``.
        axis: ``(J, 3)`` hinge axis in the joint's own frame (NaN for non-hinge joints).
        limits: ``(J, 2)`` radians; hinge: (min, max) angle; ball: (swing half-angle, twist
            half-range).
        mass: ``(J,)`` kg of the segment that starts at the joint.
        twist_axis: ``(J, 3)`` unit bone direction in the joint frame (for ball-joint twist).
        twist_mid: ``(J,)`` radians, the middle of a ball joint's twist range (None: 0), as
            ``BodyTemplate.twist_mid``.
    """

    kind: tuple
    axis: np.ndarray
    limits: np.ndarray
    mass: np.ndarray
    twist_axis: np.ndarray
    twist_mid: np.ndarray | None = None

    def __post_init__(self):
        if self.twist_mid is None:
            object.__setattr__(self, "twist_mid", np.zeros(len(self.kind)))


def _segment_vectors(skeleton: Skeleton) -> np.ndarray:
    """``(J, 3)`` m, ``Skeleton.segment_vectors`` with a short default along the incoming bone
    for leaves without an End Site (a segment needs some extent for its centre of mass)."""
    seg = skeleton.segment_vectors()
    bare = [j for j in range(1, len(skeleton))
            if not skeleton.children(j) and np.isnan(skeleton.end_sites[j, 0])]
    seg[bare] = 0.3 * skeleton.offsets[bare]
    return seg


def _segment_lengths(skeleton: Skeleton) -> np.ndarray:
    """``(J,)`` m, a segment's size: mean distance to its children (a pelvis whose child offsets
    cancel out still has a size), else its End Site, else 0."""
    J = len(skeleton)
    out = np.zeros(J)
    for j in range(J):
        kids = skeleton.children(j)
        if kids:
            out[j] = np.mean([np.linalg.norm(skeleton.offsets[c]) for c in kids])
        elif not np.isnan(skeleton.end_sites[j, 0]):
            out[j] = np.linalg.norm(skeleton.end_sites[j])
    return out


def default_joint_spec(skeleton: Skeleton, total_mass: float = 70.0) -> JointSpec:
    """Ball joints everywhere, masses proportional to segment length, no tight limits."""
    J = len(skeleton)
    seg = _segment_vectors(skeleton)
    length = _segment_lengths(skeleton) + 0.02
    mass = total_mass * length / length.sum()
    n = np.linalg.norm(seg, axis=-1, keepdims=True)
    twist = np.where(n > 1e-6, seg / np.maximum(n, 1e-9), np.array([0.0, 0.0, 1.0]))
    kinds = ("free",) + ("ball",) * (J - 1)
    limits = np.tile([np.pi, np.pi], (J, 1))
    return JointSpec(kinds, np.full((J, 3), np.nan), limits, mass, twist)


class PhysicsBody:
    """The skeleton as a PyBullet multibody in its own DIRECT client.

    Link ``j - 1`` is joint ``j``; the base is the root. Each link's centre of mass sits halfway
    along its segment (so gravity and inertia are those of a limb, not of a point at the joint).
    With ``hinge_as_ball`` hinges become 3-DoF joints whose hinge-likeness the caller enforces
    with torques (the marker solver does, so a pose never jumps by projection onto an axis).
    """

    def __init__(self, skeleton: Skeleton, spec: JointSpec | None = None, gravity: float = 0.0,
                 timestep: float = 1.0 / 240.0, hinge_as_ball: bool = False):
        p = import_pybullet()
        self.p = p
        self.skeleton = skeleton
        self.spec = spec or default_joint_spec(skeleton)
        J = len(skeleton)
        self.client = p.connect(p.DIRECT)
        if self.client < 0:
            raise PhysmocapError("could not start a PyBullet physics client")
        p.setGravity(0, 0, -gravity, physicsClientId=self.client)
        p.setTimeStep(timestep, physicsClientId=self.client)
        self.timestep = timestep
        seg = _segment_vectors(skeleton)
        kinds = {"ball": p.JOINT_SPHERICAL,
                 "hinge": p.JOINT_SPHERICAL if hinge_as_ball else p.JOINT_REVOLUTE}
        link_types = []
        for j in range(1, J):
            k = self.spec.kind[j]
            if k not in kinds:
                raise PhysmocapError(f"joint {skeleton.names[j]!r}: unknown kind {k!r}")
            link_types.append(kinds[k])
        axes = np.nan_to_num(self.spec.axis, nan=0.0)
        axes[1:][np.linalg.norm(axes[1:], axis=-1) == 0] = [0.0, 0.0, 1.0]
        mass = np.maximum(self.spec.mass, 1e-3)
        self.body = p.createMultiBody(
            baseMass=float(mass[0]), baseCollisionShapeIndex=-1, baseVisualShapeIndex=-1,
            basePosition=[0, 0, 0], baseOrientation=[0, 0, 0, 1],
            baseInertialFramePosition=[0, 0, 0],  # COM at the root joint: see module docstring
            linkMasses=[float(m) for m in mass[1:]],
            linkCollisionShapeIndices=[-1] * (J - 1), linkVisualShapeIndices=[-1] * (J - 1),
            linkPositions=[list(map(float, o)) for o in skeleton.offsets[1:]],
            linkOrientations=[[0, 0, 0, 1]] * (J - 1),
            linkInertialFramePositions=[list(map(float, 0.5 * s)) for s in seg[1:]],
            linkInertialFrameOrientations=[[0, 0, 0, 1]] * (J - 1),
            linkParentIndices=[int(pj) for pj in skeleton.parents[1:]],
            linkJointTypes=link_types, linkJointAxis=[list(map(float, a)) for a in axes[1:]],
            physicsClientId=self.client)
        self.links = list(range(J - 1))
        self.ball = [j for j in range(1, J)
                     if self.spec.kind[j] == "ball" or (hinge_as_ball and self.spec.kind[j] == "hinge")]
        self.hinge = [j for j in range(1, J) if self.spec.kind[j] == "hinge" and not hinge_as_ball]
        self.hinge_axis = axes
        # Switch the default motors off; damping comes from set_damping.
        self.set_damping(0.0)
        for j in self.hinge:
            lo, hi = self.spec.limits[j]
            p.changeDynamics(self.body, j - 1, jointLowerLimit=float(lo), jointUpperLimit=float(hi),
                             jointLimitForce=1e4, physicsClientId=self.client)
        # Without collision shapes PyBullet has no inertia to go by: give each segment that of
        # a solid rod of its length (isotropic, since the inertial frame is not bone-aligned).
        length = np.maximum(_segment_lengths(skeleton), 0.05)
        inertia = mass * (length ** 2 / 12.0 + 0.04 ** 2 / 4.0)
        # (changeDynamics with linearDamping on a link index writes to the base instead: set
        # the multibody's damping once, on the base, and inertia per link in separate calls.)
        p.changeDynamics(self.body, -1, linearDamping=0.0, angularDamping=0.0,
                         physicsClientId=self.client)
        for j in range(J):
            p.changeDynamics(self.body, j - 1, localInertiaDiagonal=[float(inertia[j])] * 3,
                             physicsClientId=self.client)

    # --- control --------------------------------------------------------------------------

    def set_damping(self, kd: float, max_torque: float = 1e4) -> None:
        """Resistive joint torques ``-kd * joint velocity`` (N·m·s/rad), up to ``max_torque``.

        Uses PyBullet's implicit joint PD motor with zero position gain, which stays stable at
        gains where an explicit torque would blow up.
        """
        p = self.p
        for j in self.ball:
            p.setJointMotorControlMultiDof(
                self.body, j - 1, p.POSITION_CONTROL, targetPosition=[0, 0, 0, 1],
                targetVelocity=[0, 0, 0], positionGain=0.0, velocityGain=float(kd > 0),
                force=[max_torque * float(kd > 0)] * 3, physicsClientId=self.client)
        for j in self.hinge:
            p.setJointMotorControl2(self.body, j - 1, p.VELOCITY_CONTROL, targetVelocity=0.0,
                                    force=max_torque * float(kd > 0),
                                    physicsClientId=self.client)

    def set_mass_properties(self, mass: np.ndarray, inertia: np.ndarray) -> None:
        """Per-segment ``mass (J,)`` kg and isotropic ``inertia (J,)`` kg·m² about its COM."""
        p = self.p
        for j in range(len(self.skeleton)):  # mass and inertia in separate calls: see above
            p.changeDynamics(self.body, j - 1, mass=float(mass[j]), physicsClientId=self.client)
        for j in range(len(self.skeleton)):
            p.changeDynamics(self.body, j - 1, localInertiaDiagonal=[float(inertia[j])] * 3,
                             physicsClientId=self.client)

    def scale_velocities(self, keep: float) -> np.ndarray:
        """Multiply every joint and root velocity by ``keep`` (0 stops the body).

        Returns the ball joints' rotations ``(len(ball), 4)`` read on the way (saves a call).
        """
        p, b, c = self.p, self.body, self.client
        v, w = p.getBaseVelocity(b, physicsClientId=c)
        p.resetBaseVelocity(b, [x * keep for x in v], [x * keep for x in w], physicsClientId=c)
        q = np.empty((len(self.ball), 4))
        if self.ball:
            links = [j - 1 for j in self.ball]
            st = p.getJointStatesMultiDof(b, links, physicsClientId=c)
            q[:] = [s[0] for s in st]
            p.resetJointStatesMultiDof(b, links, targetValues=[s[0] for s in st],
                                       targetVelocities=[[x * keep for x in s[1]] for s in st],
                                       physicsClientId=c)
        for j in self.hinge:
            a, qd = p.getJointState(b, j - 1, physicsClientId=c)[:2]
            p.resetJointState(b, j - 1, a, qd * keep, physicsClientId=c)
        return q

    def set_joint_torques(self, ball_torques: np.ndarray) -> None:
        """Joint torques ``(len(ball), 3)`` N·m on the ball joints, in each joint's frame (they
        act equal and opposite on child and parent), for the next physics step only: PyBullet
        clears them after each step, so set them before every step."""
        if self.ball:
            self.p.setJointMotorControlMultiDofArray(
                self.body, [j - 1 for j in self.ball], self.p.TORQUE_CONTROL,
                forces=[list(map(float, t)) for t in ball_torques], physicsClientId=self.client)

    # --- state ----------------------------------------------------------------------------

    def set_pose(self, root_pos: np.ndarray, lrot: np.ndarray, zero_velocity: bool = True) -> None:
        """Place the body: ``root_pos (3,)`` m, ``lrot (J, 4)`` xyzw."""
        p = self.p
        p.resetBasePositionAndOrientation(self.body, list(map(float, root_pos)),
                                          list(map(float, lrot[0])), physicsClientId=self.client)
        if zero_velocity:
            p.resetBaseVelocity(self.body, [0, 0, 0], [0, 0, 0], physicsClientId=self.client)
        for j in self.ball:
            p.resetJointStateMultiDof(self.body, j - 1, targetValue=list(map(float, lrot[j])),
                                      targetVelocity=[0, 0, 0], physicsClientId=self.client)
        for j in self.hinge:
            p.resetJointState(self.body, j - 1, float(self.hinge_angle(lrot[j], j)), 0.0,
                              physicsClientId=self.client)

    def hinge_angle(self, q: np.ndarray, j: int) -> float:
        """Angle (rad) of the rotation ``q`` about joint ``j``'s hinge axis (twist part)."""
        a = self.hinge_axis[j]
        s = float(np.dot(q[:3], a))
        return 2.0 * np.arctan2(s, q[3])

    def get_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """``root_pos (3,)`` m and ``lrot (J, 4)`` xyzw of the body now."""
        p = self.p
        pos, orn = p.getBasePositionAndOrientation(self.body, physicsClientId=self.client)
        lrot = quat.identity((len(self.skeleton),))
        lrot[0] = orn
        if self.ball:
            states = p.getJointStatesMultiDof(self.body, [j - 1 for j in self.ball],
                                              physicsClientId=self.client)
            lrot[self.ball] = [s[0] for s in states]
        if self.hinge:
            states = p.getJointStates(self.body, [j - 1 for j in self.hinge],
                                      physicsClientId=self.client)
            ang = np.array([s[0] for s in states])
            lrot[self.hinge] = quat.from_axis_angle(self.hinge_axis[self.hinge], ang)
        return np.array(pos), quat.normalize(lrot)

    def joint_frames(self) -> tuple[np.ndarray, np.ndarray]:
        """World positions ``(J, 3)`` and rotations ``(J, 4)`` of every joint frame, now."""
        p = self.p
        pos, orn = p.getBasePositionAndOrientation(self.body, physicsClientId=self.client)
        rows = [pos + orn]
        if self.links:
            states = p.getLinkStates(self.body, self.links, computeForwardKinematics=1,
                                     physicsClientId=self.client)
            rows += [s[4] + s[5] for s in states]
        frames = np.array(rows)
        return frames[:, :3], frames[:, 3:]

    def apply_forces(self, joints: np.ndarray, points: np.ndarray, forces: np.ndarray) -> None:
        """World ``forces (K, 3)`` N at world ``points (K, 3)`` on the segments of ``joints (K,)``.

        Forces last one sub-step: PyBullet clears them after every ``stepSimulation``.
        """
        p = self.p
        flag = p.WORLD_FRAME
        for j, x, f in zip(joints.tolist(), points.tolist(), forces.tolist()):
            p.applyExternalForce(self.body, j - 1, f, x, flag, physicsClientId=self.client)

    def step(self) -> None:
        self.p.stepSimulation(physicsClientId=self.client)

    def close(self) -> None:
        if self.client is not None and self.p.isConnected(self.client):
            self.p.disconnect(self.client)
        self.client = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):  # best effort; close() is the reliable path
        try:
            self.close()
        except Exception:
            pass
