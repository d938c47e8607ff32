"""Simulated hands that reach world targets: the reference's arms bent again, every frame, for the
body as it is (closed-loop two-bone IK).

A reference whose arms were bent to reach two controllers (``matching.avatar.avatar_on_body``)
puts the simulated hands on them only if the simulated torso is where the reference's is, and it
never quite is: the root assist, the ground and the joint motors leave each shoulder a few cm
and degrees off (held-out avatar walks and runs, ``benchmarks/avatar_eval.py --offset 5
--physics --no-reach``: the simulated wrists 2.71 cm from the reachable controllers on
average, 8 % of those wrist-frames within 1 cm; with ``ArmReach`` 0.32 cm and 97 %). So
``ArmReach`` re-solves the arms each frame against the simulated chest:

* the chest Q (the clavicle's parent) of the simulated body at the frame's start, ``S0``,
  against the reference it followed, ``R0``, gives the deviation ``R0⁻¹ S0`` in Q's own frame;
* the deviation keeps changing as it did over the last frame (``D = E_prev⁻¹ E``, ``E`` =
  ``R0⁻¹ S0``), for a part ``a`` of that change (``extrapolate``, 0.5): the chest will be at
  ``S1 = R1 E Dᵃ`` when the reference is at ``R1``;
* a hand at the world target ``t`` on the simulated body is, in the reference, at
  ``t' = R1 S1⁻¹ t = R1 (E Dᵃ)⁻¹ R1⁻¹ t``, and the two-bone IK bends the reference's arm there
  (elbow in its bend plane, hand keeping its world rotation).

The joint motors then carry the simulated arm, on the chest as it is, onto ``t``, with a
stiffer gain than the rest of the body's (``TrackingSettings.reach_kp``), and its clavicle,
which carries the shoulder, onto the reference's with the same gain. Within the frame the
chest moves on (a run's swings further than the carried-on deviation says): ``Tracker`` bends the
arms again before every physics step for the chest the simulation has then, carried along its
velocity to where it is when the motors get there, and for the controllers and the reference
interpolated to that time (``bend_chest`` with ``predict=False``: the deviation as read, not
carried on; ``TrackingSettings.reach_every_step``, ``reach_ahead``; not under balance feedback,
whose plan sets every motor). Only the arm joints' targets change: the rest
of the reference, and the physics, are untouched, so it holds in both root modes. Two loops were
tried and dropped, both unstable through the light clavicle, which the swinging arm's reaction
turns: the deviation taken at the clavicle itself (a standing body reaching from its T-pose to a
point before its chest rang for the whole second, the clavicle up to 150 deg off, the hands 20 cm
off on average, instead of settling within 1 mm in 0.5 s); and a feedback term on the hand's
remaining miss (15 cm at the shoulder on two of fourteen held-out walks). Measured on those walks
and runs (assist mode, ``benchmarks/avatar_eval.py --offset 5 --physics``), the chest and clavicle
frames gave the same figures, bent once a frame (re-solved before every step, the clavicle frame
rang on two of nine held-out walks, the hands 22 cm off: ``benchmarks/RESULTS.md``). The
deviation's change carried on (``extrapolate``) 0 / 0.5 / 1: hands 0.38 / 0.32 / 0.34 cm, 94.5 /
96.7 / 96.5 % within 1 cm; on the other held-out split (``--offset 3``) 0 / 0.5: 0.38 / 0.33 cm,
94.2 / 96.1 %. A virtual spring pulling each simulated wrist toward its controller (an external
force like the root assist, the marker solver's springs) was tried on top, at 3000 N/m, 80 N·s/m,
80 N a hand: 98.6 -> 99.0 % of the held-out runs' wrist-frames within 1 cm for 110 N of force on
the hands on average, and dropped.
"""
from __future__ import annotations

import numpy as np

from .. import quat
from ..errors import SettingsError, ShapeError, UnknownNameError, require_numbers
from ..ik import two_bone_ik_t
from ..skeleton import (Skeleton, forward_kinematics, forward_kinematics_chain,
                        forward_kinematics_frame)

__all__ = ["ArmReach", "HANDS", "hand_distances", "reach_report"]

HANDS = ("LeftHand", "RightHand")


class ArmReach:
    """Bends a reference's arms so that the simulated hands reach world targets (module doc).

    Args:
        skeleton: the simulated body's skeleton; ``hands`` name its wrists, each with a forearm,
            an upper arm and a parent (clavicle) above it.
        extrapolate: the part of the chest deviation's change over the last frame that is
            carried on over the next (``a`` of the module doc; 0: the deviation persists).
    Stateful: ``bend`` remembers the deviation for the next frame; ``reset`` forgets it.
    """

    def __init__(self, skeleton: Skeleton, hands: tuple = HANDS, extrapolate: float = 0.5):
        try:
            c = np.array([skeleton.names.index(h) for h in hands])
        except ValueError:
            raise UnknownNameError(f"ArmReach: the skeleton has no joints {', '.join(hands)} "
                                   f"(its wrists)") from None
        par = np.asarray(skeleton.parents)
        if np.any(c <= 0) or np.any(par[c] <= 0) or np.any(par[par[c]] <= 0):
            raise UnknownNameError("ArmReach: each hand needs a forearm, an upper arm and a "
                                   "parent above them")
        self.skeleton = skeleton
        self.hands = c                          # (K,) wrists
        self.elbows = par[c]
        self.shoulders = par[self.elbows]       # the arms' root joints
        self.parents = par[self.shoulders]      # the chains' parents (clavicles)
        self.frames = par[self.parents]         # Q: the frames the deviation is taken in (chest)
        # (K, 3): each arm's shoulder, elbow and wrist (the joints ``bend`` changes)
        self.joints = np.stack([self.shoulders, self.elbows, c], axis=1)
        self.length = (np.linalg.norm(skeleton.offsets[c], axis=-1)
                       + np.linalg.norm(skeleton.offsets[self.elbows], axis=-1))   # (K,) m
        if not 0.0 <= extrapolate <= 1.0:                    # also refuses NaN
            raise SettingsError(f"ArmReach: extrapolate must be within 0 and 1, got "
                                f"{extrapolate!r}")
        self.extrapolate = float(extrapolate)
        self._last = None          # the last deviation E: rotations (K, 4), offsets (K, 3)

    def reset(self) -> None:
        """Forget the last deviation (a new take, or the body placed anew)."""
        self._last = None

    def bend(self, sim: tuple, ref0: tuple, ref1: tuple, targets: np.ndarray,
             fk1: tuple | None = None) -> np.ndarray:
        """The reference pose ``ref1`` with its arms bent for the simulated body.

        Args:
            sim: ``(root_pos (3,), lrot (J, 4))`` the simulated body at the frame's start.
            ref0: the reference it was following then, ``(root_pos, lrot)`` (as bent).
            ref1: the reference of the frame now, ``(root_pos, lrot)``.
            targets: ``(K, 3)`` m world points for the hands; a row with a NaN: that hand keeps
                the reference's arm.
        Returns:
            ``lrot (J, 4)``: ``ref1``'s local rotations, the arms re-solved.
        """
        xs, gs = forward_kinematics_frame(self.skeleton, sim[1], sim[0])
        return self.bend_chest((xs[self.frames], gs[self.frames]), ref0, ref1, targets,
                               fk1=fk1)

    def bend_chest(self, chest: tuple, ref0: tuple | None, ref1: tuple, targets: np.ndarray,
                   predict: bool = True, fk1: tuple | None = None) -> np.ndarray:
        """``bend`` with the simulated body given by its chests alone: ``chest = (x (K, 3),
        g (K, 4))``, the world position (m) and rotation of each arm's frame Q
        (``self.frames``), e.g. read from the simulation between two physics steps.
        ``predict``: carry the deviation's change on (``extrapolate``) and remember it for
        the next frame; else the deviation as it is now, the memory untouched (a re-solve
        within a frame, ``TrackingSettings.reach_every_step``). ``fk1``: ``ref1``'s
        ``forward_kinematics_frame`` if the caller has it (the re-solves of one frame share
        one ``ref1``). ``ref0`` ``None``: the deviation is taken against ``ref1`` itself."""
        targets = np.asarray(targets, float)
        if targets.shape != (len(self.hands), 3):
            raise ShapeError(f"ArmReach: targets must be ({len(self.hands)}, 3), got "
                             f"{targets.shape}")
        live = ~np.isnan(targets).any(axis=1)
        lrot = np.array(ref1[1], float)
        sk = self.skeleton
        Q = self.frames
        x1, g1 = forward_kinematics_frame(sk, lrot, ref1[0]) if fk1 is None else fk1
        # R0: the chests alone (ref1's, the same arithmetic, when ref0 is ref1)
        x0, g0 = (x1[Q], g1[Q]) if ref0 is None else \
            forward_kinematics_chain(sk, ref0[1], ref0[0], Q)
        # one arm at a time in plain floats, bit for bit the array arithmetic (``quat.*_t``,
        # ``two_bone_ik_t``): numpy's per-call overhead on two arms was most of a bend, and
        # ``TrackingSettings.reach_every_step`` bends before every physics step.
        # The deviation E = R0⁻¹ S0 of each chest (x -> e_q x + e_p in its own frame)
        conj, mul, rot = quat.conj_t, quat.mul_t, quat.rotate_exact_t
        e = []
        for x0q, g0q, xs, gs in zip(x0.tolist(), g0.tolist(), np.asarray(chest[0], float).tolist(),
                                    np.asarray(chest[1], float).tolist()):
            e.append((mul(conj(g0q), gs), rot(conj(g0q), [xs[i] - x0q[i] for i in range(3)])))
        # Dᵃ: its change over the last frame carried on for a part of it (``predict``)
        d = None
        if predict:
            e_q, e_p = np.array([a for a, _ in e]), np.array([b for _, b in e])
            if self._last is not None and self.extrapolate > 0:
                l_q, l_p = self._last
                d = list(zip(quat.from_scaled_axis(self.extrapolate * quat.to_scaled_axis(
                    quat.mul(quat.conj(l_q), e_q))).tolist(),
                    (self.extrapolate * quat.inv_rotate(l_q, e_p - l_p)).tolist()))
            self._last = (e_q, e_p)
        if not live.any():
            return lrot
        t_ref = []
        for k in np.flatnonzero(live).tolist():
            q = int(Q[k])
            x1q, g1q = x1[q].tolist(), g1[q].tolist()
            t = targets[k].tolist()
            v = rot(conj(g1q), [t[i] - x1q[i] for i in range(3)])              # R1⁻¹ t
            e_q, e_p = e[k]
            v = rot(conj(e_q), [v[i] - e_p[i] for i in range(3)])              # E⁻¹ ...
            if d is not None:
                d_q, d_p = d[k]
                v = rot(conj(d_q), [v[i] - d_p[i] for i in range(3)])          # D⁻ᵃ ...
            r = rot(g1q, v)
            t_ref.append([x1q[i] + r[i] for i in range(3)])                    # R1 ...
        P, A, B, C = (a[live] for a in (self.parents, self.shoulders, self.elbows, self.hands))
        # the hand keeps its world rotation
        for a, b, c, p, t in zip(A, B, C, P, t_ref):
            ga, gb, _ = two_bone_ik_t(x1[a].tolist(), x1[b].tolist(), x1[c].tolist(), t,
                                      g1[a].tolist(), g1[b].tolist())
            lrot[a] = mul(conj(g1[p].tolist()), ga)
            lrot[b] = mul(conj(ga), gb)
            lrot[c] = mul(conj(gb), g1[c].tolist())
        return quat.normalize(lrot)


def hand_distances(skeleton: Skeleton, root_pos: np.ndarray, lrot: np.ndarray,
                   targets: np.ndarray, hands: tuple = HANDS
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per frame, how far the hands of a motion (``root_pos (F, 3)``, ``lrot (F, J, 4)``) are
    from ``targets (F, K, 3)`` m (NaN rows: no target): ``(d, on, ok)``, each ``(F, K)``: the
    distance (m; NaN without a target), whether there is a target, and whether it is reachable
    (within the arm's length, upper arm + forearm, of the shoulder)."""
    arm = ArmReach(skeleton, hands)
    targets = np.asarray(targets, float)
    F = len(root_pos)
    if targets.shape != (F, len(arm.hands), 3):
        raise ShapeError(f"reach_report / hand_distances: targets must be ({F}, "
                         f"{len(arm.hands)}, 3), got {targets.shape}")
    g, _ = forward_kinematics(skeleton, lrot, root_pos)
    on = ~np.isnan(targets).any(axis=-1)
    d = np.linalg.norm(g[:, arm.hands] - targets, axis=-1)
    ok = on & (np.linalg.norm(targets - g[:, arm.shoulders], axis=-1) <= arm.length)
    return d, on, ok


def reach_report(skeleton: Skeleton, root_pos: np.ndarray, lrot: np.ndarray,
                 targets: np.ndarray, hands: tuple = HANDS, tolerance: float = 0.01) -> dict:
    """How close the hands of a motion came to ``targets`` (``hand_distances``'s arguments):
    mean distances (all target frames, reachable ones), the reachable share, and
    ``within_tolerance_fraction``: the reachable hand-frames within ``tolerance`` m."""
    require_numbers("reach_report", ("tolerance",), tolerance=tolerance)
    d, on, ok = hand_distances(skeleton, root_pos, lrot, targets, hands)
    mean = lambda x: float(np.mean(x)) if x.size else None                    # noqa: E731
    return {"hand_error_m": mean(d[on]),
            "hand_error_reachable_m": mean(d[ok]),
            "hand_error_reachable_p90_m": float(np.percentile(d[ok], 90)) if ok.any() else None,
            "hand_reachable_fraction": float(ok.sum() / max(on.sum(), 1)),
            "within_tolerance_fraction": mean(d[ok] <= tolerance),
            "tolerance_m": tolerance}
