"""Kinematic reference solver: fit a skeleton's pose to marker positions frame by frame.

Damped least squares (Levenberg–Marquardt) on the marker residuals, with an analytic Jacobian and
every frame of a batch solved at once (loops run over joints, never over frames). It ignores
physics; the physical solver is measured against it, and it gives that solver a starting pose.

Model. Marker ``m`` sits rigidly on joint ``b = markerset.body[m]`` at ``markerset.offset[m]`` in
that joint's frame::

    p_m = gpos[b] + rotate(grot[b], offset[m])

Parameters per frame (``P = 3 + 3 * n_free``): the root translation (m) and, for each free joint
``j`` in index order, a rotation increment ``delta_j`` (rad) applied on the right of the local
rotation, ``lrot_j <- lrot_j * exp(delta_j)`` (``quat.from_scaled_axis``). The increment's axes
are then the columns of ``grot_j``, so the Jacobian column of ``delta_j[k]`` for a marker
downstream of ``j`` is ``(grot_j e_k) x (p_m - gpos_j)``; the translation columns are the identity.

Normal equations. ``marker_jacobian`` builds ``J`` as ``(F, 3M, P)`` (the reference, used by
the tests). The solver does not multiply ``J^T W J`` densely: with ``P ~ 90`` and ``3M ~ 190``
that costs ~3.4 Mflop per frame and iteration and capped the solver near 500 frames/s. Because
every block of ``J`` is a cross product with a lever ``p_m - gpos_j``, each block of ``J^T W J``
and ``J^T W r`` is a closed form in the zeroth, first and second weighted moments of the visible
markers of one subtree (``_normal_equations``, checked against the dense product in the tests).
That is O(F·(M + pairs)) instead of O(F·M·P²).

Rotation prior. Markers cannot separate every joint: a thigh twist and an off-axis knee
rotation, a forearm twist and a wrist twist, the spin of a toe carrying one marker. An optional
quadratic prior ``sum_j (v_j - c_j)^T W_j (v_j - c_j)`` on the rotation vectors
``v_j = log(lrot_j)`` (rad, ``quat.to_scaled_axis``) picks the anatomical split: ``hinge_prior``
makes hinges stiff off their axis and can hold joints near rest. ``W_j`` is in m^2/rad^2, so it
adds to the marker cost (m^2) directly. It is part of the LM cost exactly, and of the normal
equations by Gauss–Newton: ``d v_j / d delta_j = Jr^-1(v_j)``, the inverse right Jacobian of
SO(3), so the prior adds ``Jr^-T W Jr^-1`` to the joint's 3x3 diagonal block — O(F·J).

Minima. LM finds the minimum its start leads to; each frame starts from a solved frame before
it. Where the markers leave two minima (a shoulder twisted either way about the upper arm), a
stretch of frames can hold the worse one. ``_settle`` solves the frames around each sudden turn
again from their neighbours' poses and keeps the better fit, spreading it along the stretch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import quat
from ..errors import ShapeError, bad_number
from ..markers import MarkerSet
from ..motion import Motion
from ..skeleton import Skeleton, forward_kinematics

__all__ = [
    "KinematicResult", "solve_kinematic", "marker_positions", "marker_jacobian",
    "default_free_joints", "observable_joints", "hinge_prior", "HINGE_OFF_AXIS_WEIGHT",
    "FIXED_JOINT_WEIGHT", "CLAVICLE_TWIST_WEIGHT",
]

# Relative damping on start, its bounds, and the absolute ridge (m^2, on J^T W J) that keeps
# directions no visible marker constrains (a joint twist with one marker, a joint whose whole
# subtree is unseen) where they start.
_LAMBDA0 = 1e-3
_LAMBDA_MIN = 1e-12
_LAMBDA_MAX = 1e10
_RIDGE = 1e-9


@dataclass(frozen=True, eq=False)
class KinematicResult:
    """What ``solve_kinematic`` returns.

    Attributes:
        motion: the solved ``Motion`` (``meta['solver'] == 'kinematic'``).
        residual: ``(F, M)`` m, distance between each observed marker and the model's marker;
            NaN where the marker was missing.
        iterations: ``(F,)`` int, LM iterations spent on each frame (accepted and rejected);
            0 for frames with no visible marker.
        converged: ``(F,)`` bool; False where the iteration cap was hit or no marker was seen.
        outlier: ``(F, M)`` bool, True where the residual exceeds ``max_marker_pull``
            (all False when it was not given).
        rms: ``(F,)`` m, root mean square of the visible residuals (NaN with none visible).
        free_joints: ``(J,)`` bool, the joints that were allowed to rotate.
        observable: ``(J,)`` bool, joints whose *local* rotation the marker set determines
            (see ``observable_joints``).
        seed_frame: the frame solved first from the rest pose; the others were warm-started
            from it outwards.
    """

    motion: Motion
    residual: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    outlier: np.ndarray
    rms: np.ndarray
    free_joints: np.ndarray
    observable: np.ndarray
    seed_frame: int


# --------------------------------------------------------------------------- model


def _check_markerset(skeleton: Skeleton, markerset: MarkerSet) -> None:
    J = len(skeleton)
    if len(markerset) == 0:
        raise ShapeError("marker set is empty")
    bad = np.flatnonzero(markerset.body >= J)
    if bad.size:
        m = int(bad[0])
        raise ShapeError(
            f"marker {markerset.names[m]!r} sits on body {int(markerset.body[m])}, but the "
            f"skeleton has only {J} joints (0..{J - 1}); the marker set does not fit it")


#: frames at a time where a whole take is transformed: a long take needs no temporaries beyond
#: its outputs.
_BLOCK = 4096
#: most frames solved in one batch (one round of ``_schedule``'s); the batch holds ~100 kB a frame.
_ROUND_BATCH = 256
#: s: how far back a frame seeing every marker may start by default (``solve_kinematic``'s
#: ``chunk``, in frames at its ``fps``). 32 frames (0.27 s at 120 Hz; 0.53 s in calibration's
#: first poses, a stride of the take) started swinging arms so far back that CMU 01_01, calibrated
#: with its settings nudged ten ways (``benchmarks/calibration_robustness.py``), gave subjects
#: whose solve held the left forearm 5-9 cm off LFRM in ~425 frames with every marker seen (the
#: robust loss giving that marker up), or subjects fitted 5.8-8.0 mm RMS: five of the ten. Now
#: all ten fit 4.3-4.6 mm and solve the forearm on.
CHUNK_SECONDS = 0.125


def marker_positions(skeleton: Skeleton, markerset: MarkerSet, lrot: np.ndarray,
                     root_pos: np.ndarray) -> np.ndarray:
    """World marker positions ``(F, M, 3)`` m of a pose.

    Args:
        lrot: ``(F, J, 4)`` xyzw local rotations.
        root_pos: ``(F, 3)`` m.
    """
    _check_markerset(skeleton, markerset)
    F = len(lrot)
    if F > _BLOCK:
        out = np.empty((F, len(markerset), 3))
        for s in range(0, F, _BLOCK):
            out[s:s + _BLOCK] = marker_positions(skeleton, markerset, lrot[s:s + _BLOCK],
                                                 root_pos[s:s + _BLOCK])
        return out
    gpos, grot = forward_kinematics(skeleton, lrot, root_pos)
    b = markerset.body
    return gpos[:, b] + quat.rotate(grot[:, b], markerset.offset)


def _subtree_matrix(skeleton: Skeleton) -> np.ndarray:
    """``(J, J)`` bool, ``[a, j]`` True when ``j`` is ``a`` or a descendant of ``a``."""
    J = len(skeleton)
    D = np.eye(J, dtype=bool)
    for j in range(J - 1, 0, -1):  # children after parents: fold each row into its parent
        D[skeleton.parents[j]] |= D[j]
    return D


def default_free_joints(skeleton: Skeleton, markerset: MarkerSet) -> np.ndarray:
    """``(J,)`` bool: joints with a marker on their segment or on any descendant segment."""
    _check_markerset(skeleton, markerset)
    has = np.zeros(len(skeleton), bool)
    has[markerset.body] = True
    return (_subtree_matrix(skeleton) & has[None, :]).any(axis=1)


def observable_joints(skeleton: Skeleton, markerset: MarkerSet, min_markers: int = 3
                      ) -> np.ndarray:
    """``(J,)`` bool: joints whose local rotation the marker set pins down (all markers seen).

    A segment's global orientation is known when it carries ``min_markers`` or more markers
    whose offsets are not collinear. A local rotation ``grot[parent]^-1 grot[j]`` is known when
    both the joint's and its parent's segments are (the root's when its own is). Joints between
    two marked segments with no marker of their own (CMU ``LHipJoint``, ``LowerBack``,
    ``LeftShoulder``) share one rotation with their child: only the product is determined
    (a twist about the bone is free), so neither is counted.
    """
    _check_markerset(skeleton, markerset)
    J = len(skeleton)
    known = np.zeros(J, bool)
    for j in range(J):
        off = markerset.offset[markerset.body == j]
        if len(off) >= max(min_markers, 3):
            centred = off - off.mean(axis=0)
            sv = np.linalg.svd(centred, compute_uv=False)
            known[j] = sv[1] > 1e-6 * max(sv[0], 1e-12)
    obs = known.copy()
    obs[1:] &= known[skeleton.parents[1:]]
    return obs


def _free_index(skeleton: Skeleton, free_joints) -> np.ndarray:
    J = len(skeleton)
    free = np.asarray(free_joints)
    if free.dtype != bool or free.shape != (J,):
        raise ShapeError(f"free_joints: expected a bool array of shape ({J},), "
                         f"got {free.dtype} {free.shape}")
    return np.flatnonzero(free)


# --------------------------------------------------------------------------- rotation prior

# Default stiffness of a hinge off its axis, m^2/rad^2 (see ``hinge_prior``).
HINGE_OFF_AXIS_WEIGHT = 0.01
# Suggested ``weight_fixed`` for joints held near rest (toes with one marker), m^2/rad^2.
FIXED_JOINT_WEIGHT = 0.03
#: Stiffness of a clavicle's twist about its bone, m^2/rad^2 (``pipeline.kinematic_prior``). The
#: clavicle's one marker (SHO) sits on the acromion 5 cm off the bone's axis, so its twist follows
#: that marker, which rides on the scapula and skin, not rigidly on the clavicle; the upper arm
#: takes up whatever the twist is. Unheld, the PiG walk's clavicle frames were 6.4 / 10.7°
#: (median twist) from Plug-in Gait's, CMU 01_01's right shoulder sat at the template's limits in
#: 339 frames and the shoulders jumped up to 39° in a frame where two splits fit alike. Held (10°
#: costs like one marker 5.5 mm off): 1.3 / 2.8°, the humerus frames closer too (2.6 -> 1.4° on
#: the right), no limit hit, at most 4° a frame; marker RMS up 0.1 mm at most. Synthetic markers
#: on four CMU clips retargeted (their clavicles do not twist): the arms' joints 5.6-7.4 -> 4.6-6.3
#: mm from the truth (``benchmarks/clavicle_hold.py``; ``solve_real.py``, ``physmocap solve``;
#: 2026-12-07: RESULTS.md).
CLAVICLE_TWIST_WEIGHT = 1e-3


def hinge_prior(kind, axis, weight_off_axis: float = HINGE_OFF_AXIS_WEIGHT,
                weight_fixed: float = 0.0, fixed=None) -> tuple[np.ndarray, np.ndarray]:
    """A ``rotation_prior`` for ``solve_kinematic`` from joint kinds: hinges stiff off their axis.

    For a hinge ``j`` with unit axis ``a`` (in the joint's rest frame, as
    ``BodyTemplate.axis``), ``W_j = weight_off_axis (I - a a^T)``: rotation about the axis is
    free, any other component of the rotation vector costs ``weight_off_axis`` m^2 per rad^2.
    Joints in ``fixed`` get ``W_j = weight_fixed I`` (held near the rest pose, whatever their
    kind: e.g. toes carrying a single marker, whose rotation the markers cannot determine).
    Other joints: zero. ``c = 0`` (the rest pose).

    Default weight. A marker residual of ``s`` m costs ``s^2``. With ``w = 0.01`` m^2/rad^2 a
    10 deg (0.175 rad) off-axis rotation costs 3.0e-4 m^2, like one marker 1.7 cm off (three
    times ``(0.01 m / 0.1745 rad)^2 = 3.3e-3``, the weight at which 10 deg costs 1 cm). A few
    degrees of real off-axis motion (screw-home, carrying angle) or axis error stay cheap; the
    tens of degrees that a thigh or forearm twist trades with a knee or elbow do not. Tuned on CMU 02_01
    (cmu41 on the humanoid template, calibrated with the same prior, toes fixed at 0.03):
    knee/elbow off-axis median 0.4-1.8 deg, max 1.6-8.5 deg, marker RMS 4.95 mm against 4.48 mm
    for the unregularised solve of the same subject; 0.0033 left up to 17 deg off-axis, 0.03
    pinned the hinges (max 3 deg) at +0.13 mm RMS more. ``weight_fixed``:
    ``FIXED_JOINT_WEIGHT = 0.03`` holds a toe with one marker (it otherwise bends 50-120 deg to
    absorb that marker's offset error).

    Args:
        kind: ``(J,)`` joint kinds, ``"free"`` | ``"ball"`` | ``"hinge"``.
        axis: ``(J, 3)`` hinge axes (any length > 0 for hinges; ignored, may be NaN, elsewhere).
        weight_off_axis: m^2/rad^2, >= 0.
        weight_fixed: m^2/rad^2, >= 0, for the joints in ``fixed``.
        fixed: ``(J,)`` bool or None.
    Returns:
        ``(W (J, 3, 3), c (J, 3))``.
    Raises:
        ShapeError: mismatched shapes, a hinge with a zero or non-finite axis, negative weights.
    """
    kind = tuple(str(k) for k in kind)
    J = len(kind)
    axis = np.asarray(axis, dtype=float)
    if axis.shape != (J, 3):
        raise ShapeError(f"hinge_prior: axis must be ({J}, 3) for {J} joint kinds, "
                         f"got {axis.shape}")
    if not (weight_off_axis >= 0 and weight_fixed >= 0):
        raise ShapeError(f"hinge_prior: weights must be >= 0, got {weight_off_axis!r}, "
                         f"{weight_fixed!r}")
    if fixed is None:
        fixed = np.zeros(J, bool)
    fixed = np.asarray(fixed)
    if fixed.dtype != bool or fixed.shape != (J,):
        raise ShapeError(f"hinge_prior: fixed must be a bool array of shape ({J},), "
                         f"got {fixed.dtype} {fixed.shape}")
    W = np.zeros((J, 3, 3))
    for j, k in enumerate(kind):
        if fixed[j]:
            W[j] = weight_fixed * np.eye(3)
        elif k == "hinge":
            a = axis[j]
            n = np.linalg.norm(a)
            if not (np.isfinite(n) and n > 1e-9):
                raise ShapeError(f"hinge_prior: joint {j} is a hinge with axis {a}")
            a = a / n
            W[j] = weight_off_axis * (np.eye(3) - np.outer(a, a))
    return W, np.zeros((J, 3))


def _check_prior(prior, J: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Validated ``(W (J, 3, 3) symmetric PSD, c (J, 3))`` or None."""
    if prior is None:
        return None
    try:
        W, c = prior
        W = np.array(W, dtype=float)
        c = np.array(c, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"rotation_prior: expected a pair (W (J, 3, 3), c (J, 3)) ({exc})"
                         ) from None
    if W.shape != (J, 3, 3) or c.shape != (J, 3):
        raise ShapeError(f"rotation_prior: expected W ({J}, 3, 3) and c ({J}, 3), got W "
                         f"{W.shape} and c {c.shape}")
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(c))):
        raise ShapeError("rotation_prior: W and c must be finite")
    scale = max(float(np.abs(W).max()), 1e-300)
    if np.abs(W - np.swapaxes(W, 1, 2)).max() > 1e-9 * scale:
        raise ShapeError("rotation_prior: every W_j must be symmetric")
    W = 0.5 * (W + np.swapaxes(W, 1, 2))
    bad = np.flatnonzero(np.linalg.eigvalsh(W)[:, 0] < -1e-9 * scale)
    if bad.size:
        raise ShapeError(f"rotation_prior: W_j must be positive semi-definite (joint "
                         f"{int(bad[0])} is not)")
    return W, c


def _inv_right_jacobian(v: np.ndarray) -> np.ndarray:
    """``Jr^-1(v) (..., 3, 3)``: ``log(exp(v) exp(d)) = v + Jr^-1(v) d + O(d^2)``.

    ``I + [v]x / 2 + b [v]x^2 = (1 - b t^2) I + [v]x / 2 + b v v^T`` with
    ``b = 1/t^2 - (1 + cos t) / (2 t sin t)``, ``t = |v|`` (``b -> 1/12`` at 0; finite up to
    ``t = pi``, where ``log`` itself jumps).
    """
    t = np.sqrt(np.einsum("...i,...i->...", v, v))
    small = t < 1e-3
    ts = np.where(small, 1.0, t)
    b = np.where(small, 1.0 / 12.0 + t * t / 720.0,
                 1.0 / ts ** 2 - (1.0 + np.cos(ts)) / (2.0 * ts * np.maximum(np.sin(ts), 1e-12)))
    out = b[..., None, None] * (v[..., :, None] * v[..., None, :])
    d = 1.0 - b * t * t
    h = 0.5 * v
    x, y, z = h[..., 0], h[..., 1], h[..., 2]
    out[..., 0, 0] += d
    out[..., 1, 1] += d
    out[..., 2, 2] += d
    out[..., 0, 1] -= z
    out[..., 1, 0] += z
    out[..., 0, 2] += y
    out[..., 2, 0] -= y
    out[..., 1, 2] -= x
    out[..., 2, 1] += x
    return out


def marker_jacobian(skeleton: Skeleton, markerset: MarkerSet, lrot: np.ndarray,
                    root_pos: np.ndarray, free_joints: np.ndarray | None = None) -> np.ndarray:
    """Analytic Jacobian ``(F, 3M, P)`` of the world marker positions.

    Rows are ``3 m + axis`` (marker ``m`` in ``markerset.names`` order, x/y/z). Columns are the
    root translation (3, m) then, for each free joint in index order, the right-multiplied
    rotation increment ``lrot_j <- lrot_j * exp(delta_j)`` (3, rad). Unweighted; missing markers
    are not special here.

    Args:
        lrot: ``(F, J, 4)`` xyzw; root_pos: ``(F, 3)`` m.
        free_joints: ``(J,)`` bool; default ``default_free_joints``.
    """
    if free_joints is None:
        free_joints = default_free_joints(skeleton, markerset)
    free_idx = _free_index(skeleton, free_joints)
    lrot = np.asarray(lrot, float)
    gpos, grot = forward_kinematics(skeleton, lrot, root_pos)
    b = markerset.body
    pm = gpos[:, b] + quat.rotate(grot[:, b], markerset.offset)
    F, M = pm.shape[:2]
    P = 3 + 3 * len(free_idx)
    Jac = np.zeros((F, M, 3, P))
    Jac[:, :, :, :3] = np.eye(3)
    sub = _subtree_matrix(skeleton)
    R = quat.to_matrix(grot)  # (F, J, 3, 3); column k is grot_j e_k
    for c, j in enumerate(free_idx):
        ms = np.flatnonzero(sub[j][b])
        if ms.size == 0:
            continue
        d = pm[:, ms] - gpos[:, j, None]                         # (F, Mj, 3)
        axes = np.swapaxes(R[:, j], -1, -2)                       # (F, 3 axes, 3)
        blk = np.cross(axes[:, None, :, :], d[:, :, None, :])     # (F, Mj, axis k, xyz)
        Jac[:, ms, :, 3 + 3 * c:6 + 3 * c] = np.swapaxes(blk, -1, -2)
    return Jac.reshape(F, 3 * M, P)


def _fk_matrices(skeleton: Skeleton, lrot: np.ndarray, root_pos: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``gpos (n, J, 3)`` and global rotation matrices ``(n, J, 3, 3)``.

    The same maths as ``skeleton.forward_kinematics`` with 3x3 matrices: one ``matmul`` per joint
    instead of several quaternion products, which matters in the LM loop where the arrays are
    small and per-call overhead dominates.
    """
    Rl = quat.to_matrix(lrot)
    n, J = Rl.shape[:2]
    R = np.empty_like(Rl)
    gpos = np.empty((n, J, 3))
    R[:, 0] = Rl[:, 0]
    gpos[:, 0] = root_pos
    par = skeleton.parents
    off = skeleton.offsets
    for j in range(1, J):
        p = par[j]
        R[:, j] = R[:, p] @ Rl[:, j]
        gpos[:, j] = gpos[:, p] + R[:, p] @ off[j]
    return gpos, R


class _Structure:
    """Index tables shared by every iteration of one solve."""

    def __init__(self, skeleton: Skeleton, markerset: MarkerSet, free_idx: np.ndarray,
                 prior: tuple[np.ndarray, np.ndarray] | None = None, hold: float = 0.0):
        self.skeleton = skeleton
        self.body = markerset.body
        self.offset = markerset.offset
        self.free = free_idx
        nb = len(free_idx)
        self.nb = nb
        P = self.P = 3 + 3 * nb
        sub = _subtree_matrix(skeleton)
        # (M, nb): marker m is downstream of free joint free[c].
        self.down = sub[free_idx][:, markerset.body].T.astype(float)
        # Pairs (a, b) of free joints with a == b or a an ancestor of b: the only non-zero
        # rotation-rotation blocks; the markers they share are those downstream of b.
        pa, pb = [], []
        for ia, a in enumerate(free_idx):
            for ib, bj in enumerate(free_idx):
                if ib >= ia and sub[a, bj]:
                    pa.append(ia)
                    pb.append(ib)
        self.pa = np.array(pa, int)
        self.pb = np.array(pb, int)
        od = self.pa != self.pb
        # Flat indices into (P, P) for one scatter of every non-zero entry (see _normal_equations).
        k = np.arange(3)
        rows, cols = np.meshgrid(k, k, indexing="ij")          # entry (i, j) of a 3x3 block

        def blk(r0, c0):                                         # (..., 9) flat indices
            r0 = np.asarray(r0)[..., None]
            c0 = np.asarray(c0)[..., None]
            return ((r0 + rows.ravel()) * P + c0 + cols.ravel())
        cb = 3 + 3 * np.arange(nb)
        self.flat = np.concatenate([
            blk(cb, 0).ravel(),                      # rotation-translation blocks
            blk(0, cb).ravel(),                      # their transposes
            blk(3 + 3 * self.pa, 3 + 3 * self.pb).ravel(),      # ancestor pairs
            blk(3 + 3 * self.pb[od], 3 + 3 * self.pa[od]).ravel(),  # their transposes
        ])
        self.od = od
        self.diag_flat = np.arange(P) * (P + 1)
        self.diag_blk = np.flatnonzero(self.pa == self.pb)      # pair index of each (j, j)
        # Rotation prior on the free joints with a non-zero W (``pk`` positions in ``free``).
        # With ``hold`` every free joint may also get ``hold * I`` toward its start pose, frame by
        # frame (``hold_prior``): the two quadratics are one, with a per-frame ``W_f``, ``c_f``.
        self.prior = prior
        self.hold = float(hold)
        if self.hold > 0:
            pk = np.arange(nb)
        elif prior is None:
            pk = np.zeros(0, int)
        else:
            pk = np.flatnonzero(np.any(prior[0][free_idx] != 0.0, axis=(1, 2)))
        self.pk = pk
        self.pj = free_idx[pk]
        if pk.size:
            W0 = np.zeros((len(pk), 3, 3)) if prior is None else prior[0][self.pj]
            c0 = np.zeros((len(pk), 3)) if prior is None else prior[1][self.pj]
            self.pW, self.pc = W0, c0
            self.W0c0 = (W0 @ c0[..., None])[..., 0]
            # (M, npk): which markers sit on each prior joint's own segment (``hold_prior``)
            self.seg_markers = markerset.body[:, None] == self.pj[None, :]
        self.p_flat = blk(3 + 3 * pk, 3 + 3 * pk).ravel()        # their 3x3 diagonal blocks
        self.p_g = (3 + 3 * pk[:, None] + k).ravel()


def _normal_equations(st: _Structure, w: np.ndarray, pm: np.ndarray, r: np.ndarray,
                      gpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``J^T W J (n, P, P)`` and ``J^T W r (n, P)`` in *world* rotation axes, from subtree moments.

    Columns: root translation, then per free joint a rotation increment ``omega_j`` about world
    axes through ``gpos_j`` (``omega_j = R_j delta_j`` for the local increment ``delta_j`` of the
    model, so ``A_local = B^T A B`` with ``B = blockdiag(I, R_j…)``; the tests check this against
    ``marker_jacobian``). The marker block of joint ``a`` is then ``-[d]x`` with ``d = p_m - x_a``,
    and ``(-[u]x)^T (-[v]x) = (u.v) I - v u^T``. With the moments of the visible markers of the
    subtree of ``b`` taken about ``x_b`` (``T0 = sum w``, ``T1 = sum w d_b``,
    ``T2 = sum w d_b d_b^T``) and ``d_a = d_b + e``, ``e = x_b - x_a``:
    ``sum w d_b d_a^T = T2 + T1 e^T`` — every block in closed form, O(pairs) per frame.

    Args:
        w: ``(n, M)`` per-marker weights (0 for missing markers).
        pm: ``(n, M, 3)`` model marker positions; r: ``(n, M, 3)`` residuals obs - model.
        gpos: ``(n, J, 3)`` joint positions.
    """
    n, M = w.shape
    nb, P = st.nb, st.P
    # Positions relative to the root, so the moments do not lose digits far from the origin.
    origin = gpos[:, :1]
    q = pm - origin
    x = gpos[:, st.free] - origin                       # (n, nb, 3)
    wq = w[..., None] * q
    wr = w[..., None] * r
    pxr = np.cross(q, wr)
    # One matmul for all subtree sums: per-marker w, w p, w p p^T, w r, w p x r.
    per = np.concatenate([w[..., None], wq, (wq[..., :, None] * q[..., None, :]).reshape(n, M, 9),
                          wr, pxr], axis=-1)        # (n, M, 19)
    sums = np.swapaxes(np.swapaxes(per, 1, 2) @ st.down, 1, 2)   # (n, nb, 19)
    S0 = sums[..., 0]
    S1 = sums[..., 1:4]
    S2 = sums[..., 4:13].reshape(n, nb, 3, 3)
    Sr = sums[..., 13:16]
    C = sums[..., 16:19]
    # Moments about each joint.
    T1 = S1 - S0[..., None] * x
    T2 = S2 - S1[..., :, None] * x[..., None, :] - x[..., :, None] * T1[..., None, :]
    g = np.empty((n, P))
    g[:, :3] = wr.sum(axis=1)
    g[:, 3:] = (C - np.cross(x, Sr)).reshape(n, 3 * nb)   # sum w d x r
    # translation-rotation: sum w (-[d]x) = -[T1]x, stored row-major
    t1x, t1y, t1z = T1[..., 0], T1[..., 1], T1[..., 2]
    z = np.zeros_like(t1x)
    ATa = np.stack([z, t1z, -t1y, -t1z, z, t1x, t1y, -t1x, z], axis=-1)   # -[T1]x  (n, nb, 9)
    ATaT = ATa[..., [0, 3, 6, 1, 4, 7, 2, 5, 8]]
    # rotation-rotation: M_ab = (tr(T2) + T1.e) I - (T2 + T1 e^T), moments of the deeper b
    pa, pb = st.pa, st.pb
    e = x[:, pb] - x[:, pa]
    t1 = T1[:, pb]
    outer = T2[:, pb] + t1[..., :, None] * e[..., None, :]
    dot = np.trace(outer, axis1=-2, axis2=-1)
    Mab = -outer
    Mab[..., 0, 0] += dot
    Mab[..., 1, 1] += dot
    Mab[..., 2, 2] += dot
    Mab = Mab.reshape(n, len(pa), 9)
    MabT = Mab[:, st.od][..., [0, 3, 6, 1, 4, 7, 2, 5, 8]]
    A = np.zeros((n, P * P))
    # rows of the rotation blocks: (rotation-translation) = (-[T1]x)^T; then its transpose
    A[:, st.flat] = np.concatenate([ATaT.reshape(n, -1), ATa.reshape(n, -1),
                                    Mab.reshape(n, -1), MabT.reshape(n, -1)], axis=1)
    W0 = w.sum(axis=1)
    A[:, 0] = A[:, P + 1] = A[:, 2 * P + 2] = W0
    return A.reshape(n, P, P), g


def _robust(dist: np.ndarray, pull: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-marker cost (m^2, the 1/2 left out) and IRLS weight of residual distances.

    Without ``pull``: squared distance, weight 1. With it: Cauchy,
    ``c^2 log(1 + s^2/c^2)`` with weight ``1 / (1 + s^2/c^2)``; quadratic below ``c``, and the
    pull of a marker at distance ``s >> c`` falls off as ``c^2 / s``, so a ghost or swapped
    marker half a metre away pulls less than a good one a few centimetres away.
    """
    s2 = dist * dist
    if pull is None:
        return s2, np.ones_like(s2)
    c2 = pull * pull
    return c2 * np.log1p(s2 / c2), 1.0 / (1.0 + s2 / c2)


def _apply(lrot, root, delta, free_idx, R=None):
    """Apply ``delta (n, P)``: translation, then right-multiplied rotation increments.

    With ``R (n, J, 3, 3)`` the rotation part of ``delta`` is in world axes and is first taken
    to each joint's local axes, ``delta_j = R_j^T omega_j``.
    """
    lrot = lrot.copy()
    root = root + delta[:, :3]
    rot = delta[:, 3:].reshape(len(delta), -1, 3)
    if R is not None:
        rot = (np.swapaxes(R[:, free_idx], -1, -2) @ rot[..., None])[..., 0]
    inc = quat.from_scaled_axis(rot)
    lrot[:, free_idx] = quat.normalize(quat.mul(lrot[:, free_idx], inc))
    return lrot, root


def hold_prior(st: _Structure, start_lrot: np.ndarray, vis: np.ndarray) -> tuple:
    """Per-frame ``(W (n, npk, 3, 3), c (n, npk, 3))``: the rotation prior plus ``hold * I``
    toward the start pose ``start_lrot (n, J, 4)`` on the joints whose own segment shows fewer
    markers than it carries, and fewer than three, in that frame (``vis (n, M)``), as one
    quadratic. Two markers and the joint centre do fix a segment, but noisily: holding those too
    halved the error growth under 30 % dropout against holding one-marker segments only.
    Segments seen as well as they can be are left to their markers (the fit stays the optimum
    there: a take without gaps solves exactly as without ``hold``)."""
    seen = vis.astype(float) @ st.seg_markers                  # (n, npk) markers visible
    weak = seen < np.minimum(3, st.seg_markers.sum(axis=0))
    W = st.pW + (st.hold * weak)[..., None, None] * np.eye(3)
    s = quat.to_scaled_axis(start_lrot[:, st.pj])
    rhs = st.W0c0 + st.hold * weak[..., None] * s
    c = np.where(weak[..., None], np.linalg.solve(np.where(weak[..., None, None], W, np.eye(3)),
                                                  rhs[..., None])[..., 0], st.pc)
    return W, c


def _evaluate(st: _Structure, lrot, root, obs, vis, wm, pull, pw=None):
    gpos, R = _fk_matrices(st.skeleton, lrot, root)
    pm = gpos[:, st.body] + (R[:, st.body] @ st.offset[:, :, None])[..., 0]
    r = np.where(vis[..., None], obs - pm, 0.0)
    dist = np.sqrt(np.einsum("nmi,nmi->nm", r, r))
    rho, irls = _robust(dist, pull)
    cost = np.sum(wm * rho, axis=1)
    if st.pk.size:
        v = quat.to_scaled_axis(lrot[:, st.pj])                     # (n, npk, 3)
        W, c = (st.pW, st.pc) if pw is None else pw
        e = v - c
        cost = cost + np.sum(e * (W @ e[..., None])[..., 0], axis=(1, 2))
    else:
        v = np.zeros((len(lrot), 0, 3))
    return gpos, R, pm, r, cost, wm * irls, v


def _add_prior(st: _Structure, A: np.ndarray, g: np.ndarray, v: np.ndarray, R: np.ndarray,
               pw=None):
    """Add the Gauss–Newton terms of the rotation prior to ``A (n, P, P)``, ``g (n, P)``.

    ``v_j(omega) ~ v_j + G omega`` with ``G = Jr^-1(v_j) R_j^T`` (world-axis increment
    ``omega = R_j delta``): ``A_jj += G^T W G``, ``g_j -= G^T W (v_j - c_j)``.
    """
    n = len(A)
    G = _inv_right_jacobian(v) @ np.swapaxes(R[:, st.pj], -1, -2)     # (n, npk, 3, 3)
    Gt = np.swapaxes(G, -1, -2)
    W, c = (st.pW, st.pc) if pw is None else pw
    H = Gt @ (W @ G)
    gp = (Gt @ (W @ (v - c)[..., None]))[..., 0]
    Af = A.reshape(n, -1)
    Af[:, st.p_flat] += H.reshape(n, -1)
    g[:, st.p_g] -= gp.reshape(n, -1)


def _lm(st: _Structure, obs, vis, wm, lrot, root, iterations, tol, pull, pw=None):
    """Batched LM over frames ``(n, ...)``; returns lrot, root, iterations, converged and the
    cost of the returned pose. ``pw``: per-frame rotation prior ``(W, c)`` (``hold_prior``), else
    the structure's."""
    n = obs.shape[0]
    lrot = np.array(lrot, float)
    root = np.array(root, float)
    its = np.zeros(n, int)
    conv = np.zeros(n, bool)
    lam = np.full(n, _LAMBDA0)
    gpos, R, pm, r, cost, w, v = _evaluate(st, lrot, root, obs, vis, wm, pull, pw)
    active = np.ones(n, bool)
    eyeP = np.eye(st.P, dtype=bool)
    for _ in range(iterations):
        act = np.flatnonzero(active)
        if act.size == 0:
            break
        A, g = _normal_equations(st, w[act], pm[act], r[act], gpos[act])
        pw_act = None if pw is None else (pw[0][act], pw[1][act])
        if st.pk.size:
            _add_prior(st, A, g, v[act], R[act], pw_act)
        # Marquardt damping, isotropic per 3x3 block so that it does not depend on the axes
        # (world here, local in the model): the step equals the local-axis LM step.
        diag = A[:, eyeP].reshape(len(act), -1, 3).mean(axis=-1).repeat(3, axis=-1)
        A[:, eyeP] += lam[act, None] * diag + _RIDGE
        delta = np.linalg.solve(A, g[..., None])[..., 0]
        l_new, r_new = _apply(lrot[act], root[act], delta, st.free, R[act])
        e = _evaluate(st, l_new, r_new, obs[act], vis[act], wm[act], pull, pw_act)
        c_old = cost[act]
        c_new = e[4]
        its[act] += 1
        ok = c_new < c_old
        step = np.max(np.abs(delta), axis=1)
        # |change|: a step rejected for a rounding-level increase also means "at the minimum"
        # (raising the damping then only wastes iterations on frames with null directions).
        small = (step < tol) | (np.abs(c_old - c_new) <= tol * c_old) | (c_new < 1e-24)
        acc = act[ok]
        lrot[acc], root[acc] = l_new[ok], r_new[ok]
        gpos[acc], R[acc], pm[acc], r[acc], cost[acc], w[acc], v[acc] = (a[ok] for a in e)
        lam[acc] = np.maximum(lam[acc] * 0.1, _LAMBDA_MIN)
        rej = act[~ok]
        lam[rej] *= 10.0
        # Done: a step that changed the cost little (accepted or not) or was too small to
        # matter, or damping so large that no step is possible.
        done = small | (lam[act] > _LAMBDA_MAX)
        conv[act[done]] = True
        active[act[done]] = False
    return lrot, root, its, conv, cost


# --------------------------------------------------------------------------- start


def _kabsch(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Rotation matrix ``R`` minimising ``sum |R src_i - dst_i|^2`` (both centred)."""
    H = src.T @ dst
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0
    return Vt.T @ np.diag([1.0, 1.0, d]) @ U.T


def _seed(st: _Structure, obs0, vis0, wm, free_bool, iterations, tol, pull):
    """Solve one frame from the rest pose: Kabsch for the root, then LM freeing joints by depth.

    Freeing the tree from the root outwards (depth 0, <=2, <=4, all) lets the trunk settle before
    the limbs move, so a limb far from its rest direction is not pulled through the body.
    """
    skel = st.skeleton
    J = len(skel)
    lrot = quat.identity((1, J))
    rest = marker_positions(skel, _MS(st), lrot, np.zeros((1, 3)))[0]
    v = vis0
    src = rest[v] - rest[v].mean(axis=0)
    dst = obs0[v] - obs0[v].mean(axis=0)
    # The root's rotation only when it is free (a held root keeps the identity, as documented).
    Rm = _kabsch(src, dst) if v.sum() >= 3 and free_bool[0] else np.eye(3)
    lrot[0, 0] = quat.from_matrix(Rm)
    root = (obs0[v].mean(axis=0) - Rm @ rest[v].mean(axis=0))[None]
    depth = np.zeros(J, int)
    for j in range(1, J):
        depth[j] = depth[skel.parents[j]] + 1
    total = 0
    for limit in (0, 2, 4, None):
        stage = free_bool if limit is None else free_bool & (depth <= limit)
        sub = _Structure(skel, _MS(st), np.flatnonzero(stage), st.prior)
        # Intermediate stages only need to bring the trunk near; the last one converges.
        cap = iterations if limit is None else min(iterations, 30)
        lrot, root, its, conv, _ = _lm(sub, obs0[None], vis0[None], wm[None], lrot, root,
                                    cap, tol, pull)
        total += int(its[0])
    return lrot[0], root[0], total, bool(conv[0])


def _schedule(order: np.ndarray, start0: int, complete: np.ndarray, seen: np.ndarray,
              chunk: int, chunk_incomplete: int) -> tuple[np.ndarray, np.ndarray]:
    """The frame each frame of ``order`` starts from, and the round it is solved in (both
    ``(len(order),)`` int; ``start0``, already solved, is round 0).

    ``order`` runs away from ``start0`` (forward or backward). A frame seeing every marker
    (``complete``) has one pose up to the directions no marker fixes, so its start only costs
    iterations: it starts from the same complete frame as the complete frames before it, until
    that frame is more than ``chunk`` frames back; then from the last complete frame, or from
    the frame before it when no complete frame is that close. A frame missing markers may leave
    directions free that keep their start values (and ``hold`` pulls toward its start): it
    starts from a frame at most ``chunk_incomplete`` frames back along the take (the frame
    before it with ``chunk_incomplete == 1``). A frame seeing nothing takes the pose of the
    frame before it. A frame's round is one more than its start's, so each round starts only
    from frames solved before it: a take whose gaps are short solves in about ``frames / chunk
    + longest run of incomplete frames`` rounds instead of one per frame.
    """
    start = np.empty(len(order), int)
    level = [0] * len(complete)     # each frame's round (start0's is 0)
    key_c = key_i = start0          # the complete frames' start, the others'
    last_c = start0                 # the last complete frame (or start0)
    prev = start0
    seen, complete = seen.tolist(), complete.tolist()   # Python scalars: a loop over frames
    for k, f in enumerate(order.tolist()):
        if not seen[f]:
            start[k] = prev
        elif complete[f]:
            if abs(f - key_c) > chunk:
                key_c = last_c if abs(f - last_c) <= chunk else prev
            start[k] = key_c
            last_c = f
        else:
            if abs(f - key_i) > chunk_incomplete:
                key_i = prev
            start[k] = key_i
        level[f] = level[start[k]] + 1
        prev = f
    return start, np.asarray(level)[order]


#: rad/s: a free joint turning faster than this between two solved neighbours marks where the
#: solve may have left one minimum for another (``_settle``): 5 deg a frame at 120 Hz. A real
#: limb turns that fast too (a heel strike, an arm's swing); testing it costs time, not results.
_JUMP_RATE = np.radians(600.0)
#: relative cost drop that moves a frame into its neighbour's minimum: two starts in one basin
#: end within LM's ``tol`` of each other; the wrong minima met on CMU 01_01 (clavicles' twist
#: free) fitted up to 1.2 mm RMS worse, at 4-6 mm: a cost tens of percent higher.
_SETTLE_GAIN = 1e-3


def _settle(st: _Structure, observed, lrot: np.ndarray, root: np.ndarray, complete: np.ndarray,
            fps: float, iterations: int, tol: float, pull) -> tuple[np.ndarray, np.ndarray,
                                                                    np.ndarray]:
    """Move frames seeing every marker into a neighbour's minimum where it fits them better.

    A frame is solved from a frame before it (``_schedule``); where the markers leave a valley
    with two minima (CMU's shoulder twisted either way about the upper arm), the solve can hold
    a worse one for a stretch of frames and then snap to the better one. Where a free joint turns
    faster than ``_JUMP_RATE`` between two frames, each is solved again from the other's pose;
    a frame whose cost drops by ``_SETTLE_GAIN`` or more takes that pose, and its next neighbour
    away from the source is tested in turn, so the better minimum spreads over the stretch. Only
    frames seeing every marker take part: their cost does not depend on the start (no ``hold``),
    so the lower one is the better fit by the solve's own measure.

    ``lrot (F, J, 4)``, ``root (F, 3)`` are updated in place. Returns, per frame ``(F,)``, the
    LM iterations spent and whether the last accepted solve converged (``-1`` where nothing was
    accepted).
    """
    F = len(lrot)
    spent = np.zeros(F, int)
    conv = np.full(F, -1)
    if F < 2 or not complete.any():
        return spent, conv
    # the largest turn of a free joint between neighbours, in blocks (a long take needs no
    # whole-take (F, J, 4) temporaries)
    turn = np.empty(F - 1)
    for s in range(0, F - 1, _BLOCK):
        q = lrot[s:s + _BLOCK + 1, st.free]
        dot = np.abs(np.sum(q[1:] * q[:-1], axis=-1))
        turn[s:s + _BLOCK] = 2.0 * np.arccos(np.clip(dot, 0.0, 1.0)).max(axis=1)
    f = np.flatnonzero(turn > _JUMP_RATE / fps)
    tgt, src = np.r_[f, f + 1], np.r_[f + 1, f]
    ci = np.flatnonzero(complete)
    cost = np.full(F, np.inf)
    for s in range(0, len(ci), _ROUND_BATCH):
        idx = ci[s:s + _ROUND_BATCH]
        o, v, w = observed(idx)
        cost[idx] = _evaluate(st, lrot[idx], root[idx], o, v, w, pull)[4]
    for _ in range(F):                     # each pass moves frames one step; at most F steps
        keep = complete[tgt]
        tgt, src = tgt[keep], src[keep]
        if tgt.size == 0:
            break
        got = []
        for s in range(0, len(tgt), _ROUND_BATCH):
            a, b = tgt[s:s + _ROUND_BATCH], src[s:s + _ROUND_BATCH]
            o, v, w = observed(a)
            got.append(_lm(st, o, v, w, lrot[b], root[b], iterations, tol, pull))
        l, r, its, cv, c = (np.concatenate(x) for x in zip(*got))
        np.add.at(spent, tgt, its)
        # each target's best candidate (a frame tested from both sides keeps the lower)
        order = np.lexsort((c, tgt))
        best = order[np.r_[True, tgt[order][1:] != tgt[order][:-1]]]
        best = best[c[best] < (1.0 - _SETTLE_GAIN) * cost[tgt[best]]]
        a = tgt[best]
        lrot[a], root[a], cost[a], conv[a] = l[best], r[best], c[best], cv[best]
        tgt, src = 2 * a - src[best], a
        inside = (tgt >= 0) & (tgt < F)
        tgt, src = tgt[inside], src[inside]
    return spent, conv


class _MS:
    """A duck-typed marker set for internal calls (body/offset only, no re-validation)."""

    def __init__(self, st: _Structure):
        self.body = st.body
        self.offset = st.offset
        self.names = tuple(str(i) for i in range(len(st.body)))

    def __len__(self):
        return len(self.body)


# --------------------------------------------------------------------------- API


def solve_kinematic(skeleton: Skeleton, markerset: MarkerSet, pos: np.ndarray,
                    init: Motion | None = None, fps: float = 120.0, iterations: int = 30,
                    tol: float = 1e-7, free_joints: np.ndarray | None = None,
                    max_marker_pull: float | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    chunk: int | None = None, chunk_incomplete: int = 8,
                    seed_iterations: int = 200,
                    rotation_prior: tuple[np.ndarray, np.ndarray] | None = None,
                    hold: float = 0.0, settle: bool = True) -> KinematicResult:
    """Fit the skeleton to marker positions, every frame independently (no temporal smoothing).

    Args:
        skeleton: the tree with fixed limb lengths.
        markerset: where each marker sits (``body`` joint index, ``offset`` m in that joint's
            frame, ``weight``); ``pos`` columns are in ``markerset.names`` order.
        pos: ``(F, M, 3)`` m, observed world marker positions (Z up); NaN = missing.
        init: a ``Motion`` with F frames on this skeleton to start every frame from. ``None``:
            frame ``seed_frame`` (the first frame seeing at least half the markers, or else the
            one seeing most) is solved from the rest pose (root by centroid + Kabsch, then LM
            freeing the tree by depth, ``seed_iterations`` per stage); the other frames are
            warm-started outwards from it (``_schedule``): a frame seeing every marker starts
            from a solved frame seeing every marker at most ``chunk`` frames before it (so up to
            ``chunk`` such frames share a start and are solved as one batch; after a longer run
            of frames missing a marker, from the frame before it), a frame missing a
            marker from a frame at most ``chunk_incomplete`` frames before it: such a frame may
            leave directions unconstrained (a hand with one marker seen), which keep their
            starting values, so the start must be recent. Frames whose starts are solved are
            solved together, so the frames between two short gaps need not wait for each other.
        fps: frame rate of the returned motion.
        iterations: LM iteration cap per frame.
        tol: a frame stops when an accepted step lowers the cost by less than ``tol`` times
            the cost, or the step (rad / m, max norm) is below ``tol``.
        free_joints: ``(J,)`` bool, joints allowed to rotate; default ``default_free_joints``
            (joints with a marker on their segment or below). Others keep the rotation of
            ``init`` (or identity). The root translation is always free.
        max_marker_pull: m; residuals beyond this are down-weighted (Cauchy), so one ghost or
            swapped marker cannot tear the pose, and flagged in ``result.outlier``. ``None``:
            plain least squares.
        progress: called as ``progress(frames_done, frames_total)`` after each batch.
        chunk: frames, >= 1: how far back a frame seeing every marker may start; ``None``: the
            frames in ``CHUNK_SECONDS`` at ``fps``.
        chunk_incomplete: frames, >= 1: how far back a frame missing a marker may start.
        seed_iterations: LM iteration cap per stage of the seed frame.
        rotation_prior: ``(W (J, 3, 3), c (J, 3))`` or None: adds
            ``sum_j (v_j - c_j)^T W_j (v_j - c_j)`` to the cost, ``v_j`` the rotation vector
            (rad) of joint ``j``'s local rotation from the rest pose, ``W_j`` symmetric positive
            semi-definite in m^2/rad^2 (comparable to squared marker residuals in m^2). Only
            free joints are affected (the root's ``v_0`` is its global rotation). ``hinge_prior``
            builds one from joint kinds. All-zero ``W`` gives exactly the unregularised solve.
        hold: m^2/rad^2, >= 0: every free joint's rotation vector is also pulled toward its
            start pose (the frame solved before its batch, or ``init``) with ``hold * I``, a
            temporal prior on the segments that show fewer than three of their markers in a
            frame (``hold_prior``). A segment left with one marker (a rotation the frame cannot
            determine) then stays where the motion was instead of where noise pushes it; with
            ``hold = 1e-4`` 10 deg cost like one marker 1.7 mm off. 0: every frame alone.
        settle: without ``init``, frames seeing every marker where the solved motion turns a
            joint faster than ``_JUMP_RATE`` are solved again from their neighbours' poses and
            take the better minimum (``_settle``); a wrong minimum held for a stretch of frames
            goes. False: every frame keeps the minimum its start led to.
    Returns:
        ``KinematicResult``. A frame with no visible marker is not solved: it keeps the pose of
        the frame solved just before it in processing order (the previous frame after the seed,
        the next one before it, the initial pose when ``init`` is given), with
        ``converged False`` and ``iterations 0``.
    Raises:
        ShapeError: ``pos`` not ``(F, M, 3)`` for this marker set, infinite values, a marker on a
            joint the skeleton does not have, bad ``init`` / ``free_joints`` / parameters, a
            ``rotation_prior`` with wrong shapes or a ``W_j`` not symmetric PSD.
    """
    _check_markerset(skeleton, markerset)
    M = len(markerset)
    J = len(skeleton)
    try:
        # No copy of a float array: a long take's input is the largest array here.
        pos = np.asarray(pos, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"pos: cannot convert to a float array ({exc})") from None
    if pos.ndim != 3 or pos.shape[1:] != (M, 3):
        raise ShapeError(f"pos: expected shape (F, {M}, 3) (frames, markers in markerset.names "
                         f"order, xyz m), got {pos.shape}")
    if np.any(np.isinf(pos)):
        raise ShapeError("pos: marker positions must be finite or NaN (missing), not infinite")
    F = pos.shape[0]
    if F == 0:
        raise ShapeError("pos: no frames")
    if bad_number(fps, positive=True):     # found by the returned Motion, after the whole solve
        raise ShapeError(f"fps must be a finite number > 0 (the frame rate of pos), got {fps!r}")
    if chunk is None:
        chunk = max(1, int(round(CHUNK_SECONDS * fps)))
    if iterations < 1 or chunk < 1 or chunk_incomplete < 1 or not tol >= 0:
        raise ShapeError("iterations, chunk and chunk_incomplete must be >= 1, tol >= 0")
    if not (np.isfinite(hold) and hold >= 0):
        raise ShapeError(f"hold must be a finite number >= 0 m^2/rad^2, got {hold!r}")
    if not isinstance(settle, (bool, np.bool_)):      # "no" would settle
        raise ShapeError(f"settle must be True or False, got {settle!r}")
    if max_marker_pull is not None and not max_marker_pull > 0:
        raise ShapeError(f"max_marker_pull must be > 0 m or None, got {max_marker_pull!r}")
    if free_joints is None:
        free_bool = default_free_joints(skeleton, markerset)
    else:
        free_bool = np.asarray(free_joints)
        _free_index(skeleton, free_bool)
    if init is not None:
        if not isinstance(init, Motion) or not init.skeleton.same_structure(skeleton):
            raise ShapeError("init must be a Motion on a skeleton with the same joints")
        if init.n_frames != F:
            raise ShapeError(f"init has {init.n_frames} frames, pos has {F}")

    prior = _check_prior(rotation_prior, J)
    vis = ~np.isnan(pos).any(axis=-1)
    nvis = vis.sum(axis=1)
    st = _Structure(skeleton, markerset, np.flatnonzero(free_bool), prior, hold)

    def observed(idx):
        """Observations, visibility and weights of frames ``idx``, made per batch so that a long
        take needs no whole-take copies of its markers."""
        v = vis[idx]
        return np.where(v[..., None], pos[idx], 0.0), v, markerset.weight * v

    lrot = np.empty((F, J, 4))
    root = np.empty((F, 3))
    its = np.zeros(F, int)
    conv = np.zeros(F, bool)
    done = 0

    def solve_batch(idx, l0, r0):
        nonlocal done
        ok = idx[nvis[idx] > 0]
        if ok.size:
            seen = nvis[idx] > 0
            o, v, w = observed(ok)
            pw = hold_prior(st, l0[seen], v) if st.hold > 0 else None
            l, r, i, c, _ = _lm(st, o, v, w, l0[seen], r0[seen], iterations, tol,
                             max_marker_pull, pw)
            lrot[ok], root[ok], its[ok], conv[ok] = l, r, i, c
        done += len(idx)
        if progress is not None:
            progress(done, F)

    if init is not None:
        seed = 0
        l0 = np.array(init.lrot)
        r0 = np.array(init.root_pos)
        lrot[:], root[:] = l0, r0
        # every frame starts from its own init: ``chunk`` (how far back a start may be) has no
        # say here, and each frame's LM is its own, so the batches are only as small as memory asks
        for s in range(0, F, _ROUND_BATCH):
            idx = np.arange(s, min(s + _ROUND_BATCH, F))
            solve_batch(idx, l0[idx], r0[idx])
        # Unseen frames keep the initial pose (already in place).
    else:
        enough = np.flatnonzero(nvis >= max(3, (M + 1) // 2))
        seed = int(enough[0]) if enough.size else int(np.argmax(nvis))
        if nvis[seed] == 0:
            raise ShapeError("pos: no marker is visible in any frame")
        o_s, v_s, w_s = observed(np.array([seed]))
        l_s, r_s, it_s, c_s = _seed(st, o_s[0], v_s[0], w_s[0], free_bool,
                                    seed_iterations, tol, max_marker_pull)
        # Polish the seed with the full structure so it ends like every other frame.
        l, r, i, c, _ = _lm(st, o_s, v_s, w_s, l_s[None], r_s[None], iterations, tol,
                         max_marker_pull)
        lrot[seed], root[seed], its[seed], conv[seed] = l[0], r[0], it_s + i[0], c[0]
        done += 1
        if progress is not None:
            progress(done, F)
        complete = nvis == M
        orders = (np.arange(seed + 1, F), np.arange(seed - 1, -1, -1))
        plans = [_schedule(o, seed, complete, nvis > 0, chunk, chunk_incomplete) for o in orders]
        frames = np.concatenate(orders)
        starts, rounds = (np.concatenate(a) for a in zip(*plans))
        by = np.argsort(rounds, kind="stable")
        cuts = np.flatnonzero(np.diff(rounds[by])) + 1
        # A round's frames start from frames solved in earlier rounds, so they are solved
        # together, at most _ROUND_BATCH at a time (each frame's LM is its own: the split does
        # not change the result, and it bounds the batch's (n, P, P) arrays).
        for rnd in np.split(by, cuts) if by.size else ():
            for b in np.array_split(rnd, -(-len(rnd) // _ROUND_BATCH)):
                idx, src = frames[b], starts[b]
                solve_batch(idx, lrot[src], root[src])
                # Frames with no visible marker keep the pose of the frame they start from.
                blind = nvis[idx] == 0
                lrot[idx[blind]], root[idx[blind]] = lrot[src[blind]], root[src[blind]]
        if settle:
            spent, last = _settle(st, observed, lrot, root, nvis == M, fps, iterations, tol,
                                     max_marker_pull)
            its += spent
            conv = np.where(last >= 0, last == 1, conv)

    lrot = quat.normalize(lrot)
    # Read-only arrays go into the Motion without a copy.
    lrot.setflags(write=False)
    root.setflags(write=False)
    residual = np.full((F, M), np.nan)
    for s in range(0, F, _BLOCK):        # in blocks: no whole-take temporaries
        b = slice(s, s + _BLOCK)
        pm = marker_positions(skeleton, markerset, lrot[b], root[b])
        residual[b] = np.where(vis[b], np.linalg.norm(pos[b] - pm, axis=-1), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        rms = np.sqrt(np.sum(np.where(vis, residual, 0.0) ** 2, axis=1) / nvis)
    outlier = (np.nan_to_num(residual, nan=0.0) > max_marker_pull) if max_marker_pull \
        else np.zeros((F, M), bool)
    conv &= nvis > 0
    motion = Motion(skeleton, fps, root, lrot, meta={"solver": "kinematic"})
    return KinematicResult(motion=motion, residual=residual, iterations=its, converged=conv,
                           outlier=outlier, rms=rms, free_joints=free_bool.copy(),
                           observable=observable_joints(skeleton, markerset), seed_frame=seed)
