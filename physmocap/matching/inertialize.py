"""Inertialization: hide the jump of a motion-matching transition in an offset that decays.

At a transition the output pose must not jump. The offset between the pose being left (source,
including the offset still decaying from earlier transitions) and the pose being entered
(destination) is stored; every frame it decays toward zero on a critically damped spring
(``spring.decay_spring``, with an honest halflife: a still offset halves in ``halflife`` s) and is
added to the playing pose (thesis Sec. 3.4; Holden's ``inertialize_transition`` /
``inertialize_update``; Bollo's "Inertialization", GDC 2018).

Positions: ``out = in + off``. Rotations: ``out = off * in`` (offset applied on the left, in the
parent's frame), with angular velocity ``out_w = off_w + rotate(off, in_w)`` (the exact angular
velocity of a product). ``transition_rotation`` chooses ``off_w`` so the output angular velocity
is continuous too; Holden's version (``off_w + src_w - dst_w``) is continuous only when the offset
is the identity.

Everything is pure and batched over leading axes (joints, characters): state goes in and comes
out. ``InertializeState`` bundles the four offsets of a whole pose; ``transition_pose`` and
``inertialize_pose`` apply the functions above to it. Arrays: positions ``(..., 3)`` m, velocities
``(..., 3)`` m/s, rotations ``(..., 4)`` xyzw unit quaternions, angular velocities ``(..., 3)``
rad/s; ``halflife`` and ``dt`` in seconds.

Typical frame (``src`` = the pose the database would have played next without the jump)::

    if jumped:
        state = transition_pose(state, src_lpos, src_lvel, src_lrot, src_lang,
                                dst_lpos, dst_lvel, dst_lrot, dst_lang)
    lpos, lvel, lrot, lang, state = inertialize_pose(state, db_lpos, db_lvel, db_lrot, db_lang,
                                                     halflife=0.1, dt=1 / fps)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quat
from .._arrays import frozen
from ..errors import ShapeError
from ..spring import decay_spring, decay_spring_rotation

__all__ = [
    "transition", "update", "transition_rotation", "update_rotation",
    "InertializeState", "transition_pose", "inertialize_pose",
]


def _f(a) -> np.ndarray:
    return np.asarray(a, dtype=float)


def transition(off_pos, off_vel, src_pos, src_vel, dst_pos, dst_vel):
    """New position offsets at a jump from ``src`` to ``dst`` (all ``(..., 3)``, m and m/s).

    ``src + off`` (what was shown) equals ``dst + new_off`` exactly, for position and velocity.
    Returns ``(off_pos, off_vel)``.
    """
    return (_f(src_pos) + _f(off_pos)) - _f(dst_pos), (_f(src_vel) + _f(off_vel)) - _f(dst_vel)


def update(off_pos, off_vel, in_pos, in_vel, halflife, dt):
    """Decay the offsets by ``dt`` s and apply them to the playing pose ``in_pos``, ``in_vel``.

    Returns ``(out_pos, out_vel, off_pos, off_vel)``, each ``(..., 3)``. With ``dt = 0`` the
    output is ``in + off`` unchanged (use it on the transition frame to check continuity).
    """
    off_pos, off_vel = decay_spring(off_pos, off_vel, halflife, dt)
    return _f(in_pos) + off_pos, _f(in_vel) + off_vel, off_pos, off_vel


def transition_rotation(off_rot, off_ang, src_rot, src_ang, dst_rot, dst_ang):
    """New rotation offsets at a jump from ``src`` to ``dst``.

    ``off_rot * src_rot`` (what was shown) equals ``new_off * dst_rot`` and the shown angular
    velocity ``off_ang + rotate(off_rot, src_ang)`` equals ``new_ang + rotate(new_off, dst_ang)``.
    Rotations ``(..., 4)`` xyzw, angular velocities ``(..., 3)`` rad/s. Returns
    ``(off_rot, off_ang)``; ``off_rot`` has ``w >= 0`` (shortest way back to identity).
    """
    off_rot, src_rot, dst_rot = _f(off_rot), _f(src_rot), _f(dst_rot)
    shown = quat.mul(off_rot, src_rot)
    new_rot = quat.abs_w(quat.normalize(quat.mul(shown, quat.conj(dst_rot))))
    shown_ang = _f(off_ang) + quat.rotate(off_rot, _f(src_ang))
    return new_rot, shown_ang - quat.rotate(new_rot, _f(dst_ang))


def update_rotation(off_rot, off_ang, in_rot, in_ang, halflife, dt):
    """Decay rotation offsets by ``dt`` s and apply them to the playing rotations.

    Returns ``(out_rot, out_ang, off_rot, off_ang)``: ``out_rot = off * in_rot`` ``(..., 4)``,
    ``out_ang = off_ang + rotate(off, in_ang)`` ``(..., 3)`` rad/s. ``out_rot`` keeps the sign
    hemisphere of ``in_rot``. ``halflife``, ``dt`` broadcast against the batch shape.
    """
    off_rot, off_ang = decay_spring_rotation(off_rot, off_ang, halflife, dt)
    in_rot = _f(in_rot)
    out = quat.mul(off_rot, in_rot)
    out = np.where(np.sum(out * in_rot, axis=-1, keepdims=True) < 0.0, -out, out)
    return out, off_ang + quat.rotate(off_rot, _f(in_ang)), off_rot, off_ang


@dataclass(frozen=True, eq=False)
class InertializeState:
    """Offsets of a whole pose of ``J`` joints (read-only arrays).

    Attributes:
        off_pos: ``(J, 3)`` m; off_vel: ``(J, 3)`` m/s; off_rot: ``(J, 4)`` xyzw;
        off_ang: ``(J, 3)`` rad/s. ``InertializeState.zeros(J)`` is "no transition pending".
    """

    off_pos: np.ndarray
    off_vel: np.ndarray
    off_rot: np.ndarray
    off_ang: np.ndarray

    def __post_init__(self):
        rot = frozen(self.off_rot, float, (None, 4), "off_rot")
        J = len(rot)
        object.__setattr__(self, "off_rot", rot)
        for name in ("off_pos", "off_vel", "off_ang"):
            object.__setattr__(self, name, frozen(getattr(self, name), float, (J, 3), name))

    @classmethod
    def zeros(cls, num_joints: int) -> "InertializeState":
        """Zero offsets (identity rotations) for ``num_joints`` joints."""
        if int(num_joints) < 1:
            raise ShapeError(f"InertializeState.zeros: need >= 1 joint, got {num_joints}")
        J = int(num_joints)
        z = np.zeros((J, 3))
        return cls(z, z, quat.identity((J,)), z)

    def __len__(self) -> int:
        return len(self.off_rot)


def transition_pose(state: InertializeState, src_lpos, src_lvel, src_lrot, src_lang,
                    dst_lpos, dst_lvel, dst_lrot, dst_lang) -> InertializeState:
    """``transition`` and ``transition_rotation`` for every joint: the state after a jump from
    the source pose (``(J, 3)``/``(J, 4)`` local positions, velocities, rotations, angular
    velocities) to the destination pose."""
    off_pos, off_vel = transition(state.off_pos, state.off_vel, src_lpos, src_lvel,
                                  dst_lpos, dst_lvel)
    off_rot, off_ang = transition_rotation(state.off_rot, state.off_ang, src_lrot, src_lang,
                                           dst_lrot, dst_lang)
    return InertializeState(off_pos, off_vel, off_rot, off_ang)


def inertialize_pose(state: InertializeState, lpos, lvel, lrot, lang, halflife, dt):
    """``update`` and ``update_rotation`` for every joint of the playing pose.

    Args:
        state: offsets of ``J`` joints; lpos, lvel, lang: ``(J, 3)``; lrot: ``(J, 4)`` xyzw.
        halflife: s, scalar or ``(J,)`` (per joint); dt: s.

    Returns:
        ``(lpos, lvel, lrot, lang, state)``: the shown pose and the decayed offsets.
    """
    J = len(state)
    for name, a, n in (("lpos", lpos, 3), ("lvel", lvel, 3), ("lrot", lrot, 4), ("lang", lang, 3)):
        if np.shape(a) != (J, n):
            raise ShapeError(f"inertialize_pose: {name} expected shape ({J}, {n}), "
                             f"got {np.shape(a)}")
    # a float stays a float: the springs' ``_halflife`` checks it without numpy's overhead
    h = halflife if type(halflife) is float else np.asarray(halflife, dtype=float)
    hv = h[..., None] if np.ndim(h) else h  # per-joint halflife against (J, 3)
    out_pos, out_vel, off_pos, off_vel = update(state.off_pos, state.off_vel, lpos, lvel, hv, dt)
    out_rot, out_ang, off_rot, off_ang = update_rotation(state.off_rot, state.off_ang, lrot, lang,
                                                         h, dt)
    return out_pos, out_vel, out_rot, out_ang, InertializeState(off_pos, off_vel, off_rot, off_ang)
