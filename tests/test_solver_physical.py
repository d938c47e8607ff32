"""The physical marker solver: synthetic ground truth from real motion, constraints, errors."""
from __future__ import annotations

import numpy as np
import pytest

from physmocap import MarkerSet, Motion, ShapeError, Skeleton, quat
from physmocap.io.bvh import read_bvh
from physmocap.solver.body import PhysicsBody
from physmocap.errors import SettingsError
from physmocap.solver.physical import (PhysicalSettings, landmarks, plant_anchors,
                                       plant_weights, solve_physical)
from physmocap.solver.synthetic import place_markers, synthesize


@pytest.fixture(scope="module")
def truth(data_dir):
    """CMU 16_57 (a run with a sudden stop) without its T-pose frame, every 2nd frame (60 Hz)."""
    m = read_bvh(data_dir / "bvh/cmu/16_57.bvh")
    return m[1::2]


@pytest.fixture(scope="module")
def markers(truth):
    ms = place_markers(truth, per_segment=3, rng=np.random.default_rng(0))
    return ms


def observable(sk: Skeleton, ms: MarkerSet) -> list[int]:
    """Joints between two segments that both carry markers: their angle is determined."""
    has = np.zeros(len(sk), bool)
    has[ms.body] = True
    return [j for j in range(1, len(sk)) if has[j] and has[sk.parents[j]]]


def test_body_matches_forward_kinematics(truth):
    with PhysicsBody(truth.skeleton) as body:
        for f in (0, 40, 100):
            body.set_pose(truth.root_pos[f], truth.lrot[f])
            gpos, grot = body.joint_frames()
            assert np.abs(gpos - truth.gpos[f]).max() < 1e-6
            assert np.allclose(np.abs(np.sum(grot * truth.grot[f], -1)), 1.0, atol=1e-6)
            root, lrot = body.get_pose()
            assert np.allclose(root, truth.root_pos[f])
            assert np.allclose(np.abs(np.sum(lrot * truth.lrot[f], -1)), 1.0, atol=1e-9)


def test_synthetic_ground_truth(truth, markers):
    """2 mm noise: joint angles within 2 degrees, marker RMS at the noise floor."""
    rng = np.random.default_rng(1)
    pos = synthesize(truth, markers, noise_m=0.002, rng=rng)
    exact = landmarks(truth.gpos, truth.grot, markers)
    floor = np.sqrt(np.mean(np.sum((pos - exact) ** 2, -1)))      # residual at the truth
    r = solve_physical(truth.skeleton, markers, pos, truth.fps, init=truth[:1])
    rms = np.sqrt(np.nanmean(r.residual ** 2))
    obs = observable(truth.skeleton, markers)
    err = np.degrees(quat.angle(r.motion.lrot[:, obs], truth.lrot[:, obs]))
    print(f"physical: rms {rms * 1e3:.2f} mm (floor {floor * 1e3:.2f}), angle error mean "
          f"{err.mean():.2f} deg, substeps median {np.median(r.substeps)}")
    assert abs(rms - floor) < 0.001
    assert err.mean() <= 2.0
    assert not r.clipped.any()  # no false outliers


def test_gaps_and_drops_stay_bounded(truth):
    """30 % of samples dropped and a forearm gone for 1 s, the physical solver tracking from its
    own previous equilibrium (``warm='previous'``): with 4 markers per segment the error outside
    the gap grows by under 1 degree (0.41-0.55 over seeds 2-5; with 3 per segment 0.79-1.20).
    The pipeline's default start, each frame's kinematic solve (with its ``TRACKING`` hold),
    grows 0.30-0.76 with 4 and 0.19-0.91 with 3: ``python benchmarks/dropout.py``."""
    markers = place_markers(truth, per_segment=4, rng=np.random.default_rng(0))
    rng = np.random.default_rng(2)
    forearm = [n for n, b in zip(markers.names, markers.body)
               if truth.skeleton.names[b] == "LeftForeArm"]
    base = synthesize(truth, markers, noise_m=0.002, rng=np.random.default_rng(1))
    gap = (40, 100)  # one second at 60 Hz
    pos = synthesize(truth, markers, noise_m=0.002, drop=0.3, rng=rng,
                     gaps=[(forearm, *gap)])
    clean = solve_physical(truth.skeleton, markers, base, truth.fps, init=truth[:1])
    r = solve_physical(truth.skeleton, markers, pos, truth.fps, init=truth[:1])
    assert np.all(np.isfinite(r.motion.lrot))
    obs = observable(truth.skeleton, markers)
    outside = np.r_[0:gap[0], gap[1] + 10:truth.n_frames]
    e0 = np.degrees(quat.angle(clean.motion.lrot[outside][:, obs], truth.lrot[outside][:, obs]))
    e1 = np.degrees(quat.angle(r.motion.lrot[outside][:, obs], truth.lrot[outside][:, obs]))
    print(f"error outside the gap: {e0.mean():.2f} -> {e1.mean():.2f} deg")
    assert e1.mean() - e0.mean() <= 1.0
    # during the gap the forearm is carried by the body: bounded, no flailing
    fa = truth.skeleton.index("LeftForeArm")
    during = np.degrees(quat.angle(r.motion.lrot[gap[0]:gap[1], fa],
                                   truth.lrot[gap[0]:gap[1], fa]))
    assert during.max() < 90.0


def test_pipeline_start_under_dropout(truth, markers):
    """The same damage through the pipeline's path (3 markers per segment): each frame's
    physical relaxation starts from the kinematic solve run as ``solve_capture`` runs it
    (``TRACKING``: frame after frame, poorly seen segments held); the error outside the gap grows
    by under 1 degree (0.19-0.91 over seeds 2-5: ``benchmarks/dropout.py``; 1.5-2.3 before the
    hold)."""
    from physmocap.solver.kinematic import solve_kinematic
    from physmocap.solver.pipeline import TRACKING
    forearm = [n for n, b in zip(markers.names, markers.body)
               if truth.skeleton.names[b] == "LeftForeArm"]
    gap = (40, 100)
    outside = np.r_[0:gap[0], gap[1] + 10:truth.n_frames]
    obs = observable(truth.skeleton, markers)
    err = []
    for pos in (synthesize(truth, markers, noise_m=0.002, rng=np.random.default_rng(1)),
                synthesize(truth, markers, noise_m=0.002, drop=0.3, rng=np.random.default_rng(2),
                           gaps=[(forearm, *gap)])):
        kin = solve_kinematic(truth.skeleton, markers, pos, fps=truth.fps, max_marker_pull=0.04,
                              **TRACKING)
        r = solve_physical(truth.skeleton, markers, pos, truth.fps, init=kin.motion)
        err.append(np.degrees(quat.angle(r.motion.lrot[outside][:, obs],
                                         truth.lrot[outside][:, obs])).mean())
    print(f"pipeline start, error outside the gap: {err[0]:.2f} -> {err[1]:.2f} deg")
    assert err[1] - err[0] <= 1.0


def test_ghost_marker_is_bounded_and_flagged(truth, markers):
    pos = synthesize(truth, markers, noise_m=0.002, rng=np.random.default_rng(1))
    f, m = 60, 5
    pos[f, m] += [0.5, 0.0, 0.0]
    r = solve_physical(truth.skeleton, markers, pos, truth.fps, init=truth[:1])
    assert r.clipped[f, m] and r.clipped.sum() <= 3
    obs = observable(truth.skeleton, markers)
    err = np.degrees(quat.angle(r.motion.lrot[f, obs], truth.lrot[f, obs]))
    assert err.mean() < 3.0


def test_anchor_pins_a_point(truth, markers):
    """A still pose whose foot markers drift 3 cm: the constraint spring keeps the foot put."""
    # at the capture's 120 Hz, where the 0.02 s ramp spans 2.4 frames (at 60 Hz, 1.2)
    still = Motion(truth.skeleton, 120.0, truth.root_pos[[0] * 30], truth.lrot[[0] * 30])
    pos = synthesize(still, markers, noise_m=0.0, rng=np.random.default_rng(1))
    sk = truth.skeleton
    foot = sk.index("LeftFoot")
    on_foot = np.isin(markers.body, [foot, sk.index("LeftToeBase")])
    row = int(np.flatnonzero(markers.body == foot)[0])
    pos[:, on_foot, 0] += np.linspace(0.0, 0.03, 30)[:, None]   # the foot markers skate
    anchors = np.full((30, 1, 3), np.nan)
    anchors[5:25, 0] = pos[5, row]
    r = solve_physical(truth.skeleton, markers, pos, truth.fps, init=truth[:1],
                       anchors=anchors, anchor_rows=np.array([row]))
    held = r.constraint_points[5:25, 0]
    drift = np.linalg.norm(held - anchors[5:25, 0], axis=-1)
    assert drift.max() < 0.003                               # pinned: < 3 mm of 25 mm drift
    free = np.linalg.norm(r.constraint_points[27:, 0] - pos[27:, row], axis=-1)
    assert free.max() < 0.01                                 # released: follows its marker


def test_plant_anchors_one_place_per_interval():
    pts = np.zeros((10, 1, 3))
    pts[:, 0, 0] = np.arange(10) * 0.001
    pts[:, 0, 2] = -0.01
    act = np.zeros((10, 1), bool)
    act[2:6] = True
    act[7:9] = True
    a = plant_anchors(pts, act, floor=0.0)
    assert np.isnan(a[0, 0, 0]) and np.isnan(a[6, 0, 0])
    assert np.allclose(a[2:6, 0, 0], 0.0035) and np.allclose(a[7:9, 0, 0], 0.0075)
    assert np.all(a[2:6, 0, 2] == 0.0)  # never below the floor


def test_plant_weights_ramp_in_and_out_within_each_interval():
    act = np.zeros((20, 2), bool)
    act[2:12, 0] = True          # 10 frames
    act[14:17, 0] = True         # 3 frames: shorter than two ramps
    act[:, 1] = True             # the whole take
    w = plant_weights(act, 2)
    assert np.all(w[~act] == 0.0)
    assert np.allclose(w[2:12, 0], [1 / 3, 2 / 3, 1, 1, 1, 1, 1, 1, 2 / 3, 1 / 3])
    assert np.allclose(w[14:17, 0], [1 / 3, 2 / 3, 1 / 3])
    assert w[0, 1] == w[-1, 1] == 1 / 3 and np.all(w[2:-2, 1] == 1.0)
    assert np.array_equal(plant_weights(act, 0), act.astype(float))


def test_a_foot_point_does_not_jump_when_the_other_one_lets_go(truth, markers):
    """Two plants on one foot whose anchors disagree by 1 cm (a heel and a toe, each the median
    of its own interval): the toe's lets go at frame 15. Switched off at once it let the heel
    jump; ramped (``plant_ramp``) the heel's largest step is less than half as big."""
    # at the capture's 120 Hz, where the 0.02 s ramp spans 2.4 frames (at 60 Hz, 1.2)
    still = Motion(truth.skeleton, 120.0, truth.root_pos[[0] * 30], truth.lrot[[0] * 30])
    pos = synthesize(still, markers, noise_m=0.0, rng=np.random.default_rng(1))
    sk = truth.skeleton
    rows = np.flatnonzero(markers.body == sk.index("LeftFoot"))[:2]
    anchors = np.full((30, 2, 3), np.nan)
    anchors[:, 0] = pos[0, rows[0]]
    anchors[:15, 1] = pos[0, rows[1]] + [0.01, 0.0, 0.0]
    steps = []
    for ramp in (0.0, PhysicalSettings().plant_ramp):
        r = solve_physical(sk, markers, pos, still.fps, init=still, anchors=anchors,
                           anchor_rows=rows, settings=PhysicalSettings(plant_ramp=ramp))
        heel = r.constraint_points[:, 0]
        steps.append(np.linalg.norm(np.diff(heel, axis=0), axis=-1)[5:25].max())
    assert steps[0] > 2e-4 and steps[1] < 0.5 * steps[0]


def test_error_paths(truth, markers):
    pos = np.zeros((5, len(markers), 3))
    with pytest.raises(ShapeError, match="do not fit"):
        solve_physical(truth.skeleton, markers, pos[:, :3], 60, init=truth[:1])
    with pytest.raises(ShapeError, match="init"):
        solve_physical(truth.skeleton, markers, pos, 60, init=truth[:2])
    bad = MarkerSet(["x"], [len(truth.skeleton)], [[0, 0, 0]])
    with pytest.raises(ShapeError, match="joints the skeleton does not have"):
        solve_physical(truth.skeleton, bad, pos[:, :1], 60, init=truth[:1])
    with pytest.raises(ShapeError, match="anchor"):
        solve_physical(truth.skeleton, markers, pos, 60, init=truth[:1],
                       anchors=np.zeros((5, 1, 3)))
    with pytest.raises(ShapeError, match=r"anchor_weight must be \(F, K\) = \(5, 1\)"):
        solve_physical(truth.skeleton, markers, pos, 60, init=truth[:1],
                       anchors=np.zeros((5, 1, 3)), anchor_rows=np.array([0]),
                       anchor_weight=np.ones((5, 2)))
    for bad in (np.nan, -0.1, 1.5):
        with pytest.raises(ShapeError, match="anchor_weight must hold fractions 0..1"):
            solve_physical(truth.skeleton, markers, pos, 60, init=truth[:1],
                           anchors=np.zeros((5, 1, 3)), anchor_rows=np.array([0]),
                           anchor_weight=np.full((5, 1), bad))
    with pytest.raises(SettingsError, match="plant_weights: ramp must be a whole number >= 0"):
        plant_weights(np.ones((5, 1), bool), -1)
    with pytest.raises(ShapeError, match=r"plant_weights: active must be \(F, K\)"):
        plant_weights(np.ones(5, bool), 2)


def test_hand_hold_pins_the_palm(tmp_path):
    """A declared hold keeps the palm on a bar although the capture's hand drifts off it."""
    from physmocap.demo import make_demo_capture
    from physmocap.scene import load_body, load_environment, load_markerset
    from physmocap.solver.pipeline import solve_capture

    cap, truth = make_demo_capture(drop=0.0)
    body = load_body()
    palm = truth.gpos[:, body.skeleton.index("LeftHand")]
    a, b = 30, 90
    bar_z = float(np.median(palm[a:b, 2])) + 0.03            # the bar is 3 cm above the hand
    scene = tmp_path / "bar.toml"
    scene.write_text(f"""
[[object]]
name = "bar"
kind = "bar"
from = [-2.0, 0.0, {bar_z}]
to = [4.0, 0.0, {bar_z}]
[[hold]]
hand = "Left"
start = {a / cap.fps}
stop = {b / cap.fps}
object = "bar"
""")
    r = solve_capture(cap, load_markerset("cmu41"), body, environment=load_environment(scene))
    hold = r.report["hand_holds"]["LeftHand_hold1"]
    assert hold["frames"] == b - a
    assert hold["error_mm_mean"] < 10.0                      # on the bar, not 3 cm off


@pytest.mark.parametrize("field, value", [
    ("stiffness", 0.0), ("outlier_distance", float("nan")), ("timestep", -1.0),
    ("mass_floor", 0.0), ("tol", -1e-4), ("plant_stiffness", float("inf")), ("resist", "x"),
    ("keep", 1.5), ("substeps", 0), ("min_substeps", 2.5), ("predict", 1), ("plant_ramp", -0.01),
    ("ball_limits", None), ("carry", -0.1), ("carry", float("nan")),
])
def test_bad_physical_settings_are_one_settings_error(field, value):
    """Each is one line when the settings are made (before, none was checked), and the edges the
    docstring allows are accepted."""
    with pytest.raises(SettingsError, match=f"PhysicalSettings: {field} must be") as e:
        PhysicalSettings(**{field: value})
    assert "\n" not in str(e.value)
    with pytest.raises(SettingsError, match=r"min_substeps \(5\) exceeds substeps \(3\)"):
        PhysicalSettings(substeps=3, min_substeps=5)
    assert PhysicalSettings(keep=0.0, tol=0.0, resist=0.0, substeps=1, min_substeps=1,
                            carry=0.0)
    assert PhysicalSettings(carry=1.0)


def test_ball_limit_torques_push_back_into_an_off_centre_twist_range():
    """With ``ball_limits`` a twist range ``mid ± half`` (a wrist: -10..170°) pushes only a
    joint outside it, back toward the range; inside it (a hanging hand, 90°) nothing."""
    from physmocap.solver.physical import joint_torques
    axis = np.array([[0.0, 1.0, 0.0]])
    lim = np.radians([[60.0, 90.0]])                  # swing 60°, twist half-range 90°
    mid = np.radians([80.0])

    def tau(twist_deg, ball_limits=True):
        q = quat.from_axis_angle(axis, np.radians([twist_deg]))
        return joint_torques(q, q, np.array([False]), np.full((1, 3), np.nan), lim, axis,
                             kp=1.0, kh=1.0, kl=10.0, ball_limits=ball_limits, twist_mid=mid)[0]
    assert np.allclose(tau(90.0), 0) and np.allclose(tau(-5.0), 0)
    assert tau(-30.0)[1] == pytest.approx(10 * np.radians(20.0))       # 20° past -10: pronate
    assert tau(175.0)[1] == pytest.approx(-10 * np.radians(5.0))       # 5° past 170: supinate
    assert np.allclose(tau(-30.0, ball_limits=False), 0)               # off: report only


def test_a_frame_starts_from_the_correction_of_the_one_before(truth, markers):
    """From the kinematic optimum per frame, a plant that pulls the foot 1 cm off its markers moves
    every frame's equilibrium away from its initial pose in the same way: started with the
    frame before's correction (``carry``), the frames take fewer sub-steps and end nearer the
    equilibrium than started from the initial pose alone."""
    still = truth[-40:]                        # standing after the stop
    pos = synthesize(still, markers, noise_m=0.002, rng=np.random.default_rng(3))
    rows = np.flatnonzero(markers.body == still.skeleton.index("LeftFoot"))[:1]
    anchors = np.repeat(np.nanmedian(pos[:, rows], axis=0)[None] + [0.0, 0.01, 0.0], 40, 0)
    from physmocap.solver.kinematic import solve_kinematic
    kin = solve_kinematic(still.skeleton, markers, pos, fps=still.fps).motion   # the optima
    solve = lambda **kw: solve_physical(still.skeleton, markers, pos, still.fps,  # noqa: E731
                                        init=kin, anchors=anchors, anchor_rows=rows, **kw)
    tight = solve(settings=PhysicalSettings(tol=1e-6, substeps=300)).motion.gpos
    carried = solve()
    alone = solve(settings=PhysicalSettings(carry=0.0))
    far = [np.linalg.norm(r.motion.gpos - tight, axis=-1).mean() for r in (carried, alone)]
    print(f"sub-steps {carried.substeps.mean():.2f} / {alone.substeps.mean():.2f}, from the "
          f"tight solve {1000 * far[0]:.3f} / {1000 * far[1]:.3f} mm (carried / alone)")
    assert carried.substeps[1:].mean() < 0.8 * alone.substeps[1:].mean()
    assert far[0] < far[1]
