"""Frames per second and tracking figures of physical playback (one character, the shipped
humanoid): clips, the solved real captures, and motion matching coupled live.

    python benchmarks/playback_speed.py [clips] [solved] [live] [iterations]
                                        [physical_iterations] [order] [looped]
                                        [solved_12] (default: the first three)

Prints, per reference and mode: frames/s of the ``Tracker`` loop alone (reset excluded), the
physics steps per frame, and the tracking figures of ``TrackResult.report()``. Fully physical
runs also with balance feedback (``phys+torque``, ``phys+motors``: ``TrackingSettings(
balance=True)``, ``BalanceSettings.drive``; ``phys+step``: ``balance.STEPPING``), 20 s where
the reference allows, with the time of the first fall, ``lost``: when the root first strays
0.5 m from the reference's, and ``down``: when the head first drops below 1 m. ``solved``
also loops the walking captures' gait cycle (``reference.walk_cycle``) to 20 s, fully physical
with ``STEPPING``, in six headings (``solved_12``: those and six more); ``looped`` does so with
pybullet_data's DeepMimic walk (30 and 60 Hz), beside ``STEPPING`` planned once per reference
frame.
"""
from __future__ import annotations

import numpy as np

from _common import data_dir, live_database

from physmocap import quat
from physmocap.demo import make_demo_capture
from physmocap.io.bvh import read_bvh
from physmocap.matching.database import resample
from physmocap.matching.retarget import retarget
from physmocap.motion import Motion
from physmocap.playback import TrackingSettings, track, track_any
from physmocap.playback.balance import STEPPING, BalanceSettings
from physmocap.playback.reference import close_cycle, loop_motion, walk_cycle
from physmocap.scene import load_body

# fully physical variants: no balance feedback (the default), and the two balance drives
PHYSICAL = {"physical": TrackingSettings(),
            "phys+torque": TrackingSettings(balance=True),
            "phys+motors": TrackingSettings(balance=True,
                                            balance_gains=BalanceSettings(drive="motors")),
            "phys+step": TrackingSettings(balance=True, balance_gains=STEPPING)}


def down_s(res, body) -> str:
    """s, when the simulated head first drops below 1 m (standing: 1.6 m): the body is down,
    often well before the fall rule (head below 0.6 m or root below half the reference's
    height, for 0.5 s) reports a fall."""
    h = res.motion.gpos[:, body.index("Head"), 2]
    low = np.nonzero(h < 1.0)[0]
    return f"{low[0] / res.motion.fps:.2f}s" if len(low) else "-"


def turned(motion: Motion, yaw: float) -> Motion:
    """``motion`` turned by ``yaw`` rad about the vertical through the origin."""
    q = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), yaw)
    lrot = np.array(motion.lrot)
    lrot[:, 0] = quat.mul(q, lrot[:, 0])
    return Motion(motion.skeleton, motion.fps, quat.rotate(q, motion.root_pos), lrot,
                  motion.meta)


def lost_s(res) -> str:
    """s, when the simulated root first strays 0.5 m (horizontally) from the reference's."""
    d = np.linalg.norm(res.motion.root_pos[:, :2] - res.reference.root_pos[:, :2], axis=-1)
    far = np.nonzero(d > 0.5)[0]
    return f"{far[0] / res.motion.fps:.2f}s" if len(far) else "-"


def main() -> None:
    body = load_body()
    refs = {}
    F = 600
    refs["standing 60 Hz"] = Motion(body.skeleton, 60.0,
                                    np.tile(body.skeleton.offsets[0], (F, 1)),
                                    quat.identity((F, len(body))))
    _, truth = make_demo_capture()
    refs["demo walk 120 Hz"] = truth
    src = read_bvh(data_dir() / "bvh/bandai-namco/ds2_normal_locomotion/"
                   "dataset-2_walk_normal_001.bvh")
    refs["bandai walk 60 Hz"] = resample(retarget(src, body.skeleton), 60.0)
    print(f"{'reference':20s} {'mode':11s} {'frames':>6s} {'fps':>7s} {'err m':>6s} {'err 1s':>6s} "
          f"{'F mean':>7s} {'F max':>6s} {'pen mm':>6s} {'skate':>6s} {'lost':>6s} "
          f"{'down':>6s}  falls")
    for name, ref in refs.items():
        # the demo walk cycle (1.26 s) looped to 20 s for the fully physical runs
        loops = 16 if name.startswith("demo") else 1
        for mode, s in [("assist", TrackingSettings())] + list(PHYSICAL.items()):
            res = track(ref, body, "assist" if mode == "assist" else "physical", s,
                        loops=1 if mode == "assist" else loops)
            rep = res.report()
            falls = ", ".join(f"{f['time_s']:.2f}s" for f in rep["falls"]) or "-"
            # err 1s: the tracking error over the first second (a fallen body's is meaningless)
            err1 = float(np.mean(res.tracking_error_m[:int(res.motion.fps)]))
            print(f"{name:20s} {mode:11s} {rep['frames']:6d} {rep['frames_per_second']:7.0f} "
                  f"{rep['tracking_error_m']:6.3f} {err1:6.3f} {rep['root_assist_force_mean_n']:7.1f} "
                  f"{rep['root_assist_force_max_n']:6.1f} {rep['penetration_max_mm']:6.1f} "
                  f"{rep['foot_skate_mm']:6.1f} {lost_s(res):>6s} {down_s(res, body):>6s}  {falls}")


def _pose_cm(rep: dict) -> str:
    """The report's ``pose_error_m`` in cm (``-``: the fall began at once)."""
    return "-" if rep["pose_error_m"] is None else f"{100 * rep['pose_error_m']:.1f}"


def _walked(rep: dict) -> str:
    """The report's ``walked_m``: ``body/reference`` m."""
    return f"{rep['walked_m']['body']:.1f}/{rep['walked_m']['reference']:.1f}"


def live() -> None:
    """The coupled loop (search, inertialization, retarget, physics step) on a Bandai-Namco
    database of 20 clips (walks, turns, runs): every shipped input in both modes, then its
    speed beside the controller alone (the kinematic reference)."""
    import time

    from physmocap.matching.controller import Controller, run_controller
    from physmocap.matching.trajectory import load_input
    from physmocap.playback.live import run_live
    from physmocap.scene import _resolve

    db, feats = live_database()
    from physmocap.playback.live import LIVE_ASSIST_ITERATIONS
    print(f"\nlive coupling, database {db.n_frames} frames ({len(db.range_starts)} clips); "
          f"assist 10 s ({LIVE_ASSIST_ITERATIONS} solver iterations), physical 20 s per input")
    print(f"{'input':14s} {'mode':11s} {'err m':>6s} {'F mean':>6s} {'F max':>6s} {'pen mm':>6s} "
          f"{'skate':>6s} {'lost':>6s} {'down':>6s} {'pose cm':>7s} {'walked m':>11s}  falls")
    inputs = ("straight_walk", "stop_and_go", "figure_eight", "sharp_turns", "run", "head_circle")
    for name in inputs:
        src = load_input(_resolve(name, "inputs", "input"))
        runs = [("assist", TrackingSettings(), 10.0), ("physical", PHYSICAL["physical"], 20.0)]
        if name in ("straight_walk", "stop_and_go"):     # the walking inputs
            runs += [(m, PHYSICAL[m], 20.0) for m in ("phys+torque", "phys+motors", "phys+step")]
        for mode, s, dur in runs:
            lr = run_live(Controller(db, feats, src), dur,
                          mode="assist" if mode == "assist" else "physical", settings=s)
            rep = lr.report()
            falls = ", ".join(f"{f['time_s']:.2f}s" for f in rep["falls"]) or "-"
            print(f"{name:14s} {mode:11s} {rep['tracking_error_m']:6.3f} "
                  f"{rep['root_assist_force_mean_n']:6.0f} {rep['root_assist_force_max_n']:6.0f} "
                  f"{rep['penetration_max_mm']:6.1f} {rep['foot_skate_mm']:6.1f} "
                  f"{lost_s(lr.result):>6s} {down_s(lr.result, load_body()):>6s} "
                  f"{_pose_cm(rep):>7s} {_walked(rep):>11s}  {falls}")
    print("(pose cm: the joints about the root against the reference's; walked m: body / "
          "reference, their roots' paths a point a second; both until the first fall began)")
    print("\nspeed, straight_walk, median of 3 runs of 10 s")
    print(f"{'loop fps':>8s} {'lat med':>7s} {'lat p99':>7s} {'ctrl ms':>7s} {'phys ms':>7s} "
          f"{'controller alone fps':>21s}")
    src = load_input(_resolve("straight_walk", "inputs", "input"))
    reps = [run_live(Controller(db, feats, src), 10.0).report() for _ in range(3)]
    kin = []
    for _ in range(3):
        t0 = time.perf_counter()
        run_controller(Controller(db, feats, src), 10.0)
        kin.append(600 / (time.perf_counter() - t0))
    med = lambda k: float(np.median([r[k] for r in reps]))  # noqa: E731
    lat = np.median([r["latency_ms"]["median"] for r in reps])
    p99 = np.median([r["latency_ms"]["p99"] for r in reps])
    print(f"{med('frames_per_second'):8.0f} {lat:7.2f} {p99:7.2f} {med('controller_ms_median'):7.2f} "
          f"{med('physics_ms_median'):7.2f} {np.median(kin):21.0f}")
    print("(ctrl ms: controller step + retarget + foot levelling; phys ms: the tracker's step)")


def iterations() -> None:
    """Assist mode's tracking of every shipped input (live, 10 s) at 10 / 30 / 50 / 100 / 200
    PyBullet solver iterations (the live loop's default is 30: ``live.LIVE_ASSIST_ITERATIONS``;
    offline ``track``'s 50: ``TrackingSettings.iterations``)."""
    from physmocap.matching.controller import Controller
    from physmocap.matching.trajectory import load_input
    from physmocap.playback.live import run_live
    from physmocap.scene import _resolve

    db, feats = live_database()
    names = ("straight_walk", "stop_and_go", "figure_eight", "sharp_turns", "run", "head_circle")
    print("\nlive coupling, assist mode, 10 s per input: tracking error cm / penetration mm / "
          "frames per second, by solver iterations")
    print(f"{'iterations':>10s} " + " ".join(f"{n:>18s}" for n in names))
    for it in (10, 30, 50, 100, 200):
        row = []
        for name in names:
            src = load_input(_resolve(name, "inputs", "input"))
            rep = run_live(Controller(db, feats, src), 10.0, mode="assist",
                           settings=TrackingSettings(solver_iterations=it)).report()
            row.append(f"{100 * rep['tracking_error_m']:5.1f} /{rep['penetration_max_mm']:5.1f} /"
                       f"{rep['frames_per_second']:4.0f}")
        print(f"{it:>10d} " + " ".join(f"{r:>18s}" for r in row), flush=True)


def physical_iterations() -> None:
    """Fully physical ``STEPPING`` on the demo walk (looped to 20 s) and the Bandai walk at 10 /
    30 / 50 solver iterations (physical mode keeps 10: what it was tuned at)."""
    body = load_body()
    _, demo = make_demo_capture()
    src = read_bvh(data_dir() / "bvh/bandai-namco/ds2_normal_locomotion/"
                   "dataset-2_walk_normal_001.bvh")
    bandai = resample(retarget(src, body.skeleton), 60.0)
    print("\nfully physical, STEPPING, by solver iterations: down (head below 1 m) / first fall")
    for it in (10, 30, 50):
        s = TrackingSettings(balance=True, balance_gains=STEPPING, solver_iterations=it)
        row = []
        for name, ref, loops in (("demo walk 20 s", demo, 16), ("Bandai walk", bandai, 1)):
            res = track(ref, body, "physical", s, loops=loops)
            fall = f"{res.falls[0]['time_s']:.2f}s" if res.falls else "-"
            row.append(f"{name}: {down_s(res, body)} / {fall}")
        print(f"{it:>10d}  " + " | ".join(row), flush=True)


def clip_order() -> None:
    """The live benchmark's 20 clips as ``physmocap mm build`` takes a folder (name order: the
    runs first) beside the walks-first order: live straight walk and stop and go, assist 10 s
    and fully physical (``STEPPING``) 20 s (``live.standing_frame`` picks the reference pose)."""
    from physmocap.io.bvh import read_bvh as read
    from physmocap.matching.controller import Controller
    from physmocap.matching.database import build_database
    from physmocap.matching.features import compute_features
    from physmocap.matching.trajectory import load_input
    from physmocap.playback.live import run_live, standing_frame
    from physmocap.scene import _resolve

    body = load_body()
    db, feats = live_database()
    files = sorted(f for f in (data_dir() / "bvh/bandai-namco/ds2_normal_locomotion").glob("*.bvh")
                   if f.stem in db.clip_names)
    db2 = build_database([read(f) for f in files], names=[f.stem for f in files], fps=60)
    print("\nclip order: live inputs, assist tracking error (10 s) / fully physical STEPPING "
          "down (20 s)")
    for label, (d, ft) in (("walks first", (db, feats)),
                           ("name order", (db2, compute_features(db2)))):
        k = standing_frame(d)
        clip = d.clip_names[int(np.searchsorted(d.range_stops, k, side="right"))]
        row = []
        for name in ("straight_walk", "stop_and_go"):
            src = load_input(_resolve(name, "inputs", "input"))
            a = run_live(Controller(d, ft, src), 10.0, mode="assist").report()
            src = load_input(_resolve(name, "inputs", "input"))
            p = run_live(Controller(d, ft, src), 20.0, mode="physical",
                         settings=PHYSICAL["phys+step"])
            row.append(f"{name} {100 * a['tracking_error_m']:.1f} cm / {down_s(p.result, body)}")
        print(f"{label:12s} (reference: {clip} start)  " + " | ".join(row), flush=True)


def looped_cycle(motion: Motion, seconds: float = 20.0) -> tuple:
    """``motion``'s most closed gait cycle (``reference.walk_cycle``), its seam spread over it
    (``close_cycle``, as ``play --loop`` does), and that cycle repeated past ``seconds`` (one
    loop more than reaches it): ``((i, j, seam), cycle, looped)``."""
    i, j, seam = walk_cycle(motion)
    cycle = close_cycle(motion[i:j + 1])
    loops = int(np.ceil(seconds * motion.fps / (j - i))) + 1
    return (i, j, seam), cycle, loop_motion(cycle, loops)


def cycle_downs(motion: Motion, body, settings: TrackingSettings, yaws) -> tuple:
    """``motion``'s gait cycle looped past 20 s (``looped_cycle``) and played fully physical,
    the whole reference turned to each of ``yaws`` (rad): the cycle ``(i, j, seam)``, the
    looped length (s) and ``down_s`` per heading."""
    (i, j, seam), _, ref = looped_cycle(motion)
    downs = [down_s(track_any(turned(ref, y), body, "physical", settings), body) for y in yaws]
    return (i, j, seam), ref.n_frames / motion.fps, downs


HEADINGS_6 = (0.0, 0.7, 2.0, 3.0, 4.0, 5.0)
HEADINGS_12 = HEADINGS_6 + (1.0, 1.5, 2.5, 3.5, 4.5, 5.5)


def solved(yaws=HEADINGS_6) -> None:
    """Physical playback of the real captures as the marker solver solves them (the takes of
    ``benchmarks/solve_real.py``), in both modes; the walks' gait cycle looped in the headings
    ``yaws`` (rad)."""
    from solve_real import CAPTURES
    walking = ("pig/PiG_Motion-FlatFoot-Full", "cmu/02_01")    # the walking captures

    from physmocap.io.c3d import read_c3d
    from physmocap.scene import pick_markerset
    from physmocap.solver.pipeline import solve_capture

    body = load_body()
    root = data_dir() / "c3d"
    walks = {}
    print("\nsolved captures, played back")
    print(f"{'capture':32s} {'mode':9s} {'frames':>6s} {'err m':>6s} {'F mean':>6s} {'F max':>6s} "
          f"{'pen mm':>6s} {'skate':>6s} {'down':>6s}  falls")
    for name, static in CAPTURES:
        t = read_c3d(root / f"{name}.c3d")
        st = read_c3d(root / f"{static}.c3d") if static else None
        motion = solve_capture(t, pick_markerset(t.labels), body, static=st).motion
        for mode, s in (("assist", TrackingSettings()), ("physical", PHYSICAL["physical"]),
                        ("phys+step", PHYSICAL["phys+step"])):
            res = track(motion, body, "assist" if mode == "assist" else "physical", settings=s)
            rep = res.report()
            falls = ", ".join(f"{f['time_s']:.2f}s" for f in rep["falls"]) or "-"
            print(f"{name:32s} {mode:9s} {rep['frames']:6d} {rep['tracking_error_m']:6.3f} "
                  f"{rep['root_assist_force_mean_n']:6.0f} {rep['root_assist_force_max_n']:6.0f} "
                  f"{rep['penetration_max_mm']:6.1f} {rep['foot_skate_mm']:6.1f} "
                  f"{down_s(res, body):>6s}  {falls}")
        if name in walking:
            walks[name] = motion
    # the walks' most closed gait cycle looped to 20 s (a capture starts and ends elsewhere),
    # fully physical with STEPPING, the whole reference turned to six headings or more (one run
    # of a falling body says little)
    print(f"\nsolved walks, their gait cycle looped to 20 s, phys+step, headings "
          f"{', '.join(f'{y:g}' for y in yaws)} rad: head below 1 m at (s)")
    for name, motion in walks.items():
        (i, j, seam), seconds, downs = cycle_downs(motion, body, PHYSICAL["phys+step"], yaws)
        print(f"{name:32s} cycle {i}-{j} ({(j - i) / motion.fps:.2f} s at {motion.fps:g} Hz, "
              f"seam {100 * seam:.1f} cm), {seconds:.1f} s: up "
              f"{downs.count('-')} of {len(yaws)}; {' '.join(downs)}")


def looped() -> None:
    """The pybullet_data DeepMimic walk (30 Hz, and resampled to 60 Hz), its gait cycle looped
    to 20 s (as ``play --loop 20``), fully physical in six headings: ``STEPPING`` (its motors
    planned at 120 Hz) beside ``STEPPING`` planned once per reference frame (``plan_s`` 0)."""
    import dataclasses

    from physmocap.io.deepmimic import pybullet_motion_path, read_deepmimic

    body = load_body()
    clip = read_deepmimic(pybullet_motion_path("humanoid3d_walk.txt"))
    yaws = (0.0, 0.7, 2.0, 3.0, 4.0, 5.0)
    once = TrackingSettings(balance=True, balance_gains=dataclasses.replace(STEPPING, plan_s=0.0))
    print(f"\nDeepMimic walk, its gait cycle looped to 20 s, fully physical, headings "
          f"{', '.join(f'{y:g}' for y in yaws)} rad: head below 1 m at (s)")
    for fps in (clip.fps, 60.0):
        m = clip if fps == clip.fps else resample(clip, fps)
        for label, s in (("STEPPING", PHYSICAL["phys+step"]), ("planned once a frame", once)):
            (i, j, _), _, downs = cycle_downs(m, body, s, yaws)
            print(f"  {m.fps:3.0f} Hz, cycle {(j - i) / m.fps:.2f} s, {label:21s} up "
                  f"{downs.count('-')} of {len(yaws)}; {' '.join(downs)}", flush=True)


if __name__ == "__main__":
    import sys
    parts = {"clips": main, "solved": solved, "live": live}
    extra = {"iterations": iterations, "physical_iterations": physical_iterations,
             "order": clip_order, "looped": looped,
             "solved_12": lambda: solved(HEADINGS_12)}
    for part in (sys.argv[1:] or parts):
        if part not in parts and part not in extra:
            raise SystemExit(f"usage: playback_speed.py [{' '.join(parts)}] "
                             f"[{' '.join(extra)}] (default: the first three)")
        parts.get(part, extra.get(part))()
