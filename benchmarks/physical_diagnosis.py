"""Why fully physical playback falls: the measurements behind README "Measured".

    python benchmarks/physical_diagnosis.py [numerics] [one_leg] [references] [anatomy]
                                            [start_phase] [live_start] [live_paced]
                                            [live_headings] [pushes] [soles]
                                            [live_reference]             (default: all)
                                            [live_headings_28] [live_turns] [turn_clips]
                                            [live_stands] [turn_database] [live_mirrored]
                                            [turn_radius] [envelope] [live_predictive]
                                            [solved_loop] [solved_cycles]
                                            [solved_cycles_template]
                                                         (the last twelve not by default)
                                            [--set NAME=VALUE ...]

``--set NAME=VALUE`` (repeatable) changes a gain of ``STEPPING`` (a ``BalanceSettings`` field)
or a ``TrackingSettings`` field, in every part that runs ``STEPPING``: a set of gains measured
side by side with the shipped one (e.g. ``live_turns --set ik_kz=0.3 --set
joint_max_torque=190``; ``benchmarks/RESULTS.md``, "Live coupling, fully physical").

* ``numerics``: the first fall on the demo walk (looped to 20 s, no balance feedback) under
  finer physics: solver iterations, time step, friction, armature (``min_inertia``);
* ``one_leg``: the body standing on its right leg, centre of mass moved across the sole by
  rolling the whole body about the ankle: the largest offset from the ankle line it holds for
  5 s, at 10 and at 100 solver iterations (the sole's half-width is 4.5 cm);
* ``references``: ``playback.diagnose.support_summary`` of the demo walk, the Bandai-Namco walk
  and the motion-matched straight walk (as ``track`` prepares them: feet levelled, grounded);
* ``anatomy``: the first fall of the demo walk without feedback, step by step: when the
  simulated swing foot first touches the floor against when the reference plants it, the peak
  ground force then, and how long the body is then in the air;
* ``start_phase``: the demo walk with ``balance.STEPPING`` started at other points of its cycle;
* ``live_start``: the live walking inputs with ``balance.STEPPING``, physics from the first
  frame (the reference starts from standing) or from 3 s in (already walking);
* ``live_paced``: the same from the first frame, with the controller made to wait for the body
  (``LivePlayback(follow=...)``: its root clamped toward the body's; ``speed_margin``: its
  desired speed capped at the body's plus a margin), and how fast the body's centre of mass
  moves forward and sideways in its first 2 s;
* ``live_headings``: the live walking inputs with ``STEPPING`` from the first frame, 20 s,
  the whole task turned to six headings (the input's camera and the start facing): the same
  walk in other floating-point conditions, since one run of a falling body says little;
  for stop and go also whether the body came to rest at the end of each stand;
  ``live_headings_28`` the same over the 28 headings of README (``HEADINGS_28``: the six,
  every 30°, ten drawn at random; about 8 minutes); ``live_turns`` the turning walks (the
  figure eight and the sharp turns, their paths' way-points turned to the six headings) and
  the head circle (once; a recorded head is not turned); ``live_mirrored`` the same three
  inputs mirrored (y -> -y: each turn the other way; the headings mirrored too): a body and a
  database with left and right alike would do the same; ``figure_eight_28`` the figure
  eight and its mirror over ``HEADINGS_28`` (about 8 minutes);
* ``turn_clips``: ``STEPPING`` on the captured turning walks themselves (Bandai-Namco
  ``walk-turn-left`` / ``walk-turn-right`` 001-012: 80-115° turns, the hips turning at up to
  70-112°/s over 0.5 s; tracked from 0.5 s in, as ``track`` prepares them), and on
  ``walk-turn-right_normal_004``, whose last 2 s are a captured U-turn (the hips turn about
  190°, at up to 260°/s over 0.5 s, as the walk slows to 0.4 m/s), started at
  several points before it: is the body up at the end, or when the head first drops below 1 m;
  and how often each reference has no foot planted by ``STEPPING``'s rule, the capture's and
  the live sharp turns' (heading 2 rad); a picture, ``out/turn_clips.png`` (matplotlib): the
  hips' heading of reference and body in the captured U-turn and in the live sharp turns, the
  frames with no foot planted shaded. Set beside ``live_turns``: what the body can turn when
  its reference is a capture;
* ``live_stands``: what the live reference (the motion-matching controller alone, kinematic)
  does while the stop and go and the head circle stand (desired velocity zero for 1 s or
  more): its hips' speed, its root's distance from the simulation object, the database frames
  it plays and how fast its feet labelled in contact slide; and how many database frames stand
  at all (a few seconds);
* ``turn_database``: ``live_headings`` of the sharp turns, the straight walk and the stop and
  go on the live database (with its standing clip) mirrored, with the four other captured
  U-turns of the turning walks added, and with both (about 12 minutes): is the sharp turns'
  fall a gap in the database?
* ``turn_radius``: how tight a turn the fully physical body walks: ``live_headings`` of the
  sharp turns' task with its two 180° reversals rounded into half circles of 0.5, 0.75 and
  1 m radius (``stadium_path``: two 5 m straights 2r apart, 1.1 m/s, the shipped
  ``PathFollower``), beside the sharp turns themselves (r = 0; about 6 minutes);
* ``envelope``: where the fully physical live body stays up: the six headings, 20 s, for each
  desired speed 0.5-1.5 m/s of a straight joystick walk and of ``stadium_path`` with half
  circles of 1, 0.75, 0.5 and 0 m radius: up of 6, median time down, the body's path against
  its reference's; first, how far the reference's planted feet slide at each speed (the live
  report's ``reference_foot_skate_mm``, straight, 6 s); a picture, ``out/envelope.png``
  (matplotlib; about 5 minutes on 2 CPUs);
* ``live_predictive``: ``playback.predictive`` (the body's gains chosen every 0.25 s by
  simulating 1 s ahead; the run is the chain of committed steps) on the inputs ``STEPPING``
  falls on: the sharp turns both ways and the figure eight mirrored, six headings, 20 s,
  beside ``STEPPING`` alone: when the head first drops below 1 m, how far body and
  reference walked, and what the search cost (about 60 minutes on 2 CPUs);
* ``solved_loop``: the solved PiG and 02_01 walks' gait cycles looped (as
  ``playback_speed.py solved_12``), each solved as shipped and with its foot plants held while
  the foot rises slowly (the solve before the thirtieth session): how often ``STEPPING``'s
  reference rule sees no foot planted, and at heading 0 the body's pace against its
  reference's each 0.5 s until it is down (about 3 minutes);
* ``solved_cycles``: those two looped walks at ``playback_speed.py solved_12``'s twelve
  headings alone, in parallel, with ``--set``'s changes: up of 12, when each fell, and whether
  the body was going backward just before (about 2 minutes on 2 CPUs); ``solved_cycles_template``
  the same walks retargeted onto the template's body;
* ``live_reference``: the live walking inputs with ``STEPPING`` (20 s, headings 0 and 2 rad)
  retargeted from the first frame of other database clips (``LivePlayback(reference_frame=
  ...)``; the default is ``standing_frame``'s): when the head first drops below 1 m;
* ``pushes``: a standing body started moving (forward, sideways, diagonally) with
  ``STEPPING`` and without each of its recovery options: is it up (and still) after 5 s,
  and which foot stepped first;
* ``soles``: the planted soles' pitch of the retargeted Bandai-Namco walks (``track``'s
  ``flat_planted`` levels it) and how high a still foot stands in them when grounded by the
  lowest sole point (``ground_still`` grounds them by the still feet); ``STEPPING`` on Bandai
  walks as retargeted, with levelled soles, and grounded by the still feet too, from several
  starting frames and mirrored: when the head first drops below 1 m, and how far body and
  reference walked by then (one run of a falling body says little).
"""
from __future__ import annotations

import time

import numpy as np

from _common import data_dir, field_change, live_database

from physmocap import quat
from physmocap.demo import make_demo_capture
from physmocap.playback import TrackingSettings, Tracker, track
from physmocap.playback.diagnose import support, support_summary
from physmocap.playback.reference import ground_motion, level_feet, loop_motion
from physmocap.scene import load_body
from physmocap.skeleton import forward_kinematics_frame


# ``--set NAME=VALUE`` of the command line: ``STEPPING``'s gains or ``TrackingSettings`` changed
# for every part that runs ``STEPPING`` (``stepping_settings``)
_CHANGES: dict = {}


def stepping_settings() -> TrackingSettings:
    """``TrackingSettings`` fully physical with ``STEPPING``, as changed by ``--set``
    (``_CHANGES``): a name of a ``BalanceSettings`` field changes ``STEPPING`` (``friction``,
    in both, too), any other a ``TrackingSettings`` field. Raises ``SettingsError`` for a
    value the settings refuse."""
    import dataclasses

    from physmocap.playback.balance import STEPPING, BalanceSettings
    names = {f.name for f in dataclasses.fields(BalanceSettings)}
    gains = {k: v for k, v in _CHANGES.items() if k in names}
    rest = {k: v for k, v in _CHANGES.items() if k not in names}
    return TrackingSettings(balance=True, balance_gains=dataclasses.replace(STEPPING, **gains),
                            **rest)


def first_fall(res) -> str:
    return f"{res.falls[0]['time_s']:.2f} s" if res.falls else "none"


def numerics() -> None:
    body = load_body()
    _, walk = make_demo_capture()
    print("demo walk looped to 20 s, fully physical, no balance feedback: first fall")
    for label, kw in [("default (1/240 s, 10 iterations, friction 0.4, armature 0.03)", {}),
                      ("50 solver iterations", {"solver_iterations": 50}),
                      ("100 solver iterations", {"solver_iterations": 100}),
                      ("1/480 s", {"timestep": 1 / 480}),
                      ("1/960 s, 30 iterations", {"timestep": 1 / 960, "solver_iterations": 30}),
                      ("friction 0.9", {"friction": 0.9}),
                      ("armature 0.005", {"min_inertia": 0.005})]:
        t0 = time.perf_counter()
        res = track(walk, body, "physical", TrackingSettings(**kw), loops=16)
        print(f"  {label:62s} {first_fall(res):>8s}   ({time.perf_counter() - t0:.0f} s wall)")


def one_leg_pose(body, lean: float, lift: float = 0.35):
    """Root ``(3,)`` and ``lrot (J, 4)``: the body rolled by ``lean`` rad about the right ankle
    (right leg vertical, left thigh lifted by ``lift`` rad, knee bent twice that)."""
    sk = body.skeleton
    J = len(sk)
    i = body.index
    X, Y = np.array([1.0, 0, 0]), np.array([0, 1.0, 0])
    lr = quat.identity((J,))
    lr[0] = quat.from_axis_angle(X, lean)
    lr[i("RightUpperLeg")] = quat.from_axis_angle(X, -lean)
    lr[i("LeftUpperLeg")] = quat.mul(quat.from_axis_angle(X, -lean), quat.from_axis_angle(Y, -lift))
    lr[i("LeftLowerLeg")] = quat.from_axis_angle(Y, 2 * lift)
    lr[i("LeftFoot")] = quat.from_axis_angle(Y, -lift)
    a = i("RightFoot")
    x, _ = forward_kinematics_frame(sk, lr, np.zeros(3))
    x0, _ = forward_kinematics_frame(sk, quat.identity((J,)), sk.offsets[0])
    return x0[a] - x[a], lr


def com_offset(body, root, lrot) -> float:
    """m, the centre of mass's offset from the right ankle toward the left (+y)."""
    from physmocap.playback.character import segment_centres
    x, g = forward_kinematics_frame(body.skeleton, lrot, root)
    m = np.asarray(body.mass)
    c = m @ (x + quat.rotate(g, segment_centres(body))) / m.sum()
    return float(c[1] - x[body.index("RightFoot"), 1])


def one_leg_holds(body, offset: float, settings: TrackingSettings, seconds: float = 5.0) -> bool:
    """Does the body stand ``seconds`` on its right foot with its centre of mass ``offset`` m
    toward the left of the ankle line (the left foot never touching down)?"""
    lo, hi = -0.3, 0.6
    for _ in range(50):                      # the lean that puts the centre of mass there
        mid = 0.5 * (lo + hi)
        if com_offset(body, *one_leg_pose(body, mid)) > offset:
            lo = mid
        else:
            hi = mid
    root, lrot = one_leg_pose(body, 0.5 * (lo + hi))
    with Tracker(body, "physical", settings) as tr:
        tr.reset(root, lrot[0], lrot)
        for _ in range(int(seconds * 60)):
            _, _, _, info = tr.step(root, lrot[0], lrot, 1 / 60)
            if info["contacts"][0] or not info["contacts"][1]:
                return False
    return True


def one_leg() -> None:
    body = load_body()
    print("\nstanding 5 s on the right foot (sole half-width 4.5 cm): the largest centre-of-mass "
          "offset from the ankle line that holds")
    for label, s in [("10 solver iterations (default)", TrackingSettings()),
                     ("100 solver iterations", TrackingSettings(solver_iterations=100))]:
        held = [o for o in np.arange(0.0, 0.0451, 0.005) if one_leg_holds(body, o, s)]
        fails = [o for o in np.arange(0.0, 0.0451, 0.005) if o not in held]
        print(f"  {label:32s} holds up to {max(held) * 100 if held else float('nan'):.1f} cm; "
              f"falls at {', '.join(f'{o * 100:.1f}' for o in fails) or '-'} cm")


def prepared(motion, body, as_track: bool = True):
    """``motion`` as ``track`` prepares a fully physical reference (``as_track``: its planted
    soles levelled and grounded by its still feet, ``TrackingSettings.flat_planted``,
    ``ground_still``; the live loop does neither), else as retargeted (feet unrolled,
    grounded by the lowest sole point)."""
    still = TrackingSettings().ground_still if as_track else 0.0
    return ground_motion(level_feet(motion, body, constant=True, flat_planted=as_track), body,
                         still_speed=still)


def bandai_clip(stem: str, body):
    """Bandai-Namco ``ds2_normal_locomotion/{stem}.bvh`` retargeted onto ``body``, 60 fps."""
    from physmocap.io.bvh import read_bvh
    from physmocap.matching.database import resample
    from physmocap.matching.retarget import retarget
    src = read_bvh(data_dir() / f"bvh/bandai-namco/ds2_normal_locomotion/{stem}.bvh")
    return resample(retarget(src, body.skeleton), 60.0)     # Bandai names: HUMANOID_NAME_MAP


def bandai_walk(n: int, body):
    """Bandai-Namco ``dataset-2_walk_normal_{n:03d}`` retargeted onto ``body``, 60 fps."""
    return bandai_clip(f"dataset-2_walk_normal_{n:03d}", body)


def references() -> None:
    from physmocap.io.bvh import read_bvh
    from physmocap.matching.controller import Controller, run_controller
    from physmocap.matching.database import resample
    from physmocap.matching.retarget import retarget

    body = load_body()
    _, walk = make_demo_capture()
    folder = data_dir() / "bvh/bandai-namco/ds2_normal_locomotion"
    src = read_bvh(folder / "dataset-2_walk_normal_001.bvh")
    refs = {"demo walk (120 Hz)": walk,
            "Bandai walk (60 Hz)": resample(retarget(src, body.skeleton), 60.0)}
    db, feats = live_database()
    mm, _ = run_controller(Controller(db, feats, _scene_input("straight_walk")), 10.0)
    refs["motion-matched straight walk"] = retarget(mm, body.skeleton)
    print("\nreference support on the simulated feet (feet unrolled, grounded; + track: planted "
          "soles levelled, grounded by the still feet, as track does)")
    print(f"{'reference':36s} {'single':>6s} {'CoM off med':>11s} {'p90':>6s} {'half w':>6s} "
          f"{'roll max':>8s} {'slide max':>9s} {'at':>7s}")
    for (name, ref), fp in ((r, fp) for r in refs.items() for fp in (False, True)):
        s = support_summary(support(prepared(ref, body, fp), body))
        name = name + (" + track" if fp else "")
        print(f"{name:36s} {s['single_stance_frames'] / ref.fps:5.1f}s "
              f"{s['com_offset_median_m'] * 100:9.1f}cm {s['com_offset_p90_m'] * 100:4.1f}cm "
              f"{s['sole_half_width_m'] * 100:4.1f}cm {s['sole_roll_max_deg']:7.1f}° "
              f"{s['slide_max_m_s']:7.2f}m/s {s['slide_max_frame'] / ref.fps:6.2f}s")


def anatomy() -> None:
    body = load_body()
    _, walk = make_demo_capture()
    # the reference as retargeted (as measured before ``flat_planted`` and ``ground_still``,
    # which move the figures: 3.5 body weights, 6.5 cm up, 0.31 s in the air with the first)
    ref = prepared(loop_motion(walk, 2), body, as_track=False)
    sup = support(ref, body)
    W = float(body.total_mass) * 9.81
    dt = 1.0 / ref.fps
    rows = []
    with Tracker(body, "physical", TrackingSettings()) as tr:
        tr.reset(ref.root_pos[0], ref.lrot[0, 0], ref.lrot[0],
                 next_pose=(ref.root_pos[1], ref.lrot[1, 0], ref.lrot[1]), dt=dt)
        for f in range(1, ref.n_frames):
            root, _, _, info = tr.step(ref.root_pos[f], ref.lrot[f, 0], ref.lrot[f], dt)
            feet, load, _ = tr.char.foot_loads()
            rows.append((f, feet.copy(), load.copy(), root[2] - ref.root_pos[f, 2]))
            if info["fallen"]:
                break
    print("\nanatomy of the first fall (demo walk, fully physical, no feedback)")
    # the first foot the reference has in the air that the simulation puts down
    for f, feet, load, dz in rows:
        swing = ~sup.planted[f] & sup.planted[f, ::-1]
        if f * dt > 0.1 and np.any(feet & swing):
            sd = int(np.argmax(feet & swing))
            plant = f + int(np.argmax(sup.planted[f:, sd]))
            win = [r for r in rows if f <= r[0] < f + int(0.1 / dt)]
            after = [r for r in rows if r[0] > f]
            air = [r for r in after if not r[1].any()]
            up = max(r[3] for r in after[:int(0.3 / dt)])
            print(f"  {'left' if sd == 0 else 'right'} swing foot touches the floor at "
                  f"{f * dt:.3f} s; the reference plants it at {plant * dt:.3f} s "
                  f"({(plant - f) * dt * 1000:.0f} ms later)")
            print(f"  peak ground force in the next 0.1 s: "
                  f"{max(r[2].sum() for r in win) / W:.1f} body weights")
            if air:
                print(f"  then no foot on the floor from {air[0][0] * dt:.3f} s, "
                      f"{len(air) * dt:.2f} s in the air in all; root up to {up * 100:.1f} cm "
                      f"above the reference's")
            break
    fall = next((r[0] for r in rows if r is rows[-1]), None)
    print(f"  fall reported at {fall * dt:.2f} s")


def start_phase() -> None:
    """The demo walk with ``STEPPING``, 20 s, started at other points of its 1.26 s cycle (the
    body placed in that frame's pose with its velocities)."""
    body = load_body()
    _, walk = make_demo_capture()
    head = body.index("Head")
    big = loop_motion(walk, 18)
    print("\ndemo walk, STEPPING, 20 s from other starting frames: when the head first drops "
          "below 1 m")
    for off in (0.0, 0.3, 0.6, 0.9):
        k = int(round(off * walk.fps))
        res = track(big[k:k + int(20 * walk.fps)], body, "physical",
                    stepping_settings())
        low = np.nonzero(res.motion.gpos[:, head, 2] < 1.0)[0]
        walked = float(np.linalg.norm(res.motion.root_pos[-1, :2] - res.motion.root_pos[0, :2]))
        print(f"  from {off:.1f} s: " + (f"down at {low[0] / walk.fps:.2f} s" if len(low)
                                          else "up for 20 s") + f"; walked {walked:.1f} m")


def live_start() -> None:
    """The live walking inputs with ``STEPPING``: physics from the first frame (the reference
    starts from standing and reaches walking speed within a second) against physics started
    once the controller has walked 3 s."""
    from physmocap.matching.controller import Controller
    from physmocap.playback.live import LivePlayback

    body = load_body()
    head = body.index("Head")
    db, feats = live_database()
    s = stepping_settings()
    print("\nlive, STEPPING, 20 s of physics: when the head first drops below 1 m")
    for name in ("straight_walk", "stop_and_go"):
        for skip in (0.0, 3.0):
            ctrl = Controller(db, feats, _scene_input(name))
            for _ in range(int(skip / ctrl.dt)):
                ctrl.step()
            down, start, rstart = None, None, None
            with LivePlayback(ctrl, body, "physical", s) as lp:
                for i in range(int(20.0 / ctrl.dt)):
                    (rr, _), (sr, _), _ = lp.step()
                    if start is None:
                        start, rstart = sr.copy(), rr.copy()
                    ch = lp.tracker.char
                    z = ch.p.getLinkState(ch.body, head - 1, physicsClientId=ch.client)[4][2]
                    if z < 1.0:
                        down = (i + 1) * ctrl.dt
                        break
            walked = float(np.linalg.norm(sr[:2] - start[:2]))
            ref = float(np.linalg.norm(rr[:2] - rstart[:2]))
            print(f"  {name:14s} physics from {skip:.0f} s: "
                  + (f"down at {down:.2f} s" if down else "up for 20 s")
                  + f"; walked {walked:.1f} m (reference {ref:.1f} m)")


def live_paced() -> None:
    """The live walking inputs with ``STEPPING`` from the first frame, the controller waiting
    for the body (``follow``, ``speed_margin``) or not."""
    from physmocap.matching.controller import Controller
    from physmocap.playback.live import LivePlayback

    body = load_body()
    head = body.index("Head")
    db, feats = live_database()
    s = stepping_settings()
    print("\nlive, STEPPING from the first frame, the controller waiting for the body; 20 s: "
          "head below 1 m; walked (displacement); body's centre of mass in the first 2 s: "
          "largest forward and sideways speed (m/s)")
    variants = [("-", {}), ("follow 0.1 m", {"follow": 0.1})] + \
        [(f"speed_margin {m:.1f}", {"speed_margin": m}) for m in (0.3, 0.6, 0.9, 1.0, 1.1)]
    for name in ("straight_walk", "stop_and_go"):
        for label, kw in variants:
            ctrl = Controller(db, feats, _scene_input(name))
            down, first, fwd, side = None, None, 0.0, 0.0
            with LivePlayback(ctrl, body, "physical", s, **kw) as lp:
                bal = lp.tracker.balance
                for i in range(int(20.0 / ctrl.dt)):
                    (rr, _), (sr, _), _ = lp.step()
                    first = (rr.copy(), sr.copy()) if first is None else first
                    if i < int(2.0 / ctrl.dt):
                        _, _, C, V, _, _, _ = bal.state()
                        v = bal.m @ V / bal.M
                        fwd, side = max(fwd, float(v[0])), max(side, abs(float(v[1])))
                    ch = lp.tracker.char
                    z = ch.p.getLinkState(ch.body, head - 1, physicsClientId=ch.client)[4][2]
                    if z < 1.0:
                        down = (i + 1) * ctrl.dt
                        break
            walked = float(np.hypot(*(sr[:2] - first[1][:2])))
            ref = float(np.hypot(*(rr[:2] - first[0][:2])))
            print(f"  {name:14s} {label:17s} " + (f"down at {down:5.2f} s" if down
                                                    else "up for 20 s  ")
                  + f"; walked {walked:4.1f} m (reference {ref:4.1f} m); first 2 s: forward "
                  f"{fwd:.2f}, sideways {side:.2f} m/s")


# the 28 headings of README's fully physical live figures: the six, every 30 deg, ten at random
HEADINGS_28 = ((0.0, 0.7, 2.0, 3.0, 4.0, 5.0) + tuple(np.radians(np.arange(0, 360, 30)))
               + tuple(np.random.default_rng(7).uniform(0, 2 * np.pi, 10)))


def _scene_input(name: str):
    """The shipped input scene (or TOML file) ``name``, loaded."""
    from physmocap.matching.trajectory import load_input
    from physmocap.scene import _resolve
    return load_input(_resolve(name, "inputs", "input"))


def _turned_input(src, yaw: float):
    """The loaded input ``src`` turned by ``yaw`` rad: a joystick's camera and start facing, a
    path's way-points about the origin (``live_headings`` turns the character's start facing
    alike); a recorded head as it is."""
    import dataclasses

    from physmocap.matching.trajectory import Joystick, PathFollower
    if isinstance(src, PathFollower):
        c, s = np.cos(yaw), np.sin(yaw)
        return dataclasses.replace(src, points=np.asarray(src.points)[:, :2]
                                   @ np.array([[c, s], [-s, c]]))
    if isinstance(src, Joystick):
        return dataclasses.replace(src, camera_yaw=yaw, initial_yaw=yaw)
    return src


def _mirrored_input(src):
    """The loaded input ``src`` mirrored across the world's x-z plane (y -> -y): the same task
    turning the other way. A path's way-points; a joystick's sticks (x -> -x; its camera and
    start facing are ``_turned_input``'s); a recorded head's positions, orientations (``M R
    M``, M = diag(1, -1, 1): quaternion (-x, y, -z, w)) and forward axis."""
    import dataclasses

    from physmocap.matching.trajectory import HeadTrajectory, Joystick, PathFollower
    m = np.array([1.0, -1.0, 1.0])
    if isinstance(src, PathFollower):
        return dataclasses.replace(src, points=np.asarray(src.points)[:, :2] * m[:2])
    if isinstance(src, Joystick):
        x = np.array([-1.0, 1.0])                   # a stick's x is to the right
        return dataclasses.replace(src, stick=np.asarray(src.stick) * x,
                                   right=None if src.right is None else np.asarray(src.right) * x)
    if isinstance(src, HeadTrajectory):
        return dataclasses.replace(src, pos=np.asarray(src.pos) * m,
                                   rot=np.asarray(src.rot) * np.array([-1.0, 1.0, -1.0, 1.0]),
                                   forward=tuple(np.asarray(src.forward, float) * m))
    raise TypeError(f"_mirrored_input: not an input source: {type(src).__name__}")


def _heading_run(db, feats, body, settings, src, yaw: float, seconds: float = 20.0):
    """One ``live_headings`` run: the input ``src`` turned by ``yaw`` rad, fully physical
    with ``settings``, until ``seconds`` s or the head first drops below 1 m. Returns ``(down
    s or None, first (reference root, body root), last (the same), the body's root speeds
    (m/s) over 5-6 s and 11-12 s, path lengths (body, reference) m)``."""
    from physmocap.matching.controller import Controller
    from physmocap.playback.live import LivePlayback

    head = body.index("Head")
    ctrl = Controller(db, feats, _turned_input(src, yaw), start_yaw=yaw)
    down, first, late = None, None, ([], [])
    prev, paths = None, np.zeros(2)
    with LivePlayback(ctrl, body, "physical", settings) as lp:
        ch = lp.tracker.char
        for i in range(int(seconds / ctrl.dt)):
            (rr, _), (sr, _), _ = lp.step()
            first = (rr.copy(), sr.copy()) if first is None else first
            if prev is not None:
                paths += [np.hypot(*(sr[:2] - prev[1][:2])), np.hypot(*(rr[:2] - prev[0][:2]))]
            prev = (rr.copy(), sr.copy())
            t = (i + 1) * ctrl.dt
            if 5.0 < t < 6.0 or 11.0 < t < 12.0:
                v = ch.base_state()[2]
                late[int(t > 8.0)].append(float(np.hypot(v[0], v[1])))
            z = ch.p.getLinkState(ch.body, head - 1, physicsClientId=ch.client)[4][2]
            if z < 1.0:
                down = (i + 1) * ctrl.dt
                break
    return down, first, (rr, sr), late, paths


def live_headings(yaws=(0.0, 0.7, 2.0, 3.0, 4.0, 5.0),
                  names=("straight_walk", "stop_and_go"), database=None,
                  mirror: bool = False) -> None:
    """``STEPPING`` on the live inputs ``names`` turned to six headings (``yaws`` rad), on the
    live database with its standing clip (``live_database(stand=True)``): when the
    head first drops below 1 m (20 s: never), how far body and reference walked, and (stop and
    go) the body's root speed at the end of each 3 s stand (5-6 s, 11-12 s; m/s; a body at
    rest: < 0.1). A recorded head (``head_circle``) is played once, not turned, also for 20 s:
    past the recording's end its reference stops. ``database``: ``(db, features)`` instead.
    ``mirror``: each input mirrored (``_mirrored_input``: y -> -y, the same task turning the
    other way) and turned to the mirrored headings (``-yaws``)."""
    from physmocap.matching.trajectory import HeadTrajectory

    body = load_body()
    # by default with the standing clip: the 20 clips never stand
    db, feats = live_database(stand=True) if database is None else database
    s = stepping_settings()
    if mirror:
        yaws = tuple(-y for y in yaws)
    print("\nlive, STEPPING from the first frame, 20 s, the task "
          + ("mirrored (y -> -y) and " if mirror else "") + "turned to headings "
          + ", ".join(f"{y:.1f}" for y in yaws)
          + " rad: head below 1 m at (s); walked / reference (m); stop and go: speed at the "
          "end of each stand (m/s)")
    for name in names:
        downs, walks, stands = [], [], []
        # a name of a shipped input, or ``(label, input)``
        name, src = (name, _scene_input(name)) if isinstance(name, str) else name
        src = _mirrored_input(src) if mirror else src
        head_input = isinstance(src, HeadTrajectory)
        for yaw in ((0.0,) if head_input else yaws):       # a recorded head is not turned
            down, first, (rr, sr), late, _ = _heading_run(db, feats, body, s, src, yaw)
            downs.append("never" if down is None else f"{down:.2f}")
            walks.append(f"{np.hypot(*(sr[:2] - first[1][:2])):.1f}/"
                         f"{np.hypot(*(rr[:2] - first[0][:2])):.1f}")
            stands.append("/".join(f"{np.mean(x):.1f}" for x in late if len(x) > 50) or "-")
        print(f"  {name:14s} up 20 s in {downs.count('never')} of {len(downs)}; down: "
              f"{' '.join(f'{d:>5s}' for d in downs)}; walked: " + " ".join(walks))
        if head_input:
            # a recording ends; after it the head stands still, and so does the reference
            print(f"  {'':14s} the recording ends at {float(src.times[-1]):.1f} s (then the "
                  "head, and the reference, stop)")
        if name == "stop_and_go":
            print(f"  {'':14s} speed at the end of the stands: " + " ".join(stands))


def stadium_path(radius: float, length: float = 5.0, speed: float = 1.1, arc: int = 8):
    """The sharp turns' task with its two 180° reversals rounded: a closed ``PathFollower``
    along two ``length`` m straights ``2 radius`` m apart (from (0, 0) along +x, back along
    y = 2 radius), joined by half circles of ``radius`` m, each ``arc`` segments; ``radius``
    0 is the sharp turns' own path (out along the x axis and back on it)."""
    from physmocap.matching.trajectory import PathFollower

    if radius == 0:
        return PathFollower(np.array([[0.0, 0.0], [length, 0.0]]), speed, closed=True)
    a = np.linspace(-np.pi / 2, np.pi / 2, arc + 1)[1:-1]
    far = np.stack([length + radius * np.cos(a), radius + radius * np.sin(a)], axis=1)
    near = np.stack([-radius * np.cos(a), radius - radius * np.sin(a)], axis=1)
    pts = np.concatenate([[[0.0, 0.0], [length, 0.0]], far,
                          [[length, 2 * radius], [0.0, 2 * radius]], near])
    return PathFollower(pts, speed, closed=True)


# the live inputs ``STEPPING`` falls on (``live_turns``, ``live_mirrored``): (name, mirrored)
PREDICTIVE_TASKS = (("sharp_turns", False), ("sharp_turns", True), ("figure_eight", True))
# the straight walks ``STEPPING`` falls on at every heading (``envelope``: the stick full forward
# at 0.5 and 1.5 m/s, the database's walks moving at 1.06-1.12 m/s)
PREDICTIVE_ENVELOPE_TASKS = (("straight@0.5", False), ("straight@1.5", False))
# the sharp turns' runs that ran out of the default budget (``live_predictive`` with ``branch``
# 3; the mirrored task at 0 is the shipped one), for budget 300
PREDICTIVE_TURNS_300 = (("sharp_turns", False, (0.0,)), ("sharp_turns", True, (0.7, 2.0, 5.0)))
# the live inputs ``STEPPING`` walks (``live_headings``, ``live_turns``, ``live_mirrored``), and
# the run: does choosing gains by looking ahead keep what the one gain set already does?
PREDICTIVE_KEPT_TASKS = (("straight_walk", False), ("stop_and_go", False),
                         ("figure_eight", False), ("head_circle", False), ("head_circle", True),
                         ("run", False))


def _task_input(name: str):
    """A ``live_predictive`` task's input: ``straight@V``, ``envelope``'s straight joystick walk
    at V m/s; else the shipped input scene ``name``."""
    if name.startswith("straight@"):
        return _envelope_input(float(name.split("@")[1]), np.inf)
    return _scene_input(name)


def _predictive_cell(args):
    """One ``live_predictive`` run: ``(name, mirror, yaw, STEPPING's down s or None, the
    predictive run's down s or None, its falls, (body, reference) path m, plan report,
    wall s)``."""
    from physmocap.matching.controller import Controller
    from physmocap.playback.predictive import PredictSettings, run_predictive

    name, mirror, yaw, budget = args
    body = load_body()
    db, feats = live_database(stand=True)
    s = stepping_settings()
    src = _task_input(name)
    if mirror:
        src, yaw = _mirrored_input(src), -yaw
    plain = _heading_run(db, feats, body, s, src, yaw)[0]
    t0 = time.perf_counter()
    live, plan = run_predictive(Controller(db, feats, _turned_input(src, yaw), start_yaw=yaw),
                                20.0, body, s, PredictSettings(budget=budget))
    m = live.result.motion
    # the recorded motion's head joint (``_heading_run`` and the search watch PyBullet's head
    # link frame: a run can differ by a frame, RESULTS.md)
    low = np.flatnonzero(m.gpos[:, body.index("Head"), 2] < 1.0)
    down = None if low.size == 0 else (low[0] + 1) / m.fps
    w = live.result.walked()
    return (name, mirror, yaw, plain, down, len(live.result.falls), (w["body"], w["reference"]),
            plan.report(), time.perf_counter() - t0)


def _predictive_jobs(tasks, yaws, budget: float) -> list:
    """``live_predictive``'s runs, ``(name, mirrored, yaw rad, budget)`` per task and heading.
    A task is ``(name, mirrored)``, at ``yaws``, or ``(name, mirrored, its own yaws)``; a
    recorded head is played as it was, not turned (``live_headings``): one run."""
    from physmocap.matching.trajectory import HeadTrajectory
    jobs = []
    for name, mirror, *own in tasks:
        head = isinstance(_task_input(name), HeadTrajectory)
        jobs += [(name, mirror, yaw, budget)
                 for yaw in ((0.0,) if head else own[0] if own else yaws)]
    return jobs


def live_predictive(tasks=PREDICTIVE_TASKS, yaws=(0.0, 0.7, 2.0, 3.0, 4.0, 5.0),
                    workers: int | None = None, budget: float = 100.0) -> None:
    """``playback.predictive`` (gain sets chosen by simulating ahead) on the live inputs
    ``STEPPING`` falls on (``tasks``: the sharp turns both ways, the figure eight mirrored),
    at ``live_headings``' six headings (``yaws`` rad, or a task's own: ``_predictive_jobs``; a
    recorded head once, as recorded), 20 s: the predictive run's first head below 1 m beside
    ``STEPPING``'s own, how far the body walked (its path against its reference's), and what
    the search cost (frames simulated per frame played, dead ends gone back from, wall time),
    with ``budget`` frames simulated per frame played (the default's). 2.5-8.5 minutes per
    run: about 60 minutes on 2 CPUs."""
    import os
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context

    jobs = _predictive_jobs(tasks, yaws, budget)
    n = workers or max(1, min(4, os.cpu_count() or 1))
    print(f"\nlive, predictive gain sets (playback/predictive.py, PredictSettings(budget="
          f"{budget:g})) against STEPPING, 20 s, headings "
          f"{', '.join(f'{y:.1f}' for y in sorted({j[2] for j in jobs}))} rad (mirrored: "
          f"negated); {len(jobs)} runs on {n} processes")
    ended, t0 = {}, time.perf_counter()           # job index -> its row
    with ProcessPoolExecutor(n, mp_context=get_context("fork")) as pool:
        futures = {pool.submit(_predictive_cell, job): k for k, job in enumerate(jobs)}
        for future in as_completed(futures):
            r = ended[futures[future]] = future.result()
            # each as it ends (a stopped measurement keeps what it finished)
            pr = r[7]
            print(f"  run {len(ended)}/{len(jobs)} ({time.perf_counter() - t0:.0f} s): {r[0]}"
                  f"{' mirrored' if r[1] else ''} at {r[2]:.1f} rad: predictive "
                  + ("up 20 s" if r[4] is None else f"down at {r[4]:.2f} s")
                  + f", walked {r[6][0]:.1f}/{r[6][1]:.1f} m, "
                  f"{pr['simulated_per_played']:.0f} simulated per played, "
                  f"{pr['backtracks']} dead ends, "
                  + ("complete" if pr["complete"] else "incomplete"), flush=True)
    rows = [ended[k] for k in sorted(ended)]                                 # in job order
    for name, mirror, *_ in tasks:
        rs = [r for r in rows if r[0] == name and r[1] == mirror]
        fmt = (lambda d: "never" if d is None else f"{d:.2f}")
        label = name + (" mirrored" if mirror else "")
        print(f"  {label:22s} STEPPING up 20 s in {sum(r[3] is None for r in rs)} of "
              f"{len(rs)} (down: {' '.join(fmt(r[3]) for r in rs)})")
        print(f"  {'':22s} predictive up 20 s in {sum(r[4] is None for r in rs)} of {len(rs)} "
              f"(down: {' '.join(fmt(r[4]) for r in rs)}); falls "
              f"{' '.join(str(r[5]) for r in rs)}")
        print(f"  {'':22s} walked (body/reference m): "
              + " ".join(f"{r[6][0]:.1f}/{r[6][1]:.1f}" for r in rs))
        print(f"  {'':22s} simulated per played frame "
              + " ".join(f"{r[7]['simulated_per_played']:.0f}" for r in rs)
              + "; dead ends " + " ".join(str(r[7]["backtracks"]) for r in rs)
              + "; complete " + " ".join("y" if r[7]["complete"] else "n" for r in rs)
              + "; wall s " + " ".join(f"{r[8]:.0f}" for r in rs))


ENVELOPE_SPEEDS = (0.5, 0.7, 0.9, 1.1, 1.3, 1.5)          # m/s, the input's desired speed
ENVELOPE_RADII = (np.inf, 1.0, 0.75, 0.5, 0.0)             # m; inf: a straight walk


def _envelope_input(speed: float, radius: float):
    """The envelope's task at ``speed`` m/s: a straight joystick walk (``radius`` inf; the
    stick full forward at ``speed``) or ``stadium_path(radius)``."""
    from physmocap.matching.trajectory import Joystick
    if np.isinf(radius):
        return Joystick.from_keys([(0.0, 0.0, 1.0, False)], walk_speeds=(speed, speed, speed))
    return stadium_path(radius, speed=speed)


def _envelope_cell(args):
    """One cell of ``envelope``: ``(speed, radius, downs (6,) s or None, body / reference
    path lengths (6, 2) m)``."""
    speed, radius = args
    body = load_body()
    s = stepping_settings()
    src = _envelope_input(speed, radius)
    downs, paths = [], []
    for yaw in (0.0, 0.7, 2.0, 3.0, 4.0, 5.0):
        down, *_, p = _heading_run(*_ENVELOPE_DB, body, s, src, yaw)
        downs.append(down)
        paths.append(p)
    return speed, radius, downs, np.array(paths)


def _reference_slide(db, feats, speed: float, seconds: float = 6.0) -> tuple[float, float]:
    """mm per frame, the live report's ``reference_foot_skate_mm`` of the straight envelope
    walk at ``speed`` m/s (assist mode, ``seconds`` s): how far the reference's toes travel
    while its matched frames label them in contact; and the database clips' own (scaled to
    the body)."""
    from physmocap.matching.controller import Controller
    from physmocap.playback.live import run_live

    ctrl = Controller(db, feats, _envelope_input(speed, np.inf))
    rep = run_live(ctrl, seconds, mode="assist").report()
    return rep["reference_foot_skate_mm"], rep["reference_foot_skate_mm_database"]


_ENVELOPE_DB = None


def envelope(speeds=ENVELOPE_SPEEDS, radii=ENVELOPE_RADII, workers: int | None = None) -> None:
    """Where the fully physical live body stays up: ``live_headings``' six headings, 20 s each,
    ``STEPPING`` on the live database with its standing clip, for each desired speed (m/s) of
    a straight joystick walk (radius inf) and of the sharp turns' task with its reversals
    rounded into half circles of each radius (``stadium_path``; 0: the sharp turns' own path).
    Prints, per cell, how many of six stay up, the median time down, and the path the body
    walked against its reference's (median m); a picture, ``out/envelope.png`` (matplotlib).
    The database's walks move at 1.06-1.12 m/s and its turning walks at 0.6-0.9 m/s; first,
    how far the reference's planted feet slide on the straight walk at each speed
    (``_reference_slide``: the controller's root pulled along at another speed than its
    clip's drags them). Cells
    run in ``workers`` processes (default: the CPUs, at most 4)."""
    import os
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    global _ENVELOPE_DB
    _ENVELOPE_DB = live_database(stand=True)       # shared with the forked workers
    slides = [_reference_slide(*_ENVELOPE_DB, v) for v in speeds]
    print("\nenvelope: the reference's feet in contact slide (straight, 6 s, the live report's "
          "reference_foot_skate_mm, mm/frame): " + ", ".join(
              f"{a:.1f} at {v:g} m/s" for v, (a, _) in zip(speeds, slides))
          + f"; the database's clips {slides[0][1]:.2f}")
    cells = [(v, r) for v in speeds for r in radii]
    n = workers or max(1, min(4, os.cpu_count() or 1))
    print("envelope: STEPPING, live database, six headings, 20 s; per desired speed (m/s) "
          "and turn radius (m; inf: straight, 0: the sharp turns' reversal): up of 6 | "
          "median down (s) | body / reference path (median m)")
    out = {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(n, mp_context=get_context("fork")) as pool:
        for speed, radius, downs, paths in pool.map(_envelope_cell, cells):
            up = sum(d is None for d in downs)
            fell = [d for d in downs if d is not None]
            out[speed, radius] = up, float(np.median(paths[:, 0]) / np.median(paths[:, 1]))
            print(f"  {speed:4.2f} m/s  r {radius:>4g}: up {up} of 6 | down "
                  f"{np.median(fell) if fell else float('nan'):5.2f} | "
                  f"{np.median(paths[:, 0]):5.1f} / {np.median(paths[:, 1]):5.1f} m  "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    pic = _plot_envelope(out, speeds, radii)
    if pic:
        print(f"  picture: {pic}")


def _plot_envelope(cells: dict, speeds, radii) -> str | None:
    """``out/envelope.png``: a coloured grid of ``cells[speed, radius] = (up of 6, body's path
    / reference's)``."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.array([[cells[v, r][0] for r in radii] for v in speeds], float)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    im = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=6, origin="lower", aspect="auto")
    for i in range(len(speeds)):
        for j in range(len(radii)):
            ax.text(j, i, f"{int(grid[i, j])}\n({cells[speeds[i], radii[j]][1]:.0%})",
                    ha="center", va="center", fontsize=9)
    ax.set_xticks(range(len(radii)), ["straight" if np.isinf(r) else
                                      ("sharp (0)" if r == 0 else f"{r:g}") for r in radii])
    ax.set_yticks(range(len(speeds)), [f"{v:g}" for v in speeds])
    ax.set(xlabel="turn radius (m)", ylabel="desired speed (m/s)",
           title="fully physical live body: up 20 s in k of 6 headings\n"
                 "(the body's path, of its reference's)")
    fig.colorbar(im, ax=ax, label="headings up 20 s")
    return _save_figure(fig, "envelope")


def live_stands(names=("stop_and_go", "head_circle"), seconds: float = 20.0) -> None:
    """What the live reference does when its input stands (the motion-matching controller alone,
    kinematic, heading 0, ``seconds`` s): how many database frames stand (root slower than
    0.15 m/s); over the frames whose desired velocity has been zero for at least 1 s, the
    reference's median hips speed, its root's distance from the simulation object, the
    database clips and frames it plays, and how fast its feet labelled in contact slide; on the
    20 clips alone, then with the standing clip (``live_database(stand=True)``, as
    ``live_headings``)."""
    for stand in (False, True):
        db, feats = live_database(stand)
        v = np.linalg.norm(np.asarray(db.lvel)[:, 0, :2], axis=-1)
        print(f"\nlive database{' (20 clips + standing clip)' if stand else ', 20 clips alone'}: "
              f"{int((v < 0.15).sum())} of {len(v)} frames with the root slower than 0.15 m/s")
        _stands(db, feats, names, seconds)


def _stands(db, feats, names, seconds: float) -> None:
    """``live_stands`` on one database."""
    from physmocap.matching.controller import Controller, run_controller
    from physmocap.skeleton import forward_kinematics

    for name in names:
        ctrl = Controller(db, feats, _turned_input(_scene_input(name), 0.0))
        motion, rec = run_controller(ctrl, seconds)
        x, _ = forward_kinematics(motion.skeleton, motion.lrot, motion.root_pos)
        fps = motion.fps
        still = np.linalg.norm(np.asarray(rec.desired_vel)[:, :2], axis=-1) < 1e-9
        # frames standing for at least 1 s (a stop needs that long to settle): each frame's
        # count of still frames up to it, from the last moving one
        idx = np.arange(len(still))
        run = idx - np.maximum.accumulate(np.where(still, -1, idx))
        st = np.flatnonzero(run[1:] >= fps) + 1
        if not len(st):
            print(f"  {name:12s} never stands 1 s")
            continue
        hips = np.linalg.norm(np.diff(x[:, 0, :2], axis=0), axis=-1) * fps
        dist = np.linalg.norm(np.asarray(rec.root_pos)[:, :2] - np.asarray(rec.sim_pos)[:, :2],
                              axis=-1)
        feet = [motion.skeleton.index(str(n)) for n in db.contact_joints]
        fv = np.linalg.norm(np.diff(x[:, feet, :2], axis=0), axis=-1) * fps     # (F-1, 2)
        con = np.asarray(rec.contacts)[1:]
        frames = np.asarray(rec.frame)[st]
        clips = sorted({db.clip_names[db.clip_index(int(f))] for f in frames})
        print(f"  {name:12s} {len(st) / fps:.1f} s standing: hips {np.median(hips[st - 1]):.2f} "
              f"m/s median ({np.percentile(hips[st - 1], 90):.2f} 90th percentile), root "
              f"{np.median(dist[st]):.2f} m from the simulation object, feet in contact "
              f"sliding {np.median(fv[st - 1][con[st - 1]]):.2f} m/s median; frames "
              f"{frames.min()}-{frames.max()} of {', '.join(clips)}")


def _turn_rate(yaw: np.ndarray, fps: float) -> float:
    """deg/s: the fastest turn of a heading ``yaw (F,)`` (rad, unwrapped) over 0.5 s (the hips'
    heading, not the stride's sway)."""
    k = int(0.5 * fps)
    return float(np.degrees(np.abs(yaw[k:] - yaw[:-k])).max() / 0.5)


def _unplanted(body, root, lrot, fps: float) -> np.ndarray:
    """``(F-1,)`` bool: frames of a reference (``root (F, 3)``, ``lrot (F, J, 4)``) in which
    neither foot counts as planted by ``STEPPING``'s rule (lowest sole point below
    ``contact_height``, ankle slower than ``plant_speed``; as ``--set`` changed them)."""
    from physmocap.playback.character import foot_joints, leg_chains
    from physmocap.playback.reference import sole_points
    from physmocap.skeleton import forward_kinematics

    joints, pts = sole_points(body)
    side = np.array([0 if j in foot_joints(body)[0] else 1 for j in joints])
    x, g = forward_kinematics(body.skeleton, lrot, root)
    z = (x[:, joints] + quat.rotate(g[:, joints], pts))[..., 2]
    low = np.stack([z[:, side == k].min(axis=1) for k in (0, 1)], axis=1)
    ank = x[:, [c[2] for c in leg_chains(body)], :2]
    speed = np.linalg.norm(np.diff(ank, axis=0), axis=-1) * fps
    g = stepping_settings().balance_gains
    return ~((low[1:] < g.contact_height) & (speed < g.plant_speed)).any(axis=1)


# the frames (60 fps) of the live sharp turns' first 180-degree turn, 4.3-6.5 s (heading 2 rad)
_FIRST_TURN = slice(int(4.3 * 60), int(6.5 * 60))


def _live_sharp_turns(body, database, yaw: float = 2.0, seconds: float = 12.0):
    """The live sharp turns' motion-matched reference as the live loop prepares it (heading
    ``yaw`` rad, ``database`` = ``(db, features)``), played fully physical with ``STEPPING``
    (the controller does not wait for the body, so its reference is the same with the body up
    or down): ``(unplanted (F-1,) bool, ref_yaw (F,) rad, body_yaw (F,) rad, fall s or None)``,
    the hips' headings unwrapped."""
    from physmocap.matching.controller import Controller
    from physmocap.matching.trajectory import yaw_of
    from physmocap.playback.live import LivePlayback

    head = body.index("Head")
    s = stepping_settings()
    src = _scene_input("sharp_turns")
    poses, sim, fall = [], [], None
    with LivePlayback(Controller(*database, _turned_input(src, yaw), start_yaw=yaw), body,
                      "physical", s) as lp:
        ch = lp.tracker.char
        for i in range(int(seconds * 60)):
            r, (_, lr), _ = lp.step()
            poses.append(r)
            sim.append(lr[0])
            z = ch.p.getLinkState(ch.body, head - 1, physicsClientId=ch.client)[4][2]
            fall = (i + 1) / 60 if (fall is None and z < 1.0) else fall
    live = _unplanted(body, np.array([p[0] for p in poses]), np.array([p[1] for p in poses]),
                      60.0)
    return (live, np.unwrap(yaw_of(np.array([p[1][0] for p in poses]))),
            np.unwrap(yaw_of(np.array(sim))), fall)


def turn_clips() -> None:
    from physmocap.matching.trajectory import yaw_of

    body = load_body()
    head = body.index("Head")
    s = stepping_settings()

    runs = {}

    def down(ref, t0: float = 0.0) -> str:
        res = track(ref, body, "physical", s)
        runs[t0] = res
        low = np.nonzero(res.motion.gpos[:, head, 2] < 1.0)[0]
        return "up" if not len(low) else f"down at {t0 + low[0] / res.motion.fps:.2f} s"

    print("\nSTEPPING on the captured turning walks (Bandai-Namco walk-turn, from 0.5 s in): "
          "turn (deg), fastest turn over 0.5 s (deg/s), up to the end or head below 1 m at (s "
          "from 0.5 s in)")
    ups = 0
    for kind in ("left", "right"):
        cells = []
        for n in range(1, 13):
            ref = bandai_clip(f"dataset-2_walk-turn-{kind}_normal_{n:03d}", body)[30:]
            y = np.unwrap(yaw_of(ref.lrot[:, 0]))                  # from 0.5 s in
            d = down(ref)
            ups += d == "up"
            cells.append(f"{n:03d} {np.degrees(y[-1] - y[0]):+4.0f}° "
                         f"{_turn_rate(y, ref.fps):3.0f}°/s {d}")
        print(f"  {kind:5s}: " + "; ".join(cells), flush=True)
    print(f"  up to the end in {ups} of 24")
    pivot = bandai_clip("dataset-2_walk-turn-right_normal_004", body)
    cells = [f"from {t:.1f} s: {down(pivot[int(t * pivot.fps):], t)}"
             for t in (2.0, 3.0, 4.0, 4.5, 5.0)]
    print(f"  the captured U-turn (walk-turn-right 004, {pivot.n_frames / pivot.fps:.1f} s, "
          "the hips turn about 190° from 5.2 to 6.5 s, up to 260°/s over 0.5 s; times in the "
          "clip): " + "; ".join(cells), flush=True)
    # the references' feet: the capture as ``track`` prepares it against the live sharp turns'
    # motion-matched reference as the live loop prepares it (heading 2 rad; played fully
    # physical for the picture: the controller does not wait for the body, so its reference
    # is the same with the body up or down)
    ref = prepared(pivot, body)
    cap = _unplanted(body, ref.root_pos, ref.lrot, ref.fps)
    live, y, sim, fall = _live_sharp_turns(body, live_database())
    rate = _turn_rate(y, 60.0)
    print(f"  frames with no foot planted (STEPPING's rule): the captured U-turn "
          f"{100 * cap.mean():.1f} % (from 4.8 to 7.0 s {100 * cap[int(4.8 * 60):].mean():.1f} %);"
          f" the live sharp turns' reference (12 s, heading 2 rad; the hips turn at up to "
          f"{rate:.0f}°/s over 0.5 s) {100 * live.mean():.1f} %, in its first turn (4.3-6.5 s) "
          f"{100 * live[_FIRST_TURN].mean():.1f} %", flush=True)
    path = _plot_turns(runs[3.0], 3.0, cap[int(3.0 * pivot.fps):], y, sim, live, fall)
    if path:
        print(f"  picture: {path} (the hips' heading, reference and body, and the frames with "
              "no foot planted)")


def _save_figure(fig, name: str) -> str:
    """Lay out ``fig``, write it to ``out/NAME.png`` (atomically), close it; the path."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    from physmocap.io.atomic import atomic_path
    fig.tight_layout()
    path = Path(f"out/{name}.png")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=80, format="png")
    plt.close(fig)
    return str(path)


def _plot_turns(res, t0: float, cap, ref_yaw, sim_yaw, live, fall) -> str | None:
    """``out/turn_clips.png`` (matplotlib, if installed): the hips' heading of reference and
    body over time, above for the captured U-turn tracked from ``t0`` s (``res``), below for
    the live sharp turns (``ref_yaw``, ``sim_yaw`` ``(F,)`` rad, fully physical; ``fall`` s
    or ``None``), the frames with no foot planted (``cap``, ``live`` ``(F-1,)`` bool) shaded."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from physmocap.matching.trajectory import yaw_of
    fig, axes = plt.subplots(2, 1, figsize=(10, 6))
    rows = ((np.unwrap(yaw_of(res.reference.lrot[:, 0])), np.unwrap(yaw_of(res.motion.lrot[:, 0])),
             cap, t0, res.motion.fps, None,
             "captured U-turn (Bandai walk-turn-right 004), tracked from 3.0 s in"),
            (ref_yaw, sim_yaw, live, 0.0, 60.0, fall,
             "live sharp turns (motion-matched reference, heading 2 rad)"))
    for ax, (ry, sy, none, start, fps, down, title) in zip(axes, rows):
        t = start + np.arange(len(ry)) / fps
        k = len(t) if down is None else int(round((down - start) * fps))
        ax.plot(t, np.degrees(ry - ry[0]), label="reference hips")
        ax.plot(t[:k], np.degrees(sy[:k] - ry[0]), label="body hips")
        lo, hi = ax.get_ylim()
        ax.fill_between(t[1:], lo, hi, where=none, color="tab:red", alpha=0.2, lw=0,
                        label="reference: no foot planted")
        if down is not None:
            ax.axvline(down, color="k", ls="--", lw=1, label=f"head below 1 m ({down:.2f} s)")
        ax.set_ylim(lo, hi)
        ax.set(title=title, xlabel="s", ylabel="heading (deg, from the first frame)")
        ax.legend(fontsize=8, loc="best")
        ax.grid(alpha=0.3)
    return _save_figure(fig, "turn_clips")


def live_reference() -> None:
    """``STEPPING`` on the live walking inputs retargeted from other clips' first frames."""
    import dataclasses

    from physmocap.matching.controller import Controller
    from physmocap.playback.live import LivePlayback, standing_frame

    body = load_body()
    head = body.index("Head")
    db, feats = live_database()
    s = stepping_settings()
    starts = [int(k) for k in db.range_starts]
    print("\nlive, retargeted from a clip's first frame: STEPPING head below 1 m at (s; 20 s, "
          f"headings 0 / 2 rad); * the default (standing_frame: {standing_frame(db)})")
    for c in (0, 6, 12, 15):
        row = []
        for name in ("straight_walk", "stop_and_go"):
            downs = []
            for yaw in (0.0, 2.0):
                src = dataclasses.replace(_scene_input(name),
                                          camera_yaw=yaw, initial_yaw=yaw)
                ctrl = Controller(db, feats, src, start_yaw=yaw)
                down = None
                with LivePlayback(ctrl, body, "physical", s, reference_frame=starts[c]) as lp:
                    ch = lp.tracker.char
                    for i in range(int(20.0 / ctrl.dt)):
                        lp.step()
                        z = ch.p.getLinkState(ch.body, head - 1, physicsClientId=ch.client)[4][2]
                        if z < 1.0:
                            down = (i + 1) * ctrl.dt
                            break
                downs.append("never" if down is None else f"{down:.1f}")
            row.append(f"{name} {'/'.join(downs)}")
        star = "*" if starts[c] == standing_frame(db) else " "
        print(f"  {star}{db.clip_names[c]:38s} " + " | ".join(row), flush=True)


def pushes() -> None:
    """A standing reference, the body started at a velocity (a reference that stopped dead
    under a moving body), ``STEPPING`` and without each of its recovery options: up after 5
    s? (its root's speed then, m/s; F: fell), and the foot of the first recovery step."""
    import dataclasses

    base = stepping_settings()
    body = load_body()
    J = len(body)
    root, lrot = np.array(body.skeleton.offsets[0], float), quat.identity((J,))
    variants = [("STEPPING", {}), ("no recovery steps", {"recover_dist": 0.0}),
                ("no hold_feet", {"hold_feet": 0.0}), ("no recover_choose",
                                                         {"recover_choose": False}),
                ("recover_wait 0.15", {"recover_wait": 0.15}),
                ("recover_blend None", {"recover_blend": None}),
                ("no recover_hold", {"recover_hold": False})]
    print("\nstanding reference, body started moving (m/s, x forward, y left), 5 s: its speed "
          "then (F: fell) and the first recovery step's foot")
    print(f"  {'velocity':>11s}  " + " ".join(f"{label:>19s}" for label, _ in variants))
    for v in ((0.6, 0.0), (0.8, 0.0), (0.0, 0.4), (0.0, 0.6), (0.0, -0.6), (0.4, 0.4)):
        cells = []
        for _, kw in variants:
            s = dataclasses.replace(base, balance_gains=dataclasses.replace(
                base.balance_gains, **kw))
            first = None
            with Tracker(body, "physical", s) as tr:
                tr.reset(root, lrot[0], lrot, dt=1 / 60,
                         next_pose=(root + np.array([v[0], v[1], 0.0]) / 60, lrot[0], lrot))
                for _ in range(300):
                    tr.step(root, lrot[0], lrot, 1 / 60)
                    if first is None and tr.balance._rec is not None:
                        first = "LR"[tr.balance._rec]
                vel = tr.char.base_state()[2]
                cells.append(("F" if tr.falls else f"{np.hypot(vel[0], vel[1]):.2f}")
                             + f" ({first or '-'})")
        print(f"  {v[0]:+5.1f},{v[1]:+5.1f}  " + " ".join(f"{c:>19s}" for c in cells))


# the walking captures of ``solve_real.py`` (capture, its static trial or None), solved and looped
SOLVED_WALKS = (("pig/PiG_Motion-FlatFoot-Full", "pig/PiG_Calibration-FlatFoot-Full"),
                ("cmu/02_01", None))


def _no_foot_planted(ref, body, gains) -> float:
    """%, frames of the prepared reference ``ref`` in which ``STEPPING``'s reference rule (a
    foot's lowest sole point under ``contact_height``, its ankle slower than ``plant_speed``;
    ``gains`` a ``BalanceSettings``) sees no foot planted; its ``contact_fallback`` left out."""
    from physmocap._arrays import step_speed
    from physmocap.playback.character import leg_chains
    from physmocap.playback.reference import sole_points, sole_sides
    joints, pts = sole_points(body)
    z = (ref.gpos[:, joints] + quat.rotate(ref.grot[:, joints], pts))[..., 2]
    low = np.stack([z[:, side].min(axis=1) for side in sole_sides(body)], axis=1)
    ank = ref.gpos[:, [c[2] for c in leg_chains(body)], :2]
    sp = np.stack([step_speed(np.diff(ank[:, k], axis=0), ref.fps) for k in (0, 1)], axis=1)
    on = (low < gains.contact_height) & (sp < gains.plant_speed)
    return 100.0 * float((~on.any(axis=1)).mean())


def solved_loop() -> None:
    """Why the solved PiG walk's looped gait cycle falls with ``STEPPING`` (up 20 s in 1 of 12
    headings, ``playback_speed.py solved_12``) while 02_01's stays up: each walk solved as
    shipped and with its foot plants held while the foot rises slowly (``detect_plants``'
    ``move_off`` 1 km: the solve before the thirtieth session, 12 of 12). Its gait cycle looped
    as ``track`` prepares it: how often ``STEPPING``'s reference rule sees no foot planted.
    Then played at heading 0: the body's and the reference's forward speed each 0.5 s and how
    far the body is behind, until its head drops below 1 m."""
    import functools
    from unittest import mock

    from playback_speed import looped_cycle
    from physmocap.io.c3d import read_c3d
    from physmocap.playback.track import on_body, prepare_reference, track_any
    from physmocap.scene import pick_markerset
    from physmocap.solver.contacts import detect_plants
    from physmocap.solver.pipeline import solve_capture

    body = load_body()
    settings = stepping_settings()
    head = body.index("Head")
    root = data_dir() / "c3d"
    print("\nsolved walks, their gait cycle looped (as playback_speed.py solved_12), STEPPING, "
          "heading 0: frames with no reference foot planted; each 0.5 s the body's / the "
          "reference's forward speed (m/s), the body's lag (m)")
    for name, static in SOLVED_WALKS:
        t = read_c3d(root / f"{name}.c3d")
        st = read_c3d(root / f"{static}.c3d") if static else None
        for label, move_off in (("as shipped", None), ("plants held", 1e3)):
            plants = detect_plants if move_off is None else \
                functools.partial(detect_plants, move_off=move_off)
            # the pipeline's own name for it: the solve before the plants let go
            with mock.patch("physmocap.solver.pipeline.detect_plants", plants):
                m = solve_capture(t, pick_markerset(t.labels), body, static=st).motion
            _, cycle, looped = looped_cycle(m)
            # (on the body the reference is simulated with: the subject's limb lengths)
            b, prep, _ = prepare_reference(on_body(cycle, body), body, "physical", settings, 3)
            none = _no_foot_planted(prep, b, settings.balance_gains)
            res = track_any(looped, body, "physical", settings)
            x, xr = res.motion.gpos[:, 0, :2], res.reference.gpos[:, 0, :2]
            n = int(round(0.5 * m.fps))
            cells = []
            for k in range(0, min(len(x) - n, int(6.0 * m.fps)), n):
                fw = xr[k + n] - xr[k]             # forward: where the reference went (it curves)
                fw /= max(float(np.linalg.norm(fw)), 1e-9)
                cells.append(f"{(x[k + n] - x[k]) @ fw / 0.5:.2f}/"
                             f"{(xr[k + n] - xr[k]) @ fw / 0.5:.2f} {(xr[k] - x[k]) @ fw:.2f}")
            low = np.flatnonzero(res.motion.gpos[:, head, 2] < 1.0)
            fate = f"down at {low[0] / m.fps:.2f} s" if len(low) else \
                f"up {len(x) / m.fps:.1f} s"
            print(f"  {name} {label}: no foot planted in {none:.1f} % of frames; {fate}; "
                  f"the first 6 s:")
            for a in range(0, len(cells), 6):
                print("    " + " | ".join(cells[a:a + 6]), flush=True)


_CYCLES = {}                # the looped solved walks, shared with the forked workers


def _solved_walks(on_template: bool = False) -> dict:
    """The solved PiG and 02_01 walks (``solve_real.py``'s takes), each its most closed gait
    cycle (``walk_cycle``, seam spread: ``close_cycle``) looped past 20 s, as
    ``playback_speed.py solved_12`` plays them; ``on_template``: retargeted onto the body
    template's limb lengths first (played on the template's body, not the subject's)."""
    from playback_speed import looped_cycle
    from physmocap.io.c3d import read_c3d
    from physmocap.matching.retarget import retarget
    from physmocap.scene import pick_markerset
    from physmocap.solver.pipeline import solve_capture

    body = load_body()
    root = data_dir() / "c3d"
    out = {}
    for name, static in SOLVED_WALKS:
        t = read_c3d(root / f"{name}.c3d")
        st = read_c3d(root / f"{static}.c3d") if static else None
        m = solve_capture(t, pick_markerset(t.labels), body, static=st).motion
        out[name] = looped_cycle(retarget(m, body.skeleton) if on_template else m)[2]
    return out


def _cycle_cell(job: tuple) -> tuple:
    """One looped walk at one heading (``job``: name, yaw rad) with ``stepping_settings()``:
    ``(name, yaw, down s or None, the body's forward speed over the 0.5 s before it, its
    reference's)``, forward along the reference's path."""
    from playback_speed import turned
    from physmocap.playback.track import track_any
    name, yaw = job
    body = load_body()
    res = track_any(turned(_CYCLES[name], yaw), body, "physical", stepping_settings())
    m, r = res.motion, res.reference
    low = np.flatnonzero(m.gpos[:, body.index("Head"), 2] < 1.0)
    if not len(low):
        return name, yaw, None, None, None
    k = low[0]
    a, b = max(0, k - int(round(m.fps))), max(0, k - int(round(0.5 * m.fps)))
    fw = r.root_pos[k, :2] - r.root_pos[a, :2]
    fw = fw / max(float(np.linalg.norm(fw)), 1e-9)
    pace = [float((x.root_pos[k, :2] - x.root_pos[b, :2]) @ fw) / ((k - b) / m.fps)
            if k > b else 0.0 for x in (m, r)]
    return name, yaw, k / m.fps, pace[0], pace[1]


def solved_cycles(on_template: bool = False, workers: int | None = None) -> None:
    """The solved PiG and 02_01 walks' gait cycles looped to 20 s, fully physical with
    ``STEPPING`` (as changed by ``--set``) at ``playback_speed.py``'s twelve headings, in
    ``workers`` processes (default: up to 4, the CPUs): up of 12, when the head first drops
    below 1 m, and how fast the body moved along its reference's path in the 0.5 s before
    (negative: backward). ``solved_cycles`` is ``playback_speed.py solved_12``'s looped walks
    alone, with ``--set``; ``solved_cycles_template`` the same walks on the template's body
    (retargeted). About 2 minutes on 2 CPUs."""
    import os
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from playback_speed import HEADINGS_12
    global _CYCLES
    _CYCLES = _solved_walks(on_template)
    jobs = [(name, y) for name in _CYCLES for y in HEADINGS_12]
    n = workers or max(1, min(4, os.cpu_count() or 1))
    with ProcessPoolExecutor(n, mp_context=get_context("fork")) as pool:
        rows = list(pool.map(_cycle_cell, jobs))
    body = "the template's body (retargeted)" if on_template else "the subject's body"
    changes = ", ".join(f"{k}={v}" for k, v in _CHANGES.items()) or "none"
    print(f"\nsolved walks' gait cycles looped to 20 s on {body}, STEPPING (--set: {changes}), "
          f"headings {', '.join(f'{y:g}' for y in HEADINGS_12)} rad: head below 1 m at (s); "
          f"the body's / its reference's speed along the reference's path over the 0.5 s "
          f"before (m/s)")
    for name in _CYCLES:
        rs = [r for r in rows if r[0] == name]
        downs = [r for r in rs if r[2] is not None]
        print(f"  {name:30s} up {len(rs) - len(downs)} of {len(rs)}; "
              + " ".join("-" if r[2] is None else f"{r[2]:.2f}" for r in rs))
        if downs:
            print(f"  {'':30s} before the fall: "
                  + " ".join(f"{r[3]:+.2f}/{r[4]:.2f}" for r in downs)
                  + f"; backward in {sum(r[3] < 0 for r in downs)} of {len(downs)}",
                  flush=True)


def soles() -> None:
    import dataclasses

    from physmocap.matching.database import mirror_motion
    from physmocap.playback.character import foot_joints
    from physmocap.playback.reference import _planted_pitch, sole_points

    body = load_body()
    head = body.index("Head")
    clips = {n: bandai_walk(n, body) for n in range(1, 7)}
    _, demo = make_demo_capture()
    joints, pts = sole_points(body)
    feet = [np.isin(joints, side) for side in foot_joints(body)]

    def still_heights(m):
        """cm, the lowest sole point of a still foot (< 0.2 m/s) above the floor: p90."""
        P = m.gpos[:, joints] + quat.rotate(m.grot[:, joints], pts)
        out = []
        for f in feet:
            k = np.flatnonzero(f)[np.argmin(P[:, f, 2], axis=1)]
            i = np.arange(1, m.n_frames)
            sp = np.linalg.norm(P[i, k[1:], :2] - P[i - 1, k[1:], :2], axis=-1) * m.fps
            out.append(P[i, k[1:], 2][sp < 0.2])
        return 100 * np.percentile(np.concatenate(out), 90)

    print("\nretargeted references: planted sole pitch (deg, toes down < 0; left / right); a "
          "still foot's lowest point above the floor, p90 (cm), grounded by the lowest sole "
          "point / by the still feet")
    for name, m in [("demo walk", demo)] + [(f"walk {n:03d}", c) for n, c in clips.items()]:
        lev = level_feet(m, body, constant=True)
        pitch = [np.degrees(2 * np.arctan2(q[1], q[3])) for q in
                 (_planted_pitch(lev, lev.grot[:, k], k) for k in
                  (body.index("LeftFoot"), body.index("RightFoot")))]
        flat = level_feet(m, body, constant=True, flat_planted=True)
        print(f"  {name:10s} {pitch[0]:6.1f} / {pitch[1]:6.1f}   "
              f"{still_heights(ground_motion(flat, body)):4.1f} / "
              f"{still_heights(ground_motion(flat, body, still_speed=0.2)):4.1f}")
    runs = [(1, 0, False), (1, 30, False), (1, 60, False), (1, 0, True), (2, 0, False),
            (2, 60, False), (3, 0, False), (3, 60, False), (3, 0, True), (1, 15, False),
            (1, 45, False), (1, 90, False), (1, 30, True), (4, 0, False), (4, 60, False),
            (5, 0, False), (5, 60, False), (6, 0, False), (6, 60, False), (2, 0, True),
            (5, 0, True)]
    print("STEPPING on Bandai walks (walk number @ first frame, m: mirrored): head below 1 m "
          "at (s; up: never), body / reference walked by then (m)")
    for label, fp, still in (("as retargeted", False, 0.0), ("soles levelled", True, 0.0),
                             ("+ grounded by still feet (track)", True, 0.2)):
        cells, downs = [], []
        for n, start, mirror in runs:
            ref = (mirror_motion(clips[n]) if mirror else clips[n])[start:]
            res = track(ref, body, "physical", dataclasses.replace(
                stepping_settings(), flat_planted=fp, ground_still=still))
            low = np.nonzero(res.motion.gpos[:, head, 2] < 1.0)[0]
            k = low[0] if len(low) else res.motion.n_frames - 1
            downs.append(k / res.motion.fps)
            d = [float(np.linalg.norm(m.root_pos[k, :2] - m.root_pos[0, :2]))
                 for m in (res.motion, res.reference)]
            cells.append(f"{n}@{start}{'m' if mirror else ''} "
                         f"{f'{downs[-1]:.2f}' if len(low) else 'up'} {d[0]:.1f}/{d[1]:.1f}")
        print(f"  {label}: median {np.median(downs):.2f} s, mean {np.mean(downs):.2f} s, "
              f"{sum(c.split()[1] == 'up' for c in cells)} up, "
              f"{sum(d < 1.0 for d in downs)} down within 1 s; "
              + "; ".join(cells), flush=True)


# the captured U-turns of the Bandai-Namco turning walks (the hips turn 110-195° within 1.5 s,
# the walk slowing to 0.1-0.5 m/s); walk-turn-right_normal_004, the live database's one, too
U_TURNS = ("dataset-2_walk-turn-left_normal_031", "dataset-2_walk-turn-left_normal_032",
           "dataset-2_walk-turn-right_normal_032", "dataset-2_walk-turn-right_normal_033")


def turn_database() -> None:
    """Is the live sharp turns' fall a gap in the database? ``live_headings`` of the sharp
    turns, the straight walk and the stop and go (six headings) on the live database with its
    standing clip, then with every clip mirrored too (``mm build --mirror``: left turns as
    right ones), with the four other captured U-turns of the turning walks (``U_TURNS``), and
    with both; and for each the sharp turns' reference at heading 2 rad (``turn_clips``'
    figures): how often neither of its feet is planted and how fast its hips turn; and which
    clips the straight walk's reference plays most (kinematic). About 12 minutes."""
    from collections import Counter

    from physmocap.matching.controller import Controller, run_controller

    body = load_body()
    names = ("sharp_turns", "straight_walk", "stop_and_go")
    for label, extra, mirror in (("as measured", (), False), ("mirrored", (), True),
                                 ("with 4 more U-turns", U_TURNS, False),
                                 ("with 4 more U-turns, mirrored", U_TURNS, True)):
        db = live_database(stand=True, extra=extra, mirror=mirror)
        print(f"\nthe live database {label}: {db[0].n_clips} clips, {db[0].n_frames} frames",
              end="")
        live_headings(names=names, database=db)
        live, y, _, _ = _live_sharp_turns(body, db)
        print(f"  the sharp turns' reference (heading 2 rad, 12 s): no foot planted in "
              f"{100 * live.mean():.1f} % of its frames, "
              f"{100 * live[_FIRST_TURN].mean():.1f} % of its first turn (4.3-6.5 s); the hips "
              f"turn at up to {_turn_rate(y, 60.0):.0f}°/s over 0.5 s", flush=True)
        _, rec = run_controller(Controller(*db, _scene_input("straight_walk")), 20.0)
        played = Counter(db[0].clip_names[c] for c in db[0].clip_index(np.array(rec.frame)))
        print("  the straight walk's reference plays (frames of 1200, kinematic): "
              + ", ".join(f"{n.replace('dataset-2_', '')} {k}" for n, k in
                          played.most_common(4)), flush=True)


def main(argv: list[str]) -> None:
    """The command line (``argv`` without the script's name): the parts named, in order (none:
    every default part), with ``--set``'s changes; a bad one is one line (``SystemExit``)."""
    from physmocap.errors import PhysmocapError
    from physmocap.playback.balance import BalanceSettings
    parts = {"numerics": numerics, "one_leg": one_leg, "references": references,
             "anatomy": anatomy, "start_phase": start_phase, "live_start": live_start,
             "live_paced": live_paced, "live_headings": live_headings,
             "live_reference": live_reference, "pushes": pushes,
             "soles": soles}
    extra = {"live_headings_28": lambda: live_headings(HEADINGS_28),     # not by default
             "live_turns": lambda: live_headings(names=("figure_eight", "sharp_turns",
                                                        "head_circle")),
             "live_mirrored": lambda: live_headings(names=("figure_eight", "sharp_turns",
                                                           "head_circle"), mirror=True),
             "figure_eight_28": lambda: [live_headings(HEADINGS_28, names=("figure_eight",),
                                                       mirror=m) for m in (False, True)],
             "turn_clips": turn_clips, "live_stands": live_stands, "solved_loop": solved_loop,
             "solved_cycles": solved_cycles,
             "solved_cycles_template": lambda: solved_cycles(on_template=True),
             "turn_database": turn_database,
             "envelope": envelope, "live_predictive": live_predictive,
             "envelope_predictive": lambda: live_predictive(PREDICTIVE_ENVELOPE_TASKS),
             # the slow walk's runs that ran out of the default budget, with three times it
             "slow_predictive_300": lambda: live_predictive(
                 PREDICTIVE_ENVELOPE_TASKS[:1], yaws=(0.0, 0.7, 2.0, 3.0, 4.0), budget=300.0),
             "turns_predictive_300": lambda: live_predictive(PREDICTIVE_TURNS_300,
                                                             budget=300.0),
             # the inputs STEPPING walks, and the run: kept with the search?
             "kept_predictive": lambda: live_predictive(PREDICTIVE_KEPT_TASKS,
                                                        yaws=(0.0, 2.0, 4.0)),
             "turn_radius": lambda: live_headings(names=tuple(
                 (f"turns r {r:g} m", stadium_path(r)) for r in (0.0, 0.5, 0.75, 1.0)))}
    usage = (f"usage: physical_diagnosis.py [{' '.join(parts)}] (default: all) "
             f"[{' '.join(extra)}] [--set NAME=VALUE ...]")
    names, args = [], list(argv)
    while args:
        a = args.pop(0)
        if a == "--set":
            if not args:
                raise SystemExit("physical_diagnosis.py: --set needs NAME=VALUE, e.g. --set "
                                 "ik_kz=0.3")
            try:
                _CHANGES.update([field_change(args.pop(0), (BalanceSettings, TrackingSettings),
                                              "ik_kz=0.3")])
            except ValueError as e:
                raise SystemExit(f"physical_diagnosis.py: --set: {e}") from None
        elif a in parts or a in extra:
            names.append(a)
        else:
            raise SystemExit(f"physical_diagnosis.py: no part {a!r}; {usage}")
    try:
        stepping_settings()                 # a value the settings refuse: one line, no run
    except PhysmocapError as e:
        raise SystemExit(f"physical_diagnosis.py: --set: {e}") from None
    if _CHANGES:          # every "STEPPING" below is this one: say so before its figures
        print("STEPPING / TrackingSettings changed by --set: "
              + ", ".join(f"{k}={v}" for k, v in _CHANGES.items()))
    for part in (names or parts):
        parts.get(part, extra.get(part))()


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
