"""Three-point avatar against ground truth: held-out Bandai-Namco clips, head and wrists extracted,
the body reconstructed, errors measured against the clip itself.

    python benchmarks/avatar_eval.py [--every 10] [--offset 0] [--head-weight 0.0] [--quick]
                                     [--plot DIR] [--still-hands]

``--still-hands`` replaces the controllers by points fixed in front of the hips in the head's
yaw frame (a user holding the controllers still instead of swinging the arms): the hands no
longer tell the gait phase, and the hand error is against those points.

``--plot DIR`` writes one picture per held-out clip (``avatar_<clip>.png``, matplotlib): the
lower-body error over time of each method, and the left ankle's forward position relative to
the hips (the gait phase: a leg out of phase with the truth shows as a half-cycle shift).

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
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import data_dir
from scipy.spatial import cKDTree

from physmocap import quat
from physmocap.io.bvh import read_bvh
from physmocap.matching.avatar import (Avatar, AvatarSettings, avatar_features, avatar_report,
                                       extract_track, naive_avatar, run_avatar)
from physmocap.matching.database import build_database, resample
from physmocap.matching.trajectory import facing_from_yaw, yaw_of
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


def plot_clip(folder: Path, name: str, truth, shown: dict, db) -> None:
    """``folder/avatar_<name>.png``: lower-body error (m) over time per method, and the left
    ankle's forward position relative to the hips (m) in the hips' heading frame, beside the
    truth's."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from physmocap.matching.avatar import lower_body_joints

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
    args = ap.parse_args()

    folder = data_dir() / "bvh" / "bandai-namco" / "ds2_normal_locomotion"
    files = sorted(folder.glob("*.bvh"))
    motions = [read_bvh(f) for f in files]
    held = list(range(args.offset, len(files), args.every))
    if args.quick:
        held = held[::max(len(held) // 4, 1)][:4]
    leak = leaking(motions, held)
    train = [i for i in range(len(files)) if i not in held and i not in leak]
    print(f"held out {len(held)} clips: {', '.join(files[i].stem[10:] for i in held)}")
    print(f"dropped from the database as overlapping a held-out clip: "
          f"{', '.join(files[i].stem[10:] for i in sorted(leak)) or 'none'}")
    db = build_database([motions[i] for i in train], names=[files[i].stem for i in train])
    print(f"database: {db.n_frames} frames ({db.n_frames / db.fps:.0f} s at {db.fps:g} fps) "
          f"from {len(train)} clips")
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
            lat[m].extend(1000.0 * np.array(rec.seconds))
        truth_rows.append(r)
        print(f"  {files[i].stem[10:]:<28} " + "  ".join(
            f"{m} {rows[m][-1]['mpjpe_m']:.3f}/{rows[m][-1]['lower_body_error_m']:.3f}"
            for m in methods) + "  (mpjpe/lower m)", flush=True)
        if args.plot:
            plot_clip(Path(args.plot), files[i].stem[10:], truth, shown, db)

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


if __name__ == "__main__":
    main()
