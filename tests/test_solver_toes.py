import numpy as np
import pytest

from physmocap import ShapeError, quat
from physmocap.errors import SettingsError
from physmocap.motion import Motion
from physmocap.scene import load_body, load_markerset
from physmocap.solver.toes import MAX_BEND, floor_toes, free_toes, standing_heights, toe_tips


def heel_rise(degrees=np.linspace(0.0, 50.0, 26)):
    """The body standing in its rest pose, its left foot turned toes-down about its ankle by
    ``degrees`` (one frame each): the heel rises, the rigid toe's tip goes under the floor."""
    sk = load_body().skeleton
    F = len(degrees)
    lrot = np.tile([0.0, 0.0, 0.0, 1.0], (F, len(sk), 1))
    # about +Y (the foot's left): a positive turn takes +X (forward) down
    lrot[:, sk.index("LeftFoot")] = quat.from_axis_angle(np.array([0.0, 1.0, 0.0]),
                                                         np.radians(degrees))
    return Motion(sk, 100.0, np.tile(sk.offsets[0], (F, 1)), lrot)


def tip(motion, j):
    """``(F, 3)`` m, toe ``j``'s tip (its segment vector from the joint)."""
    seg = motion.skeleton.segment_vectors()[j]
    F = motion.n_frames
    return motion.gpos[:, j] + quat.rotate(motion.grot[:, j], np.broadcast_to(seg, (F, 3)))


def test_toe_tips_are_the_end_sites_in_blocks(monkeypatch):
    from physmocap.solver import kinematic
    m = heel_rise()
    sk = m.skeleton
    # marker_positions' blocks of frames, that do not divide the take
    monkeypatch.setattr(kinematic, "_BLOCK", 7)
    got = toe_tips(m)
    assert list(got) == ["LeftToes", "RightToes"]
    for name, p in got.items():
        np.testing.assert_allclose(p, tip(m, sk.index(name)), atol=1e-12)
    # the rest pose: the tip its end site's offset from the joint
    j = sk.index("LeftToes")
    np.testing.assert_allclose(got["LeftToes"][0] - m.gpos[0, j], sk.end_sites[j], atol=1e-12)


def test_a_rigid_toe_under_a_rising_heel_is_bent_up_until_its_tip_is_at_the_floor():
    m = heel_rise()
    sk = m.skeleton
    j = sk.index("LeftToes")
    stand = float(m.gpos[0, j, 2])                       # the foot flat in frame 0
    floor_tip = stand + sk.segment_vectors()[j, 2]        # the tip's height when flat
    assert tip(m, j)[-1, 2] < floor_tip - 0.03            # the rigid toe went well under
    out, bend = floor_toes(m, [j], np.array([stand]))
    z = tip(out, j)[:, 2]
    free = bend[:, 0] < MAX_BEND - 1e-9
    assert np.all(z[free] >= floor_tip - 1e-9)
    # the least bend: a bent tip sits on its floor height, not above it
    bent = bend[:, 0] > 0
    assert bent[1:].all() and not bent[0]
    np.testing.assert_allclose(z[bent & free], floor_tip, atol=1e-9)
    assert np.all(np.diff(bend[:, 0]) >= 0)              # a higher heel, a larger bend
    # about the ball: the toe joint stays where it was, every other joint's rotation too
    np.testing.assert_allclose(out.gpos[:, j], m.gpos[:, j], atol=1e-12)
    others = np.arange(len(sk)) != j
    np.testing.assert_array_equal(out.lrot[:, others], m.lrot[:, others])
    np.testing.assert_array_equal(out.root_pos, m.root_pos)
    # the turn is about the horizontal axis across the toe: no twist, no sideways swing
    x = quat.rotate(out.grot[:, j], np.broadcast_to([0.0, 1.0, 0.0], (m.n_frames, 3)))
    np.testing.assert_allclose(x, np.broadcast_to([0.0, 1.0, 0.0], x.shape), atol=1e-9)


def test_a_hinged_toe_bends_about_its_axis_on_a_rolled_foot():
    """Given its hinge axis, a toe on a foot rolled 20° onto its edge bends about that axis
    only (its local rotation stays a turn about it) and its tip still reaches its floor height;
    bent about the horizontal instead, it would twist off its hinge."""
    body = load_body()
    m = heel_rise(np.linspace(0.0, 40.0, 9))
    sk = m.skeleton
    f, j = sk.index("LeftFoot"), sk.index("LeftToes")
    stand = float(m.gpos[0, j, 2])
    roll = quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), np.radians(20.0))
    lrot = np.array(m.lrot)
    lrot[:, f] = quat.mul(lrot[:, f], roll)
    m = Motion(sk, m.fps, m.root_pos, lrot)
    floor_tip = stand + sk.segment_vectors()[j, 2]
    out, bend = floor_toes(m, [j], np.array([stand]), axes=body.axis[[j]])
    free = bend[:, 0] < MAX_BEND - 1e-9                     # (past 25° the cap holds)
    assert (bend[1:, 0] > 0).all() and free[:4].all()
    np.testing.assert_allclose(tip(out, j)[1:][free[1:], 2], floor_tip, atol=1e-9)
    v = quat.to_scaled_axis(out.lrot[:, j])                 # (F, 3): all along the hinge axis
    off = v - np.outer(v @ body.axis[j], body.axis[j])
    assert np.abs(off).max() < 1e-9 and np.all(v @ body.axis[j] >= 0)   # +angle lifts the toes
    across, _ = floor_toes(m, [j], np.array([stand]))
    horizontal = quat.to_scaled_axis(across.lrot[:, j])
    assert np.abs(horizontal - np.outer(horizontal @ body.axis[j], body.axis[j])).max() > 0.01
    with pytest.raises(ShapeError, match="axes must be"):
        floor_toes(m, [j], np.array([stand]), axes=np.zeros((1, 3)))
    with pytest.raises(ShapeError, match="axes must be"):
        floor_toes(m, [j], np.array([stand]), axes=np.ones((2, 3)))


def test_a_long_take_is_bent_in_blocks_as_in_one(monkeypatch):
    from physmocap.solver import toes
    m = heel_rise()
    j = m.skeleton.index("LeftToes")
    stand = np.array([float(m.gpos[0, j, 2])])
    whole, bend = floor_toes(m, [j], stand)
    monkeypatch.setattr(toes, "_BLOCK", 4)               # 26 frames: 7 blocks, the last short
    blocked, bend4 = floor_toes(m, [j], stand)
    np.testing.assert_array_equal(blocked.lrot, whole.lrot)
    np.testing.assert_array_equal(bend4, bend)


def test_the_bend_is_capped_and_untouched_frames_are_returned_as_they_were():
    m = heel_rise(np.array([0.0, 80.0]))
    j = m.skeleton.index("LeftToes")
    stand = float(m.gpos[0, j, 2])
    out, bend = floor_toes(m, [j], np.array([stand]), max_bend=np.radians(20.0))
    assert bend[0, 0] == 0.0 and bend[1, 0] == pytest.approx(np.radians(20.0))
    np.testing.assert_array_equal(out.lrot[0], m.lrot[0])
    # a toe whose foot's floor is unknown (NaN) or a foot high above it: left alone
    same, none = floor_toes(m, [j], np.array([np.nan]))
    assert same is m and not none.any()
    same, none = floor_toes(m, [j], np.array([stand - 0.5]))
    assert same is m and not none.any()
    # the right foot, flat, is not bent either
    r = m.skeleton.index("RightToes")
    same, none = floor_toes(m, [r], np.array([float(m.gpos[0, r, 2])]))
    assert same is m and not none.any()


def test_only_toes_no_marker_is_on_are_free():
    body = load_body()
    names = body.skeleton.names
    pig = load_markerset("plugin_gait_fullbody", body).bind(body.skeleton)
    cmu = load_markerset("cmu41", body).bind(body.skeleton)
    assert [names[j] for j in free_toes(names, pig.body)] == ["LeftToes", "RightToes"]
    assert free_toes(names, cmu.body) == []              # CMU's toe markers sit on the toes


def test_standing_heights_are_the_median_over_planted_frames():
    z = np.array([[0.02, 0.05], [0.03, 0.05], [0.10, 0.05], [0.04, 0.05]])
    on = np.array([[True, False], [True, False], [False, False], [True, True]])
    h = standing_heights(z, on, min_frames=3)
    assert h[0] == pytest.approx(0.03) and np.isnan(h[1])
    assert standing_heights(z, on, min_frames=1)[1] == pytest.approx(0.05)
    nan = z.copy()
    nan[0, 0] = np.nan                                   # a frame with no height does not count
    assert np.isnan(standing_heights(nan, on, min_frames=3)[0])


def test_bad_arguments_are_one_clear_error():
    m = heel_rise()
    j = m.skeleton.index("LeftToes")
    with pytest.raises(ShapeError, match="1 toes but 2 standing heights"):
        floor_toes(m, [j], np.array([0.02, 0.02]))
    with pytest.raises(SettingsError, match="max_bend"):
        floor_toes(m, [j], np.array([0.02]), max_bend=-1.0)
    with pytest.raises(ShapeError, match="same shape"):
        standing_heights(np.zeros((4, 2)), np.zeros((4, 3), bool))
    with pytest.raises(ShapeError, match="same shape"):
        standing_heights(np.zeros(4), np.zeros(4, bool))
    with pytest.raises(SettingsError, match="min_frames"):
        standing_heights(np.zeros((4, 2)), np.zeros((4, 2), bool), min_frames=0)
    for toe in (0, len(m.skeleton), -1, 2.0):         # the root, past the end, not an index
        with pytest.raises(ShapeError, match="toes must be joint indices"):
            floor_toes(m, [toe], np.array([0.02]))


def test_without_foot_plants_no_floor_is_known_and_no_toe_is_bent(data_dir):
    """The standing height comes from the toe markers' plants: a solve without plants
    (``plants=False``) leaves the toes as the physical solve held them, and says so."""
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import pick_markerset
    from physmocap.solver.pipeline import solve_capture

    t = read_c3d(data_dir / "c3d/pig/PiG_Motion-FlatFoot-Full.c3d")
    res = solve_capture(t, pick_markerset(t.labels), load_body(), plants=False)
    assert res.report["toes_bent"] == {
        n: {"frames_over_1deg": 0, "max_deg": 0.0, "standing_height_m": None}
        for n in ("LeftToes", "RightToes")}


def test_the_plug_in_gait_walks_toes_stay_above_the_floor(data_dir):
    """Plug-in Gait's toe marker is on the forefoot, none on the toes: the solve held them
    rigid with the foot, and their tips went 2.9 / 3.7 cm under the lab floor at push-off (in
    26-34 % of frames). Bent at the ball by the floor, no tip goes under it, the bend is small
    while the foot stands flat and at most ``MAX_BEND``; the markers' fit is the solve's."""
    from physmocap.io.c3d import read_c3d
    from physmocap.scene import pick_markerset
    from physmocap.solver.kinematic import marker_positions
    from physmocap.solver.pipeline import solve_capture

    pig = data_dir / "c3d/pig"
    t = read_c3d(pig / "PiG_Motion-FlatFoot-Full.c3d")
    res = solve_capture(t, pick_markerset(t.labels), load_body(),
                        static=read_c3d(pig / "PiG_Calibration-FlatFoot-Full.c3d"))
    m = res.motion
    report = res.report["toes_bent"]
    assert set(report) == {"LeftToes", "RightToes"}
    for side, name in (("L", "LeftToes"), ("R", "RightToes")):
        j = m.skeleton.index(name)
        z = tip(m, j)[:, 2]
        assert z.min() > 0.0                             # above the lab floor
        stand = report[name]["standing_height_m"]
        assert z.min() > stand + m.skeleton.segment_vectors()[j, 2] - 1e-4
        assert 20.0 < report[name]["max_deg"] <= np.degrees(MAX_BEND)
        # flat: heel and toe markers both planted
        flat = res.plants[:, res.plant_labels.index(side + "HEE")] & \
            res.plants[:, res.plant_labels.index(side + "TOE")]
        g = quat.rotate(m.grot[:, j], np.broadcast_to([1.0, 0.0, 0.0], (m.n_frames, 3)))
        f = quat.rotate(m.grot[:, m.skeleton.parents[j]],
                        np.broadcast_to([1.0, 0.0, 0.0], (m.n_frames, 3)))
        toe_up = np.degrees(np.arccos(np.clip(np.sum(g * f, -1), -1, 1)))
        assert flat.sum() > 20 and np.median(toe_up[flat]) < 5.0
    np.testing.assert_allclose(marker_positions(m.skeleton, res.subject.markerset, m.lrot,
                                                m.root_pos), res.solved_markers, atol=1e-9)
