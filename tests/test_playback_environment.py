"""Scene objects and hand holds in physical playback (``playback/environment.py``)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from physmocap import quat
from physmocap.cli import main
from physmocap.io.bvh import write_bvh
from physmocap.motion import Motion
from physmocap.playback import track
from physmocap.playback.character import _segment
from physmocap.playback.environment import nearest_on_object
from physmocap.scene import Environment, HandHold, SceneObject, load_body

FPS = 60.0


@pytest.fixture(scope="module")
def body():
    return load_body()


def lowering_arms(body, seconds=2.5):
    """The rest pose (arms out), both arms lowered by 60 deg between 0.4 and 0.9 s."""
    F = int(seconds * FPS)
    lrot = quat.identity((F, len(body)))
    ang = np.clip((np.arange(F) / FPS - 0.4) / 0.5, 0, 1) * np.radians(60)
    x = np.tile([1.0, 0.0, 0.0], (F, 1))
    lrot[:, body.index("LeftUpperArm")] = quat.from_axis_angle(x, -ang)
    lrot[:, body.index("RightUpperArm")] = quat.from_axis_angle(x, ang)
    return Motion(body.skeleton, FPS, np.tile(body.skeleton.offsets[0], (F, 1)), lrot)


def rest_palm(body, ref, side):
    """World palm (half-way along the hand) in the reference's first frame (rest pose)."""
    j = body.index(f"{side}Hand")
    return ref.gpos[0, j] + 0.5 * _segment(body, j)


def bar(name, centre, radius=0.02):
    c = np.asarray(centre, float)
    return SceneObject(name, "bar", tuple(c - [0.3, 0, 0]), tuple(c + [0.3, 0, 0]), radius)


def test_nearest_on_object():
    b = SceneObject("b", "bar", (0.0, 0.0, 1.0), (2.0, 0.0, 1.0), 0.02)
    assert np.allclose(nearest_on_object(b, [0.5, 3.0, -1.0]), [0.5, 0.0, 1.0])
    assert np.allclose(nearest_on_object(b, [-4.0, 0.0, 1.0]), [0.0, 0.0, 1.0])   # clamped
    assert np.allclose(nearest_on_object(b, [9.0, 1.0, 1.0]), [2.0, 0.0, 1.0])
    pt = SceneObject("p", "point", (1.0, 2.0, 3.0), None, 0.0)
    assert np.allclose(nearest_on_object(pt, [0.0, 0.0, 0.0]), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("mode", ["assist", "physical"])
def test_hold_pins_the_palm_and_a_bar_blocks_the_other_hand(body, mode):
    ref = lowering_arms(body)
    palm_r = rest_palm(body, ref, "Right")
    shelf = rest_palm(body, ref, "Left") - [0, 0, 0.08]      # a bar under the left hand
    env = Environment("t", (bar("grip", palm_r), bar("shelf", shelf)),
                      (HandHold("Right", 0.1, 1.6, "grip", None),))
    res = track(ref, body, mode, environment=env)
    e = res.hold_error_m[:, 0]
    held = np.flatnonzero(~np.isnan(e))
    # held from 0.1 s to 1.6 s (frame-granular), nan outside
    assert abs(held[0] / FPS - 0.1) <= 2 / FPS and abs(held[-1] / FPS - 1.6) <= 2 / FPS
    assert np.isnan(e[:held[0]]).all() and np.isnan(e[held[-1] + 1:]).all()
    # while the reference lowers the arm 60 deg, the palm stays on the bar (the first frames
    # pull it there from wherever the rest pose put it)
    assert np.max(e[held[6:]]) < 0.005
    jr, jl = body.index("RightHand"), body.index("LeftHand")
    sim, want = res.motion.gpos, ref.gpos
    assert np.linalg.norm(sim[held[-1], jr] - want[held[-1], jr]) > 0.3
    # released, the hand goes back toward the reference's (it was 0.5 m away at the release)
    assert np.linalg.norm(sim[-1, jr] - want[-1, jr]) < 0.15
    # the shelf (not held) stops the left hand, which the reference lowers 0.45 m
    assert sim[:, jl, 2].min() > shelf[2]
    assert want[-1, jl, 2] < shelf[2] - 0.3
    rep = res.report()
    (h,) = rep["holds"]
    assert h["hand"] == "Right" and h["frames"] == held.size
    assert h["palm_error_mm_mean"] < 5.0


def test_released_hand_collides_again_once_clear(body):
    # released with its palm on the bar's axis, the hand does not collide with the bar until it
    # is clear of it (set colliding inside, the contact held it there), then it does again
    from physmocap.playback import Tracker
    ref = lowering_arms(body)
    env = Environment("t", (bar("grip", rest_palm(body, ref, "Right")),),
                      (HandHold("Right", 0.1, 1.6, "grip", None),))
    with Tracker(body, "assist", environment=env) as tr:
        tr.reset(ref.root_pos[0], ref.lrot[0, 0], ref.lrot[0])
        inside = []
        for f in range(1, ref.n_frames):
            tr.step(ref.root_pos[f], ref.lrot[f, 0], ref.lrot[f], 1 / FPS)
            inside.append(bool(tr.holds._inside))
        t_release = int(round(1.6 * FPS))
        assert not any(inside[:t_release - 1])           # held: nothing waits
        assert any(inside[t_release - 1:])               # released inside the bar: waits
        assert not inside[-1]                            # clear, colliding again


def test_point_hold_and_no_environment(body):
    ref = lowering_arms(body, seconds=1.0)
    target = rest_palm(body, ref, "Left") + [0.0, 0.0, 0.05]   # 5 cm above the palm
    env = Environment("t", (), (HandHold("Left", 0.0, 1.0, None, tuple(target)),))
    res = track(ref, body, "assist", environment=env)
    e = res.hold_error_m[:, 0]
    assert np.nanmax(e[10:]) < 0.005                            # pulled up onto the point
    plain = track(ref, body, "assist")
    assert plain.hold_error_m is None and "holds" not in plain.report()


def test_cli_play_scene(tmp_path, body, capsys):
    ref = lowering_arms(body, seconds=1.0)
    src = tmp_path / "arms.bvh"
    write_bvh(ref, src)
    palm = rest_palm(body, ref, "Right")
    scene = tmp_path / "grip.toml"
    a, b = palm - [0.3, 0, 0], palm + [0.3, 0, 0]
    scene.write_text(f"""[[object]]
name = "grip"
kind = "bar"
from = [{a[0]}, {a[1]}, {a[2]}]
to = [{b[0]}, {b[1]}, {b[2]}]

[[hold]]
hand = "Right"
start = 0.1
stop = 0.9
object = "grip"
""")
    out, rep = tmp_path / "sim.bvh", tmp_path / "play.json"
    assert main(["play", str(src), "-o", str(out), "--report", str(rep), "--scene",
                 str(scene)]) == 0
    assert "hold Right 0.1-0.9 s" in capsys.readouterr().out
    (h,) = json.loads(rep.read_text())["holds"]
    assert h["frames"] > 40 and h["palm_error_mm_mean"] < 5.0
    # a scene file that is not one: one clear line naming it, exit 1
    bad = tmp_path / "bad.toml"
    bad.write_text("[[hold]]\nhand = \"Middle\"\nstart = 0\nstop = 1\npoint = [0, 0, 1]\n")
    assert main(["play", str(src), "-o", str(out), "--scene", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.toml" in err and "Middle" in err and len(err.strip().splitlines()) == 1
