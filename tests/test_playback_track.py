"""Physical playback (``physmocap.playback.track``): the API, standing, falling, errors, and
the walking in assist mode within the issue's 3 cm (the demo walk and a retargeted Bandai-Namco
walk). How ``track`` prepares its reference: ``test_playback_reference.py``."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import quat
from physmocap.errors import SettingsError, ShapeError
from physmocap.motion import Motion
from physmocap.playback import Tracker, TrackingSettings, track, track_any
from physmocap.scene import load_body

from conftest import WALK_001



@pytest.fixture(scope="module")
def body():
    return load_body()


def standing(body, seconds=1.0, fps=60.0):
    F = int(seconds * fps)
    lrot = quat.identity((F, len(body)))
    root = np.tile(body.skeleton.offsets[0], (F, 1))
    return Motion(body.skeleton, fps, root, lrot)


def test_tracker_reset_step_shapes(body):
    with Tracker(body, "assist") as tr:
        lrot = quat.identity((len(body),))
        tr.reset(body.skeleton.offsets[0], lrot[0], lrot)
        rp, rr, lr, info = tr.step(body.skeleton.offsets[0], lrot[0], lrot, 1 / 60)
        assert rp.shape == (3,) and rr.shape == (4,) and lr.shape == (len(body), 4)
        assert np.allclose(np.linalg.norm(lr, axis=-1), 1.0)
        assert set(info) >= {"assist_force_n", "assist_torque_nm", "contacts", "penetration_m",
                             "fallen", "fall"}
        assert info["contacts"].shape == (2,) and info["contacts"].all()
        assert tr.frame == 1 and abs(tr.time - 1 / 60) < 1e-9


@pytest.mark.parametrize("fps", [24, 25, 30, 50, 60, 100, 120, 240, 250, 300])
def test_the_simulation_keeps_the_reference_time(body, fps):
    """Physics steps of ``timestep`` each, as many as keep the simulated time within one step
    of the reference's; rates that divide 240 Hz take the same number every frame. Rounded to
    whole steps every frame, a 100 Hz frame was simulated for 8.3 of its 10 ms."""
    lrot = quat.identity((len(body),))
    with Tracker(body, "physical") as tr:
        tr.reset(body.skeleton.offsets[0], lrot[0], lrot)
        steps = []
        for k in range(1, 31):
            t0 = tr.time
            tr.step(body.skeleton.offsets[0], lrot[0], lrot, 1.0 / fps)
            steps.append(round((tr.time - t0) / tr.timestep))
            assert abs(tr.time - k / fps) < tr.timestep * (1 + 1e-9)
        if 240 % fps == 0:
            assert set(steps) == {240 // fps}
        step = tr.p.getPhysicsEngineParameters(physicsClientId=tr.char.client)["fixedTimeStep"]
        assert step == tr.timestep
        tr.reset(body.skeleton.offsets[0], lrot[0], lrot)         # the clock starts anew
        assert tr._owed == 0.0


def test_solver_iterations_per_mode(body):
    # assist mode's stiff motors get 50 iterations (running tracks 26 -> 6 cm, README), physical
    # mode keeps the 10 its balance controller was tuned at; an explicit value wins in both
    for mode, settings, want in (("assist", TrackingSettings(), 50),
                                 ("physical", TrackingSettings(), 10),
                                 ("assist", TrackingSettings(solver_iterations=7), 7),
                                 ("physical", TrackingSettings(solver_iterations=30), 30)):
        with Tracker(body, mode, settings) as tr:
            got = tr.p.getPhysicsEngineParameters(physicsClientId=tr.char.client)
            assert got["numSolverIterations"] == want, (mode, settings.solver_iterations)


def test_torque_floor_and_stance_grounding_per_mode(body):
    # assist mode: arms held at 60 N·m (30 let them flail on the live run); physical mode
    # keeps the 30 its balance controller was tuned with; the live reference grounded by its
    # stance feet in both (by its still feet, 0.2 m/s, in physical mode, as ``ground_still``);
    # an explicit value wins in both
    s = TrackingSettings()
    assert (s.min_torque("assist"), s.min_torque("physical")) == (60.0, 30.0)
    assert (s.stance("assist"), s.stance("physical")) == (0.5, 0.2)
    e = TrackingSettings(joint_min_torque=45.0, stance_speed=0.8)
    assert (e.min_torque("assist"), e.min_torque("physical")) == (45.0, 45.0)
    assert (e.stance("assist"), e.stance("physical")) == (0.8, 0.8)
    for mode, settings, want in (("assist", s, 60.0), ("physical", s, 30.0),
                                 ("physical", e, 45.0)):
        with Tracker(body, mode, settings) as tr:
            assert tr.max_torque.min() == pytest.approx(want)
            # the motors get it: a light segment's force limit is the floor
            assert min(f[0] for f in tr._forces) == pytest.approx(want)


def test_stance_rise_per_mode():
    # assist mode's live reference: a rising foot is not in stance; physical mode keeps the
    # rule its ``STEPPING`` walks were measured with; an explicit value wins in both
    s, e = TrackingSettings(), TrackingSettings(stance_rise=0.6)
    assert (s.rise("assist"), s.rise("physical")) == (0.3, None)
    assert (e.rise("assist"), e.rise("physical")) == (0.6, 0.6)


@pytest.mark.parametrize("kw, match", [
    (dict(timestep=0.0), "timestep must be a finite number > 0"),
    (dict(timestep=float("inf")), "timestep"),
    (dict(friction=-0.1), "friction must be a finite number >= 0"),
    (dict(assist_max_force=float("nan")), "assist_max_force"),
    (dict(assist_i_time=0.0), "assist_i_time must be a finite number > 0"),
    (dict(joint_kp="stiff"), "joint_kp"),
    (dict(fall_seconds=True), "fall_seconds"),
    (dict(solver_iterations=0), "solver_iterations must be None or an int >= 1"),
    (dict(solver_iterations=2.5), "solver_iterations"),
    (dict(reach_every_step="yes"), "reach_every_step must be True or False"),
    (dict(reach_min_torque=-1.0), "reach_min_torque must be a finite number >= 0"),
    (dict(reach_ahead=-0.01), "reach_ahead must be a finite number >= 0"),
    (dict(reach_ahead=float("inf")), "reach_ahead"),
    (dict(joint_min_torque=-1.0), "joint_min_torque must be None or a finite number >= 0"),
    (dict(joint_min_torque=float("nan")), "joint_min_torque"),
    (dict(stance_speed=0.0), "stance_speed must be None or a finite number > 0"),
    (dict(stance_speed=True), "stance_speed"),
    (dict(stance_height=0.0), "stance_height must be a finite number > 0"),
    (dict(joint_lead=-0.001), "joint_lead must be None or a finite number >= 0"),
    (dict(joint_lead=float("inf")), "joint_lead"),
    (dict(stance_rise=0.0), "stance_rise must be None or a finite number > 0"),
    (dict(stance_rise="fast"), "stance_rise"),
    (dict(ground_still=-0.1), "ground_still must be a finite number >= 0"),
    (dict(reach_kp=0.0), "reach_kp must be a finite number > 0"),
    (dict(recover_s=-1.0), "recover_s must be None or a finite number >= 0"),
    (dict(recover_s=float("nan")), "recover_s"),
])
def test_tracking_settings_refuse_bad_values(kw, match):
    with pytest.raises(SettingsError, match=match):
        TrackingSettings(**kw)


def test_track_needs_a_motion(body):
    """A path (a script's slip) was an AttributeError from inside."""
    with pytest.raises(ShapeError, match="track needs a Motion .*got str"):
        track("walk.bvh", body)


def test_tracker_errors(body):
    tr = Tracker(body, "assist")
    lrot = quat.identity((len(body),))
    with pytest.raises(RuntimeError):
        tr.step(np.zeros(3), lrot[0], lrot, 1 / 60)          # step before reset
    with pytest.raises(ShapeError, match="expected"):
        tr.reset(np.zeros(3), lrot[0], lrot[:5])
    tr.reset(body.skeleton.offsets[0], lrot[0], lrot)
    with pytest.raises(SettingsError, match="dt must be > 0"):
        tr.step(np.zeros(3), lrot[0], lrot, 0.0)
    for dt in (float("nan"), float("inf")):          # a ValueError and an OverflowError before
        with pytest.raises(SettingsError, match="dt must be > 0"):
            tr.step(np.zeros(3), lrot[0], lrot, dt)
    pose = (body.skeleton.offsets[0], lrot[0], lrot)
    for dt in (None, 0.0, float("nan")):                  # NaN gave NaN velocities before
        with pytest.raises(SettingsError, match="reset: next_pose needs dt > 0 s"):
            tr.reset(*pose, next_pose=pose, dt=dt)
    tr.close()
    with pytest.raises(ShapeError,
                       match=r"the reference has 1 frame\(s\); playback needs at least 2"):
        track(standing(body, 0.5)[:1], body)
    for loops in (0, 1.5, True):          # 0 played it once, 1.5 was a TypeError, before
        with pytest.raises(SettingsError, match="track: loops must be a whole number >= 1"):
            track(standing(body, 0.5), body, loops=loops)
    from physmocap.playback.reference import loop_motion
    with pytest.raises(SettingsError, match="loop_motion: loops must be a whole number >= 1"):
        loop_motion(standing(body, 0.5), 0)
    with pytest.raises(SettingsError, match="known: assist, physical"):
        Tracker(body, "puppet")


def test_track_result_shapes_and_report(body):
    ref = standing(body, 0.5)
    r = track(ref, body, "assist")
    F = ref.n_frames
    assert r.motion.n_frames == F and r.motion.fps == ref.fps
    assert r.motion.skeleton is ref.skeleton
    for a in (r.tracking_error_m, r.assist_force_n, r.assist_torque_nm, r.penetration_mm):
        assert a.shape == (F,)
    assert r.contacts.shape == (F, 2) and r.contacts.dtype == bool
    rep = r.report()
    for k in ("tracking_error_m", "root_assist_force_mean_n", "root_assist_force_max_n",
              "penetration_max_mm", "foot_skate_mm", "falls", "frames_per_second"):
        assert k in rep
    assert rep["falls"] == [] and rep["tracking_error_upright_m"] == rep["tracking_error_m"]
    # after a fall, the mean over the frames before it began (none: None)
    r.falls.append({"frame": 20, "time_s": 0.35, "since_s": 0.25, "reason": "head low"})
    k = int(round(0.25 * ref.fps))
    assert r.report()["tracking_error_upright_m"] == pytest.approx(r.tracking_error_m[:k].mean())
    r.falls[0]["since_s"] = 0.0
    assert r.report()["tracking_error_upright_m"] is None


def test_pose_error_is_the_pose_wherever_the_body_is(body):
    """``pose_error_m``: the joints about the root against the reference's, every joint but
    the root, until the first fall began: a body 2 m off its reference in the same pose has a
    tracking error of 2 m and the same pose error; a pose bent away from the reference's
    has a larger one; after a fall, only the frames before it count."""
    import dataclasses
    ref = standing(body, 1.0)
    r = track(ref, body, "assist")
    pose = r.report()["pose_error_m"]
    assert 0 <= pose < 0.01
    moved = Motion(r.motion.skeleton, r.motion.fps, r.motion.root_pos + [2.0, 0.0, 0.0],
                   r.motion.lrot)
    away = dataclasses.replace(r, motion=moved)
    assert away.pose_error() == pytest.approx(pose, abs=1e-9)
    assert np.mean(np.linalg.norm(moved.gpos - r.reference.gpos, axis=-1)) > 1.9
    lrot = np.array(r.motion.lrot)
    lrot[:, body.index("LeftUpperLeg")] = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), 1.0)
    bent = dataclasses.replace(r, motion=Motion(moved.skeleton, moved.fps, moved.root_pos, lrot))
    assert bent.pose_error() > pose + 0.02
    r.falls.append({"frame": 20, "time_s": 0.35, "since_s": 0.25, "reason": "head low"})
    k = int(round(0.25 * ref.fps))
    g, h = r.motion.gpos[:k], r.reference.gpos[:k]
    want = np.linalg.norm((g[:, 1:] - g[:, :1]) - (h[:, 1:] - h[:, :1]), axis=-1).mean()
    assert r.report()["pose_error_m"] == pytest.approx(want)
    r.falls[0]["since_s"] = 0.0
    assert r.report()["pose_error_m"] is None


def test_path_walked_counts_walking_not_sway():
    from physmocap.playback.track import path_walked_m
    fps, t = 60.0, np.arange(601) / 60.0                       # 10 s
    ahead = np.stack([1.2 * t, np.zeros_like(t)], axis=1)     # 1.2 m/s along x: 12 m
    # the pelvis sways 4 cm to either side once a stride (about a second)
    sway = np.stack([np.zeros_like(t), 0.04 * np.sin(2 * np.pi * t + 0.7)], axis=1)
    assert path_walked_m(ahead, fps) == pytest.approx(12.0)
    assert path_walked_m(ahead + sway, fps) == pytest.approx(12.0, abs=1e-9)
    # stepping in place, every frame counted, would be a walk of 1.6 m; sampled, none
    assert np.linalg.norm(np.diff(sway, axis=0), axis=1).sum() > 1.5
    assert path_walked_m(sway, fps) < 1e-9
    # a path that turns back is walked, not just displaced; the last frame counts too
    back = np.concatenate([ahead[:301], ahead[300::-1][1:]])
    assert path_walked_m(back, fps) == pytest.approx(12.0)
    assert path_walked_m(ahead[:91], fps) == pytest.approx(1.2 * 1.5)
    assert path_walked_m(ahead[:1], fps) == 0.0
    with pytest.raises(ShapeError, match=r"\(F, 2\)"):
        path_walked_m(np.zeros((5, 3)), fps)
    for bad in (0.0, float("nan")):
        with pytest.raises(SettingsError, match="fps"):
            path_walked_m(ahead, bad)


def test_walked_in_the_report_stops_at_the_first_fall(body):
    ref = standing(body, 1.0)
    ref = Motion(ref.skeleton, ref.fps, ref.root_pos + np.outer(np.arange(ref.n_frames) / 60.0,
                                                                 [0.6, 0.0, 0.0]), ref.lrot)
    r = track(ref, body, "assist")
    w = r.report()["walked_m"]
    assert w["reference"] == pytest.approx(0.6 * (ref.n_frames - 1) / 60.0)
    assert w["until_s"] == pytest.approx((ref.n_frames - 1) / 60.0, abs=1e-3)  # to the ms
    assert abs(w["body"] - w["reference"]) < 0.05               # the assist carries it along
    r.falls.append({"frame": 40, "time_s": 0.6, "since_s": 0.5, "reason": "head low"})
    w = r.report()["walked_m"]
    assert w["until_s"] == 0.5
    assert w["reference"] == pytest.approx(0.6 * 0.5)


def test_joint_lead_per_mode(body):
    # assist mode's motors lead the reference by 8 ms along its joint velocities; physical
    # mode keeps 0 (its balance controller was tuned without); an explicit value wins in both
    s, e = TrackingSettings(), TrackingSettings(joint_lead=0.004)
    assert (s.lead("assist"), s.lead("physical")) == (0.008, 0.0)
    assert (e.lead("assist"), e.lead("physical")) == (0.004, 0.004)
    for mode, want in (("assist", 0.008), ("physical", 0.0)):
        with Tracker(body, mode) as tr:
            assert tr._lead == want


def test_joint_lead_takes_the_lag_out_of_the_motors(body):
    """PyBullet's position-only spherical motors trail a moving target; leading it along the
    reference's joint velocities (``joint_lead``) puts each joint nearer its own frame's
    reference (demo walk, assist: measured 1.01 -> 0.54 deg mean, tracking 1.03 -> 0.75 cm)."""
    from physmocap.demo import make_demo_capture
    _, walk = make_demo_capture()

    def joint_error(res):
        d = quat.mul(quat.conj(res.motion.lrot[1:, 1:]), res.reference.lrot[1:, 1:])
        return float(np.mean(np.linalg.norm(quat.to_scaled_axis(quat.abs_w(d)), axis=-1)))

    lag = track(walk, body, "assist", TrackingSettings(joint_lead=0.0))
    led = track(walk, body, "assist")
    assert joint_error(led) < 0.7 * joint_error(lag)
    assert np.mean(led.tracking_error_m) < np.mean(lag.tracking_error_m) - 0.002


def test_standing_stays_standing_with_tiny_assist(body):
    r = track(standing(body, 2.0), body, "assist")
    rep = r.report()
    assert rep["tracking_error_m"] < 0.01
    # once settled on the floor (0.25 s) the legs carry the body: the assist stays under
    # 2 % of its weight (736 N; measured 7 N); settling itself takes under 50 N (measured 34)
    assert r.assist_force_n[15:].max() < 15.0
    assert rep["root_assist_force_max_n"] < 50.0
    assert rep["penetration_max_mm"] < 5.0
    assert r.contacts[5:].all()
    assert rep["falls"] == []


def test_assist_integral_removes_the_lag_friction_holds(body):
    """A standing reference sliding sideways at 0.3 m/s: the feet drag on the floor, whose
    friction holds the body back. A proportional assist settles where its pull meets that
    friction; the (leaky) integral term pulls on until the root is nearly where it should be."""
    ref = standing(body, 2.0)
    root = np.array(ref.root_pos)
    root[:, 1] += 0.3 * np.arange(ref.n_frames) / ref.fps
    ref = Motion(ref.skeleton, ref.fps, root, ref.lrot)

    def lag(settings):
        r = track(ref, body, "assist", settings)
        last = slice(ref.n_frames // 2, None)
        return np.mean(np.abs(r.motion.root_pos[last, 1] - r.reference.root_pos[last, 1]))

    p_only = lag(TrackingSettings(assist_ki=0.0))
    with_i = lag(TrackingSettings())
    print(f"root lag: proportional {1000 * p_only:.1f} mm, with the integral "
          f"{1000 * with_i:.1f} mm")
    assert with_i < 0.5 * p_only


def test_zero_gains_fall_detected_in_physical_mode(body):
    limp = TrackingSettings(joint_max_torque=0.0, joint_min_torque=0.0)
    r = track(standing(body, 2.0), body, "physical", limp)
    assert r.falls, "a limp body must fall"
    f = r.falls[0]
    assert 0.5 < f["time_s"] < 2.0 and f["reason"] in ("head low", "root low")
    assert r.motion.gpos[-1, body.index("Head"), 2] < 0.6
    # the output frame it was detected in, at its time (it was the frame before: frame 0
    # only places the body)
    assert f["frame"] == round(f["time_s"] * r.motion.fps)
    # penetration and skate until the fall began, beside the whole run's: the body lying
    # on the floor is no foot's penetration
    rep, k = r.report(), r._upright_frames()
    assert rep["penetration_max_upright_mm"] == pytest.approx(r.penetration_mm[:k].max())
    assert rep["penetration_max_upright_mm"] <= rep["penetration_max_mm"]
    assert rep["foot_skate_upright_mm"] is not None and 0 < k < r.motion.n_frames


def test_a_fallen_body_is_put_back_on_its_feet(body):
    """``recover_s``: a limp body falls, lies ``recover_s`` after the fall is detected, then
    stands in its reference's pose at rest and falls again; every fall is counted, each put
    back one recording when; the frames and the clock go on."""
    limp = dict(joint_max_torque=0.0, joint_min_torque=0.0)
    ref = standing(body, 6.0)
    once = track(ref, body, "physical", TrackingSettings(**limp))
    r = track(ref, body, "physical", TrackingSettings(**limp, recover_s=1.0))
    assert len(once.falls) == 1 and "recovered_s" not in once.falls[0]
    assert len(r.falls) >= 2 and r.motion.n_frames == ref.n_frames
    assert r.falls[0] == dict(once.falls[0], recovered_s=r.falls[0]["recovered_s"])
    head = r.motion.gpos[:, body.index("Head"), 2]
    for f, g in zip(r.falls, r.falls[1:]):
        assert f["recovered_s"] == pytest.approx(f["time_s"] + 1.0, abs=1.5 / ref.fps)
        assert f["recovered_s"] < g["since_s"]
        k = int(round(f["recovered_s"] * ref.fps))
        assert head[k] < 0.6 and head[k + 1] > 1.5        # lying, then standing at once
        # standing where its reference stands, in its pose
        assert np.allclose(r.motion.root_pos[k + 1], ref.root_pos[k + 1], atol=0.02)
    # every fall but the last was put back (the last may come too late in the take)
    assert all("recovered_s" in f for f in r.falls[:-1])
    rep = r.report()
    assert rep["falls"] == r.falls and rep["tracking_error_upright_m"] == \
        once.report()["tracking_error_upright_m"]


def test_flung_body_is_a_fall_at_once(body):
    """A body thrown at 30 m/s (what a blown-up simulation does) is a fall on the first frame,
    reason "unstable"; a body standing still is not (the rule is the root's speed)."""
    ref = standing(body, 0.2)
    with Tracker(body, "physical") as tr:
        tr.reset(ref.root_pos[0], ref.lrot[0, 0], ref.lrot[0])
        info = tr.step(ref.root_pos[1], ref.lrot[1, 0], ref.lrot[1], 1 / 60)[3]
        assert not info["fallen"] and info["fall"] is None
        tr.char.reset(ref.root_pos[1], ref.lrot[1], root_vel=np.array([30.0, 0.0, 0.0]))
        info = tr.step(ref.root_pos[2], ref.lrot[2, 0], ref.lrot[2], 1 / 60)[3]
    assert info["fallen"] and info["fall"]["reason"] == "unstable"
    assert [f["reason"] for f in tr.falls] == ["unstable"]


def test_assist_clamped(body):
    s = TrackingSettings(assist_max_force=50.0, assist_max_torque=20.0)
    ref = standing(body, 0.5)
    root = np.array(ref.root_pos)
    root[2:, 0] += 0.5                                     # the reference jumps 0.5 m away
    r = track(Motion(ref.skeleton, ref.fps, root, ref.lrot), body, "assist", s)
    assert r.assist_force_n.max() <= 50.0 + 1e-6
    assert r.assist_torque_nm.max() <= 20.0 + 1e-6
    assert r.assist_force_n[3:].min() > 40.0               # saturated: far from the target


def test_wrong_skeleton_rejected(body, data_dir):
    from physmocap.io.bvh import read_bvh
    m = read_bvh(data_dir / WALK_001)
    with pytest.raises(ShapeError, match="retarget"):
        track(m, body)
    with pytest.raises(SettingsError, match="known"):
        track(standing(body, 0.2), body, mode="ghost")


def test_track_any_retargets_other_skeletons_first(body, data_dir):
    """``track_any`` (``play`` and ``avatar --physics``): a clip on another skeleton is exactly
    ``track(retarget(clip, body.skeleton))``; a motion on the body's joints is tracked as is."""
    from physmocap.io.bvh import read_bvh
    from physmocap.matching.retarget import retarget
    src = read_bvh(data_dir / WALK_001)
    short = Motion(src.skeleton, src.fps, src.root_pos[:15], src.lrot[:15])
    for m, ref in ((short, retarget(short, body.skeleton)), (standing(body, 0.25), None)):
        got, want = track_any(m, body), track(ref or m, body)
        assert got.motion.skeleton.names == body.skeleton.names
        np.testing.assert_array_equal(got.motion.root_pos, want.motion.root_pos)
        np.testing.assert_array_equal(got.motion.lrot, want.motion.lrot)
    with pytest.raises(SettingsError, match="known"):
        track_any(short, body, mode="ghost")


def test_walk_figures_measured(body):
    """The demo walk in both modes: the figures are printed (pytest -s) and sanity-checked."""
    from physmocap.demo import make_demo_capture
    _, truth = make_demo_capture()
    for mode in ("assist", "physical"):
        rep = track(truth, body, mode).report()
        print(mode, {k: rep[k] for k in ("tracking_error_m", "root_assist_force_mean_n",
                                          "root_assist_force_max_n", "penetration_max_mm",
                                          "foot_skate_mm", "falls", "frames_per_second")})
        assert np.isfinite(rep["tracking_error_m"])
        assert rep["root_assist_force_max_n"] <= TrackingSettings().assist_max_force + 1e-6
        assert rep["penetration_max_mm"] < 30.0


def test_joint_kd_has_no_effect_on_spherical_motors(body):
    """What TrackingSettings documents: PyBullet's spherical motors ignore the velocity gain
    (bullet3 #2740, #4533). Should PyBullet start using it, this fails and the docs must change."""
    from physmocap.demo import make_demo_capture
    _, walk = make_demo_capture()
    short = Motion(walk.skeleton, walk.fps, walk.root_pos[:40], walk.lrot[:40])
    runs = [track(short, body, "assist", settings=TrackingSettings(joint_kd=kd))
            for kd in (0.0, 5.0)]
    assert np.array_equal(runs[0].motion.root_pos, runs[1].motion.root_pos)
    assert np.array_equal(runs[0].motion.lrot, runs[1].motion.lrot)


def test_walk_assist_within_3cm(body):
    """The issue's target for mode (a) on the demo walk (measured 1.4 cm, 219 N mean assist)."""
    from physmocap.demo import make_demo_capture
    _, truth = make_demo_capture()
    rep = track(truth, body, "assist").report()
    assert rep["tracking_error_m"] <= 0.03 and rep["penetration_max_mm"] <= 10.0
    # the legs carry the body: the mean assist is well under its weight (735 N)
    assert rep["root_assist_force_mean_n"] < 0.4 * 9.81 * body.total_mass


def test_bandai_walk_assist_within_3cm(body, data_dir):
    """A real capture on another skeleton, retargeted (measured 1.9 cm, 347 N mean assist)."""
    from physmocap.io.bvh import read_bvh
    from physmocap.matching.database import resample
    from physmocap.matching.retarget import retarget
    src = read_bvh(data_dir / WALK_001)
    ref = resample(retarget(src, body.skeleton), 60.0)
    ref = Motion(ref.skeleton, ref.fps, ref.root_pos[:600], ref.lrot[:600])
    rep = track(ref, body, "assist").report()
    assert rep["tracking_error_m"] <= 0.03 and rep["penetration_max_mm"] <= 10.0
    assert not rep["falls"]


def test_a_solved_subject_plays_on_its_own_body(body):
    """A motion on the template's joints with other limb lengths (a solve's output) is simulated
    with the subject's body: the template's joints on those lengths, masses by volume."""
    sk = body.skeleton.scaled(1.1)
    F = 90
    m = Motion(sk, 60.0, np.tile(sk.offsets[0], (F, 1)), quat.identity((F, len(body))))
    r = track(m, body, "assist")
    assert r.report()["tracking_error_m"] < 0.01 and not r.falls
    np.testing.assert_allclose(r.motion.skeleton.offsets, sk.offsets)
    sub = body.with_skeleton(sk)
    assert sub.total_mass == pytest.approx(body.total_mass * 1.1 ** 3)
    with pytest.raises(ShapeError):
        body.with_skeleton(_other_skeleton())


def test_a_solved_bvh_read_back_plays_as_the_motion_written(body, tmp_path):
    """A subject's motion written to a BVH (its rest stood up along the file's Y) and read back
    is the same reference on the same body: ``prepare_reference`` turns it back to the
    template's joint frames (the feet, hinges and limits are in them)."""
    from physmocap.io.bvh import read_bvh, write_bvh
    from physmocap.playback.track import prepare_reference
    sk = body.skeleton.scaled(1.05)
    F = 30
    rng = np.random.default_rng(3)
    lrot = quat.from_scaled_axis(rng.normal(0.0, 0.2, (F, len(sk), 3)))
    m = Motion(sk, 60.0, np.tile([0.0, 0.0, 1.0], (F, 1)), lrot)
    write_bvh(m, tmp_path / "solved.bvh")
    back = read_bvh(tmp_path / "solved.bvh", unit="cm")
    assert not np.allclose(back.skeleton.offsets[1:], sk.offsets[1:], atol=1e-3)
    b1, r1, _ = prepare_reference(m, body, "assist", TrackingSettings())
    b2, r2, _ = prepare_reference(back, body, "assist", TrackingSettings())
    np.testing.assert_allclose(b2.skeleton.offsets, b1.skeleton.offsets, atol=1e-7)
    np.testing.assert_allclose(np.abs((r2.lrot * r1.lrot).sum(-1)), 1.0, atol=1e-6)
    np.testing.assert_allclose(r2.gpos, r1.gpos, atol=1e-6)


def test_a_long_legged_subject_has_feet_of_positive_size(body):
    """Calibration keeps the scaled template's root offset; a subject whose legs came out long
    stood through the floor in the rest pose, and its foot boxes (down to that floor) were thin
    or of negative height (the solved Plug-in Gait walk's toes). On its own body each foot box
    reaches the floor and none is flat."""
    from conftest import long_legged
    from physmocap.playback.character import foot_box, foot_joints
    sub = body.with_skeleton(long_legged(body.skeleton))   # the root's rest offset kept short
    rest = sub.skeleton.rest_positions()
    for j in sum(foot_joints(sub), []):
        half, ctr = foot_box(sub, j)
        assert np.all(half > 0.0)
        assert rest[j, 2] + ctr[2] - half[2] == pytest.approx(0.0, abs=1e-9)   # its sole
        assert half[2] >= foot_box(body, j)[0][2]      # a larger subject: no thinner feet


def _other_skeleton():
    from physmocap.skeleton import Skeleton
    return Skeleton(("A", "B"), np.array([-1, 0]), np.array([[0, 0, 1.0], [0, 0, 0.5]]))


def test_swing_clearance_per_mode_and_refused_values():
    s = TrackingSettings()
    assert (s.clearance("assist"), s.clearance("physical")) == (0.01, 0.0)
    e = TrackingSettings(swing_clearance=0.02)
    assert (e.clearance("assist"), e.clearance("physical")) == (0.02, 0.02)
    for bad in (-0.01, float("nan"), True, "1"):
        with pytest.raises(SettingsError, match="swing_clearance"):
            TrackingSettings(swing_clearance=bad)


def test_balance_settings_by_name():
    """``play`` and ``avatar --physics`` build their settings from the balance name."""
    from physmocap.playback.balance import STEPPING
    from physmocap.playback.track import balance_settings
    assert balance_settings("none") == TrackingSettings()
    s = balance_settings("stepping")
    assert s.balance and s.balance_gains == STEPPING
    with pytest.raises(SettingsError, match="unknown balance 'walk'; known: none, stepping"):
        balance_settings("walk")


def test_progress_is_told_from_the_first_frame(body):
    """The stage's clock starts at its first call: called first at frame 120, a 4 s run was
    reported as "track 150 in 0.7 s"."""
    calls = []
    track(standing(body, 2.5), body, progress=lambda *a: calls.append(a))
    assert calls[0] == ("track", 1, 150) and calls[-1] == ("track", 150, 150)
