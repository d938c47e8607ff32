"""``play``: physical playback of a fixed motion, or of a database driven live by an input
scene; the ``--predict`` search's options and checkpoint (``avatar --physics`` shares them)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import PhysmocapError
from .common import (_fps_text, _need_plots, _positive_float, _positive_int, _print_wrote,
                     _scene_files, _warn_coverage, _write_reports, load_any, refuse_misnamed,
                     refuse_overwrite)
from .matching import _scene_controller


def cmd_play(args) -> int:
    """Physical playback of a fixed motion (BVH or DeepMimic clip) on the simulated body."""
    from ..io.bvh import write_bvh
    from ..playback.track import track_any
    from ..progress import Progress
    from ..scene import load_environment

    if Path(args.motion).suffix.lower() == ".npz":
        return _play_live(args)
    if args.input:
        raise PhysmocapError("--input drives a motion-matching database (DB.npz); a fixed "
                             "motion plays as it is", args.motion)
    inputs = [args.motion, *_scene_files(args.scene, "environments")]
    refuse_overwrite(inputs, [args.output, args.report, args.report_html])
    refuse_misnamed(output=(args.output, ".bvh"), report=(args.report, ".json"),
                    report_html=(args.report_html, ".html"))
    _need_plots(args)
    motion = load_any(Path(args.motion), unit=args.unit)
    if not hasattr(motion, "skeleton"):
        raise PhysmocapError("play needs skeletal motion (a BVH or clip), not markers",
                             args.motion)
    env = load_environment(args.scene) if args.scene else None
    loop = None
    if args.loop is not None:
        motion, loop = _looped(motion, args.loop, args.motion)
    settings, plan = _play_settings(args), None
    if args.predict:
        from ..playback.predictive import track_predictive
        predict, checkpoint = _predict_checkpoint(args, inputs, (args.loop, args.unit),
                                                        settings)
        with _dropped_if_unused(checkpoint):
            result, plan = track_predictive(motion, settings=settings, predict=predict,
                                            environment=env, progress=Progress(not args.quiet),
                                            checkpoint=checkpoint)
        _print_resumed(args, plan, 1.0 / motion.fps)
    else:
        result = track_any(motion, mode=args.mode, settings=settings,
                           progress=Progress(not args.quiet), environment=env)
    write_bvh(result.motion, args.output)
    rep = _with_plan(result.report(), plan)
    rep.update(source=str(args.motion), output=str(args.output))
    if loop is not None:
        rep["loop"] = loop
    _write_play_reports(args, result, rep)
    if not args.quiet:
        print(f"{args.motion}: {rep.get('frames', motion.n_frames)} frames, mode {args.mode}")
        if loop is not None:
            print(f"  looped: frames {loop['start']}-{loop['stop']} ({loop['cycle_s']:.2f} s, "
                  f"seam {100 * loop['seam_m']:.1f} cm) repeated to {loop['seconds']:.1f} s")
        print(f"  {_playback_text(rep)}; {_fps_text(rep['frames_per_second'])} frames/s")
        _print_physical(rep)
        _print_closing(args, rep)
    if plan is not None:
        checkpoint.remove()
    return 0


def _print_closing(args, rep: dict) -> None:
    """The lines every ``play`` prints last: the ``--predict`` search, the hand holds, the
    files written."""
    _print_predictive(rep)
    _print_holds(rep)
    _print_wrote(args)


def _write_play_reports(args, result, rep: dict, page=None) -> None:
    """``play``'s (and the simulated avatar's) reports (``_write_reports``): the page of the
    simulated ``result`` shows ``page(rep)`` (default: ``rep``)."""
    def write_page(r):
        from ..report.play_html import write_play_report
        write_play_report(result, r if page is None else page(r), args.report_html)
    _write_reports(args, rep, write_page)


def _looped(motion, seconds: float, path) -> tuple:
    """``motion``'s most closed gait cycle (``playback.reference.walk_cycle``), its seam spread
    over it (``close_cycle``), repeated until it lasts ``seconds``, and what was looped (for the
    report; ``seam_m``: the mismatch spread)."""
    from ..playback.reference import close_cycle, loop_motion, walk_cycle
    if not (seconds > 0 and np.isfinite(seconds)):
        raise PhysmocapError(f"--loop must be a number of seconds > 0, got {seconds}", path)
    try:
        i, j, seam = walk_cycle(motion)
    except PhysmocapError as e:
        raise PhysmocapError(f"--loop: {e.reason}", path) from None
    loops = max(1, int(np.ceil(seconds * motion.fps / (j - i) - 1e-9)))
    looped = loop_motion(close_cycle(motion[i:j + 1]), loops)
    return looped, {"start": i, "stop": j, "cycle_s": (j - i) / motion.fps, "seam_m": seam,
                    "loops": loops, "seconds": (looped.n_frames - 1) / motion.fps}


def _playback_text(rep: dict) -> str:
    """A playback report's tracking error, root assist, penetration and falls, in one line."""
    upright = rep.get("penetration_max_upright_mm")
    return (f"{_tracking_text(rep)}; root assist {rep['root_assist_force_mean_n']:.0f} N mean, "
            f"{rep['root_assist_force_max_n']:.0f} max; penetration "
            f"{rep['penetration_max_mm']:.1f} mm"
            + (f" ({upright:.1f} until the first fall)" if rep["falls"] and upright is not None
               else "") + f"; falls: {_falls_text(rep['falls'])}")


def _tracking_text(rep: dict) -> str:
    """The mean tracking error, and, after a fall, the mean until it began."""
    text = f"tracking error {rep['tracking_error_m']:.3f} m"
    if rep["falls"] and rep.get("tracking_error_upright_m") is not None:
        text += f" ({rep['tracking_error_upright_m']:.3f} m until the first fall)"
    return text


def _print_physical(rep: dict) -> None:
    """Fully physical: how well the body moved like its reference wherever it was (the pose
    error) and how far it walked beside it (assist mode carries the body along its
    reference's path, so there these add nothing to the tracking error)."""
    w = rep.get("walked_m")
    if rep.get("mode") != "physical" or not w:
        return
    until = f" until the first fall began at {w['until_s']:.2f} s" if rep["falls"] else ""
    pose = rep.get("pose_error_m")
    pose = "" if pose is None else f"pose error {pose:.3f} m (joints about the root); "
    print(f"  {pose}walked {w['body']:.1f} m, its reference {w['reference']:.1f} m{until}")


def _falls_text(falls: list) -> str:
    """``falls`` of a playback report in words: ``"none"`` or the count and the first fall's
    start and reason (a user looking at a fallen body wants when it went down, not only that),
    and how many times the body was put back on its feet (``--recover``)."""
    if not falls:
        return "none"
    first = falls[0]
    back = sum("recovered_s" in f for f in falls)
    return (f"{len(falls)} (the first from {first['since_s']:.2f} s, {first['reason']}"
            + (f"; put back on its feet {back} time{'s' if back > 1 else ''}" if back else "")
            + ")")


def _print_holds(rep: dict) -> None:
    """The ``holds`` of a playback report, one line each."""
    for h in rep.get("holds", []):
        err = ("never held" if h["palm_error_mm_mean"] is None else
               f"palm {h['palm_error_mm_mean']:.1f} mm mean, {h['palm_error_mm_max']:.1f} max "
               f"from the object")
        print(f"  hold {h['hand']} {h['start_s']:g}-{h['stop_s']:g} s: {h['frames']} frames, {err}")


def _predict_arguments(sp, needs: str) -> None:
    """``--predict``, ``--predict-budget`` and ``--predict-workers`` of ``play`` and ``avatar``
    (``needs``: the options it needs, in words)."""
    sp.add_argument("--predict", action="store_true",
                    help=f"{needs}: the body chooses its gains every 0.25 s by simulating 1 s "
                    "ahead; the output is the chain of committed steps (fully physical; "
                    "offline: tens of frames simulated per frame played; a stopped run "
                    "resumes; playback/predictive.py)")
    sp.add_argument("--predict-budget", type=_positive_float, metavar="FRAMES",
                    help="with --predict: the most frames simulated per frame played (default "
                    "100); past it the rest plays with the last gains and the report says "
                    "incomplete")
    sp.add_argument("--predict-workers", type=_positive_int, metavar="N",
                    help="with --predict: play the look-aheads in N processes (forks; Linux); "
                    "the same result, sooner on N cores (default 1)")


_RECOVER_HELP = ("a body that fell is put back on its feet, at rest in its reference's pose, "
                 "SECONDS after the fall was detected (placed, not simulated; every fall is "
                 "still counted, and the report says when each was put back)")


def _play_settings(args):
    """``TrackingSettings`` of ``play``: ``--balance stepping`` gives a fully physical body the
    stepping balance controller (``playback.balance.STEPPING``); ``--recover`` puts a fallen
    body back on its feet."""
    from dataclasses import replace

    from ..playback.track import balance_settings
    if args.balance == "stepping" and args.mode != "physical":
        args.parser.error("--balance stepping needs --mode physical")
    for opt in ("predict_budget", "predict_workers"):
        if getattr(args, opt, None) is not None and not args.predict:
            args.parser.error(f"--{opt.replace('_', '-')} is the --predict search's: it needs "
                              "--predict")
    n, most = getattr(args, "predict_workers", None), 4 * (os.cpu_count() or 1)
    if n is not None and n > most:
        # (1000 forks on 2 CPUs: none faster, and a stop left them stuck on a lock)
        args.parser.error(f"--predict-workers {n}: more than 4 per CPU only wait for each "
                          f"other; give at most {most} here")
    if getattr(args, "predict", False) and args.balance != "stepping":
        args.parser.error("--predict chooses --balance stepping's gains: it needs --mode "
                          "physical --balance stepping")
    return replace(balance_settings(args.balance), recover_s=args.recover)


def _play_live(args) -> int:
    """``play DB.npz --input SCENE``: motion matching and the simulation in one loop."""
    from ..io.bvh import write_bvh
    from ..playback.live import run_live
    from ..progress import Progress
    from ..scene import load_environment

    if not args.input:
        raise PhysmocapError("playing a database needs an input scene: --input NAME (shipped: "
                             "straight_walk, stop_and_go, figure_eight, sharp_turns, run, "
                             "head_circle) or a file", args.motion)
    if args.loop is not None:
        raise PhysmocapError("--loop repeats a fixed motion's gait cycle; a live input runs "
                             "for its scene's duration (or --duration)", args.motion)
    # every file the run reads (a shipped scene is an input too)
    inputs = [args.motion, *_scene_files(args.input, "inputs"),
              *_scene_files(args.scene, "environments")]
    refuse_overwrite(inputs, [args.output, args.report, args.report_html])
    refuse_misnamed(output=(args.output, ".bvh"), report=(args.report, ".json"),
                    report_html=(args.report_html, ".html"))
    _need_plots(args)
    db, ctrl, scene_path, duration = _scene_controller(args.motion, args.input, args.duration)
    env = load_environment(args.scene) if args.scene else None
    settings, plan = _play_settings(args), None
    if args.predict:
        from ..playback.predictive import run_predictive
        predict, checkpoint = _predict_checkpoint(args, inputs, duration, settings)
        with _dropped_if_unused(checkpoint):
            live, plan = run_predictive(ctrl, duration, settings=settings, predict=predict,
                                        environment=env, progress=Progress(not args.quiet),
                                        checkpoint=checkpoint)
        _print_resumed(args, plan, ctrl.dt)
    else:
        live = run_live(ctrl, duration, mode=args.mode, settings=settings,
                        progress=Progress(not args.quiet), environment=env)
    write_bvh(live.result.motion, args.output)
    rep = _with_plan(live.report(), plan)
    rep.update(database=str(args.motion), input=str(scene_path), output=str(args.output))
    # the controller's last frames are the reference's (its first placed the body)
    from ..matching.coverage import run_coverage
    rep.update(run_coverage(db, ctrl.record, ctrl.dt, frames=rep["frames"]))
    _warn_coverage(rep)
    _write_play_reports(args, live.result, rep)
    if not args.quiet:
        print(f"{scene_path}: {rep['frames']} frames ({duration:g} s) motion-matched and "
              f"simulated, mode {args.mode}")
        print(f"  {_playback_text(rep)}")
        _print_physical(rep)
        # where the reference slides its planted feet, a fully physical body cannot follow
        print(f"  the reference's feet in contact slide {rep['reference_foot_skate_mm']:.1f} "
              f"mm/frame (the database's clips: {rep['reference_foot_skate_mm_database']:.1f})")
        print(f"  {_fps_text(rep['frames_per_second'])} frames/s; latency "
              f"{rep['latency_ms']['median']:.1f} ms median, {rep['latency_ms']['p99']:.1f} ms "
              "p99 per frame")
        _print_closing(args, rep)
    if plan is not None:
        checkpoint.remove()
    return 0


def _predict_key(files: list, what, settings, predict) -> str:
    """``job_key`` of a ``--predict`` run: what its result depends on (the program's version,
    the bytes of the ``files`` it reads, ``what`` else (a live run's duration; a fixed
    motion's loop and unit; the avatar's unit and head weight) and every setting)."""
    from .. import __version__
    from ..solver.checkpoint import job_key
    return job_key(__version__, what, repr(settings), repr(predict),
                   *(np.frombuffer(Path(f).read_bytes(), np.uint8) for f in files))


def _predict_checkpoint(args, files: list, what, settings) -> tuple:
    """``(PredictSettings, Checkpoint)`` of a ``--predict`` run writing ``args.output``: a
    stopped search goes on from its last decision stored in ``.OUT.bvh.partial`` (kept until
    the outputs are written), keyed by the bytes of the ``files`` it reads, ``what`` (the rest
    of the job: duration, loop, …) and the settings."""
    from dataclasses import replace

    from ..playback.predictive import PredictSettings
    from ..solver.checkpoint import Checkpoint, partial_folder
    predict = PredictSettings(workers=args.predict_workers or 1)
    if args.predict_budget is not None:
        predict = replace(predict, budget=args.predict_budget)
    # the workers change how soon, not what: a stopped search resumes with any number
    return predict, Checkpoint(partial_folder(args.output),
                               _predict_key(files, what, settings, replace(predict, workers=1)))


@contextmanager
def _dropped_if_unused(checkpoint):
    """A ``--predict`` job that fails or is stopped before its first decision is stored
    leaves no ``.OUT.partial`` behind (``Checkpoint.drop_if_unused``)."""
    try:
        yield
    except BaseException:
        checkpoint.drop_if_unused()
        raise


def _print_resumed(args, plan, dt: float) -> None:
    """Where a resumed ``--predict`` search went on from (``dt``: s per frame)."""
    from ..solver.checkpoint import partial_folder
    if plan.resumed_at is not None and not args.quiet:
        print(f"resumed from {partial_folder(args.output)} at {plan.resumed_at * dt:.2f} s "
              "(the search cannot go back before it)")


def _with_plan(rep: dict, plan) -> dict:
    """A playback report with a ``--predict`` search's ``plan`` (if any) as ``predictive``:
    the run's speed is the search's, the committed steps alone are a small part of it."""
    if plan is not None:
        rep["predictive"] = dict(plan.report(),
                                 committed_frames_per_second=rep["frames_per_second"])
        rep["frames_per_second"] = rep["predictive"]["frames_per_second"]
    return rep


def _print_predictive(rep: dict) -> None:
    """The ``predictive`` section of a playback report, if any, in words."""
    pr = rep.get("predictive")
    if pr is None:
        return
    print(f"  predictive: the committed steps above; the search simulated "
          f"{pr['simulated_per_played']:.0f} frames per frame played in "
          f"{pr['search_seconds']:.0f} s (the committed steps alone "
          f"{pr['committed_frames_per_second']:.0f} frames/s"
          + ("; the latency above is theirs" if "latency_ms" in rep else "")
          + f"), {pr['decisions']} gain "
          f"switches, {pr['backtracks']} dead ends" + (
              "" if pr["complete"] else f"; incomplete: searched {pr['frames_planned']} "
              f"frames within its budget (--predict-budget {pr['budget']:g})"))
