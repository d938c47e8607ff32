"""The ``physmocap`` command. Nothing in the library imports it.

Exit codes: 0 success, 1 bad input (one line on stderr, no traceback), 2 usage error.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

from ..errors import PhysmocapError, Terminated, raise_terminated
from .avatar import cmd_avatar
from .common import _non_negative_float, _positive_float, _positive_int
from .files import cmd_convert, cmd_inspect
from .matching import cmd_mm_build, cmd_mm_run
from .pages import cmd_render, cmd_report, cmd_view
from .play import _RECOVER_HELP, _predict_arguments, cmd_play
from .solve import cmd_batch, cmd_demo, cmd_solve

EXAMPLES = {
    "solve": "physmocap solve walk.c3d -o walk.bvh --report walk.json\n"
             "  physmocap solve walk.c3d -o walk.bvh --static static.c3d --markerset cmu41 "
             "--c3d-out clean.c3d",
    "inspect": "physmocap inspect capture.c3d\n  physmocap inspect walk.bvh --json",
    "convert": "physmocap convert walk.bvh -o out.bvh --out-unit m --order XYZ\n"
               "  physmocap convert humanoid3d_walk.txt -o walk.bvh",
    "demo": "physmocap demo -o out/demo",
    "report": "physmocap report walk.json -o walk.html   # reads the BVH and C3D the report names\n"
              "  physmocap report out/*.json              # one page beside each report",
    "view": "physmocap view walk.bvh --markers walk.c3d -o walk_view.html",
    "render": "physmocap render walk.bvh --markers walk.c3d -o walk.gif --fps 25",
    "play": "physmocap play walk.bvh -o simulated.bvh --report play.json --mode assist\n"
            "  physmocap play walk.bvh -o sim.bvh --mode physical --balance stepping --loop 20 "
            "--report-html play.html\n"
            "  physmocap play db.npz --input straight_walk --physics -o sim.bvh --report play.json",
    "batch": "physmocap batch ../shared/data/c3d -o solved/ --workers 2\n"
             "  physmocap batch captures/ -o solved/ --scheduler tcp://10.0.0.5:8786",
    "mm build": "physmocap mm build ../shared/data/bvh/bandai-namco/ds2_normal_locomotion -o db.npz",
    "mm run": "physmocap mm run db.npz --input scenes/inputs/figure_eight.toml -o fig8.bvh "
              "--report fig8.json",
    "avatar": "physmocap avatar extract held_out.bvh -o track.csv\n"
              "  physmocap avatar db.npz --tracking track.csv -o avatar.bvh --truth held_out.bvh "
              "--report avatar.json",
}


def _less(args) -> str:
    """What a command that ran out of memory could ask for less of: only the options it has
    (``mm build`` has no ``--duration``), then a smaller input."""
    options = [f"a {word} --{name}" for name, word in (("duration", "shorter"), ("fps", "lower"))
               if name in vars(args)]
    return ", ".join(options + ["a smaller input"])


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).splitlines())


# --- argument parsing -------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="physmocap", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Optical motion capture to clean skeletal motion.",
        epilog="examples:\n  " + "\n  ".join(EXAMPLES.values()))
    p.add_argument("--version", action="version", version=_version())
    _verbosity(p, False)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def add(name, func, help_):
        sp = sub.add_parser(name, help=help_, description=help_,
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="example:\n  " + EXAMPLES[name])
        sp.set_defaults(func=func)
        _verbosity(sp, argparse.SUPPRESS)
        return sp

    sp = add("inspect", cmd_inspect, "summarise a C3D, BVH or DeepMimic clip, or a motion-matching "
             "database (the speeds and turns its clips keep)")
    sp.add_argument("file")
    sp.set_defaults(parser=sp)
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--unit", help="BVH length unit (m, cm, mm, in, cmu); default: inferred")
    sp.add_argument("--up", help="file's up axis (x, y, z, -y…); default: y for BVH, "
                                 "detected for C3D")

    sp = add("convert", cmd_convert, "convert skeletal motion to a portable BVH")
    sp.add_argument("input", help="BVH or DeepMimic clip")
    sp.add_argument("output_pos", nargs="?", metavar="OUTPUT",
                    help="output BVH (or give it with -o, like every other command)")
    sp.add_argument("-o", "--output", help="output BVH")
    # --unit / --up name the INPUT's unit and axis, as in every other command
    sp.add_argument("--unit", "--in-unit", dest="in_unit",
                    help="input BVH length unit; default: inferred")
    sp.add_argument("--up", "--in-up", dest="in_up", help="input up axis; default: y")
    sp.add_argument("--out-unit", default="cm", help="output unit (default cm)")
    sp.add_argument("--out-up", default="y", help="output up axis (default y)")
    sp.add_argument("--order", default="ZXY", help="output rotation order (default ZXY)")
    sp.set_defaults(parser=sp)

    sp = add("solve", cmd_solve, "solve a C3D capture with the physical marker solver")
    sp.add_argument("capture", help="motion trial (.c3d)")
    sp.add_argument("-o", "--output", required=True, help="output BVH")
    sp.add_argument("--static", help="static calibration trial of the same subject (.c3d)")
    sp.add_argument("--markerset", default="auto", help="auto (default), a shipped name "
                    "(cmu41, plugin_gait_fullbody) or a marker-set file")
    sp.add_argument("--body", default="humanoid", help="body template name or file")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--c3d-out", help="cleaned C3D: markers with gaps, swaps and ghosts filled "
                    "from the solved body (residual 0), + solved joint centres")
    sp.add_argument("--up", help="capture's up axis if detection should be overridden")
    sp.add_argument("--scene", help="environment with hand holds (shipped name or TOML/JSON file)")
    sp.add_argument("--report-html", help="HTML report with plots (needs the 'report' extra)")

    sp = add("report", cmd_report, "HTML solve report(s) from solve's JSON report, BVH and C3D")
    sp.add_argument("reports", nargs="+", help="JSON report(s) written by 'physmocap solve'")
    sp.add_argument("-o", "--output", help="HTML page (default: the report's name with .html)")
    sp.add_argument("--bvh", help="solved BVH (default: the report's 'output')")
    sp.add_argument("--c3d", help="capture (default: the report's 'source')")

    sp = add("view", cmd_view, "write a self-contained HTML page that plays a motion in 3D")
    sp.add_argument("motion", help="BVH or DeepMimic clip")
    sp.add_argument("--markers", help="C3D capture to draw with the skeleton")
    sp.add_argument("-o", "--output", required=True, help="HTML page")
    sp.add_argument("--unit", help="BVH length unit (default: inferred)")

    sp = add("render", cmd_render, "render a motion to a GIF or MP4 (offline, matplotlib)")
    sp.add_argument("motion", help="BVH or DeepMimic clip")
    sp.add_argument("--markers", help="C3D capture to draw with the skeleton")
    sp.add_argument("-o", "--output", required=True, help="output .gif or .mp4 (needs ffmpeg)")
    sp.add_argument("--fps", type=_positive_float, default=30.0,
                    help="frames per second (default 30)")
    sp.add_argument("--unit", help="BVH length unit (default: inferred)")

    sp = add("play", cmd_play, "physical playback: the simulated body follows a motion, or a "
             "motion-matching database driven live by an input scene")
    sp.add_argument("motion", help="BVH or DeepMimic clip (retargeted to the humanoid body), or "
                    "a motion-matching database DB.npz with --input")
    sp.add_argument("--input", help="input scene for a database (shipped name or TOML file)")
    sp.add_argument("--duration", type=_positive_float,
                    help="seconds (default: the scene's [run] duration)")
    sp.add_argument("--physics", action="store_true",
                    help="accepted for symmetry with 'avatar --physics': play always simulates")
    sp.add_argument("-o", "--output", required=True, help="simulated motion (BVH)")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--report-html", help="HTML report with plots: paths, tracking, root "
                    "assist, feet, key frames (needs the 'report' extra)")
    sp.add_argument("--mode", choices=("assist", "physical"), default="assist",
                    help="assist: bounded root force and torque; physical: none (may fall)")
    sp.add_argument("--balance", choices=("none", "stepping"), default="none",
                    help="with --mode physical: stepping = balance feedback that keeps a walk "
                    "up (foot placement, leg IK, compliant joints); none = PD tracking only")
    _predict_arguments(sp, "with --mode physical --balance stepping")
    sp.add_argument("--scene", help="scene objects and hand holds (shipped environment name "
                    "or TOML/JSON file, as 'solve --scene')")
    sp.add_argument("--loop", type=float, metavar="SECONDS",
                    help="a walk played longer than captured: its most closed gait cycle "
                    "(0.8-2 s), its seam spread over it, repeated until it lasts SECONDS")
    sp.add_argument("--recover", type=_non_negative_float, metavar="SECONDS", help=_RECOVER_HELP)
    sp.set_defaults(parser=sp)
    sp.add_argument("--unit", help="BVH length unit (default: inferred)")

    sp = add("batch", cmd_batch, "solve every capture in a folder (resumable; local or Dask)")
    sp.epilog = ("static trials: a file whose name has the word static, calibration, calib or cal "
                 "(words split at\n  non-alphanumerics and letter/digit changes) is a static "
                 "trial. A motion trial uses the static\n  trial in its folder with the same "
                 "other words (ignoring motion/dynamic/trial), else the\n  folder's only static "
                 "trial, else none. A physmocap_batch.toml in INPUT overrides this:\n"
                 "    exclude = [\"odd/*.c3d\"]\n    [static]\n"
                 "    \"s1/walk.c3d\" = \"s1/tpose.c3d\"   # \"\" = no static trial\n"
                 "resume: takes whose outputs are complete and up to date (done-stamp: input "
                 "hash, settings)\n  are skipped; so are takes that failed on the same input "
                 "(--force retries).\n" + sp.epilog)
    sp.add_argument("input", help="folder searched recursively for .c3d captures")
    sp.add_argument("-o", "--output", required=True, help="output folder (mirrors the input tree)")
    sp.add_argument("--workers", type=_positive_int, help="local worker processes (default: "
                    "CPU count)")
    sp.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler (tcp://host:8786); "
                    "workers must see the same paths; needs the 'cluster' extra")
    sp.add_argument("--manifest", help="static-trial manifest (default: INPUT/physmocap_batch"
                    ".toml if present)")
    sp.add_argument("--force", action="store_true", help="solve every take again")
    sp.add_argument("--markerset", default="auto", help="as for solve (default auto)")
    sp.add_argument("--body", default="humanoid", help="body template name or file")
    sp.add_argument("--up", help="captures' up axis if detection should be overridden")
    sp.add_argument("--c3d-out", action="store_true", help="also write TAKE.clean.c3d")
    sp = add("avatar", cmd_avatar, "three-point avatar: a full body from a head-mounted display "
             "and two hand controllers (motion matching + arm IK)")
    sp.add_argument("inputs", nargs="+", metavar="DB.npz | extract CLIP.bvh",
                    help="a database from 'physmocap mm build', or 'extract' and a clip whose "
                         "head and wrists become a tracking file")
    sp.add_argument("-o", "--output", required=True, help="output BVH (avatar) or CSV (extract)")
    sp.add_argument("--tracking", help="three-point tracking CSV (schema: scenes/README.md)")
    sp.add_argument("--truth", help="the clip the tracking came from: report errors against it")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--report-html", help="HTML report with plots: paths, errors against the "
                    "truth, hands to controllers, latency, clips, feet; with --physics play's "
                    "report of the simulated avatar (needs the 'report' extra)")
    sp.add_argument("--head-weight", type=_non_negative_float, default=0.0,
                    help="weight of the character-frame head-velocity feature in the search "
                         "(default 0: the head's and hands' features in the head's frame do "
                         "its work)")
    sp.add_argument("--unit", help="BVH length unit of the clip/truth (default: inferred)")
    sp.add_argument("--physics", action="store_true",
                    help="track the avatar with the simulated body; the output is the simulation "
                         "and the report gains a 'physics' section")
    sp.add_argument("--mode", choices=("assist", "physical"), default="assist",
                    help="with --physics: root assist or fully physical (see play)")
    sp.add_argument("--balance", choices=("none", "stepping"), default="none",
                    help="with --physics --mode physical: balance feedback (see play)")
    sp.add_argument("--recover", type=_non_negative_float, metavar="SECONDS",
                    help="with --physics: " + _RECOVER_HELP)
    _predict_arguments(sp, "with --physics --mode physical --balance stepping")
    sp.usage = ("physmocap avatar DB.npz --tracking TRACK.csv -o OUT.bvh [--truth CLIP.bvh] "
                "[--report R.json]\n       physmocap avatar extract CLIP.bvh -o TRACK.csv")
    sp.set_defaults(parser=sp)

    mm = sub.add_parser("mm", help="motion matching: build a database, run a controller",
                        description="motion matching: build a database, run a controller",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="examples:\n  " + EXAMPLES["mm build"] + "\n  "
                        + EXAMPLES["mm run"])
    _verbosity(mm, argparse.SUPPRESS)
    mm_sub = mm.add_subparsers(dest="mm_command", metavar="SUBCOMMAND", required=True)

    def add_mm(name, func, help_):
        sp = mm_sub.add_parser(name, help=help_, description=help_,
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog="example:\n  " + EXAMPLES["mm " + name])
        sp.set_defaults(func=func)
        _verbosity(sp, argparse.SUPPRESS)
        return sp

    sp = add_mm("build", cmd_mm_build, "build a pose database from BVH clips")
    sp.add_argument("clips", nargs="+", help="BVH files or folders of them")
    sp.add_argument("-o", "--output", required=True, help="database file (.npz)")
    sp.add_argument("--fps", type=_positive_float, default=60.0,
                    help="database rate (default 60, at most 1000)")
    sp.add_argument("--mirror", action="store_true", help="add mirrored copies of every clip")
    sp.add_argument("--unit", help="BVH length unit (default: inferred per file)")
    sp.add_argument("--stand", metavar="CLIP.bvh[:FRAME]",
                    help="add a standing clip: frame FRAME (default 0) of CLIP held still 3 s, "
                         "for clips that never stand (without one the character cannot stop: "
                         "it walks in place, its feet sliding)")

    sp = add_mm("run", cmd_mm_run, "drive a character with an input scene")
    sp.add_argument("database", help="database from 'physmocap mm build'")
    sp.add_argument("--input", required=True,
                    help="input scene: a shipped name (figure_eight, straight_walk, …) or a file")
    sp.add_argument("-o", "--output", required=True, help="output BVH")
    sp.add_argument("--report", help="JSON report path")
    sp.add_argument("--duration", type=_positive_float,
                    help="seconds (default: the scene's [run])")
    sp.add_argument("--search-every", type=_positive_int, default=10,
                    help="frames between searches")
    sp.add_argument("--report-html", help="HTML report with plots: paths, speed and facing, "
                    "the clips played, the feet (needs the 'report' extra)")
    sp.add_argument("--no-foot-lock", action="store_true",
                    help="skip foot locking (two-bone IK pins feet in contact)")

    sp = add("demo", cmd_demo, "run the main job on a clip that pybullet_data ships")
    sp.add_argument("-o", "--output", default="out/demo", help="output folder (default out/demo)")
    sp.add_argument("--clip", default="humanoid3d_walk.txt", help="pybullet_data motion clip")
    return p


def _verbosity(parser, default) -> None:
    """-q/-v, accepted before and after the command; a command's own flags default to SUPPRESS
    so that they do not reset a global ``physmocap -q CMD``."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", default=default,
                   help="print nothing on success (errors and warnings still go to stderr)")
    g.add_argument("-v", "--verbose", action="store_true", default=default,
                   help="say more (inferred units, each finished take…)")


def _version() -> str:
    from .. import __version__
    return f"physmocap {__version__}"


_AXIS_OPTIONS = ("--up", "--in-up", "--out-up")


def _negative_axes(argv: list[str]) -> list[str]:
    """``--up -z`` as ``--up=-z``: argparse takes a value starting with '-' for an option and
    would say only "expected one argument" for an axis the help lists."""
    out = []
    for tok in argv:
        if out and out[-1] in _AXIS_OPTIONS and tok.lower() in ("-x", "-y", "-z"):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_negative_axes(sys.argv[1:] if argv is None else list(argv)))
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="physmocap: %(message)s")
    # Warnings (an inferred unit, a detected up axis) as one line each, no source echo.
    warnings.showwarning = lambda msg, *a, **k: print(f"physmocap: warning: {msg}",
                                                      file=sys.stderr)
    # SIGTERM (a batch system, `kill`) unwinds like Ctrl-C, so atomic writers remove their
    # temporary files and leave the old output in place; the default action would not.
    import signal
    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread (main() called from a worker): leave it alone
        previous = None
    try:
        code = args.func(args)
        sys.stdout.flush()          # (a closed pipe raises here, not at exit, past the handlers)
        return code
    except PhysmocapError as exc:
        print(f"physmocap: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except BrokenPipeError:     # the reader went away (inspect ... | head): not an error
        # (stdout points at nothing from here, so the exit's flush cannot raise again)
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):     # not a file (a script's capture)
            pass
        return 141
    except OSError as exc:      # a file the library did not open itself (permissions, disk full)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"physmocap: error: {where}{exc.strerror or _one_line(exc)}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # numpy says how much it asked for: a --duration of 1e9 s
        print(f"physmocap: error: not enough memory ({_one_line(exc) or 'MemoryError'}); ask "
              f"for less ({_less(args)})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("physmocap: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("physmocap: terminated", file=sys.stderr)
        return 143
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
