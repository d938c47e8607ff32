"""Controller input sources, trajectory prediction, root clamping and input scene files."""
import math

import numpy as np
import pytest

from physmocap import quat, spring
from physmocap.errors import FileFormatError, ShapeError, UnknownNameError
from physmocap.matching import trajectory as tr
from physmocap.matching.trajectory import HeadTrajectory, Joystick, PathFollower

DT = 1 / 60


def yaw_deg(q):
    return math.degrees(float(tr.yaw_of(q)))


# --- joystick ---------------------------------------------------------------------------------

def test_joystick_straight_ahead_prediction():
    joy = Joystick.from_keys([(0.0, 0.0, 1.0, False)])
    vel, rot = joy.desired(0.5)
    assert np.allclose(vel, [1.75, 0, 0]) and abs(yaw_deg(rot)) < 1e-9
    times = np.array([1 / 3, 2 / 3, 1.0, 2.0, 4.0, 8.0])
    z3 = np.zeros(3)
    pos, rots = tr.predict_trajectory(z3, z3, z3, quat.identity(), z3, vel, rot, 0.27, 0.27, times)
    assert pos.shape == (6, 3) and rots.shape == (6, 4)
    assert np.allclose(pos[:, 1:], 0) and np.all(np.diff(pos[:, 0]) > 0)  # along the facing
    assert np.all(pos[:, 0] < 1.75 * times)  # starting from rest it lags behind v t ...
    ratio = pos[:, 0] / (1.75 * times)
    assert np.all(np.diff(ratio) > 0) and ratio[-1] > 0.9  # ... and converges to v t
    assert np.isclose(pos[-1, 0] - pos[-2, 0], 1.75 * 4, rtol=1e-3)
    # already moving at the desired velocity: exactly v t
    pos, _ = tr.predict_trajectory(z3, vel, z3, rot, z3, vel, rot, 0.27, 0.27, times)
    assert np.allclose(pos[:, 0], 1.75 * times)


def test_joystick_speeds_facing_and_camera():
    joy = Joystick.from_keys([(0.0, 0.0, -1.0, False), (1.0, 1.0, 0.0, True, 0.0, 1.0),
                              (2.0, 0.0, 0.0, False), (3.0, 0.0, 1.0, True)],
                             camera_yaw=math.radians(90))
    # stick back relative to a character facing +Y (camera yaw 90): backward walk speed
    vel, rot = joy.desired(0.5, sim_rot=tr.facing_from_yaw(math.radians(90)))
    assert np.allclose(vel, [0, -1.25, 0])
    assert np.isclose(yaw_deg(rot), -90)  # without strafe the facing turns to the motion
    # strafe: right stick up faces the camera heading (+Y); left stick right is +X (right of +Y)
    vel, rot = joy.desired(1.5)
    assert np.isclose(yaw_deg(rot), 90) and np.allclose(vel, [3.0, 0, 0])  # run sideways
    # released sticks: velocity zero, facing held from the last key that set one
    vel, rot = joy.desired(2.5)
    assert np.allclose(vel, 0) and np.isclose(yaw_deg(rot), 90)
    vel, _ = joy.desired(10.0)
    assert np.allclose(vel, [0, 4.0, 0])  # run forward
    vel, _ = joy.desired(-1.0)  # before the first key: the first key
    assert np.allclose(vel, [0, -1.75, 0])  # facing = motion, so forward speed


def test_joystick_linear_interpolation_and_clipping():
    joy = Joystick.from_keys([(0.0, 0.0, 0.0, False), (1.0, 1.0, 1.0, False)],
                             interpolation="linear")
    assert np.allclose(joy.stick[1], [math.sqrt(0.5)] * 2)  # clipped to the unit disc
    vel, rot = joy.desired(0.5)
    assert np.isclose(np.linalg.norm(vel), 0.5 * 1.75) and np.isclose(yaw_deg(rot), -45)
    with pytest.raises(ShapeError, match="interpolation"):
        Joystick.from_keys([(0.0, 0.0, 0.0, False)], interpolation="cubic")
    with pytest.raises(ShapeError, match="increasing"):
        Joystick.from_keys([(0.0, 0.0, 0.0, False), (0.0, 0.0, 1.0, False)])


# --- path follower ----------------------------------------------------------------------------

def follow(pf, T, halflife=None):
    """Integrate a point driven by the follower's desired velocity (directly, or through the
    spring character model); returns the largest distance from the path and the final point."""
    p, v, a = np.append(pf.points[0], 0.0), np.zeros(3), np.zeros(3)
    worst = 0.0
    for i in range(int(round(T / DT))):
        vel, rot = pf.desired(i * DT, p)
        assert np.isclose(np.linalg.norm(quat.normalize(rot)), 1.0)
        if halflife is None:
            p = p + vel * DT
        else:
            p, v, a = spring.character_update(p, v, a, vel, halflife, DT)
        worst = max(worst, float(pf.path_distance(p)))
    return worst, p


_TH = np.linspace(0, 2 * np.pi, 80, endpoint=False)
PATHS = {
    "straight": (PathFollower([[0, 0], [8, 0]], 1.4), 0.12),
    "figure-eight": (PathFollower(np.stack([4 * np.sin(_TH), 2 * np.sin(2 * _TH)], 1), 1.4,
                                  closed=True), 0.3),
    "180-turn": (PathFollower([[0, 0], [5, 0], [0, 0]], 1.4), 0.12),
    "u-turn": (PathFollower([[0, 0], [5, 0], [5, 0.8], [0, 0.8]], 1.4), 0.35),
}


@pytest.mark.parametrize("name", list(PATHS))
@pytest.mark.parametrize("halflife", [None, 0.27])
def test_path_follower_stays_on_path(name, halflife):
    pf, tol = PATHS[name]
    T = (2.0 if pf.closed else 1.3) * pf.length / pf.speed
    worst, end = follow(pf, T, halflife)
    assert worst <= tol, f"{name}: {worst:.3f} m off the path"
    s, _ = pf.project(end, pf.speed * T)
    if pf.closed:  # two laps done, within a couple of metres of the schedule
        gap = (s - pf.speed * T + pf.length / 2) % pf.length - pf.length / 2
        assert abs(gap) < 3.0
    else:  # arrived and stopped at the end
        assert np.linalg.norm(end[:2] - pf.points[-1]) < 0.05
        assert np.allclose(pf.desired(T + 5, end)[0], 0, atol=0.1)


def test_path_geometry():
    pf = PathFollower([[0, 0], [4, 0], [4, 3]], 1.0)
    assert pf.length == 7.0
    p, tan = pf.point_at(np.array([2.0, 5.0, 99.0]))
    assert np.allclose(p, [[2, 0], [4, 1], [4, 3]]) and np.allclose(tan[1], [0, 1])
    d = pf.path_distance(np.array([[2.0, 1.0, 5.0], [5.0, 1.5, 0.0], [-3.0, -4.0, 0.0]]))
    assert np.allclose(d, [1.0, 1.0, 5.0])
    closed = PathFollower([[0, 0], [4, 0], [4, 3]], 1.0, closed=True)
    assert closed.length == 12.0 and np.isclose(closed.path_distance([2.0, 1.0]), 0.4)
    # the schedule hint picks the right leg where the path doubles back on itself
    back = PathFollower([[0, 0], [5, 0], [0, 0]], 1.0)
    assert np.isclose(back.project([1.0, 0.0], 1.0)[0], 1.0)
    assert np.isclose(back.project([1.0, 0.0], 9.0)[0], 9.0)
    vel, _ = back.desired(9.0, [1.0, 0.0, 0.0])
    assert vel[0] < 0  # heading home on the second leg
    with pytest.raises(ShapeError, match="points"):
        PathFollower([[0, 0]], 1.0)
    with pytest.raises(ShapeError, match="speed"):
        PathFollower([[0, 0], [1, 0]], 0.0)
    with pytest.raises(ShapeError, match="zero length"):
        PathFollower([[1, 1], [1, 1]], 1.0)


# --- head trajectory --------------------------------------------------------------------------

def synthetic_walk(speed=1.3, heading_deg=30.0, T=8.0, fps=90.0, backward=False):
    """A head walking at ``speed`` with step bob, stride sway and the user looking around."""
    t = np.arange(0, T, 1 / fps)
    h = math.radians(heading_deg)
    fwd, left = np.array([math.cos(h), math.sin(h), 0]), np.array([-math.sin(h), math.cos(h), 0])
    sign = -1.0 if backward else 1.0
    along = sign * speed * t + 0.04 * np.sin(2 * np.pi * 2.0 * t)  # forward pulsing at 2 Hz
    pos = (along[:, None] * fwd + 0.025 * np.sin(2 * np.pi * 1.0 * t)[:, None] * left
           + (1.65 + 0.02 * np.sin(2 * np.pi * 2.0 * t))[:, None] * np.array([0, 0, 1]))
    look = h + math.radians(25) * np.sin(2 * np.pi * 0.3 * t)  # looking around
    rot = tr.facing_from_yaw(look)
    return HeadTrajectory(t, pos, rot), h


def test_head_walk_recovers_speed_and_direction():
    head, h = synthetic_walk()
    for t in np.arange(1.0, 8.0, 0.25):
        vel, rot = head.desired(t)
        assert abs(np.linalg.norm(vel) - 1.3) <= 0.1 * 1.3
        assert abs(math.atan2(vel[1], vel[0]) - h) < math.radians(8)
        assert vel[2] == 0.0
        # the body faces where it walks although the head looks around (+-25 degrees)
        assert abs(math.radians(yaw_deg(rot)) - h) < math.radians(6)


def test_head_backward_walk_and_standing():
    head, h = synthetic_walk(speed=0.8, heading_deg=0.0, backward=True)
    vel, rot = head.desired(4.0)
    assert vel[0] < -0.7 and abs(yaw_deg(rot)) < 30  # walks backward, keeps facing the head
    t = np.arange(0, 3, 1 / 60)
    rng = np.random.default_rng(0)
    pos = np.array([1.0, 2.0, 1.6]) + 0.003 * rng.normal(size=(len(t), 3))
    still = HeadTrajectory(t, pos, tr.facing_from_yaw(np.full(len(t), math.radians(120))))
    vel, rot = still.desired(2.0)
    assert np.allclose(vel, 0) and np.isclose(yaw_deg(rot), 120)
    vel, rot = still.desired(-5.0)  # before the recording: still, facing its first heading
    assert np.allclose(vel, 0) and np.isclose(yaw_deg(rot), 120)


def test_head_prediction_by_spring_model():
    head, h = synthetic_walk()
    vel, rot = head.desired(4.0)
    z3 = np.zeros(3)
    pos, rots = tr.predict_trajectory(z3, vel, z3, rot, z3, vel, rot, 0.27, 0.27)
    assert np.allclose(pos, np.outer(tr.FEATURE_TIMES, vel))
    assert pos.shape == (3, 3) and rots.shape == (3, 4)


def test_head_errors():
    t = np.arange(3.0)
    with pytest.raises(ShapeError, match="times"):
        HeadTrajectory([0.0, 0.0, 1.0], np.zeros((3, 3)), quat.identity((3,)))
    with pytest.raises(ShapeError, match="rot"):
        HeadTrajectory(t, np.zeros((3, 3)), np.zeros((3, 4)))
    with pytest.raises(ShapeError, match="window"):
        HeadTrajectory(t, np.zeros((3, 3)), quat.identity((3,)), window=0)


# --- root clamping ----------------------------------------------------------------------------

def test_clamp_root(rng):
    sim = rng.normal(size=(200, 3))
    char = sim + rng.normal(size=(200, 3)) * 0.2
    out = tr.clamp_root(sim, char, 0.1)
    d_in = np.linalg.norm(char - sim, axis=1)
    d_out = np.linalg.norm(out - sim, axis=1)
    assert np.all(d_out <= 0.1 + 1e-12)
    inside = d_in <= 0.1
    assert np.allclose(out[inside], char[inside])
    assert np.allclose(d_out[~inside], 0.1)
    cosang = np.sum((out - sim) * (char - sim), axis=1) / (d_out * d_in)
    assert np.allclose(cosang, 1.0)  # same direction from the simulated root
    # the velocity-proportional pull: at most ratio |v| dt, never past the simulated root
    vel = rng.normal(size=(200, 3))
    out2 = tr.clamp_root(sim, char, 10.0, char_vel=vel, dt=0.1, ratio=0.5)
    moved = np.linalg.norm(out2 - char, axis=1)
    assert np.all(moved <= 0.05 * np.linalg.norm(vel, axis=1) + 1e-12)
    assert np.allclose(moved, np.minimum(0.05 * np.linalg.norm(vel, axis=1), d_in))
    assert np.allclose(tr.clamp_root(sim, char, 10.0, char_vel=0 * vel, dt=0.1), char)
    with pytest.raises(ShapeError):
        tr.clamp_root(sim, char, -1.0)


def test_clamp_root_rotation(rng):
    a = quat.normalize(rng.normal(size=(100, 4)))
    b = quat.normalize(rng.normal(size=(100, 4)))
    out = tr.clamp_root_rotation(a, b, 0.3)
    assert np.all(quat.angle(out, a) <= 0.3 + 1e-9)
    near = quat.angle(b, a) <= 0.3
    assert np.allclose(out[near], b[near])


def test_adjust_root_rotation(rng):
    sim = tr.facing_from_yaw(np.zeros(4))
    char = tr.facing_from_yaw(np.radians([40.0, -40.0, 170.0, 0.0]))
    dt, h = 1 / 60, 0.2
    out = tr.adjust_root_rotation(sim, char, h, dt)
    # the decay's share of the difference: 40 deg * (1 - 2^(-dt/h)), toward the simulation
    share = 1 - 2 ** (-dt / h)
    assert np.allclose(np.degrees(tr.yaw_of(out)), [40 - 40 * share, -40 + 40 * share,
                                                     170 - 170 * share, 0.0])
    # halving the difference takes one halflife, frame by frame
    q = char
    for _ in range(12):
        q = tr.adjust_root_rotation(sim, q, h, dt)
    assert np.allclose(np.degrees(tr.yaw_of(q[:2])), [20.0, -20.0])
    # the per-frame limit: at most max_step rad, per character
    lim = np.array([0.01, 0.0, 1.0, 0.01])
    out = tr.adjust_root_rotation(sim, char, h, dt, lim)
    turned = quat.angle(out, char)
    assert np.all(turned <= lim + 1e-12) and np.isclose(turned[0], 0.01)
    assert np.allclose(out[1], char[1])
    # any rotation: never past the simulation's facing, always closer to it
    a = quat.normalize(rng.normal(size=(100, 4)))
    b = quat.normalize(rng.normal(size=(100, 4)))
    out = tr.adjust_root_rotation(a, b, 0.05, 0.1)
    assert np.all(quat.angle(out, a) < quat.angle(b, a) + 1e-12)
    # one character (the controller's per-frame call, on Python floats) = the batched path
    lim = rng.uniform(0, 0.5, size=100)
    many = tr.adjust_root_rotation(a, b, 0.3, 0.05, lim)
    one = np.array([tr.adjust_root_rotation(a[k], b[k], 0.3, 0.05, lim[k]) for k in range(100)])
    assert np.allclose(quat.abs_w(one), quat.abs_w(many), atol=1e-12)
    assert np.allclose(tr.adjust_root_rotation(a[0], a[0] * 2, 0.3, 0.05), a[0])  # no difference
    with pytest.raises(ShapeError):
        tr.adjust_root_rotation(a, b, 0.0, dt)
    with pytest.raises(ShapeError):
        tr.adjust_root_rotation(a, b, h, dt, -1.0)


# --- input scene files ------------------------------------------------------------------------

JOY = """
[meta]
name = "walk and turn"
[input]
kind = "joystick"
camera_yaw = 90
[[key]]
t = 0.0
x = 0
y = 1
[[key]]
t = 2.0
x = 1
y = 0
run = true
"""


def write(tmp_path, text, name="in.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_load_joystick_and_path(tmp_path):
    joy = tr.load_input(write(tmp_path, JOY))
    assert isinstance(joy, Joystick) and np.allclose(joy.desired(1.0)[0], [0, 1.75, 0])
    assert np.allclose(joy.desired(3.0)[0], [4.0, 0, 0])
    pf = tr.load_input(write(tmp_path, '[input]\nkind = "path"\npoints = [[0,0],[5,0],[5,5]]\n'
                                       'speed = 1.4\nclosed = true\nlookahead = 0.5\n'))
    assert isinstance(pf, PathFollower) and pf.closed
    assert np.isclose(pf.length, 10 + math.hypot(5, 5))


def test_load_head(tmp_path):
    head, _ = synthetic_walk(T=2.0)
    rows = np.column_stack([head.times, head.pos, head.rot])
    csv = tmp_path / "head.csv"
    csv.write_text("t,x,y,z,qx,qy,qz,qw\n" + "\n".join(",".join(f"{v:.9g}" for v in r)
                                                      for r in rows))
    h1 = tr.load_input(write(tmp_path, '[input]\nkind = "head"\nfile = "head.csv"\nwindow = 0.5\n'))
    assert np.allclose(h1.desired(1.5)[0], head.desired(1.5)[0], atol=1e-6)
    # the same walk recorded Y-up (x, y, z) -> (x, z, -y) loads back to Z-up
    ypos = np.column_stack([head.pos[:, 0], head.pos[:, 2], -head.pos[:, 1]])
    Rinv = quat.from_matrix(np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]]))
    yrot = quat.mul(Rinv, head.rot)
    inline = ('[input]\nkind = "head"\nup = "y"\n'
              f"t = {head.times.tolist()}\npos = {ypos.tolist()}\nrot = {yrot.tolist()}\n")
    h2 = tr.load_input(write(tmp_path, inline, "inline.toml"))
    assert np.allclose(h2.pos, head.pos, atol=1e-9)
    assert np.allclose(h2.desired(1.5)[0], head.desired(1.5)[0], atol=1e-9)
    assert np.isclose(yaw_deg(h2.desired(1.5)[1]), yaw_deg(head.desired(1.5)[1]))


@pytest.mark.parametrize("text, match", [
    ("[input\nkind = 1", "TOML syntax"),
    ('[input]\nkind = "mouse"', "unknown kind 'mouse'; known: joystick, path, head"),
    ("[other]\nx = 1", "unknown key 'other'"),
    ('[input]\nkind = "joystick"', "at least one"),
    ('[input]\nkind = "joystick"\n[[key]]\nt = 1\nx = 0\ny = 1\n[[key]]\nt = 0.5\nx = 0\ny = 1',
     r"\[\[key\]\] #2: t must increase"),
    ('[input]\nkind = "joystick"\n[[key]]\nt = 0\nx = 2\ny = 0', r"x must be <= 1"),
    ('[input]\nkind = "joystick"\n[[key]]\nt = 0\nx = 0', r"missing 'y'"),
    ('[input]\nkind = "joystick"\nspeed = 3\n[[key]]\nt = 0\nx = 0\ny = 1', "unknown key 'speed'"),
    ('[input]\nkind = "path"\npoints = [[0, 0]]\nspeed = 1', ">= 2"),
    ('[input]\nkind = "path"\npoints = [[0, 0], [1, 0]]\nspeed = 0', "speed must be > 0"),
    ('[input]\nkind = "path"\npoints = [[0, 0], [0, 0]]\nspeed = 1', "zero length"),
    ('[input]\nkind = "path"\npoints = [[0, 0], [1, 0]]\nspeed = 1\n[[key]]\nt = 0\nx = 0\ny = 1',
     "keys belong"),
    ('[input]\nkind = "head"\nfile = "missing.csv"', "not found"),
    ('[input]\nkind = "head"', "needs file"),
    ('[input]\nkind = "head"\nt = [0, 1]\npos = [[0, 0, 0]]\nrot = [[0, 0, 0, 1], [0, 0, 0, 1]]',
     "pos must be a list of 2 rows"),
    ('[input]\nkind = "head"\nup = "w"\nt = [0, 1]\npos = [[0, 0, 0], [1, 0, 0]]\n'
     'rot = [[0, 0, 0, 1], [0, 0, 0, 1]]', "unknown up axis"),
    ('[input]\nkind = "head"\nt = [0, 0]\npos = [[0, 0, 0], [1, 0, 0]]\n'
     'rot = [[0, 0, 0, 1], [0, 0, 0, 1]]', "increasing"),
])
def test_load_input_errors(tmp_path, text, match):
    p = write(tmp_path, text)
    with pytest.raises(FileFormatError, match=match) as exc:
        tr.load_input(p)
    msg = str(exc.value)
    assert msg.startswith(str(p)) and "\n" not in msg


def test_load_input_takes_a_shipped_name(tmp_path, monkeypatch):
    """As ``mm run --input`` does: the README's ``scenes/inputs/...`` path worked only from
    the repository's folder."""
    monkeypatch.chdir(tmp_path)
    src = tr.load_input("straight_walk")
    assert isinstance(src, tr.Joystick)
    with pytest.raises(UnknownNameError, match="unknown input 'nope'; known: .*straight_walk"):
        tr.load_input("nope")


def test_load_input_file_errors(tmp_path):
    with pytest.raises(FileFormatError, match="no such input file"):
        tr.load_input(tmp_path / "nope.toml")
    bad = tmp_path / "bad.csv"
    bad.write_text("time,x,y,z\n0,0,0,0\n")
    p = write(tmp_path, '[input]\nkind = "head"\nfile = "bad.csv"\n')
    with pytest.raises(FileFormatError, match="header must be") as exc:
        tr.load_input(p)
    assert str(exc.value).startswith(str(bad))
    bad.write_text("t,x,y,z,qx,qy,qz,qw\n0,0,0,0,0,0,0,1\n1,0,0,x,0,0,0,1\n")
    with pytest.raises(FileFormatError, match="cannot read head CSV"):
        tr.load_input(p)
    for rows in ("0,0,0,0,0,0,0,1\n", "0,0,0,0,0,0,0,1\n1,0,0,nan,0,0,0,1\n",
                 "0,0,0,0,0,0,1\n1,0,0,0,0,0,1\n"):
        bad.write_text("t,x,y,z,qx,qy,qz,qw\n" + rows)
        with pytest.raises(FileFormatError, match="need >= 2 rows of 8 finite numbers") as exc:
            tr.load_input(p)
        assert str(exc.value).startswith(str(bad))


def test_clamp_root_rotation_of_one_root_is_the_batched_one_bit_for_bit(rng):
    a = quat.normalize(rng.normal(size=(400, 4)))
    b = quat.normalize(a + rng.normal(size=(400, 4)) * rng.uniform(0.0, 0.3, (400, 1)))
    batch = tr.clamp_root_rotation(a, b, 0.3)
    assert 50 < np.sum(quat.angle(b, a) <= 0.3) < 350          # both branches
    for i in range(len(a)):
        assert np.array_equal(tr.clamp_root_rotation(a[i], b[i], 0.3), batch[i])


def test_root_clamps_refuse_nan_and_negative_limits():
    """A NaN limit compared false and clamped nothing; now it is refused like a negative one."""
    a = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), 0.0)
    b = quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), 1.0)
    for bad in (float("nan"), -0.1):
        with pytest.raises(ShapeError, match="max_angle must be >= 0"):
            tr.clamp_root_rotation(a, b, bad)
        with pytest.raises(ShapeError, match="max_angle must be >= 0"):
            tr.clamp_root_rotation(np.stack([a, a]), np.stack([b, b]), bad)
        with pytest.raises(ShapeError, match="max_distance and ratio must be >= 0"):
            tr.clamp_root(np.zeros(3), np.ones(3), bad)
        with pytest.raises(ShapeError, match="max_distance and ratio must be >= 0"):
            tr.clamp_root(np.zeros(3), np.ones(3), 0.1, ratio=bad)


@pytest.mark.parametrize("make, match", [
    (lambda: Joystick([0.0], [[0.0, 1.0]], [False], walk_speeds=(1.0, -0.5, 0.8)),
     "walk_speeds: need \\(forward, side, back\\) speeds >= 0"),
    (lambda: Joystick([0.0], [[0.0, 1.0]], [False], run_speeds=(3.0, 1.0)),
     "run_speeds: need"),
    (lambda: Joystick([0.0, 1.0], [[0.0, 1.0]], [False, False]), "stick: expected finite shape"),
    (lambda: Joystick([0.0], [[0.0, np.nan]], [False]), "stick: expected finite shape"),
    (lambda: Joystick([0.0], [[0.0, 1.0]], [False], right=[[1.0, np.inf]]),
     "right: expected finite shape"),
    (lambda: Joystick.from_keys([(0.0, 0.0, 1.0)]), "rows must be \\(t, x, y, run"),
    (lambda: Joystick.from_keys([]), "rows must be \\(t, x, y, run"),
    (lambda: PathFollower([[0.0, 0.0], [np.nan, 1.0]], 1.0), "points must be finite"),
    (lambda: HeadTrajectory([0.0, 1.0], [[0, 0, 1.6], [np.nan, 0, 1.6]],
                            [[0, 0, 0, 1]] * 2), "pos must be finite"),
    (lambda: HeadTrajectory([0.0, 1.0], [[0, 0, 1.6]] * 2, [[0, 0, 0, 1]] * 2,
                            forward=(0, 0, 0)), "forward: expected a non-zero"),
    (lambda: HeadTrajectory([0.0, 1.0], [[0, 0, 1.6]] * 2, [[0, 0, 0, 1]] * 2,
                            forward=(1, 0)), "forward: expected a non-zero"),
    (lambda: HeadTrajectory([0.0, 1.0], [[0, 0, 1.6]] * 2, [[0, 0, 0, 1]] * 2,
                            turn_speeds=(0.6, 0.2)), "turn_speeds: need 0 <= lo < hi"),
    (lambda: HeadTrajectory([0.0, 1.0], [[0, 0, 1.6]] * 2, [[0, 0, 0, 1]] * 2,
                            turn_speeds=(np.nan, 0.2)), "turn_speeds: need 0 <= lo < hi"),
    (lambda: PathFollower([[0.0, 0.0], [1.0, 0.0]], 1.0).desired(np.nan),
     "time must be finite"),
    (lambda: PathFollower([[0.0, 0.0], [1.0, 0.0]], 1.0).desired(0.0, sim_pos=[1.0]),
     "sim_pos: expected shape"),
])
def test_bad_input_sources_are_one_shape_error(make, match):
    with pytest.raises(ShapeError, match=match) as e:
        make()
    assert "\n" not in str(e.value)
