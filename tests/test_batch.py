"""Capture libraries: discovery and static pairing, one failure not stopping the rest, summary,
resume after a finished or killed run, and the Dask path giving the same BVH bytes."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from physmocap.batch import (BatchSettings, Take, check_done, discover, format_summary,
                             is_static_name, run_batch)
from physmocap.errors import PhysmocapError

FRAMES = 80          # short takes keep the solves to a second or two each


def _write(path: Path, frames: int = FRAMES, seed: int = 0, start: int = 0) -> Path:
    from physmocap.demo import make_demo_capture
    from physmocap.io.c3d import write_c3d
    from physmocap.markers import MarkerTrajectories

    cap, _ = make_demo_capture(seed=seed)
    short = MarkerTrajectories(cap.labels, cap.fps, cap.pos[start:start + frames], subject="demo")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_c3d(short, path)
    return path


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """Three good takes (one with a static trial) and one broken file."""
    lib = tmp_path_factory.mktemp("lib")
    _write(lib / "s1" / "S1_Static.c3d", seed=1, start=40)
    _write(lib / "s1" / "S1_Walk_01.c3d", seed=2)
    _write(lib / "s2" / "walk.c3d", seed=3, start=60)
    (lib / "broken").mkdir()
    (lib / "broken" / "bad.c3d").write_bytes(b"not a c3d file at all" * 20)
    return lib


@pytest.fixture(scope="module")
def reference(library, tmp_path_factory) -> tuple[Path, object]:
    """The library solved once with two local worker processes."""
    out = tmp_path_factory.mktemp("ref")
    return out, run_batch(library, out, workers=2)


def _bvh_bytes(out: Path) -> dict:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.bvh"))}


# --- discovery --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, static", [
    ("PiG_Calibration-FlatFoot-Full.c3d", True), ("S01_Static.c3d", True),
    ("static01.c3d", True), ("subj_cal.c3d", True), ("PiG_Motion-FlatFoot-Full.c3d", False),
    ("calf_raise.c3d", False), ("Statics.c3d", False), ("02_01.c3d", False),
])
def test_static_naming_rule(name, static):
    assert is_static_name(name) is static


def test_real_library_pairs_pig_static(data_dir):
    takes = {t.name: t for t in discover(data_dir / "c3d")}
    assert set(takes) == {"c3dorg/nexgen_test1_metres", "cmu/01_01", "cmu/02_01", "cmu/16_57",
                          "pig/PiG_Motion-FlatFoot-Full"}
    assert takes["pig/PiG_Motion-FlatFoot-Full"].static.endswith(
        "pig/PiG_Calibration-FlatFoot-Full.c3d")
    assert all(takes[n].static is None for n in takes if not n.startswith("pig"))


def test_pairing_prefers_same_words_then_the_only_static(tmp_path):
    for f in ("a/X_Static.c3d", "a/Y_Cal.c3d", "a/Y_Motion.c3d", "a/X_trial.c3d", "a/Z.c3d",
              "b/T_Static.c3d", "b/run.c3d", "c/free.c3d", ".hidden/h.c3d", "a/notes.txt"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes(b"")
    takes = {t.name: t.static and Path(t.static).name for t in discover(tmp_path)}
    # a/Z has two static trials in its folder and no name match: none is guessed.
    assert takes == {"a/X_trial": "X_Static.c3d", "a/Y_Motion": "Y_Cal.c3d", "a/Z": None,
                     "b/run": "T_Static.c3d", "c/free": None}


def test_manifest_overrides_and_excludes(tmp_path):
    for f in ("s/walk.c3d", "s/tpose.c3d", "s/run.c3d", "s/S_static.c3d", "odd/x.c3d"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes(b"")
    (tmp_path / "physmocap_batch.toml").write_text(
        'exclude = ["odd/*"]\n[static]\n"s/walk.c3d" = "s/tpose.c3d"\n"s/run.c3d" = ""\n')
    takes = {t.name: t.static and Path(t.static).name for t in discover(tmp_path)}
    assert takes == {"s/walk": "tpose.c3d", "s/run": None}


@pytest.mark.parametrize("text, pattern", [
    ('[static]\n"nope.c3d" = ""\n', "does not exist: nope.c3d"),
    ('[static]\n"a.c3d" = "gone.c3d"\n', "does not exist: gone.c3d"),
    ('include = ["x"]\n', "unknown manifest keys include"),
    ('static = 3\n', "must be a table"),
    ('[static\n', "manifest"),
])
def test_bad_manifest(tmp_path, text, pattern):
    (tmp_path / "a.c3d").write_bytes(b"")
    (tmp_path / "physmocap_batch.toml").write_text(text)
    with pytest.raises(PhysmocapError, match=pattern if pattern != "manifest" else None) as e:
        discover(tmp_path)
    assert "physmocap_batch.toml" in str(e.value)


def test_discovery_errors(tmp_path):
    with pytest.raises(PhysmocapError, match="not a folder"):
        discover(tmp_path / "missing")
    with pytest.raises(PhysmocapError, match="manifest not found"):
        discover(tmp_path, manifest=tmp_path / "m.toml")
    with pytest.raises(PhysmocapError, match="no motion captures"):
        run_batch(tmp_path, tmp_path / "out")
    # an output that is a file (was "File exists" from mkdir, which did not say what to do)
    (tmp_path / "out.bvh").write_text("x")
    with pytest.raises(PhysmocapError, match="is a file; batch writes into a folder"):
        run_batch(tmp_path, tmp_path / "out.bvh")
    assert (tmp_path / "out.bvh").read_text() == "x"
    # the input folder as the output: refused before anything is written among the captures
    (tmp_path / "a.c3d").write_bytes(b"")
    with pytest.raises(PhysmocapError, match="is the input folder"):
        run_batch(tmp_path, tmp_path / ".")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.c3d", "out.bvh"]
    (tmp_path / "a.c3d").unlink()
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "a.c3d").write_bytes(b"")
    (lib / "A.C3D").write_bytes(b"")
    # on a case-sensitive file system (the count was 3 with ``out`` in it, which run_batch
    # above never makes, so this never ran)
    assert len(list(lib.iterdir())) == 2 or sys.platform in ("darwin", "win32")
    if len(list(lib.iterdir())) == 2:
        with pytest.raises(PhysmocapError, match="two captures would write the same outputs"):
            discover(lib)


def test_one_batch_at_a_time_per_output_folder(tmp_path):
    import fcntl

    (tmp_path / "a.c3d").write_bytes(b"")
    (tmp_path / "out").mkdir()
    with open(tmp_path / "out" / ".physmocap_batch.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        with pytest.raises(PhysmocapError, match="another physmocap batch"):
            run_batch(tmp_path, tmp_path / "out", workers=0)


def test_an_output_that_would_replace_a_capture_is_refused(tmp_path):
    """The output folder above the input folder: take q/X's cleaned capture is P/q/X.clean.c3d,
    itself a capture (take X.clean), which it replaced (an audit's finding)."""
    (tmp_path / "q" / "q").mkdir(parents=True)
    (tmp_path / "q" / "q" / "X.c3d").write_bytes(b"take")
    (tmp_path / "q" / "X.clean.c3d").write_bytes(b"capture")
    with pytest.raises(PhysmocapError, match="take q/X's output would overwrite an input file"):
        run_batch(tmp_path / "q", tmp_path, BatchSettings(clean_c3d=True), workers=0)
    assert (tmp_path / "q" / "X.clean.c3d").read_bytes() == b"capture"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q"]          # nothing written


@pytest.mark.parametrize("settings, match", [
    (BatchSettings(up="q"), "unknown up axis 'q'"),
    (BatchSettings(body="nosuch"), "unknown body"),
    (BatchSettings(markerset="nosuch"), "unknown marker set"),
])
def test_shared_settings_are_checked_before_any_take(tmp_path, settings, match):
    """Each take failed alone, said only as '2 of 2 takes failed'."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.c3d").write_bytes(b"")
    with pytest.raises(PhysmocapError, match=match):
        run_batch(tmp_path / "in", tmp_path / "out", settings, workers=0)
    assert not (tmp_path / "out").exists()


def test_output_folder_inside_input_is_not_searched(tmp_path):
    (tmp_path / "a.c3d").write_bytes(b"")
    (tmp_path / "out" / "x").mkdir(parents=True)
    (tmp_path / "out" / "x" / "old.c3d").write_bytes(b"")
    assert [t.name for t in discover(tmp_path, tmp_path / "out")] == ["a"]


# --- solving a library ------------------------------------------------------------------------

def test_batch_solves_every_take_and_one_failure_does_not_stop_the_rest(library, reference):
    out, s = reference
    rows = {r["take"]: r for r in s.rows}
    assert list(rows) == ["broken/bad", "s1/S1_Walk_01", "s2/walk"]
    assert [rows[n]["status"] for n in rows] == ["failed", "solved", "solved"]
    assert str(library / "broken" / "bad.c3d") in rows["broken/bad"]["reason"]
    assert rows["s1/S1_Walk_01"]["static"].endswith("S1_Static.c3d")
    for n in ("s1/S1_Walk_01", "s2/walk"):
        r = rows[n]
        assert r["frames"] == FRAMES and 0.5 < r["marker_rms_mm"] < 10.0
        rep = json.loads((out / f"{n}.report.json").read_text())
        assert rep["frames"] == FRAMES and rep["marker_rms_mm"] == r["marker_rms_mm"]
        assert rep["static"] == r["static"]
    assert (out / "broken" / "bad.failed.json").is_file()
    assert not (out / "broken" / "bad.bvh").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"] == {"solved": 2, "skipped": 0, "failed": 1}
    csv_lines = (out / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("take,status,frames") and len(csv_lines) == 4
    text = format_summary(s)
    assert "3 takes: 2 solved, 0 up to date, 1 failed" in text and "S1_Static.c3d" in text


def test_rerun_does_nothing_and_is_fast(library, reference):
    out, first = reference
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.suffix in (".bvh", ".json")
              and not p.name.startswith("summary")}
    t0 = time.perf_counter()
    s = run_batch(library, out, workers=2)
    seconds = time.perf_counter() - t0
    assert s.counts() == {"solved": 0, "skipped": 2, "failed": 1}
    assert seconds < 2.0, seconds
    assert before == {p: p.stat().st_mtime_ns for p in before}            # nothing rewritten
    # The skipped rows keep the figures of the run that made them.
    firsts = {r["take"]: r["marker_rms_mm"] for r in first.rows}
    assert {r["take"]: r["marker_rms_mm"] for r in s.rows} == firsts


def test_up_to_date_check(library, reference, tmp_path):
    out, _ = reference
    settings = BatchSettings()
    take = {t.name: t for t in discover(library)}
    assert check_done(take["s2/walk"], out, settings)["status"] == "skipped"
    assert check_done(take["s2/walk"], out, BatchSettings(clean_c3d=True)) is None
    # A copy of library and outputs (stamps moved along) with new mtimes but the same bytes is
    # still up to date: the hashes are compared when size or mtime differ.
    lib2, out2 = tmp_path / "lib", tmp_path / "out"
    shutil.copytree(library, lib2)
    shutil.copytree(out, out2)
    for p in out2.rglob("*.done.json"):
        p.write_text(p.read_text().replace(str(out), str(out2)))
    os.utime(lib2 / "s2" / "walk.c3d", ns=(1, 1))
    walk = Take("s2/walk", str(lib2 / "s2" / "walk.c3d"))
    walk1 = Take("s1/S1_Walk_01", str(lib2 / "s1" / "S1_Walk_01.c3d"),
                 str(lib2 / "s1" / "S1_Static.c3d"))
    assert check_done(walk, out2, settings)["status"] == "skipped"
    assert check_done(walk1, out2, settings)["status"] == "skipped"
    # Changed input bytes: not up to date.
    _write(lib2 / "s2" / "walk.c3d", seed=9)
    assert check_done(walk, out2, settings) is None
    # A changed static trial re-solves the take that uses it; restored bytes are fine again.
    _write(lib2 / "s1" / "S1_Static.c3d", seed=7)
    assert check_done(walk1, out2, settings) is None
    shutil.copy(library / "s1" / "S1_Static.c3d", lib2 / "s1" / "S1_Static.c3d")
    assert check_done(walk1, out2, settings)["status"] == "skipped"
    # A damaged or missing output: not up to date.
    bvh = out2 / "s1" / "S1_Walk_01.bvh"
    data = bvh.read_bytes()
    bvh.write_bytes(data[:-2] + (b"0" if data[-2:-1] != b"0" else b"1") + data[-1:])
    assert check_done(walk1, out2, settings) is None
    bvh.unlink()
    assert check_done(walk1, out2, settings) is None


def test_a_marker_set_file_counts_by_its_contents(tmp_path):
    f = tmp_path / "my_set.toml"
    f.write_text("a = 1\n")
    k1 = BatchSettings(markerset=str(f)).key()
    f.write_text("a = 2\n")
    assert BatchSettings(markerset=str(f)).key() != k1


def test_a_shipped_scene_counts_by_its_contents(tmp_path, monkeypatch, project_root):
    """New scene data in the same version solves again: a shipped name counts by the file it
    names, ``auto`` by every shipped marker set (the headband's tilt moved every solved head)."""
    import shutil
    scenes = tmp_path / "scenes"
    shutil.copytree(project_root / "scenes", scenes)
    monkeypatch.setenv("PHYSMOCAP_SCENES", str(scenes))      # searched first
    names = ("auto", "cmu41", "plugin_gait_fullbody")
    before = {m: BatchSettings(markerset=m).key() for m in names}
    body = BatchSettings().key()
    with open(scenes / "markersets" / "cmu41.toml", "a") as f:
        f.write("# edited\n")
    after = {m: BatchSettings(markerset=m).key() for m in before}
    assert after["auto"] != before["auto"] and after["cmu41"] != before["cmu41"]
    assert after["plugin_gait_fullbody"] == before["plugin_gait_fullbody"]
    assert after["cmu41"]["body_sha256"] == body["body_sha256"]
    with open(scenes / "bodies" / "humanoid.toml", "a") as f:
        f.write("# edited\n")
    assert BatchSettings().key()["body_sha256"] != body["body_sha256"]


def test_a_take_from_an_older_solver_solves_again(monkeypatch):
    """A change to the solver within one version (``SOLVER_REVISION``: the plants that let go
    moved every solved foot and pelvis) is part of the stamp, so old takes solve again."""
    from physmocap.solver import pipeline
    before = BatchSettings().key()
    monkeypatch.setattr(pipeline, "SOLVER_REVISION", pipeline.SOLVER_REVISION + 1)
    after = BatchSettings().key()
    assert after != before and after["solver_revision"] == before["solver_revision"] + 1


def test_a_take_that_holds_plug_in_gaits_solve_is_compared_with_it(data_dir, tmp_path):
    """As ``solve --report``: the take's report holds ``plug_in_gait_segments``."""
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("PiG_Motion-FlatFoot-Full.c3d", "PiG_Calibration-FlatFoot-Full.c3d"):
        shutil.copy(data_dir / "c3d/pig" / name, lib / name)
    s = run_batch(lib, tmp_path / "out", workers=1)
    assert [r["status"] for r in s.rows] == ["solved"]
    rep = json.loads((tmp_path / "out" / "PiG_Motion-FlatFoot-Full.report.json").read_text())
    assert rep["plug_in_gait_segments"]["PEL"]["residual_median_deg"] < 3.0


def test_killed_run_loses_no_finished_take(library, reference, tmp_path):
    """Kill a one-worker run as soon as its first take is stamped; the rerun solves only the
    rest, and every BVH equals the uninterrupted run's bytes."""
    out = tmp_path / "out"
    # A new session, killed as a whole: the run and its worker process die together.
    proc = subprocess.Popen([sys.executable, "-m", "physmocap", "batch", str(library), "-o",
                             str(out), "--workers", "1", "-q"], stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list(out.rglob("*.done.json")):
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.2)
    finished = [p for p in out.rglob("*.done.json")]
    assert len(finished) == 1
    stamps = {p: p.read_bytes() for p in finished}
    s = run_batch(library, out, workers=1)
    status = {r["take"]: r["status"] for r in s.rows}
    for p in finished:
        take = p.relative_to(out).as_posix()[:-len(".done.json")]
        assert status[take] == "skipped"
        assert p.read_bytes() == stamps[p]                               # not redone
    assert sorted(status.values()).count("solved") == 2 - len(finished)
    assert _bvh_bytes(out) == _bvh_bytes(reference[0])


def test_a_crashing_take_is_reported_and_retried(library, reference, tmp_path, monkeypatch):
    """An unexpected exception in one take (not bad input) fails that take only, leaves no
    stamp, and the next run solves it."""
    import physmocap.solver.pipeline as pipeline

    out = tmp_path / "out"
    shutil.copytree(reference[0], out)
    (out / "s2" / "walk.done.json").unlink()          # as if s2/walk had never finished
    real = pipeline.solve_capture

    def boom(*a, **k):
        raise RuntimeError("simulated crash\nwith a second line")
    monkeypatch.setattr(pipeline, "solve_capture", boom)
    s = run_batch(library, out, workers=0)                  # in this process, to patch it
    rows = {r["take"]: r for r in s.rows}
    assert rows["s2/walk"]["status"] == "failed"
    assert rows["s2/walk"]["reason"] == "RuntimeError: simulated crash with a second line"
    assert rows["s1/S1_Walk_01"]["status"] == "skipped"
    assert not (out / "s2" / "walk.done.json").exists()
    assert not (out / "s2" / "walk.failed.json").exists()
    monkeypatch.setattr(pipeline, "solve_capture", real)
    s = run_batch(library, out, workers=1)
    assert {r["take"]: r["status"] for r in s.rows}["s2/walk"] == "solved"
    assert _bvh_bytes(out) == _bvh_bytes(reference[0])


def test_dask_cluster_gives_identical_bvh(library, reference, tmp_path):
    distributed = pytest.importorskip("distributed") if not os.environ.get("CI") else \
        __import__("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        s = run_batch(library, tmp_path / "out", scheduler=cluster.scheduler_address)
    assert s.counts() == {"solved": 2, "skipped": 0, "failed": 1}
    ref = _bvh_bytes(reference[0])
    assert len(ref) == 2 and _bvh_bytes(tmp_path / "out") == ref


def test_unreachable_scheduler_is_one_error(library, tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr("physmocap.batch.SCHEDULER_TIMEOUT", "1s")
    with pytest.raises(PhysmocapError, match="cannot reach the Dask scheduler"):
        run_batch(library, tmp_path / "out", scheduler="tcp://127.0.0.1:1")


def test_a_scheduler_without_dask_installed_is_one_error(library, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)          # import fails as if absent
    with pytest.raises(PhysmocapError, match=r"--scheduler needs Dask's distributed: pip "
                                             r"install 'physmocap\[cluster\]'"):
        run_batch(library, tmp_path / "out", scheduler="tcp://127.0.0.1:1")


def test_cli_batch_prints_summary_and_exits_1_on_a_failed_take(library, reference, capsys):
    from physmocap.cli import main

    code = main(["batch", str(library), "-o", str(reference[0])])
    out, err = capsys.readouterr()
    assert code == 1
    assert "s1/S1_Walk_01" in out and "2 up to date, 1 failed" in out
    lines = err.strip().splitlines()
    assert lines[-1] == (f"physmocap: error: {library}: 1 of 3 takes failed (reasons in "
                         f"{reference[0] / 'summary.csv'})")


def _long_take(lib: Path) -> Path:
    """One take of ~1200 frames (the demo capture tiled): its physical stage runs seconds."""
    from physmocap.demo import make_demo_capture
    from physmocap.io.c3d import write_c3d
    from physmocap.markers import MarkerTrajectories
    cap, _ = make_demo_capture()
    pos = np.concatenate([cap.pos] * 8)
    lib.mkdir(parents=True, exist_ok=True)
    write_c3d(MarkerTrajectories(cap.labels, cap.fps, pos, subject="demo"), lib / "long.c3d")
    return lib


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, POSIX signals")
@pytest.mark.parametrize("whom", ["batch", "worker"])
def test_sigterm_stops_a_running_take_at_once(tmp_path, whom):
    """SIGTERM to the batch alone (kill PID, docker stop) let its running take go on to the end
    (minutes for a long take); to a worker alone it killed the worker without unwinding (a
    temporary file left, the take stamped failed). Now either stops the take where it is: exit
    143, no output, no stamp, no temporary file, its checkpoint kept for the next run."""
    lib, out = _long_take(tmp_path / "lib"), tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "physmocap", "batch", str(lib), "-o",
                             str(out), "--workers", "1", "-q"], stderr=subprocess.PIPE,
                            text=True)
    stage = out / ".long.bvh.partial" / "kinematic.npz"
    deadline = time.time() + 300
    while time.time() < deadline and not stage.exists():
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    workers = [c for c in _children(proc.pid)
               if "resource_tracker" not in Path(f"/proc/{c}/cmdline").read_text()]
    assert len(workers) == 1
    t0 = time.time()
    os.kill(proc.pid if whom == "batch" else workers[0], signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.strip().splitlines()[-1] == "physmocap: terminated"
    assert time.time() - t0 < 10
    left = sorted(p.name for p in out.iterdir())
    assert left == [".long.bvh.partial", ".physmocap_batch.lock"], left
    assert (out / ".long.bvh.partial" / "kinematic.npz").exists()
