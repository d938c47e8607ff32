"""Balance feedback for fully physical playback (``Tracker`` mode ``"physical"``).

No force acts on the body but gravity, the ground and its own joints. Two ways to drive the
joints (``BalanceSettings.drive``):

* ``"torque"``: joint torques (default motors off, ``TORQUE_CONTROL`` every physics step), the
  sum of (world frame, then turned into each child's frame, where PyBullet applies a spherical
  joint's torque):

  1. **stable PD** tracking of the reference's local joint rotations (Tan, Liu, Turk 2011):
     the torques of the gains applied at the end of the step, with the accelerations predicted
     from the body's own mass matrix (``mass_matrix``; the prediction knows no ground);
  2. **gravity compensation** (Coros, Beaudoin, van de Panne 2010): each joint carries the
     weight of the segments below it; a stance leg instead carries the rest of the body above
     it, shared between the legs by their measured ground loads;
  3. a **virtual force** on the centre of mass (PD toward the reference's centre of mass and
     its velocity) realised through the stance leg(s) as ``τ = Jᵀ F``: each joint of the chain
     foot → pelvis gets ``−(c − x_joint) × F``; the ground supplies the force through the
     foot contact. Its horizontal part is bounded by what the feet can hold.

* ``"motors"``: PyBullet's joint motors (the constraint-level PD of mode ``"assist"``, solved
  together with the contacts) toward the balance-modified targets below, each stance ankle's
  motor force bounded by its sole.

Both: **torso control** (SIMBICON, Yin, Loken, van de Panne 2007): a stance hip's target is
the rotation that puts the pelvis at its reference *world* orientation from where the thigh is
now; **foot placement** (SIMBICON): the swing thigh follows its reference world direction,
turned so the foot lands ``c_d (d − d_ref) + c_v (v − v_ref)`` further along (sagittal and
lateral gains apart, plus an optional extra step width), with ``d`` the horizontal offset of
the centre of mass from the stance ankle and ``v`` its velocity, the reference's own
``d_ref``, ``v_ref`` keeping the reference step where the body is in balance; **stance ankles**
bounded so the centre of pressure stays under the sole (``ankle_lever`` heel-to-toe,
``ankle_roll`` across), else the foot rolls onto its edge.

Stance comes from the simulation (the measured normal force on each foot in contact); the
swing leg is the reference's (its foot off the floor while the other is on it).

**Stepping** (``STEPPING``, motors drive; each option removes one measured way the body fell,
``benchmarks/physical_diagnosis.py``): the joint motors compliant (``motor_kp``: stiff legs
turned every landing into an impact that threw the body back into the air); the swing leg by
two-bone IK on the simulated pelvis, its sole level and clear of the floor (the reference's
swing toes point at the floor and tripped the body), landing at the capture point of the
linear inverted pendulum; a swing foot that lands early becomes a stance foot (``touchdown``),
one still in the air when its reference lands goes on and comes down before the other foot
lifts (``swing_wait``: a body slower than its reference lands late);
stance legs by IK from where each foot stands, the pelvis to its reference orientation and
height, the centre of mass toward the reference's place over the stance sole, the sole without
roll (the references' planted soles lean up to 8-9° onto an edge) and at their own heading
(``stance_yaw``: asked to the reference's, a planted foot turned the body the other way
instead); a reference foot is planted
only when low and slow (``plant_speed``; less slow while the reference walks fast,
``fast_speed``), and a planted one stays so while it rises a little,
slow, with neither foot planted by that rule (``contact_fallback``: a turning reference's
stance foot slides and lifts); the stance IK moves the centre of mass with the
reference's velocity as well as its place (``ik_kp`` 1, ``ik_kd`` 0.1: with the weaker 0.3 and
0.03 a body starting from standing behind a reference that reaches 1.4 m/s within 0.9 s was
pulled back over its stance foot and fell backward; ``ik_kd_stand`` 0.03 on a standing
reference, which the stronger term rocks off its feet); a recovery step when the reference
stands (both feet down a while, its centre of mass slow: ``recover_ref_speed``) but the
body's capture point has left its feet (``recover_dist``: a reference that stops dead leaves a
moving body without a step to take).

Stopping (``recover_choose``, ``recover_wait``, ``recover_blend``, ``recover_hold``,
``land_depth``, ``hold_feet``): a reference that stops dead leaves the body, behind and still
moving, to its recovery steps; each option removes one measured way they failed
(``BalanceSettings``).

Measured (README, "Measured"; ``benchmarks/playback_speed.py``, ``physical_diagnosis.py``):
with ``STEPPING`` the demo walk looped to 20 s walks without a fall, started at the clip's
first frame; on the live database with its standing clip (``physical_diagnosis.py
live_headings``) the live straight walk (from standing, its reference's feet level and
grounded by its still feet) walks 20 s without a fall in each of 28 headings (11.4-12.0 of the
reference's 23.8 m; before the velocity term: down at 1.5-2.5 s); the live stop and go is up
20 s in 28 of 28 headings and comes to rest in its stands (0.0-0.1 m/s at the end of each 3 s
stand; without the standing clip its reference walked in place and so did the body, 0.2-0.3
m/s; with the standing clip and ``stiff_kp``, 9 of 28 fell walking off from a stand); it
walks slower than its reference (3.5-3.7 of 7.2 m); the Bandai-Namco walk stays up its 9.1 s
(down at 3.0 s before ``track`` levelled the reference's planted soles and grounded it by its
still feet: ``TrackingSettings.flat_planted``, ``ground_still``); the solved CMU 02_01 walk's
gait cycle looped to 20 s (``reference.close_cycle``) stays up in each of twelve headings (it
fell in all twelve before ``swing_wait`` and the closed seam; ``benchmarks/playback_speed.py
solved_12``), the PiG walk's in 3 of 12 (5 on another machine, the same code; 12 of 12 on the
solve that held its heels flat, then jumping, 0 of 12 before the solver bent its toes at the
ball; 12 of 12 retargeted onto the template's body); the live figure eight is up 20 s
in 6 of 6 headings (3 of 6 before ``stance_yaw``), the head circle 20 s (its 12 s recording,
then standing; down at 13.4 s without the standing clip). The sharp turns fall in all six
(down at 5.3-9.6 s, in or after a 180° turn the reference spins on sliding feet)
(``physical_diagnosis.py live_turns``). A reference paced by the body (``live.LivePlayback``
``follow``, ``speed_margin``) changes nothing robustly. Without
stepping, neither drive keeps the body up longer than 1.4-3 s on any walking reference, as
without balance feedback.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quat
from ..errors import SettingsError, bad_number
from ..matching.trajectory import yaw_of
from ..skeleton import forward_kinematics_frame
from .character import Character, foot_joints, leg_chains
from .reference import sole_points

__all__ = ["BalanceSettings", "BalanceController", "DRIVES", "STEPPING"]

_Z = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class BalanceSettings:
    """Gains of ``BalanceController`` (SI units).

    Attributes:
        drive: ``"torque"`` (stable PD, gravity compensation, virtual force) or ``"motors"``
            (PyBullet's joint motors toward the balance-modified targets).
        friction: ground and body Coulomb friction in physical mode (``TrackingSettings``'s
            0.4 suits a root assist pulling stance feet along; a body on its own legs slips on
            it: measured, a landing foot slid 13 cm).
        kp, kd: N·m/rad, N·m·s/rad of the torque drive's PD by segment kind (``legs``: hips and
            knees, ``ankles``, ``toes``, ``trunk``: spine and chest, ``neck``: neck and head,
            ``arms``: shoulders to elbows, ``hands``). Ankles above ``m g h`` (736 N·m/rad) or
            the body topples standing still.
        gravity_comp: 0..1, fraction of the segments' weight compensated (torque drive).
        com_kp, com_kd: 1/s², 1/s: horizontal virtual force per kg toward the reference centre
            of mass and its velocity; ``com_kp_z``, ``com_kd_z`` the vertical one (torque drive).
        torso: 0..1, how much a stance hip serves the pelvis's world orientation instead of
            its own reference rotation.
        place_cd, place_cv: m/m, m/(m/s): sagittal foot placement feedback (SIMBICON's c_d,
            c_v); ``place_cd_lat``, ``place_cv_lat`` the lateral one; ``step_width`` m, the
            swing foot placed that much further outward; ``place_max`` m, bound of the offset.
        contact_height: m, a reference foot whose lowest sole point is below this is on the
            floor (the reference's swing/stance phase).
        contact_fallback: m, or 0: a reference with neither foot on the floor by
            ``contact_height`` and ``plant_speed`` keeps a foot that was on it the frame before
            (the lower one) while that foot stays slower than ``plant_speed`` and its lowest
            sole point below this height. The live figure eight's motion-matched reference,
            turning, slides its stance foot (0.5-0.9 m/s) and lifts it to 2.4-3.3 cm for 0.4 s
            at the start while the other swings low: no foot on the floor, no swing planned,
            and the body was down at 1.0 s in six headings of six (``STEPPING``'s 0.035: up
            20 s in 3 of 6, ``benchmarks/physical_diagnosis.py live_turns``). Any slow foot
            below the height, not only a planted one, also took the PiG walk's landing foot
            for planted early (its looped cycle down in one heading of twelve).
        stance_yaw: rad, or ``None`` (off): a stance foot (``leg_ik``) keeps the heading it
            stands at, all but this much of its difference from the reference foot's, and
            the stance hip takes the twist (the knee's hinge turned with it). Asked to the
            reference's heading, a planted foot's ankle motor, unable to turn the foot on the
            floor, turned the body the other way: on the live turning walks the body walked on
            at its old heading while its reference turned. ``STEPPING``'s 15 degrees: the
            live figure eight up 20 s in 6 of 6 headings (3 of 6 without,
            ``benchmarks/physical_diagnosis.py live_turns``), in 12 of 12 every 30 degrees (1
            of 12) and at 12 of 12 random headings (8 of 12) (a scratch loop over the same
            code; ``benchmarks/RESULTS.md``, "Live coupling, fully physical"); a straight walk's
            stance feet stand up to about 15 degrees off their reference's, and with all of
            it kept (0) the live straight walk went 8.1 m in 20 s instead of 12.1 (its stance
            hips turned out), at 10 degrees 11.2 m.
        load_filter: s, time constant of the filter on the feet's measured loads.
        ankle_lever, ankle_roll: m, a stance ankle's torque per newton of its load, heel-to-toe
            and across the sole.
        motor_kp, motor_kd: the motors' position and velocity gains (motors drive; the
            velocity gain has no effect on PyBullet's spherical motors, see
            ``TrackingSettings.joint_kd``). A motor closes ``kp`` x 0.2 of its error per
            physics step (``TrackingSettings.joint_kp``): at 1 a fifth, a time constant of
            about 21 ms: rigid legs, and every landing an impact that throws the body
            back into the air (the demo walk's first: 2.8 body weights, 7 cm up;
            ``benchmarks/physical_diagnosis.py anatomy``);
            ``STEPPING`` walks at 0.2-0.3 (measured, demo walk) and falls at 0.33 and above.
        stiff_kp, stand_s: > 0: the motors' position gain once the reference has stood on both
            feet for ``stand_s`` s (0: off). Added when compliant motors let a standing body
            sag at the knees and fall backward within 4 s; ``STEPPING`` had 1 until its
            references could stand (a standing clip in the live database): a body at rest on
            stiff motors then could not walk off again when its reference did (the live stop
            and go down in 9 of 28 headings, 7 of them 1.4-1.8 s after the stick was pushed
            again; 28 of 28 without; ``benchmarks/physical_diagnosis.py live_headings_28``).
            ``stand_s`` also times ``ik_kd_stand``.
        down: 0..1, no balance feedback while the centre of mass is below this fraction of
            the reference's height (the body is down).
        plant_speed: m/s; > 0: a reference foot is on the floor only while its ankle also
            moves slower than this (low and slow: the demo walk's swing toe brushes the floor
            at speed 0.07 s before its heel strikes, and ended the swing there).
        fast_speed, fast_plant_speed, fast_filter_s: m/s, m/s, s; ``fast_speed`` > 0: while the
            reference's centre of mass moves faster than ``fast_speed`` (horizontally, its speed
            filtered with time constant ``fast_filter_s``), ``fast_plant_speed`` replaces
            ``plant_speed``. The straight joystick walk at 1.5 m/s (the live database walks at
            1.06-1.12) fell at 3.2-3.4 s in 6 headings of 6; with ``plant_speed`` 1.44 (a value
            the gain search found, ``predictive.SEARCHED_SETS``) it is up 20 s in 6 of 6, but
            the walks from standing fall with it at 1.5-2.4 s (the shipped straight walk and
            stop and go, 0 of 6). ``STEPPING``'s 1.45 m/s filtered over 0.5 s never switches on
            the shipped walking inputs, nor on straight walks at up to 1.3 m/s, which stay as
            they were, bit for bit; filtered over 1 s, 1.40-1.45 m/s switched too late for the
            1.5 m/s walk and 1.35 m/s switched on half circles at 1.3 m/s too, and most of those
            fell (``benchmarks/RESULTS.md``, "Live coupling, fully physical").
        swing_ik: the swing leg by two-bone IK on the simulated pelvis (``_swing_ik``): the
            ankle at the reference's height above the floor, horizontally at the reference's
            place relative to its centre of mass moved with the simulated one, plus the
            placement offset; else the swing thigh turned in world coordinates (SIMBICON).
        level_swing, clearance: the swing sole held level and its ankle at least
            ``clearance`` m above standing height (else: lifted so the reference's lowest sole
            point clears ``clearance``). The reference's swing foot points its toes at the
            floor; a body a little lower than its reference stubs them and trips (measured:
            2.8 body weights on the toes, 7 cm into the air, the first fall).
        touchdown: a swing foot that lands while its reference is still coming down is a
            stance foot from then on (a stiff leg driven on toward a reference in the air
            vaults the body off the floor).
        leg_ik: stance legs by IK from where each foot stands (``_stance_ik``): the pelvis
            toward its reference world orientation and height, the centre of mass toward the
            reference's place over the stance feet, its offset across each sole bounded by
            ``com_lateral`` m; ``ik_kp``, ``ik_kd`` (per frame, s), ``ik_kz``: gains of that
            move, ``ik_max`` m its bound per frame; ``ik_kd_stand`` (``None``: ``ik_kd``)
            replaces ``ik_kd`` once the reference has stood on both feet ``stand_s`` s.
        flat_stance: a stance sole's target has no roll across (the references' planted
            soles lean up to 8-9° onto one edge; a stiff ankle stands the body on that edge).
        capture, capture_forward, capture_width, capture_blend: foot placement at the
            capture point of the linear inverted pendulum (``com + v / ω``, ``ω = √(g/h)``),
            ``capture_forward`` m ahead of it and ``capture_width`` m outward, blended in
            over the first ``capture_blend`` s of the swing (``swing_ik`` only). ``STEPPING``
            blends over 0.15 s: a body slower than its reference (it walks at about half the
            reference's speed) takes swings shorter than 0.3 s, which landed part-way to the
            reference's own place, far ahead of its centre of mass; the body stopped there and
            fell backward (the live stop and go restarting after a stand: up 20 s in 7 of 28
            runs, then 18 of 28, 28 since ``plan_s``; README, "Measured").
        recover_dist, recover_s, recover_wait: recovery steps (``_recovery``; 0 = none):
            once the reference has stood on both feet ``recover_wait`` s, a step whenever the
            body's capture point is more than ``recover_dist`` m from the middle of its feet,
            the swing lasting ``recover_s`` s, then until the foot touches (``STEPPING``
            waits 0.05 s: at 0.15, with or without the other stopping options, the live
            stop and go was down at 4.1-4.6 s, soon after its first stop, in 3-4 of 6
            headings).
        recover_ref_speed: m/s, or 0: no recovery step starts while the reference's centre
            of mass moves this fast or faster (a stand is slow, not only both feet down). The
            solved CMU 02_01 walk (1.2 m/s) keeps both feet down about 0.1 s a step, longer
            than ``recover_wait``, and its lagging body took recovery steps there that braked
            it. ``STEPPING``'s 0.3 (``benchmarks/playback_speed.py solved_12``, that walk's gait
            cycle looped to 20 s in 12 headings: down at 3.3-8.9 s, median 4.3, without the
            gate, 4.8-8.5 s, median 5.6, with it, still up in none; the PiG walk's up in 12 of
            12 both ways; the live straight walk and stop and go up 20 s in 28 of 28 headings
            both ways).
        swing_wait: s, or 0: a swing foot still in the air when its reference lands it, after
            swinging this long, goes on to its placement and comes down (as a recovery step
            does, ``land_depth``), and the other leg stays a stance leg until it has (not
            lifted on the reference's timing). A body slower than its reference lands late:
            the solved CMU 02_01 walk (1.2 m/s; its body walks at about 0.6) lifted its stance
            foot with the other still in the air and had no foot down for 30-40 ms a stride.
            ``STEPPING``'s 0.1: a swing of a frame or two (the reference's foot flickering
            across ``contact_height``, a landed foot bouncing) is not one; counting those too,
            the looped PiG walk fell in all twelve headings (``benchmarks/playback_speed.py
            solved_12``).
        swing_keep: a swing foot still in the air goes on and comes down (as ``swing_wait``'s
            late swing does) while the reference shows no foot planted (its sliding feet, a
            frame or two), and a recovery step in the air goes on when the reference lifts the
            other foot, the one the body stands on: dropped, the swing foot was left to the
            reference's joint angles, and the body lifted its only stance foot (the live sharp
            turns, heading 2 rad). ``STEPPING`` on: the fully physical three-point avatar's
            held-out clips 9 of 14 fall (10 of 14 without), the other split 10 of 15 (11), its
            truth clips 7 of 15 (8); every other figure unchanged
            (``benchmarks/RESULTS.md``, "Live coupling, fully physical").
        land_air: a foot off the floor ``swing_wait`` s or longer while the other carries the
            body comes down too (as ``swing_wait``'s late swing does) when the reference has
            it planted or plants neither, whether or not a swing lifted it: lifted with no
            swing planned (the reference had it planted; a turning body had not put it down),
            it was left to the reference's joint angles on a pelvis turned off the
            reference's, its ankle up to 30 cm above the floor (7 cm standing) for a quarter
            of a second while the body sank on the other (the live sharp turns, heading 2
            rad). ``STEPPING`` on: the live head circle turned the other way
            (``benchmarks/physical_diagnosis.py live_mirrored``) up 20 s (down at 14.38 s
            without), pushes 5 of 6 at rest (4), the demo walk started 0.3 / 0.6 / 0.9 s into
            its cycle up / up / down at 2.44 s (down at 1.27 s / up / up); the sharp turns
            still fall (``benchmarks/RESULTS.md``, "Live coupling, fully physical").
        recover_choose: which foot takes a recovery step from both feet: the capture point
            more than ``recover_side`` m outside the feet (across the heading), that side's
            foot (the other would cross under the body); else the foot farther from the
            capture point. Off: the foot carrying less (a body pushed 0.6 m/s to its right
            stepped with its left foot, across under it, and fell). A step by the side the
            body goes keeps its foot when the other one lifts (``_recovery``).
        recover_blend: s, or ``None`` (``capture_blend``): a recovery step's foot goes from
            below the centre of mass to the capture point within this time (blended over
            ``capture_blend``, 0.3 s, it came down at ``0.6 recover_s``, 0.21 s, 70 % of the way
            there: under the centre of mass of a body still moving forward).
        recover_hold: during a recovery step the stance leg holds the centre of mass where
            it is (the stance IK only damps its velocity) instead of moving it to where the
            reference has its own relative to that foot. A reference that stops with its feet
            apart has its centre of mass 7-12 cm ahead of the middle of its ankles (the live
            stop and go's stands); a recovery step's stance leg drew the body's there, ahead
            of its stance ankle, and every step started the next: the body walked on at
            0.3 m/s while its reference stood (3.5 m past it 23 s after the stop). ``STEPPING``
            on (``benchmarks/physical_diagnosis.py live_headings_28``, ``pushes``).
        hold_feet, hold_wait: m, s; > 0: once the reference has stood on both feet
            ``hold_wait`` s, a foot it has planted that is neither loaded nor swinging and
            within ``hold_feet`` m of standing height is a stance leg too (``_stance_ik``),
            pushed down onto the floor where it is; else its joints follow the reference's
            angles from a tilting pelvis (a stopped body's feet walked backward from under
            it; ``benchmarks/physical_diagnosis.py pushes``).
        plan_s: s, or 0: the motors drive's targets (``plan``) are made again every
            ``plan_s`` of simulated time, rounded to whole physics steps, from the latest
            reference frame; 0: once per reference frame. ``STEPPING`` plans at 120 Hz
            (1/120 s): planned once per 60 Hz frame, its feedback (the stance and swing legs'
            IK from the simulated state, recovery steps) came too seldom, and the live stop and
            go was up 20 s in 18 of 28 headings, now 28 (README, "Measured"); the DeepMimic
            walk (30 Hz) looped to 20 s was up in 0 of 6 headings, now 6. It costs one push
            of six: a standing body started forward at 0.8 m/s falls (it came to rest planned
            once per frame; ``benchmarks/physical_diagnosis.py pushes``; the walk:
            ``benchmarks/playback_speed.py looped``).
        land_depth: m, or ``None`` (the reference's ankle height): a recovery step comes
            down toward this far below standing height (at the reference's, the foot hovered
            a centimetre above the floor, never took the weight, and the body rolled on past
            it: a live stop and go still walking at 0.5-0.6 m/s after 3 s of standing).
    """

    drive: str = "torque"
    friction: float = 0.9
    kp: tuple = (("legs", 1000.0), ("ankles", 1500.0), ("toes", 60.0), ("trunk", 1000.0),
                 ("neck", 200.0), ("arms", 300.0), ("hands", 50.0))
    kd: tuple = (("legs", 100.0), ("ankles", 60.0), ("toes", 6.0), ("trunk", 100.0),
                 ("neck", 20.0), ("arms", 30.0), ("hands", 5.0))
    gravity_comp: float = 1.0
    com_kp: float = 100.0
    com_kd: float = 20.0
    com_kp_z: float = 100.0
    com_kd_z: float = 20.0
    torso: float = 1.0
    place_cd: float = 0.5
    place_cv: float = 0.2
    place_cd_lat: float = 0.5
    place_cv_lat: float = 0.2
    step_width: float = 0.0
    place_max: float = 0.3
    contact_height: float = 0.02
    load_filter: float = 0.02
    ankle_lever: float = 0.08
    ankle_roll: float = 0.04
    motor_kp: float = 1.0
    motor_kd: float = 1.0
    down: float = 0.6
    swing_ik: bool = False
    plant_speed: float = 0.0
    fast_speed: float = 0.0
    fast_plant_speed: float = 0.0
    fast_filter_s: float = 1.0
    leg_ik: bool = False
    clearance: float = 0.0
    touchdown: bool = False
    level_swing: bool = False
    flat_stance: bool = False
    capture: bool = False
    capture_forward: float = -0.03
    capture_width: float = 0.06
    capture_blend: float = 0.3
    recover_dist: float = 0.0
    recover_s: float = 0.35
    recover_wait: float = 0.15
    recover_choose: bool = False
    recover_side: float = 0.03
    recover_blend: float | None = None
    recover_hold: bool = False
    hold_feet: float = 0.0
    hold_wait: float = 0.0
    land_depth: float | None = None
    recover_ref_speed: float = 0.0
    swing_wait: float = 0.0
    contact_fallback: float = 0.0
    stance_yaw: float | None = None
    stiff_kp: float = 0.0
    stand_s: float = 0.3
    com_lateral: float = 0.015
    ik_kp: float = 0.3
    ik_kd: float = 0.03
    ik_max: float = 0.05
    ik_kd_stand: float | None = None
    ik_kz: float = 1.0
    plan_s: float = 0.0
    swing_keep: bool = False
    land_air: bool = False

    def __post_init__(self):
        if self.drive not in DRIVES:
            raise SettingsError(f"unknown balance drive {self.drive!r}; known: {', '.join(DRIVES)}")
        if not (isinstance(self.plan_s, (int, float)) and 0 <= self.plan_s < float("inf")):
            raise SettingsError(f"BalanceSettings: plan_s must be a number of seconds >= 0, got "
                                f"{self.plan_s!r}")
        if self.stance_yaw is not None and bad_number(self.stance_yaw):
            raise SettingsError(f"BalanceSettings: stance_yaw must be None (off) or an angle "
                                f"in rad >= 0, got {self.stance_yaw!r}")
        for name, what in _CHECKED:
            if bad_number(getattr(self, name)):
                raise SettingsError(f"BalanceSettings: {name} must be {what}, got "
                                    f"{getattr(self, name)!r}")


# fields checked by ``errors.bad_number`` (a finite number >= 0, not a bool): what each must be
_CHECKED = (("recover_ref_speed", "a speed in m/s >= 0 (0: no gate)"),
            ("contact_fallback", "a height in m >= 0 (0: off)"),
            ("swing_wait", "a number of seconds >= 0 (0: off)"),
            ("fast_speed", "a speed in m/s >= 0 (0: off)"),
            ("fast_plant_speed", "a speed in m/s >= 0"),
            ("fast_filter_s", "a number of seconds >= 0"))


DRIVES = ("torque", "motors")

# Compliant joint motors, capture-point foot placement, legs by IK and recovery steps for a
# reference that stops: each option removes one measured way the body fell (``BalanceSettings``).
# Measured (README, "Measured"): the demo walk looped to 20 s, the live straight walk and
# the live stop and go (28 headings each) without a fall; the Bandai walk up its 9.1 s.
# Its recovery steps land ``capture_forward`` (0.03 m) short of the capture point like any
# step, a narrow peak: over the live stop and go's 28 headings, planned once per frame (18
# up 20 s), a recovery step 0 / 0.02 / 0.029 / 0.04 / 0.06 m short is up in 6 / 8 / 17 / 19
# / 4 (README, "Measured").
STEPPING = BalanceSettings(drive="motors", motor_kp=0.25, plant_speed=1.0,
                           swing_ik=True, level_swing=True, clearance=0.03, touchdown=True,
                           leg_ik=True, flat_stance=True, capture=True, capture_forward=-0.03,
                           capture_blend=0.15,
                           ik_kz=0.1, ik_kp=1.0, ik_kd=0.1, ik_kd_stand=0.03,
                           recover_dist=0.1, recover_choose=True, recover_wait=0.05,
                           recover_blend=0.15, recover_hold=True, hold_feet=0.03,
                           hold_wait=0.15,
                           land_depth=0.01, plan_s=1.0 / 120.0,
                           recover_ref_speed=0.3, swing_wait=0.1, contact_fallback=0.035,
                           stance_yaw=np.radians(15.0), swing_keep=True,
                           land_air=True, fast_speed=1.45, fast_plant_speed=1.44,
                           fast_filter_s=0.5)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a × b`` over the last axis (written out: ``np.cross`` costs ~20 µs a call, and this
    runs every physics step)."""
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape)
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def _kind(name: str) -> str:
    if name.endswith(("UpperLeg", "LowerLeg")):
        return "legs"
    if name.endswith("Foot"):
        return "ankles"
    if name.endswith("Toes"):
        return "toes"
    if name in ("Spine", "Chest", "UpperChest"):
        return "trunk"
    if name in ("Neck", "Head"):
        return "neck"
    if name.endswith("Hand"):
        return "hands"
    return "arms"


class BalanceController:
    """Joint torques for one ``Character`` following a reference pose with balance feedback.

    Args:
        char: the simulated character (its default motors off).
        max_torque: ``(J,)`` N·m, per-axis torque bound of each joint (``[0]`` unused).
        settings: ``BalanceSettings``.
        gravity: m/s².
    """

    def __init__(self, char: Character, max_torque: np.ndarray,
                 settings: BalanceSettings = BalanceSettings(), gravity: float = 9.81):
        self.char, self.s = char, settings
        # the motors drive plans every this many physics steps (None: once per reference frame)
        self._plan_every = (max(1, round(settings.plan_s / char.timestep))
                            if settings.plan_s > 0 else None)
        body = char.body_template
        sk = body.skeleton
        self.sk = sk
        J = self.J = len(sk)
        self.par = np.asarray(sk.parents)
        self.m = np.asarray(body.mass, float)
        self.M = float(self.m.sum())
        self.g = float(gravity)
        self.com_local = char.com_local
        sub = np.zeros((J, J), bool)
        for k in range(J):
            a = k
            while a >= 0:
                sub[a, k] = True
                a = self.par[a]
        self.sub = sub
        self.msub = sub.astype(float) @ self.m
        kp, kd = dict(settings.kp), dict(settings.kd)
        kinds = [_kind(n) for n in sk.names]
        self.kp = np.array([kp[k] for k in kinds])
        self.kd = np.array([kd[k] for k in kinds])
        self.max_torque = np.asarray(max_torque, float)
        self.chains = leg_chains(body)          # legs: (hip, knee, ankle) per side
        self.hips = [c[0] for c in self.chains]
        ka = np.asarray(body.axis[self.chains[0][1]], float)
        self.knee_axis = ka if np.all(np.isfinite(ka)) else np.array([0.0, 1.0, 0.0])
        self.spine = [j for j in range(1, J) if self.par[j] == 0 and j not in self.hips]
        x, _ = forward_kinematics_frame(sk, quat.identity((J,)), sk.offsets[0])
        self.leg_len = float(np.linalg.norm(x[self.chains[0][0]] - x[self.chains[0][2]]))
        self.rest_ankle = float(x[self.chains[0][2], 2])   # m, above the floor standing
        self.soles = sole_points(body)
        self.foot_of_sole = np.array([0 if j in foot_joints(body)[0] else 1
                                      for j in self.soles[0]])
        self.load = np.zeros(2)
        self._swt = np.zeros(2)
        self._clock = 0.0                # s of simulated time (``apply``'s steps)
        self._on_t = np.zeros(2)         # when each foot last touched the floor
        self._both = 0.0
        self._last_swing = []
        self._rec = None             # a recovery step: its side
        self._rec_t = 0.0            # s since it began
        self._rec_side = False       # stepped by the side the body goes (``recover_choose``)
        self.ref = None
        self._k = 0
        self._ref_com = None
        self._ref_speed = 0.0        # m/s, the reference's horizontal speed, filtered

    # --- reference ------------------------------------------------------------------------

    def set_reference(self, root_pos, root_rot, lrot, ang, jvel, dt: float) -> None:
        """The frame's target: ``root_pos (3,)``, ``root_rot (4,)`` (world), ``lrot (J, 4)``,
        root angular velocity ``ang (3,)`` (world), joint velocities ``jvel (J, 3)`` (child
        frames); ``dt`` s since the previous reference (0 on reset: the body at rest)."""
        lrot = np.array(lrot, float)
        lrot[0] = root_rot
        x, g = forward_kinematics_frame(self.sk, lrot, root_pos)
        c = x + quat.rotate(g, self.com_local)
        com = self.m @ c / self.M
        vcom = (com - self._ref_com) / dt if (self._ref_com is not None and dt > 0) \
            else np.zeros(3)
        if dt <= 0:
            # a reset: the body at rest, so its loads and the reference's filtered speed too
            self.load = np.zeros(2)
            self._ref_speed = 0.0
        self._ref_com = com
        j, pts = self.soles
        sz = (x[j] + quat.rotate(g[j], pts))[:, 2]
        low = np.array([sz[self.foot_of_sole == s].min() for s in (0, 1)])
        on = low < self.s.contact_height
        plant = self.s.plant_speed
        if self.s.fast_speed > 0 and dt > 0:
            # a fast walk's planted feet: see ``BalanceSettings.fast_speed``
            a = 1.0 - np.exp(-dt / self.s.fast_filter_s) if self.s.fast_filter_s > 0 else 1.0
            self._ref_speed += a * (float(np.hypot(vcom[0], vcom[1])) - self._ref_speed)
            if self._ref_speed > self.s.fast_speed:
                plant = self.s.fast_plant_speed
        if plant > 0 and self.ref is not None and dt > 0:
            # a foot is planted when low and slow: the demo walk's swing toe brushes the floor
            # at speed 0.07 s before its heel strikes
            sp = np.linalg.norm((x - self.ref["x"])[[c[2] for c in self.chains], :2], axis=-1) / dt
            on &= sp < plant
            if self.s.contact_fallback > 0 and not on.any():
                # a walking reference is never in the air: a foot planted the frame before
                # that is still slow and low carries it (not a landing foot yet in the air)
                slow = (sp < plant) & (low < self.s.contact_fallback) \
                    & self.ref["on"]
                if slow.any():
                    on[int(np.argmin(np.where(slow, low, np.inf)))] = True
        ank = x[[c[2] for c in self.chains], 2]
        prev = self.ref["ankle_z"] if (self.ref is not None and dt > 0) else ank
        self._k = 0
        # seconds each leg has been swinging (by the last plan's swing sides)
        self._swt = np.where(np.isin([0, 1], self._last_swing), self._swt + max(dt, 0.0), 0.0)
        # seconds the reference has had both feet planted (standing)
        self._both = self._both + max(dt, 0.0) if on.all() else 0.0
        self._rec_t += max(dt, 0.0)
        self.ref = {"lrot": lrot, "jvel": np.asarray(jvel, float), "root_rot": np.asarray(root_rot),
                    "ang": np.asarray(ang, float), "com": com, "vcom": vcom, "on": on, "low": low,
                    "ankle_z": ank, "falling_foot": ank < prev,
                    "x": x, "g": g}

    def shift_reference(self, offset: np.ndarray) -> None:
        """Translate the stored reference by ``offset (3,)`` m (``Tracker.shift_reference``)."""
        if self._ref_com is not None:
            self._ref_com = self._ref_com + offset
        if self.ref is not None:
            self.ref = dict(self.ref, x=self.ref["x"] + offset, com=self.ref["com"] + offset)

    # --- one physics step -----------------------------------------------------------------

    def state(self):
        """World joint positions ``X (J, 3)``, rotations ``R (J, 4)``, segment centres of mass
        ``C (J, 3)``, their velocities ``V (J, 3)`` and angular velocities ``W (J, 3)``; local
        joint rotations ``q (J, 4)`` and angular velocities ``w (J, 3)`` (child frames; ``[0]``
        is the root's, world)."""
        ch = self.char
        p, b, cl = ch.p, ch.body, ch.client
        J = self.J
        ls = p.getLinkStates(b, ch.links, computeLinkVelocity=1, computeForwardKinematics=1,
                             physicsClientId=cl)
        js = p.getJointStatesMultiDof(b, ch.links, physicsClientId=cl)
        pos, orn = p.getBasePositionAndOrientation(b, physicsClientId=cl)
        v0, w0 = p.getBaseVelocity(b, physicsClientId=cl)
        X = np.empty((J, 3))
        C = np.empty((J, 3))
        R = np.empty((J, 4))
        V = np.empty((J, 3))
        W = np.empty((J, 3))
        q = np.empty((J, 4))
        w = np.empty((J, 3))
        X[0] = C[0] = pos
        R[0] = q[0] = orn
        V[0], w[0] = v0, w0
        W[0] = w0
        X[1:] = [s[4] for s in ls]
        C[1:] = [s[0] for s in ls]
        R[1:] = [s[5] for s in ls]
        V[1:] = [s[6] for s in ls]
        W[1:] = [s[7] for s in ls]
        q[1:] = [s[0] for s in js]
        w[1:] = [s[1] for s in js]
        return X, R, C, V, W, q, w

    def plan(self, dt: float):
        """The simulated state (``state()``), the stance weights ``(2,)`` (each foot's share of
        the measured ground load), the swing sides, and the joint targets with balance
        feedback: rotations ``(J, 4)`` and velocities ``(J, 3)`` (child frames)."""
        s, r = self.s, self.ref
        X, R, C, V, W, q, w = self.state()
        com = self.m @ C / self.M
        vcom = self.m @ V / self.M
        feet, load, _ = self.char.foot_loads()
        self._on_t = np.where(feet, self._clock, self._on_t)
        a = min(1.0, dt / s.load_filter) if s.load_filter > 0 else 1.0
        self.load += a * (load - self.load)
        tot = float(self.load.sum())
        wts = self.load / tot if tot > 0.1 * self.M * self.g else np.zeros(2)
        wts = np.where(feet, wts, 0.0)         # a foot off the floor carries nothing now

        target = np.array(r["lrot"])
        # foot placement: the reference's swing leg, its thigh in world coordinates. No
        # feedback once the body is down (centre of mass below ``down`` of the reference's):
        # world-frame targets of a body on the floor whip its limbs about
        up = com[2] > s.down * r["com"][2]
        swing = [sd for sd in (0, 1) if not r["on"][sd] and r["on"][1 - sd]] if up else []
        if s.touchdown:
            # a swing foot that comes down on the floor before its reference does is a stance
            # foot from then on (SIMBICON's state machine switches on contact): driven on
            # toward a reference still in the air, a stiff leg vaults the body off the floor
            swing = [sd for sd in swing if not (wts[sd] > 0 and r["falling_foot"][sd])]
        if not up:
            wts = np.zeros(2)
        late = []
        if s.swing_wait > 0 and up:
            # a swing foot still in the air after its reference has landed goes on swinging
            # and comes down, and the other leg stays a stance leg until it has: a lagging
            # body that lifted its stance foot on the reference's timing had no foot down.
            # Not a swing of a frame or two (a flickering reference foot, a bounce)
            # (``swing_keep``: also through frames with no reference foot planted)
            keep = s.swing_keep and not r["on"].any()
            # (``land_air``: also a foot in the air that long with no swing planned. At most
            # one foot is in the air with the other down, so at most one is late)
            late = [sd for sd in (0, 1) if (r["on"][sd] or keep) and not feet[sd]
                    and feet[1 - sd] and self._rec is None
                    and ((sd in self._last_swing and self._swt[sd] >= s.swing_wait)
                         or (s.land_air and self._clock - self._on_t[sd] >= s.swing_wait))]
            rc = self._rec
            if s.swing_keep and rc is not None and not feet[rc] and feet[1 - rc] \
                    and not r["on"][1 - rc]:
                # a recovery step in the air lands before the foot the body stands on lifts
                late = [rc]
            if late:
                swing = late
        swing = self._recovery(swing, up, feet, X, com, vcom)
        for sd in swing:
            hip, _, _ = self.chains[sd]
            st_ankle = self.chains[1 - sd][2]
            d = (com - X[st_ankle])[:2] - (r["com"] - r["x"][st_ankle])[:2]
            v = vcom[:2] - r["vcom"][:2]
            fw, lf = (a[:2] for a in self._heading())
            out = 1.0 if sd == 0 else -1.0         # the swing foot's outward side (+left)
            delta = fw * (s.place_cd * (d @ fw) + s.place_cv * (v @ fw)) + \
                lf * (s.place_cd_lat * (d @ lf) + s.place_cv_lat * (v @ lf) +
                      out * s.step_width)
            if s.swing_ik:
                if s.capture:
                    # capture-point placement (linear inverted pendulum): the foot lands where
                    # the centre of mass would come to rest over it, ``capture_forward``
                    # behind it so the walk goes on, ``capture_width`` outward
                    xi = self._capture_point(com, vcom, X[self.chains[1 - sd][2], 2])
                    tgt = xi + fw * s.capture_forward + lf * out * s.capture_width
                    a = min(1.0, self._swt[sd] / s.capture_blend) if s.capture_blend > 0 else 1.0
                    if self._rec == sd and s.recover_blend is not None:
                        a = min(1.0, self._rec_t / s.recover_blend) if s.recover_blend > 0 \
                            else 1.0
                    delta = a * (tgt - (r["x"][self.chains[sd][2], :2] + (com - r["com"])[:2]))
                land = (self._rec == sd and self._rec_t > 0.6 * s.recover_s) or sd in late
                self._swing_ik(sd, target, X, R, com, delta, land)
                continue
            n = float(np.hypot(*delta))
            gt = r["g"][hip]
            if n > 1e-9:
                delta = delta * (min(n, s.place_max) / n)
                n = min(n, s.place_max)
                u = _cross(np.array([delta[0], delta[1], 0.0]) / n, _Z)
                gt = quat.mul(quat.from_axis_angle(u, n / self.leg_len), gt)
            target[hip] = quat.mul(quat.conj(R[0]), gt)

        self._last_swing = list(swing)
        jv = np.array(r["jvel"])
        stance = [sd for sd in (0, 1) if wts[sd] > 0 and sd not in swing]
        if s.hold_feet > 0 and up and self._both >= s.hold_wait:
            # a foot the reference has planted that is off the floor and not swinging (a
            # bounce, a late landing) is put down where it is, not left to the reference's
            # joint angles on a tilting pelvis (which swing it about: a standing body's feet
            # walked backward from under it)
            low = X[[c[2] for c in self.chains], 2] < self.rest_ankle + s.hold_feet
            stance += [sd for sd in (0, 1)
                       if sd not in stance and sd not in swing and r["on"][sd] and low[sd]]
        if s.leg_ik and stance:
            self._stance_ik(stance, target, X, R, com, vcom, wts)
            flip = np.sum(target * q, axis=-1) < 0
            target[flip] *= -1.0
            return (X, R, C, V, W, q, w, com, vcom), wts, swing, target, jv
        # torso control (SIMBICON): a stance hip's target is the
        # rotation that puts the pelvis at its reference world orientation from where the
        # thigh is now, so the stance hip (not an external torque) turns the pelvis upright
        jv = np.array(r["jvel"])
        for sd, hip in enumerate(self.hips):
            if wts[sd] > 0 and hip not in [self.chains[x][0] for x in swing]:
                want = quat.mul(quat.conj(r["root_rot"]), R[hip])
                if float(want @ target[hip]) < 0:
                    want = -want
                target[hip] = quat.slerp(target[hip], want, wts[sd] * s.torso)
                wv = quat.inv_rotate(R[hip], W[hip] - r["ang"])
                jv[hip] = (1 - wts[sd] * s.torso) * jv[hip] + wts[sd] * s.torso * wv
        # each target in the current rotation's hemisphere (a motor may take the long way)
        flip = np.sum(target * q, axis=-1) < 0
        target[flip] *= -1.0
        st = (X, R, C, V, W, q, w, com, vcom)
        return st, wts, swing, target, jv

    def _heading(self) -> tuple[np.ndarray, np.ndarray]:
        """The reference's heading frame on the floor: unit ``forward`` and ``left`` ``(3,)``."""
        fw = quat.rotate(self.ref["root_rot"], np.array([1.0, 0.0, 0.0]))
        fw[2] = 0.0
        fw /= max(float(np.linalg.norm(fw)), 1e-9)
        return fw, np.array([-fw[1], fw[0], 0.0])

    def _capture_point(self, com, vcom, floor_z: float) -> np.ndarray:
        """``(2,)`` m: the capture point of the linear inverted pendulum, ``com + v / ω`` with
        ``ω = √(g / h)``, ``h`` the centre of mass's height above ``floor_z`` (at least 0.3 m)."""
        om = np.sqrt(self.g / max(float(com[2] - floor_z), 0.3))
        return com[:2] + vcom[:2] / om

    def _leg_ik(self, sd: int, target: np.ndarray, pelvis: np.ndarray, H: np.ndarray,
                T: np.ndarray, foot: np.ndarray | None = None, twist: float = 0.0) -> None:
        """Leg ``sd``'s hip, knee and ankle targets (written into ``target``, child frames) by
        two-bone IK: with the pelvis at world rotation ``pelvis (4,)`` and the hip joint at
        ``H (3,)``, the ankle reaches ``T (3,)`` (m, world; clamped to the leg's reach); the
        knee bends about its hinge axis, the thigh keeps the reference's twist turned by
        ``twist`` rad about world Z, and the foot takes the reference's world orientation (or
        ``foot (4,)``)."""
        r, sk = self.ref, self.sk
        hip, knee, ankle = self.chains[sd]
        a_off, b_off = sk.offsets[knee], sk.offsets[ankle]
        la, lb = float(np.linalg.norm(a_off)), float(np.linalg.norm(b_off))
        d = float(np.linalg.norm(T - H))
        d = min(max(d, abs(la - lb) + 1e-3), 0.999 * (la + lb))
        cth = (d * d - la * la - lb * lb) / (2 * la * lb)
        qk = quat.from_axis_angle(self.knee_axis, float(np.arccos(np.clip(cth, -1.0, 1.0))))
        gh = quat.mul(pelvis, r["lrot"][hip])
        if twist:
            gh = quat.mul(quat.from_axis_angle(_Z, twist), gh)
        A = quat.rotate(gh, a_off + quat.rotate(qk, b_off))
        gh = quat.mul(quat.between(A, T - H), gh)
        gk = quat.mul(gh, qk)
        target[hip] = quat.mul(quat.conj(pelvis), gh)
        target[knee] = qk
        target[ankle] = quat.mul(quat.conj(gk), r["g"][ankle] if foot is None else foot)

    def _recovery(self, swing, up, feet, X, com, vcom) -> list:
        """The swing sides with recovery steps (``BalanceSettings.recover_dist``): while the
        reference has stood on both feet ``recover_wait`` s, a step starts when the body's
        capture point strays ``recover_dist`` m from the middle of its feet (a reference that
        stops dead leaves a body still moving with no step to take); the foot carrying less
        swings for ``recover_s`` s and then until it touches."""
        s = self.s
        if s.recover_dist <= 0 or not up or swing:
            self._rec = None
            return swing
        if self._rec is not None:
            if self._rec_t > s.recover_s and feet[self._rec]:
                self._rec = None
            elif feet[self._rec] and not feet[1 - self._rec] and not self._rec_side:
                # the body rolled onto the swing foot and lifted the other: that one steps.
                # Not a step by the side the body goes: leaning onto that foot lifts the other,
                # which would cross under the body (planned at 120 Hz, a body pushed to its
                # right at 0.6 m/s switched to its left foot before the right lifted, and fell)
                self._rec = 1 - self._rec
                self._rec_t = 0.0
                self._swt[self._rec] = 0.0
            return [] if self._rec is None else [self._rec]
        ank = [c[2] for c in self.chains]
        xi = self._capture_point(com, vcom, X[ank, 2].min())
        e = xi - X[ank, :2].mean(axis=0)                    # from the middle of the feet
        # only while the reference stands (both feet planted a while, its centre of mass
        # slow): in its own double support a walking reference steps again soon, and a
        # lagging body would step back (a 1.2 m/s walk's double support outlasts
        # ``recover_wait``)
        moving = s.recover_ref_speed > 0 and \
            float(np.hypot(*self.ref["vcom"][:2])) >= s.recover_ref_speed
        if self._both >= s.recover_wait and float(np.linalg.norm(e)) > s.recover_dist \
                and feet.any() and not moving:
            # the foot off the floor, else the one carrying less (lifting the loaded foot
            # drops the body onto the other)
            self._rec = int(np.argmin(feet)) if not feet.all() else int(np.argmin(self.load))
            self._rec_side = False
            if s.recover_choose and feet.all():
                # the capture point well out to one side: that side's foot steps (the other
                # would cross under the body); else the foot farther behind it (the other one
                # is where the body is going)
                _, lf = self._heading()
                lat = float(e @ lf[:2])
                half = 0.5 * abs(float((X[ank[0], :2] - X[ank[1], :2]) @ lf[:2]))
                if abs(lat) > half + s.recover_side:
                    self._rec = 0 if lat > 0 else 1
                    self._rec_side = True
                else:
                    self._rec = int(np.argmax(np.linalg.norm(X[ank, :2] - xi, axis=-1)))
            self._rec_t = 0.0
            self._swt[self._rec] = 0.0
            return [self._rec]
        return swing

    def _swing_ik(self, sd: int, target: np.ndarray, X, R, com, delta,
                  land: bool = False) -> None:
        """Swing leg ``sd`` (``_leg_ik`` on the *simulated* pelvis): the ankle goes to the
        reference's ankle height above the floor, horizontally where the reference puts it
        relative to its centre of mass, moved with the simulated centre of mass and by the
        placement offset ``delta`` ``(2,)`` m."""
        r = self.ref
        ankle = self.chains[sd][2]
        T = np.array(r["x"][ankle], float)
        T[:2] += (com - r["com"])[:2] + delta
        # toe clearance: the reference's own swing toe may brush the floor; a simulated one a
        # little lower (a body a little off its reference) stubs it and trips
        foot = None                            # the reference's world orientation
        if self.s.level_swing:
            # the swing sole held level, the ankle at least ``clearance`` above standing
            # height: the reference's own swing foot points its toes at the floor
            g = r["g"][ankle]
            foot = quat.mul(quat.between(quat.rotate(g, _Z), _Z), g)
            # (a recovery step comes down at the end: its reference foot stands)
            T[2] = T[2] if land else max(T[2], self.rest_ankle + self.s.clearance)
            if land and self.s.land_depth is not None:
                # put down onto the floor, not at the reference's ankle height (a foot left
                # hovering a centimetre above the floor never took the body's weight)
                T[2] = min(T[2], self.rest_ankle - self.s.land_depth)
        else:
            T[2] += max(0.0, self.s.clearance - float(r["low"][sd]))
        self._leg_ik(sd, target, R[0], X[self.chains[sd][0]], T, foot)

    def _stance_ik(self, stance, target, X, R, com, vcom, wts) -> None:
        """Stance legs (``_leg_ik`` from where each foot stands): the pelvis is asked to its
        reference world orientation and moved so the centre of mass goes where the reference
        has it relative to the stance feet, its offset across each sole bounded by
        ``BalanceSettings.com_lateral`` (the reference's own may sit at the sole's edge);
        with ``stance_yaw`` each foot keeps the heading it stands at (``R`` the simulated
        world rotations), the leg's twist taken at the hip."""
        s, r = self.s, self.ref
        _, lf = self._heading()
        want = np.zeros(3)
        hz = 0.0
        for sd in stance:
            ankle = self.chains[sd][2]
            rel = r["com"] - r["x"][ankle]
            if len(stance) == 1:
                lat = float(rel @ lf)
                rel = rel + lf * (np.clip(lat, -s.com_lateral, s.com_lateral) - lat)
            # both feet down: each counts the same, whatever it carries (weighted by the
            # loads, the centre of mass was drawn toward the more loaded foot, which loaded it
            # more: a standing body walked itself sideways off its feet)
            want += (X[ankle] + rel) / len(stance)
            hz += (X[ankle, 2] - self.rest_ankle + r["x"][0, 2]) / len(stance)
        # the velocity term starts a standing body walking with its reference (without it
        # the body is left behind and falls back); on a standing reference (stood
        # ``stand_s``) the weaker ``ik_kd_stand``: at 0.1 it rocks a standing body off its feet
        kd = s.ik_kd if (s.ik_kd_stand is None or self._both < s.stand_s) else s.ik_kd_stand
        if s.recover_hold and self._rec is not None:
            # a recovery step's stance leg only brakes: the stopped reference's own centre of
            # mass may stand well ahead of this foot, and moving the body's there walks it on
            want[:2] = com[:2]
        dlt = s.ik_kp * (want - com) - kd * (vcom - r["vcom"])
        dlt[2] = s.ik_kz * (hz - X[0, 2]) - kd * (vcom[2] - r["vcom"][2])
        n = float(np.linalg.norm(dlt[:2]))
        if n > s.ik_max:
            dlt[:2] *= s.ik_max / n
        P = X[0] + dlt
        for sd in stance:
            hip, _, ankle = self.chains[sd]
            H = P + quat.rotate(r["root_rot"], self.sk.offsets[hip])
            foot = None
            if s.flat_stance:
                # no roll across the sole: the reference's stance foot may lean a few degrees
                # onto one edge, and a stiff ankle then stands the body on that edge (its
                # centre of pressure at the sole's side, pushing the body the other way)
                g = r["g"][ankle]
                y = quat.rotate(g, np.array([0.0, 1.0, 0.0]))
                yh = np.array([y[0], y[1], 0.0])
                foot = quat.mul(quat.between(y, yh / max(float(np.linalg.norm(yh)), 1e-9)), g)
            twist = 0.0
            if s.stance_yaw is not None:
                # a planted foot does not turn: asked to the reference's heading, its ankle
                # motor turned the body the other way instead (a turning body walked on at its
                # old heading), so the foot keeps its own heading beyond ``stance_yaw`` of the
                # reference's and the hip turns the pelvis
                f = r["g"][ankle] if foot is None else foot
                d = float(np.angle(np.exp(1j * (yaw_of(R[ankle]) - yaw_of(f)))))
                twist = float(np.sign(d)) * max(0.0, abs(d) - s.stance_yaw)
                if twist:               # (within the band, most frames of a walk: as asked)
                    foot = quat.mul(quat.from_axis_angle(_Z, twist), f)
            T = X[ankle]
            if s.hold_feet and wts[sd] <= 0:
                T = np.array([T[0], T[1], self.rest_ankle])     # down onto the floor
            self._leg_ik(sd, target, r["root_rot"], H, T, foot, twist)

    def torques(self, dt: float) -> np.ndarray:
        """``(J, 3)`` N·m, each joint's torque in its child frame for the next step of ``dt``
        s (``[0]`` is zero); also sets ``self.info``."""
        s, r, J = self.s, self.ref, self.J
        (X, R, C, V, W, q, w, com, vcom), wts, swing, target, jv = self.plan(dt)
        gz = np.array([0.0, 0.0, self.g])
        # 1. PD (child frames)
        e = quat.to_scaled_axis(quat.abs_w(quat.mul(quat.conj(q[1:]), target[1:])))
        kp, kd = self.kp[1:, None], self.kd[1:, None]
        pd = kp * e + kd * (jv[1:] - w[1:])

        # 2. gravity compensation: the weight below each joint, or above it for a stance leg
        mc = self.m[:, None] * C
        S = self.sub.astype(float) @ mc
        Stot = mc.sum(axis=0)
        extra = _cross(S - self.msub[:, None] * X, gz) * s.gravity_comp
        # 3. virtual force on the centre of mass, through the stance leg(s)
        F = self.M * np.array([
            s.com_kp * (r["com"][0] - com[0]) + s.com_kd * (r["vcom"][0] - vcom[0]),
            s.com_kp * (r["com"][1] - com[1]) + s.com_kd * (r["vcom"][1] - vcom[1]),
            s.com_kp_z * (r["com"][2] - com[2]) + s.com_kd_z * (r["vcom"][2] - vcom[2])])
        # a horizontal force at the centre of mass needs a centre of pressure that far from
        # the ankle: bounded by what the feet can hold (the rest is foot placement's job)
        h = max(float(com[2] - min(X[c[2], 2] for c in self.chains)), 0.1)
        fh = float(np.hypot(F[0], F[1]))
        fmax = self.M * self.g * s.ankle_lever / h
        if fh > fmax:
            F[:2] *= fmax / fh
        for sd, chain in enumerate(self.chains):
            j = list(chain)
            above = -_cross((Stot - S[j]) - (self.M - self.msub[j, None]) * X[j], gz) \
                * s.gravity_comp - _cross(com - X[j], F)
            extra[j] = (1 - wts[sd]) * extra[j] + wts[sd] * above
        extra_l = quat.inv_rotate(R[1:], extra[1:])

        # stable PD with the full mass matrix: the accelerations of all torques, predicted
        # without the ground, damp the PD as if its gains acted at the end of the step
        Mm, fg = self.mass_matrix(X, R, C)
        kdv = np.zeros(6 + 3 * (J - 1))
        kdv[6:] = np.repeat(self.kd[1:], 3)
        rhs = fg.copy()
        rhs[6:] += (pd + extra_l).ravel()
        acc = np.linalg.solve(Mm + np.diag(kdv * dt), rhs)
        tau = pd + extra_l - kd * dt * acc[6:].reshape(J - 1, 3)

        # a stance ankle's torque is bounded by its foot (x forward: roll across the sole;
        # y sideways: pitch heel to toe), every joint by its limit
        for sd, chain in enumerate(self.chains):
            a = chain[2]
            if wts[sd] > 0:
                load = wts[sd] * self.M * self.g
                free = (1 - wts[sd]) * self.max_torque[a]
                for ax, lever in ((0, s.ankle_roll), (1, s.ankle_lever)):
                    lim = load * lever + free
                    tau[a - 1, ax] = np.clip(tau[a - 1, ax], -lim, lim)
        out = np.zeros((J, 3))
        lim = self.max_torque[1:, None]
        out[1:] = np.clip(tau, -lim, lim)
        self.info = {"stance_weights": wts, "com": com, "virtual_force": F, "swing": swing}
        return out

    def mass_matrix(self, X, R, C):
        """The joint-space mass matrix ``(n, n)``, ``n = 6 + 3 (J - 1)``, and the generalised
        gravity force ``(n,)``, for velocities ``(root linear (world), root angular (world),
        each joint's angular velocity in its child frame)``; from the body's own masses and
        inertias (PyBullet's ``calculateMassMatrix`` ignores ``changeDynamics`` inertias).
        ``X``, ``C (J, 3)``: world joint positions and segment centres of mass; ``R (J, 4)``:
        world segment rotations."""
        J = self.J
        n = 6 + 3 * (J - 1)
        Rm = quat.to_matrix(R)                                   # (J, 3, 3)
        D = C[:, None, :] - X[None, :, :]                        # (body, joint, 3)
        sk = np.zeros(D.shape + (3,))
        sk[..., 0, 1], sk[..., 0, 2] = -D[..., 2], D[..., 1]
        sk[..., 1, 0], sk[..., 1, 2] = D[..., 2], -D[..., 0]
        sk[..., 2, 0], sk[..., 2, 1] = -D[..., 1], D[..., 0]
        anc = self.sub.T[:, :, None, None]                        # (body, joint, 1, 1)
        Rj = np.concatenate([np.broadcast_to(np.eye(3), (1, 3, 3)), Rm[1:]])
        Jw = np.where(anc, Rj[None], 0.0)                         # (body, joint, 3, 3)
        Jv = np.where(anc, -sk @ Rj[None], 0.0)
        Jw = Jw.transpose(0, 2, 1, 3).reshape(J, 3, 3 * J)
        Jv = Jv.transpose(0, 2, 1, 3).reshape(J, 3, 3 * J)
        Jv = np.concatenate([np.broadcast_to(np.eye(3), (J, 3, 3)), Jv], axis=2)
        Jw = np.concatenate([np.zeros((J, 3, 3)), Jw], axis=2)
        Iw = Rm @ (self.char.inertia[:, :, None] * Rm.transpose(0, 2, 1))
        n3 = Jv.shape[2]
        A = (np.sqrt(self.m)[:, None, None] * Jv).reshape(3 * J, n3)
        B = (Iw @ Jw).reshape(3 * J, n3)
        M = A.T @ A + Jw.reshape(3 * J, n3).T @ B
        fg = -self.g * np.einsum("k,ki->i", self.m, Jv[:, 2, :])
        return M[:n, :n], fg[:n]

    def apply(self, dt: float) -> None:
        """Drive the joints for the next ``stepSimulation`` of ``dt`` s: torques every step,
        or the motors' targets at a reference frame's first step and every ``plan_s``."""
        ch = self.char
        self._clock += dt
        if self.s.drive == "motors":
            self._k += 1              # the frame's physics steps so far (``set_reference``: 0)
            every = self._plan_every
            if self._k > 1 and (every is None or (self._k - 1) % every):
                return            # the motors keep the last plan's targets
            (X, R, C, V, W, q, w, com, vcom), wts, swing, target, jv = self.plan(dt)
            # one limit per joint for its three axes: PyBullet's spherical motors take the
            # first component as the limit of all three (no per-axis cap, e.g. on a stance
            # hip's yaw; ``tests/test_playback_character.py``)
            forces = np.repeat(self.max_torque[1:, None], 3, axis=1)
            for sd, chain in enumerate(self.chains):
                a = chain[2]
                forces[a - 1] = wts[sd] * self.M * self.g * self.s.ankle_lever + \
                    (1 - wts[sd]) * self.max_torque[a]
            # compliant while the reference steps (stiff legs make every landing an impact);
            # ``stiff_kp``: stiff once it has stood ``stand_s`` (``STEPPING``: never, a body
            # on stiff motors could not walk off from a stand), compliant through a recovery
            # step, which lands like any other
            kp = self.s.stiff_kp if (self.s.stiff_kp > 0 and self._both >= self.s.stand_s
                                     and self._rec is None) else self.s.motor_kp
            gains = np.full(self.J, kp)
            ch.p.setJointMotorControlMultiDofArray(
                ch.body, ch.links, ch.p.POSITION_CONTROL, targetPositions=target[1:].tolist(),
                targetVelocities=jv[1:].tolist(), positionGains=gains[1:].tolist(),
                velocityGains=[self.s.motor_kd] * (self.J - 1), forces=forces.tolist(),
                physicsClientId=ch.client)
            self.info = {"stance_weights": wts, "com": com, "virtual_force": np.zeros(3),
                         "swing": swing}
            return
        tau = self.torques(dt)
        ch.p.setJointMotorControlMultiDofArray(ch.body, ch.links, ch.p.TORQUE_CONTROL,
                                              forces=tau[1:].tolist(), physicsClientId=ch.client)
