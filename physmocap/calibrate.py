"""Subject calibration: limb lengths and marker offsets fitted to one person, then fixed.

The template body is first scaled to the subject's size. Then two steps alternate on a set of
well-observed frames:

1. poses: the kinematic solver fits every chosen frame with the current skeleton and offsets;
2. shape: with those global rotations held, every marker position is *linear* in the unknown
   root positions, bone offsets and marker offsets (x = root + sum of R_parent(a) o_a over the
   chain + R_body u), so one linear least-squares solve gives the best limb lengths and marker
   offsets for all frames at once. Priors toward the scaled template keep the split between
   "a longer bone" and "a marker further out" well posed where the motion does not decide it.
   A joint centre is only placed by the motion when the joint moves enough about it (never in a
   static trial), so the priors are stated as anatomy states them: each marker's offset from the
   joint centre it marks (KNE from the knee, not from the hip), as Plug-in Gait places its
   joint centres from the markers.
3. gauge: segments whose frame can turn inside the body without moving a marker (pelvis,
   trunk, head) are turned back to the template's frame, which the alternation cannot do.

On a static trial a marker set may also state Plug-in Gait's chord rule for a joint centre
(``Centre``; the PiG set does for the knees): the rule's point, computed from the markers and the
fitted parent joint in every calibration frame, enters the pose and the shape fits as a stiff
virtual marker at the joint (the calibration RMS counts it as a marker). Priors alone leave a
knee centre where the template's offsets put it relative to KNE; the rule places it from the
thigh wand as Plug-in Gait does (a right knee 15 mm out of the wand's plane otherwise:
``benchmarks/solve_real.py``).

Limb lengths are then fixed for the whole take: that is the point of the method.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from .errors import PhysmocapError, require_counts, require_numbers
from .markers import MarkerSet
from .motion import Motion
from .skeleton import Skeleton

__all__ = ["Subject", "Centre", "calibrate", "chord_centre", "estimate_scale", "choose_frames",
           "fit_shape", "marker_anchors"]

#: Weight of a ``Centre``'s virtual marker, as a spring weight in the pose fit and per sample in
#: the shape fit (markers: 1), where its prior also pins it to the joint (offset 0): the rule's
#: point becomes the joint centre, against the priors that would put it elsewhere.
CENTRE_WEIGHT = 20.0


@dataclass(frozen=True, eq=False)
class Subject:
    """A calibrated subject.

    Attributes:
        skeleton: fitted bone offsets (m); ``markerset``: fitted marker offsets (m).
        scale: template-to-subject size ratio; ``rms_m``: marker RMS of the calibration frames.
        frames: indices of the frames used.
    """

    skeleton: Skeleton
    markerset: MarkerSet
    scale: float
    rms_m: float
    frames: np.ndarray


def estimate_scale(pos: np.ndarray, template: Skeleton, markerset: MarkerSet) -> float:
    """Subject/template size ratio: the median over frames of the markers' vertical extent
    (Z up), over the same extent of the template's rest markers.

    Vertical extent (head markers to foot markers) is nearly the same standing, walking or in a
    T-pose, unlike the spread of all markers, which shrinks when the arms come down.
    """
    gpos, grot = _fk(template, quat.identity((1, len(template))), template.offsets[None, 0])
    rest = gpos[0, markerset.body] + quat.rotate(grot[0, markerset.body], markerset.offset)
    z = pos[..., 2]
    ok = (~np.isnan(z)).sum(axis=1) >= 6
    if not np.any(ok):
        raise PhysmocapError("no frame sees six or more markers of the marker set; cannot size "
                             "the subject")
    extent = np.nanmax(z[ok], axis=1) - np.nanmin(z[ok], axis=1)
    rest_extent = float(rest[:, 2].max() - rest[:, 2].min())
    return float(np.median(extent) / rest_extent)


def choose_frames(pos: np.ndarray, n: int) -> np.ndarray:
    """Up to ``n`` frame indices spread over the take, preferring frames with every marker."""
    require_counts("choose_frames", n=n)
    seen = (~np.isnan(pos).any(axis=-1)).sum(axis=1)
    good = np.flatnonzero(seen >= seen.max() - max(1, pos.shape[1] // 20))
    if len(good) <= n:
        return good
    return good[np.linspace(0, len(good) - 1, n).round().astype(int)]


def _fk(skeleton: Skeleton, lrot: np.ndarray, root: np.ndarray):
    from .skeleton import forward_kinematics
    return forward_kinematics(skeleton, lrot, root)


@dataclass(frozen=True)
class Centre:
    """A chord rule bound to a calibration (``scene.CentreRule`` with indices).

    Attributes:
        joint: index of the joint placed; its parent joint is the chord's third point.
        wand, marker: marker columns of the trial.
        width: m, the subject's measured width, or None for ``template_width`` scaled with
            the subject.
        template_width: m, the width for the template body; ``radius``: m, marker radius.
    """

    joint: int
    wand: int
    marker: int
    width: float | None
    template_width: float
    radius: float

    def distance(self, scale: float) -> float:
        """m from the marker to the joint centre, for a subject ``scale`` times the template."""
        w = self.width if self.width is not None else self.template_width * scale
        return 0.5 * w + self.radius


def chord_centre(parent: np.ndarray, wand: np.ndarray, marker: np.ndarray, distance: float,
                 near: np.ndarray) -> np.ndarray:
    """Plug-in Gait's chord function: ``(F, 3)`` joint centres, m.

    The centre lies in the plane of ``parent`` (the parent joint's centre), ``wand`` and
    ``marker``, ``distance`` from ``marker``, with the angle parent-centre-marker a right angle
    (it lies on the circle whose diameter is parent-marker). Of the two such points, the one
    nearer ``near`` (the current estimate) is taken. All inputs ``(F, 3)`` m; NaN in, NaN out.
    """
    to_p = parent - marker
    d = np.linalg.norm(to_p, axis=-1, keepdims=True)
    u = to_p / d
    n = np.cross(wand - marker, u)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    v = np.cross(u, n)                              # in the plane, perpendicular to marker->parent
    a = distance ** 2 / d                           # along u: Thales, |c - m| = distance
    b = distance * np.sqrt(np.maximum(d ** 2 - distance ** 2, 0.0)) / d
    c1, c2 = marker + a * u + b * v, marker + a * u - b * v
    first = np.linalg.norm(c1 - near, axis=-1) <= np.linalg.norm(c2 - near, axis=-1)
    return np.where(first[:, None], c1, c2)


def fit_shape(skeleton: Skeleton, markerset: MarkerSet, grot: np.ndarray, pos: np.ndarray,
              prior_bone: float = 0.5, prior_marker: float = 8.0,
              template: tuple[Skeleton, MarkerSet] | None = None, symmetric: bool = False,
              data_weight: np.ndarray | None = None) -> tuple[Skeleton, MarkerSet, float]:
    """Linear least squares for bone and marker offsets with global rotations held fixed.

    Args:
        grot: ``(F, J, 4)`` global joint rotations of the chosen frames.
        pos: ``(F, M, 3)`` observed markers of those frames (NaN = missing).
        prior_bone, prior_marker: weight (in equivalent observations) pulling each bone
            offset, and each marker's offset from its anchor joint (``marker_anchors``), toward
            ``template`` (default: the current values). A marker's prior scales with its
            weight squared: soft-tissue markers (weight 0.5) are placed loosely. The bone prior
            is the weaker: limb lengths and alignment vary between people more than a bony
            landmark's offset from its joint centre. Against 2 / 4 on the shared captures,
            0.5 / 8 brought the Plug-in Gait walk's hip centres from 19 to 10 mm of Plug-in
            Gait's own and 16_57's leg joints 1-2 mm nearer Vicon's, for 0.2-0.8 mm more marker
            RMS (still below the former isotropic priors on every capture but NexGen, equal).
        symmetric: tie ``Left*``/``Right*`` bones as mirror images across the rest frame's
            x-z plane (the template's left is +y). Off by default: on the shared captures it made
            the CMU and Plug-in Gait solves worse (asymmetric subjects and marker placements).
        data_weight: ``(M,)`` weight of each marker's observations (default 1: every sample
            counts once, whatever its marker's spring weight).
    Returns:
        the refitted skeleton and marker set, and the RMS marker residual (m) of the fit.
    """
    F, J = grot.shape[:2]
    M = len(markerset)
    base_sk, base_ms = template or (skeleton, markerset)
    R = quat.to_matrix(grot)                                   # (F, J, 3, 3)
    # Each marker's chain: the non-root joints from the root down to its body.
    chains = []
    for b in markerset.body:
        chain, j = [], int(b)
        while j > 0:
            chain.append(j)
            j = int(skeleton.parents[j])
        chains.append(chain)
    n_root, n_bone, n_mark = 3 * F, 3 * (J - 1), 3 * M
    cols = n_root + n_bone + n_mark
    seen = ~np.isnan(pos).any(axis=-1)                         # (F, M)
    fs, ms = np.nonzero(seen)
    rows = 3 * len(fs)
    A = np.zeros((rows + n_bone + n_mark, cols))
    y = np.zeros(rows + n_bone + n_mark)
    r = 3 * np.arange(len(fs))
    for axis in range(3):
        A[r + axis, 3 * fs + axis] = 1.0                       # root position of that frame
    for k, (f, m) in enumerate(zip(fs, ms)):
        blk = slice(3 * k, 3 * k + 3)
        for a in chains[m]:
            c = n_root + 3 * (a - 1)
            A[blk, c:c + 3] += R[f, skeleton.parents[a]]
        c = n_root + n_bone + 3 * m
        A[blk, c:c + 3] = R[f, markerset.body[m]]
        y[blk] = pos[f, m]
    # Priors toward the template (scaled): identity rows with weight sqrt(prior).
    pb = np.sqrt(prior_bone)
    A[rows + np.arange(n_bone), n_root + np.arange(n_bone)] = pb
    y[rows:rows + n_bone] = pb * base_sk.offsets[1:].ravel()
    # A marker's prior is its offset from the joint centre it marks (``marker_anchors``: KNE
    # from the knee, ANK from the ankle, ASIS from the hip), not from its segment's proximal
    # joint: that is what anatomy fixes (PiG: the knee centre lies half the knee width plus a
    # marker radius medial of KNE), while the bone between the two joints is the subject's.
    anchor = marker_anchors(base_sk, base_ms)
    pm = np.sqrt(prior_marker) * base_ms.weight
    for m in range(M):
        r0 = rows + n_bone + 3 * m + np.arange(3)
        c = n_root + n_bone + 3 * m
        A[r0, c + np.arange(3)] = pm[m]
        target = base_ms.offset[m]
        if anchor[m] != markerset.body[m]:
            ca = n_root + 3 * (anchor[m] - 1)
            A[r0, ca + np.arange(3)] = -pm[m]
            target = target - base_sk.offsets[anchor[m]]
        y[r0] = pm[m] * target
    # Left and right bones are mirror images (y -> -y in the rest frame): tie them, which halves
    # the bone unknowns and keeps one side's poorly seen joint centre from drifting alone.
    pairs = _mirror_pairs(skeleton.names) if symmetric else []
    keep = np.ones(cols, bool)
    mirror = np.diag([1.0, -1.0, 1.0])
    for left, right in pairs:
        cl, cr = n_root + 3 * (left - 1), n_root + 3 * (right - 1)
        A[:, cl:cl + 3] += A[:, cr:cr + 3] @ mirror
        keep[cr:cr + 3] = False
    wr = 1.0
    if data_weight is not None:                 # weighted observation rows (unweighted after)
        wr = np.repeat(np.sqrt(np.asarray(data_weight, float))[ms], 3)
    x = np.zeros(cols)
    x[keep], *_ = np.linalg.lstsq(np.vstack([A[:rows, keep] * np.reshape(wr, (-1, 1)),
                                             A[rows:, keep]]),
                                  np.r_[y[:rows] * wr, y[rows:]], rcond=None)
    for left, right in pairs:
        cl, cr = n_root + 3 * (left - 1), n_root + 3 * (right - 1)
        x[cr:cr + 3] = mirror @ x[cl:cl + 3]
    res = A[:rows] @ x - y[:rows]
    rms = float(np.sqrt(np.mean(res.reshape(-1, 3) ** 2 * 3))) if rows else float("nan")
    offsets = skeleton.offsets.copy()
    offsets[1:] = x[n_root:n_root + n_bone].reshape(J - 1, 3)
    new_sk = Skeleton(skeleton.names, skeleton.parents, offsets, skeleton.end_sites)
    new_ms = MarkerSet(markerset.names, markerset.body,
                       x[n_root + n_bone:].reshape(M, 3), markerset.weight)
    return new_sk, new_ms, rms


def _with_centres(sk, ms, prior, pos, gpos, centres, scale):
    """The marker set, its prior and ``pos (F, M, 3)`` with each rule's point as one more marker
    at its joint (offset 0, weight ``CENTRE_WEIGHT``); unchanged without rules."""
    if not centres:
        return ms, prior, pos
    pts = [chord_centre(gpos[:, sk.parents[c.joint]], pos[:, c.wand], pos[:, c.marker],
                        c.distance(scale), gpos[:, c.joint]) for c in centres]
    C = len(centres)
    body = np.r_[ms.body, [c.joint for c in centres]].astype(int)
    weight = np.r_[ms.weight, np.full(C, CENTRE_WEIGHT)]
    names = ms.names + tuple(f"centre:{sk.names[c.joint]}" for c in centres)
    zero = np.zeros((C, 3))
    return (MarkerSet(names, body, np.vstack([ms.offset, zero]), weight),
            (prior[0], MarkerSet(names, body, np.vstack([prior[1].offset, zero]), weight)),
            np.concatenate([pos, np.stack(pts, 1)], 1))


def marker_anchors(skeleton: Skeleton, markerset: MarkerSet) -> np.ndarray:
    """``(M,)`` int: for each marker, the joint centre nearest to it at rest among its segment's
    own joint and that segment's child joints (LKNE on the thigh -> the knee, LANK on the shank
    -> the ankle, LASI on the pelvis -> the hip, LHEE -> the ankle)."""
    out = np.array(markerset.body, int)
    for m, b in enumerate(markerset.body):
        kids = np.flatnonzero(skeleton.parents == b)
        kids = kids[kids != b]
        if kids.size:
            d = np.linalg.norm(skeleton.offsets[kids] - markerset.offset[m], axis=-1)
            k = int(np.argmin(d))
            if d[k] < np.linalg.norm(markerset.offset[m]):
                out[m] = kids[k]
    return out


def gauge_free(skeleton: Skeleton, rotation_prior=None) -> np.ndarray:
    """``(J,)`` bool: segments whose frame may turn freely inside the body.

    Turning a segment's frame (its marker offsets and child bone offsets one way, its pose the
    other) changes no marker, unless the segment's own joint or a child joint has a rotation
    prior (a hinge axis, a joint held at rest, a clavicle's twist) that is tied to the frame:
    the pelvis and head qualify, a thigh (the knee's axis is in its frame) and the chest (the
    clavicles' twist is measured in it) do not.
    """
    J = len(skeleton)
    if rotation_prior is None:
        return np.ones(J, bool)
    tied = np.any(np.asarray(rotation_prior[0]) != 0.0, axis=(1, 2))
    out = ~tied
    for j in range(1, J):
        if tied[j]:
            out[skeleton.parents[j]] = False
    return out


def align_frames(skeleton: Skeleton, markerset: MarkerSet, template: tuple[Skeleton, MarkerSet],
                 motion, free: np.ndarray):
    """Turn each ``free`` segment's frame so its offsets best match ``template``'s.

    The pose / shape alternation cannot move along such a turn (the pose step holds the offsets,
    the shape step the rotations), so without this the frame drifts: a pelvis fitted to a static
    trial ended 10 degrees off the plane of its ASIS and PSIS markers, and the hip centres, whose
    prior is stated in that plane (Davis), moved 2 cm. Markers and joints do not move.

    Returns the skeleton, marker set and ``motion`` (its rotations compensated).
    """
    base_sk, base_ms = template
    offsets = skeleton.offsets.copy()
    moff = markerset.offset.copy()
    lrot = motion.lrot.copy()
    for j in np.flatnonzero(free):
        kids = np.flatnonzero(skeleton.parents == j)
        kids = kids[kids != j]
        mk = np.flatnonzero(markerset.body == j)
        if len(mk) + len(kids) < 3:
            continue
        a = np.vstack([moff[mk], offsets[kids]])
        b = np.vstack([base_ms.offset[mk], base_sk.offsets[kids]])
        w = np.r_[markerset.weight[mk], np.ones(len(kids))]
        U, S, Vt = np.linalg.svd((w[:, None] * a).T @ b)
        if S[1] < 1e-9 * max(S[0], 1e-12):
            continue                                      # collinear: the turn is not defined
        D = np.diag([1.0, 1.0, np.sign(np.linalg.det(Vt.T @ U.T))])
        R = Vt.T @ D @ U.T                                # R a ~ b
        moff[mk] = moff[mk] @ R.T
        offsets[kids] = offsets[kids] @ R.T
        q = quat.from_matrix(R)
        lrot[:, j] = quat.mul(lrot[:, j], quat.inv(q))
        lrot[:, kids] = quat.mul(q, lrot[:, kids])
    from .motion import Motion
    return (Skeleton(skeleton.names, skeleton.parents, offsets, skeleton.end_sites),
            MarkerSet(markerset.names, markerset.body, moff, markerset.weight),
            Motion(motion.skeleton, motion.fps, motion.root_pos, quat.normalize(lrot),
                   dict(motion.meta)))


def _mirror_pairs(names) -> list[tuple[int, int]]:
    """(left, right) joint index pairs named ``Left…``/``Right…``."""
    idx = {n: i for i, n in enumerate(names)}
    return [(i, idx["Right" + n[4:]]) for n, i in idx.items()
            if n.startswith("Left") and "Right" + n[4:] in idx]


#: Stretches of a long take whose continuous pose solves start the calibration.
POSE_WINDOWS = 5

#: LM iteration cap per frame of the first pose solve. With the template's offsets the markers
#: sit centimetres off and the frames crawl toward poses the first shape fit moves anyway: with
#: 40 they took 18 iterations a frame on CMU 01_01, 10 of its 12 s of calibration. The later
#: alternations (40 iterations, from these poses and fitted offsets) finish the job: with 10 the
#: five real captures' subjects came out within 0.6 mm of the bones fitted with 40.
FIRST_POSE_ITERATIONS = 10


def calibrate(pos: np.ndarray, fps: float, template: Skeleton, markerset: MarkerSet,
              n_frames: int = 60, iterations: int = 4, pull: float = 0.05,
              outlier_floor: float = 0.02, kinematic_options: dict | None = None,
              max_pose_frames: int = 1500, centres=(), progress=None) -> Subject:
    """Fit limb lengths and marker offsets to a trial.

    Args:
        pos: ``(F, M, 3)`` m, a static trial or the motion trial itself (columns =
            ``markerset.names``).
        template: the body template's skeleton; ``markerset``: its rough marker offsets.
        n_frames: frames used (spread over the take, the best-seen ones).
        iterations: pose / shape alternations.
        pull: m, residual where a marker's pull starts to fade in the pose fits (robust loss).
        outlier_floor: m; samples further than max(this, 4 x that marker's median residual)
            from the fit are left out of the shape fit, so a swapped label or a ghost cannot
            bend the subject.
        kinematic_options: extra keywords for ``solve_kinematic`` (e.g. a rotation prior).
        max_pose_frames: the first pose solve runs over at most this many frames (a stride of
            the take at most 0.05 s apart, or ``POSE_WINDOWS`` continuous stretches of a long
            one), so long takes calibrate in bounded time.
        centres: ``Centre`` rules placing joint centres from the markers (static trials).
    """
    require_numbers("calibrate", ("fps",), fps=fps, pull=pull, outlier_floor=outlier_floor)
    # NaN fps and a float count: a ValueError / TypeError deep in the fit before
    require_counts("calibrate", n_frames=n_frames, iterations=iterations,
                   max_pose_frames=max_pose_frames)
    from .solver.kinematic import solve_kinematic

    kinematic_options = kinematic_options or {}
    pos = np.asarray(pos, dtype=float)
    gauge = gauge_free(template, kinematic_options.get("rotation_prior"))
    scale = estimate_scale(pos, template, markerset)
    sk = template.scaled(scale)
    ms = MarkerSet(markerset.names, markerset.body, markerset.offset * scale, markerset.weight)
    prior = (sk, ms)
    # First poses: a continuous solve over (a stride of) the take, so every chosen frame starts
    # from a neighbour's pose. Solving the scattered frames alone warm-starts each from a frame
    # seconds away, which lands arms in wrong minima and spoils the shape fit.
    # The stride stays short (0.05 s): a long take (minutes) is solved in POSE_WINDOWS stretches
    # spread over it instead, each continuous, so that no frame starts seconds from its start.
    F = len(pos)
    step = max(1, int(round(0.05 * fps)))
    stride = max(1, -(-F // max_pose_frames))
    if stride <= step:
        windows = [np.arange(0, F, stride)]
    else:
        stride = step
        n = max(1, max_pose_frames // POSE_WINDOWS)           # solved frames per stretch
        starts = np.linspace(0, F - n * stride, POSE_WINDOWS).round().astype(int)
        windows = [np.arange(a, a + n * stride, stride) for a in starts]
    strided = np.concatenate(windows)
    frames = strided[choose_frames(pos[strided], n_frames)]
    first = [solve_kinematic(sk, ms, pos[w], fps=fps / stride, iterations=FIRST_POSE_ITERATIONS,
                             max_marker_pull=pull, **kinematic_options).motion for w in windows]
    lrot = np.concatenate([m.lrot for m in first])
    root = np.concatenate([m.root_pos for m in first])
    at = np.searchsorted(strided, frames)
    init = Motion(sk, fps, root[at], lrot[at])
    sub = pos[frames]
    rms = float("nan")
    M = len(ms)
    for it in range(iterations):
        # A centre rule's point (from the markers and the last pose's parent joint) is one more
        # marker, pinned to its joint, in both steps: the pose turns the segment toward it, the
        # shape fit puts the joint on it. (In the shape fit alone it stalled half-way: the next
        # pose step turned the thigh back.)
        ems, eprior, esub = _with_centres(sk, ms, prior, sub, init.gpos, centres, scale)
        # later iterations start each frame from its previous pose (new offsets move it little)
        res = solve_kinematic(sk, ems, esub, init=init, fps=fps, iterations=40,
                              max_marker_pull=pull, **kinematic_options)
        init = res.motion
        # Robust: samples far off the fit *for that marker* (a swapped label, a ghost) do not
        # shape the subject. The cut is per marker, so a marker whose template offset is simply
        # wrong (CMU's deliberately asymmetric RUPA) is far off in every frame and still gets
        # its offset refitted.
        r = res.residual
        cut = np.maximum(outlier_floor, 4.0 * np.nanmedian(r, axis=0))      # (M,)
        use = np.where((np.nan_to_num(r, nan=np.inf) > cut)[..., None], np.nan, esub)
        dw = np.r_[np.ones(M), np.full(len(centres), CENTRE_WEIGHT)] if centres else None
        sk, ems, rms = fit_shape(sk, ems, res.motion.grot, use, template=eprior, data_weight=dw)
        ms = MarkerSet(ms.names, ms.body, ems.offset[:M], ms.weight)
        sk, ms, init = align_frames(sk, ms, prior, init, gauge)
        if progress is not None:
            progress(it + 1, rms)
    return Subject(sk, ms, scale, rms, frames)
