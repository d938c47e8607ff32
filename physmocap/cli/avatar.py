"""``avatar``: the three-point avatar, and ``avatar extract`` of a tracking file from a clip."""
from __future__ import annotations

from pathlib import Path

from ..errors import PhysmocapError
from .common import (_need_plots, _print_wrote, _warn_coverage, _write_reports, load_any,
                     refuse_misnamed, refuse_overwrite)
from .play import (_dropped_if_unused, _falls_text, _play_settings, _predict_checkpoint,
                   _print_physical, _print_predictive, _print_resumed, _tracking_text,
                   _with_plan, _write_play_reports)


_AVATAR_RUN_OPTIONS = ("tracking", "truth", "report", "report_html", "head_weight", "physics",
                       "mode", "balance", "recover", "predict", "predict_budget",
                       "predict_workers")


def cmd_avatar(args) -> int:
    """``avatar extract CLIP -o TRACK.csv`` or ``avatar DB.npz --tracking TRACK.csv -o OUT.bvh``."""
    if args.inputs[0] == "extract":
        return _extract(args)
    return _run(args)


def _extract(args) -> int:
    """``avatar extract CLIP -o TRACK.csv``: the clip's head and wrists as a tracking file."""
    from ..io.tracking import write_tracking
    from ..matching import avatar as av

    if len(args.inputs) != 2:
        args.parser.error("avatar extract takes one clip: avatar extract CLIP.bvh -o TRACK.csv")
    # an option of the avatar's run would be ignored here: say so rather than drop it
    for dest in _AVATAR_RUN_OPTIONS:
        if getattr(args, dest) != args.parser.get_default(dest):
            args.parser.error(f"--{dest.replace('_', '-')} is for 'avatar DB.npz --tracking "
                              "TRACK.csv'; avatar extract writes the tracking file only")
    refuse_overwrite([args.inputs[1]], [args.output])
    refuse_misnamed(output=(args.output, ".csv"))
    motion = load_any(Path(args.inputs[1]), unit=args.unit)
    if not hasattr(motion, "skeleton"):
        raise PhysmocapError("extract needs skeletal motion (a BVH or clip), not markers",
                             args.inputs[1])
    try:
        track = av.extract_track(motion)
    except PhysmocapError as exc:
        raise PhysmocapError(exc.reason, args.inputs[1]) from None
    names = [motion.skeleton.names[j] for j in av.find_tracked_joints(motion.skeleton)]
    write_tracking(track, args.output, comment=f"extracted from {args.inputs[1]} (joints "
                   f"{', '.join(names)}; {motion.fps:g} fps)")
    if not args.quiet:
        print(f"wrote {args.output}: {track.n_samples} samples ({track.duration:.2f} s) of "
              f"head {names[0]}, hands {names[1]}, {names[2]}")
    return 0


def _run(args) -> int:
    """``avatar DB.npz --tracking TRACK.csv -o OUT.bvh``: the avatar's motion (``--physics``:
    the simulated body's), its report and page."""
    from ..io.bvh import read_bvh, write_bvh
    from ..io.tracking import read_tracking
    from ..matching import avatar as av
    from ..matching.database import load_database
    from ..progress import Progress

    if len(args.inputs) != 1:
        args.parser.error("give one database: avatar DB.npz --tracking TRACK.csv -o OUT.bvh")
    if not args.tracking:
        args.parser.error("avatar DB.npz needs --tracking TRACK.csv")
    settings = _play_settings(args)      # before the long run: --balance needs --mode physical
    if args.recover is not None and not args.physics:
        args.parser.error("--recover puts the simulated avatar back on its feet: add --physics")
    if args.predict and not args.physics:
        args.parser.error("--predict searches the simulated avatar's balance: add --physics "
                          "--mode physical --balance stepping")
    if args.mode != "assist" and not args.physics:
        args.parser.error(f"--mode {args.mode} is the simulated avatar's: add --physics")
    refuse_overwrite([args.inputs[0], args.tracking, args.truth],
                     [args.output, args.report, args.report_html])
    refuse_misnamed(output=(args.output, ".bvh"), report=(args.report, ".json"),
                    report_html=(args.report_html, ".html"))
    _need_plots(args)
    track = read_tracking(args.tracking)
    truth = read_bvh(args.truth, unit=args.unit) if args.truth else None
    db = load_database(args.inputs[0])
    if truth is not None:
        # a truth sharing no joint with the avatar, or too short, fails now, not after the run
        try:
            av.check_truth(db, truth)
        except PhysmocapError as exc:
            raise PhysmocapError(exc.reason, args.truth) from None
    feats = av.avatar_features(db, args.head_weight)
    avatar = av.Avatar(db, feats, track)
    motion, record = av.run_avatar(avatar, progress=Progress(not args.quiet))
    physics = plan = checkpoint = None
    if args.physics:
        physics, plan, checkpoint = _simulate(args, motion, record, settings)
    write_bvh(motion if physics is None else physics.motion, args.output)
    try:
        rep = av.avatar_report(db, motion, record, truth)
    except PhysmocapError as exc:
        raise PhysmocapError(exc.reason, args.truth) from None
    rep.update(tracking=str(args.tracking), database=str(args.inputs[0]),
               output=str(args.output), truth=args.truth, head_weight=args.head_weight)
    from ..matching.coverage import run_coverage
    # the speeds and turns the headset asked of motion matching (its controller steps once a
    # frame)
    rep.update(run_coverage(db, avatar.ctrl.record, 1.0 / db.fps))
    _warn_coverage(rep)
    if physics is not None:
        rep["physics"] = dict(_with_plan(physics.report(), plan), balance=args.balance)
        if truth is not None:
            # the output file is the simulated body's motion: its own figures against the
            # truth (the top-level ones are the avatar's before simulation)
            # (its world is the retargeting's, scaled about the floor: the truth is too)
            from ..matching.retarget import root_scale
            world = root_scale(motion, physics.motion.skeleton)
            falls = rep["physics"]["falls"]
            rep["physics"]["truth"] = av.truth_figures(
                db, physics.motion, truth, until_s=falls[0]["since_s"] if falls else None,
                world=world)
        # the simulated avatar's page; the avatar's own figures folded in beside its physics
        _write_play_reports(args, physics, rep, page=lambda r: dict(
            r["physics"], input=str(args.tracking), database=str(args.inputs[0]),
            output=str(args.output), avatar={k: v for k, v in r.items() if k != "physics"}))
    else:
        def write_page(r):
            from ..report.avatar_html import write_avatar_report
            write_avatar_report(db, motion, record, track, r, args.report_html, truth)
        _write_reports(args, rep, write_page)
    if not args.quiet:
        _print_run(args, rep, motion)
    if plan is not None:
        checkpoint.remove()
    return 0


def _simulate(args, motion, record, settings) -> tuple:
    """``(TrackingResult, plan, checkpoint)`` of the avatar's motion on the simulated body:
    retargeted, its arms reaching the controllers again, then tracked with gravity and ground
    contact, the arms bent every frame for the simulated chest so the hands reach the
    controllers (``ArmReach``); ``plan`` and ``checkpoint`` are ``--predict``'s (else None)."""
    from ..matching import avatar as av
    from ..playback.track import track_any
    from ..progress import Progress
    from ..scene import load_body
    plan = checkpoint = None
    body = load_body()
    on_body = av.avatar_on_body(motion, record, body.skeleton)
    hands = av.controllers_on_body(motion, record, body.skeleton)
    if args.predict:
        from ..playback.predictive import track_predictive
        predict, checkpoint = _predict_checkpoint(
            args, [args.inputs[0], args.tracking], (args.unit, args.head_weight), settings)
        with _dropped_if_unused(checkpoint):
            physics, plan = track_predictive(on_body, body, settings=settings,
                                             predict=predict,
                                             progress=Progress(not args.quiet),
                                             checkpoint=checkpoint, hand_targets=hands)
        _print_resumed(args, plan, 1.0 / motion.fps)
    else:
        physics = track_any(on_body, body, mode=args.mode, settings=settings,
                            progress=Progress(not args.quiet), hand_targets=hands)
    return physics, plan, checkpoint


def _print_run(args, rep: dict, motion) -> None:
    """The avatar's figures (``rep``: its report) in a few lines."""
    lat = rep["latency_ms"]
    print(f"{args.tracking}: {motion.n_frames} frames at {motion.fps:g} fps, "
          f"{rep['transitions']} transitions, latency {lat['median']:.2f} ms median, "
          f"{lat['p99']:.2f} ms p99 per frame")
    print(f"  hands {1000 * rep['hand_error_m']:.1f} mm from the controllers (reachable in "
          f"{100 * rep['hand_reachable_fraction']:.0f} % of frames)")
    if args.truth:
        print(f"  against {args.truth}" + (" (before simulation)" if "physics" in rep else "")
              + f": joints {rep['mpjpe_m']:.3f} m, lower body {rep['lower_body_error_m']:.3f} m")
    print(f"  foot skate {rep['foot_skate_mm']:.2f} mm/frame, jitter {rep['jitter']:.0f} "
          f"m/s^3")
    if "physics" in rep:
        ph = rep["physics"]
        print(f"  simulated ({args.mode}): {_tracking_text(ph)}, root "
              f"assist {ph['root_assist_force_mean_n']:.0f} N mean, penetration "
              f"{ph['penetration_max_mm']:.1f} mm max, falls: {_falls_text(ph['falls'])}")
        _print_physical(ph)
        if "truth" in ph:
            t, first = ph["truth"], ph["truth"].get("until_first_fall")
            print(f"  simulated against {args.truth}: joints {t['mpjpe_m']:.3f} m, lower body "
                  f"{t['lower_body_error_m']:.3f} m" + (
                      f" ({first['mpjpe_m']:.3f} / {first['lower_body_error_m']:.3f} m until "
                      "the first fall)" if first else ""))
        h = ph["hands"]
        if h["hand_error_reachable_m"] is not None:
            print(f"  simulated hands {1000 * h['hand_error_reachable_m']:.1f} mm from the "
                  f"controllers when reachable, {100 * h['within_tolerance_fraction']:.0f} % "
                  f"of those frames within {1000 * h['tolerance_m']:.0f} mm")
        _print_predictive(ph)
    _print_wrote(args)
