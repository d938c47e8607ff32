"""Physics tracking: a simulated character follows a kinematic ``Motion``.

The character (``character.Character``: template masses, capsules, foot boxes, gravity, a ground
plane) tracks the reference's local joint rotations with PyBullet's joint motors in
``POSITION_CONTROL`` (a constraint-level PD: stable at stiff gains where an explicit PD torque
at 240 Hz is not, and one call per frame for the whole body). The root is either

* ``"assist"``: pulled toward the reference root by a bounded external force and torque (PD on
  position and orientation, clamped to ``assist_max_force`` / ``assist_max_torque``), the
  "hand of God" of physics-based character animation, reported per frame so a user sees how
  much help the motion needed; or
* ``"physical"``: unassisted; the body must stay up with joint torques alone. Falls are detected
  (root below ``fall_root_ratio`` of the reference's root height, or the head below
  ``fall_head_height``, for longer than ``fall_seconds``) and reported. Its reference feet keep
  one twist about their bones for the whole clip (``reference.level_feet(constant=True)``). With
  ``TrackingSettings(balance=True)`` the joints get balance feedback (``balance.py``); with
  ``balance_gains=balance.STEPPING`` the body keeps walking (``diagnose.py`` says what in a
  reference makes it hard). With ``TrackingSettings.recover_s`` a fallen body is put back on
  its feet, at rest in the reference's pose, that long after the fall was detected (placed, not
  simulated; each fall records when: ``recovered_s``), so that an avatar does not lie on the
  floor for the rest of a take.

``Tracker`` is the frame-by-frame API (a motion-matching controller can drive it live);
``track`` runs a whole ``Motion`` through it, its reference first made fit for the body
(``reference.py``: feet levelled, grounded, swing feet lifted), and measures the result.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, fields

import numpy as np

from .. import quat
from ..errors import (SettingsError, ShapeError, bad_number, require_counts, require_flags,
                      require_numbers, require_type)
from ..motion import Motion
from ..scene import BodyTemplate, Environment, load_body
from ..skeleton import forward_kinematics_frame
from .balance import BalanceController, BalanceSettings
from .character import Character
from .environment import Holds, add_objects
from .reach import ArmReach, reach_report
from .reference import ground_motion, level_feet, lift_swing, loop_motion

__all__ = ["TrackingSettings", "Tracker", "TrackResult", "track", "track_any", "MODES",
           "BALANCES", "balance_settings", "path_walked_m"]

MODES = ("assist", "physical")
# TrackingSettings fields that are None unless set, and their defaults per mode (MODES order)
_MODE_DEFAULTS = {"solver_iterations": (50, 10), "joint_min_torque": (60.0, 30.0),
                  "stance_speed": (0.5, 0.2), "swing_clearance": (0.01, None),
                  "joint_lead": (0.008, 0.0), "stance_rise": (0.3, None)}
# fields checked apart from the numbers (>= 0), and the numbers that must be > 0
_NOT_NUMBERS = ("level_feet", "flat_planted", "ground_reference", "head", "balance",
                "balance_gains", "reach_every_step", "recover_s", *_MODE_DEFAULTS)
_POSITIVE = ("timestep", "reach_kp", "assist_i_time", "fall_speed", "stance_height",
             "stance_speed", "stance_rise")


@dataclass(frozen=True)
class TrackingSettings:
    """Simulation and controller constants (SI units).

    Attributes:
        timestep: s, physics step; a motion frame of ``dt`` s takes about ``dt / timestep``
            steps, the simulated time kept within one step of the reference's
            (``Tracker.substeps``).
        gravity: m/s².  friction: ground and body Coulomb friction. 0.4 (a shoe on a smooth
            floor): kinematic references let stance feet creep a few cm (retargeting, blending)
            and a foot held by a stickier floor then fights the joint motors; measured on the
            demo walk and a Bandai-Namco walk (assist mode), 0.3-0.5 track within 2-4 cm and 0.7
            loses the walk (11-12 cm).
        solver_iterations: PyBullet constraint solver iterations per step; ``None``: 50 in
            ``"assist"`` mode (30 in the live loop, whose frame budget they are most of:
            ``live.LIVE_ASSIST_ITERATIONS``), 10 in ``"physical"`` mode. The stiff joint motors of
            assist mode need them to converge under running loads: at 10 the live run tracked
            within 26 cm (the trunk pitched 20 deg past the reference's, the feet 24 mm into the
            floor), at 50 within 6.1 cm (6 mm; 4.4 cm since ``stance_speed`` and the assist's
            orientation gains), and every walk, live or solved, tracks 0.1-1.3 cm closer (README,
            "Measured"), at 180 instead of 300 frames/s of the coupled loop. Physical mode's
            balance controller was tuned at 10 (``STEPPING``'s Bandai walk is up its 9.1 s / down
            at 3.4 / 2.5 s at 10 / 30 / 50, the demo walk up 20 s / down at 14.2 / 7.1 s:
            ``benchmarks/playback_speed.py physical_iterations``).
        min_inertia: kg·m², lower bound of every segment's principal inertia (an "armature"):
            a light segment carrying a heavy one (clavicle + arm, toes + body) makes the joint
            motors oscillate at 240 Hz otherwise.
        joint_kp, joint_kd: PyBullet motor position / velocity gains (dimensionless, per
            step). PyBullet's spherical joint motor (every joint of this body) uses only the
            position gain: it asks for a joint velocity of ``kp * 0.2 * error / dt`` (0.2:
            PyBullet's default erp), and the velocity gain and the target velocities have no
            effect (measured: ``joint_kd`` 0, 1 and 5 track the demo walk bit for bit alike;
            bullet3 issues #2740, #4533; one step closes 20 % of the error at kp 1:
            ``tests/test_playback_character.py``).
        joint_max_torque: N·m, per axis, the motors' force limit, scaled per joint by the
            mass it carries (segments below it / total) with floor ``joint_min_torque``.
        joint_min_torque: N·m, that floor; ``None``: 60 in ``"assist"`` mode, 30 in
            ``"physical"`` mode (``min_torque``). At 30 the arms (shoulder ~32 N·m) flail on
            the live run, where the root is shaken at every landing (right shoulder up to
            180 deg off its reference); the balance controller of physical mode was tuned
            with 30.
        assist_kp, assist_kd: N/m, N·s/m of the root position assist (per kg of body mass).
        assist_rot_kp, assist_rot_kd: N·m/rad, N·m·s/rad of the root orientation assist.
            12000 / 160 with ``assist_max_torque`` 800 (were 6000 / 80 / 400, before that
            3000 / 40): the root's orientation error is still the largest part of the live
            run's error: at 6000 / 80 / 400 the root 3.0 deg off its reference on average (6
            deg at the 90th percentile, in flight, where only the assist turns the body),
            which alone (pose and root position perfect) was 2.1 of the run's 4.0 cm. Measured
            on the live run (10 s): 12000 / 160 / 800 alone 3.4 cm, with ``joint_lead`` 2.8 cm
            and 1.2 deg (20000 / 250 / 1200: 2.8 cm too); 12000 / 160 at the 400 N·m clamp
            3.7 cm. The assist is an explicit torque at 240 Hz on a light pelvis; an earlier
            body chattered at the clamp while standing still with a damping of 150 (177 N /
            400 N·m); the present one stands with a few N and N·m at 80-160
            (``test_standing_stays_standing_with_tiny_assist``).
        joint_lead: s, or ``None``: 0.008 in ``"assist"`` mode, 0 in ``"physical"`` mode
            (``lead``). The joint motors' targets lead the reference by this time along its
            joint velocities (``lrot * exp(omega * lead)``): PyBullet's spherical motors are
            position-only (``joint_kd``), so a joint following a moving target trails it;
            measured on the live run, the simulated joints matched the reference of the frame
            before better than their own (left foot 6.1 against 8.1 deg, upper leg 1.7
            against 2.8, upper arm 1.1 against 2.8 deg mean); with the lead each matches its
            own frame best (foot 6.5, upper leg 1.0, upper arm 1.1 deg). Live inputs 10 s,
            alone: run 4.0 -> 3.5 cm, straight walk 1.4 -> 1.2 cm; 0.006 / 0.010 s with the
            orientation gains above: run 2.9 / 2.9 cm (0.008: 2.8), walk 1.0 / 1.0; a whole
            frame (0.0167 s) overshoots (run 4.1 cm, 12 mm penetration). Physical mode
            keeps 0: its balance controller and ``STEPPING`` were tuned without it.
        reach_kp: the reaching arms' motor position gain (joint motors, both modes, and
            over a balance controller's compliant motors; clavicle, shoulder, elbow and wrist
            while the hands reach for targets, ``Tracker.step``'s ``reach``), instead of
            ``joint_kp``. A PyBullet spherical motor closes ``kp`` x 0.2
            (PyBullet's default erp) of its angle error per physics step (``joint_kp``), so at
            1 an arm trails a moving target by about ``timestep / 0.2`` (21 ms): a fast swinging
            hand missed its controller however the motors were led. At 2.5 half the error
            closes per step and the arm lags one step; the controllers are taken
            ``reach_ahead`` (two steps: the step's own and the lag) past each step's start.
            Held-out avatar clips (``benchmarks/avatar_eval.py --physics``, assist),
            ``--offset 5`` / ``--offset 3``: wrist-frames within 1 cm of the reachable
            controllers 100.0 / 99.8 % (99.8 / 99.3 % at 1 with the motors led 12 ms along the
            bent arms' velocities and the frame's controllers for every step), 0.15 / 0.16 cm;
            the five runs alone (``--only run``) at 2 / 2.5 / 3 / 4 / 5, each with
            ``reach_ahead = timestep / (0.2 kp)``: 99.9 / 100.0 / 99.9 / 99.9 / 99.5 % and
            99.7 / 99.6 / 99.5 / 99.4 / 99.3 % (the arms alone, at 120 N·m). The clavicles
            joined them on 2026-12-04: at ``joint_kp``, toward the frame's reference led along
            its velocity, a simulated clavicle trailed the reference's and moved the shoulder
            1-2 cm at a run's landings, and the arm, bent for the reference's clavicle, missed
            by as much (clavicle, shoulder, elbow and wrist at 2.5, re-aimed every step / the
            arms alone, at 120 N·m: wrist-frames farther than 1 cm 1 / 3 of 7730 and 4 / 13 of
            8606, 0.08 / 0.15 and 0.08 / 0.16 cm).
        reach_every_step: the reaching arms are bent again before every physics step of a
            frame, from the simulated chest then (read from PyBullet and carried on by
            ``reach_ahead``, ``ArmReach.bend_chest``; the reference interpolated across the
            frame; before 2026-12-02 only before the steps after the first), not only
            once per frame from a chest deviation carried on over the frame (also over a
            balance controller's motors, since 2026-12-06: ``reach_kp``). In a run the chest
            swings further within one frame than the carried-on deviation predicts.
            Held-out avatar clips (``benchmarks/avatar_eval.py --offset 5 --physics``, assist,
            against ``--reach-once``): the runs' wrists 0.45-0.66 cm from the controllers instead of
            0.54-0.75, 84-98 % of wrist-frames within 1 cm instead of 79-91 % (walks 99-100 %
            either way); all clips 0.28 against 0.32 cm, 98.0 against 96.7 %; the other split
            (``--offset 3``) runs 70-98 against 61-95 %, all 0.29 against 0.33 cm, 97.3
            against 96.1 %. It costs three more bends a frame: 75 against 106 frames/s
            (four since ``reach_ahead``).
        reach_ahead: s, how far past each physics step's start the arms are bent for
            (``reach_every_step``): the simulated chest carried that far along its velocity
            (linear and angular, from PyBullet), the reference and the controllers taken at
            that time (the controllers interpolated between the frame's and the frame
            before's, carried on past the frame's end); 0: the chest as it is. The arm motors
            get to their targets at the step's end plus their lag (``reach_kp``: 1/120 s in
            all at 2.5), by when a running chest has moved on 1.3 cm a step. Measured before
            ``reach_kp`` (the arms at ``joint_kp``, led 12 ms, only the chest carried ahead,
            the frame's controllers and reference for every step); held-out runs
            (the five run clips of ``benchmarks/avatar_eval.py --offset 5 --physics --only
            run``, assist, the steps after each frame's first): 0 / 1/240 / 1/120 / 1/80 /
            1/60 s put 95.6 / 98.1 / 98.2 / 98.2 / 96.5 % of wrist-frames within 1 cm of the
            controllers, 0.45 / 0.40 / 0.38 / 0.39 / 0.43 cm; bent before every step, first
            included, 1/120 / 1/80 s: 98.6 / 97.9 %. With 1/120 s (kept) all held-out clips,
            ``--offset 5`` / ``--offset 3``: 99.5 / 99.0 % within 1 cm, 0.24 / 0.24 cm, runs
            97.5-99.5 / 90.4-99.5 % (98.8 / 98.3 %, runs 91-98.5 / 82-99 % before; since
            ``track`` places the body on its first frame with the arms reaching, 99.8 / 99.3 %,
            runs 97.5-100 / 90.4-100 %); one run clip back to back 57 against 67 frames/s,
            before a re-solve was cut from 455 to 287 µs (``ArmReach.bend_chest`` in plain
            floats, the chests' chains alone, the frame's reference kinematics once a frame; the
            same poses bit for bit).
        reach_min_torque: N·m, per axis, the floor of the motor force limit of the reaching
            arms' joints and of their clavicles (joint motors), instead of ``joint_min_torque``
            (both modes) while the hands reach for targets: a landing jolts the chest, and arms
            held at 60 N·m swing off the controllers. Held-out runs (the five run clips of
            ``benchmarks/avatar_eval.py --offset 5 --physics`` held out alone, assist, with
            ``reach_every_step``), wrist-frames within 1 cm of the controllers at 60 / 120 / 180
            / 250 N·m: 85-98 / 93-98 / 94-99 / 96-99 % (the arms alone at 120 or 250, not the
            clavicles: 88-98 %). 120 kept, about what a strong human shoulder gives. With it,
            all held-out clips (``--offset 5`` / ``--offset 3``): 98.8 / 98.3 % within 1 cm,
            runs 91-98.5 / 82-99 % (at 60: 98.0 / 97.3 %, runs 84-98 / 70-98 %). With
            ``reach_ahead`` 1/120 s the runs at 60 / 120 N·m (``--only run``): 95.7 / 98.6 %
            (``--offset 3``: 92.5 / 96.8 %). 180 since 2026-12-04, with the clavicles at
            ``reach_kp``: the last misses came where a clavicle or shoulder sat at its 120 N·m
            limit through a run's landing; wrist-frames farther than 1 cm at 120 / 150 / 180
            N·m: 1 / 0 / 0 of 7732 (``--offset 5``) and 4 / 2 / 0 of 8605 (``--offset 3``).
            Stronger than a human shoulder (70-110 N·m), in short peaks: over ``--offset 3``'s
            physics steps the largest axis of a clavicle's or shoulder's motor torque is 27
            N·m in the median, 174-180 at the 99th percentile, at the limit in 0.9-1.4 % of
            steps (at 120: 2.8-3.7 %); the elbows' and wrists' 99th percentiles 128-139 and
            85-89 N·m. Not much lower: a clavicle at ``reach_kp`` that cannot hold its arm is
            thrown (hands circling 0.2 m at 3.8 m/s before a body bouncing 8 cm at 4 Hz, the
            hands' 90th percentile 586 / 105 / 3.4 / 3.2 mm at 60 / 80 / 120 / 180 N·m).
        assist_max_force, assist_max_torque: N, N·m, clamps of the assist.
        assist_ki, assist_i_time, assist_i_max: N/(m·s·kg), s, m·s: integral term of the
            horizontal root assist, a leaky integral (it forgets with time constant
            ``assist_i_time``, so a standing body's fraction of a millimetre of offset never
            winds it up) clamped to ``assist_i_max``. Without it a root that falls behind early
            keeps its lag: each stance foot lands and holds (friction) where the lagging body
            puts it, so a proportional pull stops at the lag where it meets the feet's friction
            (measured: the Plug-in Gait walk's root 4.1 cm behind for the whole take; with the
            integral 0.9 cm, for the same mean force). Horizontal only: a vertical integral
            would end up carrying the body's weight.
        level_feet: ``track`` turns each reference foot about its own bone (heel -> toe axis)
            so its sole faces the floor. ``retarget`` fixes bone directions only, so the twist
            about the foot bone is arbitrary (the demo walk's feet are rolled ~80 deg onto
            their sides), which the foot boxes of the simulation cannot stand on.
        flat_planted: in ``"physical"`` mode ``track`` also pitches each reference foot by one
            angle for the clip so that its sole is level while planted (``level_feet``): a
            retargeted sole that points its toes at the floor stands the simulated stance foot
            on its toe tip, the centre of pressure there braking the body (measured, Bandai-Namco
            walk 001 with ``balance.STEPPING``: down at 3.0 s without, 6.8 s with, up its
            9.1 s with ``ground_still`` too).
        ground_still: m/s; > 0: in ``"physical"`` mode ``track`` grounds the reference by its
            still feet (``ground_motion``): a foot whose lowest sole point moves slower than
            this is on the floor. Retargeted by joint angles onto other limb lengths, the
            Bandai-Namco walks' pushing-off toe reaches 2-4 cm below the landing foot (a still
            foot's lowest point above 2.8-3.0 cm in a tenth of its still frames, the demo's
            0.2 cm); grounded by the lowest point, the landing foot hovered, the reference had
            neither foot planted and the simulated swing started late (measured, 21 runs of
            Bandai walks with ``STEPPING``, ``benchmarks/physical_diagnosis.py soles``: 10 up
            for the whole clip instead of 1; 5 / 7 at 0.1 / 0.5 m/s).
        ground_reference: ``track`` shifts the reference root vertically so that, frame by frame,
            the lowest sole point of the feet is on the floor (z = 0), smoothed over 0.1 s.
            Retargeted clips often float (or sink) a few cm; a root assist toward a floating
            root then carries the body weight instead of the legs.
        stance_speed, stance_height: m/s, m: the live loop (``LivePlayback``) grounds its
            reference by the feet in stance only: a foot counts when its slowest sole corner
            moves slower than ``stance_speed`` horizontally and its lowest corner is within
            ``stance_height`` of the floor; with no foot in stance (a run's flight) the offset
            is held (``StanceFloor``). ``stance_speed=None``: 0.5 m/s in ``"assist"`` mode,
            0.2 m/s in ``"physical"`` mode (``stance(mode)``; the live form of
            ``ground_still``: grounded by the lowest sole point of every frame, the landing
            foot hovered over a pushing-off toe that reaches below it, and ``STEPPING`` fell
            on the live straight walk at 1.8-2.4 s; grounded by the still feet it walks 20 s
            in each of six headings, ``benchmarks/physical_diagnosis.py live_headings``).
            Grounding by the lowest sole of every frame takes a run's flight out: the lower
            foot is pulled onto the floor while it swings forward at running speed (live run:
            reference soles within 1 cm of the floor moving at 1.3 m/s; the reference's centre
            of mass 8.5 m/s² off free fall, on average, in its flight frames, 5.4 with stance
            grounding). ``track`` keeps the lowest sole of
            every frame (smoothed over 0.1 s): measured on two Bandai-Namco run clips and
            its walk, stance grounding there changed nothing beyond noise (run 8.3 / 7.6 cm
            instead of 8.0 / 7.8, walk 1.35 instead of 1.30).
        swing_clearance: m, or ``None`` (0.01 in ``"assist"`` mode, off in ``"physical"``:
            ``clearance(mode)``): a swinging reference foot (its slowest sole corner faster
            than 0.5 m/s, fully from 1.0) whose sole reaches below this height is lifted by
            the shortfall (``SwingLift``: two-bone IK on the leg). Retargeted by joint angles
            onto other limb lengths, the Bandai-Namco swing toes pass at the floor's height
            (measured, live straight walk: in a third of the simulated feet's contact frames
            the reference's toe corner was at -1 mm moving 65 mm per frame), and the simulated
            foot following them dragged along the floor: foot skate of the live walks
            13.8-25.6 -> 6.9-10.1 mm per frame, tracking within 0.1 cm of before (before the
            joint lead: 14.6-27.4 -> 6.3-11.1 mm, 1.3-1.8 -> 1.1-1.7 cm; README, "Measured").
            Physical mode lifts its own swing foot (``BalanceSettings.clearance``).
        stance_rise: m/s, or ``None``: 0.3 in ``"assist"`` mode, no test in ``"physical"``
            mode (``rise``; its ``STEPPING`` walks were measured without it). A foot whose
            lowest sole point rises faster than this is not in stance (``StanceFloor``): a
            run's pushing-off foot, slow horizontally and still within ``stance_height`` of
            the floor as it leaves it, counted as standing and lowered the reference 4 cm for
            the whole flight (live run: its root 6 cm under the simulated body at the top of
            that flight). Live run, assist mode, 10 s: 2.84 -> 2.65 cm (0.6 / 1.0 m/s: 2.66);
            the walking inputs within 0.01 cm of before.
        fall_root_ratio, fall_head_height, fall_seconds: the fall rule (see module doc).
        fall_speed: m/s, a root faster than this is a fall at once ("unstable"): a blown-up
            simulation flings the body about, its root and head low only now and then, and
            the rule above alone reported no fall for a body thrown 458 m in 20 s.
        head: name of the head joint (for the fall rule).
        recover_s: s, or ``None`` (off): a body that fell is placed back on its feet, at rest in
            the reference's pose of the frame, this long after its fall was detected (its
            balance controller started afresh); the fall's record gets ``recovered_s``, the
            time it was put back. For an avatar, which should get up rather than lie on the
            floor while its reference walks on; the placing is not physics, and every fall is
            still counted.
        balance: in ``"physical"`` mode, drive the joints with ``balance.BalanceController``
            (torso control, foot placement, stance ankles bounded by their soles; joint torques
            with gravity compensation and a virtual force through the stance legs, or the joint
            motors: ``BalanceSettings.drive``); ``False`` (default): the position motors of
            ``"assist"`` mode toward the reference, no balance feedback. Off by default: only
            ``balance.STEPPING`` keeps a walk up (the demo walk and the live straight walk, 20
            s; the live stop and go in 28 of 28 headings: README, "Measured"), and it tracks
            joint angles looser than the stiff motors (standing 1.2 cm instead of 0.2 cm).
        balance_gains: ``balance.BalanceSettings`` (also the floor's friction in physical
            mode with ``balance``).
    """

    timestep: float = 1.0 / 240.0
    gravity: float = 9.81
    friction: float = 0.4
    solver_iterations: int | None = None
    min_inertia: float = 0.03
    joint_kp: float = 1.0
    joint_kd: float = 1.0
    joint_max_torque: float = 600.0
    joint_min_torque: float | None = None
    assist_kp: float = 200.0
    assist_kd: float = 40.0
    assist_rot_kp: float = 12000.0
    assist_rot_kd: float = 160.0
    assist_max_force: float = 700.0
    assist_max_torque: float = 800.0
    assist_ki: float = 1000.0
    assist_i_time: float = 0.5
    assist_i_max: float = 0.03
    level_feet: bool = True
    flat_planted: bool = True
    ground_still: float = 0.2
    ground_reference: bool = True
    stance_speed: float | None = None
    stance_height: float = 0.06
    swing_clearance: float | None = None
    fall_root_ratio: float = 0.5
    fall_head_height: float = 0.6
    fall_seconds: float = 0.5
    fall_speed: float = 20.0
    head: str = "Head"
    recover_s: float | None = None
    balance: bool = False
    balance_gains: BalanceSettings = BalanceSettings()
    joint_lead: float | None = None
    reach_kp: float = 2.5
    reach_every_step: bool = True
    reach_min_torque: float = 180.0
    reach_ahead: float = 1.0 / 120.0
    stance_rise: float | None = None

    def __post_init__(self):
        # one clear line for a bad value here, not a PyBullet error (or a silent blow-up) later
        require_numbers("TrackingSettings", _POSITIVE, **{
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_NUMBERS})
        require_flags("TrackingSettings", reach_every_step=self.reach_every_step)
        for name in ("joint_min_torque", "stance_speed", "swing_clearance", "joint_lead",
                     "stance_rise", "recover_s"):
            v = getattr(self, name)
            if v is not None and bad_number(v, name in _POSITIVE):
                raise SettingsError(f"TrackingSettings: {name} must be None or a finite number "
                                    f"{'> 0' if name in _POSITIVE else '>= 0'}, got {v!r}")
        it = self.solver_iterations
        if it is not None and (isinstance(it, bool) or not isinstance(it, int) or it < 1):
            raise SettingsError(f"TrackingSettings: solver_iterations must be None or an int "
                                f">= 1, got {it!r}")

    def _for_mode(self, name: str, mode: str):
        """Setting ``name`` as set, or its default in ``mode`` (``_MODE_DEFAULTS``)."""
        v = getattr(self, name)
        return _MODE_DEFAULTS[name][MODES.index(mode)] if v is None else v

    def iterations(self, mode: str) -> int:
        """The solver iterations used in ``mode`` (``solver_iterations`` or its default)."""
        return int(self._for_mode("solver_iterations", mode))

    def min_torque(self, mode: str) -> float:
        """N·m, the joint motors' torque floor in ``mode`` (``joint_min_torque`` or its
        default)."""
        return float(self._for_mode("joint_min_torque", mode))

    def clearance(self, mode: str) -> float:
        """m, the swing clearance of the reference in ``mode`` (``swing_clearance`` or its
        default; 0: off)."""
        v = self._for_mode("swing_clearance", mode)
        return 0.0 if v is None else float(v)

    def lead(self, mode: str) -> float:
        """s, the joint motors' lead along the reference's joint velocities in ``mode``
        (``joint_lead`` or its default)."""
        return float(self._for_mode("joint_lead", mode))

    def rise(self, mode: str) -> float | None:
        """m/s, how fast a reference foot's lowest sole point may rise and still count as in
        stance in ``mode`` (``stance_rise`` or its default); ``None``: no such test."""
        v = self._for_mode("stance_rise", mode)
        return None if v is None else float(v)

    def stance(self, mode: str) -> float | None:
        """m/s, the stance speed of the reference's grounding in ``mode`` (``stance_speed`` or
        its default); ``None``: ground by the lowest sole point of every frame."""
        v = self._for_mode("stance_speed", mode)
        return None if v is None else float(v)


def _subtree_mass(body: BodyTemplate) -> np.ndarray:
    m = np.array(body.mass, float)
    out = m.copy()
    for j in range(len(body) - 1, 0, -1):
        out[body.skeleton.parents[j]] += out[j]
    return out


def _led(lrot: np.ndarray, jvel: np.ndarray, lead) -> np.ndarray:
    """Joint motor targets leading ``lrot (N, 4)`` by ``lead`` s (scalar or ``(N, 1)``) along
    the joint velocities ``jvel (N, 3)`` rad/s: ``lrot * exp(jvel * lead)``."""
    return quat.normalize(quat.mul(lrot, quat.from_scaled_axis(jvel * lead)))


def link_ahead(p, body: int, link: int, ahead: float, client: int) -> tuple:
    """A link's frame (its joint's, the skeleton's; ``link`` -1: the base) as it will be
    ``ahead`` s from now if it keeps its velocity: ``(x (3,) m, g (4,) xyzw)`` world, from
    PyBullet's state now. PyBullet gives the velocity of the link's centre of mass; the
    frame's is that plus ``ω × (frame - centre)``. Read with ``computeForwardKinematics``:
    without it the link is as it was one physics step before (the chest 3.4 mm off
    mid-walk)."""
    if link < 0:
        x, g = p.getBasePositionAndOrientation(body, physicsClientId=client)
        com = x
    else:
        st = p.getLinkState(body, link, computeLinkVelocity=ahead > 0,
                            computeForwardKinematics=True, physicsClientId=client)
        com, x, g = st[0], st[4], st[5]
    x, g = np.array(x), np.array(g)
    if ahead <= 0:
        return x, g
    v, w = p.getBaseVelocity(body, physicsClientId=client) if link < 0 else st[6:8]
    w = np.array(w)
    x = x + ahead * (np.array(v) + np.cross(w, x - np.array(com)))
    return x, quat.mul(quat.from_scaled_axis(ahead * w), g)


def _clamp(v: np.ndarray, limit: float) -> np.ndarray:
    n = float(np.sqrt(v @ v))
    return v * (limit / n) if n > limit else v


def _ang_vel(q0: np.ndarray, q1: np.ndarray, dt: float, local: bool) -> np.ndarray:
    """Angular velocity taking ``q0`` to ``q1`` in ``dt``: child frame if ``local`` else world."""
    d = quat.mul(quat.conj(q0), q1) if local else quat.mul(q1, quat.conj(q0))
    return quat.to_scaled_axis(quat.abs_w(d)) / dt


class Closing:
    """A context manager whose exit calls ``close``."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Tracker(Closing):
    """One simulated character, stepped frame by frame.

    Args:
        body: the body template (default: the shipped ``humanoid``); reference poses must be on
            its skeleton.
        mode: ``"assist"`` or ``"physical"``.
        settings: ``TrackingSettings``.
    """

    def __init__(self, body: BodyTemplate | None = None, mode: str = "assist",
                 settings: TrackingSettings = TrackingSettings(),
                 environment: Environment | None = None):
        if mode not in MODES:
            raise SettingsError(f"unknown tracking mode {mode!r}; known: {', '.join(MODES)}")
        self.body = body or load_body()
        self.mode, self.s = mode, settings
        s = settings
        bal = mode == "physical" and s.balance
        self.timestep = s.timestep
        self._owed = 0.0                  # s of reference time not yet simulated (``substeps``)
        # a body on its own legs needs a floor that holds its feet (``BalanceSettings``)
        self.char = Character(self.body, s.timestep, s.gravity,
                              s.balance_gains.friction if bal else s.friction,
                              s.iterations(mode), s.min_inertia)
        self.p, self.J = self.char.p, len(self.body)
        self.mass = float(self.body.total_mass)
        self._set_limits(s.joint_max_torque)
        self._kp = [float(s.joint_kp)] * (self.J - 1)
        self._kd = [float(s.joint_kd)] * (self.J - 1)
        self._lead = s.lead(mode)
        self.head = self.body.index(s.head)
        self.frame = 0
        # output frames before the first step (a player whose frame 0 only places the body):
        # a fall's "frame" is the output frame it was detected in
        self.output_offset = 0
        self.time = 0.0
        self._low = 0.0
        self.fallen = False
        self.falls: list[dict] = []
        self._ref = None
        self._arms = None                        # ``ArmReach``, built at the first ``reach``
        self._reach = None                       # the hands' targets of the frame before
        self._reach_links: list = []             # links the reaching arms' motors drove
        self._chests = None                      # its distinct chests and joints (with it)
        self.balance = None
        if mode == "physical" and s.balance:
            self.balance = BalanceController(self.char, self.max_torque, s.balance_gains,
                                             s.gravity)
        # scene objects (static colliders) and hand holds (``environment.py``)
        self.holds = None
        if environment is not None:
            self.holds = Holds(self.char, environment, add_objects(self.char, environment.objects))

    # --- setup ----------------------------------------------------------------------------

    def _set_limits(self, joint_max_torque: float) -> None:
        """The motors' per-axis force limits ``max_torque (J,)`` N·m: ``joint_max_torque``
        scaled by each joint's subtree mass, at least the mode's floor."""
        sub = _subtree_mass(self.body)
        self.max_torque = np.maximum(joint_max_torque * sub / sub[0],
                                     self.s.min_torque(self.mode))
        # leg joints carry the body, not only the segments below them
        for side in self.char.feet:
            for j in side:
                while j > 0:
                    self.max_torque[j] = joint_max_torque
                    j = self.body.skeleton.parents[j]
        self._forces = [[float(t)] * 3 for t in self.max_torque[1:]]

    def set_balance_gains(self, gains: BalanceSettings,
                          joint_max_torque: float | None = None) -> None:
        """Switch the running balance controller to ``gains`` (its plans, contacts and clock
        kept) and the motors' force limit to ``joint_max_torque`` N·m (``None``: the
        settings'); fully physical with balance only (``predictive.py`` switches between gain
        sets as the body walks). Gains whose ``plan_s``, ``kp``, ``kd`` or ``friction`` differ
        from the running ones are refused: those are fixed when the controller is built."""
        if self.balance is None:
            raise SettingsError("Tracker.set_balance_gains: needs mode 'physical' with "
                                "balance=True")
        if not isinstance(gains, BalanceSettings):
            raise SettingsError(f"Tracker.set_balance_gains: gains must be BalanceSettings, "
                                f"got {type(gains).__name__}")
        old = self.balance.s
        for name in ("plan_s", "kp", "kd", "friction"):
            if getattr(gains, name) != getattr(old, name):
                raise SettingsError(f"Tracker.set_balance_gains: {name} cannot change while "
                                    f"running ({getattr(old, name)!r} -> "
                                    f"{getattr(gains, name)!r})")
        jm = self.s.joint_max_torque if joint_max_torque is None else joint_max_torque
        if not (np.isfinite(jm) and jm > 0):
            raise SettingsError(f"Tracker.set_balance_gains: joint_max_torque must be > 0 N·m, "
                                f"got {joint_max_torque!r}")
        self._set_limits(float(jm))
        self.balance.s = gains
        self.balance.max_torque = self.max_torque

    def _check(self, root_pos, root_rot, lrot):
        root_pos = np.asarray(root_pos, float).reshape(3)
        root_rot = quat.normalize(np.asarray(root_rot, float).reshape(4))
        lrot = np.asarray(lrot, float)
        if lrot.shape != (self.J, 4):
            raise ShapeError(f"lrot: expected ({self.J}, 4) for body {self.body.name!r}, got "
                             f"{lrot.shape}")
        lrot = quat.normalize(lrot.copy())
        lrot[0] = root_rot
        return root_pos, root_rot, lrot

    def reset(self, root_pos, root_rot, lrot, next_pose=None, dt: float | None = None,
              reach=None) -> None:
        """Place the character in a pose: ``root_pos (3,)`` m, ``root_rot (4,)`` xyzw (world),
        ``lrot (J, 4)`` xyzw (``lrot[0]`` is replaced by ``root_rot``).

        With ``next_pose = (root_pos, root_rot, lrot)`` and ``dt`` s, the initial velocities are
        the finite differences to that pose; else the body starts at rest. ``reach``: ``(2,
        3)`` m, the points the hands of this pose reach for, if any (the first ``step``
        interpolates its own targets from them; without: from its own).
        """
        root_pos, root_rot, lrot = self._check(root_pos, root_rot, lrot)
        v = w = ja = None
        if next_pose is not None:
            if bad_number(dt, positive=True):                      # NaN: NaN velocities
                raise SettingsError(f"reset: next_pose needs dt > 0 s, got {dt!r}")
            p1, r1, l1 = self._check(*next_pose)
            v = (p1 - root_pos) / dt
            w = _ang_vel(root_rot, r1, dt, local=False)
            ja = _ang_vel(lrot, l1, dt, local=True)
        if reach is not None and np.shape(reach) != (2, 3):
            raise ShapeError(f"reset: reach must be (2, 3), got {np.shape(reach)}")
        self._place(root_pos, root_rot, lrot, v, w, ja, reach)
        self.frame, self.time, self._owed, self.falls = 0, 0.0, 0.0, []

    def _place(self, root_pos, root_rot, lrot, v=None, w=None, ja=None, reach=None) -> None:
        """The body in a checked pose (``_check``), with the velocities ``v (3,)``, ``w (3,)``,
        ``ja (J, 3)`` or at rest, and everything that followed the body before (the root
        assist's integral, the hands' targets and holds, the balance controller's reference,
        the fall rule) started afresh; the clock, the frame count and the falls go on."""
        self._ierr = np.zeros(2)                 # integral of the root's horizontal error, m·s
        self._reach = None if reach is None else np.array(reach, float)   # the last targets
        self._release_reach([])
        if self.holds is not None:
            self.holds.release_all()
        self.char.reset(root_pos, lrot, v, w, ja)
        self._sim = self.char.pose()
        if self._arms is not None:
            self._arms.reset()
        self._ref = (root_pos, root_rot, lrot, np.zeros(3) if v is None else v,
                     np.zeros(3) if w is None else w)
        if self.balance is not None:
            self.balance.set_reference(root_pos, root_rot, lrot,
                                       np.zeros(3) if w is None else w,
                                       np.zeros((self.J, 3)) if ja is None else ja, 0.0)
        self._low, self._root, self.fallen = 0.0, root_pos, False

    def _recover(self, root_pos, root_rot, lrot) -> None:
        """Put a fallen body back on its feet (``TrackingSettings.recover_s``): at rest in the
        reference's pose, a fresh balance controller (its plans were the fallen body's); the
        last fall records when."""
        self.falls[-1]["recovered_s"] = round(self.time, 4)
        if self.balance is not None:
            self.balance = BalanceController(self.char, self.max_torque, self.s.balance_gains,
                                             self.s.gravity)
        self._place(*self._check(root_pos, root_rot, lrot), reach=self._reach)

    # --- one frame ------------------------------------------------------------------------

    def shift_reference(self, offset) -> None:
        """Translate the previous reference by ``offset (3,)`` m: the next reference is in a
        frame moved by it (``LivePlayback.follow_body``), and the reference's velocities
        (finite differences) must not see the move."""
        if self._ref is None:
            return
        d = np.asarray(offset, float)
        self._ref = (self._ref[0] + d,) + tuple(self._ref[1:])
        if self.balance is not None:
            self.balance.shift_reference(d)

    def substeps(self, dt: float) -> int:
        """The physics steps (of ``timestep``) for the next frame of ``dt`` s: as many as keep
        the simulated time within one step of the reference's (a fixed-step clock: a 100 Hz
        frame takes 2 or 3 steps of 1/240 s, 2.4 on average; rates that divide 240 Hz take
        the same number every frame). Rounded every frame, a 100 Hz frame took 2 steps, 8.3
        of its 10 ms, and the simulation ran 17 % slower than its reference. Equal shorter
        steps that fill each frame kept the time but stiffened the motors, whose gains act
        per step (a solved 100 Hz walk looped to 20 s, fully physical with ``STEPPING``: down
        at 2.7-3.9 s in six headings of six; resampled to 60 or 120 Hz up in all six).
        Stateful: it counts the time owed (``reset`` clears it)."""
        self._owed += dt
        n = int(self._owed / self.timestep + 1e-6)     # 0 for some frames above 240 Hz
        self._owed -= n * self.timestep
        return n

    def step(self, ref_root_pos, ref_root_rot, ref_lrot, dt: float, reach=None):
        """Simulate ``dt`` seconds toward the reference pose (``(3,)``, ``(4,)``, ``(J, 4)``).

        ``reach``: ``(2, 3)`` m world points the left and right hands reach for (a NaN row: that
        hand follows the reference): the reference's arms are bent again for the simulated
        chest (``reach.ArmReach``).

        Returns ``(sim_root_pos (3,), sim_root_rot (4,), sim_lrot (J, 4), info)``; ``info`` has
        ``assist_force_n``, ``assist_torque_nm`` (mean magnitudes over the sub-steps),
        ``contacts (2,)`` bool (left, right foot on the ground), ``penetration_m``,
        ``fallen`` (bool, the fall rule holds now), ``fall`` (a new fall event or ``None``) and
        ``hold_error_m (H,)``: each hand hold's palm distance from its anchor (``nan``: not held).
        """
        if self._ref is None:
            raise RuntimeError("Tracker.step before reset")
        if bad_number(dt, positive=True):              # NaN, inf: int() of them failed below
            raise SettingsError(f"Tracker.step: dt must be > 0 s, got {dt}")
        if (self.s.recover_s is not None and self.fallen
                and self.time - self.falls[-1]["time_s"] >= self.s.recover_s - 1e-9):
            self._recover(ref_root_pos, ref_root_rot, ref_lrot)
        p, c, b, s = self.p, self.char.client, self.char.body, self.s
        pos1, rot1, lrot1 = self._check(ref_root_pos, ref_root_rot, ref_lrot)
        pos0, rot0, lrot0, _, _ = self._ref
        rot1 = rot1 if float(rot1 @ rot0) >= 0 else -rot1
        lead, forces, kp = self._lead, self._forces, self._kp
        ref1 = (pos1, lrot1)                    # the frame's reference, its arms as they are
        js = None
        if reach is not None:
            if self._arms is None:
                self._arms = ArmReach(self.body.skeleton)
                # the arms' distinct chests (``_reach_again`` reads each once), which is whose,
                # and every arm joint (``_reach_again`` takes them from the frame's reference)
                qs, which = np.unique(self._arms.frames, return_inverse=True)
                self._chests = (qs.tolist(), which, self._arms.joints.ravel())
            a = self._arms
            lrot1 = a.bend(self._sim, (pos0, lrot0), (pos1, lrot1), reach)
            live = ~np.isnan(reach).any(axis=1)
            # the reaching arms' joints, each arm's clavicle first: the clavicle carries the
            # shoulder, and an arm bent for the reference's clavicle misses by as much as the
            # simulated one trails it (``reach_kp``)
            js = np.concatenate([a.parents[live], a.joints[live].ravel()])
            if live.any():      # the reaching arms' own gain, no lead, and torque floor
                lead = np.full((self.J, 1), lead)
                lead[js] = 0.0               # their targets are taken ahead (``_reach_again``)
                kp = list(kp)
                forces = [list(f) for f in forces]
                for j in js:
                    kp[j - 1] = s.reach_kp
                    forces[j - 1] = [max(x, s.reach_min_torque) for x in forces[j - 1]]
        vel1 = (pos1 - pos0) / dt
        # the root's as ``_ang_vel(rot0, rot1, dt, local=False)`` does it, in plain floats
        ang1 = np.array(quat.to_scaled_axis_t(quat.mul_t(rot1.tolist(), quat.conj_t(
            rot0.tolist())))) / dt
        jvel = _ang_vel(lrot0, lrot1, dt, local=True)
        self._ref = (pos1, rot1, lrot1, vel1, ang1)

        bal = self.balance
        if bal is None:
            # position-only motors trail a moving target: lead it along its joint velocities
            # (``TrackingSettings.joint_lead``; 0 in physical mode, its targets as they were)
            target = lrot1 if np.all(lead == 0) else _led(lrot1, jvel, lead)
            p.setJointMotorControlMultiDofArray(
                b, self.char.links, p.POSITION_CONTROL, targetPositions=target[1:].tolist(),
                targetVelocities=jvel[1:].tolist(), positionGains=kp,
                velocityGains=self._kd, forces=forces, physicsClientId=c)
        else:
            bal.set_reference(pos1, rot1, lrot1, ang1, jvel, dt)
        if self.holds is not None:
            self.holds.update(self.time)

        # the reaching arms' motors, set again before each physics step: re-aimed
        # (``reach_every_step``), or after a balance controller's, which drive every joint at
        # its own compliant gain (``motor_kp``) each step. Without this the arms of a fully
        # physical body hung at that gain: held-out avatar clips, ``STEPPING``, hands 8.3 cm
        # from the reachable controllers, 6 % of wrist-frames within 1 cm (``benchmarks/
        # avatar_eval.py --offset 5 --physics --mode physical --balance stepping``)
        again = held = None
        if js is not None and len(js) and (s.reach_every_step or bal is not None):
            links = (js - 1).tolist()
            again = (js, links, [kp[i] for i in links], [forces[i] for i in links])
            if not s.reach_every_step:
                held = lrot1[js].tolist()     # the frame's bent arms: one target per frame
        self._release_reach([] if again is None else again[1])
        n, h = self.substeps(dt), self.timestep
        fsum = tsum = 0.0
        assist = self.mode == "assist"
        if assist:
            # the assist in plain floats (``quat.*_t``, bit for bit the array arithmetic): per
            # sub-step, numpy's per-call overhead on (3,) / (4,) arrays was ~0.1 ms of Python
            # for every ~1.4 ms of stepping
            ts, mass, i_time, i_max = h, self.mass, s.assist_i_time, s.assist_i_max
            kp, kd, ki, rkp, rkd = (s.assist_kp, s.assist_kd, s.assist_ki, s.assist_rot_kp,
                                    s.assist_rot_kd)
            P0, P1, R0, R1 = pos0.tolist(), pos1.tolist(), rot0.tolist(), rot1.tolist()
            V1, A1, ierr = vel1.tolist(), ang1.tolist(), self._ierr.tolist()
        for k in range(n):
            if assist:
                a = (k + 1) / n            # the reference, interpolated across the frame
                tr = quat.slerp_t(R0, R1, a)
                x, q = p.getBasePositionAndOrientation(b, physicsClientId=c)
                v, w = p.getBaseVelocity(b, physicsClientId=c)
                e = [P0[i] + a * (P1[i] - P0[i]) - x[i] for i in range(3)]
                ierr = [min(max(ierr[i] + (e[i] - ierr[i] / i_time) * ts, -i_max), i_max)
                        for i in range(2)]
                f = [mass * (kp * e[i] + kd * (V1[i] - v[i])) for i in range(3)]
                f[0] += mass * ki * ierr[0]
                f[1] += mass * ki * ierr[1]
                f = _clamp(np.array(f), s.assist_max_force)
                err = quat.to_scaled_axis_t(quat.mul_t(tr, quat.conj_t(q)))
                t = _clamp(np.array([rkp * err[i] + rkd * (A1[i] - w[i]) for i in range(3)]),
                           s.assist_max_torque)
                p.applyExternalForce(b, -1, f.tolist(), x, p.WORLD_FRAME, physicsClientId=c)
                p.applyExternalTorque(b, -1, t.tolist(), p.WORLD_FRAME, physicsClientId=c)
                fsum += float(np.sqrt(f @ f))
                tsum += float(np.sqrt(t @ t))
            elif bal is not None:
                bal.apply(h)                  # joint torques last one step
            if held is not None:               # the frame's bent arms, at their own gains
                p.setJointMotorControlMultiDofArray(
                    b, again[1], p.POSITION_CONTROL, targetPositions=held,
                    positionGains=again[2], forces=again[3], physicsClientId=c)
            elif again is not None:
                self._reach_again(reach, k / n, (pos0, lrot0), ref1, dt, again)
            p.stepSimulation(physicsClientId=c)
        if assist:
            self._ierr = np.array(ierr)
        self._reach = None if reach is None else np.array(reach, float)

        root, lrot = self.char.pose()
        self._sim = (root, lrot)
        feet, pen = self.char.contacts()
        # (without forward kinematics PyBullet returns the link's place one substep old)
        head_z = p.getLinkState(b, self.head - 1, computeForwardKinematics=True,
                                physicsClientId=c)[4][2]
        self.frame += 1
        self.time += n * h
        low = root[2] < s.fall_root_ratio * pos1[2] or head_z < s.fall_head_height
        self._low = self._low + n * h if low else 0.0
        speed = float(np.linalg.norm(root - self._root)) / (n * h) if n else 0.0
        self._root = root
        flung = speed > s.fall_speed
        event = None
        now_fallen = self._low > s.fall_seconds or flung
        if now_fallen and not self.fallen:
            start = self.time - self._low
            event = {"frame": self.frame - 1 + self.output_offset,
                     "time_s": round(self.time, 4),
                     "since_s": round(start, 4),
                     "reason": "unstable" if flung else
                     "head low" if head_z < s.fall_head_height else "root low"}
            self.falls.append(event)
        self.fallen = now_fallen
        info = {"assist_force_n": fsum / max(n, 1), "assist_torque_nm": tsum / max(n, 1),
                "contacts": feet,
                "penetration_m": pen, "head_height_m": head_z, "fallen": now_fallen,
                "fall": event,
                "hold_error_m": np.zeros(0) if self.holds is None else self.holds.errors()}
        return root, lrot[0].copy(), lrot, info

    def _release_reach(self, links: list) -> None:
        """The reaching arms' motors on ``links`` from now on; those on the links they drove
        before and no longer do switched off under the balance controller's torque drive,
        whose joint torques never set the motors (they held the arm where its last reach left
        it, fighting the torques); every other drive sets every joint's motors each step."""
        bal = self.balance
        gone = [j for j in self._reach_links if j not in links]
        if gone and bal is not None and bal.s.drive == "torque":
            self.char.motors_off(gone)
        self._reach_links = list(links)

    def _reach_again(self, reach, a: float, ref0: tuple, ref1: tuple, dt: float,
                     motors: tuple) -> None:
        """Before a physics step, ``a`` (0..1) of the way through the frame: the reaching arms
        bent again for the time ``reach_ahead`` s later (``TrackingSettings.reach_every_step``):
        the simulated chest carried there along its velocity, the reference and the hands'
        targets interpolated there (past the frame's end: carried on), their motors retargeted
        (the rest keep the frame's targets). ``ref0``, ``ref1``: the references at the frame's
        start (as bent) and end (as given); ``reach``: the frame's targets (the frame before's
        are ``self._reach``); ``dt``: the frame's s; ``motors``: the frame's, for the reaching
        arms' joints ``js`` (clavicles, shoulders, elbows, wrists; ``step``): ``(js, links,
        position gains, force limits)`` (no lead: the targets are taken ahead; no velocities:
        PyBullet's spherical motors ignore them, ``TrackingSettings.joint_kd``)."""
        arms, p, c, b = self._arms, self.p, self.char.client, self.char.body
        js, links, kp, forces = motors
        qs, which, arm = self._chests
        T = self.s.reach_ahead
        x, g = np.empty((len(qs), 3)), np.empty((len(qs), 4))
        for i, q in enumerate(qs):           # each distinct chest once (the arms share one)
            x[i], g[i] = link_ahead(p, b, q - 1, T, c)
        a = a + T / dt
        # the targets then: the motors get there ``reach_ahead`` after the step's start
        prev = reach if self._reach is None else self._reach
        targets = np.where(np.isnan(prev), reach, prev + a * (reach - prev))
        # the reference then, its arms as given (a slerp from the bent arms of the frame's
        # start, carried past its end, flipped hanging arms' elbows: walks' hands 1.8 cm off)
        lrot = quat.slerp(ref0[1], ref1[1], a)
        lrot[arm] = ref1[1][arm]
        now = (ref0[0] + a * (ref1[0] - ref0[0]), lrot)
        fk = forward_kinematics_frame(self.body.skeleton, lrot, now[0])
        lrot = arms.bend_chest((x[which], g[which]), None, now, targets, predict=False, fk1=fk)
        p.setJointMotorControlMultiDofArray(
            b, links, p.POSITION_CONTROL, targetPositions=lrot[js].tolist(), positionGains=kp,
            forces=forces, physicsClientId=c)

    def close(self) -> None:
        self.char.close()


# --------------------------------------------------------------------------------------------
# whole motions

@dataclass(frozen=True, eq=False)
class TrackResult:
    """The outcome of ``track``; per-frame arrays ``(F, …)`` aligned with ``motion``.

    Attributes:
        motion: the simulated ``Motion`` (reference skeleton and fps).
        reference: the (template-skeleton) reference it followed.
        mode: ``"assist"`` or ``"physical"``.
        tracking_error_m: ``(F,)`` mean distance of joint positions, simulated vs reference.
        assist_force_n, assist_torque_nm: ``(F,)`` root assist magnitudes (0 when physical).
        penetration_mm: ``(F,)`` deepest ground penetration of any contact point.
        contacts: ``(F, 2)`` bool, left/right foot touching the ground (from the simulation).
        falls: list of ``{"frame", "time_s", "since_s", "reason"}``: the output frame and the
            time (s) the fall was detected in, the time it began, why.
        seconds: wall time of the simulation loop.
        holds, hold_error_m: the environment's ``HandHold``s and ``(F, H)`` m, each holding
            palm's distance from its anchor (``nan`` while not held).
        hand_targets: ``(F, 2, 3)`` m, the world points the hands reached for (``track``'s
            ``hand_targets``), or ``None``.
    """

    motion: Motion
    reference: Motion
    mode: str
    tracking_error_m: np.ndarray
    assist_force_n: np.ndarray
    assist_torque_nm: np.ndarray
    penetration_mm: np.ndarray
    contacts: np.ndarray
    falls: list = field(default_factory=list)
    seconds: float = 0.0
    foot_joints: tuple = ()
    holds: tuple = ()
    hold_error_m: np.ndarray | None = None
    hand_targets: np.ndarray | None = None

    def foot_skate_mm(self) -> np.ndarray:
        """``(F,)`` mm: horizontal travel of each simulated foot (ankle joint) from the previous
        frame while that foot is in contact in both frames; the max over the two feet."""
        gpos = self.motion.gpos
        out = np.zeros(self.motion.n_frames)
        for side, j in enumerate(self.foot_joints):
            d = np.linalg.norm(np.diff(gpos[:, j, :2], axis=0), axis=-1) * 1e3
            on = self.contacts[1:, side] & self.contacts[:-1, side]
            out[1:] = np.maximum(out[1:], np.where(on, d, 0.0))
        return out

    def report(self) -> dict:
        F = self.motion.n_frames
        skate = self.foot_skate_mm()
        on = (self.contacts[1:] & self.contacts[:-1]).any(axis=1)
        return {
            "mode": self.mode,
            "frames": F,
            "duration_s": round(self.motion.duration, 3),
            "tracking_error_m": float(np.mean(self.tracking_error_m)),
            "tracking_error_max_m": float(np.max(self.tracking_error_m)),
            "tracking_error_upright_m": self._upright_error(),
            "pose_error_m": self.pose_error(),
            "walked_m": self.walked(),
            "root_assist_force_mean_n": float(np.mean(self.assist_force_n)),
            "root_assist_force_max_n": float(np.max(self.assist_force_n)),
            "root_assist_torque_mean_nm": float(np.mean(self.assist_torque_nm)),
            "root_assist_torque_max_nm": float(np.max(self.assist_torque_nm)),
            "penetration_max_mm": float(np.max(self.penetration_mm)),
            "foot_skate_mm": float(np.mean(skate[1:][on])) if on.any() else 0.0,
            # the same until the first fall began, as tracking_error_upright_m (a fallen body
            # lying on the floor is no penetration of its feet: 10.8 mm against 1.8)
            **self._upright_feet(skate, on),
            "contact_fraction": [float(x) for x in self.contacts.mean(axis=0)],
            "falls": list(self.falls),
            "frames_per_second": F / self.seconds if self.seconds > 0 else float("inf"),
            **({"holds": self._hold_report()} if self.holds else {}),
            **({"hands": reach_report(self.motion.skeleton, self.motion.root_pos,
                                      self.motion.lrot, self.hand_targets)}
               if self.hand_targets is not None else {}),
        }

    def _upright_frames(self) -> int:
        """The frames before the first fall began (all of them without a fall)."""
        if not self.falls:
            return self.motion.n_frames
        return min(max(int(round(self.falls[0]["since_s"] * self.motion.fps)), 0),
                   self.motion.n_frames)

    def _upright_feet(self, skate: np.ndarray, on: np.ndarray) -> dict:
        """``penetration_max_upright_mm`` and ``foot_skate_upright_mm``: over the frames before
        the first fall began (all without a fall; ``None`` if it began at once)."""
        k = self._upright_frames()
        upright = on[:max(k - 1, 0)]
        return {"penetration_max_upright_mm": float(np.max(self.penetration_mm[:k]))
                if k > 0 else None,
                "foot_skate_upright_mm": (float(np.mean(skate[1:k][upright])) if upright.any()
                                          else 0.0) if k > 0 else None}

    def _upright_error(self) -> float | None:
        """Mean tracking error (m) over the frames before the first fall began (all frames
        without a fall; ``None`` if it began at once): a fallen body's distance from the
        reference walking on is no tracking figure, yet it dominates the mean."""
        k = self._upright_frames()
        return float(np.mean(self.tracking_error_m[:k])) if k > 0 else None

    def pose_error(self) -> float | None:
        """Mean distance (m) of every joint but the root from the reference's, each taken
        relative to its own root (world axes: the pose and its heading, not where it is), over
        the frames before the first fall began (``None`` if it began at once). A fully
        physical body that keeps its feet but walks behind its reference has a tracking error
        that grows with the distance; this says how well it moves like it."""
        k = self._upright_frames()
        if k == 0:
            return None
        sim, ref = self.motion.gpos[:k], self.reference.gpos[:k]
        d = (sim[:, 1:] - sim[:, :1]) - (ref[:, 1:] - ref[:, :1])
        return float(np.linalg.norm(d, axis=-1).mean())

    def walked(self) -> dict:
        """How far the simulated root and its reference's went over the ground (m,
        ``path_walked_m``) until the first fall began (``until_s``; the whole run without a
        fall): a fully physical body that keeps its feet can still lag metres behind a
        reference that walks on."""
        F, fps = self.motion.n_frames, self.motion.fps
        k = min(self._upright_frames(), F - 1)         # the last frame counted
        return {"body": path_walked_m(self.motion.root_pos[:k + 1, :2], fps),
                "reference": path_walked_m(self.reference.root_pos[:k + 1, :2], fps),
                "until_s": round(k / fps, 3)}

    def _hold_report(self) -> list[dict]:
        out = []
        for k, h in enumerate(self.holds):
            e = self.hold_error_m[:, k]
            on = ~np.isnan(e)
            out.append({"hand": h.hand, "start_s": h.start, "stop_s": h.stop,
                        "frames": int(on.sum()),
                        "palm_error_mm_mean": float(1e3 * e[on].mean()) if on.any() else None,
                        "palm_error_mm_max": float(1e3 * e[on].max()) if on.any() else None})
        return out


def path_walked_m(xy, fps: float, every_s: float = 1.0) -> float:
    """m, how far a root went over the ground: the length of its path ``xy (F, 2)`` m sampled
    once every ``every_s`` s (and at its last frame), so that the sway of each step, a few cm
    to either side, does not count as walking (a body stepping in place walks about 0)."""
    xy = np.asarray(xy, float)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ShapeError(f"path_walked_m: xy must be (F, 2) m, got {xy.shape}")
    require_numbers("path_walked_m", ("fps", "every_s"), fps=fps, every_s=every_s)
    if len(xy) < 2:
        return 0.0
    n = max(1, int(round(every_s * fps)))
    idx = np.unique(np.r_[np.arange(0, len(xy), n), len(xy) - 1])
    return float(np.linalg.norm(np.diff(xy[idx], axis=0), axis=1).sum())


def _on_template(motion: Motion, body: BodyTemplate) -> BodyTemplate:
    """The body to simulate ``motion`` with: ``body`` itself, or ``body`` on the motion's own
    limb lengths when it has the template's joints (a solved capture: the subject's body)."""
    sk = body.skeleton
    if motion.skeleton.same_structure(sk):
        if np.allclose(motion.skeleton.offsets[1:], sk.offsets[1:], atol=1e-6):
            return body
        return body.with_skeleton(motion.skeleton)
    raise ShapeError(
        f"track: the motion's skeleton ({len(motion.skeleton)} joints: "
        f"{', '.join(motion.skeleton.names[:5])}, …) is not the body template "
        f"{body.name!r}; retarget it first: retarget(motion, load_body().skeleton)")


def prepare_reference(motion: Motion, body: BodyTemplate | None, mode: str,
                      settings: TrackingSettings, loops: int = 1,
                      hand_targets: np.ndarray | None = None) -> tuple:
    """``(body, reference, hand_targets)``: ``motion`` checked and prepared as ``track``
    simulates it (looped, feet levelled, grounded, swinging feet lifted; arguments as
    ``track``'s), the body it is simulated with (its limb lengths, ``_on_template``)."""
    body = body or load_body()
    if mode not in MODES:
        raise SettingsError(f"unknown tracking mode {mode!r}; known: {', '.join(MODES)}")
    # a path, say: an AttributeError below
    require_type("track", motion, Motion, "read_bvh(PATH), read_deepmimic(PATH)")
    # a body's motion read back from a BVH: in the body's joint frames again
    motion = motion.in_frames_of(body.skeleton)
    body = _on_template(motion, body)
    ref = motion
    # 0 played the clip once anyway, 1.5 raised a TypeError inside loop_motion
    require_counts("track", loops=loops)
    _two_frames(ref)
    if hand_targets is not None:
        hand_targets = np.asarray(hand_targets, float)
        if hand_targets.shape != (ref.n_frames, 2, 3):
            raise ShapeError(f"track: hand_targets must be ({ref.n_frames}, 2, 3) for a "
                             f"{ref.n_frames}-frame reference, got {hand_targets.shape}")
        if loops > 1:
            raise SettingsError("track: hand_targets are per reference frame; loops must be 1")
    if loops > 1:
        ref = loop_motion(ref, loops)
    if settings.level_feet:
        ref = level_feet(ref, body, constant=mode == "physical",
                         flat_planted=mode == "physical" and settings.flat_planted)
    if settings.ground_reference:
        ref = ground_motion(ref, body, still_speed=settings.ground_still
                            if mode == "physical" else 0.0)
    clearance = settings.clearance(mode)
    if clearance > 0:
        ref = lift_swing(ref, body, clearance)
    return body, ref, hand_targets


def track(motion: Motion, body: BodyTemplate | None = None, mode: str = "assist",
          settings: TrackingSettings = TrackingSettings(), progress=None,
          loops: int = 1, environment: Environment | None = None,
          hand_targets: np.ndarray | None = None) -> TrackResult:
    """Simulate the body following ``motion`` (on the template's skeleton).

    Args:
        motion: the reference, on ``body.skeleton``, or on the template's joints with other limb
            lengths (a solved capture: simulated with that subject's body,
            ``BodyTemplate.with_skeleton``); ``retarget`` other skeletons first.
        body: the body template (default: the shipped ``humanoid``).
        mode: ``"assist"`` (bounded root force/torque toward the reference root) or
            ``"physical"`` (joint torques only).
        settings: ``TrackingSettings``.
        progress: optional ``progress(stage, done, total)`` callback.
        loops: play the reference this many times in a row (a walk cycle shifted by its own
            root displacement each time, for long physical tests); ``1`` = as is.
        environment: scene objects and hand holds (``scene.load_environment``; hold times are
            seconds from the reference's first frame), see ``environment.py``.
        hand_targets: ``(F, 2, 3)`` m world points, per reference frame, that the left and right
            hands reach for (a three-point avatar's controllers; NaN: none that frame):
            ``Tracker.step``'s ``reach``, and the body is placed on the first frame with its
            arms bent to them. The report gains ``hands`` (``reach.reach_report``).
    Returns:
        a ``TrackResult``.
    """
    body, ref, hand_targets = prepare_reference(motion, body, mode, settings, loops,
                                                hand_targets)
    F = ref.n_frames
    root = np.empty((F, 3))
    lrot = np.empty((F, len(body), 4))
    force = np.zeros(F)
    torque = np.zeros(F)
    pen = np.zeros(F)
    contacts = np.zeros((F, 2), bool)
    hold_err = np.full((F, len(environment.holds) if environment else 0), np.nan)
    with MotionPlayback(ref, body, mode, settings, environment, hand_targets) as run:
        for f in range(F):
            if f == 1:
                t0 = time.perf_counter()
            _, (root[f], lrot[f]), info = run.step()
            force[f], torque[f] = info["assist_force_n"], info["assist_torque_nm"]
            contacts[f], pen[f] = info["contacts"], info["penetration_m"]
            hold_err[f] = info["hold_error_m"]
            # (from frame 0: the stage's clock starts at its first call; from frame 120 on,
            # "track 150 in 0.7 s" timed the last 30 frames of a 4 s run)
            if progress is not None and (f % 120 == 0 or f == F - 1):
                progress("track", f + 1, F)
        seconds = time.perf_counter() - t0
        falls = list(run.tracker.falls)
    # frame 0 is the reset pose, not simulated: report steps 1.. for timing
    return measure(ref, root, lrot, body, mode, force, torque, pen, contacts, falls,
                   seconds * F / max(F - 1, 1), source=f"physics playback ({mode})",
                   environment=environment, hold_error_m=hold_err, hand_targets=hand_targets)


class MotionPlayback(Closing):
    """A prepared reference played on the simulated body one frame per ``step``: ``track``'s
    loop, and what ``predictive.track_predictive`` saves, restores and steps.

    Args:
        ref: the reference, prepared as ``track`` prepares it (feet levelled, grounded, swing
            lifted), on ``body.skeleton``.
        body, mode, settings, environment: as ``Tracker``.
        hand_targets: ``(F, 2, 3)`` m or None, as ``track``'s.
    """

    # frames ``step`` plays before the world is first stepped (frame 0 only places the body)
    unstepped_frames = 1

    def __init__(self, ref: Motion, body: BodyTemplate, mode: str, settings: TrackingSettings,
                 environment: Environment | None = None, hand_targets: np.ndarray | None = None):
        self.ref, self.body, self.hand_targets = ref, body, hand_targets
        self.dt = 1.0 / ref.fps
        self.frame = 0
        self.tracker = Tracker(body, mode, settings, environment)
        self.tracker.output_offset = self.unstepped_frames     # (a fall's output frame)

    def step(self):
        """The next frame: ``(reference (root (3,), lrot (J, 4)), simulated (root, lrot),
        info)`` as ``LivePlayback.step``'s. Frame 0 places the body (at its first pose, with
        the velocities to the next; no physics step), each later one simulates ``1 / fps`` s."""
        f, ref, tr, targets = self.frame, self.ref, self.tracker, self.hand_targets
        t0 = time.perf_counter()
        if f == 0:
            pose0, pose1 = ref.lrot[0], ref.lrot[1]
            if targets is not None:
                # the first pose reaches too (``step`` bends the arms from frame 1 on):
                # grounded, the reference's shoulders had moved, and the first frame's hands
                # were 0.7-2.9 cm off (held-out runs, ``benchmarks/avatar_eval.py --offset 5
                # --physics``)
                arms = ArmReach(self.body.skeleton)
                poses = [(ref.root_pos[k], ref.lrot[k]) for k in (0, 1)]
                # each bent on its own chest (the body placed on the pose: no deviation yet)
                pose0, pose1 = (arms.bend(q, q, q, targets[k]) for k, q in enumerate(poses))
            tr.reset(ref.root_pos[0], ref.lrot[0, 0], pose0,
                     next_pose=(ref.root_pos[1], ref.lrot[1, 0], pose1), dt=self.dt,
                     reach=None if targets is None else targets[0])
            sim = tr.char.pose()
            feet, pen = tr.char.contacts()
            info = {"assist_force_n": 0.0, "assist_torque_nm": 0.0, "contacts": feet,
                    "penetration_m": pen, "hold_error_m": np.nan}
        else:
            rp, _, lr, info = tr.step(ref.root_pos[f], ref.lrot[f, 0], ref.lrot[f], self.dt,
                                      None if targets is None else targets[f])
            sim = (rp, lr)
        self.frame += 1
        info = dict(info, controller_ms=0.0, physics_ms=1e3 * (time.perf_counter() - t0))
        return (ref.root_pos[f], ref.lrot[f]), sim, info

    def close(self) -> None:
        self.tracker.close()


BALANCES = ("none", "stepping")


def balance_settings(balance: str = "none") -> TrackingSettings:
    """``TrackingSettings`` of ``play`` and ``avatar --physics`` by balance name: ``"stepping"``
    gives a fully physical body ``balance.STEPPING``, ``"none"`` PD tracking only."""
    if balance not in BALANCES:
        raise SettingsError(f"unknown balance {balance!r}; known: {', '.join(BALANCES)}")
    from .balance import STEPPING
    return TrackingSettings(balance=True, balance_gains=STEPPING) if balance == "stepping" \
        else TrackingSettings()


def track_any(motion: Motion, body: BodyTemplate | None = None, mode: str = "assist",
              settings: TrackingSettings = TrackingSettings(), progress=None,
              environment: Environment | None = None,
              hand_targets: np.ndarray | None = None) -> TrackResult:
    """``track`` a motion on any skeleton, as ``physmocap play`` and ``avatar --physics`` do:
    ``matching.retarget.retarget`` onto ``body.skeleton`` first unless the motion already has
    the body's joints (then it keeps its own limb lengths, see ``track``). Arguments as
    ``track``; ``result.reference`` is on the body's skeleton."""
    require_type("track_any", motion, Motion, "read_bvh(PATH)")
    body = body or load_body()
    require_type("track_any: body", body, BodyTemplate, "load_body(NAME)")
    require_type("track_any: settings", settings, TrackingSettings,
                 "TrackingSettings(...) or STEPPING")
    return track(on_body(motion, body), body, mode=mode, settings=settings, progress=progress,
                 environment=environment, hand_targets=hand_targets)


def _two_frames(motion: Motion) -> None:
    """Refuse a reference of fewer than 2 frames (no velocity to follow)."""
    if motion.n_frames < 2:
        raise ShapeError(f"the reference has {motion.n_frames} frame(s); playback needs at least "
                         f"2", motion.meta.get("path"))


def on_body(motion: Motion, body: BodyTemplate) -> Motion:
    """``motion`` on ``body``'s joints: ``matching.retarget.retarget`` onto ``body.skeleton``
    unless it already has them (then as it is, its own limb lengths: ``track``). Refuses a
    motion of fewer than 2 frames, before retargeting reads its first."""
    _two_frames(motion)
    if motion.skeleton.names == body.skeleton.names:
        return motion
    from ..matching.retarget import retarget     # matching is pure numpy; no cycle
    return retarget(motion, body.skeleton)


def measure(ref: Motion, root: np.ndarray, lrot: np.ndarray, body: BodyTemplate, mode: str,
            force: np.ndarray, torque: np.ndarray, penetration_m: np.ndarray,
            contacts: np.ndarray, falls: list, seconds: float, source: str,
            environment: Environment | None = None, hold_error_m: np.ndarray | None = None,
            hand_targets: np.ndarray | None = None) -> TrackResult:
    """The ``TrackResult`` of a simulated run: ``root (F, 3)``, ``lrot (F, J, 4)`` against the
    reference it followed, with the per-frame assist, ``penetration_m`` and contacts ``(F, …)``
    (and the environment's holds with their ``hold_error_m (F, H)``, when it has any; and the
    ``hand_targets (F, 2, 3)`` the hands reached for)."""
    sim = Motion(ref.skeleton, ref.fps, root, quat.normalize(lrot), {"source": source})
    err = np.mean(np.linalg.norm(sim.gpos - ref.gpos, axis=-1), axis=-1)
    feet = tuple(body.index(n) for n in ("LeftFoot", "RightFoot"))
    holds = tuple(environment.holds) if environment is not None else ()
    return TrackResult(sim, ref, mode, err, force, torque, penetration_m * 1e3, contacts,
                       list(falls), seconds, feet, holds, hold_error_m if holds else None,
                       hand_targets)


