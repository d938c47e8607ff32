"""The whole marker solve: capture in, calibrated subject, kinematic start, physical equilibrium,
metrics out. ``physmocap solve`` is a thin wrapper around ``solve_capture``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import __version__
from ..calibrate import Centre, Subject, calibrate, estimate_scale
from ..errors import PhysmocapError, UnitError, require_counts, require_type
from ..markers import MarkerTrajectories
from ..motion import Motion
from ..markers import MarkerSet
from ..scene import BodyTemplate, Environment, MarkerSetSpec
from ..skeleton import forward_kinematics
from .body import JointSpec, _segment_vectors
from .contacts import FOOT_MARKERS, detect_plants
from .damage import bridge_blackouts, damage_report, frame_rate_check
from .kinematic import (CLAVICLE_TWIST_WEIGHT, FIXED_JOINT_WEIGHT, hinge_prior, marker_positions,
                        solve_kinematic)
from .checkpoint import BLOCK, WARMUP, Checkpoint, drop_if_empty, job_key
from .physical import (PhysicalResult, PhysicalSettings, anchor_weights, past_limits,
                       plant_anchors, solve_physical)
from .toes import floor_toes, free_toes, standing_heights

__all__ = ["SolveResult", "solve_capture", "write_outputs", "joint_spec_from_body",
           "kinematic_prior", "bind_centres", "hold_anchors", "cleaned_markers",
           "write_cleaned_c3d"]

#: Counts the changes that moved what a solve returns for the same input and settings. A
#: resumed solve (its checkpoint) and a batch's done-stamp hold it, so a finished stage or take
#: from an older solver is solved again rather than kept: the version alone stays the same
#: between releases. 2: plants end once their marker has left its place, their springs ramp.
#: 3: toes no marker is on are bent at the ball by the floor (``toes.floor_toes``).
#: 4: the kinematic solve starts a frame seeing every marker from an earlier such frame, not
#: through the frames missing one before it (``kinematic._schedule``). 5: the physical solve
#: starts a frame from its kinematic pose moved by part of the frame before's correction
#: (``PhysicalSettings.carry``). 6: a frame seeing every marker starts at most
#: ``kinematic.CHUNK_SECONDS`` back, and calibration's first poses stop at
#: ``calibrate.FIRST_POSE_ITERATIONS`` (both move the subject and the kinematic poses).
#: 7: the kinematic solve settles frames into a neighbour's better minimum (``_settle``).
#: 8: a clavicle's twist about its bone is held (``CLAVICLE_TWIST_WEIGHT``; moves the subject).
SOLVER_REVISION = 8


@dataclass(frozen=True, eq=False)
class SolveResult:
    """Everything a solve produced.

    Attributes:
        motion: the physical solve (the answer); ``kinematic``: the kinematic reference solve.
        subject: calibrated skeleton and marker offsets; ``labels``: the markers used (columns).
        pos: ``(F, M, 3)`` m, the captured markers used; ``solved_markers``: ``(F, M, 3)`` m, the
            landmarks of the solved body (fill gaps with these).
        residual: ``(F, M)`` m; ``outliers``: ``(F, M)`` bool; ``plants``: ``(F, K)`` bool with
            ``plant_labels`` naming the K foot markers.
        report: the JSON-ready metrics.
        limit_hit: ``(F, J)`` bool, joints held at a template joint limit (for the HTML report).
    """

    motion: Motion
    kinematic: Motion
    subject: Subject
    labels: tuple
    pos: np.ndarray
    solved_markers: np.ndarray
    residual: np.ndarray
    outliers: np.ndarray
    plants: np.ndarray
    plant_labels: tuple
    report: dict = field(default_factory=dict)
    limit_hit: np.ndarray | None = None


def joint_spec_from_body(body: BodyTemplate, skeleton=None) -> JointSpec:
    """The physical joint description of a body template (kinds, hinge axes, limits, masses)."""
    sk = skeleton or body.skeleton
    seg = _segment_vectors(sk)
    n = np.linalg.norm(seg, axis=-1, keepdims=True)
    twist = np.where(n > 1e-6, seg / np.maximum(n, 1e-9), [0.0, 0.0, 1.0])
    return JointSpec(tuple(body.joint_type), np.array(body.axis), np.array(body.limits),
                     np.array(body.mass), twist, np.array(body.twist_mid))


#: How the kinematic reference solves a take frame after frame: each frame starts from the one
#: before it, and a segment seen by fewer markers than it carries (and fewer than three) is held
#: toward that frame's pose (``solve_kinematic``'s ``hold``, m^2/rad^2). With 30 % of the samples
#: dropped the joint-angle error outside a gap grew 1.5-2.3 deg without, 0.2-0.9 with
#: (``benchmarks/dropout.py``); a take without gaps solves exactly as before.
TRACKING = {"hold": 3e-3, "chunk_incomplete": 1}


def bind_centres(spec, labels, skeleton, meta: dict) -> tuple:
    """``calibrate.Centre``s for the marker set's ``CentreRule``s whose markers the trial has,
    with the subject's widths from the trial's ``subject_parameters`` (mm) where stated."""
    measured = meta.get("subject_parameters", {})
    out = []
    for rule in spec.centres:
        if rule.wand not in labels or rule.marker not in labels:
            continue
        w = measured.get(rule.parameter) if rule.parameter else None
        width = float(w) / 1000.0 if w is not None and w > 0 else None
        out.append(Centre(skeleton.index(rule.joint), labels.index(rule.wand),
                          labels.index(rule.marker), width, rule.width, rule.radius))
    return tuple(out)


def kinematic_prior(body: BodyTemplate) -> dict:
    """Keyword arguments for ``solve_kinematic`` (and ``calibrate``) that make its joints agree
    with the body: hinges stay near their axis, toes (one marker on them in common marker sets,
    too few to fix a rotation) stay near rest, and a clavicle (``*Shoulder``, a ball joint)
    twists about its bone only as far as the markers ask (``CLAVICLE_TWIST_WEIGHT``)."""
    toes = np.array([n.endswith("Toes") for n in body.names])
    W, c = hinge_prior(body.joint_type, body.axis, weight_fixed=FIXED_JOINT_WEIGHT, fixed=toes)
    spec = joint_spec_from_body(body)
    for j, name in enumerate(body.names):
        if name.endswith("Shoulder") and body.joint_type[j] == "ball":
            a = spec.twist_axis[j]
            # a ball joint has no hinge term: this is its whole prior, centred on its twist
            # range's middle
            W[j] = CLAVICLE_TWIST_WEIGHT * np.outer(a, a)
            c[j] = spec.twist_mid[j] * a
    return {"rotation_prior": (W, c)}


def _foot_rows(labels: tuple) -> tuple[np.ndarray, tuple]:
    rows = [i for i, l in enumerate(labels)
            if any(l in FOOT_MARKERS[side][:2] for side in FOOT_MARKERS)]   # heels and toes
    return np.array(rows, int), tuple(labels[i] for i in rows)


def foot_plants(markerset: MarkerSet, pos: np.ndarray, fps: float, kin_motion: Motion,
                rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Foot plants of the markers ``rows (K,)`` of ``markerset`` (heels and toes): ``planted
    (F, K)`` bool, detected from their positions ``pos (F, M, 3)`` m, and the anchors ``(F, K,
    3)`` m the physical solve pins them to (NaN where not planted)."""
    planted = detect_plants(pos[:, rows], fps)
    # Anchors from the kinematic solve's landmarks, not the raw markers: they lie on the
    # calibrated rigid foot, so a heel and a toe planted together agree with each other.
    kin_points = marker_positions(kin_motion.skeleton, markerset.subset(rows), kin_motion.lrot,
                                  kin_motion.root_pos)
    return planted, plant_anchors(kin_points, planted, floor=None)


def hold_anchors(env: Environment, skeleton, kin_motion: Motion, fps: float, n_frames: int
                 ) -> tuple[MarkerSet, np.ndarray, list]:
    """Constraint points and anchors for the hand holds of ``env``.

    Returns the hold points as a marker set (palm centre of each holding hand, no data), their
    anchors ``(F, H, 3)`` (NaN outside the hold), and a name per hold. A bar's anchor is the
    point of its axis nearest to where the kinematic solve puts the palm during the hold.
    """
    names, bodies, offsets = [], [], []
    seg = _segment_vectors(skeleton)
    for i, h in enumerate(env.holds):
        j = skeleton.index(f"{h.hand}Hand")
        names.append(f"{h.hand}Hand_hold{i + 1}")
        bodies.append(j)
        offsets.append(0.5 * seg[j])                       # the palm: half-way along the hand
    ms = MarkerSet(names, bodies, np.array(offsets).reshape(-1, 3))
    palm = marker_positions(skeleton, ms, kin_motion.lrot, kin_motion.root_pos)  # (F, H, 3)
    anchors = np.full((n_frames, len(names), 3), np.nan)
    for i, h in enumerate(env.holds):
        a = int(round(h.start * fps))
        b = min(n_frames, int(round(h.stop * fps)))
        if a >= b:
            continue
        where = np.median(palm[a:b, i], axis=0)
        if h.point is not None:
            anchor = np.array(h.point)
        else:
            o = env.object(h.object)
            p0 = np.array(o.start)
            if o.kind == "bar":
                d = np.array(o.end) - p0
                t = np.clip((where - p0) @ d / (d @ d), 0.0, 1.0)
                anchor = p0 + t * d
            else:
                anchor = p0
        anchors[a:b, i] = anchor
    return ms, anchors, names


def solve_capture(markers: MarkerTrajectories, spec: MarkerSetSpec, body: BodyTemplate,
                  static: MarkerTrajectories | None = None,
                  settings: PhysicalSettings = PhysicalSettings(), plants: bool = True,
                  calibration_frames: int = 60, environment: Environment | None = None,
                  warm: str = "kinematic", progress=None, checkpoint=None) -> SolveResult:
    """Solve a capture with the physical marker solver.

    Args:
        markers: the motion trial (physical markers; extra labels are ignored).
        spec: the marker set; ``body``: the body template.
        static: a static trial of the same subject for calibration (else the motion trial).
        plants: detect foot plants and pin planted feet.
        environment: scene objects and hand holds (pinned like foot plants).
        warm: where each frame's physical relaxation starts: ``'kinematic'`` (the kinematic
            solve of that frame: fastest) or ``'previous'`` (the previous equilibrium moved on at
            constant velocity: pure physical tracking, continuous through constraints).
        progress: ``progress(stage, done, total)`` for a progress bar.
        checkpoint: a folder where finished stages are kept (see ``solver.checkpoint``): run
            again with the same inputs, the solve resumes from them (``report['resumed']``
            names the stages loaded). The caller removes it once the outputs are written.

    Takes longer than ``checkpoint.BLOCK`` frames are solved physically in blocks of that many
    frames (with or without a checkpoint, so that both give the same result).
    """
    require_type("solve_capture", markers, MarkerTrajectories, "read_c3d(PATH)")
    require_type("solve_capture", spec, MarkerSetSpec, "load_markerset(NAME), pick_markerset")
    require_type("solve_capture", body, BodyTemplate, "load_body()")
    require_type("solve_capture: settings", settings, PhysicalSettings, "PhysicalSettings(...)")
    if static is not None:
        require_type("solve_capture: static", static, MarkerTrajectories, "read_c3d(PATH)")
    try:
        try:
            return _solve_capture(markers, spec, body, static, settings, plants,
                                  calibration_frames, environment, warm, progress, checkpoint)
        except BaseException:
            # stopped or failed before its first stage was stored: no folder of only its key
            # left beside the output (``.OUT.bvh.partial/key.txt`` was)
            if checkpoint is not None:
                drop_if_empty(checkpoint)
            raise
    except PhysmocapError as exc:
        if exc.path is not None:
            raise
        # Name the capture in every error, so a batch of takes says which one failed.
        raise type(exc)(exc.reason, markers.meta.get("path") or "<capture>") from None


def _solve_capture(markers, spec, body, static, settings, plants, calibration_frames,
                   environment, warm, progress, checkpoint) -> SolveResult:
    t0 = time.perf_counter()
    say = progress or (lambda *a: None)
    if warm not in ("kinematic", "previous"):            # before the calibration, not after it
        raise PhysmocapError(f"warm must be 'kinematic' or 'previous', got {warm!r}")
    # 0 read as "pos: no frames", 2.5 as a TypeError
    require_counts("solve_capture", calibration_frames=calibration_frames)
    missing = spec.missing(markers.labels)
    if missing:
        raise PhysmocapError(f"capture lacks markers the set '{spec.name}' requires: "
                             f"{', '.join(missing)}", markers.meta.get("path"))
    ms0 = spec.bind(body.skeleton, labels=markers.labels)
    labels = ms0.names
    pos = markers.select(labels).pos
    if markers.n_frames == 0:
        raise PhysmocapError("capture has no frames", markers.meta.get("path"))

    # 1. calibration (static trial if given)
    if static is not None:
        smiss = [l for l in labels if l not in static.labels]
        if smiss:
            raise PhysmocapError(f"static trial lacks markers of the motion trial: "
                                 f"{', '.join(smiss)}", static.meta.get("path"))
        cal_pos = static.select(labels).pos
        cal_fps = static.fps
    else:
        cal_pos, cal_fps = pos, markers.fps
    _check_size(cal_pos, body, ms0, static.meta if static is not None else markers.meta)
    say("calibrate", 0, 1)
    prior = kinematic_prior(body)
    # Plug-in Gait's chord rules place joint centres from a static trial (as Plug-in Gait does);
    # a motion trial is left to the fit, which sees its joints move.
    centres = (bind_centres(spec, labels, body.skeleton, static.meta)
               if static is not None else ())
    subject = calibrate(cal_pos, cal_fps, body.skeleton, ms0, n_frames=calibration_frames,
                        kinematic_options=prior, centres=centres)
    say("calibrate", 1, 1)
    sk, ms = subject.skeleton, subject.markerset
    t_cal = time.perf_counter()

    ck = None
    if checkpoint is not None:
        ck = Checkpoint(checkpoint, job_key(
            __version__, SOLVER_REVISION, pos, markers.fps, labels, cal_pos, cal_fps,
            repr(settings), plants,
            calibration_frames, repr(environment), warm, repr(centres), ms0.body, ms0.offset,
            ms0.weight,
            body.names, body.skeleton.offsets, np.array(body.limits), np.array(body.mass),
            np.array(body.axis), tuple(body.joint_type), np.array(body.twist_mid)))

    # 2. kinematic reference (also the fast initial pose)
    got = ck.load("kinematic") if ck else None
    if got is not None:
        kin_motion = Motion(sk, markers.fps, got["root"], got["lrot"], {"solver": "kinematic"})
        kin_residual = got["residual"]
        say("kinematic", markers.n_frames, markers.n_frames)
    else:
        kin = solve_kinematic(sk, ms, pos, fps=markers.fps,
                              max_marker_pull=settings.outlier_distance,
                              progress=lambda d, n=markers.n_frames: say("kinematic", d, n),
                              **prior, **TRACKING)
        kin_motion, kin_residual = kin.motion, kin.residual
        del kin
        if ck:
            ck.save("kinematic", lrot=kin_motion.lrot, root=kin_motion.root_pos,
                    residual=kin_residual)
    t_kin = time.perf_counter()

    # 3. foot plants from the foot markers
    rows, plant_labels = _foot_rows(labels)
    if plants and len(rows):
        planted, anchors = foot_plants(ms, pos, markers.fps, kin_motion, rows)
    else:
        planted = np.zeros((markers.n_frames, len(rows)), bool)
        anchors = None

    # 4. hand holds: extra constraint points (palms) with no marker data
    M = len(ms)
    ms_all, pos_all, rows_all = ms, pos, rows
    hold_names: list = []
    if environment is not None and environment.holds:
        hms, hanchors, hold_names = hold_anchors(environment, sk, kin_motion, markers.fps,
                                                 markers.n_frames)
        ms_all = MarkerSet(ms.names + hms.names, np.r_[ms.body, hms.body],
                           np.vstack([ms.offset, hms.offset]), np.r_[ms.weight, hms.weight])
        pos_all = np.concatenate([pos, np.full((markers.n_frames, len(hms), 3), np.nan)], 1)
        rows_all = np.r_[rows, M + np.arange(len(hms))].astype(int)
        anchors = hanchors if anchors is None else np.concatenate([anchors, hanchors], axis=1)

    # 5. physical equilibrium, starting each frame from the kinematic pose
    jspec = joint_spec_from_body(body, sk)
    if warm == "kinematic":
        phys = _physical_in_blocks(sk, ms_all, pos_all, markers.fps, kin_motion, jspec, settings,
                                   anchors, rows_all if anchors is not None else None, say, ck)
    else:   # each frame starts from the last: one sequence, not resumable midway
        phys = solve_physical(sk, ms_all, pos_all, markers.fps, init=kin_motion[:1], spec=jspec,
                              settings=settings, anchors=anchors,
                              anchor_rows=rows_all if anchors is not None else None,
                              progress=lambda d, n=markers.n_frames: say("physical", d, n))
    t_phys = time.perf_counter()

    motion = phys.motion
    # Frames where no marker is seen have no springs: the solve held the last pose. Interpolate
    # across them instead (held at the ends of the take), and say so in the report.
    seen = ~np.isnan(pos).any(axis=-1).all(axis=1)
    blackouts = []
    if not seen.all():
        root, lrot, blackouts = bridge_blackouts(motion.root_pos, motion.lrot, seen)
        motion = Motion(motion.skeleton, motion.fps, root, lrot, motion.meta)
    motion, toes = _floor_toes(motion, ms, planted, plant_labels, body)
    # Blocked forward kinematics, not motion.gpos: no whole-take FK cache in a long solve.
    solved = marker_positions(sk, ms, motion.lrot, motion.root_pos)
    residual = phys.residual[:, :M]
    holds = {}
    for i, name in enumerate(hold_names):
        k = len(rows) + i
        on = ~np.isnan(anchors[:, k, 0])
        err = np.linalg.norm(phys.constraint_points[on, k] - anchors[on, k], axis=-1)
        holds[name] = {"frames": int(on.sum()),
                       "error_mm_mean": _mm(err.mean()) if on.any() else None,
                       "error_mm_max": _mm(err.max()) if on.any() else None}
    # joints at a limit in the motion written (the physical stage's own flags differed from it
    # by a frame where a pose sat within a fraction of a degree of the margin)
    hit = limit_hits(motion, body)
    report = _report(markers, labels, pos, residual, kin_residual, phys.clipped[:, :M],
                     phys.substeps, planted, rows,
                     plant_labels, solved,
                     {motion.skeleton.names[j]: int(n)
                      for j, n in enumerate(hit.sum(axis=0)) if n}, subject,
                     timings=dict(calibrate=t_cal - t0, kinematic=t_kin - t_cal,
                                  physical=t_phys - t_kin, total=t_phys - t0))
    report["hand_holds"] = holds
    report["toes_bent"] = toes
    report["resumed"] = list(ck.resumed) if ck else []
    feet = {side: solved[:, labels.index(names[0])] for side, names in FOOT_MARKERS.items()
            if names[0] in labels}                                      # the heels
    rate = frame_rate_check(motion.root_pos, feet, markers.fps)
    report["damage"] = damage_report(labels, pos, solved, phys.clipped[:, :M], markers.fps,
                                     settings.outlier_distance, blackouts,
                                     int(markers.meta.get("nonfinite_samples", 0)), rate)
    report["frames_over_40mm_unexplained"] = _unexplained_frames(
        residual, report["damage"], labels, 0.040)
    return SolveResult(motion, kin_motion, subject, labels, pos, solved, residual,
                       phys.clipped[:, :M], planted, plant_labels, report, hit)


def _physical_in_blocks(sk, ms, pos, fps, init: Motion, jspec, settings, anchors, anchor_rows,
                        say, ck) -> PhysicalResult:
    """``solve_physical`` from the kinematic poses ``init``, in blocks of ``BLOCK`` frames, each
    in a fresh simulation started ``WARMUP`` frames early; finished blocks are kept in (and
    taken from) the checkpoint ``ck`` (or None)."""
    F, M, J = len(pos), len(ms), len(sk)
    K = 0 if anchors is None else anchors.shape[1]
    # ramped over the whole take: a plant a block cuts does not let go at the cut
    weight = None if anchors is None else anchor_weights(anchors, settings, fps)
    out = {"root": np.empty((F, 3)), "lrot": np.empty((F, J, 4)),
           "residual": np.empty((F, M)), "substeps": np.empty(F, int),
           "clipped": np.empty((F, M), bool), "points": np.empty((F, K, 3)),
           "limit_hit": np.empty((F, J), bool)}
    for k, a in enumerate(range(0, F, BLOCK)):
        b = min(a + BLOCK, F)
        name = f"physical_{k:05d}"
        got = ck.load(name) if ck else None
        if got is None:
            w = max(0, a - WARMUP)
            r = solve_physical(sk, ms, pos[w:b], fps, init=init[w:b], spec=jspec,
                               settings=settings,
                               anchors=None if anchors is None else anchors[w:b],
                               anchor_rows=anchor_rows,
                               anchor_weight=None if anchors is None else weight[w:b],
                               progress=lambda d, a=a, w=w: say("physical",
                                                                a + max(0, d - (a - w)), F))
            cut = slice(a - w, None)
            got = {"root": r.motion.root_pos[cut], "lrot": r.motion.lrot[cut],
                   "residual": r.residual[cut], "substeps": r.substeps[cut],
                   "clipped": r.clipped[cut], "points": r.constraint_points[cut],
                   "limit_hit": r.limit_hit[cut]}
            if ck:
                ck.save(name, **got)
        for key, arr in got.items():
            out[key][a:b] = arr
        say("physical", b, F)
    root, lrot = out["root"], out["lrot"]
    root.setflags(write=False)        # read-only: the Motion takes them without a copy
    lrot.setflags(write=False)
    return PhysicalResult(Motion(sk, fps, root, lrot, {"solver": "physical"}), out["residual"],
                          out["substeps"], out["clipped"], out["points"], out["limit_hit"])


#: Plausible subject sizes relative to the body template (a small child to a giant).
SIZE_RANGE = (0.25, 4.0)


def _floor_toes(motion: Motion, ms: MarkerSet, planted: np.ndarray, plant_labels: tuple,
                body: BodyTemplate) -> tuple[Motion, dict]:
    """``motion`` with its toes that carry no marker bent at the ball by the floor
    (``toes.floor_toes``; about their hinge axes where ``body``'s toes are hinges), each
    standing at its height while its foot's toe marker (``LTOE`` / ``RTOE``, on the forefoot)
    is planted; and, per toe, the report's figures: frames bent, the largest bend (deg) and the
    standing height (m; None where no plant gave one: left alone)."""
    sk = motion.skeleton
    toes = free_toes(sk.names, ms.body)
    if not toes:
        return motion, {}
    mark = {side: names[1] for side, names in FOOT_MARKERS.items()}
    plant = np.zeros((motion.n_frames, len(toes)), bool)
    for t, j in enumerate(toes):
        label = next((mark[s] for s in mark if sk.names[j].startswith(s)), None)
        if label in plant_labels:
            plant[:, t] = planted[:, plant_labels.index(label)]
    at = MarkerSet(tuple(sk.names[j] for j in toes), np.array(toes), np.zeros((len(toes), 3)),
                   np.ones(len(toes)))                      # a point at each toe joint
    z = marker_positions(sk, at, motion.lrot, motion.root_pos)[..., 2]
    stand = standing_heights(z, plant)
    hinges = all(body.joint_type[j] == "hinge" for j in toes)
    motion, bend = floor_toes(motion, toes, stand, axes=body.axis[toes] if hinges else None)
    deg = np.degrees(bend)
    return motion, {sk.names[j]: {"frames_over_1deg": int(np.count_nonzero(deg[:, t] > 1.0)),
                                  "max_deg": round(float(deg[:, t].max()), 1),
                                  "standing_height_m": None if np.isnan(stand[t])
                                  else round(float(stand[t]), 4)}
                    for t, j in enumerate(toes)}


def _check_size(pos: np.ndarray, body: BodyTemplate, ms: MarkerSet, meta) -> None:
    """Refuse a capture whose markers cannot be a person at the file's declared unit (a metre
    file declared as mm makes a 2 mm tall subject): ``UnitError`` naming the likely unit."""
    scale = estimate_scale(pos, body.skeleton, ms)
    if SIZE_RANGE[0] <= scale <= SIZE_RANGE[1]:
        return
    unit = meta.get("unit", "?")
    factor = {"m": 1.0, "cm": 0.01, "mm": 0.001}.get(unit)
    hint = ""
    if factor is not None:
        # the unit that would make the subject closest to the template's size
        guess = min(("m", 1.0), ("cm", 0.01), ("mm", 0.001),
                    key=lambda u: abs(np.log(scale * u[1] / factor)))
        if guess[0] != unit:
            hint = f"; the data look like {guess[0]}"
    raise UnitError(f"the markers' vertical span is {scale:.3g} x the body template's: not a "
                    f"person at the file's unit ({unit}, {meta.get('unit_source', 'declared')})"
                    f"{hint}; fix POINT:UNITS", meta.get("path"))


def _unexplained_frames(residual: np.ndarray, damage: dict, labels, distance: float) -> int:
    """Frames in which a marker is more than ``distance`` m from its landmark and the damage
    report does not explain it as a swap or a ghost (the capture's errors): what the solve
    itself got wrong, or a capture error of another kind.

    Args:
        residual: ``(F, M)`` m, each marker's distance from its landmark (NaN = missing).
        damage: ``damage_report``'s section (its swaps' and ghosts' ``[start, stop)`` frames).
    """
    far = (np.nan_to_num(residual, nan=0.0) > distance) & ~_swaps_and_ghosts(
        damage, labels, residual.shape)
    return int(far.any(axis=1).sum())


def _swaps_and_ghosts(damage: dict, labels, shape: tuple) -> np.ndarray:
    """``shape`` ``(F, M)`` bool: the samples ``damage`` (``damage_report``'s section) flags as
    a swap or a ghost, ``labels`` naming the columns."""
    out = np.zeros(shape, bool)
    index = {l: m for m, l in enumerate(labels)}
    for e in damage.get("swaps", []) + damage.get("ghosts", []):
        a, z = e["frames"]
        for name in e.get("markers", [e.get("marker")]):
            out[a:z, index[name]] = True
    return out


_LIMIT_BLOCK = 4096          # frames per block in ``limit_hits``


def limit_hits(motion: Motion, body: BodyTemplate) -> np.ndarray:
    """``(F, J)`` bool: joints of ``motion`` at or past ``body``'s limits (``past_limits``,
    its 0.5 degree margin); all False when the motion lacks a joint of the template."""
    F, J = motion.lrot.shape[:2]
    out = np.zeros((F, J), bool)
    sk_names = motion.skeleton.names
    # The solved BVH may carry End Sites beyond the template's joints: use the template's.
    idx = [sk_names.index(n) for n in body.names if n in sk_names]
    if len(idx) != len(body.names):
        return out
    spec = joint_spec_from_body(body)
    jb = [j for j in range(1, len(body.names)) if spec.kind[j] in ("ball", "hinge")]
    is_hinge = np.array([spec.kind[j] == "hinge" for j in jb])
    lim = np.nan_to_num(spec.limits[jb], nan=np.pi)
    lim = np.where(np.isfinite(lim), lim, np.pi)
    axis = np.nan_to_num(spec.axis[jb])
    twist = spec.twist_axis[jb]
    cols = [idx[j] for j in jb]
    # in blocks of frames: the whole take at once peaked 396 MB above its input for a
    # 10-minute take (the joints' temporaries are tiled per frame), 2.4 GB for an hour
    n = max(1, min(F, _LIMIT_BLOCK))                  # (1: a motion of no frames)
    tiles = (np.tile(is_hinge, n), np.tile(axis, (n, 1)), np.tile(lim, (n, 1)),
             np.tile(twist, (n, 1)), np.tile(spec.twist_mid[jb], n))
    for a in range(0, F, n):
        q = motion.lrot[a:a + n, cols]                          # (n, B, 4)
        k = len(q) * len(cols)
        hinge, ax, li, tw, mid = (t[:k] for t in tiles)
        out[a:a + n, cols] = past_limits(q.reshape(-1, 4), hinge, ax, li, tw,
                                         twist_mid=mid).reshape(len(q), len(cols))
    return out


def _mm(x) -> float:
    return round(float(x) * 1000.0, 3)


def _report(markers, labels, pos, residual, kin_residual, clipped, substeps, planted, rows,
            plant_labels, solved, hits, subject, timings) -> dict:
    F = markers.n_frames
    r = residual
    # Foot skate: horizontal travel per frame of the solved foot points while planted.
    skate = []
    for k, row in enumerate(rows):
        both = planted[1:, k] & planted[:-1, k]
        if both.any():
            step = np.linalg.norm(np.diff(solved[:, row, :2], axis=0), axis=-1)
            skate.append(step[both])
    skate = np.concatenate(skate) if skate else np.zeros(0)
    outliers = {labels[m]: int(n) for m, n in enumerate(clipped.sum(axis=0)) if n}
    inlier = np.where(clipped, np.nan, r)

    def per_marker(res):    # null for a marker with no sample to measure (never seen)
        seen = ~np.isnan(res)
        rms = np.sqrt(np.sum(np.where(seen, res, 0.0) ** 2, axis=0) / np.maximum(seen.sum(0), 1))
        return {l: _mm(v) if n else None for l, v, n in zip(labels, rms, seen.sum(0))}
    return {
        "source": markers.meta.get("path", ""),
        # the capture's up axis as read (given, declared or detected): ``report`` reads it so
        "up": markers.meta.get("up"),
        "frames": F, "fps": markers.fps, "markers": list(labels),
        # Frame ranges and indices in this report count from 0 at the take's first frame; the
        # capture's own frame number (as Nexus or Mokka shows it) is first_frame + index.
        "first_frame": int(markers.meta.get("first_frame", 1) or 1),
        "marker_rms_mm": _mm(np.sqrt(np.nanmean(inlier ** 2))),
        "marker_rms_all_mm": _mm(np.sqrt(np.nanmean(r ** 2))),
        "marker_max_mm": _mm(np.nanmax(r)) if np.any(~np.isnan(r)) else None,
        # per marker as overall: without the outliers, and with them
        "per_marker_rms_mm": per_marker(inlier), "per_marker_rms_all_mm": per_marker(r),
        "kinematic_rms_mm": _mm(np.sqrt(np.nanmean(np.where(clipped, np.nan, kin_residual) ** 2))),
        "kinematic_rms_all_mm": _mm(np.sqrt(np.nanmean(kin_residual ** 2))),
        # (frames_over_40mm_unexplained, those not a flagged swap or ghost, comes with the
        # damage section)
        "frames_over_40mm_all": int(np.sum(np.nanmax(np.nan_to_num(r), axis=1) > 0.040)),
        "gap_frames": {l: int(n) for l, n in zip(labels, np.isnan(pos).any(-1).sum(0))},
        "outlier_frames": outliers,
        "foot_plant_frames": {l: int(n) for l, n in zip(plant_labels, planted.sum(0))},
        "foot_skate_mm": {"mean": _mm(skate.mean()) if skate.size else 0.0,
                          "max": _mm(skate.max()) if skate.size else 0.0},
        "joint_limit_hits": hits,
        "calibration": {"scale": round(subject.scale, 4), "rms_mm": _mm(subject.rms_m),
                        "frames": len(subject.frames),
                        # Where each marker sits on its segment (m, segment frame), so
                        # `physmocap report` can rebuild the per-frame residuals from the BVH
                        # and the C3D without a sidecar file.
                        "marker_offsets_m": {
                            l: [subject.skeleton.names[b]] + [round(float(v), 5) for v in o]
                            for l, b, o in zip(labels, subject.markerset.body,
                                               subject.markerset.offset)}},
        "substeps_median": float(np.median(substeps)),
        "solve_seconds": round(timings["total"], 3),
        "seconds": {k: round(v, 3) for k, v in timings.items()},
        "frames_per_second": round(F / max(timings["physical"], 1e-9), 1),
    }


def _cleaned_frames(result: SolveResult, residual: np.ndarray | None):
    """``cleaned_markers``' points a block at a time: ``frames(a, b) -> (pos (b - a, M + J, 3)
    m, residual (b - a, M + J) m)`` (``io.c3d.write_c3d_frames``), and the labels, and the
    counts of filled samples for the meta."""
    wrong = _swaps_and_ghosts(result.report.get("damage", {}), result.labels, result.pos.shape[:2])
    motion = result.motion
    sk = motion.skeleton

    def frames(a: int, b: int):
        pos = np.array(result.pos[a:b])
        filled = np.isnan(pos).any(-1) | wrong[a:b]
        pos[filled] = result.solved_markers[a:b][filled]
        res = (np.full(pos.shape[:2], np.nan, np.float32) if residual is None
               else np.array(residual[a:b], np.float32))
        res[filled] = 0.0
        # the joints' positions of these frames alone (``motion.gpos`` would keep the take's)
        jc = forward_kinematics(sk, motion.lrot[a:b], motion.root_pos[a:b])[0]
        return (np.concatenate([pos, jc], axis=1),
                np.concatenate([res, np.zeros((b - a, len(sk)), np.float32)], axis=1))

    labels = tuple(result.labels) + tuple(f"{n}_JC" for n in sk.names)
    virtual = np.r_[np.zeros(len(result.labels), bool), np.ones(len(sk), bool)]
    return frames, labels, virtual, int(wrong.sum())


def cleaned_markers(result: SolveResult, fps: float, subject_name: str = "",
                    first_frame: int = 1, residual: np.ndarray | None = None
                    ) -> MarkerTrajectories:
    """The capture's markers cleaned by the solve, plus the solved joint centres as virtual
    points (``<Joint>_JC``): what ``--c3d-out`` writes (``write_cleaned_c3d``, a block of
    frames at a time); its frames keep the capture's numbers (``first_frame``, 1-based).

    Gaps are filled from the solved body, and so are the samples the damage report flags as
    a swap or a ghost (a label on the wrong marker, a stray reflection: they were kept, the
    swapped knee's label 20 cm down the shin). Filled samples and joint centres get residual
    0, "computed" in a C3D; the others keep the capture's ``residual`` (``(F, M)`` m for
    ``result.labels``; unknown without it). Other outliers (``flagged as outlier``: a poorly
    seen segment drifting) are kept as measured."""
    frames, labels, virtual, wrong = _cleaned_frames(result, residual)
    pos, res = frames(0, len(result.pos))
    return MarkerTrajectories(
        labels, fps, pos, virtual, subject_name,
        {"gap_filled": int(np.isnan(result.pos).any(-1).sum()),
         "swaps_and_ghosts_replaced": wrong, "first_frame": int(first_frame)}, res)


def write_cleaned_c3d(result: SolveResult, fps: float, path, subject_name: str = "",
                      first_frame: int = 1, residual: np.ndarray | None = None) -> None:
    """``write_c3d(cleaned_markers(...), path)``, the same bytes, without a whole-take copy
    of the cleaned points: a block of frames at a time."""
    from ..io.c3d import write_c3d_frames
    frames, labels, virtual, _ = _cleaned_frames(result, residual)
    write_c3d_frames(frames, len(result.pos), labels, fps, path, virtual, subject_name,
                     first_frame)


def write_outputs(result: SolveResult, markers: MarkerTrajectories, spec_name: str,
                  body_name: str, output, static_path: str | None, c3d_out=None) -> dict:
    """What ``solve`` and ``batch`` write for a solved take: the BVH at ``output`` and, with
    ``c3d_out``, the cleaned C3D (both atomically); returns the report to write beside them
    (the solve's own, what it was solved with and into, and the capture against the Plug-in
    Gait solve its file holds, if any: ``compare.capture_pig_agreement``)."""
    from ..io.bvh import write_bvh
    from .compare import capture_pig_agreement
    write_bvh(result.motion, output)
    report = dict(result.report)
    report.update(markerset=spec_name, body=body_name, output=str(output), static=static_path)
    if c3d_out is not None:
        res = None
        if markers.residual is not None and set(result.labels) <= set(markers.labels):
            # (its columns only: select() would copy a long take's positions too)
            res = markers.residual[:, [markers.index(l) for l in result.labels]]
        write_cleaned_c3d(result, markers.fps, c3d_out, markers.subject,
                          markers.meta.get("first_frame", 1), res)
        report["c3d_out"] = str(c3d_out)
    pig = capture_pig_agreement(markers, result.motion)
    if pig:
        report["plug_in_gait_segments"] = pig
    return report
