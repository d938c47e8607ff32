"""Predictive balance: gain sets chosen by simulating ahead; the committed steps are the run."""
from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from physmocap.errors import SettingsError
from physmocap.matching.controller import Controller
from physmocap.matching.trajectory import load_input
from physmocap.playback import LivePlayback, Tracker, TrackingSettings
from physmocap.playback import predictive as P
from physmocap.playback.balance import STEPPING
from physmocap.scene import Environment, HandHold, load_body

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
SETTINGS = TrackingSettings(balance=True, balance_gains=STEPPING)


@pytest.fixture(scope="module")
def live_db(data_dir):
    """The benchmarks' live database (20 Bandai-Namco clips and a standing clip)."""
    from _common import live_database
    return live_database(stand=True)


@pytest.fixture(scope="module")
def sharp_turns(project_root):
    return load_input(project_root / "scenes/inputs/sharp_turns.toml")


def _head(live) -> float:
    ch = live.tracker.char
    return ch.p.getLinkState(ch.body, live.body.index("Head") - 1,
                             physicsClientId=ch.client)[4][2]


# --- settings -------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(every_s=0), dict(every_s=float("nan")),
                                dict(horizon_s=-1), dict(horizon_s=0.1, every_s=0.25),
                                dict(budget=0), dict(head_m=float("inf")),
                                dict(random_sets=-1), dict(random_sets=1.5),
                                dict(random_sets=True), dict(seed=-2),
                                dict(branch=0), dict(branch=2.0), dict(branch=True),
                                dict(workers=0), dict(workers=1.5), dict(workers=True)])
def test_predict_settings_refuse_bad_values(kw):
    with pytest.raises(SettingsError, match="PredictSettings: "):
        P.PredictSettings(**kw)


def test_search_refuses_what_it_cannot_undo(live_db, sharp_turns):
    """A run without a balance controller has no gains to choose; a hand hold is a PyBullet
    constraint, which a saved state does not take back."""
    db, feats = live_db
    ctrl = Controller(db, feats, sharp_turns)
    with pytest.raises(SettingsError, match="needs a balance controller"):
        P.run_predictive(ctrl, 1.0, settings=TrackingSettings())
    env = Environment("grip", (), (HandHold("Right", 0.0, 1.0, None, (0.3, -0.2, 1.0)),))
    with pytest.raises(SettingsError, match="hand holds are not supported"):
        P.run_predictive(ctrl, 1.0, settings=SETTINGS, environment=env)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(SettingsError, match="run_predictive: duration"):
            P.run_predictive(ctrl, bad, settings=SETTINGS)


# --- switching gains while running ------------------------------------------------------------

def test_set_balance_gains_sets_the_limits_a_fresh_tracker_has():
    """Switched to ``joint_max_torque`` 189 N·m the motors' limits are those of a tracker
    built with it; switched back, the run's own."""
    tr = Tracker(mode="physical", settings=SETTINGS)
    own = tr.max_torque.copy()
    weak = Tracker(mode="physical", settings=dataclasses.replace(SETTINGS, joint_max_torque=189.0))
    gains = dataclasses.replace(STEPPING, ik_kz=0.3)
    tr.set_balance_gains(gains, 189.0)
    assert np.array_equal(tr.max_torque, weak.max_torque)
    assert tr.balance.s is gains and tr.balance.max_torque is tr.max_torque
    assert tr._forces == weak._forces
    tr.set_balance_gains(STEPPING)
    assert np.array_equal(tr.max_torque, own)
    for t in (tr, weak):
        t.close()


def test_set_balance_gains_refuses_what_is_fixed_when_built():
    tr = Tracker(mode="physical", settings=SETTINGS)
    for change in (dict(plan_s=0.02), dict(kp=(("legs", 1.0),)), dict(friction=0.5)):
        with pytest.raises(SettingsError, match="cannot change while running"):
            tr.set_balance_gains(dataclasses.replace(STEPPING, **change))
    with pytest.raises(SettingsError, match="must be BalanceSettings"):
        tr.set_balance_gains({"ik_kz": 0.3})
    for bad in (0.0, -5.0, float("nan")):
        with pytest.raises(SettingsError, match="joint_max_torque must be > 0"):
            tr.set_balance_gains(STEPPING, bad)
    tr.close()
    assist = Tracker(mode="assist")
    with pytest.raises(SettingsError, match="needs mode 'physical'"):
        assist.set_balance_gains(STEPPING)
    assist.close()


# --- the saved state ----------------------------------------------------------------------------

def test_a_restored_state_walks_on_exactly_as_before(live_db, sharp_turns):
    """Saved 1 s in, the live loop walks 0.5 s on; restored after another gain set walked the
    same 0.5 s, it walks them again bit for bit, and the controller's record is cut back to
    the saved frame."""
    db, feats = live_db
    with LivePlayback(Controller(db, feats, sharp_turns), mode="physical",
                      settings=SETTINGS) as live:
        for _ in range(60):
            live.step()
        snap = P._snapshot(live)
        n_rec = len(live.ctrl.record.frame)
        first = [live.step()[1][0].copy() for _ in range(30)]
        P._restore(live, snap)
        changes, jm = P.SEARCHED_SETS["weak_legs"]
        live.tracker.set_balance_gains(dataclasses.replace(STEPPING, **changes), jm)
        for _ in range(30):
            live.step()
        P._restore(live, snap)
        assert len(live.ctrl.record.frame) == n_rec
        again = [live.step()[1][0].copy() for _ in range(30)]
        P._release(live, snap)
    assert np.array_equal(np.array(first), np.array(again))


def test_searched_sets_are_gains():
    """Every searched set names fields of ``BalanceSettings`` that hold numbers."""
    for name, (changes, jm) in P.SEARCHED_SETS.items():
        g = dataclasses.replace(STEPPING, **changes)
        assert all(isinstance(getattr(g, k), float) for k in changes), name
        assert jm is None or jm > 0


# --- the search and its committed steps ----------------------------------------------------

def test_the_run_is_the_committed_chain(live_db, sharp_turns, monkeypatch):
    """Each decision point's state is where the run's committed frames left the body: the
    result's simulated root one frame before each kept decision is the root the search
    saved there (1.5 s, a random set per decision too); the controller's record holds the
    committed frames only."""
    db, feats = live_db
    saved = {}
    save = P._snapshot

    def spy(live):
        # the reference's frames handed out so far (computed ahead, ``precompute``)
        saved[live._cache_at] = live._last_root
        return save(live)
    from physmocap.playback.live import LivePlayback as LP
    step = LP.step

    def step_spy(self):
        out = step(self)
        self._last_root = np.array(out[1][0])
        return out
    monkeypatch.setattr(P, "_snapshot", spy)
    monkeypatch.setattr(LP, "step", step_spy)
    ctrl = Controller(db, feats, sharp_turns)
    res, plan = P.run_predictive(ctrl, 1.5, settings=SETTINGS,
                                 predict=P.PredictSettings(random_sets=1))
    assert plan.complete and plan.frames == plan.played == 90 and len(plan.switches) == 6
    assert plan.report()["simulated_per_played"] > 1
    assert [f for f, _ in plan.switches] == list(range(1, 90, 15))
    roots = res.result.motion.root_pos
    offset = 1          # the run's first frame takes two reference frames (placing the body)
    for frame, _ in plan.switches:
        assert np.array_equal(roots[frame - 1], saved[frame + offset]), frame
    assert len(ctrl.record.contacts) == 90 + offset


def test_the_reference_computed_ahead_changes_nothing(live_db, sharp_turns, monkeypatch):
    """The search computes the live reference once (``LivePlayback.precompute``), not once
    per look-ahead: the run and the plan are those of a search that computes it every time."""
    from physmocap.playback.live import LivePlayback as LP
    db, feats = live_db
    predict = P.PredictSettings(random_sets=1)
    runs = []
    for ahead in (True, False):
        if not ahead:
            monkeypatch.setattr(LP, "precompute", lambda self, frames: None)
        res, plan = P.run_predictive(Controller(db, feats, sharp_turns), 1.0,
                                     settings=SETTINGS, predict=predict)
        runs.append((res.result.motion, plan))
    (m0, p0), (m1, p1) = runs
    assert p0.switches == p1.switches and p0.simulated_frames == p1.simulated_frames
    assert np.array_equal(m0.root_pos, m1.root_pos) and np.array_equal(m0.lrot, m1.lrot)


def test_a_fixed_motions_first_decision_plays_each_candidate_the_same_in_any_order(fixed_walk):
    """Where the search first decides on a fixed motion (its world placed and stepped once), a
    candidate played 0.5 s ahead again, after another candidate, plays bit for bit as before:
    the candidates' order, and so the workers, cannot change the search."""
    from physmocap.playback.track import MotionPlayback, on_body, prepare_reference
    motion, hands = fixed_walk
    body = load_body()
    body, ref, hands = prepare_reference(on_body(motion, body), body, "physical", SETTINGS,
                                         hand_targets=hands)
    with MotionPlayback(ref, body, "physical", SETTINGS, hand_targets=hands) as live:
        for _ in range(1 + live.unstepped_frames):
            live.step()
        snap = P._snapshot(live)
        runs = []
        for name in ("own", "weak_legs", "own"):
            P._restore(live, snap)
            changes, jm = P.SEARCHED_SETS.get(name, ({}, None))
            live.tracker.set_balance_gains(dataclasses.replace(STEPPING, **changes), jm)
            runs.append(np.array([live.step()[1][0] for _ in range(15)]))
        P._release(live, snap)
    assert np.array_equal(runs[0], runs[2])
    assert not np.array_equal(runs[0], runs[1])      # the other gains did play otherwise


def test_workers_search_exactly_as_one(live_db, sharp_turns, fixed_walk):
    """Look-aheads played by two forked workers (from the decision's state as the checkpoint
    stores it) give the one-process search's plan, cost and run, bit for bit, from the first
    decision on: live, and a fixed motion with hand targets."""
    db, feats = live_db
    motion, hands = fixed_walk
    for run in (lambda w: P.run_predictive(
                    Controller(db, feats, sharp_turns), 1.0, settings=SETTINGS,
                    predict=P.PredictSettings(random_sets=1, workers=w)),
                lambda w: P.track_predictive(
                    motion, settings=SETTINGS, hand_targets=hands,
                    predict=P.PredictSettings(random_sets=1, workers=w))):
        (r1, p1), (r2, p2) = run(1), run(2)
        m1, m2 = (getattr(r, "result", r).motion for r in (r1, r2))
        assert p1.switches == p2.switches and p1.simulated_frames == p2.simulated_frames
        assert p1.backtracks == p2.backtracks and p1.complete == p2.complete
        assert np.array_equal(m1.root_pos, m2.root_pos) and np.array_equal(m1.lrot, m2.lrot)
    assert P._WORKER_PLAYER is None           # the pool is gone with the search


def test_workers_need_fork(live_db, sharp_turns, monkeypatch):
    """Where processes cannot be forked (macOS, Windows), workers > 1 is one line saying so;
    workers=1 runs as ever."""
    import multiprocessing
    db, feats = live_db
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    with pytest.raises(SettingsError, match="needs the 'fork' start method") as e:
        P.run_predictive(Controller(db, feats, sharp_turns), 0.2, settings=SETTINGS,
                         predict=P.PredictSettings(random_sets=0, workers=2))
    assert len(str(e.value).splitlines()) == 1 and P._WORKER_PLAYER is None
    _, plan = P.run_predictive(Controller(db, feats, sharp_turns), 0.2, settings=SETTINGS,
                               predict=P.PredictSettings(random_sets=0, workers=1))
    assert plan.complete


def _worker_dies(task):
    os._exit(3)


def test_a_worker_that_dies_is_one_error(live_db, sharp_turns, monkeypatch):
    """A worker process that dies mid-search (here: exits at once) ends the search with one
    ``PhysmocapError`` line saying what to do, and the pool is gone."""
    from physmocap.errors import PhysmocapError
    db, feats = live_db
    monkeypatch.setattr(P, "_lookahead", _worker_dies)
    with pytest.raises(PhysmocapError, match="a worker process died") as e:
        P.run_predictive(Controller(db, feats, sharp_turns), 0.5, settings=SETTINGS,
                         predict=P.PredictSettings(random_sets=1, workers=2))
    assert len(str(e.value).splitlines()) == 1 and "fewer workers" in str(e.value)
    assert P._WORKER_PLAYER is None


def test_no_way_on_and_out_of_budget_play_the_run_whole(live_db, sharp_turns):
    """Past its budget the search stops after its first decision's look ahead; with the head
    never as high as ``head_m`` every candidate is down at once: without random sets there is
    no way on, with them the first point draws fresh ones until the budget is spent. Each
    plays the whole run with the best choice at that point and says it is incomplete."""
    db, feats = live_db
    for predict in (P.PredictSettings(budget=0.5), P.PredictSettings(head_m=3.0,
                                                                      random_sets=0),
                    P.PredictSettings(head_m=3.0, random_sets=2, budget=1.0)):
        res, plan = P.run_predictive(Controller(db, feats, sharp_turns), 1.0,
                                     settings=SETTINGS, predict=predict)
        assert not plan.complete and plan.frames == 1 and len(plan.switches) == 1
        assert plan.report()["complete"] is False and res.result.motion.n_frames == 60
        assert plan.report()["budget"] == predict.budget
        assert plan.backtracks == 0
        # besides the run's 60 frames, the look-aheads: one frame per candidate (each down at
        # once); fresh ones drawn, two at a time, until they are past the budget
        looked = plan.simulated_frames - 60
        if predict.random_sets == 0:
            assert looked == 4                     # own and the three searched sets
        elif predict.head_m == 3.0:
            assert predict.budget * 60 < 1 + looked <= predict.budget * 60 + 2


def _stopped_and_resumed(run, folder, stop_at: int) -> tuple:
    """``run(checkpoint, progress)`` (a search) whole; then with a checkpoint in ``folder``,
    stopped (Ctrl-C) once frame ``stop_at`` was committed, and run again from it: ``(whole,
    plan, again, plan2, checkpoint)``."""
    from physmocap.solver.checkpoint import Checkpoint

    def stop(stage, done, total):
        if done >= stop_at:
            raise KeyboardInterrupt
    whole, plan = run()
    with pytest.raises(KeyboardInterrupt):
        run(Checkpoint(folder, "job"), stop)
    ck = Checkpoint(folder, "job")
    again, plan2 = run(ck)
    return whole, plan, again, plan2, ck


def test_a_stopped_search_resumes_exactly(live_db, sharp_turns, tmp_path):
    """Stopped after a decision was stored, run again with the same checkpoint, the search
    goes on from that decision: the run, its plan and its cost are the uninterrupted one's, bit
    for bit (the first second meets no dead end, so nothing before it is needed). A damaged
    checkpoint is ignored: the search starts afresh, with the same result."""
    from physmocap.solver.checkpoint import Checkpoint
    db, feats = live_db
    predict = P.PredictSettings(random_sets=1)

    def run(checkpoint=None, progress=None):
        return P.run_predictive(Controller(db, feats, sharp_turns), 1.0, settings=SETTINGS,
                                predict=predict, progress=progress, checkpoint=checkpoint)

    whole, plan, again, plan2, ck = _stopped_and_resumed(run, tmp_path / "ck", 31)
    # stopped once frame 31 was committed: the decisions at frames 1 and 16 were stored
    assert ck.resumed == ["predictive"] and plan2.resumed_at == 16
    assert plan2.report()["resumed_at_frame"] == 16 and plan.report()["resumed_at_frame"] is None
    for name in ("root_pos", "lrot"):
        assert np.array_equal(getattr(again.result.motion, name),
                              getattr(whole.result.motion, name))
    assert plan2.switches == plan.switches and plan2.sets.keys() == plan.sets.keys()
    assert (plan2.simulated_frames, plan2.backtracks) == (plan.simulated_frames,
                                                          plan.backtracks)
    assert again.result.report()["tracking_error_m"] == whole.result.report()["tracking_error_m"]
    # damaged (not an archive; an archive whose state is not a pickle): searched afresh, and
    # stored again as it goes
    stored = tmp_path / "ck" / "predictive.npz"
    for damage in (lambda: stored.write_bytes(b"not a checkpoint"),
                   lambda: np.savez(stored, world=np.zeros(8, np.uint8),
                                    state=np.frombuffer(b"not a pickle", np.uint8))):
        damage()
        ck = Checkpoint(tmp_path / "ck", "job")
        fresh, plan3 = run(ck)
        assert ck.resumed == [] and plan3.resumed_at is None
        assert np.array_equal(fresh.result.motion.root_pos, whole.result.motion.root_pos)
        assert stored.stat().st_size > 1000


def test_branch_matters_only_at_dead_ends(live_db, sharp_turns):
    """``branch=1`` commits each decision's best candidate only; where the search meets no
    dead end (the first second) the run is the same, bit for bit, as with every candidate."""
    db, feats = live_db
    runs = [P.run_predictive(Controller(db, feats, sharp_turns), 1.0, settings=SETTINGS,
                             predict=P.PredictSettings(random_sets=1, branch=b))
            for b in (None, 1)]
    (a, pa), (b, pb) = runs
    assert pa.complete and pb.complete and pa.backtracks == pb.backtracks == 0
    assert pa.switches == pb.switches
    assert np.array_equal(a.result.motion.root_pos, b.result.motion.root_pos)


def test_predictive_walks_on_where_stepping_falls(live_db, sharp_turns):
    """Issue 5, mode (b): the live sharp turns (as shipped) on the benchmarks' database.
    ``STEPPING`` alone is down (head below 1 m) in the first 180° turn, at 5.4 s; with its
    gains chosen by simulating ahead (``run_predictive``, ``PredictSettings()``), the body is
    up through 6.5 s and through that turn, nothing pushing it. (20 s, six headings each way:
    ``physical_diagnosis.py live_predictive``.)"""
    db, feats = live_db
    make = lambda: Controller(db, feats, sharp_turns)  # noqa: E731
    with LivePlayback(make(), mode="physical", settings=SETTINGS) as live:
        heads = []
        for _ in range(int(6.5 * 60)):
            live.step()
            heads.append(_head(live))
    assert min(heads) < 1.0
    res, plan = P.run_predictive(make(), 6.5, settings=SETTINGS)
    m = res.result.motion
    assert plan.complete and m.n_frames == int(6.5 * 60)
    assert m.gpos[:, m.skeleton.names.index("Head"), 2].min() > 1.0
    assert res.report()["falls"] == []


# --- a fixed motion ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fixed_walk():
    """pybullet_data's walk clip (39 frames at 30 fps) on the body's skeleton, and its wrists
    as hand targets ``(39, 2, 3)`` m (a three-point avatar's controllers)."""
    from physmocap.io.deepmimic import pybullet_motion_path, read_deepmimic
    from physmocap.matching.retarget import retarget
    sk = load_body().skeleton
    m = retarget(read_deepmimic(pybullet_motion_path("humanoid3d_walk.txt")), sk)
    return m, m.gpos[:, [sk.index("LeftHand"), sk.index("RightHand")]]


def test_a_fixed_motion_is_the_committed_chain(fixed_walk, monkeypatch):
    """``track_predictive``: decisions every 0.25 s (8 frames at 30 fps) from frame 2 (frame 0
    places the body, frame 1 steps its world once); the
    result's simulated root one frame before each is the body's root when the search saved
    that decision; every frame of the clip is played, none falls; the hands reach for their
    targets (the report's ``hands``)."""
    from physmocap.playback.track import MotionPlayback
    motion, hands = fixed_walk
    saved = {}
    save = P._snapshot

    def spy(live):
        assert isinstance(live, MotionPlayback)
        saved[live.frame] = np.array(live.tracker.char.pose()[0])
        return save(live)
    monkeypatch.setattr(P, "_snapshot", spy)
    res, plan = P.track_predictive(motion, settings=SETTINGS,
                                   predict=P.PredictSettings(random_sets=1), hand_targets=hands)
    F = motion.n_frames
    assert plan.complete and plan.frames == plan.played == F == 39
    assert [f for f, _ in plan.switches] == list(range(2, F, 8))
    assert plan.report()["simulated_per_played"] > 1
    roots = res.motion.root_pos
    for frame, _ in plan.switches:
        assert np.array_equal(roots[frame - 1], saved[frame]), frame
    rep = res.report()
    assert rep["frames"] == F and rep["falls"] == [] and rep["mode"] == "physical"
    # the hands reach for their targets: nearer them than the same search's without them
    from physmocap.playback.reach import reach_report
    free, _ = P.track_predictive(motion, settings=SETTINGS,
                                 predict=P.PredictSettings(random_sets=1))
    apart = reach_report(motion.skeleton, free.motion.root_pos, free.motion.lrot, hands)
    assert rep["hands"]["hand_error_reachable_m"] < 0.5 * apart["hand_error_reachable_m"]


def test_a_fixed_motion_resumes_exactly(fixed_walk, tmp_path):
    """Stopped after a decision was stored and run again, the fixed motion's search goes on
    from it, bit for bit the uninterrupted run (its hand targets stored with it)."""
    motion, hands = fixed_walk
    predict = P.PredictSettings(random_sets=1)

    def run(checkpoint=None, progress=None):
        return P.track_predictive(motion, settings=SETTINGS, predict=predict,
                                  progress=progress, checkpoint=checkpoint, hand_targets=hands)

    whole, plan, again, plan2, ck = _stopped_and_resumed(run, tmp_path / "ck", 17)
    assert ck.resumed == ["predictive"] and plan2.resumed_at == 10
    for name in ("root_pos", "lrot"):
        assert np.array_equal(getattr(again.motion, name), getattr(whole.motion, name))
    assert plan2.switches == plan.switches
    assert (plan2.simulated_frames, plan2.backtracks) == (plan.simulated_frames,
                                                          plan.backtracks)
    assert again.report()["hands"] == whole.report()["hands"]


def test_a_fixed_motion_refuses_what_the_search_cannot_do(fixed_walk):
    """No balance controller, or hand holds: one ``SettingsError`` before any work."""
    motion, _ = fixed_walk
    with pytest.raises(SettingsError, match="needs a balance controller"):
        P.track_predictive(motion, settings=TrackingSettings())
    env = Environment("grip", (), (HandHold("Right", 0.0, 1.0, None, (0.3, -0.2, 1.0)),))
    with pytest.raises(SettingsError, match="hand holds are not supported"):
        P.track_predictive(motion, settings=SETTINGS, environment=env)


# --- the command line -----------------------------------------------------------------------

def test_cli_play_predict(live_db, tmp_path, capsys):
    """``play DB.npz --input NAME --mode physical --balance stepping --predict``: the committed
    run's report, with what the search cost; ``--predict`` without ``--balance stepping`` is a
    usage error (exit 2), as are ``--predict-budget`` without ``--predict`` and a budget not
    above 0; a small budget ends the search early, said in the report and the output."""
    import json

    from physmocap.cli import main
    from physmocap.matching.database import save_database
    save_database(live_db[0], tmp_path / "db.npz")
    args = ["play", str(tmp_path / "db.npz"), "--input", "sharp_turns", "--duration", "1",
            "-o", str(tmp_path / "sim.bvh"), "--report", str(tmp_path / "r.json")]
    code = main(args + ["--mode", "physical", "--balance", "stepping", "--predict"])
    out = capsys.readouterr().out
    assert code == 0 and "predictive: the committed steps" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    pr = rep["predictive"]
    assert pr["complete"] and pr["frames_planned"] == 60 and pr["decisions"] >= 4
    # the report's speed is the whole search's, slower than its committed steps alone
    assert pr["simulated_per_played"] > 1 and rep["frames_per_second"] == pr[
        "frames_per_second"] < pr["committed_frames_per_second"]
    assert rep["falls"] == [] and rep["root_assist_force_max_n"] == 0.0
    assert pr["budget"] == 100
    # a budget smaller than one decision's look-ahead: the search stops at once, and says so
    (tmp_path / "r.json").unlink()
    code = main(args + ["--mode", "physical", "--balance", "stepping", "--predict",
                        "--predict-budget", "2", "--report-html", str(tmp_path / "r.html")])
    out = capsys.readouterr().out
    pr = json.loads((tmp_path / "r.json").read_text())["predictive"]
    assert code == 0 and pr["budget"] == 2 and not pr["complete"]
    assert pr["simulated_per_played"] < 1 + 8 * 2 and "--predict-budget 2" in out
    # the page says so too, and when
    assert ("ran out of its budget (2 frames simulated per frame played) at 0.02 s"
            in (tmp_path / "r.html").read_text())
    for bad in (["--mode", "physical", "--predict"],
                ["--mode", "physical", "--balance", "stepping", "--predict-budget", "50"],
                ["--mode", "physical", "--balance", "stepping", "--predict",
                 "--predict-budget", "0"]):
        with pytest.raises(SystemExit) as e:
            main(args + bad)
        assert e.value.code == 2 and "--predict" in capsys.readouterr().err


def test_cli_play_predict_a_fixed_motion(tmp_path, capsys):
    """``play CLIP --mode physical --balance stepping --predict``: a fixed motion searched as
    a live input is, the report's ``predictive`` section and speed the search's, the output
    the clip's frames, no checkpoint left; without ``--balance stepping`` a usage error."""
    import json

    from physmocap.cli import main
    from physmocap.io.bvh import read_bvh
    from physmocap.io.deepmimic import pybullet_motion_path
    clip = str(pybullet_motion_path("humanoid3d_walk.txt"))
    out = tmp_path / "x.bvh"
    code = main(["play", clip, "-o", str(out), "--mode", "physical", "--balance", "stepping",
                 "--predict", "--report", str(tmp_path / "x.json")])
    text = capsys.readouterr().out
    assert code == 0 and "predictive: the committed steps" in text
    rep = json.loads((tmp_path / "x.json").read_text())
    pr = rep["predictive"]
    assert pr["complete"] and pr["frames_planned"] == rep["frames"] == 39      # every frame
    assert rep["frames_per_second"] == pr["frames_per_second"] < pr[
        "committed_frames_per_second"]
    assert rep["falls"] == [] and rep["root_assist_force_max_n"] == 0.0
    assert read_bvh(out).n_frames == 39
    assert not (tmp_path / ".x.bvh.partial").exists()
    with pytest.raises(SystemExit) as e:
        main(["play", clip, "-o", str(tmp_path / "y.bvh"), "--mode", "physical", "--predict"])
    assert e.value.code == 2 and "--predict" in capsys.readouterr().err
    assert not (tmp_path / "y.bvh").exists()


def test_cli_play_predict_resumes(live_db, tmp_path, capsys, monkeypatch):
    """``play --predict`` stopped (Ctrl-C: exit 130) keeps its search in ``.OUT.partial``
    and writes no output; run again (with two workers: they do not change the job), it says
    where it resumed, writes the uninterrupted run's report, and removes the folder.
    ``--predict-workers`` without ``--predict``: a usage error."""
    import json

    from physmocap.cli import main
    from physmocap.matching.database import save_database
    save_database(live_db[0], tmp_path / "db.npz")

    def args(name):
        return ["play", str(tmp_path / "db.npz"), "--input", "sharp_turns", "--duration", "1",
                "-o", str(tmp_path / f"{name}.bvh"), "--report", str(tmp_path / f"{name}.json"),
                "--mode", "physical", "--balance", "stepping", "--predict"]

    assert main(args("whole")) == 0
    assert not (tmp_path / ".whole.bvh.partial").exists()
    saves, save = [], P._save_search

    def stop_on_the_third(*a):
        save(*a)
        saves.append(1)
        if len(saves) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(P, "_save_search", stop_on_the_third)
    assert main(args("sim")) == 130
    assert (tmp_path / ".sim.bvh.partial").is_dir() and not (tmp_path / "sim.bvh").exists()
    monkeypatch.setattr(P, "_save_search", save)
    capsys.readouterr()
    assert main(args("sim") + ["--predict-workers", "2"]) == 0
    assert "resumed from" in capsys.readouterr().out
    assert not (tmp_path / ".sim.bvh.partial").exists()
    whole, sim = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("whole", "sim"))
    assert sim["predictive"]["resumed_at_frame"] == 31
    assert whole["predictive"]["resumed_at_frame"] is None
    for key in ("tracking_error_m", "pose_error_m", "foot_skate_mm", "falls"):
        assert sim[key] == whole[key]
    # where the checkpoint folder would go is a file: one line, exit 1, no output
    (tmp_path / ".bad.bvh.partial").write_text("mine")
    assert main(args("bad")) == 1
    err = capsys.readouterr().err
    assert "checkpoint path exists and is not a folder" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "bad.bvh").exists()
    assert (tmp_path / ".bad.bvh.partial").read_text() == "mine"
    with pytest.raises(SystemExit) as e:
        main(args("w")[:-1] + ["--predict-workers", "2"])
    assert e.value.code == 2 and "--predict-workers" in capsys.readouterr().err
    assert not (tmp_path / "w.bvh").exists()
    # more look-ahead processes than CPUs: 1000 forks on 2 CPUs, stuck on a lock when stopped
    with pytest.raises(SystemExit) as e:
        main(args("w") + ["--predict-workers", str(100 * (os.cpu_count() or 1))])
    assert e.value.code == 2 and "only wait for each other" in capsys.readouterr().err
    assert not (tmp_path / "w.bvh").exists()
