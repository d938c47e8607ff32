"""Live coupling: the motion-matching controller drives the simulated body in one loop."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import SettingsError
from physmocap.io.bvh import read_bvh
from physmocap.matching.controller import Controller
from physmocap.matching.database import build_database, save_database, standing_clip
from physmocap.matching.features import compute_features
from physmocap.matching.trajectory import Joystick, load_input
from physmocap.playback import LivePlayback, run_live
from physmocap.playback.live import standing_frame

# the inputs turned and mirrored as ``benchmarks/physical_diagnosis.py`` measures them
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from physical_diagnosis import _mirrored_input, _turned_input  # noqa: E402


def _bandai_db(data_dir, *patterns, stand: bool = False):
    """A 60 fps database of the Bandai-Namco locomotion clips matching ``patterns`` (each
    pattern's files in name order), and its features; ``stand``: plus walk_normal_001's first
    frame held 3 s (``standing_clip``, last, as ``benchmarks/_common.live_database``)."""
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    files = [f for pat in patterns for f in sorted(folder.glob(pat))]
    motions = [read_bvh(f) for f in files]
    names = [f.stem for f in files]
    if stand:
        motions.append(standing_clip(read_bvh(folder / "dataset-2_walk_normal_001.bvh"), 0, 3.0))
        names.append("stand")
    db = build_database(motions, names=names, fps=60)
    return db, compute_features(db)


@pytest.fixture(scope="module")
def walk_db(data_dir):
    """Walks (and turning walks) 001-004: 12 clips."""
    return _bandai_db(data_dir, "*walk*_00[1-4].bvh")


def test_swing_clearance_keeps_the_reference_toes_off_the_floor(walk_db, project_root):
    """Assist mode lifts a swinging reference foot whose sole reaches below 1 cm
    (``TrackingSettings.swing_clearance``): the retargeted swing toes pass at the floor's
    height, and the simulated foot following them dragged along it. Measured over 4 s: foot
    skate 8.9 mm per frame against 23.1 without, tracking 0.89 cm against 0.93 (before the
    joint lead: 7.9 against 24.9, 1.14 against 1.39 cm)."""
    from physmocap.playback import TrackingSettings
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    rep = {cl: run_live(Controller(db, feats, src), 4.0, mode="assist",
                        settings=TrackingSettings(swing_clearance=cl)).report()
           for cl in (None, 0.0)}
    assert rep[None]["foot_skate_mm"] < 0.5 * rep[0.0]["foot_skate_mm"]
    assert rep[None]["tracking_error_m"] < rep[0.0]["tracking_error_m"]
    assert rep[None]["penetration_max_mm"] < 10.0


def test_live_walk_tracks_with_bounded_assist(walk_db, project_root):
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    res = run_live(Controller(db, feats, src), 4.0, mode="assist")
    rep = res.report()
    assert rep["frames"] == 240 and not rep["falls"]
    # measured 0.97 cm over 10 s (README); a loop that lost the walk is off by decimetres
    assert rep["tracking_error_m"] < 0.06
    assert rep["root_assist_force_max_n"] <= 700.0 + 1e-6           # the clamp holds
    assert rep["penetration_max_mm"] < 10.0
    # the simulated feet take turns on the ground (contacts come from the simulation)
    assert min(rep["contact_fraction"]) > 0.2
    # the reference walks forward ~1 m/s; so does the simulated body
    sim = res.result.motion.root_pos
    assert np.linalg.norm(sim[-1, :2] - sim[0, :2]) > 2.0
    assert rep["latency_ms"]["median"] > 0 and rep["latency_ms"]["p99"] >= rep["latency_ms"]["median"]


def test_live_run_tracks_with_stance_grounding(data_dir, project_root):
    """The live run in assist mode (a database of two walks and two runs, 4 s): the reference is
    grounded by its stance feet (its flight kept), the arms held at 60 N·m, the root's
    orientation assist at 12000 / 160 (800 N·m), the joint motors leading the reference by 8
    ms (``TrackingSettings.joint_lead``), a foot leaving the floor not in stance
    (``stance_rise``). Measured 3.2 cm at the live loop's 30 solver iterations. At 50: 3.1
    cm, 3.2 with any rising foot in stance; with 6000 / 80 / 400 N·m and no lead 4.2 cm (4.8
    cm before the live reference's feet were level); with the rules before those (lowest sole
    of every frame, 30 N·m, 3000 / 40) 6.0 cm."""
    from physmocap.playback import TrackingSettings
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("*walk*_00[1-2].bvh")) + sorted(folder.glob("*run*_00[1-2].bvh"))
    db = build_database([read_bvh(f) for f in files], names=[f.stem for f in files], fps=60)
    feats = compute_features(db)
    src = load_input(project_root / "scenes/inputs/run.toml")
    with LivePlayback(Controller(db, feats, src)) as live:
        assert live._floor.speed == TrackingSettings().stance("assist") == 0.5
        assert live._floor.rise == TrackingSettings().rise("assist") == 0.3
    with LivePlayback(Controller(db, feats, src), mode="physical") as live:
        assert live._floor.rise is None
    rep = run_live(Controller(db, feats, src), 4.0, mode="assist").report()
    assert rep["tracking_error_m"] < 0.037
    assert rep["root_assist_force_max_n"] <= 700.0 + 1e-6
    assert rep["penetration_max_mm"] < 10.0
    assert not rep["falls"]


def test_live_run_tracks_within_3cm(data_dir, project_root):
    """The issue's assist-mode target on the live run, as ``benchmarks/playback_speed.py live``
    measures it (its 20-clip database, 10 s): measured 2.70 cm, penetration 6.7 mm at the live
    loop's 30 solver iterations. At 50: 2.55 cm, 6.5 mm; 2.84 cm with any rising foot in
    stance (``stance_rise``), 4.0 cm with the root orientation assist at 6000 / 80 / 400 N·m
    and no joint lead either."""
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    files = sorted(folder.glob("*walk*_00[1-6].bvh")) + sorted(folder.glob("*run*_00[1-2].bvh"))
    db = build_database([read_bvh(f) for f in files], names=[f.stem for f in files], fps=60)
    src = load_input(project_root / "scenes/inputs/run.toml")
    rep = run_live(Controller(db, compute_features(db), src), 10.0, mode="assist").report()
    assert rep["tracking_error_m"] <= 0.03 and rep["penetration_max_mm"] <= 10.0
    assert not rep["falls"]


def test_live_assist_loop_uses_fewer_solver_iterations(walk_db):
    """The live loop's frame budget: assist mode's unset solver iterations are
    ``LIVE_ASSIST_ITERATIONS`` (offline ``track`` keeps 50); physical mode keeps its 10 and an
    explicit value wins in both."""
    from physmocap.playback import TrackingSettings
    from physmocap.playback.live import LIVE_ASSIST_ITERATIONS
    db, feats = walk_db
    stick = Joystick.from_keys([(0.0, 0.0, 0.0, False)])
    assert LIVE_ASSIST_ITERATIONS < TrackingSettings().iterations("assist")
    for mode, settings, want in (("assist", TrackingSettings(), LIVE_ASSIST_ITERATIONS),
                                 ("physical", TrackingSettings(), 10),
                                 ("assist", TrackingSettings(solver_iterations=50), 50),
                                 ("physical", TrackingSettings(solver_iterations=7), 7)):
        with LivePlayback(Controller(db, feats, stick), mode=mode, settings=settings) as live:
            tr = live.tracker
            got = tr.p.getPhysicsEngineParameters(physicsClientId=tr.char.client)
            assert got["numSolverIterations"] == want, (mode, settings.solver_iterations)
            assert live.settings.iterations(mode) == want


def test_step_api_gives_reference_and_simulated_pose(walk_db):
    db, feats = walk_db
    stick = Joystick.from_keys([(0.0, 0.0, 0.0, False)])       # standing still
    with LivePlayback(Controller(db, feats, stick)) as live:
        for _ in range(30):
            (ref_root, ref_lrot), (sim_root, sim_lrot), info = live.step()
        assert ref_lrot.shape == sim_lrot.shape == (len(live.body), 4)
        assert np.linalg.norm(ref_root - sim_root) < 0.05
        assert info["physics_ms"] > 0 and info["controller_ms"] > 0
        # the reference stands on the floor: lowest sole point at z = 0 (causally filtered)
        from physmocap.motion import Motion
        from physmocap.playback.reference import sole_points
        m = Motion(live.body.skeleton, 60.0, ref_root[None], ref_lrot[None])
        j, p = sole_points(live.body)
        z = (m.gpos[0, j] + quat.rotate(m.grot[0, j], p))[:, 2]
        assert abs(z.min()) < 0.01


def test_physical_mode_reports_falls_as_events(walk_db, project_root):
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    rep = run_live(Controller(db, feats, src), 3.0, mode="physical").report()
    assert rep["root_assist_force_max_n"] == 0.0
    for f in rep["falls"]:
        assert {"frame", "time_s", "since_s", "reason"} <= set(f)


def test_a_fallen_live_body_is_put_back_at_its_reference(walk_db, project_root):
    """``TrackingSettings.recover_s`` in the live loop: a limp body on the straight walk falls,
    and 0.5 s after the fall is detected stands again where the live reference is, in its pose
    (the reference walks on meanwhile)."""
    from physmocap.playback import TrackingSettings
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    limp = TrackingSettings(joint_max_torque=0.0, joint_min_torque=0.0, recover_s=0.5)
    res = run_live(Controller(db, feats, src), 4.0, mode="physical", settings=limp).result
    back = [f for f in res.falls if "recovered_s" in f]
    assert back
    head = res.motion.gpos[:, res.motion.skeleton.names.index("Head"), 2]
    for f in back:
        k = int(round(f["recovered_s"] * 60))
        i = k + int(np.argmax(head[k:k + 3] > 1.4))              # the first frame up again
        assert head[i - 1] < 0.6 < 1.4 < head[i] and i <= k + 1
        # where the reference is, in its pose; lying far from it the frame before
        assert np.linalg.norm(res.motion.root_pos[i] - res.reference.root_pos[i]) < 0.05
        assert res.tracking_error_m[i] < 0.05 < 0.5 < res.tracking_error_m[i - 1]


def test_report_says_how_far_the_reference_slides_its_planted_feet(walk_db):
    """``reference_foot_skate_mm``: the reference's toes' travel while its matched frames
    label them in contact. Asked for 0.5 m/s, which no clip walks (the walks move at about 1.1
    m/s), the controller drags the clip's planted feet along with its root. Measured here (3
    s): 7.2 mm/frame at 0.5 m/s against 3.1 at 1.1 m/s, the clips themselves 0.47 (scaled to
    the body); on the live database over 6 s, 8.9 against 2.6."""
    db, feats = walk_db
    rep = {v: run_live(Controller(db, feats, Joystick.from_keys(
        [(0.0, 0.0, 1.0, False)], walk_speeds=(v, v, v))), 3.0, mode="assist").report()
        for v in (0.5, 1.1)}
    slow, fit = rep[0.5]["reference_foot_skate_mm"], rep[1.1]["reference_foot_skate_mm"]
    base = rep[1.1]["reference_foot_skate_mm_database"]
    assert base == rep[0.5]["reference_foot_skate_mm_database"]     # the database's, once
    assert 0 < base < fit and slow > 1.5 * fit


def test_cli_play_database(walk_db, tmp_path, capsys):
    from physmocap.cli import main
    db, _ = walk_db
    save_database(db, tmp_path / "db.npz")
    code = main(["play", str(tmp_path / "db.npz"), "--input", "straight_walk", "--duration", "2",
                 "--physics", "-o", str(tmp_path / "sim.bvh"), "--report", str(tmp_path / "r.json"),
                 "--report-html", str(tmp_path / "r.html")])
    out = capsys.readouterr().out
    assert code == 0 and "latency" in out and "the reference's feet in contact slide" in out
    page = (tmp_path / "r.html").read_text()              # the live run's page: its input named
    assert page.count("data:image/png") == 5 and "straight_walk.toml" in page
    assert "ms p99" in page and "reference&#x27;s feet in contact slide" in page
    rep = json.loads((tmp_path / "r.json").read_text())
    for key in ("tracking_error_m", "root_assist_force_mean_n", "root_assist_force_max_n",
                "penetration_max_mm", "foot_skate_mm", "falls", "frames_per_second", "latency_ms",
                "reference_foot_skate_mm", "reference_foot_skate_mm_database"):
        assert key in rep
    assert read_bvh(tmp_path / "sim.bvh").n_frames == 120


def _lead_and_walk(walk_db, src, seconds, **kw):
    """Fully physical (``STEPPING``) live run: the largest horizontal lead of the reference's
    root over the body's (m), and how far each walked (m)."""
    from physmocap.playback import TrackingSettings
    from physmocap.playback.balance import STEPPING
    db, feats = walk_db
    s = TrackingSettings(balance=True, balance_gains=STEPPING)
    lead, first = 0.0, None
    with LivePlayback(Controller(db, feats, src), mode="physical", settings=s, **kw) as live:
        for _ in range(int(seconds * 60)):
            (rr, _), (sr, _), _ = live.step()
            first = (rr.copy(), sr.copy()) if first is None else first
            lead = max(lead, float(np.hypot(*(rr[:2] - sr[:2]))))
        vcom = float(np.linalg.norm(live.tracker.balance.ref["vcom"][:2]))
    return lead, float(np.hypot(*(rr[:2] - first[0][:2]))), \
        float(np.hypot(*(sr[:2] - first[1][:2]))), vcom


def test_follow_body_keeps_the_reference_at_the_body(walk_db, project_root):
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    free, ref_free, _, _ = _lead_and_walk(walk_db, src, 1.5)
    held, ref_held, _, vcom = _lead_and_walk(walk_db, src, 1.5, follow=0.1)
    # unclamped, the reference (1.4 m/s within 0.9 s) runs ahead of the body that cannot
    assert free > 0.3
    # clamped: at most ``follow`` plus one frame's walk ahead, and it walked less
    assert held < 0.1 + 0.05 and ref_held < ref_free
    # the move is not seen as reference velocity (a 0.1 m jump a frame would be 6 m/s)
    assert vcom < 2.0


def test_precompute_hands_out_the_poses_computed_live(walk_db, project_root):
    """The reference computed ahead is the one computed frame by frame, bit for bit, and so
    is the body that follows it; past the frames computed ahead it goes on computing; each
    cached frame reports what computing it took."""
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/figure_eight.toml")
    runs = []
    for ahead in (None, 30):
        with LivePlayback(Controller(db, feats, src)) as live:
            if ahead:
                live.precompute(ahead)
            outs = [live.step() for _ in range(40)]
        runs.append(outs)
    for (r0, s0, i0), (r1, s1, i1) in zip(*runs):
        for a, b in ((r0[0], r1[0]), (r0[1], r1[1]), (s0[0], s1[0]), (s0[1], s1[1])):
            assert np.array_equal(a, b)
        assert i1["controller_ms"] > 0
    with pytest.raises(SettingsError, match="follows the body"):
        with LivePlayback(Controller(db, feats, src), follow=0.1) as live:
            live.precompute(10)
    with pytest.raises(SettingsError, match="follows the body"):
        with LivePlayback(Controller(db, feats, src), speed_margin=0.3) as live:
            live.precompute(10)
    with LivePlayback(Controller(db, feats, src)) as live:
        for bad in (-1, 2.5, True, "3"):
            with pytest.raises(SettingsError, match="whole number"):
                live.precompute(bad)


def test_speed_margin_paces_the_reference_by_the_body(walk_db, project_root):
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    _, ref_free, _, _ = _lead_and_walk(walk_db, src, 1.5)
    _, ref_paced, body, _ = _lead_and_walk(walk_db, src, 1.5, speed_margin=0.3)
    # the reference walks at most the body's way plus 0.3 m/s over 1.5 s (plus the
    # controller's clamp distance, 0.1 m, and its root motion's lag)
    assert ref_paced < ref_free
    assert ref_paced < body + 0.3 * 1.5 + 0.15


def test_live_reference_stands_on_flat_feet(walk_db, project_root):
    """The live reference is retargeted from a database frame (``standing_frame``: here
    walk-turn-left_001's first, its right foot on its toes); its feet take their planted
    orientation (``retarget.planted_feet``), so both planted soles are level. Without it the
    right foot stood 43 deg toes up in every frame."""
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    from conftest import planted_sole_pitch
    ref = run_live(Controller(db, feats, src), 3.0, mode="assist").result.reference
    for side in ("Left", "Right"):
        assert abs(planted_sole_pitch(ref, side)) < 8.0, side


def test_stepping_walks_the_live_straight_walk_for_20_s(walk_db, project_root):
    """The issue's target for mode (b): no fall in 20 s of live walking, from standing. The
    reference's feet level (``retarget.planted_feet``) and grounded by its still feet
    (``TrackingSettings.stance`` in physical mode); with level feet grounded by the lowest sole
    of every frame ``STEPPING`` was down within 2.5 s."""
    from physmocap.playback import TrackingSettings
    from physmocap.playback.balance import STEPPING
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    res = run_live(Controller(db, feats, src), 20.0, mode="physical",
                   settings=TrackingSettings(balance=True, balance_gains=STEPPING))
    rep = res.report()
    assert rep["root_assist_force_max_n"] == 0.0 and not rep["falls"]
    m = res.result.motion
    head = m.gpos[:, list(m.skeleton.names).index("Head"), 2]
    # upright throughout (standing 1.6 m; measured minimum 1.49 m), not crawling
    assert head.min() > 1.2
    # and walking: measured 9.1 m forward and 5.2 m sideways, 30 deg off the reference's
    # straight 23.9 m (14.8 m forward, within 0.3 of it sideways, while the reference's right
    # foot stood 43 deg toes up); a body stepping in place stays within a few metres
    walked = m.root_pos[-1, :2] - m.root_pos[0, :2]
    assert walked[0] > 6.0 and np.hypot(*walked) > 8.0


@pytest.mark.parametrize("kw, match", [({"follow": -0.1}, "follow must be None or a finite"),
                                       ({"speed_margin": float("nan")}, "speed_margin must be"),
                                       ({"speed_filter_s": 0.0}, "speed_filter_s must be > 0"),
                                       ({"reference_frame": -1}, "reference_frame must be"),
                                       ({"reference_frame": 1.0}, "reference_frame must be"),
                                       ({"reference_frame": True}, "reference_frame must be"),
                                       ({"reference_frame": 10 ** 9}, "frame index 0.."),
                                       ({"start_at_rest": "no"}, "start_at_rest must be"),
                                       ({"start_at_rest": 1}, "start_at_rest must be")])
def test_pacing_options_refuse_bad_values(walk_db, project_root, kw, match):
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    with pytest.raises(SettingsError, match=match):
        LivePlayback(Controller(db, feats, src), mode="physical", **kw)


def test_a_scripts_misuse_is_one_settings_error(walk_db, project_root):
    """Something not a Controller (an AttributeError from inside before), and a step after the
    loop was closed (a TypeError from PyBullet's disconnected client)."""
    with pytest.raises(SettingsError, match=r"run_live needs a matching Controller \(.*\), got str"):
        run_live("db.npz", 1.0)
    with pytest.raises(SettingsError, match="LivePlayback needs a matching Controller"):
        LivePlayback(None)
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    with LivePlayback(Controller(db, feats, src)) as live:
        live.step()
    with pytest.raises(SettingsError, match="the loop is closed"):
        live.step()


def test_reference_frame_sets_the_retargeting_pose(walk_db, project_root):
    """``reference_frame`` replaces ``standing_frame``'s pose: another clip's start gives other
    corrections (the same frame gives the same ones)."""
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    pre = {}
    for k in (None, standing_frame(db), int(db.range_starts[-1])):
        with LivePlayback(Controller(db, feats, src), reference_frame=k) as lp:
            pre[k] = lp.retarget.pre
    assert np.array_equal(pre[None], pre[standing_frame(db)])
    assert not np.allclose(pre[None], pre[int(db.range_starts[-1])])


def _stop_and_go(walk_db, project_root, seconds, gains, yaw):
    """The live stop and go (walk 3 s, stand 3 s, twice) turned to heading ``yaw`` rad, fully
    physical: per frame the head's height (m) and the body's horizontal centre-of-mass speed
    (m/s)."""
    import dataclasses

    from physmocap.playback import TrackingSettings
    db, feats = walk_db
    src = dataclasses.replace(load_input(project_root / "scenes/inputs/stop_and_go.toml"),
                              camera_yaw=yaw, initial_yaw=yaw)
    s = TrackingSettings(balance=True, balance_gains=gains)
    head, speed = [], []
    with LivePlayback(Controller(db, feats, src, start_yaw=yaw), mode="physical",
                      settings=s) as live:
        bal, ch = live.tracker.balance, live.tracker.char
        h = live.body.index("Head")
        for _ in range(int(seconds * 60)):
            live.step()
            _, _, _, V, _, _, _ = bal.state()
            speed.append(float(np.hypot(*(bal.m @ V / bal.M)[:2])))
            head.append(ch.p.getLinkState(ch.body, h - 1, physicsClientId=ch.client)[4][2])
    return np.array(head), np.array(speed)


def test_stepping_stops_and_goes_on_its_feet(walk_db, project_root):
    """Issue 5, mode (b), walking and stopping: the live stop and go with ``STEPPING``. With
    the recovery steps as they were (their foot by its load, 0.15 s after the reference stood,
    short of the capture point, left hovering above the floor; a planted foot off the floor
    left to the reference's angles; the motors' targets planned once per 60 Hz frame) the
    body is down within 8 s (measured 3.8 s here, 7.1 s on an earlier machine: a chaotic
    walk); now it is up at the scene's end (12 s, head above 1.4 m). It does not come to rest
    on this database, whose 12 clips never stand (its reference walks in place): at the end of
    each 3 s stand it still steps in place, its centre of mass at about 0.2 m/s (measured 0.14
    / 0.22; 0.17 / 0.18 with the motors stiffened on a standing reference, about 0.3 before
    ``BalanceSettings.recover_hold``); with a standing clip it comes to rest
    (``test_stepping_stands_still_in_the_stands``).
    One heading of a chaotic walk: on the benchmark's 20-clip database ``STEPPING`` is up for
    20 s in 28 of 28 headings (18 of 28 planned once per frame) (README, "Measured";
    ``physical_diagnosis.py live_headings`` for six of them)."""
    import dataclasses

    from physmocap.playback.balance import STEPPING
    old = dataclasses.replace(STEPPING, recover_choose=False, recover_wait=0.15,
                              recover_blend=None, hold_feet=0.0, land_depth=None, plan_s=0.0)
    head, _ = _stop_and_go(walk_db, project_root, 8.0, old, 0.0)
    print("before: head below 1 m at", np.argmax(head < 1.0) / 60 if head.min() < 1 else None)
    assert head.min() < 1.0
    head, speed = _stop_and_go(walk_db, project_root, 12.0, STEPPING, 0.0)
    t = np.arange(1, len(head) + 1) / 60
    late = [(t > 5.0) & (t < 6.0), (t > 11.0) & (t < 12.0)]      # the end of each stand
    print("now: head min", head.min(), "; body speed at the end of each stand",
          [speed[k].mean() for k in late])
    # upright throughout (measured minimum 1.49 m; standing 1.6 m)
    assert head.min() > 1.3


@pytest.fixture(scope="module")
def live_db(data_dir):
    """The benchmarks' live database: Bandai-Namco walks (and turning walks) 001-006 and runs
    001-002, 20 clips, and a standing clip (``benchmarks/_common.live_database``)."""
    return _bandai_db(data_dir, "*walk*_00[1-6].bvh", "*run*_00[1-2].bvh", stand=True)


def test_stepping_stands_still_in_the_stands(live_db, project_root):
    """Issue 5, mode (b), stopping: the live stop and go on the benchmarks' database, whose
    standing clip lets the reference stand (without one it walks in place, its feet sliding:
    ``physical_diagnosis.py live_stands``), fully physical with ``STEPPING``: upright for 20 s
    and at rest at the end of each stand (measured 0.03 / 0.07 m/s; on the database without
    the standing clip the body stepped in place, 0.2-0.3 m/s). With the motors stiffened on a
    standing reference (``stiff_kp`` 1, ``STEPPING`` until the standing clip) the body could
    not walk off from a stand: down in 9 of 28 headings, 7 of them 1.4-1.8 s after the stick
    was pushed again (``benchmarks/RESULTS.md``); with the body started at rest
    (``start_at_rest``) in 3 of 7 (0.7, 3, 5 rad: 8.2-8.7 s; up at 0, 1, 2, 4 rad, scratch);
    here (heading 0.7 rad) down at 8.4 s."""
    import dataclasses

    from physmocap.playback.balance import STEPPING
    head, _ = _stop_and_go(live_db, project_root, 12.0, dataclasses.replace(STEPPING,
                                                                           stiff_kp=1.0), 0.7)
    print("stiff: head below 1 m at", np.argmax(head < 1.0) / 60 if head.min() < 1 else None)
    assert head.min() < 1.0
    head, speed = _stop_and_go(live_db, project_root, 20.0, STEPPING, 0.0)
    t = np.arange(1, len(head) + 1) / 60
    late = [(t > 5.0) & (t < 6.0), (t > 11.0) & (t < 12.0)]      # the end of each stand
    ends = [float(speed[k].mean()) for k in late]
    print("head min", head.min(), "; body speed at the end of each stand", ends)
    assert head.min() > 1.3 and max(ends) < 0.15


def test_stepping_walks_the_head_circle_and_stops(live_db, project_root):
    """Issue 5, mode (b): the recorded head walking a 3 m circle for 12 s, then standing,
    fully physical with ``STEPPING`` on the benchmarks' database: upright for 20 s. Without
    the standing clip the reference, asked to stop at the recording's end, played walking
    frames dragged by the clamp (its hips sped up again to 0.89 m/s) and the body fell at
    13.4 s (``benchmarks/RESULTS.md``, "Live coupling, fully physical")."""
    from physmocap.playback import TrackingSettings
    from physmocap.playback.balance import STEPPING
    db, feats = live_db
    src = load_input(project_root / "scenes/inputs/head_circle.toml")
    res = run_live(Controller(db, feats, src), 20.0, mode="physical",
                   settings=TrackingSettings(balance=True, balance_gains=STEPPING))
    m = res.result.motion
    head = m.gpos[:, list(m.skeleton.names).index("Head"), 2]
    print("head min", head.min(), "falls", res.report()["falls"])
    assert head.min() > 1.3 and not res.report()["falls"]


def test_stepping_lands_a_foot_left_in_the_air(live_db, project_root):
    """Issue 5, mode (b): the head circle turned the other way (its recorded head mirrored,
    y -> -y), fully physical with ``STEPPING``: upright for 20 s. Without ``land_air`` it
    was down at 14.38 s: a foot off the floor that no swing carried (the reference had it
    planted, or planted neither) was left to the reference's joint angles on a turned pelvis
    and hung in the air while the body stood on the other (``physical_diagnosis.py
    live_mirrored``)."""
    import dataclasses

    from physmocap.playback import TrackingSettings
    from physmocap.playback.balance import STEPPING
    db, feats = live_db
    src = _mirrored_input(load_input(project_root / "scenes/inputs/head_circle.toml"))
    for land_air in (False, True):
        settings = TrackingSettings(balance=True, balance_gains=dataclasses.replace(
            STEPPING, land_air=land_air))
        with LivePlayback(Controller(db, feats, src), mode="physical", settings=settings) as live:
            ch, link = live.tracker.char, live.body.index("Head") - 1
            head = []
            for _ in range(20 * 60):
                live.step()
                head.append(ch.p.getLinkState(ch.body, link, physicsClientId=ch.client)[4][2])
                if head[-1] < 1.0:
                    break
        assert (min(head) > 1.3 and len(head) == 20 * 60) if land_air else min(head) < 1.0


def test_stepping_walks_the_figure_eight(live_db, project_root):
    """Issue 5, mode (b), a turning walk: the live figure eight (its path turned 2 rad) on the
    benchmarks' 20-clip database, fully physical with ``STEPPING``: upright for 20 s. Its
    stance feet keep their own heading (``stance_yaw``; the IK itself:
    ``test_playback_balance.py``); without that the body fell in 3 of 6 headings. A fully
    physical walk is chaotic: without ``stance_yaw``, at 2.0 rad it fell at 16.0 s and at
    1.99 and 2.01 rad it stayed up, and on the tests' 12-clip database the figure eight stays
    up at 13 of 28 headings (at 2 rad it stayed up on an earlier machine and falls on this
    one, with the code of before too: why was not found). So the test
    takes the database on which ``STEPPING`` is up at every heading measured (6 of 6, 12 of
    12 every 30°, 12 of 12 at random: ``physical_diagnosis.py live_turns``, ``benchmarks/
    RESULTS.md``, "Live coupling, fully physical")."""
    import dataclasses

    from physmocap.playback import TrackingSettings
    from physmocap.playback.balance import STEPPING
    db, feats = live_db
    yaw = 2.0
    src = load_input(project_root / "scenes/inputs/figure_eight.toml")
    c, s = np.cos(yaw), np.sin(yaw)
    src = dataclasses.replace(src, points=np.asarray(src.points)[:, :2]
                              @ np.array([[c, s], [-s, c]]))
    res = run_live(Controller(db, feats, src, start_yaw=yaw), 20.0, mode="physical",
                   settings=TrackingSettings(balance=True, balance_gains=STEPPING))
    m = res.result.motion
    head = m.gpos[:, list(m.skeleton.names).index("Head"), 2]
    print("head min", head.min(), "falls", res.report()["falls"])
    # upright throughout (measured minimum 1.47 m; standing 1.6 m)
    assert head.min() > 1.3 and not res.report()["falls"]


def test_stepping_walks_a_fast_joystick_walk(live_db):
    """A straight joystick walk at 1.5 m/s (the database's walks move at 1.06-1.12), fully
    physical with ``STEPPING``: up 8 s (measured 20 s in 6 headings of 6); without the fast
    walk's plant rule (``BalanceSettings.fast_speed`` 0) the body falls at 3.3 s (3.2-3.4 s
    in 6 of 6)."""
    import dataclasses

    from physmocap.playback import TrackingSettings
    from physmocap.playback.balance import STEPPING
    db, feats = live_db
    stick = Joystick.from_keys([(0.0, 0.0, 1.0, False)], walk_speeds=(1.5, 1.5, 1.5))
    heads = []
    for gains in (STEPPING, dataclasses.replace(STEPPING, fast_speed=0.0)):
        res = run_live(Controller(db, feats, stick), 8.0, mode="physical",
                       settings=TrackingSettings(balance=True, balance_gains=gains))
        m = res.result.motion
        heads.append(m.gpos[:, list(m.skeleton.names).index("Head"), 2])
    print("head min with / without the rule", heads[0].min(), heads[1].min())
    assert heads[0].min() > 1.3
    assert heads[1].min() < 1.0


@pytest.mark.parametrize("at_rest, ahead, rests", [
    (None, 0, True), (None, 30, False), (True, 30, True), (False, 0, False)])
def test_the_body_starts_at_rest_in_the_first_pose(walk_db, project_root, at_rest, ahead, rests):
    """``start_at_rest``: the first reference pose places the body at rest, or it starts with
    the velocities to the next pose (the controller's first frame walks at 0.4 m/s); by
    default at rest when the controller starts with it, moving when the controller has run
    ``ahead`` frames already."""
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    ctrl = Controller(db, feats, src)
    for _ in range(ahead):
        ctrl.step()
    with LivePlayback(ctrl, mode="physical", start_at_rest=at_rest) as live:
        seen, reset = [], live.tracker.reset

        def spy(*a, **k):
            reset(*a, **k)
            _, _, v, w = live.tracker.char.base_state()
            seen.append((float(np.linalg.norm(v)), float(np.linalg.norm(w))))
        live.tracker.reset = spy
        live.step()
    (v, w), = seen
    print("start at rest" if rests else "start moving", v, w)
    assert (v == 0.0 and w == 0.0) if rests else v > 0.1


def test_a_fresh_controller_starts_in_the_pose_the_body_is_placed_in(walk_db, project_root):
    """The body is placed in the reference frame: a controller that has shown no pose is
    placed there, one given a start frame or already running is left as it is."""
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    k = standing_frame(db)
    fresh, given, running = (Controller(db, feats, src),
                             Controller(db, feats, src, start_frame=k + 7),
                             Controller(db, feats, src))
    running.step()
    for ctrl, want in ((fresh, k), (given, k + 7), (running, running.frame)):
        with LivePlayback(ctrl, mode="assist"):
            assert ctrl.frame == want
    assert fresh.start_shown
    np.testing.assert_array_equal(fresh.pose[2], db.lrot[k, 1:])


def test_stepping_walks_off_into_the_mirrored_figure_eight(live_db, project_root):
    """Issue 5, mode (b): the figure eight turned the other way (way-points y -> -y, heading
    -0.7 rad), fully physical with ``STEPPING``: upright for 20 s from a body at rest; started
    with the reference's velocities (as before ``start_at_rest``) it was down at 1.28 s,
    walking off into its first turn (``physical_diagnosis.py live_mirrored``: 4 of 6 headings
    up at rest, 0 of 6 moving)."""
    from physmocap.playback import TrackingSettings
    from physmocap.playback.balance import STEPPING
    db, feats = live_db
    yaw = -0.7
    src = _turned_input(_mirrored_input(
        load_input(project_root / "scenes/inputs/figure_eight.toml")), yaw)
    settings = TrackingSettings(balance=True, balance_gains=STEPPING)
    for at_rest, seconds in ((False, 3.0), (True, 20.0)):
        ctrl = Controller(db, feats, src, start_yaw=yaw)
        with LivePlayback(ctrl, mode="physical", settings=settings,
                          start_at_rest=at_rest) as live:
            ch, link = live.tracker.char, live.body.index("Head") - 1
            head = []
            for _ in range(int(seconds * 60)):
                live.step()
                head.append(ch.p.getLinkState(ch.body, link, physicsClientId=ch.client)[4][2])
        head = np.array(head)
        print("at rest" if at_rest else "moving", "head min", head.min(),
              "below 1 m at", np.argmax(head < 1.0) / 60 if head.min() < 1.0 else None)
        assert (head.min() > 1.3) if at_rest else (head.min() < 1.0)


def test_retargeting_reference_is_a_standing_clip_start(data_dir, project_root):
    # a folder in name order puts Bandai-Namco's runs first: their first frame crouches, and
    # retargeted from it every live pose bent its knees (5.0 cm instead of 1.7 cm, README)
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    run, walk = folder / "dataset-2_run_normal_001.bvh", folder / "dataset-2_walk_normal_001.bvh"
    for files, want_clip in (([run, walk], 1), ([walk, run], 0)):
        db = build_database([read_bvh(f) for f in files], names=[f.stem for f in files], fps=60)
        assert standing_frame(db) == int(db.range_starts[want_clip])
    db = build_database([read_bvh(f) for f in (run, walk)], fps=60)
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    rep = run_live(Controller(db, compute_features(db), src), 3.0, mode="assist").report()
    assert rep["tracking_error_m"] < 0.03


def test_live_hold_pins_the_palm(walk_db, project_root):
    # scene objects and hand holds work in the live loop too: the right palm is pinned, from
    # 0.5 s to 0.8 s, to where a first run put it at 0.5 s, while the body walks on
    from physmocap.playback.character import _segment
    from physmocap.scene import Environment, HandHold, load_body
    db, feats = walk_db
    body = load_body()
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    first = run_live(Controller(db, feats, src), 0.6, mode="assist")
    j = body.index("RightHand")
    m = first.result.motion
    palm = m.gpos[30, j] + quat.rotate(m.grot[30, j], 0.5 * _segment(body, j))
    env = Environment("t", (), (HandHold("Right", 0.5, 0.8, None, tuple(palm)),))
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    res = run_live(Controller(db, feats, src), 1.0, mode="assist", environment=env)
    e = res.result.hold_error_m[:, 0]
    held = np.flatnonzero(~np.isnan(e))
    assert 16 <= held.size <= 20
    assert np.max(e[held[4:]]) < 0.005
    (h,) = res.report()["holds"]
    assert h["hand"] == "Right" and h["frames"] == held.size


@pytest.mark.parametrize("steady", [False, True])
def test_frame_feet_forward_kinematics_is_the_returned_pose(rng, steady):
    # _FrameFeet does forward kinematics once and then only below each foot joint it unrolls:
    # what it returns must be the whole pose's forward kinematics, and its corners the soles'
    from physmocap.playback.live import _FrameFeet
    from physmocap.playback.reference import sole_points
    from physmocap.scene import load_body
    from physmocap.skeleton import forward_kinematics_frame
    body = load_body()
    feet = _FrameFeet(body, steady=steady)
    joints, pts = sole_points(body)
    for _ in range(20):
        lrot = quat.from_scaled_axis(rng.normal(size=(len(body), 3)) * 0.4)
        root = rng.normal(size=3) + np.array([0.0, 0.0, 1.0])
        trot, corners, (x, g) = feet(root, lrot)
        fx, fg = forward_kinematics_frame(body.skeleton, trot, root)
        np.testing.assert_allclose(x, fx, atol=1e-12)
        np.testing.assert_allclose(g, fg, atol=1e-12)
        want = fx[joints] + quat.rotate(fg[joints], pts)
        np.testing.assert_allclose(np.array(corners), want, atol=1e-12)
        moved = [j for j, _ in feet.feet]
        kept = [j for j in range(len(body)) if j not in moved and j > 0]
        assert np.array_equal(trot[kept], quat.normalize(lrot)[kept])
        assert not np.allclose(trot[moved], quat.normalize(lrot)[moved], atol=1e-3)


def test_run_live_needs_a_duration(walk_db, project_root):
    """NaN and inf raised numpy's ValueError / an OverflowError; a negative duration ran two
    frames."""
    db, feats = walk_db
    src = load_input(project_root / "scenes/inputs/straight_walk.toml")
    for bad in (float("nan"), float("inf"), -1.0, 0.0):
        with pytest.raises(SettingsError, match="run_live: duration must be a finite number"):
            run_live(Controller(db, feats, src), bad)
