"""Data safety: inputs are never modified, outputs appear whole or not at all, an existing output
is replaced only by a complete new one, and a run stopped by a signal leaves no half file and no
temporary file.

CLI commands run in subprocesses directly on the shared data (read-only use; every file there is
hashed before and after). Outputs go to ``tmp_path``.
"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BANDAI = "bvh/bandai-namco/ds2_normal_locomotion"


def physmocap(*args, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "physmocap", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def snapshot(folder: Path) -> dict:
    """sha256 and mtime of every file under ``folder``."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(folder))] = (hashlib.sha256(p.read_bytes()).hexdigest(),
                                               p.stat().st_mtime_ns)
    return out


def strays(folder: Path) -> list[str]:
    """Temporary files an atomic writer left behind (hidden ``.name.*.tmp*``)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and "tmp" in p.name)


def test_cli_commands_never_modify_inputs(data_dir, tmp_path):
    before = snapshot(data_dir)
    runs = [
        ("inspect", data_dir / "c3d/cmu/02_01.c3d"),
        ("inspect", data_dir / "bvh/cmu/131_01.bvh", "--json"),
        ("inspect", data_dir / "c3d-odd/bad_parameter_section.c3d"),       # exit 1
        ("convert", data_dir / "bvh/games105/lab2_motion_material_run_forward.bvh",
         tmp_path / "conv.bvh"),
        ("solve", data_dir / "c3d/cmu/02_01.c3d", "-o", tmp_path / "s.bvh", "--report",
         tmp_path / "s.json", "--c3d-out", tmp_path / "clean.c3d", "-q"),
        ("solve", data_dir / "c3d-odd/giant.c3d", "-o", tmp_path / "g.bvh"),  # exit 1
        ("mm", "build", data_dir / BANDAI / "dataset-2_walk_normal_001.bvh",
         data_dir / BANDAI / "dataset-2_run_normal_001.bvh", "-o", tmp_path / "db.npz", "-q"),
        ("mm", "run", tmp_path / "db.npz", "--input", "straight_walk", "--duration", "2",
         "-o", tmp_path / "mm.bvh", "-q"),
    ]
    codes = [physmocap(*r).returncode for r in runs]
    assert codes == [0, 0, 1, 0, 0, 1, 0, 0]
    assert snapshot(data_dir) == before          # same files, same bytes, not even touched
    assert strays(tmp_path) == []


def test_output_over_its_own_input_is_refused(data_dir, tmp_path):
    """``convert a.bvh a.bvh`` would replace the input: refused, the file is untouched (on a
    copy: as root the read-only shared files could be overwritten). Every command that writes
    a file, with an output naming any of its inputs (a database, an input scene, a tracking
    file, a truth clip, a scene, a report to rebuild, a standing clip): ``play db.npz --input
    straight_walk -o db.npz`` had replaced the database with the simulated BVH, ``avatar
    extract a.bvh -o a.bvh`` the clip with a CSV. The check comes first, so the inputs need
    only exist."""
    src = tmp_path / "walk.bvh"
    src.write_bytes((data_dir / "bvh/cmu/131_01.bvh").read_bytes())
    others = {n: tmp_path / n for n in ("db.npz", "track.csv", "scene.toml", "report.json",
                                        "stand.bvh", "capture.c3d", "env.toml")}
    for n, p in others.items():
        p.write_bytes(src.read_bytes() if n == "stand.bvh" else b"an input " + n.encode())
    db, track, scene, rep, stand, c3d, env = others.values()
    out = tmp_path / "out.bvh"
    before = snapshot(tmp_path)
    for args in (("convert", src, src), ("convert", src, tmp_path / "." / "walk.bvh"),
                 ("mm", "build", src, "-o", src),
                 ("mm", "build", src, "--stand", stand, "-o", stand),
                 ("mm", "run", db, "--input", "straight_walk", "-o", db),
                 ("mm", "run", db, "--input", scene, "-o", out, "--report", scene),
                 ("play", src, "-o", out, "--report", src),
                 ("play", src, "-o", env, "--scene", env),
                 ("play", db, "--input", "straight_walk", "-o", db),
                 ("play", db, "--input", scene, "-o", scene),
                 ("play", db, "--input", "straight_walk", "-o", out, "--scene", env,
                  "--report", env),
                 ("avatar", "extract", src, "-o", src),
                 ("avatar", db, "--tracking", track, "-o", track),
                 ("avatar", db, "--tracking", track, "-o", db),
                 ("avatar", db, "--tracking", track, "-o", out, "--truth", src, "--report", src),
                 ("solve", c3d, "-o", out, "--scene", env, "--report", env),
                 ("view", src, "-o", src),
                 ("render", src, "-o", src),
                 ("report", rep, "-o", rep)):
        r = physmocap(*args)
        assert r.returncode == 1 and "overwrite" in r.stderr and r.stderr.count("\n") == 1, \
            (args, r.stderr)
    assert snapshot(tmp_path) == before


def test_failed_run_keeps_the_existing_output(data_dir, tmp_path):
    out = tmp_path / "out.bvh"
    out.write_text("old result\n")
    r = physmocap("solve", data_dir / "c3d-odd/Empty.c3d", "-o", out)
    assert r.returncode == 1 and out.read_text() == "old result\n"
    r = physmocap("convert", data_dir / "bvh/cmu/131_01.bvh", out, "--unit", "furlong")
    assert r.returncode == 1 and out.read_text() == "old result\n"
    r = physmocap("convert", data_dir / "bvh/cmu/131_01.bvh", out)
    assert r.returncode == 0 and out.read_text().startswith("HIERARCHY")   # replaced, whole
    assert strays(tmp_path) == []


# A child that runs the CLI with the final fsync of every atomic write slowed down: the signal
# arrives while the complete temporary file exists and the rename has not happened.
SLOW_WRITE = textwrap.dedent("""
    import os, signal, sys, time
    # Ctrl-C as in a terminal: a test run started in the background (nohup, `cmd &`) hands its
    # children SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    signal.signal(signal.SIGINT, signal.default_int_handler)
    def slow_fsync(fd):
        print("WRITING", flush=True)
        time.sleep(60)
    os.fsync = slow_fsync
    from physmocap.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_write_leaves_old_output_and_no_temp(data_dir, tmp_path, sig, code):
    out = tmp_path / "out.bvh"
    out.write_text("old result\n")
    p = subprocess.Popen([sys.executable, "-c", SLOW_WRITE, "convert",
                          str(data_dir / "bvh/cmu/131_01.bvh"), str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert p.stdout.readline().strip() == "WRITING"
        assert len(strays(tmp_path)) == 1                 # the new file, complete, not renamed
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == code and err.strip().startswith("physmocap: ")
    assert out.read_text() == "old result\n"
    assert strays(tmp_path) == []


def test_sigterm_during_a_real_solve_leaves_nothing(data_dir, tmp_path):
    """Stopped mid-solve (no patching): no output, no report, no temporary file."""
    before = snapshot(data_dir)
    p = subprocess.Popen([sys.executable, "-m", "physmocap", "solve",
                          str(data_dir / "c3d/cmu/01_01.c3d"), "-o", str(tmp_path / "s.bvh"),
                          "--report", str(tmp_path / "s.json"), "--c3d-out",
                          str(tmp_path / "c.c3d")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        time.sleep(4.0)
        assert p.poll() is None, "the solve finished before the signal; use a longer take"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 143 and "terminated" in err
    assert sorted(os.listdir(tmp_path)) == []
    assert snapshot(data_dir) == before


def test_an_output_never_replaces_a_shipped_scene(tmp_path, monkeypatch, capsys):
    """A shipped scene named by its name (``--input straight_walk``, ``--scene bar``,
    ``--body humanoid``, ``--markerset cmu41``) is an input too, and so is the recording a head
    input scene reads: an output path that is one of those files is refused in one line. In
    process, with the shipped scenes moved to a copy (so that a regression writes over the
    copy, not over the package)."""
    import shutil

    from physmocap import scene
    from physmocap.cli import main

    copy = tmp_path / "scenes"
    shutil.copytree(ROOT / "scenes", copy)
    monkeypatch.setattr(scene, "scene_dirs", lambda: [copy])
    db, cap = tmp_path / "db.npz", tmp_path / "capture.c3d"
    for p in (db, cap):
        p.write_bytes(b"an input")
    before = snapshot(copy)
    for args in (("mm", "run", db, "--input", "straight_walk", "-o",
                  copy / "inputs/straight_walk.toml"),
                 ("play", db, "--input", "figure_eight", "-o", tmp_path / "o.bvh", "--report",
                  copy / "inputs/figure_eight.toml"),
                 ("play", db, "--input", "straight_walk", "-o", copy / "environments/bar.toml",
                  "--scene", "bar"),
                 ("play", db, "--input", "head_circle", "-o", copy / "inputs/head_circle.csv"),
                 ("solve", cap, "-o", copy / "bodies/humanoid.toml"),
                 ("solve", cap, "-o", copy / "markersets/cmu41.toml", "--markerset", "cmu41")):
        code = main([str(a) for a in args])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 1 and len(err) == 1 and "overwrite" in err[0], (args, err)
    assert snapshot(copy) == before
