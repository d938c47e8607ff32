"""Pose database: simulation bone, clip ranges, velocities, contacts, mirroring, resampling, files."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from physmocap import quat
from physmocap.errors import FileFormatError, SettingsError, ShapeError, UnknownNameError
from physmocap.io.bvh import read_bvh
from physmocap.matching.database import (SIM_ROOT, PoseDatabase, build_database, load_database,
                                         mirror_names, resample, save_database, standing_clip,
                                         tags_from_name)
from physmocap.motion import Motion
from physmocap.skeleton import Skeleton

BANDAI = "bvh/bandai-namco/ds2_normal_locomotion"
MW = np.array([1.0, -1.0, 1.0])


@pytest.fixture(scope="module")
def bandai10(data_dir):
    files = sorted((data_dir / BANDAI).glob("*.bvh"))[::15]    # runs, walks and turns
    assert len(files) == 10
    return [read_bvh(f) for f in files]


@pytest.fixture(scope="module")
def db60(bandai10):
    return build_database(bandai10, fps=60.0)


@pytest.fixture(scope="module")
def db_mirror(bandai10):
    return build_database(bandai10, fps=60.0, mirror=True)


def _hips_forward(db: PoseDatabase, left: str, right: str) -> np.ndarray:
    g = db.global_positions()
    f = np.cross(g[:, db.index(left)] - g[:, db.index(right)], [0.0, 0.0, 1.0])
    return f / np.linalg.norm(f, axis=-1, keepdims=True)


# --- structure -------------------------------------------------------------------------------

def test_layout_and_ranges(db60, bandai10):
    db = db60
    assert db.names[0] == SIM_ROOT and db.names[1] == "Hips" and db.parents[0] == -1
    assert db.n_joints == len(bandai10[0].skeleton) + 1
    assert np.all(db.offsets[0] == 0)
    N = db.n_frames
    for k in ("lpos", "lvel", "lang"):
        assert getattr(db, k).shape == (N, db.n_joints, 3)
    assert db.lrot.shape == (N, db.n_joints, 4) and db.contacts.shape == (N, 2)
    assert db.range_starts[0] == 0 and db.range_stops[-1] == N
    assert np.array_equal(db.range_starts[1:], db.range_stops[:-1])
    # 30 fps -> 60 fps: one frame per 1/60 s of each clip's duration
    expect = [int(round(m.duration * 60)) + 1 for m in bandai10]
    assert list(db.range_stops - db.range_starts) == expect
    assert db.clip_index(0) == 0 and db.clip_index(N - 1) == db.n_clips - 1
    assert not db.lpos.flags.writeable and not db.tags["walk"].flags.writeable
    assert db.contact_joints == ("Toes_L", "Toes_R")


def test_sim_root_on_floor_yaw_only_and_facing_the_hips(db60):
    db = db60
    assert np.all(db.lpos[:, 0, 2] == 0.0)
    assert np.allclose(db.lrot[:, 0, :2], 0.0)                  # rotation about Z only
    fwd = _hips_forward(db, "UpperLeg_L", "UpperLeg_R")
    sim_fwd = quat.rotate(db.lrot[:, 0], [1.0, 0.0, 0.0])
    dot = np.sum(fwd * sim_fwd, axis=-1)
    assert np.mean(dot > 0.9) > 0.98, np.percentile(dot, [1, 5])
    # and the character walks forward (+X of the sim root) in every clip
    v = quat.inv_rotate(db.lrot[:, 0], db.lvel[:, 0])
    for c in range(db.n_clips):
        sl = db.clip_slice(c)
        assert np.median(v[sl, 0]) > 0.5, db.clip_names[c]


def test_unsmoothed_root_is_the_projected_hips(bandai10):
    db = build_database(bandai10[:2], fps=30.0, position_window=0.0)
    hips, _ = db.world_root()
    assert np.allclose(db.lpos[:, 0, :2], hips[:, :2], atol=1e-12)
    assert np.allclose(db.lpos[:, 1, :2], 0.0, atol=1e-12)      # hips right above the root


def test_hips_height_plausible(db60):
    h = db60.lpos[:, 1, 2]
    assert 0.7 < np.percentile(h, 5) and np.percentile(h, 95) < 1.1


@pytest.mark.parametrize("pattern", [f"{BANDAI}/dataset-2_walk_normal_00[1-3].bvh",
                                     "bvh/cmu/131_0*.bvh", "bvh/games105/*.bvh"])
def test_to_motion_reproduces_the_clips(data_dir, pattern):
    files = sorted(data_dir.glob(pattern))
    motions = [read_bvh(f) for f in files]
    # games105 mixes rates and skeletons: keep the clips like the first one
    fps, sk = motions[0].fps, motions[0].skeleton
    keep = [m.fps == fps and m.skeleton.same_structure(sk) for m in motions]
    files = [f for f, k in zip(files, keep) if k]
    motions = [m for m, k in zip(motions, keep) if k]
    assert len(motions) >= 2
    db = build_database(motions, fps=fps)
    for c, m in enumerate(motions):
        sl = db.clip_slice(c)
        back = db.to_motion(sl.start, sl.stop)
        assert back.n_frames == m.n_frames and back.skeleton.names == m.skeleton.names
        assert np.max(np.abs(back.gpos - m.gpos)) < 1e-6, files[c].name
        assert np.max(np.abs(db.global_positions(sl.start, sl.stop)[:, 1:] - m.gpos)) < 1e-6
        h = db.lpos[sl, 1, 2]
        assert 0.7 < np.median(h) < 1.1, files[c].name


def test_resampling_keeps_positions_at_shared_times(bandai10):
    m = bandai10[1]
    r = resample(m, 60.0)
    assert r.n_frames == 2 * m.n_frames - 1 and r.fps == 60.0
    assert np.max(np.abs(r.gpos[::2] - m.gpos)) < 1e-9
    # midway frames lie between their neighbours (no overshoot of linear/slerp interpolation)
    mid = r.root_pos[1::2]
    assert np.allclose(mid, 0.5 * (m.root_pos[1:] + m.root_pos[:-1]))
    db = build_database([m], fps=60.0)
    assert np.max(np.abs(db.to_motion().gpos[::2] - m.gpos)) < 1e-9
    # a non-integer ratio (120 -> 50 fps) keeps the duration
    r2 = resample(r, 50.0)
    assert abs(r2.duration - r.duration) < 1 / 50


# --- velocities -------------------------------------------------------------------------------

def test_velocities_are_central_differences_and_integrate_back(db60):
    db, dt = db60, 1.0 / db60.fps
    for c in range(db.n_clips):
        sl = db.clip_slice(c)
        p, v = db.lpos[sl], db.lvel[sl]
        assert np.allclose(p[2:] - p[:-2], 2 * dt * v[1:-1], atol=1e-12)
        # trapezoidal integration of the velocity reproduces the path (sim root and hips)
        integ = p[0] + np.concatenate([np.zeros((1,) + p.shape[1:]),
                                       np.cumsum(0.5 * (v[1:] + v[:-1]) * dt, axis=0)])
        assert np.max(np.abs(integ[:, :2] - p[:, :2])) < 0.02, db.clip_names[c]
        # angular velocity integrates the rotations frame by frame (30 -> 60 fps slerp makes
        # the rate piecewise constant, so the central difference is smoothed by a frame)
        q, w = db.lrot[sl], db.lang[sl]
        step = quat.mul(quat.from_scaled_axis(0.5 * (w[1:] + w[:-1]) * dt), q[:-1])
        err = quat.angle(step, q[1:])
        assert np.median(err) < 0.01 and np.percentile(err, 99) < 0.1


def _synthetic(F=120, fps=60.0, vel=(1.0, 0.5), yaw_rate=0.5, axis=(0, 1, 0), rate=1.0):
    """A tiny biped translating and turning at constant rates; its spine spins at ``rate``."""
    names = ["Hips", "LeftUpLeg", "LeftFoot", "LeftToes", "RightUpLeg", "RightFoot",
             "RightToes", "Spine"]
    parents = [-1, 0, 1, 2, 0, 4, 5, 0]
    offsets = [[0, 0, 0.9], [0, 0.1, 0], [0, 0, -0.8], [0.1, 0, -0.05],
               [0, -0.1, 0], [0, 0, -0.8], [0.1, 0, -0.05], [0, 0, 0.2]]
    sk = Skeleton(names, parents, np.array(offsets, float))
    t = np.arange(F) / fps
    root = np.column_stack([vel[0] * t, vel[1] * t, np.full(F, 0.9)])
    lrot = quat.identity((F, len(names)))
    lrot[:, 0] = quat.from_axis_angle(np.array([0.0, 0, 1]), yaw_rate * t)
    ax = np.asarray(axis, float) / np.linalg.norm(axis)
    lrot[:, 7] = quat.from_axis_angle(ax, rate * t)
    return Motion(sk, fps, root, lrot, {"path": "synthetic_walk_001.bvh"})


@settings(max_examples=25, deadline=None)
@given(vx=st.floats(-2, 2), vy=st.floats(-2, 2), yaw_rate=st.floats(-1.5, 1.5),
       ax=st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(0.1, 1)),
       rate=st.floats(-3, 3))
def test_velocities_of_constant_motion_are_exact(vx, vy, yaw_rate, ax, rate):
    m = _synthetic(vel=(vx, vy), yaw_rate=yaw_rate, axis=ax, rate=rate)
    db = build_database([m], fps=60.0)
    assert np.allclose(db.lvel[:, 0], [vx, vy, 0.0], atol=1e-9)
    assert np.allclose(db.lang[:, 0], [0.0, 0.0, yaw_rate], atol=1e-9)
    assert np.allclose(db.lvel[:, 1], 0.0, atol=1e-9) and np.allclose(db.lang[:, 1], 0, atol=1e-9)
    spine = db.index("Spine")
    assert np.allclose(db.lang[:, spine], rate * np.asarray(ax) / np.linalg.norm(ax), atol=1e-7)
    # the facing axis follows the hips' yaw exactly
    yaw = 2 * np.arctan2(db.lrot[:, 0, 2], db.lrot[:, 0, 3])
    assert np.allclose(np.angle(np.exp(1j * (yaw - yaw_rate * np.arange(120) / 60))), 0,
                       atol=1e-9)


# --- contacts ---------------------------------------------------------------------------------

def test_walking_contacts_fill_30_to_70_percent_and_alternate(db60):
    db = db60
    walk = db.tags["walk"]
    assert walk.any()
    for c in range(db.n_clips):
        sl = db.clip_slice(c)
        if not walk[sl.start]:
            continue
        con = db.contacts[sl]
        frac = con.mean(axis=0)
        assert np.all((0.3 < frac) & (frac < 0.7)), (db.clip_names[c], frac)
        # single-support phases alternate left, right, left, ...
        single = np.where(con[:, 0] & ~con[:, 1], 1, np.where(con[:, 1] & ~con[:, 0], 2, 0))
        runs = [s for k, s in enumerate(single) if s and (k == 0 or single[k - 1] != s)]
        same = sum(a == b for a, b in zip(runs[:-1], runs[1:]))
        assert len(runs) >= 4 and same <= 0.2 * len(runs), (db.clip_names[c], runs)


# --- mirroring --------------------------------------------------------------------------------

def test_mirror_names():
    names = ["Hips", "LHipJoint", "LeftUpLeg", "RHipJoint", "RightUpLeg", "lhand", "rhand",
             "lowerback", "Toes_L", "Toes_R", "lHip", "rHip", "Spine"]
    idx = mirror_names(names)
    pairs = {names[i]: names[j] for i, j in enumerate(idx)}
    assert pairs["LHipJoint"] == "RHipJoint" and pairs["LeftUpLeg"] == "RightUpLeg"
    assert pairs["lhand"] == "rhand" and pairs["Toes_R"] == "Toes_L" and pairs["lHip"] == "rHip"
    assert pairs["lowerback"] == "lowerback" and pairs["Hips"] == "Hips"


def test_mirrored_clip_swaps_feet_exactly(db_mirror, bandai10):
    db = db_mirror
    assert db.n_clips == 20 and list(db.mirrored) == [False, True] * 10
    for c in range(0, db.n_clips, 2):
        a, b = db.clip_slice(c), db.clip_slice(c + 1)
        assert db.clip_names[c + 1] == db.clip_names[c] + ":mirror"
        ga, gb = db.global_positions(a.start, a.stop), db.global_positions(b.start, b.stop)
        for left, right in (("Foot_L", "Foot_R"), ("Hand_R", "Hand_L"), ("Head", "Head")):
            assert np.max(np.abs(gb[:, db.index(left)] - MW * ga[:, db.index(right)])) < 1e-6
        # the contacts swap too, and the skeleton keeps its proportions (sub-millimetre)
        assert np.array_equal(db.contacts[b], db.contacts[a][:, ::-1])
        assert np.max(np.abs(db.lpos[b.start, 2:] - db.lpos[a.start, 2:])) < 1e-3
    # the mirrored clips' local rotations look like the originals' (same rig conventions):
    # the mean knee rotation of mirrored and original data agree
    knee = db.index("LowerLeg_L")
    R = quat.to_matrix(db.lrot[:, knee])
    assert np.linalg.norm(R[~np.repeat(db.mirrored, np.diff(
        np.r_[db.range_starts, db.n_frames]))].mean(0) - R[np.repeat(db.mirrored, np.diff(
            np.r_[db.range_starts, db.n_frames]))].mean(0)) < 0.2
    # tags: a mirrored left turn is a right turn
    for c in range(db.n_clips):
        sl = db.clip_slice(c)
        name = db.clip_names[c]
        if "turn-left" in name:
            want = "turn-right" if db.mirrored[c] else "turn-left"
            assert db.tags[want][sl.start] and not db.tags[
                "turn-left" if want == "turn-right" else "turn-right"][sl.start]


def test_mirror_cmu_and_games105(data_dir):
    for pattern in ("bvh/cmu/131_01.bvh", "bvh/games105/lab2_motion_material_walk_forward.bvh"):
        m = read_bvh(next(data_dir.glob(pattern)))
        db = build_database([m], fps=m.fps, mirror=True)
        ga = db.global_positions(*db.range_starts[:1], db.range_stops[0])
        gb = db.global_positions(db.range_starts[1], db.range_stops[1])
        idx = mirror_names(db.names)
        assert np.max(np.abs(gb - MW * ga[:, idx])) < 1e-6, pattern


# --- tags -------------------------------------------------------------------------------------

def test_tags_from_names_and_mapping(db60, bandai10):
    assert tags_from_name("dataset-2_walk-turn-left_normal_001.bvh") == {
        "walk-turn-left", "walk", "turn-left", "normal"}
    for c, name in enumerate(db60.clip_names):
        sl = db60.clip_slice(c)
        assert db60.tags["run"][sl.start] == ("_run_" in name)
        assert db60.tags["walk"][sl.start] == ("_walk" in name)
    names = [f"c{i}" for i in range(3)]
    db = build_database(bandai10[:3], names=names, fps=30.0, tags={"c1": ["jog"]})
    assert set(db.tags) == {"jog"} and db.tag_mask("jog").sum() == bandai10[1].n_frames
    with pytest.raises(UnknownNameError, match="jog"):
        db.tag_mask("sprint")
    with pytest.raises(UnknownNameError, match="c0"):
        build_database(bandai10[:3], names=names, tags={"nope": ["x"]})


# --- files ------------------------------------------------------------------------------------

def test_npz_round_trip_is_exact(db_mirror, tmp_path):
    path = tmp_path / "db.npz"
    save_database(db_mirror, path)
    back = load_database(path)
    for k in ("parents", "offsets", "lpos", "lrot", "lvel", "lang", "contacts", "range_starts",
              "range_stops", "mirrored", "end_sites"):
        assert np.array_equal(getattr(back, k), getattr(db_mirror, k), equal_nan=k == "end_sites")
    assert back.names == db_mirror.names and back.clip_names == db_mirror.clip_names
    assert back.fps == db_mirror.fps and back.contact_joints == db_mirror.contact_joints
    assert set(back.tags) == set(db_mirror.tags)
    assert all(np.array_equal(back.tags[t], db_mirror.tags[t]) for t in back.tags)
    assert [p.name for p in tmp_path.iterdir()] == ["db.npz"]      # no temporary left over


def test_bad_files_raise_file_format_error(db60, tmp_path):
    with pytest.raises(FileFormatError, match="no such file"):
        load_database(tmp_path / "missing.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip at all")
    with pytest.raises(FileFormatError, match="junk.npz"):
        load_database(junk)
    # a file of another kind given as the database: said so, not numpy's word on pickles
    csv = tmp_path / "track.csv"
    csv.write_text("t,head_x\n0,1\n")
    with pytest.raises(FileFormatError, match="not a pose database .*physmocap mm build"):
        load_database(csv)
    other = tmp_path / "other.npz"
    np.savez(other, a=np.zeros(3))
    with pytest.raises(FileFormatError, match="not a physmocap.PoseDatabase"):
        load_database(other)
    good = tmp_path / "good.npz"
    save_database(db60, good)
    with np.load(good, allow_pickle=False) as z:
        data = dict(z)
    data["version"] = np.array(99)
    np.savez(tmp_path / "v99.npz", **data)
    with pytest.raises(FileFormatError, match="version 99"):
        load_database(tmp_path / "v99.npz")
    del data["lvel"]
    from physmocap.matching.database import VERSION
    data["version"] = np.array(VERSION)
    np.savez(tmp_path / "short.npz", **data)
    with pytest.raises(FileFormatError, match="lvel"):
        load_database(tmp_path / "short.npz")
    data["lvel"] = np.zeros((3, 2, 3))
    np.savez(tmp_path / "shape.npz", **data)
    with pytest.raises(FileFormatError, match="inconsistent"):
        load_database(tmp_path / "shape.npz")
    data["lvel"] = np.array(db60.lvel)
    bad_tags = dict(data, tag_names=np.append(data["tag_names"], "extra"))
    np.savez(tmp_path / "tags.npz", **bad_tags)
    with pytest.raises(FileFormatError, match="tags.npz: tag_names and tag_masks disagree"):
        load_database(tmp_path / "tags.npz")
    np.savez(tmp_path / "fps.npz", **dict(data, fps=np.array("sixty")))   # a string for a number
    with pytest.raises(FileFormatError, match=r"fps.npz: inconsistent pose database \(ValueError"):
        load_database(tmp_path / "fps.npz")
    # truncated file
    raw = good.read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(FileFormatError):
        load_database(tmp_path / "cut.npz")


# --- errors -----------------------------------------------------------------------------------

def test_build_errors(bandai10, data_dir):
    with pytest.raises(ShapeError, match="at least one"):
        build_database([])
    cmu = read_bvh(data_dir / "bvh/cmu/131_01.bvh")
    with pytest.raises(ShapeError, match="another skeleton"):
        build_database([bandai10[0], cmu])
    with pytest.raises(ShapeError, match="duplicate"):
        build_database(bandai10[:2], names=["a", "a"])
    with pytest.raises(ShapeError, match="2 names for 3"):
        build_database(bandai10[:3], names=["a", "b"])
    with pytest.raises(SettingsError, match="fps"):
        build_database(bandai10[:1], fps=0)
    m = _synthetic()
    sk = m.skeleton
    renamed = Skeleton(["Hips", "A", "B", "C", "D", "E", "F", "G"], sk.parents, sk.offsets)
    with pytest.raises(UnknownNameError, match="known: Hips, A, B"):
        build_database([Motion(renamed, m.fps, m.root_pos, m.lrot)])
    with pytest.raises(ShapeError, match="2 are needed"):
        build_database([m[:1]])
    with pytest.raises(ShapeError, match="motion 1 needs a Motion"):
        build_database([m, "walk.bvh"])
    sim = Skeleton(["Hips", "A", "B", "C", "D", "E", "F", "Simulation"], sk.parents, sk.offsets)
    with pytest.raises(ShapeError, match="already has a joint named 'Simulation'"):
        build_database([Motion(sim, m.fps, m.root_pos, m.lrot)])
    # "feet" on one leg (no left and right to tell), a clip standing still: no facing to find
    still = Motion(renamed, m.fps, np.tile(m.root_pos[:1], (m.n_frames, 1)), m.lrot)
    with pytest.raises(ShapeError, match="cannot tell which way the hips face"):
        build_database([still], contact_joints=("B", "C"))        # both on one leg
    with pytest.raises(ShapeError, match="fps must be a positive number"):
        resample(m, float("nan"))
    with pytest.raises(ShapeError, match="fps must be at most 1000 .*, got 1e[+]09"):
        build_database([m], fps=1e9)     # before resampling asks for terabytes
    # a script's other arguments: one line each (NaN or negative contact_speed gave a
    # database with no contact, mirror='no' doubled it, one Motion became one-frame clips)
    for kw, match in ((dict(contact_speed=float("nan")), "contact_speed must be a finite"),
                      (dict(contact_speed=-0.15), "contact_speed must be a finite number > 0"),
                      (dict(fps="abc"), "fps must be a finite"),
                      (dict(fps=None), "fps must be a finite"),
                      (dict(position_window=float("nan")), "position_window must be"),
                      (dict(yaw_window=-1.0), "yaw_window must be"),
                      (dict(contact_radius=-1), "contact_radius must be a whole number >= 0"),
                      (dict(mirror="no"), "mirror must be True or False")):
        with pytest.raises(SettingsError, match="build_database: " + match):
            build_database([m], **kw)
    with pytest.raises(ShapeError, match="needs a list of motions, got one Motion"):
        build_database(m)


def test_database_type_checks_its_arrays(db60):
    kw = {k: getattr(db60, k) for k in ("names", "parents", "offsets", "fps", "lpos", "lrot",
                                        "lvel", "lang", "contacts", "range_starts",
                                        "range_stops", "clip_names", "mirrored")}
    PoseDatabase(**kw)
    with pytest.raises(ShapeError, match="lvel"):
        PoseDatabase(**{**kw, "lvel": kw["lvel"][:-1]})
    with pytest.raises(ShapeError, match="contiguous"):
        PoseDatabase(**{**kw, "range_stops": kw["range_stops"] - 1})
    with pytest.raises(ShapeError, match="Simulation"):
        PoseDatabase(**{**kw, "names": ("Root",) + kw["names"][1:]})
    for bad, match in ((dict(names=kw["names"][:2] + kw["names"][1:-1]), "must be unique"),
                       (dict(parents=np.r_[-1, 2, kw["parents"][2:]]), "parents must satisfy"),
                       (dict(fps=0.0), "fps must be a positive number"),
                       (dict(clip_names=kw["clip_names"][:-1]), "clip_names: expected"),
                       (dict(contact_joints=("LeftFoot",)), "contact_joints must name two")):
        with pytest.raises(ShapeError, match=match):
            PoseDatabase(**{**kw, **bad})
    with pytest.raises(UnknownNameError, match="unknown clip 'nope'; known: "):
        db60.clip_slice("nope")
    with pytest.raises(UnknownNameError, match="known: Simulation, Hips"):
        db60.index("Pelvis")
    with pytest.raises(ShapeError):
        db60.to_motion(10, 5)


# --- the whole Bandai-Namco locomotion set ---------------------------------------------------

def test_all_145_bandai_clips(data_dir):
    files = sorted((data_dir / BANDAI).glob("*.bvh"))
    assert len(files) == 145
    t0 = time.perf_counter()
    motions = [read_bvh(f) for f in files]
    db = build_database(motions, fps=60.0)
    elapsed = time.perf_counter() - t0
    assert elapsed < 60.0
    assert db.n_clips == 145
    assert db.n_frames == sum(int(round(m.duration * 60)) + 1 for m in motions)
    assert 0 <= db.n_frames / 60.0 - sum(m.duration for m in motions) <= 145 / 60 + 1e-6


def test_database_keeps_the_source_up_axis(db60, tmp_path):
    """Rest-pose retargeting of the database's poses needs its files' up axis (Y for BVH)."""
    assert db60.up == "y"
    save_database(db60, tmp_path / "db.npz")
    assert load_database(tmp_path / "db.npz").up == "y"


def test_loading_does_not_copy_the_arrays(db60, tmp_path):
    """A loaded database holds its arrays once (a million frames must fit twice less memory)."""
    save_database(db60, tmp_path / "db.npz")
    db = load_database(tmp_path / "db.npz")
    for k in ("lpos", "lrot", "lvel", "lang"):
        a = getattr(db, k)
        assert not a.flags.writeable and not a.flags.owndata      # the loader's buffer, as is
        np.testing.assert_array_equal(a, getattr(db60, k))


def test_build_memory_does_not_grow_beyond_the_arrays(data_dir):
    """The build fills arrays allocated at their final size: what it holds beyond the database
    arrays stays the same when the database is 4x larger (a million-frame build: 1.08x its
    arrays, ``benchmarks/big_database.py``; it was 2.15x with per-clip pieces + concatenation)."""
    import tracemalloc
    folder = data_dir / "bvh/bandai-namco/ds2_normal_locomotion"
    clips = [read_bvh(f) for f in sorted(folder.glob("*walk*_00[1-2].bvh"))]

    def extra_mb(k):
        ms = clips * k
        tracemalloc.start()
        try:
            db = build_database(ms, names=[f"c{i}" for i in range(len(ms))], fps=60)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        arrays = sum(getattr(db, n).nbytes for n in ("lpos", "lrot", "lvel", "lang", "contacts"))
        return (peak - arrays) / 1e6, arrays / 1e6

    extra_mb(1)                       # first call: one-off allocations (imports, caches)
    small, a_small = extra_mb(4)
    big, a_big = extra_mb(16)
    assert a_big > 3.5 * a_small
    # measured: +0 MB (this build) against +0.3x the added arrays (pieces + concatenation)
    assert big - small < 0.1 * (a_big - a_small), (small, big, a_small, a_big)


# --- standing clip ---------------------------------------------------------------------------

def test_standing_clip_holds_one_frame_still(bandai10):
    m = bandai10[3]
    k = 5
    st = standing_clip(m, k, seconds=2.0)
    assert st.fps == m.fps and st.n_frames == int(round(2.0 * m.fps)) + 1
    assert np.array_equal(st.root_pos, np.repeat(m.root_pos[k:k + 1], st.n_frames, 0))
    assert np.array_equal(st.lrot, np.repeat(m.lrot[k:k + 1], st.n_frames, 0))
    assert st.skeleton is m.skeleton and st.meta["held_frame"] == k
    # in a database it stands: no joint moves
    db = build_database([m, st], names=["walk", "stand"], fps=60.0)
    sl = db.clip_slice(1)
    assert np.abs(db.lvel[sl]).max() < 1e-9 and np.abs(db.lang[sl]).max() < 1e-9


def test_standing_clip_errors(bandai10):
    m = bandai10[0]
    n = m.n_frames
    for frame in (-1, n, 1.0, True, "0"):
        with pytest.raises(SettingsError, match="frame must be a frame index"):
            standing_clip(m, frame)
    for seconds in (0.0, -1.0, float("nan"), float("inf"), True, 0.5 / m.fps):
        with pytest.raises(SettingsError, match="seconds must be a duration"):
            standing_clip(m, 0, seconds)
