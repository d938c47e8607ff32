"""Calibration recovers a subject's limb lengths and marker offsets from motion alone."""
import numpy as np
import pytest

from physmocap import MarkerSet, Skeleton, quat
from physmocap.calibrate import calibrate, choose_frames, estimate_scale
from physmocap.errors import SettingsError
from physmocap.scene import load_body, load_markerset
from physmocap.solver.physical import landmarks


def subject_and_capture(scale=1.08, seed=0, amplitude=1.0):
    body = load_body()
    rng = np.random.default_rng(seed)
    tpl = body.skeleton
    # A subject: scaled template with every bone perturbed by up to 5 %.
    offsets = tpl.offsets * scale * (1 + rng.uniform(-0.05, 0.05, size=(len(tpl), 1)))
    subj = Skeleton(tpl.names, tpl.parents, offsets, tpl.end_sites * scale)
    ms_t = load_markerset("cmu41").bind(tpl)
    # Markers on bony landmarks sit at the landmark, relative to the joint centre it marks: a
    # longer thigh carries KNE down with the knee (``marker_anchors``); then 1 cm of placement
    # scatter.
    from physmocap.calibrate import marker_anchors
    anchor = marker_anchors(tpl, ms_t)
    moved = anchor != ms_t.body
    moff = ms_t.offset * scale
    moff[moved] += offsets[anchor[moved]] - tpl.offsets[anchor[moved]] * scale
    ms = MarkerSet(ms_t.names, ms_t.body, moff + rng.normal(scale=0.01, size=ms_t.offset.shape))
    # Motion: random smooth joint rotations up to ~35 degrees, 200 frames.
    F = 200
    t = np.linspace(0, 2 * np.pi, F)[:, None, None]
    amp = amplitude * rng.uniform(0.1, 0.6, size=(1, len(tpl), 3))
    ph = rng.uniform(0, 2 * np.pi, size=(1, len(tpl), 3))
    lrot = quat.from_scaled_axis(amp * np.sin(t + ph))
    root = np.column_stack([np.linspace(0, 2, F), np.zeros(F), np.full(F, offsets[0, 2])])
    gpos, grot = __import__("physmocap").forward_kinematics(subj, lrot, root)
    pos = landmarks(gpos, grot, ms) + rng.normal(scale=0.001, size=(F, len(ms), 3))
    return tpl, ms_t, subj, ms, pos


def static_trial(subj: Skeleton, ms: MarkerSet, rng, F: int = 60):
    """A subject standing still in the rest pose (0.002 rad of sway), 0.5 mm marker noise:
    ``pos (F, M, 3)`` and the true joint positions ``(F, J, 3)``."""
    lrot = quat.from_scaled_axis(rng.normal(scale=0.002, size=(F, len(subj), 3)))
    root = np.tile([0.0, 0.0, subj.offsets[0, 2] + 0.05], (F, 1))
    gpos, grot = __import__("physmocap").forward_kinematics(subj, lrot, root)
    return landmarks(gpos, grot, ms) + rng.normal(scale=0.0005, size=(F, len(ms), 3)), gpos


def test_estimate_scale_and_frames():
    # a subject moving like a person (joints within ~10 degrees of standing): vertical extent
    # gives the size; strongly bent poses shrink it (that is what calibration then corrects)
    tpl, ms_t, subj, ms, pos = subject_and_capture(scale=1.08, amplitude=0.3)
    assert abs(estimate_scale(pos, tpl, ms_t) - 1.08) < 0.04
    pos[::3, 0] = np.nan
    f = choose_frames(pos, 20)
    assert len(f) == 20
    seen = (~np.isnan(pos[f]).any(-1)).sum(axis=1)
    assert np.all(seen >= pos.shape[1] - 2)        # the best-seen frames only


def test_calibration_recovers_bone_lengths():
    tpl, ms_t, subj, ms, pos = subject_and_capture(amplitude=0.6)
    out = calibrate(pos, 120.0, tpl, ms_t, n_frames=60)
    true_len = subj.bone_lengths()[1:]
    fit_len = out.skeleton.bone_lengths()[1:]
    tpl_err = np.abs(tpl.bone_lengths()[1:] * out.scale - true_len).mean()
    fit_err = np.abs(fit_len - true_len).mean()
    print(f"bone length error: scaled template {tpl_err * 1e3:.1f} mm -> fitted "
          f"{fit_err * 1e3:.1f} mm; marker rms {out.rms_m * 1e3:.2f} mm")
    # Measured: 8.9 mm -> 6.2 mm mean, rms 2.2 mm (1 mm noise); long bones with markers on both ends (thighs, upper
    # arms) improve most, bones next to one-marker segments (shoulders, toes) least.
    assert fit_err < tpl_err
    assert out.rms_m < 0.004


def test_long_take_calibrates_on_continuous_stretches():
    """A take whose pose-solve stride would pass 0.05 s is solved in continuous stretches
    instead (a stride of seconds lands poses in wrong minima: a one-hour take calibrated to
    8.0 mm RMS instead of 4.7). Forced here with a small ``max_pose_frames``."""
    from physmocap import calibrate as cal
    tpl, ms_t, subj, ms, pos = subject_and_capture(amplitude=0.6)
    whole = calibrate(pos, 120.0, tpl, ms_t, n_frames=60)
    # 200 frames in at most 25: a stride of 8 frames, over 0.05 s (6) at 120 Hz
    stretched = calibrate(pos, 120.0, tpl, ms_t, n_frames=60, max_pose_frames=25)
    # 5 stretches of 5 solved frames 6 apart, spread over the take
    f = stretched.frames
    assert len(f) == cal.POSE_WINDOWS * 5 and np.all(np.diff(f) > 0)
    assert f.min() == 0 and f.max() == len(pos) - 6
    assert set(np.diff(f)) - {6} and np.sum(np.diff(f) == 6) == cal.POSE_WINDOWS * 4
    assert stretched.rms_m < whole.rms_m + 0.001


def test_calibration_ignores_a_swapped_label():
    tpl, ms_t, subj, ms, pos = subject_and_capture(seed=1)
    clean = calibrate(pos, 120.0, tpl, ms_t, n_frames=60)
    a, b = ms.names.index("LKNE"), ms.names.index("LSHN")
    pos[50:120, [a, b]] = pos[50:120, [b, a]]
    dirty = calibrate(pos, 120.0, tpl, ms_t, n_frames=60)
    d = np.abs(dirty.skeleton.bone_lengths() - clean.skeleton.bone_lengths()).max()
    assert d < 0.01, d


def test_marker_anchors_are_the_marked_joint_centres():
    from physmocap.calibrate import marker_anchors
    body = load_body()
    ms = load_markerset("plugin_gait_fullbody").bind(body.skeleton)
    a = marker_anchors(body.skeleton, ms)
    name = dict(zip(ms.names, (body.names[j] for j in a)))
    assert name["LKNE"] == "LeftLowerLeg" and name["RKNE"] == "RightLowerLeg"     # knee
    assert name["LANK"] == "LeftFoot" and name["RANK"] == "RightFoot"              # ankle
    assert name["LASI"] == "LeftUpperLeg" and name["RASI"] == "RightUpperLeg"      # hip
    assert name["LHEE"] == "LeftFoot" and name["LFHD"] == "Head"                   # own joint


def test_static_calibration_keeps_the_landmark_offsets():
    """A static trial cannot place a joint centre (no motion about it): the knee must end where
    the marker set puts it relative to KNE (PiG: half the knee width medial), however long the
    subject's thigh, instead of splitting the difference between the thigh and the marker."""
    body = load_body()
    tpl = body.skeleton
    ms_t = load_markerset("plugin_gait_fullbody").bind(tpl)
    offsets = tpl.offsets.copy()
    for side in ("Left", "Right"):
        offsets[tpl.index(side + "LowerLeg")] *= 1.12          # long thighs
        offsets[tpl.index(side + "UpperLeg"), 1] *= 0.8        # narrow hips
    subj = Skeleton(tpl.names, tpl.parents, offsets, tpl.end_sites)
    # the subject's landmarks sit where they do on everyone, relative to their joint centres
    from physmocap.calibrate import marker_anchors
    anchor = marker_anchors(tpl, ms_t)
    moved = anchor != ms_t.body
    moff = ms_t.offset.copy()
    moff[moved] += offsets[anchor[moved]] - tpl.offsets[anchor[moved]]
    ms_s = MarkerSet(ms_t.names, ms_t.body, moff, ms_t.weight)
    pos, _ = static_trial(subj, ms_s, np.random.default_rng(3))
    from physmocap.solver.pipeline import kinematic_prior
    out = calibrate(pos, 100.0, tpl, ms_t, n_frames=30, kinematic_options=kinematic_prior(body))
    ms, sk = out.markerset, out.skeleton
    for side, m in (("Left", "LKNE"), ("Right", "RKNE")):
        knee = sk.offsets[sk.index(side + "LowerLeg")]
        kne = ms.offset[ms.names.index(m)]
        truth = ms_t.offset[ms_t.names.index(m)] - tpl.offsets[tpl.index(side + "LowerLeg")]
        # the KNE-to-knee vector of the fit is the marker set's, to a few mm (scale aside)
        assert np.linalg.norm((kne - knee) - truth * out.scale) < 0.008, (side, kne - knee)
    # the thighs come out long, as the subject's are (the former isotropic prior on the KNE
    # offset from the hip kept them 40 mm short: 436 vs 476 mm)
    for side in ("Left", "Right"):
        fit = np.linalg.norm(sk.offsets[sk.index(side + "LowerLeg")])
        true = np.linalg.norm(offsets[tpl.index(side + "LowerLeg")])
        print(f"{side} thigh: fitted {fit * 1e3:.1f} mm, true {true * 1e3:.1f} mm")
        assert abs(fit - true) < 0.025, (fit, true)        # measured 467 vs 476 mm


def test_align_frames_turns_offsets_not_markers():
    from physmocap.calibrate import align_frames, gauge_free
    from physmocap.motion import Motion
    from physmocap.solver.pipeline import kinematic_prior
    body = load_body()
    tpl = body.skeleton
    ms = load_markerset("cmu41").bind(tpl)
    free = gauge_free(tpl, kinematic_prior(body)["rotation_prior"])
    assert free[tpl.index("Hips")] and free[tpl.index("Head")]
    # the clavicles' twist prior is stated in the chest's frame: turning it would twist them
    assert not free[tpl.index("Chest")]
    # a thigh carries the knee's hinge axis, a foot the toes' hinge: their frames are not free
    assert not free[tpl.index("LeftUpperLeg")] and not free[tpl.index("LeftFoot")]
    assert not free[tpl.index("LeftLowerLeg")]
    # turn the pelvis frame by 10 degrees inside the body: same markers, other offsets
    R = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), np.radians(10.0))
    j = tpl.index("Hips")
    kids = np.flatnonzero(tpl.parents == j)
    offsets = tpl.offsets.copy()
    offsets[kids] = quat.rotate(R, offsets[kids])
    moff = ms.offset.copy()
    moff[ms.body == j] = quat.rotate(R, moff[ms.body == j])
    sk2 = Skeleton(tpl.names, tpl.parents, offsets, tpl.end_sites)
    ms2 = MarkerSet(ms.names, ms.body, moff, ms.weight)
    rng = np.random.default_rng(0)
    lrot = quat.from_scaled_axis(rng.normal(scale=0.3, size=(5, len(tpl), 3)))
    lrot[:, j] = quat.mul(lrot[:, j], quat.inv(R))
    lrot[:, kids] = quat.mul(R, lrot[:, kids])
    mo = Motion(sk2, 100.0, rng.normal(size=(5, 3)), lrot)
    before = landmarks(*__import__("physmocap").forward_kinematics(sk2, mo.lrot, mo.root_pos), ms2)
    sk3, ms3, mo3 = align_frames(sk2, ms2, (tpl, ms), mo, free)
    after = landmarks(*__import__("physmocap").forward_kinematics(sk3, mo3.lrot, mo3.root_pos), ms3)
    assert np.abs(after - before).max() < 1e-9                     # no marker moved
    assert np.abs(ms3.offset[ms.body == j] - ms.offset[ms.body == j]).max() < 1e-9
    assert np.abs(sk3.offsets[kids] - tpl.offsets[kids]).max() < 1e-9


def test_chord_centre_geometry(rng):
    """Plug-in Gait's chord function: in the plane of the three points, at the distance from
    the marker, the marker seen at a right angle from the parent joint; the side nearer the
    estimate; NaN in, NaN out."""
    from physmocap.calibrate import chord_centre
    F = 50
    parent = rng.normal(size=(F, 3))
    marker = parent + rng.normal(size=(F, 3)) * 0.3
    wand = marker + rng.normal(size=(F, 3)) * 0.1
    near = marker + rng.normal(size=(F, 3)) * 0.05
    c = chord_centre(parent, wand, marker, 0.06, near)
    assert np.allclose(np.linalg.norm(c - marker, axis=-1), 0.06)
    assert np.allclose(np.sum((parent - c) * (marker - c), -1), 0.0, atol=1e-12)
    n = np.cross(wand - marker, parent - marker)
    assert np.allclose(np.sum((c - marker) * n, -1), 0.0, atol=1e-12)
    other = 2 * (marker + (np.sum((c - marker) * (parent - marker), -1)
                           / np.sum((parent - marker) ** 2, -1))[:, None] * (parent - marker)) - c
    assert np.all(np.linalg.norm(c - near, axis=-1) <= np.linalg.norm(other - near, axis=-1))
    wand[3] = np.nan
    out = chord_centre(parent, wand, marker, 0.06, near)
    assert np.isnan(out[3]).all() and np.isfinite(np.delete(out, 3, 0)).all()


def test_static_calibration_places_knees_by_the_chord_rule():
    """A subject whose thigh wand sits 3 cm ahead of where the template puts it, and whose knee
    centre lies where Plug-in Gait's chord rule puts it (in the plane of hip, THI and KNE): a
    static calibration with the rule puts the knees near the subject's (measured 6.5 mm: the
    fitted THI and KNE offsets keep a little of the template's pull, which turns the thigh when
    the rule's point is gone); priors alone leave them where the template's offsets put them
    relative to KNE, out of that plane (36 mm)."""
    from physmocap.calibrate import Centre, chord_centre
    from physmocap.solver.pipeline import kinematic_prior
    body = load_body()
    tpl = body.skeleton
    ms_t = load_markerset("plugin_gait_fullbody").bind(tpl)
    moff = ms_t.offset.copy()
    offsets = tpl.offsets.copy()
    rules, D = [], 0.06
    for side, s in (("Left", "L"), ("Right", "R")):
        k, thi, kne = tpl.index(side + "LowerLeg"), ms_t.names.index(s + "THI"), ms_t.names.index(
            s + "KNE")
        moff[thi, 0] += 0.03                        # the wand turned forward
        z = np.zeros((1, 3))                        # rest pose: thigh frame = world, hip at 0
        chord = chord_centre(z, moff[thi][None], moff[kne][None], D, offsets[k][None])[0]
        shank = ms_t.body == k
        moff[shank] += chord - offsets[k]           # shank markers move with the knee
        offsets[k] = chord
        rules.append(Centre(k, thi, kne, width=2 * (D - 0.008), template_width=0.104,
                            radius=0.008))
    subj = Skeleton(tpl.names, tpl.parents, offsets, tpl.end_sites)
    ms_s = MarkerSet(ms_t.names, ms_t.body, moff, ms_t.weight)
    pos, gpos = static_trial(subj, ms_s, np.random.default_rng(5))

    opts = kinematic_prior(body)
    true_knees = gpos[:, [r.joint for r in rules]]

    def miss(out):
        """mm from each fitted knee to the subject's, over the static frames (median)."""
        from physmocap.solver.kinematic import solve_kinematic
        fit = solve_kinematic(out.skeleton, out.markerset, pos, fps=100.0, **opts).motion.gpos
        d = np.linalg.norm(fit[:, [r.joint for r in rules]] - true_knees, axis=-1)
        return 1000 * np.median(d, axis=0)

    with_rule = miss(calibrate(pos, 100.0, tpl, ms_t, n_frames=30, kinematic_options=opts,
                               centres=rules))
    without = miss(calibrate(pos, 100.0, tpl, ms_t, n_frames=30, kinematic_options=opts))
    print(f"knee centres off the subject's: with the rule {with_rule} mm, without {without} mm")
    assert np.all(with_rule < 8.0), with_rule
    assert np.all(without > 30.0), without


def test_bind_centres_takes_the_subjects_widths():
    """The marker set's knee rules bound to a trial: the subject's knee widths (mm in the C3D's
    PROCESSING group) where stated, else the template's scaled with the subject; a rule whose
    markers the trial lacks is left out."""
    from physmocap.solver.pipeline import bind_centres
    body = load_body()
    spec = load_markerset("plugin_gait_fullbody")
    labels = tuple(spec.names)
    got = bind_centres(spec, labels, body.skeleton, {"subject_parameters": {"LKneeWidth": 110.0}})
    left, right = sorted(got, key=lambda c: body.names[c.joint])
    assert body.names[left.joint] == "LeftLowerLeg"
    assert (labels[left.wand], labels[left.marker]) == ("LTHI", "LKNE")
    assert left.width == 0.110 and left.distance(1.3) == 0.055 + 0.008
    assert right.width is None and np.isclose(right.distance(0.9), 0.104 * 0.9 / 2 + 0.008)
    assert bind_centres(spec, tuple(l for l in labels if l != "RTHI"), body.skeleton, {}) == (
        bind_centres(spec, labels, body.skeleton, {})[:1])


def test_bad_calibration_settings_are_one_settings_error():
    """A NaN rate raised numpy's ValueError; counts of 0, -1 or 2.5 a misleading "no frames",
    a ValueError or a TypeError."""
    tpl = load_body().skeleton
    ms = MarkerSet(("a", "b", "c"), np.array([1, 2, 3]), np.zeros((3, 3)))
    pos = np.zeros((10, 3, 3))
    for kw, match in ((dict(fps=float("nan")), "fps must be a finite number > 0"),
                      (dict(n_frames=0), "n_frames must be a whole number >= 1"),
                      (dict(iterations=2.5), "iterations must be a whole number >= 1"),
                      (dict(pull=-1.0), "pull must be a finite number >= 0")):
        kw = {"fps": 120.0, **kw}
        with pytest.raises(SettingsError, match="calibrate: " + match):
            calibrate(pos, template=tpl, markerset=ms, **kw)
    for n in (0, -1, float("nan")):
        with pytest.raises(SettingsError, match="choose_frames: n must be a whole number"):
            choose_frames(pos, n)


@pytest.mark.parametrize("first_iterations", [10, 15])
def test_a_nudged_calibration_still_solves_the_forearm_onto_its_marker(cmu_01_01, monkeypatch,
                                                                        first_iterations):
    """CMU 01_01, every marker seen: frames that started 32 frames (0.27 s) back solved the
    left forearm of some subjects (calibrations with their first poses cut short, among them)
    into a minimum 5 cm off LFRM, held there for hundreds of frames by the robust loss giving
    that marker up. The subject and the solve must not hang on such a nudge."""
    import physmocap.calibrate as cal
    from physmocap.solver.kinematic import solve_kinematic
    from physmocap.solver.pipeline import TRACKING, kinematic_prior

    t, body, ms0, pos = cmu_01_01
    prior = kinematic_prior(body)
    monkeypatch.setattr(cal, "FIRST_POSE_ITERATIONS", first_iterations)
    subj = calibrate(pos, t.fps, body.skeleton, ms0, kinematic_options=prior)
    res = solve_kinematic(subj.skeleton, subj.markerset, pos, fps=t.fps, max_marker_pull=0.04,
                          **prior, **TRACKING)
    lfrm = res.residual[:, list(ms0.names).index("LFRM")]
    assert np.nanmax(lfrm) < 0.03, f"LFRM {np.nanmax(lfrm) * 1000:.0f} mm off"
    # the take's one known fault (RFHD knocked off, ~90 frames) is all that is left over 4 cm
    assert (np.nan_to_num(res.residual) > 0.04).any(axis=1).sum() < 120
