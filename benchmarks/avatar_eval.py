"""Three-point avatar against ground truth: held-out Bandai-Namco clips, head and wrists extracted,
the body reconstructed, errors measured against the clip itself.

    python benchmarks/avatar_eval.py [--every 10] [--offset 0] [--head-weight 0.0] [--quick]
                                     [--plot DIR] [--still-hands]
                                     [--physics [--mode physical [--balance stepping
                                      [--predict [--predict-budget B] [--predict-workers N]]]]
                                      [--no-reach] [--reach-once] [--set NAME=VALUE ...]]
                                     [--only TEXT] [--start S]

``--only TEXT`` evaluates only the held-out clips whose name holds TEXT (e.g. ``run``; the
database is the split's all the same); ``--set NAME=VALUE`` changes a ``TrackingSettings`` field
of ``--physics`` (e.g. ``--set reach_ahead=0``), for side-by-side runs; ``--start S`` tracks
each clip from S seconds in (avatar and truth alike), to see what the start does to a fully
physical body.

``--still-hands`` replaces the controllers by points fixed in front of the hips in the head's
yaw frame (a user holding the controllers still instead of swinging the arms): the hands no
longer tell the gait phase, and the hand error is against those points.

``--plot DIR`` writes one picture per held-out clip (``avatar_<clip>.png``, matplotlib): the
lower-body error over time of each method, and the left ankle's forward position relative to
the hips (the gait phase: a leg out of phase with the truth shows as a half-cycle shift); with
``--physics`` also ``avatar_hands_<clip>.png``, the simulated wrists' distance to the
controllers over time.

Database: the ``bandai-namco/ds2_normal_locomotion`` clips at 60 fps minus the held-out ones
(every ``--every``-th clip from ``--offset``) AND minus every clip that shares at least 10 % of
its poses with a held-out clip: ds2 has overlapping cuts of the same takes (e.g.
walk-turn-right 031/035 share 92-100 % of their frames), which would leak the answer into the
database. Held-out clips come from the same dataset, hence the same skeleton (same joints and bone
lengths), so world positions compare joint by joint without retargeting.

Per clip and method, errors are in world space after each method's own root placement (both put
the body's head exactly on the tracked head, so a body that faces the wrong way or walks out of
phase shows up as limb error, not as a global offset): ``mpjpe`` over all 21 joints, ``lower``
over hips and legs (9 joints), ``hands`` = wrists to the controllers, foot skate during the shown
frames' contacts (mm/frame), jitter (m/s^3), per-frame latency (ms, median and p99 over all
frames). Methods:

* ``naive``: every frame the database pose nearest by the head alone (height, velocity in the
  head's frame, tilt), body facing from the head's yaw; no trajectory, no transitions. Its
  latency counts one batched k-d tree query per clip, shared out over the frames.
* ``mm traj``: motion matching on the head's spring-predicted trajectory only (no three-point
  features, no facing alignment): what the trajectory alone can do.
* ``mm 3-point``: the default avatar: the trajectory (half weight) plus the head's and wrists'
  features in the head's yaw frame (height, velocities, tilt, wrists relative to the head),
  searched every 5 frames, the facing aligned with the tracked head's yaw.

Figures are frame-weighted means over the held-out clips; the truth's own skate and jitter (at
the database rate, contacts detected as the database does) are printed beside them. The avatar's
settings (feature weights, search interval, springs, alignment) were chosen on the ``--offset 0``
split (and checked on ``--offset 3`` and ``7``); ``--offset 5`` holds out other clips and is the
one to quote.

``--physics [--mode assist|physical] [--balance none|stepping]``: the ``mm 3-point`` output of
each clip is also tracked on the simulated body exactly as ``physmocap avatar --physics`` does
(``playback.track.track_any``: retargeted onto the humanoid, then ``track``), and the script
prints the physics report (tracking error against the reference it followed, and ``pose``: the
same with joints about the root, ``pose_error_m``, until the first fall began; ``walked``: the
simulated root's path over the ground as a share of its reference's, until then (a fully
physical body can stay up and lag metres behind); root assist force, penetration, foot skate
during the simulated contacts, falls and the first fall's time, frames/s) beside the truth
clip's own, tracked the same way, and the simulated body against the truth. The body has its
own bone lengths, so the truth and the controllers are carried onto it by the SAME map as the
avatar's motion (the avatar's retarget reference pose for the rotations;
the retarget's root scale and floor for positions: a similarity about the floor): ``body``/
``lower`` compare the simulated body with the truth retargeted that way, beside the retargeted
kinematic avatar (``kin``) against the same, so the columns differ only by what the physics
changed. Hands: ``hand-ref`` is the simulated wrists' distance to the retargeted avatar's (the
physics' own loss, same skeleton); ``ctrl`` their distance to the carried controllers, beside
the retargeted avatar's own (its arms bent again on the body to reach them:
``matching.avatar.avatar_on_body``; before, the humanoid's other arm proportions left the
retargeted wrists 7.3 cm off), its 90th percentile, and the share of wrist-frames within 1 cm
of the controller, all over the wrist-frames whose controller is within the arm's length of the
shoulder (``reach %`` of them: ``playback.reach.reach_report``). The simulated arms are bent
again every frame for the simulated shoulders (``playback.reach.ArmReach``, as ``avatar
--physics`` does); ``--no-reach`` leaves them to the reference, to show what that does.
Below the table, the reachable wrist-frames farther than 1 cm, binned by the controller's
speed relative to the simulated shoulder (``shoulder_speed``, ``misses_by_speed``): where the
simulated arms miss.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import data_dir, field_change
from scipy.spatial import cKDTree

from physmocap import quat
from physmocap.io.bvh import read_bvh
from physmocap.matching.avatar import (Avatar, AvatarSettings, avatar_features, avatar_on_body,
                                       avatar_report, controllers_on_body, extract_track,
                                       lower_body_joints, naive_avatar, run_avatar)
from physmocap.matching.database import build_database, resample
from physmocap.matching.trajectory import facing_from_yaw, yaw_of
from physmocap.playback.reach import HANDS
from physmocap.playback.track import BALANCES, MODES
from physmocap.tracking import ThreePointTrack


def leaking(motions, held: list[int], tol: float = 1e-3, share: float = 0.10) -> set[int]:
    """Indices of clips (not held out) sharing >= ``share`` of their poses (all local
    rotations within ``tol``) with a held-out clip."""
    sig = [m.lrot[:, 1:].reshape(m.n_frames, -1) for m in motions]
    tree = cKDTree(np.concatenate([sig[i] for i in held]))
    out = set()
    for i, s in enumerate(sig):
        if i not in held:
            d, _ = tree.query(s, distance_upper_bound=tol)
            if np.mean(d < tol) >= share:
                out.add(i)
    return out


def still_hands(track: ThreePointTrack) -> ThreePointTrack:
    """``track`` with both controllers 0.25 m ahead of, 0.45 m below and 0.2 m beside the head
    in its yaw frame (orientations kept)."""
    q = facing_from_yaw(yaw_of(track.rot[:, 0]))
    pos = np.array(track.pos)
    for k, side in ((1, 0.2), (2, -0.2)):
        pos[:, k] = pos[:, 0] + quat.rotate(q, np.array([0.25, side, -0.45]))
    return ThreePointTrack(track.times, pos, track.rot)


def plot_hands(folder: Path, name: str, row: dict, mode: str) -> None:
    """``folder/avatar_hands_<name>.png``: each simulated wrist's distance to its controller
    (cm) over time, the 1 cm target, and the frames where the controller was out of reach
    shaded."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d, ok = row["hand_dist"], row["hand_ok"]
    t = np.arange(len(d)) / row["fps_clip"]
    fig, ax = plt.subplots(figsize=(10, 3.2))
    for k, (side, colour) in enumerate((("left", "tab:blue"), ("right", "tab:orange"))):
        within = np.mean(d[ok[:, k], k] <= 0.01) if ok[:, k].any() else float("nan")
        ax.plot(t, 100 * d[:, k], color=colour, lw=1,
                label=f"{side} wrist ({100 * within:.0f} % of reachable frames within 1 cm)")
        ax.fill_between(t, 0, 1, where=~ok[:, k], color=colour, alpha=0.15, lw=0,
                        transform=ax.get_xaxis_transform())
    ax.axhline(1.0, color="k", ls="--", lw=0.8, label="1 cm")
    ax.set_ylim(0, max(3.0, float(np.nanpercentile(100 * d, 99))))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("wrist to controller (cm)")
    ax.set_title(f"simulated avatar ({mode}), held-out {name}: shaded = controller out of reach")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / f"avatar_hands_{name}.png", dpi=80)
    plt.close(fig)


def plot_clip(folder: Path, name: str, truth, shown: dict, db) -> None:
    """``folder/avatar_<name>.png``: lower-body error (m) over time per method, and the left
    ankle's forward position relative to the hips (m) in the hips' heading frame, beside the
    truth's."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def ankle_fwd(motion):
        sk = motion.skeleton
        hip_l, hip_r = sk.index("UpperLeg_L"), sk.index("UpperLeg_R")
        left = motion.gpos[:, hip_l] - motion.gpos[:, hip_r]
        yaw = np.arctan2(-left[:, 0], left[:, 1])          # forward = left x up
        rel = motion.gpos[:, sk.index("Foot_L")] - motion.gpos[:, 0]
        return quat.inv_rotate(facing_from_yaw(yaw), rel)[:, 0]

    folder.mkdir(parents=True, exist_ok=True)
    truth = resample(truth, db.fps)
    fig, ax = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    t_names = list(truth.skeleton.names)
    for m, motion in shown.items():
        sk = motion.skeleton
        n = min(motion.n_frames, truth.n_frames)
        low = [j for j in lower_body_joints(sk, tuple(db.contact_joints))]
        b = [t_names.index(sk.names[j]) for j in low]
        err = np.linalg.norm(motion.gpos[:n, low] - truth.gpos[:n, b], axis=-1).mean(axis=1)
        t = np.arange(n) / motion.fps
        ax[0].plot(t, err, label=f"{m} (mean {err.mean():.3f} m)")
        ax[1].plot(t, ankle_fwd(motion)[:n], label=m)
    ax[1].plot(np.arange(truth.n_frames) / truth.fps, ankle_fwd(truth), "k--", label="truth")
    ax[0].set_ylabel("lower-body error (m)")
    ax[1].set_ylabel("left ankle forward of hips (m)")
    ax[1].set_xlabel("time (s)")
    ax[0].set_title(f"three-point avatar, held-out {name}")
    for a in ax:
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / f"avatar_{name}.png", dpi=80)
    plt.close(fig)


def settings_arg(text: str) -> tuple:
    """``--set NAME=VALUE`` as ``(name, value)``: true/false, an int or a float; an unknown
    field or a value that is none of these is an argparse error (one line)."""
    from physmocap.playback.track import TrackingSettings
    try:
        return field_change(text, (TrackingSettings,), "reach_kp=2")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def seconds_arg(text: str) -> float:
    """``--start S``: a finite number of seconds >= 0, else an argparse error (one line)."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (0.0 <= v < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds >= 0, e.g. 0.5")
    return v


def shoulder_speed(shoulders: np.ndarray, targets: np.ndarray, fps: float) -> np.ndarray:
    """``(F, K)`` m/s: how fast each target moves relative to its shoulder, from the world
    positions ``shoulders``, ``targets (F, K, 3)`` m (``np.gradient`` over frames: central
    differences, one-sided at the ends). A hand swinging past its shoulder is the hard case
    for a simulated arm to follow."""
    n = min(len(shoulders), len(targets))
    if n < 2:
        return np.zeros((n, targets.shape[1]))
    rel = targets[:n] - shoulders[:n]
    return np.linalg.norm(np.gradient(rel, 1.0 / fps, axis=0), axis=-1)


SPEED_BINS = (0.0, 1.0, 2.0, 3.0, 4.0, np.inf)     # m/s


def misses_by_speed(dist: np.ndarray, ok: np.ndarray, speed: np.ndarray,
                    edges=SPEED_BINS, tolerance: float = 0.01) -> list[tuple]:
    """The reachable wrist-frames (``ok``) binned by ``speed`` (m/s, ``shoulder_speed``):
    ``(low, high, count, share farther than tolerance m)`` per bin (share ``nan`` when the
    bin is empty). ``dist``, ``ok``, ``speed``: equal shapes, e.g. ``(F, 2)``."""
    d, s = np.asarray(dist)[ok], np.asarray(speed)[ok]
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (s >= lo) & (s < hi)
        out.append((lo, hi, int(m.sum()), float(np.mean(d[m] > tolerance)) if m.any()
                    else float("nan")))
    return out


def physics_row(motion, rec, truth, body, mode: str, settings, reach: bool = True,
                start: float = 0.0, predict=None) -> dict:
    """The avatar's ``motion`` (with its ``AvatarRecord``) tracked on ``body`` as
    ``physmocap avatar --physics`` does (``reach=False``: without the closed-loop arms), its
    physics report, and the simulated body against ``truth`` and the controllers carried onto
    the body (see the module docstring). ``start`` s: the body placed on the avatar's (and
    the truth's) frame that far in, and tracked from there. ``predict``: a
    ``PredictSettings``, the avatar tracked as ``avatar --physics --predict`` does
    (``playback.predictive.track_predictive``; the truth still as without it); the row gains
    ``plan`` (``Plan.report()``)."""
    from physmocap.matching.retarget import reference_pose, retarget, root_scale, scale_points
    from physmocap.motion import Motion
    from physmocap.playback.reach import ArmReach, hand_distances, reach_report
    from physmocap.playback.track import track_any

    sk = body.skeleton
    k = int(round(start * motion.fps))
    on_body = avatar_on_body(motion, rec, sk)[k:]            # as 'avatar --physics' does
    targets = controllers_on_body(motion, rec, sk)[k:]
    plan = None
    if predict is None:
        res = track_any(on_body, body, mode=mode, settings=settings,
                        hand_targets=targets if reach else None)
    else:
        from physmocap.playback.predictive import track_predictive
        res, plan = track_predictive(on_body, body, settings=settings, predict=predict,
                                     hand_targets=targets if reach else None)
        plan = plan.report()
    rep = res.report()
    if plan is not None:
        rep["frames_per_second"] = plan["frames_per_second"]      # the search's
    # one map from the capture's world and skeleton onto the body's for avatar, truth and
    # controllers: the avatar's reference pose (as retarget picks it) and root scale / floor
    rest = reference_pose(motion.skeleton, motion.meta.get("up") or "z", motion.lrot[0], sk,
                          motion=(motion.lrot, motion.root_pos, motion.fps))
    kin = on_body                                         # what track_any handed to track
    ratio, floor = root_scale(motion, sk)

    tr = resample(truth, motion.fps)[k:]
    tr_kin = retarget(tr, sk, source_rest=rest)
    tr_body = Motion(sk, tr.fps, scale_points(tr.root_pos, ratio, floor), tr_kin.lrot)
    n = min(res.motion.n_frames, tr_body.n_frames, kin.n_frames)
    sim_g, kin_g, tr_g = res.motion.gpos[:n], kin.gpos[:n], tr_body.gpos[:n]
    low = lower_body_joints(sk, ("LeftFoot", "RightFoot"))
    wrists = [sk.index(h) for h in HANDS]
    # the hands against the controllers, over the frames where the arm reaches them
    hs = reach_report(sk, res.motion.root_pos, res.motion.lrot, targets)
    hand_dist, _, hand_ok = hand_distances(sk, res.motion.root_pos, res.motion.lrot, targets)
    hand_speed = shoulder_speed(res.motion.gpos[:, ArmReach(sk).shoulders], targets,
                                motion.fps)
    hk = reach_report(sk, kin.root_pos, kin.lrot, targets)
    # the truth itself on the body, the same way: what the physics does to a real motion
    t_rep = track_any(tr, body, mode=mode, settings=settings).report()
    falls = rep["falls"]
    # the pose alone (joints about the root, world axes) until the first fall began: a fully
    # physical body that lags its reference has a world error growing with the distance walked
    pose = rep["pose_error_m"] if rep["pose_error_m"] is not None else float("nan")
    return {
        "pose_error_m": pose,
        # the simulated root's path over the ground against its reference's, until a fall
        "walked": rep["walked_m"]["body"] / max(rep["walked_m"]["reference"], 1e-9),
        "truth_tracking_error_m": t_rep["tracking_error_m"],
        "truth_assist_mean_n": t_rep["root_assist_force_mean_n"],
        "truth_penetration_max_mm": t_rep["penetration_max_mm"],
        "truth_skate_mm": t_rep["foot_skate_mm"], "truth_falls": len(t_rep["falls"]),
        "frames": rep["frames"], "tracking_error_m": rep["tracking_error_m"],
        "assist_mean_n": rep["root_assist_force_mean_n"],
        "assist_max_n": rep["root_assist_force_max_n"],
        "penetration_max_mm": rep["penetration_max_mm"], "skate_mm": rep["foot_skate_mm"],
        "falls": len(falls), "first_fall_s": falls[0]["time_s"] if falls else None,
        "first_fall_reason": falls[0]["reason"] if falls else None,
        "fps": rep["frames_per_second"], "ratio": ratio, "n": n, "fps_clip": motion.fps,
        "sim_mpjpe_m": float(np.linalg.norm(sim_g - tr_g, axis=-1).mean()),
        "kin_mpjpe_m": float(np.linalg.norm(kin_g - tr_g, axis=-1).mean()),
        "sim_lower_m": float(np.linalg.norm(sim_g[:, low] - tr_g[:, low], axis=-1).mean()),
        "kin_lower_m": float(np.linalg.norm(kin_g[:, low] - tr_g[:, low], axis=-1).mean()),
        "hand_sim_ref_m": float(np.linalg.norm(sim_g[:, wrists] - kin_g[:, wrists],
                                               axis=-1).mean()),
        "hand_sim_ctrl_m": hs["hand_error_reachable_m"],
        "hand_kin_ctrl_m": hk["hand_error_reachable_m"],
        "hand_sim_p90_m": hs["hand_error_reachable_p90_m"],
        "sim_within_1cm": hs["within_tolerance_fraction"],
        "kin_within_1cm": hk["within_tolerance_fraction"],
        "reachable": hs["hand_reachable_fraction"],
        # per frame, for --plot: the simulated wrists' distance to the controllers (F, 2) m and
        # whether each controller was within the arm's reach
        "hand_dist": hand_dist, "hand_ok": hand_ok,
        # per frame (F, 2) m/s: each controller's speed relative to the simulated shoulder
        "hand_speed": hand_speed, "plan": plan,
    }


PHYS_COLS = (  # key, header, scale, format
    ("tracking_error_m", "track cm", 100, "8.2f"), ("pose_error_m", "pose cm", 100, "7.2f"),
    ("walked", "walked %", 100, "8.0f"),
    ("assist_mean_n", "assist N", 1, "8.0f"), ("assist_max_n", "max N", 1, "6.0f"),
    ("penetration_max_mm", "pen mm", 1, "6.1f"), ("skate_mm", "skate", 1, "6.2f"),
    ("sim_mpjpe_m", "body cm", 100, "7.1f"),
    ("kin_mpjpe_m", "kin cm", 100, "6.1f"), ("sim_lower_m", "lower", 100, "6.1f"),
    ("kin_lower_m", "kin", 100, "5.1f"), ("hand_sim_ref_m", "hand-ref", 100, "8.2f"),
    ("hand_sim_ctrl_m", "ctrl cm", 100, "7.2f"), ("hand_kin_ctrl_m", "kin", 100, "5.2f"),
    ("hand_sim_p90_m", "p90", 100, "5.2f"), ("reachable", "reach %", 100, "7.1f"),
    ("sim_within_1cm", "<1cm %", 100, "6.1f"), ("kin_within_1cm", "kin %", 100, "6.1f"),
    ("fps", "fr/s", 1, "5.0f"))


def phys_line(label: str, r: dict) -> str:
    fall = ("-" if not r["falls"] else str(r["falls"]) if r["first_fall_s"] is None
            else f"{r['falls']}@{r['first_fall_s']:.1f}s")
    return (f"{label:<28} " + " ".join(f"{scale * r[k]:{fmt}}" for k, _, scale, fmt in PHYS_COLS)
            + f" {fall:>8}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=10, help="hold out every N-th clip")
    ap.add_argument("--offset", type=int, default=0, help="first held-out clip")
    ap.add_argument("--head-weight", type=float, default=0.0,
                    help="weight of the character-frame head velocity in mm 3-point")
    ap.add_argument("--quick", action="store_true", help="only 4 held-out clips")
    ap.add_argument("--plot", metavar="DIR", help="per-clip pictures of error and gait phase")
    ap.add_argument("--still-hands", action="store_true",
                    help="controllers held still in front of the body (no arm swing)")
    ap.add_argument("--physics", action="store_true",
                    help="also track mm 3-point's output on the simulated body (as avatar "
                         "--physics)")
    ap.add_argument("--mode", choices=MODES, default="assist",
                    help="with --physics: root assist or fully physical")
    ap.add_argument("--balance", choices=BALANCES, default="none",
                    help="with --physics --mode physical: the stepping balance controller")
    ap.add_argument("--no-reach", action="store_true",
                    help="with --physics: the arms follow the reference only (no ArmReach)")
    ap.add_argument("--reach-once", action="store_true",
                    help="with --physics: the arms bent once per frame, not before every "
                         "physics step (TrackingSettings.reach_every_step=False)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", type=settings_arg,
                    help="with --physics: a TrackingSettings field changed (a number, or "
                         "true/false), e.g. --set reach_kp=2; repeatable")
    ap.add_argument("--start", type=seconds_arg, default=0.0, metavar="S",
                    help="with --physics: track from S seconds into each clip (the avatar's "
                         "and the truth's frame there), not from its first frame")
    ap.add_argument("--predict", action="store_true",
                    help="with --physics --mode physical --balance stepping: the avatar tracked "
                         "with its gains chosen by simulating ahead ('avatar --predict')")
    ap.add_argument("--predict-budget", type=float, default=100.0, metavar="FRAMES",
                    help="with --predict: the search's budget (frames simulated per frame "
                         "played)")
    ap.add_argument("--predict-workers", type=int, default=1, metavar="N",
                    help="with --predict: play each decision's look-aheads in N processes "
                         "(the same figures, sooner where CPUs are free)")
    ap.add_argument("--only", metavar="TEXT",
                    help="hold out only the clips (of the split) whose name contains TEXT")
    args = ap.parse_args()
    if args.balance == "stepping" and args.mode != "physical":
        ap.error("--balance stepping needs --mode physical")
    if args.predict and not (args.physics and args.balance == "stepping"):
        ap.error("--predict needs --physics --mode physical --balance stepping")
    if args.predict_workers != 1 and not args.predict:
        ap.error("--predict-workers needs --predict")
    if args.predict_workers < 1:
        ap.error("--predict-workers: at least 1")
    predict = None
    if args.predict:
        from physmocap.playback.predictive import PredictSettings
        predict = PredictSettings(budget=args.predict_budget, workers=args.predict_workers)
    if args.physics:
        from physmocap.playback.track import balance_settings
        from physmocap.scene import load_body
        body = load_body()
        phys_settings = balance_settings(args.balance)     # as 'avatar --physics --balance'
        changes = dict(args.set)
        if args.reach_once:
            changes["reach_every_step"] = False
        if changes:
            import dataclasses

            from physmocap.errors import SettingsError
            try:
                phys_settings = dataclasses.replace(phys_settings, **changes)
            except SettingsError as e:
                ap.error(f"--set: {e}")
        phys_rows = []

    folder = data_dir() / "bvh" / "bandai-namco" / "ds2_normal_locomotion"
    files = sorted(folder.glob("*.bvh"))
    motions = [read_bvh(f) for f in files]
    held = list(range(args.offset, len(files), args.every))
    if args.quick:
        held = held[::max(len(held) // 4, 1)][:4]
    # the clips evaluated (``--only``; the database is the split's all the same), refused
    # before the database is built when there are none or ``--start`` is past one's end
    evaluated = [i for i in held if not args.only or args.only in files[i].stem]
    if not evaluated:
        ap.error(f"--only {args.only!r}: no held-out clip of this split has it in its name; "
                 f"they are: {', '.join(files[i].stem[10:] for i in held)}")
    short = [i for i in evaluated
             if round(args.start * motions[i].fps) > motions[i].n_frames - 2]
    if short:
        i = short[0]
        ap.error(f"--start {args.start:g}: held-out clip {files[i].stem} lasts only "
                 f"{motions[i].duration:.2f} s")
    leak = leaking(motions, held)
    train = [i for i in range(len(files)) if i not in held and i not in leak]
    print(f"held out {len(held)} clips: {', '.join(files[i].stem[10:] for i in held)}")
    print(f"dropped from the database as overlapping a held-out clip: "
          f"{', '.join(files[i].stem[10:] for i in sorted(leak)) or 'none'}")
    db = build_database([motions[i] for i in train], names=[files[i].stem for i in train])
    print(f"database: {db.n_frames} frames ({db.n_frames / db.fps:.0f} s at {db.fps:g} fps) "
          f"from {len(train)} clips")
    held = evaluated
    feats = {"mm traj": avatar_features(db, 0.0, points={}),
             "mm 3-point": avatar_features(db, args.head_weight)}
    settings = {"mm traj": AvatarSettings(align_halflife=0.0), "mm 3-point": AvatarSettings()}

    methods = ("naive", "mm traj", "mm 3-point")
    rows = {m: [] for m in methods}
    lat = {m: [] for m in methods}
    truth_rows = []
    t0 = time.perf_counter()
    for i in held:
        truth = motions[i]
        track = extract_track(truth)
        if args.still_hands:
            track = still_hands(track)
        shown = {}
        for m in methods:
            if m == "naive":
                motion, rec = naive_avatar(db, track)
            else:
                motion, rec = run_avatar(Avatar(db, feats[m], track, settings[m]))
            r = avatar_report(db, motion, rec, truth)
            rows[m].append(r)
            shown[m] = motion
            if m == "mm 3-point":
                rec3 = rec
            lat[m].extend(1000.0 * np.array(rec.seconds))
        truth_rows.append(r)
        print(f"  {files[i].stem[10:]:<28} " + "  ".join(
            f"{m} {rows[m][-1]['mpjpe_m']:.3f}/{rows[m][-1]['lower_body_error_m']:.3f}"
            for m in methods) + "  (mpjpe/lower m)", flush=True)
        if args.physics:
            m3 = "mm 3-point"
            phys_rows.append(physics_row(shown[m3], rec3, truth, body, args.mode,
                                         phys_settings, reach=not args.no_reach,
                                         start=args.start, predict=predict))
            r = phys_rows[-1]
            print(f"    physics ({args.mode}): tracking {100 * r['tracking_error_m']:.2f} cm, "
                  f"assist {r['assist_mean_n']:.0f}/{r['assist_max_n']:.0f} N, pen "
                  f"{r['penetration_max_mm']:.1f} mm, falls {r['falls']}"
                  + (f" (the first: {r['first_fall_reason']})" if r["falls"] else "") + ", body "
                  f"{100 * r['sim_mpjpe_m']:.1f} cm (kin {100 * r['kin_mpjpe_m']:.1f}), hands "
                  f"{100 * r['hand_sim_ctrl_m']:.2f} cm from ctrl", flush=True)
            if r["plan"] is not None:
                pl = r["plan"]
                print(f"    search: {'complete' if pl['complete'] else 'out of budget'}, "
                      f"{pl['simulated_per_played']:g} frames simulated per frame played, "
                      f"{pl['backtracks']} dead ends, {pl['search_seconds']:.0f} s", flush=True)
        if args.plot:
            plot_clip(Path(args.plot), files[i].stem[10:], truth, shown, db)
            if args.physics:
                plot_hands(Path(args.plot), files[i].stem[10:], phys_rows[-1], args.mode)

    w = np.array([r["frames_compared"] for r in rows["naive"]], float)

    def mean(m, key):
        return float(np.average([r[key] for r in rows[m]], weights=w))

    print(f"\n{len(held)} held-out clips, {int(w.sum())} frames at {db.fps:g} fps "
          f"({time.perf_counter() - t0:.0f} s)")
    head = (f"{'method':<14} {'mpjpe m':>8} {'lower m':>8} {'upper m':>8} {'hands mm':>9} "
            f"{'reach %':>8} {'skate mm':>9} {'jitter':>8} {'lat med ms':>11} {'lat p99 ms':>11}")
    print(head)
    print("-" * len(head))
    for m in methods:
        print(f"{m:<14} {mean(m, 'mpjpe_m'):8.3f} {mean(m, 'lower_body_error_m'):8.3f} "
              f"{mean(m, 'upper_body_error_m'):8.3f} {1000 * mean(m, 'hand_error_m'):9.2f} "
              f"{100 * mean(m, 'hand_reachable_fraction'):8.1f} {mean(m, 'foot_skate_mm'):9.2f} "
              f"{mean(m, 'jitter'):8.0f} {np.median(lat[m]):11.2f} "
              f"{np.percentile(lat[m], 99):11.2f}")
    print(f"{'truth clips':<14} {'':>8} {'':>8} {'':>8} {'':>9} {'':>8} "
          f"{np.average([r['truth_foot_skate_mm'] for r in truth_rows], weights=w):9.2f} "
          f"{np.average([r['truth_jitter'] for r in truth_rows], weights=w):8.0f}")
    worst = max(r["hand_error_reachable_max_m"] or 0.0 for m in methods for r in rows[m])
    print(f"\nhands when reachable: max {1000 * worst:.3f} mm from the controller (target <= 10)")
    kinds = sorted({files[i].stem.split("_")[0][10:] for i in held})
    for k in kinds:
        sel = [n for n, i in enumerate(held) if files[i].stem[10:].startswith(k + "_")]
        if sel:
            ws = w[sel]
            print(f"  {k:<16} " + "  ".join(
                f"{m}: {np.average([rows[m][n]['mpjpe_m'] for n in sel], weights=ws):.3f}/"
                f"{np.average([rows[m][n]['lower_body_error_m'] for n in sel], weights=ws):.3f}"
                for m in methods) + "  (mpjpe/lower m)")

    if args.physics:
        print_physics(args, [files[i].stem[10:] for i in held], phys_rows)


def print_physics(args, names: list[str], rows: list[dict]) -> None:
    """Per clip and frame-weighted over all clips: the physics figures of ``physics_row``."""
    bal = (f", balance {args.balance}" if args.mode == "physical" else "") + (
        f", --predict budget {args.predict_budget:g}" if args.predict else "")
    print(f"\nmm 3-point on the simulated body ({args.mode}{bal}): physics report (track = "
          "joints to the reference it followed; pose = the same relative to the root, until a "
          "fall; walked = the simulated root's path over the ground, % of the reference's, "
          "until a fall), body/lower = joints to the truth carried onto "
          "the body (kin = the retargeted avatar, no physics), hand-ref = simulated wrists to "
          "the retargeted avatar's, ctrl = wrists to the carried controllers")
    head = f"{'clip':<28} " + " ".join(f"{h:>{int(fmt.split('.')[0])}}"
                                        for _, h, _, fmt in PHYS_COLS) + f" {'falls':>8}"
    print(head)
    print("-" * len(head))
    for name, r in zip(names, rows):
        print(phys_line(name, r))
    w = np.array([r["frames"] for r in rows], float)
    total = {k: float(np.average([r[k] for r in rows], weights=w)) for k, *_ in PHYS_COLS}
    total.update(assist_max_n=max(r["assist_max_n"] for r in rows),
                 penetration_max_mm=max(r["penetration_max_mm"] for r in rows),
                 falls=sum(r["falls"] for r in rows), first_fall_s=None,
                 fps=float(np.median([r["fps"] for r in rows])))
    print("-" * len(head))
    print(phys_line(f"all ({int(w.sum())} frames)", total).rstrip()
          + "   (max of assist and penetration, median fr/s)")
    bins = misses_by_speed(*(np.concatenate([r[k][:len(r["hand_speed"])] for r in rows])
                             for k in ("hand_dist", "hand_ok", "hand_speed")))
    # each speed bin's misses counted once (``misses_by_speed`` gives shares)
    bins = [(lo, hi, n, share, round(share * n) if n else 0) for lo, hi, n, share in bins]
    print(f"reachable wrist-frames farther than 1 cm from the controller: "
          f"{sum(b[4] for b in bins)} of {sum(b[2] for b in bins)}; by its speed relative to "
          f"the simulated shoulder: "
          + ", ".join(f"{lo:.0f}{'+' if hi == np.inf else f'-{hi:.0f}'} m/s "
                      + (f"{k} of {n} ({100 * share:.1f} %)" if n else "none")
                      for lo, hi, n, share, k in bins))
    tw = {k: float(np.average([r["truth_" + k] for r in rows], weights=w))
          for k in ("tracking_error_m", "assist_mean_n", "skate_mm")}
    print(f"the truth clips tracked the same way: track {100 * tw['tracking_error_m']:.2f} cm, "
          f"assist {tw['assist_mean_n']:.0f} N mean, penetration "
          f"{max(r['truth_penetration_max_mm'] for r in rows):.1f} mm max, skate "
          f"{tw['skate_mm']:.2f} mm/frame, falls {sum(r['truth_falls'] for r in rows)} "
          f"(skate = the ankle's travel while its foot touches, heel and toe roll included)")
    fell = [(n, r["first_fall_s"]) for n, r in zip(names, rows) if r["falls"]]
    print(f"clips with a fall: {len(fell)} of {len(rows)}"
          + (": " + ", ".join(f"{n} at {t:.1f} s" for n, t in fell) if fell else ""))
    if fell:
        up = sum(r["first_fall_s"] if r["falls"] else r["frames"] / r["fps_clip"] for r in rows)
        print(f"  first fall after {np.median([t for _, t in fell]):.1f} s median; upright "
              f"{up:.0f} of {sum(r['frames'] / r['fps_clip'] for r in rows):.0f} s in all "
              f"(every figure after a fall compares a body on the ground with a walk)")
    plans = [r["plan"] for r in rows if r["plan"] is not None]
    if plans:
        print(f"search: complete in {sum(p['complete'] for p in plans)} of {len(plans)} clips; "
              f"{min(p['simulated_per_played'] for p in plans):g}-"
              f"{max(p['simulated_per_played'] for p in plans):g} frames simulated per frame "
              f"played; {sum(p['search_seconds'] for p in plans):.0f} s in all (fr/s above: "
              f"the search's)")
    print(f"body scale: the humanoid's hips at {min(r['ratio'] for r in rows):.3f}-"
          f"{max(r['ratio'] for r in rows):.3f} of the capture's (retarget root ratio)")
    if args.mode != "assist":
        return
    ok = {True: "met", False: "MISSED"}
    print(f"targets (assist): tracking <= 3 cm: {ok[total['tracking_error_m'] <= 0.03]}"
          f" ({100 * total['tracking_error_m']:.2f}); penetration <= 10 mm: "
          f"{ok[total['penetration_max_mm'] <= 10]} "
          f"({total['penetration_max_mm']:.1f} max)")


if __name__ == "__main__":
    main()
