"""The physmocap command: outputs, exit codes and one-line errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from physmocap.cli import main


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_bvh_json(data_dir, capsys):
    code, out, err = run(["inspect", str(data_dir / "bvh/cmu/16_57.bvh"), "--json"], capsys)
    assert code == 0
    s = json.loads(out)
    assert s["joints"] == 31 and s["fps"] == 120.0 and s["unit"] == "cmu" and s["unit_inferred"]


def test_inspect_a_database(data_dir, tmp_path, capsys):
    """mm build's .npz: its clips and what a run can ask of it (matching.coverage)."""
    from physmocap.io.bvh import read_bvh
    from physmocap.matching.coverage import covered_ranges, fastest_kept_turn
    from physmocap.matching.database import build_database, save_database
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("dataset-2_walk*_00[1-2].bvh"))
    db = build_database([read_bvh(f) for f in files], names=[f.stem for f in files], fps=30,
                        mirror=True)
    save_database(db, tmp_path / "db.npz")
    code, out, _ = run(["inspect", str(tmp_path / "db.npz"), "--json"], capsys)
    s = json.loads(out)
    assert code == 0 and s["kind"] == "database" and s["clips"] == 2 * len(files)
    assert s["mirrored_clips"] == len(files) and s["frames"] == db.n_frames
    assert s["speeds_kept_m_s"] == [[round(a, 2), round(b, 2)] for a, b in covered_ranges(db)]
    assert s["fastest_kept_turn_rad_s"] == round(fastest_kept_turn(db), 2) > 0
    code, out, _ = run(["inspect", str(tmp_path / "db.npz")], capsys)
    assert code == 0 and f"clips      {2 * len(files)} ({len(files)} mirrored)" in out
    assert "keeps      speeds " in out and "rad/s" in out
    with pytest.raises(SystemExit) as exc:                  # a database has no unit to say
        main(["inspect", str(tmp_path / "db.npz"), "--unit", "cm"])
    assert exc.value.code == 2
    (tmp_path / "junk.npz").write_text("not a database")
    code, _, err = run(["inspect", str(tmp_path / "junk.npz")], capsys)
    assert code == 1 and "junk.npz: not a pose database" in err


def test_inspect_c3d_text(data_dir, capsys):
    code, out, err = run(["inspect", str(data_dir / "c3d/cmu/01_01.c3d")], capsys)
    assert code == 0
    assert "42 physical" in out and "120 Hz" in out and "RBAC-1" in out
    # a file with Vicon's joint centres: they are counted (inspect read markers only, and
    # counted 0 virtual points in every file)
    code, out, err = run(["inspect", str(data_dir / "c3d/cmu/16_57.c3d"), "--json"], capsys)
    assert code == 0 and json.loads(out)["virtual_points"] == 289


def test_inspect_bvh_text(data_dir, capsys):
    """The summary in words agrees with the JSON one."""
    path = str(data_dir / "bvh/cmu/16_57.bvh")
    code, out, err = run(["inspect", path], capsys)
    assert code == 0 and err == ""
    s = json.loads(run(["inspect", path, "--json"], capsys)[1])
    lo, hi = s["height_range_m"]
    assert out.splitlines() == [
        path,
        f"  skeleton   31 joints, root {s['root']}",
        f"  timing     {s['frames']} frames at 120 fps = {s['duration_s']:.2f} s",
        "  file       bvh, unit cmu (inferred), up axis y, rotation orders "
        + "/".join(s["rotation_orders"]),
        f"  body       joint heights {lo:.2f} .. {hi:.2f} m (Z up), root travels "
        f"{s['root_travel_m']:.2f} m"]


def test_no_command_prints_the_help_and_is_a_usage_error(capsys):
    code, out, err = run([], capsys)
    assert code == 2 and out.startswith("usage: physmocap") and "examples:" in out


def test_an_os_error_is_one_line_naming_the_file(monkeypatch, capsys):
    """A file the library did not open itself (a permission, a full disk): no traceback. Run
    as root the permission test above cannot fail, so the handler is tested here too."""
    import physmocap.cli as cli

    def denied(args):
        raise PermissionError(13, "Permission denied", "out/walk.bvh")
    monkeypatch.setattr(cli, "cmd_inspect", denied)
    code, out, err = run(["inspect", "f.c3d"], capsys)
    assert code == 1 and err == "physmocap: error: out/walk.bvh: Permission denied\n"


def test_main_runs_outside_the_main_thread(data_dir, capsys):
    """A SIGTERM handler can only be set in the main thread: main() called from a worker
    thread leaves the signals alone and still runs the command."""
    import threading
    codes = []
    t = threading.Thread(target=lambda: codes.append(main(
        ["-q", "inspect", str(data_dir / "bvh/cmu/16_57.bvh")])))
    t.start()
    t.join()
    assert codes == [0]


def test_damage_lines_keep_the_first_three_of_each_kind():
    """The printed damage summary: counts, at most three swaps and ghosts each (the rest are
    counted; the JSON report has them all), and a suspect frame rate."""
    from physmocap.cli.solve import _damage_lines
    assert _damage_lines(None) == [] and _damage_lines({}) == []
    swaps = [{"markers": [f"A{i}", f"B{i}"], "frames": [10 * i, 10 * i + 5],
              "action": "weakened"} for i in range(5)]
    d = {"summary": {"markers_never_seen": 1, "gap_samples": 0, "blackout_frames": 2,
                     "nonfinite_samples": 0, "frame_rate_suspect": True},
         "swaps": swaps, "ghosts": [{"marker": "LKNE", "frames": [3, 4], "action": "ignored"}],
         "frame_rate": {"declared_hz": 100.0, "action": "kept as declared"}}
    # numbered as the capture numbers its frames (it began at 50): the JSON's indices were
    # printed, 50 frames off in Nexus or Mokka
    assert _damage_lines(d, first_frame=50) == [
        "damage: 1 markers never seen (ignored), 2 frames with no marker (interpolated)",
        "swap: A0/B0 capture frames 50-54 (weakened)",
        "swap: A1/B1 capture frames 60-64 (weakened)",
        "swap: A2/B2 capture frames 70-74 (weakened)", "... 2 more swaps in the report",
        "ghost: LKNE capture frames 53-53 (ignored)",
        "frame rate 100 Hz: kept as declared"]


@pytest.mark.parametrize("args, pattern", [
    (["inspect", "/nonexistent/x.bvh"], "cannot read"),
    (["inspect", "notes.txt"], "DeepMimic"),
    (["inspect", "file.xyz"], "unknown file type"),
    (["solve", "x.bvh", "-o", "o.bvh"], "C3D"),
])
def test_bad_input_is_one_line_exit_1(args, pattern, capsys, tmp_path):
    code, out, err = run(args, capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("physmocap: error:") and pattern in lines[0]


def test_odd_c3d_gives_one_line(data_dir, capsys):
    code, out, err = run(["inspect", str(data_dir / "c3d-odd/bad_parameter_section.c3d")],
                         capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1


def test_usage_errors_exit_2():
    r = subprocess.run([sys.executable, "-m", "physmocap", "inspect"], capture_output=True,
                       text=True)
    assert r.returncode == 2
    r = subprocess.run([sys.executable, "-m", "physmocap"], capture_output=True, text=True)
    assert r.returncode == 2


def test_the_command_runs_as_a_module_both_ways():
    """``python -m physmocap`` and ``python -m physmocap.cli`` (cli.py ran as a module before it
    was a package)."""
    for mod in ("physmocap", "physmocap.cli"):
        r = subprocess.run([sys.executable, "-m", mod, "--version"], capture_output=True,
                           text=True)
        assert r.returncode == 0 and r.stdout.startswith("physmocap "), (mod, r.stderr)


def _commands() -> list[list[str]]:
    """Every command and subcommand of the parser (new commands are covered automatically)."""
    import argparse

    from physmocap.cli import build_parser

    def walk(parser, prefix):
        out = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out.append(prefix + [name])
                    out += walk(sub, prefix + [name])
        return out
    return walk(build_parser(), [])


def test_every_command_has_help_with_example():
    cmds = _commands()
    assert {"inspect", "convert", "solve", "demo", "play", "batch", "mm"} <= {c[0] for c in cmds}
    assert ["mm", "build"] in cmds and ["mm", "run"] in cmds
    for cmd in [[]] + cmds:
        r = subprocess.run([sys.executable, "-m", "physmocap", *cmd, "--help"],
                           capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", cmd
        assert "example" in r.stdout and "physmocap " + " ".join(cmd) in r.stdout, cmd
        assert "--quiet" in r.stdout and "--verbose" in r.stdout, cmd


@pytest.mark.parametrize("args", [
    ["inspect"], ["solve", "x.c3d"], ["play", "x.bvh"], ["batch", "dir"], ["mm"],
    ["mm", "run", "db.npz"], ["convert", "a.bvh"], ["nosuchcommand"], ["batch", "d", "-o", "o",
                                                                       "--workers", "0"],
    ["inspect", "x.bvh", "--no-such-flag"], ["-q", "-v", "inspect", "x.bvh"],
    # numbers that would size a loop: a traceback (NaN, inf, negative frame counts) before
    ["mm", "run", "db.npz", "--input", "straight_walk", "-o", "o.bvh", "--duration", "nan"],
    ["play", "db.npz", "--input", "straight_walk", "-o", "o.bvh", "--duration", "inf"],
    ["play", "db.npz", "--input", "straight_walk", "-o", "o.bvh", "--duration", "-3"],
    ["render", "x.bvh", "-o", "x.gif", "--fps", "0"],
    ["avatar", "db.npz", "--tracking", "t.csv", "-o", "a.bvh", "--head-weight", "nan"],
    ["mm", "run", "db.npz", "--input", "straight_walk", "-o", "o.bvh", "--search-every", "0"],
    # not a whole number: the message named the parser's own function (_positive_int)
    ["mm", "run", "db.npz", "--input", "straight_walk", "-o", "o.bvh", "--search-every", "nan"],
])
def test_usage_errors_exit_2_with_usage_on_stderr(args):
    r = subprocess.run([sys.executable, "-m", "physmocap", *args], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and "usage:" in r.stderr, args
    assert "_positive" not in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, match", [
    # an option of the avatar's run given to extract was dropped without a word
    (["avatar", "extract", "c.bvh", "-o", "t.csv", "--truth", "c.bvh"], "--truth is for"),
    (["avatar", "extract", "c.bvh", "-o", "t.csv", "--physics"], "--physics is for"),
    (["avatar", "extract", "c.bvh", "-o", "t.csv", "--head-weight", "1"], "--head-weight is"),
    # --mode physical without --physics ran the kinematic avatar
    (["avatar", "db.npz", "--tracking", "t.csv", "-o", "a.bvh", "--mode", "physical"],
     "--mode physical is the simulated avatar's: add --physics"),
])
def test_an_option_that_would_be_ignored_is_a_usage_error(args, match, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and match in err and err.count("error:") == 1


@pytest.mark.parametrize("args", [
    ["inspect", "{bad}"], ["solve", "{bad}", "-o", "{tmp}/o.bvh"],
    ["convert", "{bad}", "{tmp}/o.bvh"], ["play", "{bad}", "-o", "{tmp}/o.bvh"],
    ["mm", "build", "{bad}", "-o", "{tmp}/db.npz"],
    ["mm", "run", "{bad}", "--input", "figure_eight", "-o", "{tmp}/o.bvh"],
    ["batch", "{bad}", "-o", "{tmp}/out"],
])
def test_a_bad_file_gives_exit_1_and_one_line(args, tmp_path, capsys):
    bad = tmp_path / "garbage.bvh"
    if args[0] in ("solve",):
        bad = tmp_path / "garbage.c3d"
    if args[:2] == ["mm", "run"]:
        bad = tmp_path / "garbage.npz"
    bad.write_bytes(b"\x00\x01 this is not a motion file \xff" * 10)
    argv = [a.format(bad=bad, tmp=tmp_path) for a in args]
    code, out, err = run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, (argv, err)
    assert lines[0].startswith("physmocap: error: ") and str(bad) in lines[0], (argv, err)
    assert "Traceback" not in err


@pytest.mark.parametrize("args, match", [
    (["convert", "{c3d}", "{tmp}/o.bvh"], "convert writes skeletal motion; a C3D holds markers"),
    (["play", "{c3d}", "-o", "{tmp}/o.bvh"], "play needs skeletal motion"),
    (["play", "{bvh}", "--input", "figure_eight", "-o", "{tmp}/o.bvh"],
     "--input drives a motion-matching database"),
    (["avatar", "extract", "{c3d}", "-o", "{tmp}/t.csv"], "extract needs skeletal motion"),
    (["avatar", "extract", "{clip}", "-o", "{tmp}/t.csv"], "no head joint found"),
    (["mm", "build", "{c3d}", "-o", "{tmp}/db.npz"], "not a BVH file or a folder of them"),
    (["mm", "build", "{tmp}/empty", "-o", "{tmp}/db.npz"], "no BVH clips found"),
])
def test_the_wrong_kind_of_input_is_one_line(args, match, data_dir, tmp_path, capsys):
    """Markers where motion is needed, a fixed motion given an input scene, a clip without a
    head for the avatar, no BVH to build from: exit 1, one line naming the file, no output."""
    from physmocap.io.deepmimic import pybullet_motion_path
    (tmp_path / "empty").mkdir()
    names = {"c3d": data_dir / "c3d/cmu/02_01.c3d", "bvh": data_dir / "bvh/cmu/16_57.bvh",
             "clip": pybullet_motion_path("humanoid3d_walk.txt"), "tmp": tmp_path}
    argv = [a.format(**names) for a in args]
    code, out, err = run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and match in lines[0], (argv, err)
    given = next(a for a in argv[1:] if a not in ("extract", "build"))
    assert lines[0].startswith("physmocap: error: ") and given in lines[0], (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]       # nothing written


@pytest.mark.parametrize("frames", [0, 1])
@pytest.mark.parametrize("args, match", [
    (["play", "{bvh}", "-o", "{tmp}/o.bvh"],
     "the reference has {n} frame(s); playback needs at least 2"),
    (["play", "{bvh}", "-o", "{tmp}/o.bvh", "--mode", "physical", "--balance", "stepping",
      "--predict"], "the reference has {n} frame(s); playback needs at least 2"),
    (["mm", "build", "{bvh}", "-o", "{tmp}/db.npz"],
     "clip 'short' has {n} frame(s) at 60 fps; at least 2 are needed"),
    (["avatar", "extract", "{bvh}", "-o", "{tmp}/t.csv"],
     "the clip has {n} frame(s); a tracking recording needs at least 2"),
])
def test_a_clip_too_short_is_one_line(args, match, frames, data_dir, tmp_path, capsys):
    """A real clip cut to 0 or 1 frames (a valid BVH: ``inspect`` and ``convert`` take it):
    playing it, building a database or extracting a tracking recording from it is one line
    naming the file, not a traceback (0 frames raised a ValueError reading the file, before;
    without that, an IndexError in play), and writes nothing."""
    from conftest import WALK_001
    text = (data_dir / WALK_001).read_text()
    head, motion = text.split("MOTION", 1)
    rows = motion.strip().splitlines()[2:2 + frames]
    bvh = tmp_path / "short.bvh"
    bvh.write_text(head + f"MOTION\nFrames: {frames}\nFrame Time: 0.0166667\n"
                   + "".join(r + "\n" for r in rows))
    argv = [a.format(bvh=bvh, tmp=tmp_path) for a in args]
    code, out, err = run(argv, capsys)
    errors = [x for x in err.splitlines() if "error" in x or "Traceback" in x]
    assert code == 1 and errors == [f"physmocap: error: {bvh}: " + match.format(n=frames)], \
        (argv, err)
    # nothing written, not even the search's .o.bvh.partial (it was left behind before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["short.bvh"]


@pytest.mark.parametrize("args, match", [
    (["convert", "{bvh}", "{tmp}/o.c3d"], "o.c3d: the output is a BVH; name it .bvh"),
    (["solve", "{c3d}", "-o", "{tmp}/o.c3d"], "o.c3d: the output is a BVH; name it .bvh"),
    (["solve", "{c3d}", "-o", "{tmp}/o.bvh", "--report", "{tmp}/r.txt"],
     "r.txt: --report is JSON; name it .json"),
    (["solve", "{c3d}", "-o", "{tmp}/o.bvh", "--c3d-out", "{tmp}/c.bvh"],
     "c.bvh: --c3d-out is a C3D; name it .c3d"),
    (["solve", "{c3d}", "-o", "{tmp}/o.bvh", "--report-html", "{tmp}/r.htm"],
     "r.htm: --report-html is an HTML page; name it .html"),
    (["view", "{bvh}", "-o", "{tmp}/v.png"], "v.png: the output is an HTML page; name it .html"),
    (["play", "{bvh}", "-o", "{tmp}/o.json"], "o.json: the output is a BVH; name it .bvh"),
    (["mm", "build", "{bvh}", "-o", "{tmp}/db.bvh"],
     "db.bvh: the output is a database (.npz); name it .npz"),
    (["mm", "run", "db.npz", "--input", "figure_eight", "-o", "{tmp}/o.bvh", "--report",
      "{tmp}/r.bvh"], "r.bvh: --report is JSON; name it .json"),
    (["avatar", "extract", "{bvh}", "-o", "{tmp}/t.bvh"],
     "t.bvh: the output is a tracking CSV; name it .csv"),
    (["avatar", "db.npz", "--tracking", "t.csv", "-o", "{tmp}/a.csv"],
     "a.csv: the output is a BVH; name it .bvh"),
])
def test_an_output_named_for_another_format_is_one_line(args, match, data_dir, tmp_path,
                                                         capsys):
    """physmocap reads a file by its suffix: a BVH written as o.c3d (as solve and convert did)
    was a broken C3D to every later command. Refused before anything is read or written."""
    names = {"c3d": data_dir / "c3d/cmu/02_01.c3d", "bvh": data_dir / "bvh/cmu/16_57.bvh",
             "tmp": tmp_path}
    argv = [a.format(**names) for a in args]
    code, out, err = run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 1 and lines == [f"physmocap: error: {tmp_path}/{match}"], (argv, err)
    assert list(tmp_path.iterdir()) == []                                  # nothing written


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc (no file can be made in it)")
@pytest.mark.parametrize("flag", ["-o", "--report", "--c3d-out"])
def test_solve_refuses_an_unwritable_output_before_solving(data_dir, tmp_path, capsys,
                                                           monkeypatch, flag):
    """The solve ran for minutes, then failed at the write (even root cannot write in /proc)."""
    import physmocap.cli.solve as cli_solve
    monkeypatch.setattr(cli_solve, "solve_and_write", lambda *a, **k: pytest.fail("solved"))
    outputs = {"-o": str(tmp_path / "o.bvh")}
    outputs[flag] = {"-o": "/proc/x.bvh", "--report": "/proc/x.json",
                     "--c3d-out": "/proc/x.c3d"}[flag]
    argv = ["solve", str(data_dir / "c3d/cmu/01_01.c3d")] + [a for kv in outputs.items()
                                                              for a in kv]
    code, out, err = run(argv, capsys)
    assert code == 1 and err.startswith(f"physmocap: error: {outputs[flag]}: cannot write in "
                                        "folder /proc (") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_avatar_takes_one_database(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        run(["avatar", "a.npz", "b.npz", "--tracking", "t.csv", "-o", str(tmp_path / "o.bvh")],
            capsys)
    assert e.value.code == 2 and "give one database" in capsys.readouterr().err


def test_unwritable_output_is_one_line(data_dir, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        code, out, err = run(["convert", str(data_dir / "bvh/games105/lab2_motion_material_idle"
                                             ".bvh"), str(ro / "o.bvh")], capsys)
    finally:
        ro.chmod(0o700)
    if os.geteuid() == 0:        # root writes anyway: then it must simply succeed
        assert code == 0
    else:
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and lines[0].startswith("physmocap: error: ")


def test_quiet_and_verbose_are_global(data_dir, tmp_path, capsys):
    src = str(data_dir / "bvh/games105/lab2_motion_material_idle.bvh")
    for argv in (["-q", "convert", src, str(tmp_path / "a.bvh")],
                 ["convert", "-q", src, str(tmp_path / "b.bvh")]):
        code, out, err = run(argv, capsys)
        assert code == 0 and out == "", argv
    code, out, err = run(["convert", src, str(tmp_path / "c.bvh")], capsys)
    assert code == 0 and out.startswith("wrote")
    from physmocap.cli import build_parser
    assert build_parser().parse_args(["-v", "inspect", "x.bvh"]).verbose is True
    assert build_parser().parse_args(["inspect", "-v", "x.bvh"]).verbose is True
    assert build_parser().parse_args(["inspect", "x.bvh"]).verbose is False


def test_multi_line_errors_are_joined(monkeypatch, capsys):
    import physmocap.cli as cli

    def bad(args):
        raise cli.PhysmocapError("first line\nsecond line", "f.c3d")
    monkeypatch.setattr(cli, "cmd_inspect", bad)
    code, out, err = run(["inspect", "f.c3d"], capsys)
    assert code == 1 and err == "physmocap: error: f.c3d: first line second line\n"


def test_running_out_of_memory_is_one_line(monkeypatch, capsys):
    """``play DB.npz --input NAME --duration 1e9`` asked numpy for 1.31 TiB: a traceback
    before."""
    import physmocap.cli as cli

    def greedy(args):
        raise MemoryError("Unable to allocate 1.31 TiB for an array with shape (60000000000, 3) "
                          "and data type float64")
    monkeypatch.setattr(cli, "cmd_play", greedy)
    code, out, err = run(["play", "db.npz", "--input", "walk", "--duration", "1e9", "-o", "o.bvh"],
                         capsys)
    assert code == 1 and err == ("physmocap: error: not enough memory (Unable to allocate 1.31 "
                                 "TiB for an array with shape (60000000000, 3) and data type "
                                 "float64); ask for less (a shorter --duration, a smaller "
                                 "input)\n")
    # a command without --duration is not told to shorten it (mm build once was)
    monkeypatch.setattr(cli, "cmd_mm_build", greedy)
    code, out, err = run(["mm", "build", "a.bvh", "-o", "db.npz"], capsys)
    assert code == 1 and err.endswith("; ask for less (a lower --fps, a smaller input)\n")
    monkeypatch.setattr(cli, "cmd_inspect", greedy)
    code, out, err = run(["inspect", "f.c3d"], capsys)
    assert code == 1 and err.endswith("; ask for less (a smaller input)\n")


def test_a_head_track_given_as_input_scene_points_to_a_scene(tmp_path, capsys):
    """A head track (as head_circle.csv) passed as --input: one line saying a scene names it."""
    csv = tmp_path / "head.csv"
    csv.write_text("t,x,y,z\n")
    code, _, err = run(["mm", "run", str(tmp_path / "db.npz"), "--input", str(csv), "-o",
                        str(tmp_path / "o.bvh")], capsys)
    assert code == 1 and err.count("\n") == 1
    assert "an input scene is a .toml or .json file (a head track .csv is named" in err


def test_a_negative_up_axis_follows_its_option(data_dir, tmp_path, capsys):
    """``--up -z`` as written in the help's list (argparse alone took -z for an option and said
    "expected one argument"); the same result as ``--up=-z``."""
    clip = str(data_dir / "bvh/cmu/16_57.bvh")
    code, spaced, _ = run(["inspect", clip, "--json", "--up", "-z"], capsys)
    assert code == 0
    code, joined, _ = run(["inspect", clip, "--json", "--up=-z"], capsys)
    assert code == 0 and json.loads(spaced) == json.loads(joined)
    assert json.loads(spaced)["up"] == "-z"
    out = tmp_path / "o.bvh"
    code, _, _ = run(["convert", clip, "-o", str(out), "--out-up", "-Y"], capsys)
    assert code == 0 and out.exists()
    # an option's name after --up is still an option: the usage error as before
    with pytest.raises(SystemExit) as exc:
        main(["inspect", clip, "--up", "-q"])
    assert exc.value.code == 2


def test_convert_round_trip(data_dir, tmp_path, capsys):
    out = tmp_path / "o.bvh"
    code, _, _ = run(["convert", str(data_dir / "bvh/games105/lab2_motion_material_idle.bvh"),
                      "-o", str(out), "--out-unit", "m", "--order", "XYZ"], capsys)
    assert code == 0 and out.read_text().startswith("HIERARCHY")
    from physmocap.io.bvh import read_bvh
    a = read_bvh(data_dir / "bvh/games105/lab2_motion_material_idle.bvh")
    b = read_bvh(out, unit="m")
    np.testing.assert_allclose(b.gpos, a.gpos, atol=1e-5)
    # the output given twice is a usage error (exit 2)
    with pytest.raises(SystemExit) as exc:
        main(["convert", str(out), str(out), "-o", str(out)])
    assert exc.value.code == 2


def test_demo_end_to_end(tmp_path, capsys):
    """The README's main job: a spoiled capture from a pybullet_data clip, solved."""
    code, out, err = run(["demo", "-o", str(tmp_path)], capsys)
    assert code == 0
    rep = json.loads((tmp_path / "report.json").read_text())
    for key in ("frames", "fps", "markers", "marker_rms_mm", "marker_max_mm",
                "per_marker_rms_mm", "gap_frames", "foot_plant_frames", "foot_skate_mm",
                "joint_limit_hits", "solve_seconds", "frames_per_second"):
        assert key in rep
    assert set(rep["outlier_frames"]) >= {"LKNE", "LSHN"}        # the swap is named
    assert (tmp_path / "solved.bvh").stat().st_size > 0 and (tmp_path / "clean.c3d").exists()
    assert "swap detected on: LKNE, LSHN" in out
    # the cleaned C3D: the swapped samples put back on the body (they were kept: the knee's
    # label on the shin marker), and every filled sample marked computed (residual 0) while
    # the measured ones keep theirs (all were 0)
    from physmocap.io.c3d import read_c3d
    clean, cap = read_c3d(tmp_path / "clean.c3d"), read_c3d(tmp_path / "capture.c3d")
    (a, z), = [s["frames"] for s in rep["damage"]["swaps"]]
    k = clean.labels.index("LKNE")
    knee_before = clean.pos[a - 5:a, k, 2].mean()
    assert abs(clean.pos[a:z, k, 2].mean() - knee_before) < 0.05 < abs(
        np.nanmean(cap.pos[a:z, cap.labels.index("LKNE"), 2]) - knee_before)
    assert np.all(clean.residual[a:z, k] == 0)
    seen = ~np.isnan(cap.pos).any(-1)
    seen[a:z, [cap.labels.index("LKNE"), cap.labels.index("LSHN")]] = False
    idx = [clean.labels.index(l) for l in cap.labels]
    assert np.all(clean.residual[:, idx][seen] > 0) and np.all(clean.residual[:, idx][~seen] == 0)
    np.testing.assert_array_equal(clean.pos[:, idx][seen], cap.pos[seen])
    # something to look at: the viewer (no extra needed) with the markers' residual lines,
    # and the page of plots where matplotlib is installed (the test extra has it)
    view = (tmp_path / "view.html").read_text()
    assert '"labels": ["' in view and "residual lines to the cmu41 landmarks" in view
    assert (tmp_path / "report.html").stat().st_size > 0
    assert f"look       {tmp_path / 'view.html'}" in out and "report.html" in out


def test_demo_without_matplotlib_still_gives_the_viewer(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)    # import fails as if not installed
    code, out, err = run(["demo", "-o", str(tmp_path)], capsys)
    assert code == 0 and "error" not in err and "warning" not in err     # (stderr: progress)
    assert (tmp_path / "view.html").exists() and not (tmp_path / "report.html").exists()
    assert "pip install 'physmocap[report]'" in out


def test_solve_rejects_a_capture_without_a_known_marker_set(data_dir, tmp_path, capsys):
    code, out, err = run(["solve", str(data_dir / "c3d-odd/emgwl.c3d"), "-o",
                          str(tmp_path / "o.bvh")], capsys)
    assert code == 1 and "fits no marker set" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.bvh").exists()


def test_demo_of_a_clip_it_lacks_is_one_line_and_leaves_no_folder(tmp_path, capsys):
    """``demo --clip`` naming no clip of pybullet_data: one line, exit 1, and no empty output
    folder left behind (found by a CLI probe helper)."""
    code, out, err = run(["demo", "--clip", "nosuch.txt", "-o", str(tmp_path / "dm")], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "nosuch" in err
    assert not (tmp_path / "dm").exists()


def test_solve_writes_bvh_report_and_clean_c3d(data_dir, tmp_path, capsys):
    from physmocap.io.bvh import read_bvh
    from physmocap.io.c3d import read_c3d

    src = data_dir / "c3d/cmu/16_57.c3d"
    code, out, err = run(["solve", str(src), "-o", str(tmp_path / "o.bvh"), "--report",
                          str(tmp_path / "r.json"), "--c3d-out", str(tmp_path / "c.c3d"), "-q"],
                         capsys)
    assert code == 0 and out == ""
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["frames"] == 268 and rep["marker_rms_mm"] < 10.0
    assert "plug_in_gait_segments" not in rep       # Vicon's joint centres, but no PiG frames
    # the finished stages kept for a resume are gone once the outputs are written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.c3d", "o.bvh", "r.json"]
    assert rep["resumed"] == []
    m = read_bvh(tmp_path / "o.bvh", unit="cm")
    assert m.n_frames == 268 and m.skeleton.names[0] == "Hips"
    clean = read_c3d(tmp_path / "c.c3d", points="all")
    markers = clean.markers_only()
    assert len(markers.labels) == 41 and not np.isnan(markers.pos).any()   # gaps filled
    assert "LeftLowerLeg_JC" in clean.labels and clean.is_virtual[clean.index("LeftLowerLeg_JC")]
    assert clean.meta["first_frame"] == 331          # the capture's frame numbers kept
    # the solve plays back on the subject's own body (its calibrated limb lengths)
    code, out, err = run(["play", str(tmp_path / "o.bvh"), "-o", str(tmp_path / "sim.bvh"),
                          "--report", str(tmp_path / "p.json"), "-q"], capsys)
    assert code == 0, err
    play = json.loads((tmp_path / "p.json").read_text())
    assert play["frames"] == 268 and play["tracking_error_m"] < 0.05


def test_solve_says_how_its_segments_move_against_the_files_own_plug_in_gait(data_dir, tmp_path,
                                                                            capsys):
    """A capture Vicon Nexus processed holds Plug-in Gait's segment frames: the report holds
    each segment's agreement, and one line says the range."""
    pig = data_dir / "c3d/pig"
    code, out, err = run(["solve", str(pig / "PiG_Motion-FlatFoot-Full.c3d"), "--static",
                          str(pig / "PiG_Calibration-FlatFoot-Full.c3d"), "-o",
                          str(tmp_path / "o.bvh"), "--report", str(tmp_path / "r.json")], capsys)
    assert code == 0, err
    seg = json.loads((tmp_path / "r.json").read_text())["plug_in_gait_segments"]
    assert len(seg) == 19 and seg["PEL"]["segment"] == "Hips" and seg["PEL"]["frames"] == 315
    assert seg["PEL"]["residual_median_deg"] < 3.0 and seg["HED"]["offset_deg"] < 2.0
    line = [ln for ln in out.splitlines() if "Plug-in Gait segments" in ln]
    assert len(line) == 1 and "pelvis 1." in line[0] and "19 segments in the report" in line[0]
    # no marker on Plug-in Gait's toes: the floor bent them, and one line says so
    toes = json.loads((tmp_path / "r.json").read_text())["toes_bent"]
    assert set(toes) == {"LeftToes", "RightToes"}
    line = [ln for ln in out.splitlines() if "toes bent at the ball" in ln]
    assert len(line) == 1 and "LeftToes" in line[0] and "RightToes" in line[0]


def test_stopped_solve_resumes_from_its_finished_stages(data_dir, tmp_path, capsys,
                                                        monkeypatch):
    from physmocap.solver import pipeline

    src = data_dir / "c3d/cmu/16_57.c3d"
    args = ["solve", str(src), "-o", str(tmp_path / "o.bvh")]

    def stopped(*a, **k):
        raise KeyboardInterrupt
    with monkeypatch.context() as m:
        m.setattr(pipeline, "solve_physical", stopped)          # Ctrl-C in the physical stage
        code, out, err = run(args, capsys)
    assert code == 130 and not (tmp_path / "o.bvh").exists()
    kept = tmp_path / ".o.bvh.partial"
    assert (kept / "kinematic.npz").exists()
    code, out, err = run(args, capsys)
    assert code == 0 and f"resumed from {kept}: kinematic solve" in out
    assert (tmp_path / "o.bvh").exists() and not kept.exists()


def test_solver_errors_name_the_capture(data_dir, tmp_path, capsys):
    src = data_dir / "c3d-odd/parameterOverflow.c3d"       # every marker sample is missing
    code, out, err = run(["solve", str(src), "-o", str(tmp_path / "o.bvh")], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and str(src) in lines[-1] and "cannot size the subject" in lines[-1]


def test_play_writes_simulated_motion_and_report(tmp_path, capsys):
    from physmocap.io.deepmimic import pybullet_motion_path

    code, out, err = run(["play", str(pybullet_motion_path("humanoid3d_walk.txt")), "-o",
                          str(tmp_path / "sim.bvh"), "--report", str(tmp_path / "p.json"), "-q"],
                         capsys)
    assert code == 0
    rep = json.loads((tmp_path / "p.json").read_text())
    for key in ("tracking_error_m", "root_assist_force_mean_n", "root_assist_force_max_n",
                "penetration_max_mm", "foot_skate_mm", "falls", "frames_per_second"):
        assert key in rep
    assert (tmp_path / "sim.bvh").stat().st_size > 0
    code, out, err = run(["play", str(tmp_path / "db.npz"), "-o", str(tmp_path / "x.bvh")], capsys)
    assert code == 1 and "--input" in err and len(err.strip().splitlines()) == 1


def test_play_physical_with_stepping_balance(tmp_path, capsys):
    """``--mode physical --balance stepping``: the demo clip (1.26 s) plays without a root
    assist and without a fall (with ``--balance none`` it falls at 1.56 s of a longer walk);
    ``--balance stepping`` without ``--mode physical`` is a usage error (exit 2)."""
    from physmocap.io.deepmimic import pybullet_motion_path
    clip = str(pybullet_motion_path("humanoid3d_walk.txt"))
    code, out, err = run(["play", clip, "-o", str(tmp_path / "sim.bvh"), "--report",
                          str(tmp_path / "p.json"), "--mode", "physical", "--balance",
                          "stepping", "-q"], capsys)
    assert code == 0
    rep = json.loads((tmp_path / "p.json").read_text())
    assert rep["mode"] == "physical" and rep["root_assist_force_max_n"] == 0.0
    assert rep["falls"] == []
    with pytest.raises(SystemExit) as e:
        run(["play", clip, "-o", str(tmp_path / "x.bvh"), "--balance", "stepping"], capsys)
    assert e.value.code == 2


def test_play_says_when_the_body_fell(tmp_path, capsys):
    """A fully physical body without balance feedback falls within 2 s of the demo walk looped to
    4 s: the summary says when and why, as the report's first fall has it (a bare count left
    the user to dig the time out of the JSON)."""
    from physmocap.cli.play import _falls_text
    from physmocap.io.deepmimic import pybullet_motion_path
    clip = str(pybullet_motion_path("humanoid3d_walk.txt"))
    code, out, err = run(["play", clip, "-o", str(tmp_path / "sim.bvh"), "--report",
                          str(tmp_path / "p.json"), "--mode", "physical", "--loop", "4"], capsys)
    assert code == 0
    rep = json.loads((tmp_path / "p.json").read_text())
    falls = rep["falls"]
    assert falls and falls[0]["since_s"] < 2.5
    assert f"falls: {_falls_text(falls)};" in out
    # the error while upright, beside the mean over the whole take (dominated by the body
    # lying while its reference walks on)
    up = rep["tracking_error_upright_m"]
    assert up < 0.2 < rep["tracking_error_m"]
    assert f"({up:.3f} m until the first fall)" in out
    assert f"the first from {falls[0]['since_s']:.2f} s, {falls[0]['reason']}" in out
    # how far it got, beside its reference, until then
    w = rep["walked_m"]
    assert w["until_s"] == pytest.approx(falls[0]["since_s"], abs=1e-3)
    assert w["body"] < w["reference"]
    assert (f"pose error {rep['pose_error_m']:.3f} m (joints about the root); "
            f"walked {w['body']:.1f} m, its reference {w['reference']:.1f} m until the first "
            f"fall began at {w['until_s']:.2f} s") in out
    assert _falls_text([]) == "none"
    two = [{"since_s": 1.5, "reason": "head low"}, {"since_s": 9.0, "reason": "unstable"}]
    assert _falls_text(two) == "2 (the first from 1.50 s, head low)"


def test_play_recover_puts_the_body_back_on_its_feet(tmp_path, capsys):
    """``--recover SECONDS``: the demo walk without balance falls within 2 s; put back on its
    feet 0.5 s after each fall is detected, it falls again, every fall counted and said; a
    negative delay is a usage error."""
    from physmocap.io.deepmimic import pybullet_motion_path
    clip = str(pybullet_motion_path("humanoid3d_walk.txt"))
    code, out, err = run(["play", clip, "-o", str(tmp_path / "sim.bvh"), "--report",
                          str(tmp_path / "p.json"), "--mode", "physical", "--loop", "6",
                          "--recover", "0.5"], capsys)
    assert code == 0
    falls = json.loads((tmp_path / "p.json").read_text())["falls"]
    back = [f for f in falls if "recovered_s" in f]
    assert len(falls) >= 2 and len(back) >= len(falls) - 1
    for f in back:
        assert f["recovered_s"] == pytest.approx(f["time_s"] + 0.5, abs=0.04)
    times = "times" if len(back) > 1 else "time"
    assert f"put back on its feet {len(back)} {times})" in out
    with pytest.raises(SystemExit) as e:
        run(["play", clip, "-o", str(tmp_path / "x.bvh"), "--recover", "-1"], capsys)
    assert e.value.code == 2


def test_play_loop_repeats_the_gait_cycle(tmp_path, capsys):
    """``--loop SECONDS``: the clip's most closed gait cycle repeated until it lasts that long
    (here the demo walk's 1.26 s, itself one cycle, to 4 s), said in the report; a clip too short
    for a cycle and a bad number are one-line errors."""
    from physmocap.io.deepmimic import pybullet_motion_path
    clip = str(pybullet_motion_path("humanoid3d_walk.txt"))
    code, out, err = run(["play", clip, "-o", str(tmp_path / "sim.bvh"), "--report",
                          str(tmp_path / "p.json"), "--loop", "4"], capsys)
    assert code == 0 and "looped: frames" in out
    # the assist carries the body along its reference's path: no walked line
    assert "walked" not in out
    rep = json.loads((tmp_path / "p.json").read_text())
    loop = rep["loop"]
    assert 0.8 <= loop["cycle_s"] <= 2.0 and loop["seconds"] >= 4.0
    assert loop["seconds"] < 4.0 + loop["cycle_s"]
    from physmocap.io.bvh import read_bvh, write_bvh
    sim = read_bvh(tmp_path / "sim.bvh")
    assert sim.duration >= 4.0 - 1e-6
    short = tmp_path / "short.bvh"
    write_bvh(sim[:20], short)
    for extra in (["--loop", "4"], ["--loop", "-1"], ["--loop", "nan"]):
        path = short if extra[1] == "4" else clip
        code, out, err = run(["play", str(path), "-o", str(tmp_path / "x.bvh")] + extra, capsys)
        assert code == 1 and "--loop" in err and len(err.strip().splitlines()) == 1
    # a live input has no clip to loop: said, not ignored
    code, out, err = run(["play", str(tmp_path / "db.npz"), "--input", "straight_walk", "-o",
                          str(tmp_path / "x.bvh"), "--loop", "4"], capsys)
    assert code == 1 and "--loop" in err and len(err.strip().splitlines()) == 1


def test_a_reader_that_goes_away_is_not_an_error(data_dir):
    """``physmocap inspect FILE | head -1``: 'physmocap: error: Broken pipe' and exit 1 (or
    Python's 'Exception ignored' at exit) before; now quiet, 141 as a shell reports SIGPIPE."""
    p = subprocess.Popen([sys.executable, "-m", "physmocap", "inspect",
                          str(data_dir / "c3d/cmu/16_57.c3d"), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read()
    p.wait()
    p.stderr.close()
    assert p.returncode == 141 and err == b""
