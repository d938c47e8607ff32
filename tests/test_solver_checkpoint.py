"""Resumable solves: finished stages on disk, a resumed solve equal to an uninterrupted one."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap.errors import PhysmocapError
from physmocap.solver import checkpoint as ckmod
from physmocap.solver import pipeline
from physmocap.solver.checkpoint import Checkpoint, job_key
from physmocap.solver.physical import PhysicalSettings

FRAMES = 160


@pytest.fixture(scope="module")
def take(data_dir):
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import load_body, pick_markerset
    t = read_c3d(data_dir / "c3d/cmu/02_01.c3d")
    t = type(t)(t.labels, t.fps, t.pos[:FRAMES], t.is_virtual, t.subject, dict(t.meta))
    return t, pick_markerset(t.labels), load_body()


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(pipeline, "BLOCK", 50)       # 4 blocks of the 160 frames


class Stop(Exception):
    pass


def test_blocks_match_one_piece_and_resume_gives_the_same_result(take, small_blocks, tmp_path,
                                                                  monkeypatch):
    t, spec, body = take
    ref = pipeline.solve_capture(t, spec, body)                     # four blocks, no checkpoint
    monkeypatch.setattr(pipeline, "BLOCK", 10_000)
    whole = pipeline.solve_capture(t, spec, body)                   # one piece
    # Blocks start WARMUP frames early: their edges are the one-piece solve to 1e-6 (a frame's
    # start carries part of the frame before's correction, so what a block's first frame
    # started from fades over the warm-up frames, not within one: 8e-4 after 16 of them).
    assert np.abs(ref.motion.lrot - whole.motion.lrot).max() < 1e-6
    monkeypatch.setattr(pipeline, "BLOCK", 50)

    def stop_after_two_blocks(stage, done, total):
        if stage == "physical" and done > 100:       # inside the third block
            raise Stop
    with pytest.raises(Stop):
        pipeline.solve_capture(t, spec, body, checkpoint=tmp_path / "ck",
                               progress=stop_after_two_blocks)
    stored = sorted(p.name for p in (tmp_path / "ck").iterdir())
    assert stored == ["key.txt", "kinematic.npz", "physical_00000.npz", "physical_00001.npz"]
    again = pipeline.solve_capture(t, spec, body, checkpoint=tmp_path / "ck")
    assert again.report["resumed"] == ["kinematic", "physical_00000", "physical_00001"]
    assert np.array_equal(again.motion.lrot, ref.motion.lrot)
    assert np.array_equal(again.motion.root_pos, ref.motion.root_pos)
    assert np.array_equal(again.residual, ref.residual, equal_nan=True)
    assert again.report["marker_rms_mm"] == ref.report["marker_rms_mm"]


def test_other_inputs_or_settings_never_reuse_stages(take, small_blocks, tmp_path):
    t, spec, body = take
    first = pipeline.solve_capture(t, spec, body, checkpoint=tmp_path / "ck")
    assert first.report["resumed"] == []
    same = pipeline.solve_capture(t, spec, body, checkpoint=tmp_path / "ck")
    assert len(same.report["resumed"]) == 1 + 4
    other = pipeline.solve_capture(t, spec, body, checkpoint=tmp_path / "ck",
                                   settings=PhysicalSettings(stiffness=900.0))
    assert other.report["resumed"] == []
    moved = type(t)(t.labels, t.fps, t.pos + 0.001, t.is_virtual, t.subject, dict(t.meta))
    assert pipeline.solve_capture(moved, spec, body, checkpoint=tmp_path / "ck"
                                  ).report["resumed"] == []


def test_stages_of_an_older_solver_are_not_reused(take, small_blocks, tmp_path, monkeypatch):
    """A checkpoint left by a solve before a change to the solver (``SOLVER_REVISION``, one
    physmocap version) would mix its stages with the new solver's: it is cleared instead."""
    t, spec, body = take
    pipeline.solve_capture(t, spec, body, checkpoint=tmp_path / "ck")
    monkeypatch.setattr(pipeline, "SOLVER_REVISION", pipeline.SOLVER_REVISION + 1)
    assert pipeline.solve_capture(t, spec, body, checkpoint=tmp_path / "ck"
                                  ).report["resumed"] == []


def test_damaged_stage_is_solved_again(tmp_path):
    ck = Checkpoint(tmp_path / "ck", "k1")
    ck.save("a", x=np.arange(3))
    assert np.array_equal(ck.load("a")["x"], np.arange(3)) and ck.resumed == ["a"]
    (tmp_path / "ck" / "a.npz").write_bytes(b"PK\x03\x04 broken")
    assert ck.load("a") is None and ck.load("missing") is None
    Checkpoint(tmp_path / "ck", "k2")                   # another job: the folder is cleared
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["key.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(PhysmocapError, match="not a folder"):
        Checkpoint(tmp_path / "file", "k")


def test_a_job_that_stored_nothing_leaves_no_folder(tmp_path):
    """``drop_if_unused``: a folder this job made and stored nothing in goes; one with a
    stage, or one a stopped job of the same key left (to resume from), stays."""
    Checkpoint(tmp_path / "ck", "k1").drop_if_unused()
    assert not (tmp_path / "ck").exists()
    ck = Checkpoint(tmp_path / "ck", "k1")
    ck.save("a", x=np.arange(3))
    ck.drop_if_unused()
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["a.npz", "key.txt"]
    (tmp_path / "ck" / "a.npz").unlink()
    Checkpoint(tmp_path / "ck", "k1").drop_if_unused()     # not made by this job: kept
    assert (tmp_path / "ck" / "key.txt").exists()
    Checkpoint(tmp_path / "ck", "k2").drop_if_unused()     # another job's, cleared: made anew
    assert not (tmp_path / "ck").exists()


def test_a_solve_stopped_before_its_first_stage_leaves_no_folder(take, tmp_path):
    """Stopped in the kinematic stage (Ctrl-C), a solve left ``.OUT.bvh.partial`` holding only
    its key: nothing to resume from (a reliability probe's finding)."""
    t, spec, body = take

    def stop_in_the_kinematic_stage(stage, done, total):
        if stage == "kinematic":
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        pipeline.solve_capture(t, spec, body, checkpoint=tmp_path / "ck",
                               progress=stop_in_the_kinematic_stage)
    assert not (tmp_path / "ck").exists()


def test_job_key_follows_content_not_identity():
    a = np.arange(12.0).reshape(3, 4)
    assert job_key(a, 1, "x") == job_key(a.copy(), 1, "x")
    assert job_key(a, 1) != job_key(a + 1e-12, 1) != job_key(a.T, 1)
    assert job_key(np.zeros(0)) != job_key(np.zeros((0, 3)))
    assert ckmod.WARMUP > 0 and ckmod.BLOCK > ckmod.WARMUP
