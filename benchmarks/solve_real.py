"""Solve the real captures of the shared data and print the figures the solver is judged by.

    python benchmarks/solve_real.py [--only cmu/16_57] [--plot DIR]

For every capture: marker RMS (inliers, and all samples), the worst marker error, frames with a
marker over 40 mm (and of them those not flagged as a swap or ghost), outliers, foot skate during detected plants, physical frames/s; the
toe tips' lowest height over the lab floor, beside the kinematic reference's (toes held rigid).
For cmu/16_57: distance of the solved hips, knees and ankles to the Vicon joint centres stored in
the same file (never used as input), after one similarity transform for the whole take.
For the Plug-in Gait walk and static trial: the solved hips, knees, ankles, shoulders, elbows
and wrists against the joint centres Plug-in Gait stored (segment origins); every solved
segment's frame against the segment
frame Plug-in Gait stored in the file (PELO/PELA/PELL/PELP, ...): the fixed angle between the
two and what is left over the take once it is taken out (``physmocap.solver.compare``); and the
solved knee flexion (angle between thigh and shank) against Plug-in Gait's LKneeAngles /
RKneeAngles.
"""
from __future__ import annotations

import argparse

import numpy as np

from _common import data_dir

CAPTURES = [("pig/PiG_Motion-FlatFoot-Full", "pig/PiG_Calibration-FlatFoot-Full"),
            ("cmu/02_01", None), ("cmu/16_57", None), ("cmu/01_01", None),
            ("c3dorg/nexgen_test1_metres", None)]
def save_plot(fig, path) -> None:
    """Write a matplotlib figure atomically and say where."""
    from physmocap.io.atomic import atomic_path
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    print(f"    wrote {path}")


LEG = {"Left": ("LHJ0", "LFE0", "LTI0"), "Right": ("RHJ0", "RFE0", "RTI0")}
JOINTS = ("UpperLeg", "LowerLeg", "Foot")          # hip, knee, ankle of the template


def pig_segment_lines(motion, allp) -> list[str]:
    """One line per Plug-in Gait segment: ours against Plug-in Gait's frame over the take."""
    from physmocap.solver.compare import pig_agreement
    return [f"      {key} {a['segment']:<14} fixed {a['offset_deg']:5.1f}  left over: median "
            f"{a['residual_median_deg']:4.1f} (twist {a['twist_median_deg']:4.1f}, "
            f"swing {a['swing_median_deg']:4.1f}), p95 {a['residual_p95_deg']:4.1f}"
            for key, a in pig_agreement(motion, allp).items()]


def similarity(a: np.ndarray, b: np.ndarray):
    """Umeyama: scale s, rotation R, translation t minimising |s R a + t - b| (a, b: (N, 3))."""
    ma, mb = a.mean(0), b.mean(0)
    A, B = a - ma, b - mb
    U, S, Vt = np.linalg.svd(B.T @ A / len(a))
    D = np.eye(3)
    D[2, 2] = np.sign(np.linalg.det(U @ Vt))
    R = U @ D @ Vt
    s = np.trace(np.diag(S) @ D) / np.mean(np.sum(A * A, 1))
    return s, R, mb - s * R @ ma


def toe_line(r) -> str:
    """The solved toe tips' lowest height over the lab floor (z = 0) and how often they are
    under it, beside the kinematic reference's (toes held near rest, rigid with the foot), and
    the bends ``toes.floor_toes`` gave the toes no marker is on."""
    from physmocap.solver.toes import bent_text, toe_tips

    def tips(m):
        return " / ".join(f"{100 * z.min():.1f} cm ({100 * np.mean(z < 0):.0f} %)"
                          for z in (p[:, 2] for p in toe_tips(m).values()))

    bent = r.report.get("toes_bent", {})
    how = ("; bent by the floor (no marker on them): " + bent_text(bent)) if bent \
        else "; a marker on each toe: not bent"
    return (f"    toe tips' lowest over the lab floor L / R (under it): {tips(r.motion)}; the "
            f"kinematic reference's {tips(r.kinematic)}{how}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="one capture, e.g. cmu/16_57")
    ap.add_argument("--pig-axes", action="store_true",
                    help="also solve the Plug-in Gait walk calibrated on itself (functional knee "
                         "axes) and print how far Plug-in Gait's thigh frames turn from ours")
    ap.add_argument("--plot", metavar="DIR",
                    help="also draw the per-frame figures behind the 16_57 joint-centre and the "
                         "Plug-in Gait knee-flexion rows as PNGs in DIR (needs matplotlib)")
    args = ap.parse_args()
    if args.plot:
        from physmocap.report._mpl import pyplot
        plt = pyplot()
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import load_body, pick_markerset
    from physmocap.solver.pipeline import solve_capture

    body = load_body()
    root = data_dir() / "c3d"
    print(f"{'capture':<32}{'frames':>7}{'RMS mm':>8}{'all mm':>8}{'max mm':>8}{'>40mm/unex':>11}"
          f"{'skate mm/fr (mean/max)':>24}{'phys fps':>10}{'kin mm':>8}")
    for name, static in CAPTURES:
        if args.only and name != args.only:
            continue
        t = read_c3d(root / f"{name}.c3d")
        st = read_c3d(root / f"{static}.c3d") if static else None
        r = solve_capture(t, pick_markerset(t.labels), body, static=st)
        rep = r.report
        sk = rep["foot_skate_mm"]
        print(f"{name:<32}{rep['frames']:>7}{rep['marker_rms_mm']:>8.1f}"
              f"{rep['marker_rms_all_mm']:>8.1f}{rep['marker_max_mm']:>8.1f}"
              f"{rep['frames_over_40mm_all']:>5}/{rep['frames_over_40mm_unexplained']:<3}"
              f"{sk['mean']:>11.2f} / {sk['max']:<9.2f}"
              f"{rep['frames_per_second']:>10.0f}{rep['kinematic_rms_mm']:>8.1f}")
        if rep["outlier_frames"]:
            print(f"    outliers (marker: frames): {rep['outlier_frames']}")
        print(toe_line(r))
        if name == "cmu/16_57":
            centres = read_c3d(root / f"{name}.c3d", points="all")
            g = r.motion.gpos
            sk_names = r.motion.skeleton.names
            a, b = [], []
            for side, labels in LEG.items():
                for lab, jn in zip(labels, JOINTS):
                    a.append(g[:, sk_names.index(side + jn)])
                    b.append(centres.pos[:, centres.index(lab)])
            A, B = np.stack(a, 1), np.stack(b, 1)          # (F, 6, 3)
            ok = ~np.isnan(B).any(-1)
            s, R, tt = similarity(A[ok], B[ok])
            d = np.linalg.norm(s * A @ R.T + tt - B, axis=-1)
            names = [f"{side[0]}{j}" for side in LEG for j in ("hip", "knee", "ankle")]
            print("    16_57 solved vs Vicon joint centres (mm, mean over frames; similarity "
                  f"scale {s:.3f}): " + ", ".join(f"{n} {1000 * np.nanmean(d[:, i]):.1f}"
                                                  for i, n in enumerate(names)))
            print("    same over frames 0-179 (the run; standing after it, Vicon's knee centres "
                  "leave the KNE markers, below): " + ", ".join(
                      f"{n} {1000 * np.nanmean(d[:180, i]):.1f}" for i, n in enumerate(names)))
            if args.plot:
                fig, ax = plt.subplots(figsize=(9, 4.5))
                t_s = np.arange(len(d)) / r.motion.fps
                for i, n in enumerate(names):
                    ax.plot(t_s, 1000 * d[:, i], label=n, lw=1.2)
                for side, ls in (("L", ":"), ("R", "--")):
                    kd = np.linalg.norm(centres.pos[:, centres.index(f"{side}FE0")]
                                        - centres.pos[:, centres.index(f"{side}KNE")], axis=-1)
                    ax.plot(t_s, 1000 * kd, "k" + ls, lw=1,
                            label=f"Vicon {side}FE0 to {side}KNE (a rigid thigh keeps it fixed)")
                ax.axhline(30, color="grey", lw=0.8)
                ax.set(xlabel="time (s)", ylabel="mm",
                       title="cmu/16_57: solved leg joints to Vicon's joint centres "
                             "(one similarity transform)")
                ax.legend(fontsize=7, ncol=2)
                save_plot(fig, f"{args.plot}/16_57_joint_centres.png")
            # The reference is not rigid with the markers: a rigid thigh keeps its knee centre
            # at one distance from KNE, Vicon's centre wanders (and from frame ~180, standing,
            # sits ~10 cm ahead of KNE with the thigh markers upright).
            for side in "LR":
                kd = 1000 * np.linalg.norm(centres.pos[:, centres.index(f"{side}FE0")]
                                           - centres.pos[:, centres.index(f"{side}KNE")], axis=-1)
                print(f"    16_57 reference check: Vicon {side}FE0 to {side}KNE {np.nanmin(kd):.0f}.."
                      f"{np.nanmax(kd):.0f} mm (mean |deviation from median| "
                      f"{np.nanmean(np.abs(kd - np.nanmedian(kd))):.0f} mm: the least a rigid "
                      "thigh can be off)")
        if name.startswith("pig/"):
            allp = read_c3d(root / f"{name}.c3d", points="all", up="z")
            g = r.motion.gpos
            sk_names = r.motion.skeleton.names
            # Plug-in Gait's own joint centres (femur origin = knee, tibia origin = ankle, femur
            # proximal point = hip; Davis hip, KNE/ANK-based knee and ankle): evaluation only
            out = []
            # and the arms' (clavicle origin = shoulder, humerus origin = elbow, radius origin =
            # wrist)
            for side in ("Left", "Right"):
                for lab, jn, what in (("FEP", "UpperLeg", "hip"), ("FEO", "LowerLeg", "knee"),
                                      ("TIO", "Foot", "ankle"), ("CLO", "UpperArm", "shoulder"),
                                      ("HUO", "LowerArm", "elbow"), ("RAO", "Hand", "wrist")):
                    dd = np.linalg.norm(g[:, sk_names.index(side + jn)]
                                        - allp.pos[:, allp.index(side[0] + lab)], axis=-1)
                    out.append(f"{side[0]}{what} {1000 * np.nanmean(dd):.1f}")
            print("    solved vs Plug-in Gait joint centres (mm, mean over frames): "
                  + ", ".join(out))
            print("    solved segment frames vs Plug-in Gait's (deg; 'fixed': the one rotation "
                  "between them, less a renaming of axes; 'left over': what moves apart):")
            print("\n".join(pig_segment_lines(r.motion, allp)))
            if args.pig_axes:
                from physmocap import quat
                own = solve_capture(t, pick_markerset(t.labels), body).motion  # no static
                for what, mo in (("static-calibrated", r.motion), ("walk-calibrated", own)):
                    tw = []
                    for side in ("Left", "Right"):
                        o = allp.pos[:, allp.index(f"{side[0]}FEO")]
                        ant = allp.pos[:, allp.index(f"{side[0]}FEA")] - o
                        loc = quat.inv_rotate(mo.grot[:, sk_names.index(side + "UpperLeg")], ant)
                        tw.append(f"{side} {np.degrees(np.arctan2(np.nanmedian(loc[:, 1]), np.nanmedian(loc[:, 0]))):+.1f}")
                    print(f"    Plug-in Gait thigh frame turned from our {what} thigh about its "
                          f"long axis (deg): {', '.join(tw)}")
            if args.plot:
                fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
            for k, side in enumerate(("Left", "Right")):
                hip, knee, ankle = (g[:, sk_names.index(side + j)] for j in JOINTS)
                th, sh = knee - hip, ankle - knee
                cos = np.sum(th * sh, -1) / np.linalg.norm(th, axis=-1) / np.linalg.norm(sh, axis=-1)
                ours = np.degrees(np.arccos(np.clip(cos, -1, 1)))
                # model outputs were scaled like positions (mm -> m): undo to get degrees
                ref = allp.pos[:, allp.index(f"{side[0]}KneeAngles"), 0] * 1000.0
                ok = ~np.isnan(ref)
                # a knee axis off the true one shows as varus/valgus that follows flexion
                varus = allp.pos[:, allp.index(f"{side[0]}KneeAngles"), 1] * 1000.0
                slope = np.polyfit(ref[ok], varus[ok], 1)[0]
                rms = np.sqrt(np.mean((ours[ok] - ref[ok]) ** 2))
                if args.plot:
                    t_s = np.arange(len(ours)) / r.motion.fps
                    axes[k].plot(t_s, ours, label="physmocap (thigh-shank angle)")
                    axes[k].plot(t_s, ref, label=f"Plug-in Gait {side[0]}KneeAngles")
                    axes[k].set(title=f"{side} knee flexion, RMS {rms:.1f} deg",
                                xlabel="time (s)", ylabel="deg")
                    axes[k].legend(fontsize=8)
                bias = float(np.mean(ours[ok] - ref[ok]))
                print(f"    {side} knee flexion vs Plug-in Gait: RMS {rms:.1f} deg, bias "
                      f"{bias:+.1f} deg, RMS after removing the bias "
                      f"{np.sqrt(max(rms ** 2 - bias ** 2, 0.0)):.1f} deg "
                      f"(range ours {ours[ok].min():.0f}..{ours[ok].max():.0f}, "
                      f"PiG {ref[ok].min():.0f}..{ref[ok].max():.0f}); PiG's own varus per "
                      f"degree of flexion {slope:+.2f} (axis error ~{np.degrees(np.arctan(abs(slope))):.0f} deg)")
            if args.plot:
                save_plot(fig, f"{args.plot}/pig_knee_flexion.png")


if __name__ == "__main__":
    main()
